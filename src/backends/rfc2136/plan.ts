/**
 * The plan of the RFC 2136 backend, pure: from what the server holds (read by AXFR), the ownership
 * record and the computed zone, the UPDATE changes that make the server hold the zone — guarded by
 * prerequisites (RFC 2136 §2.4) — and the RRsets left out, with why.
 *
 * Ownership record: the TXT RRset at `_zonekeeper-owned.<zone>`, one RR per RRset Zonekeeper owns,
 * its text `<owner relative to the zone> <TYPE>` (`@` for the apex), split into character-strings of
 * at most 255 octets. Entries are added (§2.5.1) and deleted one RR at a time (§2.5.4) in the same
 * UPDATE message as the RRset they name, so an RRset and its entry change atomically and a message
 * stays bounded however large the zone. An entry that does not parse claims nothing.
 *
 * Rules:
 * - The SOA is the server's: never read into the plan, never written.
 * - The apex NS RRset is Zonekeeper's when the zone declares nameservers (it always does): it is made
 *   equal RR by RR (adds before deletes, as §3.4.2.4 ignores deleting the last apex NS) and never
 *   recorded in the ownership record; deleting a zone leaves it.
 * - Any other RRset is touched only when the ownership record lists it. An RRset the zone wants that
 *   the server holds unlisted is a `Conflict` (left alone, reported on its record set), also when the
 *   contents happen to be equal: ownership is never guessed.
 * - A CNAME wanted beside data the server holds unlisted at the same name, or data beside an unlisted
 *   CNAME, is a `Conflict` too (the server would ignore the add, §3.4.2.2).
 * - An RRset replaced or deleted is guarded by a value-dependent "RRset exists" prerequisite with the
 *   RRs read (§2.4.2); an RRset added by "RRset does not exist" (§2.4.3). A change by anyone else since
 *   the read fails the whole message (NXRRSET or YXRRSET) and the backend reads and plans again.
 * - All changes at one owner name form one unit that is never split across messages, deletions first,
 *   so a CNAME replacing an address (or the reverse) is never seen half-done by the server.
 * - Ignore rules (`DNSZone.spec.ignore`): an RRset one matches is never created, changed or deleted,
 *   whoever made it. A desired one is a `Conflict`; an ownership entry naming one is deleted (the RRset
 *   is not Zonekeeper's any more and stays as the server holds it), in the same UPDATE as the rest.
 *   The SOA and the ownership record are never ignored (neither is ever an RRset of the plan).
 */
import type { ResourceRecord } from '../../dns/message.ts';
import { isInDomain, type Name, nameEquals, nameKey, parseName, relativeName } from '../../dns/name.ts';
import { type Rdata, rdataEquals, recordTypeOfCode, type UnknownRdata } from '../../dns/rdata.ts';
import { type RecordTypeName, RRClass, RRType } from '../../dns/rrtype.ts';
import type { IgnoreMatcher } from '../../zones/ignore.ts';
import type { RRset } from '../../zones/rrset.ts';
import type { RRsetProblem } from '../backend.ts';

/** The label under the zone apex that holds the ownership record. */
export const OWNERSHIP_LABEL = '_zonekeeper-owned';
/** The RR that marks a zone as holding Zonekeeper's RRsets; it claims nothing itself. */
export const OWNERSHIP_MARKER: Rdata = { type: 'TXT', strings: ['zonekeeper ownership v1'] };
/** TTL of the ownership record's RRs. */
export const OWNERSHIP_TTL = 300;

/** Types a server adds by itself when it signs a zone; never Zonekeeper's, never in its way. */
const DNSSEC_TYPES = new Set<number>([
  RRType.RRSIG,
  RRType.NSEC,
  RRType.NSEC3,
  RRType.DNSKEY,
  51,
  59,
  60,
  61,
]);

export function ownershipName(origin: Name): Name {
  return `${OWNERSHIP_LABEL}.${origin === '.' ? '' : origin}`;
}

/** An RRset as the server holds it (from AXFR). */
export interface HeldRRset {
  owner: Name;
  type: number;
  ttl: number;
  rdata: (Rdata | UnknownRdata)[];
}

/** What the server holds for a zone. */
export interface HeldState {
  serial: number;
  /** `nameKey(owner) type-code` → RRset, SOA and the ownership record left out. */
  rrsets: Map<string, HeldRRset>;
  /** Ownership entries (`nameKey(owner) TYPE`) with the RR that records each. */
  owned: Map<string, Rdata>;
  /** Whether the ownership record exists at all (the zone holds something of Zonekeeper's). */
  hasOwnership: boolean;
}

