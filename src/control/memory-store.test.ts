import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone } from '../../test/support/resources.ts';
import type { DNSRecordSet, Resource } from '../api/index.ts';
import { Holder, RecordTable } from '../zones/record-table.ts';
import { resourceKey } from '../zones/resource-key.ts';
import { MemoryStore } from './memory-store.ts';
import type { StoreEvent } from './resource-store.ts';

const rs = (records: string[]) =>
  recordSet('dns', 'www', { zoneRef: { name: 'z' }, name: 'www', type: 'A', records });

describe('MemoryStore', () => {
  test('generation moves only with the spec; status and creation time are kept', async () => {
    const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
    const events: StoreEvent[] = [];
    store.watch((e) => events.push(e));
    store.apply(rs(['192.0.2.1']));
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www.z.' });
    store.apply(rs(['192.0.2.1']));
    assert.equal(events.length, 2, 'unchanged apply emits nothing');
    store.apply(rs(['192.0.2.2']));
    const obj = store.get('DNSRecordSet', 'dns/www')!;
    assert.equal(obj.metadata.generation, 2);
    assert.deepEqual(obj.status, { fqdn: 'www.z.' });
    assert.equal(obj.metadata.creationTimestamp, '2026-01-01T00:00:00.000Z');
  });

  test('apply with the key given (a slice of an id) holds, finds and announces the object as without it', async () => {
    const table = new RecordTable();
    const given = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'), { recordSets: table });
    const made = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'), { recordSets: new RecordTable() });
    const seen: { given: StoreEvent[]; made: StoreEvent[] } = { given: [], made: [] };
    given.watch((e) => seen.given.push(e));
    made.watch((e) => seen.made.push(e));
    const id = ['DNSRecordSet', 'dns', 'www'].join('/');
    const key = id.slice(id.indexOf('/') + 1);
    const first = given.apply(rs(['192.0.2.1']), 't', undefined, key);
    made.apply(rs(['192.0.2.1']), 't');
    assert.deepEqual(JSON.stringify(first), JSON.stringify(made.get('DNSRecordSet', 'dns/www')));
    assert.equal(given.get('DNSRecordSet', 'dns/www'), first);
    assert.equal(table.keyOf(table.slotOf('dns/www')), 'dns/www');
    // Applied again (the key made from the metadata) and with the key given: one object, one slot.
    given.apply(rs(['192.0.2.2']), 't');
    given.apply(rs(['192.0.2.3']), 't', undefined, key);
    made.apply(rs(['192.0.2.2']), 't');
    made.apply(rs(['192.0.2.3']), 't');
    assert.equal(given.count('DNSRecordSet'), 1);
    assert.equal(table.size, 1);
    assert.deepEqual(JSON.stringify(given.list('DNSRecordSet')), JSON.stringify(made.list('DNSRecordSet')));
    assert.deepEqual(
      seen.given.map((e) => [e.type, e.kind, e.key, JSON.stringify(e.object)]),
      seen.made.map((e) => [e.type, e.kind, e.key, JSON.stringify(e.object)]),
    );
    given.remove('DNSRecordSet', 'dns/www');
    assert.equal(given.get('DNSRecordSet', key), undefined);
    assert.equal(table.size, 0);
  });

  test("apply with the key's slot given (at) finds and holds it there without a look-up, as without it", async () => {
    const table = new RecordTable();
    const given = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'), { recordSets: table });
    const made = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'), { recordSets: new RecordTable() });
    const seen: { given: StoreEvent[]; made: StoreEvent[] } = { given: [], made: [] };
    given.watch((e) => seen.given.push(e));
    made.watch((e) => seen.made.push(e));
    const key = 'dns/www';
    // New: no holder holds the key (-1); the slot the store took is given back.
    const at = { slot: table.slotOf(key) };
    assert.equal(at.slot, -1);
    const first = given.apply(rs(['192.0.2.1']), 't', undefined, key, at);
    made.apply(rs(['192.0.2.1']), 't');
    assert.equal(at.slot, table.slotOf(key));
    assert.ok(table.held(at.slot, Holder.store));
    assert.equal(given.get('DNSRecordSet', key), first);
    // Held already: found at the slot; unchanged, the same object; changed, a new version there.
    assert.equal(given.apply(rs(['192.0.2.1']), 't', undefined, key, at), first);
    given.apply(rs(['192.0.2.2']), 't', undefined, key, at);
    made.apply(rs(['192.0.2.1']), 't');
    made.apply(rs(['192.0.2.2']), 't');
    assert.equal(at.slot, table.slotOf(key));
    // Held by another holder only (the store let go): the store holds that slot again.
    const slot = at.slot;
    table.hold(key, Holder.catalog);
    given.remove('DNSRecordSet', key);
    made.remove('DNSRecordSet', key);
    at.slot = table.slotOf(key);
    given.apply(rs(['192.0.2.3']), 't', undefined, key, at);
    made.apply(rs(['192.0.2.3']), 't');
    assert.equal(at.slot, slot);
    assert.equal(given.count('DNSRecordSet'), 1);
    assert.equal(table.size, 1);
    assert.deepEqual(JSON.stringify(given.list('DNSRecordSet')), JSON.stringify(made.list('DNSRecordSet')));
    assert.deepEqual(
      seen.given.map((e) => [e.type, e.kind, e.key, JSON.stringify(e.object)]),
      seen.made.map((e) => [e.type, e.kind, e.key, JSON.stringify(e.object)]),
    );
    // A slot no holder holds is refused, not taken as the key's.
    const other = { slot: 5 };
    assert.throws(
      () =>
        given.apply(recordSet('dns', 'other', rs(['192.0.2.4']).spec), 't', undefined, 'dns/other', other),
      RangeError,
    );
    // The slot of another key held by the store is refused before anything changes: the other key's
    // object stays, and no uid or resource version is spent.
    const counters = given.counters();
    const taken = { slot: table.slotOf(key) };
    assert.throws(
      () =>
        given.apply(recordSet('dns', 'other', rs(['192.0.2.4']).spec), 't', undefined, 'dns/other', taken),
      RangeError,
    );
    assert.deepEqual(given.counters(), counters);
    assert.equal(given.get('DNSRecordSet', 'dns/other'), undefined);
    assert.deepEqual(given.get('DNSRecordSet', key)?.spec, rs(['192.0.2.3']).spec);
    // Of a kind not kept in the table (or without a table): ignored, and no slot given back.
    const zoneAt = { slot: 3 };
    given.apply(zone('dns', 'z', 'z.example.'), 't', undefined, 'dns/z', zoneAt);
    assert.equal(zoneAt.slot, -1);
    assert.equal(given.count('DNSZone'), 1);
    const plain = new MemoryStore();
    const plainAt = { slot: -1 };
    plain.apply(rs(['192.0.2.1']), 't', undefined, key, plainAt);
    assert.equal(plainAt.slot, -1);
    assert.equal(plain.count('DNSRecordSet'), 1);
  });

  test('updateStatusWith plans on the status held, writes only a change, and returns what it holds', async () => {
    const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
    store.apply(rs(['192.0.2.1']));
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www.z.' });
    const seen: unknown[] = [];
    const written = await store.updateStatusWith('DNSRecordSet', 'dns/www', (status) => {
      seen.push(status);
      return { ...status, observedGeneration: 1 };
    });
    assert.deepEqual(seen, [{ fqdn: 'www.z.' }]);
    assert.deepEqual(written, { fqdn: 'www.z.', observedGeneration: 1 });
    assert.equal(written, store.get('DNSRecordSet', 'dns/www')?.status);
    const rv = store.get('DNSRecordSet', 'dns/www')?.metadata.resourceVersion;
    assert.equal(await store.updateStatusWith('DNSRecordSet', 'dns/www', (s) => ({ ...s })), undefined);
    assert.equal(await store.updateStatusWith('DNSRecordSet', 'dns/www', () => undefined), undefined);
    assert.equal(store.get('DNSRecordSet', 'dns/www')?.metadata.resourceVersion, rv, 'nothing written');
    assert.equal(await store.updateStatusWith('DNSRecordSet', 'dns/gone', (s) => ({ ...s })), undefined);
  });

  test('forEachKeyed visits what list returns, in its order, each with its key; deleting objects too', async () => {
    const store = new MemoryStore();
    const seen = (kind: 'DNSRecordSet' | 'DNSZone') => {
      const out: [string, Resource][] = [];
      store.forEachKeyed(kind, (object, key) => out.push([key, object]));
      return out;
    };
    assert.deepEqual(seen('DNSRecordSet'), [], 'a kind the store never held');
    for (const name of ['b', 'a', 'c'])
      store.apply(
        recordSet('dns', name, { zoneRef: { name: 'z' }, name, type: 'A', records: ['192.0.2.1'] }),
      );
    await store.addFinalizer('DNSRecordSet', 'dns/a', 'x/f');
    store.remove('DNSRecordSet', 'dns/a');
    store.remove('DNSRecordSet', 'dns/c');
    const visited = seen('DNSRecordSet');
    assert.deepEqual(
      visited.map(([, object]) => object),
      store.list('DNSRecordSet'),
    );
    for (const [key, object] of visited) {
      assert.equal(key, resourceKey(object.metadata));
      assert.equal(object, store.get('DNSRecordSet', key), 'the object the store holds, not a copy');
    }
    assert.deepEqual(
      visited.map(([key]) => key),
      ['dns/b', 'dns/a'],
    );
    assert.deepEqual(seen('DNSZone'), []);
  });

  test('finalizers hold deletion until removed', async () => {
    const store = new MemoryStore();
    const events: StoreEvent[] = [];
    store.watch((e) => events.push(e));
    store.apply(rs(['192.0.2.1']));
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    store.remove('DNSRecordSet', 'dns/www');
    const deleting = store.get('DNSRecordSet', 'dns/www')!;
    assert.ok(deleting.metadata.deletionTimestamp);
    store.apply(rs(['192.0.2.9']));
    assert.deepEqual(
      (store.get('DNSRecordSet', 'dns/www') as DNSRecordSet).spec.records,
      ['192.0.2.1'],
      'no updates while deleting',
    );
    await store.removeFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    assert.equal(store.get('DNSRecordSet', 'dns/www'), undefined);
    assert.equal(events.at(-1)?.type, 'delete');
  });

  test('count and countForeign say how many objects list and listForeign return, through adds, deletions held by finalizers and removals', async () => {
    const store = new MemoryStore();
    const same = () => {
      for (const kind of ['DNSZoneClass', 'DNSZone', 'DNSRecordSet'] as const)
        assert.equal(store.count(kind), store.list(kind).length, kind);
      assert.equal(store.countForeign('door'), store.listForeign('door').length, 'door');
      assert.equal(store.countForeign('none'), 0);
    };
    same();
    for (let i = 0; i < 5; i++)
      store.apply(
        recordSet('dns', `r${i}`, {
          zoneRef: { name: 'z' },
          name: `r${i}`,
          type: 'A',
          records: ['192.0.2.1'],
        }),
      );
    store.applyForeign('door', {
      apiVersion: 'example.com/v1',
      kind: 'Thing',
      metadata: { name: 't', namespace: 'dns' },
      spec: {},
    } as never);
    same();
    assert.equal(store.count('DNSRecordSet'), 5);
    await store.addFinalizer('DNSRecordSet', 'dns/r1', 'x/f');
    store.remove('DNSRecordSet', 'dns/r1');
    store.remove('DNSRecordSet', 'dns/r2');
    same();
    assert.equal(store.count('DNSRecordSet'), 4, 'the one being deleted is still listed');
    await store.removeFinalizer('DNSRecordSet', 'dns/r1', 'x/f');
    store.removeForeign('door', 'dns/t');
    same();
    assert.equal(store.count('DNSRecordSet'), 3);
  });

  test('restoreDeleting: an object being deleted that is applied again comes back (folder mode)', async () => {
    const store = new MemoryStore(undefined, { restoreDeleting: true });
    store.apply(rs(['192.0.2.1']));
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    store.remove('DNSRecordSet', 'dns/www');
    assert.ok(store.get('DNSRecordSet', 'dns/www')!.metadata.deletionTimestamp);
    store.apply(rs(['192.0.2.1']));
    const back = store.get('DNSRecordSet', 'dns/www')!;
    assert.equal(back.metadata.deletionTimestamp, undefined);
    assert.deepEqual(back.metadata.finalizers, ['x/f']);
  });

  test('objects share a one-finalizer list; removing it from one leaves the others their own', async () => {
    const store = new MemoryStore();
    const other = recordSet('dns', 'mail', {
      zoneRef: { name: 'z' },
      name: 'mail',
      type: 'A',
      records: ['192.0.2.9'],
    });
    store.apply(rs(['192.0.2.1']));
    store.apply(other);
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'zonekeeper.dev/f');
    await store.addFinalizer('DNSRecordSet', 'dns/mail', 'zonekeeper.dev/f');
    const www = () => store.get('DNSRecordSet', 'dns/www')!.metadata;
    const mail = () => store.get('DNSRecordSet', 'dns/mail')!.metadata;
    assert.equal(www().finalizers, mail().finalizers, 'one list for both');
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'zonekeeper.dev/g');
    await store.removeFinalizer('DNSRecordSet', 'dns/mail', 'zonekeeper.dev/f');
    assert.deepEqual(www().finalizers, ['zonekeeper.dev/f', 'zonekeeper.dev/g']);
    assert.deepEqual(mail().finalizers, []);
    // The metadata keeps exactly its fields (none added as undefined).
    assert.deepEqual(Object.keys(www()).sort(), [
      'creationTimestamp',
      'finalizers',
      'generation',
      'name',
      'namespace',
      'resourceVersion',
      'uid',
    ]);
  });

  test('uid and resourceVersion read, copy and serialise as strings in their place', async () => {
    const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
    store.apply(rs(['192.0.2.1']));
    const first = store.get('DNSRecordSet', 'dns/www')!;
    const { uid } = first.metadata;
    assert.equal(uid, 'uid-1');
    assert.equal(first.metadata.resourceVersion, '1');
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www.z.' });
    store.apply(rs(['192.0.2.2']));
    const obj = store.get('DNSRecordSet', 'dns/www')!;
    assert.equal(obj.metadata.uid, uid, 'the uid stays with the object');
    assert.equal(obj.metadata.resourceVersion, '4', 'every write moves the version');
    const expected = {
      name: 'www',
      namespace: 'dns',
      uid: 'uid-1',
      generation: 2,
      creationTimestamp: '2026-01-01T00:00:00.000Z',
      resourceVersion: '4',
      finalizers: ['x/f'],
    };
    // What a plain object of those fields gives, key order included.
    assert.equal(JSON.stringify(obj.metadata), JSON.stringify(expected));
    assert.deepEqual(Object.keys(obj.metadata), Object.keys(expected));
    assert.deepStrictEqual(obj.metadata, expected);
    assert.deepStrictEqual({ ...obj.metadata }, expected);
    assert.deepStrictEqual(structuredClone(obj.metadata), expected);
    assert.deepStrictEqual(Object.entries(obj.metadata), Object.entries(expected));
    assert.equal(Object.getPrototypeOf(obj.metadata), Object.prototype);
    // Kept as the store's numbers, made strings when read (no string per object).
    assert.equal(typeof Object.getOwnPropertyDescriptor(obj.metadata, 'uid')?.get, 'function');
    assert.equal(typeof Object.getOwnPropertyDescriptor(obj.metadata, 'resourceVersion')?.get, 'function');
    assert.equal(
      JSON.stringify(obj),
      JSON.stringify({
        apiVersion: obj.apiVersion,
        kind: 'DNSRecordSet',
        metadata: expected,
        spec: obj.spec,
        status: { fqdn: 'www.z.' },
      }),
    );
    // Another store counts on its own; a second object gets the next uid.
    store.apply(recordSet('dns', 'mail', { zoneRef: { name: 'z' }, name: 'mail', type: 'A', records: [] }));
    assert.equal(store.get('DNSRecordSet', 'dns/mail')!.metadata.uid, 'uid-2');
    assert.equal(store.get('DNSRecordSet', 'dns/mail')!.metadata.resourceVersion, '5');
  });

  test('metadata of other shapes keeps its keys in order, uid and resourceVersion as strings', async () => {
    const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
    const labelled = rs(['192.0.2.1']);
    labelled.metadata = { name: 'www', namespace: 'dns', labels: { a: 'b' }, resourceVersion: '77' };
    store.apply(labelled);
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    store.remove('DNSRecordSet', 'dns/www');
    const obj = store.get('DNSRecordSet', 'dns/www')!;
    assert.deepStrictEqual(Object.entries(obj.metadata), [
      ['name', 'www'],
      ['namespace', 'dns'],
      ['labels', { a: 'b' }],
      ['resourceVersion', '3'],
      ['uid', 'uid-1'],
      ['generation', 1],
      ['creationTimestamp', '2026-01-01T00:00:00.000Z'],
      ['finalizers', ['x/f']],
      ['deletionTimestamp', '2026-01-01T00:00:00.000Z'],
    ]);
    assert.equal(
      JSON.stringify(obj.metadata),
      JSON.stringify(Object.fromEntries(Object.entries(obj.metadata))),
    );
  });

  test('an assignment to uid or resourceVersion holds what was assigned, in its place', () => {
    const store = new MemoryStore();
    store.apply(rs(['192.0.2.1']));
    const meta = store.get('DNSRecordSet', 'dns/www')!.metadata;
    meta.resourceVersion = 'x';
    meta.uid = 'y';
    assert.equal(meta.resourceVersion, 'x');
    assert.equal(meta.uid, 'y');
    assert.deepEqual(Object.keys(meta), [
      'name',
      'namespace',
      'uid',
      'generation',
      'creationTimestamp',
      'resourceVersion',
    ]);
  });

  test('front-door objects get the same uid and resourceVersion semantics', async () => {
    const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
    const object = {
      apiVersion: 'example.com/v1',
      kind: 'Thing',
      metadata: { name: 't', namespace: 'dns' },
      spec: { a: 1 },
    };
    store.applyForeign('door', object as never);
    await store.setForeignLabel('door', 'dns/t', 'l', 'v');
    const held = store.getForeign('door', 'dns/t')!;
    assert.deepStrictEqual(held.metadata, {
      name: 't',
      namespace: 'dns',
      uid: 'uid-1',
      generation: 1,
      creationTimestamp: '2026-01-01T00:00:00.000Z',
      resourceVersion: '2',
      labels: { l: 'v' },
    });
  });

  test('a status written with a finalizer adds it in the same version and event, unless held or the object is being deleted', async () => {
    const store = new MemoryStore();
    const events: StoreEvent[] = [];
    store.apply(rs(['192.0.2.1']));
    store.watch((e) => events.push(e));
    const version = Number(store.get('DNSRecordSet', 'dns/www')?.metadata.resourceVersion);
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www.z.' }, 'x/f');
    const held = store.get('DNSRecordSet', 'dns/www')!;
    assert.equal(events.length, 1, 'one write, one event');
    assert.equal(events[0]?.object, held);
    assert.deepEqual(held.metadata.finalizers, ['x/f']);
    assert.deepEqual(held.status, { fqdn: 'www.z.' });
    assert.equal(Number(held.metadata.resourceVersion), version + 1);
    assert.deepEqual(Object.keys(held.metadata), [
      'name',
      'namespace',
      'uid',
      'generation',
      'creationTimestamp',
      'resourceVersion',
      'finalizers',
    ]);
    // Held already: the status alone, the finalizer list as it was.
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www2.z.' }, 'x/f');
    assert.equal(store.get('DNSRecordSet', 'dns/www')?.metadata.finalizers, held.metadata.finalizers);
    // Being deleted: no finalizer is added (it would hold the deletion), the status is written.
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www3.z.' }, 'x/g');
    store.remove('DNSRecordSet', 'dns/www');
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www4.z.' }, 'x/h');
    const deleting = store.get('DNSRecordSet', 'dns/www')!;
    assert.deepEqual(deleting.metadata.finalizers, ['x/f', 'x/g']);
    assert.deepEqual(deleting.status, { fqdn: 'www4.z.' });
    await store.removeFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    await store.removeFinalizer('DNSRecordSet', 'dns/www', 'x/g');
    assert.equal(store.get('DNSRecordSet', 'dns/www'), undefined);
  });

  test('a finalizer added sends watchers the new version, as an API server watch does', async () => {
    const store = new MemoryStore();
    const events: StoreEvent[] = [];
    store.apply(rs(['192.0.2.1']));
    store.watch((e) => events.push(e));
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    assert.equal(events.length, 1);
    assert.equal(events[0]?.type, 'upsert');
    assert.equal(events[0]?.object, store.get('DNSRecordSet', 'dns/www'), 'the version the store holds');
    assert.deepEqual(events[0]?.object.metadata.finalizers, ['x/f']);
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    assert.equal(events.length, 1, 'a finalizer already there changes nothing and sends nothing');
    const foreign: unknown[] = [];
    store.applyForeign('door', {
      apiVersion: 'example.com/v1',
      kind: 'Thing',
      metadata: { name: 't', namespace: 'dns' },
      spec: {},
    } as never);
    store.watchForeign((e) => foreign.push(e.object));
    await store.addForeignFinalizer('door', 'dns/t', 'x/f');
    assert.deepEqual(foreign, [store.getForeign('door', 'dns/t')]);
  });

  test('a new object of the usual shape is made as any other: fields, strings, generation, creation time and event', async () => {
    const events: StoreEvent[] = [];
    const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
    store.watch((e) => events.push(e));
    const desired = rs(['192.0.2.1']);
    const held = store.apply(desired, undefined, 4)!;
    const expected = {
      apiVersion: desired.apiVersion,
      kind: 'DNSRecordSet',
      metadata: {
        name: 'www',
        namespace: 'dns',
        uid: 'uid-1',
        generation: 4,
        creationTimestamp: '2026-01-01T00:00:00.000Z',
        resourceVersion: '1',
      },
      spec: desired.spec,
    };
    assert.equal(JSON.stringify(held), JSON.stringify(expected));
    assert.deepEqual(structuredClone(held), expected);
    assert.equal(held.spec, desired.spec, 'the spec as it came');
    assert.equal(Object.getPrototypeOf(held), Object.prototype);
    assert.equal(Object.getPrototypeOf(held.metadata), Object.prototype);
    assert.deepEqual(events, [{ type: 'upsert', kind: 'DNSRecordSet', key: 'dns/www', object: held }]);
    // A creation time given, and the counters going on from other shapes.
    const labelled = recordSet('dns', 'l', {
      zoneRef: { name: 'z' },
      name: 'l',
      type: 'A',
      records: ['192.0.2.1'],
    });
    labelled.metadata = { name: 'l', namespace: 'dns', labels: { a: 'b' } } as never;
    store.apply(labelled);
    const next = store.apply(
      recordSet('dns', 'n', { zoneRef: { name: 'z' }, name: 'n', type: 'A', records: ['192.0.2.1'] }),
      '2025-01-01T00:00:00.000Z',
    )!;
    assert.deepEqual(
      { ...next.metadata },
      {
        name: 'n',
        namespace: 'dns',
        uid: 'uid-3',
        generation: 1,
        creationTimestamp: '2025-01-01T00:00:00.000Z',
        resourceVersion: '3',
      },
    );
    // Written over, as any other.
    await store.updateStatus('DNSRecordSet', 'dns/n', { fqdn: 'n.z.' }, 'x/f');
    assert.deepEqual(store.get('DNSRecordSet', 'dns/n')!.metadata.finalizers, ['x/f']);
    assert.equal(store.get('DNSRecordSet', 'dns/n')!.metadata.uid, 'uid-3');
  });

  test('apply with `usual` (the caller knows the shape): a new object made as when tested, one held already updated as any other', async () => {
    const run = (usual: boolean) => {
      const events: string[] = [];
      const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
      store.watch((e) => events.push(JSON.stringify(e)));
      const held = store.apply(
        rs(['192.0.2.1']),
        '2025-01-01T00:00:00.000Z',
        undefined,
        'dns/www',
        undefined,
        usual,
      );
      const first = { json: JSON.stringify(held), keys: Object.keys(held!.metadata) };
      // Applied again with labels and a new spec, still said to be usual: the store's object is not
      // new, so its labels are kept and its generation moves, as without the flag.
      const labelled = rs(['192.0.2.2']);
      labelled.metadata = { name: 'www', namespace: 'dns', labels: { a: 'b' } } as never;
      store.apply(labelled, undefined, undefined, 'dns/www', undefined, usual);
      const again = store.get('DNSRecordSet', 'dns/www')!;
      return { first, again: JSON.stringify(again), events };
    };
    const tested = run(false);
    assert.deepEqual(run(true), tested);
    assert.match(tested.again, /"labels":\{"a":"b"\}/);
    assert.match(tested.again, /"generation":2/);
  });

  test('forEachKeyed gives the slots of record sets kept in a record table, and none otherwise', () => {
    const table = new RecordTable();
    for (const store of [new MemoryStore(undefined, { recordSets: table }), new MemoryStore()]) {
      for (const name of ['b', 'a'])
        store.apply(
          recordSet('dns', name, { zoneRef: { name: 'z' }, name, type: 'A', records: ['192.0.2.1'] }),
        );
      const seen: [string, number | undefined][] = [];
      store.forEachKeyed('DNSRecordSet', (_object, key, slot) => seen.push([key, slot]));
      const kept = store.recordTable !== undefined;
      assert.deepEqual(
        seen,
        ['dns/b', 'dns/a'].map((key) => [key, kept ? table.slotOf(key) : undefined]),
      );
      if (kept) assert.ok(seen.every(([, slot]) => table.held(slot!, Holder.store)));
    }
  });

  test('objects keep their keys in order, whatever their shape', async () => {
    const store = new MemoryStore();
    store.apply(rs(['192.0.2.1']));
    const held = () => store.get('DNSRecordSet', 'dns/www')!;
    assert.deepEqual(Object.keys(held()), ['apiVersion', 'kind', 'metadata', 'spec']);
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www.z.' });
    assert.deepEqual(Object.keys(held()), ['apiVersion', 'kind', 'metadata', 'spec', 'status']);
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    assert.deepEqual(Object.keys(held()), ['apiVersion', 'kind', 'metadata', 'spec', 'status']);
    assert.equal(Object.getPrototypeOf(held()), Object.prototype);
    const { apiVersion, ...rest } = rs(['192.0.2.2']);
    store.apply({ ...rest, apiVersion } as never);
    assert.deepEqual(Object.keys(held()), ['kind', 'metadata', 'spec', 'apiVersion', 'status']);
    assert.equal(
      JSON.stringify(held()),
      JSON.stringify({ ...rest, apiVersion, metadata: { ...held().metadata }, status: { fqdn: 'www.z.' } }),
    );
  });

  test('objects and metadata made without a merged copy: fields in their usual order, a written status not taken, odd shapes kept whole', async () => {
    const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
    const held = () => store.get('DNSRecordSet', 'dns/www')!;
    // Metadata fields in another order: the usual metadata, in its order.
    const swapped = rs(['192.0.2.1']);
    swapped.metadata = { namespace: 'dns', name: 'www' };
    store.apply(swapped);
    assert.deepEqual(Object.keys(held().metadata), [
      'name',
      'namespace',
      'uid',
      'generation',
      'creationTimestamp',
      'resourceVersion',
    ]);
    // A status in what is written is not taken; the one held is kept.
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www.z.' });
    store.apply({ ...rs(['192.0.2.2']), status: { fqdn: 'forged.' } } as never);
    assert.deepEqual(held().status, { fqdn: 'www.z.' });
    assert.deepEqual(Object.keys(held()), ['apiVersion', 'kind', 'metadata', 'spec', 'status']);
    assert.deepEqual((held().spec as { records: string[] }).records, ['192.0.2.2']);
    // A field of no usual shape (an extra top-level field, a metadata field such as generateName):
    // kept, in its place.
    store.apply({ ...rs(['192.0.2.3']), extra: 1 } as never);
    assert.deepEqual(Object.keys(held()), ['apiVersion', 'kind', 'metadata', 'spec', 'extra', 'status']);
    const named = rs(['192.0.2.5']);
    named.metadata = { name: 'www', namespace: 'dns', generateName: 'w-' } as never;
    store.apply(named);
    assert.deepEqual(Object.keys(held().metadata), [
      'name',
      'namespace',
      'generateName',
      'uid',
      'generation',
      'creationTimestamp',
      'resourceVersion',
    ]);
    assert.equal(held().metadata.uid, 'uid-1');
    // An own `__proto__` key (JSON.parse makes one) is left out, as before.
    store.apply(
      JSON.parse(
        JSON.stringify(rs(['192.0.2.4'])).replace('"metadata":{', '"metadata":{"__proto__":{"x":1},'),
      ),
    );
    assert.equal(Object.hasOwn(held().metadata, '__proto__'), false);
    assert.deepEqual((held().spec as { records: string[] }).records, ['192.0.2.4']);
  });

  test('without finalizers deletion is immediate', () => {
    const store = new MemoryStore();
    store.apply(rs(['192.0.2.1']));
    store.remove('DNSRecordSet', 'dns/www');
    assert.equal(store.list('DNSRecordSet').length, 0);
  });
});

