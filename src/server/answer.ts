import { type Name, nameKey, stripFirstLabel } from '../dns/name.ts';
import { additionalTargets, type Rdata } from '../dns/rdata.ts';
import { isInternalType, RRType } from '../dns/rrtype.ts';
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
  /** For Outcome.Alias: the owner to answer for, the ALIAS target and its TTL cap. */
  alias?: { owner: Name; target: Name; ttl: number };
}

/** CNAME chains longer than this are cut (loop protection; RFC 1034 §3.6.2 warns against loops). */
export const MAX_CNAME_CHAIN = 12;

/**
 * The authoritative answer algorithm of RFC 1034 §4.3.2 with the wildcard rules of RFC 4592 and the
 * negative-answer form of RFC 2308: finds the zone, descends to the name, and produces a referral at a
 * zone cut, the matching RRset, a CNAME (followed through the zones served), a synthesized wildcard
 * answer, NODATA or NXDOMAIN, with NS/MX/SRV targets' addresses in the additional section.
 */
export function answerQuery(table: ZoneLookup, qname: Name, qtype: number): Answer {
  const result: Answer = { outcome: Outcome.Answer, aa: true, answer: [], authority: [], additional: [] };
  let zone = zoneFor(table, nameKey(qname), qtype);
  if (!zone) return { ...result, outcome: Outcome.Refused, aa: false };
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
      addAddresses(table, step.ns.rdata, result, zone, true);
      return result;
    }
    if (step.kind === 'nxdomain' || step.kind === 'nodata') {
      // RFC 2308 §2.1/§2.2: after a CNAME, the rcode describes the last name in the chain.
      result.outcome = step.kind === 'nxdomain' ? Outcome.NxDomain : Outcome.NoData;
      result.authority.push(zone.negativeSoa);
      return result;
    }
    if (step.kind === 'alias') {
      result.outcome = Outcome.Alias;
      result.alias = { owner: name, target: step.target, ttl: step.ttl };
      return result;
    }
    if (step.kind === 'answer') {
      for (const rrset of step.rrsets) result.answer.push(rrset);
      for (const rrset of step.rrsets) {
        if (HAS_ADDITIONAL_TARGETS.has(rrset.type)) addAddresses(table, rrset.rdata, result, zone, false);
      }
      return result;
    }
    // CNAME: RFC 1034 §4.3.2 step 3a — add it and restart with the canonical name.
    result.answer.push(step.cname);
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

type Step =
  | { kind: 'answer'; rrsets: ServedRRset[] }
  | { kind: 'cname'; cname: ServedRRset }
  | { kind: 'referral'; ns: ServedRRset }
  | { kind: 'nodata' }
  | { kind: 'nxdomain' }
  | { kind: 'alias'; target: Name; ttl: number };

/** One pass of RFC 1034 §4.3.2 step 3 inside one zone. */
function lookup(zone: ZoneView, qname: Name, key: string, qtype: number): Step {
  // Step 3b: a zone cut at or above the name (but below the apex) means a referral — except that a DS
  // query for the cut itself is answered from the parent side (RFC 4035 §3.1.4.1).
  const cut = findCut(zone, key);
  if (cut && !(qtype === RRType.DS && nameKey(cut.owner) === key)) {
    return { kind: 'referral', ns: cut.rrsets.get(RRType.NS)! };
  }
  const node = zone.node(key);
  if (node) return fromNode(node, qname, qtype, false);
  if (zone.isEmptyNonTerminal(key)) return { kind: 'nodata' };
  // Step 3c: RFC 4592 §3.3.1 — the closest encloser is the deepest existing ancestor; only its
  // wildcard child can synthesize, so no synthesis happens below names that exist.
  let encloser = stripFirstLabel(key);
  while (!zone.node(encloser) && !zone.isEmptyNonTerminal(encloser) && encloser !== zone.originKey) {
    encloser = stripFirstLabel(encloser);
  }
  const source = `*.${encloser}`;
  const wildcard = zone.node(source);
  if (wildcard) return fromNode(wildcard, qname, qtype, true);
  // RFC 4592 §4.9: a source of synthesis that is an empty non-terminal exists, so the name does too:
  // NODATA, not NXDOMAIN.
  if (zone.isEmptyNonTerminal(source)) return { kind: 'nodata' };
  return { kind: 'nxdomain' };
}

function fromNode(node: ZoneNode, qname: Name, qtype: number, synthesized: boolean): Step {
  const own = (rrset: ServedRRset): ServedRRset =>
    synthesized
      ? { owner: qname, type: rrset.type, ttl: rrset.ttl, rdata: rrset.rdata, source: rrset }
      : rrset;
  const cname = node.rrsets.get(RRType.CNAME);
  if (cname) {
    // RFC 1034 §4.3.2 step 3a: the chain is followed only when QTYPE does not match CNAME; ANY matches
    // every type, so ANY at an alias is answered with the CNAME itself (also RFC 8482 §4.1: one RRset).
    if (qtype === RRType.CNAME || qtype === RRType.ANY) return { kind: 'answer', rrsets: [own(cname)] };
    return { kind: 'cname', cname: own(cname) };
  }
  if (qtype === RRType.ANY) {
    // RFC 8482 §4.1: answer ANY with one RRset rather than everything at the name.
    const first = pickForAny(node);
    return first ? { kind: 'answer', rrsets: [own(first)] } : { kind: 'nodata' };
  }
  // The ALIAS RRset is held under its internal code: a query for that code finds nothing (NODATA).
  const exact = isInternalType(qtype) ? undefined : node.rrsets.get(qtype);
  if (exact) return { kind: 'answer', rrsets: [own(exact)] };
  if (qtype === RRType.A || qtype === RRType.AAAA) {
    const alias = node.rrsets.get(RRType.ALIAS);
    if (alias) {
      const target = (alias.rdata[0] as Extract<Rdata, { type: 'ALIAS' }>).target;
      return { kind: 'alias', target, ttl: alias.ttl };
    }
  }
  return { kind: 'nodata' };
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
        if (rrset && !result.additional.includes(rrset)) result.additional.push(rrset);
      }
    }
  }
}
