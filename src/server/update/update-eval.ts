/**
 * RFC 2136 UPDATE, the part that decides: given a decoded UPDATE message, the zone as it is served
 * and what the signing key may change, either an RCODE that refuses the whole message, or the RRsets
 * the message changes, each with its whole new content. Pure: no I/O, no clock. The caller
 * (update-handler.ts) authenticates the message, hands the changes to the record writer as one request
 * (all or none) and answers.
 */
import type { Message, ResourceRecord } from '../../dns/message.ts';
import { Rcode } from '../../dns/message.ts';
import { type Name, nameKey } from '../../dns/name.ts';
import { type Rdata, rdataKey } from '../../dns/rdata.ts';
import { isRecordTypeName, type RecordTypeName, RRClass, RRType, typeName } from '../../dns/rrtype.ts';

/** RCODEs of RFC 2136 §2.2 (with those of RFC 1035). */
export const UpdateRcode = {
  NOERROR: Rcode.NOERROR,
  FORMERR: Rcode.FORMERR,
  SERVFAIL: Rcode.SERVFAIL,
  NXDOMAIN: Rcode.NXDOMAIN,
  NOTIMP: Rcode.NOTIMP,
  REFUSED: Rcode.REFUSED,
  YXDOMAIN: 6,
  YXRRSET: 7,
  NXRRSET: 8,
  NOTAUTH: 9,
  NOTZONE: 10,
} as const;

/** The zone as served: RRsets by owner key (`nameKey`) and type code. */
export interface UpdateZoneView {
  origin: Name;
  rrset(ownerKey: string, type: number): { ttl: number; rdata: readonly Rdata[] } | undefined;
  /** The types with data at a name (empty for names that do not exist and empty non-terminals). */
  types(ownerKey: string): readonly number[];
  /**
   * Whether a name belongs to this zone: at or below the apex and not in a child zone served apart
   * (whose UPDATEs name that zone).
   */
  contains(name: Name): boolean;
}

/** Whether the signing key may change RRsets of `type` at `fqdn` (the zone's update policy). */
export type UpdatePermission = (fqdn: Name, type: RecordTypeName) => boolean;

/** The new content of one RRset the message changes: no records means the RRset is deleted. */
export interface RRsetChange {
  owner: Name;
  type: RecordTypeName;
  ttl: number;
  rdata: Rdata[];
}

export type UpdateDecision =
  | { ok: false; rcode: number; reason: string }
  | {
      ok: true;
      /** Every RRset the message touches (added to or deleted from), in first-touched order. */
      changes: RRsetChange[];
      /** Updates ignored as RFC 2136 §3.4.2 prescribes (for logs and tests). */
      ignored: string[];
    };

/**
 * Prerequisites and updates one message may carry together; more are REFUSED unread. A 64 KiB message
 * holds at most about 5,400 RRs; the record writer takes at most 5,000 records per request.
 */
export const MAX_UPDATE_RRS = 5000;

/** Meta-types no prerequisite or update may name (RFC 2136 §3.2.3, §3.4.1.3). */
const META_TYPES = new Set<number>([RRType.AXFR, RRType.IXFR, 253 /* MAILB */, 254 /* MAILA */, RRType.OPT]);

/** Whether a record came without RDATA (RDLENGTH 0): the decoder leaves such RDATA opaque. */
function emptyRdata(rr: ResourceRecord): boolean {
  return typeof rr.data.type === 'number' && (rr.data as { data: Uint8Array }).data.length === 0;
}

function refuse(rcode: number, reason: string): UpdateDecision {
  return { ok: false, rcode, reason };
}

function describe(rr: ResourceRecord): string {
  return `${rr.name} ${rr.class === RRClass.ANY ? 'ANY' : rr.class === RRClass.NONE ? 'NONE' : 'IN'} ${typeName(rr.type)}`;
}

/**
 * Evaluates an UPDATE for the zone `zone` (whose apex the zone section named): prerequisites
 * (RFC 2136 §3.2) against what is served, permissions (§3.3), the prescan (§3.4.1), then the updates
 * in order (§3.4.2) on a working copy. `message` has its TSIG removed.
 */
