/**
 * Query handling without sockets: the bench zone and query mix of `bench/run.ts`, replayed through
 * `QueryHandler.handle` in one process. It isolates the cost of answering (parse, lookup, encode,
 * response cache, metrics) from the cost of Node's UDP I/O, which `bench/run.ts` measures together.
 *
 *   npx node bench/handler.ts [--records 10000] [--seconds 5] [--cache 100000] [--no-metrics] [--kind K] [--rrl] [--images] [--unique]
 *                             [--dnssec NSEC|NSEC3 [--algorithm 13|15] [--do 0..1]]
 *
 * `--kind` keeps only the queries of one kind of the mix (`nxdomain`, `a-wildcard`, `a-hit`, ... as in
 * bench/lib/queries.ts): `--kind nxdomain --cache 0` is a random-subdomain flood. `--rrl` passes every
 * response through response rate limiting as the UDP path does, from 4096 client networks that each
 * stay under the rate (the cost every query pays). `--images` answers from the zone's image
 * (`ImageZone`, as DNS worker processes do, ADR 0020) instead of its `ZoneSnapshot`.
 * `--unique` gives the random names of the mix (NXDOMAIN `nx<digits>`, wildcard `x<digits>`) new digits on
 * every query, so they are names never asked before however long the run (as in a server run with
 * the million-line query file, or a random-subdomain flood), without building millions of queries.
 * `--dnssec` signs the zone as the built-in server does
 * (a CSK, windows from one signing time) and `--do` sets the DO bit (EDNS, RFC 3225) on that share of
 * the queries (default 1 with --dnssec): answers then carry RRSIGs and NSEC/NSEC3 proofs.
 */
import { parseArgs } from 'node:util';
import { generateZoneKeys, signForServing } from '../src/backends/builtin/zone-signing.ts';
import { generateDnssecKey } from '../src/dns/dnssec/keys.ts';
import { encodeMessage, queryMessage } from '../src/dns/message.ts';
import { parseName } from '../src/dns/name.ts';
import { typeCode } from '../src/dns/rrtype.ts';
import { Registry } from '../src/metrics/registry.ts';
import { ZoneImage } from '../src/server/image/zone-image.ts';
import { QueryHandler } from '../src/server/query-handler.ts';
import { ServerMetrics } from '../src/server/server-metrics.ts';
import { ZoneApplier } from '../src/server/zone-apply.ts';
import { ZoneSnapshot } from '../src/server/zone-snapshot.ts';
import { type ServedZone, ZoneTable } from '../src/server/zone-table.ts';
import { generateQueries } from './lib/queries.ts';
import { assembledBenchZone } from './lib/zone.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '10000' },
    lines: { type: 'string', default: '100000' },
    seconds: { type: 'string', default: '5' },
    cache: { type: 'string', default: '100000' },
    kind: { type: 'string' },
    'no-metrics': { type: 'boolean', default: false },
    rrl: { type: 'boolean', default: false },
    images: { type: 'boolean', default: false },
    unique: { type: 'boolean', default: false },
    dnssec: { type: 'string' },
    algorithm: { type: 'string', default: '13' },
    do: { type: 'string' },
  },
});
const records = Number(values.records);
const origin = 'bench.example.';
const assembled = assembledBenchZone(records, origin);
const table = new ZoneTable<ServedZone>();
const denial = values.dnssec as 'NSEC' | 'NSEC3' | undefined;
if (denial !== undefined && denial !== 'NSEC' && denial !== 'NSEC3')
  throw new Error('--dnssec NSEC or NSEC3');
const settings = denial
  ? {
      algorithm: values.algorithm === '15' ? ('ED25519' as const) : ('ECDSAP256SHA256' as const),
      denial,
      keys: 'CSK' as const,
      zskLifetimeSeconds: 0,
      kskLifetimeSeconds: 0,
    }
  : undefined;
const signedAt = Math.floor(Date.now() / 1000);
const signing = performance.now();
const dnssec = settings
  ? signForServing(
      { origin: assembled.origin, soa: assembled.soa, serial: 1, rrsets: assembled.rrsets },
      settings,
      generateZoneKeys(settings, generateDnssecKey),
      signedAt,
    )
  : undefined;
