import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NSEC3_RFC9276 } from '../dns/dnssec/denial.ts';
import { DNSKEY_FLAGS, generateDnssecKey } from '../dns/dnssec/keys.ts';
import { decodeMessage, encodeMessage, queryMessage, Rcode } from '../dns/message.ts';
import { parseRdata } from '../dns/rdata.ts';
import { RRType } from '../dns/rrtype.ts';
import { signZone } from '../zones/dnssec-signer.ts';
import type { RRsetData } from '../zones/rrset.ts';
import { QueryHandler } from './query-handler.ts';
import { parseCidr, ResponseRateLimiter, type RrlKind, truncated } from './rrl.ts';
import type { ZoneDnssecData } from './zone-dnssec.ts';
import { ZoneSnapshot } from './zone-snapshot.ts';
import { ZoneTable } from './zone-table.ts';

const SOA = {
  ttl: 300,
  mname: 'ns1.example.com.',
  rname: 'h.example.com.',
  refresh: 1,
  retry: 1,
  expire: 1,
  minimum: 60,
};

const table = new ZoneTable();
table.set(
  ZoneSnapshot.build('example.com.', SOA, 1, [
    { owner: 'example.com.', type: 'NS', ttl: 300, rdata: [{ type: 'NS', host: 'ns1.example.com.' }] },
    { owner: 'www.example.com.', type: 'A', ttl: 300, rdata: [{ type: 'A', address: '192.0.2.1' }] },
    { owner: 'mail.example.com.', type: 'A', ttl: 300, rdata: [{ type: 'A', address: '192.0.2.2' }] },
    { owner: 'sub.example.com.', type: 'NS', ttl: 300, rdata: [{ type: 'NS', host: 'ns.sub.example.com.' }] },
    { owner: 'ns.sub.example.com.', type: 'A', ttl: 300, rdata: [{ type: 'A', address: '192.0.2.53' }] },
  ]),
);
// A signed zone with a wildcard (NSEC3), as a signing zone serves it.
const SIGNED_RRSETS: RRsetData[] = [
  ['s.test.', 'NS', 'ns1.s.test.'],
  ['ns1.s.test.', 'A', '192.0.2.53'],
  ['www.s.test.', 'A', '192.0.2.1'],
  ['*.wild.s.test.', 'TXT', '"a wildcard answer"'],
].map(([owner, type, value]) => ({
  owner: owner!,
  type: type as RRsetData['type'],
  ttl: 300,
  rdata: [parseRdata(type as RRsetData['type'], value!, 's.test.')],
}));
{
  const key = generateDnssecKey(13, DNSKEY_FLAGS.KSK);
  const now = 1_800_000_000;
  const soa = { ...SOA, mname: 'ns1.s.test.', rname: 'h.s.test.' };
  const records = signZone(
    { origin: 's.test.', soa: { ...soa, serial: 1 }, rrsets: SIGNED_RRSETS },
    { keySigning: [key], zoneSigning: [key] },
    { inception: now - 3600, expiration: now + 14 * 86400 },
    { kind: 'NSEC3', params: NSEC3_RFC9276 },
  );
  const signer = new Set<number>([RRType.RRSIG, RRType.NSEC, RRType.NSEC3, RRType.DNSKEY, RRType.NSEC3PARAM]);
  const dnssec: ZoneDnssecData = {
    denial: 'NSEC3',
    nsec3: NSEC3_RFC9276,
    records: records
      .filter((r) => signer.has(r.type))
      .map((r) => ({ owner: r.owner, ttl: r.ttl, type: r.type, rdata: r.rdata })),
  };
  table.set(ZoneSnapshot.build('s.test.', soa, 1, SIGNED_RRSETS, undefined, dnssec));
}
const handler = new QueryHandler({ table, responseCache: 0 });
const EDNS = { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: false, options: [] };
const DO = { ...EDNS, dnssecOk: true };

/** The server's real response to a question with the DO bit (a signed answer from a signed zone). */
function signedResponse(name: string, type: number): Uint8Array {
  const q = encodeMessage(queryMessage(name, type, { id: 7, rd: true, edns: DO }));
  return handler.handle(q, 'udp') as Uint8Array;
}

/** The server's real response to a question. */
function response(name: string, type: number = RRType.A, edns = false): Uint8Array {
  const q = encodeMessage(queryMessage(name, type, { id: 7, rd: true, ...(edns ? { edns: EDNS } : {}) }));
  return handler.handle(q, 'udp') as Uint8Array;
}

