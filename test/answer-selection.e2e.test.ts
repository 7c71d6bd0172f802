/**
 * RRset selection through real DNS threads: a main thread that programs zones and selection
 * bindings into a pool of DNS threads (as `zonekeeper serve --workers N` does), no listener of its
 * own, so every answer below comes from a thread; queried with `dig` and `kdig` from two loopback
 * source addresses. The threads start from test/support/selection-worker.ts, which registers the
 * test policies (the product has none yet) and runs the thread as the product's entry does.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { ProgrammedZone } from '../src/backends/backend.ts';
import { WorkerPoolBackend } from '../src/backends/builtin/worker-pool-backend.ts';
import { parseName } from '../src/dns/name.ts';
import { parseRdata } from '../src/dns/rdata.ts';
import type { RecordTypeName } from '../src/dns/rrtype.ts';
import { Registry } from '../src/metrics/registry.ts';
import type { SelectionBinding } from '../src/server/selection/selection-table.ts';
import { ServerMetrics } from '../src/server/server-metrics.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import type { RRset } from '../src/zones/rrset.ts';
import { dig, rdataOf } from './support/dig.ts';
import { freePort } from './support/ports.ts';
import { registerTestSelectionPolicies } from './support/selection-policies.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const ORIGIN = parseName('steer.test.');
const WORKER = new URL('./support/selection-worker.ts', import.meta.url);

function rrset(owner: string, type: RecordTypeName, ...texts: string[]): RRset {
  return {
    owner: parseName(owner, ORIGIN),
    type,
    ttl: 300,
    rdata: texts.map((t) => parseRdata(type, t, ORIGIN)),
    origin: { kind: 'apex' },
  };
}

const RRSETS: RRset[] = [
  rrset('@', 'NS', 'ns1'),
  rrset('ns1', 'A', '192.0.2.53'),
  rrset('www', 'A', '192.0.2.1', '192.0.2.2', '192.0.2.3'),
  rrset('api', 'A', '192.0.2.21', '192.0.2.22'),
];

/** 127.0.0.1 gets .1, 127.0.0.2 gets .2 and .3, the subnet 203.0.113.0/24 gets .3 (scope 24). */
const BINDINGS: SelectionBinding[] = [
  {
    owner: parseName('www.steer.test.'),
    type: 'A',
    policy: 'by-subnet',
    data: {
      rules: [
        { network: '127.0.0.1/32', keep: ['192.0.2.1'] },
        { network: '127.0.0.2/32', keep: ['192.0.2.2', '192.0.2.3'] },
        { network: '203.0.113.0/24', keep: ['192.0.2.3'] },
      ],
    },
  },
];

/** The zone as the controller would program it, at `serial`. */
function programmed(serial: number): ProgrammedZone {
  return {
    key: 'steer/steer-test',
    origin: ORIGIN,
    soa: {
      ttl: 300,
      mname: parseName('ns1.steer.test.'),
      rname: parseName('hostmaster.steer.test.'),
      refresh: 3600,
      retry: 600,
      expire: 1209600,
      minimum: 60,
    },
    serial,
    transfers: { allowFrom: ['127.0.0.0/8'], requireTsig: false, keys: [], notify: [], journalSize: 10 },
    rrsets: () => RRSETS,
  };
}

