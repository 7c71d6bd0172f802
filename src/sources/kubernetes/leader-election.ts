/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package does it:
 * - a candidate tries to acquire or renew every `retryPeriod` (with jitter);
 * - a lease held by someone else counts as expired when its record has not changed for
 *   `leaseDuration`, measured on this process's own clock from when the change was observed (so clock
 *   skew between nodes does not matter);
 * - the leader renews every `retryPeriod`; if it could not renew for `renewDeadline`, it stops leading
 *   (and the operator exits, so it can never act on a lease it lost);
 * - on graceful shutdown the leader releases the lease (empty holder), so a standby takes over at once.
 * Writes are conditional on resourceVersion: two candidates cannot both win.
 */
import { within } from '../../util/within.ts';
import { isStatus, type KubeApi, type LeaseRecord } from './kube-api.ts';

export interface LeaderElectorOptions {
  api: Pick<KubeApi, 'readLease' | 'writeLease'>;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /**
   * Annotations the holder writes on the Lease with every acquire and renew (the leader's write
   * endpoint, ADR 0016): in the same object write as holderIdentity, so readers never see one leader's
   * annotations with another's name. Releasing the lease removes them.
   */
  annotations?: Record<string, string>;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  onNewLeader?: (identity: string) => void;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
}

export class LeaderElector {
  private readonly options: Required<
    Pick<LeaderElectorOptions, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'>
  > &
    LeaderElectorOptions;
  private observed?: LeaseRecord;
  private observedAt = 0;
  private leading = false;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private lastRenew = 0;
  private reportedLeader?: string;
  private running?: Promise<void>;
  private wake?: () => void;

