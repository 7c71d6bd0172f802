import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildQuery } from '../../../test/support/dns-client.ts';
import { decodeRrsig } from '../../../test/support/rrsig.ts';
import { registerTestSelectionPolicies } from '../../../test/support/selection-policies.ts';
import { canonicalRdata } from '../../dns/dnssec/canonical.ts';
import { DNSKEY_FLAGS, generateDnssecKey } from '../../dns/dnssec/keys.ts';
import { type RrsigRdata, verifyRrsig } from '../../dns/dnssec/rrsig.ts';
import { decodeMessage, type Message } from '../../dns/message.ts';
import { type Name, parseName } from '../../dns/name.ts';
import { parseRdata, printRdata } from '../../dns/rdata.ts';
import { type RecordTypeName, RRType, typeName } from '../../dns/rrtype.ts';
import { signZone } from '../../zones/dnssec-signer.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import { QueryHandler } from '../query-handler.ts';
import type { ServedRRset } from '../served-rrset.ts';
import { ZoneDnssec, type ZoneDnssecData } from '../zone-dnssec.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { ZoneTable } from '../zone-table.ts';
import type { SelectionBinding } from './selection-table.ts';
import { HEALTH_DOWN, HEALTH_UP, processHealth } from './steering/health-view.ts';

registerTestSelectionPolicies();

const origin = parseName('example.com.');
const KEY = generateDnssecKey(13, DNSKEY_FLAGS.KSK);
const SIGNED_AT = 1_800_000_000;
const SOA = {
  ttl: 300,
  mname: parseName('ns1.example.com.'),
  rname: parseName('hostmaster.example.com.'),
  refresh: 3600,
  retry: 600,
  expire: 1209600,
  minimum: 60,
};

function rrset(owner: string, type: RecordTypeName, ...values: string[]): RRsetData {
  return {
    owner: parseName(owner, origin),
    type,
    ttl: 300,
    rdata: values.map((v) => parseRdata(type, v, origin)),
  };
}

const RRSETS = [
  rrset('@', 'NS', 'ns1'),
  rrset('ns1', 'A', '192.0.2.53'),
  rrset('www', 'A', '192.0.2.1', '192.0.2.2', '192.0.2.3'),
  rrset('*.wild', 'A', '198.51.100.1', '198.51.100.2'),
];

/** The signer's records and the signing keys, as `signForServing` gives every process. */
function signedData(): ZoneDnssecData {
  const window = { inception: SIGNED_AT - 3600, expiration: SIGNED_AT + 14 * 86400 };
  const records = signZone(
    { origin, soa: { ...SOA, serial: 1 }, rrsets: RRSETS },
    { keySigning: [KEY], zoneSigning: [KEY] },
    window,
    { kind: 'NSEC' },
  );
  const SIGNER = new Set<number>([RRType.RRSIG, RRType.NSEC, RRType.DNSKEY]);
  return {
    denial: 'NSEC',
    records: records
      .filter((r) => SIGNER.has(r.type))
      .map((r) => ({ owner: r.owner, ttl: r.ttl, type: r.type, rdata: r.rdata })),
    signing: {
      keys: [KEY],
      signedAt: SIGNED_AT,
      policy: { refreshSeconds: 7 * 86400, backdateSeconds: 3600 },
    },
  };
}

/** A process: its own zone table (built from the same signed data) and query handler. */
function process(bindings: SelectionBinding[], data = signedData()) {
  const table = new ZoneTable();
  const zone = ZoneSnapshot.build(origin, SOA, 1, RRSETS, undefined, data);
  table.set(zone);
  table.setSelections(origin, bindings);
  const handler = new QueryHandler({ table });
  const ask = (name: string, o: { client: string; dnssecOk?: boolean }): Uint8Array => {
    const q = buildQuery({
      id: 7,
      name,
      type: RRType.A,
      edns: { udpSize: 1232, options: [], ...(o.dnssecOk === false ? {} : { dnssecOk: true }) },
    });
    const out = handler.handle(q, 'udp', performance.now(), o.client);
    assert.ok(out instanceof Uint8Array);
    return out;
  };
  return { ask, dnssec: zone.dnssec as ZoneDnssec };
}

