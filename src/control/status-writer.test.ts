import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DNSRecordSet } from '../api/index.ts';
import type { RecordVerdict } from '../zones/assemble.ts';
import { RecordTable } from '../zones/record-table.ts';
import { jsonEqual } from './conditions.ts';
import { MemoryStore } from './memory-store.ts';
import { FINALIZER } from './resource-store.ts';
import { type RecordTargets, StatusWriter } from './status-writer.ts';

const recordSet = (name: string, address: string): DNSRecordSet => ({
  apiVersion: 'dns.zonekeeper.dev/v1alpha1',
  kind: 'DNSRecordSet',
  metadata: { name, namespace: 'team' },
  spec: { zoneRef: { name: 'zone' }, name, type: 'A', records: [address] },
});

const served = { backend: 'builtin', programmed: true, programmedMessage: 'pending' };

test('StatusWriter writes a record set again when only its generation or fqdn changed', async () => {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  const writer = new StatusWriter(store, () => new Date('2026-01-01T00:00:00Z'), 4);
  store.apply(recordSet('www', '192.0.2.1'));
  const get = () => store.get('DNSRecordSet', 'team/www') as DNSRecordSet;
  const verdicts = new Map<string, RecordVerdict>([['team/www', { accepted: true, fqdn: 'www.example.' }]]);
  await writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  assert.equal(get().status?.observedGeneration, 1);
  assert.equal(get().status?.fqdn, 'www.example.');

  store.apply(recordSet('www', '192.0.2.2'));
  assert.equal(get().metadata.generation, 2);
  await writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  assert.equal(get().status?.observedGeneration, 2);

  verdicts.set('team/www', { accepted: true, fqdn: 'www.example.org.' });
  await writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  assert.equal(get().status?.fqdn, 'www.example.org.');
  assert.equal(
    get().status?.conditions?.find((c) => c.type === 'Ready')?.message,
    'served in zone team/zone',
  );

  // Nothing changed: nothing written.
  const before = get();
  await writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  assert.equal(get(), before);
});

test('StatusWriter shares equal conditions and condition lists between record sets; each status has its fqdn', async () => {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  const writer = new StatusWriter(store, () => new Date('2026-01-01T00:00:00Z'), 4);
  store.apply(recordSet('a', '192.0.2.1'));
  store.apply(recordSet('b', '192.0.2.2'));
  const verdicts = new Map<string, RecordVerdict>([
    ['team/a', { accepted: true, fqdn: 'a.example.' }],
    ['team/b', { accepted: true, fqdn: 'b.example.' }],
  ]);
  await writer.zoneRecords('team/zone', verdicts, ['team/a', 'team/b'], served);
  const conditions = (name: string) =>
    (store.get('DNSRecordSet', `team/${name}`) as DNSRecordSet).status?.conditions ?? [];
  const of = (name: string, type: string) => conditions(name).find((c) => c.type === type);
  assert.equal(of('a', 'Accepted'), of('b', 'Accepted'));
  assert.equal(of('a', 'Programmed'), of('b', 'Programmed'));
  assert.equal(of('a', 'Ready')?.message, 'served in zone team/zone');
  assert.equal(of('a', 'Ready'), of('b', 'Ready'));
  assert.equal(conditions('a'), conditions('b'), 'one list for the zone, not one per record set');
  const status = (name: string) => (store.get('DNSRecordSet', `team/${name}`) as DNSRecordSet).status;
  assert.equal(status('a')?.fqdn, 'a.example.');
  assert.equal(status('b')?.fqdn, 'b.example.');
  // A record set that changes gets a list of its own; the others keep theirs.
  const changed = new Map(verdicts);
  changed.set('team/b', {
    accepted: false,
    fqdn: 'b.example.',
    reason: 'Conflict',
    message: 'held by team/c',
  });
  await writer.zoneRecords('team/zone', changed, ['team/a', 'team/b'], served);
  assert.equal(of('b', 'Accepted')?.status, 'False');
  assert.equal(of('a', 'Accepted')?.status, 'True', 'the shared list was not changed in place');
  assert.notEqual(conditions('a'), conditions('b'));
});

