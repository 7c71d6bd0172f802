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
import { type Backend, BackendError } from '../backends/backend.ts';
import type { Name } from '../dns/name.ts';
import type { Registry } from '../metrics/registry.ts';
import { assembleZone } from '../zones/assemble.ts';
import { type Affected, Catalog } from '../zones/catalog.ts';
import { type ResourceKey, splitKey } from '../zones/resource-key.ts';
import { nextSerial } from '../zones/serial.ts';
import { zoneAssemblyInput } from '../zones/zone-inputs.ts';
import { type ConditionInput, jsonEqual, setConditions } from './conditions.ts';
import { FINALIZER, type ResourceStore, type StoreEvent } from './resource-store.ts';
import type { SerialStore } from './serial-store.ts';
import { type ReconcileResult, WorkQueue } from './work-queue.ts';

export interface ControllerOptions {
  store: ResourceStore;
  backend: Backend;
  serials: SerialStore;
  registry?: Registry;
  now?: () => Date;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

interface ProgrammedState {
  origin: Name;
  serial: number;
  records: Set<ResourceKey>;
}

/**
 * The reconcile engine: store events update the catalog and enqueue the keys they affect; zone,
 * record and class reconcilers bring the backend and the status in line with the catalog. Every
 * reconcile is level-triggered and idempotent, and writes status only when it changed.
 */
export class Controller {
  readonly catalog = new Catalog();
  private readonly store: ResourceStore;
  private readonly backend: Backend;
  private readonly serials: SerialStore;
  private readonly now: () => Date;
  private readonly log: NonNullable<ControllerOptions['log']>;
  private readonly zones: WorkQueue;
  private readonly records: WorkQueue;
  private readonly classes: WorkQueue;
  /** What the backend holds, per zone key. */
  private readonly programmed = new Map<ResourceKey, ProgrammedState>();
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
    this.backend = options.backend;
    this.serials = options.serials;
    this.now = options.now ?? (() => new Date());
    this.log = options.log ?? (() => {});
    this.zones = new WorkQueue((key) => this.reconcileZone(key), { concurrency: 2 });
    this.records = new WorkQueue((key) => this.reconcileRecord(key), { concurrency: 2 });
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
    const affected = this.catalog.load(live.DNSZoneClass, live.DNSZone, live.DNSRecordSet);
    for (const zone of affected.zones) this.zones.add(zone);
    for (const record of affected.records) this.records.add(record);
    this.unsubscribe = this.store.watch((event) => this.onEvent(event));
    this.classes.start();
    this.zones.start();
    this.records.start();
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
    const input = zoneAssemblyInput(this.catalog, key)!;
    const assembled = assembleZone(input);
    const origin = assembled.origin;
    const stored =
      this.serials.get(origin) ??
      (zone.status?.serial !== undefined && zone.status.hash
        ? { serial: zone.status.serial, hash: zone.status.hash }
        : undefined);
    let serial = stored?.serial;
    if (!stored || stored.hash !== assembled.hash) {
      serial = nextSerial(stored?.serial, this.now());
      await this.serials.set(origin, { serial, hash: assembled.hash });
    }
    const accepted = new Set<ResourceKey>();
    for (const [recordKey, v] of assembled.verdicts) if (v.accepted) accepted.add(recordKey);

    const common = {
      serial: serial!,
      hash: assembled.hash,
      recordCount: assembled.acceptedCount,
      nameservers: assembled.nameServers,
      ...(verdict.parent !== undefined ? { parentZone: toRef(verdict.parent) } : {}),
    };
    const acceptedCondition: ConditionInput = {
      type: 'Accepted',
      status: 'True',
      reason: 'Accepted',
      message:
        assembled.warnings.length > 0
          ? `accepted with warnings: ${assembled.warnings.join('; ')}`
          : `serving ${origin}`,
      observedGeneration: generation,
    };
    let served: number | undefined;
    try {
      await this.backend.applyZone({ key, zone: assembled, serial: serial! });
      served = await this.backend.servedSerial(origin);
    } catch (e) {
      const reason = e instanceof BackendError ? e.reason : 'BackendUnreachable';
      const message = `backend ${this.backend.name}: ${e instanceof Error ? e.message : String(e)}`;
      await this.writeZoneStatus(zone, common, [
        acceptedCondition,
        { type: 'Programmed', status: 'False', reason, message, observedGeneration: generation },
        { type: 'Ready', status: 'False', reason, message, observedGeneration: generation },
      ]);
      await this.writeRecordStatuses(key, assembled.verdicts, false, message);
      throw e;
    }
    const programmedOk = served === serial;
    const before = this.programmed.get(key);
    this.programmed.set(key, { origin, serial: serial!, records: accepted });
    for (const recordKey of accepted) this.programmedRecord.set(recordKey, key);
    for (const recordKey of before?.records ?? []) {
      if (!accepted.has(recordKey)) {
        if (this.programmedRecord.get(recordKey) === key) this.programmedRecord.delete(recordKey);
        this.records.add(recordKey); // lets a deleting record release its finalizer
      }
    }
    const programmedMessage = programmedOk
      ? `${this.backend.name} serves serial ${serial}`
      : `${this.backend.name} serves serial ${served ?? 'nothing'}, expected ${serial}`;
    await this.writeZoneStatus(zone, common, [
      acceptedCondition,
      {
        type: 'Programmed',
        status: programmedOk ? 'True' : 'False',
        reason: programmedOk ? 'Programmed' : 'Pending',
        message: programmedMessage,
        observedGeneration: generation,
      },
      {
        type: 'Ready',
        status: programmedOk ? 'True' : 'False',
        reason: programmedOk ? 'Ready' : 'Pending',
        message: programmedOk ? `serving ${origin} at serial ${serial}` : programmedMessage,
        observedGeneration: generation,
      },
    ]);
    await this.writeRecordStatuses(key, assembled.verdicts, programmedOk, programmedMessage);
    return programmedOk ? undefined : { requeueAfterMs: 1000 };
  }

