import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Definers } from './definers.ts';

test('one file per object is held as that file; several as a set, in path order', () => {
  const d = new Definers();
  d.add('DNSZone/a/x', 'b.yaml');
  d.add('DNSZone/a/x', 'b.yaml');
  assert.deepEqual(d.files('DNSZone/a/x'), ['b.yaml']);
  assert.deepEqual([...d.duplicates()], []);
  d.add('DNSZone/a/x', 'a.yaml');
  d.add('DNSZone/a/x', 'c.yaml');
  assert.deepEqual(d.files('DNSZone/a/x'), ['a.yaml', 'b.yaml', 'c.yaml']);
  assert.deepEqual([...d.duplicates()], [['DNSZone/a/x', ['a.yaml', 'b.yaml', 'c.yaml']]]);
  assert.equal(d.remove('DNSZone/a/x', 'a.yaml'), true);
  assert.equal(d.remove('DNSZone/a/x', 'a.yaml'), false);
  assert.equal(d.remove('DNSZone/a/x', 'c.yaml'), true);
  assert.deepEqual(d.files('DNSZone/a/x'), ['b.yaml']);
  assert.deepEqual([...d.duplicates()], []);
  assert.equal(d.remove('DNSZone/a/x', 'other.yaml'), false);
  assert.equal(d.has('DNSZone/a/x'), true);
  assert.equal(d.remove('DNSZone/a/x', 'b.yaml'), true);
  assert.equal(d.has('DNSZone/a/x'), false);
  assert.equal(d.size, 0);
  assert.deepEqual(d.files('DNSZone/a/x'), []);
});

test('with the state store: the files of an object the state holds are kept in its entry, and go on with new versions', async () => {
  const { StateStore } = await import('./state-file.ts');
  const state = await StateStore.open(undefined);
  const d = new Definers(state);
  const id = 'DNSRecordSet/dns/x';
  const version = (address: string) => ({
    created: 't',
    file: 'b.yaml',
    resource: {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1' as const,
      kind: 'DNSRecordSet' as const,
      metadata: { name: 'x', namespace: 'dns' },
      spec: { name: 'x', type: 'A' as const, records: [address] },
    },
  });
  // Defined before the state holds it: kept apart, then moved into the entry.
  d.add(id, 'b.yaml');
  assert.equal(state.tagOf(id), undefined);
  state.putObject(id, version('192.0.2.1'));
  assert.deepEqual(d.files(id), ['b.yaml']);
  d.settle();
  assert.equal(state.tagOf(id), 'b.yaml');
  assert.equal(d.size, 1);
  // A new version keeps it; a second file makes a duplicate, kept in the entry too.
  state.putObject(id, version('192.0.2.2'));
  assert.equal(state.tagOf(id), 'b.yaml');
  d.add(id, 'a.yaml');
  assert.deepEqual(d.files(id), ['a.yaml', 'b.yaml']);
  assert.equal(d.first(id), 'a.yaml');
  assert.deepEqual([...d.duplicates()], [[id, ['a.yaml', 'b.yaml']]]);
  assert.equal(d.size, 1);
  assert.equal(d.remove(id, 'a.yaml'), true);
  assert.equal(state.tagOf(id), 'b.yaml');
  assert.deepEqual([...d.duplicates()], []);
  assert.equal(d.remove(id, 'b.yaml'), true);
  assert.equal(d.has(id), false);
  assert.equal(d.size, 0);
  // Deleted from the state and defined again: kept apart until the state holds it again.
  state.deleteObject(id);
  d.add(id, 'c.yaml');
  assert.equal(d.first(id), 'c.yaml');
  assert.equal(d.size, 1);
  state.putObject(id, version('192.0.2.3'));
  d.settle();
  assert.equal(state.tagOf(id), 'c.yaml');
  assert.deepEqual(d.files(id), ['c.yaml']);
});

