import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeRrsig } from '../../test/support/rrsig.ts';
import { base32hex, NSEC3_RFC9276, nsec3Hash } from '../dns/dnssec/denial.ts';
import { DNSKEY_FLAGS, generateDnssecKey } from '../dns/dnssec/keys.ts';
import { verifyRrsig } from '../dns/dnssec/rrsig.ts';
import { decodeMessage, encodeMessage, queryMessage } from '../dns/message.ts';
import { type Name, nameKey, parseName } from '../dns/name.ts';
import { parseRdata } from '../dns/rdata.ts';
import { type RecordTypeName, RRType, typeName } from '../dns/rrtype.ts';
import { type Denial, signZone } from '../zones/dnssec-signer.ts';
import { signatureWindow } from '../zones/dnssec-window.ts';
import type { RRsetData } from '../zones/rrset.ts';
import type { SoaFields } from '../zones/soa.ts';
import { answerQuery, Outcome } from './answer.ts';
import { QueryHandler } from './query-handler.ts';
import type { ServedRRset } from './served-rrset.ts';
import { nextCloser, withoutType, ZoneDnssec, type ZoneDnssecData } from './zone-dnssec.ts';
import { ZoneSnapshot } from './zone-snapshot.ts';
import { ZoneTable } from './zone-table.ts';

const ORIGIN = 'z.test.';
const SOA: SoaFields = {
  ttl: 3600,
  mname: 'ns1.z.test.',
  rname: 'hostmaster.z.test.',
  refresh: 3600,
  retry: 600,
  expire: 1209600,
  minimum: 60,
};
const KEY = generateDnssecKey(13, DNSKEY_FLAGS.KSK);

function rrset(owner: string, type: RecordTypeName, ...values: string[]): RRsetData {
  return {
    owner: owner === '@' ? ORIGIN : `${owner}.${ORIGIN}`,
    type,
    ttl: 300,
    rdata: values.map((v) => parseRdata(type, v, ORIGIN)),
  };
}

const RRSETS = [
  rrset('@', 'NS', 'ns1.z.test.'),
  rrset('ns1', 'A', '192.0.2.53'),
  rrset('www', 'A', '192.0.2.1'),
  rrset('alias', 'CNAME', 'www.z.test.'),
  rrset('*.wild', 'TXT', '"w"'),
  rrset('deep.ent.sub', 'A', '192.0.2.7'),
  rrset('secure', 'NS', 'ns.secure.z.test.'),
  rrset('secure', 'DS', '12345 13 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'),
  rrset('ns.secure', 'A', '192.0.2.99'),
  rrset('insecure', 'NS', 'ns.elsewhere.example.'),
];

function signed(denial: Denial): ZoneSnapshot {
  const now = 1_800_000_000;
  const records = signZone(
    { origin: ORIGIN, soa: { ...SOA, serial: 7 }, rrsets: RRSETS },
    { keySigning: [KEY], zoneSigning: [KEY] },
    { inception: now - 3600, expiration: now + 14 * 86400 },
    denial,
  );
  const SIGNER = new Set<number>([RRType.RRSIG, RRType.NSEC, RRType.NSEC3, RRType.DNSKEY, RRType.NSEC3PARAM]);
  const data: ZoneDnssecData = {
    denial: denial.kind,
    ...(denial.kind === 'NSEC3' ? { nsec3: denial.params } : {}),
    records: records
      .filter((r) => SIGNER.has(r.type))
      .map((r) => ({ owner: r.owner, ttl: r.ttl, type: r.type, rdata: r.rdata })),
  };
  return ZoneSnapshot.build(ORIGIN, SOA, 7, RRSETS, undefined, data);
}

const NSEC_ZONE = signed({ kind: 'NSEC' });
const NSEC3_ZONE = signed({ kind: 'NSEC3', params: NSEC3_RFC9276 });

