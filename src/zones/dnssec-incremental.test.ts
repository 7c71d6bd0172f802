/**
 * The incremental signer against the reference: after every step of a random sequence of changes
 * (names and types added and removed, empty non-terminals made and undone, delegations with DS and
 * glue made and undone, wildcards, ALIAS owners, TTLs, the SOA's MINIMUM, signing times crossing
 * epochs, the keys' state moving between the shapes the key lifecycle makes), the incremental result
 * is the whole re-sign of the same content at the same signing time, record for record and byte for
 * byte (ADR 0021: signatures are deterministic). The key lifecycle itself (dnssec-key-lifecycle.ts)
 * is also run through its rollovers, each serial signed both ways.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { prng } from '../../test/support/prng.ts';
import type { EffectiveDnssec } from '../api/dnssec.ts';
import { NSEC3_RFC9276 } from '../dns/dnssec/denial.ts';
import {
  DNSKEY_FLAGS,
  type DnssecKey,
  dnskeyRdata,
  dsOf,
  generateDnssecKey,
  keyTag,
} from '../dns/dnssec/keys.ts';
import { bytesToHex } from '../dns/hex.ts';
import { parseRdata, printRdata } from '../dns/rdata.ts';
import { type RecordTypeName, RRType } from '../dns/rrtype.ts';
import { IncrementalSigner } from './dnssec-incremental.ts';
import { stepKeyLifecycle } from './dnssec-key-lifecycle.ts';
import { generateZoneKeys, type KeySetState, keysAt, nextKeyEvent } from './dnssec-key-set.ts';
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
/** Both denial forms: NSEC, and NSEC3 with the parameters RFC 9276 §3.1 recommends. */
const DENIALS = [{ kind: 'NSEC' } as const, { kind: 'NSEC3', params: NSEC3_RFC9276 } as const];
/** The zone's SOA fields but the serial. */
const SOA = {
  ttl: 3600,
  mname: `ns1.${ORIGIN}`,
  rname: `hostmaster.${ORIGIN}`,
  refresh: 3600,
  retry: 600,
  expire: 1209600,
  minimum: 300,
};

