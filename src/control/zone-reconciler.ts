import {
  CONFIRM_CHANGE_ANNOTATION,
  ConditionType,
  type DNSZone,
  type DNSZoneClass,
  type DnssecStatus,
  disablingDnssec,
  type EffectiveDnssec,
  effectiveChangeSafety,
  effectiveDnssec,
  PARENT_DS_ANNOTATION,
  Reason,
  signingId,
  stillDisabling,
  withParentDs,
} from '../api/index.ts';
import {
  type ApplyResult,
  type Backend,
  BackendError,
  DEFAULT_APPLY_CONCURRENCY,
  type ReadBack,
  readBack,
} from '../backends/backend.ts';
import type { Name } from '../dns/name.ts';
import { RRType } from '../dns/rrtype.ts';
import { Limiter } from '../util/limiter.ts';
import { type Catalog, type ZoneVerdict, zoneOrigin } from '../zones/catalog.ts';
import type { ZoneChanges } from '../zones/catalog-feed.ts';
import { annotationHint, decideHold } from '../zones/change-safety.ts';
import { DEFAULT_WINDOW_POLICY, needsResign } from '../zones/dnssec-window.ts';
import type { ResourceKey } from '../zones/resource-key.ts';
import { statusSerial } from '../zones/serial-policy.ts';
import { type ResolvedTransfers, withUpdatePolicy } from '../zones/transfers.ts';
import { zoneNameServers } from '../zones/zone-name-servers.ts';
import {
  acceptedCondition,
  type ConditionInput,
  changeHeld,
  findCondition,
  zoneFailedConditions,
} from './conditions.ts';
import type { ProgrammedZones } from './programmed-zones.ts';
import { FINALIZER, type ResourceStore } from './resource-store.ts';
import { errorText, type SerialAssigner } from './serial-assigner.ts';
import type { StatusWriter, ZoneStatusFields } from './status-writer.ts';
import type { TransferSettings } from './transfer-settings.ts';
import type { ReconcileResult } from './work-queue.ts';
import {
  keptSerial,
  nextVisit,
  planApply,
  recordStatusesToWrite,
  refusedZoneStatus,
  servedZoneConditions,
  sortProblems,
  withZoneNotes,
  zoneAccepted,
  zoneDescription,
} from './zone-decisions.ts';
import {
  type AssignedSerial,
  type ServedBefore,
  type TakenChange,
  takeChange,
  type ZoneModelState,
  ZoneModels,
} from './zone-state.ts';

/** Why a zone's latest change is not (fully) served or saved: set when a reconcile fails, cleared on success. */
export interface ZoneFailure {
  key: ResourceKey;
  /** `SerialNotSaved`, `BackendUnreachable` or `BackendRejected` (or `Pending` while the backend catches up). */
  reason: string;
  message: string;
}

export interface ZoneReconcilerOptions {
  store: ResourceStore;
  catalog: Catalog;
  changes: ZoneChanges;
  backendFor: (zoneClass: DNSZoneClass) => Backend;
  serials: SerialAssigner;
  transfers: TransferSettings;
  programmed: ProgrammedZones;
  status: StatusWriter;
  /** Enqueues a record set's reconcile (its finalizer may be released). */
  recheckRecord: (key: ResourceKey) => void;
  hashDelayMs: number;
  /** Change safety: how long content must stay unchanged to become the baseline (ADR 0018). */
  changeSafetyWindowMs: number;
  now: () => Date;
  /** Confirmations of held changes from outside the cluster objects (folder mode: confirmation files). */
  confirmations?: (key: ResourceKey) => readonly string[];
  /** How a held change of the zone is confirmed where no annotation can be set (folder mode). */
  confirmHint?: (key: ResourceKey, hash: string) => string;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /**
   * Why an accepted zone may not be served yet (its class requires a verified Domain and none covers
   * it), or undefined when it may: such a zone is Accepted, not programmed anywhere, and says why.
   */
  domainGate?: (zone: DNSZone, zoneClass: DNSZoneClass) => string | undefined;
}

/** A zone whose latest change is held for confirmation (change safety). */
export interface ZoneHold {
  key: ResourceKey;
  hash: string;
  message: string;
}

