/**
 * Steering programmed into a real PowerDNS as LUA records, against the built-in server: one
 * `zonekeeper serve` serves zone builtin.test itself and programs zone pdns.test into PowerDNS
 * (class setting `luaRecords: true`, PowerDNS with enable-lua-records=yes), both with the same
 * steered record sets (All and Ordered over HTTP and TCP endpoints on loopback addresses). In each
 * steady state (every endpoint up; the first down; the second down: HTTP 503 or connection refused)
 * both return the same healthy set. A PowerDNS without enable-lua-records, whose API refuses the
 * zone's ENABLE-LUA-RECORDS metadata, is reported until that metadata is set by hand.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { dig, rdataOf } from './support/dig.ts';
import { type Endpoint, httpEndpoint, tcpEndpoint } from './support/health-endpoints.ts';
import { type PowerDnsProcess, powerDnsAvailable, startPowerDns } from './support/powerdns.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const API = 'dns.zonekeeper.dev/v1alpha1';
const FAST = { intervalSeconds: 1, timeoutSeconds: 1, failureThreshold: 1, successThreshold: 1 };
/** The endpoints listen on loopback, which Zonekeeper's probes (zone builtin.test) reach only when allowed. */
const PROBE_LOOPBACK = ['--health-probe-allow', '127.0.0.0/8'];

/**
 * `zonekeeper serve` in `dir` against `pdns`: the API key in a file, the manifests `manifest(keyFile)`
 * written to `dir`/manifests, the state in `dir`/state.
 */
async function serveWith(
  pdns: PowerDnsProcess,
  dir: string,
  manifest: (keyFile: string) => string,
  extra: string[] = [],
): Promise<ServeProcess> {
  const keyFile = path.join(dir, 'api-key');
  await writeFile(keyFile, `${pdns.apiKey}\n`);
  const manifests = path.join(dir, 'manifests');
  await mkdir(manifests, { recursive: true });
  await writeFile(path.join(manifests, 'steer.yaml'), manifest(keyFile));
  return startServe(manifests, path.join(dir, 'state'), extra);
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

/** The Programmed condition of the DNSRecordSet `name` as `zonekeeper serve` reports it, if any. */
async function programmedOf(serve: ServeProcess, name: string): Promise<Condition | undefined> {
  const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
    items: { kind: string; metadata: { name: string }; status?: { conditions?: Condition[] } }[];
  };
  const item = body.items.find((i) => i.kind === 'DNSRecordSet' && i.metadata.name === name);
  return item?.status?.conditions?.find((c) => c.type === 'Programmed');
}

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
    const w1 = await httpEndpoint('127.0.0.81');
    web = [w1, await httpEndpoint('127.0.0.82', { port: w1.port })];
    const d1 = await tcpEndpoint('127.0.0.83');
    db = [d1, await tcpEndpoint('127.0.0.84', d1.port)];
    endpoints.push(...web, ...db);
    serve = await serveWith(
      pdns,
      dir,
      (keyFile) => docs(pdns.apiUrl, keyFile, w1.port, d1.port),
      PROBE_LOOPBACK,
    );
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
  timeout: 240_000,
}, async () => {
  const unavailable = await powerDnsAvailable('sqlite');
  let pdns: PowerDnsProcess;
  let serve: ServeProcess;
  let dir: string;

  before(async () => {
    if (unavailable) return;
    // enable-lua-records stays at its default (no); metadata is read without PowerDNS's cache delay.
    pdns = await startPowerDns({ storage: 'sqlite', extra: ['zone-metadata-cache-ttl=0', 'cache-ttl=0'] });
    dir = await tempDir('steer-pdns-off');
    serve = await serveWith(pdns, dir, (keyFile) => docs(pdns.apiUrl, keyFile, 8080, 5432), PROBE_LOOPBACK);
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
      const programmed = await programmedOf(serve, 'pdns-all-http');
      return programmed?.status === 'False' ? programmed : undefined;
    }, 30_000);
    // The zone's ENABLE-LUA-RECORDS metadata was tried through the API, which refuses that kind.
    assert.match(
      rs.message,
      /does not evaluate LUA records \(enable-lua-records=no, and the zone's ENABLE-LUA-RECORDS metadata could not be set: the API answered 422 Unsupported metadata kind 'ENABLE-LUA-RECORDS'\).*pdnsutil set-meta pdns\.test\. ENABLE-LUA-RECORDS 1/,
    );
    const answer = rdataOf(await dig(pdns.dnsPort, 'all-http.pdns.test', 'A'), 'A').sort();
    assert.deepEqual(answer, ['127.0.0.81', '127.0.0.82']);
    assert.deepEqual(rdataOf(await dig(pdns.dnsPort, 'ordered-http.pdns.test', 'A'), 'A').sort(), [
      '127.0.0.81',
      '127.0.0.82',
    ]);
  });

  test("the zone's ENABLE-LUA-RECORDS metadata set by hand: LUA records, evaluated, and Ready", {
    skip: unavailable,
  }, async () => {
    await run('pdnsutil', [`--config-dir=${pdns.dir}`, 'set-meta', 'pdns.test', 'ENABLE-LUA-RECORDS', '1']);
    // Read back within a minute (the backend keeps its answer that long); then LUA records go in.
    await waitFor(async () => {
      return (await programmedOf(serve, 'pdns-ordered-http'))?.status === 'True' ? true : undefined;
    }, 90_000);
    // Nothing listens on the checked ports: every candidate is down, so Ordered answers the first
    // record (evaluated), where plain records answered both.
    const { value } = await waitFor(async () => {
      const a = rdataOf(await dig(pdns.dnsPort, 'ordered-http.pdns.test', 'A'), 'A');
      return a.join() === '127.0.0.81' ? a : undefined;
    }, 30_000);
    assert.deepEqual(value, ['127.0.0.81']);
  });
});

