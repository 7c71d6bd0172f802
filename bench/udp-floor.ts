/**
 * The floor of Node's UDP I/O: a responder that does no DNS work at all (it copies each query and
 * sets QR), once through the public `dgram` API and once through the socket handle that
 * `src/server/udp-endpoint.ts` uses, under the same dnsperf load as `bench/run.ts`. No DNS server on
 * Node can answer faster than its floor; the gap between the floor and `bench/run.ts`'s Zonekeeper
 * figure is what answering costs.
 *
 *   npx node bench/udp-floor.ts [--cores 1] [--client-cores 0] [--duration 10] [--runs 2]
 *
 * Prints one line per run and path; nothing is written (the figures go into docs/benchmarks.md by
 * hand, with the command).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runDnsperf } from './lib/dnsperf.ts';
import { freePort, makeTempDir, ROOT, removeTempDir, sleep, spawnPinned } from './lib/proc.ts';

const RESPONDER = `
import dgram from 'node:dgram';
import { UdpEndpoint } from ${JSON.stringify(path.join(ROOT, 'src/server/udp-endpoint.ts'))};
const [port, preferred] = process.argv.slice(-2);
const socket = dgram.createSocket('udp4');
await new Promise((resolve) => socket.bind(Number(port), '127.0.0.1', resolve));
const endpoint = new UdpEndpoint(socket, (msg, address, peerPort) => {
  const out = Buffer.allocUnsafe(msg.length);
  out.set(msg);
  out[2] |= 0x80;
  endpoint.send(out, peerPort, address);
}, () => {}, preferred);
console.log('responder on', port, 'path', endpoint.path);
`;

const { values } = parseArgs({
  options: {
    cores: { type: 'string', default: '1' },
    'client-cores': { type: 'string', default: '0' },
    duration: { type: 'string', default: '10' },
    runs: { type: 'string', default: '2' },
  },
});

const tmp = makeTempDir('udp-floor');
try {
  const script = path.join(tmp, 'responder.mjs');
  writeFileSync(script, RESPONDER);
  const queries = path.join(tmp, 'queries.txt');
  writeFileSync(queries, Array.from({ length: 1000 }, (_, i) => `h${i}.bench.example. A\n`).join(''));
  for (let run = 1; run <= Number(values.runs); run++) {
    for (const preferred of ['dgram', 'handle'] as const) {
      const port = await freePort();
      const server = spawnPinned(
        values.cores,
        process.execPath,
        [script, String(port), preferred],
        path.join(tmp, `${preferred}.log`),
      );
      try {
        await sleep(1000);
        const r = await runDnsperf({
          port,
          queryFile: queries,
          duration: Number(values.duration),
          cores: values['client-cores'],
          clients: 8,
          threads: 1,
          outstanding: 100,
          timeout: 1,
          serverPid: server.pid,
        });
        console.log(
          `run ${run} ${preferred.padEnd(6)} ${Math.round(r.qps)} qps, lost ${r.lost}, ` +
            `${Math.round(r.qpsPerServerCpu ?? 0)} per server CPU-second`,
        );
      } finally {
        await server.stop();
      }
    }
  }
} finally {
  removeTempDir(tmp);
}
