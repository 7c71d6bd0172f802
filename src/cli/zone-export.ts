import { stat } from 'node:fs/promises';
import { type DNSZone, type DNSZoneClass, KINDS, type Resource } from '../api/index.ts';
import { MemoryStore } from '../control/memory-store.ts';
import { fileAndEnvSecrets } from '../control/secrets.ts';
import { type Name, nameKey, parseName } from '../dns/name.ts';
import { probeSoaSerials } from '../server/transfer/soa-probe.ts';
import { TransferPolicy } from '../server/transfer/transfer-policy.ts';
import { formatProblem, ManifestSource } from '../sources/manifests/manifest-source.ts';
import { StateStore } from '../sources/manifests/state-file.ts';
import { restoreAcceptance } from '../sources/manifests/zone-acceptance.ts';
import { Catalog, zoneOrigin } from '../zones/catalog.ts';
import { computeZones } from '../zones/compute-zones.ts';
import { type ResourceKey, resourceKey } from '../zones/resource-key.ts';
import { highestSerial, type ResolvedTransfers, resolveTransfers } from '../zones/transfers.ts';
import { exportZone } from '../zones/zone-export.ts';
import { printable } from './printable.ts';
import { DEFAULT_SECONDARY_PROBE_TIMEOUT_MS } from './serve.ts';

export interface ZoneExportOptions {
  manifests: string;
  zone: string;
  stateDir?: string;
  /**
   * With nothing stored for the zone, how long to wait for its secondaries' SOA serials, as `serve`
   * does before a first serial (default 2000 ms; 0: do not ask).
   */
  secondaryProbeTimeoutMs?: number;
  now?: Date;
}

/**
 * `zonekeeper zone export`: the zone file of one zone exactly as `zonekeeper serve --manifests DIR
 * [--state-dir DIR]` serves it: the manifests as serve's manifest source takes them (problems are
 * warnings; an object made invalid keeps the last valid version serve accepted, from the state).
 * Exit 0 with the zone on `out`, or 1 when the zone is not served from these manifests.
 */
export async function runZoneExport(
  options: ZoneExportOptions,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const now = options.now ?? new Date();
  let origin: Name;
  try {
    origin = parseName(options.zone.endsWith('.') ? options.zone : `${options.zone}.`);
  } catch (e) {
    err.write(`error: --zone ${JSON.stringify(options.zone)}: ${(e as Error).message}\n`);
    return 1;
  }
  try {
    if (!(await stat(options.manifests)).isDirectory()) throw new Error('not a folder');
  } catch (e) {
    err.write(`error: --manifests ${options.manifests}: ${(e as Error).message}\n`);
    return 1;
  }
  let state: StateStore;
  try {
    // Read-only: `serve` may be running on the same folder.
    state = await StateStore.open(options.stateDir, { readOnly: true });
  } catch (e) {
    err.write(`error: --state-dir ${options.stateDir}: ${(e as Error).message}\n`);
    return 1;
  }

  // The manifests through serve's own manifest source: the same files, the same first-definition
  // rule, and with the state the same creation times and last valid versions kept for invalid ones.
  const store = new MemoryStore(() => now);
  const source = new ManifestSource({
    dir: options.manifests,
    store,
    state,
    now: () => now,
    // One read, nothing to wait for: a file caught mid-write is read as it is.
    settleMs: 0,
  });
  await source.reload();
  // What the manifests hold is escaped on the terminal (names, values and file names), never acted on.
  for (const p of source.problems())
    err.write(`warning: ${printable(formatProblem(p))} (as serve reports it)\n`);
  // With the Accepted conditions serve remembers: a zone it served keeps its domain (ADR 0013).
  await restoreAcceptance(store, state);
  const resources = KINDS.flatMap((kind) => store.list(kind));

  const computed = computeZones(resources).find((z) => nameKey(z.origin) === nameKey(origin));
  if (!computed) {
    err.write(`error: ${printable(whyNotServed(resources, origin, options.manifests))}\n`);
    return 1;
  }
  for (const [key, verdict] of computed.zone.verdicts) {
    if (!verdict.accepted) {
      err.write(
        `warning: ${printable(`DNSRecordSet ${key} is not served (${verdict.reason}): ${verdict.message}`)}\n`,
      );
    }
  }
  let stored = state.get(computed.origin);
  if (!stored) {
    // Nothing stored: serve would start above the serial the zone's secondaries hold; so does this.
    const floor = await secondariesFloor(resources, computed.key, computed.origin, options, err);
    if (floor !== undefined) stored = { serial: floor };
  }
  const result = exportZone(computed.zone, stored, now, options.manifests);
  out.write(result.text);
  return 0;
}

