/**
 * The Kubernetes API as a ResourceStore: one reflector per kind fills a cache of validated objects;
 * status goes through the /status subresource, finalizers through merge patches on
 * metadata.finalizers, both conditional on resourceVersion and retried after a refetch on conflict.
 * The kinds of registered front doors are read and written the same way (a ForeignObjectStore).
 */
import {
  apiVersionOf,
  type ForeignObject,
  type FrontDoor,
  type FrontDoors,
  frontDoorId,
  validateForeign,
} from '../../api/frontdoors/index.ts';
import {
  KIND_DEFINITIONS,
  KINDS,
  type Kind,
  type Problem,
  type Resource,
  validateResource,
} from '../../api/index.ts';
import { jsonEqual } from '../../control/conditions.ts';
import type {
  ForeignEvent,
  ForeignObjectStore,
  ResourceStore,
  StoreEvent,
} from '../../control/resource-store.ts';
import type { Registry } from '../../metrics/registry.ts';
import { getOrInsert } from '../../util/get-or-insert.ts';
import { type ResourceKey, resourceKey, splitKey } from '../../zones/resource-key.ts';
import type { EventRecorder } from './events.ts';
import { type ApiResource, isStatus, type KubeApi, type KubeJson } from './kube-api.ts';
import { type KubeObject, Reflector, type ReflectorOptions } from './reflector.ts';

/** How often a front door's kind whose CRD is not installed is listed again. */
const ABSENT_KIND_RECHECK_MS = 10_000;

/** An object the API server holds but Zonekeeper cannot use, and why. */
export interface InvalidObject {
  kind: Kind;
  key: ResourceKey;
  problems: Problem[];
}

export interface KubernetesStoreOptions {
  api: Pick<KubeApi, 'listerWatcher' | 'get' | 'replaceStatus' | 'mergePatch'>;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  registry?: Registry;
  /** Events for status transitions (the operator only). */
  events?: EventRecorder;
  reflector?: Pick<ReflectorOptions, 'inactivityMs' | 'watchTimeoutSeconds' | 'backoff'>;
  /** Front doors whose kinds are read too (a kind whose CRD is not installed holds nothing until it is). */
  frontDoors?: FrontDoors;
}

/** A native object, or a front door's. */
type Stored = Resource | ForeignObject;

/** The part of an object a conditional write changes. */
type WritePart = 'status' | 'finalizers' | 'labels';

/**
 * Plans a conditional write on the newest known object: the request to send with the resourceVersion
 * it was planned on, or nothing when there is nothing to do.
 */
type WritePlan = (
  base: Stored,
) => ((api: KubernetesStoreOptions['api'], resourceVersion: string) => Promise<KubeJson>) | undefined;

/** An object of a front door's kind that fails its validation, and why. */
export interface InvalidForeignObject {
  door: string;
  key: ResourceKey;
  problems: Problem[];
  /** The version that fails (metadata without managedFields; spec unchecked), for its status. */
  latest: ForeignObject;
}

/** A write of ours that the watch has not delivered yet: until it does, it is the newest version. */
interface Overlay {
  resourceVersion: string;
  object: Stored;
  expires: number;
}

/** How long an overlay may wait for its watch event (a safety net; the event normally comes in ms). */
const OVERLAY_TTL_MS = 60_000;
/** resourceVersions remembered per object, to tell whether the watch already delivered a write. */
const RECENT_VERSIONS = 8;
const MAX_CONFLICT_RETRIES = 5;

export class KubernetesStore implements ResourceStore, ForeignObjectStore {
  private readonly options: KubernetesStoreOptions;
  /** By kind: a native kind's name, or a front door's id (`Kind.group`). */
  private readonly cache = new Map<string, Map<ResourceKey, Stored>>();
  private readonly overlays = new Map<string, Overlay>();
  private readonly recent = new Map<string, string[]>();
  /** The last write queued for each object (`kind/key`), while one is in flight. */
  private readonly writing = new Map<string, Promise<Stored | undefined>>();
  private readonly invalid = new Map<string, InvalidObject>();
  private readonly invalidForeign = new Map<string, InvalidForeignObject>();
  private readonly handlers = new Set<(event: StoreEvent) => void>();
  private readonly foreignHandlers = new Set<(event: ForeignEvent) => void>();
  private readonly doors = new Map<string, FrontDoor>();
  private readonly reflectors: Reflector[];
  private readonly counters?: {
    events: ReturnType<Registry['counter']>;
    reflector: ReturnType<Registry['counter']>;
    writes: ReturnType<Registry['counter']>;
  };
  /** Called for each object that fails validation (the operator writes its status). */
  onInvalid?: (object: InvalidObject, raw: KubeJson) => void;
  /** Called when an object of a front door's kind fails validation, or fails differently. */
  onInvalidForeign?: (object: InvalidForeignObject) => void;