/** Everything a served zone's reconcile read, for its decisions and commits. */
interface ServedRead {
  key: ResourceKey;
  zone: DNSZone;
  verdict: Extract<ZoneVerdict, { accepted: true }>;
  backend: Backend;
  state: ZoneModelState;
  taken: TakenChange;
  transfers?: ResolvedTransfers;
  /** The zone's DNSSEC settings when it is signed and its backend signs zones. */
  dnssec?: EffectiveDnssec;
  accepted: ConditionInput;
  described: ZoneStatusFields;
}

/**
 * Reconciles one DNSZone: read (the zone, its verdict, the change since the last reconcile taken into
 * its model, the transfer settings) → decide (`zone-decisions.ts`: status, what to send, how to read the
 * backend's answer) → commit, step by step: 1. a serial for the content, durable before anything serves
 * it (ADR 0005); 2. the backend, from the serial it holds to this one; 3. the content hash of the
 * serial, off the path from change to answer; 4. the statuses. A failed step leaves the change pending
 * on the model, the zone Ready=False with the step's reason and the zone in the queue (ADR 0014).
 */
export class ZoneReconciler {
  readonly models = new ZoneModels();
  /** Zones whose last reconcile failed, with why; retried with backoff until it succeeds. */
  readonly failing = new Map<ResourceKey, ZoneFailure>();
  /** Zones whose latest change is held for confirmation (change safety), with the change's hash. */
  readonly held = new Map<ResourceKey, ZoneHold>();
  /**
   * Holds decided outside the zone's content: a manifests folder that lost most of its objects at
   * once keeps them (and so the zones) until each affected zone's part is confirmed.
   */
  readonly externalHolds = new Map<ResourceKey, ZoneHold>();
  /**
   * Zones taken off their backend while refused or while their Domain is not verified: the model's
   * change safety (baseline, held change) goes on when the zone is served again (ADR 0018).
   */
  private readonly parked = new Map<ResourceKey, ZoneModelState>();
  /** Zones this process has built a model for: only the first is measured against what was served before. */
  private readonly built = new Set<ResourceKey>();
  private readonly o: ZoneReconcilerOptions;
  /** Each backend's turn for applies (`Backend.applyConcurrency`). */
  private readonly applyLimits = new WeakMap<Backend, Limiter>();

  constructor(options: ZoneReconcilerOptions) {
    this.o = options;
  }

  async reconcile(key: ResourceKey): Promise<ReconcileResult> {
    const { store, catalog } = this.o;
    const zone = store.get('DNSZone', key) as DNSZone | undefined;
    if (!zone || zone.metadata.deletionTimestamp) {
      if (zone) await this.removeLeftBehind(key, zone);
      await this.unprogram(key);
      this.parked.delete(key);
      // Gone: a record set that names it is not held for it any more (see ProgrammedZones).
      if (!zone) {
        this.o.programmed.forgetZone(key);
        this.built.delete(key);
      }
      if (zone && (zone.metadata.finalizers ?? []).includes(FINALIZER))
        await store.removeFinalizer('DNSZone', key, FINALIZER);
      return;
    }
    await store.addFinalizer('DNSZone', key, FINALIZER);
    const verdict = catalog.zoneVerdict(key);
    if (!verdict?.accepted) {
      await this.removeLeftBehind(key, zone);
      // Its change safety goes on if it is accepted again, as for the Domain gate below.
      this.park(key);
      await this.unprogram(key);
      const refused = refusedZoneStatus(zone, verdict);
      await this.o.status.zone(zone, refused.fields, refused.conditions);
      return;
    }
    const gate = this.o.domainGate?.(zone, verdict.zoneClass);
    if (gate !== undefined) {
      // Squatting prevention: nothing of the zone is served, and it keeps its serial for later.
      await this.removeLeftBehind(key, zone);
      this.park(key);
      await this.unprogram(key);
      const generation = zone.metadata.generation;
      await this.o.status.zone(
        zone,
        // The name servers to delegate to are shown: delegating to them is one way to verify the Domain.
        { ...keptSerial(zone), nameservers: zoneNameServers(zone, verdict.zoneClass) },
        zoneFailedConditions(
          acceptedCondition(`accepted; ${verdict.origin} is served once its Domain is verified`, generation),
          { reason: Reason.DomainNotVerified, message: gate },
          undefined,
          generation,
        ),
      );
      return;
    }
    const read = await this.readServed(key, zone, verdict);
    return this.commitServed(read);
  }