/** Subsets by client network: 10.1/16 gets .1, 10.2/16 gets .2 and .3, others every record. */
const BY_SUBNET: SelectionBinding = {
  owner: parseName('www.example.com.'),
  type: 'A',
  policy: 'by-subnet',
  data: {
    rules: [
      { network: '10.1.0.0/16', keep: ['192.0.2.1'] },
      { network: '10.2.0.0/16', keep: ['192.0.2.2', '192.0.2.3'] },
    ],
  },
};

const WILD: SelectionBinding = {
  owner: parseName('*.wild.example.com.'),
  type: 'A',
  policy: 'first-n',
  data: { count: 1 },
};

/** RRSIG RDATA (RFC 4034 §3.1) read from a decoded message's record. */
function rrsigOf(data: unknown): RrsigRdata {
  const b = data instanceof Uint8Array ? data : (data as { data: Uint8Array }).data;
  assert.ok(b instanceof Uint8Array, `RRSIG data ${JSON.stringify(data)}`);
  return decodeRrsig(b);
}

const addresses = (m: Message) =>
  m.answers.filter((r) => r.type === RRType.A).map((r) => printRdata(r.data as never));

/** Checks that the answer's RRSIG validates the A records it carries, signed at `signedAs`. */
function assertValidates(m: Message, signedAs: Name): void {
  const a = m.answers.filter((r) => r.type === RRType.A);
  const sigs = m.answers.filter((r) => r.type === RRType.RRSIG);
  assert.equal(sigs.length, 1);
  const sig = rrsigOf(sigs[0]!.data);
  assert.equal(sig.typeCovered, RRType.A);
  const rdatas = a.map((r) => canonicalRdata(parseRdata('A', printRdata(r.data as never), origin)));
  assert.ok(verifyRrsig(sig, { owner: signedAs, type: RRType.A, ttl: sig.originalTtl, rdatas }, KEY));
}

describe('selection in a signed zone (DO set)', () => {
  test('the chosen subset is answered with an RRSIG over the subset that validates', () => {
    const p = process([BY_SUBNET]);
    const one = decodeMessage(p.ask('www.example.com', { client: '10.1.0.1' }));
    assert.deepEqual(addresses(one), ['192.0.2.1']);
    assert.deepEqual(
      one.answers.map((r) => typeName(r.type)),
      ['A', 'RRSIG'],
    );
    assertValidates(one, parseName('www.example.com.'));
    const two = decodeMessage(p.ask('www.example.com', { client: '10.2.0.1' }));
    assert.deepEqual(addresses(two).sort(), ['192.0.2.2', '192.0.2.3']);
    assertValidates(two, parseName('www.example.com.'));
    // A client no rule names gets every record with the signer's own RRSIG.
    const all = decodeMessage(p.ask('www.example.com', { client: '192.0.2.200' }));
    assert.equal(addresses(all).length, 3);
    assertValidates(all, parseName('www.example.com.'));
  });

  test('the RRSIG over a subset is the same bytes in every process (ADR 0021)', () => {
    const data = signedData();
    const a = process([BY_SUBNET], data);
    const b = process([BY_SUBNET], data);
    for (const client of ['10.1.0.1', '10.2.0.1']) {
      assert.deepEqual(a.ask('www.example.com', { client }), b.ask('www.example.com', { client }));
    }
  });

  test('without DO the subset is answered without RRSIG, as before', () => {
    const p = process([BY_SUBNET]);
    const m = decodeMessage(p.ask('www.example.com', { client: '10.1.0.1', dnssecOk: false }));
    assert.deepEqual(
      m.answers.map((r) => `${typeName(r.type)} ${printRdata(r.data as never)}`),
      ['A 192.0.2.1'],
    );
    assert.equal(p.dnssec.synthesizedSigned, 0);
  });

  test('a subset from a wildcard is signed at the wildcard (RFC 4035 §3.1.3.3) and validates', () => {
    const p = process([WILD]);
    const m = decodeMessage(p.ask('host.wild.example.com', { client: '10.1.0.1' }));
    assert.deepEqual(addresses(m), ['198.51.100.1']);
    const sig = rrsigOf(m.answers.find((r) => r.type === RRType.RRSIG)!.data);
    assert.equal(sig.labels, 3);
    assert.equal(m.answers.find((r) => r.type === RRType.RRSIG)!.name, 'host.wild.example.com.');
    assertValidates(m, parseName('*.wild.example.com.'));
    // The proof that no closer name exists is still there.
    assert.ok(m.authority.some((r) => r.type === RRType.NSEC));
  });

  test('a policy that leaves the RRset out answers the whole RRset signed (a NODATA could not be proved)', () => {
    const slots = [61_000, 61_001, 61_002];
    for (const s of slots) processHealth.set(s, HEALTH_DOWN);
    const p = process([
      {
        owner: parseName('www.example.com.'),
        type: 'A',
        policy: 'ordered',
        data: { candidates: ['192.0.2.1', '192.0.2.2', '192.0.2.3'], slots, whenAllDown: 'None' },
      },
    ]);
    const signedAnswer = decodeMessage(p.ask('www.example.com', { client: '10.9.0.1' }));
    assert.equal(addresses(signedAnswer).length, 3);
    assertValidates(signedAnswer, parseName('www.example.com.'));
    const plain = decodeMessage(p.ask('www.example.com', { client: '10.9.0.1', dnssecOk: false }));
    assert.deepEqual(addresses(plain), []);
    // One candidate back up: the signed answer is that candidate, signed.
    processHealth.set(slots[1]!, HEALTH_UP);
    const one = decodeMessage(p.ask('www.example.com', { client: '10.9.0.1' }));
    assert.deepEqual(addresses(one), ['192.0.2.2']);
    assertValidates(one, parseName('www.example.com.'));
  });

  test('a steady state signs each subset once', () => {
    const p = process([BY_SUBNET]);
    for (let i = 0; i < 5; i++) {
      p.ask('www.example.com', { client: '10.1.0.1' });
      p.ask('www.example.com', { client: '10.2.0.1' });
    }
    assert.equal(p.dnssec.synthesizedSigned, 2);
    assert.equal(p.dnssec.synthesizedHits, 8);
  });
});

