/**
 * The record writer on folder mode's store, with the real catalog deciding delegations: what a
 * writer can do, and — mostly — what it must not be able to do.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, beforeEach, describe, test } from 'node:test';
import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../../api/index.ts';
import { API_VERSION } from '../../api/meta.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { CredentialTable, validateWriteAccess } from '../../writes/credentials.ts';
import {
  compactRemembered,
  decodeOutcomes,
  encodeOutcomes,
  WriteCoordinator,
  writtenObjectName,
} from '../../writes/record-writer.ts';
import { type RecordChange, WRITTEN_BY_LABEL, WriteError } from '../../writes/write-request.ts';
import { Catalog } from '../../zones/catalog.ts';
import { RecordTable } from '../../zones/record-table.ts';
import { catalogGate } from './catalog-gate.ts';
import { FolderWriteStore, WRITES_DIR } from './folder-write-store.ts';

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
      { namespaces: ['team-a'], names: ['*.a', 'a'] },
      { namespaces: ['team-b'], names: ['*.b'] },
    ],
  },
};

const access = validateWriteAccess({
  credentials: [
    { name: 'key-a', kind: 'api-key', namespace: 'team-a', secretRef: { env: 'KEY_A' } },
    { name: 'key-a2', kind: 'tsig', namespace: 'team-a', secretRef: { file: '/run/keys/a2' } },
    { name: 'key-b', kind: 'webhook-hmac', namespace: 'team-b', secretRef: { name: 'hook', key: 'hmac' } },
  ],
  quotas: { 'team-a': { maxRecordSets: 3, burst: 1000, requestsPerSecond: 1000 } },
  defaultQuota: { burst: 1000, requestsPerSecond: 1000 },
});
assert.ok(access.ok);

const up = (name: string, records: string[], type: RecordChange['type'] = 'A'): RecordChange => ({
  op: 'upsert',
  name,
  type,
  records,
});

let dir: string;
let store: MemoryStore;
let catalog: Catalog;
let writes: FolderWriteStore;
let writer: WriteCoordinator;
let clock = Date.parse('2026-03-01T00:00:00Z');

async function open(
  config = access.ok ? access.config : { credentials: [] },
  options: { maxRememberedBytes?: number } = {},
): Promise<void> {
  store = new MemoryStore();
  catalog = new Catalog();
  catalog.load([zoneClass], [zone], []);
  writes = await FolderWriteStore.open(dir, store);
  writer = new WriteCoordinator({
    store: writes,
    gate: catalogGate(catalog, store),
    credentials: new CredentialTable(config),
    now: () => clock,
    ...options,
  });
  await writer.start();
}

async function refused(promise: Promise<unknown>, code: string): Promise<WriteError> {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof WriteError, String(e));
    assert.equal(e.code, code, e.message);
    return e;
  }
  assert.fail(`expected ${code}`);
}

const written = () =>
  store
    .list('DNSRecordSet')
    .map(
      (o) =>
        `${o.metadata.namespace}/${(o as DNSRecordSet).spec.name} ${(o as DNSRecordSet).spec.type} ${(o as DNSRecordSet).spec.records.join(',')}`,
    )
    .sort();

/** The RRset the compare-and-set tests write: an ACME challenge's TXT records. */
const ACME_NAME = '_acme-challenge.a.example.com.';

/** An upsert of the ACME challenge's TXT RRset with what the writer expects to be there. */
const txt = (records: string[], expect: RecordChange['expect']): RecordChange => ({
  op: 'upsert',
  name: ACME_NAME,
  type: 'TXT',
  ttl: 60,
  records,
  expect,
});