  /** Reads a served zone: its backend, the change taken into its model, the transfer settings. */
  private async readServed(
    key: ResourceKey,
    zone: DNSZone,
    verdict: Extract<ZoneVerdict, { accepted: true }>,
  ): Promise<ServedRead> {
    const backend = this.o.backendFor(verdict.zoneClass);
    // The zone moved to a class with another backend: clean the old one first (its change safety
    // goes on in the model built for the new one).
    let prior = this.parked.get(key);
    this.parked.delete(key);
    // Its domain changed in place (a kubizone Zone's domainName, which its API lets change): the old
    // origin is taken off its backend first, as for a deleted zone, and nothing of its model is
    // carried over. Before, the old origin stayed served beside the new one until a restart.
    if (this.o.programmed.originChanged(key, verdict.origin)) {
      await this.unprogram(key);
      prior = undefined;
    }
    if (this.o.programmed.movedAway(key, backend)) {
      prior = this.models.get(key) ?? prior;
      await this.unprogram(key);
    }
    const now = this.o.now().getTime();
    // Content served unchanged for the window becomes the baseline changes are measured against;
    // never while a change is held or not yet served. Taken from the model as it is, before a rebuild
    // carries its baseline on: a rebuild is measured from the content served before it.
    const current = this.models.get(key) ?? prior;
    if (
      current?.baseline !== undefined &&
      current.held === undefined &&
      !current.full &&
      current.pending.size === 0 &&
      now - current.lastChangeAt >= this.o.changeSafetyWindowMs
    )
      current.baseline.reset(current.model.rrsetCount);
    const state = this.models.modelFor(key, zone, verdict.zoneClass, verdict.origin, prior);
    // The first model of the zone in this process (a restart, a new leader): what was served before
    // it started is the baseline, if known and if the backend still serves it (a held change must
    // not leave the zone unserved: `zonekeeper serve`'s own server holds nothing after a restart).
    let servedBefore: ServedBefore | undefined;
    if (!this.built.has(key)) {
      this.built.add(key);
      const rrsets =
        state.fresh && state.rebuiltFrom === undefined && backend.keepsServing === true
          ? this.o.serials.servedRRsets(verdict.origin, zone.status)
          : undefined;
      // A change held when the process before stopped stays held unless it was undone meanwhile.
      const heldHash = changeHeld(zone.status?.conditions) ? zone.status?.hash : undefined;
      if (rrsets !== undefined) servedBefore = { rrsets, ...(heldHash ? { heldHash } : {}) };
    }
    const taken = takeChange(state, this.o.catalog, key, this.o.changes.take(key), now, servedBefore);
    const classTransfers = await this.o.transfers.of(verdict.zoneClass);
    // The zone's RFC 2136 update policy rides with the class's keys to the server that answers UPDATE.
    const update = withUpdatePolicy(classTransfers.resolved, zone);
    const transfers = { ...classTransfers, ...(update.resolved ? { resolved: update.resolved } : {}) };
    const modelWarnings =
      taken.fresh || taken.verdictsChanged ? state.model.warnings() : (state.warnings ?? []);
    state.warnings = modelWarnings;
    const warnings = update.problems.length > 0 ? [...modelWarnings, ...update.problems] : modelWarnings;
    // DNSSEC: signed by a backend that signs; elsewhere served unsigned, and the zone says so.
    // Signing turned off on a zone the backend signs at the serial: it stays signed while it goes
    // insecure (RFC 8078 §4), until the backend reports the Unsigned phase (dnssec-disable.ts).
    // A zone whose status says nothing yet (a restart of `zonekeeper serve`) asks the backend.
    const dnssec =
      effectiveDnssec(verdict.zoneClass.spec.dnssec, zone.spec.dnssec) ??
      (backend.capabilities.dnssecAtSerial &&
      (zone.status?.dnssec !== undefined
        ? stillDisabling(zone.status.dnssec)
        : zone.status?.serial === undefined && (await backend.signingTurnedOff?.(verdict.origin)) === true)
        ? disablingDnssec(verdict.zoneClass.spec.dnssec, zone.spec.dnssec)
        : undefined);
    const signs = dnssec !== undefined && backend.capabilities.dnssec;
    const dnssecWarnings =
      dnssec !== undefined && !signs
        ? [`DNSSEC is enabled but backend ${backend.name} does not sign zones: served unsigned`]
        : [];
    const generation = zone.metadata.generation;
    return {
      key,
      zone,
      verdict,
      backend,
      state,
      taken,
      accepted: zoneAccepted(
        state.model.origin,
        [...warnings, ...dnssecWarnings],
        transfers.error,
        generation,
      ),
      // The DNSSEC status last reported stays until an apply reports it again (a failed or held
      // change does not erase the DS a parent may be waiting for).
      described: {
        ...zoneDescription(state.model, verdict.parent),
        ...(signs && zone.status?.dnssec ? { dnssec: zone.status.dnssec } : {}),
      },
      ...(transfers.resolved ? { transfers: transfers.resolved } : {}),
      ...(signs ? { dnssec: withParentDs(dnssec, zone.metadata.annotations?.[PARENT_DS_ANNOTATION]) } : {}),
    };
  }

