/**
 * A reflector after client-go's: list a kind, then watch it from the list's resourceVersion, and keep
 * going. resourceVersion is opaque: it is only ever handed back to the API server, never compared.
 * - `410 Gone` (the version is too old, compacted away) → list again and replace the state.
 * - bookmarks move the resourceVersion forward without an object change, so a restarted watch does not
 *   replay or miss anything.
 * - an inactivity watchdog ends a watch on which nothing, not even a bookmark, arrived for a while (a
 *   half-open connection); the watch is then restarted from the last resourceVersion.
 * - errors back off exponentially with jitter, capped; success resets the backoff.
 * - `synced` resolves after the first complete list.
 * The reflector does no reconciling itself: `onReplace` and `onEvent` hand objects to a cache, whose
 * handlers only record keys.
 */

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent {
  type: WatchEventType;
  object: KubeObject;
}

/** The part of a Kubernetes object the reflector reads. */
export interface KubeObject {
  kind?: string;
  metadata?: { resourceVersion?: string; name?: string; namespace?: string };
  /** On ERROR events the object is a Status. */
  code?: number;
  reason?: string;
  message?: string;
}

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
}

export interface WatchHandle {
  abort(): void;
}

/** List and watch for one kind: the only I/O the reflector does. */
export interface ListerWatcher {
  list(): Promise<ListResult>;
  /**
   * Starts a watch from `resourceVersion` with bookmarks. `onDone` is called once when the watch ends:
   * without an error when the server closed it normally, with one otherwise (an error with
   * `statusCode: 410` means the version is gone).
   */
  watch(
    resourceVersion: string,
    timeoutSeconds: number,
    onEvent: (event: WatchEvent) => void,
    onDone: (error?: unknown) => void,
  ): Promise<WatchHandle>;
}

export interface ReflectorOptions {
  name: string;
  listerWatcher: ListerWatcher;
  /** The complete state after a list (initial or after 410 Gone). */
  onReplace: (items: KubeObject[]) => void;
  onEvent: (type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject) => void;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /** Restart a watch on which nothing arrived for this long (default `DEFAULT_INACTIVITY_MS`). */
  inactivityMs?: number;
  /** Server-side watch timeout range in seconds (default 300-600, as client-go). */
  watchTimeoutSeconds?: [number, number];
  backoff?: { initialMs?: number; maxMs?: number };
  /**
   * A kind that may not be installed (a front door's CRD, applied only by who uses that API): a list
   * answered `404 Not Found` counts as a complete, empty list — `synced` resolves — and is tried again
   * every `recheckMs` (default 30 s) until the kind exists. Without it a 404 is retried as any error.
   */
  absentIsEmpty?: { recheckMs?: number };
  /** Counters for metrics. */
  onMetric?: (what: 'list' | 'relist_gone' | 'watch' | 'watch_error' | 'watchdog' | 'bookmark') => void;
}

/**
 * The watchdog's default: longer than the longest watch timeout asked of the server (600 s) plus a
 * minute. The API server sends bookmarks only on some watches (measured on kube-apiserver 1.33: none
 * for 300 s on kinds with no objects or no changes), so a limit below the timeout ended quiet kinds'
 * healthy watches with a warning; at this value such a watch ends by its own timeout, and a half-open
 * connection is still found within eleven minutes.
 */
export const DEFAULT_INACTIVITY_MS = 660_000;

export class GoneError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GoneError';
  }
}

export class Reflector {
  private readonly options: ReflectorOptions;
  private stopped = false;
  private resourceVersion: string | undefined;
  private failures = 0;
  private current?: WatchHandle;
  /** Ends the running watch (on stop). */
  private endWatch?: () => void;
  private sleeping?: { timer: NodeJS.Timeout; resolve: () => void };
  private running?: Promise<void>;
  private resolveSynced!: () => void;
  /** Resolves after the first complete list. */
  readonly synced: Promise<void>;
  hasSynced = false;

  constructor(options: ReflectorOptions) {
    this.options = options;
    this.synced = new Promise((resolve) => {
      this.resolveSynced = resolve;
    });
  }

