/**
 * The operator's serial records (ConfigMaps) on an in-memory ConfigMap API with the API server's
 * resourceVersion rules (create: 409 when it exists; replace: 409 on a stale version, 404 when gone),
 * alone and under the controller with a MemoryStore: a leader killed between the backend apply and
 * its status write, a stale second leader, graceful release. The real API server and PowerDNS are
 * exercised by test/kubernetes-serials.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FailurePlan, RecordingBackend } from '../../../test/support/failure-injection.ts';
import { recordSet, zone, zoneClass } from '../../../test/support/resources.ts';
import type { DNSZone, Kind, Resource } from '../../api/index.ts';
import { Controller } from '../../control/controller.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { MemorySerialStore, type SerialStore, SerialTakenError } from '../../control/serial-store.ts';
import { type ConfigMapRecord, KubeApiError } from './kube-api.ts';
import {
  KubernetesSerialStore,
  SERIAL_LABEL,
  type SerialRecordApi,
  SerialRecordError,
  serialRecordName,
} from './serial-records.ts';

const NS = 'zonekeeper-system';
const ORIGIN = 'example.com.';

class FakeConfigMaps implements SerialRecordApi {
  readonly objects = new Map<string, ConfigMapRecord>();
  private version = 0;
  writes = 0;
  /** Throws this for every call while set. */
  failure?: Error;

  async listConfigMaps(_namespace: string, selector: string): Promise<ConfigMapRecord[]> {
    if (this.failure) throw this.failure;
    return [...this.objects.values()].filter((o) => o.labels?.[selector] !== undefined).map(clone);
  }

  async readConfigMap(_namespace: string, name: string): Promise<ConfigMapRecord | undefined> {
    if (this.failure) throw this.failure;
    const o = this.objects.get(name);
    return o ? clone(o) : undefined;
  }

  async createConfigMap(_namespace: string, record: ConfigMapRecord): Promise<ConfigMapRecord> {
    if (this.failure) throw this.failure;
    if (this.objects.has(record.name)) throw new KubeApiError(409, 'AlreadyExists', `${record.name} exists`);
    return this.store(record);
  }

  async replaceConfigMap(_namespace: string, record: ConfigMapRecord): Promise<ConfigMapRecord> {
    if (this.failure) throw this.failure;
    const current = this.objects.get(record.name);
    if (!current) throw new KubeApiError(404, 'NotFound', `${record.name} not found`);
    if (record.resourceVersion !== current.resourceVersion)
      throw new KubeApiError(409, 'Conflict', 'the object has been modified');
    return this.store(record);
  }

  /** What the record of `origin` holds. */
  data(origin = ORIGIN): Record<string, string> | undefined {
    return this.objects.get(serialRecordName(origin))?.data;
  }

  private store(record: ConfigMapRecord): ConfigMapRecord {
    this.writes++;
    const stored = { ...clone(record), resourceVersion: String(++this.version) };
    this.objects.set(record.name, stored);
    return clone(stored);
  }
}

function clone(r: ConfigMapRecord): ConfigMapRecord {
  return structuredClone(r);
}

async function loaded(api: FakeConfigMaps, block = 10, identity = 'op'): Promise<KubernetesSerialStore> {
  const store = new KubernetesSerialStore({ api, namespace: NS, block, identity });
  await store.load();
  return store;
}

