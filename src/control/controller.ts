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
import { type ApplyResult, type Backend, BackendError, type RRsetProblem } from '../backends/backend.ts';
import type { Name } from '../dns/name.ts';
import type { Registry } from '../metrics/registry.ts';
import { type ResolvedTransfers, resolveTransfers } from '../server/transfer/transfer-policy.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import type { RecordVerdict } from '../zones/assemble.ts';
import { type Affected, Catalog } from '../zones/catalog.ts';
import { type ResourceKey, refOf, resourceKey } from '../zones/resource-key.ts';
import { nextSerial } from '../zones/serial.ts';
import { zoneChildren } from '../zones/zone-inputs.ts';
import { ZoneModel } from '../zones/zone-model.ts';
import { type ConditionInput, jsonEqual, programmedConditions, setConditions } from './conditions.ts';
import { FINALIZER, type ResourceStore, type StoreEvent } from './resource-store.ts';
import { fileAndEnvSecrets, type SecretResolver } from './secrets.ts';
import type { SerialStore, ZoneSerialState } from './serial-store.ts';
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
}

interface ProgrammedState {
  origin: Name;
  serial: number;
  backend: Backend;
  /** The backend's state is unknown (a failed apply): send the whole zone next time. */
  needsFull: boolean;
}

interface ZoneModelState {
  model: ZoneModel;
  /** Built but not yet synced: the first update is a full one. */
  fresh: boolean;
  programmedOk?: boolean;
  warnings?: string[];
  /** Record sets the backend left out at the last apply, with the reason and message reported. */
  problems?: ReadonlyMap<ResourceKey, RRsetProblem>;
}

/** How often a class re-checks its backend's health. */
const HEALTH_INTERVAL_MS = 60_000;

