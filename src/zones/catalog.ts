import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../api/index.ts';
import { DnsError } from '../dns/errors.ts';
import {
  isInDomain,
  isWildcardName,
  labelCount,
  type Name,
  nameKey,
  parentName,
  parseName,
  relativeName,
} from '../dns/name.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import { Interner } from '../util/interner.ts';
import { zoneAdmits } from './delegation.ts';
import { publicSuffixSection } from './public-suffix.ts';
import { Holder, RecordTable, type RefColumn, SlotLists } from './record-table.ts';
import { aside, namespaceOf, object, ownerOnly, type Part, Refusal, scoped } from './refusal.ts';
import { type ResourceKey, resourceKey } from './resource-key.ts';

/** Whether a DNSZone is served, and if not, why. */
export type ZoneVerdict =
  | { accepted: true; origin: Name; zoneClass: DNSZoneClass; parent?: ResourceKey }
  | {
      accepted: false;
      reason: 'Invalid' | 'ClassNotFound' | 'PublicSuffix' | 'Conflict' | 'NotDelegated' | 'ZoneShadowed';
      message: string;
      origin?: Name;
    };

/**
 * Every form of message that refuses a record set a zone (`Catalog.resolve`), by its code: each is
 * rendered for the record set's owner or for a caller of a namespace (`Refusal.text`).
 */
export const RECORD_REFUSALS = [
  'ZONE_REF_NOT_FOUND',
  'ZONE_REF_INVALID',
  'ZONE_REF_REFUSED',
  'NAME_INVALID',
  'NAME_RELATIVE',
  'OUT_OF_ZONE',
  'BELOW_ZONE_CUT',
  'NO_ZONE',
  'NS_WILDCARD',
  'NS_ABOVE_ZONE',
  'CNAME_ABOVE_ZONE',
  'DS_OF_CHILD_ZONE',
  'NOT_DELEGATED',
] as const;
export type RecordRefusalCode = (typeof RECORD_REFUSALS)[number];

type UnresolvedReason = 'Invalid' | 'ZoneNotFound' | 'OutOfZone' | 'NotDelegated' | 'Conflict';

/** Which zone a record set belongs to, or why it belongs to none. */
export type RecordResolution =
  | { resolved: true; zone: ResourceKey; fqdn: Name }
  | {
      resolved: false;
      /** The condition's reason (the record set's status). */
      reason: UnresolvedReason;
      /** The whole message, for the record set's owner: `refusal.text()`. */
      message: string;
      /** The message as data, to render for another reader (a caller of a namespace). */
      refusal: Refusal<RecordRefusalCode>;
      zone?: ResourceKey;
      fqdn?: Name;
    };

/** An unresolved resolution: its message rendered for the owner, its refusal kept for other readers. */
function unresolved(
  reason: UnresolvedReason,
  code: RecordRefusalCode,
  parts: readonly Part[],
  where: { zone?: ResourceKey; fqdn?: Name; origin?: Name } = {},
): RecordResolution {
  const refusal = new Refusal(code, parts, where.origin);
  const out: RecordResolution = { resolved: false, reason, message: refusal.text(), refusal };
  if (where.zone !== undefined) out.zone = where.zone;
  if (where.fqdn !== undefined) out.fqdn = where.fqdn;
  return out;
}

/** A record set as a zone sees it: present with its absolute name, or gone (undefined). */
export interface ZoneMember {
  key: ResourceKey;
  current: { recordSet: DNSRecordSet; fqdn: Name } | undefined;
}

/** The keys a change touched; the engine enqueues exactly these. */
export interface Affected {
  zones: Set<ResourceKey>;
  records: Set<ResourceKey>;
  /** Per zone: the record sets that joined, left or changed in it (for incremental zone updates). */
  recordsByZone: Map<ResourceKey, Set<ResourceKey>>;
}

function noneAffected(): Affected {
  return { zones: new Set(), records: new Set(), recordsByZone: new Map() };
}

/** Adds everything in `from` to `into`. */
export function mergeAffected(into: Affected, from: Affected): Affected {
  for (const z of from.zones) into.zones.add(z);
  for (const r of from.records) into.records.add(r);
  for (const [zone, keys] of from.recordsByZone) {
    const set = getOrInsert(into.recordsByZone, zone, () => new Set());
    for (const k of keys) set.add(k);
  }
  return into;
}

const UNRESOLVED = '';

/** Record sets a load looks at to tell whether most name their zone (see `load`). */
const SAMPLE = 64;

/** Passes of judgeZones per change at most (each pass after the first serves at least one more zone). */
const MAX_PASSES = 64;

/** A DNSZone with a valid domain, as the passes of judgeZones see it. */
interface Candidate {
  key: ResourceKey;
  zone: DNSZone;
  origin: Name;
  /** nameKey(origin) */
  domain: string;
  labels: number;
  /** metadata.creationTimestamp ('' when missing) */
  created: string;
  /** Served: accepted by the previous pass, or (not judged before) Accepted=True in its status. */
  incumbent: boolean;
  /** For zones the catalog served: their place in the previous pass's order. */
  rank: number;
  /** For zones served per their status only: when they became Accepted (ms since the epoch). */
  since: number;
  /** Waiting for a verified Domain (the catalog's `waiting` predicate): judged after every other zone. */
  waiting: boolean;
}

/**
 * The order zones are judged in (ADR 0013): served zones first, in the order they became served
 * (the catalog's own order, then those known from their status by the time they were accepted), then
 * the zones not served, oldest first; for equal creation times the parent before the child. The
 * namespace/name only fixes the order of zones that cannot affect each other.
 */