/**
 * The policies that answer per client (Hashed, Weighted, Closest) and Random, evaluated by PowerDNS
 * (edns-subnet-processing=yes, so `bestwho` is the EDNS Client Subnet address) against the built-in
 * server, for the same client subnets: Closest answers the same; Hashed and Weighted are sticky per
 * client in both but hash differently (docs/steering.md, "PowerDNS LUA records").
 */
function perClientDocs(pdnsUrl: string, keyFile: string, web: number, db: number) {
  const topology = [
    { network: '198.51.100.0/24', regions: ['us', 'eu'] },
    { network: '203.0.113.0/24', regions: ['eu', 'us'] },
    { network: '10.0.0.0/8', regions: ['us'] },
    { network: '10.1.0.0/16', regions: ['eu'] },
  ];
  const out: object[] = [
    {
      metadata: { name: 'builtin' },
      spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.'], topology },
    },
    {
      metadata: { name: 'pdns' },
      spec: {
        backend: {
          powerdns: { url: pdnsUrl, apiKeySecretRef: { file: keyFile }, luaRecords: true, resyncSeconds: 2 },
        },
        nameServers: ['ns1.example.com.'],
        topology,
      },
    },
  ].map((c) => ({ apiVersion: API, kind: 'DNSZoneClass', ...c }));
  const http = { protocol: 'HTTP', port: web, path: '/healthz', host: 'web.example.com', ...FAST };
  const tcp = { protocol: 'TCP', port: db, ...FAST };
  for (const cls of ['builtin', 'pdns']) {
    out.push({
      apiVersion: API,
      kind: 'DNSZone',
      metadata: { name: cls, namespace: 'steer' },
      spec: { domainName: `${cls}.test`, className: cls },
    });
    const sets: [string, object, string[], object][] = [
      ['hashed', http, ['127.0.0.81', '127.0.0.82'], { policy: 'Hashed' }],
      ['hashed3', http, ['127.0.0.81', '127.0.0.82', '127.0.0.85'], { policy: 'Hashed' }],
      [
        'weighted',
        http,
        ['127.0.0.81', '127.0.0.82'],
        { policy: 'Weighted', weights: { '127.0.0.81': 3, '127.0.0.82': 1 } },
      ],
      ['random', tcp, ['127.0.0.83', '127.0.0.84'], { policy: 'Random' }],
      [
        'closest',
        http,
        ['127.0.0.81', '127.0.0.82'],
        { policy: 'Closest', regions: { '127.0.0.81': 'eu', '127.0.0.82': 'us' } },
      ],
    ];
    for (const [name, check, records, selection] of sets)
      out.push({
        apiVersion: API,
        kind: 'DNSRecordSet',
        metadata: { name: `${cls}-${name}`, namespace: 'steer' },
        spec: { zoneRef: { name: cls }, name, type: 'A', ttl: 5, records, healthCheck: check, selection },
      });
  }
  return out.map((d) => stringify(d)).join('---\n');
}

