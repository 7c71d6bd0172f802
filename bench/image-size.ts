/**
 * Bytes per record set of one zone as the DNS processes hold it today (`ZoneSnapshot`, V8 heap after a
 * full collection) and as a zone image of ADR 0020 (`ZoneImage`, one buffer), on the bench zone of
 * `bench/run.ts`, and the time to build each.
 *
 *   node bench/image-size.ts [--records 100000]
 */
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import { ZoneImage } from '../src/server/image/zone-image.ts';
import { ZoneSnapshot } from '../src/server/zone-snapshot.ts';
import { assembledBenchZone } from './lib/zone.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const { values } = parseArgs({ options: { records: { type: 'string', default: '100000' } } });
const records = Number(values.records);
const origin = 'bench.example.';
const assembled = assembledBenchZone(records, origin);
const rrsets = [...assembled.rrsets];

const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};
// A DNS worker receives the RRsets over IPC, so its snapshot holds RDATA objects and names of its own:
// build from a structured clone (what IPC delivers) and count everything the snapshot keeps of it.
const h0 = heap();
let received: typeof rrsets | undefined = structuredClone(rrsets);
let t = performance.now();
const snapshot = ZoneSnapshot.build(assembled.origin, assembled.soa, 1, received);
const snapshotMs = performance.now() - t;
received = undefined;
const snapshotBytes = heap() - h0;
t = performance.now();
const image = ZoneImage.build(assembled.origin, assembled.soa, 1, rrsets, { shared: true });
const imageMs = performance.now() - t;
const line = (what: string, bytes: number, ms: number) =>
  console.log(
    `${what.padEnd(34)} ${(bytes / 2 ** 20).toFixed(1).padStart(7)} MiB ${(bytes / rrsets.length).toFixed(0).padStart(6)} bytes per record set, built in ${ms.toFixed(0)} ms`,
  );
console.log(`${rrsets.length} record sets (${snapshot.nodes.size} names) in ${origin}`);
line('ZoneSnapshot (heap)', snapshotBytes, snapshotMs);
line('ZoneImage (one SharedArrayBuffer)', image.byteLength, imageMs);
