import type {
  Condition,
  DNSRecordSet,
  DNSRecordSetStatus,
  DNSZone,
  DNSZoneClass,
  DNSZoneClassStatus,
  DNSZoneStatus,
  Kind,
  Resource,
} from '../api/index.ts';
import type { SecretResolver } from '../api/secret-ref.ts';
import {
  type ApplyResult,
  type Backend,
  BackendError,
  type ReadBack,
  type RRsetProblem,
  readBack,
} from '../backends/backend.ts';
import { type Name, nameKey } from '../dns/name.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';
import type { Registry } from '../metrics/registry.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import type { RecordVerdict } from '../zones/assemble.ts';
import { type Affected, Catalog } from '../zones/catalog.ts';
import { type ResourceKey, refOf, resourceKey } from '../zones/resource-key.ts';
import type { RRset } from '../zones/rrset.ts';
import { nextSerial, serialGreater } from '../zones/serial.ts';
import {
  highestSerial,
  type ResolvedTransfers,
  resolveTransfers,
  type SoaProbeResult,
} from '../zones/transfers.ts';
import { zoneChildren } from '../zones/zone-inputs.ts';
import { ZoneModel } from '../zones/zone-model.ts';
import { type ConditionInput, jsonEqual, programmedConditions, setConditions } from './conditions.ts';
import { FINALIZER, type ResourceStore, type StoreEvent } from './resource-store.ts';
import { fileAndEnvSecrets } from './secrets.ts';
import { type SerialStore, SerialTakenError, type ZoneSerialState } from './serial-store.ts';
import { type ReconcileResult, WorkQueue } from './work-queue.ts';

export interface ControllerOptions {
  store: ResourceStore;
  /** The backend of each zone class (one backend for every class when given directly). */
  backend: Backend | ((zoneClass: DNSZoneClass) => Backend);
  serials: SerialStore;
  registry?: Registry;
  /** Reads secrets by reference (transfer keys); folder mode reads files and environment variables. */
  secrets?: SecretResolver;
  now?: () => Date;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
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
}

interface ProgrammedState {
  origin: Name;
  serial: number;
  backend: Backend;
  /** The backend's state is unknown (a failed apply): send the whole zone next time. */
  needsFull: boolean;
}

type PendingChange = { upsert: RRset } | { delete: { owner: Name; type: RecordTypeName } };

/** A serial chosen for one content of a zone's model; `saved` once the serial store made it durable. */
interface AssignedSerial {
  serial: number;
  /** The content hash saved with the serial; undefined until it is computed (off the change path). */
  hash?: string;
  saved: boolean;
}

interface ZoneModelState {
  model: ZoneModel;
  /** Built but not yet synced: the first update is a full one. */
  fresh: boolean;
  /** No serial chosen for this model yet: the first is compared with the stored hash, as after a restart. */
  firstSerial: boolean;
  /** The backend has not confirmed this model's whole content yet: the next apply sends the whole zone. */
  full: boolean;
  /**
   * RRset changes the backend has not confirmed yet, merged per owner and type (the last one wins):
   * the delta from the serial the backend holds to the model's content.
   */
  pending: Map<string, PendingChange>;
  /**
   * The serial of the model's current content. Cleared by every content change, so that a serial is
   * only ever saved, retried and served with the one content it was chosen for.
   */
  assigned?: AssignedSerial;
  /** Record sets whose verdict changed since the backend last confirmed the zone ('all' after a build). */
  verdictsPending: Set<ResourceKey> | 'all';
  /** Record sets whose status may be stale ('all' after a build). */
  statusesPending: Set<ResourceKey> | 'all';
  programmedOk?: boolean;
  warnings?: string[];
  /** Record sets the backend left out at the last apply, with the reason and message reported. */
  problems?: ReadonlyMap<ResourceKey, RRsetProblem>;
}

/** Why a zone's latest change is not (fully) served or saved: set when a reconcile fails, cleared on success. */
export interface ZoneFailure {
  key: ResourceKey;
  /** `SerialNotSaved`, `BackendUnreachable` or `BackendRejected`. */
  reason: string;
  message: string;
}

/** A serial store write failed: the change is not served until it succeeds. */
class SerialNotSavedError extends Error {
  override readonly name = 'SerialNotSavedError';
}

/** How often a class re-checks its backend's health. */
const HEALTH_INTERVAL_MS = 60_000;

/** How long after a change the content hash is computed (off the path from change to answer). */
const HASH_DELAY_MS = 1000;

