import {
  type DNSZone,
  type DNSZoneClass,
  type Domain,
  PARENT_DS_ANNOTATION,
  type Resource,
} from '../api/index.ts';
import type { SecretResolver } from '../api/secret-ref.ts';
import type { Backend } from '../backends/backend.ts';
import type { Name } from '../dns/name.ts';
import type { Registry } from '../metrics/registry.ts';
import { type Affected, Catalog } from '../zones/catalog.ts';
import { CATALOG_KINDS, CatalogFeed, ZoneChanges } from '../zones/catalog-feed.ts';
import { domainGate, zonesUnder } from '../zones/domain-verification.ts';
import type { RecordTable } from '../zones/record-table.ts';
import { type ResourceKey, resourceKey } from '../zones/resource-key.ts';
import type { ResolvedTransfers, SoaProbeResult } from '../zones/transfers.ts';
import type { ZoneModel } from '../zones/zone-model.ts';
import { reconcileClass } from './class-reconciler.ts';
import { registerDnssecMetrics } from './dnssec-metrics.ts';
import { ProgrammedZones } from './programmed-zones.ts';
import { type Log, ReconcileQueues } from './queues.ts';
import { reconcileRecord } from './record-reconciler.ts';
import type { ResourceStore, StoreEvent } from './resource-store.ts';
import { fileAndEnvSecrets } from './secrets.ts';
import { SerialAssigner } from './serial-assigner.ts';
import type { SerialStore } from './serial-store.ts';
import { type RecordTargets, StatusWriter, type TargetsWriteLimits } from './status-writer.ts';
import { TransferSettings } from './transfer-settings.ts';
import { type ZoneFailure, type ZoneHold, ZoneReconciler } from './zone-reconciler.ts';

export type { ZoneFailure, ZoneHold };

export interface ControllerOptions {
  store: ResourceStore;
  /** The backend of each zone class (one backend for every class when given directly). */
  backend: Backend | ((zoneClass: DNSZoneClass) => Backend);
  serials: SerialStore;
  registry?: Registry;
  /** Reads secrets by reference (transfer keys); folder mode reads files and environment variables. */
  secrets?: SecretResolver;
  now?: () => Date;
  log?: Log;
  /**
   * Compute the content hash together with each new serial (O(zone) per change) instead of shortly
   * after it, so that one status write carries both. The Kubernetes operator sets it: `zonekeeper
   * server` replicas publish a serial only once they can match its hash.
   */
  hashOnChange?: boolean;
  /**
   * Status and finalizer writes in flight at once: record-set statuses of one zone reconcile, and record
   * sets reconciled in parallel (default 1 and 2). The Kubernetes operator raises it: there every write
   * is a round trip to the API server.
   */
  writeConcurrency?: number;
  /** How often `status.targets` is written (per record set, and in all); DEFAULT_TARGETS_WRITE_LIMITS. */
  targetsWriteLimits?: TargetsWriteLimits;
  /**
   * Zone reconciles in flight at once (default 8). While one waits (its serial's durable write, a
   * backend's answer, its statuses) another computes. Each backend is still sent at most its
   * `applyConcurrency` zones at once.
   */
  zoneConcurrency?: number;
  /**
   * Backoff of a failed reconcile: the first retry waits `retryBaseDelayMs`, each further failure
   * doubles it up to `retryMaxDelayMs` (defaults 50 ms and 60 s). Success resets it.
   */
  retryBaseDelayMs?: number;
  retryMaxDelayMs?: number;
  /** How long after a change the content hash of its serial is computed and saved (default 1 s). */
  hashDelayMs?: number;
  /**
   * Asks a zone's secondaries (its class's NOTIFY targets) which SOA serial they serve. Used when no
   * serial is stored for the zone (an empty, new or lost state): its first serial starts above the
   * highest answer, so secondaries that hold a serial from before still follow. Folder mode sets it.
   */
  secondarySerials?: (origin: Name, transfers: ResolvedTransfers) => Promise<SoaProbeResult[]>;
  /**
   * Change safety: how long a zone's content must stay unchanged to become the baseline its changes
   * are measured against (default 10 s; ADR 0018). Tests shorten it.
   */
  changeSafetyWindowMs?: number;
  /** Confirmations of held changes besides the DNSZone annotation (folder mode: confirmation files). */
  confirmations?: (key: ResourceKey) => readonly string[];
  /** How to confirm a held change where the annotation is not the way (folder mode). */
  confirmHint?: (key: ResourceKey, hash: string) => string;
  /** The health of a steered record set's records, for `status.targets` (see `targetsChanged`). */
  recordTargets?: (key: ResourceKey) => RecordTargets | undefined;
  /**
   * The record-set table the catalog keys its record sets by; `serve` gives the one its memory store
   * keeps record sets in, so that both share one slot and key per record set (default a new one).
   */
  recordTable?: RecordTable;
}

