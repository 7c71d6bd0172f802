/**
 * What the homelab DNS API tells callers when writes fail: the stable code and what to do, never the
 * replica's identity, a leader's address or a store's error text (those go to the log).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { gatedWriter } from '../../../test/support/gated-writer.ts';
import { connectionLimitTests } from '../../../test/support/http-clients.ts';
import { recordSet, zone, zoneClass } from '../../../test/support/resources.ts';
import { formatTimestamp, sign } from '../../homelab-protocol/signature.ts';
import type { RecordWriter } from '../../writes/record-writer.ts';
import { DEFAULT_MAX_BODY_BYTES, HomelabApi } from './homelab-api.ts';

const SECRET = 'a-secret-of-the-caller-long-enough';
const INTERNAL = /operator-7|10\.0\.0\.7|etcdserver|serviceaccount/;

/** A request signed with SECRET, to the API at `url()`. */
function signedCall(url: () => Promise<string>) {
  return async (method: string, path: string, body?: string) => {
    const nonce = randomUUID();
    const timestamp = formatTimestamp(new Date());
    const res = await fetch(`${await url()}${path}`, {
      method,
      headers: {
        'X-DNS-Timestamp': timestamp,
        'X-DNS-Nonce': nonce,
        'X-DNS-Signature': sign(SECRET, 'SHA256', { method, path, timestamp, nonce, body }),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body } : {}),
    });
    return { status: res.status, text: await res.text() };
  };
}

describe('the homelab DNS API keeps internal details from callers', () => {
  const logged: string[] = [];
  let writer: RecordWriter | undefined;
  const api = new HomelabApi({
    listen: '127.0.0.1:0',
    callers: () => [{ credential: 'homelab-a', namespace: 'team-a', secret: Buffer.from(SECRET) }],
    writer: () => writer,
    noWriter: 'operator replica operator-7 (10.0.0.7) does not lead',
    recordSet: () => undefined,
    log: (_level, message, fields) => logged.push(`${message} ${JSON.stringify(fields ?? {})}`),
  });
  const started = api.start();
  after(() => api.stop());
  const url = async () => {
    await started;
    return `http://127.0.0.1:${api.address().port}`;
  };
  const call = signedCall(url);
  const upsert = JSON.stringify({
    record: { type: 'A', domain: 'a.example.com', subdomain: 'www', values: ['192.0.2.1'], ttl: 300 },
    operation: 'upsert',
  });

  test('an unauthenticated /health names no replica', async () => {
    const res = await fetch(`${await url()}/health`);
    const text = await res.text();
    assert.equal(res.status, 503);
    assert.doesNotMatch(text, INTERNAL);
    assert.match(text, /UNAVAILABLE/);
  });

  test('a write while there is no writer: UNAVAILABLE, the reason in the log', async () => {
    logged.length = 0;
    const r = await call('POST', '/records', upsert);
    assert.equal(r.status, 503, r.text);
    assert.match(r.text, /UNAVAILABLE/);
    assert.doesNotMatch(r.text, INTERNAL);
    assert.match(logged.join('\n'), /operator-7/);
  });

  test("a store failure: SERVER_ERROR and what to do, the store's text in the log", async () => {
    logged.length = 0;
    writer = {
      async apply() {
        throw new Error('etcdserver: request timed out (leader 10.0.0.7)');
      },
    };
    try {
      const r = await call('POST', '/records', upsert);
      assert.equal(r.status, 500, r.text);
      assert.match(r.text, /SERVER_ERROR/);
      assert.doesNotMatch(r.text, INTERNAL);
      assert.match(logged.join('\n'), /etcdserver: request timed out/);
    } finally {
      writer = undefined;
    }
  });

  test('GET reads back what the writer holds before the live view has caught up (read-your-writes)', async () => {
    const recordSet = {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSRecordSet' as const,
      metadata: { name: 'x', namespace: 'team-a', labels: { 'dns.zonekeeper.dev/written-by': 'homelab-a' } },
      spec: { name: 'www.a.example.com.', type: 'A' as const, ttl: 300, records: ['192.0.2.1'] },
    };
    let held: typeof recordSet | null | undefined = recordSet;
    writer = { apply: async () => assert.fail('no write here'), held: () => held };
    try {
      // The live view (recordSet: () => undefined) has not caught up: the writer's copy answers.
      const found = await call('GET', '/records/A/a.example.com/www');
      assert.equal(found.status, 200, found.text);
      assert.match(found.text, /192\.0\.2\.1/);
      // Deleted by the writer: not found, whatever the live view still shows.
      held = null;
      assert.equal((await call('GET', '/records/A/a.example.com/www')).status, 404);
    } finally {
      writer = undefined;
    }
  });

  test('hostile caller: a body over the limit is refused with 413 before it reaches the writer, declared or streamed', async () => {
    let applied = 0;
    writer = {
      async apply() {
        applied++;
        throw new Error('not reached');
      },
    };
    try {
      const huge = JSON.stringify({
        record: {
          type: 'TXT',
          domain: 'a.example.com',
          subdomain: 'www',
          values: ['x'.repeat(DEFAULT_MAX_BODY_BYTES)],
        },
        operation: 'upsert',
      });
      // Declared by Content-Length (signed, so only the size refuses it).
      const declared = await call('POST', '/records', huge);
      assert.equal(declared.status, 413, declared.text);
      assert.match(declared.text, new RegExp(`larger than ${DEFAULT_MAX_BODY_BYTES} bytes`));
      // Streamed without a length: counted as it arrives.
      const bytes = Buffer.from(huge);
      const streamed = await fetch(`${await url()}/records`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: new ReadableStream({
          start(c) {
            for (let i = 0; i < bytes.length; i += 8192) c.enqueue(bytes.subarray(i, i + 8192));
            c.close();
          },
        }),
        duplex: 'half',
      } as RequestInit).then(
        async (r) => r.status,
        () => 'closed',
      );
      assert.ok(streamed === 413 || streamed === 'closed', String(streamed));
      assert.equal(applied, 0);
    } finally {
      writer = undefined;
    }
  });
});

