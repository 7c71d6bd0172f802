/**
 * `planHold`: what `zonekeeper plan` says of a zone's change, judged with the controller's measure,
 * hash and decision against what is served now.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { CONFIRM_CHANGE_ANNOTATION, type DNSZone, type Resource } from '../api/index.ts';
import { WARM_STANDBY_MIN_TTL } from '../api/steering.ts';
import { nameKey } from '../dns/name.ts';
import { parseRdata, printRdata, type Rdata } from '../dns/rdata.ts';
import { planHold, rebuildChanges } from './change-safety.ts';
import { computeZones } from './compute-zones.ts';
import type { RRset } from './rrset.ts';

function resources(values: string[], spec: Partial<DNSZone['spec']> = {}, annotation?: string): Resource[] {
  const z = zone('dns', 'example-com', 'example.com', spec);
  if (annotation) z.metadata.annotations = { [CONFIRM_CHANGE_ANNOTATION]: annotation };
  return [
    zoneClass(),
    z,
    ...values.map((v, i) =>
      recordSet(
        'dns',
        `h${i}`,
        { zoneRef: { name: 'example-com' }, name: `h${i}`, type: 'A', records: [v] },
        i,
      ),
    ),
  ];
}

const hosts = (n: number, prefix = '192.0.2') => Array.from({ length: n }, (_, i) => `${prefix}.${i + 1}`);
const side = (r: Resource[]) => computeZones(r)[0];

describe('planHold', () => {
  test('a deletion over the limit is held, with a hash that names exactly it', () => {
    const before = side(resources(hosts(12))); // 13 RRsets with the apex NS
    const after = side(resources(hosts(8))); // 4 deleted: 31 % > 30 %
    const hold = planHold(before, after);
    assert.equal(hold?.held, true);
    assert.deepEqual(hold?.counts, { total: 13, deleted: 4, updated: 0, added: 0 });
    assert.match(hold!.hash, /^[0-9a-f]{32}$/);
    assert.equal(planHold(before, side(resources(hosts(8))))?.hash, hold!.hash);
    assert.notEqual(planHold(before, side(resources(hosts(7))))?.hash, hold!.hash);
  });

  test('under the limit, a small zone, a new or deleted zone, opted out: not held', () => {
    const before = side(resources(hosts(12)));
    assert.equal(planHold(before, side(resources(hosts(9)))), undefined); // 3 of 13
    assert.equal(planHold(side(resources(hosts(8))), side(resources(hosts(2)))), undefined); // 9 RRsets
    assert.equal(planHold(undefined, before), undefined);
    assert.equal(planHold(before, undefined), undefined);
    const off = side(resources(hosts(2), { changeSafety: { enabled: false } }));
    assert.equal(planHold(before, off), undefined);
  });

  test('confirmed by exactly its hash (annotation or confirmation), not by another', () => {
    const before = side(resources(hosts(12)));
    const hash = planHold(before, side(resources(hosts(12, '198.51.100'))))!.hash;
    const annotated = side(resources(hosts(12, '198.51.100'), {}, hash));
    assert.deepEqual(planHold(before, annotated)?.held, false);
    assert.equal(planHold(before, side(resources(hosts(12, '198.51.100'))), [hash])?.held, false);
    const stale = side(resources(hosts(12, '198.51.100'), {}, '0123456789abcdef0123456789abcdef'));
    assert.equal(planHold(before, stale)?.held, true);
  });

  test('a change of the zone settings that rebuilds its model is measured as the controller measures it', () => {
    const before = side(resources(hosts(12)));
    const after = side(resources(hosts(2), { soa: { refresh: 1234 } } as Partial<DNSZone['spec']>));
    assert.deepEqual(planHold(before, after)?.counts, { total: 13, deleted: 10, updated: 0, added: 0 });
    // A new default TTL alone changes the settings, not the content: not held.
    const ttl = side(resources(hosts(12), { ttl: 600 }));
    assert.equal(ttl?.zone.rrsets.find((r) => r.type === 'A')?.ttl, 600);
    assert.equal(planHold(before, ttl), undefined);
  });
});

/** How `rebuildChanges` compared RRsets when it printed them: every record printed, sorted, joined. */
function printedReference(
  before: RRset[],
  beforeTtl: number,
  after: RRset[],
  afterTtl: number,
  id: (r: RRset) => string,
): Map<string, RRset | undefined> {
  const printed = (r: RRset) =>
    r.rdata
      .map((x) => printRdata(x))
      .sort()
      .join(' | ');
  const follows = (r: RRset, d: number) =>
    r.ttl === d || (r.steering?.policy === 'Ordered' && r.ttl === Math.max(d, WARM_STANDBY_MIN_TTL));
  const was = new Map<string, RRset>();
  for (const r of before) if (r.type !== 'SOA') was.set(id(r), r);
  const changes = new Map<string, RRset | undefined>();
  for (const r of after) {
    if (r.type === 'SOA') continue;
    const key = id(r);
    const old = was.get(key);
    was.delete(key);
    if (old === undefined) changes.set(key, undefined);
    else if (
      (old.ttl !== r.ttl && !(follows(old, beforeTtl) && follows(r, afterTtl))) ||
      printed(old) !== printed(r)
    )
      changes.set(key, old);
  }
  for (const [key, old] of was) changes.set(key, old);
  return changes;
}

