import type {
  Condition,
  DNSRecordSet,
  DNSRecordSetStatus,
  DNSZone,
  DNSZoneClass,
  DNSZoneClassStatus,
  DNSZoneStatus,
} from '../api/index.ts';
import type { RRsetProblem } from '../backends/backend.ts';
import type { RecordVerdict } from '../zones/assemble.ts';
import { Holder, RecordTable, type RefColumn } from '../zones/record-table.ts';
import { type ResourceKey, refOf, resourceKey } from '../zones/resource-key.ts';
import {
  type ConditionInput,
  jsonEqual,
  recordProblemConditions,
  recordServedConditions,
  refusedConditions,
  setConditions,
} from './conditions.ts';
import { FINALIZER, type ResourceStore } from './resource-store.ts';

export type ZoneStatusFields = Omit<DNSZoneStatus, 'conditions' | 'observedGeneration'>;

/**
 * How often `status.targets` is written: at most once per `minIntervalMs` per record set, and at most
 * `perSecond` such writes in all. Health that flaps (a target a tenant controls, up and down every
 * second, shared by hundreds of record sets) would otherwise cost the API server a status write per
 * record set per flap. Changes meanwhile are coalesced: the write that goes out carries the health as
 * it is then.
 */
export interface TargetsWriteLimits {
  minIntervalMs: number;
  perSecond: number;
}

export const DEFAULT_TARGETS_WRITE_LIMITS: TargetsWriteLimits = { minIntervalMs: 2_000, perSecond: 50 };

/** `DNSRecordSet.status.targets`: the health of each record of a health-checked record set. */
export type RecordTargets = NonNullable<DNSRecordSetStatus['targets']>;

/** How a zone's backend serves its record sets, for their statuses. */
export interface RecordsServed {
  backend: string;
  /** Whether the backend serves the zone's current content. */
  programmed: boolean;
  /** Why not (or what it serves). */
  programmedMessage: string;
  /** Record sets the backend left out, with why. */
  problems?: ReadonlyMap<ResourceKey, RRsetProblem> | undefined;
}

/**
 * Writes the status of DNSZones, DNSRecordSets and DNSZoneClasses, each only when it changed (the
 * /status subresource), and at most `writeConcurrency` record-set writes at once. A record set's last
 * written status is remembered with the inputs it was built from, so that a zone reconcile that
 * visits every record set of the zone builds nothing for those unchanged.
 */
export class StatusWriter {
  private readonly store: ResourceStore;
  private readonly now: () => Date;
  private readonly writeConcurrency: number;
  /**
   * Per record set: the inputs and the status object of its last status write, as two columns of the
   * record table (the catalog's, shared with the structures beside it) rather than a map entry, a key
   * string and a memo object each. The signature leaves out what the status itself shows (generation,
   * fqdn), so that most record sets of a zone share one signature string instead of holding one each
   * (docs/benchmarks.md, memory budget).
   */
  private readonly table: RecordTable;
  private readonly memoSignatures: RefColumn<string>;
  private readonly memoStatuses: RefColumn<DNSRecordSetStatus>;
  /**
   * Conditions shared by the statuses that have equal ones: a zone's record sets mostly carry the same
   * Accepted and Programmed conditions, kept once instead of once per record set. Bounded: past
   * CONDITIONS_KEPT distinct conditions it starts again (sharing is then with later statuses only).
   */
  private sharedConditions = new Map<string, Condition>();
  /** Condition lists shared likewise (bounded the same way). */
  private sharedLists = new Map<string, Condition[]>();
  /** The list `share` gave last (compared first: the next record set of the zone mostly has an equal one). */
  private lastShared: Condition[] | undefined;

  /** The health of a steered record set's records (`status.targets`), when it has health checks. */
  private readonly targetsOf: ((key: ResourceKey) => RecordTargets | undefined) | undefined;
  private readonly targetsLimits: TargetsWriteLimits;
  /** When each record set's targets were last written (`performance.now()`). */
  private readonly targetsWritten = new Map<ResourceKey, number>();
  /** The targets write waiting for its turn, per record set (later changes join it). */
  private readonly targetsWaiting = new Map<
    ResourceKey,
    { promise: Promise<void>; attempt: number; resolve: () => void; reject: (e: unknown) => void }
  >();
  /** Record sets whose interval is over, waiting for the overall rate, in order. */
  private targetsQueue: ResourceKey[] = [];
  private targetsTimer: NodeJS.Timeout | undefined;
  /** Targets writes that may go out now (`perSecond`, up to a second's worth), and when it was counted. */
  private targetsCredit: number;
  private targetsRefilled = performance.now();

