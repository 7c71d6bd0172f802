import type { ForeignObject } from '../api/frontdoors/front-door.ts';
import type { Kind, Resource } from '../api/index.ts';
import type { RecordTable } from '../zones/record-table.ts';
import type { ResourceKey } from '../zones/resource-key.ts';

export const FINALIZER = 'dns.zonekeeper.dev/finalizer';

export type StoreEvent =
  | { type: 'upsert'; kind: Kind; key: ResourceKey; object: Resource }
  | { type: 'delete'; kind: Kind; key: ResourceKey; object: Resource };

/**
 * Where resources come from and where their status goes. Implemented by the manifests folder
 * (in memory) and by the Kubernetes API. Objects handed out are snapshots: callers never mutate them.
 * Deletion follows Kubernetes: an object with finalizers gets a `deletionTimestamp` and stays until
 * the last finalizer is removed.
 */
export interface ResourceStore {
  list(kind: Kind): Resource[];
  /**
   * Visits what `list` returns, in the same order, each object with the key the store holds it
   * under: a caller keeping a key per object (the controller's catalog and queues) keeps the store's
   * string, not a copy made by `resourceKey` (32 bytes or more per object, docs/benchmarks.md).
   * The visitor must not write to the store while it runs. Optional: callers fall back to `list`
   * and `resourceKey`. A record set the store keeps in `recordTable` comes with its slot there
   * (distinct for each record set; undefined for others).
   */
  forEachKeyed?(kind: Kind, visit: (object: Resource, key: ResourceKey, slot?: number) => void): void;
  /** The record-set table whose slots `forEachKeyed` passes, when the store keeps record sets in one. */
  readonly recordTable?: RecordTable | undefined;
  get(kind: Kind, key: ResourceKey): Resource | undefined;
  /** Handlers must only record keys; they run synchronously inside the store's update. */
  watch(handler: (event: StoreEvent) => void): () => void;
  /**
   * Replaces `status` (the /status subresource). No-op for objects that are gone. With `finalizer`,
   * a store that keeps status and metadata in one version of the object (the memory store) also adds
   * that finalizer in the same write, when the object lacks it and is not being deleted: one new
   * version and one event instead of two. A store whose status writes cannot change metadata (an API
   * server's /status) ignores it; the finalizer is added by `addFinalizer` either way.
   */
  updateStatus(
    kind: Kind,
    key: ResourceKey,
    status: NonNullable<Resource['status']>,
    finalizer?: string,
  ): Promise<void>;
  /**
   * Replaces `status` with what `plan` makes of the object's status as the write goes out: after the
   * writes to the object queued before it, and again on the newest object when the write meets a
   * conflict. For a write of one part of a status that keeps the rest as it is then, not as it was
   * when the write was asked for (a write of newer conditions in flight would be undone). `plan`
   * returns undefined when there is nothing to write; a status equal to the current one is not
   * written. Resolves to the status the store holds after the write, or undefined when nothing was
   * written (nothing to write, or the object is gone).
   */
  updateStatusWith(
    kind: Kind,
    key: ResourceKey,
    plan: (status: Resource['status'] | undefined) => NonNullable<Resource['status']> | undefined,
  ): Promise<Resource['status'] | undefined>;
  addFinalizer(kind: Kind, key: ResourceKey, finalizer: string): Promise<void>;
  removeFinalizer(kind: Kind, key: ResourceKey, finalizer: string): Promise<void>;
}

/** An event about an object of a front door's kind (`door` is the door's id, `Kind.group`). */
export type ForeignEvent =
  | { type: 'upsert'; door: string; key: ResourceKey; object: ForeignObject }
  | { type: 'delete'; door: string; key: ResourceKey; object: ForeignObject };

/**
 * Objects of front-door kinds, kept by a source beside the native ones, with the same semantics
 * (generation, status subresource, finalizers, deletion). Only the translating store
 * (`front-door-store.ts`) reads and writes them.
 */
export interface ForeignObjectStore {
  listForeign(door: string): ForeignObject[];
  getForeign(door: string, key: ResourceKey): ForeignObject | undefined;
  watchForeign(handler: (event: ForeignEvent) => void): () => void;
  updateForeignStatus(door: string, key: ResourceKey, status: Record<string, unknown>): Promise<void>;
  addForeignFinalizer(door: string, key: ResourceKey, finalizer: string): Promise<void>;
  removeForeignFinalizer(door: string, key: ResourceKey, finalizer: string): Promise<void>;
  /** Takes annotations off an object (nothing when it has none of them). */
  removeForeignAnnotations?(door: string, key: ResourceKey, annotations: readonly string[]): Promise<void>;
  /** Sets (or, with `undefined`, removes) one label on an object: for doors whose API keeps one (`labels`). */
  setForeignLabel?(door: string, key: ResourceKey, name: string, value: string | undefined): Promise<void>;
  /**
   * The newest version of an object when it fails validation (a source that keeps the last valid
   * version, or nothing, in its place): its metadata and status are what a status write must go
   * against and its generation is the one the problems are about. Its spec is not checked.
   */
  latestInvalidForeign?(door: string, key: ResourceKey): ForeignObject | undefined;
}