  constructor(options: KubernetesStoreOptions) {
    this.options = options;
    for (const door of options.frontDoors?.all ?? []) this.doors.set(frontDoorId(door), door);
    const registry = options.registry;
    if (registry) {
      this.counters = {
        events: registry.counter(
          'zonekeeper_kube_watch_events_total',
          'Watch events received, by kind and type.',
          ['kind', 'type'],
        ),
        reflector: registry.counter(
          'zonekeeper_kube_reflector_total',
          'Reflector activity by kind: lists, relists after 410 Gone, watches, watch errors, watchdog restarts, bookmarks.',
          ['kind', 'what'],
        ),
        writes: registry.counter(
          'zonekeeper_kube_writes_total',
          'Writes to the API server by kind, what (status, finalizers) and result (ok, conflict, error).',
          ['kind', 'what', 'result'],
        ),
      };
      const objects = registry.gauge('zonekeeper_kube_objects', 'Objects in the cache, by kind.', ['kind']);
      objects.collect = () => {
        for (const kind of [...KINDS, ...this.doors.keys()])
          objects.set(this.cache.get(kind)?.size ?? 0, kind);
      };
      const invalid = registry.gauge(
        'zonekeeper_kube_invalid_objects',
        'Objects the API server holds that fail Zonekeeper validation.',
      );
      invalid.collect = () => invalid.set(this.invalid.size + this.invalidForeign.size);
      const synced = registry.gauge('zonekeeper_kube_cache_synced', 'Whether every kind was listed once.');
      synced.collect = () => synced.set(this.hasSynced ? 1 : 0);
    }
    const kinds: string[] = [...KINDS, ...this.doors.keys()];
    this.reflectors = kinds.map(
      (kind) =>
        new Reflector({
          name: this.doors.get(kind)?.plural ?? KIND_DEFINITIONS[kind as Kind].plural,
          listerWatcher: options.api.listerWatcher(this.apiResource(kind), options.reflector?.inactivityMs),
          onReplace: (items) => this.replace(kind, items),
          onEvent: (type, object) => this.event(kind, type, object),
          // A front door's CRD is installed only by who uses its API: absent, it holds nothing.
          ...(this.doors.has(kind) ? { absentIsEmpty: { recheckMs: ABSENT_KIND_RECHECK_MS } } : {}),
          ...(options.log ? { log: options.log } : {}),
          onMetric: (what) => this.counters?.reflector.labels(kind, what).inc(),
          ...options.reflector,
        }),
    );
  }