test('a first load into an empty state: kept apart without asking the state, then moved into its entries at once', async () => {
  const { StateStore } = await import('./state-file.ts');
  const state = await StateStore.open(undefined);
  const d = new Definers(state);
  const version = (name: string) => ({
    created: 't',
    file: 'a.yaml',
    resource: {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1' as const,
      kind: 'DNSRecordSet' as const,
      metadata: { name, namespace: 'dns' },
      spec: { name, type: 'A' as const, records: ['192.0.2.1'] },
    },
  });
  d.stateHoldsNone(true);
  for (const name of ['x', 'y', 'z']) d.add(`DNSRecordSet/dns/${name}`, 'a.yaml');
  d.add('DNSRecordSet/dns/y', 'b.yaml');
  d.add('DNSRecordSet/dns/z', 'a.yaml');
  assert.equal(d.size, 3);
  assert.deepEqual([...d.duplicates()], [['DNSRecordSet/dns/y', ['a.yaml', 'b.yaml']]]);
  assert.equal(d.remove('DNSRecordSet/dns/y', 'b.yaml'), true);
  assert.deepEqual([...d.duplicates()], []);
  d.stateHoldsNone(false);
  // Asked in the order they were defined, and out of it.
  const first = d.firstInOrder();
  assert.deepEqual(
    ['DNSRecordSet/dns/x', 'DNSRecordSet/dns/z', 'DNSRecordSet/dns/y', 'DNSRecordSet/dns/w'].map(first),
    ['a.yaml', 'a.yaml', 'a.yaml', undefined],
  );
  // The walk started after the objects the caller skips: those after them, and any other, alike.
  const after = d.firstInOrder(1);
  assert.deepEqual(
    ['DNSRecordSet/dns/y', 'DNSRecordSet/dns/z', 'DNSRecordSet/dns/x', 'DNSRecordSet/dns/w'].map(after),
    ['a.yaml', 'a.yaml', 'a.yaml', undefined],
  );
  assert.deepEqual(['DNSRecordSet/dns/z'].map(d.firstInOrder(5)), ['a.yaml']);
  // The state takes two of them: their files move into its entries, the third stays apart.
  state.putObject('DNSRecordSet/dns/x', version('x'));
  state.putObject('DNSRecordSet/dns/y', version('y'));
  assert.equal(d.first('DNSRecordSet/dns/x'), 'a.yaml');
  d.settle();
  assert.equal(state.tagOf('DNSRecordSet/dns/x'), 'a.yaml');
  assert.equal(state.tagOf('DNSRecordSet/dns/y'), 'a.yaml');
  assert.deepEqual(d.files('DNSRecordSet/dns/z'), ['a.yaml']);
  state.putObject('DNSRecordSet/dns/z', version('z'));
  d.settle();
  assert.equal(state.tagOf('DNSRecordSet/dns/z'), 'a.yaml');
  d.add('DNSRecordSet/dns/z', 'c.yaml');
  assert.deepEqual(state.tagOf('DNSRecordSet/dns/z'), new Set(['a.yaml', 'c.yaml']));
  assert.deepEqual([...d.duplicates()], [['DNSRecordSet/dns/z', ['a.yaml', 'c.yaml']]]);
  assert.equal(d.size, 3);
});

test("the state's entry keeps its file, tag and version apart, whichever of them are the same", async () => {
  const { StateStore } = await import('./state-file.ts');
  const state = await StateStore.open(undefined);
  const id = 'DNSRecordSet/dns/x';
  const usual = {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1' as const,
    kind: 'DNSRecordSet' as const,
    metadata: { name: 'x', namespace: 'dns' },
    spec: { name: 'x', type: 'A' as const, records: ['192.0.2.1'] },
  };
  const labelled = { ...usual, metadata: { ...usual.metadata, labels: { a: 'b' } } };
  state.putObject(id, { created: 't', file: 'b.yaml', resource: usual });
  assert.equal(state.tagOf(id), undefined);
  assert.equal(state.object(id)?.file, 'b.yaml');
  for (const tag of ['b.yaml', new Set(['a.yaml', 'b.yaml']), 'a.yaml', undefined, 'b.yaml']) {
    assert.equal(state.setTag(id, tag), true);
    assert.equal(state.tagOf(id), tag);
    assert.equal(state.object(id)?.file, 'b.yaml');
    assert.deepEqual(state.object(id)?.resource, usual);
  }
  // A version held whole (not of the usual shape), then one held as its spec, the tag kept.
  state.putObject(id, { created: 't', file: 'c.yaml', resource: labelled });
  assert.equal(state.tagOf(id), 'b.yaml');
  assert.equal(state.object(id)?.file, 'c.yaml');
  assert.equal(state.object(id)?.resource, labelled);
  state.putObject(id, { created: 't', resource: usual });
  assert.equal(state.object(id)?.file, undefined);
  assert.equal(state.tagOf(id), 'b.yaml');
  assert.deepEqual(state.object(id)?.resource, usual);
  assert.equal(state.setTag(id, undefined), true);
  assert.equal(state.tagOf(id), undefined);
  assert.equal(state.object(id)?.file, undefined);
  // Entries of the same file and tag share what holds them: a change to one leaves the other.
  const other = 'DNSRecordSet/dns/y';
  state.putObject(other, { created: 't', file: 'b.yaml', resource: usual });
  state.putObject(id, { created: 't', file: 'b.yaml', resource: usual });
  state.setTag(id, '/folder/b.yaml');
  state.setTag(other, '/folder/b.yaml');
  state.setTag(id, '/folder/a.yaml');
  assert.equal(state.tagOf(other), '/folder/b.yaml');
  assert.equal(state.tagOf(id), '/folder/a.yaml');
  assert.equal(state.object(other)?.file, 'b.yaml');
  state.setTag(id, undefined);
  // An unchanged version keeps the new one's objects (the ones the resource store shares).
  const again = structuredClone(usual);
  state.putObject(id, { created: 't', resource: again });
  assert.equal((state.object(id)!.resource as typeof usual).spec, again.spec);
  await state.close();
});

