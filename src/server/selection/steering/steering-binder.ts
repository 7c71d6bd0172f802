/**
 * Turns the steered RRsets of the zones a built-in server programs into selection bindings (ADR 0017)
 * and health probe targets: for each zone it keeps the RRsets that carry `steering`, from whole zones
 * and from deltas, and when they change it acquires the probe slots of the new candidates, releases
 * those no longer used, and gives the zone's bindings to the sink (every DNS process of the server).
 */
import type { DNSRecordSetStatus } from '../../../api/index.ts';
import type { Steering } from '../../../api/steering.ts';
import { type Name, nameKey } from '../../../dns/name.ts';
import { type ResourceKey, resourceKey } from '../../../zones/resource-key.ts';
import type { RRset, RRsetDelta, RRsetProblem } from '../../../zones/rrset.ts';
import type { SelectionBinding, SelectionSink } from '../selection-table.ts';
import type { HealthChecker } from './health-checker.ts';
import { NO_SLOT } from './health-view.ts';
import { type SteeringBindingData, steeringPolicyName } from './policies.ts';

interface Steered {
  owner: Name;
  type: 'A' | 'AAAA';
  steering: Steering;
  /** The record set behind it, for status. */
  origin: RRset['origin'];
}

interface ZoneState {
  steered: Map<string, Steered>;
  /** The slots this zone holds, each with the namespace it is held for. */
  slots: { slot: number; namespace: string }[];
  /** The bindings last given, as JSON (so an unchanged set is not sent again). */
  sent: string;
  /** Per steered RRset (by id): its candidates' slots (NO_SLOT: not probed). */
  own: Map<string, number[]>;
  /** The zone's origin and where the bindings went, for a retry of refused health checks. */
  origin: Name;
  sink: SelectionSink;
  /** Steered RRsets whose health checks were refused (served with every record, unprobed). */
  refused: RRsetProblem[];
}

/** A steered RRset's probe targets and their states, for status. */
export interface SteeredTargets {
  owner: Name;
  type: 'A' | 'AAAA';
  origin: RRset['origin'];
  targets: { address: string; slot: number }[];
}

export class SteeringBinder {
  private readonly zones = new Map<string, ZoneState>();
  /** Record set (namespace/name) → its candidates and their probe slots, over every zone. */
  private readonly byRecord = new Map<
    ResourceKey,
    { zone: string; targets: { address: string; slot: number }[] }
  >();
  private readonly checker: HealthChecker | undefined;
  private retryScheduled = false;
  /**
   * Called for a zone whose refused health checks changed after a retry (room was freed elsewhere),
   * so that its record sets' status is written again (the backend reports `problems`).
   */
  onRefusalsChanged: ((origin: Name) => void) | undefined;

  constructor(checker: HealthChecker | undefined) {
    this.checker = checker;
  }

  /**
   * The steered RRsets of a zone whose health checks were not started (their namespace's limit, or
   * no slot left), as problems of their record sets: served with every record, never probed, until
   * room is freed (retried then).
   */
  problems(origin: Name): RRsetProblem[] {
    return this.zones.get(nameKey(origin))?.refused ?? [];
  }

  /** The zone holds exactly these RRsets now: binds its steered ones. */
  async replace(sink: SelectionSink, origin: Name, rrsets: Iterable<RRset>): Promise<void> {
    const steered = new Map<string, Steered>();
    for (const r of rrsets) if (r.steering) steered.set(idOf(r), steeredOf(r));
    await this.bind(sink, origin, steered);
  }

  /** The zone changed by `delta`: binds what its steered RRsets are now. */
  async patch(sink: SelectionSink, origin: Name, delta: RRsetDelta): Promise<void> {
    const before = this.zones.get(nameKey(origin))?.steered;
    if (!before && !delta.upserts.some((r) => r.steering)) return;
    const steered = new Map(before);
    for (const d of delta.deletes) steered.delete(idOf(d));
    for (const r of delta.upserts) {
      if (r.steering) steered.set(idOf(r), steeredOf(r));
      else steered.delete(idOf(r));
    }
    await this.bind(sink, origin, steered);
  }

  /** The zone is no longer served: its probes stop (the sink drops bindings with the zone). */
  forget(origin: Name): void {
    const state = this.zones.get(nameKey(origin));
    if (!state) return;
    this.zones.delete(nameKey(origin));
    for (const [k, v] of this.byRecord) if (v.zone === nameKey(origin)) this.byRecord.delete(k);
    this.releaseAll(state.slots);
  }

  /** Every steered RRset of a zone and the slots of its candidates. */
  targets(origin: Name): SteeredTargets[] {
    const state = this.zones.get(nameKey(origin));
    if (!state) return [];
    return [...state.steered].map(([id, s]) => ({
      owner: s.owner,
      type: s.type,
      origin: s.origin,
      targets: s.steering.candidates.map((address, i) => ({
        address,
        slot: state.own.get(id)?.[i] ?? NO_SLOT,
      })),
    }));
  }