  private async commitServed(read: ServedRead): Promise<ReconcileResult> {
    const { key, zone, backend, state, taken, described } = read;
    const { programmed, status } = this.o;
    const origin = state.model.origin;
    const generation = zone.metadata.generation;
    let accepted = read.accepted;

    // 0. Change safety: a change larger than the zone allows waits for its confirmation.
    const hold = this.holdOf(read);
    if (hold.held) return this.hold(read, hold);
    state.held = undefined;
    this.held.delete(key);

    // 1. A serial for the content, durable before anything serves it (ADR 0005).
    let assigned: AssignedSerial;
    try {
      assigned = await this.o.serials.assign(
        origin,
        zone.status,
        state,
        read.transfers,
        signsAtSerial(backend, read.dnssec, state),
      );
    } catch (e) {
      const servedSerial = programmed.get(key)?.serial;
      const message =
        `the serial of the latest change could not be saved: ${errorText(e)}; ` +
        `${servedSerial !== undefined ? `still serving serial ${servedSerial}` : 'not served yet'}, retrying`;
      await this.failed(read, described, accepted, { reason: 'SerialNotSaved', message }, undefined, {
        records: state.statusesPending === 'all' ? state.model.verdicts.keys() : state.statusesPending,
      });
      throw e;
    }
    const serial = assigned.serial;
    // The signing time goes with the serial: `zonekeeper server` replicas sign at it (ADR 0021).
    const serialFields = () => ({
      ...statusSerial(serial, assigned.hash, zone.status),
      rrsetCount: state.model.rrsetCount,
      ...(assigned.signing !== undefined && assigned.signedAt !== undefined
        ? { signedAt: assigned.signedAt, signing: assigned.signing }
        : {}),
    });

    // 2. The backend, from the serial it holds to this one: the pending changes, or the whole zone.
    const held = programmed.get(key);
    let back: ReadBack;
    let applied: ApplyResult | undefined;
    try {
      ({ applied, back } = await this.applyLimit(backend).run(async () => {
        const applied =
          (await backend.applyZone({
            key,
            origin,
            soa: state.model.soa,
            serial,
            rrsets: () => state.model.rrsets(),
            byName: state.model,
            ...(read.transfers ? { transfers: read.transfers } : {}),
            ...(zone.spec.ignore && zone.spec.ignore.length > 0 ? { ignore: zone.spec.ignore } : {}),
            ...(read.dnssec ? { dnssec: read.dnssec } : {}),
            ...(read.dnssec && assigned.signedAt !== undefined ? { signedAt: assigned.signedAt } : {}),
            ...planApply(state, held),
          })) ?? undefined;
        // What Programmed means is the backend's (its capabilities): the serial or the content read back.
        const back = await readBack(backend, {
          origin,
          serial,
          soa: state.model.soa,
          rrsets: () => state.model.rrsets(),
          ...(zone.spec.ignore && zone.spec.ignore.length > 0 ? { ignore: zone.spec.ignore } : {}),
        });
        return { applied, back };
      }));
    } catch (e) {
      // What the backend holds is unknown now: the next attempt sends the whole zone.
      programmed.set(key, { origin, serial: held?.serial ?? serial, needsFull: true, backend });
      const reason = e instanceof BackendError ? e.reason : 'BackendUnreachable';
      await this.failed(
        read,
        { ...described, ...serialFields() },
        accepted,
        { reason, message: `backend ${backend.name}: ${errorText(e)}` },
        undefined,
        { records: state.model.verdicts.keys() },
      );
      state.programmedOk = false;
      throw e;
    }
    // Keys other than those recorded with this serial (a key Secret made again): this serial was
    // signed with the old ones elsewhere, so the new keys get a serial of their own (ADR 0021).
    if (backend.capabilities.dnssecAtSerial && keysChangedAt(zone, serial, applied)) {
      state.assigned = undefined;
      state.firstSerial = false;
      programmed.set(key, { origin, serial, needsFull: true, backend });
      return { requeueAfterMs: 0 };
    }
    const ok = back.programmed;
    state.keyEventAt = applied?.keyEventAt;
    programmed.set(key, { origin, serial, needsFull: !ok, backend });
    if (ok) {
      state.pending.clear();
      state.full = false;
      // A confirmed change, once served, is the new baseline; so is the first content served after a
      // restart that was measured by count (later changes are measured RRset by RRset).
      if (hold.confirmed || state.baseline?.byCount) state.baseline?.reset(state.model.rrsetCount);
    }
    // RRsets the backend left out: on their record sets; those of no record set as warnings of the zone.
    const problems = sortProblems(applied?.problems ?? [], state.problems);
    accepted = withZoneNotes(accepted, problems.zoneNotes);
    state.problems = problems.byRecord;
    // Record sets the zone stopped serving: their finalizers may go once the zone's status carries a
    // serial without them (replicas serve what the status says), or at once if this visit fails.
    let released: ResourceKey[] = [];
    if (ok) {
      // Which zone serves each record set, once the backend serves it (a deleted record set's
      // finalizer is released only after that).
      released =
        state.verdictsPending === 'all'
          ? programmed.servedAll(key, state.model, state.memberSlots)
          : programmed.served(key, state.model.verdicts, state.verdictsPending);
      state.memberSlots = undefined;
      state.verdictsPending = new Set();
    }
    try {
      // 3. The content hash of the serial, off the path from change to answer: in a later reconcile.
      if (ok && assigned.hash === undefined && !taken.changed) {
        const hash = state.model.contentHash();
        try {
          await this.o.serials.saveHash(origin, serial, hash);
        } catch (e) {
          await this.failed(
            read,
            { ...described, ...serialFields() },
            accepted,
            {
              reason: 'SerialNotSaved',
              message:
                `serving serial ${serial}, but its content hash could not be saved: ${errorText(e)}; ` +
                'a restart now would raise the serial; retrying',
            },
            { message: `${backend.name} serves serial ${serial}` },
            { records: [] },
          );
          throw e;
        }
        assigned.hash = hash;
      }

      // 4. The statuses: the zone's, then its record sets' (only those that may have changed).
      await status.zone(
        zone,
        { ...serialFields(), ...described, ...(applied?.dnssec ? { dnssec: applied.dnssec } : {}) },
        servedZoneConditions(accepted, back, origin, serial, generation),
      );
    } finally {
      for (const recordKey of released) this.o.recheckRecord(recordKey);
    }
    // Served, and published under this serial: record sets deleted before this process programmed the
    // zone, held until now, may be released.
    if (ok) for (const released of programmed.settled(key)) this.o.recheckRecord(released);
    // A zone served for the first time (every zone, on a first start) with many record sets: the
    // status written just now is what serves it; its record sets' statuses, one write each, follow on
    // a visit queued behind the zones still waiting, so that no zone waits for the record-set writes
    // of the zones before it. Their statuses are not written yet: none of them says Ready before it is.
    // A small zone writes them now (a new zone's first answer came about 2 s later with the extra
    // visit, in test/kubernetes.e2e.test.ts; not explained yet).
    if (
      ok &&
      zone.status?.serial === undefined &&
      state.statusesPending === 'all' &&
      state.model.verdicts.size > DEFER_RECORD_STATUSES_OVER
    ) {
      state.programmedOk = ok;
      this.failing.delete(key);
      return { requeueAfterMs: 0 };
    }
    const records = recordStatusesToWrite(state, ok, problems.changed);
    state.programmedOk = ok;
    try {
      await status.zoneRecords(key, state.model.verdicts, records, {
        backend: backend.name,
        programmed: ok,
        programmedMessage: back.message,
        problems: problems.byRecord,
      });
    } catch (e) {
      // Some record statuses were not written: the retry visits all of them (unchanged ones are skipped).
      state.programmedOk = undefined;
      throw e;
    }
    if (ok) {
      state.statusesPending = new Set();
      this.failing.delete(key);
    } else {
      this.failing.set(key, { key, reason: 'Pending', message: back.message });
    }
    // A backend others can edit is re-applied periodically (drift repair); the hash comes first.
    return nextVisit({
      programmed: ok,
      hashSaved: assigned.hash !== undefined,
      // A zone signed at its serial is looked at again for signatures due for refresh (ADR 0021),
      // and when its key rollover's next step or key event is due.
      resyncMs:
        read.dnssec && backend.capabilities.dnssecAtSerial
          ? Math.min(
              backend.resyncIntervalMs ?? RESIGN_CHECK_MS,
              RESIGN_CHECK_MS,
              ...[applied?.revisitAt, applied?.keyEventAt]
                .filter((at) => at !== undefined)
                // Steps and key events are whole seconds: never sooner than a second from now.
                .map((at) => Math.max(1000, at * 1000 - this.o.now().getTime() + 50)),
            )
          : backend.resyncIntervalMs,
      hashDelayMs: this.o.hashDelayMs,
    });
  }

