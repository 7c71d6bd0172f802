/**
 * CPU time of programming every zone once into the DNS threads' pool (`WorkerPoolBackend.applyZone`
 * of each zone whole, with no thread: the main thread's work alone, the zone image the threads would
 * get), as a first start does after each zone's first build: the scale bench's objects, each zone's
 * model built first (as `first-build-cpu.ts` does, not timed), then every zone applied from its
 * model's `rrsets()` at a new serial per round. Unlike `pool-apply.ts` (one big zone from an array),
 * this is the start's mix: many small zones, content read through the model's generator. With
 * `--baseline DIR` (another checkout, e.g. `git archive REV | tar -x -C DIR`), rounds of the two
 * versions alternate in this one process.
 *
 *   node --expose-gc bench/first-program-cpu.ts [--records 100000] [--zones 1000] [--rounds 7] [--baseline DIR]
 */
import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../src/api/index.ts';
import type { ZoneModel } from '../src/zones/zone-model.ts';
import { abArgs, cpuMs, median, moduleLoader, sides } from './lib/ab.ts';
import { scaleObjects } from './lib/zone.ts';

const { records, zones, rounds, baseline } = abArgs(7);

type Objects = readonly (DNSZoneClass | DNSZone | DNSRecordSet)[];

async function version(root: string) {
  const load = moduleLoader(root);
  const [feedModule, zoneState, resourceKey, poolModule, tableModule] = await Promise.all([
    load('src/zones/catalog-feed.ts'),
    load('src/control/zone-state.ts'),
    load('src/zones/resource-key.ts'),
    load('src/backends/builtin/worker-pool-backend.ts'),
    load('src/server/zone-table.ts'),
  ]);
  const objects = scaleObjects(records, zones);
  const keys = objects.map((o) => resourceKey.resourceKey(o.metadata));
  const feed = new feedModule.CatalogFeed();
  const affected = feed.load(objects as Objects, { keys, zonesOnly: true });
  const models = new zoneState.ZoneModels();
  const built: { key: string; model: ZoneModel }[] = [];
  for (const key of affected.zones) {
    const verdict = feed.catalog.zoneVerdict(key);
    if (!verdict?.accepted) continue;
    const state = models.modelFor(key, feed.catalog.zones.get(key), verdict.zoneClass, verdict.origin);
    zoneState.takeChange(state, feed.catalog, key, undefined, 0);
    built.push({ key, model: state.model });
  }
  let serial = 0;
  return async () => {
    const table = new tableModule.ZoneTable();
    const pool = new poolModule.WorkerPoolBackend(table, { workers: 0, config: { listen: '127.0.0.1:0' } });
    await pool.start();
    serial++;
    globalThis.gc?.();
    const started = process.cpuUsage();
    let rrsets = 0;
    for (const { key, model } of built) {
      await pool.applyZone({
        key,
        origin: model.origin,
        soa: model.soa,
        serial,
        rrsets: () => model.rrsets(),
      });
      rrsets += model.rrsetCount;
    }
    const ms = cpuMs(started);
    await pool.stop();
    return { ms, rrsets, zones: built.length };
  };
}

const versions = await sides(version, baseline);
const times = new Map<string, number[]>(versions.map(([label]) => [label, []]));
process.stdout.write(`${records} record sets in ${zones} zones, ${rounds} alternating rounds\n`);
for (let round = 0; round < rounds; round++) {
  // Which version goes first alternates: the second runs beside the first one's garbage.
  const order = round % 2 === 0 ? versions : [...versions].reverse();
  for (const [label, run] of order) {
    const { ms, rrsets, zones: programmed } = await run();
    times.get(label)!.push(ms);
    process.stdout.write(
      `  round ${round + 1} ${label.padEnd(8)} every zone programmed ${ms.toFixed(0)} ms (${programmed} zones, ${rrsets} RRsets)\n`,
    );
  }
}
const range = (list: number[]) => `${Math.min(...list).toFixed(0)}–${Math.max(...list).toFixed(0)}`;
for (const [label] of versions)
  process.stdout.write(
    `${label.padEnd(8)} every zone programmed median ${median(times.get(label)!).toFixed(0)} ms (${range(times.get(label)!)})\n`,
  );