describe('finalizer removal', () => {
  test('a finalizer removed from an object that stays is sent to watchers, as an API server watch sends it', async () => {
    const store = new MemoryStore();
    store.apply(rs(['192.0.2.1']));
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'a/f');
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'b/f');
    store.remove('DNSRecordSet', 'dns/www'); // deletion starts; two finalizers hold it
    const events: StoreEvent[] = [];
    store.watch((e) => events.push(e));
    await store.removeFinalizer('DNSRecordSet', 'dns/www', 'a/f');
    const held = store.get('DNSRecordSet', 'dns/www');
    assert.deepEqual(held?.metadata.finalizers, ['b/f']);
    // A reader that keeps the newest version it was sent (the catalog) would otherwise keep the one
    // before beside the store's.
    assert.equal(events.length, 1, 'the new version is sent to watchers');
    assert.equal(events[0]?.object, held);
  });

  test('removing a finalizer the object does not hold writes nothing', async () => {
    const store = new MemoryStore();
    store.apply(rs(['192.0.2.1']));
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'b/f');
    const before = store.get('DNSRecordSet', 'dns/www');
    await store.removeFinalizer('DNSRecordSet', 'dns/www', 'a/f');
    const after = store.get('DNSRecordSet', 'dns/www');
    assert.equal(
      after?.metadata.resourceVersion,
      before?.metadata.resourceVersion,
      'no new version for no change',
    );
    assert.equal(after, before);
  });
});

