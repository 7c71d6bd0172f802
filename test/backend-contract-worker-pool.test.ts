/**
 * The built-in backend spread over DNS worker processes (`serve --workers`) against the backend
 * contract kit. Only the workers listen (no DNS server in this process), so the zone is read back
 * over DNS from them: AXFR over TCP, several times (SO_REUSEPORT spreads the connections over the
 * workers), every answer the same. Drift is a worker killed (the pool starts another and sends it
 * every zone); the outage is a worker stopped (SIGSTOP) until the test brings it back (SIGCONT).
 */

import { execFile } from 'node:child_process';
import cluster from 'node:cluster';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkerPoolBackend } from '../src/backends/builtin/worker-pool-backend.ts';
import { heldFromRecords } from '../src/backends/contract/held.ts';
import type { HeldZone } from '../src/backends/contract/kit.ts';
import { backendContract, rrset } from '../src/backends/contract/kit.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { freePort } from './support/ports.ts';
import { ROOT, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const READS = 6;

let port: number;
let pool: WorkerPoolBackend;
const stopped = new Set<number>();

/** One AXFR over TCP with dig: the records, or undefined when the worker does not serve the zone. */
async function axfr(origin: string): Promise<HeldZone | undefined> {
  const { stdout } = await run(
    'dig',
    ['@127.0.0.1', '-p', String(port), origin, 'AXFR', '+noall', '+answer', '+time=2', '+tries=1'],
    { timeout: 10_000 },
  );
  const records = stdout
    .split('\n')
    .map((line) => /^(\S+)\s+\d+\s+IN\s+(\S+)\s+(.*)$/.exec(line.trim()))
    .filter((m) => m !== null)
    .map((m) => ({ owner: m[1]!, type: m[2]!, rdata: m[3]! }));
  if (records.length === 0) return undefined;
  return heldFromRecords(origin, records.slice(0, -1)); // the SOA closes the transfer again
}

backendContract('builtin with DNS worker processes', {
  transfers: { allowFrom: ['127.0.0.1'], requireTsig: false, keys: [], notify: [], journalSize: 10 },
  start: async () => {
    port = await freePort(false);
    // The workers run the CLI, which becomes a DNS worker when the pool's environment says so.
    cluster.setupPrimary({ exec: path.join(ROOT, 'src/cli/main.ts') });
    pool = new WorkerPoolBackend(new ZoneTable(), {
      workers: 2,
      config: { listen: `127.0.0.1:${port}` },
      ackTimeoutMs: 1000,
      aliasCheck: { recheck: () => {} },
    });
    await pool.start();
    return pool;
  },
  stop: async () => {
    for (const pid of stopped) process.kill(pid, 'SIGCONT');
    await pool?.stop();
  },
  read: async (origin) => {
    const reads = [];
    for (let i = 0; i < READS; i++) reads.push(await axfr(origin));
    const first = JSON.stringify(reads[0] && { ...reads[0], rrsets: [...reads[0].rrsets].sort() });
    for (const r of reads) {
      const text = JSON.stringify(r && { ...r, rrsets: [...r.rrsets].sort() });
      if (text !== first) throw new Error(`the DNS workers disagree on ${origin}: ${first} vs ${text}`);
    }
    return reads[0];
  },
  handMade: {
    notApplicable: 'the built-in server holds only Zonekeeper content: there is nothing to ignore',
  },
  drift: async () => {
    const [victim, ...rest] = pool.workerPids();
    process.kill(victim!, 'SIGKILL');
    // The pool starts another worker and sends it every zone.
    await waitFor(async () => {
      const pids = pool.workerPids();
      return pids.length === rest.length + 1 && !pids.includes(victim!) ? true : undefined;
    });
  },
  refuse: async (origin) => ({
    rrset: rrset(origin, 'cdn', 'ALIAS', ['cdn.elsewhere.example.']),
    reason: 'AliasTargetUnresolvable',
  }),
  outage: async () => {
    const pid = pool.workerPids()[0]!;
    process.kill(pid, 'SIGSTOP');
    stopped.add(pid);
    return async () => {
      process.kill(pid, 'SIGCONT');
      stopped.delete(pid);
    };
  },
});