  /** Whether the zone's pending change is held: by the folder it came from, or by its size. */
  private holdOf(read: ServedRead): { held: false; confirmed: boolean } | ({ held: true } & ZoneHold) {
    const { key, zone, state, verdict } = read;
    const external = this.externalHolds.get(key);
    if (external) return { held: true, ...external };
    const baseline = state.baseline;
    // Only a change not served yet can be held: one pending, or a rebuilt model not sent yet.
    if ((state.pending.size === 0 && !state.full) || baseline === undefined || !baseline.changedSinceBaseline)
      return { held: false, confirmed: false };
    const settings = effectiveChangeSafety(verdict.zoneClass.spec.changeSafety, zone.spec.changeSafety);
    if (!settings.enabled) return { held: false, confirmed: false };
    const change = baseline.measure(
      state.model.origin,
      (owner, type) => state.model.published(owner, type),
      state.model.defaultTtl,
      {
        count: state.model.rrsetCount,
        rrsets: () => state.model.rrsets(),
        hash: () => state.model.contentHash(),
      },
    );
    const annotation = zone.metadata.annotations?.[CONFIRM_CHANGE_ANNOTATION]?.trim();
    const confirmations = [...(annotation ? [annotation] : []), ...(this.o.confirmations?.(key) ?? [])];
    const how = this.o.confirmHint?.(key, change.hash) ?? annotationHint(change.hash);
    const decision = decideHold(settings, change, confirmations, how);
    if (!decision.held) {
      if (decision.confirmed)
        this.o.log?.('info', `zone ${key}: change ${change.hash} confirmed, applying it`, {
          ...change.counts,
        });
      return decision;
    }
    return { held: true, key, hash: decision.hash, message: decision.message };
  }

