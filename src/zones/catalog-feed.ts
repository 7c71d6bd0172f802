import type { DNSRecordSet, DNSZone, DNSZoneClass, Kind, Resource } from '../api/index.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import { type Affected, Catalog } from './catalog.ts';
import { Holder, type RefColumn } from './record-table.ts';
import { type ResourceKey, resourceKey } from './resource-key.ts';

/** The kinds a Catalog holds, in the order they are loaded and listed. */
export const CATALOG_KINDS = ['DNSZoneClass', 'DNSZone', 'DNSRecordSet'] as const;

/** Whether a catalog holds objects of this kind (a Domain is not zone content). */
export function isCatalogKind(kind: Kind): kind is (typeof CATALOG_KINDS)[number] {
  return (CATALOG_KINDS as readonly string[]).includes(kind);
}

/**
 * The one way resources enter a Catalog, for the operator's controller, the data plane's zone
 * follower and `computeZones` alike: it dispatches each object by kind, leaves out objects being
 * deleted (they are no longer served), skips changes the catalog cannot see (status-only updates:
 * same generation, same deletion state), and returns the keys each change affected.
 */
export class CatalogFeed {
  readonly catalog: Catalog;
  /**
   * Per kind, per key: the generation and deletion state last fed. Maps by kind rather than one keyed
   * by a `kind/key` string built per object, and the state as one shared string per generation
   * (`observedState`): about 100 bytes less per record set (docs/benchmarks.md, memory budget).
   * Record sets' states are a column of the catalog's record table instead of a map.
   */
  private readonly seen = new Map<string, Map<ResourceKey, string>>();
  private readonly recordsSeen: RefColumn<string>;

  constructor(catalog: Catalog = new Catalog()) {
    this.catalog = catalog;
    this.recordsSeen = catalog.table.column(Holder.feed, true);
  }

  /**
   * Loads a whole set of objects in one judgement (which zones are served then depends only on the
   * objects, never on the order they are listed in; ADR 0013).
   */
  load(
    objects: Iterable<Resource>,
    options: {
      /** The objects' keys in the same order, when the caller has them (one string per object). */
      keys?: readonly ResourceKey[];
      /**
       * The record sets' slots in the catalog's table in the same order (-1 for none), when a holder
       * holds them already (the store that keeps them there): taken as they are, without a lookup of
       * each key. A slot that holds another key than the object's is not taken (the key is looked up).
       */
      slots?: readonly number[];
      /** See `Catalog.load`: only the zones are listed as affected. */
      zonesOnly?: boolean;
    } = {},
  ): Affected {
    const classes: DNSZoneClass[] = [];
    const zones: DNSZone[] = [];
    const records: DNSRecordSet[] = [];
    // The record sets' slots, which the feed holds first: the catalog takes them as they are, not by
    // looking each key up again (nor needs their keys).
    const recordSlots: number[] = [];
    const table = this.catalog.table;
    const givenSlots = options.slots;
    const givenKeys = options.keys;
    const list = Array.isArray(objects) ? (objects as readonly Resource[]) : [...objects];
    // Indexed: a first load's million objects are walked in code optimised while it runs, where an
    // iterator's `next` is a call per object.
    for (let index = 0; index < list.length; index++) {
      const object = list[index]!;
      const given = givenKeys?.[index];
      if (object.kind === 'Domain') continue;
      const key = given ?? resourceKey(object.metadata);
      const state = observedState(object);
      if (object.kind !== 'DNSRecordSet') {
        this.see(object.kind, key, state);
        if (object.metadata.deletionTimestamp) continue;
        if (object.kind === 'DNSZoneClass') classes.push(object);
        else zones.push(object);
        continue;
      }
      const at = givenSlots?.[index] ?? -1;
      const slot =
        at >= 0 && table.keyOf(at) === key ? table.holdSlot(at, Holder.feed) : table.hold(key, Holder.feed);
      this.recordsSeen.set(slot, state);
      if (object.metadata.deletionTimestamp) continue;
      records.push(object);
      recordSlots.push(slot);
    }
    return this.catalog.load(classes, zones, records, undefined, {
      zonesOnly: options.zonesOnly === true,
      slots: recordSlots,
    });
  }

