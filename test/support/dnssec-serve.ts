/**
 * A signed `zonekeeper serve` with a caching Unbound in front of it, for the DNSSEC suites on
 * compressed time: written manifests, keys published, the child's DS in its parent, and Unbound
 * trusting the chosen zones' KSKs only.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { dig, rdataOf } from './dig.ts';
import { startUnbound, type UnboundProcess } from './unbound.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './zonekeeper-process.ts';

export interface SignedServe {
  manifestDir: string;
  stateDir: string;
  work: string;
  serve: ServeProcess;
  unbound: UnboundProcess;
}

/**
 * Writes `manifests` as zones.yaml and starts the server; waits until each of `zones` publishes a
 * DNSKEY and `child` has a DS in its parent; then starts Unbound with a stub for each of `zones` and
 * the KSKs of `anchorZones` as its trust anchors. Directories are named after `name`.
 */
export async function startSignedServe(
  name: string,
  manifests: string,
  { zones, child, anchorZones }: { zones: readonly string[]; child: string; anchorZones: readonly string[] },
): Promise<SignedServe> {
  const manifestDir = await tempDir(`${name}-manifests`);
  const stateDir = await tempDir(`${name}-state`);
  const work = await tempDir(`${name}-work`);
  await writeFile(path.join(manifestDir, 'zones.yaml'), manifests);
  const serve = await startServe(manifestDir, stateDir);
  const port = serve.dnsPort;
  const dnskeys = async (zone: string) => rdataOf(await dig(port, zone, 'DNSKEY'), 'DNSKEY');
  for (const zone of zones)
    await waitFor(async () => ((await dnskeys(zone)).length > 0 ? true : undefined), 20_000);
  // The child's DS in its parent (from the child's status), before anything trusts the parent.
  await waitFor(
    async () => (rdataOf(await dig(port, child, 'DS'), 'DS').length > 0 ? true : undefined),
    20_000,
  );
  const anchors = [];
  for (const zone of anchorZones)
    for (const k of (await dnskeys(zone)).filter((k) => k.startsWith('257 ')))
      anchors.push(`${zone}. DNSKEY ${k}`);
  const unbound = await startUnbound({
    stubs: zones.map((zone) => ({ zone, port })),
    trustAnchors: anchors,
    // Unbound answers the special-use .test itself (RFC 6761) unless told not to.
    extra: ['local-zone: "test." nodefault'],
  });
  return { manifestDir, stateDir, work, serve, unbound };
}

/** Stops what startSignedServe started and removes its directories. */
export async function stopSignedServe(s: Partial<SignedServe>): Promise<void> {
  await s.unbound?.stop();
  await s.serve?.stop();
  if (s.manifestDir) await removeAll(s.manifestDir, s.stateDir!, s.work!);
}

/** The rollover rows of /metrics: zone → `kind/phase`. */
export async function rolloverPhases(httpUrl: string): Promise<Map<string, string>> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('zonekeeper_dnssec_rollover_phase{') || !line.endsWith(' 1')) continue;
    const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(line)?.[1];
    out.set(label('zone')!, `${label('kind')}/${label('phase')}`);
  }
  return out;
}
