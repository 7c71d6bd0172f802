import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { prng } from '../../test/support/prng.ts';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSRecordSet } from '../api/index.ts';
import { compareNameKeys, type Name, nameKey, parseName, stripFirstLabel } from '../dns/name.ts';
import { printRdata } from '../dns/rdata.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';
import { assembleZone, type ChildDelegation } from './assemble.ts';
import type { RRset } from './rrset.ts';
import { DigestSlots, HASH_ORDER_MIN_NAMES, rrsetId, sortNameKeys, ZoneModel } from './zone-model.ts';

const ORIGIN = 'example.com.';
const theZone = zone('dns', 'z', 'example.com');
const theClass = zoneClass('builtin', ['ns1.example.com.', 'ns.elsewhere.net.']);

const NAMES = [
  '@',
  'www',
  'b',
  'a.b',
  'x.a.b',
  '*.w',
  'ns1',
  'deleg',
  'ns.deleg',
  'c.deleg',
  'kid',
  'ns1.kid',
  'WWW',
  // Escaped dots: one label whose text ends like a name below the delegation or another name.
  'x\\.deleg',
  'a\\.b',
];
const VALUES: Record<string, string[]> = {
  A: ['192.0.2.1', '192.0.2.2'],
  AAAA: ['2001:db8::1'],
  CNAME: ['target.example.net.', 'www'],
  ALIAS: ['cdn.example.net.'],
  TXT: ['hello', 'v=spf1 -all'],
  NS: ['ns.deleg', 'ns.other.net.'],
  DS: [`1 13 2 ${'ab'.repeat(32)}`],
  MX: ['10 mail', '20 mx.example.net.'],
  SOA: ['a. b. 1 2 3 4 5'],
};
const TYPES = Object.keys(VALUES) as RecordTypeName[];

function pick<T>(r: () => number, list: readonly T[]): T {
  return list[Math.floor(r() * list.length)]!;
}

function randomRecordSet(r: () => number, id: number): DNSRecordSet {
  const type = pick(r, TYPES);
  const values = VALUES[type]!;
  const records = r() < 0.1 ? ['not valid at all'] : values.slice(0, 1 + Math.floor(r() * values.length));
  return recordSet(
    'dns',
    `rs${id}`,
    {
      zoneRef: { name: 'z' },
      name: pick(r, NAMES),
      type,
      records: type === 'CNAME' || type === 'ALIAS' ? records.slice(0, 1) : records,
      ...(r() < 0.2 ? { ttl: 60 } : {}),
      // Steering is content: a change of it alone must reach the model and the hash.
      ...(type === 'A' && r() < 0.3
        ? { placement: pick(r, ['ActiveActive', 'ActiveHotStandby'] as const) }
        : {}),
    },
    Math.floor(r() * 50),
  );
}

const child: ChildDelegation = {
  zone: 'team/kid',
  origin: 'kid.example.com.',
  nameServers: ['ns1.kid.example.com.', 'ns.elsewhere.net.'],
  ttl: 300,
  glue: [
    {
      owner: 'ns1.kid.example.com.',
      type: 'A',
      ttl: 300,
      rdata: [{ type: 'A', address: '192.0.2.53' }],
      origin: { kind: 'glue', namespace: 'team', name: 'ns1' },
    },
  ],
};

function describeRRsets(rrsets: Iterable<RRset>): string[] {
  return [...rrsets].map(
    (r) => `${nameKey(r.owner)} ${r.type} ${r.ttl} ${r.rdata.map(printRdata).sort().join(' | ')}`,
  );
}

function inOrder(rrsets: Iterable<RRset>): RRset[] {
  const id = (r: RRset) => `${nameKey(r.owner)} ${r.type}`;
  return [...rrsets].sort((a, b) => (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0));
}

/**
 * `publishedAt` and `isEmptyNonTerminal` (the model's content by name) against one pass over
 * `rrsets()`, for every name the test uses, their ancestors, and names that are in none of them.
 */
function checkByName(model: ZoneModel, context: string): void {
  const byOwner = new Map<string, RRset[]>();
  const ancestors = new Set<string>();
  for (const r of model.rrsets()) {
    const key = nameKey(r.owner);
    byOwner.set(key, [...(byOwner.get(key) ?? []), r]);
    for (let k = stripFirstLabel(key); k !== nameKey(ORIGIN) && k !== '.'; k = stripFirstLabel(k))
      ancestors.add(k);
  }
  const keys = new Set<string>([
    nameKey(ORIGIN),
    'none.example.com.',
    'q.x.a.b.example.com.',
    'w.example.com.',
  ]);
  for (const n of NAMES) {
    const key = nameKey(parseName(n, ORIGIN));
    for (let k = key; k !== nameKey(ORIGIN) && k !== '.'; k = stripFirstLabel(k)) keys.add(k);
  }
  for (const key of keys) {
    assert.deepEqual(
      model.publishedAt(key).map((r) => `${r.type} ${r.ttl} ${r.rdata.map(printRdata).join(' | ')}`),
      (byOwner.get(key) ?? []).map((r) => `${r.type} ${r.ttl} ${r.rdata.map(printRdata).join(' | ')}`),
      `${context}: published at ${key}`,
    );
    assert.equal(
      model.isEmptyNonTerminal(key),
      !byOwner.has(key) && ancestors.has(key),
      `${context}: ${key} an empty non-terminal`,
    );
  }
}