/** Default of `changeSafetyWindowMs`. */
export const CHANGE_SAFETY_WINDOW_MS = 10_000;

/** How long after a change the content hash is computed (off the path from change to answer). */
const HASH_DELAY_MS = 1000;

/**
 * The reconcile engine, composed of: the catalog feed (store events into the catalog, the keys they
 * affect into the queues), three work queues, and the zone, record-set and class reconcilers with the
 * pieces they share — the serial assigner, the transfer settings, what each backend holds and the
 * status writer. Every reconcile is level-triggered and idempotent, and writes status only when it
 * changed.
 */
export class Controller {
  private readonly feed: CatalogFeed;
  readonly catalog: Catalog;
  private readonly store: ResourceStore;
  private readonly changes = new ZoneChanges();
  private readonly status: StatusWriter;
  private readonly serials: SerialAssigner;
  private readonly queues: ReconcileQueues;
  private readonly zones: ZoneReconciler;
  private unsubscribe?: () => void;

  constructor(options: ControllerOptions) {
    this.feed = new CatalogFeed(options.recordTable ? new Catalog(options.recordTable) : undefined);
    this.catalog = this.feed.catalog;
    const store = options.store;
    this.store = store;
    const backend = options.backend;
    const backendFor = typeof backend === 'function' ? backend : () => backend;
    const now = options.now ?? (() => new Date());
    const log = options.log ?? (() => {});
    const writeConcurrency = Math.max(1, options.writeConcurrency ?? 1);
    const catalog = this.catalog;
    // Zones waiting for a verified Domain never keep a domain from zones that may be served.
    catalog.waiting = (zone, zoneClass) =>
      zoneClass !== undefined && domainGate(zone, zoneClass, store.list('Domain') as Domain[]) !== undefined;
    const status = new StatusWriter(
      store,
      now,
      writeConcurrency,
      options.recordTargets,
      catalog.table,
      options.targetsWriteLimits,
    );
    this.status = status;
    const programmed = new ProgrammedZones(catalog);
    this.serials = new SerialAssigner({
      serials: options.serials,
      now,
      log,
      hashOnChange: options.hashOnChange ?? false,
      secondarySerials: options.secondarySerials,
    });
    this.queues = new ReconcileQueues({
      reconcile: {
        DNSZone: (key) => this.zones.reconcile(key),
        DNSRecordSet: (key) => reconcileRecord(key, { store, catalog, programmed, status }),
        DNSZoneClass: (key) => reconcileClass(key, { store, catalog, backendFor, status }),
      },
      recordConcurrency: writeConcurrency,
      ...(options.zoneConcurrency !== undefined ? { zoneConcurrency: options.zoneConcurrency } : {}),
      ...(options.retryBaseDelayMs !== undefined ? { retryBaseDelayMs: options.retryBaseDelayMs } : {}),
      ...(options.retryMaxDelayMs !== undefined ? { retryMaxDelayMs: options.retryMaxDelayMs } : {}),
      ...(options.registry ? { registry: options.registry } : {}),
      log,
    });
    this.zones = new ZoneReconciler({
      store,
      catalog,
      changes: this.changes,
      backendFor,
      serials: this.serials,
      transfers: new TransferSettings(options.secrets ?? fileAndEnvSecrets()),
      programmed,
      status,
      recheckRecord: (key) => this.queues.records.add(key),
      hashDelayMs: options.hashDelayMs ?? HASH_DELAY_MS,
      changeSafetyWindowMs: options.changeSafetyWindowMs ?? CHANGE_SAFETY_WINDOW_MS,
      now,
      log,
      ...(options.confirmations ? { confirmations: options.confirmations } : {}),
      ...(options.confirmHint ? { confirmHint: options.confirmHint } : {}),
      domainGate: (zone, zoneClass) => domainGate(zone, zoneClass, store.list('Domain') as Domain[]),
    });
    if (options.registry) {
      const failing = options.registry.gauge(
        'zonekeeper_zones_failing',
        'Zones whose latest change is not yet saved or served (retried with backoff), by reason.',
        ['reason'],
      );
      failing.collect = () => {
        const counts = new Map<string, number>([
          ['SerialNotSaved', 0],
          ['BackendUnreachable', 0],
          ['BackendRejected', 0],
        ]);
        for (const f of this.zones.failing.values()) counts.set(f.reason, (counts.get(f.reason) ?? 0) + 1);
        for (const [reason, n] of counts) failing.set(n, reason);
      };
      const held = options.registry.gauge(
        'zonekeeper_zones_held',
        'Zones whose latest change is held for confirmation (change safety): they keep serving their previous content.',
      );
      held.collect = () => held.set(this.zones.held.size);
      registerDnssecMetrics(options.registry, store, this.zones.failing);
    }
  }

