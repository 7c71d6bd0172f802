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

test("a fresh first load's new objects keep their files in the state from their put: duplicates, the ids in order, taken back", async () => {
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
  const [x, y, z, w] = ['x', 'y', 'z', 'w'].map((n) => `DNSRecordSet/dns/${n}`) as [
    string,
    string,
    string,
    string,
  ];
  d.stateHoldsNone(true);
  // a.yaml applied as it is read: x and y new, each put with its file as the tag.
  for (const id of [x, y]) {
    assert.equal(d.addInState(id, 'a.yaml'), true);
    state.putObject(id, version(id.slice(id.lastIndexOf('/') + 1)), 'a.yaml');
  }
  assert.equal(state.tagOf(x), 'a.yaml');
  // b.yaml defines y again (found in the state, its files kept there) and z (new).
  assert.equal(d.addInState(y, 'b.yaml'), false);
  assert.equal(d.addInState(z, 'b.yaml'), true);
  state.putObject(z, version('z'), 'b.yaml');
  assert.deepEqual(state.tagOf(y), new Set(['a.yaml', 'b.yaml']));
  assert.deepEqual([...d.duplicates()], [[y, ['a.yaml', 'b.yaml']]]);
  assert.equal(d.first(y), 'a.yaml');
  // c.yaml is not applied early: its objects are kept here, after those of the state in the ids.
  d.add(w, 'c.yaml');
  d.add(x, 'c.yaml');
  assert.deepEqual(state.tagOf(x), new Set(['a.yaml', 'c.yaml']));
  assert.equal(d.size, 4);
  const ids = d.definedIds();
  assert.deepEqual([...ids], [x, y, z, w]);
  assert.equal(ids.has(z), true);
  assert.equal(ids.has(w), true);
  assert.equal(ids.has('DNSRecordSet/dns/v'), false);
  // The walk in the definers' order skips those kept in the state: its first is c.yaml's w.
  assert.equal(d.firstInOrder()(w), 'c.yaml');

  // Taken back (the state forgets them): their files move here, before w, as `add` would keep them.
  const mark = state.objectsMark();
  d.leaveState([x, y, z]);
  state.takeBackObjects([x, y, z], mark);
  assert.deepEqual([...d.definedIds()], [x, y, z, w]);
  assert.deepEqual(d.files(x), ['a.yaml', 'c.yaml']);
  assert.deepEqual(d.files(y), ['a.yaml', 'b.yaml']);
  assert.deepEqual(d.files(z), ['b.yaml']);
  assert.equal(d.size, 4);
  for (const [id, file] of [
    [x, 'a.yaml'],
    [x, 'c.yaml'],
    [y, 'a.yaml'],
    [y, 'b.yaml'],
    [z, 'b.yaml'],
    [w, 'c.yaml'],
  ] as const)
    assert.equal(d.remove(id, file), true);
  assert.equal(d.size, 0);
  assert.deepEqual([...d.definedIds()], []);
});

test("addInStateKnowing, the state's tag given, does not ask the state, and decides as when it asks", () => {
  const tags = new Map<string, unknown>();
  let asked = 0;
  const slots = {
    tagOf: (id: string) => {
      asked++;
      return tags.get(id);
    },
    setTag: (id: string, tag: unknown) => {
      if (!tags.has(id)) return false;
      tags.set(id, tag);
      return true;
    },
  };
  const d = new Definers(slots);
  d.stateHoldsNone(true);
  // While the state is known to hold none, a tag given is not taken for one it holds.
  assert.equal(d.addInStateKnowing('x', 'a.yaml', 'stale'), true);
  tags.set('x', 'a.yaml');
  // Given: none (new), or the one the state keeps (defined already: the files are kept there).
  assert.equal(d.addInStateKnowing('y', 'a.yaml', undefined), true);
  tags.set('y', 'a.yaml');
  assert.equal(d.addInStateKnowing('x', 'b.yaml', tags.get('x')), false);
  assert.equal(asked, 0, 'the state was not asked');
  assert.deepEqual(tags.get('x'), new Set(['a.yaml', 'b.yaml']));
  // Not given: asked, with the same answers.
  assert.equal(d.addInState('y', 'b.yaml'), false);
  assert.equal(d.addInState('z', 'b.yaml'), true);
  assert.equal(asked, 2);
  assert.deepEqual([...d.definedIds()], ['x', 'y', 'z']);
  assert.deepEqual([...d.duplicates()].sort(), [
    ['x', ['a.yaml', 'b.yaml']],
    ['y', ['a.yaml', 'b.yaml']],
  ]);
  // Kept here (a file not applied early): what is here wins over a tag given.
  d.add('w', 'c.yaml');
  assert.equal(d.addInStateKnowing('w', 'd.yaml', undefined), false);
  assert.deepEqual(d.files('w'), ['c.yaml', 'd.yaml']);
});

test('settled, the objects kept in the state are as any other: the ids are those kept here again', async () => {
  const { StateStore } = await import('./state-file.ts');
  const state = await StateStore.open(undefined);
  const d = new Definers(state);
  const id = 'DNSRecordSet/dns/x';
  assert.equal(d.addInState(id, 'a.yaml'), true);
  state.putObject(
    id,
    {
      created: 't',
      resource: {
        apiVersion: 'dns.zonekeeper.dev/v1alpha1',
        kind: 'DNSRecordSet',
        metadata: { name: 'x', namespace: 'dns' },
        spec: { name: 'x', type: 'A', records: ['192.0.2.1'] },
      },
    },
    'a.yaml',
  );
  d.settle();
  assert.deepEqual([...d.definedIds()], []);
  assert.equal(d.has(id), true);
  // Put again, the entry keeps its tag (the one given applies to a new entry only).
  state.putObject(id, { created: 't' }, 'other.yaml');
  assert.equal(state.tagOf(id), 'a.yaml');
});
