/**
 * The DNSSEC material of a signed zone as the server answers from it: the RRSIG RRsets by owner and
 * covered type, the NSEC or NSEC3 chain, and the proofs of RFC 4035 §3.1.3 (NSEC) and RFC 5155 §7.2
 * (NSEC3) picked from them. Built from the signer's output (`signZone`, deterministic per serial and
 * signing time, ADR 0021); the records are kept as wire RDATA, written to responses unchanged.
 */

import { canonicalRdata } from '../dns/dnssec/canonical.ts';
import { base32hex, type Nsec3Params, nsec3Hash, typeBitmaps } from '../dns/dnssec/denial.ts';
import type { DnssecKey } from '../dns/dnssec/keys.ts';
import { encodeRrsig, signRRset } from '../dns/dnssec/rrsig.ts';
import { canonicalSortKey, type Name, nameKey, stripFirstLabel } from '../dns/name.ts';
import type { Rdata } from '../dns/rdata.ts';
import { RRType } from '../dns/rrtype.ts';
import { signatureWindow, type WindowPolicy } from '../zones/dnssec-window.ts';
import type { ServedRRset } from './served-rrset.ts';

/** One record the signer made (RRSIG, NSEC, NSEC3, DNSKEY, NSEC3PARAM), RDATA in wire form. */
export interface SignedRecordData {
  owner: Name;
  ttl: number;
  type: number;
  rdata: Uint8Array;
}

/**
 * What a process needs to answer a zone signed: plain data (it crosses to DNS threads by
 * structured clone). `signing` is present where synthesized answers (ALIAS) are signed where they are made.
 */
export interface ZoneDnssecData {
  denial: 'NSEC' | 'NSEC3';
  nsec3?: Nsec3Params;
  /** The signer's records (every RRSIG, NSEC/NSEC3, DNSKEY, NSEC3PARAM). */
  records: SignedRecordData[];
  /** The zone-signing keys and the window rule, to sign answers synthesized at query time. */
  signing?: { keys: DnssecKey[]; signedAt: number; policy: WindowPolicy };
}

/**
 * What the answer algorithm needs of a signed zone's DNSSEC material (the optional `dnssec` member of
 * `ZoneView`).
 */
export interface ZoneDnssecView {
  /** The RRSIG RRset covering (owner, type); undefined when the RRset is not signed (glue, NS at a cut). */
  rrsig(key: string, type: number): ServedRRset | undefined;
  /** The denial records and their RRSIGs that prove `proof` (RFC 4035 §3.1.3, RFC 5155 §7.2). */
  prove(proof: DenialProof): ServedRRset[];
  /**
   * The RRSIG of an RRset made at answer time (an ALIAS owner's addresses, or the subset of a steered
   * RRset a selection policy chose); undefined when the zone cannot sign here.
   */
  signSynthesized?(rrset: ServedRRset, use?: SynthesizedUse): ServedRRset | undefined;
  /**
   * The proof of a NODATA made at answer time at an ALIAS owner (`ownerKey`) for an address type its
   * target has none of; empty when the zone cannot sign here (docs/dnssec.md, ADR 0028).
   */
  proveSynthesizedNodata?(ownerKey: string, type: number): ServedRRset[];
  /** The earliest expiration (seconds since the epoch) of the RRSIGs served now (a metric). */
  readonly earliestExpiration?: number | undefined;
}

/** What a signature made at answer time is for: a steered subset, ALIAS addresses, an ALIAS NODATA proof. */
export type SynthesizedUse = 'steered' | 'alias' | 'alias-nodata';

/** Told of every signature asked for at answer time: taken from the cache (`kept`) or signed. */
export type SynthesizedSignatureListener = (use: SynthesizedUse, kept: boolean) => void;

const synthesizedListeners = new Set<SynthesizedSignatureListener>();

/**
 * Listens to the signatures made at answer time in this process, every zone (the metric
 * `zonekeeper_dnssec_synthesized_signatures_total`); returns the function that stops listening.
 */
export function onSynthesizedSignature(listener: SynthesizedSignatureListener): () => void {
  synthesizedListeners.add(listener);
  return () => synthesizedListeners.delete(listener);
}

function told(use: SynthesizedUse, kept: boolean): void {
  for (const listener of synthesizedListeners) listener(use, kept);
}

