/**
 * API server watches read on a thread of their own. kube-apiserver holds only a few events for each
 * watcher; one that does not take them as fast as they come is closed (the
 * `apiserver_terminated_watchers_total` metric) and has to watch again from its last resourceVersion,
 * or list the whole kind again when that version has left the API server's window (410 Gone). On the
 * main thread a watch is read only between the reconciles, writes and garbage collections around it,
 * and during a first start on 10,000 record sets the operator's DNSRecordSet watch was closed every
 * few seconds (docs/benchmarks.md, "Kubernetes, 100,000 record sets"). Here one worker thread reads
 * every watch of a configuration and passes the events over, batched; they wait in the main thread's
 * message queue until it gets to them, as client-go's reflector queues them for its informer
 * (an unbounded queue: the API server's own buffer is what must not fill). Lists stay on the main
 * thread: a request and its response, nothing for the API server to hold.
 *
 * The events that waited in the queue while the main thread was busy are taken in one turn of its
 * event loop (`receive` drains the channel, up to `DRAIN_LINES` events or `DRAIN_MS`), so that what follows many
 * changes in one turn (a front door's objects translated again once per turn, `FrontDoorStore`'s
 * `coalesce`) follows all of them once: the busier the main thread, the more changes each turn takes
 * (docs/benchmarks.md, "Kubernetes: a kubizone Zone and a burst of Records").
 */
import type { RequestOptions } from 'node:https';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { type KubeConfig, Watch } from '@kubernetes/client-node';
import type { KubeObject, WatchEvent, WatchHandle } from './reflector.ts';

/** TLS settings of a watch's connection, as `https.Agent` takes them. */
export interface WatchTls {
  ca?: string;
  cert?: string;
  key?: string;
  pfx?: Uint8Array;
  passphrase?: string;
  rejectUnauthorized?: boolean;
  servername?: string;
}

export type ToWatchThread =
  | {
      op: 'watch';
      id: number;
      /** The whole URL, `watch=true` and the query included. */
      url: string;
      /** Authorization and the other headers the client sets. */
      headers: Record<string, string>;
      tls: WatchTls;
      /** The watch ends when no byte arrived for this long. */
      requestTimeoutMs: number;
    }
  | { op: 'abort'; id: number };

export type FromWatchThread =
  /** Watch events as the API server sent them, one JSON text each. */
  | { id: number; lines: string[] }
  | { id: number; done: true; error?: { message: string; name?: string; statusCode?: number } };

/** What the watch thread is given at its start: the port its events go to. */
export interface WatchThreadData {
  events: MessagePort;
}

/**
 * Events taken from the channel in one turn at most (a message holds one or more), and how long a
 * turn goes on taking messages: a turn stays short, so a Lease renewal, a status write's answer or
 * another watch's events wait no longer than that.
 */
export const DRAIN_LINES = 512;
export const DRAIN_MS = 20;

interface Running {
  onEvent: (event: WatchEvent) => void;
  onDone: (error?: unknown) => void;
}

export class WatchThread {
  private readonly config: KubeConfig;
  private worker?: Worker;
  /** The channel's end the watch thread's events come in on. */
  private events?: MessagePort;
  private nextId = 1;
  private readonly running = new Map<number, Running>();

  constructor(config: KubeConfig) {
    this.config = config;
  }