  /** Loads what the store holds in one batch, then follows its events. */
  start(): void {
    // Every record set is queued here and no zone has a model yet (each zone's first reconcile takes
    // all of its members), so the first look lists only the zones it affects.
    this.enqueueAffected(this.loadStore());
    this.unsubscribe = this.store.watch((event) => this.onEvent(event));
    this.queues.start();
  }

  /**
   * Queues every object the store holds and loads them into the catalog. One key per object, for
   * the queues and the catalog alike: the store's own string where it hands it out
   * (`forEachKeyed`), so the record-set table keeps no second copy of each key. A method of its
   * own: the lists are captured by the visitor's closure, and a closure made in `start` (the watch
   * handler) would share its context and keep every first version alive.
   */
  private loadStore(): Affected {
    const objects: Resource[] = [];
    const keys: ResourceKey[] = [];
    // Record sets the store keeps in the catalog's table come with their slots there: the feed takes
    // them without looking each key up, and their keys, distinct, are queued in one go (`addNew`).
    const sameTable = this.store.recordTable !== undefined && this.store.recordTable === this.catalog.table;
    const slots: number[] = [];
    for (const kind of CATALOG_KINDS) {
      const records = kind === 'DNSRecordSet';
      const start = keys.length;
      let allSlots = true;
      const take = (object: Resource, key: ResourceKey, slot?: number) => {
        objects.push(object);
        keys.push(key);
        const held = records && sameTable && slot !== undefined;
        slots.push(held ? slot : -1);
        if (!records) this.queues.add(kind, key);
        else if (!held) allSlots = false;
      };
      if (this.store.forEachKeyed) this.store.forEachKeyed(kind, take);
      else for (const object of this.store.list(kind)) take(object, resourceKey(object.metadata));
      if (!records) continue;
      const recordKeys = keys.slice(start);
      if (allSlots) this.queues.records.addNew(recordKeys);
      else for (const key of recordKeys) this.queues.records.add(key);
    }
    return this.feed.load(objects, { keys, slots, zonesOnly: true });
  }

  /**
   * Computes and saves the content hashes still pending after recent changes, so that a graceful
   * restart keeps serials exactly (only a crash makes the next start raise them to be safe). A hash
   * is saved only with the serial chosen for the same content.
   */
  flush(): Promise<void> {
    return this.serials.flush(this.zones.models.entries());
  }

  /** Zones whose latest change is not yet saved or served, with why (for readiness and `status`). */
  pendingZones(): ZoneFailure[] {
    return [
      ...this.zones.failing.values(),
      ...[...this.zones.held.values()].map((h) => ({ key: h.key, reason: 'ChangeHeld', message: h.message })),
    ];
  }