describe('ZoneModel', () => {
  test('stays equal to assembleZone through 3,000 random changes (5 seeds)', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = prng(seed);
      const model = new ZoneModel(theZone, theClass, ORIGIN);
      const current = new Map<string, DNSRecordSet>();
      let children: ChildDelegation[] = [];
      // What the reported changes add up to, kept beside the model: it must stay what the model
      // publishes, and each change's 'previous' must be what it held before.
      const shadow = new Map<string, RRset>();
      for (const rrset of model.rrsets()) shadow.set(rrsetId(nameKey(rrset.owner), rrset.type), rrset);
      for (let step = 0; step < 600; step++) {
        const changed: string[] = [];
        const op = r();
        if (op < 0.5 || current.size === 0) {
          const rs = randomRecordSet(r, Math.floor(r() * 40));
          current.set(`dns/${rs.metadata.name}`, rs);
          changed.push(`dns/${rs.metadata.name}`);
        } else if (op < 0.8) {
          const key = pick(r, [...current.keys()]);
          current.delete(key);
          changed.push(key);
        } else if (op < 0.95) {
          const key = pick(r, [...current.keys()]);
          const before = current.get(key)!;
          const next = randomRecordSet(r, 0);
          current.set(key, { ...next, metadata: before.metadata });
          changed.push(key);
        } else {
          children = children.length === 0 ? [child] : [];
        }
        const at = (key: string) => {
          const rs = current.get(key);
          return rs ? { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) } : undefined;
        };
        const delta = model.update(
          changed.map((key) => ({ key, current: at(key) })),
          children,
        );
        const context = `seed ${seed} step ${step}`;
        for (const [id, before] of delta.previous) {
          assert.deepEqual(
            describeRRsets(before ? [before] : []),
            describeRRsets(shadow.has(id) ? [shadow.get(id)!] : []),
            `${context}: previous ${id}`,
          );
        }
        for (const d of delta.deletes) shadow.delete(rrsetId(nameKey(d.owner), d.type));
        for (const u of delta.upserts) shadow.set(rrsetId(nameKey(u.owner), u.type), u);
        assert.deepEqual(
          describeRRsets(inOrder(shadow.values())),
          describeRRsets(inOrder(model.rrsets())),
          `${context}: deltas`,
        );
        const records = [...current.values()].map((rs) => ({
          recordSet: rs,
          fqdn: parseName(rs.spec.name, ORIGIN) as Name,
        }));
        const expected = assembleZone({
          zone: theZone,
          zoneClass: theClass,
          origin: ORIGIN,
          records,
          children,
        });
        assert.deepEqual(describeRRsets(model.rrsets()), describeRRsets(expected.rrsets), context);
        // Whole RRsets too (origin, steering): the model makes them from its entries when asked.
        assert.deepEqual(inOrder(model.rrsets()), inOrder(expected.rrsets), context);
        for (const [key, verdict] of expected.verdicts) {
          const got = model.verdicts.get(key);
          assert.ok(got, `${context}: no verdict for ${key}`);
          assert.equal(
            got.accepted,
            verdict.accepted,
            `${context}: ${key} ${JSON.stringify(verdict)} vs ${JSON.stringify(got)}`,
          );
          if (!got.accepted && !verdict.accepted)
            assert.equal(got.reason, verdict.reason, `${context}: ${key}`);
        }
        assert.equal(model.verdicts.size, expected.verdicts.size, context);
        const each: [string, boolean][] = [];
        model.eachVerdict((key, accepted) => each.push([key, accepted]));
        assert.deepEqual(
          each,
          [...model.verdicts].map(([key, v]) => [key, v.accepted]),
          `${context}: eachVerdict is verdicts, in order`,
        );
        assert.equal(model.acceptedCount, expected.acceptedCount, context);
        assert.equal(model.assembled().hash, expected.hash, context);
        checkByName(model, context);
      }
    }
  });

  test('writeConflict judges a write as assembleZone judges the record set written: CNAME and ALIAS exclusivity, oldest first (5 seeds)', () => {
    const WRITABLE = TYPES.filter((t) => t !== 'SOA' && t !== 'NS');
    let exclusive = 0;
    for (const seed of [21, 22, 23, 24, 25]) {
      const r = prng(seed);
      for (let round = 0; round < 40; round++) {
        const current = new Map<string, DNSRecordSet>();
        for (let i = 0; i < 30; i++) {
          const rs = randomRecordSet(r, i);
          current.set(`dns/${rs.metadata.name}`, rs);
        }
        const children = r() < 0.3 ? [child] : [];
        const entries = (map: Map<string, DNSRecordSet>) =>
          [...map].map(([key, rs]) => ({
            key,
            current: { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) },
          }));
        const model = new ZoneModel(theZone, theClass, ORIGIN);
        model.update(entries(current), children, true);
        for (let w = 0; w < 10; w++) {
          // A new record set (the newest), or a new version of one the zone holds (its place kept).
          const replacing = r() < 0.3 ? pick(r, [...current.keys()]) : undefined;
          const before = replacing ? current.get(replacing)! : undefined;
          const type = before ? before.spec.type : pick(r, WRITABLE);
          const name = before
            ? before.spec.name
            : pick(
                r,
                NAMES.filter((n) => n !== '@'),
              );
          if (type === 'SOA' || type === 'NS' || name === '@') continue;
          const key = replacing ?? `team/w${w}`;
          const written = recordSet(
            'team',
            `w${w}`,
            { zoneRef: { name: 'z' }, name, type, records: VALUES[type]!.slice(0, 1) },
            100,
          );
          const candidate = before ? { ...written, metadata: before.metadata } : written;
          const all = new Map(current).set(key, candidate);
          const expected = assembleZone({
            zone: theZone,
            zoneClass: theClass,
            origin: ORIGIN,
            records: entries(all).map((e) => e.current),
            children,
          }).verdicts.get(key);
          const fqdn = parseName(name, ORIGIN);
          const got = model.writeConflict(key, fqdn, type, new Map());
          const loses = expected?.accepted === false && /cannot coexist/.test(expected.message);
          const context = `seed ${seed} round ${round}: ${key} ${type} at ${name} (${JSON.stringify(expected)})`;
          assert.equal(got?.rule === 'exclusive', loses, context);
          if (loses) {
            exclusive++;
            assert.equal(got?.message, expected.message, context);
          }
          if (expected?.accepted) assert.equal(got, undefined, context);
        }
      }
    }
    assert.ok(exclusive > 20, `exclusivity conflicts met: ${exclusive}`);
  });

  test('an update that lists no changes leaves the model as one that lists them, and says whether it changed (5 seeds)', () => {
    for (const seed of [11, 12, 13, 14, 15]) {
      const r = prng(seed);
      const listed = new ZoneModel(theZone, theClass, ORIGIN);
      const unlisted = new ZoneModel(theZone, theClass, ORIGIN);
      // Told that its first build's keys are distinct (as a zone's first build from the catalog is).
      const told = new ZoneModel(theZone, theClass, ORIGIN);
      const current = new Map<string, DNSRecordSet>();
      for (let i = 0; i < 60; i++) {
        const rs = randomRecordSet(r, i);
        current.set(`dns/${rs.metadata.name}`, rs);
      }
      const members = (keys: Iterable<string>) =>
        [...keys].map((key) => {
          const rs = current.get(key);
          return { key, current: rs ? { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) } : undefined };
        });
      let children: ChildDelegation[] = r() < 0.5 ? [child] : [];
      // A first build (every record set), then changes of a few, each taken by both models; the
      // second lists none of its changes on the first build and on every third update.
      for (let step = 0; step < 200; step++) {
        const first = step === 0;
        const changed = new Set<string>();
        if (!first) {
          for (let n = 1 + Math.floor(r() * 3); n > 0; n--) {
            const key = `dns/rs${Math.floor(r() * 70)}`;
            if (r() < 0.3) current.delete(key);
            else {
              const rs = randomRecordSet(r, 0);
              current.set(key, { ...rs, metadata: { ...rs.metadata, name: key.slice(4) } });
            }
            changed.add(key);
          }
          if (r() < 0.05) children = children.length === 0 ? [child] : [];
        }
        const keys = first ? current.keys() : changed;
        const list = first || step % 3 !== 0;
        const a = listed.update(members(first ? current.keys() : changed), children, first);
        const b = unlisted.update(members(keys), children, first, list);
        const c = told.update(members(first ? current.keys() : changed), children, first, list, first);
        const context = `seed ${seed} step ${step}`;
        assert.equal(c.changed, b.changed, context);
        assert.deepEqual(inOrder(told.rrsets()), inOrder(listed.rrsets()), context);
        assert.equal(told.contentHash(), listed.contentHash(), context);
        assert.deepEqual([...told.verdicts], [...listed.verdicts], context);
        assert.equal(a.changed, a.upserts.length > 0 || a.deletes.length > 0, context);
        assert.equal(b.changed, a.changed, context);
        // A first build that lists nothing says every verdict is new instead of listing them.
        assert.equal(b.everyVerdict, !list && first && a.verdicts.size > 0, context);
        assert.equal(a.everyVerdict, false, context);
        const bVerdicts = b.everyVerdict ? [...b.verdicts, ...unlisted.verdicts.keys()] : [...b.verdicts];
        assert.deepEqual(bVerdicts.sort(), [...a.verdicts].sort(), context);
        if (list) {
          assert.deepEqual(describeRRsets(b.upserts), describeRRsets(a.upserts), context);
          assert.deepEqual(b.deletes, a.deletes, context);
        } else {
          assert.deepEqual([b.upserts, b.deletes, b.previous.size], [[], [], 0], context);
        }
        assert.deepEqual(inOrder(unlisted.rrsets()), inOrder(listed.rrsets()), context);
        assert.equal(unlisted.contentHash(), listed.contentHash(), context);
        assert.equal(unlisted.rrsetCount, listed.rrsetCount, context);
        assert.equal(unlisted.acceptedCount, listed.acceptedCount, context);
        assert.deepEqual([...unlisted.verdicts], [...listed.verdicts], context);
      }
      // The next listed update reports against what the unlisted one left.
      const after = unlisted.update([{ key: 'dns/rs0', current: undefined }], children);
      const reference = listed.update([{ key: 'dns/rs0', current: undefined }], children);
      assert.deepEqual(describeRRsets(after.upserts), describeRRsets(reference.upserts));
      assert.deepEqual(after.deletes, reference.deletes);
      assert.deepEqual([...after.previous.keys()], [...reference.previous.keys()]);
    }
  });

  test('a record set given twice to a first build not told its keys are distinct: the second replaces the first', () => {
    const version = (address: string) =>
      recordSet('dns', 'www', { zoneRef: { name: 'z' }, name: 'www', type: 'A', records: [address] });
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const fqdn = 'www.example.com.';
    model.update(
      [
        { key: 'dns/www', current: { recordSet: version('192.0.2.1'), fqdn } },
        { key: 'dns/www', current: { recordSet: version('192.0.2.2'), fqdn } },
      ],
      [],
      true,
      false,
    );
    assert.deepEqual(
      describeRRsets(model.rrsets()).filter((r) => r.includes(' A ')),
      ['www.example.com. A 300 192.0.2.2'],
    );
    assert.equal(model.verdicts.size, 1);
    assert.equal(model.acceptedCount, 1);
  });

  test('a first build that lists nothing still counts an RRset as a change; an empty zone has none', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const empty = model.update([], [], true, false);
    assert.equal(empty.changed, false);
    assert.equal(empty.everyVerdict, false);
    const rs = recordSet('dns', 'www', {
      zoneRef: { name: 'z' },
      name: 'www',
      type: 'A',
      records: ['192.0.2.1'],
    });
    const built = model.update(
      [{ key: 'dns/www', current: { recordSet: rs, fqdn: 'www.example.com.' } }],
      [],
      true,
      false,
    );
    assert.equal(built.changed, true);
    assert.deepEqual([built.upserts, built.deletes, built.previous.size], [[], [], 0]);
    // Its verdicts are all new: said, not listed.
    assert.deepEqual([built.everyVerdict, [...built.verdicts]], [true, []]);
    assert.deepEqual([...model.verdicts.keys()], ['dns/www']);
    // The next update lists again.
    const gone = model.update([{ key: 'dns/www', current: undefined }], []);
    assert.deepEqual(gone.deletes, [{ owner: 'www.example.com.', type: 'A' }]);
    assert.equal(gone.changed, true);
    assert.deepEqual([gone.everyVerdict, [...gone.verdicts]], [false, ['dns/www']]);
  });

  test('a one-record change reports exactly that RRset', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const records = Array.from({ length: 1000 }, (_, i) =>
      recordSet(
        'dns',
        `h${i}`,
        { zoneRef: { name: 'z' }, name: `h${i}`, type: 'A', records: ['192.0.2.1'] },
        i,
      ),
    );
    model.update(
      records.map((rs) => ({
        key: `dns/${rs.metadata.name}`,
        current: { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) },
      })),
      [],
      true,
    );
    const changed = recordSet(
      'dns',
      'h500',
      { zoneRef: { name: 'z' }, name: 'h500', type: 'A', records: ['192.0.2.9'] },
      500,
    );
    const delta = model.update(
      [{ key: 'dns/h500', current: { recordSet: changed, fqdn: 'h500.example.com.' } }],
      [],
    );
    assert.deepEqual(
      delta.upserts.map((r) => `${r.owner} ${r.type}`),
      ['h500.example.com. A'],
    );
    assert.deepEqual(delta.deletes, []);
    assert.deepEqual([...delta.verdicts], []);
    const removed = model.update([{ key: 'dns/h7', current: undefined }], []);
    assert.deepEqual(removed.deletes, [{ owner: 'h7.example.com.', type: 'A' }]);
    assert.deepEqual([...removed.verdicts], ['dns/h7']);
  });

  test('a new delegation NS rejects the names below it, and removing it restores them', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const below = recordSet(
      'dns',
      'below',
      { zoneRef: { name: 'z' }, name: 'www.deleg', type: 'A', records: ['192.0.2.1'] },
      1,
    );
    model.update([{ key: 'dns/below', current: { recordSet: below, fqdn: 'www.deleg.example.com.' } }], []);
    assert.ok(model.verdicts.get('dns/below')?.accepted);
    const ns = recordSet(
      'dns',
      'ns',
      { zoneRef: { name: 'z' }, name: 'deleg', type: 'NS', records: ['ns.other.net.'] },
      2,
    );
    const added = model.update(
      [{ key: 'dns/ns', current: { recordSet: ns, fqdn: 'deleg.example.com.' } }],
      [],
    );
    assert.equal(model.verdicts.get('dns/below')?.accepted, false);
    assert.deepEqual(added.deletes, [{ owner: 'www.deleg.example.com.', type: 'A' }]);
    model.update([{ key: 'dns/ns', current: undefined }], []);
    assert.ok(model.verdicts.get('dns/below')?.accepted);
  });
});

