/**
 * The health of probe targets as the answering code reads it: one 32-bit state per target slot in an
 * `Int32Array` over a `SharedArrayBuffer`, written with `Atomics.store` by whoever learns a state
 * (the health checker in the process that probes, or the message handler of a DNS thread) and
 * read with `Atomics.load` by selection policies on every query. No lock, no message per query, and
 * nothing a health flip has to invalidate: selected answers are never cached (ADR 0017, ADR 0020 §5).
 * When DNS workers become threads, the same buffer is handed to every thread and the policies do not
 * change.
 */

/** A target nobody has probed yet: answered as up, so a new record set does not start empty. */
export const HEALTH_UNKNOWN = 0;
export const HEALTH_UP = 1;
export const HEALTH_DOWN = 2;
export type HealthState = typeof HEALTH_UNKNOWN | typeof HEALTH_UP | typeof HEALTH_DOWN;

/** A candidate without a health check: no slot, always up. */
export const NO_SLOT = -1;

/** Slots in a process's view: every probe target of every steered record set served. */
export const HEALTH_SLOTS = 1 << 16;

export class HealthView {
  readonly states: Int32Array;

  constructor(buffer: SharedArrayBuffer | ArrayBuffer = new SharedArrayBuffer(HEALTH_SLOTS * 4)) {
    this.states = new Int32Array(buffer);
  }

  get capacity(): number {
    return this.states.length;
  }

  /** Whether the target of `slot` counts as up (unknown counts as up; NO_SLOT is always up). */
  isUp(slot: number): boolean {
    if (slot < 0 || slot >= this.states.length) return true;
    return Atomics.load(this.states, slot) !== HEALTH_DOWN;
  }

  get(slot: number): HealthState {
    return Atomics.load(this.states, slot) as HealthState;
  }

  set(slot: number, state: HealthState): void {
    if (slot >= 0 && slot < this.states.length) Atomics.store(this.states, slot, state);
  }

  /** The states of slots [0, count), e.g. to give a new DNS thread the current view. */
  snapshot(count: number): number[] {
    const out: number[] = [];
    for (let i = 0; i < Math.min(count, this.states.length); i++) out.push(Atomics.load(this.states, i));
    return out;
  }

  /** Writes a snapshot taken with `snapshot`. */
  load(states: readonly number[]): void {
    for (let i = 0; i < states.length; i++) this.set(i, states[i] as HealthState);
  }
}

/** The view this process's selection policies read (one per process; one per thread group later). */
export const processHealth = new HealthView();
