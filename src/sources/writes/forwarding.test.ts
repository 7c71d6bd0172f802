/**
 * The hop from a server replica to the operator's leader over real HTTP: the leader's endpoint on the
 * HTTP server, the forwarding writer, the record writer on folder mode's store and the real catalog.
 * Tokens are reviewed by a table here (test/api-writes-forwarding.test.ts uses a real TokenReview).
 * Mostly what a caller of the hop must not be able to do.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DNSZone, DNSZoneClass } from '../../api/index.ts';
import { API_VERSION } from '../../api/meta.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { HttpServer } from '../../server/http-server.ts';
import { CredentialTable, validateWriteAccess } from '../../writes/credentials.ts';
import { type RecordWriter, WriteCoordinator } from '../../writes/record-writer.ts';
import { FORWARD_PATH, parseForwardedWrite } from '../../writes/write-protocol.ts';
import {
  type RecordChange,
  WRITTEN_BY_LABEL,
  WriteError,
  type WriteRequest,
} from '../../writes/write-request.ts';
import { Catalog } from '../../zones/catalog.ts';
import { catalogGate } from './catalog-gate.ts';
import { FolderWriteStore } from './folder-write-store.ts';
import {
  ForwardingWriter,
  fileToken,
  LEADER_ENDPOINT_ANNOTATION,
  type LeaderLookup,
  leaseLeader,
} from './forwarding-writer.ts';
import { leaderWriteEndpoint } from './leader-write-endpoint.ts';

const zoneClass: DNSZoneClass = {
  apiVersion: API_VERSION,
  kind: 'DNSZoneClass',
  metadata: { name: 'builtin', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.'] },
};
const zone: DNSZone = {
  apiVersion: API_VERSION,
  kind: 'DNSZone',
  metadata: { name: 'example', namespace: 'dns', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: {
    domainName: 'example.com',
    className: 'builtin',
    delegations: [
      { namespaces: ['team-a'], names: ['*.a'] },
      { namespaces: ['team-b'], names: ['*.b'] },
    ],
  },
};
const access = validateWriteAccess({
  credentials: [
    { name: 'key-a', kind: 'api-key', namespace: 'team-a', secretRef: { env: 'KEY_A' } },
    { name: 'key-b', kind: 'api-key', namespace: 'team-b', secretRef: { env: 'KEY_B' } },
  ],
  quotas: { 'team-a': { maxRecordSets: 2 } },
  defaultQuota: { burst: 1000, requestsPerSecond: 1000 },
});
assert.ok(access.ok);

const REPLICA = 'system:serviceaccount:zonekeeper-system:zonekeeper-server';
const TOKENS = new Map([
  ['replica-token', REPLICA],
  ['tenant-token', 'alice'],
]);
const up = (name: string, ...records: string[]): RecordChange => ({ op: 'upsert', name, type: 'A', records });

describe('forwarding writes to the leader', () => {
  let dir: string;
  let store: MemoryStore;
  let writes: FolderWriteStore;
  let coordinator: WriteCoordinator;
  let http: HttpServer;
  let url: string;
  /** What the leader's writer is right now: the coordinator, or not leading. */
  let leading = true;
  /** Every request the leader's writer saw, as it saw it. */
  const seen: { credential: string; request: WriteRequest }[] = [];
  /** Delays the next answer of the leader (a lost answer, as the replica sees it). */
  let stallNext = 0;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-forward-'));
    store = new MemoryStore();
    const catalog = new Catalog();
    catalog.load([zoneClass], [zone], []);
    writes = await FolderWriteStore.open(dir, store);
    coordinator = new WriteCoordinator({
      store: writes,
      gate: catalogGate(catalog, store),
      credentials: new CredentialTable(access.ok ? access.config : { credentials: [] }),
    });
    await coordinator.start();
    const recording: RecordWriter = {
      async apply(credential, request) {
        seen.push({ credential, request: structuredClone(request) });
        const result = await coordinator.apply(credential, request);
        if (stallNext > 0) {
          const ms = stallNext;
          stallNext = 0;
          await new Promise((r) => setTimeout(r, ms));
        }
        return result;
      },
    };
    const endpoint = leaderWriteEndpoint({
      review: async (token) => (TOKENS.has(token) ? { username: TOKENS.get(token)! } : undefined),
      forwarders: new Set([REPLICA]),
      writer: () =>
        leading ? recording : { refuse: 'NOT_LEADER', message: 'not the leader', retryAfterSeconds: 2 },
    });
    http = new HttpServer('127.0.0.1:0', {
      healthy: () => true,
      ready: () => ({ ready: true, message: 'ok' }),
      metrics: () => '',
      resources: () => ({}),
      post: { [FORWARD_PATH]: endpoint },
    });
    await http.start();
    url = `http://127.0.0.1:${http.address().port}`;
  });

  after(async () => {
    await http?.stop();
    await writes?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const leader: LeaderLookup = async () => ({ identity: 'operator-0', url });
  /** What the replicas logged: the details callers are not told. */
  const logged: string[] = [];
  const log = (_level: string, message: string, fields?: Record<string, unknown>) => {
    logged.push(`${message} ${JSON.stringify(fields ?? {})}`);
  };
  const replica = (
    token = 'replica-token',
    extra: Partial<ConstructorParameters<typeof ForwardingWriter>[0]> = {},
  ) => new ForwardingWriter({ leader, token: async () => token, backoffMs: 1, log, ...extra });
  /** A caller's message names no replica, pod, address, service account or Lease. */
  const generic = (e: WriteError) => {
    assert.match(e.message, /^records cannot be written now \(UNAVAILABLE\)/);
    assert.doesNotMatch(e.message, /operator-\d|127\.0\.0\.1|serviceaccount|alice|Lease|token|http:/i);
  };
  const refused = async (promise: Promise<unknown>, code: string): Promise<WriteError> => {
    try {
      await promise;
    } catch (e) {
      assert.ok(e instanceof WriteError, String(e));
      assert.equal(e.code, code, e.message);
      return e;
    }
    assert.fail(`expected ${code}`);
  };

  test('a write through the replica is applied by the leader as the credential the replica names', async () => {
    const result = await replica().apply('key-a', {
      id: 'r1',
      changes: [up('www.a.example.com.', '192.0.2.1')],
    });
    assert.equal(result.namespace, 'team-a');
    assert.equal(result.replayed, false);
    assert.deepEqual(
      result.changes.map((c) => c.outcome),
      ['created'],
    );
    const object = store.get('DNSRecordSet', result.changes[0]!.object);
    assert.equal(object?.metadata.labels?.[WRITTEN_BY_LABEL], 'key-a');
    // The same id again: answered from the leader's replay memory.
    const again = await replica().apply('key-a', {
      id: 'r1',
      changes: [up('www.a.example.com.', '192.0.2.1')],
    });
    assert.equal(again.replayed, true);
  });

  test('nothing but the credential, the id and the changes crosses the hop', async () => {
    seen.length = 0;
    const sneaky = {
      id: 'r2',
      changes: [up('api.a.example.com.', '192.0.2.2')],
      credential: 'key-b',
      namespace: 'team-b',
    } as WriteRequest;
    const result = await replica().apply('key-a', sneaky);
    assert.equal(result.namespace, 'team-a');
    assert.deepEqual(seen, [
      { credential: 'key-a', request: { id: 'r2', changes: [up('api.a.example.com.', '192.0.2.2')] } },
    ]);
    assert.equal(
      store.get('DNSRecordSet', result.changes[0]!.object)?.metadata.labels?.[WRITTEN_BY_LABEL],
      'key-a',
    );
    // Another credential's record set is not the replica's to change, whatever it names.
    await refused(
      replica().apply('key-b', { changes: [up('www.a.example.com.', '192.0.2.66')] }),
      'NOT_DELEGATED',
    );
  });

  test('the leader enforces the quota and ownership: the replica cannot widen them', async () => {
    // team-a holds www and api (its quota is 2): a third record set is refused by the leader.
    const e = await refused(
      replica().apply('key-a', { changes: [up('third.a.example.com.', '192.0.2.3')] }),
      'QUOTA_EXCEEDED',
    );
    assert.match(e.message, /quota of 2/);
    await refused(
      replica().apply('nobody', { changes: [up('x.a.example.com.', '192.0.2.3')] }),
      'UNKNOWN_CREDENTIAL',
    );
    // Changing one it holds is fine.
    const updated = await replica().apply('key-a', { changes: [up('www.a.example.com.', '192.0.2.9')] });
    assert.deepEqual(
      updated.changes.map((c) => c.outcome),
      ['updated'],
    );
  });

  test('callers that are not a configured replica are refused before anything is read', async () => {
    seen.length = 0;
    const noToken = await refused(
      replica('').apply('key-a', { changes: [up('n.a.example.com.', '192.0.2.4')] }),
      'UNAVAILABLE',
    );
    generic(noToken);
    assert.match(logged.join('\n'), /no token for the forwarding hop/);
    const forged = await refused(
      replica('forged').apply('key-a', { changes: [up('n.a.example.com.', '192.0.2.4')] }),
      'UNAVAILABLE',
    );
    generic(forged);
    assert.match(logged.join('\n'), /UNAUTHENTICATED/);
    // A real user of the cluster, but not a forwarder: it cannot write as any credential.
    const tenant = await refused(
      replica('tenant-token').apply('key-b', { changes: [up('n.b.example.com.', '192.0.2.4')] }),
      'UNAVAILABLE',
    );
    generic(tenant);
    assert.match(logged.join('\n'), /FORBIDDEN.*alice may not forward writes/);
    assert.deepEqual(seen, []);
    // The raw endpoint, as a tenant would call it.
    const raw = async (headers: Record<string, string>, body: string) => {
      const r = await fetch(`${url}${FORWARD_PATH}`, { method: 'POST', headers, body });
      return { status: r.status, body: (await r.json()) as { error: { code: string } } };
    };
    const forwarded = JSON.stringify({
      credential: 'key-b',
      request: { changes: [up('n.b.example.com.', '192.0.2.4')] },
    });
    assert.equal((await raw({}, forwarded)).status, 401);
    assert.equal((await raw({ authorization: 'Bearer tenant-token' }, forwarded)).status, 403);
    assert.equal((await raw({ authorization: 'Basic cmVwbGljYQ==' }, forwarded)).status, 401);
    // Fields beyond credential and request are refused, not ignored.
    const extra = await raw(
      { authorization: 'Bearer replica-token' },
      JSON.stringify({ credential: 'key-a', namespace: 'team-b', request: { changes: [] } }),
    );
    assert.equal(extra.status, 400);
    assert.equal(extra.body.error.code, 'BAD_REQUEST');
    const tooLarge = await raw({ authorization: 'Bearer replica-token' }, 'x'.repeat(2 * 1024 * 1024));
    assert.equal(tooLarge.status, 413);
    assert.deepEqual(seen, []);
    // GET is not a write.
    assert.equal((await fetch(`${url}${FORWARD_PATH}`)).status, 405);
  });

  test('a caller without a bearer token is answered before its body is read', async () => {
    // Headers that promise a body which never comes: the refusal cannot have waited for it.
    const { port } = new URL(url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: FORWARD_PATH,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': '100000' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
          req.destroy();
        },
      );
      req.on('error', reject);
      req.flushHeaders();
    });
    assert.equal(status, 401);
  });

  test('bogus tokens are reviewed at a bounded rate and refused ones are remembered', async () => {
    let reviews = 0;
    const endpoint = leaderWriteEndpoint({
      review: async (token) => {
        reviews++;
        return token === 'good' ? { username: REPLICA } : undefined;
      },
      forwarders: new Set([REPLICA]),
      writer: () => ({ refuse: 'NOT_LEADER', message: 'not the leader', retryAfterSeconds: 2 }),
      now: () => 1_000_000,
    });
    // The replica's own token, reviewed once and remembered.
    assert.equal(await endpoint.authorize({ authorization: 'Bearer good' }), undefined);
    const codes = new Map<string, number>();
    for (let i = 0; i < 500; i++) {
      const refusal = await endpoint.authorize({ authorization: `Bearer bogus-${i}` });
      const code = (JSON.parse(refusal?.body ?? '{}') as { error: { code: string } }).error.code;
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    assert.ok(reviews < 50, `${reviews} TokenReviews for 500 bogus tokens`);
    assert.ok((codes.get('UNAVAILABLE') ?? 0) > 400, JSON.stringify([...codes]));
    // A refused token again costs no review; the replica's token still passes.
    const before = reviews;
    await endpoint.authorize({ authorization: 'Bearer bogus-0' });
    assert.equal(await endpoint.authorize({ authorization: 'Bearer good' }), undefined);
    assert.equal(reviews, before);
  });

  test('no leader, or a replica that no longer leads: UNAVAILABLE with a retry time, after bounded retries', async () => {
    let lookups = 0;
    const none = new ForwardingWriter({
      leader: async () => {
        lookups++;
        return {
          none: 'no operator holds the Lease zonekeeper-system/zonekeeper-operator',
          retryAfterSeconds: 15,
        };
      },
      token: async () => 'replica-token',
      backoffMs: 1,
      attempts: 3,
      log,
    });
    const e = await refused(
      none.apply('key-a', { changes: [up('www.a.example.com.', '192.0.2.1')] }),
      'UNAVAILABLE',
    );
    assert.equal(e.retryAfterSeconds, 15);
    generic(e);
    assert.match(logged.join('\n'), /no operator holds the Lease/);
    assert.equal(lookups, 3);
    leading = false;
    try {
      const stale = await refused(
        replica().apply('key-a', { changes: [up('www.a.example.com.', '192.0.2.1')] }),
        'UNAVAILABLE',
      );
      generic(stale);
      assert.match(logged.join('\n'), /NOT_LEADER/);
      assert.equal(stale.retryAfterSeconds, 2);
    } finally {
      leading = true;
    }
    // A leader that cannot be reached at all.
    const gone = new ForwardingWriter({
      leader: async () => ({ identity: 'operator-1', url: 'http://127.0.0.1:1' }),
      token: async () => 'replica-token',
      backoffMs: 1,
      log,
    });
    const unreachable = await refused(
      gone.apply('key-a', { changes: [up('www.a.example.com.', '192.0.2.1')] }),
      'UNAVAILABLE',
    );
    generic(unreachable);
    assert.match(logged.join('\n'), /cannot be reached.*operator-1.*http:\/\/127\.0\.0\.1:1/);
  });

  test('an answer lost after the leader applied: the retry carries the same id and is not applied twice', async () => {
    seen.length = 0;
    stallNext = 2000;
    const result = await replica('replica-token', { timeoutMs: 300 }).apply('key-a', {
      changes: [up('www.a.example.com.', '192.0.2.10')],
    });
    assert.equal(seen.length, 2, 'the first attempt timed out, the second was answered');
    assert.ok(seen[0]!.request.id?.startsWith('fwd-'));
    assert.equal(seen[1]!.request.id, seen[0]!.request.id);
    // The leader answered the retry from its replay memory; to the caller it is one request.
    assert.equal(result.replayed, false);
    assert.deepEqual(
      result.changes.map((c) => c.outcome),
      ['updated'],
    );
  });

  test('a request too large for the hop is refused by the replica', async () => {
    const big = Array.from({ length: 500 }, (_, i) =>
      up(`h${i}.a.example.com.`, ...Array.from({ length: 10 }, () => '192.0.2.1'.padEnd(240, ' '))),
    );
    await refused(replica().apply('key-a', { changes: big }), 'REQUEST_TOO_LARGE');
  });
});

