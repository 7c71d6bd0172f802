import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { DNSRecordSet, DNSZone } from '../../api/index.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { Holder, RecordTable } from '../../zones/record-table.ts';
import { PutText, StateStore, type StoredObject } from './state-file.ts';

const recordSet = (name: string, address: string): DNSRecordSet => ({
  apiVersion: 'dns.zonekeeper.dev/v1alpha1',
  kind: 'DNSRecordSet',
  metadata: { name, namespace: 'dns' },
  spec: { zoneRef: { name: 'z' }, name, type: 'A', records: [address] },
});

const zone = (name: string): DNSZone => ({
  apiVersion: 'dns.zonekeeper.dev/v1alpha1',
  kind: 'DNSZone',
  metadata: { name, namespace: 'dns' },
  spec: { domainName: `${name}.example.`, className: 'default' },
});

const rsId = (name: string) => `DNSRecordSet/dns/${name}`;

/** Every object a state holds, by id, as `object` gives it. */
const held = (state: StateStore) =>
  new Map([...state.objectIds()].sort().map((id) => [id, state.object(id)] as const));

/**
 * The same changes made to a state that keeps its record sets in a record table (`recordTable`, as
 * `serve` opens it) and to one that keeps every object in its own map: what they hold, what they
 * write and what reads back must be the same.
 */
