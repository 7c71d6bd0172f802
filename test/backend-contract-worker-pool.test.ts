/**
 * The built-in backend spread over DNS threads (`serve --workers`) against the backend contract kit.
 * Only the threads listen (no DNS server on this thread), so the zone is read back over DNS from
 * them: AXFR over TCP, several times (SO_REUSEPORT spreads the connections over the threads), every
 * answer the same. Drift is a thread terminated as a crash would end it (the pool starts another and
 * posts it every zone); the outage is a thread blocked until the test resumes it.
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { WorkerPoolBackend } from '../src/backends/builtin/worker-pool-backend.ts';
import { heldFromRecords } from '../src/backends/contract/held.ts';
import type { HeldZone } from '../src/backends/contract/kit.ts';
import { backendContract, rrset } from '../src/backends/contract/kit.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { freePort } from './support/ports.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const READS = 6;

let port: number;
let pool: WorkerPoolBackend;
const stopped = new Set<() => void>();

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

backendContract('builtin with DNS threads', {
  transfers: { allowFrom: ['127.0.0.1'], requireTsig: false, keys: [], notify: [], journalSize: 10 },
  start: async () => {
    port = await freePort(false);
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
    for (const resume of stopped) resume();
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
    const [victim, ...rest] = pool.workerIds();
    await pool.terminateWorker(victim!);
    // The pool starts another thread and posts it every zone.
    await waitFor(async () => {
      const ids = pool.workerIds();
      return ids.length === rest.length + 1 && !ids.includes(victim!) ? true : undefined;
    });
  },
  refuse: async (origin) => ({
    rrset: rrset(origin, 'cdn', 'ALIAS', ['cdn.elsewhere.example.']),
    reason: 'AliasTargetUnresolvable',
  }),
  outage: async () => {
    // A thread cannot be stopped by a signal: it blocks itself until resumed.
    const resume = pool.pauseWorker(pool.workerIds()[0]!);
    stopped.add(resume);
    return async () => {
      resume();
      stopped.delete(resume);
    };
  },
});