test('StatusWriter gives the next record set the list given last only when every condition is equal, extra fields included', async () => {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  const writer = new StatusWriter(store, () => new Date('2026-01-01T00:00:00Z'), 1);
  for (const name of ['a', 'b', 'c', 'd']) store.apply(recordSet(name, '192.0.2.1'));
  // Conditions of another type are kept from the status before: 'a' and 'c' hold one with a field
  // a Condition does not have, 'b' the same without it, 'd' the same as 'c'.
  const custom = {
    type: 'Custom',
    status: 'True' as const,
    reason: 'R',
    message: 'm',
    lastTransitionTime: 't',
  };
  await store.updateStatus('DNSRecordSet', 'team/a', { conditions: [{ ...custom, extra: 1 } as never] });
  await store.updateStatus('DNSRecordSet', 'team/b', { conditions: [custom] });
  await store.updateStatus('DNSRecordSet', 'team/c', { conditions: [{ ...custom, extra: 1 } as never] });
  await store.updateStatus('DNSRecordSet', 'team/d', { conditions: [{ ...custom, extra: 2 } as never] });
  const verdicts = new Map<string, RecordVerdict>(
    ['a', 'b', 'c', 'd'].map((n) => [`team/${n}`, { accepted: true, fqdn: `${n}.example.` }]),
  );
  await writer.zoneRecords('team/zone', verdicts, ['team/a', 'team/b', 'team/c', 'team/d'], served);
  const conditions = (name: string) =>
    (store.get('DNSRecordSet', `team/${name}`) as DNSRecordSet).status?.conditions ?? [];
  const extra = (name: string) =>
    (conditions(name).find((c) => c.type === 'Custom') as unknown as { extra?: number } | undefined)?.extra;
  assert.deepEqual(['a', 'b', 'c', 'd'].map(extra), [1, undefined, 1, 2]);
  assert.notEqual(conditions('a'), conditions('b'));
  assert.notEqual(conditions('c'), conditions('d'));
  for (const name of ['a', 'b', 'c', 'd']) assert.equal(conditions(name).length, 4);
  // Equal lists one after the other are one list.
  store.apply(recordSet('e', '192.0.2.1'));
  store.apply(recordSet('f', '192.0.2.1'));
  verdicts.set('team/e', { accepted: true, fqdn: 'e.example.' });
  verdicts.set('team/f', { accepted: true, fqdn: 'f.example.' });
  await writer.zoneRecords('team/zone', verdicts, ['team/e', 'team/f'], served);
  assert.equal(conditions('e'), conditions('f'));
  assert.equal(conditions('e').length, 3);
});

test('StatusWriter keeps its memo in a shared record table: forgotten on delete, nothing of it in a reused slot', async () => {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  const table = new RecordTable();
  const writer = new StatusWriter(store, () => new Date('2026-01-01T00:00:00Z'), 4, undefined, table);
  let writes = 0;
  const update = store.updateStatus.bind(store);
  store.updateStatus = (...args: Parameters<typeof store.updateStatus>) => {
    writes++;
    return update(...args);
  };
  const verdicts = new Map<string, RecordVerdict>([
    ['team/old', { accepted: true, fqdn: 'old.example.' }],
    ['team/new', { accepted: true, fqdn: 'new.example.' }],
  ]);
  store.apply(recordSet('old', '192.0.2.1'));
  await writer.zoneRecords('team/zone', verdicts, ['team/old'], served);
  assert.equal(writes, 1);
  await writer.zoneRecords('team/zone', verdicts, ['team/old'], served);
  assert.equal(writes, 1, 'unchanged: nothing written');
  const slot = table.slotOf('team/old');
  assert.ok(slot >= 0);

  // The finalizer came with the status (one write): the record set's reconcile holds it until it goes.
  assert.deepEqual(store.get('DNSRecordSet', 'team/old')?.metadata.finalizers, [FINALIZER]);
  // Renamed: deleted under the old key (its finalizer released, as its reconcile does), created under
  // the new one, which takes the freed slot.
  store.remove('DNSRecordSet', 'team/old');
  await store.removeFinalizer('DNSRecordSet', 'team/old', FINALIZER);
  writer.forgetRecord('team/old');
  assert.equal(table.slotOf('team/old'), -1);
  store.apply(recordSet('new', '192.0.2.1'));
  await writer.zoneRecords('team/zone', verdicts, ['team/new'], served);
  assert.equal(table.slotOf('team/new'), slot, 'the slot is reused');
  assert.equal(writes, 2, 'the new record set gets its status');
  assert.equal((store.get('DNSRecordSet', 'team/new') as DNSRecordSet).status?.fqdn, 'new.example.');

  // Created again under the old key: written again, not taken as already written.
  store.apply(recordSet('old', '192.0.2.1'));
  await writer.zoneRecords('team/zone', verdicts, ['team/old'], served);
  assert.equal(writes, 3);
  await writer.zoneRecords('team/zone', verdicts, ['team/old', 'team/new'], served);
  assert.equal(writes, 3, 'both unchanged: nothing written');
});