test('a first load: the ids defined are its objects in their order, and their files go into the entries as each is stored', async () => {
  const { StateStore } = await import('./state-file.ts');
  const version = (name: string) => ({
    created: 't',
    file: 'a.yaml',
    resource: {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1' as const,
      kind: 'DNSRecordSet' as const,
      metadata: { name, namespace: 'dns' },
      spec: { name, type: 'A' as const, records: ['192.0.2.1'] },
    },
  });
  const ids = ['x', 'y', 'z'].map((name) => `DNSRecordSet/dns/${name}`);
  const load = async () => {
    const state = await StateStore.open(undefined);
    const d = new Definers(state);
    d.stateHoldsNone(true);
    for (const id of ids) d.add(id, 'a.yaml');
    d.add(ids[1]!, 'b.yaml');
    d.stateHoldsNone(false);
    return { state, d };
  };

  // Every object stored in order: each value moved as it is stored, the map dropped by `settle`.
  {
    const { state, d } = await load();
    const defined = d.definedIds();
    assert.deepEqual([...defined], ids);
    assert.equal(defined.has(ids[2]!), true);
    assert.equal(defined.has('DNSRecordSet/dns/w'), false);
    const settle = d.settleInOrder();
    for (const id of ids) {
      state.putObject(id, version(id.slice(id.lastIndexOf('/') + 1)));
      settle(id);
    }
    assert.equal(state.tagOf(ids[0]!), 'a.yaml');
    assert.deepEqual(state.tagOf(ids[1]!), new Set(['a.yaml', 'b.yaml']));
    d.settle();
    assert.deepEqual([...d.definedIds()], []);
    assert.deepEqual(d.files(ids[1]!), ['a.yaml', 'b.yaml']);
    assert.deepEqual([...d.duplicates()], [[ids[1], ['a.yaml', 'b.yaml']]]);
    // Changed in the entry from now on.
    assert.equal(d.remove(ids[1]!, 'a.yaml'), true);
    assert.equal(state.tagOf(ids[1]!), 'b.yaml');
    assert.equal(d.size, 3);
  }
  // One not stored (out of the order): the rest is left to `settle`, which moves what the state holds.
  {
    const { state, d } = await load();
    const settle = d.settleInOrder();
    state.putObject(ids[0]!, version('x'));
    settle(ids[0]!);
    state.putObject(ids[2]!, version('z'));
    settle(ids[2]!);
    d.settle();
    assert.equal(state.tagOf(ids[0]!), 'a.yaml');
    assert.equal(state.tagOf(ids[2]!), 'a.yaml');
    assert.deepEqual([...d.definedIds()], [ids[1]]);
    assert.deepEqual(d.files(ids[1]!), ['a.yaml', 'b.yaml']);
    assert.equal(d.size, 3);
  }
  // A value changed after it moved: `settle` moves every value again, the changed one included.
  {
    const { state, d } = await load();
    const settle = d.settleInOrder();
    for (const id of ids) {
      state.putObject(id, version(id.slice(id.lastIndexOf('/') + 1)));
      settle(id);
    }
    d.add(ids[0]!, 'c.yaml');
    d.settle();
    assert.deepEqual(state.tagOf(ids[0]!), new Set(['a.yaml', 'c.yaml']));
    assert.deepEqual([...d.definedIds()], []);
    assert.deepEqual(d.files(ids[0]!), ['a.yaml', 'c.yaml']);
  }
});
