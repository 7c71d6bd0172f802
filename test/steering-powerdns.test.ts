/**
 * Steering programmed into a real PowerDNS as LUA records, against the built-in server: one
 * `zonekeeper serve` serves zone builtin.test itself and programs zone pdns.test into PowerDNS
 * (class setting `luaRecords: true`, PowerDNS with enable-lua-records=yes), both with the same
 * steered record sets (All and Ordered over HTTP and TCP endpoints on loopback addresses). In each
 * steady state (every endpoint up; the first down; the second down: HTTP 503 or connection refused)
 * both return the same healthy set. A PowerDNS without enable-lua-records is reported instead.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { dig, rdataOf } from './support/dig.ts';
import { type Endpoint, httpEndpoint, tcpEndpoint } from './support/health-endpoints.ts';
import { type PowerDnsProcess, powerDnsAvailable, startPowerDns } from './support/powerdns.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const API = 'dns.zonekeeper.dev/v1alpha1';
const FAST = { intervalSeconds: 1, timeoutSeconds: 1, failureThreshold: 1, successThreshold: 1 };

function docs(pdnsUrl: string, keyFile: string, web: number, db: number) {
  const classes = [
    { metadata: { name: 'builtin' }, spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.'] } },
    {
      metadata: { name: 'pdns' },
      spec: {
        backend: {
          powerdns: { url: pdnsUrl, apiKeySecretRef: { file: keyFile }, luaRecords: true, resyncSeconds: 2 },
        },
        nameServers: ['ns1.example.com.'],
      },
    },
  ].map((c) => ({ apiVersion: API, kind: 'DNSZoneClass', ...c }));
  const out: object[] = [...classes];
  for (const cls of ['builtin', 'pdns']) {
    out.push({
      apiVersion: API,
      kind: 'DNSZone',
      metadata: { name: cls, namespace: 'steer' },
      spec: { domainName: `${cls}.test`, className: cls },
    });
    const http = { protocol: 'HTTP', port: web, path: '/healthz', host: 'web.example.com', ...FAST };
    const tcp = { protocol: 'TCP', port: db, ...FAST };
    for (const [name, check, records, policy] of [
      ['all-http', http, ['127.0.0.81', '127.0.0.82'], 'All'],
      ['ordered-http', http, ['127.0.0.81', '127.0.0.82'], 'Ordered'],
      ['all-tcp', tcp, ['127.0.0.83', '127.0.0.84'], 'All'],
      ['ordered-tcp', tcp, ['127.0.0.83', '127.0.0.84'], 'Ordered'],
    ] as const)
      out.push({
        apiVersion: API,
        kind: 'DNSRecordSet',
        metadata: { name: `${cls}-${name}`, namespace: 'steer' },
        spec: {
          zoneRef: { name: cls },
          name,
          type: 'A',
          ttl: 5,
          records,
          healthCheck: check,
          selection: { policy },
        },
      });
  }
  return out.map((d) => stringify(d)).join('---\n');
}

describe('steering: the built-in server and PowerDNS LUA records agree', { timeout: 300_000 }, async () => {
  const unavailable = await powerDnsAvailable('sqlite');
  let pdns: PowerDnsProcess;
  let serve: ServeProcess;
  let dir: string;
  const endpoints: Endpoint[] = [];
  let web: readonly [Endpoint, Endpoint];
  let db: readonly [Endpoint, Endpoint];

  before(async () => {
    if (unavailable) return;
    pdns = await startPowerDns({
      storage: 'sqlite',
      extra: ['enable-lua-records=yes', 'lua-health-checks-interval=1', 'query-cache-ttl=0', 'cache-ttl=0'],
    });
    dir = await tempDir('steer-pdns');
    const keyFile = path.join(dir, 'api-key');
    await writeFile(keyFile, `${pdns.apiKey}\n`);
    const w1 = await httpEndpoint('127.0.0.81');
    web = [w1, await httpEndpoint('127.0.0.82', { port: w1.port })];
    const d1 = await tcpEndpoint('127.0.0.83');
    db = [d1, await tcpEndpoint('127.0.0.84', d1.port)];
    endpoints.push(...web, ...db);
    const manifests = path.join(dir, 'manifests');
    await mkdir(manifests, { recursive: true });
    await writeFile(path.join(manifests, 'steer.yaml'), docs(pdns.apiUrl, keyFile, w1.port, d1.port));
    serve = await startServe(manifests, path.join(dir, 'state'));
  });

  after(async () => {
    await serve?.stop();
    await pdns?.stop();
    await Promise.all(endpoints.map((e) => e.close()));
    if (dir) await removeAll(dir);
  });

  /** Waits until both servers answer `name` with `expected` (sorted), several times in a row. */
  const agree = async (name: string, expected: string[]) => {
    const servers = [
      { who: 'built-in', port: serve.dnsPort, zone: 'builtin.test' },
      { who: 'PowerDNS', port: pdns.dnsPort, zone: 'pdns.test' },
    ];
    for (const s of servers) {
      let last: string[] = [];
      try {
        await waitFor(async () => {
          for (let i = 0; i < 3; i++) {
            last = rdataOf(await dig(s.port, `${name}.${s.zone}`, 'A'), 'A').sort();
            if (last.join() !== expected.join()) return undefined;
          }
          return true;
        }, 45_000);
      } catch {
        assert.fail(
          `${s.who} ${name}: expected ${expected.join()}, answered ${last.join()}\n${pdns.log().slice(-3000)}`,
        );
      }
    }
  };

  test('every state: both answer the same healthy set for All and Ordered', {
    skip: unavailable,
  }, async () => {
    const states: [string, () => Promise<void>, Record<string, string[]>][] = [
      [
        'every endpoint up',
        async () => {},
        {
          'all-http': ['127.0.0.81', '127.0.0.82'],
          'ordered-http': ['127.0.0.81'],
          'all-tcp': ['127.0.0.83', '127.0.0.84'],
          'ordered-tcp': ['127.0.0.83'],
        },
      ],
      [
        'the first endpoints down (HTTP 503, connection refused)',
        async () => {
          await web[0].setUp(false);
          await db[0].setUp(false);
        },
        {
          'all-http': ['127.0.0.82'],
          'ordered-http': ['127.0.0.82'],
          'all-tcp': ['127.0.0.84'],
          'ordered-tcp': ['127.0.0.84'],
        },
      ],
      [
        'the second endpoints down',
        async () => {
          await web[0].setUp(true);
          await db[0].setUp(true);
          await web[1].setUp(false);
          await db[1].setUp(false);
        },
        {
          'all-http': ['127.0.0.81'],
          'ordered-http': ['127.0.0.81'],
          'all-tcp': ['127.0.0.83'],
          'ordered-tcp': ['127.0.0.83'],
        },
      ],
    ];
    for (const [, enter, expected] of states) {
      await enter();
      for (const [name, addresses] of Object.entries(expected)) await agree(name, addresses);
    }
    await web[1].setUp(true);
    await db[1].setUp(true);
  });

  test('PowerDNS holds LUA records for the steered names', { skip: unavailable }, async () => {
    const r = await pdns.api('GET', '/api/v1/servers/localhost/zones/pdns.test.');
    const rrsets = (r.body as { rrsets: { name: string; type: string; records: { content: string }[] }[] })
      .rrsets;
    const lua = rrsets
      .filter((s) => s.type === 'LUA')
      .map((s) => s.name)
      .sort();
    assert.deepEqual(lua, [
      'all-http.pdns.test.',
      'all-tcp.pdns.test.',
      'ordered-http.pdns.test.',
      'ordered-tcp.pdns.test.',
    ]);
    assert.ok(
      !rrsets.some((s) => s.type === 'A' && s.name.startsWith('all-http')),
      'no plain A beside the LUA record',
    );
    const content = rrsets.find((s) => s.name === 'ordered-http.pdns.test.')!.records[0]!.content;
    assert.match(content, /^A ";/);
    assert.match(content, /ifurlup\('http:\/\/web\.example\.com:\d+\/healthz'/);
  });
});

