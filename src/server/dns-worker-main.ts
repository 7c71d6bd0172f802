/**
 * The entry of a DNS worker process of `serve --workers N` (the pool forks this file): it loads the
 * answer path and nothing else. Starting workers through the CLI loaded every command's modules — the
 * Kubernetes client among them — into each worker, about 45 MiB of heap per process that answers
 * nothing (ADR 0020).
 */
import { runDnsWorker } from './dns-worker.ts';
import { type DnsWorkerConfig, WORKER_CONFIG_ENV } from './worker-protocol.ts';

const config = process.env[WORKER_CONFIG_ENV];
if (config === undefined) throw new Error(`${WORKER_CONFIG_ENV} is not set: this file is a DNS worker entry`);
await runDnsWorker(JSON.parse(config) as DnsWorkerConfig);