describe('steering: Hashed, Weighted, Random and Closest evaluated by PowerDNS', {
  timeout: 300_000,
}, async () => {
  const unavailable = await powerDnsAvailable('sqlite');
  let pdns: PowerDnsProcess;
  let serve: ServeProcess;
  let dir: string;
  const endpoints: Endpoint[] = [];
  let web: readonly [Endpoint, Endpoint];
  let db: readonly [Endpoint, Endpoint];
  const clients = Array.from({ length: 24 }, (_, i) => `172.16.${i * 7}.0/24`);

  before(async () => {
    if (unavailable) return;
    pdns = await startPowerDns({
      storage: 'sqlite',
      extra: [
        'enable-lua-records=yes',
        'edns-subnet-processing=yes',
        'lua-health-checks-interval=1',
        'query-cache-ttl=0',
        'cache-ttl=0',
      ],
    });
    dir = await tempDir('steer-pdns-client');
    const w1 = await httpEndpoint('127.0.0.81');
    web = [w1, await httpEndpoint('127.0.0.82', { port: w1.port })];
    const d1 = await tcpEndpoint('127.0.0.83');
    db = [d1, await tcpEndpoint('127.0.0.84', d1.port)];
    endpoints.push(...web, ...db, await httpEndpoint('127.0.0.85', { port: w1.port }));
    serve = await serveWith(
      pdns,
      dir,
      (keyFile) => perClientDocs(pdns.apiUrl, keyFile, w1.port, d1.port),
      PROBE_LOOPBACK,
    );
  });

  after(async () => {
    await serve?.stop();
    await pdns?.stop();
    await Promise.all(endpoints.map((e) => e.close()));
    if (dir) await removeAll(dir);
  });

  const servers = () => [
    { who: 'built-in', port: serve.dnsPort, zone: 'builtin.test' },
    { who: 'PowerDNS', port: pdns.dnsPort, zone: 'pdns.test' },
  ];
  const ask = async (s: { port: number; zone: string }, name: string, subnet: string) =>
    rdataOf(await dig(s.port, `${name}.${s.zone}`, 'A', { args: [`+subnet=${subnet}`] }), 'A').sort();

  /** Waits until `check` holds for the answers of every server and client, three queries in a row. */
  const settle = async (
    name: string,
    subnets: string[],
    check: (who: string, subnet: string, answer: string[]) => boolean,
  ) => {
    for (const s of servers())
      for (const subnet of subnets) {
        let last: string[] = [];
        try {
          await waitFor(async () => {
            for (let i = 0; i < 3; i++) {
              last = await ask(s, name, subnet);
              if (!check(s.who, subnet, last)) return undefined;
            }
            return true;
          }, 45_000);
        } catch {
          assert.fail(`${s.who} ${name} for ${subnet}: answered ${last.join()}\n${pdns.log().slice(-3000)}`);
        }
      }
  };

  /** Per server, per client: the single answer of a sticky policy. */
  const stickyAnswers = async (name: string) => {
    const out = new Map<string, Map<string, string>>();
    for (const s of servers()) {
      const per = new Map<string, string>();
      for (const subnet of clients) {
        const first = await ask(s, name, subnet);
        assert.equal(first.length, 1, `${s.who} ${name} ${subnet}: one record, got ${first.join()}`);
        for (let i = 0; i < 2; i++)
          assert.deepEqual(
            await ask(s, name, subnet),
            first,
            `${s.who} ${name} ${subnet}: sticky per client`,
          );
        per.set(subnet, first[0]!);
      }
      out.set(s.who, per);
    }
    return out;
  };

  test('Hashed and Weighted: one record per client, sticky, never a down one, the same again after recovery', {
    skip: unavailable,
  }, async () => {
    const one = (_w: string, _s: string, a: string[]) => a.length === 1;
    for (const name of ['hashed', 'weighted']) await settle(name, clients, one);
    const before = new Map([
      ['hashed', await stickyAnswers('hashed')],
      ['weighted', await stickyAnswers('weighted')],
    ]);
    // Weighted (3:1): most clients get the heavier record in both servers. Which client gets which
    // record differs between them by design: each hashes the client address its own way.
    for (const [who, answers] of before.get('weighted')!) {
      const heavy = [...answers.values()].filter((a) => a === '127.0.0.81').length;
      assert.ok(
        heavy > clients.length / 2,
        `${who} weighted: ${heavy} of ${clients.length} on the weight-3 record`,
      );
    }
    // The ECS scope: PowerDNS answers with the client's source prefix, the built-in server with the
    // prefix of the topology network that decided (10.1.0.0/16 here).
    const scopeOf = async (port: number, zone: string) => {
      const r = await dig(port, `closest.${zone}`, 'A', { args: ['+subnet=10.1.2.0/24'] });
      return Number(/CLIENT-SUBNET: [0-9a-f.:]+\/\d+\/(\d+)/.exec(r.raw)?.[1]);
    };
    assert.equal(await scopeOf(serve.dnsPort, 'builtin.test'), 16);
    assert.equal(await scopeOf(pdns.dnsPort, 'pdns.test'), 24);
    for (const [name, per] of before)
      for (const [who, answers] of per) {
        const counts = new Map<string, number>();
        for (const a of answers.values()) counts.set(a, (counts.get(a) ?? 0) + 1);
        assert.equal(counts.size, 2, `${who} ${name}: clients spread over both records (${[...counts]})`);
      }
    await web[0].setUp(false);
    try {
      for (const name of ['hashed', 'weighted'])
        await settle(name, clients, (_w, _s, a) => a.join() === '127.0.0.82');
    } finally {
      await web[0].setUp(true);
    }
    for (const name of ['hashed', 'weighted'])
      await settle(name, clients, (who, subnet, a) => a.join() === before.get(name)!.get(who)!.get(subnet));
  });

  test('Hashed over three records, one down: the built-in server moves only its clients, PowerDNS may move others', {
    skip: unavailable,
  }, async () => {
    await settle('hashed3', clients, (_w, _s, a) => a.length === 1);
    const before = await stickyAnswers('hashed3');
    await web[1].setUp(false);
    try {
      await settle('hashed3', clients, (_w, _s, a) => a.length === 1 && a[0] !== '127.0.0.82');
      const during = await stickyAnswers('hashed3');
      const moved = (who: string) =>
        clients.filter(
          (c) =>
            before.get(who)!.get(c) !== '127.0.0.82' && during.get(who)!.get(c) !== before.get(who)!.get(c),
        );
      // Rendezvous hashing: a client of a record still up keeps it.
      assert.deepEqual(moved('built-in'), [], "built-in: only the down record's clients move");
      // pickwhashed: the client's hash modulo the sum of the healthy records' weights, so the
      // remaining clients are dealt again (docs/steering.md says so).
      assert.ok(moved('PowerDNS').length > 0, 'PowerDNS: clients of records still up move too');
    } finally {
      await web[1].setUp(true);
    }
    await settle('hashed3', clients, (who, subnet, a) => a.join() === before.get(who)!.get(subnet));
  });

  test('Random: one healthy record per query', { skip: unavailable }, async () => {
    const healthy = new Set(['127.0.0.83', '127.0.0.84']);
    await settle('random', clients.slice(0, 4), (_w, _s, a) => a.length === 1 && healthy.has(a[0]!));
    await db[0].setUp(false);
    try {
      await settle('random', clients.slice(0, 4), (_w, _s, a) => a.join() === '127.0.0.84');
    } finally {
      await db[0].setUp(true);
    }
    const seen = new Map<string, Set<string>>();
    await settle('random', clients.slice(0, 1), (who, _s, a) => {
      if (a.length !== 1 || !healthy.has(a[0]!)) return false;
      const s = seen.get(who) ?? new Set<string>();
      seen.set(who, s.add(a[0]!));
      return s.size === 2;
    });
  });

  test('Closest: PowerDNS and the built-in server answer the same for each topology network', {
    skip: unavailable,
  }, async () => {
    const eu = '127.0.0.81';
    const us = '127.0.0.82';
    const cases: [string, string[], string[]][] = [
      // client subnet, every endpoint up, the eu endpoint down
      ['198.51.100.77/32', [us], [us]],
      ['203.0.113.0/24', [eu], [us]],
      ['10.9.0.0/16', [us], [us]],
      ['10.1.2.0/24', [eu], [us]], // the longest network (10.1.0.0/16: eu only) decides
      ['192.168.0.0/16', [eu, us], [us]], // in no network: every healthy record
    ];
    for (const [subnet, up] of cases)
      await settle('closest', [subnet], (_w, _s, a) => a.join() === up.join());
    await web[0].setUp(false);
    try {
      for (const [subnet, , down] of cases)
        await settle('closest', [subnet], (_w, _s, a) => a.join() === down.join());
    } finally {
      await web[0].setUp(true);
    }
    // 10.1.0.0/16 lists only eu: with eu down, every healthy record (here us) is answered by both.
    for (const [subnet, up] of cases)
      await settle('closest', [subnet], (_w, _s, a) => a.join() === up.join());
  });
});