  /**
   * An object was created or updated. Undefined when nothing the catalog holds changed (only its
   * status); an object whose deletion started leaves the catalog. `key` is the object's key when the
   * caller has it (a store event's): the catalog then keeps that string rather than a copy.
   */
  upsert(object: Resource, key: ResourceKey = resourceKey(object.metadata)): Affected | undefined {
    if (object.kind === 'Domain') return undefined;
    const state = observedState(object);
    if (object.kind === 'DNSRecordSet') {
      // One lookup of the key per event: the feed holds the slot from here on either way (a slot it
      // held already stays as it was; one it did not hold has no state that could match).
      const slot = this.catalog.table.hold(key, Holder.feed);
      if (this.recordsSeen.get(slot) === state) {
        // Only its status, finalizers or resource version changed: hold the new version, so that the
        // one the catalog held (with its own metadata) is not kept alive beside the store's.
        this.catalog.refreshRecord(object, slot);
        return undefined;
      }
      this.recordsSeen.set(slot, state);
    } else {
      if (this.seen.get(object.kind)?.get(key) === state) return undefined;
      this.see(object.kind, key, state);
    }
    return object.metadata.deletionTimestamp ? this.remove(object.kind, key) : this.set(object, key);
  }

  /** An object is gone. */
  delete(kind: Kind, key: ResourceKey): Affected {
    if (!isCatalogKind(kind)) return { zones: new Set(), records: new Set(), recordsByZone: new Map() };
    if (kind === 'DNSRecordSet') {
      const table = this.catalog.table;
      const slot = table.slotOf(key);
      if (slot >= 0) table.release(slot, Holder.feed);
    } else this.seen.get(kind)?.delete(key);
    return this.remove(kind, key);
  }

  private see(kind: Kind, key: ResourceKey, state: string): void {
    if (kind === 'DNSRecordSet') this.recordsSeen.set(this.catalog.table.hold(key, Holder.feed), state);
    else getOrInsert(this.seen, kind, () => new Map()).set(key, state);
  }

  private set(object: Exclude<Resource, { kind: 'Domain' }>, key: ResourceKey): Affected {
    if (object.kind === 'DNSZoneClass') return this.catalog.setClass(object);
    if (object.kind === 'DNSZone') return this.catalog.setZone(object);
    return this.catalog.setRecord(object, key);
  }

  private remove(kind: (typeof CATALOG_KINDS)[number], key: ResourceKey): Affected {
    if (kind === 'DNSZoneClass') return this.catalog.deleteClass(key);
    if (kind === 'DNSZone') return this.catalog.deleteZone(key);
    return this.catalog.deleteRecord(key);
  }
}

/**
 * Per zone, the record sets that may have changed since its last reconcile, collected from what the
 * feed reported, so that a zone update costs what changed rather than the whole zone.
 */
export class ZoneChanges {
  private readonly dirty = new Map<ResourceKey, Set<ResourceKey>>();

  /** Notes the record sets `affected` lists per zone. */
  note(affected: Affected): void {
    for (const [zone, keys] of affected.recordsByZone) {
      const set = getOrInsert(this.dirty, zone, () => new Set());
      for (const k of keys) set.add(k);
    }
  }

  /** Marks a zone as visited for a reason that touched none of its record sets. */
  touch(zone: ResourceKey): void {
    getOrInsert(this.dirty, zone, () => new Set());
  }

  /**
   * The record sets noted for the zone since the last take, and forgets them. Undefined when nothing
   * was noted: the zone's consumer has to look at all of its record sets.
   */
  take(zone: ResourceKey): Set<ResourceKey> | undefined {
    const set = this.dirty.get(zone);
    this.dirty.delete(zone);
    return set;
  }

  forget(zone: ResourceKey): void {
    this.dirty.delete(zone);
  }
}

/** `observedState` strings without DS records, one per generation and deletion state. */
const states = new Map<number, string>();

/**
 * What decides whether a change matters to the catalog: the spec generation, whether deletion started,
 * and for a zone the DS records its status reports (its parent publishes them at the cut).
 */
function observedState(object: Resource): string {
  const generation = object.metadata.generation ?? 0;
  const deleting = object.metadata.deletionTimestamp !== undefined;
  // Generations are non-negative integers: ~g marks the deleting state (-1 - g) apart.
  const slot = deleting ? ~generation : generation;
  let base = Number.isSafeInteger(generation) && generation >= 0 ? states.get(slot) : undefined;
  if (base === undefined) {
    base = [generation, deleting ? 'deleting' : 'live'].join('/');
    if (Number.isSafeInteger(generation) && generation >= 0 && states.size < 4096) states.set(slot, base);
  }
  const ds = object.kind === 'DNSZone' ? object.status?.dnssec?.ds : undefined;
  return ds && ds.length > 0 ? `${base}/${ds.join(',')}` : base;
}