test('StatusWriter: a record set deleted while its status write is in flight leaves no memo and no slot', async () => {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  const table = new RecordTable();
  const writer = new StatusWriter(store, () => new Date('2026-01-01T00:00:00Z'), 4, undefined, table);
  const update = store.updateStatus.bind(store);
  store.updateStatus = async (...args: Parameters<typeof store.updateStatus>) => {
    await update(...args);
    // The delete (its finalizer released at once) and its event arrive before the write's answer.
    store.remove('DNSRecordSet', 'team/gone');
    await store.removeFinalizer('DNSRecordSet', 'team/gone', FINALIZER);
    writer.forgetRecord('team/gone');
  };
  store.apply(recordSet('gone', '192.0.2.1'));
  const verdicts = new Map<string, RecordVerdict>([['team/gone', { accepted: true, fqdn: 'gone.example.' }]]);
  await writer.zoneRecords('team/zone', verdicts, ['team/gone'], served);
  assert.equal(table.slotOf('team/gone'), -1);
  assert.equal(table.size, 0);
});

test('StatusWriter: status.targets written while the zone status write is in flight keeps being written after it', async () => {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  let targets: RecordTargets = [{ address: '192.0.2.1', state: 'Unknown' }];
  const writer = new StatusWriter(
    store,
    () => new Date('2026-01-01T00:00:00Z'),
    4,
    () => targets,
  );
  // As the Kubernetes store does: writes to one object go one after the other, and the watch shows
  // a write before its answer arrives.
  const update = store.updateStatus.bind(store);
  let chain: Promise<void> = Promise.resolve();
  let release: () => void = () => {};
  const answer = new Promise<void>((resolve) => {
    release = resolve;
  });
  let first = true;
  store.updateStatus = (...args: Parameters<typeof store.updateStatus>) => {
    const held = first;
    first = false;
    const run = chain.then(async () => {
      await update(...args);
      if (held) await answer;
    });
    chain = run;
    return run;
  };
  // A write planned on the object as the writes queued before it left it.
  store.updateStatusWith = (kind, key, plan) => {
    const run = chain.then(async () => {
      const current = store.get(kind, key)?.status;
      const status = plan(current);
      if (status === undefined || jsonEqual(status, current)) return undefined;
      await update(kind, key, status);
      return store.get(kind, key)?.status;
    });
    chain = run.then(() => {});
    return run;
  };
  store.apply(recordSet('www', '192.0.2.1'));
  const get = () => (store.get('DNSRecordSet', 'team/www') as DNSRecordSet).status?.targets;
  const verdicts = new Map<string, RecordVerdict>([['team/www', { accepted: true, fqdn: 'www.example.' }]]);
  const zone = writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(get(), [{ address: '192.0.2.1', state: 'Unknown' }], 'the zone write shows');

  // The target comes up while the zone's write waits for its answer: written after it.
  targets = [{ address: '192.0.2.1', state: 'Up', lastTransitionTime: '2026-01-01T00:00:01Z' }];
  const up = writer.targetsChanged('team/www');
  release();
  await zone;
  await up;
  assert.equal(get()?.[0]?.state, 'Up');

  // It goes down later: written too (the writer must know the status on the object is its own).
  targets = [{ address: '192.0.2.1', state: 'Down', lastTransitionTime: '2026-01-01T00:00:02Z' }];
  await writer.targetsChanged('team/www');
  assert.equal(get()?.[0]?.state, 'Down');
});

