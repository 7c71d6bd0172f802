/**
 * The protocol edges of the ExternalDNS webhook provider over real HTTP: what ExternalDNS's client
 * requires (exact media type, 204), what it treats as retryable (5xx), and what callers must not get.
 * The writes themselves run through `zonekeeper serve` in test/externaldns-webhook.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import { gatedWriter } from '../../../test/support/gated-writer.ts';
import { connectionLimitTests } from '../../../test/support/http-clients.ts';
import { recordSet, zone, zoneClass } from '../../../test/support/resources.ts';
import type { DNSRecordSet } from '../../api/index.ts';
import type { RecordWriter } from '../../writes/record-writer.ts';
import { WriteError } from '../../writes/write-request.ts';
import { startExternalDnsWebhook, writableDomains } from './start.ts';
import {
  domainFilter,
  EXTERNALDNS_CREDENTIAL,
  ExternalDnsWebhook,
  MAX_WAITING_REQUESTS,
  MEDIA_TYPE,
} from './webhook.ts';

describe('the ExternalDNS webhook provider over HTTP', () => {
  let writer: RecordWriter | undefined;
  let domains: string[] | undefined;
  const refused: string[] = [];
  const hook = new ExternalDnsWebhook({
    listen: '127.0.0.1:0',
    namespace: 'team-a',
    writer: () => writer,
    recordSets: () => [],
    domains: () => domains,
    onRefused: (r) => refused.push(`${r.dnsName} ${r.code}`),
    bodyTimeoutMs: 300,
    log: () => {},
  });
  const started = hook.start();
  after(() => hook.stop());
  const url = async (path: string) => {
    await started;
    return `http://127.0.0.1:${hook.address().port}${path}`;
  };
  const post = async (path: string, body: unknown) =>
    fetch(await url(path), {
      method: 'POST',
      headers: { 'content-type': MEDIA_TYPE },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const plan = { create: [{ dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'] }] };

  test('negotiation waits for the zones (503, retryable), then answers the filter with the exact media type', async () => {
    domains = undefined;
    assert.equal((await fetch(await url('/'))).status, 503);
    domains = ['example.com'];
    const res = await fetch(await url('/'));
    assert.equal(res.headers.get('content-type'), MEDIA_TYPE);
    assert.deepEqual(await res.json(), { include: ['example.com'] });
  });

  test('no writable domain is a filter that matches nothing, not an empty one (which matches everything)', () => {
    assert.deepEqual(domainFilter([]), { regexInclude: '^$' });
  });

  test('without a writer (an operator replica that does not lead) a plan answers 503 with Retry-After', async () => {
    writer = undefined;
    const res = await post('/records', plan);
    assert.equal(res.status, 503);
    assert.ok(res.headers.get('retry-after'));
  });

  test('a rate-limited or unavailable writer answers 503; a refused endpoint 204 and is reported', async () => {
    writer = {
      apply: () => Promise.reject(new WriteError('RATE_LIMITED', 'slow down', { retryAfterSeconds: 3 })),
    };
    let res = await post('/records', plan);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '3');
    writer = { apply: () => Promise.reject(new WriteError('UNAVAILABLE', 'store down')) };
    assert.equal((await post('/records', plan)).status, 503);
    writer = {
      apply: () =>
        Promise.reject(
          new WriteError('NOT_DELEGATED', 'changes[0] a.example.com. A: not yours', { change: 0 }),
        ),
    };
    res = await post('/records', plan);
    assert.equal(res.status, 204);
    assert.ok(refused.includes('a.example.com NOT_DELEGATED'));
  });

  test('one refused change does not hold up the others of the plan', async () => {
    const applied: string[][] = [];
    writer = {
      apply: async (_c, request) => {
        const names = request.changes.map((c) => c.name);
        if (names.includes('bad.example.com.'))
          throw new WriteError('NOT_OWNER', 'not yours', { change: names.indexOf('bad.example.com.') });
        applied.push(names);
        return { namespace: 'team-a', replayed: false, changes: [] };
      },
    };
    const res = await post('/records', {
      create: [
        { dnsName: 'bad.example.com', recordType: 'A', targets: ['192.0.2.1'] },
        { dnsName: 'good.example.com', recordType: 'A', targets: ['192.0.2.2'] },
      ],
      delete: [{ dnsName: 'gone.example.com', recordType: 'A', targets: ['192.0.2.3'] }],
    });
    assert.equal(res.status, 204);
    assert.deepEqual(applied, [['gone.example.com.', 'good.example.com.']], 'deletes first, then upserts');
  });

  test('over the namespace quota: the creates are dropped and reported, deletes and updates still applied', async () => {
    const applied: string[][] = [];
    writer = {
      apply: async (_c, request) => {
        const names = request.changes.map((c) => `${c.op} ${c.name}`);
        if (names.some((n) => n.startsWith('upsert new')))
          throw new WriteError('QUOTA_EXCEEDED', 'quota of 1');
        applied.push(names);
        return { namespace: 'team-a', replayed: false, changes: [] };
      },
    };
    const res = await post('/records', {
      create: [{ dnsName: 'new.example.com', recordType: 'A', targets: ['192.0.2.1'] }],
      delete: [{ dnsName: 'old.example.com', recordType: 'A', targets: ['192.0.2.3'] }],
    });
    assert.equal(res.status, 204);
    assert.deepEqual(applied, [['delete old.example.com.']]);
    assert.ok(refused.includes('new.example.com QUOTA_EXCEEDED'));
  });

  test('two endpoints for one RRset (set identifiers) are one too many: the second is filtered', async () => {
    const res = await post('/adjustendpoints', [
      { dnsName: 'w.example.com', recordType: 'A', targets: ['192.0.2.1'], setIdentifier: 'eu' },
      { dnsName: 'w.example.com', recordType: 'A', targets: ['192.0.2.2'], setIdentifier: 'us' },
      { dnsName: 'w.example.com', recordType: 'SOA', targets: ['x'] },
    ]);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), MEDIA_TYPE);
    const kept = (await res.json()) as { setIdentifier?: string }[];
    assert.deepEqual(
      kept.map((e) => e.setIdentifier),
      ['eu'],
    );
  });

  test('a plan is not read while the namespace has spent its write rate: 503 with Retry-After, body unparsed', async () => {
    let applied = 0;
    writer = {
      apply: async () => {
        applied++;
        return { namespace: 'team-a', replayed: false, changes: [] };
      },
      rateWait: () => 4,
    };
    // Not JSON: parsed, it would answer 400; unread, the rate answers first.
    const res = await post('/records', '{not json');
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '4');
    assert.match(await res.text(), /RATE_LIMITED/);
    assert.equal(applied, 0);
  });

  test('POSTs are taken one at a time with a few waiting; the rest answer 503 before their body is read', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    let applied = 0;
    writer = {
      apply: async () => {
        applied++;
        await held;
        return { namespace: 'team-a', replayed: false, changes: [] };
      },
    };
    const first = post('/records', plan);
    await waitUntil(() => applied === 1);
    const waiting = Array.from({ length: MAX_WAITING_REQUESTS }, () => post('/records', plan));
    // Admitted ones wait; one more is refused at once.
    await waitUntil(() => hook.pending === 1 + MAX_WAITING_REQUESTS);
    const busy = await post('/adjustendpoints', [plan.create[0]]);
    assert.equal(busy.status, 503);
    assert.ok(busy.headers.get('retry-after'));
    assert.match(await busy.text(), /BUSY/);
    release();
    for (const res of [await first, ...(await Promise.all(waiting))]) assert.equal(res.status, 204);
    assert.equal(applied, 1 + MAX_WAITING_REQUESTS);
    // Answered again once the queue drained.
    assert.equal((await post('/adjustendpoints', [plan.create[0]])).status, 200);
  });

  test('a POST whose body trickles is answered 408 and its connection closed: it holds no one up', async () => {
    writer = { apply: async () => ({ namespace: 'team-a', replayed: false, changes: [] }) };
    await started;
    const socket = net.connect(hook.address().port, '127.0.0.1');
    let answer = '';
    let closed = false;
    socket.on('data', (d) => {
      answer += d.toString('utf8');
    });
    socket.on('close', () => {
      closed = true;
    });
    socket.on('error', () => {});
    // Headers and part of the body, then nothing more.
    socket.write(
      `POST /records HTTP/1.1\r\nhost: x\r\ncontent-type: ${MEDIA_TYPE}\r\ncontent-length: 1000\r\n\r\n{"create":`,
    );
    const next = post('/records', plan);
    await waitUntil(() => closed);
    assert.match(answer, /^HTTP\/1\.1 408/);
    assert.match(answer, /BODY_TIMEOUT/);
    assert.equal((await next).status, 204);
  });

  test('bodies that are not JSON, wrong methods and unknown paths are refused', async () => {
    assert.equal((await post('/records', '{not json')).status, 400);
    assert.equal((await fetch(await url('/records'), { method: 'DELETE' })).status, 405);
    assert.equal((await fetch(await url('/nope'))).status, 404);
  });
});

async function waitUntil(f: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(f(), 'the condition did not come true');
}

describe('the domains a namespace may write', () => {
  const zone = (namespace: string, domainName: string, delegations?: unknown[]) =>
    ({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSZone',
      metadata: { name: domainName.replace(/\./g, '-'), namespace },
      spec: { domainName, className: 'c', ...(delegations ? { delegations } : {}) },
    }) as never;

  test('its own zones and what delegations of other namespaces give it, nothing else', () => {
    assert.deepEqual(
      writableDomains(
        [
          zone('team-a', 'a.example.org'),
          zone('platform', 'example.com', [
            { namespaces: ['team-a'], names: ['*.apps', 'api'] },
            { namespaces: ['team-b'], names: ['*.b'] },
            { namespacePatterns: ['team-*'], names: ['@'], types: ['TXT'] },
          ]),
          zone('team-b', 'b.example.org'),
          zone('platform', 'example.net', [{ names: ['*'] }]),
        ],
        'team-a',
      ),
      // `@` of the pattern admits the whole zone's name, which holds the two below it.
      ['a.example.org', 'example.com'],
    );
    assert.deepEqual(
      writableDomains(
        [zone('platform', 'example.com', [{ namespaces: ['team-a'], names: ['*.apps'] }])],
        'team-a',
      ),
      ['apps.example.com'],
    );
  });
});

describe('the ExternalDNS webhook provider holds unauthenticated clients to its connection limits', () => {
  const listener = new ExternalDnsWebhook({
    listen: '127.0.0.1:0',
    namespace: 'team-a',
    writer: () => undefined,
    recordSets: () => [],
    domains: () => ['example.com'],
    connectionLimits: { maxConnectionsPerClient: 2, headersTimeoutMs: 100, keepAliveTimeoutMs: 60_000 },
    log: () => {},
  });
  connectionLimitTests(listener, '/');
});

describe('the ExternalDNS webhook provider judges a large body in steps', () => {
  let judged = 0;
  const hook = new ExternalDnsWebhook({
    listen: '127.0.0.1:0',
    namespace: 'team-a',
    writer: () => undefined,
    recordSets: () => [],
    domains: () => ['example.com'],
    precheck: (fqdn) => {
      judged++;
      return /^r\d*[05]\./.test(fqdn)
        ? { code: 'NOT_DELEGATED', message: `${fqdn} is not delegated` }
        : undefined;
    },
    yieldEvery: 50,
    log: () => {},
  });
  const started = hook.start();
  after(() => hook.stop());

  test('hostile client: /adjustendpoints with thousands of endpoints lets the event loop turn, and filters as before', async () => {
    await started;
    const endpoints: unknown[] = [];
    for (let i = 0; i < 2000; i++)
      endpoints.push({ dnsName: `r${i}.example.com`, recordType: 'A', targets: ['192.0.2.1'] });
    // Refused without the precheck: malformed, and a second endpoint for an RRset.
    endpoints.push({ dnsName: 'bad.example.com', recordType: 'SOA', targets: ['ns. host. 1 2 3 4 5'] });
    endpoints.push({
      dnsName: 'r1.example.com',
      recordType: 'A',
      targets: ['192.0.2.2'],
      setIdentifier: 'b',
    });
    const expected = endpoints.filter((e) => {
      const { dnsName, setIdentifier } = e as { dnsName: string; setIdentifier?: string };
      return !/^r\d*[05]\./.test(dnsName) && dnsName !== 'bad.example.com' && setIdentifier === undefined;
    });
    // What the event loop saw while the request was judged: how many endpoints were judged at each turn.
    const seen = new Set<number>();
    let watching = true;
    const watch = () => {
      seen.add(judged);
      if (watching) setImmediate(watch);
    };
    const response = fetch(`http://127.0.0.1:${hook.address().port}/adjustendpoints`, {
      method: 'POST',
      headers: { 'content-type': MEDIA_TYPE },
      body: JSON.stringify(endpoints),
    });
    watch();
    const res = await response;
    const body = await res.json();
    watching = false;
    assert.equal(res.status, 200);
    assert.deepEqual(body, expected);
    assert.equal(judged, 2000);
    const between = [...seen].filter((n) => n > 0 && n < judged);
    assert.ok(between.length >= 10, `turns seen while judging: ${[...seen].join(', ')}`);
  });
});

describe('the ExternalDNS webhook provider refuses an endpoint the zone would never serve beside a CNAME (RFC 1034 §3.6.2)', () => {
  // Zone example.com of namespace dns delegates apps.example.com and below to team-a, and defines a
  // CNAME at cdn.apps.example.com and a TXT at data.apps.example.com by manifest.
  const manifest = (name: string, type: 'CNAME' | 'TXT', records: string[]) =>
    recordSet('dns', `m-${type.toLowerCase()}`, { name, type, records }, 60);
  const setup = gatedWriter({
    classes: [zoneClass('builtin', ['ns1.example.com.'])],
    zones: [
      zone('dns', 'example', 'example.com', { delegations: [{ namespaces: ['team-a'], names: ['*.apps'] }] }),
    ],
    records: [
      manifest('cdn.apps.example.com.', 'CNAME', ['edge.example.net.']),
      manifest('data.apps.example.com.', 'TXT', ['"v=spf1 -all"']),
    ],
    credentials: {
      get: (name) =>
        name === EXTERNALDNS_CREDENTIAL
          ? { name, kind: 'externaldns-webhook', namespace: 'team-a' }
          : undefined,
      quota: () => ({ maxRecordSets: 100, requestsPerSecond: 1000, burst: 1000 }),
    },
  });
  const refused: string[] = [];
  const hook = (async () => {
    const w = await setup;
    return startExternalDnsWebhook({
      settings: { listen: '127.0.0.1:0', namespace: 'team-a' },
      writer: () => w.writer,
      store: w.store,
      gate: () => w.gate,
      loaded: () => true,
      onRefused: (r) => refused.push(`${r.stage} ${r.dnsName} ${r.recordType} ${r.code} ${r.message}`),
      log: () => {},
    });
  })();
  after(async () => {
    (await hook).stop();
    await (await setup).close();
  });
  const post = async (path: string, body: unknown) =>
    fetch(`http://127.0.0.1:${(await hook).address().port}${path}`, {
      method: 'POST',
      headers: { 'content-type': MEDIA_TYPE },
      body: JSON.stringify(body),
    });

  test('/adjustendpoints filters it out at once and reports NAME_CONFLICT, naming no object of another namespace', async () => {
    refused.length = 0;
    const res = await post('/adjustendpoints', [
      { dnsName: 'cdn.apps.example.com', recordType: 'A', targets: ['192.0.2.1'] },
      { dnsName: 'data.apps.example.com', recordType: 'CNAME', targets: ['lb.example.net'] },
      { dnsName: 'web.apps.example.com', recordType: 'A', targets: ['192.0.2.2'] },
    ]);
    assert.equal(res.status, 200);
    const kept = (await res.json()) as { dnsName: string }[];
    assert.deepEqual(
      kept.map((e) => e.dnsName),
      ['web.apps.example.com'],
    );
    assert.equal(refused.length, 2, refused.join('\n'));
    for (const r of refused) {
      assert.match(r, /^adjustendpoints \S+ \S+ NAME_CONFLICT .*cannot coexist with the (CNAME|TXT)/);
      assert.doesNotMatch(r, /dns\/|m-cname|m-txt/);
    }
  });

  test('a plan that writes it anyway: the endpoint is dropped and reported, the rest written (204)', async () => {
    refused.length = 0;
    const res = await post('/records', {
      create: [
        { dnsName: 'cdn.apps.example.com', recordType: 'TXT', targets: ['"heritage=external-dns"'] },
        { dnsName: 'web.apps.example.com', recordType: 'A', targets: ['192.0.2.2'] },
      ],
    });
    assert.equal(res.status, 204);
    assert.equal(refused.length, 1, refused.join('\n'));
    assert.match(refused[0]!, /^records cdn\.apps\.example\.com TXT NAME_CONFLICT /);
    const written = (await setup).store
      .list('DNSRecordSet')
      .map((r) => `${(r as DNSRecordSet).spec.name} ${(r as DNSRecordSet).spec.type}`);
    assert.deepEqual(written, ['web.apps.example.com. A']);
  });

  test('its own endpoint changing type (CNAME to A and back, as a load balancer gets an address) is not refused for the RRset it replaces', async () => {
    // Regression: the provider judged the new RRset beside its own old one, which the plan deletes:
    // /adjustendpoints filtered the A out, and a plan deleting the CNAME and creating the A deleted
    // the CNAME and refused the A, so the name was not served until a later sync.
    const names = async () =>
      (await setup).store
        .list('DNSRecordSet')
        .map((r) => `${(r as DNSRecordSet).spec.name} ${(r as DNSRecordSet).spec.type}`)
        .filter((n) => n.startsWith('lb.'));
    const cname = { dnsName: 'lb.apps.example.com', recordType: 'CNAME', targets: ['edge.example.net'] };
    const a = { dnsName: 'lb.apps.example.com', recordType: 'A', targets: ['192.0.2.7'] };
    assert.equal((await post('/records', { create: [cname] })).status, 204);
    assert.deepEqual(await names(), ['lb.apps.example.com. CNAME']);
    for (const [from, to] of [
      [cname, a],
      [a, cname],
    ] as const) {
      refused.length = 0;
      const adjusted = await post('/adjustendpoints', [to]);
      assert.deepEqual(await adjusted.json(), [to], `${from.recordType} to ${to.recordType}: ${refused}`);
      const res = await post('/records', { create: [to], delete: [from] });
      assert.equal(res.status, 204);
      assert.deepEqual(refused, []);
      assert.deepEqual(await names(), [`lb.apps.example.com. ${to.recordType}`]);
    }
    // Another's CNAME is still in the way, whatever the plan deletes of its own.
    refused.length = 0;
    const res = await post('/records', {
      create: [{ dnsName: 'cdn.apps.example.com', recordType: 'A', targets: ['192.0.2.9'] }],
      delete: [{ dnsName: 'cdn.apps.example.com', recordType: 'CNAME', targets: ['edge.example.net'] }],
    });
    assert.equal(res.status, 204);
    assert.match(refused.join('\n'), /cdn\.apps\.example\.com A NAME_CONFLICT/);
  });
});
