import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Name, parseName } from '../dns/name.ts';
import { parseRdata, printRdata } from '../dns/rdata.ts';
import { type RecordTypeName, RRType, typeName } from '../dns/rrtype.ts';
import type { RRset } from '../zones/rrset.ts';
import type { SoaFields } from '../zones/soa.ts';
import { type Answer, answerQuery, MAX_CNAME_CHAIN, Outcome } from './answer.ts';
import { type ServedRRset, ZoneSnapshot } from './zone-snapshot.ts';
import { ZoneTable } from './zone-table.ts';

type Rec = [owner: string, type: RecordTypeName, ...rdata: string[]];

function soa(origin: Name): SoaFields {
  return {
    ttl: 300,
    mname: parseName(`ns1.${origin}`),
    rname: parseName(`hostmaster.${origin}`),
    refresh: 3600,
    retry: 600,
    expire: 1209600,
    minimum: 60,
  };
}

/** A zone from records written relative to its origin ("@" is the apex); apex NS is added. */
function zone(origin: string, records: Rec[]): ZoneSnapshot {
  const o = parseName(origin);
  const byKey = new Map<string, RRset>();
  for (const [owner, type, ...texts] of [['@', 'NS', 'ns1'] as Rec, ...records]) {
    const name = parseName(owner, o);
    const key = `${name} ${type}`;
    const rrset = byKey.get(key) ?? { owner: name, type, ttl: 300, rdata: [], origin: { kind: 'apex' } };
    for (const t of texts) rrset.rdata.push(parseRdata(type, t, o));
    byKey.set(key, rrset);
  }
  return ZoneSnapshot.build(o, soa(o), 1, byKey.values());
}

function table(...zones: ZoneSnapshot[]): ZoneTable {
  const t = new ZoneTable();
  for (const z of zones) t.set(z);
  return t;
}

const lines = (rrsets: readonly ServedRRset[]) =>
  rrsets.flatMap((r) => r.rdata.map((d) => `${r.owner} ${r.ttl} ${typeName(r.type)} ${printRdata(d)}`));

function ask(t: ZoneTable, name: string, type: number): Answer {
  return answerQuery(t, parseName(name), type);
}

const example = zone('example.com.', [
  ['www', 'A', '192.0.2.10'],
  ['mail', 'A', '192.0.2.25'],
  ['@', 'MX', '10 mail'],
  ['loop1', 'CNAME', 'loop2'],
  ['loop2', 'CNAME', 'loop1'],
  ['self', 'CNAME', 'self'],
  ['*.cnloop', 'CNAME', 'x.cnloop'],
  ['alias', 'CNAME', 'www'],
  ['todeleg', 'CNAME', 'host.deleg'],
  ['deleg', 'NS', 'ns1.deleg', 'ns.outside.test.'],
  ['ns1.deleg', 'A', '192.0.2.201'],
  ['deleg', 'DS', `60485 13 2 ${'ab'.repeat(32)}`],
  ['sub.*.odd', 'TXT', '"below a wildcard that is an empty non-terminal"'],
  ['*.wild', 'A', '192.0.2.100'],
  ['host.wild', 'A', '192.0.2.101'],
  ['child', 'NS', 'ns1.example.com.'],
  ['child', 'DS', `12345 8 2 ${'cd'.repeat(32)}`],
  ['nods', 'NS', 'ns1.example.com.'],
]);
const child = zone('child.example.com.', [['www', 'A', '192.0.2.151']]);
const nodsChild = zone('nods.example.com.', [['www', 'A', '192.0.2.152']]);
const orphan = zone('orphan.test.', [['www', 'A', '192.0.2.153']]);
const t = table(example, child, nodsChild, orphan);