describe('steering: a PowerDNS that does not evaluate LUA records is reported', {
  timeout: 120_000,
}, async () => {
  const unavailable = await powerDnsAvailable('sqlite');
  let pdns: PowerDnsProcess;
  let serve: ServeProcess;
  let dir: string;

  before(async () => {
    if (unavailable) return;
    pdns = await startPowerDns({ storage: 'sqlite' });
    dir = await tempDir('steer-pdns-off');
    const keyFile = path.join(dir, 'api-key');
    await writeFile(keyFile, `${pdns.apiKey}\n`);
    const manifests = path.join(dir, 'manifests');
    await mkdir(manifests, { recursive: true });
    await writeFile(path.join(manifests, 'steer.yaml'), docs(pdns.apiUrl, keyFile, 8080, 5432));
    serve = await startServe(manifests, path.join(dir, 'state'));
  });
  after(async () => {
    await serve?.stop();
    await pdns?.stop();
    if (dir) await removeAll(dir);
  });

  test('steered record sets are not Ready, say why, and are served with every candidate', {
    skip: unavailable,
  }, async () => {
    const { value: rs } = await waitFor(async () => {
      const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
        items: {
          kind: string;
          metadata: { name: string };
          status?: { conditions?: { type: string; status: string; message: string }[] };
        }[];
      };
      const item = body.items.find((i) => i.kind === 'DNSRecordSet' && i.metadata.name === 'pdns-all-http');
      const programmed = item?.status?.conditions?.find((c) => c.type === 'Programmed');
      return programmed?.status === 'False' ? programmed : undefined;
    }, 30_000);
    assert.match(rs.message, /does not evaluate LUA records \(enable-lua-records=no\)/);
    const answer = rdataOf(await dig(pdns.dnsPort, 'all-http.pdns.test', 'A'), 'A').sort();
    assert.deepEqual(answer, ['127.0.0.81', '127.0.0.82']);
    assert.deepEqual(rdataOf(await dig(pdns.dnsPort, 'ordered-http.pdns.test', 'A'), 'A').sort(), [
      '127.0.0.81',
      '127.0.0.82',
    ]);
  });
});