describe('the token of the forwarding hop', () => {
  test('is read from its file before each use (the kubelet rotates projected tokens)', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-token-'));
    try {
      const file = path.join(dir, 'token');
      const token = fileToken(file);
      assert.equal(await token(), undefined, 'no file yet: no token');
      await writeFile(file, 'first\n');
      assert.equal(await token(), 'first');
      await writeFile(file, 'second');
      assert.equal(await token(), 'second');
      await writeFile(file, '');
      assert.equal(await token(), undefined);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the forwarded body', () => {
  test('exactly credential and request, the request exactly id and changes', () => {
    assert.deepEqual(parseForwardedWrite({ credential: 'k', request: { changes: [] } }), {
      ok: true,
      value: { credential: 'k', request: { changes: [] } },
    });
    for (const bad of [
      null,
      [],
      { credential: 'k' },
      { credential: '', request: { changes: [] } },
      { credential: 7, request: { changes: [] } },
      { credential: 'k', request: { changes: {} } },
      { credential: 'k', request: { changes: [], namespace: 'x' } },
      { credential: 'k', request: { id: 5, changes: [] } },
      { credential: 'k', request: { changes: [] }, as: 'other' },
    ])
      assert.equal(parseForwardedWrite(bad).ok, false, JSON.stringify(bad));
  });
});

describe('the leader named by the Lease', () => {
  const at = Date.parse('2026-03-01T00:00:00Z');
  const lookup = (lease: Awaited<ReturnType<Parameters<typeof leaseLeader>[0]['readLease']>>) =>
    leaseLeader({ readLease: async () => lease }, 'zonekeeper-system', 'zonekeeper-operator', () => at)();

  test('the holder and the endpoint it published; none when released, expired or not taking writes', async () => {
    const renewTime = new Date(at - 3000).toISOString();
    assert.deepEqual(
      await lookup({
        holderIdentity: 'op-0',
        leaseDurationSeconds: 15,
        renewTime,
        annotations: { [LEADER_ENDPOINT_ANNOTATION]: 'http://10.0.0.7:8080' },
      }),
      { identity: 'op-0', url: 'http://10.0.0.7:8080' },
    );
    assert.ok('none' in (await lookup(undefined)));
    assert.ok('none' in (await lookup({ holderIdentity: '', leaseDurationSeconds: 1, renewTime })));
    const expired = await lookup({
      holderIdentity: 'op-0',
      leaseDurationSeconds: 15,
      renewTime: new Date(at - 60_000).toISOString(),
      annotations: { [LEADER_ENDPOINT_ANNOTATION]: 'http://10.0.0.7:8080' },
    });
    assert.ok('none' in expired && /expired/.test(expired.none));
    const plain = await lookup({ holderIdentity: 'op-0', leaseDurationSeconds: 15, renewTime });
    assert.ok('none' in plain && /--write-access/.test(plain.none));
    // Anything but a base URL is not followed.
    const odd = await lookup({
      holderIdentity: 'op-0',
      leaseDurationSeconds: 15,
      renewTime,
      annotations: { [LEADER_ENDPOINT_ANNOTATION]: 'http://evil.example/path?x' },
    });
    assert.ok('none' in odd);
    const unreadable = await leaseLeader(
      {
        readLease: async () => {
          throw new Error('forbidden');
        },
      },
      'ns',
      'lease',
    )();
    assert.ok('none' in unreadable && /cannot be read \(forbidden\)/.test(unreadable.none));
  });
});