function judgingOrder(a: Candidate, b: Candidate): number {
  // A zone that may not be served yet never keeps a domain from one that may (squatting prevention).
  if (a.waiting !== b.waiting) return a.waiting ? 1 : -1;
  if (a.incumbent !== b.incumbent) return a.incumbent ? -1 : 1;
  if (a.incumbent) {
    if (a.rank !== b.rank) return a.rank < b.rank ? -1 : 1;
    if (a.since !== b.since) return a.since < b.since ? -1 : 1;
  }
  if (a.created !== b.created) return a.created < b.created ? -1 : 1;
  return a.labels - b.labels || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/** Zones judged together: one domain, one group (served or not), one creation time. */
function peerKey(c: Candidate): string {
  return `${c.waiting ? 1 : 0}\u0000${c.incumbent ? 1 : 0}\u0000${c.created}\u0000${c.domain}`;
}

/**
 * When the zone became served according to its own status (`Accepted=True`, written by the controller,
 * read back after a restart), in ms since the epoch; undefined when the status does not say it is.
 */
function acceptedSince(zone: DNSZone): number | undefined {
  const accepted = zone.status?.conditions?.find((c) => c.type === 'Accepted');
  if (accepted?.status !== 'True') return undefined;
  const time = Date.parse(accepted.lastTransitionTime);
  return Number.isNaN(time) ? Number.POSITIVE_INFINITY : time;
}

/**
 * The in-memory index of every class, zone and record set, and the rules that relate them: which
 * zone is accepted for a domain (oldest wins; a child zone of a managed parent in another namespace
 * needs the parent's delegation), and which accepted zone adopts each record set. Pure and
 * synchronous; every mutation returns the keys whose outcome may have changed.
 */
export class Catalog {
  /**
   * Whether a zone waits for something outside the catalog before it may be served (a verified
   * Domain, for classes with requireVerifiedDomain): such zones are judged after all others, so they
   * never keep a domain from a zone that may be served. Call `rejudge` when its answers change.
   */
  waiting?: (zone: DNSZone, zoneClass: DNSZoneClass | undefined) => boolean;
  readonly classes = new Map<string, DNSZoneClass>();
  readonly zones = new Map<ResourceKey, DNSZone>();
  /**
   * One number per record set, shared with the structures beside the catalog that keep something per
   * record set (its feed, what was programmed, the statuses written): each keeps a column of it.
   */
  readonly table: RecordTable;
  /** The record sets the catalog holds (a view of its column, in the order the table took their keys). */
  readonly records: RecordSets;
  private readonly recordSets: RefColumn<DNSRecordSet>;
  /**
   * Per record set: its fqdn when it resolved (to the zone whose membership list it is in), else its
   * resolution (why it did not). No resolution object for the usual case.
   */
  private readonly resolved: RefColumn<Name | RecordResolution>;

  private verdicts = new Map<ResourceKey, ZoneVerdict>();
  /** accepted zone per domain (nameKey of the origin) */
  private byDomain = new Map<string, ResourceKey>();
  private children = new Map<ResourceKey, Set<ResourceKey>>();
  /** The keys of zones that record sets refer to, one string each. */
  private readonly zoneKeys = new Interner();
  /** record sets per resolved zone key; UNRESOLVED holds the ones without a zone */
  private readonly membership: SlotLists;
  /** record sets per zone key named in their spec.zoneRef */
  private readonly byZoneRef: SlotLists;
  /** Accepted zones in the order they were judged (the order in which they keep being judged). */
  private servedOrder = new Map<ResourceKey, number>();
  /** Zones judged as served in the last pass (see judgeZones). */
  private incumbents = new Set<ResourceKey>();
  /**
   * Names strictly between an accepted zone and its parent zone (nameKey → the zone below): the
   * parent may not hold NS or CNAME there, which would hide the zone below.
   */
  private aboveChild = new Map<string, ResourceKey>();
  /**
   * Resolved NS record sets by the name they stand at (`nameKey` of their fqdn → slots), and each
   * one's name: where a zone's cuts inside it may be, found without walking the zone (`nsAtOrAbove`).
   */
  private readonly nsByName = new Map<string, Set<number>>();
  private readonly nsNameOf = new Map<number, string>();
  /** Zones that exist but never reached the catalog (their manifest fails validation): key → why. */
  private readonly refusedElsewhere = new Map<ResourceKey, string>();
  /**
   * After a first look (`load` with `zonesOnly`): the zone keys named in spec.zoneRef whose record
   * sets are held but not resolved yet. A record set naming a zone by zoneRef can only ever resolve to
   * that zone, and its resolution reads only the zones' verdicts, which stay as they are until the next
   * change: each such list is resolved when something first reads a record set of it (the zone's
   * members, a record set's resolution), and all of them before any change is taken. So the first zone
   * built waits for its own record sets (and those without a zoneRef) only, not for every zone's.
   */
  private readonly unresolvedRefs = new Set<ResourceKey>();

  constructor(table: RecordTable = new RecordTable()) {
    this.table = table;
    this.recordSets = table.column(Holder.catalog, true);
    this.resolved = table.column(Holder.catalog, true);
    this.membership = new SlotLists(table, true);
    this.byZoneRef = new SlotLists(table);
    this.records = new RecordSets(table, this.recordSets);
  }

  zoneVerdict(key: ResourceKey): ZoneVerdict | undefined {
    return this.verdicts.get(key);
  }

  recordResolution(key: ResourceKey): RecordResolution | undefined {
    const slot = this.table.slotOf(key);
    if (slot < 0) return undefined;
    this.resolveRefsAt(slot);
    return this.resolutionAt(slot);
  }

  /** Resolves the list by zoneRef the record set at `slot` is in, if a first look left it unresolved. */
  private resolveRefsAt(slot: number): void {
    if (slot < 0 || this.unresolvedRefs.size === 0) return;
    const ref = this.byZoneRef.nameOf(slot);
    if (ref !== undefined) this.resolveRefs(ref);
  }

  /** Resolves the record sets naming `zone` in spec.zoneRef, if a first look left them unresolved. */
  private resolveRefs(zone: ResourceKey): void {
    if (this.unresolvedRefs.size > 0 && this.unresolvedRefs.delete(zone)) {
      this.reresolve(this.byZoneRef.slots(zone), false);
    }
  }

  /** Resolves every record set a first look left unresolved: before any change is taken. */
  private resolveAll(): void {
    if (this.unresolvedRefs.size === 0) return;
    const zones = [...this.unresolvedRefs];
    this.unresolvedRefs.clear();
    for (const zone of zones) this.reresolve(this.byZoneRef.slots(zone), false);
  }

  private resolutionAt(slot: number): RecordResolution | undefined {
    const r = this.resolved.get(slot);
    return typeof r === 'string' ? { resolved: true, zone: this.membership.nameOf(slot)!, fqdn: r } : r;
  }

  /** Record sets resolved to this zone (the candidates its assembly decides about). */
  recordsOf(zone: ResourceKey): DNSRecordSet[] {
    this.resolveRefs(zone);
    const out: DNSRecordSet[] = [];
    for (const slot of this.membership.slots(zone)) {
      const rs = this.recordSets.get(slot);
      if (rs) out.push(rs);
    }
    return out;
  }

  /**
   * Every record set resolved to the zone, with its absolute name (a zone model's full input). With
   * `slots`, each member's slot in the record table is pushed there too, in the same order.
   */
  zoneMembers(zone: ResourceKey, slots?: number[]): ZoneMember[] {
    this.resolveRefs(zone);
    const out: ZoneMember[] = [];
    for (const slot of this.membership.slots(zone)) {
      const recordSet = this.recordSets.get(slot);
      const fqdn = this.resolved.get(slot);
      if (recordSet && typeof fqdn === 'string') {
        out.push({ key: this.table.keyOf(slot), current: { recordSet, fqdn } });
        slots?.push(slot);
      }
    }
    return out;
  }

  /** The given record sets as they stand now for the zone: resolved to it, or gone from it. */
  membersNow(zone: ResourceKey, keys: Iterable<ResourceKey>): ZoneMember[] {
    this.resolveRefs(zone);
    return [...keys].map((key) => {
      const slot = this.table.slotOf(key);
      const recordSet = slot < 0 ? undefined : this.recordSets.get(slot);
      const fqdn = slot < 0 ? undefined : this.resolved.get(slot);
      return {
        key,
        current:
          recordSet && typeof fqdn === 'string' && this.membership.nameOf(slot) === zone
            ? { recordSet, fqdn }
            : undefined,
      };
    });
  }

  /**
   * The NS record sets resolved to `zone` at `fqdn` or at one of its ancestors below `origin` (the
   * zone's), with their absolute names: the record sets that can make a cut `fqdn` lies at or below.
   * Looked up name by name, so the cost is the name's depth, not the zone's size.
   */
  nsAtOrAbove(zone: ResourceKey, origin: Name, fqdn: Name): { recordSet: DNSRecordSet; fqdn: Name }[] {
    this.resolveRefs(zone);
    const out: { recordSet: DNSRecordSet; fqdn: Name }[] = [];
    const stop = nameKey(origin);
    for (let name = fqdn; ; name = parentName(name)) {
      const key = nameKey(name);
      if (key === stop || name === '.') break;
      for (const slot of this.nsByName.get(key) ?? []) {
        const recordSet = this.recordSets.get(slot);
        const at = this.resolved.get(slot);
        if (recordSet && typeof at === 'string' && this.membership.nameOf(slot) === zone)
          out.push({ recordSet, fqdn: at });
      }
    }
    return out;
  }

  private indexNs(slot: number, fqdn: Name): void {
    const key = nameKey(fqdn);
    getOrInsert(this.nsByName, key, () => new Set()).add(slot);
    this.nsNameOf.set(slot, key);
  }

  private unindexNs(slot: number): void {
    const key = this.nsNameOf.get(slot);
    if (key === undefined) return;
    this.nsNameOf.delete(slot);
    const slots = this.nsByName.get(key);
    slots?.delete(slot);
    if (slots?.size === 0) this.nsByName.delete(key);
  }

  /** Accepted zones whose nearest accepted ancestor is this zone. */
  childZonesOf(zone: ResourceKey): DNSZone[] {
    return [...(this.children.get(zone) ?? [])].flatMap((k) => this.zones.get(k) ?? []);
  }

  /** The accepted zone serving exactly this domain, if any. */
  zoneForDomain(origin: Name): ResourceKey | undefined {
    return this.byDomain.get(nameKey(origin));
  }

  acceptedZones(): ResourceKey[] {
    return [...this.byDomain.values()];
  }

  setClass(zoneClass: DNSZoneClass): Affected {
    this.resolveAll();
    this.classes.set(zoneClass.metadata.name, zoneClass);
    return this.classChanged(zoneClass.metadata.name);
  }

  deleteClass(name: string): Affected {
    this.resolveAll();
    this.classes.delete(name);
    return this.classChanged(name);
  }

  setZone(zone: DNSZone): Affected {
    this.resolveAll();
    const key = resourceKey(zone.metadata);
    const before = this.zones.get(key);
    this.zones.set(key, zone);
    const affected = this.recomputeZones();
    affected.zones.add(key);
    // The parent publishes the child's NS, glue and DS: a change of the child may change the parent.
    const verdict = this.zoneVerdict(key);
    if (verdict?.accepted && verdict.parent !== undefined) affected.zones.add(verdict.parent);
    if (
      before &&
      JSON.stringify(before.spec.delegations ?? []) !== JSON.stringify(zone.spec.delegations ?? [])
    ) {
      // Delegations gate the record sets of other namespaces: those it held may no longer be admitted.
      const slots = [...this.membership.slots(key), ...this.byZoneRef.slots(key)];
      mergeAffected(affected, this.reresolve(slots));
    }
    return affected;
  }

  deleteZone(key: ResourceKey): Affected {
    this.resolveAll();
    this.zones.delete(key);
    const affected = this.recomputeZones();
    affected.zones.add(key);
    return affected;
  }

  /**
   * Loads many objects at once (start-up, resync): zone verdicts are computed once for the whole set
   * instead of once per zone, and every record is resolved once.
   */
  load(
    classes: Iterable<DNSZoneClass>,
    zones: Iterable<DNSZone>,
    records: Iterable<DNSRecordSet>,
    /** The records' keys in the same order, when the caller has them (kept instead of copies). */
    recordKeys?: readonly ResourceKey[],
    /**
     * `zonesOnly`: the caller takes every record set and every zone's members itself (a controller's
     * first look, before any zone has a model): the affected record sets are not listed, only the
     * zones, which saves a set per zone and an entry per record set that nobody would read; and the
     * record sets naming a zone in spec.zoneRef are resolved when first read, zone by zone (see
     * `unresolvedRefs`), those without a zoneRef at once.
     * `slots`: the records' slots in `table`, in the same order, when a holder holds them already
     * (the feed): taken as they are instead of looking each key up again.
     */
    options: { zonesOnly?: boolean; slots?: readonly number[] } = {},
  ): Affected {
    this.resolveAll();
    // Deferred only on a catalog holding no record set yet: one held already (a second load) may have
    // moved to another zone's zoneRef, which the lists read lazily would not see until that zone's is.
    const defer = options.zonesOnly === true && this.records.size === 0;
    for (const c of classes) this.classes.set(c.metadata.name, c);
    for (const z of zones) this.zones.set(resourceKey(z.metadata), z);
    const list = Array.isArray(records) ? (records as readonly DNSRecordSet[]) : [...records];
    // Slots given for every record set are taken as they are (and resolved from that list, not a
    // copy of it); otherwise each key is looked up.
    const given = options.slots?.length === list.length ? options.slots : undefined;
    const slots: number[] = [];
    // Record sets of one zone mostly come one after the other: their zoneRef's key is made once.
    const refs = new LastZoneRef();
    // Most record sets naming their zone (as a sample of them says): the list by zoneRef, not dense
    // (a folder may name none), gets room for every slot at once instead of growing by half.
    let named = 0;
    for (let k = 0; k < SAMPLE && list.length > 0; k++) {
      if (list[Math.floor((k * list.length) / SAMPLE)]!.spec.zoneRef) named++;
    }
    if (named * 2 > SAMPLE) this.byZoneRef.reserve(this.table.size + (given === undefined ? list.length : 0));
    // Deferred: the record sets without a zoneRef, resolved now (any zone may hold them).
    const refless: number[] = [];
    let lastRef: ResourceKey | undefined;
    for (let i = 0; i < list.length; i++) {
      const rs = list[i]!;
      const slot =
        given !== undefined
          ? this.table.holdSlot(given[i]!, Holder.catalog)
          : this.table.hold(recordKeys?.[i] ?? resourceKey(rs.metadata), Holder.catalog);
      const ref = refs.of(rs);
      this.placeRecord(slot, rs, ref);
      if (given === undefined) slots.push(slot);
      if (!defer) continue;
      if (ref === undefined) refless.push(slot);
      else if (ref !== lastRef) {
        this.unresolvedRefs.add(ref);
        lastRef = ref;
      }
    }
    const affected = mergeAffected(
      this.recomputeZones(false),
      this.reresolve(defer ? refless : (given ?? slots), !defer),
    );
    for (const z of this.zones.keys()) affected.zones.add(z);
    return affected;
  }

  setRecord(rs: DNSRecordSet, key: ResourceKey = resourceKey(rs.metadata)): Affected {
    if (this.unresolvedRefs.size > 0) {
      // The zones it named and names now hold what they would have held had every record set been
      // resolved at the first look: where it was and who else is there (no other list changes).
      this.resolveRefsAt(this.table.slotOf(key));
      const after = zoneRefOf(rs);
      if (after !== undefined) this.resolveRefs(after);
    }
    return this.reresolve([this.holdRecord(key, rs)]);
  }

  /** Holds the record set in the table (its zoneRef indexed), not resolved yet; returns its slot. */
  private holdRecord(key: ResourceKey, rs: DNSRecordSet): number {
    return this.placeRecord(this.table.hold(key, Holder.catalog), rs, zoneRefOf(rs));
  }

  /** Keeps the record set at its slot (held by the catalog), indexed by the zone its zoneRef names. */
  private placeRecord(slot: number, rs: DNSRecordSet, ref: ResourceKey | undefined): number {
    this.byZoneRef.move(slot, ref);
    if (this.recordSets.get(slot) === undefined) this.records.count++;
    this.recordSets.set(slot, rs);
    return slot;
  }

  /**
   * A newer version of a record set the catalog holds whose spec is the same object (a status,
   * finalizer or resource-version change in the store): held instead of the old one, changing
   * nothing the catalog decides. Other versions go through `setRecord`. `slot` is the record set's
   * slot in `table` (the caller has looked its key up already).
   */
  refreshRecord(rs: DNSRecordSet, slot: number): void {
    const held = slot < 0 ? undefined : this.recordSets.get(slot);
    if (held !== undefined && held !== rs && held.spec === rs.spec) this.recordSets.set(slot, rs);
  }

  /** Judges every zone again (the answers of `waiting` changed). */
  rejudge(): Affected {
    this.resolveAll();
    return this.recomputeZones();
  }

  /**
   * Notes that a DNSZone exists but was refused before the catalog could see it (its manifest fails
   * validation, so it is never set here), or with `undefined` that this is over. Record sets naming it
   * in spec.zoneRef then say that it is refused and why, instead of that it does not exist.
   */
  setZoneRefused(key: ResourceKey, why: string | undefined): Affected {
    if (why === undefined ? !this.refusedElsewhere.has(key) : this.refusedElsewhere.get(key) === why) {
      return noneAffected();
    }
    if (why === undefined) this.refusedElsewhere.delete(key);
    else this.refusedElsewhere.set(key, why);
    // Only the record sets naming it change: resolved first as a first look would have.
    this.resolveRefs(key);
    return this.reresolve(this.byZoneRef.slots(key));
  }

  deleteRecord(key: ResourceKey): Affected {
    const slot = this.table.slotOf(key);
    this.resolveRefsAt(slot);
    const before = slot < 0 ? undefined : this.resolutionAt(slot);
    if (slot >= 0 && this.table.held(slot, Holder.catalog)) {
      this.byZoneRef.move(slot, undefined);
      this.membership.move(slot, undefined);
      this.unindexNs(slot);
      if (this.recordSets.get(slot) !== undefined) this.records.count--;
      this.table.release(slot, Holder.catalog);
    }
    const affected = noneAffected();
    affected.records.add(key);
    if (before?.resolved) {
      affected.zones.add(before.zone);
      affected.recordsByZone.set(before.zone, new Set([key]));
    }
    return affected;
  }

  private classChanged(name: string): Affected {
    const affected = this.recomputeZones();
    for (const [key, zone] of this.zones) if (zone.spec.className === name) affected.zones.add(key);
    return affected;
  }

  /**
   * Recomputes every zone verdict (cheap: a map walk per zone) and re-resolves the records whose zone
   * could have changed: those in zones that appeared, disappeared or changed verdict, those in the
   * parent zones of such zones, and those without a zone.
   */
  private recomputeZones(resolveRecords = true): Affected {
    const previous = this.verdicts;
    const previousDomains = this.byDomain;

    const invalid = new Map<ResourceKey, ZoneVerdict>();
    const candidates: Candidate[] = [];
    for (const [key, zone] of this.zones) {
      try {
        const origin = zoneOrigin(zone);
        candidates.push({
          key,
          zone,
          origin,
          domain: nameKey(origin),
          labels: labelCount(origin),
          created: zone.metadata.creationTimestamp ?? '',
          incumbent: false,
          rank: Number.POSITIVE_INFINITY,
          since: Number.POSITIVE_INFINITY,
          waiting: this.waiting?.(zone, this.classes.get(zone.spec.className)) ?? false,
        });
      } catch (e) {
        invalid.set(key, {
          accepted: false,
          reason: 'Invalid',
          message: `spec.domainName ${JSON.stringify(zone.spec.domainName)}: ${errorText(e)}`,
        });
      }
    }
    // Judged again with the zones just accepted counted as served, until nothing changes (ADR 0013):
    // the outcome never depends on when the next change comes. Usually one pass; every further pass
    // serves at least one more zone.
    let before = previous;
    for (let pass = 0; ; pass++) {
      const again = this.judgeZones(candidates, invalid, before);
      if (!again || pass >= MAX_PASSES) break;
      before = this.verdicts;
    }

    const affected = noneAffected();
    const touched = new Set<ResourceKey>();
    for (const key of new Set([...previous.keys(), ...this.verdicts.keys()])) {
      if (!sameVerdict(previous.get(key), this.verdicts.get(key))) touched.add(key);
    }
    for (const key of touched) {
      affected.zones.add(key);
      const now = this.verdicts.get(key);
      const before = previous.get(key);
      for (const v of [now, before]) {
        if (v?.accepted && v.parent !== undefined) affected.zones.add(v.parent);
      }
    }
    // Domains that appeared or disappeared move records between a zone and its ancestors (and decide
    // which names of the parent may hold NS or CNAME, and who publishes the DS at a cut).
    const recordZones = new Set<ResourceKey>([UNRESOLVED]);
    for (const [domain, key] of this.byDomain) {
      if (previousDomains.get(domain) !== key) {
        recordZones.add(key);
        const p = this.verdicts.get(key);
        if (p?.accepted && p.parent !== undefined) recordZones.add(p.parent);
      }
    }
    for (const [domain, key] of previousDomains) {
      if (this.byDomain.get(domain) !== key) {
        recordZones.add(key);
        const p = previous.get(key);
        if (p?.accepted && p.parent !== undefined) recordZones.add(p.parent);
        // its records fall back to the nearest remaining ancestor, found by re-resolving them
      }
    }
    if (!resolveRecords) return affected;
    const toResolve: number[] = [];
    for (const zone of recordZones) for (const r of this.membership.slots(zone)) toResolve.push(r);
    // Records that name a touched zone explicitly.
    for (const zone of touched) for (const r of this.byZoneRef.slots(zone)) toResolve.push(r);
    return mergeAffected(affected, this.reresolve(toResolve));
  }

  /**
   * One pass over every zone (ADR 0013). Zones that are served — accepted in `before`, or, for a zone
   * the catalog has not judged yet (after a restart), with `Accepted=True` in its status — are judged
   * first, in the order they became served; then the others, oldest first (for equal creation times
   * the parent first). Each zone is judged against the zones judged before it that were accepted.
   * Returns whether a further pass could serve more zones.
   */
  private judgeZones(
    candidates: Candidate[],
    invalid: ReadonlyMap<ResourceKey, ZoneVerdict>,
    before: ReadonlyMap<ResourceKey, ZoneVerdict>,
  ): boolean {
    const servedOrder = this.servedOrder;
    for (const c of candidates) {
      const prior = before.get(c.key);
      c.rank = Number.POSITIVE_INFINITY;
      c.since = Number.POSITIVE_INFINITY;
      if (prior !== undefined) {
        // The catalog's own verdict decides; a status can be older than it.
        c.incumbent = prior.accepted && nameKey(prior.origin) === c.domain;
        if (c.incumbent) c.rank = servedOrder.get(c.key) ?? Number.POSITIVE_INFINITY;
      } else {
        const since = acceptedSince(c.zone);
        c.incumbent = since !== undefined;
        if (since !== undefined) c.since = since;
      }
    }
    candidates.sort(judgingOrder);
    this.incumbents = new Set(candidates.filter((c) => c.incumbent).map((c) => c.key));

    this.verdicts = new Map(invalid);
    this.byDomain = new Map();
    this.children = new Map();
    this.servedOrder = new Map();
    this.aboveChild = new Map();

    const candidateDomains = new Set(candidates.map((c) => c.domain));
    /** Accepted zones judged so far below each candidate domain, in the order judged. */
    const below = new Map<string, Candidate[]>();
    /** Domains claimed by zones created at the same time (all refused), per domain. */
    const tied = new Map<string, Candidate[]>();
    /** Zones of one domain, group (served or not) and creation time: judged together. */
    const peers = new Map<string, Candidate[]>();
    for (const c of candidates) getOrInsert(peers, peerKey(c), () => []).push(c);
    const judged = new Set<ResourceKey>();
    const notDelegated: { candidate: Candidate; parent: ResourceKey }[] = [];

    const accept = (c: Candidate) => {
      // The parent is set once every zone is judged: a newer zone may come between.
      this.verdicts.set(c.key, {
        accepted: true,
        origin: c.origin,
        zoneClass: this.classes.get(c.zone.spec.className)!,
      });
      this.byDomain.set(c.domain, c.key);
      this.servedOrder.set(c.key, this.servedOrder.size);
      for (let name = c.origin; name !== '.'; ) {
        name = parentName(name);
        const k = nameKey(name);
        if (candidateDomains.has(k)) getOrInsert(below, k, () => []).push(c);
      }
    };
    const refuse = (c: Candidate, verdict: ZoneVerdict) => {
      this.verdicts.set(c.key, verdict);
      if (!verdict.accepted && verdict.reason === 'NotDelegated') {
        const parent = this.deepestZoneAbove(c.origin);
        if (parent !== undefined) notDelegated.push({ candidate: c, parent });
      }
    };

    for (const candidate of candidates) {
      if (judged.has(candidate.key)) continue;
      const group = peers.get(peerKey(candidate))!;
      const older = below.get(candidate.domain) ?? [];
      if (group.length === 1) {
        judged.add(candidate.key);
        const refusal = this.refusal(candidate, older, tied);
        if (refusal) refuse(candidate, refusal);
        else accept(candidate);
        continue;
      }
      // Zones for one domain created at the same time: age cannot decide, and names must not. If more
      // than one of them could be served, none is (Conflict) until all but one are deleted.
      const outcomes = group.map((c) => ({ c, refusal: this.refusal(c, older, tied) }));
      for (const { c } of outcomes) judged.add(c.key);
      const servable = outcomes.filter((o) => o.refusal === undefined).map((o) => o.c);
      for (const { c, refusal } of outcomes) if (refusal) refuse(c, refusal);
      if (servable.length === 1) accept(servable[0]!);
      else if (servable.length > 1) {
        tied.set(candidate.domain, servable);
        for (const c of servable) {
          const others = servable.filter((o) => o !== c).map((o) => `DNSZone ${o.key}`);
          refuse(c, {
            accepted: false,
            reason: 'Conflict',
            origin: c.origin,
            message:
              `${c.origin} is also claimed by ${others.join(', ')}, created at the same time (${c.created || 'no creation time'}); ` +
              'which zone came first cannot be told, so none of them is served: delete one of the two',
          });
        }
      }
    }

    // The nearest accepted ancestor publishes a zone's NS and glue; the names between them may not
    // hold a delegation or an alias of the parent.
    for (const key of this.byDomain.values()) {
      const verdict = this.verdicts.get(key) as Extract<ZoneVerdict, { accepted: true }>;
      const parent = this.deepestZoneAbove(verdict.origin);
      if (parent === undefined) continue;
      this.verdicts.set(key, { ...verdict, parent });
      getOrInsert(this.children, parent, () => new Set()).add(key);
      const parentDomain = nameKey((this.verdicts.get(parent) as { origin: Name }).origin);
      for (let name = parentName(verdict.origin); name !== '.'; name = parentName(name)) {
        const k = nameKey(name);
        if (k === parentDomain) break;
        const existing = this.aboveChild.get(k);
        if (existing === undefined || key < existing) this.aboveChild.set(k, key);
      }
    }
    // A zone refused for want of its parent's delegation may now have a nearer accepted ancestor
    // (a zone judged after it); the next pass judges it after that one.
    return notDelegated.some(({ candidate, parent }) => this.deepestZoneAbove(candidate.origin) !== parent);
  }

  /**
   * Why a zone is refused, judged against the zones accepted so far (served zones first, then the
   * older ones), or undefined when it is accepted. `older` lists the accepted zones below it, in the
   * order they were judged; `tied` the domains refused to zones created at the same time.
   */
  private refusal(
    candidate: Candidate,
    older: readonly Candidate[],
    tied: ReadonlyMap<string, readonly Candidate[]>,
  ): ZoneVerdict | undefined {
    const { zone, origin } = candidate;
    const holder = this.byDomain.get(candidate.domain);
    if (holder !== undefined) {
      const holderServed = this.incumbents.has(holder);
      return {
        accepted: false,
        reason: 'Conflict',
        origin,
        message:
          holderServed && !candidate.incumbent
            ? `${origin} is already served by DNSZone ${holder}; a zone that is served keeps its domain, also ` +
              'against zones created before it that were not served: delete one of the two'
            : `${origin} is already served by DNSZone ${holder}, which ${holderServed ? 'was served first' : 'is older'}; delete one of the two`,
      };
    }
    const tie = tied.get(candidate.domain);
    if (tie !== undefined) {
      return {
        accepted: false,
        reason: 'Conflict',
        origin,
        message:
          `${origin} is claimed by ${tie.map((c) => `DNSZone ${c.key}`).join(' and ')}, which are older and were ` +
          'created at the same time (so none of them is served); delete all but one of these zones',
      };
    }
    if (!this.classes.has(zone.spec.className)) {
      return {
        accepted: false,
        reason: 'ClassNotFound',
        origin,
        message: `DNSZoneClass ${JSON.stringify(zone.spec.className)} does not exist; create it or fix spec.className`,
      };
    }
    const zoneClass = this.classes.get(zone.spec.className)!;
    const section = zoneClass.spec.allowPublicSuffixZones === true ? undefined : publicSuffixSection(origin);
    if (section !== undefined) {
      return {
        accepted: false,
        reason: 'PublicSuffix',
        origin,
        message:
          `${origin} is a public suffix (${section} section of the Public Suffix List): unrelated parties register ` +
          `names below it, so it is not served; create the zone for your own domain below it instead, or, if this ` +
          `installation really operates the suffix, set allowPublicSuffixZones: true on DNSZoneClass ${zoneClass.metadata.name}`,
      };
    }
    const namespace = zone.metadata.namespace ?? '';
    // ADR 0003: below a zone of another namespace judged before it, that zone's delegation is needed.
    const parent = this.deepestZoneAbove(origin);
    if (parent !== undefined) {
      const parentZone = this.zones.get(parent)!;
      const parentOrigin = (this.verdicts.get(parent) as { origin: Name }).origin;
      const relative = relativeName(origin, parentOrigin);
      const parentNamespace = parentZone.metadata.namespace ?? '';
      if (!zoneAdmits(parentNamespace, parentZone.spec.delegations, namespace, relative, 'NS')) {
        return {
          accepted: false,
          reason: 'NotDelegated',
          origin,
          message:
            `${origin} is inside zone ${parentOrigin} (DNSZone ${parent}), which does not delegate ${relative} ` +
            `to namespace ${namespace}; its owners can add a delegation {namespaces: [${namespace}], names: [${relative}], types: [NS]}`,
        };
      }
    }
    // ADR 0013: above zones of other namespaces judged before it, this zone must delegate to each.
    const shadowed = older.filter((c) => {
      const childNamespace = c.zone.metadata.namespace ?? '';
      if (childNamespace === namespace) return false;
      return !zoneAdmits(
        namespace,
        zone.spec.delegations,
        childNamespace,
        relativeName(c.origin, origin),
        'NS',
      );
    });
    const first = shadowed[0];
    if (first !== undefined) {
      const childNamespace = first.zone.metadata.namespace ?? '';
      const relative = relativeName(first.origin, origin);
      const more =
        shadowed.length > 1
          ? ` (and ${shadowed.length - 1} more zone${shadowed.length > 2 ? 's' : ''} of other namespaces below it: ` +
            `${shadowed
              .slice(1, 4)
              .map((c) => `DNSZone ${c.key}`)
              .join(', ')}${shadowed.length > 4 ? ', ...' : ''})`
          : '';
      const servedBy = first.incumbent ? 'already served by DNSZone' : 'served by the older DNSZone';
      return {
        accepted: false,
        reason: 'ZoneShadowed',
        origin,
        message:
          `${origin} would take over ${first.origin}, ${servedBy} ${first.key} of namespace ${childNamespace}${more}; ` +
          `to serve ${origin} above it, add a delegation {namespaces: [${childNamespace}], names: [${relative}], types: [NS]} ` +
          'to spec.delegations',
      };
    }
    return undefined;
  }

  /** The accepted zone whose origin is the nearest strict ancestor of `origin`. */
  private deepestZoneAbove(origin: Name): ResourceKey | undefined {
    let name = origin;
    while (name !== '.') {
      name = parentName(name);
      const key = this.byDomain.get(nameKey(name));
      if (key !== undefined) return key;
    }
    return undefined;
  }

  /** The accepted zone whose origin is `name` or its nearest ancestor. */
  private deepestZoneAtOrAbove(name: Name): ResourceKey | undefined {
    const here = this.byDomain.get(nameKey(name));
    return here ?? (name === '.' ? undefined : this.deepestZoneAbove(name));
  }

  /**
   * Resolves the record sets in these slots again. With `list` false the affected record sets are not
   * listed (nor their zones: the caller takes every zone), only resolved (see `load`).
   */
  private reresolve(slots: readonly number[], list = true): Affected {
    const affected = noneAffected();
    const lookups = new ZoneLookups();
    // Indexed: a first load's million slots are walked in code optimised while it runs, where an
    // iterator's `next` is a call per slot.
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      const rs = this.recordSets.get(slot);
      if (!rs) continue;
      const fromZone = this.membership.nameOf(slot) ?? UNRESOLVED;
      // The zone key its zoneRef names is the name of its byZoneRef list: not built again.
      const after = this.resolve(rs, this.byZoneRef.nameOf(slot), lookups);
      this.resolved.set(slot, after.resolved ? after.fqdn : after);
      if (this.nsNameOf.size > 0) this.unindexNs(slot);
      if (after.resolved && rs.spec.type === 'NS') this.indexNs(slot, after.fqdn);
      const toZone = after.resolved ? after.zone : UNRESOLVED;
      // Moved only when its zone changed: a record set keeps its place in its zone's list (after a
      // first look, those without a zoneRef come first: resolved before the lists by zoneRef).
      this.membership.move(slot, toZone);
      if (!list) continue;
      const key = this.table.keyOf(slot);
      affected.records.add(key);
      for (const zone of [fromZone, toZone]) {
        if (zone === UNRESOLVED) continue;
        affected.zones.add(zone);
        getOrInsert(affected.recordsByZone, zone, () => new Set()).add(key);
        // A/AAAA in a child zone may be glue its parent publishes.
        const v = this.verdicts.get(zone);
        if ((rs.spec.type === 'A' || rs.spec.type === 'AAAA') && v?.accepted && v.parent !== undefined) {
          affected.zones.add(v.parent);
        }
      }
    }
    return affected;
  }

  /**
   * Adoption: explicit zoneRef, else the deepest accepted zone containing the name (see ADR 0003).
   * `refKey`: the key of the zone spec.zoneRef names, when the caller has it. `lookups`: what the
   * record set resolved before it in the same batch looked up about its zone (no zone changed since).
   */
  resolve(rs: DNSRecordSet, refKey?: ResourceKey, lookups?: ZoneLookups): RecordResolution {
    const namespace = rs.metadata.namespace ?? '';
    const { name, type, zoneRef } = rs.spec;
    let zoneKey: ResourceKey | undefined;
    let fqdn: Name;
    if (zoneRef) {
      // Kept in the record's resolution: one string per zone, not one per record set.
      zoneKey =
        refKey ??
        this.zoneKeys.get(resourceKey({ name: zoneRef.name, namespace: zoneRef.namespace ?? namespace }));
      // Record sets of one zone come one after the other: its verdict is looked up once for them.
      let verdict: ZoneVerdict | undefined;
      let hasChildren: boolean;
      if (lookups !== undefined && lookups.key === zoneKey) {
        verdict = lookups.verdict;
        hasChildren = lookups.children;
      } else {
        verdict = this.verdicts.get(zoneKey);
        hasChildren = this.children.has(zoneKey);
        if (lookups !== undefined) lookups.set(zoneKey, verdict, this.zones.get(zoneKey), hasChildren);
      }
      if (!verdict) {
        const why = this.refusedElsewhere.get(zoneKey);
        return why === undefined
          ? unresolved('ZoneNotFound', 'ZONE_REF_NOT_FOUND', [
              object('DNSZone', zoneKey),
              ' (spec.zoneRef) does not exist',
            ])
          : unresolved('ZoneNotFound', 'ZONE_REF_INVALID', [
              object('DNSZone', zoneKey),
              ' (spec.zoneRef) is refused',
              // What its manifest's validation said: about that zone's object, read in its status by
              // its own namespace (a record set of another one reads only that it is refused).
              namespaceOfKey(zoneKey) === namespace
                ? scoped(namespaceOfKey(zoneKey), `: ${why}`, '')
                : '; its owners see why in its status',
            ]);
      }
      if (!verdict.accepted) {
        return unresolved(
          'ZoneNotFound',
          'ZONE_REF_REFUSED',
          [
            object('DNSZone', zoneKey),
            ` (spec.zoneRef) is refused (${verdict.reason})`,
            // The zone's own message may name the zones of any namespace, and its domain: only a
            // record set of the zone's own namespace reads it (in its status too).
            namespaceOfKey(zoneKey) === namespace
              ? ownerOnly(`: ${verdict.message}`)
              : '; its owners see why in its status',
          ],
          { zone: zoneKey },
        );
      }
      try {
        fqdn = parseName(name, verdict.origin);
      } catch (e) {
        return unresolved('Invalid', 'NAME_INVALID', [`spec.name: ${errorText(e)}`], { zone: zoneKey });
      }
      // A relative name (one not ending in a dot) is made inside the origin: only an absolute one can
      // lie outside.
      if (name.endsWith('.') && !isInDomain(fqdn, verdict.origin)) {
        return unresolved(
          'OutOfZone',
          'OUT_OF_ZONE',
          [
            `${fqdn} is outside zone ${verdict.origin}`,
            aside('DNSZone', zoneKey),
            '; use a name inside the zone or another zoneRef',
          ],
          { zone: zoneKey, fqdn, origin: verdict.origin },
        );
      }
      // A zone with no accepted zone below it is the deepest at or above every name inside it: the
      // walk up from the name (a name key built per label) is needed only under a zone with children.
      const deepest = hasChildren ? this.deepestZoneAtOrAbove(fqdn) : zoneKey;
      if (deepest !== undefined && deepest !== zoneKey) {
        const child = this.verdicts.get(deepest) as { origin: Name };
        const dsAtCut = type === 'DS' && nameKey(child.origin) === nameKey(fqdn);
        if (!dsAtCut) {
          return unresolved(
            'OutOfZone',
            'BELOW_ZONE_CUT',
            [
              `${fqdn} is at or below the zone cut ${child.origin} of `,
              object('DNSZone', deepest),
              '; publish it in that zone',
            ],
            { zone: zoneKey, fqdn, origin: verdict.origin },
          );
        }
      }
    } else {
      try {
        fqdn = parseName(name);
      } catch (e) {
        // A name is absolute only when it ends in an unescaped dot: "www\\." is one relative label.
        if (e instanceof DnsError && e.code === 'RELATIVE_NAME_WITHOUT_ORIGIN') {
          return unresolved('Invalid', 'NAME_RELATIVE', [
            `spec.name ${JSON.stringify(name)} is relative but spec.zoneRef is not set; set spec.zoneRef or write the absolute name with a trailing dot`,
          ]);
        }
        return unresolved('Invalid', 'NAME_INVALID', [`spec.name: ${errorText(e)}`]);
      }
      zoneKey = this.deepestZoneAtOrAbove(fqdn);
      // RFC 4035 §2.4: a DS RRset lives on the parent side of the zone cut.
      if (zoneKey !== undefined && type === 'DS') {
        const v = this.verdicts.get(zoneKey) as { origin: Name; parent?: ResourceKey };
        if (nameKey(v.origin) === nameKey(fqdn)) zoneKey = v.parent;
      }
      if (zoneKey === undefined) {
        return unresolved(
          'ZoneNotFound',
          'NO_ZONE',
          [`no served DNSZone contains ${fqdn}; create the zone or fix spec.name`],
          { fqdn },
        );
      }
    }
    // RFC 4592 §4.2: an NS RRset at a wildcard name delegates nothing and its meaning is undefined.
    // The schema refuses "*" and "*.x" as written; this catches every spelling of the star ("\\*", "\\042").
    if (type === 'NS' && isWildcardName(fqdn)) {
      return unresolved(
        'Invalid',
        'NS_WILDCARD',
        [
          `an NS record set cannot have a wildcard owner name (${fqdn}): a wildcard does not delegate (RFC 4592 §4.2); publish NS records at each name to delegate`,
        ],
        { zone: zoneKey, fqdn },
      );
    }
    const known = lookups !== undefined && lookups.key === zoneKey;
    const verdict = (known ? lookups.verdict : this.verdicts.get(zoneKey)) as { origin: Name };
    const zone = (known ? lookups.zone : this.zones.get(zoneKey))!;
    const zoneNamespace = zone.metadata.namespace ?? '';
    // Above a zone served below this name, an NS record set would make the name a zone cut that ends
    // this zone's authority there, hiding the zone below behind a referral (RFC 1034 §4.2.1), and a
    // CNAME would alias the name that resolvers minimising their queries (RFC 9156) ask on their way
    // down to it. Whoever publishes it, it only ever hides that zone.
    if (type === 'NS' || type === 'CNAME') {
      const below = this.aboveChild.get(nameKey(fqdn));
      if (below !== undefined) {
        const belowOrigin = (this.verdicts.get(below) as { origin: Name }).origin;
        const where = { zone: zoneKey, fqdn, origin: verdict.origin };
        return type === 'NS'
          ? unresolved(
              'Conflict',
              'NS_ABOVE_ZONE',
              [
                `an NS record set at ${fqdn} would delegate it away from zone ${verdict.origin} and hide zone ${belowOrigin}`,
                aside('DNSZone', below),
                ", which is served below it (RFC 1034 §4.2.1: a zone cut ends the parent's authority for every name " +
                  `below it); delete this record set: zone ${belowOrigin} is delegated by its DNSZone`,
              ],
              where,
            )
          : unresolved(
              'Conflict',
              'CNAME_ABOVE_ZONE',
              [
                `a CNAME at ${fqdn} would alias a name above zone ${belowOrigin}`,
                aside('DNSZone', below),
                ', which is served below it: a CNAME owner has no other data and no names below it (RFC 1034 §3.6.2), ' +
                  'and resolvers that minimise their queries (RFC 9156) would follow the alias instead of reaching ' +
                  'that zone; delete this record set',
              ],
              where,
            );
      }
    }
    // RFC 4035 §2.4: the DS RRset at a cut is published in the parent but speaks for the child zone (its
    // trust anchor): when the child belongs to another namespace, that namespace publishes it, without a
    // delegation, and no other namespace can, whatever the parent's delegations say.
    if (type === 'DS') {
      const child = this.byDomain.get(nameKey(fqdn));
      const childNamespace = child !== undefined ? (this.zones.get(child)?.metadata.namespace ?? '') : '';
      if (child !== undefined && child !== zoneKey && childNamespace !== zoneNamespace) {
        if (namespace === childNamespace) return { resolved: true, zone: zoneKey, fqdn };
        return unresolved(
          'NotDelegated',
          'DS_OF_CHILD_ZONE',
          [
            `the DS record set at ${fqdn} is published in zone ${verdict.origin} but belongs to zone ${fqdn}`,
            aside('DNSZone', child),
            ' of ',
            namespaceOf(childNamespace),
            ' (RFC 4035 §2.4): only a DNSRecordSet of ',
            scoped(
              childNamespace,
              `namespace ${childNamespace} may publish it; create it there`,
              "that zone's namespace may publish it",
            ),
          ],
          { zone: zoneKey, fqdn, origin: verdict.origin },
        );
      }
    }
    // The name relative to the zone matters only to another namespace (a zone admits its own).
    const relative = namespace === zoneNamespace ? '' : relativeName(fqdn, verdict.origin);
    if (!zoneAdmits(zoneNamespace, zone.spec.delegations, namespace, relative, type)) {
      return unresolved(
        'NotDelegated',
        'NOT_DELEGATED',
        [
          `zone ${verdict.origin}`,
          aside('DNSZone', zoneKey),
          ` does not delegate ${relative} ${type} to `,
          namespaceOf(namespace),
          '; its owners can add a delegation',
          scoped(namespace, ` {namespaces: [${namespace}], names: [${relative}], types: [${type}]}`, ''),
        ],
        { zone: zoneKey, fqdn, origin: verdict.origin },
      );
    }
    return { resolved: true, zone: zoneKey, fqdn };
  }
}

