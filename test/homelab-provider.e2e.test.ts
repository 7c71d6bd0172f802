/**
 * Zonekeeper as a provider of the homelab DNS webhook protocol, through `zonekeeper serve
 * --homelab-api`: an independent client (Python's standard library, test/support/homelab_client.py)
 * writes each record type and dig answers it; replays, stale timestamps, bad signatures and invalid
 * values are refused over HTTP with the protocol's codes and write nothing; a caller cannot write
 * outside its namespace's delegations, over a manifest's record set or over another caller's; two
 * callers land in two namespaces; writes survive a restart, and a request replayed after the restart
 * is answered from the writer's replay memory, not applied again; a flood of signed requests keeps
 * the nonce cache bounded.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { formatTimestamp, sign } from '../src/homelab-protocol/signature.ts';
import { dig, rdataOf } from './support/dig.ts';
import {
  ROOT,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const PY_CLIENT = path.join(ROOT, 'test/support/homelab_client.py');

const MANIFESTS = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: {name: builtin}
spec:
  backend: {builtin: {}}
  nameServers: [ns1.example.com.]
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: {name: example, namespace: dns}
spec:
  domainName: example.com
  className: builtin
  delegations:
    - {namespaces: [team-a], names: ['a', '*.a']}
    - {namespaces: [team-b], names: ['b', '*.b']}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: manifest-m, namespace: team-a}
spec: {name: m.a.example.com., type: A, records: [198.51.100.1]}
`;

const SECRETS = { a: 'secret-of-caller-a', b: 'secret-of-caller-b', single: 'the-one-caller' };

interface Reply {
  status: number;
  body: {
    success?: boolean;
    error?: { code: string; message: string };
    record?: Record<string, unknown>;
  } & Record<string, unknown>;
  nonce: string;
  headers?: Headers;
}

describe('zonekeeper serve --homelab-api', () => {
  let dir: string;
  let manifests: string;
  let state: string;
  let zk: ServeProcess;
  let api: string;
  const secretFile = (who: keyof typeof SECRETS) => path.join(dir, `secret-${who}`);
  const extra = () => [
    '--write-access',
    path.join(dir, 'access.yaml'),
    '--homelab-api',
    '127.0.0.1:0',
    '--homelab-api-secret-file',
    secretFile('single'),
    '--homelab-api-namespace',
    'team-a',
  ];
  const homelabUrl = (p: ServeProcess) => {
    const m = /homelabApi="127\.0\.0\.1:(\d+)"/.exec(p.log());
    assert.ok(m, p.log());
    return `http://127.0.0.1:${m[1]}`;
  };

  before(async () => {
    dir = await tempDir('homelab');
    manifests = path.join(dir, 'manifests');
    state = path.join(dir, 'state');
    await run('mkdir', ['-p', manifests]);
    await writeFile(path.join(manifests, 'zone.yaml'), MANIFESTS);
    for (const who of Object.keys(SECRETS) as (keyof typeof SECRETS)[])
      await writeFile(secretFile(who), `${SECRETS[who]}\n`);
    await writeFile(
      path.join(dir, 'access.yaml'),
      `credentials:
  - {name: caller-a, kind: webhook-hmac, namespace: team-a, secretRef: {file: ${secretFile('a')}}}
  - {name: caller-b, kind: webhook-hmac, namespace: team-b, secretRef: {file: ${secretFile('b')}}}
quotas:
  team-b: {maxRecordSets: 3}
defaultQuota: {requestsPerSecond: 1000, burst: 1000}
`,
    );
    zk = await startServe(manifests, state, extra());
    api = homelabUrl(zk);
  });
  after(async () => {
    await zk?.stop();
    await removeAll(dir);
  });

  /** A request signed by the independent Python client. */
  async function py(
    who: keyof typeof SECRETS,
    method: string,
    urlPath: string,
    body?: unknown,
    flags: string[] = [],
  ): Promise<Reply> {
    const args = [PY_CLIENT, api, secretFile(who), method, urlPath];
    if (body !== undefined) args.push(typeof body === 'string' ? body : JSON.stringify(body));
    const { stdout } = await run('python3', [...args, ...flags], { timeout: 30_000 });
    return JSON.parse(stdout) as Reply;
  }

  /** A request signed here with the shared signature module (SHA-256). */
  async function signed(
    who: keyof typeof SECRETS | { secret: string },
    method: string,
    urlPath: string,
    body?: string,
    at: { nonce?: string; timestamp?: string } = {},
  ): Promise<Reply> {
    const secret = typeof who === 'string' ? SECRETS[who] : who.secret;
    const nonce = at.nonce ?? randomUUID();
    const timestamp = at.timestamp ?? formatTimestamp(new Date());
    const signature = sign(secret, 'SHA256', { method, path: urlPath, timestamp, nonce, body });
    const res = await fetch(`${api}${urlPath}`, {
      method,
      headers: {
        'X-DNS-Timestamp': timestamp,
        'X-DNS-Nonce': nonce,
        'X-DNS-Signature': signature,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body } : {}),
    });
    return { status: res.status, body: (await res.json()) as Reply['body'], nonce, headers: res.headers };
  }

  const upsertBody = (record: Record<string, unknown>) => ({ record, operation: 'upsert' });
  const answers = async (name: string, type: string) => rdataOf(await dig(zk.dnsPort, name, type), type);
  /** Polls dig until the answer is `expected` (the write is served as any record set: shortly after). */
  const served = async (name: string, type: string, expected: string[]) => {
    const want = JSON.stringify([...expected].sort());
    await waitFor(async () =>
      JSON.stringify((await answers(name, type)).sort()) === want ? true : undefined,
    );
  };

  test('the Python client writes each record type; dig answers; GET reads back; DELETE is idempotent', async () => {
    const health = await py('a', 'GET', '/health');
    assert.equal(health.status, 200);
    assert.equal(health.body.status, 'healthy');

    const cases: { record: Record<string, unknown>; dig: [string, string, string[]] }[] = [
      {
        record: {
          type: 'A',
          domain: 'example.com',
          subdomain: 'www.a',
          values: ['192.0.2.1', '192.0.2.2'],
          ttl: 60,
        },
        dig: ['www.a.example.com', 'A', ['192.0.2.1', '192.0.2.2']],
      },
      {
        record: { type: 'AAAA', domain: 'a.example.com', subdomain: 'v6', values: ['2001:db8::1'] },
        dig: ['v6.a.example.com', 'AAAA', ['2001:db8::1']],
      },
      {
        record: { type: 'CNAME', domain: 'a.example.com', subdomain: 'alias', values: ['www.a.example.com'] },
        dig: ['alias.a.example.com', 'CNAME', ['www.a.example.com.']],
      },
      {
        record: {
          type: 'TXT',
          domain: 'a.example.com',
          subdomain: '_acme-challenge',
          values: ['token "quoted" ✓', 'x'.repeat(300)],
        },
        dig: [
          '_acme-challenge.a.example.com',
          'TXT',
          ['"token \\"quoted\\" \\226\\156\\147"', `"${'x'.repeat(255)}" "${'x'.repeat(45)}"`],
        ],
      },
      {
        // The reference client sends no priority: the default is 10.
        record: { type: 'MX', domain: 'a.example.com', subdomain: '@', values: ['mail.a.example.com'] },
        dig: ['a.example.com', 'MX', ['10 mail.a.example.com.']],
      },
      {
        record: {
          type: 'SRV',
          domain: 'a.example.com',
          subdomain: '_sip._tcp',
          values: ['sip.a.example.com'],
          metadata: { priority: 5, weight: 20, port: 5060 },
        },
        dig: ['_sip._tcp.a.example.com', 'SRV', ['5 20 5060 sip.a.example.com.']],
      },
      {
        record: { type: 'NS', domain: 'a.example.com', subdomain: 'lab', values: ['ns1.lab.example.net'] },
        dig: ['lab.a.example.com', 'NS', []],
      },
    ];
    for (const c of cases) {
      const reply = await py('a', 'POST', '/records', upsertBody(c.record));
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.body.success, true);
      assert.equal(reply.body.message, 'Record created successfully');
      if (c.dig[2].length > 0) await served(...c.dig);
    }
    // NS below the apex is a delegation: answered as a referral.
    await waitFor(async () => {
      const r = await dig(zk.dnsPort, 'host.lab.a.example.com', 'A');
      return r.authority.some((l) => l.endsWith('NS ns1.lab.example.net.')) ? true : undefined;
    });

    // GET reads each back as written (names without the trailing dot, MX/SRV numbers in metadata).
    const mx = await py('a', 'GET', '/records/MX/a.example.com/@');
    assert.equal(mx.status, 200);
    assert.deepEqual(mx.body.record, {
      type: 'MX',
      domain: 'a.example.com',
      subdomain: '@',
      fqdn: 'a.example.com',
      values: ['mail.a.example.com'],
      ttl: 300,
      metadata: { priority: 10 },
    });
    const txt = await py('a', 'GET', '/records/TXT/a.example.com/_acme-challenge');
    assert.deepEqual(txt.body.record?.values, ['token "quoted" ✓', 'x'.repeat(300)]);

    // An upsert replaces the whole record set; the same upsert again changes nothing.
    const again = upsertBody({
      type: 'A',
      domain: 'example.com',
      subdomain: 'www.a',
      values: ['192.0.2.3'],
      ttl: 60,
    });
    assert.equal((await py('a', 'POST', '/records', again)).body.message, 'Record updated successfully');
    assert.equal((await py('a', 'POST', '/records', again)).body.message, 'Record unchanged');
    await served('www.a.example.com', 'A', ['192.0.2.3']);

    const del = await py('a', 'DELETE', '/records/A/example.com/www.a');
    assert.equal(del.status, 200);
    assert.equal(del.body.message, 'Record deleted successfully');
    await waitFor(async () => ((await answers('www.a.example.com', 'A')).length === 0 ? true : undefined));
    const delAgain = await py('a', 'DELETE', '/records/A/example.com/www.a');
    assert.equal(delAgain.status, 200);
    assert.equal(delAgain.body.success, true);
    const gone = await py('a', 'GET', '/records/A/example.com/www.a');
    assert.equal(gone.status, 404);
    assert.equal(gone.body.error?.code, 'RECORD_NOT_FOUND');

    // SHA-512 signatures verify too.
    const sha512 = await py('a', 'GET', '/records/MX/a.example.com/@', undefined, ['--algorithm', 'SHA512']);
    assert.equal(sha512.status, 200);
  });

  test('replayed, stale, badly signed and unsigned requests are refused with 401 and write nothing', async () => {
    const v1 = upsertBody({
      type: 'A',
      domain: 'a.example.com',
      subdomain: 'replay',
      values: ['192.0.2.10'],
    });
    const first = await py('a', 'POST', '/records', v1);
    assert.equal(first.status, 200);
    const v2 = upsertBody({
      type: 'A',
      domain: 'a.example.com',
      subdomain: 'replay',
      values: ['192.0.2.20'],
    });
    assert.equal((await py('a', 'POST', '/records', v2)).status, 200);
    await served('replay.a.example.com', 'A', ['192.0.2.20']);

    // The first request again, same nonce (and a fresh signature over it): refused, v2 stays.
    const replay = await py('a', 'POST', '/records', v1, ['--nonce', first.nonce]);
    assert.equal(replay.status, 401);
    assert.equal(replay.body.error?.code, 'NONCE_REUSED');
    // A nonce seen on one endpoint is seen on all of them.
    assert.equal(
      (await py('a', 'GET', '/health', undefined, ['--nonce', first.nonce])).body.error?.code,
      'NONCE_REUSED',
    );

    for (const skew of ['-360', '360']) {
      const stale = await py('a', 'POST', '/records', v1, ['--skew-seconds', skew]);
      assert.equal(stale.status, 401);
      assert.equal(stale.body.error?.code, 'TIMESTAMP_STALE');
    }
    const tampered = await py('a', 'POST', '/records', v1, ['--tamper']);
    assert.equal(tampered.status, 401);
    assert.equal(tampered.body.error?.code, 'AUTH_FAILED');
    // A nonce whose request failed verification is not remembered: the genuine request still passes.
    const wrongSecret = await signed({ secret: 'not-the-secret' }, 'GET', '/records/A/a.example.com/replay');
    assert.equal(wrongSecret.status, 401);
    assert.equal(wrongSecret.body.error?.code, 'AUTH_FAILED');
    assert.equal(
      (await signed('a', 'GET', '/records/A/a.example.com/replay', undefined, { nonce: wrongSecret.nonce }))
        .status,
      200,
    );
    // A body other than the one signed.
    const nonce = randomUUID();
    const timestamp = formatTimestamp(new Date());
    const signature = sign(SECRETS.a, 'SHA256', {
      method: 'POST',
      path: '/records',
      timestamp,
      nonce,
      body: JSON.stringify(v2),
    });
    const swapped = await fetch(`${api}/records`, {
      method: 'POST',
      headers: { 'X-DNS-Timestamp': timestamp, 'X-DNS-Nonce': nonce, 'X-DNS-Signature': signature },
      body: JSON.stringify(v1),
    });
    assert.equal(swapped.status, 401);
    const unsigned = await fetch(`${api}/records`, { method: 'POST', body: JSON.stringify(v1) });
    assert.equal(unsigned.status, 401);
    assert.equal(((await unsigned.json()) as Reply['body']).error?.code, 'AUTH_FAILED');
    await served('replay.a.example.com', 'A', ['192.0.2.20']);

    // Invalid records: 400 with the protocol's codes, nothing written.
    const bad: [Record<string, unknown>, string][] = [
      [{ type: 'A', domain: 'a.example.com', subdomain: 'bad', values: ['192.0.2.300'] }, 'INVALID_VALUE'],
      [{ type: 'AAAA', domain: 'a.example.com', subdomain: 'bad', values: ['192.0.2.1'] }, 'INVALID_VALUE'],
      [
        {
          type: 'CNAME',
          domain: 'a.example.com',
          subdomain: 'bad',
          values: ['x.example.com', 'y.example.com'],
        },
        'INVALID_VALUE',
      ],
      [{ type: 'A', domain: 'a..example.com', subdomain: 'bad', values: ['192.0.2.1'] }, 'INVALID_DOMAIN'],
      [{ type: 'A', domain: 'a.example.com', subdomain: 'b d', values: ['192.0.2.1'] }, 'INVALID_DOMAIN'],
      [
        { type: 'SRV', domain: 'a.example.com', subdomain: '_x._tcp', values: ['h.example.com'] },
        'INVALID_RECORD',
      ],
      [
        { type: 'PTR', domain: 'a.example.com', subdomain: 'bad', values: ['h.example.com'] },
        'INVALID_RECORD',
      ],
    ];
    for (const [record, code] of bad) {
      const reply = await py('a', 'POST', '/records', upsertBody(record));
      assert.equal(reply.status, 400, JSON.stringify(record));
      assert.equal(reply.body.error?.code, code, JSON.stringify(reply.body));
    }
    const notJson = await py('a', 'POST', '/records', '{"record":');
    assert.equal(notJson.body.error?.code, 'INVALID_RECORD');
    assert.equal((await dig(zk.dnsPort, 'bad.a.example.com', 'A')).status, 'NXDOMAIN');

    // Bodies are bounded.
    const huge = await signed(
      'a',
      'POST',
      '/records',
      JSON.stringify({ record: { pad: 'x'.repeat(70_000) } }),
    );
    assert.equal(huge.status, 413);
  });

  test('a caller writes only within its namespace: delegations, manifests and other callers hold', async () => {
    // team-b's caller is not delegated a.example.com.
    const outside = await py(
      'b',
      'POST',
      '/records',
      upsertBody({ type: 'A', domain: 'a.example.com', subdomain: 'evil', values: ['203.0.113.1'] }),
    );
    assert.equal(outside.status, 403);
    assert.equal(outside.body.error?.code, 'NOT_DELEGATED');
    // Nor the zone apex, nor a name in no served zone.
    for (const [domain, subdomain] of [
      ['example.com', '@'],
      ['example.org', 'www'],
    ] as const) {
      const r = await py(
        'b',
        'POST',
        '/records',
        upsertBody({ type: 'A', domain, subdomain, values: ['203.0.113.1'] }),
      );
      assert.equal(r.body.error?.code, 'NOT_DELEGATED', JSON.stringify(r.body));
    }
    assert.equal((await dig(zk.dnsPort, 'evil.a.example.com', 'A')).status, 'NXDOMAIN');

    // The manifest's record set is older: the API's write of the same name and type is not served,
    // and a DELETE by the caller cannot remove the manifest's.
    const over = await py(
      'a',
      'POST',
      '/records',
      upsertBody({ type: 'A', domain: 'a.example.com', subdomain: 'm', values: ['203.0.113.66'] }),
    );
    assert.equal(over.status, 200);
    await py(
      'a',
      'POST',
      '/records',
      upsertBody({ type: 'A', domain: 'a.example.com', subdomain: 'probe', values: ['192.0.2.99'] }),
    );
    await served('probe.a.example.com', 'A', ['192.0.2.99']);
    assert.deepEqual(await answers('m.a.example.com', 'A'), ['198.51.100.1']);
    assert.equal((await py('a', 'DELETE', '/records/A/a.example.com/m')).status, 200);
    assert.equal(
      (await py('a', 'DELETE', '/records/A/a.example.com/m')).body.message,
      'Record does not exist; nothing to delete',
    );
    assert.deepEqual(await answers('m.a.example.com', 'A'), ['198.51.100.1']);

    // Two callers of one namespace: one's record set is not the other's to change, delete or read.
    const mine = await py(
      'single',
      'POST',
      '/records',
      upsertBody({ type: 'A', domain: 'a.example.com', subdomain: 'single', values: ['192.0.2.50'] }),
    );
    assert.equal(mine.status, 200);
    const theirs = await py(
      'a',
      'POST',
      '/records',
      upsertBody({ type: 'A', domain: 'a.example.com', subdomain: 'single', values: ['203.0.113.50'] }),
    );
    assert.equal(theirs.status, 403);
    assert.equal(theirs.body.error?.code, 'NOT_OWNER');
    assert.equal((await py('a', 'DELETE', '/records/A/a.example.com/single')).body.error?.code, 'NOT_OWNER');
    assert.equal((await py('a', 'GET', '/records/A/a.example.com/single')).status, 404);
    assert.equal((await py('single', 'GET', '/records/A/a.example.com/single')).status, 200);
    await served('single.a.example.com', 'A', ['192.0.2.50']);

    // The namespace's quota (team-b: 3 record sets) holds.
    for (const n of [1, 2, 3])
      assert.equal(
        (
          await py(
            'b',
            'POST',
            '/records',
            upsertBody({ type: 'A', domain: 'b.example.com', subdomain: `q${n}`, values: ['192.0.2.1'] }),
          )
        ).status,
        200,
      );
    const fourth = await py(
      'b',
      'POST',
      '/records',
      upsertBody({ type: 'A', domain: 'b.example.com', subdomain: 'q4', values: ['192.0.2.1'] }),
    );
    assert.equal(fourth.status, 403);
    assert.equal(fourth.body.error?.code, 'QUOTA_EXCEEDED');
  });

  test('two callers with different secrets land in their own namespaces, visible in the resources API and status', async () => {
    const resources = async () =>
      (
        (await (await fetch(`${zk.httpUrl}/api/v1/resources`)).json()) as {
          items: {
            kind: string;
            metadata: { name: string; namespace?: string; labels?: Record<string, string> };
            spec: { name?: string };
          }[];
        }
      ).items.filter(
        (o) => o.kind === 'DNSRecordSet' && o.metadata.labels?.['dns.zonekeeper.dev/written-by'],
      );
    const written = await resources();
    const by = (credential: string) =>
      written.filter((o) => o.metadata.labels?.['dns.zonekeeper.dev/written-by'] === credential);
    assert.ok(by('caller-a').length > 0);
    assert.ok(by('caller-a').every((o) => o.metadata.namespace === 'team-a'));
    assert.ok(by('caller-b').length > 0);
    assert.ok(by('caller-b').every((o) => o.metadata.namespace === 'team-b'));
    assert.ok(by('homelab-api').every((o) => o.metadata.namespace === 'team-a'));
    assert.ok(by('caller-b').some((o) => o.spec.name === 'q1.b.example.com.'));
    const { stdout } = await run(process.execPath, [
      path.join(ROOT, 'src/cli/main.ts'),
      'status',
      '--http',
      zk.httpUrl,
    ]);
    assert.match(stdout, /q1\.b\.example\.com/);
  });

  test('writes survive a restart; a request replayed after it is answered, not applied again', async () => {
    const body = JSON.stringify(
      upsertBody({ type: 'A', domain: 'a.example.com', subdomain: 'durable', values: ['192.0.2.61'] }),
    );
    const at = { nonce: randomUUID(), timestamp: formatTimestamp(new Date()) };
    assert.equal((await signed('a', 'POST', '/records', body, at)).status, 200);
    const later = JSON.stringify(
      upsertBody({ type: 'A', domain: 'a.example.com', subdomain: 'durable', values: ['192.0.2.62'] }),
    );
    assert.equal((await signed('a', 'POST', '/records', later)).status, 200);
    await served('durable.a.example.com', 'A', ['192.0.2.62']);

    await zk.stop();
    zk = await startServe(manifests, state, extra());
    api = homelabUrl(zk);
    // Served at once after the restart (read from the state folder before the first reconcile).
    assert.deepEqual(await answers('durable.a.example.com', 'A'), ['192.0.2.62']);
    assert.deepEqual(await answers('m.a.example.com', 'A'), ['198.51.100.1']);
    // The nonce cache is empty now; the captured request, byte for byte, meets the writer's replay
    // memory (the nonce is its request id): answered, and the later write stays.
    const replay = await signed('a', 'POST', '/records', body, at);
    assert.equal(replay.status, 200);
    assert.deepEqual(await answers('durable.a.example.com', 'A'), ['192.0.2.62']);
    assert.equal(
      (await py('a', 'GET', '/records/A/a.example.com/durable')).body.record?.values?.toString(),
      '192.0.2.62',
    );
  });
});

