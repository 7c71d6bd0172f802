/**
 * The translating store: a source's native objects as they are, plus the DNSZones and DNSRecordSets
 * that objects of front-door kinds map to. The controller, the catalog and everything after them see
 * only native objects, so tenancy, delegations, conflicts and serials apply to translated objects
 * exactly as to native ones. What they write goes back to the foreign objects:
 * - status: each foreign object's status is its door's projection of the native statuses of its
 *   outputs (conditions' observedGeneration in the foreign object's own generations), written only
 *   when it changed;
 * - finalizers: the native finalizer on a translated object is the door's finalizer on each live
 *   foreign object behind it; a foreign object being deleted keeps it until the native object
 *   without its contribution is served (or refused), or, when it was the last, until the controller
 *   releases the native object;
 * - Events: filed by the source for the foreign object (the door's `event`).
 *
 * Outputs of a namespaced object always land in its namespace, and a merged RRset only ever gathers
 * objects of one namespace (its native key holds the namespace), so a foreign object can do no more
 * than a DNSRecordSet of its namespace could.
 */

import {
  type ForeignObject,
  type FrontDoor,
  type FrontDoors,
  frontDoorId,
  mergedName,
  nativeName,
  type OutputStatus,
  type RelatedChange,
  type TranslateContext,
  type TranslatedOutput,
} from '../api/frontdoors/front-door.ts';
import {
  API_VERSION,
  type Condition,
  type DNSRecordSetSpec,
  type DNSRecordSetStatus,
  type DNSZoneClass,
  type DNSZoneStatus,
  type Kind,
  type Problem,
  type Resource,
  validateResource,
} from '../api/index.ts';
import { pushAll } from '../util/push-all.ts';
import { within } from '../util/within.ts';
import { DEFAULT_CLASS_ANNOTATION, defaultZoneClass } from '../zones/default-class.ts';
import type { RecordTable } from '../zones/record-table.ts';
import { compareByAge, type ResourceKey, resourceKey, splitKey } from '../zones/resource-key.ts';
import { jsonEqual } from './conditions.ts';
import {
  FINALIZER,
  type ForeignEvent,
  type ForeignObjectStore,
  type ResourceStore,
  type StoreEvent,
} from './resource-store.ts';

type TranslatedKind = 'DNSZone' | 'DNSRecordSet';
type NativeStatus = DNSZoneStatus | DNSRecordSetStatus;

/** One foreign object's part in a translated object. */
interface Contribution {
  output: TranslatedOutput;
  object: ForeignObject;
}

/** A native object made from foreign ones. */
interface Translated {
  kind: TranslatedKind;
  key: ResourceKey;
  door: FrontDoor;
  doorId: string;
  /** Foreign key → its contribution (live and deleting objects). */
  contributors: Map<ResourceKey, Contribution>;
  /** The native object handed out (undefined until a valid spec was made). */
  object?: Resource;
  generation: number;
  /** For each native generation: the foreign generation of each live contributor it was made from. */
  history: Map<number, Map<ResourceKey, number>>;
  /** Contributors being deleted, with the native generation that no longer holds them. */
  leaving: Map<ResourceKey, number>;
  /** Why the newest translation is not used (the last valid one stays). */
  problems?: Problem[];
}

export interface FrontDoorStoreOptions {
  base: ResourceStore & ForeignObjectStore;
  doors: FrontDoors;
  now?: () => Date;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /** Problems of a foreign object's newest version, when the source keeps an older valid one. */
  problems?: (door: string, key: ResourceKey) => readonly Problem[] | undefined;
  /** Never write status or finalizers (`zonekeeper server` replicas only read). */
  readOnly?: boolean;
  /**
   * Every so often (default 60 s) each foreign object's status is projected again — written only when
   * it differs — so that a write lost on the way (the API server briefly not serving a new CRD's status)
   * is made good without waiting for a change. 0: never.
   */
  resyncMs?: number;
  /**
   * Changes of kinds that doors read, arriving outside a `batch`, are followed once at the end of the
   * turn (a microtask) rather than each at once: the objects that read them are translated again
   * once for all the changes of that turn. For a source that hands over many changes in one turn with
   * no batch of its own: a Kubernetes watch hands over in one turn the events that queued while this
   * thread was busy (watch-thread.ts), and a burst of 10,000 kubizone Records otherwise translated
   * their Zone again after each (quadratic; the watch then fell behind). The objects changed are
   * translated at once either way.
   */
  coalesce?: boolean;
  /** How long a resync waits for one projection before it goes on (default RESYNC_WAIT_MS). */
  resyncWaitMs?: number;
}

/** How many native generations' contributor maps are remembered per translated object. */
const HISTORY = 16;
const RELEASE_RETRY_MS = 1000;

/**
 * Outputs of one foreign object above which a native status write projects it soon, once for the
 * writes until then, not at once (`FrontDoorStore.projectAfterWrite`).
 */
export const PROJECT_SOON_OVER = 64;

/** Projections a resync (`FrontDoorStore.resyncStatus`) makes at once. */
export const RESYNC_CONCURRENCY = 8;
/** How long a resync waits for one projection before it goes on to the next (`resyncStatus`). */
export const RESYNC_WAIT_MS = 10_000;

