/**
 * CPU time of the DNS threads' pool's main thread per whole-zone apply (`WorkerPoolBackend.applyZone`
 * with no delta: what every zone costs at start-up), on the bench zone of `bench/run.ts` (the mix of
 * `bench/lib/zone.ts`). The pool runs no thread here (`workers: 0`), so what is timed is the main
 * thread's own work: the built-in backend's apply and the zone image the threads would be sent.
 * Each round applies the zone at a new serial; the figure is the median CPU time
 * (`process.cpuUsage`) of the rounds, which the load of a shared machine moves less than wall-clock
 * time. To compare two trees, run this script in each, alternating.
 *
 *   node bench/pool-apply.ts [--records 100000] [--rounds 9]
 */
import { parseArgs } from 'node:util';
import { WorkerPoolBackend } from '../src/backends/builtin/worker-pool-backend.ts';
import { ImageZone } from '../src/server/image/image-zone.ts';
import type { DnsWorkerConfig } from '../src/server/worker-protocol.ts';
import { type ServedZone, ZoneTable } from '../src/server/zone-table.ts';
import { assembledBenchZone } from './lib/zone.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '9' },
  },
});
const records = Number(values.records);
const rounds = Number(values.rounds);
const origin = 'bench.example.';
const assembled = assembledBenchZone(records, origin);
const table = new ZoneTable<ServedZone>();
const pool = new WorkerPoolBackend(table, {
  workers: 0,
  config: { listen: '127.0.0.1:0' } as DnsWorkerConfig,
});
await pool.start();

const cpu: number[] = [];
const wall: number[] = [];
for (let round = 0; round < rounds; round++) {
  const t = performance.now();
  const c = process.cpuUsage();
  await pool.applyZone({
    key: 'bench/bench',
    origin: assembled.origin,
    soa: assembled.soa,
    serial: round + 1,
    rrsets: () => assembled.rrsets,
  });
  const used = process.cpuUsage(c);
  wall.push(performance.now() - t);
  cpu.push((used.user + used.system) / 1000);
  if (!(table.get(origin) instanceof ImageZone)) throw new Error('the zone is not held as an image');
}
await pool.stop();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const c = median(cpu);
console.log(
  JSON.stringify({
    recordSets: assembled.rrsets.length,
    rounds,
    cpuMedianMs: Number(c.toFixed(1)),
    cpuPerRecordSetUs: Number(((c * 1000) / assembled.rrsets.length).toFixed(2)),
    cpuMs: cpu.map((x) => Number(x.toFixed(1))),
    wallMedianMs: Number(median(wall).toFixed(1)),
  }),
);