/**
 * What a negative or synthesized answer must prove. Names are `nameKey`s. `encloser`: the closest
 * encloser (RFC 4592 §3.3.1, RFC 5155 §7.2.1) — the deepest existing ancestor of `qname`.
 */
export type DenialProof =
  /** RFC 4035 §3.1.3.2, RFC 5155 §7.2.2: no such name, and no wildcard that could have matched. */
  | { kind: 'nxdomain'; qname: string; encloser: string }
  /** RFC 4035 §3.1.3.1, RFC 5155 §7.2.3/§7.2.4: the name exists (with records) but not the type. */
  | { kind: 'nodata'; qname: string }
  /** An empty non-terminal: NSEC covers it (RFC 4035 §3.1.3.2 note); NSEC3 matches it (RFC 5155 §7.2.3). */
  | { kind: 'ent'; qname: string }
  /** RFC 4035 §3.1.3.3, RFC 5155 §7.2.6: a wildcard answered: no closer match exists. */
  | { kind: 'wildcard'; qname: string; encloser: string }
  /** RFC 4035 §3.1.3.4, RFC 5155 §7.2.5: a wildcard matched, without the type. */
  | { kind: 'wildcard-nodata'; qname: string; encloser: string }
  /** RFC 4035 §3.1.4 / RFC 5155 §7.2.7: a delegation without DS (insecure). */
  | { kind: 'no-ds'; cut: string };

const RAW: Rdata = { type: 'TXT', strings: [] };

/** An RRset of signer records, written from its wire RDATA (`wire` is set, so `rdata` is never encoded). */
/**
 * Signatures made at answer time kept per zone (`ZoneDnssec.signSynthesized`): a steady state of steered
 * subsets and ALIAS addresses signs each once. Bounded because the subsets of a steered RRset are
 * combinatorial (up to 2^64 for the 64 candidates a steered set may hold): past the bound the least
 * recently used signature is dropped, and an answer whose signature is not kept is signed again.
 */
export const SYNTHESIZED_SIGNATURE_CACHE_ENTRIES = 1024;

function rawRRset(owner: Name, type: number, ttl: number, wires: Uint8Array[]): ServedRRset {
  return { owner, type, ttl, rdata: wires.map(() => RAW), wire: wires, dnssec: true };
}

export class ZoneDnssec implements ZoneDnssecView {
  readonly data: ZoneDnssecData;
  private readonly originKey: string;
  /** The signer's name of RRSIGs made here: the DNSKEY owner (RFC 4034 §3.1.7), found once. */
  private readonly signerName: Name;
  /** RRSIGs by owner key, then covered type. */
  private readonly sigs = new Map<string, Map<number, ServedRRset>>();
  /** RRsets of signer records that belong at names of the zone (DNSKEY, NSEC3PARAM, NSEC). */
  readonly nodeRRsets: ServedRRset[] = [];
  /** NSEC: by owner key, and owners' canonical sort keys in order (for covering). */
  private readonly nsecByKey = new Map<string, ServedRRset>();
  private nsecOrder: { sort: string; key: string }[] = [];
  /** NSEC3: by hash label, and labels in order (base32hex keeps the hash order). */
  private readonly nsec3ByLabel = new Map<string, ServedRRset>();
  private nsec3Order: string[] = [];
  /** Every NSEC3 RRset and every RRSIG RRset, for zone transfers. */
  readonly transferRRsets: ServedRRset[] = [];
  /** The earliest expiration of the zone's RRSIGs (seconds since the epoch; RFC 4034 §3.1.5), for metrics. */
  readonly earliestExpiration: number | undefined;
  /**
   * RRSIG RRsets made by `signSynthesized`, by owner, type, TTL and the RRset's canonical RDATA, least
   * recently used first. The window is fixed per instance (one signing time), so it is not in the key.
   */
  private readonly synthesized = new Map<string, ServedRRset>();
  private readonly synthesizedLimit: number;
  /** `signSynthesized` answered from its cache / signed (counted for tests and metrics). */
  synthesizedHits = 0;
  synthesizedSigned = 0;