/**
 * What `Catalog.resolve` looked up about the last zone a record set's zoneRef named, for the next
 * record set of one batch (`reresolve`) naming the same zone: its verdict, object and whether an
 * accepted zone lies below it. Valid only while no zone changes (within one batch).
 */
export class ZoneLookups {
  key: ResourceKey | undefined;
  verdict: ZoneVerdict | undefined;
  zone: DNSZone | undefined;
  children = false;

  set(
    key: ResourceKey,
    verdict: ZoneVerdict | undefined,
    zone: DNSZone | undefined,
    children: boolean,
  ): void {
    this.key = key;
    this.verdict = verdict;
    this.zone = zone;
    this.children = children;
  }
}

/** The key of the zone a record set names in spec.zoneRef, if it names one. */
function zoneRefOf(rs: DNSRecordSet): ResourceKey | undefined {
  const ref = rs.spec.zoneRef;
  return ref ? resourceKey({ name: ref.name, namespace: ref.namespace ?? rs.metadata.namespace }) : undefined;
}

/** `zoneRefOf`, remembering the last zone named: the same string while the zone and namespace repeat. */
class LastZoneRef {
  private name: string | undefined;
  private namespace: string | undefined;
  private key: ResourceKey | undefined;

  of(rs: DNSRecordSet): ResourceKey | undefined {
    const ref = rs.spec.zoneRef;
    if (!ref) return undefined;
    const namespace = ref.namespace ?? rs.metadata.namespace;
    if (this.key === undefined || ref.name !== this.name || namespace !== this.namespace) {
      this.name = ref.name;
      this.namespace = namespace;
      this.key = resourceKey({ name: ref.name, namespace });
    }
    return this.key;
  }
}

