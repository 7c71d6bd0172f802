/**
 * Query handling without sockets: the bench zone and query mix of `bench/run.ts`, replayed through
 * `QueryHandler.handle` in one process. It isolates the cost of answering (parse, lookup, encode,
 * response cache, metrics) from the cost of Node's UDP I/O, which `bench/run.ts` measures together.
 *
 *   npx node bench/handler.ts [--records 10000] [--seconds 5] [--cache 100000] [--no-metrics] [--kind K] [--rrl] [--images]
 *
 * `--kind` keeps only the queries of one kind of the mix (`nxdomain`, `a-wildcard`, `a-hit`, ... as in
 * bench/lib/queries.ts): `--kind nxdomain --cache 0` is a random-subdomain flood. `--rrl` passes every
 * response through response rate limiting as the UDP path does, from 4096 client networks that each
 * stay under the rate (the cost every query pays). `--images` answers from the zone's image
 * (`ImageZone`, as DNS worker processes do, ADR 0020) instead of its `ZoneSnapshot`.
 */
import { parseArgs } from 'node:util';
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
import { assemble, generateZone } from './lib/zone.ts';

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
  },
});
const records = Number(values.records);
const origin = 'bench.example.';
const nameServers = [`ns1.${origin}`, `ns2.${origin}`];
const assembled = assemble(
  generateZone(origin, { name: 'bench', namespace: 'bench' }, records, { withNameServers: true }),
  nameServers,
);
const table = new ZoneTable<ServedZone>();
if (values.images) {
  const image = ZoneImage.build(assembled.origin, assembled.soa, 1, assembled.rrsets);
  new ZoneApplier(table).replaceImage(image.buffer as ArrayBuffer, undefined);
} else table.set(ZoneSnapshot.build(assembled.origin, assembled.soa, 1, assembled.rrsets));
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
const packets = queries.map((q, i) =>
  Buffer.from(encodeMessage({ ...queryMessage(parseName(q.name), typeCode(q.qtype)!), id: i & 0xffff })),
);

const deadline = performance.now() + Number(values.seconds) * 1000;
let n = 0;
let bytes = 0;
const started = performance.now();
const cpuBefore = process.cpuUsage();
while (performance.now() < deadline) {
  for (let k = 0; k < 10_000; k++) {
    // As the UDP path does: one clock reading per datagram, for the metrics and the rate limiter.
    const received = performance.now();
    let out = handler.handle(packets[n % packets.length]!, 'udp', received);
    if (limiter !== undefined && out instanceof Uint8Array)
      out = limiter.filter(out, clients[n & 4095]!, received);
    if (out instanceof Uint8Array) bytes += out.length;
    n++;
  }
}
const elapsed = (performance.now() - started) / 1000;
// CPU time as well as elapsed time: on a shared machine the process does not get a core to itself.
const cpu = process.cpuUsage(cpuBefore);
console.log(
  `${n} queries in ${elapsed.toFixed(2)} s: ${Math.round(n / elapsed)} per second, ` +
    `${((elapsed * 1e6) / n).toFixed(2)} µs per query (${((cpu.user + cpu.system) / n).toFixed(2)} µs of CPU), ` +
    `${(bytes / n).toFixed(1)} bytes per response`,
);