export class FrontDoorStore implements ResourceStore {
  private readonly options: FrontDoorStoreOptions;
  private readonly translated = new Map<string, Translated>();
  /** `door/key` of a foreign object → the ids (`Kind/key`) of the translated objects it feeds. */
  private readonly feeds = new Map<string, Set<string>>();
  private readonly handlers = new Set<(event: StoreEvent) => void>();
  private unsubscribe: (() => void)[] = [];
  private resourceVersion = 0;
  /**
   * `door/key` → the spec and deletion last seen, with the object as it was then: to tell spec changes
   * from status writes, and to tell the doors that read it what it was before.
   */
  private readonly seenSpecs = new Map<string, { seen: string; object: ForeignObject }>();
  /**
   * `listForeign` per door id, kept until the spec, deletion or existence of an object of that door
   * changes (for `context.related`; a status write keeps it).
   */
  private readonly relatedCache = new Map<string, ForeignObject[]>();
  /** The classes as far as the default class depends on them, when last seen. */
  private classesSeen = '';
  /**
   * Projections running, per `door/key`: one at a time per object, and one more after it when asked
   * meanwhile, so that a status computed from an older view never lands after a newer one.
   */
  private readonly projecting = new Map<string, { again: boolean; done: Promise<void> }>();
  private resync?: NodeJS.Timeout;

  constructor(options: FrontDoorStoreOptions) {
    this.options = options;
    for (const door of options.doors.all) {
      // An external door's objects map onto nothing; its own controller owns their status.
      if (door.external) continue;
      const id = frontDoorId(door);
      for (const object of options.base.listForeign(id)) {
        this.seenSpecs.set(`${id}/${resourceKey(object.metadata)}`, { seen: specSignature(object), object });
        this.foreignChanged(id, object, false);
      }
    }
    // Objects that map onto nothing (refused, or waiting) get their status now: no native status
    // write will ever project it.
    for (const door of options.doors.all) {
      if (door.external) continue;
      const id = frontDoorId(door);
      for (const object of options.base.listForeign(id)) {
        const fkey = resourceKey(object.metadata);
        if (!object.metadata.deletionTimestamp && !this.feeds.has(`${id}/${fkey}`))
          void this.projectLogged(id, fkey);
      }
    }
    this.classesSeen = this.classSignature();
    const resyncMs = options.resyncMs ?? 60_000;
    if (!options.readOnly && resyncMs > 0) {
      this.resync = setInterval(() => void this.resyncStatus(), resyncMs);
      this.resync.unref();
    }
    // Objects that map onto nothing get their status now (later, only when they or what they read change).
    if (!options.readOnly)
      for (const door of options.doors.all) {
        if (door.external) continue;
        const id = frontDoorId(door);
        for (const object of options.base.listForeign(id)) {
          const fkey = resourceKey(object.metadata);
          if (!object.metadata.deletionTimestamp && !this.feeds.has(`${id}/${fkey}`))
            void this.projectLogged(id, fkey);
        }
      }
    this.unsubscribe.push(
      options.base.watch((event) => {
        // Only a change of which class is the default matters (not the classes' status writes).
        if (event.kind === 'DNSZoneClass' && this.classSignature() !== this.classesSeen) {
          this.classesSeen = this.classSignature();
          this.retranslate((door) => door.reads?.defaultClass === true);
        }
        this.emit(event);
      }),
      options.base.watchForeign((event) => this.onForeign(event)),
    );
  }

  close(): void {
    for (const u of this.unsubscribe) u();
    this.unsubscribe = [];
    clearInterval(this.resync);
    this.closed = true;
  }

  /** `close` was called: projections asked for before it are not made after. */
  private closed = false;

  /** The resync running (`resyncStatus`): a tick while it runs waits for it rather than start another. */
  private resyncing: Promise<void> | undefined;

  /**
   * Projects every foreign object's status again (written only where it differs), RESYNC_CONCURRENCY
   * at a time. All at once, a resync during a burst of 20,000 new objects, whose statuses all still
   * differ, sent 20,000 writes together: the API server refused them (429) and the Lease renewals
   * with them, and the operator lost its leadership.
   */
  resyncStatus(): Promise<void> {
    if (this.resyncing) return this.resyncing;
    const todo: [string, ResourceKey][] = [];
    for (const door of this.options.doors.all) {
      if (door.external) continue;
      const id = frontDoorId(door);
      for (const object of this.options.base.listForeign(id))
        if (!object.metadata.deletionTimestamp) todo.push([id, resourceKey(object.metadata)]);
    }
    let next = 0;
    const worker = async () => {
      while (next < todo.length && !this.closed) {
        const [id, fkey] = todo[next++]!;
        // A write that does not return (an API server that holds the request) holds its own object,
        // not the resync: after a while the resync goes on, the projection still running.
        await within(this.projectLogged(id, fkey), this.options.resyncWaitMs ?? RESYNC_WAIT_MS);
      }
    };
    const running = Promise.all(Array.from({ length: RESYNC_CONCURRENCY }, worker)).then(() => undefined);
    this.resyncing = running.finally(() => {
      this.resyncing = undefined;
    });
    return this.resyncing;
  }

  list(kind: Kind): Resource[] {
    const native = this.options.base.list(kind);
    if (kind === 'DNSZoneClass' || this.translated.size === 0) return native;
    const out = [...native];
    for (const t of this.translated.values()) if (t.kind === kind && t.object) out.push(t.object);
    return out;
  }

