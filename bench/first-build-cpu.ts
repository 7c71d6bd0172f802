/**
 * CPU time of the controller's first look and of every zone model's first build, alone: the scale
 * bench's objects loaded into a catalog through its feed (`CatalogFeed.load`, as the controller's
 * `loadStore` does), then each zone's model built from its members (`takeChange` of a new model).
 * No store, backend, serials or statuses: the two steps of the first reconcile that grow with the
 * record sets, measured apart from the rest. With `--baseline DIR` (another checkout, e.g.
 * `git archive REV | tar -x -C DIR`), rounds of the two versions alternate in this one process,
 * each going first in every other round. With `--fresh` every run gets record sets it has not seen
 * (new spec objects), so their values are parsed as at a first start rather than read from the
 * parse cache: those of types with names parsed before the timed builds (the folder's load does so
 * on the main thread), the others (A, AAAA, TXT, ...; checked on the parse threads) by the builds.
 *
 *   node --expose-gc bench/first-build-cpu.ts [--records 100000] [--zones 1000] [--rounds 7] [--baseline DIR] [--fresh]
 */
import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../src/api/index.ts';
import { abArgs, cpuMs, median, moduleLoader, sides } from './lib/ab.ts';
import { scaleObjects } from './lib/zone.ts';

const { records, zones, rounds, baseline, fresh } = abArgs(7);

type Objects = readonly (DNSZoneClass | DNSZone | DNSRecordSet)[];

async function version(root: string) {
  const load = moduleLoader(root);
  const [feedModule, zoneState, resourceKey, recordParse] = await Promise.all([
    load('src/zones/catalog-feed.ts'),
    load('src/control/zone-state.ts'),
    load('src/zones/resource-key.ts'),
    load('src/zones/record-parse.ts'),
  ]);
  return (objects: Objects) => {
    const keys = objects.map((o) => resourceKey.resourceKey(o.metadata));
    globalThis.gc?.();
    const started = process.cpuUsage();
    const feed = new feedModule.CatalogFeed();
    const affected = feed.load(objects, { keys, zonesOnly: true });
    const loadMs = cpuMs(started);
    if (fresh) {
      // What the folder's load parses on the main thread (values whose types hold names), cached.
      for (const key of affected.zones) {
        const verdict = feed.catalog.zoneVerdict(key);
        if (!verdict?.accepted) continue;
        for (const { current } of feed.catalog.zoneMembers(key))
          if (!recordParse.valuesValidAnywhere(current.recordSet.spec.type, current.recordSet.spec.records))
            recordParse.parseRecordSetRecords(current.recordSet, verdict.origin);
      }
      globalThis.gc?.();
    }
    const built = process.cpuUsage();
    const models = new zoneState.ZoneModels();
    let rrsets = 0;
    for (const key of affected.zones) {
      const verdict = feed.catalog.zoneVerdict(key);
      if (!verdict?.accepted) continue;
      const zone = feed.catalog.zones.get(key);
      const state = models.modelFor(key, zone, verdict.zoneClass, verdict.origin);
      zoneState.takeChange(state, feed.catalog, key, undefined, 0);
      rrsets += state.model.rrsetCount;
    }
    return { loadMs, buildMs: cpuMs(built), rrsets };
  };
}

const objects = scaleObjects(records, zones);
const versions = await sides(version, baseline);
const loads = new Map<string, number[]>(versions.map(([label]) => [label, []]));
const builds = new Map<string, number[]>(versions.map(([label]) => [label, []]));
process.stdout.write(`${records} record sets in ${zones} zones, ${rounds} alternating rounds\n`);
/** The objects with new spec objects for their record sets (values not parsed yet). */
const renewed = (): Objects =>
  objects.map((o) =>
    o.kind === 'DNSRecordSet' ? { ...o, spec: { ...o.spec, records: [...o.spec.records] } } : o,
  );
for (let round = 0; round < rounds; round++) {
  for (const [label, run] of round % 2 === 0 ? versions : [...versions].reverse()) {
    globalThis.gc?.();
    const { loadMs, buildMs, rrsets } = run(fresh ? renewed() : objects);
    loads.get(label)!.push(loadMs);
    builds.get(label)!.push(buildMs);
    process.stdout.write(
      `  round ${round + 1} ${label.padEnd(8)} load ${loadMs.toFixed(0)} ms, first builds ${buildMs.toFixed(0)} ms (${rrsets} RRsets)\n`,
    );
  }
}
const range = (list: number[]) => `${Math.min(...list).toFixed(0)}–${Math.max(...list).toFixed(0)}`;
for (const [label] of versions)
  process.stdout.write(
    `${label.padEnd(8)} load median ${median(loads.get(label)!).toFixed(0)} ms (${range(loads.get(label)!)}), ` +
      `first builds median ${median(builds.get(label)!).toFixed(0)} ms (${range(builds.get(label)!)})\n`,
  );
