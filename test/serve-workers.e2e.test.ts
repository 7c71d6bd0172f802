import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { API_VERSION } from '../src/api/index.ts';
import { dig, rdataOf } from './support/dig.ts';
import { buildQuery } from './support/dns-client.ts';
import {
  copyExamples,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);

/** PIDs of the DNS worker processes forked by the serve process. */
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

/** Many queries from fresh source ports, so SO_REUSEPORT spreads them over every process. */
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

  test('forks two DNS workers that answer like the primary', async () => {
    assert.equal((await workerPids(serve.pid)).length, 2);
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

  test('a worker that dies is replaced and gets every zone', async () => {
    const [victim] = await workerPids(serve.pid);
    process.kill(victim!, 'SIGKILL');
    await waitFor(async () => {
      const pids = await workerPids(serve.pid);
      return pids.length === 2 && !pids.includes(victim!) ? pids : undefined;
    });
    await new Promise((r) => setTimeout(r, 300));
    const answers = await answersFromAll(serve.dnsPort, 'www.sub.example.com', 'A');
    assert.deepEqual([...answers], ['198.51.100.80']);
    assert.match(serve.log(), /DNS worker \d+ exited .*starting another/);
  });

  test('metrics count the queries of every process', async () => {
    const total = async () => {
      await new Promise((r) => setTimeout(r, 1300)); // workers report once a second
      const metrics = await (await fetch(`${serve.httpUrl}/metrics`)).text();
      return [...metrics.matchAll(/^zonekeeper_dns_queries_total\{[^}]*\} (\d+)$/gm)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
    };
    const before = await total();
    await answersFromAll(serve.dnsPort, 'www.example.com', 'A', 30);
    assert.equal((await total()) - before, 30, 'every query counted once, whichever process answered it');
  });
});

describe('zonekeeper serve --workers 2 --response-cache 0', () => {
  test('every process answers without a response cache (the option reaches the workers)', async () => {
    const manifests = await copyExamples();
    const state = await tempDir('state');
    const serve = await startServe(manifests, state, ['--workers', '2', '--response-cache', '0']);
    try {
      await answersFromAll(serve.dnsPort, 'www.example.com', 'A', 30);
      await new Promise((r) => setTimeout(r, 1300)); // workers report once a second
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

describe('zonekeeper serve --workers 2 with many zones', () => {
  // Enough zones that a replacement worker takes a while to receive them all.
  const ZONES = 1500;
  const last = `z${ZONES - 1}.many.test.`;

  test('a replacement worker joins the port only once it holds every zone (never REFUSED meanwhile)', async (t) => {
    const manifests = await tempDir('manifests');
    const state = await tempDir('state');
    const docs = [
      `apiVersion: ${API_VERSION}\nkind: DNSZoneClass\nmetadata: { name: many }\nspec:\n  backend: { builtin: {} }\n  nameServers: ["ns1.example.net."]\n  defaults: { ttl: 300, soa: { rname: "hostmaster@example.net" } }\n`,
    ];
    for (let z = 0; z < ZONES; z++) {
      docs.push(
        `apiVersion: ${API_VERSION}\nkind: DNSZone\nmetadata: { name: z${z}, namespace: many }\nspec: { domainName: "z${z}.many.test.", className: many }\n`,
        `apiVersion: ${API_VERSION}\nkind: DNSRecordSet\nmetadata: { name: z${z}-www, namespace: many }\nspec: { zoneRef: { name: z${z} }, name: www, type: A, records: ["192.0.2.${z % 250}"] }\n`,
      );
    }
    await writeFile(path.join(manifests, 'many.yaml'), docs.join('---\n'));
    const serve = await startServe(manifests, state, ['--workers', '2']);
    const sockets = await Promise.all(
      Array.from(
        { length: 32 },
        () =>
          new Promise<dgram.Socket>((resolve) => {
            const s = dgram.createSocket('udp4');
            s.bind(0, '127.0.0.1', () => resolve(s));
          }),
      ),
    );
    const rcodes = new Map<number, number>();
    let answered = 0;
    for (const s of sockets) {
      s.on('message', (msg) => {
        const rcode = msg[3]! & 0xf;
        rcodes.set(rcode, (rcodes.get(rcode) ?? 0) + 1);
        answered++;
      });
    }
    const query = buildQuery({ name: `www.${last}`, type: 1 });
    const round = () => {
      for (const s of sockets) s.send(query, serve.dnsPort, '127.0.0.1');
    };
    try {
      await waitFor(
        async () => rdataOf(await dig(serve.dnsPort, `www.${last}`, 'A'), 'A').length === 1 || undefined,
      );
      const [victim] = await workerPids(serve.pid);
      rcodes.clear();
      process.kill(victim!, 'SIGKILL');
      // Query from 32 source ports (spread over both processes) until the replacement has been up a while.
      let replacedAt: number | undefined;
      for (let i = 0; ; i++) {
        round();
        await new Promise((r) => setTimeout(r, 5));
        if (i % 20 === 0 && replacedAt === undefined) {
          const pids = await workerPids(serve.pid);
          if (pids.length === 1 && !pids.includes(victim!)) replacedAt = performance.now();
        }
        if (replacedAt !== undefined && performance.now() - replacedAt > 3000) break;
      }
      await new Promise((r) => setTimeout(r, 200));
      t.diagnostic(`${answered} answers: ${JSON.stringify(Object.fromEntries(rcodes))}`);
      assert.ok(answered > 0);
      assert.deepEqual(
        [...rcodes.keys()],
        [0],
        'every answer NOERROR, none REFUSED by a worker still loading',
      );
      assert.match(serve.log(), /DNS worker \d+ exited .*starting another/);
    } finally {
      for (const s of sockets) s.close();
      await serve.stop();
      await removeAll(manifests, state);
    }
  });
});