if (dnssec) console.log(`signed (${denial}) in ${((performance.now() - signing) / 1000).toFixed(1)} s`);
if (values.images) {
  if (dnssec) throw new Error('--images serves unsigned zones only (signed zones stay on ZoneSnapshot)');
  const image = ZoneImage.build(assembled.origin, assembled.soa, 1, assembled.rrsets);
  new ZoneApplier(table).replaceImage(image.buffer as ArrayBuffer, undefined);
} else table.set(ZoneSnapshot.build(assembled.origin, assembled.soa, 1, assembled.rrsets, undefined, dnssec));
const doShare = Number(values.do ?? (denial ? '1' : '0'));
if (dnssec) {
  // Signing leaves a heap of garbage: let the collector finish with it before measuring answers.
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((resolve) => setTimeout(resolve, 3000));
}
const handler = new QueryHandler({
  table,
  responseCache: Number(values.cache),
  ...(values['no-metrics'] ? {} : { metrics: new ServerMetrics(new Registry(), table) }),
  ...(values.rrl ? { rrl: { exempt: [] } } : {}),
});
const limiter = handler.rateLimiter;
const clients = Array.from({ length: 4096 }, (_, i) => `10.${i >> 8}.${i & 255}.7`);
const queries = generateQueries(origin, records, Number(values.lines)).filter(
  (q) => values.kind === undefined || q.kind === values.kind,
);
if (queries.length === 0) throw new Error(`no queries of kind ${values.kind}`);
// DO on the first `doShare` of every 1000 queries (the mix itself is shuffled).
const withDo = (i: number) => i % 1000 < doShare * 1000;
const packets = queries.map((q, i) =>
  Buffer.from(
    encodeMessage({
      ...queryMessage(parseName(q.name), typeCode(q.qtype)!),
      id: i & 0xffff,
      ...(withDo(i) || doShare > 0
        ? { edns: { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: withDo(i), options: [] } }
        : {}),
    }),
  ),
);

// --unique: where each random first label's digits are (after the 'nx' or 'x'), per packet; 0: none.
const digitsFrom = queries.map((q) =>
  values.unique && (q.kind === 'nxdomain' || q.kind === 'a-wildcard')
    ? 13 + (q.kind === 'nxdomain' ? 2 : 1)
    : 0,
);
let fresh = 0;

const deadline = performance.now() + Number(values.seconds) * 1000;
let n = 0;
let bytes = 0;
const started = performance.now();
const cpuStarted = process.cpuUsage();
while (performance.now() < deadline) {
  for (let k = 0; k < 10_000; k++) {
    // As the UDP path does: one clock reading per datagram, for the metrics and the rate limiter.
    const packet = packets[n % packets.length]!;
    const from = digitsFrom[n % packets.length]!;
    if (from !== 0) {
      // New digits from a counter, last digit first: the label keeps its length.
      let v = ++fresh;
      for (let j = 12 + packet[12]!; j >= from; j--) {
        packet[j] = 0x30 + (v % 10);
        v = Math.floor(v / 10);
      }
    }
    const received = performance.now();
    let out = handler.handle(packet, 'udp', received);
    if (limiter !== undefined && out instanceof Uint8Array)
      out = limiter.filter(out, clients[n & 4095]!, received);
    if (out instanceof Uint8Array) bytes += out.length;
    n++;
  }
}
const elapsed = (performance.now() - started) / 1000;
// CPU time of this process: on a machine shared with other jobs it moves far less than wall time.
const cpu = process.cpuUsage(cpuStarted);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
console.log(
  `${n} queries in ${elapsed.toFixed(2)} s: ${Math.round(n / elapsed)} per second, ` +
    `${((elapsed * 1e6) / n).toFixed(2)} µs per query, ${(bytes / n).toFixed(1)} bytes per response; ` +
    `CPU ${((cpuSeconds * 1e6) / n).toFixed(2)} µs per query (${Math.round(n / cpuSeconds)} per CPU-second)`,
);
