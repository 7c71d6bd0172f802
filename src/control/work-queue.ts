/**
 * A deduplicating, keyed work queue with per-key exponential backoff, after client-go's
 * workqueue: a key is queued at most once; a key being processed that is added again is processed
 * once more after the current run; failures back off `baseDelay * 2^failures` up to `maxDelay`;
 * success forgets the failure count.
 */
export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  concurrency?: number;
  /**
   * A queue whose waiting keys go first: this one takes a key only while that one has none waiting
   * (keys it is processing do not hold this one back), and goes on once that one has taken its last.
   */
  after?: WorkQueue;
}

export type ReconcileResult = { requeueAfterMs?: number } | undefined;

/**
 * How long the queues' workers run reconciles back to back before they let the event loop turn.
 * A reconcile that writes only to the memory store settles without I/O (its promises resolve in
 * microtasks), so a run of them — a first start's record-set statuses and finalizers, a million of
 * them — would hold off every I/O callback until it ends: a zone reconcile waiting for its serial's
 * write or for the DNS threads' acknowledgement (its zone not answering meanwhile), /readyz and
 * /metrics. Shared by every queue: they run on one thread.
 */
const SLICE_MS = 20;
/** When the current run of reconciles without a turn of the event loop began; -1: none runs. */
let sliceStart = -1;

/** Whether the reconciles running since the event loop last turned have used up their slice. */
function sliceUsed(): boolean {
  const now = performance.now();
  if (sliceStart < 0) {
    sliceStart = now;
    // Runs at the event loop's next check phase, which comes only once the microtasks ran out.
    setImmediate(() => {
      sliceStart = -1;
    });
    return false;
  }
  return now - sliceStart >= SLICE_MS;
}

/**
 * Resolves after the event loop turned once (its I/O callbacks ran), and begins a new slice then: even
 * if the reset `sliceUsed` scheduled was lost (a test's mocked timers dropped it), no queue waits for
 * good. Each waiting worker has its own callback, so none can hang on another's lost one.
 */
function turn(): Promise<void> {
  return new Promise((resolve) =>
    setImmediate(() => {
      sliceStart = -1;
      resolve();
    }),
  );
}
export type Reconcile = (key: string) => Promise<ReconcileResult>;

export class WorkQueue {
  /** FIFO: `queue[head..]` are waiting; shift() on a large array is O(n), so the head moves instead. */
  private queue: string[] = [];
  private head = 0;
  /** The waiting keys, but for those before `unindexed` (see `addNew`). */
  private readonly queued = new Set<string>();
  /**
   * Waiting keys at `queue[head..unindexed)` that `queued` does not hold: the keys `addNew` put into
   * an empty queue, known distinct, go into `queued` only when a key's membership is first asked
   * (`isQueued`). A first start queues every record set so, a million keys that nothing else adds
   * before they are taken (docs/benchmarks.md, eleventh round).
   */
  private unindexed = 0;
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly waiters: (() => void)[] = [];
  private idleWaiters: (() => void)[] = [];
  private stopped = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly concurrency: number;
  private readonly after: WorkQueue | undefined;
  /** Queues that wait for this one's waiting keys (`after`), woken when it has taken its last. */
  private readonly followers: WorkQueue[] = [];
  private running = 0;
  /** Called after each reconcile with its outcome; used for metrics and logs. */
  onResult?: (key: string, error: unknown, durationMs: number) => void;

  private readonly reconcile: Reconcile;

  constructor(reconcile: Reconcile, options: WorkQueueOptions = {}) {
    this.reconcile = reconcile;
    this.baseDelayMs = options.baseDelayMs ?? 50;
    this.maxDelayMs = options.maxDelayMs ?? 60_000;
    this.concurrency = options.concurrency ?? 1;
    this.after = options.after;
    this.after?.followers.push(this);
  }

  get length(): number {
    return this.queue.length - this.head;
  }