  constructor(
    store: ResourceStore,
    now: () => Date,
    writeConcurrency: number,
    targetsOf?: (key: ResourceKey) => RecordTargets | undefined,
    /** The record table to keep the memo in (the catalog's); a table of its own when not given. */
    table: RecordTable = new RecordTable(),
    targetsLimits: TargetsWriteLimits = DEFAULT_TARGETS_WRITE_LIMITS,
  ) {
    this.targetsLimits = targetsLimits;
    this.targetsCredit = targetsLimits.perSecond;
    this.store = store;
    this.now = now;
    this.writeConcurrency = writeConcurrency;
    this.targetsOf = targetsOf;
    this.table = table;
    this.memoSignatures = table.column(Holder.status);
    this.memoStatuses = table.column(Holder.status);
  }

  /** The memo of the record set's last status write, if any. */
  private memo(key: ResourceKey): { signature: string; status: DNSRecordSetStatus | undefined } | undefined {
    const slot = this.table.slotOf(key);
    const signature = slot < 0 ? undefined : this.memoSignatures.get(slot);
    return signature === undefined ? undefined : { signature, status: this.memoStatuses.get(slot) };
  }

  private remember(key: ResourceKey, signature: string, status: DNSRecordSetStatus | undefined): void {
    // Deleted while its status write was in flight (forgetRecord came first): nothing to remember,
    // and a slot taken now would be held for a record set that is gone.
    if (this.store.get('DNSRecordSet', key) === undefined) return;
    const slot = this.table.hold(key, Holder.status);
    this.memoSignatures.set(slot, signature);
    this.memoStatuses.set(slot, status);
  }

  /**
   * The health of a record set's records changed: writes `status.targets` (only when it differs),
   * keeping the rest of its status as it is when the write goes out. A status write of the zone's
   * reconcile may be in flight (new conditions, Programmed False to True): planned on the status
   * shown now, this write would land after it and put the old conditions back, so it is planned by
   * the store on the newest object, after the writes to it queued before (`updateStatusWith`).
   */
  targetsChanged(key: ResourceKey, attempt = 0): Promise<void> {
    const waiting = this.targetsWaiting.get(key);
    if (waiting) return waiting.promise;
    const now = performance.now();
    const due = (this.targetsWritten.get(key) ?? Number.NEGATIVE_INFINITY) + this.targetsLimits.minIntervalMs;
    if (due <= now && this.targetsQueue.length === 0 && this.takeTargetsWrite(now)) {
      this.targetsWritten.set(key, now);
      return this.writeTargets(key, attempt);
    }
    let settle: { resolve: () => void; reject: (e: unknown) => void } | undefined;
    const promise = new Promise<void>((resolve, reject) => {
      settle = { resolve, reject };
    });
    this.targetsWaiting.set(key, { promise, attempt, ...settle! });
    // Its interval over, it joins the queue for the overall rate.
    setTimeout(
      () => {
        this.targetsQueue.push(key);
        this.drainTargets();
      },
      Math.max(0, due - now),
    ).unref();
    return promise;
  }

  /** Writes the queued record sets' targets as the overall rate allows; one timer while it does not. */
  private drainTargets(): void {
    while (this.targetsQueue.length > 0) {
      const at = performance.now();
      if (!this.takeTargetsWrite(at)) {
        if (this.targetsTimer === undefined) {
          this.targetsTimer = setTimeout(() => {
            this.targetsTimer = undefined;
            this.drainTargets();
          }, 1000 / Math.max(this.targetsLimits.perSecond, 0.001));
          this.targetsTimer.unref();
        }
        return;
      }
      const key = this.targetsQueue.shift()!;
      const waiting = this.targetsWaiting.get(key);
      this.targetsWaiting.delete(key);
      this.targetsWritten.set(key, at);
      if (waiting) this.writeTargets(key, waiting.attempt).then(waiting.resolve, waiting.reject);
    }
  }