describe('answerQuery: CNAME chains', () => {
  test('a loop ends the answer with each CNAME once (RFC 1034 §3.6.2)', () => {
    const a = ask(t, 'loop1.example.com.', RRType.A);
    assert.equal(a.outcome, Outcome.Answer);
    assert.deepEqual(lines(a.answer), [
      'loop1.example.com. 300 CNAME loop2.example.com.',
      'loop2.example.com. 300 CNAME loop1.example.com.',
    ]);
    assert.deepEqual(lines(ask(t, 'self.example.com.', RRType.A).answer), [
      'self.example.com. 300 CNAME self.example.com.',
    ]);
  });

  test('a wildcard CNAME that matches its own target is a loop too', () => {
    const a = ask(t, 'a.cnloop.example.com.', RRType.TXT);
    assert.deepEqual(lines(a.answer), [
      'a.cnloop.example.com. 300 CNAME x.cnloop.example.com.',
      'x.cnloop.example.com. 300 CNAME x.cnloop.example.com.',
    ]);
  });

  test(`a chain is cut after ${MAX_CNAME_CHAIN} CNAMEs`, () => {
    const records: Rec[] = Array.from({ length: 20 }, (_, i): Rec => [`c${i}`, 'CNAME', `c${i + 1}`]);
    const long = table(zone('chain.test.', records));
    const a = ask(long, 'c0.chain.test.', RRType.A);
    assert.equal(a.answer.length, MAX_CNAME_CHAIN);
    assert.equal(a.outcome, Outcome.Answer);
  });

  test('ANY at an alias is answered with the CNAME alone (RFC 1034 §4.3.2 step 3a, RFC 8482 §4.1)', () => {
    const a = ask(t, 'alias.example.com.', RRType.ANY);
    assert.equal(a.outcome, Outcome.Answer);
    assert.deepEqual(lines(a.answer), ['alias.example.com. 300 CNAME www.example.com.']);
    assert.deepEqual(a.authority, []);
  });

  test('a CNAME into a delegation adds the referral after the answer, keeping AA (RFC 1034 §4.3.2 step 3b)', () => {
    const a = ask(t, 'todeleg.example.com.', RRType.A);
    assert.equal(a.outcome, Outcome.Answer);
    assert.equal(a.aa, true);
    assert.deepEqual(lines(a.answer), ['todeleg.example.com. 300 CNAME host.deleg.example.com.']);
    assert.deepEqual(lines(a.authority), [
      'deleg.example.com. 300 NS ns1.deleg.example.com.',
      'deleg.example.com. 300 NS ns.outside.test.',
    ]);
    assert.deepEqual(lines(a.additional), ['ns1.deleg.example.com. 300 A 192.0.2.201']);
  });

  test('the name itself below a delegation is a plain referral: AA clear', () => {
    const a = ask(t, 'host.deleg.example.com.', RRType.A);
    assert.equal(a.outcome, Outcome.Referral);
    assert.equal(a.aa, false);
    assert.deepEqual(a.answer, []);
    assert.equal(a.authority[0]?.type, RRType.NS);
    assert.deepEqual(lines(a.additional), ['ns1.deleg.example.com. 300 A 192.0.2.201']);
  });
});

describe('answerQuery: wildcards (RFC 4592)', () => {
  test('a wildcard that is an empty non-terminal gives NODATA, not NXDOMAIN (§4.9)', () => {
    const a = ask(t, 'q.odd.example.com.', RRType.A);
    assert.equal(a.outcome, Outcome.NoData);
    assert.deepEqual(lines(a.authority), [
      'example.com. 60 SOA ns1.example.com. hostmaster.example.com. 1 3600 600 1209600 60',
    ]);
    assert.equal(ask(t, 'q.other.example.com.', RRType.A).outcome, Outcome.NxDomain);
  });

  test('synthesis only from the closest encloser: nothing below an existing name (§3.3.1)', () => {
    assert.deepEqual(lines(ask(t, 'x.wild.example.com.', RRType.A).answer), [
      'x.wild.example.com. 300 A 192.0.2.100',
    ]);
    assert.equal(ask(t, 'x.host.wild.example.com.', RRType.A).outcome, Outcome.NxDomain);
    assert.equal(ask(t, 'host.wild.example.com.', RRType.TXT).outcome, Outcome.NoData);
  });
});