  constructor(options: LeaderElectorOptions) {
    this.options = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      ...options,
    };
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = this.options;
    if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > retryPeriodMs * 1.2))
      throw new Error('leader election needs leaseDuration > renewDeadline > 1.2 × retryPeriod');
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** The current holder as last observed (may be this process). */
  get leader(): string | undefined {
    return this.observed?.holderIdentity || undefined;
  }

  start(): void {
    this.running ??= this.loop();
  }

  /**
   * Stops campaigning; a leader releases the lease so that another replica can take over at once.
   * Bounded by `timeoutMs`: a request to an API server that does not answer is not waited for beyond
   * it (the lease then expires after its duration instead). Resolves true when everything finished.
   */
  async stop(timeoutMs = Number.POSITIVE_INFINITY): Promise<boolean> {
    const { log = () => {} } = this.options;
    const deadline = performance.now() + timeoutMs;
    this.stopped = true;
    clearTimeout(this.timer);
    this.wake?.();
    let complete = await within(this.running ?? Promise.resolve(), deadline - performance.now());
    if (!complete)
      log('warn', 'leader election: a lease request is still waiting for the API server; stopping anyway');
    if (this.leading) {
      this.leading = false;
      if (!(await within(this.release(), deadline - performance.now()))) {
        complete = false;
        log(
          'warn',
          'leader election: the lease was not released in time; a standby takes it once it expires',
          {
            leaseDurationMs: this.options.leaseDurationMs,
          },
        );
      }
    }
    return complete;
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private async loop(): Promise<void> {
    const { log = () => {}, retryPeriodMs, renewDeadlineMs, leaseDurationMs } = this.options;
    while (!this.stopped) {
      let ok = false;
      // Each try is waited for until the renew deadline at most (a leader) or a lease duration (a
      // candidate), as client-go bounds it: a request the API server never answers (a connection
      // that died without a reset waits for minutes) must not keep a leader leading past its
      // deadline while another replica takes the expired lease. A try given up on may still land: the
      // lease's resourceVersion keeps it from overwriting anyone else's.
      let outcome: { ok: boolean } | { error: unknown } | undefined;
      const attempt = this.tryAcquireOrRenew().then(
        (acquired) => {
          outcome = { ok: acquired };
        },
        (error: unknown) => {
          outcome = { error };
        },
      );
      const budget = this.leading ? renewDeadlineMs - (this.now() - this.lastRenew) : leaseDurationMs;
      await within(attempt, budget);
      if (outcome === undefined)
        log('warn', 'leader election: the API server did not answer the lease request in time', {
          lease: `${this.options.namespace}/${this.options.name}`,
          waitedMs: Math.max(0, Math.round(budget)),
        });
      else if ('error' in outcome) {
        const e = outcome.error;
        log('warn', 'leader election: could not read or write the lease', {
          lease: `${this.options.namespace}/${this.options.name}`,
          error: e instanceof Error ? e.message : String(e),
        });
      } else ok = outcome.ok;
      if (this.stopped) break;
      if (ok) {
        this.lastRenew = this.now();
        if (!this.leading) {
          this.leading = true;
          log('info', 'leader election: became the leader', {
            lease: `${this.options.namespace}/${this.options.name}`,
            identity: this.options.identity,
          });
          this.options.onStartedLeading();
        }
      } else if (this.leading && this.now() - this.lastRenew >= renewDeadlineMs) {
        this.leading = false;
        log('error', 'leader election: could not renew the lease in time; stopping', {
          renewDeadlineMs,
        });
        this.options.onStoppedLeading();
        return;
      }
      // A standby checks with jitter (client-go's JitterUntil, factor 1.2); the leader renews on time.
      const wait = this.leading ? retryPeriodMs : retryPeriodMs * (1 + Math.random() * 0.2);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, wait);
      });
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { api, namespace, name, identity } = this.options;
    const now = this.now();
    const nowIso = new Date(now).toISOString();
    const durationSeconds = Math.round(this.options.leaseDurationMs / 1000);
    const current = await api.readLease(namespace, name);
    if (!current) {
      try {
        this.observed = await api.writeLease(namespace, name, {
          ...this.annotations(),
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: nowIso,
          renewTime: nowIso,
          leaseTransitions: 0,
        });
        this.observedAt = now;
        this.report(identity);
        return true;
      } catch (e) {
        if (isStatus(e, 409)) return false; // someone else created it first
        throw e;
      }
    }
    if (!this.observed || !sameRecord(this.observed, current)) {
      this.observed = current;
      this.observedAt = now;
    }
    const holder = current.holderIdentity ?? '';
    this.report(holder);
    const held = holder !== '' && holder !== identity;
    const leaseMs = (current.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (held && this.observedAt + leaseMs > now) return false;
    const next: LeaseRecord = {
      ...this.annotations(),
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: holder === identity && current.acquireTime ? current.acquireTime : nowIso,
      renewTime: nowIso,
      leaseTransitions: (current.leaseTransitions ?? 0) + (holder === identity ? 0 : 1),
      ...(current.resourceVersion ? { resourceVersion: current.resourceVersion } : {}),
    };
    try {
      this.observed = await api.writeLease(namespace, name, next);
      this.observedAt = now;
      this.report(identity);
      return true;
    } catch (e) {
      if (isStatus(e, 409)) return false;
      throw e;
    }
  }

  private async release(): Promise<void> {
    const { api, namespace, name, identity, log = () => {} } = this.options;
    try {
      const current = await api.readLease(namespace, name);
      if (!current || current.holderIdentity !== identity) return;
      const nowIso = new Date(this.now()).toISOString();
      await api.writeLease(namespace, name, {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        renewTime: nowIso,
        ...(current.acquireTime ? { acquireTime: current.acquireTime } : {}),
        ...(current.leaseTransitions !== undefined ? { leaseTransitions: current.leaseTransitions } : {}),
        ...(current.resourceVersion ? { resourceVersion: current.resourceVersion } : {}),
      });
      log('info', 'leader election: released the lease');
    } catch (e) {
      log('warn', 'leader election: could not release the lease', {
        error: e instanceof Error ? e.message : String(e),
      });
    }
  }

  private annotations(): { annotations?: Record<string, string> } {
    return this.options.annotations ? { annotations: { ...this.options.annotations } } : {};
  }

  private report(holder: string): void {
    if (holder === '' || holder === this.reportedLeader) return;
    this.reportedLeader = holder;
    this.options.onNewLeader?.(holder);
  }
}

function sameRecord(a: LeaseRecord, b: LeaseRecord): boolean {
  return (
    a.holderIdentity === b.holderIdentity &&
    a.renewTime === b.renewTime &&
    a.acquireTime === b.acquireTime &&
    a.leaseTransitions === b.leaseTransitions &&
    a.leaseDurationSeconds === b.leaseDurationSeconds
  );
}