describe('RRset selection in DNS threads', () => {
  let port: number;
  let pool: WorkerPoolBackend;
  const table = new ZoneTable();
  // The primary's metrics, as `zonekeeper serve` has them: the workers' counters are summed into them.
  const registry = new Registry();
  new ServerMetrics(registry, table);

  before(async () => {
    registerTestSelectionPolicies();
    port = await freePort();
    pool = WorkerPoolBackend.forListener(
      table,
      { host: '127.0.0.1', port },
      { workers: 2, registry, responseCache: 1000, entry: WORKER },
    );
    await pool.start();
    await pool.applyZone(programmed(1));
    assert.equal(await pool.servedSerial(ORIGIN), 1);
  });
  after(async () => {
    await pool?.stop();
  });

  /** The A records of www answered to `source`, over UDP unless `tcp`. */
  const www = async (
    source: string,
    options: { tcp?: boolean; args?: string[]; tool?: 'dig' | 'kdig' } = {},
  ) =>
    rdataOf(
      await dig(port, 'www.steer.test', 'A', {
        ...options,
        args: ['-b', source, ...(options.args ?? [])],
      }),
      'A',
    ).sort();

  test('before any binding every client gets the whole RRset', async () => {
    assert.deepEqual(await www('127.0.0.1'), ['192.0.2.1', '192.0.2.2', '192.0.2.3']);
    assert.deepEqual(await www('127.0.0.2'), ['192.0.2.1', '192.0.2.2', '192.0.2.3']);
  });

  test('the bindings reach every worker, which answer each client its subset, never another client’s', async (t) => {
    await pool.setSelections(ORIGIN, BINDINGS);
    // Fresh source ports spread the queries over both workers (SO_REUSEPORT); queries without EDNS
    // and with it are both of the response cache's shape, so a subset kept there would leak.
    for (let i = 0; i < 8; i++) {
      const args = i % 2 === 0 ? ['+noedns'] : [];
      assert.deepEqual(await www('127.0.0.1', { args }), ['192.0.2.1'], `query ${i} from 127.0.0.1`);
      assert.deepEqual(await www('127.0.0.2', { args }), ['192.0.2.2', '192.0.2.3'], `query ${i} from .2`);
    }
    assert.deepEqual(await www('127.0.0.2', { tcp: true, tool: 'kdig' }), ['192.0.2.2', '192.0.2.3']);
    // An unbound name is the same for everyone.
    for (const source of ['127.0.0.1', '127.0.0.2']) {
      const r = await dig(port, 'api.steer.test', 'A', { args: ['-b', source] });
      assert.deepEqual(rdataOf(r, 'A').sort(), ['192.0.2.21', '192.0.2.22']);
    }
    t.diagnostic('16 UDP queries from two sources: each got its own subset');
  });

  test('a Client Subnet query is answered for the subnet, with the option and its scope echoed', async () => {
    const d = await dig(port, 'www.steer.test', 'A', { args: ['-b', '127.0.0.1', '+subnet=203.0.113.0/24'] });
    assert.deepEqual(rdataOf(d, 'A'), ['192.0.2.3']);
    assert.match(d.raw, /CLIENT-SUBNET: 203\.0\.113\.0\/24\/24/);
    const k = await dig(port, 'www.steer.test', 'A', {
      tool: 'kdig',
      args: ['-b', '127.0.0.2', '+subnet=198.51.100.0/24'],
    });
    // No rule for that subnet: the whole RRset, and scope 0 (valid for every client).
    assert.deepEqual(rdataOf(k, 'A').sort(), ['192.0.2.1', '192.0.2.2', '192.0.2.3']);
    assert.match(k.raw, /198\.51\.100\.0\/24\/0/);
  });

  test('AXFR still transfers every record', async () => {
    const { stdout } = await run('dig', [
      '@127.0.0.1',
      '-p',
      String(port),
      '-b',
      '127.0.0.1',
      'steer.test',
      'AXFR',
    ]);
    const www = stdout
      .split('\n')
      .filter((l) => /^www\.steer\.test\.\s.*\sA\s/.test(l))
      .map((l) => l.trim().split(/\s+/).at(-1))
      .sort();
    assert.deepEqual(www, ['192.0.2.1', '192.0.2.2', '192.0.2.3']);
  });

  test('a replacement worker gets the bindings with the zones', async () => {
    const [victim] = pool.workerIds();
    await pool.terminateWorker(victim!);
    // Until the new worker has the zone it refuses; it gets the bindings before the zone, so once it
    // answers at all it answers with the selection.
    let answered = 0;
    for (let i = 0; i < 400 && answered < 16; i++) {
      const r = await dig(port, 'www.steer.test', 'A', { args: ['-b', '127.0.0.1'] });
      if (r.status !== 'NOERROR') {
        answered = 0;
        continue;
      }
      answered++;
      assert.deepEqual(rdataOf(r, 'A'), ['192.0.2.1'], 'a worker answered a bound RRset whole');
    }
    assert.equal(answered, 16, 'the replacement worker did not start answering');
    const ids = pool.workerIds();
    assert.equal(ids.length, 2);
    assert.ok(!ids.includes(victim!), 'the terminated thread was replaced');
  });

  test('removing the bindings gives everyone the whole RRset again', async () => {
    await pool.setSelections(ORIGIN, []);
    for (let i = 0; i < 4; i++) {
      assert.deepEqual(await www('127.0.0.1'), ['192.0.2.1', '192.0.2.2', '192.0.2.3']);
    }
  });

  test('a policy that fails is answered whole and counted, summed over the workers', async () => {
    await pool.setSelections(ORIGIN, [
      { owner: parseName('www.steer.test.'), type: 'A', policy: 'throwing' },
    ]);
    const errors = () =>
      Number(
        /^zonekeeper_dns_selection_errors_total\{policy="throwing"\} (\d+)$/m.exec(registry.render())?.[1] ??
          0,
      );
    const before = errors();
    // Fresh source ports spread the queries over both workers.
    for (let i = 0; i < 6; i++) {
      assert.deepEqual(await www('127.0.0.1'), ['192.0.2.1', '192.0.2.2', '192.0.2.3']);
    }
    // Each worker reports its counters to the primary now and then (every second).
    await waitFor(async () => (errors() - before === 6 ? true : undefined), 30_000, 100);
    await pool.setSelections(ORIGIN, []);
  });

  test('deleting the zone takes its bindings out of every worker', async () => {
    await pool.setSelections(ORIGIN, BINDINGS);
    assert.deepEqual(await www('127.0.0.1'), ['192.0.2.1']);
    await pool.deleteZone(ORIGIN);
    assert.equal((await dig(port, 'www.steer.test', 'A', { args: ['-b', '127.0.0.1'] })).status, 'REFUSED');
    assert.equal(table.selections.size, 0);
    // Served again, nothing binds it: every worker answers the whole RRset.
    await pool.applyZone(programmed(2));
    assert.equal(await pool.servedSerial(ORIGIN), 2);
    for (let i = 0; i < 8; i++) {
      assert.deepEqual(await www('127.0.0.1'), ['192.0.2.1', '192.0.2.2', '192.0.2.3'], `query ${i}`);
    }
  });
});