/**
 * The store's writes as the Kubernetes store makes them: queued per object, each planned (its no-op
 * check, and for `updateStatusWith` the status itself) when its turn comes; the store shows a write
 * once its answer arrives (a parsed copy, or the object given with `identity`). `hold` keeps the next
 * write's answer back until the returned release is called.
 */
function kubeLikeStore(identity: boolean) {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  const update = store.updateStatus.bind(store);
  let chain: Promise<unknown> = Promise.resolve();
  let gate: Promise<void> | undefined;
  const queue = <T>(write: () => Promise<T>): Promise<T> => {
    const g = gate;
    gate = undefined;
    const run = chain.then(async () => {
      if (g) await g;
      return write();
    });
    chain = run.catch(() => {});
    return run;
  };
  const counts = { writes: 0 };
  store.updateStatus = (kind, key, status) =>
    queue(async () => {
      if (jsonEqual(store.get(kind, key)?.status, status)) return;
      counts.writes++;
      await update(kind, key, identity ? status : structuredClone(status));
    });
  store.updateStatusWith = (kind, key, plan) =>
    queue(async () => {
      const current = store.get(kind, key)?.status;
      const status = plan(current);
      if (status === undefined || jsonEqual(current, status)) return undefined;
      counts.writes++;
      await update(kind, key, identity ? status : structuredClone(status));
      return store.get(kind, key)?.status;
    });
  const hold = () => {
    let release = () => {};
    gate = new Promise<void>((r) => {
      release = r;
    });
    return release;
  };
  return { store, hold, counts };
}

for (const identity of [false, true])
  test(`StatusWriter: a targets write planned while the zone's write of new conditions is in flight keeps those conditions (${identity ? 'the object written' : 'a parsed copy'} shown)`, async () => {
    const { store, hold, counts } = kubeLikeStore(identity);
    let targets: RecordTargets = [{ address: '192.0.2.1', state: 'Unknown' }];
    const writer = new StatusWriter(
      store,
      () => new Date('2026-01-01T00:00:00Z'),
      4,
      () => targets,
    );
    store.apply(recordSet('www', '192.0.2.1'));
    const get = () => (store.get('DNSRecordSet', 'team/www') as DNSRecordSet).status;
    const programmed = () => get()?.conditions?.find((c) => c.type === 'Programmed')?.status;
    const verdicts = new Map<string, RecordVerdict>([['team/www', { accepted: true, fqdn: 'www.example.' }]]);
    // The zone's change is pending: Programmed=False.
    const pending = { backend: 'builtin', programmed: false, programmedMessage: 'pending' };
    await writer.zoneRecords('team/zone', verdicts, ['team/www'], pending);
    assert.equal(programmed(), 'False');

    // The backend serves it: the zone's write (Programmed=True) is in flight...
    const release = hold();
    const serving = { backend: 'builtin', programmed: true, programmedMessage: 'ok' };
    const zone = writer.zoneRecords('team/zone', verdicts, ['team/www'], serving);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(programmed(), 'False', 'the zone write does not show before its answer');
    // ...when a target comes up: its write goes after the zone's and keeps its conditions.
    targets = [{ address: '192.0.2.1', state: 'Up', lastTransitionTime: '2026-01-01T00:00:01Z' }];
    const up = writer.targetsChanged('team/www');
    release();
    await zone;
    await up;
    assert.equal(programmed(), 'True', 'the targets write put the old conditions back');
    assert.equal(get()?.targets?.[0]?.state, 'Up');

    // The zone visited again with the same inputs: nothing to write, and nothing undone.
    const writes = counts.writes;
    await writer.zoneRecords('team/zone', verdicts, ['team/www'], serving);
    assert.equal(programmed(), 'True');
    assert.equal(get()?.targets?.[0]?.state, 'Up');
    assert.equal(counts.writes, writes, 'status written only when changed');

    // The target goes down: written, on top of the conditions as they are.
    targets = [{ address: '192.0.2.1', state: 'Down', lastTransitionTime: '2026-01-01T00:00:02Z' }];
    await writer.targetsChanged('team/www');
    assert.equal(get()?.targets?.[0]?.state, 'Down');
    assert.equal(programmed(), 'True');
  });

