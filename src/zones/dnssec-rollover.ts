/**
 * Automatic ZSK rollover by pre-publication (RFC 7583 §3.2.1), as a pure step function: given the
 * rollover's recorded state, the zone's ZSKs and the time, the actions to take now and the next state.
 * The backend that holds the keys records the state and carries the actions out.
 *
 * Active(id, since) ──lifetime──▶ Publish(new, old): the new ZSK is in the DNSKEY RRset, not signing
 *   ──Ipub = DNSKEY TTL + propagation──▶ Retire(new, old): the new ZSK signs, the old one stays published
 *   ──Iret = largest TTL + propagation──▶ Active(new): the old ZSK is removed.
 */

export type RolloverState =
  | { phase: 'Active'; key: number; since: number }
  | { phase: 'Publish'; newKey: number; oldKey: number; since: number }
  | { phase: 'Retire'; newKey: number; oldKey: number; since: number };

export interface RolloverTimings {
  /** Seconds a ZSK signs before the next rollover starts. */
  lifetime: number;
  /** Ipub: seconds between publishing the new key and signing with it. */
  publish: number;
  /** Iret: seconds between the last signature of the old key and its removal. */
  retire: number;
}

export type RolloverAction =
  | { kind: 'create-published'; replaces: number }
  | { kind: 'activate'; key: number }
  | { kind: 'deactivate'; key: number }
  | { kind: 'remove'; key: number };

export interface RolloverStep {
  actions: RolloverAction[];
  /** The state after the actions (for `create-published`, the new key's id is filled in by the caller). */
  next: RolloverState | undefined;
  /** When the next step is due (seconds). */
  dueAt: number;
}

/** Ipub and Iret from the zone's TTLs and the propagation delay (RFC 7583 §3.2.1). */
export function rolloverTimings(
  lifetime: number,
  dnskeyTtl: number,
  largestTtl: number,
  propagation: number,
): RolloverTimings {
  return { lifetime, publish: dnskeyTtl + propagation, retire: largestTtl + propagation };
}

/**
 * One step. `activeZsk` is the ZSK that signs now (the one a missing or stale state starts from);
 * `present` the ids of the zone's ZSKs.
 */
export function stepRollover(
  state: RolloverState | undefined,
  activeZsk: number | undefined,
  present: ReadonlySet<number>,
  now: number,
  t: RolloverTimings,
): RolloverStep {
  // No state, or one naming keys that are gone (removed by hand): start over from the signing key.
  const valid =
    state !== undefined &&
    (state.phase === 'Active'
      ? present.has(state.key)
      : present.has(state.newKey) && present.has(state.oldKey));
  if (!valid) {
    if (activeZsk === undefined) return { actions: [], next: undefined, dueAt: now + t.lifetime };
    const fresh: RolloverState = { phase: 'Active', key: activeZsk, since: now };
    return { actions: [], next: fresh, dueAt: now + t.lifetime };
  }
  switch (state.phase) {
    case 'Active':
      if (now - state.since < t.lifetime)
        return { actions: [], next: state, dueAt: state.since + t.lifetime };
      return {
        actions: [{ kind: 'create-published', replaces: state.key }],
        next: { phase: 'Publish', newKey: -1, oldKey: state.key, since: now },
        dueAt: now + t.publish,
      };
    case 'Publish':
      if (now - state.since < t.publish) return { actions: [], next: state, dueAt: state.since + t.publish };
      return {
        actions: [
          { kind: 'activate', key: state.newKey },
          { kind: 'deactivate', key: state.oldKey },
        ],
        next: { phase: 'Retire', newKey: state.newKey, oldKey: state.oldKey, since: now },
        dueAt: now + t.retire,
      };
    case 'Retire':
      if (now - state.since < t.retire) return { actions: [], next: state, dueAt: state.since + t.retire };
      return {
        actions: [{ kind: 'remove', key: state.oldKey }],
        next: { phase: 'Active', key: state.newKey, since: now },
        dueAt: now + t.lifetime,
      };
  }
}

/** The state as one metadata string: `Active <since> <key>` or `<phase> <since> <new> <old>`. */
export function printRollover(s: RolloverState): string {
  return s.phase === 'Active'
    ? `Active ${s.since} ${s.key}`
    : `${s.phase} ${s.since} ${s.newKey} ${s.oldKey}`;
}

export function parseRollover(text: string | undefined): RolloverState | undefined {
  const [phase, since, a, b] = (text ?? '').trim().split(/\s+/);
  const n = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined);
  const at = n(since);
  if (at === undefined) return undefined;
  if (phase === 'Active' && n(a) !== undefined) return { phase, since: at, key: n(a)! };
  if ((phase === 'Publish' || phase === 'Retire') && n(a) !== undefined && n(b) !== undefined)
    return { phase, since: at, newKey: n(a)!, oldKey: n(b)! };
  return undefined;
}