/**
 * The highest serial the zone's secondaries (its class's NOTIFY targets) answer, as `serve` asks
 * before a zone's first serial; undefined when there are none, none answered, or asking is off.
 */
async function secondariesFloor(
  resources: readonly Resource[],
  key: ResourceKey,
  origin: Name,
  options: ZoneExportOptions,
  err: NodeJS.WritableStream,
): Promise<number | undefined> {
  const timeoutMs = options.secondaryProbeTimeoutMs ?? DEFAULT_SECONDARY_PROBE_TIMEOUT_MS;
  if (timeoutMs <= 0) return undefined;
  const zone = resources.find((r) => r.kind === 'DNSZone' && resourceKey(r.metadata) === key) as
    | DNSZone
    | undefined;
  const zoneClass = resources.find(
    (r) => r.kind === 'DNSZoneClass' && r.metadata.name === zone?.spec.className,
  ) as DNSZoneClass | undefined;
  let transfers: ResolvedTransfers | undefined;
  try {
    transfers = await resolveTransfers(zoneClass?.spec.transfers, fileAndEnvSecrets());
  } catch (e) {
    err.write(`warning: the secondaries of ${origin} were not asked: ${(e as Error).message}\n`);
    return undefined;
  }
  if (!transfers || transfers.notify.length === 0) return undefined;
  const results = await probeSoaSerials(origin, new TransferPolicy(transfers).notify, timeoutMs);
  const highest = highestSerial(results);
  err.write(
    `note: no serial stored for ${origin}; its secondaries answer ${results
      .map((r) => `${r.target}: ${r.serial ?? r.error}`)
      .join(', ')}${highest !== undefined ? `, so the serial is above ${highest}` : ''}\n`,
  );
  return highest;
}

/** Why no zone `origin` is served from these resources, with what to do about it. */
function whyNotServed(resources: readonly Resource[], origin: Name, dir: string): string {
  // One batch, as serve loads them (and as computeZones judged them): zones of one domain created at
  // the same time tie, and zones that were served keep their domain.
  const catalog = new Catalog();
  catalog.load(
    resources.filter((r): r is DNSZoneClass => r.kind === 'DNSZoneClass'),
    resources.filter((r): r is DNSZone => r.kind === 'DNSZone'),
    [],
  );
  const reasons: string[] = [];
  for (const [key, zone] of catalog.zones) {
    const verdict = catalog.zoneVerdict(key);
    let domain: Name;
    try {
      domain = zoneOrigin(zone);
    } catch {
      continue;
    }
    if (nameKey(domain) === nameKey(origin) && verdict && !verdict.accepted) {
      reasons.push(`DNSZone ${key} is not served (${verdict.reason}): ${verdict.message}`);
    }
  }
  if (reasons.length > 0) return `zone ${origin}: ${reasons.join('; ')}`;
  const served = computeZones(resources).map((z) => z.origin);
  return (
    `no DNSZone in ${dir} serves ${origin}; ` +
    (served.length > 0 ? `the zones served are ${served.join(', ')}` : 'no zone is served from it') +
    ' (`zonekeeper validate` shows every problem)'
  );
}
