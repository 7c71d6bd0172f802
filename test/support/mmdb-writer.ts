/**
 * A small writer of MaxMind DB files (format 2.0: https://maxmind.github.io/MaxMind-DB/) for tests: an
 * IPv4 search tree with 24-bit records, a data section of maps and strings, and the metadata. Enough
 * to make a GeoIP database with a country and continent per network, read by the same reader the
 * product uses.
 */

type Value = string | number | Value[] | { [key: string]: Value };

function control(type: number, size: number): number[] {
  const out: number[] = [];
  let first = 0;
  let extra: number[] = [];
  if (size < 29) first = size;
  else if (size < 285) {
    first = 29;
    extra = [size - 29];
  } else {
    first = 30;
    const s = size - 285;
    extra = [(s >> 8) & 0xff, s & 0xff];
  }
  if (type <= 7) out.push((type << 5) | first);
  else out.push(first, type - 7);
  return [...out, ...extra];
}

function encode(value: Value): number[] {
  if (typeof value === 'string') {
    const bytes = [...Buffer.from(value, 'utf8')];
    return [...control(2, bytes.length), ...bytes];
  }
  if (typeof value === 'number') {
    // uint32 (type 6), big-endian, without leading zero bytes.
    const bytes: number[] = [];
    for (let v = value; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    return [...control(6, bytes.length), ...bytes];
  }
  if (Array.isArray(value)) return [...control(11, value.length), ...value.flatMap(encode)];
  const entries = Object.entries(value);
  return [...control(7, entries.length), ...entries.flatMap(([k, v]) => [...encode(k), ...encode(v)])];
}

/** An IPv4 MaxMind DB holding `records` for the given networks (CIDR). */
export function writeMmdb(
  networks: { network: string; record: Value }[],
  databaseType = 'Zonekeeper-Test',
): Buffer {
  // The data section: each record once.
  const data: number[] = [];
  const offsets: number[] = [];
  for (const n of networks) {
    offsets.push(data.length);
    data.push(...encode(n.record));
  }
  // The search tree: node 0 is the root; each node has two children (node index or a marker).
  const LEAF = -1;
  const nodes: [number, number][] = [[LEAF, LEAF]];
  const leaves: [number, number, number][] = []; // node, side, network index
  networks.forEach((n, index) => {
    const [address, bits] = n.network.split('/') as [string, string];
    const prefix = Number(bits);
    const octets = address.split('.').map(Number);
    let node = 0;
    for (let bit = 0; bit < prefix; bit++) {
      const side = (octets[bit >> 3]! >> (7 - (bit & 7))) & 1;
      if (bit === prefix - 1) {
        leaves.push([node, side, index]);
        break;
      }
      let next = nodes[node]![side]!;
      if (next === LEAF) {
        next = nodes.length;
        nodes.push([LEAF, LEAF]);
        nodes[node]![side] = next;
      }
      node = next;
    }
  });
  const nodeCount = nodes.length;
  const values = nodes.map(([l, r]) => [l === LEAF ? nodeCount : l, r === LEAF ? nodeCount : r]);
  for (const [node, side, index] of leaves) values[node]![side] = nodeCount + 16 + offsets[index]!;
  const tree: number[] = [];
  for (const [l, r] of values)
    tree.push((l! >> 16) & 0xff, (l! >> 8) & 0xff, l! & 0xff, (r! >> 16) & 0xff, (r! >> 8) & 0xff, r! & 0xff);
  const metadata = encode({
    node_count: nodeCount,
    record_size: 24,
    ip_version: 4,
    database_type: databaseType,
    languages: ['en'],
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
    build_epoch: 1,
    description: { en: 'Zonekeeper test database' },
  });
  const marker = [0xab, 0xcd, 0xef, ...Buffer.from('MaxMind.com')];
  return Buffer.from([...tree, ...new Array(16).fill(0), ...data, ...marker, ...metadata]);
}
