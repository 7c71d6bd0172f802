/**
 * DNSSEC metrics of the control plane, read at scrape time from what the zones' statuses and the
 * reconciler know (the signing backend reports the rollover in `status.dnssec.rollover`):
 *
 * - `zonekeeper_dnssec_rollover_phase{zone,kind,phase}` 1 for the phase each signed zone is in;
 * - `zonekeeper_dnssec_rollover_next_step_timestamp_seconds{zone,kind}` when its next step is due;
 * - `zonekeeper_dnssec_rollover_waiting_parent{zone,reason}` 1 while a rollover waits for the parent's
 *   DS (ParentDsNotVisible needs the operator: alert on it);
 * - `zonekeeper_dnssec_zones_failing{reason}` zones asking to be signed whose latest apply failed
 *   (keys refused, DNSSEC off in the backend, the backend unreachable).
 */
import { type DNSZone, type DNSZoneClass, effectiveDnssec } from '../api/index.ts';
import type { Registry } from '../metrics/registry.ts';
import type { ResourceKey } from '../zones/resource-key.ts';
import type { ResourceStore } from './resource-store.ts';
import type { ZoneFailure } from './zone-reconciler.ts';

export interface DnssecMetricRows {
  phases: { zone: string; kind: string; phase: string }[];
  nextSteps: { zone: string; kind: string; at: number }[];
  waiting: { zone: string; reason: string }[];
  failing: Map<string, number>;
}

/** The rows of the metrics from the zones, their classes and the failing zones (pure). */
export function dnssecMetricRows(
  zones: readonly DNSZone[],
  classes: ReadonlyMap<string, DNSZoneClass>,
  failing: ReadonlyMap<ResourceKey, ZoneFailure>,
): DnssecMetricRows {
  const rows: DnssecMetricRows = { phases: [], nextSteps: [], waiting: [], failing: new Map() };
  for (const zone of zones) {
    const key = `${zone.metadata.namespace}/${zone.metadata.name}`;
    const rollover = zone.status?.dnssec?.rollover;
    if (rollover) {
      const kind = rollover.kind ?? 'ZSK';
      rows.phases.push({ zone: key, kind, phase: rollover.phase });
      const at = rollover.nextStep ? Date.parse(rollover.nextStep) : Number.NaN;
      if (Number.isFinite(at)) rows.nextSteps.push({ zone: key, kind, at: at / 1000 });
      if (rollover.reason) rows.waiting.push({ zone: key, reason: rollover.reason });
    }
    const signed = effectiveDnssec(classes.get(zone.spec.className)?.spec.dnssec, zone.spec.dnssec);
    const failure = failing.get(key as ResourceKey);
    if (signed && failure) rows.failing.set(failure.reason, (rows.failing.get(failure.reason) ?? 0) + 1);
  }
  return rows;
}

export function registerDnssecMetrics(
  registry: Registry,
  store: Pick<ResourceStore, 'list'>,
  failing: ReadonlyMap<ResourceKey, ZoneFailure>,
): void {
  const phase = registry.gauge(
    'zonekeeper_dnssec_rollover_phase',
    'The key rollover phase each signed zone is in (1), by kind (ZSK, Algorithm, KSK; Disable: signing turned off).',
    ['zone', 'kind', 'phase'],
  );
  const next = registry.gauge(
    'zonekeeper_dnssec_rollover_next_step_timestamp_seconds',
    "When each signed zone's next rollover step is due (Unix time).",
    ['zone', 'kind'],
  );
  const waiting = registry.gauge(
    'zonekeeper_dnssec_rollover_waiting_parent',
    "Rollovers waiting for the parent's DS (1); ParentDsNotVisible needs the operator to give the parent the DS, " +
      'ParentDsNotRemoved (signing turned off) to have the parent remove it.',
    ['zone', 'reason'],
  );
  const zonesFailing = registry.gauge(
    'zonekeeper_dnssec_zones_failing',
    'Zones asking to be signed whose latest apply failed (keys refused, DNSSEC off in the backend), by reason.',
    ['reason'],
  );
  const read = () => {
    const classes = new Map(
      (store.list('DNSZoneClass') as DNSZoneClass[]).map((c) => [c.metadata.name, c] as const),
    );
    return dnssecMetricRows(store.list('DNSZone') as DNSZone[], classes, failing);
  };
  phase.collect = () => {
    const r = read();
    phase.reset();
    for (const p of r.phases) phase.set(1, p.zone, p.kind, p.phase);
  };
  next.collect = () => {
    const r = read();
    next.reset();
    for (const n of r.nextSteps) next.set(n.at, n.zone, n.kind);
  };
  waiting.collect = () => {
    const r = read();
    waiting.reset();
    for (const w of r.waiting) waiting.set(1, w.zone, w.reason);
  };
  zonesFailing.collect = () => {
    const r = read();
    zonesFailing.reset();
    for (const reason of ['BackendUnreachable', 'BackendRejected', 'SerialNotSaved'])
      zonesFailing.set(r.failing.get(reason) ?? 0, reason);
    for (const [reason, n] of r.failing) zonesFailing.set(n, reason);
  };
}
