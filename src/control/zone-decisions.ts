/**
 * The decisions of a zone reconcile, apart from its I/O (`zone-reconciler.ts` reads, calls these, and
 * commits what they decide): pure functions of what was read, unit-tested on their own.
 */
import type { DNSZone } from '../api/index.ts';
import type { RRsetProblem } from '../backends/backend.ts';
import type { ZoneVerdict } from '../zones/catalog.ts';
import { type ResourceKey, refOf } from '../zones/resource-key.ts';
import type { RRsetDelta } from '../zones/rrset.ts';
import type { ZoneModel } from '../zones/zone-model.ts';
import {
  acceptedCondition,
  type ConditionInput,
  programmedConditions,
  zoneRefusedConditions,
} from './conditions.ts';
import type { ProgrammedState } from './programmed-zones.ts';
import type { ZoneStatusFields } from './status-writer.ts';
import type { ReconcileResult } from './work-queue.ts';
import type { ZoneModelState } from './zone-state.ts';

export interface ZoneStatusDecision {
  fields: ZoneStatusFields;
  conditions: ConditionInput[];
}

/** The serial and hash a zone's status had: kept while no new serial is saved and served. */
export function keptSerial(zone: DNSZone): {
  serial?: number;
  hash?: string;
  signedAt?: number;
  signing?: string;
  rrsetCount?: number;
} {
  return {
    ...(zone.status?.serial !== undefined ? { serial: zone.status.serial } : {}),
    ...(zone.status?.hash !== undefined ? { hash: zone.status.hash } : {}),
    // The signing time belongs to the serial (ADR 0021): it stays with it.
    ...(zone.status?.signedAt !== undefined ? { signedAt: zone.status.signedAt } : {}),
    ...(zone.status?.signing !== undefined ? { signing: zone.status.signing } : {}),
    // What change safety measures a restart against: the RRsets served at the serial.
    ...(zone.status?.rrsetCount !== undefined ? { rrsetCount: zone.status.rrsetCount } : {}),
  };
}

/** A zone the catalog does not accept (or has not judged yet): nothing of it is served, and why. */
export function refusedZoneStatus(
  zone: DNSZone,
  verdict: Extract<ZoneVerdict, { accepted: false }> | undefined,
): ZoneStatusDecision {
  const reason = verdict?.reason ?? 'Pending';
  const message = verdict ? verdict.message : 'waiting for the catalog';
  return {
    fields: keptSerial(zone),
    conditions: zoneRefusedConditions(reason, message, zone.metadata.generation),
  };
}

/** Accepted=True for a served zone, with its warnings (and why transfers are off, if they are). */
export function zoneAccepted(
  origin: string,
  warnings: readonly string[],
  transfersError: string | undefined,
  generation: number | undefined,
): ConditionInput {
  const all = transfersError ? [...warnings, `zone transfers are off: ${transfersError}`] : warnings;
  return acceptedCondition(
    all.length > 0 ? `accepted with warnings: ${all.join('; ')}` : `serving ${origin}`,
    generation,
  );
}

/** The fields of a served zone's status that describe its content. */
export function zoneDescription(model: ZoneModel, parent: ResourceKey | undefined): ZoneStatusFields {
  return {
    recordCount: model.acceptedCount,
    nameservers: model.nameServers,
    ...(parent !== undefined ? { parentZone: refOf(parent) } : {}),
  };
}

/**
 * What to send the backend: the pending changes as a delta from the serial it holds, when it holds
 * exactly the model's confirmed state; otherwise (a new model, an unknown backend state) the whole zone.
 */
export function planApply(
  state: Pick<ZoneModelState, 'full' | 'pending'>,
  programmed: ProgrammedState | undefined,
): { delta?: RRsetDelta & { fromSerial: number } } {
  if (state.full || programmed === undefined || programmed.needsFull) return {};
  return { delta: { fromSerial: programmed.serial, ...state.pending.delta() } };
}

export interface SortedProblems {
  /** Problems of RRsets that came from a record set, reported on that record set. */
  byRecord: Map<ResourceKey, RRsetProblem>;
  /** Problems of RRsets of no record set (apex, child zone NS, glue), reported on the zone. */
  zoneNotes: string[];
  /** Record sets whose problem appeared, changed or went away since the last apply. */
  changed: Set<ResourceKey>;
}

/** Sorts the RRsets a backend left out onto the record sets (or the zone) they came from. */
export function sortProblems(
  reported: readonly RRsetProblem[],
  before: ReadonlyMap<ResourceKey, RRsetProblem> | undefined,
): SortedProblems {
  const byRecord = new Map<ResourceKey, RRsetProblem>();
  const zoneNotes: string[] = [];
  for (const p of reported) {
    if (p.origin.kind === 'recordSet') byRecord.set(`${p.origin.namespace}/${p.origin.name}`, p);
    else zoneNotes.push(`${p.owner} ${p.type} not programmed: ${p.message}`);
  }
  const changed = new Set<ResourceKey>();
  for (const k of new Set([...byRecord.keys(), ...(before?.keys() ?? [])])) {
    const was = before?.get(k);
    const now = byRecord.get(k);
    if (was?.reason !== now?.reason || was?.message !== now?.message) changed.add(k);
  }
  return { byRecord, zoneNotes, changed };
}

/** Accepted with the zone-level problems of the last apply appended to its message. */
export function withZoneNotes(accepted: ConditionInput, notes: readonly string[]): ConditionInput {
  if (notes.length === 0) return accepted;
  return { ...accepted, message: `${accepted.message}${notes.map((n) => `; ${n}`).join('')}` };
}

/** The conditions of a zone whose apply went through: served (Programmed, Ready) or still pending. */
export function servedZoneConditions(
  accepted: ConditionInput,
  readBack: { programmed: boolean; message: string },
  origin: string,
  serial: number,
  generation: number | undefined,
): ConditionInput[] {
  return [
    accepted,
    ...programmedConditions(
      readBack.programmed,
      {
        programmed: readBack.message,
        ready: `serving ${origin} at serial ${serial}`,
        pending: readBack.message,
      },
      generation,
    ),
  ];
}

/**
 * Which record sets' statuses to write: all of them when the zone's programmed state flipped or after
 * a rebuild, else those whose inputs, verdict or problem changed since they were last written.
 */
export function recordStatusesToWrite(
  state: Pick<ZoneModelState, 'statusesPending' | 'programmedOk'> & { model: Pick<ZoneModel, 'verdicts'> },
  programmed: boolean,
  problemsChanged: ReadonlySet<ResourceKey>,
): Iterable<ResourceKey> {
  if (state.statusesPending === 'all' || state.programmedOk !== programmed)
    return state.model.verdicts.keys();
  return new Set([...state.statusesPending, ...problemsChanged]);
}

/**
 * When to reconcile a served zone again: soon while the backend does not serve it yet; after the hash
 * delay while the serial's content hash is not saved (the hash comes before a drift-repair resync);
 * then every resync interval of a backend others can edit; else only on change.
 */
export function nextVisit(options: {
  programmed: boolean;
  hashSaved: boolean;
  resyncMs: number | undefined;
  hashDelayMs: number;
}): ReconcileResult {
  if (!options.programmed) return { requeueAfterMs: 1000 };
  if (!options.hashSaved)
    return { requeueAfterMs: Math.min(options.hashDelayMs, options.resyncMs ?? options.hashDelayMs) };
  return options.resyncMs !== undefined ? { requeueAfterMs: options.resyncMs } : undefined;
}