/** `owner TYPE` of each RRset, RRSIGs as `owner RRSIG(covered)`. */
function shape(rrsets: readonly ServedRRset[]): string[] {
  return rrsets.map((r) => {
    const covered = r.type === RRType.RRSIG ? `(${typeName((r.wire![0]![0]! << 8) | r.wire![0]![1]!)})` : '';
    return `${nameKey(r.owner)} ${typeName(r.type)}${covered}`;
  });
}

/** The NSEC3 owner label of a name. */
const h = (name: Name) => base32hex(nsec3Hash(name, NSEC3_RFC9276));

/** The next hashed owner of an NSEC3 RRset (RFC 5155 §3.2, no salt). */
function nextHash(r: ServedRRset): string {
  const w = r.wire![0]!;
  const saltLength = w[4]!;
  const hashLength = w[5 + saltLength]!;
  return base32hex(w.subarray(6 + saltLength, 6 + saltLength + hashLength));
}

/** Whether the NSEC3 RRset covers `name` (its hash strictly between owner and next, RFC 5155 §7.2.1). */
function covers(r: ServedRRset, name: Name): boolean {
  const owner = nameKey(r.owner).split('.')[0]!;
  const next = nextHash(r);
  const target = h(name);
  return owner < next ? owner < target && target < next : target > owner || target < next;
}

describe('DNSSEC proofs picked from the NSEC chain (RFC 4035 §3.1.3)', () => {
  const d = NSEC_ZONE.dnssec!;
  // Canonical order (RFC 4034 §6.1): z.test, alias, insecure, ns1, secure, ns.secure (glue: no NSEC),
  // deep.ent.sub, *.wild, www.
  test('NXDOMAIN: the NSEC covering the name and the one covering the wildcard at the closest encloser', () => {
    assert.deepEqual(shape(d.prove({ kind: 'nxdomain', qname: 'other.z.test.', encloser: 'z.test.' })), [
      'ns1.z.test. NSEC',
      'ns1.z.test. RRSIG(NSEC)',
      'z.test. NSEC',
      'z.test. RRSIG(NSEC)',
    ]);
  });
  test('NODATA: the NSEC of the name itself', () => {
    assert.deepEqual(shape(d.prove({ kind: 'nodata', qname: 'www.z.test.' })), [
      'www.z.test. NSEC',
      'www.z.test. RRSIG(NSEC)',
    ]);
  });
  test('an empty non-terminal: the NSEC covering it (the one before its first descendant)', () => {
    assert.deepEqual(shape(d.prove({ kind: 'ent', qname: 'ent.sub.z.test.' })), [
      'secure.z.test. NSEC',
      'secure.z.test. RRSIG(NSEC)',
    ]);
  });
  test('a wildcard expansion: the NSEC covering the name asked', () => {
    assert.deepEqual(
      shape(d.prove({ kind: 'wildcard', qname: 'x.wild.z.test.', encloser: 'wild.z.test.' })),
      ['*.wild.z.test. NSEC', '*.wild.z.test. RRSIG(NSEC)'],
    );
  });
  test('wildcard NODATA: the covering NSEC and the wildcard’s own', () => {
    assert.deepEqual(
      shape(d.prove({ kind: 'wildcard-nodata', qname: 'x.y.wild.z.test.', encloser: 'wild.z.test.' })),
      ['*.wild.z.test. NSEC', '*.wild.z.test. RRSIG(NSEC)'],
    );
  });
  test('an insecure delegation: the NSEC at the cut (NS, no DS)', () => {
    assert.deepEqual(shape(d.prove({ kind: 'no-ds', cut: 'insecure.z.test.' })), [
      'insecure.z.test. NSEC',
      'insecure.z.test. RRSIG(NSEC)',
    ]);
  });
  test('the chain wraps: a name after the last owner is covered by the last NSEC', () => {
    assert.equal(nameKey(d.nsecCovering('zzz.z.test.')!.owner), 'www.z.test.');
  });
});

