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
import type { DNSRecordSet } from '../src/api/index.ts';
import { abArgs, median, moduleLoader, sides } from './lib/ab.ts';
import { scaleObjects } from './lib/zone.ts';

const { records, zones, rounds, baseline } = abArgs(7);

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
  const load = moduleLoader(root);
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

const versions = await sides(version, baseline);
const results = new Map<string, number[]>();
process.stdout.write(`${records} record sets in ${zones} zones, ${rounds} alternating rounds\n`);
for (let round = 0; round < rounds; round++) {
  // Alternate which version goes first.
  for (const [label, side] of round % 2 === 0 ? versions : [...versions].reverse()) {
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
for (const [label, list] of [...results].sort(([a], [b]) => a.localeCompare(b)))
  process.stdout.write(
    `${label.padEnd(16)} CPU median ${median(list).toFixed(0)} ms (${Math.min(...list).toFixed(0)}–${Math.max(...list).toFixed(0)})\n`,
  );