  /** Zones whose latest change is held for confirmation, with the change's hash. */
  heldZones(): ZoneHold[] {
    return [...this.zones.held.values()];
  }

  /**
   * Holds a zone from outside its content (a manifests folder that lost most of its objects at once),
   * or with `undefined` releases it; the zone is reconciled again either way.
   */
  setZoneHeld(key: ResourceKey, hold: { hash: string; message: string } | undefined): void {
    const before = this.zones.externalHolds.get(key);
    if (hold === undefined) {
      if (!before) return;
      this.zones.externalHolds.delete(key);
    } else {
      if (before?.hash === hold.hash && before.message === hold.message) return;
      this.zones.externalHolds.set(key, { key, ...hold });
    }
    this.queues.zones.add(key);
  }

  /**
   * Reconciles a zone again though nothing of it changed: its backend's report on it may have (the
   * built-in server's ALIAS targets, when other zones come and go).
   */
  /**
   * The zone's model as its last reconcile left it (undefined before its first): what it publishes
   * and why, asked by the record writer's gate (`ZoneModel.writeConflict`).
   */
  zoneModel(key: ResourceKey): ZoneModel | undefined {
    return this.zones.models.get(key)?.model;
  }

  recheckZone(key: ResourceKey): void {
    this.queues.zones.add(key);
  }

  /** The health of a record set's records changed (`recordTargets`): writes its `status.targets`. */
  targetsChanged(key: ResourceKey): Promise<void> {
    return this.status.targetsChanged(key);
  }

  /**
   * Notes that a DNSZone exists but never reached the store because its manifest is invalid (`why`),
   * or with `undefined` that this is over: record sets naming it in spec.zoneRef then say that it is
   * refused and why, instead of that it does not exist. May be called before `start`.
   */
  setZoneRefused(key: ResourceKey, why: string | undefined): void {
    this.enqueueAffected(this.catalog.setZoneRefused(key, why));
  }

  stop(): void {
    this.unsubscribe?.();
    this.queues.shutdown();
  }

  /** Resolves when every queue is drained (for tests and for readiness). */
  idle(): Promise<void> {
    return this.queues.idle();
  }

  /** A store event: into the catalog through the feed (status-only changes stop there), then the queues. */
  private onEvent(event: StoreEvent): void {
    if (event.kind === 'Domain') {
      // Verified or not any more: the zones it covers may be served, or not, now.
      // Only classes that require a verified Domain make a Domain matter to which zone holds a domain.
      if ([...this.catalog.classes.values()].some((c) => c.spec.requireVerifiedDomain === true))
        this.enqueueAffected(this.catalog.rejudge());
      for (const key of zonesUnder(this.catalog.zones.values(), event.object as Domain))
        this.queues.zones.add(key);
      return;
    }
    // A zone's class counts its zones: the class it had before the change, or has after it.
    const before = event.kind === 'DNSZone' ? this.catalog.zones.get(event.key) : undefined;
    let affected: Affected | undefined;
    let zone: DNSZone | undefined;
    if (event.type === 'delete') {
      if (event.kind === 'DNSRecordSet') this.status.forgetRecord(event.key);
      affected = this.feed.delete(event.kind, event.key);
      zone = before;
    } else {
      affected = this.feed.upsert(event.object, event.key);
      if (!affected) {
        // An annotation may confirm a held change, or record the DS a rollover waits for at the parent;
        // nothing else of the zone changed.
        if (
          event.object.kind === 'DNSZone' &&
          (this.zones.held.has(event.key) || event.object.metadata.annotations?.[PARENT_DS_ANNOTATION])
        )
          this.queues.zones.add(event.key);
        return;
      }
      if (event.object.kind === 'DNSZone')
        zone = event.object.metadata.deletionTimestamp ? before : event.object;
    }
    if (zone) this.queues.classes.add(zone.spec.className);
    this.enqueueAffected(affected);
    this.queues.add(event.kind, event.key);
  }

  private enqueueAffected(affected: Affected): void {
    this.changes.note(affected);
    for (const zone of affected.zones) this.queues.zones.add(zone);
    for (const record of affected.records) this.queues.records.add(record);
  }
}