describe('the homelab DNS API refuses a record the zone would never serve beside a CNAME (RFC 1034 §3.6.2)', () => {
  // Zone example.com of namespace dns delegates a.example.com and below to team-a, and defines a
  // CNAME at cdn.a.example.com and a TXT at data.a.example.com by manifest.
  const manifest = (name: string, type: 'CNAME' | 'TXT', records: string[]) =>
    recordSet('dns', `m-${type.toLowerCase()}`, { name, type, records }, 60);
  const setup = gatedWriter({
    classes: [zoneClass('builtin', ['ns1.example.com.'])],
    zones: [
      zone('dns', 'example', 'example.com', {
        delegations: [{ namespaces: ['team-a'], names: ['a', '*.a'] }],
      }),
    ],
    records: [
      manifest('cdn.a.example.com.', 'CNAME', ['edge.example.net.']),
      manifest('data.a.example.com.', 'TXT', ['"v=spf1 -all"']),
    ],
    credentials: {
      get: (name) => (name === 'homelab-a' ? { name, kind: 'webhook-hmac', namespace: 'team-a' } : undefined),
      quota: () => ({ maxRecordSets: 100, requestsPerSecond: 1000, burst: 1000 }),
    },
  });
  const api = new HomelabApi({
    listen: '127.0.0.1:0',
    callers: () => [{ credential: 'homelab-a', namespace: 'team-a', secret: Buffer.from(SECRET) }],
    writer: () => writerOf,
    recordSet: () => undefined,
    log: () => {},
  });
  let writerOf: RecordWriter | undefined;
  const started = (async () => {
    writerOf = (await setup).writer;
    await api.start();
  })();
  after(async () => {
    await api.stop();
    await (await setup).close();
  });
  const call = signedCall(async () => {
    await started;
    return `http://127.0.0.1:${api.address().port}`;
  });
  const post = (type: string, subdomain: string, values: string[]) =>
    call(
      'POST',
      '/records',
      JSON.stringify({ record: { type, domain: 'a.example.com', subdomain, values }, operation: 'upsert' }),
    );

  test('an A at the name of an older CNAME: 403 NAME_CONFLICT, what to do, nothing stored', async () => {
    const r = await post('A', 'cdn', ['192.0.2.1']);
    assert.equal(r.status, 403, r.text);
    const body = JSON.parse(r.text) as { success: boolean; error: { code: string; message: string } };
    assert.equal(body.success, false);
    assert.equal(body.error.code, 'NAME_CONFLICT');
    assert.match(body.error.message, /cannot coexist with the CNAME/);
    assert.match(body.error.message, /write it at another name/);
    // The manifest's object and namespace are not named to the caller.
    assert.doesNotMatch(body.error.message, /dns\/|m-cname/);
    assert.equal((await setup).store.list('DNSRecordSet').length, 0);
  });

  test('a CNAME at the name of older data: 403 NAME_CONFLICT', async () => {
    const r = await post('CNAME', 'data', ['elsewhere.example.net']);
    assert.equal(r.status, 403, r.text);
    assert.match(r.text, /"code":"NAME_CONFLICT"/);
  });

  test("the caller's own CNAME: written, replaced; other data beside it refused", async () => {
    assert.equal((await post('CNAME', 'own', ['one.example.net'])).status, 200);
    assert.equal((await post('CNAME', 'own', ['two.example.net'])).status, 200);
    const beside = await post('TXT', 'own', ['t']);
    assert.equal(beside.status, 403, beside.text);
    assert.match(beside.text, /"code":"NAME_CONFLICT"/);
  });
});

describe('the homelab DNS API holds unauthenticated clients to its connection limits', () => {
  const listener = new HomelabApi({
    listen: '127.0.0.1:0',
    callers: () => [],
    writer: () => undefined,
    recordSet: () => undefined,
    connectionLimits: { maxConnectionsPerClient: 2, headersTimeoutMs: 100, keepAliveTimeoutMs: 60_000 },
    log: () => {},
  });
  connectionLimitTests(listener, '/health');
});