function rrsetId(owner: Name, type: RecordTypeName): string {
  return `${nameKey(owner)}\u0000${type}`;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * The reconcile engine: store events update the catalog and enqueue the keys they affect; zone,
 * record and class reconcilers bring the backend and the status in line with the catalog. Every
 * reconcile is level-triggered and idempotent, and writes status only when it changed.
 */
export class Controller {
  readonly catalog = new Catalog();
  private readonly store: ResourceStore;
  private readonly backendFor: (zoneClass: DNSZoneClass) => Backend;
  private readonly serials: SerialStore;
  private readonly now: () => Date;
  private readonly secrets: SecretResolver;
  /** Per class: its transfer settings with secrets read, for the class version they were read at. */
  private readonly transferSettings = new Map<
    string,
    { version: string; result: Promise<{ resolved?: ResolvedTransfers; error?: string }> }
  >();
  private readonly log: NonNullable<ControllerOptions['log']>;
  private readonly hashOnChange: boolean;
  private readonly writeConcurrency: number;
  private readonly zones: WorkQueue;
  private readonly records: WorkQueue;
  private readonly classes: WorkQueue;
  /** What the backend holds, per zone key. */
  private readonly programmed = new Map<ResourceKey, ProgrammedState>();
  /** Each served zone's incremental model. */
  private readonly models = new Map<ResourceKey, ZoneModelState>();
  /** Per zone: record sets that may have changed since its last reconcile. */
  private readonly dirty = new Map<ResourceKey, Set<ResourceKey>>();
  /** Per record set: the zone whose programmed content includes it. */
  private readonly programmedRecord = new Map<ResourceKey, ResourceKey>();
  /** Per record set: the inputs and the status object of its last status write. */
  private readonly recordStatusMemo = new Map<
    ResourceKey,
    { signature: string; status: DNSRecordSetStatus | undefined }
  >();
  /** Per zone origin (nameKey): the highest serial this process asked the serial store to save. */
  private readonly claimed = new Map<string, number>();
  /** Zone origins (nameKey) whose last serial store write failed: what the store returns may not be durable. */
  private readonly unsaved = new Set<string>();
  /** Zones whose last reconcile failed, with why; retried with backoff until it succeeds. */
  private readonly failing = new Map<ResourceKey, ZoneFailure>();
  private readonly hashDelayMs: number;
  private readonly secondarySerials: ControllerOptions['secondarySerials'];
  /** Last generation and deletion state seen per object, to skip status-only events. */
  private readonly seen = new Map<string, string>();
  private unsubscribe?: () => void;
  private readonly reconciles?: ReturnType<Registry['counter']>;
  private readonly reconcileSeconds?: ReturnType<Registry['histogram']>;

  constructor(options: ControllerOptions) {
    this.store = options.store;
    const backend = options.backend;
    this.backendFor = typeof backend === 'function' ? backend : () => backend;
    this.serials = options.serials;
    this.now = options.now ?? (() => new Date());
    this.secrets = options.secrets ?? fileAndEnvSecrets();
    this.log = options.log ?? (() => {});
    this.hashOnChange = options.hashOnChange ?? false;
    this.writeConcurrency = Math.max(1, options.writeConcurrency ?? 1);
    this.hashDelayMs = options.hashDelayMs ?? HASH_DELAY_MS;
    this.secondarySerials = options.secondarySerials;
    const backoff = {
      ...(options.retryBaseDelayMs !== undefined ? { baseDelayMs: options.retryBaseDelayMs } : {}),
      ...(options.retryMaxDelayMs !== undefined ? { maxDelayMs: options.retryMaxDelayMs } : {}),
    };
    // Several zones at once: their durable serial writes share one file write (start-up with many
    // zones), and one slow backend call does not hold up the other zones.
    this.zones = new WorkQueue((key) => this.reconcileZone(key), { concurrency: 8, ...backoff });
    this.records = new WorkQueue((key) => this.reconcileRecord(key), {
      concurrency: Math.max(2, this.writeConcurrency),
      ...backoff,
    });
    this.classes = new WorkQueue((key) => this.reconcileClass(key), backoff);
    if (options.registry) {
      this.reconciles = options.registry.counter(
        'zonekeeper_reconcile_total',
        'Reconciles run, by kind and result.',
        ['kind', 'result'],
      );
      this.reconcileSeconds = options.registry.histogram(
        'zonekeeper_reconcile_seconds',
        'Reconcile duration, by kind.',
        [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
        ['kind'],
      );
      const depth = options.registry.gauge('zonekeeper_workqueue_depth', 'Keys waiting in each work queue.', [
        'kind',
      ]);
      depth.collect = () => {
        depth.set(this.zones.length, 'DNSZone');
        depth.set(this.records.length, 'DNSRecordSet');
        depth.set(this.classes.length, 'DNSZoneClass');
      };
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
        for (const f of this.failing.values()) counts.set(f.reason, (counts.get(f.reason) ?? 0) + 1);
        for (const [reason, n] of counts) failing.set(n, reason);
      };
    }
    for (const [kind, queue] of [
      ['DNSZone', this.zones],
      ['DNSRecordSet', this.records],
      ['DNSZoneClass', this.classes],
    ] as const) {
      queue.onResult = (key, error, ms) => {
        this.reconciles?.labels(kind, error === undefined ? 'success' : 'error').inc();
        this.reconcileSeconds?.labels(kind).observe(ms / 1000);
        if (error !== undefined) {
          this.log('warn', `reconcile ${kind} ${key} failed; retrying with backoff`, {
            error: String(error),
          });
        }
      };
    }
  }

  /** Loads what the store holds in one batch, then follows its events. */
  start(): void {
    const live = {
      DNSZoneClass: [] as DNSZoneClass[],
      DNSZone: [] as DNSZone[],
      DNSRecordSet: [] as DNSRecordSet[],
    };
    for (const kind of ['DNSZoneClass', 'DNSZone', 'DNSRecordSet'] as const) {
      for (const object of this.store.list(kind)) {
        const key = keyOf(object);
        this.seen.set(`${kind}/${key}`, observedState(object));
        if (!object.metadata.deletionTimestamp) (live[kind] as Resource[]).push(object);
        this.enqueue(kind, key);
      }
    }
    this.enqueueAffected(this.catalog.load(live.DNSZoneClass, live.DNSZone, live.DNSRecordSet));
    this.unsubscribe = this.store.watch((event) => this.onEvent(event));
    this.classes.start();
    this.zones.start();
    this.records.start();
  }

  /**
   * Computes and saves the content hashes still pending after recent changes, so that a graceful
   * restart keeps serials exactly (only a crash makes the next start raise them to be safe). A hash
   * is saved only with the serial chosen for the same content.
   */
  async flush(): Promise<void> {
    for (const [key, state] of this.models) {
      const assigned = state.assigned;
      if (!assigned?.saved || assigned.hash !== undefined) continue;
      const hash = state.model.contentHash();
      try {
        await this.serials.set(state.model.origin, { serial: assigned.serial, hash });
        assigned.hash = hash;
      } catch (e) {
        this.log(
          'warn',
          `zone ${key}: the content hash could not be saved; the next start raises the serial`,
          {
            error: errorText(e),
          },
        );
      }
    }
  }

  /** Zones whose latest change is not yet saved or served, with why (for readiness and `status`). */
  pendingZones(): ZoneFailure[] {
    return [...this.failing.values()];
  }

  /**
   * Reconciles a zone again though nothing of it changed: its backend's report on it may have (the
   * built-in server's ALIAS targets, when other zones come and go).
   */
  recheckZone(key: ResourceKey): void {
    this.zones.add(key);
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
    this.zones.shutdown();
    this.records.shutdown();
    this.classes.shutdown();
  }

  /** Resolves when every queue is drained (for tests and for readiness). */
  async idle(): Promise<void> {
    for (let i = 0; i < 10; i++) {
      await Promise.all([this.classes.idle(), this.zones.idle(), this.records.idle()]);
      if (this.zones.length + this.records.length + this.classes.length === 0) return;
    }
  }

  private onEvent(event: StoreEvent): void {
    if (event.type === 'delete') {
      this.seen.delete(`${event.kind}/${event.key}`);
      if (event.kind === 'DNSRecordSet') this.recordStatusMemo.delete(event.key);
      this.apply(event.kind, event.key, undefined);
      this.enqueue(event.kind, event.key);
      return;
    }
    this.observe(event.kind, event.object);
  }

  /** Feeds an object into the catalog unless only its status changed. */
  private observe(kind: Kind, object: Resource): void {
    const key = keyOf(object);
    const state = observedState(object);
    const id = `${kind}/${key}`;
    if (this.seen.get(id) === state) return;
    this.seen.set(id, state);
    this.apply(kind, key, object.metadata.deletionTimestamp ? undefined : object);
    this.enqueue(kind, key);
  }

  private apply(kind: Kind, key: ResourceKey, object: Resource | undefined): void {
    let affected: Affected;
    if (kind === 'DNSZoneClass') {
      affected = object ? this.catalog.setClass(object as DNSZoneClass) : this.catalog.deleteClass(key);
    } else if (kind === 'DNSZone') {
      // The class counts its zones.
      const className = ((object as DNSZone | undefined) ?? this.catalog.zones.get(key))?.spec.className;
      if (className !== undefined) this.classes.add(className);
      affected = object ? this.catalog.setZone(object as DNSZone) : this.catalog.deleteZone(key);
    } else {
      affected = object ? this.catalog.setRecord(object as DNSRecordSet) : this.catalog.deleteRecord(key);
    }
    this.enqueueAffected(affected);
  }

  private enqueueAffected(affected: Affected): void {
    for (const [zone, keys] of affected.recordsByZone) {
      const set = getOrInsert(this.dirty, zone, () => new Set());
      for (const k of keys) set.add(k);
    }
    for (const zone of affected.zones) this.zones.add(zone);
    for (const record of affected.records) this.records.add(record);
  }

  private enqueue(kind: Kind, key: ResourceKey): void {
    if (kind === 'DNSZone') this.zones.add(key);
    else if (kind === 'DNSRecordSet') this.records.add(key);
    else this.classes.add(key);
  }

  private async reconcileZone(key: ResourceKey): Promise<ReconcileResult> {
    const zone = this.store.get('DNSZone', key) as DNSZone | undefined;
    if (!zone || zone.metadata.deletionTimestamp) {
      await this.unprogram(key);
      if (zone && (zone.metadata.finalizers ?? []).includes(FINALIZER)) {
        await this.store.removeFinalizer('DNSZone', key, FINALIZER);
      }
      return;
    }
    await this.store.addFinalizer('DNSZone', key, FINALIZER);
    const verdict = this.catalog.zoneVerdict(key);
    const generation = zone.metadata.generation;
    if (!verdict?.accepted) {
      await this.unprogram(key);
      const reason = verdict?.reason ?? 'Pending';
      const message = verdict && !verdict.accepted ? verdict.message : 'waiting for the catalog';
      await this.writeZoneStatus(
        zone,
        {
          ...(zone.status?.serial !== undefined ? { serial: zone.status.serial } : {}),
          ...(zone.status?.hash !== undefined ? { hash: zone.status.hash } : {}),
        },
        [
          { type: 'Accepted', status: 'False', reason, message, observedGeneration: generation },
          {
            type: 'Programmed',
            status: 'False',
            reason,
            message: 'the zone is not served',
            observedGeneration: generation,
          },
          { type: 'Ready', status: 'False', reason, message, observedGeneration: generation },
        ],
      );
      return;
    }
    const backend = this.backendFor(verdict.zoneClass);
    const previousBackend = this.programmed.get(key)?.backend;
    if (previousBackend && previousBackend !== backend) {
      // The zone moved to a class with another backend: clean the old one first.
      await this.unprogram(key);
    }
    const model = this.modelFor(key, zone, verdict.zoneClass, verdict.origin);
    const dirty = this.dirty.get(key);
    this.dirty.delete(key);
    const fresh = model.fresh;
    // A new model takes every record set; afterwards exactly those the catalog reported as changed
    // (none for a requeue, e.g. the delayed hash), so a reconcile costs what changed, not the zone.
    const records = fresh ? this.catalog.zoneMembers(key) : this.catalog.membersNow(key, dirty ?? new Set());
    const delta = model.model.update(records, zoneChildren(this.catalog, key), fresh);
    model.fresh = false;
    // The model holds the change from here on; what the backend and the serial store have not
    // confirmed stays pending on the model until they have, so a failure below leaves a retry.
    const changed = delta.upserts.length > 0 || delta.deletes.length > 0;
    if (changed) {
      for (const rrset of delta.upserts)
        model.pending.set(rrsetId(rrset.owner, rrset.type), { upsert: rrset });
      for (const d of delta.deletes) model.pending.set(rrsetId(d.owner, d.type), { delete: d });
      // New content needs a serial of its own: the one chosen before (saved or not) stays with the old.
      model.assigned = undefined;
    }
    if (model.verdictsPending !== 'all') for (const k of delta.verdicts) model.verdictsPending.add(k);
    if (model.statusesPending !== 'all') {
      for (const k of delta.verdicts) model.statusesPending.add(k);
      for (const k of dirty ?? []) model.statusesPending.add(k);
    }
    const origin = model.model.origin;
    const transfers = await this.transfersOf(verdict.zoneClass);
    let warnings = fresh || delta.verdicts.size > 0 ? model.model.warnings() : (model.warnings ?? []);
    model.warnings = warnings;
    if (transfers.error) warnings = [...warnings, `zone transfers are off: ${transfers.error}`];
    const acceptedCondition: ConditionInput = {
      type: 'Accepted',
      status: 'True',
      reason: 'Accepted',
      message: warnings.length > 0 ? `accepted with warnings: ${warnings.join('; ')}` : `serving ${origin}`,
      observedGeneration: generation,
    };
    const described = {
      recordCount: model.model.acceptedCount,
      nameservers: model.model.nameServers,
      ...(verdict.parent !== undefined ? { parentZone: refOf(verdict.parent) } : {}),
    };

    // 1. A serial for the content, durable before anything serves it (ADR 0005).
    let assigned: AssignedSerial;
    try {
      assigned = await this.assignSerial(origin, zone, model, transfers.resolved);
    } catch (e) {
      const servedSerial = this.programmed.get(key)?.serial;
      const message =
        `the serial of the latest change could not be saved: ${errorText(e)}; ` +
        `${servedSerial !== undefined ? `still serving serial ${servedSerial}` : 'not served yet'}, retrying`;
      await this.failed(key, zone, model, backend, described, acceptedCondition, 'SerialNotSaved', message, {
        programmed: false,
        records: model.statusesPending === 'all' ? model.model.verdicts.keys() : model.statusesPending,
      });
      throw e;
    }
    const serial = assigned.serial;

    // 2. The backend, from the serial it holds to this one: the pending changes, or the whole zone.
    const state = this.programmed.get(key);
    const previousSerial = state?.serial;
    const canPatch = !model.full && state !== undefined && !state.needsFull && previousSerial !== undefined;
    let read: ReadBack;
    let applied: ApplyResult | undefined;
    try {
      const upserts: RRset[] = [];
      const deletes: { owner: Name; type: RecordTypeName }[] = [];
      if (canPatch) {
        for (const change of model.pending.values()) {
          if ('upsert' in change) upserts.push(change.upsert);
          else deletes.push(change.delete);
        }
      }
      applied =
        (await backend.applyZone({
          key,
          origin,
          soa: model.model.soa,
          serial,
          rrsets: () => model.model.rrsets(),
          ...(transfers.resolved ? { transfers: transfers.resolved } : {}),
          ...(canPatch ? { delta: { fromSerial: previousSerial, upserts, deletes } } : {}),
        })) ?? undefined;
      // What Programmed means is the backend's (its capabilities): the serial or the content read back.
      read = await readBack(backend, {
        origin,
        serial,
        soa: model.model.soa,
        rrsets: () => model.model.rrsets(),
      });
    } catch (e) {
      // What the backend holds is unknown now: the next attempt sends the whole zone.
      this.programmed.set(key, { origin, serial: previousSerial ?? serial, needsFull: true, backend });
      const reason = e instanceof BackendError ? e.reason : 'BackendUnreachable';
      await this.failed(
        key,
        zone,
        model,
        backend,
        { ...described, ...this.serialFields(zone, assigned) },
        acceptedCondition,
        reason,
        `backend ${backend.name}: ${errorText(e)}`,
        { programmed: false, records: model.model.verdicts.keys() },
      );
      model.programmedOk = false;
      throw e;
    }
    const programmedOk = read.programmed;
    this.programmed.set(key, { origin, serial, needsFull: !programmedOk, backend });
    if (programmedOk) {
      model.pending.clear();
      model.full = false;
    }
    // RRsets the backend left out: on their record sets; those of no record set (apex, child zone NS,
    // glue) as warnings of the zone.
    const problems = new Map<ResourceKey, RRsetProblem>();
    for (const p of applied?.problems ?? []) {
      if (p.origin.kind === 'recordSet') problems.set(`${p.origin.namespace}/${p.origin.name}`, p);
      else acceptedCondition.message += `; ${p.owner} ${p.type} not programmed: ${p.message}`;
    }
    const problemsChanged = new Set<ResourceKey>();
    for (const k of new Set([...problems.keys(), ...(model.problems?.keys() ?? [])])) {
      const before = model.problems?.get(k);
      const now = problems.get(k);
      if (before?.reason !== now?.reason || before?.message !== now?.message) problemsChanged.add(k);
    }
    model.problems = problems;
    if (programmedOk) {
      // Which zone serves each record set, once the backend serves it (a deleted record set's
      // finalizer is released only after that).
      const keys = model.verdictsPending === 'all' ? [...model.model.verdicts.keys()] : model.verdictsPending;
      for (const recordKey of keys) {
        const v = model.model.verdicts.get(recordKey);
        if (v?.accepted) this.programmedRecord.set(recordKey, key);
        else if (this.programmedRecord.get(recordKey) === key) {
          this.programmedRecord.delete(recordKey);
          this.records.add(recordKey); // lets a deleting record release its finalizer
        }
      }
      model.verdictsPending = new Set();
    }

    // 3. The content hash of the serial, off the path from change to answer: in a later reconcile.
    if (programmedOk && assigned.hash === undefined && !changed) {
      const hash = model.model.contentHash();
      try {
        await this.serials.set(origin, { serial, hash });
      } catch (e) {
        this.unsaved.add(nameKey(origin));
        await this.failed(
          key,
          zone,
          model,
          backend,
          { ...described, ...this.serialFields(zone, assigned) },
          acceptedCondition,
          'SerialNotSaved',
          `serving serial ${serial}, but its content hash could not be saved: ${errorText(e)}; ` +
            'a restart now would raise the serial; retrying',
          { programmed: true, records: [] },
        );
        throw e;
      }
      this.unsaved.delete(nameKey(origin));
      assigned.hash = hash;
    }
    const common = { ...this.serialFields(zone, assigned), ...described };
    const programmedMessage = read.message;
    await this.writeZoneStatus(zone, common, [
      acceptedCondition,
      ...programmedConditions(
        programmedOk,
        {
          programmed: programmedMessage,
          ready: `serving ${origin} at serial ${serial}`,
          pending: programmedMessage,
        },
        generation,
      ),
    ]);
    // Record statuses: all of them when the zone's programmed state flipped, else only those whose
    // inputs, verdict or problem changed since they were last written.
    const all = model.statusesPending === 'all' || model.programmedOk !== programmedOk;
    model.programmedOk = programmedOk;
    try {
      await this.writeRecordStatuses(
        key,
        backend,
        model.model.verdicts,
        all
          ? model.model.verdicts.keys()
          : new Set([...(model.statusesPending as Set<ResourceKey>), ...problemsChanged]),
        programmedOk,
        programmedMessage,
        problems,
      );
    } catch (e) {
      // Some record statuses were not written: the retry visits all of them (unchanged ones are skipped).
      model.programmedOk = undefined;
      throw e;
    }
    if (programmedOk) model.statusesPending = new Set();
    if (!programmedOk) {
      this.failing.set(key, { key, reason: 'Pending', message: programmedMessage });
      return { requeueAfterMs: 1000 };
    }
    this.failing.delete(key);
    // A backend others can edit is re-applied periodically (drift repair); the hash comes first.
    const resync = backend.resyncIntervalMs;
    if (assigned.hash === undefined)
      return { requeueAfterMs: Math.min(this.hashDelayMs, resync ?? this.hashDelayMs) };
    return resync !== undefined ? { requeueAfterMs: resync } : undefined;
  }

  /**
   * The serial of the model's current content, saved durably: the one already chosen for it (saved
   * again after a failed write), else a new one. A model's first serial keeps the stored one when the
   * stored hash is this content's (a restart or rebuild without changes); any other content gets
   * `max(YYYYMMDD00, last + 1)` above every serial this process asked to save, saved or not, so a
   * serial is never reused for other content even if a failed write did reach the disk.
   */
  private async assignSerial(
    origin: Name,
    zone: DNSZone,
    model: ZoneModelState,
    transfers: ResolvedTransfers | undefined,
  ): Promise<AssignedSerial> {
    const id = nameKey(origin);
    let assigned = model.assigned;
    if (!assigned) {
      let stored = this.serialState(origin, zone);
      if (!stored && !this.claimed.has(id)) stored = await this.serialFromSecondaries(origin, transfers);
      if (model.firstSerial) {
        const hash = model.model.contentHash();
        assigned =
          stored && stored.hash === hash
            ? { serial: stored.serial, hash, saved: !this.unsaved.has(id) }
            : { serial: this.claimSerial(id, stored), hash, saved: false };
      } else {
        const serial = this.claimSerial(id, stored);
        assigned = this.hashOnChange
          ? { serial, hash: model.model.contentHash(), saved: false }
          : { serial, saved: false };
      }
      model.assigned = assigned;
      model.firstSerial = false;
    }
    if (!assigned.saved) {
      const { serial, hash } = assigned;
      try {
        await this.serials.set(origin, hash === undefined ? { serial } : { serial, hash });
      } catch (e) {
        this.unsaved.add(id);
        // Another writer recorded this serial or a higher one (a leader handover): it may be served
        // with other content, so the retry chooses a new serial above what the store holds now.
        if (e instanceof SerialTakenError) model.assigned = undefined;
        throw new SerialNotSavedError(errorText(e), { cause: e });
      }
      this.unsaved.delete(id);
      assigned.saved = true;
    }
    return assigned;
  }

  /**
   * Nothing is stored for the zone: the highest serial its secondaries answer, so that the first
   * serial starts above it (as if it had been stored), or undefined (the date serial then).
   */
  private async serialFromSecondaries(
    origin: Name,
    transfers: ResolvedTransfers | undefined,
  ): Promise<ZoneSerialState | undefined> {
    if (!this.secondarySerials || !transfers || transfers.notify.length === 0) return undefined;
    let results: SoaProbeResult[];
    try {
      results = await this.secondarySerials(origin, transfers);
    } catch (e) {
      results = [{ target: 'secondaries', error: errorText(e) }];
    }
    const highest = highestSerial(results);
    const answers = results.map((r) => `${r.target}: ${r.serial ?? r.error}`).join(', ');
    this.log(
      'warn',
      highest !== undefined
        ? `zone ${origin}: no serial stored; its secondaries serve up to ${highest}, so it starts above that`
        : `zone ${origin}: no serial stored and no secondary answered its SOA; it starts at the date serial, ` +
            'and a secondary that holds a higher serial ignores it until the serial passes that one',
      { secondaries: answers },
    );
    return highest !== undefined ? { serial: highest } : undefined;
  }

  /** A new serial for an origin: above the stored one and above every one claimed before. */
  private claimSerial(id: string, stored: ZoneSerialState | undefined): number {
    let last = stored?.serial;
    const claimed = this.claimed.get(id);
    if (claimed !== undefined && (last === undefined || serialGreater(claimed, last))) last = claimed;
    const serial = nextSerial(last, this.now());
    this.claimed.set(id, serial);
    return serial;
  }

  /** The serial and hash fields of the zone's status for a saved serial. */
  private serialFields(zone: DNSZone, assigned: AssignedSerial): { serial: number; hash?: string } {
    const hash = assigned.hash ?? (zone.status?.serial === assigned.serial ? zone.status.hash : undefined);
    return { serial: assigned.serial, ...(hash !== undefined ? { hash } : {}) };
  }

  /**
   * Reports a failed step: the zone (Programmed as given, Ready=False with the reason), the listed
   * record sets as not programmed, and the zone in `pendingZones()` until a reconcile succeeds.
   */
  private async failed(
    key: ResourceKey,
    zone: DNSZone,
    model: ZoneModelState,
    backend: Backend,
    fields: Omit<DNSZoneStatus, 'conditions' | 'observedGeneration'>,
    accepted: ConditionInput,
    reason: string,
    message: string,
    what: { programmed: boolean; records: Iterable<ResourceKey> },
  ): Promise<void> {
    this.failing.set(key, { key, reason, message });
    const generation = zone.metadata.generation;
    const status = {
      // Without a newly saved serial the status keeps the serial (and hash) it had.
      ...(zone.status?.serial !== undefined ? { serial: zone.status.serial } : {}),
      ...(zone.status?.hash !== undefined ? { hash: zone.status.hash } : {}),
      ...fields,
    };
    await this.writeZoneStatus(zone, status, [
      accepted,
      what.programmed
        ? {
            type: 'Programmed',
            status: 'True',
            reason: 'Programmed',
            message: `${backend.name} serves serial ${status.serial}`,
            observedGeneration: generation,
          }
        : { type: 'Programmed', status: 'False', reason, message, observedGeneration: generation },
      { type: 'Ready', status: 'False', reason, message, observedGeneration: generation },
    ]);
    if (!what.programmed)
      await this.writeRecordStatuses(key, backend, model.model.verdicts, what.records, false, message);
  }

  /** A class's transfer settings with their secrets read, once per class version. */
  private transfersOf(zoneClass: DNSZoneClass): Promise<{ resolved?: ResolvedTransfers; error?: string }> {
    const name = zoneClass.metadata.name;
    const version = `${zoneClass.metadata.uid}/${zoneClass.metadata.generation}`;
    const cached = this.transferSettings.get(name);
    if (cached && cached.version === version) return cached.result;
    const result = resolveTransfers(zoneClass.spec.transfers, this.secrets).then(
      (resolved) => (resolved ? { resolved } : {}),
      (e: Error) => {
        // Read again on the next reconcile: the file or variable may appear.
        this.transferSettings.delete(name);
        return { error: e.message };
      },
    );
    this.transferSettings.set(name, { version, result });
    return result;
  }

  /** The zone's model, rebuilt when its configuration (SOA, TTL, nameservers) changed. */
  private modelFor(key: ResourceKey, zone: DNSZone, zoneClass: DNSZoneClass, origin: Name): ZoneModelState {
    const existing = this.models.get(key);
    if (existing && existing.model.configSignature === ZoneModel.signature(zone, zoneClass, origin))
      return existing;
    const state: ZoneModelState = {
      model: new ZoneModel(zone, zoneClass, origin),
      fresh: true,
      firstSerial: true,
      full: true,
      pending: new Map(),
      verdictsPending: 'all',
      statusesPending: 'all',
    };
    this.models.set(key, state);
    return state;
  }

  /**
   * What is known of the origin's last serial: the serial store's state and the zone's status, the
   * higher of the two (a status above the store: state from before the store kept it, or a lost one).
   * At an equal serial the one that knows the content hash wins: a serial has only one content.
   */
  private serialState(origin: Name, zone: DNSZone): ZoneSerialState | undefined {
    const stored = this.serials.get(origin);
    const s = zone.status;
    const recorded =
      s?.serial !== undefined ? { serial: s.serial, ...(s.hash ? { hash: s.hash } : {}) } : undefined;
    if (!stored || !recorded) return stored ?? recorded;
    if (serialGreater(recorded.serial, stored.serial)) return recorded;
    if (recorded.serial === stored.serial && stored.hash === undefined && recorded.hash !== undefined)
      return recorded;
    return stored;
  }

  private async unprogram(key: ResourceKey): Promise<void> {
    const model = this.models.get(key);
    this.models.delete(key);
    this.dirty.delete(key);
    this.failing.delete(key);
    const state = this.programmed.get(key);
    if (!state) return;
    // Another zone may have taken over the same origin (a conflict settled); leave it alone then.
    const owner = this.catalog.zoneForDomain(state.origin);
    if (owner === undefined || owner === key) await state.backend.deleteZone(state.origin);
    this.programmed.delete(key);
    for (const recordKey of model?.model.verdicts.keys() ?? []) {
      if (this.programmedRecord.get(recordKey) === key) this.programmedRecord.delete(recordKey);
      this.records.add(recordKey);
    }
  }

  private async writeZoneStatus(
    zone: DNSZone,
    fields: Omit<DNSZoneStatus, 'conditions' | 'observedGeneration'>,
    conditions: ConditionInput[],
  ): Promise<void> {
    const status: DNSZoneStatus = {
      observedGeneration: zone.metadata.generation,
      ...fields,
      conditions: setConditions(zone.status?.conditions, conditions, this.now()),
    };
    if (!jsonEqual(status, zone.status)) await this.store.updateStatus('DNSZone', keyOf(zone), status);
  }

  private async writeRecordStatuses(
    zoneKey: ResourceKey,
    backend: Backend,
    verdicts: ReadonlyMap<ResourceKey, RecordVerdict>,
    keys: Iterable<ResourceKey>,
    programmed: boolean,
    programmedMessage: string,
    problems?: ReadonlyMap<ResourceKey, RRsetProblem>,
  ): Promise<void> {
    const zoneRef = refOf(zoneKey);
    const now = this.now().toISOString();
    const publishedIn = `published in zone ${zoneKey}`;
    const servedBy = programmed ? `served by ${backend.name}` : programmedMessage;
    // Up to writeConcurrency writes in flight; the first failure fails the reconcile once all settled.
    const inFlight = new Set<Promise<void>>();
    let failure: { error: unknown } | undefined;
    for (const recordKey of keys) {
      if (inFlight.size >= this.writeConcurrency) await Promise.race(inFlight);
      if (failure) break;
      const verdict = verdicts.get(recordKey);
      if (!verdict) continue; // it left the zone; whoever holds it now writes its status
      const rs = this.store.get('DNSRecordSet', recordKey) as DNSRecordSet | undefined;
      if (!rs || rs.metadata.deletionTimestamp) continue;
      const generation = rs.metadata.generation;
      const problem = verdict.accepted ? problems?.get(recordKey) : undefined;
      // Everything the status depends on, cheaply: skip unchanged record sets before building anything.
      const signature = verdict.accepted
        ? `${generation}\u0001${verdict.fqdn}\u0001${zoneKey}\u0001${servedBy}\u0001${problem?.reason ?? ''}\u0001${problem?.message ?? ''}`
        : `${generation}\u0001${verdict.fqdn}\u0001${zoneKey}\u0001${verdict.reason}\u0001${verdict.message}`;
      const memo = this.recordStatusMemo.get(recordKey);
      if (memo && memo.signature === signature && memo.status === rs.status) continue;
      const conditions: ConditionInput[] = problem
        ? problemConditions(problem, backend.name, publishedIn, generation)
        : verdict.accepted
          ? [
              {
                type: 'Accepted',
                status: 'True',
                reason: 'Accepted',
                message: publishedIn,
                observedGeneration: generation,
              },
              // No serial here: a record's status must not change when other records of its zone do.
              ...programmedConditions(
                programmed,
                {
                  programmed: servedBy,
                  ready: `${verdict.fqdn} ${rs.spec.type} is served`,
                  pending: programmedMessage,
                },
                generation,
              ),
            ]
          : rejected(verdict.reason, verdict.message, generation);
      const write: Promise<void> = this.writeRecordStatus(
        rs,
        { fqdn: verdict.fqdn, zone: zoneRef },
        conditions,
        now,
        signature,
      ).then(
        () => {
          inFlight.delete(write);
        },
        (error: unknown) => {
          inFlight.delete(write);
          failure ??= { error };
        },
      );
      inFlight.add(write);
    }
    await Promise.all(inFlight);
    if (failure) throw failure.error;
  }

  private async writeRecordStatus(
    rs: DNSRecordSet,
    fields: Omit<DNSRecordSetStatus, 'conditions' | 'observedGeneration'>,
    conditions: ConditionInput[],
    now: string = this.now().toISOString(),
    signature: string = JSON.stringify([rs.metadata.generation, fields, conditions]),
  ): Promise<void> {
    // A zone reconcile visits every record set of the zone; most are unchanged. When the status we
    // last wrote is still the object's status and the inputs are the same, skip the comparison.
    const key = keyOf(rs);
    const memo = this.recordStatusMemo.get(key);
    if (memo && memo.signature === signature && memo.status === rs.status) return;
    const status: DNSRecordSetStatus = {
      observedGeneration: rs.metadata.generation,
      ...fields,
      conditions: setConditions(rs.status?.conditions, conditions, now),
    };
    if (jsonEqual(status, rs.status)) {
      this.recordStatusMemo.set(key, { signature, status: rs.status });
      return;
    }
    await this.store.updateStatus('DNSRecordSet', key, status);
    this.recordStatusMemo.set(key, { signature, status });
  }

  private async reconcileRecord(key: ResourceKey): Promise<ReconcileResult> {
    const rs = this.store.get('DNSRecordSet', key) as DNSRecordSet | undefined;
    if (!rs) return;
    if (rs.metadata.deletionTimestamp) {
      // The finalizer holds the object until no programmed zone serves it any more.
      if (this.programmedRecord.has(key)) return;
      await this.store.removeFinalizer('DNSRecordSet', key, FINALIZER);
      return;
    }
    await this.store.addFinalizer('DNSRecordSet', key, FINALIZER);
    const resolution = this.catalog.recordResolution(key);
    if (!resolution || resolution.resolved) return; // the zone reconcile writes its status
    await this.writeRecordStatus(
      rs,
      {
        ...(resolution.fqdn !== undefined ? { fqdn: resolution.fqdn } : {}),
        ...(resolution.zone !== undefined ? { zone: refOf(resolution.zone) } : {}),
      },
      rejected(resolution.reason, resolution.message, rs.metadata.generation),
    );
  }

  private async reconcileClass(key: ResourceKey): Promise<ReconcileResult> {
    const zoneClass = this.store.get('DNSZoneClass', key) as DNSZoneClass | undefined;
    if (!zoneClass) return;
    const zones = [...this.catalog.zones.values()].filter((z) => z.spec.className === key).length;
    const backend = this.backendFor(zoneClass);
    let health: { ok: boolean; message: string };
    try {
      health = backend.health
        ? await backend.health()
        : { ok: true, message: `backend ${backend.name} is ready` };
    } catch (e) {
      health = {
        ok: false,
        message: `backend ${backend.name}: ${e instanceof Error ? e.message : String(e)}`,
      };
    }
    const status: DNSZoneClassStatus = {
      observedGeneration: zoneClass.metadata.generation,
      zones,
      conditions: setConditions(
        zoneClass.status?.conditions,
        [
          {
            type: 'Ready',
            status: health.ok ? 'True' : 'False',
            reason: health.ok ? 'Ready' : 'BackendUnreachable',
            message: health.message,
            observedGeneration: zoneClass.metadata.generation,
          },
        ],
        this.now(),
      ),
    };
    if (!jsonEqual(status, zoneClass.status)) await this.store.updateStatus('DNSZoneClass', key, status);
    // Health is informational (zones are reconciled regardless) and re-checked periodically.
    return backend.health ? { requeueAfterMs: HEALTH_INTERVAL_MS } : undefined;
  }
}

/** What decides whether an event matters: the spec generation and whether deletion started. */
function observedState(object: Resource): string {
  return `${object.metadata.generation ?? 0}/${object.metadata.deletionTimestamp ? 'deleting' : 'live'}`;
}

/**
 * A record set the backend left out: held by something the backend does not let Zonekeeper own
 * (Accepted=False, Conflict), or content the backend refused or cannot answer for (Programmed=False,
 * with the problem's reason: BackendRejected, AliasTargetUnresolvable).
 */
function problemConditions(
  problem: RRsetProblem,
  backend: string,
  publishedIn: string,
  generation: number | undefined,
): ConditionInput[] {
  const message = `backend ${backend}: ${problem.message}`;
  if (problem.reason === 'Conflict') return rejected('Conflict', message, generation);
  return [
    {
      type: 'Accepted',
      status: 'True',
      reason: 'Accepted',
      message: publishedIn,
      observedGeneration: generation,
    },
    {
      type: 'Programmed',
      status: 'False',
      reason: problem.reason,
      message,
      observedGeneration: generation,
    },
    { type: 'Ready', status: 'False', reason: problem.reason, message, observedGeneration: generation },
  ];
}

function rejected(reason: string, message: string, generation: number | undefined): ConditionInput[] {
  return [
    { type: 'Accepted', status: 'False', reason, message, observedGeneration: generation },
    { type: 'Programmed', status: 'False', reason, message: 'not published', observedGeneration: generation },
    { type: 'Ready', status: 'False', reason, message, observedGeneration: generation },
  ];
}

function keyOf(object: Resource): ResourceKey {
  return resourceKey(object.metadata);
}

export type { Condition };
