/**
 * The minimal change between the zone Zonekeeper computed and what PowerDNS holds, pure and
 * synchronous. Ownership decides what may be touched: Zonekeeper owns the apex SOA and NS and every
 * RRset listed in the zone's ownership metadata; everything else in the zone was made by someone else
 * and is never modified or deleted.
 */

import { asciiLower, type Name, nameEquals, nameKey, parseName, relativeName } from '../../dns/name.ts';
import type { Rdata } from '../../dns/rdata.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import type { IgnoreMatcher } from '../../zones/ignore.ts';
import type { RRsetOrigin } from '../../zones/rrset.ts';
import type { RRsetProblem } from '../backend.ts';
import { sameRecords } from './content.ts';

/** An RRset as the PowerDNS API returns it (GET /zones/{zone}). */
export interface HeldRRset {
  name: string;
  type: string;
  ttl: number;
  records: { content: string; disabled?: boolean }[];
}

/** An RRset Zonekeeper wants in PowerDNS, with its records already printed as PowerDNS content. */
export interface DesiredRRset {
  owner: Name;
  type: RecordTypeName;
  ttl: number;
  rdata: readonly Rdata[];
  content: readonly string[];
  origin: RRsetOrigin;
}

/** One entry of a PATCH body's `rrsets` (PowerDNS HTTP API, zone PATCH). */
export type RRsetChange =
  | {
      name: string;
      type: string;
      changetype: 'REPLACE';
      ttl: number;
      records: { content: string; disabled: false }[];
    }
  | { name: string; type: string; changetype: 'DELETE' };

export interface ZoneDiff {
  /** Owned RRsets that are no longer wanted. They go first: a PATCH applies its changes in order. */
  deletes: RRsetChange[];
  /** Created or changed RRsets; the SOA, when it changes, is last. */
  replaces: RRsetChange[];
  /** Desired RRsets left out because something Zonekeeper does not own holds their name. */
  problems: RRsetProblem[];
  /** Ownership entries to record before the PATCH (RRsets it creates). */
  claim: string[];
  /** Ownership entries to drop after the PATCH (RRsets it deletes, entries for nothing). */
  release: string[];
  /** Desired RRsets PowerDNS already holds exactly. */
  unchanged: number;
}

/** Identity of an RRset inside one zone: the case-folded owner and the type. */
export function rrsetKey(owner: string, type: string): string {
  return `${nameKey(owner)} ${type}`;
}

/** The ownership entry for an RRset: owner relative to the zone (`@` for the apex) and type, e.g. `www A`. */
export function ownershipEntry(owner: Name, type: string, origin: Name): string {
  return `${asciiLower(relativeName(owner, origin))} ${type}`;
}

/** The RRset key an ownership entry stands for; undefined for an entry that does not parse. */
export function entryKey(entry: string, origin: Name): string | undefined {
  const space = entry.lastIndexOf(' ');
  if (space <= 0) return undefined;
  const rel = entry.slice(0, space);
  const type = entry.slice(space + 1);
  try {
    const owner = rel === '@' ? origin : parseName(rel, origin);
    return rrsetKey(owner, type);
  } catch {
    return undefined;
  }
}

/** The apex SOA and NS are always Zonekeeper's: it writes the serial and the class's name servers. */
function implicitlyOwned(owner: string, type: string, origin: Name): boolean {
  return (type === 'SOA' || type === 'NS') && nameEquals(owner, origin);
}

function describe(held: HeldRRset): string {
  const n = held.records.length;
  const first = held.records[0]?.content;
  return `${held.name} ${held.type} (${n === 1 && first !== undefined ? JSON.stringify(first) : `${n} records`})`;
}

/**
 * Compares the desired zone with what PowerDNS holds. `owned` holds the zone's ownership entries (see
 * `ownershipEntry`). Owned RRsets are made exactly as desired (created, replaced or deleted); a desired
 * RRset whose name and type — or, for CNAME, whose name (RFC 1034 §3.6.2, RFC 2181 §10.1) — is taken by
 * an RRset Zonekeeper does not own becomes a `Conflict` problem and is left out.
 */