  constructor(origin: Name, data: ZoneDnssecData, synthesizedLimit = SYNTHESIZED_SIGNATURE_CACHE_ENTRIES) {
    this.data = data;
    this.synthesizedLimit = synthesizedLimit;
    this.originKey = nameKey(origin);
    const groups = new Map<string, { owner: Name; type: number; ttl: number; wires: Uint8Array[] }>();
    let earliest: number | undefined;
    let signer: Name | undefined;
    for (const r of data.records) {
      if (signer === undefined && r.type === RRType.DNSKEY) signer = r.owner;
      if (r.type === RRType.RRSIG) {
        const expiration = new DataView(r.rdata.buffer, r.rdata.byteOffset, r.rdata.byteLength).getUint32(8);
        if (earliest === undefined || expiration < earliest) earliest = expiration;
      }
      // RRSIGs are grouped by covered type (RFC 4034 §3.1.1: the first two octets of the RDATA).
      const sub = r.type === RRType.RRSIG ? (r.rdata[0]! << 8) | r.rdata[1]! : 0;
      const id = `${nameKey(r.owner)}\u0000${r.type}\u0000${sub}`;
      const group = groups.get(id);
      if (group) group.wires.push(r.rdata);
      else groups.set(id, { owner: r.owner, type: r.type, ttl: r.ttl, wires: [r.rdata] });
    }
    this.signerName = signer ?? this.originKey;
    for (const g of groups.values()) {
      const rrset = rawRRset(g.owner, g.type, g.ttl, g.wires);
      const key = nameKey(g.owner);
      if (g.type === RRType.RRSIG) {
        const covered = (g.wires[0]![0]! << 8) | g.wires[0]![1]!;
        let byType = this.sigs.get(key);
        if (!byType) {
          byType = new Map();
          this.sigs.set(key, byType);
        }
        byType.set(covered, rrset);
        this.transferRRsets.push(rrset);
      } else if (g.type === RRType.NSEC3) {
        const label = key.slice(0, key.indexOf('.'));
        this.nsec3ByLabel.set(label, rrset);
        this.transferRRsets.push(rrset);
      } else {
        if (g.type === RRType.NSEC) this.nsecByKey.set(key, rrset);
        this.nodeRRsets.push(rrset);
      }
    }
    this.nsecOrder = [...this.nsecByKey.values()]
      .map((r) => ({ sort: canonicalSortKey(r.owner), key: nameKey(r.owner) }))
      .sort((a, b) => (a.sort < b.sort ? -1 : a.sort > b.sort ? 1 : 0));
    this.nsec3Order = [...this.nsec3ByLabel.keys()].sort();
    this.earliestExpiration = earliest;
  }

  rrsig(key: string, type: number): ServedRRset | undefined {
    return this.sigs.get(key)?.get(type);
  }

  prove(proof: DenialProof): ServedRRset[] {
    const out: ServedRRset[] = [];
    const add = (rrset: ServedRRset | undefined) => {
      if (!rrset || out.includes(rrset)) return;
      out.push(rrset);
      const sig = this.rrsig(nameKey(rrset.owner), rrset.type);
      if (sig) out.push(sig);
    };
    if (this.data.denial === 'NSEC') {
      switch (proof.kind) {
        case 'nxdomain':
          add(this.nsecCovering(proof.qname));
          add(this.nsecCovering(`*.${proof.encloser}`));
          break;
        case 'nodata':
          add(this.nsecByKey.get(proof.qname));
          break;
        case 'ent':
        case 'wildcard':
          add(this.nsecCovering(proof.qname));
          break;
        case 'wildcard-nodata':
          add(this.nsecCovering(proof.qname));
          add(this.nsecByKey.get(`*.${proof.encloser}`));
          break;
        case 'no-ds':
          add(this.nsecByKey.get(proof.cut));
          break;
      }
      return out;
    }
    switch (proof.kind) {
      case 'nxdomain':
        // RFC 5155 §7.2.2: the closest encloser proof (§7.2.1) and the wildcard at it covered.
        add(this.nsec3Matching(proof.encloser));
        add(this.nsec3Covering(nextCloser(proof.qname, proof.encloser)));
        add(this.nsec3Covering(`*.${proof.encloser}`));
        break;
      case 'nodata':
      case 'ent':
        add(this.nsec3Matching(proof.qname));
        break;
      case 'wildcard':
        add(this.nsec3Covering(nextCloser(proof.qname, proof.encloser)));
        break;
      case 'wildcard-nodata':
        add(this.nsec3Matching(proof.encloser));
        add(this.nsec3Covering(nextCloser(proof.qname, proof.encloser)));
        add(this.nsec3Matching(`*.${proof.encloser}`));
        break;
      case 'no-ds':
        add(this.nsec3Matching(proof.cut));
        break;
    }
    return out;
  }