/**
 * The record sets a catalog holds, by key: a read-only map over its column of the record table,
 * iterated in the order the table took their keys.
 */
export class RecordSets {
  private readonly table: RecordTable;
  private readonly column: RefColumn<DNSRecordSet>;
  /** Kept by the catalog. */
  count = 0;

  constructor(table: RecordTable, column: RefColumn<DNSRecordSet>) {
    this.table = table;
    this.column = column;
  }

  get size(): number {
    return this.count;
  }

  get(key: ResourceKey): DNSRecordSet | undefined {
    const slot = this.table.slotOf(key);
    return slot < 0 ? undefined : this.column.get(slot);
  }

  has(key: ResourceKey): boolean {
    return this.get(key) !== undefined;
  }

  *entries(): IterableIterator<[ResourceKey, DNSRecordSet]> {
    for (const [key, slot] of this.table.entries()) {
      const rs = this.column.get(slot);
      if (rs !== undefined) yield [key, rs];
    }
  }

  *keys(): IterableIterator<ResourceKey> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): IterableIterator<DNSRecordSet> {
    for (const [, rs] of this.entries()) yield rs;
  }

  [Symbol.iterator](): IterableIterator<[ResourceKey, DNSRecordSet]> {
    return this.entries();
  }
}

/** A zone's origin: its `spec.domainName` as an absolute name (throws a DnsError for a bad name). */
export function zoneOrigin(zone: DNSZone): Name {
  const domain = zone.spec.domainName;
  return parseName(domain.endsWith('.') ? domain : `${domain}.`);
}

/** The namespace of an object's key (`namespace/name`; '' for a key without one). */
function namespaceOfKey(key: ResourceKey): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

function errorText(e: unknown): string {
  return e instanceof DnsError || e instanceof Error ? e.message : String(e);
}

function sameVerdict(a: ZoneVerdict | undefined, b: ZoneVerdict | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.accepted !== b.accepted) return false;
  if (a.accepted && b.accepted) {
    return a.origin === b.origin && a.parent === b.parent && a.zoneClass === b.zoneClass;
  }
  return !a.accepted && !b.accepted && a.reason === b.reason && a.message === b.message;
}
