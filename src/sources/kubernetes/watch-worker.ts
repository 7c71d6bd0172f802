/**
 * The watch thread (see watch-thread.ts): runs the API server watches it is asked for and hands their
 * events to the main thread in batches, one message per turn of this thread's event loop. It does
 * nothing else, so it reads every watch as fast as the API server sends. Plain `node:https` with the
 * TLS settings and headers the main thread's client worked out for each watch: the thread does not
 * load the Kubernetes client (a second copy of it held about 70 MiB).
 */
import { Agent, request } from 'node:https';
import { parentPort, workerData } from 'node:worker_threads';
import { AgentCache } from './watch-agents.ts';
import { LineSplitter } from './watch-lines.ts';
import type { FromWatchThread, ToWatchThread, WatchThreadData } from './watch-thread.ts';

const port = parentPort;
if (!port) throw new Error('watch-worker.ts runs as a worker thread');
/** Where events go: a channel the main thread drains (watch-thread.ts, `receive`). */
const { events } = workerData as WatchThreadData;

/** One keep-alive pool per TLS setting in use (a watch holds its connection while it runs). */
const agents = new AgentCache((tls) => {
  const { pfx, ...rest } = tls;
  return new Agent({
    keepAlive: true,
    keepAliveMsecs: 30_000,
    ...rest,
    ...(pfx ? { pfx: Buffer.from(pfx) } : {}),
  });
});
/** Per running watch: hands its agent back (once), so a replaced one can go when idle. */
const releases = new Map<number, () => void>();
const running = new Map<number, () => void>();
/** Events read and not yet handed over, per watch, in arrival order. */
let pending = new Map<number, string[]>();
let scheduled = false;

const post = (message: FromWatchThread) => events.postMessage(message);

function flush(): void {
  scheduled = false;
  const batches = pending;
  pending = new Map();
  for (const [id, lines] of batches) post({ id, lines });
}

function release(id: number): void {
  releases.get(id)?.();
  releases.delete(id);
}

function done(id: number, error?: { message: string; name?: string; statusCode?: number }): void {
  release(id);
  if (!running.delete(id)) return;
  // The events before the end go first.
  const lines = pending.get(id);
  if (lines) {
    pending.delete(id);
    post({ id, lines });
  }
  post(error ? { id, done: true, error } : { id, done: true });
}

function start(message: Extract<ToWatchThread, { op: 'watch' }>): void {
  const { id, url, headers, tls, requestTimeoutMs } = message;
  const { agent, release: releaseAgent } = agents.acquire(tls);
  releases.set(id, releaseAgent);
  const req = request(url, { method: 'GET', headers, agent }, (res) => {
    if (res.statusCode !== 200) {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < 4096) body += chunk;
      });
      res.on('end', () => {
        let message = res.statusMessage || `HTTP ${res.statusCode}`;
        try {
          const status = JSON.parse(body) as { message?: string };
          if (status.message) message = status.message;
        } catch {
          // not a Status
        }
        done(id, { message, ...(res.statusCode !== undefined ? { statusCode: res.statusCode } : {}) });
      });
      return;
    }
    res.setEncoding('utf8');
    const splitter = new LineSplitter();
    // Handed over as text: parsed on the main thread, as before the thread, so that this one
    // allocates little (a parsed object here would be parsed, cloned and its copy collected).
    const hand = (lines: Iterable<string>) => {
      for (const line of lines) {
        if (line.trim() === '') continue;
        const batch = pending.get(id);
        if (batch) batch.push(line);
        else pending.set(id, [line]);
      }
    };
    res.on('data', (chunk: string) => {
      if (!running.has(id)) return;
      hand(splitter.push(chunk));
      if (!scheduled && pending.size > 0) {
        scheduled = true;
        setImmediate(flush);
      }
    });
    res.on('end', () => {
      // The last event, when no newline followed it: handed over before the end (done sends it first).
      const last = splitter.end();
      if (last !== undefined && running.has(id)) hand([last]);
      done(id);
    });
    res.on('error', (e) => done(id, { message: e.message, name: e.name }));
  });
  // No byte for this long: a half-open connection (the client's Watch does the same).
  req.setTimeout(requestTimeoutMs, () =>
    req.destroy(
      Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' }),
    ),
  );
  req.on('error', (e) => done(id, { message: e.message, name: e.name }));
  req.on('close', () => done(id));
  running.set(id, () => req.destroy());
  req.end();
}

port.on('message', (message: ToWatchThread) => {
  if (message.op === 'watch') start(message);
  else {
    const abort = running.get(message.id);
    running.delete(message.id);
    pending.delete(message.id);
    abort?.();
    release(message.id);
  }
});