  /**
   * The NSEC whose owner is the last one at or before `key` in canonical order (RFC 4034 §6.1): it
   * covers `key` when `key` does not exist. The chain wraps around to the apex's NSEC.
   */
  nsecCovering(key: string): ServedRRset | undefined {
    const order = this.nsecOrder;
    if (order.length === 0) return undefined;
    const sort = canonicalSortKey(key);
    let lo = 0;
    let hi = order.length; // first index whose sort key is > sort
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (order[mid]!.sort <= sort) lo = mid + 1;
      else hi = mid;
    }
    const at = lo === 0 ? order.length - 1 : lo - 1;
    return this.nsecByKey.get(order[at]!.key);
  }

  private hashLabel(key: string): string {
    return base32hex(nsec3Hash(key, this.data.nsec3!));
  }

  /** The NSEC3 whose owner is the hash of `key` (RFC 5155 §7.2.1 "matches"). */
  nsec3Matching(key: string): ServedRRset | undefined {
    return this.nsec3ByLabel.get(this.hashLabel(key));
  }

  /** The NSEC3 whose owner hash precedes `key`'s hash with the next hash after it (RFC 5155 §7.2.1 "covers"). */
  nsec3Covering(key: string): ServedRRset | undefined {
    const order = this.nsec3Order;
    if (order.length === 0) return undefined;
    const label = this.hashLabel(key);
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (order[mid]! < label) lo = mid + 1;
      else hi = mid;
    }
    const at = lo === 0 ? order.length - 1 : lo - 1;
    return this.nsec3ByLabel.get(order[at]!);
  }

  /**
   * Signs an RRset made at answer time (an ALIAS owner's A/AAAA, or the subset of a steered RRset a
   * selection chose; ADR 0021) with the zone-signing keys and the window of its owner and type at the
   * serial's signing time: deterministic, so every process makes the same RRSIG for the same records,
   * whatever their order (RFC 4034 §6.3 orders them for signing). Kept in a bounded cache (least
   * recently used out, `SYNTHESIZED_SIGNATURE_CACHE_ENTRIES`), so a steady state signs each RRset once.
   */
  signSynthesized(rrset: ServedRRset, use: SynthesizedUse = 'alias'): ServedRRset | undefined {
    const signing = this.data.signing;
    if (!signing || signing.keys.length === 0) return undefined;
    const rdatas = rrset.rdata.map((r) => canonicalRdata(r));
    const id = `${nameKey(rrset.owner)}\u0000${rrset.type}\u0000${rrset.ttl}\u0000${rdatas
      .map((r) => Buffer.from(r.buffer, r.byteOffset, r.byteLength).toString('base64'))
      .sort()
      .join(',')}`;
    const cache = this.synthesized;
    const kept = cache.get(id);
    if (kept !== undefined) {
      this.synthesizedHits++;
      told(use, true);
      // Most recently used last.
      cache.delete(id);
      cache.set(id, kept);
      return kept;
    }
    const window = signatureWindow(signing.signedAt, rrset.owner, rrset.type, signing.policy);
    const toSign = { owner: rrset.owner, type: rrset.type, ttl: rrset.ttl, rdatas };
    const signer = this.signerName;
    const wires = signing.keys.map((key) => encodeRrsig(signRRset(toSign, key, signer, window)));
    const sig = rawRRset(rrset.owner, RRType.RRSIG, rrset.ttl, wires);
    this.synthesizedSigned++;
    told(use, false);
    if (this.synthesizedLimit > 0) {
      if (cache.size >= this.synthesizedLimit) cache.delete(cache.keys().next().value!);
      cache.set(id, sig);
    }
    return sig;
  }

  /**
   * A NODATA made at answer time at an ALIAS owner (ADR 0028): the target has no `type` (A or AAAA),
   * which the chain's record at the owner lists as what may be synthesized there. The proof is that
   * record with `type` taken out of its type bit map — the same owner, the same next name (NSEC) or next
   * hashed owner (NSEC3), so it denies nothing else the chain does not — signed here with the
   * zone-signing keys in the window of the chain's record: the online signing of RFC 4470 §2 applied
   * to a bit map (the NODATA form of compact denial, RFC 9824 §3, without its narrowed next name),
   * deterministic like every signature here (ADR 0021). A type the bit map does not list is proven by
   * the chain's own record. Kept in the same bounded cache as `signSynthesized`.
   */
  proveSynthesizedNodata(ownerKey: string, type: number): ServedRRset[] {
    const signing = this.data.signing;
    const held = this.data.denial === 'NSEC' ? this.nsecByKey.get(ownerKey) : this.nsec3Matching(ownerKey);
    const wire = held?.wire?.[0];
    if (!held || !wire || !signing || signing.keys.length === 0) return [];
    const narrowed = withoutType(wire, this.data.denial, type);
    if (!narrowed) {
      const sig = this.rrsig(nameKey(held.owner), held.type);
      return sig ? [held, sig] : [held];
    }
    const rrset = rawRRset(held.owner, held.type, held.ttl, [narrowed]);
    const id = `\u0001${nameKey(held.owner)}\u0000${held.type}\u0000${type}`;
    const cache = this.synthesized;
    const kept = cache.get(id);
    if (kept !== undefined) {
      this.synthesizedHits++;
      told('alias-nodata', true);
      cache.delete(id);
      cache.set(id, kept);
      return [rrset, kept];
    }
    const window = signatureWindow(signing.signedAt, held.owner, held.type, signing.policy);
    const toSign = { owner: held.owner, type: held.type, ttl: held.ttl, rdatas: [narrowed] };
    const wires = signing.keys.map((key) => encodeRrsig(signRRset(toSign, key, this.signerName, window)));
    const sig = rawRRset(held.owner, RRType.RRSIG, held.ttl, wires);
    this.synthesizedSigned++;
    told('alias-nodata', false);
    if (this.synthesizedLimit > 0) {
      if (cache.size >= this.synthesizedLimit) cache.delete(cache.keys().next().value!);
      cache.set(id, sig);
    }
    return [rrset, sig];
  }

  /** Signatures `signSynthesized` keeps now (at most its bound). */
  get synthesizedCached(): number {
    return this.synthesized.size;
  }
}

