/**
 * The incremental signer against the reference: after every step of a random sequence of changes
 * (names and types added and removed, empty non-terminals made and undone, delegations with DS and
 * glue made and undone, wildcards, ALIAS owners, TTLs, the SOA's MINIMUM, signing times crossing
 * epochs, a key added), the incremental result is the whole re-sign of the same content at the same
 * signing time, record for record and byte for byte (ADR 0021: signatures are deterministic).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NSEC3_RFC9276 } from '../dns/dnssec/denial.ts';
import { DNSKEY_FLAGS, type DnssecKey, generateDnssecKey } from '../dns/dnssec/keys.ts';
import { bytesToHex } from '../dns/hex.ts';
import { parseRdata } from '../dns/rdata.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';
import { IncrementalSigner } from './dnssec-incremental.ts';
import {
  type Denial,
  type SignedRecord,
  type SigningKeys,
  signZone,
  type ZoneToSign,
} from './dnssec-signer.ts';
import { DEFAULT_WINDOW_POLICY, signatureWindow, type WindowPolicy } from './dnssec-window.ts';
import type { RRsetData } from './rrset.ts';

const ORIGIN = 'inc.test.';
/** A short period, so that signing times a few hours apart move some RRsets to a new epoch. */
const POLICY: WindowPolicy = { refreshSeconds: 6 * 3600, backdateSeconds: 600 };

/** xorshift32: the sequences are the same on every run (the seed is in the test name). */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x1_0000_0000;
  };
}

const LABELS = ['a', 'b', 'c', 'ent', 'x', '*', 'Mixed', 'z9'];
const TYPES: RecordTypeName[] = ['A', 'AAAA', 'TXT', 'MX', 'NS', 'DS', 'ALIAS', 'CNAME'];

function value(type: RecordTypeName, n: number): string {
  switch (type) {
    case 'A':
      return `192.0.2.${n % 250}`;
    case 'AAAA':
      return `2001:db8::${n % 250}`;
    case 'TXT':
      return `"v${n}"`;
    case 'MX':
      return `${n % 20} mail.example.`;
    case 'NS':
      return `ns${n % 3}.other.example.`;
    case 'DS':
      return `${1000 + n} 13 2 ${'ab'.repeat(32)}`;
    case 'ALIAS':
    case 'CNAME':
      return `t${n % 5}.example.`;
    default:
      throw new Error(type);
  }
}

function text(records: readonly SignedRecord[]): string {
  return records.map((r) => `${r.owner} ${r.ttl} ${r.type} ${bytesToHex(r.rdata)} ${r.text}`).join('\n');
}

function randomName(rnd: () => number): string {
  const depth = 1 + Math.floor(rnd() * 3);
  const labels: string[] = [];
  for (let i = 0; i < depth; i++) {
    let label = LABELS[Math.floor(rnd() * LABELS.length)]!;
    // A wildcard label only leftmost (RFC 4592 §2.1.1).
    if (label === '*' && i !== 0) label = 'w';
    labels.push(label);
  }
  return `${labels.join('.')}.${ORIGIN}`;
}

