/** A token bucket per namespace: `burst` requests at once, `requestsPerSecond` sustained. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number; fullMs: number }>();
  private lastSweep = 0;

  /**
   * Takes one token for `namespace`; returns 0 when taken, else the seconds until one is available.
   * `nowMs` comes from the caller (no clock in here).
   */
  take(namespace: string, rate: number, burst: number, nowMs: number): number {
    this.sweep(nowMs);
    const fullMs = rate > 0 ? (burst / rate) * 1000 : Number.POSITIVE_INFINITY;
    const bucket = this.buckets.get(namespace) ?? { tokens: burst, at: nowMs, fullMs };
    const refilled = Math.min(burst, bucket.tokens + (Math.max(0, nowMs - bucket.at) / 1000) * rate);
    if (refilled >= 1) {
      this.buckets.set(namespace, { tokens: refilled - 1, at: nowMs, fullMs });
      return 0;
    }
    this.buckets.set(namespace, { tokens: refilled, at: nowMs, fullMs });
    if (rate <= 0) return Number.POSITIVE_INFINITY;
    return Math.max(1, Math.ceil((1 - refilled) / rate));
  }

  /** Like `take` without taking: 0 when a token is there now, else the seconds until one is. */
  peek(namespace: string, rate: number, burst: number, nowMs: number): number {
    const bucket = this.buckets.get(namespace);
    if (!bucket) return burst >= 1 ? 0 : Number.POSITIVE_INFINITY;
    const refilled = Math.min(burst, bucket.tokens + (Math.max(0, nowMs - bucket.at) / 1000) * rate);
    if (refilled >= 1) return 0;
    if (rate <= 0) return Number.POSITIVE_INFINITY;
    return Math.max(1, Math.ceil((1 - refilled) / rate));
  }

  /** A bucket that has refilled is the same as none: dropped, so idle namespaces cost nothing. */
  private sweep(nowMs: number): void {
    if (nowMs - this.lastSweep < 60_000) return;
    this.lastSweep = nowMs;
    for (const [ns, b] of this.buckets) if (nowMs - b.at > b.fullMs) this.buckets.delete(ns);
  }
}
