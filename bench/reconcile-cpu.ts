/**
 * CPU time of the controller's first reconcile of every zone and record set, on one thread, with no
 * manifest parsing, DNS threads or files: the work `zonekeeper serve`'s main thread does after the
 * objects are loaded (zone models, serials, zone images, zone and record-set statuses, finalizers).
 * Objects as `bench/scale.ts` generates them, in a `MemoryStore`; the built-in backend building zone
 * images as the DNS thread pool's main thread does. With `--baseline DIR` (a checkout of another
 * version, e.g. `git archive REV | tar -x -C DIR`), rounds of the two versions alternate in this one
 * process: the figures to compare are the CPU times (`process.cpuUsage`, to the first zone programmed, to every zone programmed and to idle) of alternating rounds, which
 * the load of a shared machine moves less than wall-clock times.
 *
 * With `--fresh` every run gets record sets it has not seen (new spec objects), so their values are
 * parsed as at a first start rather than read from the parse cache of an earlier round: those of
 * types with names parsed before the run (the folder's load does so), the others by the zones' models.
 *
 *   node --expose-gc bench/reconcile-cpu.ts [--records 100000] [--zones 1000] [--rounds 5] [--baseline DIR] [--fresh]
 */
import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../src/api/index.ts';
import { abArgs, median, moduleLoader, sides } from './lib/ab.ts';
import { scaleObjects } from './lib/zone.ts';

const { records, zones, rounds, baseline, fresh } = abArgs(5);

/** The modules one round needs, from this checkout or another. */
async function version(root: string) {
  const load = moduleLoader(root);
  const [store, controller, serials, builtin, zoneTable, images, recordTable, recordParse] =
    await Promise.all([
      load('src/control/memory-store.ts'),
      load('src/control/controller.ts'),
      load('src/control/serial-store.ts'),
      load('src/backends/builtin/builtin-backend.ts'),
      load('src/server/zone-table.ts'),
      load('src/server/image/image-builder.ts'),
      load('src/zones/record-table.ts'),
      load('src/zones/record-parse.ts'),
    ]);
  return async (objects: readonly (DNSZoneClass | DNSZone | DNSRecordSet)[]) => {
    if (fresh) {
      // What the folder's load parses on the main thread (values whose types hold names), cached.
      const origins = new Map<string, string>();
      for (const o of objects) if (o.kind === 'DNSZone') origins.set(o.metadata.name, o.spec.domainName);
      for (const o of objects)
        if (o.kind === 'DNSRecordSet' && !recordParse.valuesValidAnywhere(o.spec.type, o.spec.records))
          recordParse.parseRecordSetRecords(o, origins.get(o.spec.zoneRef?.name ?? '') ?? '.');
    }
    const now = () => new Date('2026-11-27T00:00:00Z');
    const table = new recordTable.RecordTable();
    const s = new store.MemoryStore(now, { recordSets: table });
    for (const object of objects) s.apply(object);
    const backend = new builtin.BuiltinBackend(new zoneTable.ZoneTable(), undefined, {
      images: new images.ZoneImageBuilder({ shared: true }),
    });
    const c = new controller.Controller({
      store: s,
      backend,
      serials: new serials.MemorySerialStore(),
      now,
      recordTable: table,
      hashDelayMs: 0,
    });
    // The CPU when the first zone and when every zone was first programmed (its apply returned).
    const cpu = () => {
      const used = process.cpuUsage(started);
      return (used.user + used.system) / 1000;
    };
    const applied = new Set<string>();
    let firstMs = 0;
    let everyMs = 0;
    const apply = backend.applyZone.bind(backend);
    backend.applyZone = async (zone: { key: string }) => {
      const result = await apply(zone);
      if (!applied.has(zone.key)) {
        applied.add(zone.key);
        if (applied.size === 1) firstMs = cpu();
        if (applied.size === zones) everyMs = cpu();
      }
      return result;
    };
    const started = process.cpuUsage();
    const wall = performance.now();
    c.start();
    await c.idle();
    const cpuMs = cpu();
    c.stop();
    return { cpuMs, firstMs, everyMs, wallMs: performance.now() - wall };
  };
}

const objects = scaleObjects(records, zones);

const versions = await sides(version, baseline);
const results = new Map<string, number[]>(versions.map(([label]) => [label, []]));
const firsts = new Map<string, number[]>(versions.map(([label]) => [label, []]));
const everys = new Map<string, number[]>(versions.map(([label]) => [label, []]));
process.stdout.write(`${records} record sets in ${zones} zones, ${rounds} alternating rounds\n`);
for (let round = 0; round < rounds; round++) {
  // Each version goes first in every other round (the one after another runs beside its garbage),
  // with a collection before each run when `--expose-gc` allows one.
  for (const [label, run] of round % 2 === 0 ? versions : [...versions].reverse()) {
    const given = fresh
      ? objects.map((o) =>
          o.kind === 'DNSRecordSet' ? { ...o, spec: { ...o.spec, records: [...o.spec.records] } } : o,
        )
      : objects;
    globalThis.gc?.();
    const { cpuMs, firstMs, everyMs, wallMs } = await run(given);
    results.get(label)!.push(cpuMs);
    firsts.get(label)!.push(firstMs);
    everys.get(label)!.push(everyMs);
    process.stdout.write(
      `  round ${round + 1} ${label.padEnd(8)} CPU ${cpuMs.toFixed(0)} ms (first zone ${firstMs.toFixed(0)}, every zone ${everyMs.toFixed(0)}), wall ${wallMs.toFixed(0)} ms\n`,
    );
  }
}
for (const [label, list] of results)
  process.stdout.write(
    `${label.padEnd(8)} CPU median ${median(list).toFixed(0)} ms (${((1000 * median(list)) / records).toFixed(2)} µs per record set); ` +
      `first zone programmed ${median(firsts.get(label)!).toFixed(0)} ms, every zone ${median(everys.get(label)!).toFixed(0)} ms\n`,
  );