  /** The base store's record-set table: `forEachKeyed` passes the base's slots there. */
  get recordTable(): RecordTable | undefined {
    return this.options.base.recordTable;
  }

  /**
   * `list`'s objects with their keys: the base store's own strings for its objects, where it has
   * them, and their slots (`recordTable`); translated objects come with neither.
   */
  forEachKeyed(kind: Kind, visit: (object: Resource, key: ResourceKey, slot?: number) => void): void {
    const base = this.options.base;
    if (base.forEachKeyed) base.forEachKeyed(kind, visit);
    else for (const object of base.list(kind)) visit(object, resourceKey(object.metadata));
    if (kind === 'DNSZoneClass' || this.translated.size === 0) return;
    const own: Resource[] = [];
    for (const t of this.translated.values()) if (t.kind === kind && t.object) own.push(t.object);
    for (const object of own) visit(object, resourceKey(object.metadata));
  }

  get(kind: Kind, key: ResourceKey): Resource | undefined {
    return this.translatedAt(kind, key)?.object ?? this.options.base.get(kind, key);
  }

  /**
   * The translated object with this kind and key, if any. With none translated (no front door in
   * use, the usual case) no id is built: every read and write of a native object passes here.
   */
  private translatedAt(kind: Kind, key: ResourceKey): Translated | undefined {
    return this.translated.size === 0 ? undefined : this.translated.get(`${kind}/${key}`);
  }