  /**
   * Holds the zone's change: nothing is sent to the backend and no serial is chosen, so the zone keeps
   * serving its previous content and serial; the change stays pending on the model, whole, until it is
   * confirmed or undone. Programmed and Ready are False with reason ChangeHeld, and so are the zone's
   * record sets' (nothing reports Ready while a change is held).
   */
  private async hold(read: ServedRead, hold: ZoneHold): Promise<ReconcileResult> {
    const { key, zone, state, backend, described, accepted } = read;
    if (state.held?.hash !== hold.hash) this.o.log?.('warn', `zone ${key}: ${hold.message}`);
    state.held = { hash: hold.hash, message: hold.message };
    this.held.set(key, { key, hash: hold.hash, message: hold.message });
    this.failing.delete(key);
    await this.o.status.zone(
      zone,
      { ...keptSerial(zone), ...described },
      zoneFailedConditions(
        accepted,
        { reason: 'ChangeHeld', message: hold.message },
        undefined,
        zone.metadata.generation,
      ),
    );
    state.programmedOk = false;
    await this.o.status.zoneRecords(key, state.model.verdicts, state.model.verdicts.keys(), {
      backend: backend.name,
      programmed: false,
      programmedMessage: `the zone's change ${hold.hash} is held for confirmation`,
    });
    return undefined;
  }

