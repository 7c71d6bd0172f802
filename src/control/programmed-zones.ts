import type { Backend } from '../backends/backend.ts';
import { type Name, nameEquals } from '../dns/name.ts';
import type { RecordVerdict } from '../zones/assemble.ts';
import type { Catalog } from '../zones/catalog.ts';
import { Holder, type RecordTable, type RefColumn } from '../zones/record-table.ts';
import type { ResourceKey } from '../zones/resource-key.ts';

/** What a backend holds of one zone, as far as the controller knows. */
export interface ProgrammedState {
  origin: Name;
  serial: number;
  backend: Backend;
  /** The backend's state is unknown (a failed apply): send the whole zone next time. */
  needsFull: boolean;
}

/**
 * What each backend holds: per zone, its origin, serial and backend; per record set, the zone whose
 * programmed content includes it. A deleted record set's finalizer is held while a zone serves it, and
 * a zone that moves to a class with another backend is removed from the old backend first.
 *
 * A new process knows nothing of what an earlier one programmed: until a zone is first programmed (or
 * removed) in this process, its backend may still serve an earlier content, with record sets deleted
 * meanwhile. So a deleted record set of a zone not settled yet keeps its finalizer until the zone is
 * (`holdsDeleted`, `settled`): one flag per zone, and a waiting list only for such record sets.
 */
export class ProgrammedZones {
  private readonly catalog: Catalog;
  private readonly zones = new Map<ResourceKey, ProgrammedState>();
  private readonly table: RecordTable;
  /**
   * Per record set: the zone whose programmed content includes it, a column of the catalog's record
   * table (which keeps the slot while this holds it, also once the record set left the catalog).
   */
  private readonly records: RefColumn<ResourceKey>;
  /** Zones programmed or removed in this process: their backends hold no earlier process's content. */
  private readonly settledZones = new Set<ResourceKey>();
  /** Deleted record sets held for a zone not settled yet, reconciled again once it is. */
  private readonly waiting = new Map<ResourceKey, Set<ResourceKey>>();

  constructor(catalog: Catalog) {
    this.catalog = catalog;
    this.table = catalog.table;
    this.records = catalog.table.column(Holder.programmed);
  }

  get(key: ResourceKey): ProgrammedState | undefined {
    return this.zones.get(key);
  }

  set(key: ResourceKey, state: ProgrammedState): void {
    this.zones.set(key, state);
  }

  /**
   * Whether the zone is programmed at an origin other than `origin`: its domain changed in place (a
   * front door's zone whose API lets its domain change; a DNSZone's is immutable).
   */
  originChanged(key: ResourceKey, origin: Name): boolean {
    const previous = this.zones.get(key)?.origin;
    return previous !== undefined && !nameEquals(previous, origin);
  }

  /** Whether the zone is programmed in a backend other than `backend` (its class changed backend). */
  movedAway(key: ResourceKey, backend: Backend): boolean {
    const previous = this.zones.get(key)?.backend;
    return previous !== undefined && previous !== backend;
  }

  /** Whether a programmed zone serves the record set (its finalizer is held until none does). */
  serves(recordKey: ResourceKey): boolean {
    const slot = this.table.slotOf(recordKey);
    return slot >= 0 && this.records.get(slot) !== undefined;
  }

  /**
   * Whether a deleted record set that no zone serves as far as this process knows must still keep its
   * finalizer: its zone (`zoneKey`) was not programmed or removed in this process yet, so its backend
   * may still serve the record set as an earlier process left it. The record set is then noted to be
   * reconciled again when the zone is (`settled` returns it).
   */
  holdsDeleted(recordKey: ResourceKey, zoneKey: ResourceKey): boolean {
    if (this.settledZones.has(zoneKey)) return false;
    let waiting = this.waiting.get(zoneKey);
    if (!waiting) {
      waiting = new Set();
      this.waiting.set(zoneKey, waiting);
    }
    waiting.add(recordKey);
    return true;
  }