  watch(handler: (event: StoreEvent) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /** The translated object with this kind and key, if it is one (for reports naming the foreign objects). */
  origin(
    kind: Kind,
    key: ResourceKey,
  ): { door: FrontDoor; objects: ForeignObject[]; problems?: readonly Problem[] } | undefined {
    const t = this.translatedAt(kind, key);
    if (!t) return undefined;
    return {
      door: t.door,
      objects: sortedContributions(t).map((c) => c.object),
      ...(t.problems ? { problems: t.problems } : {}),
    };
  }

  /** Every translated object whose newest translation is invalid, with the problems. */
  translationProblems(): { door: FrontDoor; objects: ForeignObject[]; problems: readonly Problem[] }[] {
    const out: { door: FrontDoor; objects: ForeignObject[]; problems: readonly Problem[] }[] = [];
    for (const t of this.translated.values())
      if (t.problems)
        out.push({
          door: t.door,
          objects: sortedContributions(t).map((c) => c.object),
          problems: t.problems,
        });
    return out;
  }

  /**
   * Live objects of the doors that map onto nothing native (their API refuses or defers them: a
   * kubizone Record no Zone adopts), with the status their door gives them, for `validate`.
   */
  unmapped(): { door: FrontDoor; object: ForeignObject; status: Record<string, unknown> }[] {
    const out: { door: FrontDoor; object: ForeignObject; status: Record<string, unknown> }[] = [];
    for (const door of this.options.doors.all) {
      if (door.external) continue;
      const id = frontDoorId(door);
      for (const object of this.options.base.listForeign(id)) {
        if (object.metadata.deletionTimestamp || this.feeds.has(`${id}/${resourceKey(object.metadata)}`))
          continue;
        const status = door.project({
          object,
          outputs: [],
          now: (this.options.now?.() ?? new Date()).toISOString(),
          context: this.contextFor(door),
        });
        out.push({ door, object, status: status as Record<string, unknown> });
      }
    }
    return out;
  }

  async updateStatus(
    kind: Kind,
    key: ResourceKey,
    status: NonNullable<Resource['status']>,
    finalizer?: string,
  ): Promise<void> {
    const t = this.translatedAt(kind, key);
    if (!t) return this.options.base.updateStatus(kind, key, status, finalizer);
    // A translated object's finalizer stands for its foreign objects' (`addFinalizer`): not added here.
    if (!t.object) return;
    t.object = {
      ...t.object,
      status,
      metadata: { ...t.object.metadata, resourceVersion: this.nextVersion() },
    } as Resource;
    this.emit({ type: 'upsert', kind, key, object: t.object });
    await Promise.all([...t.contributors.keys()].map((fkey) => this.projectAfterWrite(t.doorId, fkey)));
    await this.release(t);
  }

  async updateStatusWith(
    kind: Kind,
    key: ResourceKey,
    plan: (status: Resource['status'] | undefined) => NonNullable<Resource['status']> | undefined,
  ): Promise<Resource['status'] | undefined> {
    const t = this.translatedAt(kind, key);
    if (!t) return this.options.base.updateStatusWith(kind, key, plan);
    // A translated object's status is set at once (the projection onto its foreign objects follows).
    if (!t.object) return undefined;
    const status = plan(t.object.status);
    if (status === undefined || jsonEqual(status, t.object.status)) return undefined;
    await this.updateStatus(kind, key, status);
    return status;
  }

  async addFinalizer(kind: Kind, key: ResourceKey, finalizer: string): Promise<void> {
    const t = this.translatedAt(kind, key);
    if (!t) return this.options.base.addFinalizer(kind, key, finalizer);
    if (!t.object || t.object.metadata.deletionTimestamp || finalizer !== FINALIZER) return;
    if (this.options.readOnly) return;
    for (const [fkey, c] of t.contributors) {
      if (c.object.metadata.deletionTimestamp || t.door.holdsFinalizer?.(c.object) === false) continue;
      await this.options.base.addForeignFinalizer(t.doorId, fkey, t.door.finalizer);
    }
    this.setFinalizers(t);
  }

  async removeFinalizer(kind: Kind, key: ResourceKey, finalizer: string): Promise<void> {
    const t = this.translatedAt(kind, key);
    if (!t) return this.options.base.removeFinalizer(kind, key, finalizer);
    if (finalizer !== FINALIZER || this.options.readOnly) return;
    // The controller releases a translated object only once it is deleted: every foreign object
    // behind it is being deleted, and none is served any more.
    for (const [fkey, c] of [...t.contributors]) {
      if (!c.object.metadata.deletionTimestamp) continue;
      await this.options.base.removeForeignFinalizer(t.doorId, fkey, t.door.finalizer);
    }
  }

  /**
   * Projects a foreign object's status again, written only when it changed: for when its problems
   * (the `problems` option) changed without the object changing, e.g. a manifest made invalid while
   * its last valid version stays served, or made valid again at that same version.
   */
  refreshStatus(door: string, key: ResourceKey): Promise<void> {
    return this.projectLogged(door, key);
  }

  // Foreign objects in ---------------------------------------------------------------------------

  private onForeign(event: ForeignEvent): void {
    const fid = `${event.door}/${event.key}`;
    const before = this.seenSpecs.get(fid)?.object;
    let specChanged = true;
    if (event.type === 'delete') {
      this.seenSpecs.delete(fid);
      this.relatedCache.delete(event.door);
      this.foreignGone(event.door, event.key);
    } else {
      const seen = specSignature(event.object);
      specChanged = this.seenSpecs.get(fid)?.seen !== seen;
      if (specChanged) {
        this.seenSpecs.set(fid, { seen, object: event.object });
        this.relatedCache.delete(event.door);
      }
      this.foreignChanged(event.door, event.object, true);
    }
    // Doors whose translation reads this kind: translated again when a spec changes (not on status),
    // as far as the door says the change reaches.
    const changed = this.options.doors.get(event.door);
    if (!changed || !specChanged) return;
    const related = {
      which: (door: FrontDoor) =>
        door.group === changed.group && (door.reads?.kinds ?? []).includes(changed.kind),
      except: fid,
      change: {
        kind: changed.kind,
        ...(before ? { before } : {}),
        ...(event.type === 'delete' ? {} : { after: event.object }),
      },
    };
    if (this.pendingRelated === undefined && this.options.coalesce && !this.closed) {
      const end = this.openBatch();
      queueMicrotask(() => {
        try {
          if (!this.closed) end();
        } catch (e) {
          // As a change outside a batch would have thrown to whoever made it: logged here. The
          // objects left untranslated are translated again with their next change or status write.
          this.options.log?.(
            'error',
            `translating the objects that read a changed one: ${(e as Error).message}`,
          );
        }
      });
    }
    if (this.pendingRelated !== undefined) this.pendingRelated.push(related);
    else this.retranslate(related.which, related.except, related.change);
  }

  /** While `batch` runs: the changes of kinds doors read, translated again when it ends. */
  private pendingRelated:
    | { which: (door: FrontDoor) => boolean; except: string; change: RelatedChange }[]
    | undefined;

  /**
   * Runs `run`, which changes many foreign objects of the base store at once (a folder's reload), and
   * translates the objects that read them again once, at its end, with what they read as it is then:
   * a Zone adopting 40,000 Records was translated again after each of them, each time reading all of
   * them (quadratic: minutes for one 6 MB manifest file). Outside a batch, as before, each change is
   * followed at once.
   */
  batch(run: () => void): void {
    const end = this.openBatch();
    try {
      run();
    } finally {
      end();
    }
  }

  /**
   * Starts a batch (`batch`), unless one is open: the function returned ends it, translating again
   * what read the changes made since (nothing when it did not start one).
   */
  private openBatch(): () => void {
    if (this.pendingRelated !== undefined) return () => {};
    this.pendingRelated = [];
    return () => {
      const pending = this.pendingRelated ?? [];
      this.pendingRelated = undefined;
      const done = new Set<string>();
      for (const { which, except, change } of pending) this.retranslate(which, except, change, done);
    };
  }

  /**
   * Translates the objects of the doors chosen again (what they read changed): those the door's
   * `reads.affected` names for `change`, or every one.
   */
  private retranslate(
    which: (door: FrontDoor) => boolean,
    except?: string,
    change?: RelatedChange,
    /** Objects translated already in this batch (`batch`): not again. */
    done = new Set<string>(),
  ): void {
    for (const door of this.options.doors.all) {
      if (door.external || !which(door)) continue;
      const id = frontDoorId(door);
      const affected =
        change && door.reads?.affected ? door.reads.affected(change, this.contextFor(door)) : 'all';
      const objects =
        affected === 'all'
          ? this.options.base.listForeign(id)
          : affected.flatMap((ref) => {
              const o = this.options.base.getForeign(id, resourceKey(ref));
              return o ? [o] : [];
            });
      for (const object of objects) {
        const fid = `${id}/${resourceKey(object.metadata)}`;
        if (fid === except || done.has(fid)) continue;
        done.add(fid);
        this.foreignChanged(id, object, true);
      }
    }
  }

  private classSignature(): string {
    return JSON.stringify(
      this.options.base
        .list('DNSZoneClass')
        .map((c) => [
          c.metadata.name,
          c.metadata.annotations?.[DEFAULT_CLASS_ANNOTATION] ?? null,
          c.metadata.deletionTimestamp !== undefined,
          // What a door may show of the default class (Datum's classes compare their name servers).
          (c as DNSZoneClass).spec.nameServers ?? null,
        ])
        .sort(),
    );
  }

  private contextFor(door: FrontDoor): TranslateContext {
    return {
      zoneName: (name, key = '') => nativeName(door, name, key),
      related: (kind) => {
        const id = `${kind}.${door.group}`;
        let objects = this.relatedCache.get(id);
        if (!objects) {
          objects = this.options.base.listForeign(id);
          this.relatedCache.set(id, objects);
        }
        return objects;
      },
      defaultClass: () => defaultZoneClass(this.options.base.list('DNSZoneClass') as never),
    };
  }

  private foreignChanged(doorId: string, object: ForeignObject, notify: boolean): void {
    const door = this.options.doors.get(doorId);
    if (!door || door.external) return;
    const fkey = resourceKey(object.metadata);
    const fid = `${doorId}/${fkey}`;
    // Another controller's object: never read into the catalog, never written.
    if (door.owns && !door.owns(object)) {
      if (this.feeds.has(fid)) this.foreignGone(doorId, fkey);
      return;
    }
    const before = this.feeds.get(fid) ?? new Set<string>();
    const now = new Set<string>();
    let outputs: TranslatedOutput[];
    try {
      outputs = door.translate(object, this.contextFor(door));
    } catch (e) {
      this.options.log?.('error', `${door.kind} ${fkey}: the front door failed to translate it`, {
        error: e instanceof Error ? e.message : String(e),
      });
      outputs = [];
    }
    for (const output of outputs) {
      const namespace =
        door.scope === 'Namespaced' ? (object.metadata.namespace ?? 'default') : output.namespace;
      if (!namespace) continue; // a cluster-scoped door must name the namespace of each output
      const name =
        door.merge === 'byKey' && output.kind === 'DNSRecordSet'
          ? mergedName(door, output.key)
          : nativeName(door, object.metadata.name, output.key);
      const key = resourceKey({ namespace, name });
      const id = `${output.kind}/${key}`;
      let t = this.translated.get(id);
      if (!t) {
        t = {
          kind: output.kind,
          key,
          door,
          doorId,
          contributors: new Map(),
          generation: 0,
          history: new Map(),
          leaving: new Map(),
        };
        this.translated.set(id, t);
      }
      t.contributors.set(fkey, { output, object });
      now.add(id);
    }
    for (const id of before) {
      if (now.has(id)) continue;
      const t = this.translated.get(id);
      t?.contributors.delete(fkey);
    }
    if (now.size > 0) this.feeds.set(fid, now);
    else this.feeds.delete(fid);
    for (const id of new Set([...before, ...now])) this.rebuild(id, notify);
    // Being deleted and mapping onto nothing (e.g. a record whose zone went first): nothing of it is
    // served, so nothing holds it.
    if (
      notify &&
      now.size === 0 &&
      object.metadata.deletionTimestamp &&
      (object.metadata.finalizers ?? []).includes(door.finalizer)
    )
      void this.releaseForeign(doorId, fkey, door.finalizer);
    // An object with nothing to show for (no outputs) still gets its status; so does every change of
    // an object whose annotations request operations (they show as soon as they start).
    if (notify && (door.annotationsToRemove || (now.size === 0 && !object.metadata.deletionTimestamp)))
      void this.projectLogged(doorId, fkey);
  }

  private foreignGone(doorId: string, fkey: ResourceKey): void {
    const fid = `${doorId}/${fkey}`;
    const ids = this.feeds.get(fid);
    this.feeds.delete(fid);
    for (const id of ids ?? []) {
      this.translated.get(id)?.contributors.delete(fkey);
      this.translated.get(id)?.leaving.delete(fkey);
      this.rebuild(id, true);
    }
  }

  /** Makes the native object again from its contributors; emits what changed. */
  private rebuild(id: string, notify: boolean): void {
    const t = this.translated.get(id);
    if (!t) return;
    if (t.contributors.size === 0) {
      this.translated.delete(id);
      if (t.object && notify) this.emit({ type: 'delete', kind: t.kind, key: t.key, object: t.object });
      return;
    }
    const all = sortedContributions(t);
    const live = all.filter((c) => !c.object.metadata.deletionTimestamp);
    for (const c of all) {
      const fkey = resourceKey(c.object.metadata);
      if (c.object.metadata.deletionTimestamp) {
        if (!t.leaving.has(fkey)) t.leaving.set(fkey, t.generation + (live.length > 0 ? 1 : 0));
      } else t.leaving.delete(fkey);
    }
    const { name, namespace } = splitKey(t.key);
    const previous = t.object;
    if (live.length === 0) {
      // Every object behind it is being deleted: so is the native object.
      if (!previous) {
        // Never valid, nothing served: nothing to hold.
        for (const [fkey] of t.contributors) void this.releaseOne(t, fkey);
        return;
      }
      if (previous.metadata.deletionTimestamp) {
        this.setFinalizers(t);
        return;
      }
      t.object = {
        ...previous,
        metadata: {
          ...previous.metadata,
          deletionTimestamp: latest(all.map((c) => c.object.metadata.deletionTimestamp!)),
          resourceVersion: this.nextVersion(),
          ...finalizersOf(t),
        },
      } as Resource;
      if (notify) this.emit({ type: 'upsert', kind: t.kind, key: t.key, object: t.object });
      return;
    }
    const spec = t.kind === 'DNSZone' ? live[0]!.output.spec : mergeRecordSets(live.map((c) => c.output));
    const candidate = {
      apiVersion: API_VERSION,
      kind: t.kind,
      metadata: { name: 'translated', ...(namespace ? { namespace } : {}) },
      spec,
    };
    const checked = validateResource(candidate);
    const generations = new Map(
      live.map((c) => [resourceKey(c.object.metadata), c.object.metadata.generation ?? 1]),
    );
    if (!checked.ok) {
      t.problems = checked.problems;
      this.options.log?.(
        'warn',
        `${t.door.kind} ${all.map((c) => resourceKey(c.object.metadata)).join(', ')}: the translation is invalid${previous ? '; the last valid one stays' : ''}`,
        {
          problems: checked.problems.map((p) => `${p.path}: ${p.message}`).join('; '),
        },
      );
      if (notify) for (const c of all) void this.projectLogged(t.doorId, resourceKey(c.object.metadata));
      return;
    }
    const hadProblems = t.problems !== undefined;
    t.problems = undefined;
    const oldest = live[0]!.object.metadata;
    const lastHistory = t.history.get(t.generation);
    const changed =
      !previous ||
      previous.metadata.deletionTimestamp !== undefined ||
      !jsonEqual(previous.spec, checked.resource.spec) ||
      !lastHistory ||
      !jsonEqual(Object.fromEntries(lastHistory), Object.fromEntries(generations));
    if (changed) {
      t.generation++;
      t.history.set(t.generation, generations);
      for (const g of t.history.keys()) if (g <= t.generation - HISTORY) t.history.delete(g);
    }
    // A read-only replica never gets a status written: a zone's comes from its object's own status.
    // Any process's first look at a zone takes it from there too: an operator after a restart learns
    // which translated zones were served, so that an older object does not take a served domain.
    const inherited =
      t.kind === 'DNSZone' && (this.options.readOnly || previous === undefined)
        ? t.door.nativeStatus?.(
            live[0]!.object,
            live[0]!.output.key,
            (checked.resource.spec as { domainName: string }).domainName,
          )
        : undefined;
    const status =
      inherited ?? (previous?.status && !previous.metadata.deletionTimestamp ? previous.status : undefined);
    const statusChanged = this.options.readOnly && !jsonEqual(status, previous?.status);
    const object = {
      apiVersion: API_VERSION,
      kind: t.kind,
      metadata: {
        name,
        ...(namespace ? { namespace } : {}),
        uid: `${t.doorId}:${oldest.uid ?? resourceKey(oldest)}`,
        generation: t.generation,
        creationTimestamp: oldest.creationTimestamp,
        resourceVersion:
          previous && !changed && !statusChanged ? previous.metadata.resourceVersion : this.nextVersion(),
        ...finalizersOf(t),
      },
      spec: checked.resource.spec,
      ...(status ? { status } : {}),
    } as Resource;
    if (!changed && !statusChanged && previous && jsonEqual(previous.metadata, object.metadata)) {
      void this.release(t).catch(() => undefined);
      if (hadProblems && notify)
        for (const c of all) void this.projectLogged(t.doorId, resourceKey(c.object.metadata));
      return;
    }
    t.object = object;
    if (notify) this.emit({ type: 'upsert', kind: t.kind, key: t.key, object });
    void this.release(t).catch(() => undefined);
  }

  private setFinalizers(t: Translated): void {
    if (!t.object) return;
    const next = finalizersOf(t);
    if (jsonEqual(next.finalizers ?? [], t.object.metadata.finalizers ?? [])) return;
    const { finalizers: _old, ...metadata } = t.object.metadata;
    t.object = { ...t.object, metadata: { ...metadata, ...next } } as Resource;
  }

  // Status and finalizers out ---------------------------------------------------------------------

  /** Writes a foreign object's status: its door's projection of its outputs' native statuses. */
  private async project(doorId: string, fkey: ResourceKey): Promise<void> {
    if (this.options.readOnly) return;
    const door = this.options.doors.get(doorId);
    if (door?.external) return;
    let valid = this.options.base.getForeign(doorId, fkey);
    if (door && valid && door.owns && !door.owns(valid)) return;
    if (door?.holdsFinalizer && valid && (await this.settleFinalizer(door, doorId, fkey, valid)))
      valid = this.options.base.getForeign(doorId, fkey);
    // A newest version that fails validation: its status is written on it (its generation, its
    // resourceVersion), with the spec of the last valid version when there is one.
    const newest = this.options.base.latestInvalidForeign?.(doorId, fkey);
    const object: ForeignObject | undefined = newest
      ? {
          ...(valid ?? newest),
          metadata: newest.metadata,
          ...(newest.status !== undefined ? { status: newest.status } : {}),
        }
      : valid;
    if (!door || !object || object.metadata.deletionTimestamp) return;
    const outputs: OutputStatus[] = [];
    const problems: Problem[] = [...(this.options.problems?.(doorId, fkey) ?? [])];
    for (const id of this.feeds.get(`${doorId}/${fkey}`) ?? []) {
      const t = this.translated.get(id);
      if (!t) continue;
      if (t.problems) pushAll(problems, t.problems);
      const { namespace, name } = splitKey(t.key);
      const sorted = sortedContributions(t);
      const seen = statusFor(t, fkey);
      outputs.push({
        kind: t.kind,
        key: t.contributors.get(fkey)?.output.key ?? '',
        namespace: namespace ?? '',
        name,
        ...(seen.status ? { status: this.readable(seen.status) } : {}),
        ...(sorted.length > 1 ? { mergedWith: sorted.map((c) => resourceKey(c.object.metadata)) } : {}),
      });
    }
    if (newest && !valid && problems.length === 0) return; // nothing known about it yet
    const input = {
      object,
      outputs,
      ...(problems.length > 0 ? { problems } : {}),
      now: (this.options.now?.() ?? new Date()).toISOString(),
      context: this.contextFor(door),
    };
    const status = door.project(input);
    const labels = door.labels?.(input) ?? {};
    for (const [name, value] of Object.entries(labels))
      if (object.metadata.labels?.[name] !== value)
        await this.options.base.setForeignLabel?.(doorId, fkey, name, value);
    if (!jsonEqual(status, object.status))
      await this.options.base.updateForeignStatus(doorId, fkey, status as Record<string, unknown>);
    const remove = door.annotationsToRemove?.(object, status) ?? [];
    if (remove.length > 0) await this.options.base.removeForeignAnnotations?.(doorId, fkey, remove);
  }

  /**
   * A native status as a foreign object's reader should see it: a translated object named in a
   * condition message (`DNSRecordSet dns/records.kubi.zone:=A:www.example.org.`, the winner of a
   * conflict) is named as the objects of its own API behind it (`Record dns/www (kubi.zone)`).
   */
  private readable(status: NativeStatus): NativeStatus {
    if (!status.conditions?.some((c) => c.message?.includes(':'))) return status;
    const conditions = status.conditions.map((c) =>
      c.message?.includes(':')
        ? {
            ...c,
            message: c.message.replace(
              /\b(DNSRecordSet|DNSZone) ((?:[a-z0-9.-]+\/)?[^\s,;()]*:[^\s,;()]*)/g,
              (text, kind: string, key: string) => {
                // The name may end a sentence: with or without a final dot.
                const trimmed = key.endsWith('.') ? key.slice(0, -1) : undefined;
                const t =
                  this.translated.get(`${kind}/${key}`) ??
                  (trimmed ? this.translated.get(`${kind}/${trimmed}`) : undefined);
                if (!t) return text;
                const keys = sortedContributions(t).map((c) => resourceKey(c.object.metadata));
                const named = `${t.door.kind} ${keys.join(', ')} (${t.door.group})`;
                return this.translated.has(`${kind}/${key}`) ? named : `${named}.`;
              },
            ),
          }
        : c,
    );
    return { ...status, conditions } as NativeStatus;
  }

  /**
   * Makes the door's finalizer on a foreign object what `holdsFinalizer` says: off when the door lets
   * go of it; back on when it takes it again while its outputs are served under the native finalizer.
   * True when it wrote.
   */
  private async settleFinalizer(
    door: FrontDoor,
    doorId: string,
    fkey: ResourceKey,
    object: ForeignObject,
  ): Promise<boolean> {
    const has = (object.metadata.finalizers ?? []).includes(door.finalizer);
    const wants = door.holdsFinalizer?.(object) !== false;
    if (has && !wants) {
      await this.options.base.removeForeignFinalizer(doorId, fkey, door.finalizer);
      return true;
    }
    if (!has && wants && !object.metadata.deletionTimestamp) {
      const served = [...(this.feeds.get(`${doorId}/${fkey}`) ?? [])].some((id) => {
        const native = this.translated.get(id)?.object;
        return native !== undefined && !native.metadata.deletionTimestamp && native.status !== undefined;
      });
      if (!served) return false;
      await this.options.base.addForeignFinalizer(doorId, fkey, door.finalizer);
      return true;
    }
    return false;
  }

  /**
   * The projection a native status write asks of a foreign object behind it. An object that feeds
   * more than `PROJECT_SOON_OVER` native objects is projected soon instead, once for all the writes
   * of its outputs until then: each projection reads every output, and the controller writes their
   * statuses one after another, so one DNSEndpoint of 10,000 endpoints cost 10,000 projections of
   * 10,000 outputs (104 s; a Datum DNSRecordSet of 3,000 records 214 s, while DNS answers stalled).
   * A projection that fails is logged and made again by the periodic resync (`resyncStatus`).
   */
  private projectAfterWrite(doorId: string, fkey: ResourceKey): Promise<void> {
    const id = `${doorId}/${fkey}`;
    if ((this.feeds.get(id)?.size ?? 0) <= PROJECT_SOON_OVER) return this.projectSerial(doorId, fkey);
    if (!this.projectingSoon.has(id)) {
      this.projectingSoon.add(id);
      setImmediate(() => {
        this.projectingSoon.delete(id);
        if (!this.closed) void this.projectLogged(doorId, fkey);
      });
    }
    return Promise.resolve();
  }

  /** Objects `projectAfterWrite` projects soon (see there). */
  private readonly projectingSoon = new Set<string>();

  /** `project`, one at a time per object; a request while one runs runs it once more after. */
  private projectSerial(doorId: string, fkey: ResourceKey): Promise<void> {
    const id = `${doorId}/${fkey}`;
    const running = this.projecting.get(id);
    if (running) {
      running.again = true;
      return running.done;
    }
    const entry = { again: true, done: Promise.resolve() };
    this.projecting.set(id, entry);
    entry.done = (async () => {
      try {
        while (entry.again) {
          entry.again = false;
          await this.project(doorId, fkey);
        }
      } finally {
        this.projecting.delete(id);
      }
    })();
    return entry.done;
  }

  private projectLogged(doorId: string, fkey: ResourceKey): Promise<void> {
    return this.projectSerial(doorId, fkey).catch((e: unknown) =>
      this.options.log?.('warn', `status of ${doorId} ${fkey} not written; retried with the next change`, {
        error: e instanceof Error ? e.message : String(e),
      }),
    );
  }

  /**
   * Releases foreign objects being deleted from a native object that lives on without them: once the
   * native status observed a generation without them and says it is served (Programmed) or refused
   * (Accepted=False, nothing served).
   */
  private async release(t: Translated): Promise<void> {
    if (t.leaving.size === 0 || !t.object || t.object.metadata.deletionTimestamp) return;
    const status = t.object.status as NativeStatus | undefined;
    const observed = status?.observedGeneration ?? 0;
    const done =
      condition(status?.conditions, 'Programmed')?.status === 'True' ||
      condition(status?.conditions, 'Accepted')?.status === 'False';
    for (const [fkey, generation] of [...t.leaving]) {
      if (observed < generation || !done) continue;
      await this.releaseOne(t, fkey);
    }
  }

  private async releaseOne(t: Translated, fkey: ResourceKey): Promise<void> {
    if (this.options.readOnly) return;
    try {
      await this.options.base.removeForeignFinalizer(t.doorId, fkey, t.door.finalizer);
    } catch (e) {
      this.options.log?.('warn', `${t.door.kind} ${fkey}: finalizer not removed; retrying`, {
        error: e instanceof Error ? e.message : String(e),
      });
      setTimeout(() => void this.releaseOne(t, fkey), RELEASE_RETRY_MS).unref();
    }
  }

  private async releaseForeign(doorId: string, fkey: ResourceKey, finalizer: string): Promise<void> {
    if (this.options.readOnly) return;
    try {
      await this.options.base.removeForeignFinalizer(doorId, fkey, finalizer);
    } catch (e) {
      this.options.log?.('warn', `${doorId} ${fkey}: finalizer not removed; retrying`, {
        error: e instanceof Error ? e.message : String(e),
      });
      setTimeout(() => void this.releaseForeign(doorId, fkey, finalizer), RELEASE_RETRY_MS).unref();
    }
  }

  private nextVersion(): string {
    return `fd-${++this.resourceVersion}`;
  }

  private emit(event: StoreEvent): void {
    for (const handler of this.handlers) handler(event);
  }
}

/** What a door that reads an object depends on: its spec and whether it is being deleted. */
function specSignature(object: ForeignObject): string {
  return JSON.stringify([object.spec, object.metadata.deletionTimestamp ?? null]);
}

function sortedContributions(t: Translated): Contribution[] {
  return [...t.contributors.values()].sort((a, b) => compareByAge(a.object, b.object));
}

/** The native finalizer shows while any foreign object behind it holds the door's. */
function finalizersOf(t: Translated): { finalizers?: string[] } {
  for (const c of t.contributors.values())
    if ((c.object.metadata.finalizers ?? []).includes(t.door.finalizer)) return { finalizers: [FINALIZER] };
  return {};
}

/**
 * One RRset from several outputs, oldest first: the oldest decides name, type, zoneRef and TTL; the
 * records are the union in order of age (a record given twice is kept once).
 */
export function mergeRecordSets(outputs: readonly TranslatedOutput[]): DNSRecordSetSpec {
  const first = outputs[0]!.spec as DNSRecordSetSpec;
  if (outputs.length === 1) return first;
  const records: string[] = [];
  const seen = new Set<string>();
  for (const o of outputs) {
    for (const r of (o.spec as DNSRecordSetSpec).records ?? []) {
      if (seen.has(r)) continue;
      seen.add(r);
      records.push(r);
    }
  }
  return { ...first, records };
}

/**
 * The native status as one foreign object sees it: conditions and observedGeneration in that
 * object's generations. Undefined when the status is older than anything of this object.
 */
function statusFor(t: Translated, fkey: ResourceKey): { status?: NativeStatus } {
  const status = t.object?.status as NativeStatus | undefined;
  if (!status) return {};
  const foreignGeneration = (native: number | undefined) =>
    native === undefined ? undefined : t.history.get(native)?.get(fkey);
  const observed = foreignGeneration(status.observedGeneration);
  if (observed === undefined) return {};
  const conditions = status.conditions?.map((c): Condition => {
    const g = foreignGeneration(c.observedGeneration);
    const { observedGeneration: _native, ...rest } = c;
    return g === undefined ? rest : { ...rest, observedGeneration: g };
  });
  return {
    status: {
      ...status,
      observedGeneration: observed,
      ...(conditions ? { conditions } : {}),
    } as NativeStatus,
  };
}

function condition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

function latest(times: readonly string[]): string {
  return [...times].sort().at(-1)!;
}