describe('steering: PowerDNS is never asked to probe loopback unless the operator allows it', {
  timeout: 240_000,
}, async () => {
  const unavailable = await powerDnsAvailable('sqlite');
  let pdns: PowerDnsProcess;
  let serve: ServeProcess;
  let dir: string;

  before(async () => {
    if (unavailable) return;
    pdns = await startPowerDns({
      storage: 'sqlite',
      extra: ['enable-lua-records=yes', 'lua-health-checks-interval=1', 'query-cache-ttl=0', 'cache-ttl=0'],
    });
    dir = await tempDir('steer-pdns-deny');
    // No --health-probe-allow: the records (127.0.0.8x) are on loopback.
    serve = await serveWith(pdns, dir, (keyFile) => docs(pdns.apiUrl, keyFile, 8080, 5432));
  });
  after(async () => {
    await serve?.stop();
    await pdns?.stop();
    if (dir) await removeAll(dir);
  });

  test('no LUA record asks PowerDNS to probe them: served unsteered, not Ready, the reason given', {
    skip: unavailable,
  }, async () => {
    const { value: programmed } = await waitFor(async () => {
      const c = await programmedOf(serve, 'pdns-all-http');
      return c?.status === 'False' ? c : undefined;
    }, 30_000);
    assert.equal(programmed.reason, 'BackendRejected');
    assert.match(programmed.message, /probe 127\.0\.0\.81, 127\.0\.0\.82, a loopback.*--health-probe-allow/);
    const r = await pdns.api('GET', '/api/v1/servers/localhost/zones/pdns.test.');
    const rrsets = (r.body as { rrsets: { name: string; type: string }[] }).rrsets;
    assert.deepEqual(
      rrsets.filter((s) => s.type === 'LUA').map((s) => s.name),
      [],
    );
    assert.deepEqual(rdataOf(await dig(pdns.dnsPort, 'all-http.pdns.test', 'A'), 'A').sort(), [
      '127.0.0.81',
      '127.0.0.82',
    ]);
  });
});
