/**
 * Sums a V8 heap snapshot (`.heapsnapshot`, e.g. from `bench/scale.ts --heap` with
 * ZONEKEEPER_BENCH_SNAPSHOT_DIR set) by node type and constructor name: self sizes, largest first.
 *
 *   node bench/heap-summary.ts FILE [--top 40] [--per N] [--owners]
 *
 * --per: also bytes per N (e.g. record sets). --owners: sums by owner instead: a breadth-first walk
 * from the roots gives each object to the first field of a class instance (`ZoneModel.entries`) or
 * module variable that reaches it, so an object shared by two structures counts once, under the
 * first.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '40' },
    per: { type: 'string' },
    owners: { type: 'boolean', default: false },
    detail: { type: 'boolean', default: false },
    duplicates: { type: 'boolean', default: false },
  },
});
const file = positionals[0];
if (!file) throw new Error('usage: node bench/heap-summary.ts FILE [--top 40] [--per N]');
const snap = JSON.parse(readFileSync(file, 'utf8')) as {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] };
  };
  nodes: number[];
  edges: number[];
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
const owners = values.owners ? ownerLabels() : undefined;
for (let i = 0; i < snap.nodes.length; i += width) {
  const type = types[snap.nodes[i + typeAt]!]!;
  const size = snap.nodes[i + sizeAt]!;
  let name = type;
  if (type === 'object' || type === 'closure' || type === 'hidden' || type === 'native')
    name = `${type}:${snap.strings[snap.nodes[i + nameAt]!]}`;
  if (owners) name = `${owners[i / width] ?? '(unreached)'}${values.detail ? `  ${name}` : ''}`;
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

/** The owner of each node (by node ordinal), from a breadth-first walk over strong edges. */
function ownerLabels(): (string | undefined)[] {
  const edgeFields = snap.snapshot.meta.edge_fields;
  const ew = edgeFields.length;
  const edgeTypes = snap.snapshot.meta.edge_types[0];
  const eType = edgeFields.indexOf('type');
  const eName = edgeFields.indexOf('name_or_index');
  const eTo = edgeFields.indexOf('to_node');
  const countAt = fields.indexOf('edge_count');
  const n = snap.nodes.length / width;
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0; i < n; i++) firstEdge[i + 1] = firstEdge[i]! + snap.nodes[i * width + countAt]! * ew;
  const builtin = new Set(['Object', 'Array', 'Map', 'Set', 'WeakMap', 'WeakSet', 'Promise', 'Function']);
  const isClass = (i: number) => {
    if (types[snap.nodes[i * width + typeAt]!] !== 'object') return false;
    const name = snap.strings[snap.nodes[i * width + nameAt]!]!;
    return /^[A-Z]/.test(name) && !builtin.has(name);
  };
  const label: (string | undefined)[] = new Array(n);
  label[0] = '(root)';
  let queue = [0];
  while (queue.length > 0) {
    const next: number[] = [];
    for (const from of queue) {
      const fromClass = isClass(from);
      for (let e = firstEdge[from]!; e < firstEdge[from + 1]!; e += ew) {
        const et = edgeTypes[snap.edges[e + eType]!];
        if (et === 'weak' || et === 'shortcut') continue;
        const to = snap.edges[e + eTo]! / width;
        if (label[to] !== undefined) continue;
        const edgeName =
          et === 'element' || et === 'hidden'
            ? String(snap.edges[e + eName])
            : snap.strings[snap.edges[e + eName]!]!;
        let l = label[from]!;
        if (fromClass && et === 'property')
          l = `${snap.strings[snap.nodes[from * width + nameAt]!]}.${edgeName}`;
        else if (et === 'context' && (l === '(root)' || l.startsWith('('))) l = `(variable) ${edgeName}`;
        label[to] = l;
        next.push(to);
      }
    }
    queue = next;
  }
  return label;
}