describe('ZoneModel: steered record sets', () => {
  test('placement ActivePassiveWarm raises the TTL to 300, in the model and in assembleZone', () => {
    const shortTtlZone = zone('dns', 'z', 'example.com', { ttl: 60 });
    const model = new ZoneModel(shortTtlZone, theClass, ORIGIN);
    const rs = recordSet('dns', 'warm', {
      zoneRef: { name: 'z' },
      name: 'api',
      type: 'A',
      records: ['192.0.2.10', '198.51.100.10'],
      placement: 'ActivePassiveWarm',
    });
    const fqdn = parseName('api', ORIGIN);
    model.update([{ key: 'dns/warm', current: { recordSet: rs, fqdn } }], [], true);
    const ttlOf = (rrsets: Iterable<RRset>) => [...rrsets].find((r) => r.owner === 'api.example.com.')?.ttl;
    assert.equal(ttlOf(model.rrsets()), 300);
    const assembled = assembleZone({
      zone: shortTtlZone,
      zoneClass: theClass,
      origin: ORIGIN,
      records: [{ recordSet: rs, fqdn }],
      children: [],
    });
    assert.equal(ttlOf(assembled.rrsets), 300);
  });
});

describe('ZoneModel: steering is content', () => {
  test('a change of steering alone changes the hash and is reported as an upsert carrying it', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const spec = {
      zoneRef: { name: 'z' },
      name: 'api',
      type: 'A' as const,
      records: ['192.0.2.10', '192.0.2.11'],
    };
    const fqdn = parseName('api', ORIGIN);
    model.update([{ key: 'dns/api', current: { recordSet: recordSet('dns', 'api', spec), fqdn } }], [], true);
    const before = model.assembled().hash;
    const steered = recordSet('dns', 'api', {
      ...spec,
      healthCheck: { protocol: 'TCP', port: 443 },
      selection: { policy: 'Ordered' },
    });
    const delta = model.update([{ key: 'dns/api', current: { recordSet: steered, fqdn } }], []);
    assert.notEqual(model.assembled().hash, before);
    const upsert = delta.upserts.find((r) => r.owner === 'api.example.com.');
    assert.equal(upsert?.steering?.policy, 'Ordered');
    assert.deepEqual(upsert?.steering?.candidates, ['192.0.2.10', '192.0.2.11']);
    assert.equal(upsert?.steering?.healthCheck?.port, 443);
  });
});