  add(key: string): void {
    if (this.stopped) return;
    const timer = this.timers.get(key);
    if (timer) {
      clearTimeout(timer);
      this.timers.delete(key);
    }
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.isQueued(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.wake();
  }

  /**
   * `add` of each key, in order, for keys distinct from each other (a store's keys of one kind). Into
   * an empty queue (nothing waiting, processing or delayed) they are taken as they are, without a set
   * entry each until a key's membership is asked; otherwise each is added with `add`.
   */
  addNew(keys: readonly string[]): void {
    if (this.stopped || keys.length === 0) return;
    if (this.length > 0 || this.processing.size > 0 || this.timers.size > 0 || this.dirty.size > 0) {
      for (const key of keys) this.add(key);
      return;
    }
    this.queue = keys.slice();
    this.head = 0;
    this.unindexed = this.queue.length;
    for (let i = 0; i < keys.length && this.waiters.length > 0; i++) this.wake();
  }

  /** Whether the key is waiting; keys `addNew` took are put into `queued` first, when there are any. */
  private isQueued(key: string): boolean {
    if (this.unindexed > this.head) {
      for (let i = this.head; i < this.unindexed; i++) this.queued.add(this.queue[i]!);
    }
    this.unindexed = 0;
    return this.queued.has(key);
  }

  /** Adds the key after a delay, unless an earlier add or delay is already pending. */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped || this.isQueued(key) || this.timers.has(key)) return;
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.timers.set(key, timer);
  }

  /** The backoff the next failure of this key would wait. */
  backoffFor(key: string): number {
    const n = this.failures.get(key) ?? 0;
    return Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** n);
  }

  start(): void {
    for (let i = 0; i < this.concurrency; i++) void this.worker();
  }

  /** Resolves once nothing is queued or processing (delayed retries may still be pending). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  shutdown(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const wake of this.waiters.splice(0)) wake();
    // Queues that came after this one wait for it no longer.
    for (const follower of this.followers) follower.wakeAll();
  }

  private isIdle(): boolean {
    return this.length === 0 && this.running === 0;
  }

  private take(): string | undefined {
    if (this.head >= this.queue.length || this.waitsFor()) return undefined;
    const key = this.queue[this.head++]!;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.unindexed = Math.max(0, this.unindexed - this.head);
      this.head = 0;
    }
    if (this.head >= this.queue.length) for (const follower of this.followers) follower.wakeAll();
    return key;
  }

  private wake(): void {
    this.waiters.shift()?.();
  }

  /** Whether the queue this one comes after still has keys waiting (and runs). */
  private waitsFor(): boolean {
    return this.after !== undefined && !this.after.stopped && this.after.length > 0;
  }

  private wakeAll(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  private async worker(): Promise<void> {
    while (!this.stopped) {
      if (sliceUsed()) {
        await turn();
        continue;
      }
      const key = this.take();
      if (key === undefined) {
        if (this.running === 0 && this.length === 0) for (const done of this.idleWaiters.splice(0)) done();
        await new Promise<void>((resolve) => this.waiters.push(resolve));
        continue;
      }
      this.queued.delete(key);
      this.processing.add(key);
      this.running++;
      const started = performance.now();
      let error: unknown;
      let result: ReconcileResult;
      try {
        result = await this.reconcile(key);
      } catch (e) {
        error = e;
      }
      this.running--;
      this.processing.delete(key);
      this.onResult?.(key, error, performance.now() - started);
      if (error !== undefined) {
        const delay = this.backoffFor(key);
        this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
        this.dirty.delete(key);
        this.addAfter(key, delay);
      } else {
        this.failures.delete(key);
        // Again at once: at the tail, behind the keys already waiting (and counted by `idle`).
        if (result?.requeueAfterMs === 0) this.add(key);
        else if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
      }
      if (this.dirty.delete(key)) this.add(key);
    }
  }
}