describe('what a writer must not set through apply (a manifest, a front door)', () => {
  test('a finalizer in the written metadata is not kept: the deletion it would hold completes', async () => {
    const store = new MemoryStore(undefined, { restoreDeleting: true });
    const hostile = rs(['192.0.2.1']);
    hostile.metadata = { ...hostile.metadata, finalizers: ['evil/hold'] };
    store.apply(hostile);
    assert.equal(store.get('DNSRecordSet', 'dns/www')?.metadata.finalizers, undefined);
    store.remove('DNSRecordSet', 'dns/www');
    assert.equal(store.get('DNSRecordSet', 'dns/www'), undefined, 'deleted at once: nothing holds it');
  });

  test("an object's finalizers are the controllers', whatever a later version writes", async () => {
    const store = new MemoryStore(undefined, { restoreDeleting: true });
    store.apply(rs(['192.0.2.1']));
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'dns.zonekeeper.dev/finalizer');
    const hostile = rs(['192.0.2.2']);
    hostile.metadata = { ...hostile.metadata, finalizers: ['evil/hold'] };
    store.apply(hostile);
    store.apply(rs(['192.0.2.3']));
    assert.deepEqual(store.get('DNSRecordSet', 'dns/www')?.metadata.finalizers, [
      'dns.zonekeeper.dev/finalizer',
    ]);
    store.remove('DNSRecordSet', 'dns/www');
    await store.removeFinalizer('DNSRecordSet', 'dns/www', 'dns.zonekeeper.dev/finalizer');
    assert.equal(store.get('DNSRecordSet', 'dns/www'), undefined, 'the deletion completes');
  });

  test('a deletion time in the written metadata does not delete the object', () => {
    const store = new MemoryStore(undefined, { restoreDeleting: true });
    const hostile = rs(['192.0.2.1']);
    hostile.metadata = { ...hostile.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' };
    store.apply(hostile);
    assert.equal(store.get('DNSRecordSet', 'dns/www')?.metadata.deletionTimestamp, undefined);
  });
});

