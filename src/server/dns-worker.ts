import { parentPort } from 'node:worker_threads';
import { Registry } from '../metrics/registry.ts';
import { flushCompileCache } from '../util/compile-cache.ts';
import { createQueryHandler } from './answer-settings.ts';
import { DnsServer } from './dns-server.ts';
import { readJournalWire } from './image/journal-wire.ts';
import { type HealthState, processHealth } from './selection/steering/health-view.ts';
import { ServerMetrics } from './server-metrics.ts';
import { TransferHandler } from './transfer/transfer-handler.ts';
import type { UpdateResponder } from './update/update-handler.ts';
import type { DnsWorkerConfig, FromWorker, ToWorker } from './worker-protocol.ts';
import { ZoneApplier } from './zone-apply.ts';
import { type ServedZone, ZoneTable } from './zone-table.ts';

const METRICS_INTERVAL_MS = 1000;
/** How long a forwarded UPDATE waits for the primary's answer. */
const UPDATE_TIMEOUT_MS = 30_000;

/**
 * A DNS thread of `serve --workers N` (a `worker_threads` worker; ADR 0020 §3): it answers queries
 * on the shared port from the zones the main thread posts: zone images, overlays over them and IXFR
 * journal entries as `SharedArrayBuffer`s (one copy in the process, read by every thread) and, for
 * signed zones, whole zones as objects and patches. It reports `ready` once loaded, receives every zone, and binds the
 * port when the main thread says `serve`; the promise settles when it listens (or could not bind).
 */
export async function runDnsWorker(config: DnsWorkerConfig): Promise<void> {
  const port = parentPort;
  if (port === null)
    throw new Error('a DNS thread runs in a worker thread (the pool of serve --workers starts it)');
  const send = (message: FromWorker) => port.postMessage(message);
  const registry = new Registry();
  // Zones arrive as zone images (ADR 0020), or as objects for zones with DNSSEC material.
  const table = new ZoneTable<ServedZone>();
  const metrics = new ServerMetrics(registry, table);
  const handler = createQueryHandler(table, metrics, config);
  const zones = new ZoneApplier(table);
  const transfers = new TransferHandler(table, { registry });
  const forwarded = new Map<number, (reply: Uint8Array | null) => void>();
  let seq = 0;
  // UPDATE goes to the primary; an answer that does not come in time is none (the client retries).
  const updates: UpdateResponder = {
    handle(request, remote) {
      const id = ++seq;
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          forwarded.delete(id);
          resolve(null);
        }, UPDATE_TIMEOUT_MS);
        forwarded.set(id, (reply) => {
          clearTimeout(timer);
          forwarded.delete(id);
          resolve(reply);
        });
        send({
          t: 'update',
          seq: id,
          request: Buffer.from(request).toString('base64'),
          ...(remote ? { remote } : {}),
        });
      });
    },
  };
  const server = new DnsServer({
    listen: config.listen,
    handler,
    metrics,
    reusePort: true,
    transfers,
    updates,
    ...(config.maxTcpPerSource !== undefined ? { maxTcpPerSource: config.maxTcpPerSource } : {}),
  });
  let serveNow: (() => void) | undefined;
  port.on('message', (message: ToWorker) => {
    switch (message.t) {
      case 'pause':
        Atomics.wait(message.flag, 0, 0);
        return;
      case 'serve':
        serveNow?.();
        serveNow = undefined;
        return;
      case 'update-reply':
        forwarded.get(message.seq)?.(
          message.reply === undefined ? null : new Uint8Array(Buffer.from(message.reply, 'base64')),
        );
        return;
      case 'zone':
        zones.replace(
          message.origin,
          message.soa,
          message.serial,
          message.rrsets,
          message.transfers,
          message.dnssec,
        );
        send({ t: 'applied', origin: message.origin, serial: message.serial });
        return;
      case 'image': {
        const { origin, serial } = message;
        try {
          zones.replaceImage(
            message.image,
            message.transfers,
            message.changes?.map(readJournalWire),
            message.overlay,
          );
        } catch {
          // Not an image this thread reads (never expected: the main thread runs the same code).
          send({ t: 'need-zone', origin, objects: true });
          return;
        }
        send({ t: 'applied', origin, serial });
        return;
      }
      case 'overlay': {
        const { origin, serial } = message;
        let applied = false;
        try {
          applied = zones.applyOverlay(
            message.overlay,
            message.transfers,
            message.changes?.map(readJournalWire),
          );
        } catch {
          // Not an overlay this thread reads: never expected, the main thread runs the same code.
        }
        send(applied ? { t: 'applied', origin, serial } : { t: 'need-zone', origin });
        return;
      }
      case 'patch': {
        const { origin, soa, serial, fromSerial, transfers } = message;
        if (!zones.patch(origin, soa, serial, fromSerial, message, transfers)) {
          send({ t: 'need-zone', origin });
          return;
        }
        send({ t: 'applied', origin, serial });
        return;
      }
      case 'delete':
        table.delete(message.origin);
        send({ t: 'applied', origin: message.origin, serial: undefined });
        return;
      case 'health':
        for (const [slot, state] of message.states) processHealth.set(slot, state as HealthState);
        return;
      case 'selections': {
        const { origin, generation } = message;
        try {
          table.setSelections(origin, message.bindings);
          send({ t: 'selections-applied', origin, generation });
        } catch (e) {
          send({ t: 'selections-applied', origin, generation, error: (e as Error).message });
        }
        return;
      }
    }
  });
  // The pool stops a thread with `Worker.terminate()`, which closes its sockets with it.
  setInterval(() => send({ t: 'metrics', snapshot: registry.snapshot() }), METRICS_INTERVAL_MS).unref();
  // Join the shared port only once every zone the main thread serves has been applied (it sends
  // `serve` after them): a thread that listened first would answer REFUSED for zones it does not hold yet.
  return new Promise((resolve, reject) => {
    serveNow = () => {
      server.start().then(() => {
        send({ t: 'serving' });
        resolve();
      }, reject);
    };
    // This thread's modules are loaded: their compiled form goes to the cache now (docs/adr/0030).
    flushCompileCache();
    send({ t: 'ready' });
  });
}