const rrsetKey = (r: RRset) => `${nameKey(r.owner)}\u0000${r.type}`;
const sorted = (m: Map<string, RRset | undefined>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

describe('rebuildChanges', () => {
  const rr = (owner: string, type: RRset['type'], ttl: number, texts: string[]): RRset => ({
    owner,
    type,
    ttl,
    rdata: texts.map((t) => parseRdata(type, t, 'example.com.')),
    origin: { kind: 'apex' },
  });

  test('compares records as printing them did: order, case in names, TXT strings, TTLs', () => {
    const shared = rr('shared.example.com.', 'A', 300, ['192.0.2.1', '192.0.2.2']);
    const before = [
      rr('example.com.', 'SOA', 300, ['ns1.example.com. h.example.com. 1 2 3 4 5']),
      rr('example.com.', 'NS', 300, ['ns1.example.com.', 'ns2.example.com.']),
      shared,
      rr('order.example.com.', 'A', 300, ['192.0.2.1', '192.0.2.2', '192.0.2.3']),
      rr('mx.example.com.', 'MX', 300, ['10 mail.example.com.', '20 Backup.Example.com.']),
      rr('case.example.com.', 'CNAME', 300, ['Target.Example.com.']),
      rr('txt.example.com.', 'TXT', 300, ['"v=spf1" "-all"', '"one string"']),
      rr('split.example.com.', 'TXT', 300, ['"ab" "c"']),
      rr('srv.example.com.', 'SRV', 300, ['1 2 443 Svc.example.com.']),
      rr('own.example.com.', 'A', 60, ['192.0.2.9']),
      rr('gone.example.com.', 'AAAA', 300, ['2001:db8::1']),
      rr('Upper.Example.com.', 'TXT', 300, ['"x"']),
      rr('aaaa.example.com.', 'AAAA', 300, ['2001:db8::2']),
    ];
    const after = [
      rr('example.com.', 'SOA', 900, ['ns1.example.com. h.example.com. 2 2 3 4 5']),
      rr('example.com.', 'NS', 900, ['ns2.example.com.', 'ns1.example.com.']), // another order
      { ...shared, ttl: 900 }, // the same records, the same array
      rr('order.example.com.', 'A', 900, ['192.0.2.3', '192.0.2.1', '192.0.2.2']),
      rr('mx.example.com.', 'MX', 900, ['20 backup.example.com.', '10 mail.example.com.']), // case differs
      rr('case.example.com.', 'CNAME', 900, ['Target.Example.com.']),
      rr('txt.example.com.', 'TXT', 900, ['"one string"', '"v=spf1" "-all"']),
      rr('split.example.com.', 'TXT', 900, ['"a" "bc"']), // the same text, other strings
      rr('srv.example.com.', 'SRV', 900, ['1 2 443 svc.example.com.']),
      rr('own.example.com.', 'A', 120, ['192.0.2.9']), // its own TTL changed
      rr('new.example.com.', 'A', 900, ['192.0.2.10']),
      rr('upper.example.com.', 'TXT', 900, ['"x"']), // the owner in other case: the same RRset
      {
        ...rr('aaaa.example.com.', 'AAAA', 900, []),
        rdata: [{ type: 'AAAA' as const, address: '2001:DB8::2' }],
      },
    ];
    // Reversed: a model yields its RRsets in its own order, which the comparison must not depend on.
    const got = rebuildChanges(
      { rrsets: before, defaultTtl: 300 },
      { rrsets: [...after].reverse(), defaultTtl: 900 },
    );
    const expected = printedReference(before, 300, after, 900, rrsetKey);
    assert.deepEqual(sorted(got), sorted(expected));
    assert.deepEqual(
      sorted(got).map(([k]) => k.split('\u0000').join(' ')),
      [
        'aaaa.example.com. AAAA',
        'gone.example.com. AAAA',
        'mx.example.com. MX',
        'new.example.com. A',
        'own.example.com. A',
        'split.example.com. TXT',
        'srv.example.com. SRV',
      ],
    );
  });

  test('the same result as printing on random models', () => {
    let seed = 12345;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const values: Record<'A' | 'MX' | 'TXT' | 'NS', string[]> = {
      A: ['192.0.2.1', '192.0.2.2', '198.51.100.7'],
      MX: ['10 mail.example.com.', '10 Mail.example.com.', '20 mx.example.net.'],
      TXT: ['"a" "b"', '"ab"', '"a b"', '"A"'],
      NS: ['ns1.example.com.', 'NS1.example.com.', 'ns2.example.net.'],
    };
    const types = Object.keys(values) as (keyof typeof values)[];
    const parsed = new Map<string, Rdata>();
    const rdata = (type: keyof typeof values, text: string) => {
      const k = `${type} ${text}`;
      if (!parsed.has(k) || random(2) === 0) parsed.set(k, parseRdata(type, text, 'example.com.'));
      return parsed.get(k)!;
    };
    const model = (ttl: number) => {
      const out: RRset[] = [];
      for (let i = 0; i < 30; i++) {
        if (random(5) === 0) continue;
        const type = types[i % types.length]!;
        const texts = values[type].filter(() => random(2) === 0);
        if (texts.length === 0) continue;
        if (random(2) === 0) texts.reverse();
        out.push({
          owner: `${random(4) === 0 ? 'H' : 'h'}${i}.example.com.`,
          type,
          ttl: random(4) === 0 ? 60 : ttl,
          rdata: texts.map((t) => rdata(type, t)),
          origin: { kind: 'apex' },
        });
      }
      return out;
    };
    for (let run = 0; run < 200; run++) {
      const [d1, d2] = [
        [300, 300],
        [300, 900],
        [60, 600],
      ][run % 3]!;
      const before = model(d1!);
      const after = model(d2!);
      assert.deepEqual(
        sorted(rebuildChanges({ rrsets: before, defaultTtl: d1! }, { rrsets: after, defaultTtl: d2! })),
        sorted(printedReference(before, d1!, after, d2!, rrsetKey)),
        `run ${run}`,
      );
    }
  });

  test('a warm standby raised to its minimum TTL follows the default; a record set that is not steered does not', () => {
    const a = (owner: string, ttl: number, steered: boolean): RRset => ({
      owner,
      type: 'A',
      ttl,
      rdata: [parseRdata('A', '192.0.2.1', 'example.com.')],
      origin: { kind: 'apex' },
      ...(steered ? { steering: { policy: 'Ordered', candidates: ['192.0.2.1'], whenAllDown: 'All' } } : {}),
    });
    const before = [
      a('warm.example.com.', WARM_STANDBY_MIN_TTL, true),
      a('own.example.com.', WARM_STANDBY_MIN_TTL, false),
    ];
    const after = [a('warm.example.com.', 600, true), a('own.example.com.', 600, false)];
    const got = rebuildChanges({ rrsets: before, defaultTtl: 60 }, { rrsets: after, defaultTtl: 600 });
    assert.deepEqual([...got.keys()], ['own.example.com.\u0000A']);
  });
});