describe('StateStore with its record sets in a record table', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-state-table-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("a record set's entry is kept at the slot the store holds, and the slot stays while either holds it", async () => {
    const table = new RecordTable();
    const store = new MemoryStore(undefined, { recordSets: table });
    const state = await StateStore.open(undefined, { recordTable: table });
    store.apply(recordSet('a', '192.0.2.1'));
    state.putObject(
      rsId('a'),
      { created: 't', file: 'a.yaml', resource: recordSet('a', '192.0.2.1') },
      'a.yaml',
    );
    const slot = table.slotOf('dns/a');
    assert.ok(table.held(slot, Holder.store) && table.held(slot, Holder.state));
    assert.equal(table.size, 1, 'one slot for both');
    assert.equal(state.tagOf(rsId('a')), 'a.yaml');
    // The store lets go: the state still holds the record set there.
    store.remove('DNSRecordSet', 'dns/a');
    assert.equal(table.slotOf('dns/a'), slot);
    assert.deepEqual(state.object(rsId('a'))?.resource, recordSet('a', '192.0.2.1'));
    // The state lets go too: the slot is freed, and reused by another key, whose entry is not the old one.
    state.deleteObject(rsId('a'));
    assert.equal(table.slotOf('dns/a'), -1);
    assert.equal(state.object(rsId('a')), undefined);
    store.apply(recordSet('b', '192.0.2.2'));
    assert.equal(table.slotOf('dns/b'), slot, 'the freed slot is reused');
    assert.equal(state.object(rsId('b')), undefined);
    assert.equal(state.tagOf(rsId('b')), undefined);
    assert.equal(state.setTag(rsId('b'), 'x'), false);
    assert.deepEqual([...state.objectIds()], []);
    // Deleting what the state does not hold leaves the store's slot alone.
    state.deleteObject(rsId('b'));
    assert.ok(table.held(slot, Holder.store));
    assert.equal(
      (store.get('DNSRecordSet', 'dns/b') as DNSRecordSet | undefined)?.spec.records[0],
      '192.0.2.2',
    );
  });

  test("putObject with the record set's slot given and tagAt hold and give what a look-up of the key does", async () => {
    const table = new RecordTable();
    const store = new MemoryStore(undefined, { recordSets: table });
    const given = await StateStore.open(undefined, { recordTable: table });
    const otherTable = new RecordTable();
    const otherStore = new MemoryStore(undefined, { recordSets: otherTable });
    const looked = await StateStore.open(undefined, { recordTable: otherTable });
    assert.equal(given.recordTable, table);
    assert.equal((await StateStore.open(undefined)).recordTable, undefined);
    const put = (name: string, address: string, o: Partial<StoredObject> = {}, tag?: string) => {
      const object = { created: 't1', file: 'f.yaml', resource: recordSet(name, address), ...o };
      const at = { slot: table.slotOf(`dns/${name}`) };
      assert.equal(given.tagAt(at.slot), given.tagOf(rsId(name)));
      store.apply(recordSet(name, address), undefined, undefined, `dns/${name}`, at);
      given.putObject(rsId(name), object, tag, at.slot);
      otherStore.apply(recordSet(name, address));
      looked.putObject(rsId(name), object, tag);
    };
    for (let i = 0; i < 20; i++) put(`r${i}`, '192.0.2.1', {}, `f${i}.yaml`);
    // Put again: unchanged, changed, with a generation and a note, not of the usual shape; the tag stays.
    put('r1', '192.0.2.1', {}, 'other.yaml');
    put('r2', '192.0.2.2', { generation: 2, note: 'n' });
    const odd = { ...recordSet('r3', '192.0.2.3'), status: { x: 1 } } as unknown as DNSRecordSet;
    put('r3', '192.0.2.3', { resource: odd });
    // The store let go, the state holds it still: put again at its slot.
    store.remove('DNSRecordSet', 'dns/r4');
    otherStore.remove('DNSRecordSet', 'dns/r4');
    put('r4', '192.0.2.4');
    assert.deepEqual(held(given), held(looked));
    for (let i = 0; i < 20; i++) {
      assert.equal(given.tagOf(rsId(`r${i}`)), looked.tagOf(rsId(`r${i}`)));
      assert.equal(given.tagAt(table.slotOf(`dns/r${i}`)), `f${i}.yaml`);
      assert.ok(table.held(table.slotOf(`dns/r${i}`), Holder.state));
    }
    assert.equal(given.tagAt(-1), undefined);
    assert.equal(table.size, 20);
    // A slot only another holder holds: no tag there; a slot no holder holds is refused.
    table.hold('dns/x', Holder.catalog);
    assert.equal(given.tagAt(table.slotOf('dns/x')), undefined);
    const free = table.size + 10;
    assert.throws(
      () =>
        given.putObject(rsId('y'), { created: 't1', resource: recordSet('y', '192.0.2.9') }, undefined, free),
      RangeError,
    );
  });

  test('a record set removed and added back, put unchanged, retagged and batched, holds what a state of its own map holds', async () => {
    const table = new RecordTable();
    const store = new MemoryStore(undefined, { recordSets: table });
    const tabled = await StateStore.open(undefined, { recordTable: table });
    const plain = await StateStore.open(undefined);
    const both = (change: (state: StateStore) => void) => {
      change(tabled);
      change(plain);
    };
    const put = (name: string, address: string, o: Partial<StoredObject> = {}) =>
      both((s) =>
        s.putObject(rsId(name), { created: 't1', file: 'f.yaml', resource: recordSet(name, address), ...o }),
      );
    for (let i = 0; i < 50; i++) {
      store.apply(recordSet(`r${i}`, '192.0.2.1'));
      put(`r${i}`, '192.0.2.1');
    }
    both((s) => s.putObject('DNSZone/dns/z', { created: 't1', file: 'f.yaml', resource: zone('z') }));
    both((s) =>
      s.putAccepted('DNSZone/dns/z', { status: 'True', reason: 'Accepted', lastTransitionTime: 't1' }),
    );
    // Removed and added back, with another creation time.
    both((s) => s.deleteObject(rsId('r3')));
    assert.equal(tabled.object(rsId('r3')), undefined);
    put('r3', '192.0.2.3', { created: 't2' });
    // Changed, unchanged, with a note and a generation, not of the usual shape.
    put('r4', '192.0.2.4', { generation: 3, note: 'n' });
    put('r5', '192.0.2.1');
    const odd = { ...recordSet('r6', '192.0.2.6'), status: { x: 1 } } as unknown as DNSRecordSet;
    put('r6', '192.0.2.6', { resource: odd });
    both((s) => s.setTag(rsId('r7'), 'tag'));
    // A batch: one deleted, one new.
    await Promise.all([
      tabled.commitBatch([
        { id: rsId('r8') },
        { id: rsId('n1'), object: { created: 't3', resource: recordSet('n1', '192.0.2.9') } },
      ]),
      plain.commitBatch([
        { id: rsId('r8') },
        { id: rsId('n1'), object: { created: 't3', resource: recordSet('n1', '192.0.2.9') } },
      ]),
    ]);
    // The store lets go of some the state holds, and takes others back.
    for (let i = 10; i < 20; i++) store.remove('DNSRecordSet', `dns/r${i}`);
    assert.deepEqual(held(tabled), held(plain));
    for (const id of [
      'DNSZone/dns/z',
      rsId('r3'),
      rsId('r4'),
      rsId('r6'),
      rsId('r7'),
      rsId('r8'),
      rsId('n1'),
    ]) {
      assert.equal(tabled.tagOf(id), plain.tagOf(id), id);
      assert.equal(tabled.createdAt(id), plain.createdAt(id), id);
    }
    assert.equal(tabled.tagOf(rsId('r7')), 'tag');
    assert.deepEqual(tabled.acceptedOf('DNSZone/dns/z'), plain.acceptedOf('DNSZone/dns/z'));
    assert.deepEqual(tabled.snapshot().created, plain.snapshot().created);
    assert.deepEqual(
      tabled.heldSpec(rsId('r5'), 'f.yaml', recordSet('r5', '192.0.2.1')),
      plain.heldSpec(rsId('r5'), 'f.yaml', recordSet('r5', '192.0.2.1')),
    );
    assert.notEqual(tabled.heldSpec(rsId('r5'), 'f.yaml', recordSet('r5', '192.0.2.1')), undefined);
    // The state's slots: exactly its record sets, each held for it.
    const mine = [...table.entries()]
      .filter(([, slot]) => table.held(slot, Holder.state))
      .map(([key]) => `DNSRecordSet/${key}`);
    assert.deepEqual(
      mine.sort(),
      [...plain.objectIds()].filter((id) => id.startsWith('DNSRecordSet/')).sort(),
    );
  });

  test("a first start's snapshot holds the same lines as a state of its own map writes, and reads back into either", async () => {
    const write = async (sub: string, table: RecordTable | undefined) => {
      const at = path.join(dir, sub);
      const state = await StateStore.open(at, table ? { recordTable: table } : {});
      const release = state.holdCompaction();
      for (let z = 0; z < 3; z++) {
        state.putObject(`DNSZone/dns/z${z}`, { created: 't', file: `z${z}.yaml`, resource: zone(`z${z}`) });
        for (let i = 0; i < 700; i++)
          state.putObject(rsId(`z${z}-r${i}`), {
            created: 't',
            file: `z${z}.yaml`,
            resource: recordSet(`z${z}-r${i}`, '192.0.2.1'),
          });
      }
      await state.set('z0.example.', { serial: 7 });
      release();
      await state.compactionsSettled();
      await state.close();
      assert.deepEqual(await readdir(at), ['snapshot.000001.jsonl']);
      return (await readFile(path.join(at, 'snapshot.000001.jsonl'), 'utf8')).split('\n');
    };
    const plain = await write('plain', undefined);
    const tabled = await write('tabled', new RecordTable());
    // Header, serials first, the end line last; the objects' lines the same (the other kinds' come
    // before the record sets').
    assert.equal(tabled.length, plain.length);
    assert.deepEqual(tabled.slice(0, 2), plain.slice(0, 2));
    assert.deepEqual(tabled.slice(-2), plain.slice(-2));
    assert.deepEqual([...tabled].sort(), [...plain].sort());
    assert.deepEqual(
      tabled.filter((line) => line.includes('"DNSRecordSet/')),
      plain.filter((line) => line.includes('"DNSRecordSet/')),
      'record sets in the order they were put',
    );
    // Either reads either: the same objects, and a table-kept state holds its slots.
    const table = new RecordTable();
    const back = await StateStore.open(path.join(dir, 'tabled'), { recordTable: table, readOnly: true });
    const backPlain = await StateStore.open(path.join(dir, 'plain'), { readOnly: true });
    assert.deepEqual(held(back), held(backPlain));
    assert.equal(table.size, 2100);
    assert.deepEqual(back.objectsOfFile('z1.yaml').length, 701);
    // The same ids, in the same order, whichever way the record sets are kept.
    for (const file of backPlain.loadedFiles())
      assert.deepEqual(back.objectsOfFile(file), backPlain.objectsOfFile(file), file);
    assert.deepEqual(back.loadedFiles(), backPlain.loadedFiles());
  });

  test('objects changed, deleted and added back while a snapshot is written read back as memory holds them', async () => {
    const table = new RecordTable();
    const state = await StateStore.open(dir, { recordTable: table, compactMinBytes: 1 });
    for (let i = 0; i < 3000; i++)
      state.putObject(rsId(`r${i}`), {
        created: 't',
        file: 'f.yaml',
        resource: recordSet(`r${i}`, '192.0.2.1'),
      });
    await state.flush();
    // Changes while the compaction the log calls for is written.
    const deadline = Date.now() + 10_000;
    let i = 0;
    while (Date.now() < deadline && i < 3000) {
      state.deleteObject(rsId(`r${i}`));
      if (i % 2 === 0)
        state.putObject(rsId(`r${i}`), {
          created: 't2',
          file: 'g.yaml',
          resource: recordSet(`r${i}`, '192.0.2.2'),
        });
      i += 7;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await state.flush();
    await state.compactionsSettled();
    await state.close();
    const back = await StateStore.open(dir, { recordTable: new RecordTable() });
    assert.deepEqual(held(back), held(state));
    await back.close();
  });

  test("a record set's snapshot line made from its key is the line made from its id, whatever its strings", () => {
    const byKey = new PutText();
    const byId = new PutText();
    const keys = ['dns/a', 'dns/a"b\\c', 'ns-é/名前\u2028x', 'cluster-scoped', 'dns/\u0000'];
    for (const [i, key] of keys.entries())
      for (const [file, generation] of [
        ['f.yaml', 0],
        [undefined, 4],
        ['d"ir/f.yaml', 2],
      ] as const) {
        const spec = { zoneRef: { name: 'z' }, name: key, type: 'TXT', records: [`"${key}"`] };
        const line = byKey.recordSetLine(key, `t${i}`, file, spec, generation);
        assert.equal(line, byId.line(`DNSRecordSet/${key}`, `t${i}`, file, spec, generation, undefined));
        assert.equal(JSON.parse(line).id, `DNSRecordSet/${key}`);
      }
  });
});