describe('KubernetesSerialStore', () => {
  test('one write reserves a block; serials inside it cost no write; the next block is written before use', async () => {
    const api = new FakeConfigMaps();
    const store = await loaded(api);
    await store.set(ORIGIN, { serial: 2026112100, hash: 'h0' });
    assert.equal(api.writes, 1);
    assert.deepEqual(api.data(), { origin: ORIGIN, serial: '2026112109', writer: 'op' });
    assert.equal(api.objects.get(serialRecordName(ORIGIN))?.labels?.[SERIAL_LABEL], 'true');
    for (let s = 2026112101; s <= 2026112109; s++) await store.set(ORIGIN, { serial: s, hash: `h${s}` });
    assert.equal(api.writes, 1, 'serials inside the block are not written');
    assert.deepEqual(store.get(ORIGIN), { serial: 2026112109, hash: 'h2026112109' });
    await store.set(ORIGIN, { serial: 2026112110, hash: 'h10' });
    assert.equal(api.writes, 2);
    assert.equal(api.data()?.serial, '2026112119');
  });

  test('a new leader reads the highest serial that may have been used, without a hash', async () => {
    const api = new FakeConfigMaps();
    const first = await loaded(api);
    await first.set(ORIGIN, { serial: 2026112100, hash: 'h0' });
    await first.set(ORIGIN, { serial: 2026112101, hash: 'h1' });
    // Killed: no release.
    const next = await loaded(api);
    assert.deepEqual(next.get(ORIGIN), { serial: 2026112109 });
    assert.equal(next.size, 1);
    // Inside the dead leader's block is not the new leader's to use, and the record never goes down.
    await assert.rejects(next.set(ORIGIN, { serial: 2026112105, hash: 'other' }), SerialTakenError);
    assert.equal(api.data()?.serial, '2026112109');
  });

  test('release lowers the reservation to the serial last used, with its hash; the next leader keeps it', async () => {
    const api = new FakeConfigMaps();
    const first = await loaded(api);
    await first.set(ORIGIN, { serial: 2026112100, hash: 'h0' });
    await first.set(ORIGIN, { serial: 2026112102, hash: 'h2' });
    await first.release();
    assert.deepEqual(api.data(), { origin: ORIGIN, serial: '2026112102', hash: 'h2', writer: 'op' });
    await assert.rejects(first.set(ORIGIN, { serial: 2026112103 }), /shutting down/);
    const next = await loaded(api);
    assert.deepEqual(next.get(ORIGIN), { serial: 2026112102, hash: 'h2' });
    // The same serial for the same content needs no write; a new one writes a block above it.
    const writes = api.writes;
    await next.set(ORIGIN, { serial: 2026112102, hash: 'h2' });
    assert.equal(api.writes, writes);
    await next.set(ORIGIN, { serial: 2026112103, hash: 'h3' });
    assert.equal(api.data()?.serial, '2026112112');
  });

  test('block 1 records every serial exactly, with its hash', async () => {
    const api = new FakeConfigMaps();
    const store = await loaded(api, 1);
    await store.set(ORIGIN, { serial: 2026112100, hash: 'h0' });
    await store.set(ORIGIN, { serial: 2026112101, hash: 'h1' });
    assert.equal(api.writes, 2);
    assert.deepEqual(api.data(), { origin: ORIGIN, serial: '2026112101', hash: 'h1', writer: 'op' });
    assert.deepEqual((await loaded(api, 1)).get(ORIGIN), { serial: 2026112101, hash: 'h1' });
  });

  test('a stale leader cannot use a serial the other recorded: conflict, re-read, SerialTakenError; above it works', async () => {
    const api = new FakeConfigMaps();
    const a = await loaded(api, 10, 'op-a');
    const b = await loaded(api, 10, 'op-b'); // read before a wrote anything
    await a.set(ORIGIN, { serial: 2026112100, hash: 'ha' });
    await assert.rejects(b.set(ORIGIN, { serial: 2026112100, hash: 'hb' }), (e: unknown) => {
      assert.ok(e instanceof SerialTakenError);
      assert.match(e.message, /2026112109 recorded by another operator \(op-a\)/);
      return true;
    });
    assert.deepEqual(b.get(ORIGIN), { serial: 2026112109 }, 'b learned what a recorded');
    await b.set(ORIGIN, { serial: 2026112110, hash: 'hb' });
    assert.deepEqual(api.data(), { origin: ORIGIN, serial: '2026112119', writer: 'op-b' });
    // a's next write is now the stale one.
    await assert.rejects(a.set(ORIGIN, { serial: 2026112110, hash: 'ha2' }), SerialTakenError);
    // a release after another writer moved on leaves the record alone.
    await a.release();
    assert.equal(api.data()?.serial, '2026112119');
  });

  test('a conflict that leaves our serial above the record is retried; a deleted record is created again', async () => {
    const api = new FakeConfigMaps();
    const a = await loaded(api);
    const b = await loaded(api);
    await a.set(ORIGIN, { serial: 2026112100 });
    await b.set(ORIGIN, { serial: 2026112150 }); // above a's block: written after a re-read
    assert.equal(api.data()?.serial, '2026112159');
    api.objects.clear();
    await b.set(ORIGIN, { serial: 2026112160 });
    assert.equal(api.data()?.serial, '2026112169');
  });

  test('an unreadable record stops the load, naming it; a forbidden list says which RBAC is missing', async () => {
    const api = new FakeConfigMaps();
    await (await loaded(api)).set(ORIGIN, { serial: 2026112100 });
    api.objects.get(serialRecordName(ORIGIN))!.data.serial = 'soon';
    await assert.rejects(loaded(api), (e: unknown) => {
      assert.ok(e instanceof SerialRecordError);
      assert.match(e.message, new RegExp(`ConfigMap ${NS}/${serialRecordName(ORIGIN)}: serial "soon"`));
      return true;
    });
    api.failure = new KubeApiError(403, 'Forbidden', 'configmaps is forbidden');
    await assert.rejects(loaded(api), /may not list .*grant it get, list, create and update on configmaps/);
    assert.throws(() => new KubernetesSerialStore({ api, namespace: NS, block: 0 }), /from 1 to 1000/);
  });
});

