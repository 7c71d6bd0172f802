/**
 * The nonces a provider of the homelab DNS webhook protocol has seen, so a request replayed within the
 * freshness window (its timestamp ±5 minutes) is refused. A nonce is remembered until its request's
 * timestamp leaves the window — after that the timestamp check refuses the replay — and never longer.
 *
 * Bounded per caller: at most `maxPerCaller` nonces each. A nonce is recorded only after the
 * request's signature verified, so only a caller holding a configured secret has a share: the memory
 * held is at most `maxPerCaller` × the configured callers. There is no cap over all callers, which
 * callers filling their own shares would reach and so lock every other caller out. When a caller's share
 * is full of nonces still inside the window, its requests are refused (with the time until the
 * earliest of its nonces expires) rather than forgetting a live nonce, which would let that request be
 * replayed: the cache fails closed, and one caller's flood leaves the others' shares alone. Pure: the
 * clock is passed in.
 */
import { FRESHNESS_WINDOW_MS } from '../../homelab-protocol/signature.ts';

export const DEFAULT_MAX_NONCES_PER_CALLER = 50_000;

export type NonceVerdict =
  | { ok: true }
  | { ok: false; reason: 'reused' }
  | { ok: false; reason: 'full'; retryAfterSeconds: number };

export class NonceCache {
  /** Per caller: nonce → when it may be forgotten (ms), in insertion order. */
  private readonly byCaller = new Map<string, Map<string, number>>();
  private total = 0;
  private readonly maxPerCaller: number;
  private readonly windowMs: number;
  /**
   * When each caller's share was last swept whole (a full sweep at most once a second), and the
   * earliest expiry it found among the nonces left.
   */
  private readonly swept = new Map<string, { at: number; earliest: number }>();

  constructor(options: { maxPerCaller?: number; windowMs?: number } = {}) {
    this.maxPerCaller = options.maxPerCaller ?? DEFAULT_MAX_NONCES_PER_CALLER;
    this.windowMs = options.windowMs ?? FRESHNESS_WINDOW_MS;
  }

  /** Nonces held, over all callers. */
  get size(): number {
    return this.total;
  }

  /**
   * Records `nonce` for `caller`, whose request is timestamped `timestampMs` (already checked to be
   * within the window of `nowMs`), unless it was seen before or the caller's share is full.
   */
  check(caller: string, nonce: string, timestampMs: number, nowMs: number): NonceVerdict {
    let seen = this.byCaller.get(caller);
    if (!seen) {
      seen = new Map();
      this.byCaller.set(caller, seen);
    }
    this.expireFront(seen, nowMs);
    const until = seen.get(nonce);
    if (until !== undefined && until >= nowMs) return { ok: false, reason: 'reused' };
    if (until !== undefined) this.remove(seen, nonce);
    if (seen.size >= this.maxPerCaller) {
      // Timestamps differ within the window, so expired nonces may sit behind live ones, and the first
      // inserted is not always the first to expire: sweep all, at most once a second per caller, so a
      // flood of refused requests costs no scan each.
      let sweep = this.swept.get(caller);
      if (!sweep || nowMs - sweep.at >= 1000) {
        let earliest = Number.POSITIVE_INFINITY;
        for (const [n, t] of seen) {
          if (t < nowMs) this.remove(seen, n);
          else earliest = Math.min(earliest, t);
        }
        sweep = { at: nowMs, earliest };
        this.swept.set(caller, sweep);
      }
      if (seen.size >= this.maxPerCaller) {
        // Room comes when the earliest of this caller's nonces expires.
        const waitMs = Number.isFinite(sweep.earliest) ? Math.max(1000, sweep.earliest - nowMs + 1) : 1000;
        return { ok: false, reason: 'full', retryAfterSeconds: Math.ceil(waitMs / 1000) };
      }
    }
    seen.set(nonce, timestampMs + this.windowMs);
    this.total++;
    return { ok: true };
  }

  /** Drops the expired nonces at the front of a caller's share (oldest inserted first). */
  private expireFront(seen: Map<string, number>, nowMs: number): void {
    for (const [n, t] of seen) {
      if (t >= nowMs) break;
      this.remove(seen, n);
    }
  }

  private remove(seen: Map<string, number>, nonce: string): void {
    if (seen.delete(nonce)) this.total--;
  }
}