export function evaluateUpdate(
  message: Message,
  zone: UpdateZoneView,
  permitted: UpdatePermission,
): UpdateDecision {
  const origin = zone.origin;
  const prerequisites = message.answers;
  const updates = message.authority;
  // A local policy bound (RFC 2136 §3: the server may refuse for policy reasons): the evaluation is
  // linear, but the writer could not take more anyway.
  if (prerequisites.length + updates.length > MAX_UPDATE_RRS)
    return refuse(
      UpdateRcode.REFUSED,
      `${prerequisites.length} prerequisites and ${updates.length} updates: at most ${MAX_UPDATE_RRS} together; send fewer per message`,
    );

  // §3.2: prerequisites, in order; value-dependent ones (class IN) are compared as whole RRsets after.
  const expected = new Map<string, { owner: Name; type: number; rdata: RdataSet }>();
  for (const rr of prerequisites) {
    if (rr.ttl !== 0)
      return refuse(UpdateRcode.FORMERR, `prerequisite ${describe(rr)} has a TTL other than 0`);
    // §3.2.3 (NOTZONE) is for names outside the zone.
    if (!zone.contains(rr.name))
      return refuse(UpdateRcode.NOTZONE, `prerequisite ${rr.name} is outside zone ${origin}`);
    const key = nameKey(rr.name);
    if (rr.class === RRClass.ANY) {
      if (!emptyRdata(rr))
        return refuse(UpdateRcode.FORMERR, `prerequisite ${describe(rr)} carries RDATA (§2.4.1, §2.4.4)`);
      if (rr.type === RRType.ANY) {
        // §2.4.4: name is in use.
        if (zone.types(key).length === 0)
          return refuse(UpdateRcode.NXDOMAIN, `prerequisite: ${rr.name} is not in use`);
      } else {
        if (META_TYPES.has(rr.type))
          return refuse(UpdateRcode.FORMERR, `prerequisite names meta-type ${typeName(rr.type)}`);
        // §2.4.1: RRset exists (value independent).
        if (!zone.rrset(key, rr.type))
          return refuse(UpdateRcode.NXRRSET, `prerequisite: no ${typeName(rr.type)} RRset at ${rr.name}`);
      }
    } else if (rr.class === RRClass.NONE) {
      if (!emptyRdata(rr))
        return refuse(UpdateRcode.FORMERR, `prerequisite ${describe(rr)} carries RDATA (§2.4.3, §2.4.5)`);
      if (rr.type === RRType.ANY) {
        // §2.4.5: name is not in use.
        if (zone.types(key).length > 0)
          return refuse(UpdateRcode.YXDOMAIN, `prerequisite: ${rr.name} is in use`);
      } else {
        if (META_TYPES.has(rr.type))
          return refuse(UpdateRcode.FORMERR, `prerequisite names meta-type ${typeName(rr.type)}`);
        // §2.4.3: RRset does not exist.
        if (zone.rrset(key, rr.type))
          return refuse(
            UpdateRcode.YXRRSET,
            `prerequisite: a ${typeName(rr.type)} RRset exists at ${rr.name}`,
          );
      }
    } else if (rr.class === RRClass.IN) {
      if (rr.type === RRType.ANY || META_TYPES.has(rr.type))
        return refuse(UpdateRcode.FORMERR, `prerequisite ${describe(rr)} names a meta-type`);
      // §2.4.2: RRset exists (value dependent), gathered into temp and compared below (§3.2.5).
      const id = `${key} ${rr.type}`;
      let entry = expected.get(id);
      if (!entry) {
        entry = { owner: rr.name, type: rr.type, rdata: new RdataSet() };
        expected.set(id, entry);
      }
      entry.rdata.add(rr.data);
    } else {
      return refuse(UpdateRcode.FORMERR, `prerequisite ${rr.name} has class ${rr.class}`);
    }
  }
  for (const entry of expected.values()) {
    const served = zone.rrset(nameKey(entry.owner), entry.type);
    // §3.2.5: the same set; served RRsets hold no duplicates, so equal sizes and inclusion suffice.
    const matches =
      served !== undefined &&
      served.rdata.length === entry.rdata.size &&
      new RdataSet(served.rdata).includesAll(entry.rdata);
    if (!matches)
      return refuse(
        UpdateRcode.NXRRSET,
        `prerequisite: the ${typeName(entry.type)} RRset at ${entry.owner} differs from the one required`,
      );
  }

  // §3.3 and §3.4.1: permissions and the prescan, over the whole update section before any change.
  for (const rr of updates) {
    if (!zone.contains(rr.name))
      return refuse(UpdateRcode.NOTZONE, `update ${rr.name} is outside zone ${origin}`);
    if (rr.class === RRClass.IN) {
      if (rr.type === RRType.ANY || META_TYPES.has(rr.type))
        return refuse(UpdateRcode.FORMERR, `update ${describe(rr)} adds a meta-type`);
    } else if (rr.class === RRClass.ANY) {
      if (rr.ttl !== 0 || !emptyRdata(rr))
        return refuse(
          UpdateRcode.FORMERR,
          `update ${describe(rr)}: a deletion of RRsets has TTL 0 and no RDATA`,
        );
      if (META_TYPES.has(rr.type))
        return refuse(UpdateRcode.FORMERR, `update ${describe(rr)} names a meta-type`);
    } else if (rr.class === RRClass.NONE) {
      if (rr.ttl !== 0)
        return refuse(UpdateRcode.FORMERR, `update ${describe(rr)}: a deletion of an RR has TTL 0`);
      if (rr.type === RRType.ANY || META_TYPES.has(rr.type))
        return refuse(UpdateRcode.FORMERR, `update ${describe(rr)} names a meta-type`);
    } else {
      return refuse(UpdateRcode.FORMERR, `update ${rr.name} has class ${rr.class}`);
    }
    if (rr.type === RRType.ANY) {
      // Deleting every RRset of a name touches the types the key may change there; it needs at least one.
      if (!permittedSomewhere(permitted, rr.name))
        return refuse(UpdateRcode.REFUSED, `the key may not change anything at ${rr.name}`);
      continue;
    }
    const name = typeName(rr.type);
    if (!isRecordTypeName(name) || rr.type === RRType.ALIAS)
      return refuse(UpdateRcode.REFUSED, `record type ${name} is not supported`);
    const zoneOwned =
      rr.type === RRType.SOA || (rr.type === RRType.NS && nameKey(rr.name) === nameKey(origin));
    if (zoneOwned && rr.class !== RRClass.ANY && !(rr.class === RRClass.NONE && rr.type === RRType.SOA))
      return refuse(
        UpdateRcode.REFUSED,
        `the zone's ${name} RRset at ${rr.name} comes from its DNSZone and class; change it there`,
      );
    if (!zoneOwned && !permitted(rr.name, name))
      return refuse(UpdateRcode.REFUSED, `the key may not change ${name} at ${rr.name}`);
    if (rr.class === RRClass.IN && typeof rr.data.type === 'number')
      return refuse(UpdateRcode.FORMERR, `update ${describe(rr)} has RDATA that does not parse`);
  }

  // §3.4.2: the updates, in order, on a working copy of the touched RRsets.
  // Each touched RRset once, by owner key and type code: every lookup is a map access, so the work is
  // linear in the message however many RRs it names.
  const work = new Map<string, Map<number, WorkingRRset>>();
  const order: WorkingRRset[] = [];
  const ignored: string[] = [];
  const current = (owner: Name, type: number): WorkingRRset => {
    const key = nameKey(owner);
    let byType = work.get(key);
    if (!byType) {
      byType = new Map();
      work.set(key, byType);
    }
    let entry = byType.get(type);
    if (!entry) {
      const served = zone.rrset(key, type);
      entry = {
        owner,
        type: typeName(type) as RecordTypeName,
        code: type,
        ttl: served?.ttl ?? 0,
        rdata: new RdataSet(served?.rdata),
      };
      byType.set(type, entry);
      order.push(entry);
    }
    return entry;
  };
  /** Types with data at a name now: served, overlaid with the working copy. */
  const typesAt = (owner: Name): number[] => {
    const key = nameKey(owner);
    const types = new Set(zone.types(key));
    for (const entry of work.get(key)?.values() ?? []) {
      if (entry.rdata.size > 0) types.add(entry.code);
      else types.delete(entry.code);
    }
    return [...types];
  };
  const atApex = (owner: Name) => nameKey(owner) === nameKey(origin);
  for (const rr of updates) {
    if (rr.class === RRClass.IN) {
      const data = rr.data as Rdata;
      const here = typesAt(rr.name);
      // §3.4.2.2: CNAME and other data do not mix; such an update is ignored.
      if (rr.type === RRType.CNAME && here.some((t) => t !== RRType.CNAME)) {
        ignored.push(`${describe(rr)}: ${rr.name} holds other data than a CNAME`);
        continue;
      }
      if (rr.type !== RRType.CNAME && here.includes(RRType.CNAME)) {
        ignored.push(`${describe(rr)}: ${rr.name} holds a CNAME`);
        continue;
      }
      const entry = current(rr.name, rr.type);
      // A CNAME is a singleton: a new one replaces the old.
      if (rr.type === RRType.CNAME) entry.rdata = new RdataSet([data]);
      // §3.4.2.2: a record already in the RRset is not added twice.
      else entry.rdata.add(data);
      // RFC 2181 §5.2: one TTL per RRset; the added record's TTL becomes the RRset's.
      entry.ttl = rr.ttl;
    } else if (rr.class === RRClass.ANY) {
      if (rr.type === RRType.ANY) {
        // §3.4.2.3: every RRset of the name, but the apex SOA and NS; only the types the key may change.
        for (const type of typesAt(rr.name)) {
          if (atApex(rr.name) && (type === RRType.SOA || type === RRType.NS)) continue;
          const name = typeName(type);
          if (!isRecordTypeName(name) || !permitted(rr.name, name)) {
            ignored.push(`${describe(rr)}: the key may not change ${name} at ${rr.name}`);
            continue;
          }
          current(rr.name, type).rdata = new RdataSet();
        }
        continue;
      }
      if (atApex(rr.name) && (rr.type === RRType.SOA || rr.type === RRType.NS)) {
        ignored.push(`${describe(rr)}: the apex ${typeName(rr.type)} RRset is never deleted (§3.4.2.3)`);
        continue;
      }
      current(rr.name, rr.type).rdata = new RdataSet();
    } else {
      // class NONE: delete one RR (§3.4.2.4); the SOA is never deleted.
      if (rr.type === RRType.SOA) {
        ignored.push(`${describe(rr)}: the SOA is never deleted (§3.4.2.4)`);
        continue;
      }
      current(rr.name, rr.type).rdata.delete(rr.data);
    }
  }
  const changes: RRsetChange[] = [];
  for (const entry of order) {
    const served = zone.rrset(nameKey(entry.owner), entry.code);
    // Untouched in effect (a deletion of what is not there): nothing to write.
    if (!served && entry.rdata.size === 0) continue;
    changes.push({ owner: entry.owner, type: entry.type, ttl: entry.ttl, rdata: entry.rdata.list() });
  }
  return { ok: true, changes, ignored };
}

