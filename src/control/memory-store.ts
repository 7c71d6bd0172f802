import type { Kind, Resource } from '../api/index.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import { type ResourceKey, resourceKey } from '../zones/resource-key.ts';
import { jsonEqual } from './conditions.ts';
import type { ResourceStore, StoreEvent } from './resource-store.ts';

/**
 * An in-memory ResourceStore with Kubernetes semantics for generation, status and finalizers. The
 * manifests source drives it with `apply` and `remove`; reconcilers see exactly what they would see
 * against an API server.
 */
export class MemoryStore implements ResourceStore {
  private readonly objects = new Map<Kind, Map<ResourceKey, Resource>>();
  private readonly handlers = new Set<(event: StoreEvent) => void>();
  private readonly now: () => Date;
  private uid = 0;
  private resourceVersion = 0;

  constructor(now: () => Date = () => new Date()) {
    this.now = now;
  }

  list(kind: Kind): Resource[] {
    return [...(this.objects.get(kind)?.values() ?? [])];
  }

  get(kind: Kind, key: ResourceKey): Resource | undefined {
    return this.objects.get(kind)?.get(key);
  }

  watch(handler: (event: StoreEvent) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /**
   * Creates or updates an object from its desired form (metadata.name/namespace, spec). The
   * generation increases only when the spec changes; status, finalizers and creation time are kept.
   * `creationTimestamp` and, for an object new to the store, `generation` may be supplied to keep
   * ages and generations across restarts.
   */
  apply(desired: Resource, creationTimestamp?: string, generation?: number): void {
    const key = resourceKey(desired.metadata);
    const byKey = this.bucket(desired.kind);
    const existing = byKey.get(key);
    if (existing?.metadata.deletionTimestamp) return; // being deleted; a re-create waits for it to go
    const specChanged = !existing || !jsonEqual(existing.spec, desired.spec);
    if (
      existing &&
      !specChanged &&
      jsonEqual(existing.metadata.labels ?? {}, desired.metadata.labels ?? {}) &&
      jsonEqual(existing.metadata.annotations ?? {}, desired.metadata.annotations ?? {})
    ) {
      return;
    }
    const metadata: Resource['metadata'] = {
      ...desired.metadata,
      uid: existing?.metadata.uid ?? `uid-${++this.uid}`,
      generation: existing
        ? (existing.metadata.generation ?? 0) + (specChanged ? 1 : 0)
        : Math.max(1, generation ?? 1),
      creationTimestamp:
        existing?.metadata.creationTimestamp ?? creationTimestamp ?? this.now().toISOString(),
      resourceVersion: String(++this.resourceVersion),
      ...(existing?.metadata.finalizers ? { finalizers: existing.metadata.finalizers } : {}),
    };
    const { status: _ignored, ...rest } = desired as Resource & { status?: unknown };
    const object = {
      ...rest,
      metadata,
      ...(existing?.status ? { status: existing.status } : {}),
    } as Resource;
    byKey.set(key, object);
    this.emit({ type: 'upsert', kind: desired.kind, key, object });
  }

  /** Deletes an object: at once without finalizers, otherwise marks it for deletion. */
  remove(kind: Kind, key: ResourceKey): void {
    const byKey = this.bucket(kind);
    const existing = byKey.get(key);
    if (!existing) return;
    if ((existing.metadata.finalizers ?? []).length === 0) {
      byKey.delete(key);
      this.emit({ type: 'delete', kind, key, object: existing });
      return;
    }
    if (existing.metadata.deletionTimestamp) return;
    const object = this.revise(existing, { deletionTimestamp: this.now().toISOString() });
    byKey.set(key, object);
    this.emit({ type: 'upsert', kind, key, object });
  }

  async updateStatus(kind: Kind, key: ResourceKey, status: NonNullable<Resource['status']>): Promise<void> {
    const byKey = this.bucket(kind);
    const existing = byKey.get(key);
    if (!existing) return;
    const object = {
      ...existing,
      status,
      metadata: { ...existing.metadata, resourceVersion: String(++this.resourceVersion) },
    } as Resource;
    byKey.set(key, object);
    // Status writes do not notify watchers of the same controller in a way that changes desired state,
    // but Kubernetes does send them; we do too so that readers (HTTP API) see fresh status.
    this.emit({ type: 'upsert', kind, key, object });
  }

  async addFinalizer(kind: Kind, key: ResourceKey, finalizer: string): Promise<void> {
    const existing = this.bucket(kind).get(key);
    if (!existing || existing.metadata.deletionTimestamp) return;
    const finalizers = existing.metadata.finalizers ?? [];
    if (finalizers.includes(finalizer)) return;
    this.bucket(kind).set(key, this.revise(existing, { finalizers: [...finalizers, finalizer] }));
  }

  async removeFinalizer(kind: Kind, key: ResourceKey, finalizer: string): Promise<void> {
    const byKey = this.bucket(kind);
    const existing = byKey.get(key);
    if (!existing) return;
    const finalizers = (existing.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    if (existing.metadata.deletionTimestamp && finalizers.length === 0) {
      byKey.delete(key);
      this.emit({ type: 'delete', kind, key, object: existing });
      return;
    }
    byKey.set(key, this.revise(existing, { finalizers }));
  }

  private revise(object: Resource, metadata: Partial<Resource['metadata']>): Resource {
    return {
      ...object,
      metadata: { ...object.metadata, ...metadata, resourceVersion: String(++this.resourceVersion) },
    } as Resource;
  }

  private bucket(kind: Kind): Map<ResourceKey, Resource> {
    const byKey = getOrInsert(this.objects, kind, () => new Map());
    return byKey;
  }

  private emit(event: StoreEvent): void {
    for (const handler of this.handlers) handler(event);
  }
}
