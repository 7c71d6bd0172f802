/**
 * The cost of measuring a rebuild for change safety (`rebuildChanges`, ADR 0018): a zone of
 * `--rrsets` record sets (A, TXT with two strings, MX, one each in turn) loaded into a ZoneModel, and
 * the same record sets in a model rebuilt for a new default TTL (every RRset's TTL changes, no record
 * does) and for other apex name servers (one RRset changes). Each is measured `--runs` times, in CPU
 * time of this process (the machine may be shared); the iteration of both models alone (`rrsets()`
 * twice) is shown apart, as the floor. Then the comparison alone, over the RRsets of both models held
 * in arrays: `sameContent` against printing and sorting every record of both (how it was compared
 * before).
 *
 *   npx node bench/change-safety-rebuild.ts [--rrsets 100000] [--runs 5]
 */
import { parseArgs } from 'node:util';
import type { DNSRecordSet } from '../src/api/index.ts';
import { printRdata } from '../src/dns/rdata.ts';
import { rebuildChanges, sameContent } from '../src/zones/change-safety.ts';
import type { RRset } from '../src/zones/rrset.ts';
import { ZoneModel } from '../src/zones/zone-model.ts';
import { recordSet, zone, zoneClass } from '../test/support/resources.ts';

const { values } = parseArgs({
  options: { rrsets: { type: 'string', default: '100000' }, runs: { type: 'string', default: '5' } },
});
const count = Number(values.rrsets);
const runs = Number(values.runs);
const address = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const spec = (i: number): DNSRecordSet['spec'] => {
  switch (i % 3) {
    case 0:
      return { name: `h${i}`, type: 'A', records: [address(i)] };
    case 1:
      return { name: `h${i}`, type: 'TXT', records: [`"v=spf1 ip4:${address(i)}" "-all"`] };
    default:
      return { name: `h${i}`, type: 'MX', records: [`10 Mail${i}.Example.com.`, `20 mx${i}.example.com.`] };
  }
};
const records = Array.from({ length: count }, (_, i) => ({
  key: `dns/r${i}`,
  current: { recordSet: recordSet('dns', `r${i}`, spec(i)), fqdn: `h${i}.example.com.` },
}));
const theZone = zone('dns', 'z', 'example.com');
const built = (nameServers: string[], ttl?: number) => {
  const model = new ZoneModel(
    theZone,
    zoneClass('builtin', nameServers, ttl === undefined ? {} : { defaults: { ttl } }),
    'example.com.',
  );
  model.update(records, [], true);
  return model;
};
const before = built(['ns1.example.com.', 'ns2.example.com.']);
const ttl = built(['ns1.example.com.', 'ns2.example.com.'], 900);
const ns = built(['ns1.example.com.', 'ns3.example.com.']);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const time = (what: string, f: () => number) => {
  f(); // warm-up
  const ms: number[] = [];
  let noted = 0;
  for (let i = 0; i < runs; i++) {
    const started = process.cpuUsage();
    noted = f();
    const used = process.cpuUsage(started);
    ms.push((used.user + used.system) / 1000);
  }
  console.log(`${what}: median ${median(ms).toFixed(1)} ms CPU of ${runs} (${noted})`);
};
console.log(`${count} record sets (+ apex NS), node ${process.version}`);
time('iterate both models (floor)', () => {
  let n = 0;
  for (const _ of before.rrsets()) n++;
  for (const _ of ttl.rrsets()) n++;
  return 0 * n;
});
for (const [what, after] of [
  ['rebuild for a new default TTL', ttl],
  ['rebuild for other apex name servers', ns],
] as const)
  time(
    what,
    () =>
      rebuildChanges(
        { rrsets: before.rrsets(), defaultTtl: before.defaultTtl },
        { rrsets: after.rrsets(), defaultTtl: after.defaultTtl },
      ).size,
  );

const pairs = (after: ZoneModel) => {
  const was = [...before.rrsets()];
  const now = [...after.rrsets()];
  if (was.length !== now.length) throw new Error('the bench expects the same RRsets on both sides');
  return { was, now, after };
};
const printed = (r: RRset) =>
  r.rdata
    .map((x) => printRdata(x))
    .sort()
    .join(' | ');
for (const [what, side] of [
  ['default TTL', pairs(ttl)],
  ['apex name servers', pairs(ns)],
] as const) {
  time(`compare by printing (before), ${what}: differing`, () => {
    let n = 0;
    for (let i = 0; i < side.was.length; i++) if (printed(side.was[i]!) !== printed(side.now[i]!)) n++;
    return n;
  });
  time(`compare with sameContent, ${what}: differing`, () => {
    let n = 0;
    for (let i = 0; i < side.was.length; i++)
      if (!sameContent(side.was[i]!, before.defaultTtl, side.now[i]!, side.after.defaultTtl)) n++;
    return n;
  });
}
