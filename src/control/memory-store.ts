import type { ForeignObject } from '../api/frontdoors/front-door.ts';
import type { Kind, ObjectMeta, Resource } from '../api/index.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import { Holder, type RecordTable, type RefColumn } from '../zones/record-table.ts';
import { type ResourceKey, resourceKey } from '../zones/resource-key.ts';
import { jsonEqual } from './conditions.ts';
import type { ForeignEvent, ForeignObjectStore, ResourceStore, StoreEvent } from './resource-store.ts';

/**
 * A record set's slot in the memory store's record table, given to `MemoryStore.apply` and given back
 * by it (`apply`'s `at`). One object reused by its caller, not one per call.
 */
export interface TableSlot {
  slot: number;
}

/** A native or foreign object as kept here. */
interface Stored {
  kind: string;
  metadata: ObjectMeta;
  spec: unknown;
  status?: unknown;
}

/** The objects of one kind by key: a `Map`, or for record sets the slots of a `RecordTable`. */
interface ByKey {
  readonly size: number;
  get(key: ResourceKey): Stored | undefined;
  set(key: ResourceKey, object: Stored): void;
  delete(key: ResourceKey): void;
  values(): Iterable<Stored>;
  [Symbol.iterator](): Iterator<[ResourceKey, Stored]>;
}

/**
 * Record sets kept in a column of the record-set table the catalog, the statuses and what was
 * programmed key theirs by, instead of a map of the store's own: the table already holds one slot and
 * the key string per record set, and a map's entry is about 46 bytes more per record set
 * (docs/benchmarks.md, eighth round). The store holds a slot (`Holder.store`) while it holds the
 * record set. They iterate in the order the table took their keys first: the order a `Map` keeps,
 * except that a record set deleted and applied again while another holder still held its slot (what
 * a backend programmed, until it is removed) keeps its place instead of going last.
 */
class TableByKey implements ByKey {
  private readonly table: RecordTable;
  private readonly objects: RefColumn<Stored>;
  private count = 0;

  constructor(table: RecordTable) {
    this.table = table;
    this.objects = table.column<Stored>(Holder.store, true);
  }

  get size(): number {
    return this.count;
  }

  get(key: ResourceKey): Stored | undefined {
    const slot = this.table.slotOf(key);
    return slot >= 0 ? this.objects.get(slot) : undefined;
  }

  /** `get` by the key's slot (-1: no holder holds the key); a slot held for another key is refused. */
  getAt(key: ResourceKey, slot: number): Stored | undefined {
    if (slot < 0) return undefined;
    // A caller's slot of another key would put this object in that key's place: refused before
    // anything changes (a new key's slot is -1, so a first load compares nothing here).
    if (this.table.keyOf(slot) !== key)
      throw new RangeError(`record table: slot ${slot} is not the slot of ${key}`);
    return this.objects.get(slot);
  }

  set(key: ResourceKey, object: Stored): void {
    this.setAt(key, -1, object);
  }

  /**
   * `set`, with the key's slot when the caller has it (some holder holds it; else -1, and the key is
   * held by its look-up): the slot the store holds now.
   */
  setAt(key: ResourceKey, at: number, object: Stored): number {
    // One lookup of the key (`hold`), not three: the store holds a slot exactly while its column has
    // an object there (the column is the store's, cleared when it lets go).
    const slot = at >= 0 ? this.table.holdSlot(at, Holder.store) : this.table.hold(key, Holder.store);
    if (this.objects.get(slot) === undefined) this.count++;
    this.objects.set(slot, object);
    return slot;
  }

  delete(key: ResourceKey): void {
    const slot = this.table.slotOf(key);
    if (slot < 0 || !this.table.held(slot, Holder.store)) return;
    this.table.release(slot, Holder.store);
    this.count--;
  }

  *values(): IterableIterator<Stored> {
    for (const [, object] of this) yield object;
  }

  /** Visits each object with its key and slot, in the iteration's order (one walk, no pair each). */
  forEachSlot(visit: (object: Stored, key: ResourceKey, slot: number) => void): void {
    for (const [key, slot] of this.table.entries()) {
      const object = this.objects.get(slot);
      if (object !== undefined) visit(object, key, slot);
    }
  }

  *[Symbol.iterator](): IterableIterator<[ResourceKey, Stored]> {
    for (const [key, slot] of this.table.entries()) {
      const object = this.objects.get(slot);
      if (object !== undefined) yield [key, object];
    }
  }
}

/**
 * An in-memory ResourceStore with Kubernetes semantics for generation, status and finalizers. The
 * manifests source drives it with `apply` and `remove`; reconcilers see exactly what they would see
 * against an API server. Objects of front-door kinds are kept the same way (`applyForeign`,
 * `removeForeign`), apart from the native ones, under their door's id.
 */
