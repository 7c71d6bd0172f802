/**
 * The watch thread (see watch-thread.ts): runs the API server watches it is asked for with the
 * client's `Watch` and hands their events to the main thread in batches, one message per turn of this
 * thread's event loop. It does nothing else, so it reads every watch as fast as the API server sends.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { shareConnections } from './connections.ts';
import type { FromWatchThread, ToWatchThread, WatchThreadData } from './watch-thread.ts';

const port = parentPort;
if (!port) throw new Error('watch-worker.ts runs as a worker thread');
const data = workerData as WatchThreadData;
const config = new KubeConfig();
config.loadFromString(data.kubeconfig);
shareConnections(config);

const running = new Map<number, AbortController | undefined>();
/** Events read and not yet handed over, per watch, in arrival order. */
let pending = new Map<number, { type: string; object: unknown }[]>();
let scheduled = false;

const post = (message: FromWatchThread) => port.postMessage(message);

function flush(): void {
  scheduled = false;
  const batches = pending;
  pending = new Map();
  for (const [id, events] of batches) post({ id, events });
}

function done(id: number, error: unknown): void {
  if (!running.has(id)) return;
  running.delete(id);
  // The events before the end go first.
  const events = pending.get(id);
  if (events) {
    pending.delete(id);
    post({ id, events });
  }
  if (error === null || error === undefined) post({ id, done: true });
  else {
    const e = error as { message?: unknown; name?: unknown; statusCode?: unknown; code?: unknown };
    const statusCode = typeof e.statusCode === 'number' ? e.statusCode : undefined;
    post({
      id,
      done: true,
      error: {
        message: typeof e.message === 'string' ? e.message : String(error),
        ...(typeof e.name === 'string' ? { name: e.name } : {}),
        ...(statusCode !== undefined ? { statusCode } : {}),
      },
    });
  }
}

async function start(message: Extract<ToWatchThread, { op: 'watch' }>): Promise<void> {
  const { id, path, query, requestTimeoutMs } = message;
  running.set(id, undefined);
  const watch = new Watch(config);
  // Private in the client's typings, set the same way as before the thread (kube-api.ts).
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = requestTimeoutMs;
  try {
    const controller = await watch.watch(
      path,
      query,
      (type: string, object: unknown) => {
        if (!running.has(id)) return;
        const events = pending.get(id);
        if (events) events.push({ type, object });
        else pending.set(id, [{ type, object }]);
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      },
      (error: unknown) => done(id, error),
    );
    if (running.has(id)) running.set(id, controller);
    else controller.abort(); // aborted while it started
  } catch (e) {
    done(id, e);
  }
}

port.on('message', (message: ToWatchThread) => {
  if (message.op === 'watch') void start(message);
  else {
    const controller = running.get(message.id);
    running.delete(message.id);
    pending.delete(message.id);
    controller?.abort();
  }
});
