import path from 'node:path';
import { parseArgs } from 'node:util';
import { MemoryStore } from '../src/control/memory-store.ts';
import { ManifestParserPool } from '../src/sources/manifests/manifest-parser.ts';
import { ManifestSource } from '../src/sources/manifests/manifest-source.ts';
import { StateStore } from '../src/sources/manifests/state-file.ts';
import { makeTempDir, removeTempDir } from './lib/proc.ts';
import { writeScaleFolder } from './lib/zone.ts';

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
const file = writeScaleFolder(dir, records, zones, perFile);
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
