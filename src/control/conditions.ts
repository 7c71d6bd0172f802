/**
 * Every condition Zonekeeper writes is built here: Accepted, Programmed and Ready of DNSZone and
 * DNSRecordSet, Ready of DNSZoneClass, and the Invalid triple the operator writes on objects it
 * cannot read. Each builder takes the object's generation, so every condition carries
 * `observedGeneration`; `setConditions` moves `lastTransitionTime` only when a status changes.
 */
import type { Condition } from '../api/index.ts';
import type { RRsetProblem } from '../backends/backend.ts';

export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;
type Generation = ConditionInput['observedGeneration'];

/**
 * Sets a condition as apimachinery's meta.SetStatusCondition does: `lastTransitionTime` moves only
 * when the status changes, so re-running a reconcile that reaches the same state writes nothing new.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: ConditionInput,
  now: Date | string,
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const previous = i >= 0 ? list[i] : undefined;
  const lastTransitionTime =
    previous && previous.status === next.status
      ? previous.lastTransitionTime
      : typeof now === 'string'
        ? now
        : now.toISOString();
  const condition: Condition = { ...next, lastTransitionTime };
  if (i >= 0) list[i] = condition;
  else list.push(condition);
  return list;
}

export function setConditions(
  conditions: readonly Condition[] | undefined,
  next: readonly ConditionInput[],
  now: Date | string,
): Condition[] {
  const time = typeof now === 'string' ? now : now.toISOString();
  let list = [...(conditions ?? [])];
  for (const c of next) list = setCondition(list, c, time);
  // Kept in the object's status: an exact copy, without the room push leaves for more elements.
  return list.slice();
}

/**
 * The Programmed and Ready pair of an object whose content the backend either serves (both True) or
 * not yet (both False, reason Pending, with `pendingMessage`).
 */
export function programmedConditions(
  programmed: boolean,
  messages: { programmed: string; ready: string; pending: string },
  observedGeneration: ConditionInput['observedGeneration'],
): ConditionInput[] {
  return [
    {
      type: 'Programmed',
      status: programmed ? 'True' : 'False',
      reason: programmed ? 'Programmed' : 'Pending',
      message: programmed ? messages.programmed : messages.pending,
      observedGeneration,
    },
    {
      type: 'Ready',
      status: programmed ? 'True' : 'False',
      reason: programmed ? 'Ready' : 'Pending',
      message: programmed ? messages.ready : messages.pending,
      observedGeneration,
    },
  ];
}

/** Accepted=True with a message. */
export function acceptedCondition(message: string, observedGeneration: Generation): ConditionInput {
  return { type: 'Accepted', status: 'True', reason: 'Accepted', message, observedGeneration };
}

/**
 * Accepted, Programmed and Ready all False with one reason: an object that is not served (a record
 * set refused or left out, a zone not accepted). `notServed` is Programmed's message.
 */
export function refusedConditions(
  reason: string,
  message: string,
  observedGeneration: Generation,
  notServed = 'not published',
): ConditionInput[] {
  return [
    { type: 'Accepted', status: 'False', reason, message, observedGeneration },
    { type: 'Programmed', status: 'False', reason, message: notServed, observedGeneration },
    { type: 'Ready', status: 'False', reason, message, observedGeneration },
  ];
}

/** A DNSZone that is not accepted (or not judged yet): nothing of it is served. */
export function zoneRefusedConditions(
  reason: string,
  message: string,
  observedGeneration: Generation,
): ConditionInput[] {
  return refusedConditions(reason, message, observedGeneration, 'the zone is not served');
}

/**
 * A DNSZone whose latest change failed a step (ADR 0014): Ready=False with the step's reason, and
 * Programmed False with the same reason, or still True when the content is served (only its hash
 * could not be saved).
 */
export function zoneFailedConditions(
  accepted: ConditionInput,
  failure: { reason: string; message: string },
  served: { message: string } | undefined,
  observedGeneration: Generation,
): ConditionInput[] {
  const { reason, message } = failure;
  return [
    accepted,
    served
      ? {
          type: 'Programmed',
          status: 'True',
          reason: 'Programmed',
          message: served.message,
          observedGeneration,
        }
      : { type: 'Programmed', status: 'False', reason, message, observedGeneration },
    { type: 'Ready', status: 'False', reason, message, observedGeneration },
  ];
}