describe('ZoneModel: compact owners', () => {
  const rsAt = (id: string, name: string, type: RecordTypeName, records: string[]) =>
    recordSet('dns', id, { zoneRef: { name: 'z' }, name, type, records }, 1);
  const reference = (records: DNSRecordSet[]) =>
    assembleZone({
      zone: theZone,
      zoneClass: theClass,
      origin: ORIGIN,
      records: records.map((rs) => ({ recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) })),
      children: [],
    });
  const change = (model: ZoneModel, key: string, rs: DNSRecordSet | undefined) =>
    model.update(
      [{ key, current: rs ? { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) } : undefined }],
      [],
    );

  test('digest slots freed by names that stop publishing are reused, and the hash stays the reference', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const live = new Map<string, DNSRecordSet>();
    for (let i = 0; i < 100; i++) {
      const rs = rsAt(`h${i}`, `h${i}`, 'A', [`192.0.2.${i + 1}`]);
      live.set(`dns/h${i}`, rs);
      change(model, `dns/h${i}`, rs);
    }
    const full = model.contentHash();
    assert.equal(full, reference([...live.values()]).hash);
    assert.equal(model.digests.used, 101); // the apex and 100 names
    const highWater = model.digests.highWater;
    for (let i = 0; i < 100; i += 2) {
      live.delete(`dns/h${i}`);
      change(model, `dns/h${i}`, undefined);
    }
    assert.equal(model.digests.used, 51);
    assert.equal(model.contentHash(), reference([...live.values()]).hash);
    // Other names take the freed slots: the buffer does not grow.
    for (let i = 0; i < 50; i++) {
      const rs = rsAt(`n${i}`, `n${i}`, 'TXT', [`t${i}`]);
      live.set(`dns/n${i}`, rs);
      change(model, `dns/n${i}`, rs);
    }
    assert.equal(model.digests.used, 101);
    assert.equal(model.digests.highWater, highWater);
    assert.equal(model.contentHash(), reference([...live.values()]).hash);
    // Nothing lost on a delete and re-add: the same content hashes the same.
    for (let i = 0; i < 50; i++) {
      live.delete(`dns/n${i}`);
      change(model, `dns/n${i}`, undefined);
    }
    for (let i = 0; i < 100; i += 2) {
      const rs = rsAt(`h${i}`, `h${i}`, 'A', [`192.0.2.${i + 1}`]);
      live.set(`dns/h${i}`, rs);
      change(model, `dns/h${i}`, rs);
    }
    assert.equal(model.contentHash(), full);
    assert.equal(model.digests.highWater, highWater);
  });

  test('an owner going from one record set to two and back publishes and hashes as the reference', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const a = rsAt('a', 'www', 'A', ['192.0.2.1']);
    const aaaa = rsAt('aaaa', 'www', 'AAAA', ['2001:db8::1']);
    const txt = rsAt('txt', 'www', 'TXT', ['hello']);
    change(model, 'dns/a', a);
    const one = model.contentHash();
    const www = nameKey('www.example.com.');
    assert.equal(model.published(www, 'A')?.rdata.length, 1);
    assert.equal(model.published(www, 'AAAA'), undefined);
    change(model, 'dns/aaaa', aaaa);
    change(model, 'dns/txt', txt);
    assert.equal(model.published(www, 'AAAA')?.rdata.length, 1);
    assert.deepEqual(
      describeRRsets(model.rrsets()).filter((l) => l.startsWith('www.')),
      describeRRsets(reference([a, aaaa, txt]).rrsets).filter((l) => l.startsWith('www.')),
    );
    assert.equal(model.contentHash(), reference([a, aaaa, txt]).hash);
    change(model, 'dns/aaaa', undefined);
    assert.equal(model.contentHash(), reference([a, txt]).hash);
    change(model, 'dns/txt', undefined);
    assert.equal(model.contentHash(), one);
    assert.equal(model.verdicts.size, 1);
    change(model, 'dns/a', undefined);
    assert.equal(model.rrsetCount, 1); // the apex NS
    assert.equal(model.contentHash(), reference([]).hash);
  });
});

describe('ZoneModel: verdicts read from the entries', () => {
  test('accepted verdicts carry their fqdn, a rename is reported, an unchanged replacement is not', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const at = (rs: DNSRecordSet) => ({ recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) });
    const www = recordSet('dns', 'web', {
      zoneRef: { name: 'z' },
      name: 'www',
      type: 'A',
      records: ['192.0.2.1'],
    });
    const bad = recordSet('dns', 'bad', { zoneRef: { name: 'z' }, name: 'x', type: 'A', records: ['nope'] });
    const first = model.update(
      [
        { key: 'dns/web', current: at(www) },
        { key: 'dns/bad', current: at(bad) },
      ],
      [],
    );
    assert.deepEqual([...first.verdicts].sort(), ['dns/bad', 'dns/web']);
    assert.deepEqual(model.verdicts.get('dns/web'), { accepted: true, fqdn: 'www.example.com.' });
    const invalid = model.verdicts.get('dns/bad');
    assert.equal(invalid?.accepted, false);
    assert.equal(!invalid?.accepted && invalid?.reason, 'Invalid');
    assert.deepEqual(
      [...model.verdicts].map(([k, v]) => [k, v.accepted, v.fqdn]),
      [
        ['dns/web', true, 'www.example.com.'],
        ['dns/bad', false, 'x.example.com.'],
      ],
    );
    // A new spec object with the same content: same verdict, nothing to report.
    const again = model.update([{ key: 'dns/web', current: at({ ...www, spec: { ...www.spec } }) }], []);
    assert.deepEqual([...again.verdicts], []);
    // Renamed: still accepted, but at another fqdn, which the status shows.
    const renamed = { ...www, spec: { ...www.spec, name: 'web' } };
    const moved = model.update([{ key: 'dns/web', current: at(renamed) }], []);
    assert.deepEqual([...moved.verdicts], ['dns/web']);
    assert.deepEqual(model.verdicts.get('dns/web'), { accepted: true, fqdn: 'web.example.com.' });
    assert.equal(model.acceptedCount, 1);
    assert.equal(model.verdicts.size, 2);
    const gone = model.update([{ key: 'dns/web', current: undefined }], []);
    assert.deepEqual([...gone.verdicts], ['dns/web']);
    assert.equal(model.verdicts.get('dns/web'), undefined);
    assert.equal(model.acceptedCount, 0);
    assert.equal(model.verdicts.size, 1);
  });
});

describe('ZoneModel: RRsets made from the entries', () => {
  test('upserts, what was published before, and published() carry the record set, its origin and TTL', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const fqdn = parseName('api', ORIGIN);
    const v1 = recordSet('team', 'api', {
      zoneRef: { name: 'z' },
      name: 'api',
      type: 'A',
      records: ['192.0.2.1'],
      ttl: 60,
    });
    const added = model.update([{ key: 'team/api', current: { recordSet: v1, fqdn } }], []);
    const expected: RRset = {
      owner: 'api.example.com.',
      type: 'A',
      ttl: 60,
      rdata: [{ type: 'A', address: '192.0.2.1' }],
      origin: { kind: 'recordSet', namespace: 'team', name: 'api' },
    };
    assert.deepEqual(added.upserts, [expected]);
    assert.deepEqual(added.previous.get(`${nameKey(fqdn)}\u0000A`), undefined);
    const key = nameKey(fqdn);
    assert.deepEqual(model.published(key, 'A'), expected);
    assert.deepEqual(model.published(key, 'A'), model.published(key, 'A'));
    const v2 = { ...v1, spec: { ...v1.spec, records: ['192.0.2.2'], ttl: undefined } };
    const changed = model.update([{ key: 'team/api', current: { recordSet: v2, fqdn } }], []);
    assert.deepEqual(changed.upserts, [
      { ...expected, ttl: model.defaultTtl, rdata: [{ type: 'A', address: '192.0.2.2' }] },
    ]);
    assert.deepEqual(changed.previous.get(`${key}\u0000A`), expected);
    const removed = model.update([{ key: 'team/api', current: undefined }], []);
    assert.deepEqual(removed.deletes, [{ owner: 'api.example.com.', type: 'A' }]);
    assert.equal(removed.previous.get(`${key}\u0000A`)?.rdata[0] && 'kept', 'kept');
    assert.equal(model.published(key, 'A'), undefined);
  });
});

