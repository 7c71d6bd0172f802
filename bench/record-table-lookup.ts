/**
 * The record table's key look-ups, alone: `--records` fresh `namespace/name` keys (as a folder's
 * record sets arrive) into an empty `RecordTable`, in two patterns. `fresh`: `slotOf` (a miss), then
 * `hold`, per key; then `slotOf` of every key again (hits). `load`: per key as a first load looks a
 * new record set up (the state log's `tagOf`, its `putObject`, the memory store's `put`): `slotOf`
 * (a miss), `slotOf` (a miss), `hold`, `slotOf` (a hit). And a walk of `entries()` (the first
 * look's). Reports CPU milliseconds of each and what the table keeps per key after a full
 * collection: heap and array buffers beyond the keys themselves (made before). With `--baseline DIR`
 * (another checkout) rounds of the two versions alternate in this one process; the first round of
 * each is a warm-up, reported and not counted.
 *
 *   node --expose-gc bench/record-table-lookup.ts [--records 1000000] [--rounds 5] [--baseline DIR]
 */
import { abArgs, cpuMs, median, moduleLoader, sides } from './lib/ab.ts';

const { records, rounds, baseline } = abArgs(5);
const gc = (globalThis as { gc?: () => void }).gc;
const STORE = 16;

function keys(round: number): string[] {
  // Fresh strings each round, made as `resourceKey` makes them (joined, flat, not internalized).
  return Array.from({ length: records }, (_, i) => [`ns-${round}-${i % 1000}`, `name-${i}`].join('/'));
}

function memory(): number {
  gc?.();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

interface Table {
  slotOf(key: string): number;
  hold(key: string, holder: number): number;
  size: number;
  entries(): IterableIterator<[string, number]>;
}

async function version(root: string) {
  const { RecordTable } = (await moduleLoader(root)('src/zones/record-table.ts')) as {
    RecordTable: new () => Table;
  };
  return (round: number) => {
    const list = keys(round);
    const before = memory();
    const fresh = new RecordTable();
    let t = process.cpuUsage();
    for (const key of list) if (fresh.slotOf(key) < 0) fresh.hold(key, STORE);
    const freshMs = cpuMs(t);
    t = process.cpuUsage();
    let sum = 0;
    for (const key of list) sum += fresh.slotOf(key);
    const hitMs = cpuMs(t);
    const bytes = (memory() - before) / fresh.size;
    t = process.cpuUsage();
    for (const [key, slot] of fresh.entries()) sum += slot + key.length;
    const walkMs = cpuMs(t);
    const again = keys(round + 1000);
    const load = new RecordTable();
    t = process.cpuUsage();
    for (const key of again) {
      if (load.slotOf(key) >= 0 || load.slotOf(key) >= 0) continue;
      const slot = load.hold(key, STORE);
      if (load.slotOf(key) !== slot) throw new Error('not found');
    }
    const loadMs = cpuMs(t);
    if (sum < 0 || load.size !== records) throw new Error('miscounted');
    return { freshMs, hitMs, loadMs, walkMs, bytes };
  };
}

const versions = await sides(version, baseline);
const results = new Map<
  string,
  { freshMs: number; hitMs: number; loadMs: number; walkMs: number; bytes: number }[]
>();
process.stdout.write(`${records} keys, ${rounds} alternating rounds\n`);
for (let round = 0; round < rounds; round++) {
  for (const [label, run] of round % 2 === 0 ? versions : [...versions].reverse()) {
    const r = run(round);
    if (round > 0) (results.get(label) ?? results.set(label, []).get(label)!).push(r);
    process.stdout.write(
      `  round ${round + 1} ${label.padEnd(8)} miss+hold ${r.freshMs.toFixed(0)} ms, hits ${r.hitMs.toFixed(0)} ms, load pattern ${r.loadMs.toFixed(0)} ms, entries ${r.walkMs.toFixed(0)} ms, ${r.bytes.toFixed(1)} bytes per key\n`,
    );
    gc?.();
  }
}
for (const [label, list] of [...results].sort(([a], [b]) => a.localeCompare(b))) {
  const m = (pick: (r: (typeof list)[number]) => number) => median(list.map(pick));
  process.stdout.write(
    `${label.padEnd(8)} medians: miss+hold ${m((r) => r.freshMs).toFixed(0)} ms, hits ${m((r) => r.hitMs).toFixed(0)} ms, load pattern ${m((r) => r.loadMs).toFixed(0)} ms, entries ${m((r) => r.walkMs).toFixed(0)} ms, ${m((r) => r.bytes).toFixed(1)} bytes per key\n`,
  );
}