  /** Takes one targets write from the overall rate (a bucket of one second's writes), if there is one. */
  private takeTargetsWrite(now: number): boolean {
    const { perSecond } = this.targetsLimits;
    this.targetsCredit = Math.min(
      perSecond,
      this.targetsCredit + ((now - this.targetsRefilled) * perSecond) / 1000,
    );
    this.targetsRefilled = now;
    if (this.targetsCredit < 1) return false;
    this.targetsCredit--;
    return true;
  }

  private async writeTargets(key: ResourceKey, attempt: number): Promise<void> {
    const rs = this.store.get('DNSRecordSet', key) as DNSRecordSet | undefined;
    if (!rs || rs.metadata.deletionTimestamp) return;
    // Look again shortly (idempotent: writes only a difference): a write that failed leaves a retry.
    if (attempt < 3)
      setTimeout(
        () => void this.targetsChanged(key, attempt + 1).catch(() => {}),
        1000 * (attempt + 1),
      ).unref();
    let base: DNSRecordSetStatus | undefined;
    const written = await this.store.updateStatusWith('DNSRecordSet', key, (current) => {
      // No status yet: the zone's first write of it carries the targets as they are then.
      if (current === undefined) return undefined;
      const status = current as DNSRecordSetStatus;
      const targets = this.targetsOf?.(key);
      const { targets: _old, ...rest } = status;
      base = status;
      return targets && targets.length > 0 ? { ...rest, targets } : rest;
    });
    if (written === undefined || base === undefined) return;
    // The memo names the status of the zone's last write to this record set and the inputs it was
    // built from (the targets are not among them). Read after the write (a zone write in flight when
    // this one was asked for has remembered its status by now): when this write went on top of that
    // status, what it wrote stands for the same inputs. On top of anything else (another writer's
    // status), the memo stays as it is, no longer the object's status, and the zone's next visit
    // builds the status again.
    const memo = this.memo(key);
    if (memo && (memo.status === base || jsonEqual(memo.status, base)))
      this.remember(key, memo.signature, written as DNSRecordSetStatus);
  }

  /** A record set is gone: forget what was written for it. */
  forgetRecord(key: ResourceKey): void {
    this.targetsWritten.delete(key);
    const slot = this.table.slotOf(key);
    if (slot < 0) return;
    this.table.release(slot, Holder.status);
  }

  async zone(zone: DNSZone, fields: ZoneStatusFields, conditions: ConditionInput[]): Promise<void> {
    const status: DNSZoneStatus = {
      observedGeneration: zone.metadata.generation,
      ...fields,
      conditions: setConditions(zone.status?.conditions, conditions, this.now()),
    };
    if (!jsonEqual(status, zone.status))
      await this.store.updateStatus('DNSZone', resourceKey(zone.metadata), status);
  }

  async zoneClass(zoneClass: DNSZoneClass, zones: number, conditions: ConditionInput[]): Promise<void> {
    const status: DNSZoneClassStatus = {
      observedGeneration: zoneClass.metadata.generation,
      zones,
      conditions: setConditions(zoneClass.status?.conditions, conditions, this.now()),
    };
    if (!jsonEqual(status, zoneClass.status))
      await this.store.updateStatus('DNSZoneClass', resourceKey(zoneClass.metadata), status);
  }

  /** A record set that belongs to no zone (or is refused by it), with why. */
  async unresolvedRecord(
    rs: DNSRecordSet,
    where: { fqdn?: string | undefined; zone?: ResourceKey | undefined },
    reason: string,
    message: string,
  ): Promise<void> {
    await this.record(
      rs,
      {
        ...(where.fqdn !== undefined ? { fqdn: where.fqdn } : {}),
        ...(where.zone !== undefined ? { zone: refOf(where.zone) } : {}),
      },
      refusedConditions(reason, message, rs.metadata.generation),
    );
  }