describe('DNSSEC proofs picked from the NSEC3 chain (RFC 5155 §7.2)', () => {
  const d = NSEC3_ZONE.dnssec!;
  test('NXDOMAIN: the closest encloser matched, the next closer name and the wildcard covered', () => {
    const proof = d.prove({ kind: 'nxdomain', qname: 'a.b.nothere.z.test.', encloser: 'z.test.' });
    const nsec3 = proof.filter((r) => r.type === RRType.NSEC3);
    assert.equal(proof.length, 2 * nsec3.length, 'each NSEC3 with its RRSIG');
    assert.equal(nameKey(nsec3[0]!.owner), `${h('z.test.')}.z.test.`);
    assert.ok(covers(nsec3[1]!, 'nothere.z.test.'), 'next closer covered');
    assert.ok(covers(nsec3.at(-1)!, '*.z.test.'), 'wildcard covered');
  });
  test('NODATA and an empty non-terminal: the NSEC3 matching the name', () => {
    for (const name of ['www.z.test.', 'ent.sub.z.test.', 'sub.z.test.']) {
      const [r] = d.prove({ kind: 'ent', qname: name });
      assert.equal(nameKey(r!.owner), `${h(name)}.z.test.`, name);
    }
  });
  test('a wildcard expansion: the next closer name covered', () => {
    const [r] = d.prove({ kind: 'wildcard', qname: 'a.b.wild.z.test.', encloser: 'wild.z.test.' });
    assert.ok(covers(r!, 'b.wild.z.test.'));
  });
  test('an insecure delegation: the NSEC3 matching the cut', () => {
    const [r] = d.prove({ kind: 'no-ds', cut: 'insecure.z.test.' });
    assert.equal(nameKey(r!.owner), `${h('insecure.z.test.')}.z.test.`);
  });
  test('the next closer name is one label below the closest encloser', () => {
    assert.equal(nextCloser('a.b.c.z.test.', 'z.test.'), 'c.z.test.');
    assert.equal(nextCloser('c.z.test.', 'z.test.'), 'c.z.test.');
  });
});

describe('answers with DO from a signed zone (RFC 4035 §3.1)', () => {
  const t = new ZoneTable();
  t.set(NSEC_ZONE);
  const ask = (name: string, type: number, dnssecOk: boolean) =>
    answerQuery(t, parseName(name), type, dnssecOk);

  test('DO clear: no DNSSEC records at all', () => {
    const nx = ask('nothere.z.test.', RRType.A, false);
    assert.equal(nx.outcome, Outcome.NxDomain);
    assert.deepEqual(shape(nx.authority), ['z.test. SOA']);
    assert.equal(nx.signed, undefined);
    assert.deepEqual(shape(ask('www.z.test.', RRType.A, false).answer), ['www.z.test. A']);
  });
  test('positive: the RRset and its RRSIG', () => {
    const a = ask('www.z.test.', RRType.A, true);
    assert.deepEqual(shape(a.answer), ['www.z.test. A', 'www.z.test. RRSIG(A)']);
    assert.equal(a.signed, true);
  });
  test('NXDOMAIN: SOA and RRSIG at the negative TTL, then the proof', () => {
    const nx = ask('other.z.test.', RRType.A, true);
    assert.deepEqual(shape(nx.authority), [
      'z.test. SOA',
      'z.test. RRSIG(SOA)',
      'ns1.z.test. NSEC',
      'ns1.z.test. RRSIG(NSEC)',
      'z.test. NSEC',
      'z.test. RRSIG(NSEC)',
    ]);
    assert.equal(nx.authority[1]!.ttl, 60);
  });
  test('a wildcard expansion: the wildcard’s RRSIG under the name asked, and the covering NSEC', () => {
    const a = ask('x.wild.z.test.', RRType.TXT, true);
    assert.deepEqual(shape(a.answer), ['x.wild.z.test. TXT', 'x.wild.z.test. RRSIG(TXT)']);
    // The RRSIG's Labels field (octet 3) counts the wildcard's labels without the asterisk: 3.
    assert.equal(a.answer[1]!.wire![0]![3], 3);
    assert.deepEqual(shape(a.authority), ['*.wild.z.test. NSEC', '*.wild.z.test. RRSIG(NSEC)']);
  });
  test('a CNAME chain: each RRset signed', () => {
    assert.deepEqual(shape(ask('alias.z.test.', RRType.A, true).answer), [
      'alias.z.test. CNAME',
      'alias.z.test. RRSIG(CNAME)',
      'www.z.test. A',
      'www.z.test. RRSIG(A)',
    ]);
  });
  test('referrals: DS and RRSIG for a secure cut, the NSEC for an insecure one; glue unsigned', () => {
    const secure = ask('host.secure.z.test.', RRType.A, true);
    assert.deepEqual(shape(secure.authority), [
      'secure.z.test. NS',
      'secure.z.test. DS',
      'secure.z.test. RRSIG(DS)',
    ]);
    assert.deepEqual(shape(secure.additional), ['ns.secure.z.test. A']);
    assert.deepEqual(shape(ask('host.insecure.z.test.', RRType.A, true).authority), [
      'insecure.z.test. NS',
      'insecure.z.test. NSEC',
      'insecure.z.test. RRSIG(NSEC)',
    ]);
  });
  test('DNSKEY at the apex, signed', () => {
    assert.deepEqual(shape(ask('z.test.', RRType.DNSKEY, true).answer), [
      'z.test. DNSKEY',
      'z.test. RRSIG(DNSKEY)',
    ]);
  });
  test('the earliest signature expiration is known (for zonekeeper_dnssec_signatures_expire_seconds)', () => {
    assert.equal(NSEC_ZONE.dnssec!.earliestExpiration, 1_800_000_000 + 14 * 86400);
  });
  test('the signer’s records are not the zone’s content', () => {
    const types = new Set([...NSEC_ZONE.rrsets()].map((r) => r.type));
    assert.ok(!types.has('NSEC' as RecordTypeName) && !types.has('DNSKEY' as RecordTypeName));
  });
});