  /** The last resourceVersion seen (opaque), for tests and logs. */
  get lastResourceVersion(): string | undefined {
    return this.resourceVersion;
  }

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.endWatch?.();
    if (this.sleeping) {
      clearTimeout(this.sleeping.timer);
      this.sleeping.resolve();
    }
    await this.running;
  }

  private async run(): Promise<void> {
    const { log = () => {} } = this.options;
    let absent = false;
    while (!this.stopped) {
      try {
        if (this.resourceVersion === undefined) {
          try {
            await this.list();
            absent = false;
          } catch (e) {
            if (!this.options.absentIsEmpty || !isNotFound(e)) throw e;
            if (!absent)
              log('info', `${this.options.name}: not installed (404); none until it is, checking again`, {
                error: describeError(e),
              });
            absent = true;
            this.options.onReplace([]);
            this.failures = 0;
            if (!this.hasSynced) {
              this.hasSynced = true;
              this.resolveSynced();
            }
            await this.sleep(this.options.absentIsEmpty.recheckMs ?? 30_000);
            continue;
          }
        }
        const started = Date.now();
        const events = await this.watchOnce(this.resourceVersion!);
        // A watch the server ends at once, again and again, must not spin.
        if (events === 0 && Date.now() - started < 1000) this.failures++;
        else this.failures = 0;
        if (this.failures > 0) await this.sleep(this.delay());
      } catch (e) {
        if (this.stopped) break;
        if (e instanceof GoneError) {
          this.options.onMetric?.('relist_gone');
          log('info', `${this.options.name}: resourceVersion gone; listing again`, { error: e.message });
          this.resourceVersion = undefined;
          continue;
        }
        // The kind went away (its CRD deleted): list again, which finds it absent.
        if (this.options.absentIsEmpty && isNotFound(e)) this.resourceVersion = undefined;
        this.failures++;
        this.options.onMetric?.('watch_error');
        const delay = this.delay();
        log('warn', `${this.options.name}: list/watch failed; retrying in ${Math.round(delay)} ms`, {
          error: describeError(e),
        });
        await this.sleep(delay);
      }
    }
  }

  private async list(): Promise<void> {
    this.options.onMetric?.('list');
    const result = await this.options.listerWatcher.list();
    if (this.stopped) return;
    this.options.onReplace(result.items);
    this.resourceVersion = result.resourceVersion;
    this.failures = 0;
    if (!this.hasSynced) {
      this.hasSynced = true;
      this.resolveSynced();
    }
  }

  /** Runs one watch to its end; resolves with the number of events seen, rejects on errors. */
  private watchOnce(from: string): Promise<number> {
    const {
      listerWatcher,
      inactivityMs = DEFAULT_INACTIVITY_MS,
      watchTimeoutSeconds = [300, 600],
    } = this.options;
    const [lo, hi] = watchTimeoutSeconds;
    const timeoutSeconds = Math.floor(lo + Math.random() * Math.max(0, hi - lo));
    this.options.onMetric?.('watch');
    const started = Date.now();
    return new Promise<number>((resolve, reject) => {
      let events = 0;
      let finished = false;
      let watchdog: NodeJS.Timeout | undefined;
      const finish = (error?: unknown) => {
        if (finished) return;
        finished = true;
        clearTimeout(watchdog);
        if (!this.stopped) this.logWatchEnd(started, timeoutSeconds, events, error);
        this.current?.abort();
        this.current = undefined;
        this.endWatch = undefined;
        if (error === undefined || this.stopped) resolve(events);
        else reject(error);
      };
      const arm = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => {
          this.options.onMetric?.('watchdog');
          finish(new Error(`no event or bookmark for ${inactivityMs} ms; restarting the watch`));
        }, inactivityMs);
        watchdog.unref?.();
      };
      this.endWatch = () => finish();
      arm();
      const onEvent = (event: WatchEvent) => {
        if (finished) return;
        arm();
        events++;
        if (event.type === 'ERROR') {
          const status = event.object;
          finish(
            status.code === 410
              ? new GoneError(status.message ?? 'resourceVersion too old')
              : new Error(`watch error ${status.code ?? ''} ${status.reason ?? ''}: ${status.message ?? ''}`),
          );
          return;
        }
        const rv = event.object.metadata?.resourceVersion;
        if (rv !== undefined && rv !== '') this.resourceVersion = rv;
        if (event.type === 'BOOKMARK') {
          this.options.onMetric?.('bookmark');
          return;
        }
        this.options.onEvent(event.type, event.object);
      };
      const onDone = (error?: unknown) => {
        if (error && isGone(error)) finish(new GoneError(describeError(error)));
        else finish(error ?? undefined);
      };
      listerWatcher.watch(from, timeoutSeconds, onEvent, onDone).then(
        (handle) => {
          if (finished) handle.abort();
          else this.current = handle;
        },
        (error: unknown) => onDone(error ?? new Error('watch failed')),
      );
    });
  }

  /**
   * One line per ended watch, with why: the server's `timeoutSeconds` reached (expected), the server
   * closing it early (kube-apiserver ends a watcher that does not take its events fast enough), the
   * version gone (410), the watchdog, or an error with its HTTP status.
   */
  private logWatchEnd(started: number, timeoutSeconds: number, events: number, error: unknown): void {
    const seconds = (Date.now() - started) / 1000;
    const ended =
      error === undefined
        ? seconds >= timeoutSeconds - 1
          ? 'timeoutSeconds reached'
          : 'closed early by the server'
        : error instanceof GoneError
          ? 'resourceVersion gone (410)'
          : `error${statusOf(error) !== undefined ? ` ${statusOf(error)}` : ''}: ${describeError(error)}`;
    this.options.log?.('info', `${this.options.name}: watch ended`, {
      ended,
      seconds: Math.round(seconds * 10) / 10,
      timeoutSeconds,
      events,
    });
  }

  private delay(): number {
    const { initialMs = 500, maxMs = 30_000 } = this.options.backoff ?? {};
    const base = Math.min(maxMs, initialMs * 2 ** Math.min(20, this.failures - 1));
    return base * (0.8 + Math.random() * 0.4); // ±20 % jitter so replicas do not retry in step
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleeping = undefined;
        resolve();
      }, ms);
      this.sleeping = { timer, resolve };
    });
  }
}

function isNotFound(error: unknown): boolean {
  const e = error as { status?: number; statusCode?: number; code?: number };
  return e?.status === 404 || e?.statusCode === 404 || e?.code === 404;
}

function statusOf(error: unknown): number | undefined {
  const e = error as { status?: number; statusCode?: number; code?: number };
  const status = e?.statusCode ?? e?.status ?? e?.code;
  return typeof status === 'number' ? status : undefined;
}

function isGone(error: unknown): boolean {
  const e = error as { statusCode?: number; code?: number };
  return e?.statusCode === 410 || e?.code === 410;
}

export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
