import type { Backend } from '../backends/backend.ts';
import type { Name } from '../dns/name.ts';
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
    for (const recordKey of keys) {
      const v = verdicts.get(recordKey);
      if (v?.accepted) this.records.set(this.table.hold(recordKey, Holder.programmed), zoneKey);
      else {
        const slot = this.table.slotOf(recordKey);
        if (slot >= 0 && this.records.get(slot) === zoneKey) {
          this.drop(slot);
          released.push(recordKey);
        }
      }
    }
    return released;
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