describe('DigestSlots', () => {
  test('keeps every digest through growth, reuses freed slots first', () => {
    const slots = new DigestSlots();
    const digest = (i: number) => Uint8Array.from({ length: 32 }, (_, j) => (i * 31 + j) & 0xff);
    const taken = Array.from({ length: 1000 }, (_, i) => slots.take(digest(i)));
    assert.deepEqual(
      taken,
      Array.from({ length: 1000 }, (_, i) => i),
    );
    for (let i = 0; i < 1000; i++) assert.deepEqual(slots.at(taken[i]!), digest(i));
    slots.release(7);
    slots.release(500);
    assert.equal(slots.used, 998);
    const again = [slots.take(digest(2000)), slots.take(digest(2001)), slots.take(digest(2002))];
    assert.deepEqual(
      again.slice(0, 2).sort((a, b) => a - b),
      [7, 500],
    );
    assert.equal(again[2], 1000);
    assert.equal(slots.highWater, 1001);
    slots.put(3, digest(3000));
    assert.deepEqual(slots.at(3), digest(3000));
    assert.deepEqual(slots.at(999), digest(999));
  });
});

describe('DigestSlots: a digest given as a latin1 string', () => {
  test('keeps the same octets as the digest given as bytes', () => {
    const slots = new DigestSlots();
    const bytes = Uint8Array.from({ length: 32 }, (_, j) => (j * 37 + 250) & 0xff);
    const text = Buffer.from(bytes).toString('latin1');
    const a = slots.take(bytes);
    const b = slots.take(text);
    assert.deepEqual(slots.at(b), slots.at(a));
    slots.put(a, Buffer.from(bytes.map((x) => x ^ 0xff)).toString('latin1'));
    assert.deepEqual(
      slots.at(a),
      bytes.map((x) => x ^ 0xff),
    );
  });
});

describe('DigestSlots: room reserved at once, digests gathered after room left free', () => {
  test('keeps the digests taken before, grows past the room, gathers in the order given', () => {
    const slots = new DigestSlots();
    const digest = (i: number) => Uint8Array.from({ length: 32 }, (_, j) => (i * 13 + j * 7) & 0xff);
    for (let i = 0; i < 3; i++) slots.take(digest(i));
    slots.reserve(10);
    slots.reserve(2);
    for (let i = 3; i < 25; i++) assert.equal(slots.take(digest(i)), i);
    for (let i = 0; i < 25; i++) assert.deepEqual(slots.at(i), digest(i));
    const order = Int32Array.from([24, 0, 7]);
    const plain = slots.gather(order);
    const after = slots.gather(order, 8);
    assert.equal(after.length, 8 + 96);
    assert.deepEqual(after.subarray(0, 8), new Uint8Array(8));
    assert.deepEqual(after.subarray(8), plain);
    assert.deepEqual(plain.subarray(32, 64), digest(0));
  });
});

describe('sortNameKeys', () => {
  test('sorts as compareNameKeys does: plain names, labels that are prefixes, wildcards, the root, escapes', () => {
    const random = prng(19);
    const alphabet = 'ab-0*_z';
    const label = () =>
      Array.from(
        { length: 1 + Math.floor(random() * 3) },
        () => alphabet[Math.floor(random() * alphabet.length)],
      ).join('');
    const plain: string[] = [
      '.',
      'example.com.',
      'com.',
      'a.example.com.',
      'ab.example.com.',
      'a-b.example.com.',
    ];
    for (let i = 0; i < 400; i++)
      plain.push(`${Array.from({ length: 1 + Math.floor(random() * 3) }, label).join('.')}.example.com.`);
    const unique = [...new Set(plain)];
    const sorted = unique.slice();
    sortNameKeys(sorted);
    assert.deepEqual(sorted, unique.slice().sort(compareNameKeys));
    // The keys themselves come back, not copies.
    for (const key of sorted) assert.ok(unique.includes(key));
    const escaped = [...unique.slice(0, 50), 'a\\.b.example.com.', 'x\\032y.example.com.'];
    const sortedEscaped = escaped.slice();
    sortNameKeys(sortedEscaped);
    assert.deepEqual(sortedEscaped, escaped.slice().sort(compareNameKeys));
  });

  test('with a suffix the keys end with (a zone origin), sorts as compareNameKeys does; a key outside it too', () => {
    const random = prng(23);
    const alphabet = 'ab-0*_z';
    const label = () =>
      Array.from(
        { length: 1 + Math.floor(random() * 3) },
        () => alphabet[Math.floor(random() * alphabet.length)],
      ).join('');
    const names = (origin: string) => {
      const list = [origin];
      for (let i = 0; i < 600; i++)
        list.push(`${Array.from({ length: 1 + Math.floor(random() * 3) }, label).join('.')}.${origin}`);
      return [...new Set(list)];
    };
    for (const origin of ['example.com.', 'b.example.com.', '.']) {
      const unique = names(origin === '.' ? '' : origin);
      if (origin === '.') unique[0] = '.';
      const sorted = unique.slice();
      sortNameKeys(sorted, origin);
      assert.deepEqual(sorted, unique.slice().sort(compareNameKeys), origin);
      for (const key of sorted) assert.ok(unique.includes(key));
    }
    // Keys not below the suffix (a name that only ends with its text, another zone, the root): all
    // their labels are compared.
    const mixed = [...names('example.com.'), 'aexample.com.', 'com.', 'org.', '.', 'x.example.org.'];
    const sortedMixed = mixed.slice();
    sortNameKeys(sortedMixed, 'example.com.');
    assert.deepEqual(sortedMixed, mixed.slice().sort(compareNameKeys));
    // More keys than a character of the index holds (2^7), in reverse order.
    const many = Array.from({ length: 20_000 }, (_, i) => `h${i}.example.com.`).reverse();
    const sortedMany = many.slice();
    sortNameKeys(sortedMany, 'example.com.');
    assert.deepEqual(sortedMany, many.slice().sort(compareNameKeys));
  });
});

describe('sortNameKeys with positions', () => {
  test('gives where each sorted key was, for names below the suffix, repeated ones, escaped ones and ones outside it', () => {
    const random = prng(29);
    const base = Array.from({ length: 3_000 }, () => `h${Math.floor(random() * 2_000)}.example.com.`);
    for (const extra of [[], ['a\\.b.example.com.'], ['x.example.org.', 'example.com.', 'example.com.']]) {
      const given = [...base, ...extra];
      const sorted = given.slice();
      const positions = new Int32Array(given.length);
      sortNameKeys(sorted, 'example.com.', positions);
      const plain = given.slice();
      sortNameKeys(plain, 'example.com.');
      assert.deepEqual(sorted, plain, extra.join(' '));
      assert.deepEqual(
        [...positions].sort((a, b) => a - b),
        given.map((_, i) => i),
        extra.join(' '),
      );
      for (let n = 0; n < sorted.length; n++) assert.equal(sorted[n], given[positions[n]!], extra.join(' '));
    }
  });
});

