import { stat } from 'node:fs/promises';
import { type Resource, validateResource } from '../api/index.ts';
import { type Name, nameKey, parseName } from '../dns/name.ts';
import { readManifests } from '../sources/manifests/load-manifests.ts';
import { formatProblem, type ManifestProblem } from '../sources/manifests/manifest-source.ts';
import { StateStore } from '../sources/manifests/state-file.ts';
import { Catalog } from '../zones/catalog.ts';
import { computeZones } from '../zones/compute-zones.ts';
import { resourceKey } from '../zones/resource-key.ts';
import { exportZone } from '../zones/zone-export.ts';

export interface ZoneExportOptions {
  manifests: string;
  zone: string;
  stateDir?: string;
  now?: Date;
}

type StateSnapshot = ReturnType<StateStore['snapshot']>;

/**
 * `zonekeeper zone export`: the zone file of one zone exactly as `zonekeeper serve --manifests DIR
 * [--state-dir DIR]` serves it. Invalid manifests are skipped with a warning, as serve skips them.
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
  let state: StateSnapshot;
  try {
    state = await readState(options.stateDir);
  } catch (e) {
    err.write(`error: --state-dir ${options.stateDir}: ${(e as Error).message}\n`);
    return 1;
  }

  const { resources, problems } = await loadServedResources(options.manifests, state.created, now);
  for (const p of problems) err.write(`warning: ${formatProblem(p)} (skipped, as serve skips it)\n`);

  const computed = computeZones(resources).find((z) => nameKey(z.origin) === nameKey(origin));
  if (!computed) {
    err.write(`error: ${whyNotServed(resources, origin, options.manifests)}\n`);
    return 1;
  }
  for (const [key, verdict] of computed.zone.verdicts) {
    if (!verdict.accepted) {
      err.write(`warning: DNSRecordSet ${key} is not served (${verdict.reason}): ${verdict.message}\n`);
    }
  }
  const stored = state.serials[nameKey(computed.origin)];
  const result = exportZone(computed.zone, stored, now, options.manifests);
  out.write(result.text);
  return 0;
}

/**
 * Every valid resource of the folder, as serve's manifest source takes them: files in path order, the
 * first definition of an object wins, and creation times come from the state file (objects it does
 * not know are the newest, as for serve, which stamps them when it first sees them).
 */
export async function loadServedResources(
  dir: string,
  created: Record<string, string>,
  now: Date,
): Promise<{ resources: Resource[]; problems: ManifestProblem[] }> {
  const read = await readManifests([dir]);
  const problems: ManifestProblem[] = read.fileErrors.map((e) => ({ ...e, code: 'YAML_INVALID' }));
  const seen = new Map<string, string>();
  const resources: Resource[] = [];
  for (const doc of read.documents) {
    const result = validateResource(doc.value);
    if (!result.ok) {
      for (const p of result.problems) {
        problems.push({
          file: doc.file,
          document: doc.document,
          line: (p.path ? doc.lineOf(p.path) : undefined) ?? doc.line,
          ...(p.path ? { path: p.path } : {}),
          code: p.code,
          message: p.message,
        });
      }
      continue;
    }
    const r = result.resource;
    const id = `${r.kind}/${resourceKey(r.metadata)}`;
    const first = seen.get(id);
    if (first !== undefined) {
      problems.push({
        file: doc.file,
        document: doc.document,
        line: doc.line,
        object: `${r.kind} ${resourceKey(r.metadata)}`,
        code: 'DUPLICATE',
        message: `also defined in ${first}; the first definition is used`,
      });
      continue;
    }
    seen.set(id, doc.file);
    const creationTimestamp = created[id] ?? now.toISOString();
    resources.push({ ...r, metadata: { ...r.metadata, creationTimestamp } } as Resource);
  }
  return { resources, problems };
}

/** What `serve` saved in `<state-dir>` (serials and creation times); empty when there is none. */
async function readState(dir: string | undefined): Promise<StateSnapshot> {
  // Read-only: `serve` may be running on the same folder.
  const state = await StateStore.open(dir, { readOnly: true });
  return state.snapshot();
}

/** Why no zone `origin` is served from these resources, with what to do about it. */
function whyNotServed(resources: readonly Resource[], origin: Name, dir: string): string {
  const catalog = new Catalog();
  for (const r of resources) if (r.kind === 'DNSZoneClass') catalog.setClass(r);
  for (const r of resources) if (r.kind === 'DNSZone') catalog.setZone(r);
  const reasons: string[] = [];
  for (const [key, zone] of catalog.zones) {
    const verdict = catalog.zoneVerdict(key);
    let domain: Name;
    try {
      domain = parseName(
        zone.spec.domainName.endsWith('.') ? zone.spec.domainName : `${zone.spec.domainName}.`,
      );
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