describe('the nonce cache under a flood of signed requests', () => {
  test('stays within --homelab-api-max-nonces, refuses the excess with 429, and spares other callers', async () => {
    const dir = await tempDir('homelab-flood');
    const manifests = path.join(dir, 'manifests');
    await run('mkdir', ['-p', manifests]);
    await writeFile(path.join(manifests, 'zone.yaml'), MANIFESTS);
    await writeFile(path.join(dir, 'a'), SECRETS.a);
    await writeFile(path.join(dir, 'b'), SECRETS.b);
    await writeFile(
      path.join(dir, 'access.yaml'),
      `credentials:
  - {name: caller-a, kind: webhook-hmac, namespace: team-a, secretRef: {file: ${path.join(dir, 'a')}}}
  - {name: caller-b, kind: webhook-hmac, namespace: team-b, secretRef: {file: ${path.join(dir, 'b')}}}
`,
    );
    const cap = 300;
    const zk = await startServe(manifests, path.join(dir, 'state'), [
      '--write-access',
      path.join(dir, 'access.yaml'),
      '--homelab-api',
      '127.0.0.1:0',
      '--homelab-api-max-nonces',
      String(cap),
    ]);
    try {
      const url = `http://127.0.0.1:${/homelabApi="127\.0\.0\.1:(\d+)"/.exec(zk.log())![1]}`;
      const health = async (secret: string, nonce = randomUUID()) => {
        const timestamp = formatTimestamp(new Date());
        const res = await fetch(`${url}/health`, {
          headers: {
            'X-DNS-Timestamp': timestamp,
            'X-DNS-Nonce': nonce,
            'X-DNS-Signature': sign(secret, 'SHA256', { method: 'GET', path: '/health', timestamp, nonce }),
          },
        });
        await res.arrayBuffer();
        return { status: res.status, retryAfter: res.headers.get('retry-after') };
      };
      const gauge = async () => {
        const text = await (await fetch(`${zk.httpUrl}/metrics`)).text();
        return Number(/^zonekeeper_homelab_api_nonces (\d+)/m.exec(text)?.[1]);
      };
      // Badly signed requests never enter the cache.
      for (let i = 0; i < 200; i++) assert.equal((await health('wrong')).status, 401);
      assert.equal(await gauge(), 0);
      // A flood of correctly signed requests, 8 at a time.
      const statuses = new Map<number, number>();
      let retryAfter: string | null = null;
      for (let i = 0; i < 1500; i += 8) {
        const batch = await Promise.all(Array.from({ length: 8 }, () => health(SECRETS.a)));
        for (const r of batch) {
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 429) retryAfter = r.retryAfter;
        }
      }
      assert.equal(statuses.get(200), cap, JSON.stringify([...statuses]));
      assert.equal(statuses.get(429), 1504 - cap);
      assert.ok(Number(retryAfter) > 0 && Number(retryAfter) <= 301, `Retry-After ${retryAfter}`);
      assert.ok((await gauge()) <= cap);
      // The flooding caller's share is full; the other caller's is not.
      assert.equal((await health(SECRETS.b)).status, 200);
      assert.ok((await gauge()) <= cap + 1);
    } finally {
      await zk.stop();
      await removeAll(dir);
    }
  });
});