/** A limiter on a clock the test moves, counting what it does. */
function limiter(settings: ConstructorParameters<typeof ResponseRateLimiter>[0] = {}) {
  const clock = { ms: 1000 };
  const counts = { dropped: new Map<RrlKind, number>(), slipped: new Map<RrlKind, number>() };
  const rrl = new ResponseRateLimiter(
    { exempt: [], ...settings },
    {
      rrlDropped: (k) => counts.dropped.set(k, (counts.dropped.get(k) ?? 0) + 1),
      rrlSlipped: (k) => counts.slipped.set(k, (counts.slipped.get(k) ?? 0) + 1),
    },
  );
  return {
    rrl: { filter: (r: Uint8Array, a: string) => rrl.filter(r, a, clock.ms), tableSize: rrl.tableSize },
    clock,
    counts,
  };
}

/** Sends `n` copies of a response to `address` at one instant; counts what went out. */
function burst(
  rrl: Pick<ResponseRateLimiter, 'tableSize'> & { filter(r: Uint8Array, a: string): Uint8Array | null },
  bytes: Uint8Array,
  address: string,
  n: number,
) {
  const out = { sent: 0, slipped: 0, dropped: 0 };
  for (let i = 0; i < n; i++) {
    const r = rrl.filter(bytes, address);
    if (r === null) out.dropped++;
    else if (r === bytes) out.sent++;
    else out.slipped++;
  }
  return out;
}