describe('ZoneModel: a first build told its keys are distinct puts its names in order', () => {
  test('the same RRsets in the same order, hash, verdicts and owners as a build not told so; and after changes that add, drop and change names, as assembleZone (4 seeds)', () => {
    for (const [seed, withChild] of [
      [41, false],
      [42, true],
      [43, false],
      [44, true],
    ] as const) {
      const r = prng(seed);
      const names = seed < 43 ? 60 : HASH_ORDER_MIN_NAMES + 200;
      const current = new Map<string, DNSRecordSet>();
      for (let i = 0; i < names * 1.3; i++) {
        const rs = randomRecordSet(r, i);
        const name =
          r() < 0.1 ? pick(r, NAMES) : `h${Math.floor(r() * names)}${pick(r, ['', '.b', '.deleg'])}`;
        current.set(`dns/${rs.metadata.name}`, { ...rs, spec: { ...rs.spec, name } });
      }
      const members = (keys: Iterable<string>) =>
        [...keys].map((key) => {
          const rs = current.get(key);
          return { key, current: rs ? { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) } : undefined };
        });
      const children = withChild ? [child] : [];
      const told = new ZoneModel(theZone, theClass, ORIGIN);
      const plain = new ZoneModel(theZone, theClass, ORIGIN);
      told.update(members(current.keys()), children, true, false, true);
      plain.update(members(current.keys()), children, true, false);
      const context = `seed ${seed}`;
      assert.deepEqual(describeRRsets(told.rrsets()), describeRRsets(plain.rrsets()), context);
      assert.equal(told.contentHash(), plain.contentHash(), context);
      assert.deepEqual([...told.verdicts], [...plain.verdicts], context);
      assert.equal(told.ownerObjectCount, plain.ownerObjectCount, context);
      assert.equal(told.rrsetCount, plain.rrsetCount, context);
      // Changes after it, listed by both models: a record set at a new name first (the map's order
      // is then no longer canonical), every record set at `www` in either case (their name as the
      // first of them given spells it), then new names, names dropped and values changed.
      for (let step = 0; step < 30; step++) {
        const changed = new Set<string>();
        if (step === 0) {
          const rs = randomRecordSet(r, 0);
          current.set('dns/fresh', {
            ...rs,
            metadata: { ...rs.metadata, name: 'fresh' },
            spec: { ...rs.spec, name: 'a0' },
          });
          changed.add('dns/fresh');
        } else if (step === 1) {
          for (const [key, rs] of current)
            if (rs.spec.name.toLowerCase() === 'www') {
              current.delete(key);
              changed.add(key);
            }
        } else
          for (let n = 1 + Math.floor(r() * 3); n > 0; n--) {
            const key = `dns/rs${Math.floor(r() * names * 1.5)}`;
            if (r() < 0.3) current.delete(key);
            else {
              const rs = randomRecordSet(r, 0);
              const name = r() < 0.5 ? `new${step}-${n}` : `h${Math.floor(r() * names)}`;
              current.set(key, {
                ...rs,
                metadata: { ...rs.metadata, name: key.slice(4) },
                spec: { ...rs.spec, name },
              });
            }
            changed.add(key);
          }
        const a = told.update(members(changed), children);
        const b = plain.update(members(changed), children);
        const at = `${context} step ${step}`;
        assert.deepEqual(describeRRsets(a.upserts), describeRRsets(b.upserts), at);
        assert.deepEqual(a.deletes, b.deletes, at);
        assert.deepEqual([...a.previous.keys()], [...b.previous.keys()], at);
        const expected = referenceZone(current.values(), children);
        assert.deepEqual(describeRRsets(told.rrsets()), describeRRsets(expected.rrsets), at);
        assert.equal(told.contentHash(), expected.hash, at);
      }
    }
  });

  test('a name of two or more record sets is spelled as the first of them given, however the sort orders them', () => {
    // Record set 5 at `WWW` and 130 at `www`: the sort's index puts 130 first among equal names.
    const records = Array.from({ length: 200 }, (_, i) =>
      recordSet('dns', `rs${i}`, {
        zoneRef: { name: 'z' },
        name: i === 5 ? 'WWW' : i === 130 ? 'www' : `h${i}`,
        type: i === 130 ? 'AAAA' : 'A',
        records: [i === 130 ? '2001:db8::1' : '192.0.2.1'],
      }),
    );
    const members = (list: DNSRecordSet[], gone = false) =>
      list.map((rs) => ({
        key: `dns/${rs.metadata.name}`,
        current: gone ? undefined : { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) },
      }));
    const told = new ZoneModel(theZone, theClass, ORIGIN);
    const plain = new ZoneModel(theZone, theClass, ORIGIN);
    told.update(members(records), [], true, false, true);
    plain.update(members(records), [], true, false);
    const both = [records[5]!, records[130]!];
    const a = told.update(members(both, true), []);
    const b = plain.update(members(both, true), []);
    assert.deepEqual(a.deletes, b.deletes);
    assert.deepEqual(
      a.deletes.map((d) => d.owner),
      ['WWW.example.com.', 'WWW.example.com.'],
    );
  });
});

describe('ZoneModel: a name with one record set rests as its entry', () => {
  const rsAt = (id: string, name: string, type: RecordTypeName, records: string[], age = 1) =>
    recordSet('dns', id, { zoneRef: { name: 'z' }, name, type, records }, age);
  const fqdnOf = (rs: DNSRecordSet) => parseName(rs.spec.name, ORIGIN);
  const reference = (records: DNSRecordSet[], children: ChildDelegation[] = []) =>
    assembleZone({
      zone: theZone,
      zoneClass: theClass,
      origin: ORIGIN,
      records: records.map((rs) => ({ recordSet: rs, fqdn: fqdnOf(rs) })),
      children,
    });
  /** Applies one change to the model and to `live`, and checks the model against the reference. */
  const step = (
    model: ZoneModel,
    live: Map<string, DNSRecordSet>,
    key: string,
    rs: DNSRecordSet | undefined,
    children: ChildDelegation[] = [],
  ) => {
    if (rs) live.set(key, rs);
    else live.delete(key);
    const delta = model.update(
      [{ key, current: rs ? { recordSet: rs, fqdn: fqdnOf(rs) } : undefined }],
      children,
    );
    const ref = reference([...live.values()], children);
    assert.equal(model.contentHash(), ref.hash);
    assert.deepEqual(describeRRsets(model.rrsets()), describeRRsets(ref.rrsets));
    assert.deepEqual(
      [...model.verdicts].map(([k, v]) => [k, v.accepted, v.fqdn]).sort(),
      [...ref.verdicts].map(([k, v]) => [k, v.accepted, v.fqdn]).sort(),
    );
    assert.equal(model.acceptedCount, ref.acceptedCount);
    return delta;
  };

  test('a name goes from one record set to three and back to one: an owner object only while it holds more', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const live = new Map<string, DNSRecordSet>();
    assert.equal(model.ownerObjectCount, 1); // the apex, which holds its NS
    const a = rsAt('a', 'www', 'A', ['192.0.2.1']);
    step(model, live, 'dns/a', a);
    assert.equal(model.ownerObjectCount, 1);
    assert.equal(model.digests.used, 2);
    const aaaa = rsAt('aaaa', 'www', 'AAAA', ['2001:db8::1']);
    const txt = rsAt('txt', 'www', 'TXT', ['hello']);
    step(model, live, 'dns/aaaa', aaaa);
    step(model, live, 'dns/txt', txt);
    assert.equal(model.ownerObjectCount, 2);
    // The first record set leaves: the name still holds two.
    const gone = step(model, live, 'dns/a', undefined);
    assert.deepEqual(gone.deletes, [{ owner: 'www.example.com.', type: 'A' }]);
    assert.equal(model.ownerObjectCount, 2);
    step(model, live, 'dns/aaaa', undefined);
    assert.equal(model.ownerObjectCount, 1); // www rests as the TXT record set's entry
    assert.equal(model.digests.used, 2);
    // Its spec changes while it rests: reported against what it published before.
    const txt2 = rsAt('txt', 'www', 'TXT', ['bye']);
    const changed = step(model, live, 'dns/txt', txt2);
    assert.deepEqual(describeRRsets(changed.upserts), ['www.example.com. TXT 300 "bye"']);
    const before = changed.previous.get(rrsetId(nameKey('www.example.com.'), 'TXT'));
    assert.deepEqual(describeRRsets(before ? [before] : []), ['www.example.com. TXT 300 "hello"']);
    assert.equal(model.ownerObjectCount, 1);
    assert.equal(model.published(nameKey('www.example.com.'), 'TXT')?.rdata.length, 1);
    // Deleted while it rests: reported, its digest slot freed and taken by the next name.
    const highWater = model.digests.highWater;
    const deleted = step(model, live, 'dns/txt', undefined);
    assert.deepEqual(deleted.deletes, [{ owner: 'www.example.com.', type: 'TXT' }]);
    assert.equal(model.digests.used, 1);
    step(model, live, 'dns/mx', rsAt('mx', 'mail', 'MX', ['10 mx.example.net.']));
    assert.equal(model.digests.highWater, highWater);
    // Re-added: the same content hashes the same as before the delete.
    step(model, live, 'dns/mx', undefined);
    step(model, live, 'dns/txt', txt);
    step(model, live, 'dns/txt', undefined);
    step(model, live, 'dns/a', a);
    assert.equal(model.contentHash(), reference([a]).hash);
    assert.equal(model.ownerObjectCount, 1);
  });

  test('a rejected record set rests too, and names below a new delegation are decided again while resting', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const live = new Map<string, DNSRecordSet>();
    step(model, live, 'dns/bad', rsAt('bad', 'bad', 'A', ['not an address']));
    step(model, live, 'dns/host', rsAt('host', 'host.deleg', 'TXT', ['below']));
    step(model, live, 'dns/glue', rsAt('glue', 'ns.deleg', 'A', ['192.0.2.7']));
    assert.equal(model.ownerObjectCount, 1);
    const cut = step(model, live, 'dns/ns', rsAt('ns', 'deleg', 'NS', ['ns.deleg']));
    assert.equal(model.verdicts.get('dns/host')?.accepted, false);
    assert.equal(model.verdicts.get('dns/glue')?.accepted, true);
    assert.deepEqual(cut.deletes, [{ owner: 'host.deleg.example.com.', type: 'TXT' }]);
    assert.equal(model.ownerObjectCount, 1);
    step(model, live, 'dns/ns', undefined);
    assert.equal(model.verdicts.get('dns/host')?.accepted, true);
    assert.equal(model.ownerObjectCount, 1);
  });

  test('a child zone placing its NS and glue on resting names makes them owners again, and leaving lets them rest', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const live = new Map<string, DNSRecordSet>();
    step(model, live, 'dns/kid', rsAt('kid', 'kid', 'TXT', ['mine']));
    step(model, live, 'dns/glue', rsAt('glue', 'ns1.kid', 'A', ['192.0.2.9']));
    assert.equal(model.ownerObjectCount, 1);
    step(model, live, 'dns/other', rsAt('other', 'other', 'A', ['192.0.2.10']), [child]);
    assert.equal(model.verdicts.get('dns/kid')?.accepted, false);
    assert.equal(model.ownerObjectCount, 3); // the apex, the child's delegation point and its glue
    step(model, live, 'dns/other', undefined, []);
    assert.equal(model.verdicts.get('dns/kid')?.accepted, true);
    assert.equal(model.ownerObjectCount, 1);
  });

  test('a name spelled in two cases stays one owner whose name the first writer spelled', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const live = new Map<string, DNSRecordSet>();
    step(model, live, 'dns/upper', rsAt('upper', 'WWW', 'A', ['192.0.2.1']));
    step(model, live, 'dns/lower', rsAt('lower', 'www', 'TXT', ['t']));
    step(model, live, 'dns/upper', undefined);
    const gone = step(model, live, 'dns/lower', undefined);
    assert.deepEqual(gone.deletes, [{ owner: 'WWW.example.com.', type: 'TXT' }]);
  });
});