/** `count` A RRsets, h0 to h<count - 1>, one address each (192.0.2.<i mod 250>). */
function manyHosts(count: number): RRsetData[] {
  return Array.from({ length: count }, (_, i) => ({
    owner: `h${i}.${ORIGIN}`,
    type: 'A' as const,
    ttl: 300,
    rdata: [parseRdata('A', `192.0.2.${i % 250}`, ORIGIN)],
  }));
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

/**
 * The keys' states a zone passes through with the built-in key lifecycle (dnssec-key-set.ts `keysAt`),
 * in the `algorithm` and a second one: one CSK without and with CDS/CDNSKEY, Split keys, a ZSK
 * pre-published, signing, retired (RFC 7583 §3.2), an algorithm rollover's Sign phase (new keys sign
 * before they are published, RFC 6781 §4.1.4), its Publish phase, the DS set moved, the old keys
 * published no more; double-KSK (RFC 7583 §3.3.1) with the DS set on the old, both and the new KSK; a
 * key mode change (CSK to Split); no DS set (CDS/CDNSKEY gone); the RFC 8078 §4 delete CDS/CDNSKEY.
 */
function keyShapes(algorithm: 13 | 15): SigningKeys[] {
  const other = algorithm === 13 ? 15 : 13;
  const csk = generateDnssecKey(algorithm, DNSKEY_FLAGS.KSK);
  const ksk = generateDnssecKey(algorithm, DNSKEY_FLAGS.KSK);
  const ksk2 = generateDnssecKey(algorithm, DNSKEY_FLAGS.KSK);
  const zsk = generateDnssecKey(algorithm, DNSKEY_FLAGS.ZSK);
  const zsk2 = generateDnssecKey(algorithm, DNSKEY_FLAGS.ZSK);
  const newKsk = generateDnssecKey(other, DNSKEY_FLAGS.KSK);
  const newZsk = generateDnssecKey(other, DNSKEY_FLAGS.ZSK);
  return [
    { keySigning: [csk], zoneSigning: [csk] },
    { keySigning: [csk], zoneSigning: [csk], published: [csk], parent: [csk] },
    { keySigning: [ksk], zoneSigning: [zsk], published: [ksk, zsk], parent: [ksk] },
    { keySigning: [ksk], zoneSigning: [zsk], published: [ksk, zsk, zsk2], parent: [ksk] },
    { keySigning: [ksk], zoneSigning: [zsk2], published: [ksk, zsk, zsk2], parent: [ksk] },
    { keySigning: [ksk], zoneSigning: [zsk2], published: [ksk, zsk2], parent: [ksk] },
    { keySigning: [ksk, newKsk], zoneSigning: [zsk, newZsk], published: [ksk, zsk], parent: [ksk] },
    {
      keySigning: [ksk, newKsk],
      zoneSigning: [zsk, newZsk],
      published: [ksk, zsk, newKsk, newZsk],
      parent: [ksk],
    },
    {
      keySigning: [ksk, newKsk],
      zoneSigning: [zsk, newZsk],
      published: [ksk, zsk, newKsk, newZsk],
      parent: [newKsk],
    },
    { keySigning: [ksk, newKsk], zoneSigning: [zsk, newZsk], published: [newKsk, newZsk], parent: [newKsk] },
    { keySigning: [newKsk], zoneSigning: [newZsk], published: [newKsk, newZsk], parent: [newKsk] },
    { keySigning: [ksk, ksk2], zoneSigning: [zsk], published: [ksk, ksk2, zsk], parent: [ksk] },
    { keySigning: [ksk, ksk2], zoneSigning: [zsk], published: [ksk, ksk2, zsk], parent: [ksk, ksk2] },
    { keySigning: [ksk, ksk2], zoneSigning: [zsk], published: [ksk, ksk2, zsk], parent: [ksk2] },
    { keySigning: [ksk2], zoneSigning: [zsk], published: [ksk2, zsk], parent: [ksk2] },
    { keySigning: [csk, ksk], zoneSigning: [csk, zsk], published: [csk, ksk, zsk], parent: [csk] },
    { keySigning: [ksk], zoneSigning: [zsk], published: [ksk, zsk], parent: [] },
    // Signing turned off (RFC 8078 §4): the delete CDS/CDNSKEY in place of the DS set, and back.
    { keySigning: [ksk], zoneSigning: [zsk], published: [ksk, zsk], parent: [ksk], deleteAtParent: true },
    { keySigning: [csk], zoneSigning: [csk], published: [csk], parent: [csk], deleteAtParent: true },
  ];
}

function run(denial: Denial, seed: number, steps: number, algorithm: 13 | 15) {
  const rnd = prng(seed);
  const shapes = keyShapes(algorithm);
  let keys: SigningKeys = shapes[0]!;
  const used = new Set<SigningKeys>([keys]);
  let walk = 1;
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
  let soa = SOA;
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
    } else if (r < 0.97) {
      // The keys' state moves: to the next shape of the lifecycle, or to any.
      const at = shapes.indexOf(keys);
      keys = rnd() < 0.6 ? shapes[(at + 1) % shapes.length]! : shapes[Math.floor(rnd() * shapes.length)]!;
      used.add(keys);
    } else {
      // A TTL changed.
      const held = [...rrsets.values()];
      const s = held[Math.floor(rnd() * held.length)]!;
      put(s.owner, s.type, s.ttl === 300 ? 301 : 300, []);
      rrsets.get(`${s.owner.toLowerCase()}|${s.type}`)!.rdata = s.rdata;
    }
    // Besides random moves, the keys walk through every shape in the lifecycle's order.
    if (step % 6 === 5) {
      keys = shapes[walk++ % shapes.length]!;
      used.add(keys);
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
  return { signer, shapes: used.size };
}

describe('incremental signer equals a whole re-sign', () => {
  for (const denial of DENIALS)
    for (const seed of [1, 20261126, 4242])
      test(`${denial.kind}, random changes (seed ${seed})`, () => {
        const { shapes } = run(denial, seed, 120, seed === 4242 ? 13 : 15);
        assert.equal(shapes, keyShapes(13).length, 'the keys took every shape');
      });
});

test('a one-record change signs the changed RRset, the SOA and the denial records it touches', () => {
  const key: DnssecKey = generateDnssecKey(15, DNSKEY_FLAGS.KSK);
  const keys = { keySigning: [key], zoneSigning: [key] };
  const hosts = manyHosts(200);
  for (const denial of DENIALS) {
    const signer = new IncrementalSigner(ORIGIN, denial, DEFAULT_WINDOW_POLICY);
    const signedAt = 1_800_000_000;
    signer.sign({ origin: ORIGIN, soa: { ...SOA, serial: 1 }, rrsets: hosts }, keys, signedAt);
    assert.ok(signer.stats.signed > 200);
    // A changed address: its RRSIG and the SOA's; no denial record changes.
    const changed = hosts.map((h, i) =>
      i === 7 ? { ...h, rdata: [parseRdata('A', '192.0.2.99', ORIGIN)] } : h,
    );
    signer.sign({ origin: ORIGIN, soa: { ...SOA, serial: 2 }, rrsets: changed }, keys, signedAt + 60);
    assert.deepEqual(signer.stats, { signed: 2, denialChanged: 0, rrsetsChanged: 2 });
    // A new name (an address under a new ENT): its RRset, the SOA, its denial record and its
    // predecessor's (NSEC); with NSEC3 the owner's and the ENT's and their predecessors'.
    const added = [...changed, { ...hosts[0]!, owner: `new.ent.${ORIGIN}` }];
    signer.sign({ origin: ORIGIN, soa: { ...SOA, serial: 3 }, rrsets: added }, keys, signedAt + 120);
    const { signed, denialChanged } = signer.stats;
    if (denial.kind === 'NSEC') assert.deepEqual({ signed, denialChanged }, { signed: 4, denialChanged: 2 });
    else {
      assert.ok(denialChanged >= 3 && denialChanged <= 4, `${denialChanged}`);
      assert.equal(signed, 2 + denialChanged);
    }
  }
});

/** The types an RRSIG covers (its first two octets, RFC 4034 §3.1), counted. */
function covered(records: readonly SignedRecord[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const r of records)
    if (r.type === RRType.RRSIG) {
      const type = (r.rdata[0]! << 8) | r.rdata[1]!;
      out.set(type, (out.get(type) ?? 0) + 1);
    }
  return out;
}

test('a change of the keys’ state re-signs exactly what it decides', () => {
  const ksk = generateDnssecKey(13, DNSKEY_FLAGS.KSK);
  const ksk2 = generateDnssecKey(13, DNSKEY_FLAGS.KSK);
  const zsk = generateDnssecKey(13, DNSKEY_FLAGS.ZSK);
  const zsk2 = generateDnssecKey(13, DNSKEY_FLAGS.ZSK);
  const newZsk = generateDnssecKey(15, DNSKEY_FLAGS.ZSK);
  const hosts = manyHosts(40);
  // One content, one serial, one signing time: only the keys' state moves.
  const zone: ZoneToSign = { origin: ORIGIN, soa: { ...SOA, serial: 1 }, rrsets: hosts };
  const signedAt = 1_800_000_000;
  for (const denial of DENIALS) {
    const signer = new IncrementalSigner(ORIGIN, denial, DEFAULT_WINDOW_POLICY);
    let last: SignedRecord[] = [];
    const sign = (keys: SigningKeys) => {
      last = signer.sign(zone, keys, signedAt);
      const whole = signZone(zone, keys, (s) => signatureWindow(signedAt, s.owner, s.type), denial);
      assert.equal(text(last), text(whole), denial.kind);
      return signer.stats;
    };
    /** RRSIGs over everything but the RRsets the key-signing keys sign. */
    const zoneSigned = () => {
      let n = 0;
      for (const [type, count] of covered(last))
        if (type !== RRType.DNSKEY && type !== RRType.CDS && type !== RRType.CDNSKEY) n += count;
      return n;
    };
    const base = { keySigning: [ksk], zoneSigning: [zsk], published: [ksk, zsk], parent: [ksk] };
    sign(base);
    assert.deepEqual(covered(last).get(RRType.CDS), 1, 'CDS signed by the KSK');
    // A ZSK published ahead: the DNSKEY RRset changes, signed again by the KSK; nothing else.
    const prepublished = { ...base, published: [ksk, zsk, zsk2] };
    assert.deepEqual(sign(prepublished), { signed: 1, denialChanged: 0, rrsetsChanged: 1 });
    // The new ZSK signs: every RRset the ZSK signs is signed again, the DNSKEY, CDS, CDNSKEY not.
    const rolled = { ...prepublished, zoneSigning: [zsk2] };
    const stats = sign(rolled);
    assert.deepEqual(stats, { signed: zoneSigned(), denialChanged: 0, rrsetsChanged: 0 });
    assert.ok(stats.signed > 40);
    // The old ZSK unpublished: the DNSKEY RRset again.
    const retired = { ...rolled, published: [ksk, zsk2] };
    assert.deepEqual(sign(retired), { signed: 1, denialChanged: 0, rrsetsChanged: 1 });
    // Double KSK: published (DNSKEY), then signing (DNSKEY, CDS, CDNSKEY by both), then the DS set
    // moved (CDS, CDNSKEY changed, signed by both).
    const kskPublished = { ...retired, published: [ksk, ksk2, zsk2] };
    assert.deepEqual(sign(kskPublished), { signed: 1, denialChanged: 0, rrsetsChanged: 1 });
    const bothSign = { ...kskPublished, keySigning: [ksk, ksk2] };
    assert.deepEqual(sign(bothSign), { signed: 6, denialChanged: 0, rrsetsChanged: 0 });
    const dsMoved = { ...bothSign, parent: [ksk2] };
    assert.deepEqual(sign(dsMoved), { signed: 4, denialChanged: 0, rrsetsChanged: 2 });
    // No DS set: CDS and CDNSKEY leave the apex, whose denial record changes (its bit map).
    const noDs = { ...dsMoved, parent: [] };
    assert.deepEqual(sign(noDs), { signed: 1, denialChanged: 1, rrsetsChanged: 2 });
    assert.equal(covered(last).get(RRType.CDS), undefined);
    // A second algorithm signs (an algorithm rollover's Sign phase): every zone-signed RRset, by both.
    const twoAlgorithms = { ...noDs, zoneSigning: [zsk2, newZsk] };
    const before = zoneSigned();
    assert.deepEqual(sign(twoAlgorithms), { signed: 2 * before, denialChanged: 0, rrsetsChanged: 0 });
    // The same state again: nothing to sign.
    assert.deepEqual(sign(twoAlgorithms), { signed: 0, denialChanged: 0, rrsetsChanged: 0 });
  }
});

describe('incremental signer equals a whole re-sign through the key lifecycle', () => {
  const SPLIT: EffectiveDnssec = {
    algorithm: 'ECDSAP256SHA256',
    denial: 'NSEC',
    keys: 'Split',
    zskLifetimeSeconds: 0,
    kskLifetimeSeconds: 0,
  };
  const T0 = 1_800_000_000;
  /**
   * The lifecycle as the built-in backend runs it (a step after each served serial, a new serial at
   * each recorded event), a small zone changing a little at each serial: every serial is signed
   * incrementally and whole, with the keys' state at its signing time.
   */
  function lifecycle(start: EffectiveDnssec, settings: EffectiveDnssec, denial: Denial, until: number) {
    let state: KeySetState = { keys: generateZoneKeys(start, generateDnssecKey) };
    let signedAt = T0;
    let held: string[] | undefined;
    const signer = new IncrementalSigner(ORIGIN, denial, POLICY);
    const rrsets: RRsetData[] = [
      { owner: ORIGIN, type: 'NS', ttl: 8, rdata: [parseRdata('NS', `ns1.${ORIGIN}`, ORIGIN)] },
      { owner: `ns1.${ORIGIN}`, type: 'A', ttl: 8, rdata: [parseRdata('A', '192.0.2.53', ORIGIN)] },
      { owner: `deep.ent.${ORIGIN}`, type: 'TXT', ttl: 8, rdata: [parseRdata('TXT', '"x"', ORIGIN)] },
      { owner: `sub.${ORIGIN}`, type: 'NS', ttl: 8, rdata: [parseRdata('NS', `ns.sub.${ORIGIN}`, ORIGIN)] },
      { owner: `ns.sub.${ORIGIN}`, type: 'A', ttl: 8, rdata: [parseRdata('A', '192.0.2.54', ORIGIN)] },
    ];
    const soa = {
      ttl: 5,
      mname: `ns1.${ORIGIN}`,
      rname: `hostmaster.${ORIGIN}`,
      refresh: 2,
      retry: 2,
      expire: 1209600,
      minimum: 5,
    };
    const shapes = new Set<string>();
    let serial = 0;
    const signSerial = () => {
      serial++;
      rrsets.push({
        owner: `h${serial}.${ORIGIN}`,
        type: 'A',
        ttl: 8,
        rdata: [parseRdata('A', `192.0.2.${serial % 250}`, ORIGIN)],
      });
      const k = keysAt(state.keys, signedAt);
      const zone: ZoneToSign = { origin: ORIGIN, soa: { ...soa, serial }, rrsets: [...rrsets] };
      const whole = signZone(zone, k, (s) => signatureWindow(signedAt, s.owner, s.type, POLICY), denial);
      assert.equal(text(signer.sign(zone, k, signedAt)), text(whole), `serial ${serial} at ${signedAt - T0}`);
      shapes.add(
        [k.published, k.keySigning, k.zoneSigning, k.parent]
          .map((l) => l.map((x) => keyTag(dnskeyRdata(x))).join())
          .join(' | '),
      );
    };
    signSerial();
    for (let now = T0; now <= T0 + until; now++) {
      const event = nextKeyEvent(state.keys, signedAt);
      if (event !== undefined && event <= now) {
        signedAt = now;
        signSerial();
      }
      const ds = keysAt(state.keys, signedAt).parent.map((key) => printRdata(dsOf(ORIGIN, key)));
      const step = stepKeyLifecycle({
        origin: ORIGIN,
        held: state,
        settings,
        signedAt,
        now,
        ttls: { dnskey: 5, largest: 8, propagation: 2 },
        // A parent that takes the DS set the zone asks for once it is asked.
        parent: (() => {
          held ??= ds;
          if (ds.join() !== held.join()) held = ds;
          return { ds: held, ttl: 3 };
        })(),
        generate: generateDnssecKey,
      });
      if (step.next) state = step.next;
    }
    return shapes.size;
  }
  for (const denial of DENIALS) {
    test(`${denial.kind}: ZSK pre-publication`, () => {
      const settings = { ...SPLIT, zskLifetimeSeconds: 100 };
      assert.ok(lifecycle(settings, settings, denial, 140) >= 3);
    });
    test(`${denial.kind}: algorithm rollover (ECDSA P-256 to Ed25519)`, () => {
      assert.ok(lifecycle(SPLIT, { ...SPLIT, algorithm: 'ED25519' }, denial, 300) >= 4);
    });
    test(`${denial.kind}: double-KSK rollover`, () => {
      const settings = { ...SPLIT, kskLifetimeSeconds: 50 };
      assert.ok(lifecycle(settings, settings, denial, 120) >= 3);
    });
    test(`${denial.kind}: key mode change (CSK to Split and back)`, () => {
      assert.ok(lifecycle({ ...SPLIT, keys: 'CSK' }, SPLIT, denial, 300) >= 4);
      assert.ok(lifecycle(SPLIT, { ...SPLIT, keys: 'CSK' }, denial, 300) >= 4);
    });
  }
});
