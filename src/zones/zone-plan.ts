/**
 * `zonekeeper plan`, the pure part: what would change in each served zone, RRset by RRset, and the
 * serial before → after. The caller computes the zones served now and the zones the new resources
 * give (`computeZones`), and reads the serial each zone is served at; loading and printing are the
 * CLI's job (src/cli/plan.ts).
 *
 * RRsets are compared as sets of records with their TTL (RFC 2181 §5: an RRset is the records of one
 * owner, class and type, with one TTL). The SOA is compared without its serial: the serial is shown
 * apart, and a change of the other SOA fields (from the class or the zone) is a change of the SOA RRset.
 */
import { compareCanonical, type Name, nameKey } from '../dns/name.ts';
import { printRdata, type Rdata } from '../dns/rdata.ts';
import { type RecordTypeName, typeCode } from '../dns/rrtype.ts';
import type { AssembledZone } from './assemble.ts';
import type { PlannedHold } from './change-safety.ts';
import type { ResourceKey } from './resource-key.ts';
import type { RRsetData } from './rrset.ts';
import type { ZoneSerialState } from './serial.ts';
import { chooseSerial } from './serial-policy.ts';

/** One RRset as a plan shows it: records in presentation format, sorted. */
export interface PlannedRRset {
  owner: Name;
  type: RecordTypeName;
  ttl: number;
  records: string[];
}

export interface RRsetChange {
  owner: Name;
  type: RecordTypeName;
  before: PlannedRRset;
  after: PlannedRRset;
}

export type ZoneAction = 'create' | 'update' | 'delete' | 'unchanged';

export interface ZonePlan {
  origin: Name;
  /** The DNSZone (`namespace/name`) serving the origin after the change, else the one serving it now. */
  zone: ResourceKey;
  /** The DNSZone serving it now, when another one (the domain moves to another DNSZone). */
  previousZone?: ResourceKey;
  action: ZoneAction;
  /** Serials: served now (undefined: not served, or not known) and after (undefined: not served). */
  serial: { before: number | undefined; after: number | undefined };
  /**
   * RRsets in the zone now and after, the SOA included. The measure a hold on large changes compares
   * the number of changed and deleted RRsets with (as octoDNS counts: RRsets, not records).
   */
  rrsetCount: { before: number; after: number };
  add: PlannedRRset[];
  change: RRsetChange[];
  delete: PlannedRRset[];
  /**
   * Set when the change is over the zone's change-safety limits (`planHold`): the controller would hold
   * it until confirmed (`held`), or it is confirmed already.
   */
  hold?: PlannedHold;
}

/** One origin, as served now and as it would be served. */
export interface ZonePair {
  origin: Name;
  before?: { key: ResourceKey; zone: AssembledZone; serial: number | undefined };
  after?: { key: ResourceKey; zone: AssembledZone };
  /**
   * What is known of the origin's last serial (a serial store's state, or the serial and hash in a
   * DNSZone's status: `knownSerial`), for the serial after a change.
   */
  known: ZoneSerialState | undefined;
}

/**
 * The plan of one origin. A zone whose content is the same keeps the serial it is served at; changed
 * content gets the serial `chooseSerial` gives it (the rule the controller applies: the known serial
 * when its recorded hash is this content's, else `max(YYYYMMDD00, last + 1)`).
 */
export function planZone(pair: ZonePair, now: Date): ZonePlan {
  const { before, after } = pair;
  const beforeSets = before ? rrsetsOf(before.zone) : new Map<string, PlannedRRset>();
  const afterSets = after ? rrsetsOf(after.zone) : new Map<string, PlannedRRset>();
  const add: PlannedRRset[] = [];
  const change: RRsetChange[] = [];
  const del: PlannedRRset[] = [];
  for (const [id, a] of afterSets) {
    const b = beforeSets.get(id);
    if (!b) add.push(a);
    else if (!samePlanned(a, b)) change.push({ owner: a.owner, type: a.type, before: b, after: a });
  }
  for (const [id, b] of beforeSets) if (!afterSets.has(id)) del.push(b);
  add.sort(compareRRsets);
  change.sort(compareRRsets);
  del.sort(compareRRsets);

  const changed = add.length + change.length + del.length > 0;
  const action: ZoneAction = !after ? 'delete' : !before ? 'create' : changed ? 'update' : 'unchanged';
  let serialAfter: number | undefined;
  if (after) {
    serialAfter =
      !changed && before?.serial !== undefined
        ? before.serial
        : chooseSerial({ known: pair.known, hash: after.zone.hash, now }).serial;
  }
  const key = after?.key ?? before!.key;
  return {
    origin: pair.origin,
    zone: key,
    ...(before && after && before.key !== after.key ? { previousZone: before.key } : {}),
    action,
    serial: { before: before?.serial, after: serialAfter },
    rrsetCount: { before: beforeSets.size, after: afterSets.size },
    add,
    change,
    delete: del,
  };
}

/**
 * Pairs the zones served now with those that would be, by origin, sorted by origin in canonical
 * order (RFC 4034 §6.1).
 */
export function pairZones<B extends { origin: Name }, A extends { origin: Name }>(
  before: readonly B[],
  after: readonly A[],
): { origin: Name; before?: B; after?: A }[] {
  const pairs = new Map<string, { origin: Name; before?: B; after?: A }>();
  for (const b of before) pairs.set(nameKey(b.origin), { origin: b.origin, before: b });
  for (const a of after) {
    const pair = pairs.get(nameKey(a.origin));
    if (pair) pair.after = a;
    else pairs.set(nameKey(a.origin), { origin: a.origin, after: a });
  }
  return [...pairs.values()].sort((x, y) => compareCanonical(x.origin, y.origin));
}

/** True when the plan changes anything (a zone created, deleted, or with RRsets changed). */
export function planChanges(plans: readonly ZonePlan[]): boolean {
  return plans.some((p) => p.action !== 'unchanged');
}

function rrsetsOf(zone: AssembledZone): Map<string, PlannedRRset> {
  const out = new Map<string, PlannedRRset>();
  const soa: RRsetData = {
    owner: zone.origin,
    type: 'SOA',
    ttl: zone.soa.ttl,
    // The serial is shown apart: 0 here, left out of the printed record.
    rdata: [{ type: 'SOA', ...zone.soa, serial: 0 }],
  };
  for (const rrset of [soa, ...zone.rrsets]) {
    out.set(`${nameKey(rrset.owner)}\u0000${rrset.type}`, {
      owner: rrset.owner,
      type: rrset.type,
      ttl: rrset.ttl,
      records: rrset.rdata.map(printPlanned).sort(),
    });
  }
  return out;
}

/** A record's presentation form; the SOA without its serial (shown apart). */
function printPlanned(rdata: Rdata): string {
  if (rdata.type === 'SOA')
    return `${rdata.mname} ${rdata.rname} ${rdata.refresh} ${rdata.retry} ${rdata.expire} ${rdata.minimum}`;
  return printRdata(rdata);
}

function samePlanned(a: PlannedRRset, b: PlannedRRset): boolean {
  return (
    a.ttl === b.ttl && a.records.length === b.records.length && a.records.every((r, i) => r === b.records[i])
  );
}

function compareRRsets(a: { owner: Name; type: string }, b: { owner: Name; type: string }): number {
  return compareCanonical(a.owner, b.owner) || (typeCode(a.type) ?? 0) - (typeCode(b.type) ?? 0);
}
