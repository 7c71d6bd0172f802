/**
 * The manifest source's first load alone: a folder of generated manifests (the layout of
 * bench/scale.ts) read, parsed and checked into a store, with 1..N parse threads, alternating.
 * Wall time of `ManifestSource.start()` and the thread's CPU time; no DNS, no controller.
 *
 *   node bench/manifest-load.ts [--records 300000] [--zones 3000] [--threads 1,2] [--rounds 3]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { MemoryStore } from '../src/control/memory-store.ts';
import { ManifestParserPool } from '../src/sources/manifests/manifest-parser.ts';
import { ManifestSource } from '../src/sources/manifests/manifest-source.ts';
import { StateStore } from '../src/sources/manifests/state-file.ts';
import { makeTempDir, removeTempDir } from './lib/proc.ts';
import { classManifest, generateZone, recordManifest, zoneManifest } from './lib/zone.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '300000' },
    zones: { type: 'string', default: '3000' },
    'per-file': { type: 'string', default: '1000' },
    threads: { type: 'string', default: '1,2' },
    rounds: { type: 'string', default: '3' },
  },
});
const records = Number(values.records);
const zones = Number(values.zones);
const perFile = Number(values['per-file']);
const tmp = makeTempDir('zonekeeper-bench-manifest-load-');
const dir = path.join(tmp, 'manifests');
mkdirSync(dir);
writeFileSync(path.join(dir, '00-class.yaml'), classManifest(['ns1.scale.example.', 'ns2.scale.example.']));
// Zones of records/zones record sets each, perFile documents per file.
const per = Math.max(1, Math.floor(records / zones));
let file = 0;
let docs: string[] = [];
const flush = () => {
  if (docs.length === 0) return;
  writeFileSync(path.join(dir, `f${String(file++).padStart(5, '0')}.yaml`), docs.join('---\n'));
  docs = [];
};
for (let z = 0; z < zones; z++) {
  const zone = generateZone(`z${z}.scale.example.`, { name: `z${z}`, namespace: 'scale' }, per, {
    salt: z + 1,
  });
  docs.push(zoneManifest(zone));
  zone.records.forEach((r, i) => {
    docs.push(recordManifest(zone, i, r));
    if (docs.length >= perFile) flush();
  });
}
flush();
process.stdout.write(`${records} record sets in ${zones} zones, ${file} files\n`);
try {
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const threads of values.threads.split(',').map(Number)) {
      const store = new MemoryStore();
      const parser = new ManifestParserPool(threads);
      const source = new ManifestSource({ dir, store, state: await StateStore.open(undefined), parser });
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      await source.start();
      const ms = performance.now() - t0;
      const used = process.cpuUsage(cpu);
      source.stop();
      await parser.close();
      process.stdout.write(
        `round ${round + 1}, ${threads} parse thread(s): ${(ms / 1000).toFixed(2)} s, process CPU ${((used.user + used.system) / 1e6).toFixed(2)} s, objects ${store.list('DNSRecordSet').length}, per thread ${parser.parsedPerThread().join('/')}\n`,
      );
    }
  }
} finally {
  removeTempDir(tmp);
}