test('StatusWriter: a targets write on top of a status another writer left does not pass that status off as the zone write', async () => {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  let targets: RecordTargets = [{ address: '192.0.2.1', state: 'Unknown' }];
  const writer = new StatusWriter(
    store,
    () => new Date('2026-01-01T00:00:00Z'),
    4,
    () => targets,
  );
  store.apply(recordSet('www', '192.0.2.1'));
  const get = () => (store.get('DNSRecordSet', 'team/www') as DNSRecordSet).status;
  const programmed = () => get()?.conditions?.find((c) => c.type === 'Programmed')?.status;
  const verdicts = new Map<string, RecordVerdict>([['team/www', { accepted: true, fqdn: 'www.example.' }]]);
  await writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  assert.equal(programmed(), 'True');
  // Another writer (a stale replica, a hand edit) puts other conditions on the status.
  const status = get()!;
  await store.updateStatus('DNSRecordSet', 'team/www', {
    ...status,
    conditions: status.conditions?.map((c) =>
      c.type === 'Programmed' ? { ...c, status: 'False' as const } : c,
    ),
  });
  // A target comes up: written on top of that status...
  targets = [{ address: '192.0.2.1', state: 'Up', lastTransitionTime: '2026-01-01T00:00:01Z' }];
  await writer.targetsChanged('team/www');
  assert.equal(get()?.targets?.[0]?.state, 'Up');
  assert.equal(programmed(), 'False');
  // ...which is not what the zone wrote: its next visit writes its conditions again.
  await writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  assert.equal(programmed(), 'True');
  assert.equal(get()?.targets?.[0]?.state, 'Up');
});

test('StatusWriter: record sets of one zone with different generations or earlier conditions each get their own (one list built per kind)', async () => {
  let now = new Date('2026-01-01T00:00:00Z');
  const store = new MemoryStore(() => now);
  const writer = new StatusWriter(store, () => now, 4);
  for (const name of ['a', 'b', 'c', 'd']) store.apply(recordSet(name, '192.0.2.1'));
  // c changed once: generation 2.
  store.apply(recordSet('c', '192.0.2.3'));
  const pending = { backend: 'builtin', programmed: false, programmedMessage: 'pending' };
  const verdicts = new Map<string, RecordVerdict>(
    ['a', 'b', 'c', 'd'].map((n) => [`team/${n}`, { accepted: true, fqdn: `${n}.example.` }]),
  );
  // a and b were written once as pending (at the first time); c and d have no status yet.
  await writer.zoneRecords('team/zone', verdicts, ['team/a', 'team/b'], pending);
  now = new Date('2026-01-01T00:05:00Z');
  await writer.zoneRecords('team/zone', verdicts, ['team/a', 'team/c', 'team/b', 'team/d'], served);
  const status = (name: string) => (store.get('DNSRecordSet', `team/${name}`) as DNSRecordSet).status!;
  const ready = (name: string) => status(name).conditions!.find((c) => c.type === 'Ready')!;
  const accepted = (name: string) => status(name).conditions!.find((c) => c.type === 'Accepted')!;
  for (const name of ['a', 'b', 'c', 'd']) assert.equal(ready(name).status, 'True', name);
  // Accepted stayed True since the first write for a and b: its transition time is the first time.
  assert.equal(accepted('a').lastTransitionTime, '2026-01-01T00:00:00.000Z');
  assert.equal(accepted('b').lastTransitionTime, '2026-01-01T00:00:00.000Z');
  assert.equal(accepted('d').lastTransitionTime, '2026-01-01T00:05:00.000Z');
  assert.equal(ready('a').lastTransitionTime, '2026-01-01T00:05:00.000Z');
  assert.equal(status('c').observedGeneration, 2);
  assert.equal(accepted('c').observedGeneration, 2);
  assert.equal(accepted('d').observedGeneration, 1);
  assert.equal(status('a').conditions, status('b').conditions, 'the same before, one list after');
  assert.notEqual(status('a').conditions, status('d').conditions);
  assert.notEqual(status('c').conditions, status('d').conditions);
  assert.equal(status('c').fqdn, 'c.example.');
});