describe('record writer, folder mode', () => {
  beforeEach(async () => {
    if (writes) await writes.close();
    dir = await mkdtemp(path.join(tmpdir(), 'zk-writes-'));
    await open();
  });
  after(async () => {
    await writes?.close();
  });

  test('an upsert becomes a labelled DNSRecordSet of the credential namespace, durable across a restart', async () => {
    const result = await writer.apply('key-a', { changes: [up('www.a.example.com.', ['192.0.2.1'])] });
    assert.equal(result.namespace, 'team-a');
    assert.deepEqual(
      result.changes.map((c) => c.outcome),
      ['created'],
    );
    const [object] = store.list('DNSRecordSet');
    assert.equal(object?.metadata.namespace, 'team-a');
    assert.equal(object?.metadata.name, writtenObjectName('www.a.example.com.', 'A'));
    assert.equal(object?.metadata.labels?.[WRITTEN_BY_LABEL], 'key-a');
    const created = object?.metadata.creationTimestamp;
    assert.deepEqual(
      (await writer.apply('key-a', { changes: [up('www.a.example.com.', ['192.0.2.1'])] })).changes.map(
        (c) => c.outcome,
      ),
      ['unchanged'],
    );
    await writes.close();
    await open();
    assert.deepEqual(written(), ['team-a/www.a.example.com. A 192.0.2.1']);
    assert.equal(store.list('DNSRecordSet')[0]?.metadata.creationTimestamp, created, 'first-write time kept');
  });

  test('annotations under write.dns.zonekeeper.dev/ are kept with the record set (a change of them is an update), others refused', async () => {
    const key = 'write.dns.zonekeeper.dev/externaldns-endpoint';
    const change = (value: string): RecordChange => ({
      op: 'upsert',
      name: 'ann.a.example.com.',
      type: 'A',
      records: ['192.0.2.1'],
      annotations: { [key]: value },
    });
    assert.equal(
      (await writer.apply('key-a', { changes: [change('{"setIdentifier":"eu"}')] })).changes[0]?.outcome,
      'created',
    );
    assert.equal(
      (await writer.apply('key-a', { changes: [change('{"setIdentifier":"eu"}')] })).changes[0]?.outcome,
      'unchanged',
    );
    assert.equal(
      (await writer.apply('key-a', { changes: [change('{"setIdentifier":"us"}')] })).changes[0]?.outcome,
      'updated',
    );
    await writes.close();
    await open();
    assert.equal(store.list('DNSRecordSet')[0]?.metadata.annotations?.[key], '{"setIdentifier":"us"}');
    // Only the writer's own prefix: an annotation with a meaning elsewhere is never set through an API.
    for (const other of [
      'dns.zonekeeper.dev/confirm-change',
      'kubectl.kubernetes.io/last-applied-configuration',
    ])
      await refused(
        writer.apply('key-a', {
          changes: [
            {
              op: 'upsert',
              name: 'ann2.a.example.com.',
              type: 'A',
              records: ['192.0.2.1'],
              annotations: { [other]: 'x' },
            },
          ],
        }),
        'INVALID_CHANGE',
      );
  });

  test('a request applies all its changes or none: one refused change refuses the request', async () => {
    await refused(
      writer.apply('key-a', {
        changes: [up('one.a.example.com.', ['192.0.2.1']), up('two.b.example.com.', ['192.0.2.2'])],
      }),
      'NOT_DELEGATED',
    );
    assert.deepEqual(written(), []);
    await refused(
      writer.apply('key-a', {
        changes: [up('one.a.example.com.', ['192.0.2.1']), up('bad.a.example.com.', ['300.1.1.1'])],
      }),
      'INVALID_CHANGE',
    );
    await refused(
      writer.apply('key-a', {
        changes: [
          up('one.a.example.com.', ['192.0.2.1']),
          { op: 'delete', name: 'ONE.a.example.com.', type: 'A' },
        ],
      }),
      'DUPLICATE_CHANGE',
    );
    assert.deepEqual(written(), []);
    await writer.apply('key-a', {
      changes: [up('one.a.example.com.', ['192.0.2.1']), up('a.example.com.', ['"v=1"'], 'TXT')],
    });
    assert.equal(written().length, 2);
  });

  test('a crash mid-request leaves none of it: a torn log line is dropped on load', async () => {
    await writer.apply('key-a', { changes: [up('keep.a.example.com.', ['192.0.2.1'])] });
    await writer.apply('key-a', {
      changes: [up('x1.a.example.com.', ['192.0.2.1']), up('x2.a.example.com.', ['192.0.2.2'])],
    });
    await writes.close();
    const logs = (await readdir(path.join(dir, WRITES_DIR))).filter((n) => n.startsWith('log.'));
    const file = path.join(dir, WRITES_DIR, logs.at(-1)!);
    const text = await readFile(file, 'utf8');
    const lastLine = text.slice(text.lastIndexOf('\n', text.length - 2) + 1);
    assert.match(lastLine, /"t":"batch"/);
    assert.match(lastLine, /x1\.a\.example\.com.*x2\.a\.example\.com/s);
    // The crash: the last request's line written only in part (both record sets are in that one line).
    await truncate(file, Buffer.byteLength(text) - Math.floor(Buffer.byteLength(lastLine) / 2));
    await open();
    assert.deepEqual(written(), ['team-a/keep.a.example.com. A 192.0.2.1']);
  });

  test('a writer cannot publish outside its namespace delegations or outside every zone', async () => {
    const e = await refused(
      writer.apply('key-a', { changes: [up('www.b.example.com.', ['192.0.2.1'])] }),
      'NOT_DELEGATED',
    );
    assert.match(e.message, /does not delegate .* to namespace team-a/);
    await refused(writer.apply('key-a', { changes: [up('example.com.', ['192.0.2.1'])] }), 'NOT_DELEGATED');
    await refused(
      writer.apply('key-a', { changes: [up('www.example.org.', ['192.0.2.1'])] }),
      'NOT_DELEGATED',
    );
    // team-b is delegated the names below b, not b itself.
    await refused(writer.apply('key-b', { changes: [up('b.example.com.', ['x.'], 'NS')] }), 'NOT_DELEGATED');
    assert.deepEqual(written(), []);
  });

  test('a writer cannot overwrite or delete a manifest object, nor another credential or namespace', async () => {
    // A manifest (or a tenant's own object) holds the name the writer would use.
    const name = writtenObjectName('m.a.example.com.', 'A');
    store.apply({
      apiVersion: API_VERSION,
      kind: 'DNSRecordSet',
      metadata: { name, namespace: 'team-a' },
      spec: { name: 'm.a.example.com.', type: 'A', records: ['198.51.100.1'] },
    });
    await refused(writer.apply('key-a', { changes: [up('m.a.example.com.', ['192.0.2.1'])] }), 'NOT_OWNER');
    await refused(
      writer.apply('key-a', { changes: [{ op: 'delete', name: 'm.a.example.com.', type: 'A' }] }),
      'NOT_OWNER',
    );
    // A label forged on a manifest object does not make it the writer's.
    store.apply({
      apiVersion: API_VERSION,
      kind: 'DNSRecordSet',
      metadata: { name, namespace: 'team-a', labels: { [WRITTEN_BY_LABEL]: 'key-a' } },
      spec: { name: 'm.a.example.com.', type: 'A', records: ['198.51.100.1'] },
    });
    await refused(
      writer.apply('key-a', { changes: [{ op: 'delete', name: 'm.a.example.com.', type: 'A' }] }),
      'NOT_OWNER',
    );
    assert.deepEqual(written(), ['team-a/m.a.example.com. A 198.51.100.1']);

    await writer.apply('key-a', { changes: [up('w.a.example.com.', ['192.0.2.1'])] });
    // Another credential of the same namespace.
    await refused(writer.apply('key-a2', { changes: [up('w.a.example.com.', ['192.0.2.66'])] }), 'NOT_OWNER');
    await refused(
      writer.apply('key-a2', { changes: [{ op: 'delete', name: 'w.a.example.com.', type: 'A' }] }),
      'NOT_OWNER',
    );
    // Another namespace: its delete names its own namespace's object, which does not exist.
    const other = await writer.apply('key-b', {
      changes: [{ op: 'delete', name: 'w.a.example.com.', type: 'A' }],
    });
    assert.deepEqual(
      other.changes.map((c) => c.outcome),
      ['absent'],
    );
    assert.deepEqual(written(), [
      'team-a/m.a.example.com. A 198.51.100.1',
      'team-a/w.a.example.com. A 192.0.2.1',
    ]);
    await refused(
      writer.apply('nobody', { changes: [up('w.a.example.com.', ['192.0.2.9'])] }),
      'UNKNOWN_CREDENTIAL',
    );
  });

  test('a live view behind the writer: deleting again what this credential just deleted is absent, not NOT_OWNER', async () => {
    await writer.apply('key-a', { changes: [up('www.a.example.com.', ['192.0.2.1'])] });
    const key = `team-a/${writtenObjectName('www.a.example.com.', 'A')}`;
    const gate = catalogGate(catalog, store);
    const stale = gate.existing(key);
    assert.ok(stale);
    // The store has not caught up with the deletion yet: its view still shows the object.
    await writes.close();
    writes = await FolderWriteStore.open(dir, store);
    writer = new WriteCoordinator({
      store: writes,
      gate: { ...gate, existing: (k) => (k === key ? stale : gate.existing(k)) },
      credentials: new CredentialTable(access.ok ? access.config : { credentials: [] }),
      now: () => clock,
    });
    await writer.start();
    const del = { op: 'delete' as const, name: 'www.a.example.com.', type: 'A' as const };
    assert.deepEqual(
      (await writer.apply('key-a', { changes: [del] })).changes.map((c) => c.outcome),
      ['deleted'],
    );
    // A retried request (its first attempt timed out at the caller but was applied): still idempotent.
    assert.deepEqual(
      (await writer.apply('key-a', { changes: [del] })).changes.map((c) => c.outcome),
      ['absent'],
    );
    // Another credential of the namespace is still refused on the object this one wrote.
    const e = await refused(writer.apply('key-a2', { changes: [del] }), 'NOT_OWNER');
    assert.match(e.message, /written-by key-a/);
  });

  test('exclusive changes (RFC 2136 UPDATE): an RRset another object defines is refused, not shadowed', async () => {
    const manifest: DNSRecordSet = {
      apiVersion: API_VERSION,
      kind: 'DNSRecordSet',
      metadata: { name: 'manifest-www', namespace: 'team-a', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { name: 'www.a.example.com.', type: 'A', records: ['198.51.100.1'] },
    };
    store.apply(manifest);
    catalog.setRecord(manifest);
    const exclusive = (c: RecordChange): RecordChange => ({ ...c, exclusive: true });
    await refused(
      writer.apply('key-a', { changes: [exclusive(up('www.a.example.com.', ['192.0.2.1']))] }),
      'NOT_OWNER',
    );
    await refused(
      writer.apply('key-a', {
        changes: [exclusive({ op: 'delete', name: 'www.a.example.com.', type: 'A' })],
      }),
      'NOT_OWNER',
    );
    // The zone's own SOA and apex NS.
    const apex = await refused(
      writer.apply('key-a', { changes: [exclusive(up('example.com.', ['ns9.example.net.'], 'NS'))] }),
      'NOT_OWNER',
    );
    // Named by its DNS name: the DNSZone object is another namespace's.
    assert.match(apex.message, /zone example\.com\. itself defines this RRset/);
    assert.doesNotMatch(apex.message, /dns\/example/);
    // Another type at the name, or the writer's own RRset, is fine.
    await writer.apply('key-a', { changes: [exclusive(up('www.a.example.com.', ['"x"'], 'TXT'))] });
    await writer.apply('key-a', { changes: [exclusive(up('www.a.example.com.', ['"y"'], 'TXT'))] });
    // Without exclusive the write is stored beside the manifest (and loses the conflict): today's rule.
    await writer.apply('key-a', { changes: [up('www.a.example.com.', ['192.0.2.1'])] });
    assert.deepEqual(written(), [
      'team-a/www.a.example.com. A 192.0.2.1',
      'team-a/www.a.example.com. A 198.51.100.1',
      'team-a/www.a.example.com. TXT "y"',
    ]);
  });

  test('expect (compare-and-set): a stale expected RRset refuses the whole request, a matching one applies', async () => {
    const name = ACME_NAME;
    // Two writers both read "absent": the first creates the RRset, the second must not overwrite it.
    await writer.apply('key-a', {
      changes: [txt(['"token-1"'], 'absent')],
    });
    const stale = await refused(
      writer.apply('key-a', {
        changes: [up('other.a.example.com.', ['192.0.2.9']), txt(['"token-2"'], 'absent')],
      }),
      'PRECONDITION_FAILED',
    );
    assert.equal(stale.change, 1);
    assert.match(stale.message, /changed since the request was made/);
    // All or none: the other change of the refused request was not applied either.
    assert.deepEqual(written(), [`team-a/${name} TXT "token-1"`]);
    // Stale content (another TTL, other records) and a delete based on stale content are refused too.
    await refused(
      writer.apply('key-a', {
        changes: [txt(['"token-2"'], { ttl: 30, records: ['"token-1"'] })],
      }),
      'PRECONDITION_FAILED',
    );
    await refused(
      writer.apply('key-a', {
        changes: [{ op: 'delete', name, type: 'TXT', expect: { ttl: 60, records: ['"other"'] } }],
      }),
      'PRECONDITION_FAILED',
    );
    // Based on what the writer holds (records compared as RDATA, not as text): applied.
    await writer.apply('key-a', {
      changes: [txt(['"token-1"', '"token-2"'], { ttl: 60, records: ['token-1'] })],
    });
    assert.deepEqual(written(), [`team-a/${name} TXT "token-1","token-2"`]);
    await writer.apply('key-a', {
      changes: [
        { op: 'delete', name, type: 'TXT', expect: { ttl: 60, records: ['"token-2"', '"token-1"'] } },
      ],
    });
    assert.deepEqual(written(), []);
    // A malformed expect is an invalid change.
    await refused(
      writer.apply('key-a', {
        changes: [{ ...up(name, ['"x"'], 'TXT'), expect: { ttl: '60' } as unknown as 'absent' }],
      }),
      'INVALID_CHANGE',
    );
  });

  test('expect (compare-and-set): TXT values differing only in case are other records (RFC 4343 §3: only names fold)', async () => {
    const name = ACME_NAME;
    // Two records now (record-parse no longer refuses them as duplicates).
    await writer.apply('key-a', { changes: [txt(['"ABC"', '"abc"'], 'absent')] });
    assert.deepEqual(written(), [`team-a/${name} TXT "ABC","abc"`]);
    // A writer that read only "ABC" is stale: the RRset holds two records.
    await refused(
      writer.apply('key-a', { changes: [txt(['"x"'], { ttl: 60, records: ['"ABC"'] })] }),
      'PRECONDITION_FAILED',
    );
    await writer.apply('key-a', { changes: [txt(['"ABC"'], { ttl: 60, records: ['"ABC"', '"abc"'] })] });
    // The held "ABC" is not the expected "abc".
    await refused(
      writer.apply('key-a', { changes: [txt(['"y"'], { ttl: 60, records: ['"abc"'] })] }),
      'PRECONDITION_FAILED',
    );
  });

  test('QUOTA_EXCEEDED: a namespace holds at most its quota of record sets, over all its credentials', async () => {
    await writer.apply('key-a', {
      changes: [up('q1.a.example.com.', ['192.0.2.1']), up('q2.a.example.com.', ['192.0.2.1'])],
    });
    await writer.apply('key-a2', { changes: [up('q3.a.example.com.', ['192.0.2.1'])] });
    const e = await refused(
      writer.apply('key-a', { changes: [up('q4.a.example.com.', ['192.0.2.1'])] }),
      'QUOTA_EXCEEDED',
    );
    assert.match(e.message, /quota of 3.*delete record sets/);
    // Updates and a delete with a create stay within it.
    await writer.apply('key-a', { changes: [up('q1.a.example.com.', ['192.0.2.2'])] });
    await writer.apply('key-a', {
      changes: [
        { op: 'delete', name: 'q2.a.example.com.', type: 'A' },
        up('q4.a.example.com.', ['192.0.2.1']),
      ],
    });
    assert.equal(writer.countOf('team-a'), 3);
    // The other namespace has its own count.
    await writer.apply('key-b', { changes: [up('x.b.example.com.', ['192.0.2.1'])] });
  });

  test('RATE_LIMITED: a namespace beyond its request rate is told when to retry', async () => {
    const config = validateWriteAccess({
      credentials: [{ name: 'key-a', kind: 'api-key', namespace: 'team-a', secretRef: { env: 'K' } }],
      defaultQuota: { requestsPerSecond: 0.5, burst: 2 },
    });
    assert.ok(config.ok);
    await writes.close();
    await open(config.config);
    await writer.apply('key-a', { changes: [up('r.a.example.com.', ['192.0.2.1'])] });
    await writer.apply('key-a', { changes: [up('r.a.example.com.', ['192.0.2.2'])] });
    const e = await refused(
      writer.apply('key-a', { changes: [up('r.a.example.com.', ['192.0.2.3'])] }),
      'RATE_LIMITED',
    );
    assert.equal(e.retryAfterSeconds, 2);
    assert.match(e.message, /retry after 2 s/);
    clock += 2000;
    await writer.apply('key-a', { changes: [up('r.a.example.com.', ['192.0.2.3'])] });
    // A request refused before apply (an UPDATE whose prerequisites failed) takes its share too.
    clock += 4000;
    assert.equal(writer.rateWait('key-a'), 0);
    writer.charge('key-a');
    writer.charge('key-a');
    assert.equal(writer.rateWait('key-a'), 2);
    await refused(
      writer.apply('key-a', { changes: [up('r.a.example.com.', ['192.0.2.4'])] }),
      'RATE_LIMITED',
    );
  });

  test('REQUEST_TOO_LARGE: bounded changes, records and bytes per request, checked before anything is held', async () => {
    const many = Array.from({ length: 501 }, (_, i) => up(`n${i}.a.example.com.`, ['192.0.2.1']));
    await refused(writer.apply('key-a', { changes: many }), 'REQUEST_TOO_LARGE');
    const big = 'x'.repeat(250);
    const txt = Array.from({ length: 1100 }, (_, i) => `"${big}${i}"`);
    await refused(
      writer.apply('key-a', { changes: [up('t.a.example.com.', txt, 'TXT')] }),
      'REQUEST_TOO_LARGE',
    );
    const records = Array.from({ length: 5001 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
    await refused(writer.apply('key-a', { changes: [up('t.a.example.com.', records)] }), 'REQUEST_TOO_LARGE');
    await refused(writer.apply('key-a', { changes: [] }), 'INVALID_CHANGE');
    await refused(
      writer.apply(
        'key-a',
        JSON.parse('{"changes":[{"op":"upsert","name":"x.a.example.com.","type":"A","records":[1]}]}'),
      ),
      'INVALID_CHANGE',
    );
    assert.deepEqual(written(), []);
  });

  test('a replayed request id is answered with its first result and applied once; reused for other changes it is refused', async () => {
    const a = { id: 'req-1', changes: [up('r.a.example.com.', ['192.0.2.1'])] };
    await writer.apply('key-a', a);
    await writer.apply('key-a', { id: 'req-2', changes: [up('r.a.example.com.', ['192.0.2.2'])] });
    const again = await writer.apply('key-a', a);
    assert.equal(again.replayed, true);
    assert.deepEqual(
      written(),
      ['team-a/r.a.example.com. A 192.0.2.2'],
      'a replay does not undo a later request',
    );
    await refused(
      writer.apply('key-a', { id: 'req-1', changes: [up('r.a.example.com.', ['192.0.2.9'])] }),
      'REPLAYED',
    );
    // Remembered across a restart.
    await writes.close();
    await open();
    assert.equal((await writer.apply('key-a', a)).replayed, true);
    assert.deepEqual(written(), ['team-a/r.a.example.com. A 192.0.2.2']);
    // Ids are per credential: another credential's req-1 is its own request.
    await writer.apply('key-b', { id: 'req-1', changes: [up('r.b.example.com.', ['192.0.2.1'])] });
    // Past the window the id is forgotten.
    clock += 16 * 60_000;
    assert.equal((await writer.apply('key-a', a)).replayed, false);
  });

  test('a replay gets the first answer again, outcome for outcome, also after a restart', async () => {
    await writer.apply('key-b', {
      changes: [up('same.b.example.com.', ['192.0.2.1']), up('old.b.example.com.', ['192.0.2.1'])],
    });
    const request = {
      id: 'mixed',
      changes: [
        up('new.b.example.com.', ['192.0.2.1']),
        up('same.b.example.com.', ['192.0.2.1']),
        up('same.b.example.com.', ['"text"'], 'TXT'),
        { op: 'delete', name: 'old.b.example.com.', type: 'A' },
        { op: 'delete', name: 'none.b.example.com.', type: 'A' },
      ] as RecordChange[],
    };
    const first = await writer.apply('key-b', request);
    assert.deepEqual(
      first.changes.map((c) => c.outcome),
      ['created', 'unchanged', 'created', 'deleted', 'absent'],
    );
    assert.deepEqual(await writer.apply('key-b', request), { ...first, replayed: true });
    await writes.close();
    await open();
    assert.deepEqual(await writer.apply('key-b', request), { ...first, replayed: true });
  });

  test('hostile writer: many large requests that change nothing do not grow the replay memory by their size', async () => {
    const many = Array.from({ length: 200 }, (_, i) => up(`n${i}.b.example.com.`, ['192.0.2.1']));
    await writer.apply('key-b', { changes: many });
    await writes.close();
    const size = async () => {
      let total = 0;
      for (const name of await readdir(path.join(dir, WRITES_DIR)))
        total += (await readFile(path.join(dir, WRITES_DIR, name))).length;
      return total;
    };
    const before = await size();
    await open();
    for (let i = 0; i < 40; i++) {
      const r = await writer.apply('key-b', { id: `noop-${i}`, changes: many });
      assert.ok(r.changes.every((c) => c.outcome === 'unchanged'));
    }
    await writes.close();
    // Each request is remembered in a few hundred bytes, not one entry per change (200 × ~130 bytes).
    const grown = (await size()) - before;
    assert.ok(grown < 40 * 1024, `the state grew ${grown} bytes for 40 requests that changed nothing`);
    await open();
    assert.equal((await writer.apply('key-b', { id: 'noop-39', changes: many })).replayed, true);
    await refused(writer.apply('key-b', { id: 'noop-0', changes: many.slice(1) }), 'REPLAYED');
  });

  test('the replay memory is bounded in bytes per credential: the oldest go first, the newest still replay', async () => {
    await writes.close();
    await open(undefined, { maxRememberedBytes: 2_000 });
    const change = [up('bounded.b.example.com.', ['192.0.2.1'])];
    for (let i = 0; i < 50; i++)
      await writer.apply('key-b', { id: `bounded-${i}-${'x'.repeat(60)}`, changes: change });
    await writer.apply('key-a', { id: 'quiet', changes: [up('q.a.example.com.', ['192.0.2.1'])] });
    assert.ok(writer.rememberedBytesOf('key-b') <= 2_000, String(writer.rememberedBytesOf('key-b')));
    assert.ok(writer.rememberedBytesOf('key-b') > 1_000);
    assert.ok(writer.rememberedBytesOf('key-a') > 0, 'another credential keeps its own');
    assert.equal(
      (await writer.apply('key-b', { id: `bounded-49-${'x'.repeat(60)}`, changes: change })).replayed,
      true,
    );
    assert.equal(
      (await writer.apply('key-b', { id: `bounded-0-${'x'.repeat(60)}`, changes: change })).replayed,
      false,
    );
  });

  test("hostile writer: refusals name no object of another namespace, whose zone's name and the remedy they keep", async () => {
    const zoneOf = (name: string, namespace: string, domainName: string): DNSZone => ({
      ...zone,
      metadata: { name, namespace, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { domainName, className: 'builtin' },
    });
    await writes.close();
    store = new MemoryStore();
    catalog = new Catalog();
    catalog.load(
      [zoneClass],
      [
        {
          ...zone,
          spec: {
            ...zone.spec,
            delegations: [...zone.spec.delegations!, { namespaces: ['dns4'], names: ['kid.a'] }],
          },
        },
        zoneOf('other', 'dns2', 'other.test'),
        zoneOf('kid', 'dns4', 'kid.a.example.com'),
      ],
      [],
    );
    writes = await FolderWriteStore.open(dir, store);
    const logged: string[] = [];
    writer = new WriteCoordinator({
      store: writes,
      gate: catalogGate(catalog, store),
      credentials: new CredentialTable(access.ok ? access.config : { credentials: [] }),
      now: () => clock,
      log: (_level, message, fields) => logged.push(`${message} ${JSON.stringify(fields)}`),
    });
    await writer.start();
    const messages: string[] = [];
    for (const change of [
      up('x.other.test.', ['192.0.2.1']),
      up('x.b.example.com.', ['192.0.2.1']),
      up('kid.a.example.com.', [`1 13 2 ${'00'.repeat(32)}`], 'DS'),
      up('a.example.com.', ['ns.example.net.'], 'NS'),
      up('a.example.com.', ['target.example.net.'], 'CNAME'),
    ])
      messages.push((await refused(writer.apply('key-a', { changes: [change] }), 'NOT_DELEGATED')).message);
    for (const m of messages) {
      assert.doesNotMatch(m, /dns2\/other|dns4\/kid|dns\/example|namespace (dns|dns2|dns4|team-b)\b/, m);
      assert.match(m, /namespace team-a|another namespace|zone/, m);
    }
    assert.match(
      messages[0]!,
      /zone other\.test\. does not delegate x A to namespace team-a; its owners can add a delegation/,
    );
    assert.match(messages[2]!, /kid\.a\.example\.com\./);
    // The whole reason is in the log.
    assert.match(logged.join('\n'), /DNSZone dns2\/other/);
  });

  test("a store that fails: UNAVAILABLE and what to do, the store's error text only in the log", async () => {
    const logged: string[] = [];
    const failing = new WriteCoordinator({
      store: {
        load: () => writes.load(),
        commit: async () => {
          throw new Error('EIO: write /var/lib/zonekeeper/state/api-writes/log (node-7)');
        },
      },
      gate: catalogGate(catalog, store),
      credentials: new CredentialTable(access.ok ? access.config : { credentials: [] }),
      now: () => clock,
      log: (_level, message, fields) => logged.push(`${message} ${JSON.stringify(fields ?? {})}`),
    });
    await failing.start();
    const e = await refused(
      failing.apply('key-a', { changes: [up('fail.a.example.com.', ['192.0.2.1'])] }),
      'UNAVAILABLE',
    );
    assert.doesNotMatch(e.message, /EIO|var\/lib|node-7/);
    assert.match(e.message, /retry with the same request id/);
    assert.match(logged.join('\n'), /EIO: write/);
  });

  test('a load takes out of the store the labelled record sets its state does not hold, and nothing else', async () => {
    const nested = await mkdtemp(path.join(tmpdir(), 'zk-state-'));
    const live = new MemoryStore(undefined, { recordSets: new RecordTable() });
    const recordSet = (name: string, labels?: Record<string, string>): DNSRecordSet => ({
      apiVersion: API_VERSION,
      kind: 'DNSRecordSet',
      metadata: { name, namespace: 'team-a', ...(labels ? { labels } : {}) },
      spec: { zoneRef: { name: 'example', namespace: 'dns' }, name: name, type: 'A', records: ['192.0.2.1'] },
    });
    const created = '2026-03-01T00:00:00Z';
    live.apply(recordSet('manifest'), created);
    live.apply(recordSet('given-up', { [WRITTEN_BY_LABEL]: 'key-a' }), created);
    live.apply(recordSet('other-label', { team: 'a' }), created);
    const s = await FolderWriteStore.open(nested, live);
    await s.commit({
      put: [{ resource: recordSet('kept', { [WRITTEN_BY_LABEL]: 'key-a' }), created }],
      delete: [],
      forget: [],
    });
    const loaded = await s.load();
    assert.deepEqual(
      loaded.recordSets.map((w) => w.resource.metadata.name),
      ['kept'],
    );
    assert.deepEqual(
      live
        .list('DNSRecordSet')
        .map((o) => o.metadata.name)
        .sort(),
      ['kept', 'manifest', 'other-label'],
    );
    await s.close();
    await rm(nested, { recursive: true, force: true });
  });

  test('the writes live in their own folder below the state dir', async () => {
    const nested = await mkdtemp(path.join(tmpdir(), 'zk-state-'));
    const s = await FolderWriteStore.open(nested, new MemoryStore());
    await s.close();
    assert.deepEqual(await readdir(nested), [WRITES_DIR]);
    await rm(nested, { recursive: true, force: true });
  });
});

describe('remembered requests in their compact form', () => {
  test('outcomes are run-length coded and read back as written', () => {
    const outcomes = [
      'created',
      'created',
      'unchanged',
      'deleted',
      'absent',
      'absent',
      'absent',
      'updated',
    ] as const;
    assert.equal(encodeOutcomes(outcomes), 'c2nda3u');
    assert.deepEqual(decodeOutcomes('c2nda3u'), outcomes);
    assert.equal(encodeOutcomes(Array(500).fill('unchanged')), 'n500');
    assert.equal(decodeOutcomes('x2'), undefined);
    assert.equal(decodeOutcomes('n99999999'), undefined);
  });

  test('one remembered with its whole result (as before) is made compact on load', () => {
    assert.deepEqual(
      compactRemembered({
        credential: 'key-a',
        id: 'r1',
        digest: 'd'.repeat(64),
        at: '2026-03-01T00:00:00.000Z',
        result: {
          namespace: 'team-a',
          replayed: false,
          changes: [
            { name: 'x.a.example.com.', type: 'A', object: 'team-a/x', outcome: 'created' },
            { name: 'y.a.example.com.', type: 'A', object: 'team-a/y', outcome: 'absent' },
          ],
        },
      }),
      {
        credential: 'key-a',
        id: 'r1',
        digest: 'd'.repeat(64),
        at: '2026-03-01T00:00:00.000Z',
        namespace: 'team-a',
        outcomes: 'ca',
      },
    );
    assert.equal(compactRemembered({ id: 'r1' }), undefined);
  });
});

describe('write credentials', () => {
  test('a credential holds its secret by reference only', () => {
    const r = validateWriteAccess({
      credentials: [
        { name: 'k', kind: 'api-key', namespace: 'a', secret: 'hunter2', secretRef: { env: 'K' } },
      ],
    });
    assert.ok(!r.ok);
    assert.deepEqual(
      r.problems.map((p) => p.code),
      ['INLINE_SECRET'],
    );
  });

  test('names are label values, namespaces DNS labels, secretRef exactly one source, names unique', () => {
    const r = validateWriteAccess({
      credentials: [
        { name: 'bad name', kind: 'api-key', namespace: 'a', secretRef: { env: 'K' } },
        { name: 'k', kind: 'password', namespace: 'Not_A_Namespace', secretRef: { env: 'K', file: '/x' } },
        { name: 'k', kind: 'tsig', namespace: 'a' },
        { name: 'K', kind: 'tsig', namespace: 'a', secretRef: { name: 's' } },
      ],
      quotas: { a: { maxRecordSets: -1, extra: 1 } },
    });
    assert.ok(!r.ok);
    assert.deepEqual(
      r.problems.map((p) => `${p.path} ${p.code}`),
      [
        'credentials[0].name INVALID_NAME',
        'credentials[1].kind INVALID_KIND',
        'credentials[1].namespace INVALID_NAMESPACE',
        'credentials[1].secretRef EXACTLY_ONE',
        'credentials[2].name DUPLICATE_NAME',
        'credentials[2].secretRef REQUIRED',
        'credentials[3].name DUPLICATE_NAME',
        'credentials[3].secretRef SECRET_KEY_REQUIRED',
        'quotas.a.maxRecordSets INVALID_VALUE',
        'quotas.a.extra UNKNOWN_FIELD',
      ],
    );
  });
});
