import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dig, rdataOf } from './support/dig.ts';
import {
  copyExamples,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);

/** PIDs of the child processes of the serve process (DNS threads are not processes: none). */
async function workerPids(parent: number): Promise<number[]> {
  // ps exits 1 when it lists nothing: between a worker's death and its replacement there may be none.
  const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(parent)]).catch(
    (e: { code?: number }) => {
      if (e.code === 1) return { stdout: '' };
      throw e;
    },
  );
  return stdout.split(/\s+/).filter(Boolean).map(Number);
}

/** Many queries from fresh source ports, so SO_REUSEPORT spreads them over every DNS thread. */
async function answersFromAll(port: number, name: string, type: string, n = 24): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    const r = await dig(port, name, type, { tcp: i % 2 === 1 });
    seen.add(rdataOf(r, type).sort().join(','));
  }
  return seen;
}

describe('zonekeeper serve --workers 3', () => {
  let manifests: string;
  let state: string;
  let serve: ServeProcess;

  before(async () => {
    manifests = await copyExamples();
    state = await tempDir('state');
    serve = await startServe(manifests, state, ['--workers', '3']);
  });
  after(async () => {
    await serve?.stop();
    await removeAll(manifests, state);
  });

  test('answers from three DNS threads in one process', async () => {
    assert.equal((await workerPids(serve.pid)).length, 0, 'no DNS worker processes');
    assert.match(serve.log(), / serving .*workers=3/);
    assert.deepEqual(
      [...(await answersFromAll(serve.dnsPort, 'www.example.com', 'A'))],
      ['192.0.2.10,192.0.2.11'],
    );
  });

  test('a change reaches every process before the zone reports Ready at the new serial', async (t) => {
    const file = path.join(manifests, 'example.com', 'www.yaml');
    await writeFile(
      file,
      (await readFile(file, 'utf8')).replace('["192.0.2.10", "192.0.2.11"]', '["203.0.113.44"]'),
    );
    const ready = await waitFor(async () => {
      const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
        items: {
          kind: string;
          metadata: { name: string };
          status?: { serial?: number; conditions?: { type: string; status: string; message: string }[] };
        }[];
      };
      const zone = body.items.find((i) => i.kind === 'DNSZone' && i.metadata.name === 'example-com');
      const c = zone?.status?.conditions?.find((x) => x.type === 'Programmed');
      return c?.status === 'True' &&
        /serves serial/.test(c.message) &&
        (await dig(serve.dnsPort, 'www.example.com', 'A')).answer.length === 1
        ? zone
        : undefined;
    });
    t.diagnostic(`Ready at serial ${ready.value.status?.serial} after ${ready.ms.toFixed(0)} ms`);
    assert.deepEqual([...(await answersFromAll(serve.dnsPort, 'www.example.com', 'A'))], ['203.0.113.44']);
  });

  test('gives memory back once after the first load, on the main thread, and not after a change', async () => {
    // Logged by the main thread once the first start programmed every zone (after the change above too).
    await waitFor(async () => (/gave memory back after the first load/.test(serve.log()) ? true : undefined));
    assert.equal(serve.log().match(/gave memory back after the first load/g)?.length, 1);
    assert.match(
      serve.log(),
      /gave memory back after the first load compacted=true .*heapCommittedAfterMiB=\d+/,
    );
  });

  // A thread that dies is replaced and given every zone: tested in-process, where a thread can be
  // ended (test/backend-contract-worker-pool.test.ts, test/answer-selection.e2e.test.ts).

  test('metrics count the queries of every DNS thread', async () => {
    const total = async () => {
      await new Promise((r) => setTimeout(r, 1300)); // threads report once a second
      const metrics = await (await fetch(`${serve.httpUrl}/metrics`)).text();
      return [...metrics.matchAll(/^zonekeeper_dns_queries_total\{[^}]*\} (\d+)$/gm)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
    };
    const before = await total();
    await answersFromAll(serve.dnsPort, 'www.example.com', 'A', 30);
    assert.equal((await total()) - before, 30, 'every query counted once, whichever thread answered it');
  });
});

describe('zonekeeper serve --workers 2 --response-cache 0', () => {
  test('every process answers without a response cache (the option reaches the workers)', async () => {
    const manifests = await copyExamples();
    const state = await tempDir('state');
    const serve = await startServe(manifests, state, ['--workers', '2', '--response-cache', '0']);
    try {
      await answersFromAll(serve.dnsPort, 'www.example.com', 'A', 30);
      await new Promise((r) => setTimeout(r, 1300)); // threads report once a second
      const metrics = await (await fetch(`${serve.httpUrl}/metrics`)).text();
      const sum = (re: RegExp) => [...metrics.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
      assert.ok(sum(/^zonekeeper_dns_queries_total\{[^}]*\} (\d+)$/gm) >= 30);
      assert.equal(sum(/^zonekeeper_dns_response_cache_total\{[^}]*\} (\d+)$/gm), 0, 'no cache lookups');
    } finally {
      await serve.stop();
      await removeAll(manifests, state);
    }
  });
});

// A replacement thread joins the port only once it holds every zone: worker-pool-backend.test.ts.
