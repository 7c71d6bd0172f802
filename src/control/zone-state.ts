import type { DNSZone, DNSZoneClass } from '../api/index.ts';
import type { RRsetProblem } from '../backends/backend.ts';
import type { Name } from '../dns/name.ts';
import type { Catalog } from '../zones/catalog.ts';
import { ChangeBaseline, rebuildChanges } from '../zones/change-safety.ts';
import type { ResourceKey } from '../zones/resource-key.ts';
import { PendingDelta } from '../zones/rrset-delta.ts';
import { zoneChildren } from '../zones/zone-inputs.ts';
import { ZoneModel } from '../zones/zone-model.ts';

/** A serial chosen for one content of a zone's model; `saved` once the serial store made it durable. */
export interface AssignedSerial {
  serial: number;
  /** The content hash saved with the serial; undefined until it is computed (off the change path). */
  hash?: string;
  saved: boolean;
  /** A zone signed at its serial (ADR 0021): the signing time recorded with the serial (seconds). */
  signedAt?: number;
  /** The signing settings (`algorithm/denial/keys`) the serial is signed with. */
  signing?: string;
  /** RRsets of the content (the SOA not counted), saved with the serial for change safety. */
  rrsets?: number;
}

/** What the controller keeps per served zone: its incremental model and what is not confirmed yet. */
export interface ZoneModelState {
  model: ZoneModel;
  /** Built but not yet synced: the first update is a full one. */
  fresh: boolean;
  /** No serial chosen for this model yet: the first is compared with the stored hash, as after a restart. */
  firstSerial: boolean;
  /** The backend has not confirmed this model's whole content yet: the next apply sends the whole zone. */
  full: boolean;
  /**
   * RRset changes the backend has not confirmed yet, merged per owner and type (the last one wins):
   * the delta from the serial the backend holds to the model's content. Not sent while `full` is
   * set, and then it holds only what changed after the model's first build, which lists nothing.
   */
  pending: PendingDelta;
  /**
   * The serial of the model's current content. Cleared by every content change, so that a serial is
   * only ever saved, retried and served with the one content it was chosen for.
   */
  assigned?: AssignedSerial;
  /** Record sets whose verdict changed since the backend last confirmed the zone ('all' after a build). */
  verdictsPending: Set<ResourceKey> | 'all';
  /**
   * After a first build, until the backend first serves it: the record table's slot of each record
   * set the build was given, in the order it was given them, which is the order of the model's
   * verdicts. `ProgrammedZones.servedAll` takes each slot from here instead of looking its key up in the
   * table (a map of every record set); a slot whose key is not the one expected is looked up.
   */
  memberSlots?: number[];
  /** Record sets whose status may be stale ('all' after a build). */
  statusesPending: Set<ResourceKey> | 'all';
  programmedOk?: boolean;
  warnings?: string[];
  /** Record sets the backend left out at the last apply, with the reason and message reported. */
  problems?: ReadonlyMap<ResourceKey, RRsetProblem>;
  /**
   * Change safety: the content the zone's changes are measured against (taken with the model's first
   * content, then whenever the content stayed unchanged for the stability window; ADR 0018).
   */
  baseline?: ChangeBaseline;
  /**
   * When the model's content last changed as change safety counts it (ms since the epoch): the start
   * of the stability window (ADR 0018). A rebuild moves it only if it noted a change (`rebuildChanges`):
   * new SOA fields or a new default TTL alone do not restart the window.
   */
  lastChangeAt: number;
  /** The change held for confirmation, if any. */
  held?: { hash: string; message: string };
  /**
   * The state this model was rebuilt from (its zone's settings changed, or it moved to another
   * backend), until the rebuilt model's first content is taken: its baseline and held change go on in
   * the rebuilt model (ADR 0018), so a rebuild never serves a change that waits for its confirmation.
   */
  rebuiltFrom?: Pick<ZoneModelState, 'model' | 'baseline' | 'held' | 'lastChangeAt'>;
  /**
   * A zone signed at its serial: when its keys change state after the served serial's signing time
   * (a rollover step the backend recorded; seconds). From then on the zone needs a new serial.
   */
  keyEventAt?: number;
}

/** What one reconcile took into a zone's model. */
export interface TakenChange {
  /** The model was new: it took every record set. */
  fresh: boolean;
  /** The content changed (a new serial is needed). */
  changed: boolean;
  /** Some record set's verdict changed. */
  verdictsChanged: boolean;
}

/** Each served zone's model, rebuilt when the zone's configuration (SOA, TTL, nameservers) changed. */
export class ZoneModels {
  private readonly models = new Map<ResourceKey, ZoneModelState>();

  get(key: ResourceKey): ZoneModelState | undefined {
    return this.models.get(key);
  }

  entries(): IterableIterator<[ResourceKey, ZoneModelState]> {
    return this.models.entries();
  }

  delete(key: ResourceKey): void {
    this.models.delete(key);
  }