  /**
   * Reports a failed step: the zone (Programmed as given, Ready=False with the reason), the listed
   * record sets as not programmed, and the zone in `failing` until a reconcile succeeds.
   */
  private async failed(
    read: ServedRead,
    fields: ZoneStatusFields,
    accepted: ConditionInput,
    failure: { reason: string; message: string },
    served: { message: string } | undefined,
    what: { records: Iterable<ResourceKey> },
  ): Promise<void> {
    const { key, zone, state, backend } = read;
    this.failing.set(key, { key, ...failure });
    // Without a newly saved serial the status keeps the serial (and hash) it had.
    await this.o.status.zone(
      zone,
      { ...keptSerial(zone), ...fields },
      zoneFailedConditions(accepted, failure, served, zone.metadata.generation),
    );
    if (!served)
      await this.o.status.zoneRecords(key, state.model.verdicts, what.records, {
        backend: backend.name,
        programmed: false,
        programmedMessage: failure.message,
      });
  }

  /** The zone is not served any more: forget its model and remove it from its backend. */
  /**
   * A zone that is not to be served (deleted, refused, or waiting for its Domain) and that this process
   * never programmed, whose last status says an earlier process did: accepted, and its Programmed
   * condition written for an apply (served, pending or failed), not for the Domain gate. A backend that
   * keeps its data (PowerDNS, an RFC 2136 server, a webhook provider) still serves that content, so the
   * zone's class's backend is asked to delete the origin, as `unprogram` does for a zone programmed here
   * (a deleted zone's finalizer holds until it did; a failure is retried) — unless another zone serves
   * the origin now. A zone never served (refused or gated in every status written) is not looked for:
   * deleting it must not touch what the backend holds under its name (another installation's zone).
   */
  private async removeLeftBehind(key: ResourceKey, zone: DNSZone): Promise<void> {
    if (this.o.programmed.get(key) !== undefined || !servedByAnEarlierProcess(zone)) return;
    const zoneClass = this.o.store.get('DNSZoneClass', zone.spec.className) as DNSZoneClass | undefined;
    if (!zoneClass) {
      this.o.log?.(
        'warn',
        'zone served before, its class gone: its backend is unknown, nothing removed there',
        {
          zone: key,
          className: zone.spec.className,
        },
      );
      return;
    }
    let origin: Name;
    try {
      origin = zoneOrigin(zone);
    } catch {
      return; // a name no backend was ever given
    }
    const owner = this.o.catalog.zoneForDomain(origin);
    if (owner !== undefined && owner !== key) return;
    await this.o.backendFor(zoneClass).deleteZone(origin);
  }

  /**
   * The turn of `backend`'s applies: at most its `applyConcurrency` zones at once (the default when
   * it gives none, or a number below 1).
   */
  private applyLimit(backend: Backend): Limiter {
    let limiter = this.applyLimits.get(backend);
    if (!limiter) {
      const wanted = backend.applyConcurrency;
      limiter = new Limiter(wanted !== undefined && wanted >= 1 ? wanted : DEFAULT_APPLY_CONCURRENCY);
      this.applyLimits.set(backend, limiter);
    }
    return limiter;
  }

