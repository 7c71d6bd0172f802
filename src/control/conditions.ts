import type { Condition } from '../api/index.ts';

export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

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
  return list;
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

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Structural equality for status objects (plain JSON data), used to write status only when it changed. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