  /**
   * The statuses of the listed record sets of a zone, from their verdicts in the zone and how the
   * backend serves them. The first failed write fails the whole once every write in flight settled.
   */
  async zoneRecords(
    zoneKey: ResourceKey,
    verdicts: ReadonlyMap<ResourceKey, RecordVerdict>,
    keys: Iterable<ResourceKey>,
    served: RecordsServed,
  ): Promise<void> {
    const { backend, programmed, programmedMessage, problems } = served;
    const zoneRef = refOf(zoneKey);
    const now = this.now().toISOString();
    const publishedIn = `published in zone ${zoneKey}`;
    const servedBy = programmed ? `served by ${backend}` : programmedMessage;
    // One Ready message for the zone's record sets (the fqdn is in the status beside it): with it,
    // their conditions are the zone's few distinct values, shared, not three objects and a message
    // per record set (docs/benchmarks.md, memory budget).
    const servedIn = ['served in zone', zoneKey].join(' ');
    // The signature of every record set of the zone served without a problem: one string for all.
    const servedSignature = [zoneKey, servedBy].join(SEP);
    // The condition list of the record sets served without a problem, per generation: built and
    // shared once for those whose status shows the same list before (every one of them on a first
    // start, where none has a status; most of them after, where they share one list).
    const usual = new Map<number | undefined, { before: Condition[] | undefined; list: Condition[] }>();
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
      // The generation and fqdn are compared with the status last written (which shows them); the rest
      // is the signature, shared by the zone's record sets served without a problem. Joined from an
      // array, a signature is one flat string: built with `+` (or a template), V8 keeps a tree of
      // concatenation nodes for as long as the memo holds it (docs/benchmarks.md, memory budget).
      const signature = !verdict.accepted
        ? [zoneKey, verdict.reason, verdict.message].join(SEP)
        : problem
          ? [zoneKey, servedBy, problem.reason, problem.message].join(SEP)
          : servedSignature;
      if (this.unchanged(recordKey, rs, signature, verdict.fqdn)) continue;
      const before = rs.status?.conditions;
      const held = signature === servedSignature ? usual.get(generation) : undefined;
      let shared: Condition[];
      if (held !== undefined && held.before === before) shared = held.list;
      else {
        const conditions: ConditionInput[] = problem
          ? recordProblemConditions(problem, backend, publishedIn, generation)
          : verdict.accepted
            ? recordServedConditions(
                programmed,
                {
                  published: publishedIn,
                  programmed: servedBy,
                  ready: servedIn,
                  pending: programmedMessage,
                },
                generation,
              )
            : refusedConditions(verdict.reason, verdict.message, generation);
        shared = this.share(setConditions(before, conditions, now));
        if (signature === servedSignature) usual.set(generation, { before, list: shared });
      }
      // One write at a time (the default): awaited in turn, without the bookkeeping of writes in
      // flight (three promises per record set, a million on a first start); a failure throws at once,
      // nothing else being in flight.
      if (this.writeConcurrency === 1) {
        await this.write(recordKey, rs, verdict.fqdn, zoneRef, shared, signature);
        continue;
      }
      const write: Promise<void> = this.write(recordKey, rs, verdict.fqdn, zoneRef, shared, signature).then(
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

  private async record(
    rs: DNSRecordSet,
    fields: Omit<DNSRecordSetStatus, 'conditions' | 'observedGeneration'>,
    conditions: ConditionInput[],
    now: string = this.now().toISOString(),
    signature: string = JSON.stringify([rs.metadata.generation, fields, conditions]),
  ): Promise<void> {
    // A zone reconcile visits every record set of the zone; most are unchanged. When the status we
    // last wrote is still the object's status and the inputs are the same, skip the comparison.
    const key = resourceKey(rs.metadata);
    if (this.unchanged(key, rs, signature, fields.fqdn)) return;
    await this.write(
      key,
      rs,
      fields.fqdn,
      fields.zone,
      this.share(setConditions(rs.status?.conditions, conditions, now)),
      signature,
    );
  }

  /**
   * Writes the record set's status from its fields and its (shared) conditions, unless it already
   * says that, and remembers it with the signature of its inputs.
   */
  private async write(
    key: ResourceKey,
    rs: DNSRecordSet,
    fqdn: string | undefined,
    zone: DNSRecordSetStatus['zone'],
    shared: Condition[],
    signature: string,
  ): Promise<void> {
    const targets = this.targetsOf?.(key);
    const status: DNSRecordSetStatus =
      fqdn !== undefined && zone !== undefined && !(targets && targets.length > 0)
        ? // The usual status as one literal: its fields in the object, where a spread puts those past
          // the first into a separate property array (about 34 bytes per record set).
          { observedGeneration: rs.metadata.generation, fqdn, zone, conditions: shared }
        : {
            observedGeneration: rs.metadata.generation,
            ...(fqdn !== undefined ? { fqdn } : {}),
            ...(zone !== undefined ? { zone } : {}),
            ...(targets && targets.length > 0 ? { targets } : {}),
            conditions: shared,
          };
    if (jsonEqual(status, rs.status)) {
      this.remember(key, signature, rs.status);
      return;
    }
    // The record set's finalizer with its status where the store writes both as one version (the
    // memory store: one object and one event per record set on a first start, not two); elsewhere
    // the record set's reconcile adds it.
    await this.store.updateStatus('DNSRecordSet', key, status, FINALIZER);
    this.remember(key, signature, status);
  }

  /**
   * Whether the status last written for the record set is still its status and was built from the
   * same inputs: the same signature, generation and fqdn.
   */
  private unchanged(
    key: ResourceKey,
    rs: DNSRecordSet,
    signature: string,
    fqdn: string | undefined,
  ): boolean {
    const slot = this.table.slotOf(key);
    return (
      slot >= 0 &&
      this.memoSignatures.get(slot) === signature &&
      this.memoStatuses.get(slot) === rs.status &&
      rs.status !== undefined &&
      rs.status.observedGeneration === rs.metadata.generation &&
      rs.status.fqdn === fqdn
    );
  }

  /**
   * The conditions, each replaced by an equal one already held when there is one, and the list
   * itself replaced by an equal list already held (a zone's record sets mostly carry the same
   * three). Shared lists are never changed in place: `setConditions` makes a new one.
   */
  private share(conditions: Condition[]): Condition[] {
    // A zone's record sets mostly get the list the one before got: compared field by field, without
    // the id strings below (three joins of every field per record set, the largest item of a first
    // start's status writes in profiles: docs/benchmarks.md, ninth round).
    const last = this.lastShared;
    if (last !== undefined && sameConditions(last, conditions)) return last;
    const shared = this.shareById(conditions);
    this.lastShared = shared;
    return shared;
  }

  private shareById(conditions: Condition[]): Condition[] {
    const ids: string[] = [];
    for (let i = 0; i < conditions.length; i++) {
      const c = conditions[i]!;
      const id = [
        c.type,
        c.status,
        c.reason,
        c.message,
        c.observedGeneration ?? '',
        c.lastTransitionTime,
      ].join(SEP);
      ids.push(id);
      const held = this.sharedConditions.get(id);
      if (held !== undefined && jsonEqual(held, c)) conditions[i] = held;
      else {
        if (this.sharedConditions.size >= CONDITIONS_KEPT) this.sharedConditions = new Map();
        this.sharedConditions.set(id, c);
      }
    }
    const listId = ids.join(LIST_SEP);
    const list = this.sharedLists.get(listId);
    if (list !== undefined && list.length === conditions.length && list.every((c, i) => c === conditions[i]))
      return list;
    if (this.sharedLists.size >= CONDITIONS_KEPT) this.sharedLists = new Map();
    this.sharedLists.set(listId, conditions);
    return conditions;
  }
}

/** The fields of a condition (`Condition`), all a condition built by conditions.ts has. */
const CONDITION_FIELDS = ['type', 'status', 'reason', 'message', 'observedGeneration', 'lastTransitionTime'];

/**
 * Whether two condition lists are equal (`jsonEqual`), for lists whose conditions hold no other
 * fields than a `Condition`'s; a condition with any other field is never found equal here.
 */
function sameConditions(a: readonly Condition[], b: readonly Condition[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (
      x.type !== y.type ||
      x.status !== y.status ||
      x.reason !== y.reason ||
      x.message !== y.message ||
      x.observedGeneration !== y.observedGeneration ||
      x.lastTransitionTime !== y.lastTransitionTime ||
      !onlyConditionFields(x) ||
      !onlyConditionFields(y)
    )
      return false;
  }
  return true;
}

function onlyConditionFields(c: Condition): boolean {
  for (const key in c) if (!CONDITION_FIELDS.includes(key)) return false;
  return true;
}

const SEP = '\u0001';
const LIST_SEP = '\u0002';
/** Distinct conditions `StatusWriter` keeps for sharing. */
const CONDITIONS_KEPT = 4096;