describe('the response cache keys on DO', () => {
  test('a cached answer without DO is not given to a query with DO, nor the other way round', () => {
    const t = new ZoneTable();
    t.set(NSEC_ZONE);
    const handler = new QueryHandler({ table: t });
    const query = (dnssecOk: boolean) =>
      encodeMessage(
        queryMessage('www.z.test.', RRType.A, {
          edns: { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk, options: [] },
        }),
      );
    const types = (dnssecOk: boolean) =>
      decodeMessage(handler.handle(query(dnssecOk), 'udp') as Uint8Array).answers.map((r) =>
        typeName(r.type),
      );
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(types(false), ['A']);
      assert.deepEqual(types(true), ['A', 'RRSIG']);
    }
  });
});

describe('answers synthesized at query time (ALIAS)', () => {
  test('are signed with the zone-signing key at the window of the owner, the same bytes in every process', () => {
    const data = (): ZoneDnssecData => ({
      denial: 'NSEC',
      records: [],
      signing: {
        keys: [KEY],
        signedAt: 1_800_000_000,
        policy: { refreshSeconds: 7 * 86400, backdateSeconds: 3600 },
      },
    });
    const rrset: ServedRRset = {
      owner: 'web.z.test.',
      type: RRType.A,
      ttl: 300,
      rdata: [parseRdata('A', '192.0.2.1', ORIGIN)],
    };
    // Two processes: each builds its own view from the same data.
    const one = new ZoneDnssec(ORIGIN, data()).signSynthesized(rrset)!;
    const two = new ZoneDnssec(ORIGIN, data()).signSynthesized(rrset)!;
    assert.deepEqual(one.wire, two.wire);
    assert.equal(typeName((one.wire![0]![0]! << 8) | one.wire![0]![1]!), 'A');
    assert.equal(new ZoneDnssec(ORIGIN, { denial: 'NSEC', records: [] }).signSynthesized(rrset), undefined);
  });

  for (const denial of [{ kind: 'NSEC' } as const, { kind: 'NSEC3', params: NSEC3_RFC9276 } as const])
    test(`a NODATA for an address type the target lacks: the owner's ${denial.kind} without the type, signed here`, () => {
      const now = 1_800_000_000;
      const policy = { refreshSeconds: 7 * 86400, backdateSeconds: 3600 };
      const rrsets = [...RRSETS, rrset('web', 'ALIAS', 'www.z.test.')];
      const records = signZone(
        { origin: ORIGIN, soa: { ...SOA, serial: 7 }, rrsets },
        { keySigning: [KEY], zoneSigning: [KEY] },
        (r) => signatureWindow(now, r.owner, r.type, policy),
        denial,
      );
      const data = (): ZoneDnssecData => ({
        denial: denial.kind,
        ...(denial.kind === 'NSEC3' ? { nsec3: denial.params } : {}),
        records: records
          .filter((r) => r.type !== RRType.A && r.type !== RRType.NS && r.type !== RRType.SOA)
          .map((r) => ({ owner: r.owner, ttl: r.ttl, type: r.type, rdata: r.rdata })),
        signing: { keys: [KEY], signedAt: now, policy },
      });
      const view = new ZoneDnssec(ORIGIN, data());
      const [record, sig] = view.proveSynthesizedNodata('web.z.test.', RRType.AAAA);
      const chain = view.prove({ kind: 'nodata', qname: 'web.z.test.' })[0]!;
      assert.equal(record!.owner, chain.owner);
      assert.equal(record!.type, denial.kind === 'NSEC' ? RRType.NSEC : RRType.NSEC3);
      const kind = denial.kind;
      const types = (wire: Uint8Array) => {
        const held = withoutType(wire, kind, RRType.RRSIG)!; // RRSIG is in every bit map here
        return [RRType.A, RRType.AAAA, RRType.TXT].filter((t) => withoutType(held, kind, t) !== undefined);
      };
      // The chain's record lists A and AAAA at the ALIAS owner; the proof lists A alone, same next name.
      assert.deepEqual(types(chain.wire![0]!), [RRType.A, RRType.AAAA]);
      assert.deepEqual(types(record!.wire![0]!), [RRType.A]);
      const head = (w: Uint8Array) => w.subarray(0, w.length - 8);
      assert.deepEqual(head(record!.wire![0]!), head(chain.wire![0]!));
      // Signed with the zone-signing key, verifiable, and the same bytes in another process.
      const rrsig = decodeRrsig(sig!.wire![0]!);
      assert.ok(
        verifyRrsig(
          rrsig,
          { owner: record!.owner, type: record!.type, ttl: record!.ttl, rdatas: record!.wire! },
          KEY,
        ),
      );
      const again = new ZoneDnssec(ORIGIN, data()).proveSynthesizedNodata('web.z.test.', RRType.AAAA);
      assert.deepEqual(again[1]!.wire, sig!.wire);
      // A type the bit map does not list: the chain's own record proves it.
      assert.deepEqual(view.proveSynthesizedNodata('web.z.test.', RRType.TXT)[0], chain);
      // Without the keys here, no proof is made.
      assert.deepEqual(
        new ZoneDnssec(ORIGIN, { ...data(), signing: undefined } as ZoneDnssecData).proveSynthesizedNodata(
          'web.z.test.',
          RRType.AAAA,
        ),
        [],
      );
    });
});

describe('signed answers over UDP', () => {
  test('an answer whose RRSIGs and proof do not fit is truncated (TC), never sent without them', () => {
    const t = new ZoneTable();
    t.set(NSEC3_ZONE);
    const handler = new QueryHandler({ table: t, responseCache: 0 });
    const ask = (udpSize: number) =>
      decodeMessage(
        handler.handle(
          encodeMessage(
            queryMessage('other.z.test.', RRType.A, {
              edns: { udpSize, extendedRcode: 0, version: 0, dnssecOk: true, options: [] },
            }),
          ),
          'udp',
        ) as Uint8Array,
      );
    const small = ask(512);
    assert.equal(small.tc, true);
    assert.equal(small.authority.length, 0);
    const large = ask(1232);
    assert.equal(large.tc, false);
    assert.ok(large.authority.filter((r) => r.type === RRType.NSEC3).length >= 2);
  });
});
