import type { Registry } from '../metrics/registry.ts';
import type { ResourceKey } from '../zones/resource-key.ts';
import { type Reconcile, WorkQueue } from './work-queue.ts';

export type Log = (
  level: 'info' | 'warn' | 'error',
  message: string,
  fields?: Record<string, unknown>,
) => void;

/** The kinds the controller reconciles, one work queue each. */
export type ReconciledKind = 'DNSZone' | 'DNSRecordSet' | 'DNSZoneClass';

export interface QueueOptions {
  reconcile: Record<ReconciledKind, Reconcile>;
  /** Record-set reconciles in flight at once (at least 2). */
  recordConcurrency: number;
  /** Zone reconciles in flight at once (default 8). */
  zoneConcurrency?: number;
  retryBaseDelayMs?: number;
  retryMaxDelayMs?: number;
  registry?: Registry;
  log: Log;
}

/**
 * The controller's three keyed work queues (zones, record sets, classes) with per-key exponential
 * backoff, their metrics (`zonekeeper_reconcile_total`, `zonekeeper_reconcile_seconds`,
 * `zonekeeper_workqueue_depth`) and a log line per failed reconcile.
 */
export class ReconcileQueues {
  readonly zones: WorkQueue;
  readonly records: WorkQueue;
  readonly classes: WorkQueue;

  constructor(options: QueueOptions) {
    const backoff = {
      ...(options.retryBaseDelayMs !== undefined ? { baseDelayMs: options.retryBaseDelayMs } : {}),
      ...(options.retryMaxDelayMs !== undefined ? { maxDelayMs: options.retryMaxDelayMs } : {}),
    };
    // Several zones at once: their durable serial writes share one file write (start-up with many
    // zones), and one slow backend call does not hold up the other zones.
    this.zones = new WorkQueue(options.reconcile.DNSZone, {
      concurrency: Math.max(1, options.zoneConcurrency ?? 8),
      ...backoff,
    });
    // Record sets after the zones waiting: their reconciles (finalizers, the status of a record set no
    // zone takes) are work no answer waits for, so on a first start every zone is programmed first.
    this.records = new WorkQueue(options.reconcile.DNSRecordSet, {
      concurrency: Math.max(2, options.recordConcurrency),
      after: this.zones,
      ...backoff,
    });
    this.classes = new WorkQueue(options.reconcile.DNSZoneClass, backoff);
    let reconciles: ReturnType<Registry['counter']> | undefined;
    let reconcileSeconds: ReturnType<Registry['histogram']> | undefined;
    if (options.registry) {
      reconciles = options.registry.counter(
        'zonekeeper_reconcile_total',
        'Reconciles run, by kind and result.',
        ['kind', 'result'],
      );
      reconcileSeconds = options.registry.histogram(
        'zonekeeper_reconcile_seconds',
        'Reconcile duration, by kind.',
        [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
        ['kind'],
      );
      const depth = options.registry.gauge('zonekeeper_workqueue_depth', 'Keys waiting in each work queue.', [
        'kind',
      ]);
      depth.collect = () => {
        depth.set(this.zones.length, 'DNSZone');
        depth.set(this.records.length, 'DNSRecordSet');
        depth.set(this.classes.length, 'DNSZoneClass');
      };
    }
    for (const [kind, queue] of this.byKind()) {
      // Each series looked up once, when first counted (a first start counts a million record sets).
      let succeeded: { inc(): void } | undefined;
      let failed: { inc(): void } | undefined;
      let seconds: { observe(v: number): void } | undefined;
      queue.onResult = (key, error, ms) => {
        if (reconciles && error === undefined) {
          succeeded ??= reconciles.labels(kind, 'success');
          succeeded.inc();
        } else if (reconciles) {
          failed ??= reconciles.labels(kind, 'error');
          failed.inc();
        }
        if (reconcileSeconds) {
          seconds ??= reconcileSeconds.labels(kind);
          seconds.observe(ms / 1000);
        }
        if (error !== undefined) {
          options.log('warn', `reconcile ${kind} ${key} failed; retrying with backoff`, {
            error: String(error),
          });
        }
      };
    }
  }

  /** Enqueues an object of a kind for its reconciler. */
  add(kind: ReconciledKind, key: ResourceKey): void {
    if (kind === 'DNSZone') this.zones.add(key);
    else if (kind === 'DNSRecordSet') this.records.add(key);
    else this.classes.add(key);
  }

  start(): void {
    this.classes.start();
    this.zones.start();
    this.records.start();
  }

  shutdown(): void {
    this.zones.shutdown();
    this.records.shutdown();
    this.classes.shutdown();
  }

  /** Resolves when every queue is drained (a reconcile of one kind may enqueue another kind). */
  async idle(): Promise<void> {
    for (let i = 0; i < 10; i++) {
      await Promise.all([this.classes.idle(), this.zones.idle(), this.records.idle()]);
      if (this.zones.length + this.records.length + this.classes.length === 0) return;
    }
  }

  private byKind(): [ReconciledKind, WorkQueue][] {
    return [
      ['DNSZone', this.zones],
      ['DNSRecordSet', this.records],
      ['DNSZoneClass', this.classes],
    ];
  }
}