export class MemoryStore implements ResourceStore, ForeignObjectStore {
  private readonly objects = new Map<string, ByKey>();
  private readonly foreign = new Map<string, ByKey>();
  private readonly handlers = new Set<(event: StoreEvent) => void>();
  private readonly foreignHandlers = new Set<(event: ForeignEvent) => void>();
  private readonly now: () => Date;
  private uid = 0;
  private resourceVersion = 0;
  private readonly restoreDeleting: boolean;
  /** The table the record sets are kept in (`forEachKeyed` passes their slots there), if any. */
  readonly recordTable: RecordTable | undefined;

  /**
   * `restoreDeleting`: an object being deleted that is applied again comes back (its manifest was
   * restored while a finalizer waited, e.g. on a held change) instead of waiting to be gone, as
   * Kubernetes would make a create wait. `serve` sets it: a folder has nobody to refuse the create to.
   */
  /**
   * `recordSets`: a record-set table to keep the record sets in (see `TableByKey`); `serve` gives the
   * one its controller's catalog keys by.
   */
  constructor(
    now: () => Date = () => new Date(),
    options: { restoreDeleting?: boolean; recordSets?: RecordTable } = {},
  ) {
    this.now = now;
    this.restoreDeleting = options.restoreDeleting ?? false;
    this.recordTable = options.recordSets;
    if (options.recordSets) this.objects.set('DNSRecordSet', new TableByKey(options.recordSets));
  }

  list(kind: Kind): Resource[] {
    return [...(this.objects.get(kind)?.values() ?? [])] as Resource[];
  }

  /**
   * `list`'s objects with the store's own key strings (the map's keys, shared with its events), and
   * the record sets' slots in `recordTable` when they are kept there.
   */
  forEachKeyed(kind: Kind, visit: (object: Resource, key: ResourceKey, slot?: number) => void): void {
    const byKey = this.objects.get(kind);
    if (byKey === undefined) return;
    // No copy (a pair per object): the visitor does not write to the store (`ResourceStore`).
    if (byKey instanceof TableByKey)
      byKey.forEachSlot(visit as (o: Stored, k: ResourceKey, s: number) => void);
    else for (const [key, object] of byKey) visit(object as Resource, key);
  }

  get(kind: Kind, key: ResourceKey): Resource | undefined {
    return this.objects.get(kind)?.get(key) as Resource | undefined;
  }

  /** How many objects of a kind `list` would return (those being deleted included), without listing them. */
  count(kind: Kind): number {
    return this.objects.get(kind)?.size ?? 0;
  }