export function heldKeyOf(owner: Name, type: number): string {
  return `${nameKey(owner)} ${type}`;
}

function ownedKeyOf(owner: Name, type: RecordTypeName): string {
  return `${nameKey(owner)} ${type}`;
}

/** The ownership entry for an RRset, as TXT RDATA. */
export function ownershipEntry(origin: Name, owner: Name, type: RecordTypeName): Rdata {
  const text = `${relativeName(owner, origin)} ${type}`;
  const strings: string[] = [];
  for (let i = 0; i < text.length; i += 255) strings.push(text.slice(i, i + 255));
  return { type: 'TXT', strings };
}

/** Reads one ownership entry; undefined for text that names no RRset in the zone (it claims nothing). */
export function parseOwnershipEntry(origin: Name, rdata: Rdata | UnknownRdata): string | undefined {
  if (typeof rdata.type !== 'string' || rdata.type !== 'TXT') return undefined;
  const text = (rdata as Extract<Rdata, { type: 'TXT' }>).strings.join('');
  const match = /^(\S+) ([A-Z0-9]+)$/.exec(text);
  if (!match) return undefined;
  const type = match[2]!;
  if (type === 'SOA' || recordTypeOfCode(RRType[type as keyof typeof RRType] ?? -1) !== type)
    return undefined;
  let owner: Name;
  try {
    owner = match[1] === '@' ? origin : parseName(match[1]!, origin);
  } catch {
    return undefined;
  }
  if (!isInDomain(owner, origin) || isInDomain(owner, ownershipName(origin))) return undefined;
  return ownedKeyOf(owner, type as RecordTypeName);
}

/** Groups an AXFR's records (the opening SOA first) into the held state. */
export function heldFromAxfr(origin: Name, records: readonly ResourceRecord[]): HeldState {
  const first = records[0];
  const serial =
    first && first.type === RRType.SOA ? (first.data as Extract<Rdata, { type: 'SOA' }>).serial : 0;
  const rrsets = new Map<string, HeldRRset>();
  const owned = new Map<string, Rdata>();
  let hasOwnership = false;
  const ownerName = ownershipName(origin);
  for (const rr of records) {
    if (rr.class !== RRClass.IN || rr.type === RRType.SOA) continue;
    if (rr.type === RRType.TXT && nameEquals(rr.name, ownerName)) {
      hasOwnership = true;
      const entry = parseOwnershipEntry(origin, rr.data);
      if (entry !== undefined) owned.set(entry, rr.data as Rdata);
      continue;
    }
    const key = heldKeyOf(rr.name, rr.type);
    const set = rrsets.get(key);
    if (set) set.rdata.push(rr.data);
    else rrsets.set(key, { owner: rr.name, type: rr.type, ttl: rr.ttl, rdata: [rr.data] });
  }
  return { serial, rrsets, owned, hasOwnership };
}

/** The changes at one owner name, never split across messages. */
export interface UpdateUnit {
  owner: Name;
  /** Prerequisite section RRs (RFC 2136 §2.4). */
  prerequisites: ResourceRecord[];
  /** Update section RRs (RFC 2136 §2.5), in the order the server must apply them. */
  updates: ResourceRecord[];
  /** What the unit does, for logs: `replace www.example. A`. */
  describe: string[];
}

/** One RRset the plan changes on the server (ownership entries aside). */
export interface PlannedChange {
  op: 'add' | 'replace' | 'delete';
  owner: Name;
  type: RecordTypeName;
}

export interface Plan {
  units: UpdateUnit[];
  problems: RRsetProblem[];
  /** The RRsets the units add, replace and delete, for people (`zonekeeper plan --live`). */
  changes: PlannedChange[];
}

const codeOf = (type: RecordTypeName): number => RRType[type];

function sameRdata(a: readonly (Rdata | UnknownRdata)[], b: readonly Rdata[]): boolean {
  if (a.length !== b.length) return false;
  return b.every((x) => a.some((y) => typeof y.type === 'string' && rdataEquals(y as Rdata, x)));
}

const rr = (
  name: Name,
  type: number,
  klass: number,
  ttl: number,
  data: Rdata | UnknownRdata,
): ResourceRecord => ({
  name,
  type,
  class: klass,
  ttl,
  data,
});
const empty = (type: number): UnknownRdata => ({ type, data: new Uint8Array(0) });