/** How long after a change the content hash is computed (off the path from change to answer). */
const HASH_DELAY_MS = 1000;

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
    // Several zones at once: their durable serial writes share one file write (start-up with many
    // zones), and one slow backend call does not hold up the other zones.
    this.zones = new WorkQueue((key) => this.reconcileZone(key), { concurrency: 8 });
    this.records = new WorkQueue((key) => this.reconcileRecord(key), {
      concurrency: Math.max(2, this.writeConcurrency),
    });
    this.classes = new WorkQueue((key) => this.reconcileClass(key));
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
   * restart keeps serials exactly (only a crash makes the next start raise them to be safe).
   */
  async flush(): Promise<void> {
    for (const state of this.models.values()) {
      const origin = state.model.origin;
      const stored = this.serials.get(origin);
      if (!stored || stored.hash !== undefined || state.fresh) continue;
      await this.serials.set(origin, { serial: stored.serial, hash: state.model.contentHash() });
    }
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
    const origin = model.model.origin;
    const stored = this.serialState(origin, zone);
    let serial: number;
    let hash = stored?.hash;
    if (fresh) {
      // A full build: compare with the stored hash, as after a restart.
      hash = model.model.contentHash();
      serial = stored && stored.hash === hash ? stored.serial : nextSerial(stored?.serial, this.now());
      if (serial !== stored?.serial || hash !== stored?.hash)
        await this.serials.set(origin, { serial, hash });
    } else if (delta.upserts.length > 0 || delta.deletes.length > 0) {
      // The content changed: a new serial now; the content hash follows in a later reconcile, off the
      // path from change to answer. Until then the stored hash is unknown, and a restart in between
      // conservatively raises the serial again.
      serial = nextSerial(stored?.serial, this.now());
      hash = this.hashOnChange ? model.model.contentHash() : undefined;
      await this.serials.set(origin, hash === undefined ? { serial } : { serial, hash });
    } else {
      serial = stored?.serial ?? nextSerial(undefined, this.now());
      if (hash === undefined) {
        hash = model.model.contentHash();
        await this.serials.set(origin, { serial, hash });
      }
    }
    const state = this.programmed.get(key);
    const previousSerial = state?.serial;
    const canPatch = !fresh && state !== undefined && !state.needsFull && previousSerial !== undefined;
    const common = {
      serial,
      ...(hash !== undefined
        ? { hash }
        : zone.status?.hash !== undefined && serial === zone.status.serial
          ? { hash: zone.status.hash }
          : {}),
      recordCount: model.model.acceptedCount,
      nameservers: model.model.nameServers,
      ...(verdict.parent !== undefined ? { parentZone: refOf(verdict.parent) } : {}),
    };
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
    let served: number | undefined;
    let applied: ApplyResult | undefined;
    try {
      applied =
        (await backend.applyZone({
          key,
          origin,
          soa: model.model.soa,
          serial,
          rrsets: () => model.model.rrsets(),
          ...(transfers.resolved ? { transfers: transfers.resolved } : {}),
          ...(canPatch
            ? { delta: { fromSerial: previousSerial, upserts: delta.upserts, deletes: delta.deletes } }
            : {}),
        })) ?? undefined;
      served = await backend.servedSerial(origin);
    } catch (e) {
      // What the backend holds is unknown now: the next attempt sends the whole zone.
      this.programmed.set(key, { origin, serial: previousSerial ?? serial, needsFull: true, backend });
      const reason = e instanceof BackendError ? e.reason : 'BackendUnreachable';
      const message = `backend ${backend.name}: ${e instanceof Error ? e.message : String(e)}`;
      await this.writeZoneStatus(zone, common, [
        acceptedCondition,
        { type: 'Programmed', status: 'False', reason, message, observedGeneration: generation },
        { type: 'Ready', status: 'False', reason, message, observedGeneration: generation },
      ]);
      await this.writeRecordStatuses(
        key,
        backend,
        model.model.verdicts,
        model.model.verdicts.keys(),
        false,
        message,
      );
      model.programmedOk = false;
      throw e;
    }
    const programmedOk = served === serial;
    this.programmed.set(key, { origin, serial, needsFull: !programmedOk, backend });
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
    for (const recordKey of delta.verdicts) {
      const v = model.model.verdicts.get(recordKey);
      if (v?.accepted) this.programmedRecord.set(recordKey, key);
      else if (this.programmedRecord.get(recordKey) === key) {
        this.programmedRecord.delete(recordKey);
        this.records.add(recordKey); // lets a deleting record release its finalizer
      }
    }
    if (fresh)
      for (const [recordKey, v] of model.model.verdicts)
        if (v.accepted) this.programmedRecord.set(recordKey, key);
    const programmedMessage = programmedOk
      ? `${backend.name} serves serial ${serial}`
      : `${backend.name} serves serial ${served ?? 'nothing'}, expected ${serial}`;
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
    // Record statuses: all of them when the zone's programmed state flipped, else only changed verdicts.
    const all = fresh || model.programmedOk !== programmedOk;
    model.programmedOk = programmedOk;
    try {
      await this.writeRecordStatuses(
        key,
        backend,
        model.model.verdicts,
        // The record sets that changed in this reconcile, and those whose verdict or problem changed.
        all
          ? model.model.verdicts.keys()
          : new Set([...delta.verdicts, ...(dirty ?? []), ...problemsChanged]),
        programmedOk,
        programmedMessage,
        problems,
      );
    } catch (e) {
      // Some record statuses were not written: the retry visits all of them (unchanged ones are skipped).
      model.programmedOk = undefined;
      throw e;
    }
    if (!programmedOk) return { requeueAfterMs: 1000 };
    // A backend others can edit is re-applied periodically (drift repair); the hash comes first.
    const resync = backend.resyncIntervalMs;
    if (hash === undefined) return { requeueAfterMs: Math.min(HASH_DELAY_MS, resync ?? HASH_DELAY_MS) };
    return resync !== undefined ? { requeueAfterMs: resync } : undefined;
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
    const state: ZoneModelState = { model: new ZoneModel(zone, zoneClass, origin), fresh: true };
    this.models.set(key, state);
    return state;
  }

  private serialState(origin: Name, zone: DNSZone): ZoneSerialState | undefined {
    const stored = this.serials.get(origin);
    if (stored) return stored;
    const s = zone.status;
    return s?.serial !== undefined ? { serial: s.serial, ...(s.hash ? { hash: s.hash } : {}) } : undefined;
  }

  private async unprogram(key: ResourceKey): Promise<void> {
    const model = this.models.get(key);
    this.models.delete(key);
    this.dirty.delete(key);
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
 * (Accepted=False, Conflict), or content the backend refused (Programmed=False, BackendRejected).
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
      reason: 'BackendRejected',
      message,
      observedGeneration: generation,
    },
    { type: 'Ready', status: 'False', reason: 'BackendRejected', message, observedGeneration: generation },
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
