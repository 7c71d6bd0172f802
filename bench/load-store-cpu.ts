/**
 * CPU time of the main thread's work between a folder's documents and the controller's first look,
 * in the memory store, the state log and the controller, on one thread, without parsing or files
 * read: the scale bench's objects applied to a `MemoryStore` keeping its record sets in a
 * `RecordTable` (as `serve`), each put into a first start's state (`StateStore` on an empty folder,
 * compactions held: nothing written) and tagged in the same order (as `Definers.settle` tags them),
 * then the store of API-written record sets loaded (`FolderWriteStore.load`, none written, as at a
 * first start) and the controller's first look (`loadStore`: the catalog feed's load and every key queued),
 * without the reconciles after it. With `--baseline DIR` (another checkout) rounds of the two
 * alternate in this one process; `--expose-gc` collects before each run and reports the heap after
 * the first look.
 *
 *   node --expose-gc bench/load-store-cpu.ts [--records 100000] [--zones 1000] [--rounds 5] [--baseline DIR]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../src/api/index.ts';
import { abArgs, median, moduleLoader, sides } from './lib/ab.ts';
import { scaleObjects } from './lib/zone.ts';

const { records, zones, rounds, baseline } = abArgs(5);

type Objects = readonly (DNSZoneClass | DNSZone | DNSRecordSet)[];
const STEPS = ['store puts', 'state puts', 'state tags', 'writes load', 'first look'] as const;

/** The steps of one round, from this checkout or another: CPU ms per step and the heap after. */
async function version(root: string) {
  const load = moduleLoader(root);
  const [store, controller, serials, builtin, zoneTable, recordTable, state, writes] = await Promise.all([
    load('src/control/memory-store.ts'),
    load('src/control/controller.ts'),
    load('src/control/serial-store.ts'),
    load('src/backends/builtin/builtin-backend.ts'),
    load('src/server/zone-table.ts'),
    load('src/zones/record-table.ts'),
    load('src/sources/manifests/state-file.ts'),
    load('src/sources/writes/folder-write-store.ts'),
  ]);
  return async (objects: Objects, ids: readonly string[]) => {
    const now = () => new Date('2026-11-27T00:00:00Z');
    const created = now().toISOString();
    const table = new recordTable.RecordTable();
    const s = new store.MemoryStore(now, { recordSets: table, restoreDeleting: true });
    const dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-bench-load-store-'));
    try {
      const st = await state.StateStore.open(dir);
      st.holdCompaction();
      const ms: number[] = [];
      let at = process.threadCpuUsage();
      const lap = () => {
        const used = process.threadCpuUsage(at);
        ms.push((used.user + used.system) / 1000);
        at = process.threadCpuUsage();
      };
      for (const object of objects) s.apply(object, created);
      lap();
      for (let i = 0; i < objects.length; i++)
        st.putObject(ids[i], { created, file: 'scale.yaml', resource: objects[i] });
      lap();
      for (const id of ids) st.setTag(id, 'scale.yaml');
      lap();
      // API-written record sets (none) join the store before the first look, as in `serve`.
      const written = await writes.FolderWriteStore.open(dir, s);
      at = process.threadCpuUsage();
      await written.load();
      lap();
      await written.close();
      const c = new controller.Controller({
        store: s,
        backend: new builtin.BuiltinBackend(new zoneTable.ZoneTable()),
        serials: new serials.MemorySerialStore(),
        now,
        recordTable: table,
      });
      at = process.threadCpuUsage();
      // The first look alone: `start` would go on into the reconciles.
      const inside = c as unknown as { loadStore(): unknown; enqueueAffected(affected: unknown): void };
      inside.enqueueAffected(inside.loadStore());
      lap();
      globalThis.gc?.();
      const heap = process.memoryUsage().heapUsed / 2 ** 20;
      c.stop();
      return { ms, heap };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };
}

const objects = scaleObjects(records, zones);
const ids = objects.map((o) => [o.kind, o.metadata.namespace, o.metadata.name].filter(Boolean).join('/'));
const versions = await sides(version, baseline);
const results = new Map<string, number[][]>(versions.map(([label]) => [label, []]));
const heaps = new Map<string, number[]>(versions.map(([label]) => [label, []]));
process.stdout.write(`${records} record sets in ${zones} zones, ${rounds} alternating rounds\n`);
for (let round = 0; round < rounds; round++) {
  for (const [label, run] of round % 2 === 0 ? versions : [...versions].reverse()) {
    globalThis.gc?.();
    const { ms, heap } = await run(objects, ids);
    results.get(label)!.push(ms);
    heaps.get(label)!.push(heap);
    process.stdout.write(
      `  round ${round + 1} ${label.padEnd(8)} ${STEPS.map((step, i) => `${step} ${ms[i]!.toFixed(0)}`).join(', ')} ms; heap ${heap.toFixed(1)} MiB\n`,
    );
  }
}
for (const [label, list] of results)
  process.stdout.write(
    `${label.padEnd(8)} medians: ${STEPS.map((step, i) => `${step} ${median(list.map((ms) => ms[i]!)).toFixed(0)} ms`).join(', ')}; ` +
      `heap after the first look ${median(heaps.get(label)!).toFixed(1)} MiB\n`,
  );