/** Record sets `names` of one zone, written once, whose one target's health is `health.state`. */
async function healthChecked(names: string[], limits: { minIntervalMs: number; perSecond: number }) {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  const health: { state: 'Up' | 'Down' } = { state: 'Up' };
  const writer = new StatusWriter(
    store,
    () => new Date('2026-01-01T00:00:00Z'),
    4,
    () => [{ address: '192.0.2.1', state: health.state }],
    new RecordTable(),
    limits,
  );
  const verdicts = new Map<string, RecordVerdict>(
    names.map((n) => [`team/${n}`, { accepted: true, fqdn: `${n}.example.` }]),
  );
  for (const n of names) store.apply(recordSet(n, '192.0.2.1'));
  await writer.zoneRecords('team/zone', verdicts, [...verdicts.keys()], served);
  return { store, writer, health };
}

test('StatusWriter: health that flaps is written at most once per interval per record set and at the overall rate, the last state always', async () => {
  // Regression: every flap of a target (one a tenant controls, shared by many record sets) was a
  // status write per record set: hundreds a second to the API server.
  const names = Array.from({ length: 20 }, (_, i) => `r${i}`);
  const { store, writer, health } = await healthChecked(names, { minIntervalMs: 300, perSecond: 40 });
  let writes = 0;
  const update = store.updateStatusWith.bind(store);
  store.updateStatusWith = async (...args: Parameters<typeof store.updateStatusWith>) => {
    const written = await update(...args);
    if (written !== undefined) writes++;
    return written;
  };
  const started = performance.now();
  const pending: Promise<void>[] = [];
  // 10 flaps of every record set's target within about 100 ms.
  for (let flap = 0; flap < 10; flap++) {
    health.state = health.state === 'Up' ? 'Down' : 'Up';
    for (const n of names) pending.push(writer.targetsChanged(`team/${n}`));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await Promise.all(pending);
  const seconds = (performance.now() - started) / 1000;
  // Each record set: its first change at once, then one write with the state it ended in.
  assert.ok(writes <= 2 * names.length, `${writes} writes for ${names.length} record sets flapping 10 times`);
  // At most a second's worth at once, then 40 a second.
  assert.ok(writes <= 40 * (seconds + 1), `${writes} writes in ${seconds.toFixed(2)} s at 40 a second`);
  for (const n of names) {
    const rs = store.get('DNSRecordSet', `team/${n}`) as DNSRecordSet;
    assert.equal(rs.status?.targets?.[0]?.state, health.state, `${n} shows the last state`);
  }
});

test("StatusWriter: one record set waiting out its interval does not hold up another's targets write; over the overall rate they queue", async () => {
  const names = Array.from({ length: 8 }, (_, i) => `q${i}`);
  const { store, writer, health } = await healthChecked(names, { minIntervalMs: 60_000, perSecond: 5 });
  const shows = (n: string) =>
    (store.get('DNSRecordSet', `team/${n}`) as DNSRecordSet).status?.targets?.[0]?.state;
  health.state = 'Down';
  await writer.targetsChanged('team/q0');
  assert.equal(shows('q0'), 'Down');
  // q0 again: it waits out its minute. q1 meanwhile is written at once.
  health.state = 'Up';
  void writer.targetsChanged('team/q0');
  await writer.targetsChanged('team/q1');
  assert.equal(shows('q1'), 'Up');
  assert.equal(shows('q0'), 'Down', 'q0 waits');
  // Five a second: of the six others, the first four take what is left of the second, the rest queue.
  const rest = names.slice(2).map((n) => writer.targetsChanged(`team/${n}`));
  await Promise.all(rest);
  for (const n of names.slice(2)) assert.equal(shows(n), 'Up');
});