describe('answerQuery: DS is answered from the parent side (RFC 4035 §3.1.4.1)', () => {
  test('at the apex of a child zone whose parent is served too', () => {
    const a = ask(t, 'child.example.com.', RRType.DS);
    assert.equal(a.outcome, Outcome.Answer);
    assert.equal(a.aa, true);
    assert.deepEqual(lines(a.answer), [`child.example.com. 300 DS 12345 8 2 ${'cd'.repeat(32)}`]);
  });

  test('NODATA with the parent’s SOA when the parent has no DS', () => {
    const a = ask(t, 'nods.example.com.', RRType.DS);
    assert.equal(a.outcome, Outcome.NoData);
    assert.equal(a.authority[0]?.owner, 'example.com.');
  });

  test('other types at the child apex still come from the child', () => {
    const a = ask(t, 'child.example.com.', RRType.NS);
    assert.equal(a.outcome, Outcome.Answer);
    assert.deepEqual(lines(a.answer), ['child.example.com. 300 NS ns1.child.example.com.']);
  });

  test('at a delegation point inside one zone', () => {
    assert.equal(ask(t, 'deleg.example.com.', RRType.DS).outcome, Outcome.Answer);
    assert.equal(ask(t, 'deleg.example.com.', RRType.A).outcome, Outcome.Referral);
  });

  test('a zone without a served parent answers DS for its apex itself (NODATA)', () => {
    const a = ask(t, 'orphan.test.', RRType.DS);
    assert.equal(a.outcome, Outcome.NoData);
    assert.equal(a.authority[0]?.owner, 'orphan.test.');
  });

  test('so does a zone whose served parent has no delegation for it (yet)', () => {
    const undelegated = table(example, zone('other.example.com.', [['www', 'A', '192.0.2.154']]));
    const a = ask(undelegated, 'other.example.com.', RRType.DS);
    assert.equal(a.outcome, Outcome.NoData);
    assert.equal(a.authority[0]?.owner, 'other.example.com.');
  });
});

describe('answerQuery: negative answers and additional data', () => {
  test('NXDOMAIN and NODATA carry the SOA with min(SOA TTL, MINIMUM) (RFC 2308 §5)', () => {
    for (const [name, outcome] of [
      ['nothere.example.com.', Outcome.NxDomain],
      ['www.example.com.', Outcome.NoData],
    ] as const) {
      const a = ask(t, name, RRType.AAAA);
      assert.equal(a.outcome, outcome);
      assert.equal(a.aa, true);
      assert.equal(a.authority[0]?.type, RRType.SOA);
      assert.equal(a.authority[0]?.ttl, 60);
    }
  });

  test('MX targets get their addresses in the additional section', () => {
    assert.deepEqual(lines(ask(t, 'example.com.', RRType.MX).additional), [
      'mail.example.com. 300 A 192.0.2.25',
    ]);
  });

  test('names outside every zone are refused', () => {
    const a = ask(t, 'example.net.', RRType.A);
    assert.equal(a.outcome, Outcome.Refused);
    assert.equal(a.aa, false);
  });
});

describe('answerQuery: ALIAS is internal', () => {
  const aliased = table(
    zone('example.org.', [
      ['@', 'ALIAS', 'www.example.org.'],
      ['www', 'A', '192.0.2.80'],
      ['*.w', 'ALIAS', 'www.example.org.'],
    ]),
  );

  test('a query for the ALIAS type code is answered as any unknown type: NODATA, the ALIAS never leaves', () => {
    // Regression: TYPE65401 (PowerDNS's private-use code, used inside Zonekeeper for ALIAS) returned the
    // ALIAS record itself, exposing an internal type to clients that cannot know it.
    for (const name of ['example.org.', 'x.w.example.org.']) {
      const a = ask(aliased, name, RRType.ALIAS);
      assert.equal(a.outcome, Outcome.NoData, name);
      assert.deepEqual(a.answer, [], name);
      assert.equal(a.authority[0]?.type, RRType.SOA, name);
      const other = ask(aliased, name, 65400);
      assert.deepEqual([other.outcome, other.answer, other.authority], [a.outcome, a.answer, a.authority]);
    }
    // A and AAAA still go through the ALIAS.
    assert.equal(ask(aliased, 'example.org.', RRType.A).outcome, Outcome.Alias);
  });
});