  /**
   * The zone's model, rebuilt when its configuration changed. A rebuilt model carries the change
   * safety of the one it replaces (`rebuiltFrom`); so does one built after `prior`, the state of a
   * model dropped just before (the zone moved to another backend).
   */
  modelFor(
    key: ResourceKey,
    zone: DNSZone,
    zoneClass: DNSZoneClass,
    origin: Name,
    prior?: ZoneModelState,
  ): ZoneModelState {
    const current = this.models.get(key);
    if (
      current !== undefined &&
      current.model.configSignature === ZoneModel.signature(zone, zoneClass, origin)
    )
      return current;
    const existing = current ?? prior;
    // Not yet taken into its own model: the state before it is the one to carry.
    const from = existing?.rebuiltFrom ?? existing;
    const state: ZoneModelState = {
      model: new ZoneModel(zone, zoneClass, origin),
      fresh: true,
      firstSerial: true,
      full: true,
      pending: new PendingDelta(),
      verdictsPending: 'all',
      statusesPending: 'all',
      lastChangeAt: 0,
      ...(from?.baseline !== undefined
        ? {
            rebuiltFrom: {
              model: from.model,
              baseline: from.baseline,
              held: from.held,
              lastChangeAt: from.lastChangeAt,
            },
          }
        : {}),
    };
    // Values of record sets that did not change are taken from the model replaced, not parsed again.
    if (existing !== undefined) state.model.parsedFrom(existing.model);
    this.models.set(key, state);
    return state;
  }
}

/**
 * Takes what changed in the catalog into the zone's model: every record set for a new model, else
 * exactly those noted as changed (`dirty`; none for a requeue, e.g. the delayed hash), so a reconcile
 * costs what changed, not the zone. The model holds the change from here on; what the backend and the
 * serial store have not confirmed stays pending on it until they have, so a failure leaves a retry.
 */
/**
 * What was served before this process started, for the first model it builds for a zone (ADR 0018):
 * a first content with fewer RRsets is measured against that count, not taken as the baseline; and
 * with `heldHash` (the served content's hash, when the zone's last status says a change of it was
 * held) a first content with another hash stays held.
 */
export interface ServedBefore {
  rrsets: number;
  heldHash?: string;
}

export function takeChange(
  state: ZoneModelState,
  catalog: Catalog,
  key: ResourceKey,
  dirty: Set<ResourceKey> | undefined,
  now = 0,
  servedBefore?: ServedBefore,
): TakenChange {
  const fresh = state.fresh;
  const memberSlots: number[] | undefined = fresh ? [] : undefined;
  const records = fresh ? catalog.zoneMembers(key, memberSlots) : catalog.membersNow(key, dirty ?? new Set());
  if (fresh) state.memberSlots = memberSlots;
  // A first build lists no RRset changes: nothing would read them. The backend gets the whole zone
  // (`full` stays set until it confirms one), so `pending` is not sent until then; the first
  // content is the baseline, so no previous content is noted; and a change is held only once a
  // later one is noted against that baseline, which lists what it changes (in `pending` too).
  // A zone's members are distinct record sets: a first build looks none up before adding it.
  const delta = state.model.update(records, zoneChildren(catalog, key), fresh, !fresh, fresh);
  state.fresh = false;
  const changed = delta.changed;
  if (!fresh) state.pending.add(delta);
  // The first content is the baseline of change safety; later changes are measured against it. A
  // rebuilt model keeps the baseline of the model it replaces, and notes what the rebuild changed; a
  // process's first content with fewer RRsets than were served before it started is measured by
  // count against those.
  const prior = fresh ? state.rebuiltFrom : undefined;
  state.rebuiltFrom = undefined;
  if (prior?.baseline !== undefined) {
    state.baseline = prior.baseline;
    const before = prior.model.defaultTtl;
    const noted = rebuildChanges(
      { rrsets: prior.model.rrsets(), defaultTtl: before },
      { rrsets: state.model.rrsets(), defaultTtl: state.model.defaultTtl },
    );
    state.baseline.note(noted, before);
    if (prior.held !== undefined) state.held = prior.held;
    // The stability window goes on unless the rebuild changed what change safety counts.
    state.lastChangeAt = noted.size > 0 ? now : prior.lastChangeAt;
  } else if (
    fresh &&
    servedBefore !== undefined &&
    (servedBefore.rrsets > state.model.rrsetCount || servedBefore.heldHash !== undefined)
  )
    state.baseline = ChangeBaseline.served(servedBefore.rrsets, servedBefore.heldHash);
  else if (fresh || state.baseline === undefined) state.baseline = new ChangeBaseline(state.model.rrsetCount);
  else if (changed) state.baseline.note(delta.previous, state.model.defaultTtl);
  // New content needs a serial of its own: the one chosen before (saved or not) stays with the old.
  if (changed) {
    state.assigned = undefined;
    if (prior?.baseline === undefined) state.lastChangeAt = now;
  }
  // A first build's verdicts are all new and not listed (`everyVerdict`): a new model's are all
  // pending already.
  if (delta.everyVerdict) {
    state.verdictsPending = 'all';
    state.statusesPending = 'all';
  }
  if (state.verdictsPending !== 'all') for (const k of delta.verdicts) state.verdictsPending.add(k);
  if (state.statusesPending !== 'all') {
    for (const k of delta.verdicts) state.statusesPending.add(k);
    for (const k of dirty ?? []) state.statusesPending.add(k);
  }
  return { fresh, changed, verdictsChanged: delta.everyVerdict || delta.verdicts.size > 0 };
}