function run(denial: Denial, seed: number, steps: number, algorithm: 13 | 15) {
  const rnd = random(seed);
  const csk = generateDnssecKey(algorithm, DNSKEY_FLAGS.KSK);
  const zsk = generateDnssecKey(algorithm, DNSKEY_FLAGS.ZSK);
  let keys: SigningKeys = { keySigning: [csk], zoneSigning: [csk] };
  const rrsets = new Map<string, RRsetData>();
  const put = (owner: string, type: RecordTypeName, ttl: number, values: string[]) =>
    rrsets.set(`${owner.toLowerCase()}|${type}`, {
      owner,
      type,
      ttl,
      rdata: values.map((v) => parseRdata(type, v, ORIGIN)),
    });
  put(ORIGIN, 'NS', 3600, ['ns1.inc.test.', 'ns2.inc.test.']);
  put(`ns1.${ORIGIN}`, 'A', 3600, ['192.0.2.53']);
  let soa = {
    ttl: 3600,
    mname: `ns1.${ORIGIN}`,
    rname: `hostmaster.${ORIGIN}`,
    refresh: 3600,
    retry: 600,
    expire: 1209600,
    minimum: 300,
  };
  let signedAt = 1_800_000_000;
  const signer = new IncrementalSigner(ORIGIN, denial, POLICY);
  for (let step = 0; step < steps; step++) {
    const r = rnd();
    if (r < 0.45 || rrsets.size < 4) {
      const type = TYPES[Math.floor(rnd() * TYPES.length)]!;
      const n = Math.floor(rnd() * 1000);
      put(
        // Now and then at the apex (beside SOA, NS, DNSKEY), never replacing the apex NS.
        rnd() < 0.08 && type !== 'NS' ? ORIGIN : randomName(rnd),
        type,
        rnd() < 0.8 ? 300 : 60,
        rnd() < 0.3 ? [value(type, n), value(type, n + 1)] : [value(type, n)],
      );
    } else if (r < 0.8) {
      const held = [...rrsets.keys()].filter((k) => !k.startsWith(`${ORIGIN}|NS`));
      if (held.length > 0) rrsets.delete(held[Math.floor(rnd() * held.length)]!);
    } else if (r < 0.87) {
      // Every RRset of a name, with what is below it (a subtree removed at once).
      const held = [...rrsets.values()].filter((s) => s.owner !== ORIGIN);
      const top = held[Math.floor(rnd() * held.length)]?.owner.toLowerCase();
      if (top) for (const [k, s] of rrsets) if (s.owner.toLowerCase().endsWith(top)) rrsets.delete(k);
    } else if (r < 0.9) {
      soa = { ...soa, minimum: soa.minimum === 300 ? 120 : 300 };
    } else if (r < 0.92) {
      keys =
        keys.zoneSigning[0] === csk
          ? { keySigning: [csk], zoneSigning: [zsk] }
          : { keySigning: [csk], zoneSigning: [csk] };
    } else {
      // A TTL changed.
      const held = [...rrsets.values()];
      const s = held[Math.floor(rnd() * held.length)]!;
      put(s.owner, s.type, s.ttl === 300 ? 301 : 300, []);
      rrsets.get(`${s.owner.toLowerCase()}|${s.type}`)!.rdata = s.rdata;
    }
    signedAt += Math.floor(rnd() * 3 * 3600);
    const zone: ZoneToSign = {
      origin: ORIGIN,
      soa: { ...soa, serial: step + 1 },
      rrsets: [...rrsets.values()],
    };
    const whole = signZone(zone, keys, (s) => signatureWindow(signedAt, s.owner, s.type, POLICY), denial);
    const incremental = signer.sign(zone, keys, signedAt);
    assert.equal(text(incremental), text(whole), `step ${step} (seed ${seed}, ${denial.kind})`);
  }
  return signer;
}

describe('incremental signer equals a whole re-sign', () => {
  for (const denial of [{ kind: 'NSEC' } as const, { kind: 'NSEC3', params: NSEC3_RFC9276 } as const])
    for (const seed of [1, 20261126, 4242])
      test(`${denial.kind}, random changes (seed ${seed})`, () => {
        run(denial, seed, 120, seed === 4242 ? 13 : 15);
      });
});

test('a one-record change signs the changed RRset, the SOA and the denial records it touches', () => {
  const key: DnssecKey = generateDnssecKey(15, DNSKEY_FLAGS.KSK);
  const keys = { keySigning: [key], zoneSigning: [key] };
  const soa = {
    ttl: 3600,
    mname: `ns1.${ORIGIN}`,
    rname: `hostmaster.${ORIGIN}`,
    refresh: 3600,
    retry: 600,
    expire: 1209600,
    minimum: 300,
  };
  const hosts = Array.from({ length: 200 }, (_, i) => ({
    owner: `h${i}.${ORIGIN}`,
    type: 'A' as const,
    ttl: 300,
    rdata: [parseRdata('A', `192.0.2.${i % 250}`, ORIGIN)],
  }));
  for (const denial of [{ kind: 'NSEC' } as const, { kind: 'NSEC3', params: NSEC3_RFC9276 } as const]) {
    const signer = new IncrementalSigner(ORIGIN, denial, DEFAULT_WINDOW_POLICY);
    const signedAt = 1_800_000_000;
    signer.sign({ origin: ORIGIN, soa: { ...soa, serial: 1 }, rrsets: hosts }, keys, signedAt);
    assert.ok(signer.stats.signed > 200);
    // A changed address: its RRSIG and the SOA's; no denial record changes.
    const changed = hosts.map((h, i) =>
      i === 7 ? { ...h, rdata: [parseRdata('A', '192.0.2.99', ORIGIN)] } : h,
    );
    signer.sign({ origin: ORIGIN, soa: { ...soa, serial: 2 }, rrsets: changed }, keys, signedAt + 60);
    assert.deepEqual(signer.stats, { signed: 2, denialChanged: 0, rrsetsChanged: 2 });
    // A new name (an address under a new ENT): its RRset, the SOA, its denial record and its
    // predecessor's (NSEC); with NSEC3 the owner's and the ENT's and their predecessors'.
    const added = [...changed, { ...hosts[0]!, owner: `new.ent.${ORIGIN}` }];
    signer.sign({ origin: ORIGIN, soa: { ...soa, serial: 3 }, rrsets: added }, keys, signedAt + 120);
    const { signed, denialChanged } = signer.stats;
    if (denial.kind === 'NSEC') assert.deepEqual({ signed, denialChanged }, { signed: 4, denialChanged: 2 });
    else {
      assert.ok(denialChanged >= 3 && denialChanged <= 4, `${denialChanged}`);
      assert.equal(signed, 2 + denialChanged);
    }
  }
});
