import { type Name, nameKey, stripFirstLabel } from '../dns/name.ts';
import { additionalTargets, type Rdata } from '../dns/rdata.ts';
import { isInternalType, RRType } from '../dns/rrtype.ts';
import type { DenialProof, ZoneDnssecView } from './zone-dnssec.ts';
import type { ServedRRset, ZoneNode } from './zone-snapshot.ts';

/**
 * What the answer algorithm reads of one zone: `ZoneSnapshot`, or the view over a zone image
 * (ADR 0020). Keys are `nameKey`s.
 */
export interface ZoneView {
  readonly originKey: string;
  /** RFC 2308 §5: the SOA negative answers carry. */
  readonly negativeSoa: ServedRRset;
  /** Delegation points in the zone: while there are none, lookups skip the search for a cut. */
  readonly cutCount: number;
  /** The name's node, when it holds RRsets. */
  node(key: string): ZoneNode | undefined;
  /** A name without RRsets that has descendants (RFC 4592 §2.2.2). */
  isEmptyNonTerminal(key: string): boolean;
  /**
   * A signed zone's DNSSEC material: RRSIGs and denial proofs for answers to queries with DO set
   * (RFC 4035 §3.1). Absent or undefined: the zone is answered unsigned.
   */
  readonly dnssec?: ZoneDnssecView | undefined;
}

/** The zones served, as the answer algorithm finds them (`ZoneTable`). */
export interface ZoneLookup {
  /** The zone with the longest origin that contains `key`. */
  findZone(key: string): ZoneView | undefined;
}

