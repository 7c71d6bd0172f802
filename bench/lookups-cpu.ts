/**
 * CPU time of two per-object steps alone, on one thread, for the objects `bench/scale.ts` generates:
 * `feed`, the store events of a first start's status and finalizer writes as `CatalogFeed.upsert`
 * takes them (two status-only versions of every record set, after a load of all of them, five times
 * over); `accept`, the parse threads' compiled schema check (`acceptResource`) of every object as
 * YAML gives it, five times over. With
 * `--baseline DIR` (a checkout of another version, its node_modules linked) rounds of the two versions
 * alternate in this one process; the first round of each is a warm-up, reported and not counted.
 *
 *   node bench/lookups-cpu.ts [--records 100000] [--zones 1000] [--rounds 7] [--baseline DIR]
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { DNSRecordSet } from '../src/api/index.ts';
import { scaleObjects } from './lib/zone.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '100000' },
    zones: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '7' },
    baseline: { type: 'string' },
  },
});
const records = Number(values.records);
const zones = Number(values.zones);
const rounds = Number(values.rounds);

const objects = scaleObjects(records, zones, 1);
const recordSets = objects.filter((o): o is DNSRecordSet => o.kind === 'DNSRecordSet');
const keys = recordSets.map((rs) => `${rs.metadata.namespace}/${rs.metadata.name}`);
// As the memory store writes them: a new object and metadata, the same spec object.
const written = (suffix: string, extra: Partial<DNSRecordSet['metadata']>) =>
  recordSets.map((rs) => ({
    ...rs,
    metadata: { ...rs.metadata, resourceVersion: suffix, ...extra },
    status: { observedGeneration: 1, conditions: [] },
  }));
const statuses = written('2', {});
const finalized = written('3', { finalizers: ['dns.zonekeeper.dev/programmed'] });
// As YAML gives them: plain objects with the defaulted fields absent.
const documents = objects.map((o) => structuredClone(o));

/** Each step runs this many times per round (the feed's two versions alternate: each a status-only change). */
const REPEAT = 5;

const cpu = (run: () => void): number => {
  const before = process.cpuUsage();
  run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
};

async function version(root: string) {
  const load = (file: string) => import(pathToFileURL(path.join(root, file)).href);
  const [feedModule, resource] = await Promise.all([
    load('src/zones/catalog-feed.ts'),
    load('src/api/resource.ts'),
  ]);
  return {
    feed: (): number => {
      const feed = new feedModule.CatalogFeed();
      feed.load(objects);
      return cpu(() => {
        for (let r = 0; r < REPEAT; r++) {
          for (let i = 0; i < statuses.length; i++) feed.upsert(statuses[i], keys[i]);
          for (let i = 0; i < finalized.length; i++) feed.upsert(finalized[i], keys[i]);
        }
      });
    },
    accept: (): number =>
      cpu(() => {
        for (let r = 0; r < REPEAT; r++)
          for (const d of documents)
            if (resource.acceptResource(d, false) === undefined) throw new Error('rejected');
      }),
  };
}

const sides: [string, Awaited<ReturnType<typeof version>>][] = [
  ['current', await version(path.resolve(import.meta.dirname, '..'))],
];
if (values.baseline) sides.unshift(['baseline', await version(path.resolve(values.baseline))]);
const results = new Map<string, number[]>();
process.stdout.write(`${records} record sets in ${zones} zones, ${rounds} alternating rounds\n`);
for (let round = 0; round < rounds; round++) {
  // Alternate which version goes first.
  for (const [label, side] of round % 2 === 0 ? sides : [...sides].reverse()) {
    const feedMs = side.feed();
    const acceptMs = side.accept();
    if (round > 0) {
      (results.get(`${label} feed`) ?? results.set(`${label} feed`, []).get(`${label} feed`)!).push(feedMs);
      (results.get(`${label} accept`) ?? results.set(`${label} accept`, []).get(`${label} accept`)!).push(
        acceptMs,
      );
    }
    process.stdout.write(
      `  round ${round + 1} ${label.padEnd(8)} feed ${feedMs.toFixed(0)} ms, accept ${acceptMs.toFixed(0)} ms\n`,
    );
  }
}
const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
for (const [label, list] of [...results].sort(([a], [b]) => a.localeCompare(b)))
  process.stdout.write(
    `${label.padEnd(16)} CPU median ${median(list).toFixed(0)} ms (${Math.min(...list).toFixed(0)}–${Math.max(...list).toFixed(0)})\n`,
  );