/**
 * A record set published in a zone: Accepted=True, and Programmed/Ready by whether the backend serves
 * it. No serial in the messages: a record's status must not change when other records of its zone do.
 */
export function recordServedConditions(
  programmed: boolean,
  messages: { published: string; programmed: string; ready: string; pending: string },
  observedGeneration: Generation,
): ConditionInput[] {
  return [
    acceptedCondition(messages.published, observedGeneration),
    ...programmedConditions(programmed, messages, observedGeneration),
  ];
}

/**
 * A record set the backend left out: held by something the backend does not let Zonekeeper own
 * (Accepted=False, Conflict), or content the backend refused or cannot answer for (Programmed=False,
 * with the problem's reason: BackendRejected, AliasTargetUnresolvable).
 */
export function recordProblemConditions(
  problem: Pick<RRsetProblem, 'reason' | 'message'>,
  backend: string,
  published: string,
  observedGeneration: Generation,
): ConditionInput[] {
  const message = `backend ${backend}: ${problem.message}`;
  if (problem.reason === 'Conflict') return refusedConditions('Conflict', message, observedGeneration);
  return [
    acceptedCondition(published, observedGeneration),
    { type: 'Programmed', status: 'False', reason: problem.reason, message, observedGeneration },
    { type: 'Ready', status: 'False', reason: problem.reason, message, observedGeneration },
  ];
}

/** A DNSZoneClass: Ready as its backend's health says (informational; zones are reconciled anyway). */
export function classConditions(
  health: { ok: boolean; message: string },
  observedGeneration: Generation,
): ConditionInput[] {
  return [
    {
      type: 'Ready',
      status: health.ok ? 'True' : 'False',
      reason: health.ok ? 'Ready' : 'BackendUnreachable',
      message: health.message,
      observedGeneration,
    },
  ];
}

/**
 * An object the API server accepted but Zonekeeper cannot use (its rules are stricter than the schema
 * in places): Accepted, Programmed and Ready False, reason Invalid, with every problem.
 */
export function invalidConditions(message: string, observedGeneration: Generation): ConditionInput[] {
  return (['Accepted', 'Programmed', 'Ready'] as const).map((type) => ({
    type,
    status: 'False',
    reason: 'Invalid',
    message,
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  }));
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether a DNSZone's status says its change is held for confirmation (Programmed=False, ChangeHeld). */
export function changeHeld(conditions: readonly Condition[] | undefined): boolean {
  const programmed = findCondition(conditions, 'Programmed');
  return programmed?.status === 'False' && programmed.reason === 'ChangeHeld';
}

/**
 * Structural equality for plain JSON data (statuses, specs), used to write only what changed: fields
 * whose value is undefined count as absent, array holes are skipped on the left. Without a list of
 * keys filtered and a closure per object and array: a reload compares each object of a changed file
 * with the version held (docs/benchmarks.md, fifteenth round).
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  const array = Array.isArray(a);
  if (array !== Array.isArray(b)) return false;
  if (array) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (i in x && !jsonEqual(x[i], y[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  // The defined fields of `a` each equal in `b`, and `b` with as many defined fields.
  let defined = 0;
  for (const key of Object.keys(x)) {
    const value = x[key];
    if (value === undefined) continue;
    defined++;
    if (!jsonEqual(value, y[key])) return false;
  }
  for (const key of Object.keys(y)) if (y[key] !== undefined && --defined < 0) return false;
  return defined === 0;
}

/**
 * Why the object's current version is not accepted (its Accepted condition False, observed at its
 * generation), or undefined: accepted, or not judged yet.
 */
export function refusedNow(
  object: { metadata: { generation?: number }; status?: { conditions?: readonly Condition[] } } | undefined,
): string | undefined {
  if (!object) return undefined;
  const accepted = object.status?.conditions?.find((c) => c.type === 'Accepted');
  if (accepted?.status !== 'False' || accepted.observedGeneration !== object.metadata.generation)
    return undefined;
  return accepted.message;
}