describe('ZoneModel: owners keyed by their name', () => {
  test('a name whose label holds an escaped dot is not below the delegation its text ends with', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const rs = (id: string, name: string, type: RecordTypeName, records: string[]) =>
      recordSet('dns', id, { zoneRef: { name: 'z' }, name, type, records }, 1);
    const live = [
      rs('ns', 'deleg', 'NS', ['ns.other.net.']),
      rs('dot', 'x\\.deleg', 'TXT', ['not below']),
      rs('below', 'y.deleg', 'TXT', ['below']),
      rs('upper', 'Q.x\\.deleg', 'A', ['192.0.2.1']),
    ];
    model.update(
      live.map((r) => ({
        key: `dns/${r.metadata.name}`,
        current: { recordSet: r, fqdn: parseName(r.spec.name, ORIGIN) },
      })),
      [],
    );
    const ref = referenceZone(live);
    assert.equal(model.verdicts.get('dns/dot')?.accepted, true);
    assert.equal(model.verdicts.get('dns/below')?.accepted, false);
    assert.equal(model.contentHash(), ref.hash);
    assert.deepEqual(describeRRsets(model.rrsets()), describeRRsets(ref.rrsets));
  });
});

/** A record set of `current` by key, as `ZoneModel.update` takes it (undefined once deleted). */
function memberOf(current: ReadonlyMap<string, DNSRecordSet>, key: string) {
  const rs = current.get(key);
  return rs ? { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) as Name } : undefined;
}

/** `assembleZone` of these record sets: the reference a model must equal. */
function referenceZone(records: Iterable<DNSRecordSet>, children: ChildDelegation[] = []) {
  return assembleZone({
    zone: theZone,
    zoneClass: theClass,
    origin: ORIGIN,
    records: [...records].map((v) => ({ recordSet: v, fqdn: parseName(v.spec.name, ORIGIN) as Name })),
    children,
  });
}

/** `assembleZone`'s hash of the record sets in `current` (the reference `contentHash` must equal). */
function referenceHash(current: ReadonlyMap<string, DNSRecordSet>, children: ChildDelegation[] = []): string {
  return referenceZone(current.values(), children).hash;
}

describe('ZoneModel: the content hash of a big zone', () => {
  test('keeps its names in canonical order across value changes, and stays the reference through adds, removals, renames and delegations', () => {
    const r = prng(0x6a5_4);
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const current = new Map<string, DNSRecordSet>();
    const at = (key: string) => memberOf(current, key);
    const rs = (i: number, name: string, value: number) =>
      recordSet('dns', `r${i}`, {
        zoneRef: { name: 'z' },
        name,
        type: 'A',
        records: [`192.0.2.${value % 250}`],
      });
    const total = HASH_ORDER_MIN_NAMES + 300;
    for (let i = 0; i < total; i++) current.set(`dns/r${i}`, rs(i, `h${i}.sub${i % 7}`, i));
    model.update(
      [...current.keys()].map((key) => ({ key, current: at(key) })),
      [],
      true,
    );
    const reference = () => referenceHash(current, children);
    let children: ChildDelegation[] = [];
    assert.equal(model.contentHash(), reference(), 'first');
    // Look-ups of the owners map during a hash: only the changed name's after a change that only
    // replaced values.
    const owners = (model as unknown as { owners: Map<string, unknown> }).owners;
    const get = owners.get.bind(owners);
    let lookups = 0;
    let counting = false;
    owners.get = (key: string) => {
      if (counting) lookups++;
      return get(key);
    };
    const hash = () => {
      counting = true;
      try {
        return model.contentHash();
      } finally {
        counting = false;
      }
    };
    for (let step = 0; step < 120; step++) {
      const i = Math.floor(r() * total);
      const key = `dns/r${i}`;
      const op = r();
      let valueOnly = false;
      if (op < 0.5 && current.has(key)) {
        current.set(key, rs(i, current.get(key)!.spec.name, Math.floor(r() * 1000)));
        valueOnly = true;
      } else if (op < 0.65) current.delete(key);
      else if (op < 0.8) current.set(key, rs(i, `moved${i}.sub${Math.floor(r() * 9)}`, i));
      else if (op < 0.85) current.set(key, rs(i, `h${i}.sub${i % 7}`, i));
      else if (op < 0.92 && current.has(key)) {
        // Invalid: the name stays (its record set is there) and publishes nothing, or publishes again.
        const held = current.get(key)!;
        current.set(key, { ...held, spec: { ...held.spec, records: ['not an address'] } });
      } else children = children.length === 0 ? [child] : [];
      model.update([{ key, current: at(key) }], children);
      lookups = 0;
      assert.equal(hash(), reference(), `step ${step}`);
      // A value change looks up the one name whose digest it left due (`settleDigests`), not every name.
      if (valueOnly)
        assert.ok(lookups <= 1, `step ${step}: a value change looked the names up again (${lookups})`);
      // And once more unchanged: the order kept.
      lookups = 0;
      assert.equal(hash(), reference(), `step ${step}, again`);
      assert.equal(lookups, 0, `step ${step}: nothing changed, names looked up again`);
    }
  });
});