  watch(handler: (event: StoreEvent) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /**
   * Creates or updates an object from its desired form (metadata.name/namespace, spec). The
   * generation increases only when the spec changes; status, finalizers and creation time are kept.
   * `creationTimestamp` and, for an object new to the store, `generation` may be supplied to keep
   * ages and generations across restarts. Returns the object now held for this version (its spec
   * is `desired.spec`, or an equal one kept from before), or undefined when the store did not take
   * it (an object being deleted, without `restoreDeleting`). `key`, when the caller has it, is
   * `resourceKey(desired.metadata)` (not made again; a folder's first load has it inside each
   * object's id, a slice of which shares the id's characters instead of joining a copy). `at`, for a
   * record set kept in `recordTable` (for any other object its slot is set to -1), with `key`: its
   * `slot` is the key's slot there as the caller found it just now (`RecordTable.slotOf`, -1 when no
   * holder holds it; a slot held for another key is refused), and becomes the slot the store holds
   * the record set at after the call (-1: none): neither is looked up here, and the caller can give
   * it to the next holder (`StateStore.putObject`). `usual`: the caller knows `desired` to be of the
   * usual shape (`isUsualNew` would say true: a first load's record set as a parse thread's message
   * made it, `ManifestSource.applyEarly`), so an object new to the store is made of its fields
   * without that test (docs/benchmarks.md, eighteenth round).
   */
  apply(
    desired: Resource,
    creationTimestamp?: string,
    generation?: number,
    key?: ResourceKey,
    at?: TableSlot,
    usual = false,
  ): Resource | undefined {
    return this.put(
      this.objects,
      desired.kind,
      desired,
      creationTimestamp,
      generation,
      undefined,
      key,
      key !== undefined ? at : undefined,
      usual,
    ) as Resource | undefined;
  }

  /** The store's counters of uids and resource versions (`rewind`). */
  counters(): { uid: number; resourceVersion: number } {
    return { uid: this.uid, resourceVersion: this.resourceVersion };
  }

  /**
   * Sets the counters back to what `counters` gave, once every object applied since was removed: a
   * folder's first load that takes back the objects it applied early (ADR 0029) leaves the store as
   * it found it, so the objects applied again get the same uids and resource versions.
   */
  rewind(counters: { uid: number; resourceVersion: number }): void {
    this.uid = counters.uid;
    this.resourceVersion = counters.resourceVersion;
  }

  /** Deletes an object: at once without finalizers, otherwise marks it for deletion. */
  remove(kind: Kind, key: ResourceKey): void {
    this.delete(this.objects, kind, key, (type, object) =>
      this.emit({ type, kind, key, object: object as Resource }),
    );
  }

  async updateStatus(
    kind: Kind,
    key: ResourceKey,
    status: NonNullable<Resource['status']>,
    finalizer?: string,
  ): Promise<void> {
    // Status writes do not notify watchers of the same controller in a way that changes desired state,
    // but Kubernetes does send them; we do too so that readers (HTTP API) see fresh status.
    this.setStatus(
      this.objects,
      kind,
      key,
      status,
      (object) => this.emit({ type: 'upsert', kind, key, object: object as Resource }),
      finalizer,
    );
  }

  async updateStatusWith(
    kind: Kind,
    key: ResourceKey,
    plan: (status: Resource['status'] | undefined) => NonNullable<Resource['status']> | undefined,
  ): Promise<Resource['status'] | undefined> {
    const existing = this.objects.get(kind)?.get(key) as Resource | undefined;
    if (!existing) return undefined;
    const status = plan(existing.status);
    if (status === undefined || jsonEqual(status, existing.status)) return undefined;
    await this.updateStatus(kind, key, status);
    return this.get(kind, key)?.status;
  }

  async addFinalizer(kind: Kind, key: ResourceKey, finalizer: string): Promise<void> {
    this.addFinalizerTo(this.objects, kind, key, finalizer, (object) =>
      this.emit({ type: 'upsert', kind, key, object: object as Resource }),
    );
  }

  async removeFinalizer(kind: Kind, key: ResourceKey, finalizer: string): Promise<void> {
    this.removeFinalizerFrom(this.objects, kind, key, finalizer, (type, object) =>
      this.emit({ type, kind, key, object: object as Resource }),
    );
  }

  // Front-door kinds ------------------------------------------------------------------------------

  listForeign(door: string): ForeignObject[] {
    return [...(this.foreign.get(door)?.values() ?? [])] as ForeignObject[];
  }

  /** How many objects of the front door `door` `listForeign` would return. */
  countForeign(door: string): number {
    return this.foreign.get(door)?.size ?? 0;
  }

  getForeign(door: string, key: ResourceKey): ForeignObject | undefined {
    return this.foreign.get(door)?.get(key) as ForeignObject | undefined;
  }

  watchForeign(handler: (event: ForeignEvent) => void): () => void {
    this.foreignHandlers.add(handler);
    return () => this.foreignHandlers.delete(handler);
  }

  /** `apply` for an object of the front door `door`. */
  applyForeign(
    door: string,
    desired: ForeignObject,
    creationTimestamp?: string,
    generation?: number,
  ): ForeignObject | undefined {
    return this.put(this.foreign, door, desired, creationTimestamp, generation, door) as
      | ForeignObject
      | undefined;
  }

  removeForeign(door: string, key: ResourceKey): void {
    this.delete(this.foreign, door, key, (type, object) =>
      this.emitForeign({ type, door, key, object: object as ForeignObject }),
    );
  }

  async updateForeignStatus(door: string, key: ResourceKey, status: Record<string, unknown>): Promise<void> {
    this.setStatus(this.foreign, door, key, status, (object) =>
      this.emitForeign({ type: 'upsert', door, key, object: object as ForeignObject }),
    );
  }

  async addForeignFinalizer(door: string, key: ResourceKey, finalizer: string): Promise<void> {
    this.addFinalizerTo(this.foreign, door, key, finalizer, (object) =>
      this.emitForeign({ type: 'upsert', door, key, object: object as ForeignObject }),
    );
  }

  async removeForeignFinalizer(door: string, key: ResourceKey, finalizer: string): Promise<void> {
    this.removeFinalizerFrom(this.foreign, door, key, finalizer, (type, object) =>
      this.emitForeign({ type, door, key, object: object as ForeignObject }),
    );
  }

  async removeForeignAnnotations(
    door: string,
    key: ResourceKey,
    annotations: readonly string[],
  ): Promise<void> {
    const byKey = this.foreign.get(door);
    const existing = byKey?.get(key);
    const current = existing?.metadata.annotations;
    if (!byKey || !existing || !current || !annotations.some((a) => a in current)) return;
    const kept = Object.fromEntries(Object.entries(current).filter(([k]) => !annotations.includes(k)));
    const revised = this.revise(existing, { annotations: kept });
    byKey.set(key, revised);
    this.emitForeign({ type: 'upsert', door, key, object: revised as ForeignObject });
  }

  async setForeignLabel(
    door: string,
    key: ResourceKey,
    name: string,
    value: string | undefined,
  ): Promise<void> {
    const byKey = this.foreign.get(door);
    const existing = byKey?.get(key);
    if (!byKey || !existing || existing.metadata.labels?.[name] === value) return;
    const { [name]: _old, ...rest } = existing.metadata.labels ?? {};
    const labels = value === undefined ? rest : { ...rest, [name]: value };
    const revised = this.revise(existing, { labels });
    byKey.set(key, revised);
    this.emitForeign({ type: 'upsert', door, key, object: revised as ForeignObject });
  }

  // The semantics, for both ----------------------------------------------------------------------

  private put(
    objects: Map<string, ByKey>,
    kind: string,
    desired: Stored,
    creationTimestamp: string | undefined,
    generation: number | undefined,
    door: string | undefined,
    given?: ResourceKey,
    at?: TableSlot,
    usual = false,
  ): Stored | undefined {
    const key = given ?? resourceKey(desired.metadata);
    // No closure per call (an upsert's emitter, a map's maker): a first load puts a million objects.
    const byKey = objects.get(kind) ?? this.byKeyFor(objects, kind);
    // The caller's slot of the key (`apply`): no look-up of it.
    const table = at !== undefined && byKey instanceof TableByKey ? byKey : undefined;
    if (at !== undefined && table === undefined) at.slot = -1;
    const existing = table !== undefined ? table.getAt(key, at!.slot) : byKey.get(key);
    // Being deleted: a re-create waits for it to go, unless the store restores such objects.
    const restored = existing?.metadata.deletionTimestamp !== undefined;
    if (restored && !this.restoreDeleting) return undefined;
    const specChanged = !existing || !jsonEqual(existing.spec, desired.spec);
    if (
      existing &&
      !restored &&
      !specChanged &&
      jsonEqual(existing.metadata.labels ?? {}, desired.metadata.labels ?? {}) &&
      jsonEqual(existing.metadata.annotations ?? {}, desired.metadata.annotations ?? {})
    ) {
      return existing;
    }
    // Of the usual shape: known by the caller (`apply`'s `usual`), else tested.
    if (existing === undefined && (usual || isUsualNew(desired))) {
      // What the general way below makes of it, without its parts (docs/benchmarks.md, eleventh round).
      const { name, namespace } = desired.metadata;
      const metadata = new (UsualMeta as unknown as MetaConstructor)(
        name,
        namespace,
        ++this.uid,
        Math.max(1, generation ?? 1),
        creationTimestamp ?? this.now().toISOString(),
        ++this.resourceVersion,
      );
      const object = new (UsualObject as unknown as StoredConstructor)(
        (desired as Resource).apiVersion,
        desired.kind,
        metadata,
        desired.spec,
      );
      if (table !== undefined) at!.slot = table.setAt(key, at!.slot, object);
      else byKey.set(key, object);
      this.upserted(door, kind, key, object);
      return object;
    }
    const metadata = storeMeta(
      [
        writable(desired.metadata),
        {
          uid: '',
          generation: existing
            ? (existing.metadata.generation ?? 0) + (specChanged ? 1 : 0)
            : Math.max(1, generation ?? 1),
          creationTimestamp:
            existing?.metadata.creationTimestamp ?? creationTimestamp ?? this.now().toISOString(),
          resourceVersion: '',
          ...(existing?.metadata.finalizers ? { finalizers: existing.metadata.finalizers } : {}),
        },
      ],
      existing ? uidNumber(existing.metadata) : ++this.uid,
      ++this.resourceVersion,
    );
    // A desired object without a status (as manifests are) is read as it is, not copied without one.
    const rest = Object.hasOwn(desired, 'status') ? withoutStatus(desired) : desired;
    const object = storeObject(rest, {
      metadata,
      ...(existing?.status ? { status: existing.status } : {}),
    });
    if (table !== undefined) at!.slot = table.setAt(key, at!.slot, object);
    else byKey.set(key, object);
    this.upserted(door, kind, key, object);
    return object;
  }

  /** A new map for `kind`'s objects in `objects`. */
  private byKeyFor(objects: Map<string, ByKey>, kind: string): ByKey {
    const byKey = new Map<ResourceKey, Stored>();
    objects.set(kind, byKey);
    return byKey;
  }

  /** The upsert event of `put`: of the store's own kinds, or with `door`, of that front door's. */
  private upserted(door: string | undefined, kind: string, key: ResourceKey, object: Stored): void {
    if (door === undefined)
      this.emit({ type: 'upsert', kind: kind as Kind, key, object: object as Resource });
    else this.emitForeign({ type: 'upsert', door, key, object: object as ForeignObject });
  }

  private delete(
    objects: Map<string, ByKey>,
    kind: string,
    key: ResourceKey,
    emit: (type: 'upsert' | 'delete', object: Stored) => void,
  ): void {
    const byKey = getOrInsert(objects, kind, () => new Map());
    const existing = byKey.get(key);
    if (!existing) return;
    if ((existing.metadata.finalizers ?? []).length === 0) {
      byKey.delete(key);
      emit('delete', existing);
      return;
    }
    if (existing.metadata.deletionTimestamp) return;
    const object = this.revise(existing, { deletionTimestamp: this.now().toISOString() });
    byKey.set(key, object);
    emit('upsert', object);
  }

  private setStatus(
    objects: Map<string, ByKey>,
    kind: string,
    key: ResourceKey,
    status: unknown,
    emit: (object: Stored) => void,
    finalizer?: string,
  ): void {
    const byKey = objects.get(kind);
    const existing = byKey?.get(key);
    if (!byKey || !existing) return;
    // The finalizer asked for with the status, as `addFinalizerTo` would add it (see `updateStatus`).
    const finalizers = existing.metadata.finalizers ?? [];
    const parts: object[] =
      finalizer === undefined || existing.metadata.deletionTimestamp || finalizers.includes(finalizer)
        ? [existing.metadata]
        : [existing.metadata, { finalizers: withFinalizer(finalizers, finalizer) }];
    const object = storeObject(existing, {
      status,
      metadata: storeMeta(parts, uidNumber(existing.metadata), ++this.resourceVersion),
    });
    byKey.set(key, object);
    emit(object);
  }

  private addFinalizerTo(
    objects: Map<string, ByKey>,
    kind: string,
    key: ResourceKey,
    finalizer: string,
    emit: (object: Stored) => void,
  ): void {
    const byKey = objects.get(kind);
    const existing = byKey?.get(key);
    if (!byKey || !existing || existing.metadata.deletionTimestamp) return;
    const finalizers = existing.metadata.finalizers ?? [];
    if (finalizers.includes(finalizer)) return;
    const object = this.revise(existing, { finalizers: withFinalizer(finalizers, finalizer) });
    byKey.set(key, object);
    // Watchers get the new version, as an API server's watch would send it: a reader that kept the
    // version before (the catalog keeps the newest it was sent) would otherwise hold a second object
    // and metadata per record set beside the store's, about 150 bytes (docs/benchmarks.md, fifth round).
    emit(object);
  }

  private removeFinalizerFrom(
    objects: Map<string, ByKey>,
    kind: string,
    key: ResourceKey,
    finalizer: string,
    emit: (type: 'upsert' | 'delete', object: Stored) => void,
  ): void {
    const byKey = objects.get(kind);
    const existing = byKey?.get(key);
    if (!byKey || !existing) return;
    const held = existing.metadata.finalizers ?? [];
    const finalizers = held.filter((f) => f !== finalizer);
    if (existing.metadata.deletionTimestamp && finalizers.length === 0) {
      byKey.delete(key);
      emit('delete', existing);
      return;
    }
    // A finalizer the object does not hold changes nothing, and writes nothing (as an API server).
    if (finalizers.length === held.length) return;
    const object = this.revise(existing, { finalizers });
    byKey.set(key, object);
    // The new version goes to watchers, as an API server's watch sends it (see addFinalizerTo).
    emit('upsert', object);
  }

  private revise(object: Stored, metadata: Partial<ObjectMeta>): Stored {
    return storeObject(object, {
      metadata: storeMeta([object.metadata, metadata], uidNumber(object.metadata), ++this.resourceVersion),
    });
  }

  private emit(event: StoreEvent): void {
    for (const handler of this.handlers) handler(event);
  }

  private emitForeign(event: ForeignEvent): void {
    for (const handler of this.foreignHandlers) handler(event);
  }
}

/**
 * Objects made by `new` get room for their properties in the object itself while V8 learns their
 * size; a literal with a spread (`{ ...base, more }`) puts the properties beyond `base`'s into a
 * separate array, about 40 bytes more for every object and metadata kept here (docs/benchmarks.md,
 * memory budget). Its prototype is Object.prototype, so the objects are plain objects.
 */
function PlainObject(this: Record<string, unknown>): void {}
PlainObject.prototype = Object.prototype;

/**
 * What a writer may set of an object's metadata: all but the finalizers and the deletion time, which
 * the store keeps itself (controllers add and remove finalizers, `remove` marks a deletion). A
 * manifest that defined an object once must not leave a finalizer behind that holds the object's
 * deletion, nor delete it by a timestamp. (The store sets `uid` and `resourceVersion` over whatever a
 * writer gave, in their place.)
 */
function writable(metadata: ObjectMeta): ObjectMeta {
  if (metadata.finalizers === undefined && metadata.deletionTimestamp === undefined) return metadata;
  const { finalizers: _f, deletionTimestamp: _d, ...rest } = metadata;
  return rest;
}

/**
 * Whether `desired` is of the usual shape as it comes (its keys `apiVersion`, `kind`, `metadata` and
 * `spec` in that order, its metadata a name and a namespace, set): for an object new to the store,
 * `storeMeta` and `storeObject` then make a `UsualMeta` and a `UsualObject` of its fields, which
 * `put` makes directly (a folder's record sets, a million on a first start).
 */
function isUsualNew(desired: Stored): boolean {
  const keys = Object.keys(desired);
  if (
    keys.length !== 4 ||
    keys[0] !== 'apiVersion' ||
    keys[1] !== 'kind' ||
    keys[2] !== 'metadata' ||
    keys[3] !== 'spec'
  )
    return false;
  const metadata = desired.metadata;
  if (metadata.name === undefined || metadata.namespace === undefined) return false;
  const fields = Object.keys(metadata);
  return (
    fields.length === 2 &&
    (fields[0] === 'name' || fields[0] === 'namespace') &&
    (fields[1] === 'name' || fields[1] === 'namespace')
  );
}

function withoutStatus(object: Stored): object {
  const { status: _ignored, ...rest } = object;
  return rest;
}

/**
 * The finalizer list with one more. concat makes an array of exactly the elements: spread or push
 * leave room for about 16 more, 128 bytes kept per object (docs/benchmarks.md, memory budget). The
 * usual list, this finalizer alone, is one list shared by every object (lists are never changed in
 * place: filter and concat make new ones), not an array per object.
 */
function withFinalizer(finalizers: string[], finalizer: string): string[] {
  return finalizers.length === 0 ? onlyFinalizer(finalizer) : finalizers.concat(finalizer);
}

/** One-element finalizer lists, one per finalizer name. */
const onlyFinalizers = new Map<string, string[]>();
function onlyFinalizer(finalizer: string): string[] {
  let list = onlyFinalizers.get(finalizer);
  if (list === undefined) {
    list = [finalizer];
    if (onlyFinalizers.size < 64) onlyFinalizers.set(finalizer, list);
  }
  return list;
}

/** The fields of a record set's metadata in this store, as most have them. */
const USUAL_META = new Set([
  'name',
  'namespace',
  'uid',
  'generation',
  'creationTimestamp',
  'resourceVersion',
  'finalizers',
]);

/*
 * `uid` and `resourceVersion` are the store's own counters. Each metadata keeps them as two small
 * integers in private fields of its own (`Numbers`), and `uid` and
 * `resourceVersion` are enumerable accessors that make their strings when read: the two strings per
 * object cost about 56 bytes of heap, the two integers 16 (docs/benchmarks.md, fifth round). The
 * accessors are one getter and one setter shared by every object, which V8 keeps in the object's
 * shape, not in the object. To a reader the metadata is a plain object as before: its prototype is
 * Object.prototype, and `Object.keys`, spread, `JSON.stringify`, `structuredClone` and deep equality
 * see `uid` and `resourceVersion` as strings, in the same place among the keys. An assignment to
 * either replaces the accessor with a plain property (kept in its place) holding what was assigned.
 */
/** Gives an object made elsewhere the fields of a subclass: its constructor returns that object. */
class Returning {
  constructor(object: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the subclass's fields go on `object`
    return object as Returning;
  }
}

/**
 * The two numbers, as private fields of the metadata: in the object like any field, but seen by no
 * reader (not by `Object.keys`, spread, `JSON.stringify`, `structuredClone` or deep equality), and
 * set without the slow path of `Object.defineProperty`.
 */
class Numbers extends Returning {
  #uid: number;
  #version: number;
  constructor(object: object, uid: number, version: number) {
    super(object);
    this.#uid = uid;
    this.#version = version;
  }
  static uidOf(object: object): number | undefined {
    return #uid in object ? (object as Numbers).#uid : undefined;
  }
  static versionOf(object: object): number {
    return (object as Numbers).#version;
  }
}

function uidGet(this: object): string {
  return `uid-${Numbers.uidOf(this)}`;
}
function versionGet(this: object): string {
  return String(Numbers.versionOf(this));
}
function uidSet(this: object, value: unknown): void {
  Object.defineProperty(this, 'uid', { value, writable: true, enumerable: true, configurable: true });
}
function versionSet(this: object, value: unknown): void {
  Object.defineProperty(this, 'resourceVersion', {
    value,
    writable: true,
    enumerable: true,
    configurable: true,
  });
}
const UID_ACCESSOR: PropertyDescriptor = { get: uidGet, set: uidSet, enumerable: true, configurable: true };
const VERSION_ACCESSOR: PropertyDescriptor = {
  get: versionGet,
  set: versionSet,
  enumerable: true,
  configurable: true,
};

/** The store's uid number behind a metadata's `uid` (`uid-N`). */
function uidNumber(metadata: ObjectMeta): number {
  return Numbers.uidOf(metadata) ?? Number(metadata.uid?.slice(4));
}

function number(out: object, uid: number, version: number): void {
  new Numbers(out, uid, version);
}

/** The usual metadata's fields, in their order, for both constructors (each keeps its own object shape). */
function usualMetaFields(
  out: Record<string, unknown>,
  name: unknown,
  namespace: unknown,
  generation: unknown,
  creationTimestamp: unknown,
): void {
  out.name = name;
  out.namespace = namespace;
  Object.defineProperty(out, 'uid', UID_ACCESSOR);
  out.generation = generation;
  out.creationTimestamp = creationTimestamp;
  Object.defineProperty(out, 'resourceVersion', VERSION_ACCESSOR);
}

/**
 * The usual metadata (name, namespace, uid, generation, creation time, resource version), its fields
 * in the object in this order, and the same with finalizers (`UsualMetaFinalized`): made by one
 * function, V8 sizes such objects by the first ones it makes (without finalizers) and puts the rest
 * into a separate property array, about 40 bytes per object (docs/benchmarks.md, memory budget).
 * Their prototype is Object.prototype.
 */
function UsualMeta(
  this: Record<string, unknown>,
  name: unknown,
  namespace: unknown,
  uid: number,
  generation: unknown,
  creationTimestamp: unknown,
  version: number,
): void {
  usualMetaFields(this, name, namespace, generation, creationTimestamp);
  number(this, uid, version);
}
UsualMeta.prototype = Object.prototype;

function UsualMetaFinalized(
  this: Record<string, unknown>,
  name: unknown,
  namespace: unknown,
  uid: number,
  generation: unknown,
  creationTimestamp: unknown,
  version: number,
  finalizers: unknown,
): void {
  usualMetaFields(this, name, namespace, generation, creationTimestamp);
  this.finalizers = finalizers;
  number(this, uid, version);
}
UsualMetaFinalized.prototype = Object.prototype;

type MetaConstructor = new (...args: unknown[]) => ObjectMeta;

/** Any other metadata (labels, annotations, a deletion time, no namespace, ...). */
function OtherMeta(this: Record<string, unknown>): void {}
OtherMeta.prototype = Object.prototype;

/**
 * `plain` for metadata, with the store's `uid` and `resourceVersion` numbers behind the accessors
 * of those names (whatever `parts` hold for them, their place among the keys is kept).
 */
function storeMeta(parts: object[], uid: number, version: number): ObjectMeta {
  // The usual metadata is made from the parts' fields as read, without the merged object below (nor
  // the `uid` and `resourceVersion` strings its accessors would make only to be replaced): a first
  // start makes one per record set for its object, its status and its finalizer (docs/benchmarks.md,
  // ninth round). Anything else takes the general way.
  let seen = 0;
  let name: unknown;
  let namespace: unknown;
  let generation: unknown;
  let creationTimestamp: unknown;
  let finalizers: unknown;
  for (const part of parts) {
    const fields = part as Record<string, unknown>;
    for (const key of Object.keys(part)) {
      switch (key) {
        case 'name':
          name = fields[key];
          break;
        case 'namespace':
          namespace = fields[key];
          break;
        case 'generation':
          generation = fields[key];
          break;
        case 'creationTimestamp':
          creationTimestamp = fields[key];
          break;
        case 'finalizers':
          finalizers = fields[key];
          seen |= HAS_FINALIZERS;
          break;
        case 'uid':
        case 'resourceVersion':
          break;
        default:
          return generalStoreMeta(parts, uid, version);
      }
    }
  }
  if (
    name !== undefined &&
    namespace !== undefined &&
    generation !== undefined &&
    creationTimestamp !== undefined &&
    (seen === 0 || finalizers !== undefined)
  ) {
    const Usual = (seen === 0 ? UsualMeta : UsualMetaFinalized) as unknown as MetaConstructor;
    return new Usual(name, namespace, uid, generation, creationTimestamp, version, finalizers);
  }
  return generalStoreMeta(parts, uid, version);
}

const HAS_FINALIZERS = 1;

/** `storeMeta` of any metadata: the parts merged, then made by the constructor of their shape. */
function generalStoreMeta(parts: object[], uid: number, version: number): ObjectMeta {
  const m = plain<Record<string, unknown>>(...parts, { uid: '', resourceVersion: '' });
  const keys = Object.keys(m);
  const { name, namespace, generation, creationTimestamp, finalizers } = m;
  // Exactly those fields, each set: the constructor adds none that was not there.
  if (
    keys.length === (finalizers === undefined ? 6 : 7) &&
    keys.every((k) => USUAL_META.has(k) && m[k] !== undefined)
  ) {
    const Usual = (finalizers === undefined ? UsualMeta : UsualMetaFinalized) as unknown as MetaConstructor;
    return new Usual(name, namespace, uid, generation, creationTimestamp, version, finalizers);
  }
  const out = new (OtherMeta as unknown as new () => Record<string, unknown>)();
  for (const key of keys) {
    if (key === 'uid') Object.defineProperty(out, key, UID_ACCESSOR);
    else if (key === 'resourceVersion') Object.defineProperty(out, key, VERSION_ACCESSOR);
    else out[key] = m[key];
  }
  number(out, uid, version);
  return out as unknown as ObjectMeta;
}

/**
 * An object of the usual shape (apiVersion, kind, metadata, spec, and status once written), its
 * fields in the object: made by `plain`, V8 sized them with room for one field more than they
 * use, 8 bytes per object. Their prototype is Object.prototype.
 */
function UsualObject(
  this: Record<string, unknown>,
  apiVersion: unknown,
  kind: unknown,
  metadata: unknown,
  spec: unknown,
): void {
  this.apiVersion = apiVersion;
  this.kind = kind;
  this.metadata = metadata;
  this.spec = spec;
}
UsualObject.prototype = Object.prototype;

function UsualObjectWithStatus(
  this: Record<string, unknown>,
  apiVersion: unknown,
  kind: unknown,
  metadata: unknown,
  spec: unknown,
  status: unknown,
): void {
  UsualObject.call(this, apiVersion, kind, metadata, spec);
  this.status = status;
}
UsualObjectWithStatus.prototype = Object.prototype;

const USUAL_OBJECT = ['apiVersion', 'kind', 'metadata', 'spec', 'status'];

/** `plain` for the store's objects: the usual shape made by its own constructor. */
function storeObject(...parts: object[]): Stored {
  // The usual shape is made from the parts' fields as read, without the merged object below (see
  // `storeMeta`); its keys, in the order they first come, are those of `USUAL_OBJECT`.
  let count = 0;
  let apiVersion: unknown;
  let kind: unknown;
  let metadata: unknown;
  let spec: unknown;
  let status: unknown;
  for (const part of parts) {
    const fields = part as Record<string, unknown>;
    for (const key of Object.keys(part)) {
      const at = USUAL_OBJECT.indexOf(key);
      if (at < 0 || at > count) return generalStoreObject(parts);
      if (at === count) count++;
      const value = fields[key];
      if (at === 0) apiVersion = value;
      else if (at === 1) kind = value;
      else if (at === 2) metadata = value;
      else if (at === 3) spec = value;
      else status = value;
    }
  }
  if (count === 4) return new (UsualObject as unknown as StoredConstructor)(apiVersion, kind, metadata, spec);
  if (count === 5)
    return new (UsualObjectWithStatus as unknown as StoredConstructor)(
      apiVersion,
      kind,
      metadata,
      spec,
      status,
    );
  return generalStoreObject(parts);
}

type StoredConstructor = new (...args: unknown[]) => Stored;

function generalStoreObject(parts: object[]): Stored {
  const o = plain<Record<string, unknown>>(...parts);
  const keys = Object.keys(o);
  if ((keys.length !== 4 && keys.length !== 5) || !keys.every((k, i) => USUAL_OBJECT[i] === k))
    return o as unknown as Stored;
  const make = (keys.length === 4 ? UsualObject : UsualObjectWithStatus) as unknown as new (
    ...args: unknown[]
  ) => Stored;
  return new make(o.apiVersion, o.kind, o.metadata, o.spec, o.status);
}

/** `{ ...parts[0], ...parts[1], ... }`, with the properties in the object (own `__proto__` keys left out). */
function plain<T>(...parts: object[]): T {
  return assign(new (PlainObject as unknown as new () => Record<string, unknown>)(), parts) as T;
}

function assign(out: Record<string, unknown>, parts: object[]): Record<string, unknown> {
  for (const part of parts) {
    for (const key of Object.keys(part)) {
      if (key !== '__proto__') out[key] = (part as Record<string, unknown>)[key];
    }
  }
  return out;
}