export function diffZone(input: {
  origin: Name;
  desired: Iterable<DesiredRRset>;
  held: readonly HeldRRset[];
  owned: ReadonlySet<string>;
  /** The zone's ignore rules: matching RRsets are left as PowerDNS holds them, whoever made them. */
  ignored?: IgnoreMatcher;
}): ZoneDiff {
  const { origin } = input;
  const ignored = input.ignored ?? (() => false);
  const diff: ZoneDiff = { deletes: [], replaces: [], problems: [], claim: [], release: [], unchanged: 0 };
  const ownedKeys = new Map<string, string>();
  for (const entry of input.owned) {
    const key = entryKey(entry, origin);
    if (key === undefined) continue;
    // An RRset Zonekeeper created that an ignore rule now matches: not ours any more, left as it is.
    const space = entry.lastIndexOf(' ');
    const rel = entry.slice(0, space);
    const owner = rel === '@' ? origin : `${rel}.${origin}`;
    if (ignored(owner, entry.slice(space + 1))) diff.release.push(entry);
    else ownedKeys.set(key, entry);
  }
  const held = new Map<string, HeldRRset>();
  /** Per owner: the foreign RRsets there (for the CNAME rule). */
  const foreignByName = new Map<string, HeldRRset[]>();
  for (const h of input.held) {
    const key = rrsetKey(h.name, h.type);
    held.set(key, h);
    const mineHeld =
      ownedKeys.has(key) || (implicitlyOwned(h.name, h.type, origin) && !ignored(h.name, h.type));
    if (!mineHeld) {
      const name = nameKey(h.name);
      const list = foreignByName.get(name);
      if (list) list.push(h);
      else foreignByName.set(name, [h]);
    }
  }
  const desiredKeys = new Set<string>();
  let soa: RRsetChange | undefined;
  for (const d of input.desired) {
    const key = rrsetKey(d.owner, d.type);
    desiredKeys.add(key);
    if (ignored(d.owner, d.type)) {
      diff.problems.push({
        owner: d.owner,
        type: d.type,
        origin: d.origin,
        reason: 'Conflict',
        message: `${d.owner} ${d.type} matches the zone's spec.ignore, so Zonekeeper leaves it in PowerDNS as it is; remove the rule or this record set`,
      });
      continue;
    }
    const h = held.get(key);
    const mine = ownedKeys.has(key) || implicitlyOwned(d.owner, d.type, origin);
    if (h !== undefined && !mine) {
      diff.problems.push(
        conflict(d, `PowerDNS already holds ${describe(h)}, which Zonekeeper did not create`),
      );
      continue;
    }
    const foreign = foreignByName.get(nameKey(d.owner)) ?? [];
    const blocking =
      d.type === 'CNAME' ? foreign.find((f) => f.type !== 'CNAME') : foreign.find((f) => f.type === 'CNAME');
    if (h === undefined && blocking !== undefined) {
      diff.problems.push(
        conflict(
          d,
          `PowerDNS holds ${describe(blocking)} at that name, which Zonekeeper did not create, and a CNAME cannot share its name with other data (RFC 1034 §3.6.2)`,
        ),
      );
      continue;
    }
    if (
      h !== undefined &&
      h.ttl === d.ttl &&
      h.records.every((r) => r.disabled !== true) &&
      sameRecords(
        d.type,
        h.records.map((r) => r.content),
        d.rdata,
        d.content,
        origin,
      )
    ) {
      diff.unchanged++;
      continue;
    }
    const change: RRsetChange = {
      name: d.owner,
      type: d.type,
      changetype: 'REPLACE',
      ttl: d.ttl,
      records: d.content.map((content) => ({ content, disabled: false })),
    };
    if (d.type === 'SOA') soa = change;
    else diff.replaces.push(change);
    if (!mine) diff.claim.push(ownershipEntry(d.owner, d.type, origin));
  }
  if (soa) diff.replaces.push(soa);
  for (const [key, entry] of ownedKeys) {
    if (desiredKeys.has(key)) continue;
    const h = held.get(key);
    if (h !== undefined) diff.deletes.push({ name: h.name, type: h.type, changetype: 'DELETE' });
    diff.release.push(entry);
  }
  // The apex NS is ours even without an entry; one the zone no longer wants (never: the class has
  // name servers) would be left alone rather than leave the zone without NS.
  return diff;
}

function conflict(d: DesiredRRset, what: string): RRsetProblem {
  return {
    owner: d.owner,
    type: d.type,
    origin: d.origin,
    reason: 'Conflict',
    message: `${what}; delete or rename it in PowerDNS, or publish this record under another name`,
  };
}

/**
 * Splits the changes into PATCH bodies of at most `maxBytes` of JSON each (PowerDNS refuses bodies
 * over its `webserver-max-bodysize`, 2 MB by default), deletes first and the SOA in the last one, so
 * the new serial shows only once everything else is in. One body in the common case.
 */
export function planPatches(diff: Pick<ZoneDiff, 'deletes' | 'replaces'>, maxBytes: number): RRsetChange[][] {
  const all = [...diff.deletes, ...diff.replaces];
  if (all.length === 0) return [];
  const bodies: RRsetChange[][] = [];
  let current: RRsetChange[] = [];
  let size = 14; // {"rrsets":[]}
  for (const change of all) {
    const bytes = Buffer.byteLength(JSON.stringify(change)) + 1;
    if (current.length > 0 && size + bytes > maxBytes) {
      bodies.push(current);
      current = [];
      size = 14;
    }
    current.push(change);
    size += bytes;
  }
  bodies.push(current);
  return bodies;
}
