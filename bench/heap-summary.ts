/**
 * Sums a V8 heap snapshot (`.heapsnapshot`, e.g. from `bench/scale.ts --heap` with
 * ZONEKEEPER_BENCH_SNAPSHOT_DIR set) by node type and constructor name: self sizes, largest first.
 *
 *   node bench/heap-summary.ts FILE [--top 40] [--per N]   (--per: also bytes per N, e.g. records)
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '40' }, per: { type: 'string' } },
});
const file = positionals[0];
if (!file) throw new Error('usage: node bench/heap-summary.ts FILE [--top 40] [--per N]');
const snap = JSON.parse(readFileSync(file, 'utf8')) as {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
};
const fields = snap.snapshot.meta.node_fields;
const width = fields.length;
const typeAt = fields.indexOf('type');
const nameAt = fields.indexOf('name');
const sizeAt = fields.indexOf('self_size');
const types = snap.snapshot.meta.node_types[0];
const sums = new Map<string, { bytes: number; count: number }>();
let total = 0;
for (let i = 0; i < snap.nodes.length; i += width) {
  const type = types[snap.nodes[i + typeAt]!]!;
  const size = snap.nodes[i + sizeAt]!;
  let name = type;
  if (type === 'object' || type === 'closure' || type === 'hidden' || type === 'native')
    name = `${type}:${snap.strings[snap.nodes[i + nameAt]!]}`;
  const s = sums.get(name) ?? { bytes: 0, count: 0 };
  s.bytes += size;
  s.count++;
  sums.set(name, s);
  total += size;
}
const per = values.per ? Number(values.per) : undefined;
const rows = [...sums].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, Number(values.top));
console.log(
  `total ${(total / 2 ** 20).toFixed(1)} MiB${per ? `, ${(total / per).toFixed(0)} bytes per ${per}` : ''}`,
);
for (const [name, s] of rows) {
  const perText = per ? `${(s.bytes / per).toFixed(1).padStart(8)} B/rec` : '';
  console.log(
    `${(s.bytes / 2 ** 20).toFixed(2).padStart(9)} MiB ${String(s.count).padStart(9)} ${perText}  ${name.slice(0, 90)}`,
  );
}
