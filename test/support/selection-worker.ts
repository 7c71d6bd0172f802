/**
 * A DNS worker process entry for tests: registers the test selection policies, then runs the worker
 * as `zonekeeper` does when forked with ZONEKEEPER_DNS_WORKER (src/cli/main.ts). The product registers
 * no selection policy yet, so tests fork their workers from here (`cluster.setupPrimary({ exec })`).
 */
import { runDnsWorker } from '../../src/server/dns-worker.ts';
import { type DnsWorkerConfig, WORKER_CONFIG_ENV } from '../../src/server/worker-protocol.ts';
import { registerTestSelectionPolicies } from './selection-policies.ts';

registerTestSelectionPolicies();
const config = process.env[WORKER_CONFIG_ENV];
if (config === undefined) throw new Error(`${WORKER_CONFIG_ENV} is not set: this file is a DNS worker entry`);
await runDnsWorker(JSON.parse(config) as DnsWorkerConfig);