describe('response rate limiting', () => {
  test('a bucket allows its rate, then drops with every second response slipped as TC', () => {
    const { rrl, clock, counts } = limiter({ rate: 5, slip: 2 });
    const www = response('www.example.com.');
    assert.deepEqual(burst(rrl, www, '192.0.2.10', 25), { sent: 5, slipped: 10, dropped: 10 });
    assert.equal(counts.dropped.get('answer'), 10);
    assert.equal(counts.slipped.get('answer'), 10);
    // Credit comes back at the rate: 200 ms later, one more response.
    clock.ms += 200;
    assert.equal(burst(rrl, www, '192.0.2.10', 3).sent, 1);
    // And never more than one second's worth, however long the client was quiet.
    clock.ms += 60_000;
    assert.equal(burst(rrl, www, '192.0.2.10', 10).sent, 5);
  });

  test('slip 0 drops every response over the rate; slip 1 truncates every one', () => {
    const www = response('www.example.com.');
    assert.deepEqual(burst(limiter({ rate: 2, slip: 0 }).rrl, www, '192.0.2.10', 10), {
      sent: 2,
      slipped: 0,
      dropped: 8,
    });
    assert.deepEqual(burst(limiter({ rate: 2, slip: 1 }).rrl, www, '192.0.2.10', 10), {
      sent: 2,
      slipped: 8,
      dropped: 0,
    });
  });

  test('buckets are per client network (IPv4 /24, IPv6 /56): neighbours share, other networks do not', () => {
    const { rrl } = limiter({ rate: 3 });
    const www = response('www.example.com.');
    assert.equal(burst(rrl, www, '192.0.2.10', 3).sent, 3);
    assert.equal(burst(rrl, www, '192.0.2.200', 3).sent, 0, 'same /24');
    assert.equal(burst(rrl, www, '192.0.3.10', 3).sent, 3, 'another /24');
    assert.equal(burst(rrl, www, '::ffff:192.0.2.99', 3).sent, 0, 'IPv4-mapped: the same /24');
    assert.equal(burst(rrl, www, '2001:db8:0:100::1', 3).sent, 3);
    assert.equal(burst(rrl, www, '2001:db8:0:1ff:ffff::9', 3).sent, 0, 'same /56');
    assert.equal(burst(rrl, www, '2001:db8:0:0100:0:0:0:2', 3).sent, 0, 'same /56, written in full');
    assert.equal(burst(rrl, www, '2001:db8:0:200::1', 3).sent, 3, 'another /56');
    assert.equal(burst(rrl, www, '2001:db8::1', 3).sent, 3, 'another /56');
    assert.equal(burst(rrl, www, 'fe80::1%eth0', 3).sent, 3);
  });

  test('kinds and subjects: answers per question, NXDOMAIN per zone, referrals per cut, errors per network', () => {
    const { rrl, counts } = limiter({ rate: 2, slip: 0 });
    const client = '198.51.100.7';
    assert.equal(burst(rrl, response('www.example.com.'), client, 4).sent, 2);
    assert.equal(
      burst(rrl, response('mail.example.com.'), client, 4).sent,
      2,
      'another name: another bucket',
    );
    assert.equal(burst(rrl, response('www.example.com.', RRType.AAAA), client, 4).sent, 2, 'NODATA');
    assert.equal(burst(rrl, response('WWW.example.com.', RRType.AAAA), client, 4).sent, 0, 'case-blind');
    // Random subdomains of one zone share its NXDOMAIN bucket.
    let nx = 0;
    for (let i = 0; i < 10; i++) nx += burst(rrl, response(`r${i}.example.com.`), client, 1).sent;
    assert.equal(nx, 2);
    // Names below one cut share its referral bucket.
    let referrals = 0;
    for (let i = 0; i < 5; i++) referrals += burst(rrl, response(`h${i}.sub.example.com.`), client, 1).sent;
    assert.equal(referrals, 2);
    // REFUSED (outside the zones), FORMERR and NOTIMP share the network's error bucket.
    let errors = 0;
    for (const name of ['a.example.net.', 'b.example.org.', 'c.example.'])
      errors += burst(rrl, response(name), client, 2).sent;
    assert.equal(errors, 2);
    assert.deepEqual(Object.fromEntries(counts.dropped), {
      answer: 4,
      nodata: 6,
      nxdomain: 8,
      referral: 3,
      error: 4,
    });
  });

  test('random types at one name share the zone’s NODATA bucket, as random names share its NXDOMAIN bucket', () => {
    const { rrl } = limiter({ rate: 2, slip: 0 });
    const client = '198.51.100.8';
    let sent = 0;
    // Types the name does not have: NODATA each, with the SOA (and, signed, the NSEC3 proof).
    for (const type of [RRType.AAAA, RRType.MX, RRType.TXT, RRType.SRV, RRType.CAA, 65000, 65001, 65002])
      sent += burst(rrl, response('www.example.com.', type), client, 1).sent;
    assert.equal(sent, 2);
    let signedSent = 0;
    for (const type of [RRType.AAAA, RRType.MX, RRType.TXT, RRType.SRV, RRType.CAA, 65000, 65001, 65002]) {
      const r = signedResponse('www.s.test.', type);
      assert.equal(decodeMessage(r).answers.length, 0);
      signedSent += burst(rrl, r, client, 1).sent;
    }
    assert.equal(signedSent, 2, 'signed NODATA of the signed zone: its own bucket, shared');
  });

  test('random names below one signed wildcard share its bucket; other questions do not', () => {
    const { rrl } = limiter({ rate: 2, slip: 0 });
    const client = '198.51.100.9';
    let sent = 0;
    for (let i = 0; i < 10; i++) {
      const r = signedResponse(`r${i}.wild.s.test.`, RRType.TXT);
      const m = decodeMessage(r);
      assert.equal(m.rcode, Rcode.NOERROR);
      assert.ok(
        m.answers.some((a) => a.type === RRType.RRSIG),
        'a signed wildcard answer',
      );
      sent += burst(rrl, r, client, 1).sent;
    }
    assert.equal(sent, 2);
    // Deeper names below the same wildcard too; a name that exists has its own bucket.
    assert.equal(burst(rrl, signedResponse('a.b.wild.s.test.', RRType.TXT), client, 1).sent, 0);
    assert.equal(burst(rrl, signedResponse('www.s.test.', RRType.A), client, 2).sent, 2);
  });

  test('random names below one unsigned wildcard share its bucket, from the answer path, the response cache and the templates', () => {
    // Regression: the bytes of an unsigned wildcard answer look like any name's own answer, so every
    // random name below a wildcard found a fresh bucket: unlimited amplified answers.
    const wild = new ZoneTable();
    wild.set(
      ZoneSnapshot.build('w.test.', { ...SOA, mname: 'ns1.w.test.', rname: 'h.w.test.' }, 1, [
        { owner: 'w.test.', type: 'NS', ttl: 300, rdata: [{ type: 'NS', host: 'ns1.w.test.' }] },
        { owner: 'ns1.w.test.', type: 'A', ttl: 300, rdata: [{ type: 'A', address: '192.0.2.53' }] },
        { owner: 'own.wild.w.test.', type: 'TXT', ttl: 300, rdata: [{ type: 'TXT', strings: ['own'] }] },
        {
          owner: '*.wild.w.test.',
          type: 'TXT',
          ttl: 300,
          rdata: [{ type: 'TXT', strings: ['x'.repeat(200)] }],
        },
        { owner: '*.other.w.test.', type: 'TXT', ttl: 300, rdata: [{ type: 'TXT', strings: ['y'] }] },
        {
          owner: '*.alias.w.test.',
          type: 'CNAME',
          ttl: 300,
          rdata: [{ type: 'CNAME', target: 'ns1.w.test.' }],
        },
      ]),
    );
    for (const responseCache of [0, 1000]) {
      const h = new QueryHandler({ table: wild, responseCache, rrl: { exempt: [], rate: 2, slip: 0 } });
      const rrl = h.rateLimiter!;
      const client = '203.0.113.7';
      let clock = 1000;
      /** Asks `name` once and sends the response through the limiter, as the UDP server does. */
      const sent = (name: string, type: number = RRType.TXT): number => {
        const q = encodeMessage(queryMessage(name, type, { id: 9, rd: true }));
        const r = h.handle(q, 'udp', clock) as Uint8Array;
        assert.equal(decodeMessage(r).rcode, Rcode.NOERROR, name);
        return rrl.filter(r, client, clock, h.lastWildcard) === r ? 1 : 0;
      };
      const label = `cache ${responseCache}`;
      let count = 0;
      for (let i = 0; i < 20; i++) count += sent(`r${i}.wild.w.test.`);
      // Names asked again come from the response cache (when on); deeper names below it too.
      for (let i = 0; i < 5; i++) count += sent(`r${i}.wild.w.test.`) + sent(`a${i}.b.wild.w.test.`);
      assert.equal(count, 2, `${label}: the wildcard's bucket holds its rate`);
      if (responseCache > 0) assert.ok(h.lastWildcard !== 0, `${label}: the tag came back from the cache`);
      // A name of its own below the wildcard, another wildcard, another type: buckets of their own.
      assert.equal(sent('own.wild.w.test.') + sent('own.wild.w.test.'), 2, `${label}: own name`);
      assert.equal(sent('q1.other.w.test.') + sent('q2.other.w.test.') + sent('q3.other.w.test.'), 2, label);
      assert.equal(sent('r1.wild.w.test.', RRType.A), 1, `${label}: wildcard NODATA is the zone's`);
      // A CNAME synthesised from a wildcard (RFC 4592 §4.4): random names share its bucket too.
      let viaCname = 0;
      for (let i = 0; i < 10; i++) viaCname += sent(`c${i}.alias.w.test.`, RRType.A);
      assert.equal(viaCname, 2, `${label}: wildcard CNAME`);
      clock += 1000;
      assert.equal(sent('r99.wild.w.test.'), 1, `${label}: credit comes back at the rate`);
    }
  });

  test('random names below one wildcard ALIAS share its bucket: the tag is known before the lookup upstream', async () => {
    // Regression: an ALIAS answer is completed after a lookup upstream, and went out without the
    // wildcard it came from: each random name below a wildcard ALIAS had a bucket of its own.
    const alias = new ZoneTable();
    alias.set(
      ZoneSnapshot.build('al.test.', { ...SOA, mname: 'ns1.al.test.', rname: 'h.al.test.' }, 1, [
        { owner: 'al.test.', type: 'NS', ttl: 300, rdata: [{ type: 'NS', host: 'ns1.al.test.' }] },
        { owner: 'ns1.al.test.', type: 'A', ttl: 300, rdata: [{ type: 'A', address: '192.0.2.53' }] },
        {
          owner: '*.lb.al.test.',
          type: 'ALIAS',
          ttl: 300,
          rdata: [{ type: 'ALIAS', target: 'big.example.org.' }],
        },
        {
          owner: 'own.lb.al.test.',
          type: 'ALIAS',
          ttl: 300,
          rdata: [{ type: 'ALIAS', target: 'big.example.org.' }],
        },
      ]),
    );
    const many = Array.from({ length: 20 }, (_, i) => ({ type: 'A' as const, address: `192.0.2.${i + 1}` }));
    const h = new QueryHandler({
      table: alias,
      aliasResolver: { resolve: async () => ({ kind: 'ok' as const, rdata: many, ttl: 300 }) } as never,
      rrl: { exempt: [], rate: 2, slip: 0 },
    });
    const rrl = h.rateLimiter!;
    const sent = async (name: string): Promise<number> => {
      const q = encodeMessage(queryMessage(name, RRType.A, { id: 9, rd: true }));
      const res = h.handle(q, 'udp', 1000, '203.0.113.8');
      assert.ok(res instanceof Promise, 'the ALIAS path waits for its lookup');
      // As DnsServer does: the tag read when handle returns, the response sent when it resolves.
      const tag = h.lastWildcard;
      const bytes = (await res)!;
      assert.equal(decodeMessage(bytes).answers.length, 20);
      return rrl.filter(bytes, '203.0.113.8', 1000, tag) === bytes ? 1 : 0;
    };
    let count = 0;
    for (let i = 0; i < 20; i++) count += await sent(`r${i}.lb.al.test.`);
    assert.equal(count, 2);
    // An ALIAS of its own name is counted by its question.
    assert.equal((await sent('own.lb.al.test.')) + (await sent('own.lb.al.test.')), 2);
  });

  test('exempt networks are never limited; loopback is exempt by default', () => {
    const www = response('www.example.com.');
    const custom = limiter({ rate: 1, exempt: ['192.0.2.0/25', '2001:db8::/32'] }).rrl;
    assert.equal(burst(custom, www, '192.0.2.200', 50).sent, 1, 'outside the /25');
    assert.equal(burst(custom, www, '192.0.2.100', 50).sent, 50, 'inside, though its /24 is over the rate');
    assert.equal(burst(custom, www, '2001:db8:1::1', 50).sent, 50);
    assert.equal(burst(custom, www, '2001:db9::1', 50).sent, 1);
    const real = new ResponseRateLimiter({ rate: 1 });
    const defaults = {
      tableSize: real.tableSize,
      filter: (r: Uint8Array, a: string) => real.filter(r, a, 0),
    };
    assert.equal(burst(defaults, www, '127.0.0.1', 50).sent, 50);
    assert.equal(burst(defaults, www, '::1', 50).sent, 50);
    assert.equal(burst(defaults, www, '::ffff:127.0.0.5', 50).sent, 50);
    assert.equal(burst(defaults, www, '198.51.100.1', 50).sent, 1);
  });

  test('a slip is the header and question with TC set, no records, and the OPT when the query had one', () => {
    for (const edns of [false, true]) {
      const full = response('www.example.com.', RRType.A, edns);
      const m = decodeMessage(truncated(full));
      assert.equal(m.tc, true);
      assert.equal(m.id, 7);
      assert.equal(m.rd, true);
      assert.equal(m.rcode, Rcode.NOERROR);
      assert.deepEqual(m.questions, [{ name: 'www.example.com.', type: RRType.A, class: 1 }]);
      assert.deepEqual([m.answers.length, m.authority.length, m.additional.length], [0, 0, 0]);
      assert.equal(m.edns !== undefined, edns);
      assert.ok(truncated(full).length <= full.length);
    }
  });

  test('the table has a fixed size: a flood from a million networks does not grow it', () => {
    const { rrl } = limiter({ rate: 5, tableSize: 1000 });
    assert.equal(rrl.tableSize, 1024);
    const www = response('www.example.com.');
    for (let i = 0; i < 1_000_000; i += 7) rrl.filter(www, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.1`);
    assert.equal(rrl.tableSize, 1024);
    // A network seen recently keeps its bucket.
    assert.equal(burst(rrl, www, '203.0.113.1', 10).sent, 5);
  });

  test('CIDR parsing for --rrl-exempt', () => {
    assert.deepEqual(parseCidr('192.0.2.0/24'), { address: '192.0.2.0', prefix: 24, family: 'ipv4' });
    assert.deepEqual(parseCidr('2001:db8::/56'), { address: '2001:db8::', prefix: 56, family: 'ipv6' });
    assert.deepEqual(parseCidr('::1'), { address: '::1', prefix: 128, family: 'ipv6' });
    for (const bad of ['192.0.2.0/33', '192.0.2.0/', '192.0.2/24', 'example.com', '10.0.0.0/8x', '::/129'])
      assert.equal(typeof parseCidr(bad), 'string', bad);
  });
});