/** The zone's status in a MemoryStore standing for the API server; status writes can be refused. */
function cluster(address: string) {
  const store = new MemoryStore(() => new Date('2026-11-21T12:00:00Z'));
  let frozen = false;
  const update = store.updateStatus.bind(store);
  store.updateStatus = async (kind: Kind, key: string, status: NonNullable<Resource['status']>) => {
    if (frozen && kind === 'DNSZone') throw new Error('status write refused');
    return update(kind, key, status);
  };
  store.apply(zoneClass());
  store.apply(zone('dns', 'example-com', 'example.com'));
  const www = (value: string) =>
    store.apply(
      recordSet(
        'dns',
        'www',
        { zoneRef: { name: 'example-com' }, name: 'www', type: 'A', records: [value] },
        1,
      ),
    );
  www(address);
  return {
    store,
    www,
    freeze: (on: boolean) => {
      frozen = on;
    },
    status: () => (store.get('DNSZone', 'dns/example-com') as DNSZone | undefined)?.status,
  };
}

function leader(store: MemoryStore, backend: RecordingBackend, serials: SerialStore): Controller {
  const controller = new Controller({
    store,
    backend,
    serials,
    now: () => new Date('2026-11-21T12:00:00Z'),
    hashOnChange: true,
    retryBaseDelayMs: 2,
    retryMaxDelayMs: 20,
  });
  controller.start();
  return controller;
}

async function until<T>(probe: () => T | undefined, what: string): Promise<T> {
  const deadline = performance.now() + 5000;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (performance.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The zone Ready with `address` served at the status serial; that serial. */
function readyWith(c: ReturnType<typeof cluster>, backend: RecordingBackend, address: string) {
  return until(() => {
    const s = c.status();
    const served = backend.served(ORIGIN);
    return s?.conditions?.find((x) => x.type === 'Ready')?.status === 'True' &&
      served !== undefined &&
      served.serial === s.serial &&
      served.content.includes(` A ${address}`)
      ? served.serial
      : undefined;
  }, `Ready with ${address}`);
}

/**
 * A leader killed between the backend apply and the status write; the zone changes while no
 * operator runs; the next leader starts with `nextSerials`. Returns the serial the killed leader
 * applied and the first serial the next leader records in status (Ready).
 */
async function crashBetweenApplyAndStatus(nextSerials: (api: FakeConfigMaps) => Promise<SerialStore>) {
  const api = new FakeConfigMaps();
  const c = cluster('192.0.2.1');
  const backend = new RecordingBackend(new FailurePlan());
  const a = leader(c.store, backend, await loaded(api));
  const first = await readyWith(c, backend, '192.0.2.1');
  c.freeze(true);
  c.www('192.0.2.2');
  const applied = await until(() => {
    const served = backend.served(ORIGIN);
    return served?.content.includes(' A 192.0.2.2') ? served.serial : undefined;
  }, 'the change applied');
  assert.equal(c.status()?.serial, first, 'the status write was refused');
  a.stop(); // killed: no flush, no release
  c.freeze(false);
  c.www('192.0.2.3');
  const b = leader(c.store, backend, await nextSerials(api));
  const taken = await until(() => {
    const s = c.status();
    return s?.serial !== first && s?.conditions?.find((x) => x.type === 'Ready')?.status === 'True'
      ? s?.serial
      : undefined;
  }, 'a new serial in status');
  return { c, backend, applied, taken, stop: () => b.stop() };
}

describe('operator serials under the controller (MemoryStore)', () => {
  test('killed between the backend apply and the status write: the next leader serves every change above what was applied', async () => {
    const { c, backend, applied, taken, stop } = await crashBetweenApplyAndStatus((api) => loaded(api));
    try {
      assert.ok(taken > applied, `${taken} > ${applied}`);
      assert.equal(await readyWith(c, backend, '192.0.2.3'), taken);
      c.www('192.0.2.4');
      assert.ok((await readyWith(c, backend, '192.0.2.4')) > taken);
      assert.deepEqual(backend.violations, []);
    } finally {
      stop();
    }
  });

  test('the same crash with the serials in process memory (no record) gives the applied serial to other content', async () => {
    const { c, backend, applied, taken, stop } = await crashBetweenApplyAndStatus(
      async () => new MemorySerialStore(),
    );
    stop();
    // What serial records prevent: the status records serial N for the new content while the backend
    // holds N with the content the killed leader applied.
    assert.equal(taken, applied);
    assert.ok(backend.served(ORIGIN)?.content.includes(' A 192.0.2.2'));
    assert.notEqual(c.status()?.hash, undefined);
  });

  test('two leaders at once (a handover with a stale cache): no serial is served with two contents', async () => {
    const api = new FakeConfigMaps();
    const c = cluster('192.0.2.1');
    const backend = new RecordingBackend(new FailurePlan());
    const b = await loaded(api, 10, 'op-b'); // b reads the records before a writes any
    const a = leader(c.store, backend, await loaded(api, 10, 'op-a'));
    const first = await readyWith(c, backend, '192.0.2.1');
    a.stop();
    c.www('192.0.2.2');
    const second = leader(c.store, backend, b);
    try {
      const served = await readyWith(c, backend, '192.0.2.2');
      assert.ok(served > first + 9, `${served} is above a's block`);
      assert.deepEqual(backend.violations, []);
    } finally {
      second.stop();
    }
  });
});
