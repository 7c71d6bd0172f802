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
import type { RRset, RRsetDelta } from '../../../zones/rrset.ts';
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
  slots: number[];
  /** The bindings last given, as JSON (so an unchanged set is not sent again). */
  sent: string;
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

  constructor(checker: HealthChecker | undefined) {
    this.checker = checker;
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
    for (const slot of state.slots) this.checker?.release(slot);
  }

  /** Every steered RRset of a zone and the slots of its candidates. */
  targets(origin: Name): SteeredTargets[] {
    const state = this.zones.get(nameKey(origin));
    if (!state) return [];
    return [...state.steered.values()].map((s) => ({
      owner: s.owner,
      type: s.type,
      origin: s.origin,
      targets: s.steering.candidates.map((address, i) => ({ address, slot: state.slots[i] ?? NO_SLOT })),
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
    const slots: number[] = [];
    const bindings: SelectionBinding[] = [];
    for (const s of steered.values()) {
      const hc = s.steering.healthCheck;
      const own = s.steering.candidates.map((address) => {
        if (!hc || !this.checker) return NO_SLOT;
        const slot = this.checker.acquire({ ...hc, address });
        slots.push(slot);
        return slot;
      });
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
      this.byRecord.set(resourceKey(s.origin), {
        zone: key,
        targets: s.steering.candidates.map((address, i) => ({ address, slot: own.slots[i]! })),
      });
    }
    // Acquired before released, so a target kept across the change keeps its slot and its state.
    for (const slot of old?.slots ?? []) this.checker?.release(slot);
    const sent = JSON.stringify(bindings);
    if (steered.size === 0) this.zones.delete(key);
    else this.zones.set(key, { steered, slots, sent });
    if (sent !== (old?.sent ?? '[]')) await sink.setSelections(origin, bindings);
  }
}

function idOf(r: { owner: Name; type: string }): string {
  return `${r.type} ${nameKey(r.owner)}`;
}

function steeredOf(r: RRset): Steered {
  return { owner: r.owner, type: r.type as 'A' | 'AAAA', steering: r.steering!, origin: r.origin };
}