/** §2.4.2: "RRset exists (value dependent)": every RR held, class IN, TTL 0. */
function exactly(held: HeldRRset): ResourceRecord[] {
  return held.rdata.map((d) => rr(held.owner, held.type, RRClass.IN, 0, d));
}

/** §2.4.3: "RRset does not exist": class NONE, TTL 0, no RDATA. */
function absent(owner: Name, type: number): ResourceRecord {
  return rr(owner, type, RRClass.NONE, 0, empty(type));
}

/** §2.5.2: "Delete an RRset": class ANY, TTL 0, no RDATA. */
function deleteRRset(owner: Name, type: number): ResourceRecord {
  return rr(owner, type, RRClass.ANY, 0, empty(type));
}

/**
 * The plan that makes the server hold `desired` (every RRset of the zone but the SOA). An empty plan
 * means the server holds the zone (the read-back of `servedContent`); its problems are what is left
 * out. `ignored` matches the RRsets the zone's ignore rules leave as the server holds them.
 */
export function planZone(
  origin: Name,
  desired: Iterable<RRset>,
  held: HeldState,
  ignored: IgnoreMatcher = () => false,
): Plan {
  const ownerName = ownershipName(origin);
  /** Ownership entries Zonekeeper still acts on: those no ignore rule matches. */
  const owns = (key: string): boolean => {
    if (!held.owned.has(key)) return false;
    const space = key.lastIndexOf(' ');
    return !ignored(parseName(key.slice(0, space)), key.slice(space + 1));
  };
  const problems: RRsetProblem[] = [];
  const changes: PlannedChange[] = [];
  const units = new Map<
    string,
    UpdateUnit & { deletes: ResourceRecord[]; adds: ResourceRecord[]; late: ResourceRecord[] }
  >();
  const unit = (owner: Name) => {
    const k = nameKey(owner);
    let u = units.get(k);
    if (!u) {
      u = { owner, prerequisites: [], updates: [], describe: [], deletes: [], adds: [], late: [] };
      units.set(k, u);
    }
    return u;
  };
  const claim = (owner: Name, type: RecordTypeName) =>
    rr(ownerName, RRType.TXT, RRClass.IN, OWNERSHIP_TTL, ownershipEntry(origin, owner, type));

  const wanted = new Set<string>();
  const desiredList = [...desired];
  for (const d of desiredList) wanted.add(ownedKeyOf(d.owner, d.type));

  /** Held RRsets at a name Zonekeeper does not own (DNSSEC records aside). */
  const foreignAt = (owner: Name): HeldRRset[] =>
    [...held.rrsets.values()].filter((h) => {
      if (!nameEquals(h.owner, owner) || DNSSEC_TYPES.has(h.type)) return false;
      const t = recordTypeOfCode(h.type);
      if (t === undefined) return true;
      if (t === 'NS' && nameEquals(owner, origin)) return ignored(owner, t);
      return !owns(ownedKeyOf(h.owner, t));
    });

  for (const d of desiredList) {
    const code = codeOf(d.type);
    const h = held.rrsets.get(heldKeyOf(d.owner, code));
    const k = ownedKeyOf(d.owner, d.type);
    const problem = (reason: RRsetProblem['reason'], message: string) =>
      problems.push({ owner: d.owner, type: d.type, origin: d.origin, reason, message });
    if (isInDomain(d.owner, ownerName)) {
      problem(
        'BackendRejected',
        `${ownerName} is reserved for Zonekeeper's ownership record; rename the record set`,
      );
      continue;
    }
    if (ignored(d.owner, d.type)) {
      problem(
        'Conflict',
        `${d.owner} ${d.type} matches the zone's spec.ignore, so Zonekeeper leaves it on the server as it is; remove the rule or this record set`,
      );
      continue;
    }
    if (d.type === 'ALIAS') {
      problem(
        'BackendRejected',
        'an RFC 2136 server serves no ALIAS records; use A/AAAA records or a CNAME (not at the apex)',
      );
      continue;
    }
    if (d.type === 'NS' && nameEquals(d.owner, origin)) {
      // The zone's own nameservers: made equal RR by RR, adds first (§3.4.2.4).
      if (h !== undefined && sameRdata(h.rdata, d.rdata)) continue;
      const u = unit(d.owner);
      if (h) u.prerequisites.push(...exactly(h));
      for (const x of d.rdata) {
        if (!h?.rdata.some((y) => typeof y.type === 'string' && rdataEquals(y as Rdata, x)))
          u.adds.push(rr(d.owner, code, RRClass.IN, d.ttl, x));
      }
      for (const y of h?.rdata ?? []) {
        if (!d.rdata.some((x) => typeof y.type === 'string' && rdataEquals(y as Rdata, x)))
          u.late.push(rr(d.owner, code, RRClass.NONE, 0, y));
      }
      u.describe.push(`apex NS ${d.owner}`);
      changes.push({ op: h ? 'replace' : 'add', owner: d.owner, type: d.type });
      continue;
    }
    if (h !== undefined && !held.owned.has(k)) {
      problem(
        'Conflict',
        `the server holds ${d.owner} ${d.type} and Zonekeeper's ownership record (${ownerName} TXT) does not list it: it was made by hand or by another writer, and is left alone; delete it on the server to let Zonekeeper program it, or change the record set`,
      );
      continue;
    }
    const foreign = foreignAt(d.owner).filter((f) =>
      d.type === 'CNAME' ? f.type !== RRType.CNAME : f.type === RRType.CNAME,
    );
    if (foreign.length > 0) {
      problem(
        'Conflict',
        `the server holds ${d.type === 'CNAME' ? 'other data' : 'a CNAME'} at ${d.owner} that Zonekeeper does not own (made by hand or by another writer), and a CNAME cannot share its name (RFC 1034 §3.6.2); it is left alone`,
      );
      continue;
    }
    if (h !== undefined && h.ttl === d.ttl && sameRdata(h.rdata, d.rdata)) continue;
    const u = unit(d.owner);
    if (h) {
      u.prerequisites.push(...exactly(h));
      u.deletes.push(deleteRRset(d.owner, code));
      u.describe.push(`replace ${d.owner} ${d.type}`);
      changes.push({ op: 'replace', owner: d.owner, type: d.type });
    } else {
      u.prerequisites.push(absent(d.owner, code));
      u.describe.push(`add ${d.owner} ${d.type}`);
      changes.push({ op: 'add', owner: d.owner, type: d.type });
    }
    for (const x of d.rdata) u.adds.push(rr(d.owner, code, RRClass.IN, d.ttl, x));
    if (!held.owned.has(k)) u.adds.push(claim(d.owner, d.type));
  }

  // Owned RRsets the zone no longer has: deleted with their entries. Owned RRsets an ignore rule
  // matches: their entries deleted, the RRsets left as they are.
  for (const [k, entry] of held.owned) {
    const release = !owns(k);
    if (wanted.has(k) && !release) continue;
    const [ownerKey, type] = k.split(' ') as [string, RecordTypeName];
    const h = [...held.rrsets.values()].find((x) => nameKey(x.owner) === ownerKey && x.type === codeOf(type));
    const owner = h?.owner ?? parseName(ownerKey);
    const u = unit(owner);
    if (release) {
      u.describe.push(`release ${owner} ${type} (ignored)`);
    } else if (h) {
      u.prerequisites.push(...exactly(h));
      u.deletes.push(deleteRRset(owner, h.type));
      u.describe.push(`delete ${owner} ${type}`);
      changes.push({ op: 'delete', owner, type });
    } else {
      u.describe.push(`release ${owner} ${type}`);
    }
    // §2.5.4: delete one RR from an RRset.
    u.late.push(rr(ownerName, RRType.TXT, RRClass.NONE, 0, entry));
  }

  const out: UpdateUnit[] = [];
  if (!held.hasOwnership && desiredList.length > 0)
    out.push({
      owner: ownerName,
      prerequisites: [],
      updates: [rr(ownerName, RRType.TXT, RRClass.IN, OWNERSHIP_TTL, OWNERSHIP_MARKER)],
      describe: [`mark ${ownerName} TXT`],
    });
  for (const u of units.values()) {
    out.push({
      owner: u.owner,
      prerequisites: u.prerequisites,
      updates: [...u.deletes, ...u.adds, ...u.late],
      describe: u.describe,
    });
  }
  return { units: out, problems, changes };
}

/** The units that delete everything Zonekeeper owns in the zone, the ownership record last. */
export function planDeletion(origin: Name, held: HeldState): UpdateUnit[] {
  const units = planZone(origin, [], held).units;
  // The entries go with their RRsets; whatever is left of the record (entries that claim nothing) too.
  if (held.hasOwnership)
    units.push({
      owner: ownershipName(origin),
      prerequisites: [],
      updates: [deleteRRset(ownershipName(origin), RRType.TXT)],
      describe: [`delete ${ownershipName(origin)} TXT`],
    });
  return units;
}