/** Whether the key may change any type at `fqdn`. */
function permittedSomewhere(permitted: UpdatePermission, fqdn: Name): boolean {
  return ALL_TYPES.some((t) => permitted(fqdn, t));
}

const ALL_TYPES: RecordTypeName[] = Object.keys(RRType).filter(isRecordTypeName);

/** A touched RRset as the updates leave it. */
interface WorkingRRset {
  owner: Name;
  type: RecordTypeName;
  code: number;
  ttl: number;
  rdata: RdataSet;
}

/**
 * RDATA without duplicates (equal as `rdataEquals` says, by `rdataKey`), in the order first added.
 * RDATA that did not parse (opaque, RFC 3597) equals nothing, as before: each is kept apart.
 */
class RdataSet {
  private readonly byKey = new Map<string | symbol, Rdata>();

  constructor(rdata?: readonly Rdata[]) {
    for (const r of rdata ?? []) this.add(r);
  }

  get size(): number {
    return this.byKey.size;
  }

  private static keyOf(data: Rdata | { type: number }): string | symbol {
    return typeof data.type === 'number' ? Symbol('opaque') : rdataKey(data as Rdata);
  }

  add(data: Rdata | { type: number }): void {
    const key = RdataSet.keyOf(data);
    if (!this.byKey.has(key)) this.byKey.set(key, data as Rdata);
  }

  delete(data: Rdata | { type: number }): void {
    this.byKey.delete(RdataSet.keyOf(data));
  }

  /** Whether every RDATA of `other` is here. */
  includesAll(other: RdataSet): boolean {
    for (const key of other.byKey.keys()) if (!this.byKey.has(key)) return false;
    return true;
  }

  list(): Rdata[] {
    return [...this.byKey.values()];
  }
}