describe('ZoneModel: many names changed at once', () => {
  test('a first build and bulk changes of hundreds of names (read in canonical order off the sorted names) stay equal to assembleZone', () => {
    for (const seed of [11, 12, 13]) {
      const r = prng(seed);
      const model = new ZoneModel(theZone, theClass, ORIGIN);
      const current = new Map<string, DNSRecordSet>();
      // The test's names (a delegation with names below it, escaped dots, a wildcard) among many plain
      // ones; without the escaped ones for two seeds (escaped names are sorted, not read in order).
      const names = [
        ...NAMES.filter((n) => seed === 13 || !n.includes('\\')),
        ...Array.from({ length: 150 }, (_, i) => `n${i}.${pick(r, ['', 'deleg.', 'b.'])}x`),
      ];
      const at = (key: string) => {
        const rs = current.get(key);
        return rs ? { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) } : undefined;
      };
      let children: ChildDelegation[] = [child];
      for (let step = 0; step < 4; step++) {
        const changed: string[] = [];
        for (let i = 0; i < 300; i++) {
          const key = `dns/rs${i}`;
          if (step > 0 && r() < 0.3) {
            current.delete(key);
          } else {
            const rs = randomRecordSet(r, i);
            current.set(key, { ...rs, spec: { ...rs.spec, name: pick(r, names) } });
          }
          changed.push(key);
        }
        if (step === 2) children = [];
        model.update(
          changed.map((key) => ({ key, current: at(key) })),
          children,
          step === 0,
        );
        const expected = referenceZone(current.values(), children);
        const context = `seed ${seed} step ${step}`;
        assert.deepEqual(describeRRsets(model.rrsets()), describeRRsets(expected.rrsets), context);
        for (const [key, verdict] of expected.verdicts)
          assert.equal(model.verdicts.get(key)?.accepted, verdict.accepted, `${context}: ${key}`);
        assert.equal(model.verdicts.size, expected.verdicts.size, context);
        assert.equal(model.assembled().hash, expected.hash, context);
        checkByName(model, context);
      }
    }
  });
});

describe('ZoneModel: owner digests computed when the content hash is asked for', () => {
  test('a first build and a change write no digest; the next hash writes those due and equals assembleZone', () => {
    const model = new ZoneModel(theZone, theClass, ORIGIN);
    const current = new Map<string, DNSRecordSet>();
    const at = (key: string) => memberOf(current, key);
    const rs = (i: number, value: number) =>
      recordSet('dns', `r${i}`, {
        zoneRef: { name: 'z' },
        name: `h${i}`,
        type: 'A',
        records: [`192.0.2.${value}`],
      });
    for (let i = 0; i < 50; i++) current.set(`dns/r${i}`, rs(i, i));
    model.update(
      [...current.keys()].map((key) => ({ key, current: at(key) })),
      [],
      true,
      false,
    );
    const reference = () => referenceHash(current);
    const written = () => {
      let n = 0;
      for (let slot = 0; slot < model.digests.highWater; slot++)
        if (model.digests.at(slot).some((b) => b !== 0)) n++;
      return n;
    };
    assert.equal(model.digests.used, 51, 'the apex and 50 names hold a slot');
    assert.equal(written(), 0, 'no digest written by the first build');
    assert.equal(model.contentHash(), reference());
    assert.equal(written(), 51, 'every digest written by the hash');
    // A value changed, then a name dropped and another added, all before the next hash.
    current.set('dns/r7', rs(7, 200));
    model.update([{ key: 'dns/r7', current: at('dns/r7') }], []);
    current.delete('dns/r8');
    model.update([{ key: 'dns/r8', current: undefined }], []);
    current.set('dns/r60', rs(60, 60));
    model.update([{ key: 'dns/r60', current: at('dns/r60') }], []);
    current.set('dns/r7', rs(7, 201));
    model.update([{ key: 'dns/r7', current: at('dns/r7') }], []);
    assert.equal(model.contentHash(), reference());
    assert.equal(model.contentHash(), reference(), 'asked again');
  });
});

describe('ZoneModel: a first build', () => {
  test('that lists nothing gives the hash, RRsets and verdicts of assembleZone: small and big zones, names with one or more record sets, rejected ones, with and without a delegation', () => {
    for (const [seed, names, withChild] of [
      [31, 40, false],
      [32, 40, true],
      [33, HASH_ORDER_MIN_NAMES + 300, false],
      [34, HASH_ORDER_MIN_NAMES + 300, true],
    ] as const) {
      const r = prng(seed);
      const records: DNSRecordSet[] = [];
      for (let i = 0; i < names * 1.3; i++) {
        const rs = randomRecordSet(r, i);
        // Mostly plain names, one record set each, some with two or more; the test's names (a
        // delegation with names below it, a wildcard, escaped dots, a name in two cases) among them.
        const name =
          r() < 0.1 ? pick(r, NAMES) : `h${Math.floor(r() * names)}${pick(r, ['', '.b', '.deleg'])}`;
        records.push({ ...rs, spec: { ...rs.spec, name } });
      }
      const children = withChild ? [child] : [];
      const model = new ZoneModel(theZone, theClass, ORIGIN);
      const delta = model.update(
        records.map((rs) => ({
          key: `dns/${rs.metadata.name}`,
          current: { recordSet: rs, fqdn: parseName(rs.spec.name, ORIGIN) },
        })),
        children,
        true,
        false,
      );
      const expected = referenceZone(records, children);
      const context = `seed ${seed}`;
      assert.equal(delta.everyVerdict, true, context);
      // The hash read in the order the build decided its names, then found again by name.
      assert.equal(model.contentHash(), expected.hash, context);
      assert.equal(model.contentHash(), expected.hash, context);
      assert.deepEqual(describeRRsets(model.rrsets()), describeRRsets(expected.rrsets), context);
      assert.deepEqual(
        [...model.verdicts].map(([k, v]) => [k, v.accepted, v.fqdn]).sort(),
        [...expected.verdicts].map(([k, v]) => [k, v.accepted, v.fqdn]).sort(),
        context,
      );
      assert.equal(model.acceptedCount, expected.acceptedCount, context);
      assert.equal(model.rrsetCount, expected.rrsets.length, context);
      checkByName(model, context);
      // A change after it is hashed as the reference.
      const changed = records.slice(1);
      model.update([{ key: `dns/${records[0]!.metadata.name}`, current: undefined }], children);
      const after = referenceZone(changed, children);
      assert.equal(model.contentHash(), after.hash, context);
    }
  });
});

describe('ZoneModel: configuration signature', () => {
  test('a model made for a zone has the signature its zone and class give (so it is not rebuilt)', () => {
    const templated = {
      ...theClass,
      spec: { ...theClass.spec, zoneNameServers: ['ns-{hash}.example.net.'] },
    };
    for (const zoneClass of [theClass, templated]) {
      const model = new ZoneModel(theZone, zoneClass, ORIGIN);
      assert.equal(model.configSignature, ZoneModel.signature(theZone, zoneClass, ORIGIN));
    }
  });
});