  /**
   * Starts a watch of `path` (with `watch=true` and `query`); `onEvent` gets its events in order and
   * `onDone` is called once when it ends (an error carries the HTTP `statusCode` when there was one).
   * The credentials are worked out here, by the client, for every watch (a rotated token or
   * certificate file is read again). A cluster reached through a proxy is watched on this thread,
   * by the client's own `Watch`, as before.
   */
  async watch(
    path: string,
    query: Record<string, string | number | boolean>,
    requestTimeoutMs: number,
    onEvent: (event: WatchEvent) => void,
    onDone: (error?: unknown) => void,
  ): Promise<WatchHandle> {
    const cluster = this.config.getCurrentCluster();
    if (!cluster) throw new Error('No currently active cluster');
    if (cluster.proxyUrl) return this.watchHere(path, query, requestTimeoutMs, onEvent, onDone);
    const options: RequestOptions = {};
    await this.config.applyToHTTPSOptions(options);
    const url = new URL(cluster.server + path);
    url.searchParams.set('watch', 'true');
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(options.headers ?? {}))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
    if (options.auth) headers.Authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    const text = (v: unknown) =>
      v === undefined || v === null ? undefined : Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
    const tls: WatchTls = {};
    const ca = text(options.ca);
    const cert = text(options.cert);
    const key = text(options.key);
    if (ca !== undefined) tls.ca = ca;
    if (cert !== undefined) tls.cert = cert;
    if (key !== undefined) tls.key = key;
    if (options.pfx !== undefined && options.pfx !== null) tls.pfx = options.pfx as Uint8Array;
    if (options.passphrase !== undefined) tls.passphrase = options.passphrase;
    if (options.rejectUnauthorized !== undefined) tls.rejectUnauthorized = options.rejectUnauthorized;
    if (options.servername !== undefined) tls.servername = options.servername;
    const id = this.nextId++;
    this.running.set(id, { onEvent, onDone });
    const worker = this.thread();
    worker.ref(); // a running watch keeps the process, as its socket did on the main thread
    worker.postMessage({
      op: 'watch',
      id,
      url: url.toString(),
      headers,
      tls,
      requestTimeoutMs,
    } satisfies ToWatchThread);
    return {
      abort: () => {
        if (!this.running.delete(id)) return;
        this.release();
        this.worker?.postMessage({ op: 'abort', id } satisfies ToWatchThread);
      },
    };
  }

  /** The client's own watch, on the main thread (a cluster behind a proxy). */
  private async watchHere(
    path: string,
    query: Record<string, string | number | boolean>,
    requestTimeoutMs: number,
    onEvent: (event: WatchEvent) => void,
    onDone: (error?: unknown) => void,
  ): Promise<WatchHandle> {
    const watch = new Watch(this.config);
    // Private in the client's typings; the inactivity limit of the watch.
    (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = requestTimeoutMs;
    const controller = await watch.watch(
      path,
      query,
      (type: string, object: KubeObject) => onEvent({ type, object } as WatchEvent),
      (error: unknown) => onDone(error ?? undefined),
    );
    return { abort: () => controller.abort() };
  }

  /** Starts the thread ahead of the first watch (it does not keep the process alive by itself). */
  prepare(): void {
    if (this.config.getCurrentCluster()?.proxyUrl) return;
    this.thread();
    this.release();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    // A channel of its own rather than the worker's: only a port can be drained (`receive`).
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(new URL('./watch-worker.ts', import.meta.url), {
      name: 'zk-watch',
      workerData: { events: port2 } satisfies WatchThreadData,
      transferList: [port2],
    });
    port1.on('message', (message: FromWatchThread) => this.receive(message, port1));
    // The worker keeps the process alive while a watch runs (`watch`, `release`), not its port.
    port1.unref();
    const fail = (error: unknown) => {
      // The thread is gone: every watch on it ended; the next watch starts a new one.
      if (this.worker === worker) {
        this.worker = undefined;
        this.events = undefined;
      }
      // What it sent before it ended goes first (as the worker's own port gives its messages before
      // its `exit`).
      for (let next = receiveMessageOnPort(port1); next; next = receiveMessageOnPort(port1))
        this.take(next.message as FromWatchThread);
      port1.close();
      const running = [...this.running.values()];
      this.running.clear();
      for (const r of running) r.onDone(error instanceof Error ? error : new Error(String(error)));
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the watch thread exited (${code})`)));
    this.worker = worker;
    this.events = port1;
    return worker;
  }

  /**
   * A message from the watch thread, then those that waited behind it, in order, up to
   * `DRAIN_LINES` events in all or for `DRAIN_MS`; the rest come with the port's next turn.
   */
  private receive(first: FromWatchThread, port: MessagePort): void {
    const until = performance.now() + DRAIN_MS;
    let lines = this.take(first);
    while (lines < DRAIN_LINES && port === this.events && performance.now() < until) {
      const next = receiveMessageOnPort(port);
      if (next === undefined) return;
      lines += this.take(next.message as FromWatchThread);
    }
  }

  /** Hands one message's events (or its watch's end) over; how many events it held. */
  private take(message: FromWatchThread): number {
    const running = this.running.get(message.id);
    if (!running) return 'lines' in message ? message.lines.length : 0; // aborted
    if ('lines' in message) {
      for (const line of message.lines) {
        // An earlier event of the batch may have ended it (an ERROR event) or aborted it.
        if (this.running.get(message.id) !== running) break;
        let event: { type?: unknown; object?: unknown };
        try {
          event = JSON.parse(line) as { type?: unknown; object?: unknown };
        } catch {
          continue; // as the client's Watch: a line that is not JSON is skipped
        }
        running.onEvent({ type: String(event.type), object: event.object } as WatchEvent & {
          object: KubeObject;
        });
      }
      return message.lines.length;
    }
    this.running.delete(message.id);
    this.release();
    const { error } = message;
    running.onDone(
      error === undefined
        ? undefined
        : Object.assign(new Error(error.message), {
            ...(error.name !== undefined ? { name: error.name } : {}),
            ...(error.statusCode !== undefined ? { statusCode: error.statusCode } : {}),
          }),
    );
    return 0;
  }

  /** With no watch running the thread does not keep the process alive. */
  private release(): void {
    if (this.running.size === 0) this.worker?.unref();
  }

  /** Ends the thread (and every watch on it). */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.events?.close();
    this.events = undefined;
    this.running.clear();
    await worker?.terminate();
  }
}