  /**
   * The zone's backend serves what this process decided for it (programmed, or removed): returns the
   * deleted record sets held for it, to be reconciled again (their finalizers may be released now).
   */
  settled(zoneKey: ResourceKey): ResourceKey[] {
    this.settledZones.add(zoneKey);
    const waiting = this.waiting.get(zoneKey);
    if (!waiting) return [];
    this.waiting.delete(zoneKey);
    return [...waiting];
  }

  /** The zone is gone from the store: nothing is kept for it (record sets naming it are not held). */
  forgetZone(zoneKey: ResourceKey): void {
    this.settledZones.delete(zoneKey);
  }

  /** Notes that no programmed zone serves the record set any more. */
  private drop(slot: number): void {
    this.table.release(slot, Holder.programmed);
  }

  /**
   * The backend serves the zone's content: note which record sets it serves now (the accepted among
   * `keys`). Returns the record sets it stopped serving, whose finalizers may be released.
   */
  served(
    zoneKey: ResourceKey,
    verdicts: ReadonlyMap<ResourceKey, RecordVerdict>,
    keys: Iterable<ResourceKey>,
  ): ResourceKey[] {
    const released: ResourceKey[] = [];
    for (const recordKey of keys)
      if (this.serve(zoneKey, recordKey, verdicts.get(recordKey)?.accepted === true, -1))
        released.push(recordKey);
    return released;
  }

  /**
   * `served` of every record set the zone's model has a verdict for (a first build's), read off the
   * model without a verdict object made per record set. `slots`, when given, are likely the record
   * table's slots of those record sets, in the model's order (`ZoneModelState.memberSlots`): a slot
   * that holds the very key string expected is taken as it is, any other key is looked up in the
   * table (a map of every record set: at a million record sets, about a second of a first start).
   */
  servedAll(
    zoneKey: ResourceKey,
    model: { eachVerdict(each: (key: ResourceKey, accepted: boolean) => void): void },
    slots?: readonly number[],
  ): ResourceKey[] {
    const released: ResourceKey[] = [];
    let i = 0;
    model.eachVerdict((recordKey, accepted) => {
      const at = slots !== undefined && i < slots.length ? slots[i]! : -1;
      i++;
      if (this.serve(zoneKey, recordKey, accepted, at)) released.push(recordKey);
    });
    return released;
  }

  /**
   * Notes whether the zone serves the record set now; true when it stopped serving it. `at` is the
   * record set's slot if known (checked against its key), else -1.
   */
  private serve(zoneKey: ResourceKey, recordKey: ResourceKey, accepted: boolean, at: number): boolean {
    const table = this.table;
    const slot = at >= 0 && table.keyOf(at) === recordKey ? at : -1;
    if (accepted) {
      this.records.set(
        slot >= 0 ? table.holdSlot(slot, Holder.programmed) : table.hold(recordKey, Holder.programmed),
        zoneKey,
      );
      return false;
    }
    const held = slot >= 0 ? slot : table.slotOf(recordKey);
    if (held < 0 || this.records.get(held) !== zoneKey) return false;
    this.drop(held);
    return true;
  }

  /**
   * Removes the zone from its backend, unless another zone took over the same origin (a conflict
   * settled). Returns the record sets the zone held (to be reconciled again: their finalizers may be
   * released), or none when the zone was not programmed.
   */
  async remove(key: ResourceKey, recordKeys: Iterable<ResourceKey>): Promise<ResourceKey[]> {
    const state = this.zones.get(key);
    if (!state) return [];
    const owner = this.catalog.zoneForDomain(state.origin);
    if (owner === undefined || owner === key) await state.backend.deleteZone(state.origin);
    this.zones.delete(key);
    const requeue: ResourceKey[] = [];
    for (const recordKey of recordKeys) {
      const slot = this.table.slotOf(recordKey);
      if (slot >= 0 && this.records.get(slot) === key) this.drop(slot);
      requeue.push(recordKey);
    }
    return requeue;
  }
}