  private async unprogram(key: ResourceKey): Promise<void> {
    const state = this.programmed.get(key);
    if (!state) return;
    // Another zone may have taken over the same origin (a conflict settled); leave it alone then.
    const owner = this.catalog.zoneForDomain(state.origin);
    if (owner === undefined || owner === key) await this.backend.deleteZone(state.origin);
    this.programmed.delete(key);
    for (const recordKey of state.records) {
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
    verdicts: ReturnType<typeof assembleZone>['verdicts'],
    programmed: boolean,
    programmedMessage: string,
  ): Promise<void> {
    const zoneRef = toRef(zoneKey);
    for (const [recordKey, verdict] of verdicts) {
      const rs = this.store.get('DNSRecordSet', recordKey) as DNSRecordSet | undefined;
      if (!rs || rs.metadata.deletionTimestamp) continue;
      const generation = rs.metadata.generation;
      let conditions: ConditionInput[];
      if (verdict.accepted) {
        conditions = [
          {
            type: 'Accepted',
            status: 'True',
            reason: 'Accepted',
            message: `published in zone ${zoneKey}`,
            observedGeneration: generation,
          },
          {
            type: 'Programmed',
            status: programmed ? 'True' : 'False',
            reason: programmed ? 'Programmed' : 'Pending',
            // No serial here: a record's status must not change when other records of its zone do.
            message: programmed ? `served by ${this.backend.name}` : programmedMessage,
            observedGeneration: generation,
          },
          {
            type: 'Ready',
            status: programmed ? 'True' : 'False',
            reason: programmed ? 'Ready' : 'Pending',
            message: programmed ? `${verdict.fqdn} ${rs.spec.type} is served` : programmedMessage,
            observedGeneration: generation,
          },
        ];
      } else {
        conditions = rejected(verdict.reason, verdict.message, generation);
      }
      await this.writeRecordStatus(rs, { fqdn: verdict.fqdn, zone: zoneRef }, conditions);
    }
  }

  private async writeRecordStatus(
    rs: DNSRecordSet,
    fields: Omit<DNSRecordSetStatus, 'conditions' | 'observedGeneration'>,
    conditions: ConditionInput[],
  ): Promise<void> {
    // A zone reconcile visits every record set of the zone; most are unchanged. When the status we
    // last wrote is still the object's status and the inputs are the same, skip the comparison.
    const key = keyOf(rs);
    const signature = JSON.stringify([rs.metadata.generation, fields, conditions]);
    const memo = this.recordStatusMemo.get(key);
    if (memo && memo.signature === signature && memo.status === rs.status) return;
    const status: DNSRecordSetStatus = {
      observedGeneration: rs.metadata.generation,
      ...fields,
      conditions: setConditions(rs.status?.conditions, conditions, this.now()),
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
        ...(resolution.zone !== undefined ? { zone: toRef(resolution.zone) } : {}),
      },
      rejected(resolution.reason, resolution.message, rs.metadata.generation),
    );
  }

  private async reconcileClass(key: ResourceKey): Promise<ReconcileResult> {
    const zoneClass = this.store.get('DNSZoneClass', key) as DNSZoneClass | undefined;
    if (!zoneClass) return;
    const zones = [...this.catalog.zones.values()].filter((z) => z.spec.className === key).length;
    const status: DNSZoneClassStatus = {
      observedGeneration: zoneClass.metadata.generation,
      zones,
      conditions: setConditions(
        zoneClass.status?.conditions,
        [
          {
            type: 'Ready',
            status: 'True',
            reason: 'Ready',
            message: `backend ${Object.keys(zoneClass.spec.backend)[0]} is ready`,
            observedGeneration: zoneClass.metadata.generation,
          },
        ],
        this.now(),
      ),
    };
    if (!jsonEqual(status, zoneClass.status)) await this.store.updateStatus('DNSZoneClass', key, status);
  }
}

/** What decides whether an event matters: the spec generation and whether deletion started. */
function observedState(object: Resource): string {
  return `${object.metadata.generation ?? 0}/${object.metadata.deletionTimestamp ? 'deleting' : 'live'}`;
}

function rejected(reason: string, message: string, generation: number | undefined): ConditionInput[] {
  return [
    { type: 'Accepted', status: 'False', reason, message, observedGeneration: generation },
    { type: 'Programmed', status: 'False', reason, message: 'not published', observedGeneration: generation },
    { type: 'Ready', status: 'False', reason, message, observedGeneration: generation },
  ];
}

function keyOf(object: Resource): ResourceKey {
  return object.metadata.namespace
    ? `${object.metadata.namespace}/${object.metadata.name}`
    : object.metadata.name;
}

function toRef(key: ResourceKey): { namespace: string; name: string } {
  const { namespace, name } = splitKey(key);
  return { namespace: namespace ?? '', name };
}

export type { Condition };
