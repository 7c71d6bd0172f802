/**
 * The entry of a DNS thread of `serve --workers N` (the pool starts this file as a `worker_threads`
 * worker with its configuration as `workerData`): it loads the answer path and nothing else (ADR 0020).
 */
import { workerData } from 'node:worker_threads';
import { runDnsWorker } from './dns-worker.ts';
import type { DnsWorkerConfig } from './worker-protocol.ts';

if (workerData === null || workerData === undefined)
  throw new Error('this file is the entry of a DNS thread (serve --workers N starts it)');
await runDnsWorker(workerData as DnsWorkerConfig);
