/**
 * A DNS thread entry for tests: registers the test selection policies, then runs the thread as
 * src/server/dns-worker-main.ts does. The product registers no selection policy yet, so tests start
 * their DNS threads from here (`WorkerPoolBackend`'s `entry` option).
 */
import { workerData } from 'node:worker_threads';
import { runDnsWorker } from '../../src/server/dns-worker.ts';
import type { DnsWorkerConfig } from '../../src/server/worker-protocol.ts';
import { registerTestSelectionPolicies } from './selection-policies.ts';

registerTestSelectionPolicies();
await runDnsWorker(workerData as DnsWorkerConfig);