describe('signatures made at answer time: the cache', () => {
  const subset = (...addresses: string[]): ServedRRset => ({
    owner: parseName('www.example.com.'),
    type: RRType.A,
    ttl: 300,
    rdata: addresses.map((a) => parseRdata('A', a, origin)),
  });

  test('is keyed by the records, not their order', () => {
    const d = new ZoneDnssec(origin, signedData());
    const one = d.signSynthesized(subset('192.0.2.2', '192.0.2.3'))!;
    const two = d.signSynthesized(subset('192.0.2.3', '192.0.2.2'))!;
    assert.equal(one, two);
    assert.equal(d.synthesizedSigned, 1);
  });

  test('holds at most its bound, least recently used out, and signs again what it dropped', () => {
    const d = new ZoneDnssec(origin, signedData(), 2);
    const a = d.signSynthesized(subset('192.0.2.1'))!;
    d.signSynthesized(subset('192.0.2.2'));
    d.signSynthesized(subset('192.0.2.1')); // a is now the most recently used
    d.signSynthesized(subset('192.0.2.3')); // drops .2
    assert.equal(d.synthesizedCached, 2);
    assert.equal(d.synthesizedSigned, 3);
    // Many distinct subsets (a tenant with many candidates): the cache stays at its bound.
    for (let i = 0; i < 50; i++) d.signSynthesized(subset(`192.0.2.${10 + i}`));
    assert.equal(d.synthesizedCached, 2);
    assert.equal(d.synthesizedSigned, 53);
    // A signature made again after being dropped is the same bytes.
    const again = d.signSynthesized(subset('192.0.2.1'))!;
    assert.notEqual(again, a);
    assert.deepEqual(again.wire, a.wire);
    assert.equal(d.synthesizedSigned, 54);
  });

  test('with a bound of 0 signs every answer', () => {
    const d = new ZoneDnssec(origin, signedData(), 0);
    d.signSynthesized(subset('192.0.2.1'));
    d.signSynthesized(subset('192.0.2.1'));
    assert.equal(d.synthesizedSigned, 2);
    assert.equal(d.synthesizedCached, 0);
  });
});