/**
 * NSEC or NSEC3 RDATA with `type` taken out of its type bit map (RFC 4034 §4.1.2, RFC 5155 §3.2);
 * undefined when the bit map does not list it. The fields before the bit map are kept as they are.
 */
export function withoutType(rdata: Uint8Array, kind: 'NSEC' | 'NSEC3', type: number): Uint8Array | undefined {
  let at = 0;
  if (kind === 'NSEC') {
    // The next owner name, uncompressed (RFC 4034 §4.1.1): labels up to the root's empty one.
    while (at < rdata.length && rdata[at] !== 0) at += rdata[at]! + 1;
    at++;
  } else {
    // Hash algorithm, flags, iterations, salt length and salt, hash length and next hashed owner.
    at = 5 + rdata[4]!;
    at += 1 + rdata[at]!;
  }
  const types: number[] = [];
  for (let i = at; i + 1 < rdata.length; ) {
    const block = rdata[i]!;
    const length = rdata[i + 1]!;
    for (let octet = 0; octet < length; octet++)
      for (let bit = 0; bit < 8; bit++)
        if (rdata[i + 2 + octet]! & (0x80 >>> bit)) types.push(block * 256 + octet * 8 + bit);
    i += 2 + length;
  }
  if (!types.includes(type)) return undefined;
  const maps = typeBitmaps(types.filter((t) => t !== type));
  const out = new Uint8Array(at + maps.length);
  out.set(rdata.subarray(0, at));
  out.set(maps, at);
  return out;
}

/** The next closer name (RFC 5155 §1.3): `qname` with one label more than its closest encloser. */
export function nextCloser(qname: string, encloser: string): string {
  let name = qname;
  for (;;) {
    const parent = stripFirstLabel(name);
    if (parent === encloser || parent === name) return name;
    name = parent;
  }
}