  start(): void {
    for (const r of this.reflectors) r.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.reflectors.map((r) => r.stop()));
  }

  /** Resolves once every kind was listed. */
  async synced(): Promise<void> {
    await Promise.all(this.reflectors.map((r) => r.synced));
  }

  get hasSynced(): boolean {
    return this.reflectors.every((r) => r.hasSynced);
  }

  invalidObjects(): InvalidObject[] {
    return [...this.invalid.values()];
  }

  /** Objects of front-door kinds that fail their door's validation. */
  invalidForeignObjects(): InvalidForeignObject[] {
    return [...this.invalidForeign.values()];
  }

  /** The problems of a front-door object's newest version, if it is invalid. */
  foreignProblems(door: string, key: ResourceKey): readonly Problem[] | undefined {
    return this.invalidForeign.get(`${door}/${key}`)?.problems;
  }

  latestInvalidForeign(door: string, key: ResourceKey): ForeignObject | undefined {
    return this.invalidForeign.get(`${door}/${key}`)?.latest;
  }

  list(kind: Kind): Resource[] {
    return [...(this.cache.get(kind)?.values() ?? [])] as Resource[];
  }

  get(kind: Kind, key: ResourceKey): Resource | undefined {
    return this.cache.get(kind)?.get(key) as Resource | undefined;
  }

  watch(handler: (event: StoreEvent) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  listForeign(door: string): ForeignObject[] {
    return [...(this.cache.get(door)?.values() ?? [])] as ForeignObject[];
  }

  getForeign(door: string, key: ResourceKey): ForeignObject | undefined {
    return this.cache.get(door)?.get(key) as ForeignObject | undefined;
  }

  watchForeign(handler: (event: ForeignEvent) => void): () => void {
    this.foreignHandlers.add(handler);
    return () => this.foreignHandlers.delete(handler);
  }

  async updateStatus(kind: Kind, key: ResourceKey, status: NonNullable<Resource['status']>): Promise<void> {
    const before = this.get(kind, key);
    if (!before) return;
    const written = await this.writeStatus(kind, key, status);
    if (written) this.options.events?.statusChanged(before, written as Resource);
  }

  async updateStatusWith(
    kind: Kind,
    key: ResourceKey,
    plan: (status: Resource['status'] | undefined) => NonNullable<Resource['status']> | undefined,
  ): Promise<Resource['status'] | undefined> {
    // Planned inside the object's write queue, on the object as the writes before it left it (each
    // shows once its answer arrives), and planned again on the object read afresh after a conflict.
    let before: Stored | undefined;
    const written = await this.write(kind, key, 'status', (base) => {
      const status = plan(base.status as Resource['status']);
      if (status === undefined || jsonEqual(base.status, status)) return undefined;
      before = base;
      return this.statusRequest(kind, base, status);
    });
    if (!written) return undefined;
    if (before) this.options.events?.statusChanged(before as Resource, written as Resource);
    return written.status as Resource['status'];
  }

  async updateForeignStatus(door: string, key: ResourceKey, status: Record<string, unknown>): Promise<void> {
    // The newest version, when it is invalid: its status is the one shown and written.
    const before = this.latestInvalidForeign(door, key) ?? this.getForeign(door, key);
    const definition = this.doors.get(door);
    if (!before || !definition) return;
    const written = await this.writeStatus(door, key, status);
    const event =
      written && definition.event?.(before.status, (written.status ?? {}) as Record<string, unknown>);
    if (event && written) {
      const { name, namespace, uid, resourceVersion } = written.metadata;
      this.options.events?.record({
        regarding: {
          kind: definition.kind,
          apiVersion: apiVersionOf(definition),
          name,
          ...(namespace ? { namespace } : {}),
          ...(uid ? { uid } : {}),
          ...(resourceVersion ? { resourceVersion } : {}),
        },
        ...event,
      });
    }
  }

  async addForeignFinalizer(door: string, key: ResourceKey, finalizer: string): Promise<void> {
    await this.addFinalizer(door as Kind, key, finalizer);
  }

  async removeForeignFinalizer(door: string, key: ResourceKey, finalizer: string): Promise<void> {
    await this.removeFinalizer(door as Kind, key, finalizer);
  }

  async removeForeignAnnotations(
    door: string,
    key: ResourceKey,
    annotations: readonly string[],
  ): Promise<void> {
    await this.write(door, key, 'finalizers', (base) => {
      const current = base.metadata.annotations ?? {};
      if (!annotations.some((a) => a in current)) return undefined;
      // A merge patch deletes a key given as null; the resourceVersion makes it fail (409) if it moved.
      return (api, rv) =>
        api.mergePatch(this.apiResource(door), base.metadata.namespace, base.metadata.name, {
          metadata: {
            annotations: Object.fromEntries(annotations.map((a) => [a, null])),
            resourceVersion: rv,
          },
        });
    });
  }

  /** One label, by merge patch (conditional on the resourceVersion, like the finalizers). */
  async setForeignLabel(
    door: string,
    key: ResourceKey,
    name: string,
    value: string | undefined,
  ): Promise<void> {
    await this.write(door, key, 'labels', (base) => {
      if (base.metadata.labels?.[name] === value) return undefined;
      return (api, resourceVersion) =>
        api.mergePatch(this.apiResource(door), base.metadata.namespace, base.metadata.name, {
          metadata: { labels: { [name]: value ?? null }, resourceVersion },
        });
    });
  }

  /**
   * Status goes on the newest version. For a front door's object that is the invalid version when
   * there is one (the cache keeps the last valid one, whose resourceVersion would only conflict).
   */
  private writeStatus(kind: string, key: ResourceKey, status: unknown): Promise<Stored | undefined> {
    return this.write(kind, key, 'status', (base) =>
      jsonEqual(base.status, status) ? undefined : this.statusRequest(kind, base, status),
    );
  }

  /** The replacement of an object's status, sent with the resourceVersion it was planned on. */
  private statusRequest(kind: string, base: Stored, status: unknown): ReturnType<WritePlan> & object {
    const { name, namespace } = base.metadata;
    return (api, rv) =>
      api.replaceStatus(this.apiResource(kind), {
        apiVersion: base.apiVersion,
        kind: base.kind,
        metadata: { name, ...(namespace ? { namespace } : {}), resourceVersion: rv },
        status: status as Record<string, unknown>,
      });
  }

  /** A native kind's name, or the REST coordinates of a front door's kind. */
  private apiResource(kind: string): Kind | ApiResource {
    const door = this.doors.get(kind);
    return door
      ? { group: door.group, version: door.version, plural: door.plural, kind: door.kind }
      : (kind as Kind);
  }

  async addFinalizer(kind: Kind, key: ResourceKey, finalizer: string): Promise<void> {
    await this.write(kind, key, 'finalizers', (base) => {
      const finalizers = base.metadata.finalizers ?? [];
      if (base.metadata.deletionTimestamp || finalizers.includes(finalizer)) return undefined;
      return (api, rv) => this.patchFinalizers(api, kind, base, [...finalizers, finalizer], rv);
    });
  }

  async removeFinalizer(kind: Kind, key: ResourceKey, finalizer: string): Promise<void> {
    await this.write(kind, key, 'finalizers', (base) => {
      const finalizers = base.metadata.finalizers ?? [];
      if (!finalizers.includes(finalizer)) return undefined;
      return (api, rv) =>
        this.patchFinalizers(
          api,
          kind,
          base,
          finalizers.filter((f) => f !== finalizer),
          rv,
        );
    });
  }

  private patchFinalizers(
    api: KubernetesStoreOptions['api'],
    kind: string,
    base: Stored,
    finalizers: string[],
    resourceVersion: string,
  ): Promise<KubeJson> {
    // A merge patch replaces the whole list; the resourceVersion makes it fail (409) if the list moved.
    return api.mergePatch(this.apiResource(kind), base.metadata.namespace, base.metadata.name, {
      metadata: { finalizers, resourceVersion },
    });
  }

  /**
   * Writes to one object, one after the other: a write planned while another to the same object is in
   * flight (its finalizer and its status, from the record-set and zone reconciles) would carry a
   * resourceVersion that write is about to move, and meet a conflict (409) that costs a read and a
   * second write. Queued, it is planned on what the one before it wrote.
   */
  private write(
    kind: string,
    key: ResourceKey,
    what: WritePart,
    plan: WritePlan,
  ): Promise<Stored | undefined> {
    const id = `${kind}/${key}`;
    const before = this.writing.get(id);
    const run = before
      ? before.then(
          () => this.writeNow(kind, key, what, plan),
          () => this.writeNow(kind, key, what, plan),
        )
      : this.writeNow(kind, key, what, plan);
    this.writing.set(id, run);
    const clear = () => {
      if (this.writing.get(id) === run) this.writing.delete(id);
    };
    run.then(clear, clear);
    return run;
  }

  /**
   * A conditional write: `plan` looks at the newest known object and returns the request (or nothing
   * when there is nothing to do). On 409 the object is read again and planned again.
   */
  private async writeNow(
    kind: string,
    key: ResourceKey,
    what: WritePart,
    plan: WritePlan,
  ): Promise<Stored | undefined> {
    const newest = () =>
      what === 'status' && this.doors.has(kind)
        ? this.invalidForeign.get(`${kind}/${key}`)?.latest
        : undefined;
    let base = newest() ?? this.cache.get(kind)?.get(key);
    for (let attempt = 0; base; attempt++) {
      const request = plan(base);
      if (!request) return undefined;
      const sent = base.metadata.resourceVersion ?? '';
      try {
        const response = await request(this.options.api, sent);
        this.counters?.writes.labels(kind, what, 'ok').inc();
        // A write on an invalid version leaves the cache alone (parse keeps the version it wrote).
        return this.writeThrough(kind, key, response) ?? newest();
      } catch (e) {
        if (isStatus(e, 404)) {
          this.counters?.writes.labels(kind, what, 'gone').inc();
          return undefined;
        }
        if (!isStatus(e, 409) || attempt >= MAX_CONFLICT_RETRIES) {
          this.counters?.writes.labels(kind, what, 'error').inc();
          throw e;
        }
        this.counters?.writes.labels(kind, what, 'conflict').inc();
        // Someone else changed the object: read it again and decide again.
        const { namespace, name } = splitKey(key);
        const fresh = await this.options.api.get(this.apiResource(kind), namespace, name);
        // Still invalid: a status is written on that version all the same.
        base = fresh ? (this.parse(kind, fresh) ?? newest()) : undefined;
      }
    }
    return undefined;
  }

  /** Makes a write of ours visible at once, before the watch delivers it. */
  private writeThrough(kind: string, key: ResourceKey, raw: KubeJson): Stored | undefined {
    const object = this.parse(kind, raw);
    if (!object) return undefined;
    const id = `${kind}/${key}`;
    const rv = object.metadata.resourceVersion ?? '';
    if (object.metadata.deletionTimestamp && (object.metadata.finalizers ?? []).length === 0) {
      // The last finalizer went: the API server deletes the object now. The overlay stays as a
      // tombstone, so the watch's last events for it do not bring it back before DELETED arrives.
      const existing = this.bucket(kind).get(key);
      this.bucket(kind).delete(key);
      this.overlays.set(id, { resourceVersion: rv, object, expires: Date.now() + OVERLAY_TTL_MS });
      if (existing) this.emit('delete', kind, key, existing);
      return object;
    }
    // Written with a version the watch already delivered (an update that changed nothing): no event
    // will follow, so nothing is waited for.
    if (!(this.recent.get(id) ?? []).includes(rv))
      this.overlays.set(id, { resourceVersion: rv, object, expires: Date.now() + OVERLAY_TTL_MS });
    this.bucket(kind).set(key, object);
    this.emit('upsert', kind, key, object);
    return object;
  }

  private replace(kind: string, items: KubeObject[]): void {
    const bucket = this.bucket(kind);
    const seen = new Set<ResourceKey>();
    for (const raw of items) {
      const key = this.keyOf(kind, raw);
      if (!key) continue;
      seen.add(key);
      const id = `${kind}/${key}`;
      this.overlays.delete(id); // a list is at least as new as any write of ours
      this.remember(id, raw.metadata?.resourceVersion);
      const object = this.parse(kind, raw as KubeJson);
      if (!object) continue; // invalid: the last valid version (if any) stays
      const existing = bucket.get(key);
      if (existing?.metadata.resourceVersion === object.metadata.resourceVersion) continue;
      bucket.set(key, object);
      this.emit('upsert', kind, key, object);
    }
    for (const [key, existing] of [...bucket]) {
      if (seen.has(key)) continue;
      bucket.delete(key);
      this.forget(`${kind}/${key}`);
      this.emit('delete', kind, key, existing);
    }
    for (const [id, invalid] of [...this.invalid])
      if (invalid.kind === kind && !seen.has(invalid.key)) this.invalid.delete(id);
    for (const [id, invalid] of [...this.invalidForeign])
      if (invalid.door === kind && !seen.has(invalid.key)) this.invalidForeign.delete(id);
  }

  private event(kind: string, type: 'ADDED' | 'MODIFIED' | 'DELETED', raw: KubeObject): void {
    this.counters?.events.labels(kind, type).inc();
    const key = this.keyOf(kind, raw);
    if (!key) return;
    const id = `${kind}/${key}`;
    const bucket = this.bucket(kind);
    if (type === 'DELETED') {
      const existing = bucket.get(key);
      bucket.delete(key);
      this.forget(id);
      this.invalid.delete(id);
      this.invalidForeign.delete(id);
      if (existing) this.emit('delete', kind, key, existing);
      return;
    }
    const rv = raw.metadata?.resourceVersion;
    this.remember(id, rv);
    let overlay = this.overlays.get(id);
    // An overlay of an earlier object of the same name (a tombstone written after its DELETED event
    // arrived, then the object created again) says nothing about this one.
    const uid = (raw.metadata as { uid?: string } | undefined)?.uid;
    if (
      overlay &&
      uid !== undefined &&
      overlay.object.metadata.uid !== undefined &&
      overlay.object.metadata.uid !== uid
    ) {
      this.overlays.delete(id);
      overlay = undefined;
    }
    if (overlay) {
      if (overlay.resourceVersion === rv) {
        // Our own write, already applied: nothing new.
        this.overlays.delete(id);
        return;
      }
      // Older than our write (the watch is catching up): our write already showed the newer state.
      if (Date.now() < overlay.expires) return;
      this.overlays.delete(id);
    }
    const object = this.parse(kind, raw as KubeJson);
    if (!object) return;
    bucket.set(key, object);
    this.emit('upsert', kind, key, object);
  }

  /** Validates an object from the API server; invalid ones are reported and not used. */
  private parse(kind: string, raw: KubeJson): Stored | undefined {
    const door = this.doors.get(kind);
    if (door) return this.parseForeign(kind, door, raw);
    const { managedFields: _m, ...metadata } = (raw.metadata ?? {}) as Record<string, unknown>;
    const result = validateResource({ ...raw, kind, metadata }, undefined, { keepStatus: true });
    const key = this.keyOf(kind, raw);
    if (!key) return undefined;
    const id = `${kind}/${key}`;
    if (result.ok) {
      this.invalid.delete(id);
      return result.resource;
    }
    const known = this.invalid.get(id);
    const entry: InvalidObject = { kind: kind as Kind, key, problems: result.problems };
    this.invalid.set(id, entry);
    if (!known || !jsonEqual(known.problems, result.problems)) {
      this.options.log?.('warn', `${kind} ${key} is invalid and is ignored`, {
        problems: result.problems.map((p) => `${p.path}: ${p.message}`).join('; '),
      });
      this.onInvalid?.(entry, raw);
    }
    return undefined;
  }

  private parseForeign(kind: string, door: FrontDoor, raw: KubeJson): Stored | undefined {
    const { managedFields: _m, ...metadata } = (raw.metadata ?? {}) as Record<string, unknown>;
    const key = this.keyOf(kind, raw);
    if (!key) return undefined;
    const id = `${kind}/${key}`;
    const old = this.cache.get(kind)?.get(key) as ForeignObject | undefined;
    const result = validateForeign(door, { ...raw, metadata }, old, { keepStatus: true });
    if (result.ok) {
      this.invalidForeign.delete(id);
      return result.foreign;
    }
    const known = this.invalidForeign.get(id);
    const entry: InvalidForeignObject = {
      door: kind,
      key,
      problems: result.problems,
      latest: {
        ...(raw as unknown as ForeignObject),
        metadata: metadata as unknown as ForeignObject['metadata'],
      },
    };
    this.invalidForeign.set(id, entry);
    const changed = !known || !jsonEqual(known.problems, result.problems);
    if (changed)
      this.options.log?.('warn', `${door.kind} ${key} is invalid and is ignored`, {
        problems: result.problems.map((p) => `${p.path}: ${p.message}`).join('; '),
      });
    // Another generation with the same problems moves the status's observedGeneration.
    if (changed || known.latest.metadata.generation !== entry.latest.metadata.generation)
      this.onInvalidForeign?.(entry);
    return undefined;
  }

  private remember(id: string, rv: string | undefined): void {
    if (!rv) return;
    const list = getOrInsert(this.recent, id, () => []);
    list.push(rv);
    if (list.length > RECENT_VERSIONS) list.shift();
  }

  private forget(id: string): void {
    this.overlays.delete(id);
    this.recent.delete(id);
  }

  private bucket(kind: string): Map<ResourceKey, Stored> {
    return getOrInsert(this.cache, kind, () => new Map());
  }

  private emit(type: 'upsert' | 'delete', kind: string, key: ResourceKey, object: Stored): void {
    if (this.doors.has(kind)) {
      const event = { type, door: kind, key, object: object as ForeignObject };
      for (const handler of this.foreignHandlers) handler(event);
      return;
    }
    const event = { type, kind: kind as Kind, key, object: object as Resource };
    for (const handler of this.handlers) handler(event);
  }

  private keyOf(kind: string, raw: KubeObject): ResourceKey | undefined {
    return keyOfRaw(kind, raw, this.doors.get(kind));
  }
}

function keyOfRaw(kind: string, raw: KubeObject, door?: FrontDoor): ResourceKey | undefined {
  const name = raw.metadata?.name;
  if (!name) return undefined;
  const scope = door?.scope ?? KIND_DEFINITIONS[kind as Kind]?.scope;
  const namespace = scope === 'Namespaced' ? raw.metadata?.namespace : undefined;
  return resourceKey({ name, ...(namespace ? { namespace } : {}) });
}