  /**
   * A zone taken off its backend (refused, or waiting for its Domain): its model's change safety
   * (baseline, held change) is kept until it is served again, when the model built then is measured
   * against it; a held change is never served by a refusal or a gate that comes and goes (ADR 0018).
   */
  private park(key: ResourceKey): void {
    const state = this.models.get(key);
    if (state?.baseline !== undefined || state?.rebuiltFrom !== undefined) this.parked.set(key, state);
  }

  async unprogram(key: ResourceKey): Promise<void> {
    const state = this.models.get(key);
    this.models.delete(key);
    this.o.changes.forget(key);
    this.failing.delete(key);
    this.held.delete(key);
    const requeue = await this.o.programmed.remove(key, state?.model.verdicts.keys() ?? []);
    for (const recordKey of requeue) this.o.recheckRecord(recordKey);
    // Removed (or never programmed) in this process: record sets deleted before it are not held for it.
    for (const recordKey of this.o.programmed.settled(key)) this.o.recheckRecord(recordKey);
  }
}

/**
 * Whether the zone's last status says it was put on its backend: Accepted=True, and a Programmed
 * condition written for an apply (True, Pending or a backend failure), not for the Domain gate.
 */
function servedByAnEarlierProcess(zone: DNSZone): boolean {
  const accepted = findCondition(zone.status?.conditions, ConditionType.Accepted);
  const programmed = findCondition(zone.status?.conditions, ConditionType.Programmed);
  return (
    accepted?.status === 'True' && programmed !== undefined && programmed.reason !== Reason.DomainNotVerified
  );
}

/** Whether the keys just applied differ from the ones the status recorded with this same serial. */
function keysChangedAt(zone: DNSZone, serial: number, applied: ApplyResult | undefined): boolean {
  const recorded = zone.status;
  if (recorded?.serial !== serial || recorded.signedAt === undefined) return false;
  const tags = (keys: readonly { keyTag: number }[] | undefined) =>
    keys ? [...keys.map((k) => k.keyTag)].sort((a, b) => a - b).join() : undefined;
  // The keys this serial uses: a key a rollover prepares for later (neither active nor published at
  // the signing time) changes nothing signed at this serial.
  const inEffect = (keys: DnssecStatus['keys']) => keys?.filter((k) => k.active || k.published !== false);
  const before = tags(inEffect(recorded.dnssec?.keys));
  const now = tags(inEffect(applied?.dnssec?.keys));
  return before !== undefined && now !== undefined && before !== now;
}

/** How often a zone signed at its serial is looked at for signatures due for refresh (ADR 0021). */
export const RESIGN_CHECK_MS = 3600_000;
/**
 * A zone served for the first time with more record sets than this writes their statuses on a later
 * visit, behind the other zones waiting (a first start on many record sets).
 */
export const DEFER_RECORD_STATUSES_OVER = 32;

/**
 * The signing settings of a zone its backend signs at the serial, and when its signatures are due:
 * at least every half refresh period, and after an hour once some RRset's epoch moved (ADR 0021).
 */
function signsAtSerial(
  backend: Backend,
  dnssec: EffectiveDnssec | undefined,
  state: ZoneModelState,
): { id: string; resignDue: (signedAt: number, now: number) => boolean } | undefined {
  if (!dnssec || !backend.capabilities.dnssecAtSerial) return undefined;
  const policy = DEFAULT_WINDOW_POLICY;
  return {
    id: signingId(dnssec),
    resignDue: (signedAt, now) => {
      // A key rollover step recorded for a time after the signing time, now reached (ADR 0021).
      const event = state.keyEventAt;
      if (event !== undefined && signedAt < event && event <= now) return true;
      const age = now - signedAt;
      if (age >= policy.refreshSeconds / 2) return true;
      if (age < RESIGN_CHECK_MS / 1000) return false;
      const origin = state.model.origin;
      const apex = [
        { owner: origin, type: RRType.SOA },
        { owner: origin, type: RRType.DNSKEY },
      ];
      const content = (function* () {
        yield* apex;
        for (const r of state.model.rrsets()) yield { owner: r.owner, type: RRType[r.type] };
      })();
      return needsResign(signedAt, now, content, policy);
    },
  };
}