export const Outcome = {
  Answer: 'answer',
  NoData: 'nodata',
  NxDomain: 'nxdomain',
  Referral: 'referral',
  Refused: 'refused',
  /** A/AAAA at a name with ALIAS: the caller resolves the target and completes the answer. */
  Alias: 'alias',
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

export interface Answer {
  outcome: Outcome;
  /** Authoritative answer (RFC 1034 §4.3.2 step 3); clear on referrals and REFUSED. */
  aa: boolean;
  answer: ServedRRset[];
  authority: ServedRRset[];
  additional: ServedRRset[];
  /**
   * For Outcome.Alias: the owner to answer for, the ALIAS target and its TTL cap; `source`, the
   * wildcard's owner when the ALIAS was synthesised from one (RFC 4592).
   */
  alias?: { owner: Name; target: Name; ttl: number; source?: Name };
  /**
   * DO was set and the answer came (at least in part) from a signed zone: the sections carry RRSIGs
   * and denial proofs (RFC 4035 §3.1). A subset a selection policy chooses is signed where it is chosen.
   */
  signed?: boolean;
  /** For Outcome.Alias in a signed zone with DO: the zone, to sign the synthesized RRset or prove NODATA. */
  aliasZone?: ZoneView;
}

/** CNAME chains longer than this are cut (loop protection; RFC 1034 §3.6.2 warns against loops). */
export const MAX_CNAME_CHAIN = 12;

/**
 * The authoritative answer algorithm of RFC 1034 §4.3.2 with the wildcard rules of RFC 4592 and the
 * negative-answer form of RFC 2308: finds the zone, descends to the name, and produces a referral at a
 * zone cut, the matching RRset, a CNAME (followed through the zones served), a synthesized wildcard
 * answer, NODATA or NXDOMAIN, with NS/MX/SRV targets' addresses in the additional section.
 *
 * With `dnssecOk` (the query's DO bit, RFC 3225), answers from a signed zone carry the RRSIGs of every
 * RRset and the NSEC/NSEC3 proofs of RFC 4035 §3.1.3 / RFC 5155 §7.2: for NXDOMAIN, NODATA (also at
 * an empty non-terminal), wildcard expansions and wildcard NODATA, and for referrals the DS with its
 * RRSIG or the proof that there is none (RFC 4035 §3.1.4). Without it the answer is unchanged.
 */
export function answerQuery(table: ZoneLookup, qname: Name, qtype: number, dnssecOk = false): Answer {
  const result: Answer = { outcome: Outcome.Answer, aa: true, answer: [], authority: [], additional: [] };
  let zone = zoneFor(table, nameKey(qname), qtype);
  if (!zone) return { ...result, outcome: Outcome.Refused, aa: false };
  // The signed zone of the current step, when DO is set (undefined: add nothing).
  const sec = (z: ZoneView): ZoneDnssecView | undefined => {
    const d = dnssecOk ? z.dnssec : undefined;
    if (d) result.signed = true;
    return d;
  };
  let name = qname;
  // Owners already in the answer: a CNAME pointing back to one of them closes a loop (made on the
  // first CNAME: most answers have none).
  let seen: Set<string> | undefined;
  for (let hop = 0; ; hop++) {
    const key = nameKey(name);
    const step = lookup(zone, name, key, qtype);
    if (step.kind === 'referral') {
      // RFC 1034 §4.3.2 step 3b: NS of the cut in authority, addresses (glue) in additional. After a
      // CNAME (step 3a restarted with the canonical name) the answer so far stands and AA still
      // describes the question's name (RFC 1035 §4.1.1), so only a referral for QNAME itself clears AA.
      if (hop === 0) {
        result.outcome = Outcome.Referral;
        result.aa = false;
      }
      result.authority.push(step.ns);
      const d = sec(zone);
      if (d) {
        // RFC 4035 §3.1.4: the DS RRset and its RRSIG, or the proof that the cut has no DS.
        const ds = step.cut.rrsets.get(RRType.DS);
        if (ds) pushSigned(result.authority, ds, d);
        else result.authority.push(...d.prove({ kind: 'no-ds', cut: nameKey(step.cut.owner) }));
      }
      addAddresses(table, step.ns.rdata, result, zone, true, undefined);
      return result;
    }
    if (step.kind === 'nxdomain' || step.kind === 'nodata') {
      // RFC 2308 §2.1/§2.2: after a CNAME, the rcode describes the last name in the chain.
      result.outcome = step.kind === 'nxdomain' ? Outcome.NxDomain : Outcome.NoData;
      result.authority.push(zone.negativeSoa);
      const d = sec(zone);
      if (d) {
        // RFC 4035 §3.1.3: the SOA's RRSIG (at the negative TTL) and the denial proof.
        const sig = d.rrsig(zone.originKey, RRType.SOA);
        if (sig) result.authority.push({ ...sig, ttl: zone.negativeSoa.ttl });
        result.authority.push(...d.prove(step.proof));
      }
      return result;
    }
    if (step.kind === 'alias') {
      result.outcome = Outcome.Alias;
      result.alias =
        step.source === undefined
          ? { owner: name, target: step.target, ttl: step.ttl }
          : { owner: name, target: step.target, ttl: step.ttl, source: step.source };
      if (sec(zone)) result.aliasZone = zone;
      return result;
    }
    if (step.kind === 'answer') {
      const d = sec(zone);
      for (const rrset of step.rrsets) pushSigned(result.answer, rrset, d);
      // RFC 4035 §3.1.3.3: a wildcard expansion proves that no closer name matched.
      if (d && step.proof) result.authority.push(...d.prove(step.proof));
      for (const rrset of step.rrsets) {
        if (HAS_ADDITIONAL_TARGETS.has(rrset.type))
          addAddresses(table, rrset.rdata, result, zone, false, dnssecOk);
      }
      return result;
    }
    // CNAME: RFC 1034 §4.3.2 step 3a — add it and restart with the canonical name.
    const d = sec(zone);
    pushSigned(result.answer, step.cname, d);
    if (d && step.proof) result.authority.push(...d.prove(step.proof));
    seen ??= new Set();
    seen.add(key);
    const target = (step.cname.rdata[0] as Extract<Rdata, { type: 'CNAME' }>).target;
    // RFC 1034 §3.6.2: a loop (the target is already in the answer) or an over-long chain ends the
    // answer here; each RRset appears once.
    if (seen.has(nameKey(target)) || hop + 1 >= MAX_CNAME_CHAIN) break;
    const next = zoneFor(table, nameKey(target), qtype);
    if (!next) break; // out of the zones served: the resolver continues from here
    zone = next;
    name = target;
  }
  return result;
}

/**
 * The zone to answer from: the served zone nearest to the name, except that DS at the apex of a zone
 * delegated from a parent zone served here too is answered from the parent side of the cut, where the
 * DS lives (RFC 4035 §3.1.4.1).
 */
function zoneFor(table: ZoneLookup, key: string, qtype: number): ZoneView | undefined {
  const zone = table.findZone(key);
  if (zone && qtype === RRType.DS && zone.originKey === key && key !== '.') {
    const parent = table.findZone(stripFirstLabel(key));
    if (parent?.node(key)?.cut) return parent;
  }
  return zone;
}

/**
 * Adds an RRset and, from a signed zone, its RRSIG (RFC 4035 §3.1.1); a wildcard expansion carries the
 * wildcard's RRSIG under the expanded owner (RFC 4035 §3.1.3.3; its Labels field tells validators).
 */
function pushSigned(list: ServedRRset[], rrset: ServedRRset, d: ZoneDnssecView | undefined): void {
  list.push(rrset);
  if (!d) return;
  const signedAs = rrset.source ?? rrset;
  const sig = d.rrsig(nameKey(signedAs.owner), signedAs.type);
  if (sig) list.push(rrset.source ? { ...sig, owner: rrset.owner } : sig);
}

/** `proof`: what a signed answer must prove besides its RRSIGs (see DenialProof). */
type Step =
  | { kind: 'answer'; rrsets: ServedRRset[]; proof?: DenialProof }
  | { kind: 'cname'; cname: ServedRRset; proof?: DenialProof }
  | { kind: 'referral'; ns: ServedRRset; cut: ZoneNode }
  | { kind: 'nodata'; proof: DenialProof }
  | { kind: 'nxdomain'; proof: DenialProof }
  | { kind: 'alias'; target: Name; ttl: number; source?: Name };

/** One pass of RFC 1034 §4.3.2 step 3 inside one zone. */
function lookup(zone: ZoneView, qname: Name, key: string, qtype: number): Step {
  // Step 3b: a zone cut at or above the name (but below the apex) means a referral — except that a DS
  // query for the cut itself is answered from the parent side (RFC 4035 §3.1.4.1).
  const cut = findCut(zone, key);
  if (cut && !(qtype === RRType.DS && nameKey(cut.owner) === key)) {
    return { kind: 'referral', ns: cut.rrsets.get(RRType.NS)!, cut };
  }
  const node = zone.node(key);
  if (node) return fromNode(node, qname, key, qtype, undefined);
  if (zone.isEmptyNonTerminal(key)) return { kind: 'nodata', proof: { kind: 'ent', qname: key } };
  // Step 3c: RFC 4592 §3.3.1 — the closest encloser is the deepest existing ancestor; only its
  // wildcard child can synthesize, so no synthesis happens below names that exist.
  let encloser = stripFirstLabel(key);
  while (!zone.node(encloser) && !zone.isEmptyNonTerminal(encloser) && encloser !== zone.originKey) {
    encloser = stripFirstLabel(encloser);
  }
  const source = `*.${encloser}`;
  const wildcard = zone.node(source);
  if (wildcard) return fromNode(wildcard, qname, key, qtype, encloser);
  // RFC 4592 §4.9: a source of synthesis that is an empty non-terminal exists, so the name does too:
  // NODATA, not NXDOMAIN (signed: proved like a name that does not exist, the best the chain holds).
  if (zone.isEmptyNonTerminal(source))
    return { kind: 'nodata', proof: { kind: 'nxdomain', qname: key, encloser } };
  return { kind: 'nxdomain', proof: { kind: 'nxdomain', qname: key, encloser } };
}

/**
 * `encloser`: set when `node` is the wildcard at that closest encloser, expanded for `qname`. Runs on
 * every query: the Step of the outcome is the only object made (no closures, no unused NODATA step).
 */
function fromNode(
  node: ZoneNode,
  qname: Name,
  key: string,
  qtype: number,
  encloser: string | undefined,
): Step {
  const cname = node.rrsets.get(RRType.CNAME);
  if (cname) {
    // RFC 1034 §4.3.2 step 3a: the chain is followed only when QTYPE does not match CNAME; ANY matches
    // every type, so ANY at an alias is answered with the CNAME itself (also RFC 8482 §4.1: one RRset).
    if (qtype === RRType.CNAME || qtype === RRType.ANY) return answerStep(cname, qname, key, encloser);
    return encloser === undefined
      ? { kind: 'cname', cname }
      : { kind: 'cname', cname: expand(cname, qname), proof: { kind: 'wildcard', qname: key, encloser } };
  }
  if (qtype === RRType.ANY) {
    // RFC 8482 §4.1: answer ANY with one RRset rather than everything at the name.
    const first = pickForAny(node);
    return first ? answerStep(first, qname, key, encloser) : nodataStep(key, encloser);
  }
  // The ALIAS RRset is held under its internal code: a query for that code finds nothing (NODATA).
  const exact = isInternalType(qtype) ? undefined : node.rrsets.get(qtype);
  if (exact) return answerStep(exact, qname, key, encloser);
  if (qtype === RRType.A || qtype === RRType.AAAA) {
    const alias = node.rrsets.get(RRType.ALIAS);
    if (alias) {
      const target = (alias.rdata[0] as Extract<Rdata, { type: 'ALIAS' }>).target;
      return encloser === undefined
        ? { kind: 'alias', target, ttl: alias.ttl }
        : { kind: 'alias', target, ttl: alias.ttl, source: alias.owner };
    }
  }
  return nodataStep(key, encloser);
}

/** A wildcard's RRset under the expanded owner, signed as the wildcard's (`source`, RFC 4035 §3.1.3.3). */
function expand(rrset: ServedRRset, qname: Name): ServedRRset {
  return { owner: qname, type: rrset.type, ttl: rrset.ttl, rdata: rrset.rdata, source: rrset };
}

/** The answer with one RRset; from a wildcard (`encloser` set), expanded with its proof. */
function answerStep(rrset: ServedRRset, qname: Name, key: string, encloser: string | undefined): Step {
  return encloser === undefined
    ? { kind: 'answer', rrsets: [rrset] }
    : { kind: 'answer', rrsets: [expand(rrset, qname)], proof: { kind: 'wildcard', qname: key, encloser } };
}

/** NODATA at the name, or at a wildcard expanded for it (`encloser` set). */
function nodataStep(key: string, encloser: string | undefined): Step {
  return {
    kind: 'nodata',
    proof:
      encloser === undefined
        ? { kind: 'nodata', qname: key }
        : { kind: 'wildcard-nodata', qname: key, encloser },
  };
}

function pickForAny(node: ZoneNode): ServedRRset | undefined {
  for (const type of [RRType.A, RRType.AAAA, RRType.MX, RRType.TXT, RRType.SOA]) {
    const rrset = node.rrsets.get(type);
    if (rrset) return rrset;
  }
  for (const [type, rrset] of node.rrsets) if (type !== RRType.ALIAS) return rrset;
  return undefined;
}

/** Types whose RDATA names targets for additional-section processing (see `additionalTargets`). */
const HAS_ADDITIONAL_TARGETS: ReadonlySet<number> = new Set([
  RRType.NS,
  RRType.MX,
  RRType.SRV,
  RRType.SVCB,
  RRType.HTTPS,
]);
const ADDRESS_TYPES = [RRType.A, RRType.AAAA] as const;

/** The highest delegation point between the apex (exclusive) and the name (inclusive). */
function findCut(zone: ZoneView, key: string): ZoneNode | undefined {
  if (zone.cutCount === 0) return undefined;
  // Collect the ancestors below the apex, then test from the top down: the topmost cut wins.
  const chain: string[] = [];
  let k = key;
  while (k !== zone.originKey && k !== '.') {
    chain.push(k);
    k = stripFirstLabel(k);
  }
  for (let i = chain.length - 1; i >= 0; i--) {
    const node = zone.node(chain[i]!);
    if (node?.cut) return node;
  }
  return undefined;
}

/**
 * RFC 1034 §4.3.2 step 6 and RFC 2782/RFC 9460 §4: A and AAAA of NS, MX, SRV and SVCB targets, taken
 * from the zones served. For referrals, glue below the cut is required (RFC 9471); names at or below
 * a cut elsewhere are never used as additional data.
 */
function addAddresses(
  table: ZoneLookup,
  rdata: readonly Rdata[],
  result: Answer,
  zone: ZoneView,
  glue: boolean,
  dnssecOk: boolean | undefined,
): void {
  for (const r of rdata) {
    for (const target of additionalTargets(r)) {
      const key = nameKey(target);
      const targetZone = glue ? zone : table.findZone(key);
      if (!targetZone) continue;
      if (!glue && findCut(targetZone, key)) continue;
      const node = targetZone.node(key);
      if (!node) continue;
      for (const type of ADDRESS_TYPES) {
        const rrset = node.rrsets.get(type);
        if (!rrset || result.additional.includes(rrset)) continue;
        // Glue is never signed (RFC 4035 §2.2); authoritative addresses carry their RRSIGs (§3.1.1).
        pushSigned(result.additional, rrset, dnssecOk ? targetZone.dnssec : undefined);
      }
    }
  }
}
