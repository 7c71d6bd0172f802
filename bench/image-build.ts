/**
 * CPU time of building a zone image (`ZoneImage.build`) per record set, on the bench zone of
 * `bench/run.ts` (the mix of `bench/lib/zone.ts`). With `--baseline MODULE` (a copy of another
 * version of zone-image.ts, e.g. `git show REV:src/server/image/zone-image.ts >
 * src/server/image/zone-image.base.ts`), the two are built alternately in the same process and their
 * bytes compared (the image ids, given per process, aside): the figures to compare are CPU times
 * (`process.cpuUsage`) of alternating rounds on one process, which the load of a shared machine moves
 * less than wall-clock times.
 *
 *   node bench/image-build.ts [--records 100000] [--rounds 7] [--baseline src/server/image/zone-image.base.ts]
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ZoneImage } from '../src/server/image/zone-image.ts';
import type { RRsetData } from '../src/zones/rrset.ts';
import type { SoaFields } from '../src/zones/soa.ts';
import { assembledBenchZone } from './lib/zone.ts';

type Build = (
  origin: string,
  soa: SoaFields,
  serial: number,
  rrsets: Iterable<RRsetData>,
  options?: { shared?: boolean },
) => { buffer: ArrayBuffer | SharedArrayBuffer };

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '7' },
    baseline: { type: 'string' },
  },
});
const records = Number(values.records);
const rounds = Number(values.rounds);
const origin = 'bench.example.';
const assembled = assembledBenchZone(records, origin);
// Plain RRsets, as the programmed content gives them (no origin or steering fields).
const rrsets: RRsetData[] = assembled.rrsets.map((r) => ({
  owner: r.owner,
  type: r.type,
  ttl: r.ttl,
  rdata: r.rdata,
}));

const builds: [string, Build][] = [['current', (...a) => ZoneImage.build(...a)]];
if (values.baseline) {
  const module = (await import(pathToFileURL(path.resolve(values.baseline)).href)) as {
    ZoneImage: { build: Build };
  };
  builds.unshift(['baseline', (...a) => module.ZoneImage.build(...a)]);
}

const bytesOf = (image: { buffer: ArrayBuffer | SharedArrayBuffer }) => {
  const b = new Uint8Array(image.buffer.slice(0));
  b.fill(0, 14 * 4, 16 * 4); // the image's id and its base's id
  return Buffer.from(b);
};
if (builds.length === 2) {
  const a = bytesOf(builds[0]![1](assembled.origin, assembled.soa, 1, rrsets, { shared: true }));
  const b = bytesOf(builds[1]![1](assembled.origin, assembled.soa, 1, rrsets, { shared: true }));
  if (!a.equals(b)) throw new Error('the baseline and the current builder wrote different bytes');
  console.log(`same bytes: ${a.length} bytes`);
}

const cpu: Record<string, number[]> = Object.fromEntries(builds.map(([name]) => [name, []]));
const wall: Record<string, number[]> = Object.fromEntries(builds.map(([name]) => [name, []]));
for (let round = 0; round < rounds; round++) {
  for (const [name, build] of round % 2 === 0 ? builds : [...builds].reverse()) {
    const t = performance.now();
    const c = process.cpuUsage();
    build(assembled.origin, assembled.soa, 1, rrsets, { shared: true });
    const used = process.cpuUsage(c);
    wall[name]!.push(performance.now() - t);
    cpu[name]!.push((used.user + used.system) / 1000);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`${rrsets.length} record sets in ${origin}, ${rounds} alternating rounds (the first included)`);
for (const [name] of builds) {
  const c = median(cpu[name]!);
  console.log(
    `${name.padEnd(9)} CPU median ${c.toFixed(0)} ms (${((c * 1000) / rrsets.length).toFixed(2)} µs per record set; ` +
      `range ${Math.min(...cpu[name]!).toFixed(0)}–${Math.max(...cpu[name]!).toFixed(0)} ms), wall median ${median(wall[name]!).toFixed(0)} ms`,
  );
}