describe('record sets kept in a record-set table (serve)', () => {
  /** A seeded generator (xorshift32), so that a failure can be replayed. */
  const random = (seed: number) => () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };

  test('the same objects, versions, counts and events as a map of its own, through random applies, statuses, finalizers and removals', async () => {
    const now = () => new Date('2026-01-01T00:00:00Z');
    const table = new RecordTable();
    const plain = new MemoryStore(now, { restoreDeleting: true });
    const tabled = new MemoryStore(now, { restoreDeleting: true, recordSets: table });
    const events: [string[], string[]] = [[], []];
    plain.watch((e) => events[0].push(`${e.type} ${e.key} ${JSON.stringify(e.object)}`));
    tabled.watch((e) => events[1].push(`${e.type} ${e.key} ${JSON.stringify(e.object)}`));
    const next = random(0x5eed);
    const names = Array.from({ length: 40 }, (_, i) => `n${i}`);
    // Another holder of the table (what a backend programmed) holds some slots past the store's delete.
    const programmed = new Set<string>();
    for (let step = 0; step < 4000; step++) {
      const name = names[Math.floor(next() * names.length)]!;
      const key = `dns/${name}`;
      const op = Math.floor(next() * 7);
      const address = `192.0.2.${Math.floor(next() * 3) + 1}`;
      const zone = next() < 0.5 ? 'z' : 'y';
      for (const store of [plain, tabled]) {
        if (op <= 2)
          store.apply(
            recordSet('dns', name, { zoneRef: { name: zone }, name, type: 'A', records: [address] }),
          );
        else if (op === 3) store.remove('DNSRecordSet', key);
        else if (op === 4) await store.addFinalizer('DNSRecordSet', key, 'x/f');
        else if (op === 5) await store.removeFinalizer('DNSRecordSet', key, 'x/f');
        else
          await store.updateStatus('DNSRecordSet', key, {
            fqdn: `${name}.${zone}.`,
            observedGeneration: step,
          });
      }
      if (next() < 0.1) {
        if (programmed.has(key)) {
          table.release(table.slotOf(key), Holder.programmed);
          programmed.delete(key);
        } else {
          table.hold(key, Holder.programmed);
          programmed.add(key);
        }
      }
      for (const key of names.map((n) => `dns/${n}`))
        assert.deepEqual(
          tabled.get('DNSRecordSet', key),
          plain.get('DNSRecordSet', key),
          `step ${step}: ${key}`,
        );
      assert.equal(tabled.count('DNSRecordSet'), plain.count('DNSRecordSet'));
      const sorted = (store: MemoryStore) =>
        store
          .list('DNSRecordSet')
          .map((o) => JSON.stringify(o))
          .sort();
      assert.deepEqual(sorted(tabled), sorted(plain));
      tabled.forEachKeyed('DNSRecordSet', (object, key) => {
        assert.equal(key, resourceKey(object.metadata));
        assert.equal(key, table.keyOf(table.slotOf(key)), "the table's one key string");
      });
    }
    assert.deepEqual(events[1], events[0]);
    // The table holds no slot that neither the store nor the other holder holds.
    const held = [...table.entries()].map(([key]) => key).sort();
    const expected = [
      ...new Set([...tabled.list('DNSRecordSet').map((o) => resourceKey(o.metadata)), ...programmed]),
    ].sort();
    assert.deepEqual(held, expected);
  });

  test("list keeps a map's order, but a record set applied again while another holder kept its slot keeps its place", () => {
    const table = new RecordTable();
    const store = new MemoryStore(undefined, { recordSets: table });
    const names = () => store.list('DNSRecordSet').map((o) => o.metadata.name);
    const apply = (name: string) =>
      store.apply(
        recordSet('dns', name, { zoneRef: { name: 'z' }, name, type: 'A', records: ['192.0.2.1'] }),
      );
    for (const name of ['b', 'a', 'c']) apply(name);
    assert.deepEqual(names(), ['b', 'a', 'c']);
    store.remove('DNSRecordSet', 'dns/b');
    apply('b');
    assert.deepEqual(names(), ['a', 'c', 'b'], 'no other holder: last, as in a map');
    const slot = table.hold('dns/a', Holder.programmed);
    store.remove('DNSRecordSet', 'dns/a');
    assert.equal(store.get('DNSRecordSet', 'dns/a'), undefined);
    assert.equal(store.count('DNSRecordSet'), 2);
    assert.deepEqual(names(), ['c', 'b']);
    apply('a');
    assert.deepEqual(names(), ['a', 'c', 'b'], 'its slot kept: its place too');
    store.remove('DNSRecordSet', 'dns/a');
    table.release(slot, Holder.programmed);
    assert.equal(table.slotOf('dns/a'), -1, 'the last holder gone: the slot is free');
    assert.equal(table.size, 2);
  });
});