  /** The health of a health-checked record set's records, as `DNSRecordSet.status.targets` shows it. */
  recordTargets(key: ResourceKey): DNSRecordSetStatus['targets'] {
    const entry = this.byRecord.get(key);
    if (!entry || !this.checker) return undefined;
    return entry.targets.map(({ address, slot }) => {
      const s = this.checker!.status(slot);
      return {
        address,
        state: s?.state ?? 'Unknown',
        ...(s?.since ? { lastTransitionTime: s.since } : {}),
        ...(s?.lastError && s.state !== 'Up' ? { lastError: s.lastError } : {}),
      };
    });
  }

  /** The record sets whose records include the target of `slot`. */
  recordsProbing(slot: number): ResourceKey[] {
    const out: ResourceKey[] = [];
    for (const [k, v] of this.byRecord) if (v.targets.some((t) => t.slot === slot)) out.push(k);
    return out;
  }

  private async bind(sink: SelectionSink, origin: Name, steered: Map<string, Steered>): Promise<void> {
    const key = nameKey(origin);
    const old = this.zones.get(key);
    const slots: ZoneState['slots'] = [];
    const refused: RRsetProblem[] = [];
    const bindings: SelectionBinding[] = [];
    const owned = new Map<string, number[]>();
    for (const [id, s] of steered) {
      const hc = s.steering.healthCheck;
      let own: number[] = s.steering.candidates.map(() => NO_SLOT);
      if (hc && this.checker) {
        // All of the record set's targets or none, counted against its namespace.
        const namespace = s.origin.kind === 'apex' ? '' : s.origin.namespace;
        const got = this.checker.acquireAll(
          s.steering.candidates.map((address) => ({ ...hc, address })),
          namespace,
        );
        if (Array.isArray(got)) {
          own = got;
          for (const slot of got) slots.push({ slot, namespace });
        } else
          refused.push({
            owner: s.owner,
            type: s.type,
            origin: s.origin,
            reason: 'HealthCheckRefused',
            message: `health checks not started: ${got.message}; every record is answered, as if up`,
          });
      }
      owned.set(id, own);
      const data: SteeringBindingData = {
        candidates: s.steering.candidates,
        slots: own,
        whenAllDown: s.steering.whenAllDown,
        ...(s.steering.weights ? { weights: s.steering.weights } : {}),
        ...(s.steering.regions ? { regions: s.steering.regions } : {}),
        ...(s.steering.topology ? { topology: s.steering.topology } : {}),
        ...(s.steering.geoip ? { geoip: s.steering.geoip } : {}),
      };
      bindings.push({ owner: s.owner, type: s.type, policy: steeringPolicyName(s.steering.policy), data });
    }
    for (const [k, v] of this.byRecord) if (v.zone === key) this.byRecord.delete(k);
    let at = 0;
    for (const s of steered.values()) {
      const own = bindings[at++]!.data as SteeringBindingData;
      if (s.origin.kind !== 'recordSet' || !s.steering.healthCheck) continue;
      if (own.slots.every((slot) => slot === NO_SLOT)) continue; // refused: reported as a problem
      this.byRecord.set(resourceKey(s.origin), {
        zone: key,
        targets: s.steering.candidates.map((address, i) => ({ address, slot: own.slots[i]! })),
      });
    }
    const sent = JSON.stringify(bindings);
    if (steered.size === 0) this.zones.delete(key);
    else this.zones.set(key, { steered, slots, sent, own: owned, origin, sink, refused });
    // Acquired before released, so a target kept across the change keeps its slot and its state.
    this.releaseAll(old?.slots ?? []);
    if (sent !== (old?.sent ?? '[]')) await sink.setSelections(origin, bindings);
  }

  /** Releases slots; when that freed room and health checks were refused somewhere, retries those. */
  private releaseAll(slots: readonly { slot: number; namespace: string }[]): void {
    let freed = false;
    for (const { slot, namespace } of slots) if (this.checker?.release(slot, namespace)) freed = true;
    if (!freed || this.retryScheduled) return;
    if (![...this.zones.values()].some((z) => z.refused.length > 0)) return;
    this.retryScheduled = true;
    setImmediate(() => {
      this.retryScheduled = false;
      void this.retryRefused();
    });
  }

  /** Binds again the zones with refused health checks; reports those whose refusals changed. */
  private async retryRefused(): Promise<void> {
    for (const [key, state] of [...this.zones]) {
      // A zone changed or forgotten meanwhile was bound by that change: nothing to retry.
      if (state.refused.length === 0 || this.zones.get(key) !== state) continue;
      const before = JSON.stringify(state.refused.map((p) => [p.owner, p.type, p.message]));
      await this.bind(state.sink, state.origin, state.steered);
      const after = JSON.stringify(
        this.zones.get(key)?.refused.map((p) => [p.owner, p.type, p.message]) ?? [],
      );
      if (after !== before) this.onRefusalsChanged?.(state.origin);
    }
  }
}

function idOf(r: { owner: Name; type: string }): string {
  return `${r.type} ${nameKey(r.owner)}`;
}

function steeredOf(r: RRset): Steered {
  return { owner: r.owner, type: r.type as 'A' | 'AAAA', steering: r.steering!, origin: r.origin };
}
