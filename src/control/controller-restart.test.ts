import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FailurePlan, RecordingBackend } from '../../test/support/failure-injection.ts';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { Backend } from '../backends/backend.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { parseName } from '../dns/name.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { Controller } from './controller.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';

const now = () => new Date('2026-11-21T12:00:00Z');

/** A record set of `dns/example-com` with one A record. */
const inZone = (name: string, owner: string, address: string, generation: number) =>
  recordSet(
    'dns',
    name,
    { zoneRef: { name: 'example-com' }, name: owner, type: 'A', records: [address] },
    generation,
  );

/** A store with the class, the zone example.com (`dns/example-com`) and record sets r0… in it. */
function storeWith(records: number, store = new MemoryStore(now)): MemoryStore {
  store.apply(zoneClass());
  store.apply(zone('dns', 'example-com', 'example.com'));
  for (let i = 0; i < records; i++) store.apply(inZone(`r${i}`, `n${i}`, '192.0.2.1', i + 1));
  return store;
}

/** The serial `dns/example-com`'s status records. */
const zoneSerial = (store: MemoryStore) =>
  (store.get('DNSZone', 'dns/example-com')?.status as { serial?: number } | undefined)?.serial;

/** Polls until `get` holds (at most 10 s). */
async function until(get: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !get(); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(get(), `timed out waiting until ${what}`);
}

/**
 * A second process whose backend fails every apply until `plan.disarm()` (fast retries), started and
 * run until its first attempts failed and its queues are idle between retries.
 */
async function restartFailing(store: MemoryStore, serials: MemorySerialStore) {
  const plan = new FailurePlan();
  plan.arm('apply', 1_000_000);
  const backend = new RecordingBackend(plan);
  const controller = new Controller({
    store,
    backend,
    serials,
    now,
    retryBaseDelayMs: 2,
    retryMaxDelayMs: 20,
  });
  controller.start();
  await until(() => plan.count('apply') >= 3, 'the zone failed a few times');
  await controller.idle();
  return { plan, backend, controller };
}

/**
 * A controller run until it is idle, its hashes saved and written into the zones' statuses (each
 * zone's visit after its first serve, at once here), then stopped: the process before a restart.
 */
async function runAndStop(
  store: MemoryStore,
  serials: MemorySerialStore,
  backend: Backend = new BuiltinBackend(new ZoneTable()),
): Promise<void> {
  const first = new Controller({ store, backend, serials, now, hashDelayMs: 0 });
  first.start();
  await first.idle();
  await first.flush();
  first.stop();
}

test('an operator restart over objects with finalizers and statuses writes nothing', async () => {
  const store = storeWith(20);
  const serials = new MemorySerialStore();
  store.apply(zone('dns', 'sub', 'sub.example.com'));
  store.apply(zone('other', 'example-org', 'example.org'));
  store.apply(
    recordSet('dns', 'implicit', { name: 'x.sub.example.com.', type: 'A', records: ['192.0.2.7'] }, 30),
  );
  store.apply(recordSet('dns', 'lost', { name: 'x.example.net.', type: 'A', records: ['192.0.2.3'] }, 31));
  store.apply(inZone('dupe', 'n1', '192.0.2.9', 40));
  store.apply(
    recordSet(
      'dns',
      'foreign',
      {
        zoneRef: { name: 'example-org', namespace: 'other' },
        name: 'www',
        type: 'A',
        records: ['192.0.2.4'],
      },
      41,
    ),
  );
  store.apply(
    recordSet(
      'dns',
      'noref',
      { zoneRef: { name: 'missing' }, name: 'www', type: 'A', records: ['192.0.2.4'] },
      42,
    ),
  );
  await runAndStop(store, serials);
  const writes: string[] = [];
  store.watch((e) => writes.push(`${e.type} ${e.kind} ${e.key}`));
  const second = new Controller({ store, backend: new BuiltinBackend(new ZoneTable()), serials, now });
  second.start();
  await second.idle();
  assert.deepEqual(writes, []);
  second.stop();
});

test('an operator restart after changes made while it was down takes each of them', async () => {
  const store = storeWith(5);
  const serials = new MemorySerialStore();
  store.apply(recordSet('dns', 'lost', { name: 'x.example.net.', type: 'A', records: ['192.0.2.3'] }, 31));
  await runAndStop(store, serials);
  // While no controller runs: one record set changed, one deleted (its finalizer holds it), one moved
  // out of the zone, the unresolved one made resolvable, and a new one.
  store.apply(inZone('r0', 'n0', '192.0.2.99', 1));
  store.remove('DNSRecordSet', 'dns/r1');
  store.apply(recordSet('dns', 'r2', { name: 'y.example.net.', type: 'A', records: ['192.0.2.1'] }, 3));
  store.apply(recordSet('dns', 'lost', { name: 'x.example.com.', type: 'A', records: ['192.0.2.3'] }, 31));
  store.apply(inZone('new', 'fresh', '192.0.2.5', 50));
  const table2 = new ZoneTable();
  const second = new Controller({ store, backend: new BuiltinBackend(table2), serials, now });
  second.start();
  await second.idle();
  const ready = (k: string) =>
    (store.get('DNSRecordSet', k)?.status?.conditions ?? []).find((c) => c.type === 'Ready');
  assert.equal(store.get('DNSRecordSet', 'dns/r1'), undefined, 'the deleted record set is released');
  assert.equal(ready('dns/r0')?.observedGeneration, 2);
  assert.equal(ready('dns/r0')?.status, 'True');
  assert.equal(ready('dns/r2')?.status, 'False');
  assert.equal(ready('dns/lost')?.status, 'True');
  assert.equal(ready('dns/lost')?.observedGeneration, 2);
  assert.equal(ready('dns/new')?.status, 'True');
  assert.deepEqual(store.get('DNSRecordSet', 'dns/new')?.metadata.finalizers, [
    'dns.zonekeeper.dev/finalizer',
  ]);
  const zoneNow = store.get('DNSZone', 'dns/example-com');
  assert.ok(((zoneNow!.status as { serial?: number }).serial ?? 0) > 2026112100);
  second.stop();
});

// A new process knows no programmed content: a record set deleted while the controller was down keeps
// its finalizer until its zone is first programmed (or removed) in this process, not released at once.
test('after a restart a record set being deleted is released only once its zone is served without it', async () => {
  const store = storeWith(3);
  const serials = new MemorySerialStore();
  await runAndStop(store, serials);
  const servedSerial = (store.get('DNSZone', 'dns/example-com')!.status as { serial: number }).serial;
  // Deleted while the operator is down: its finalizer holds it; the servers still serve servedSerial.
  store.remove('DNSRecordSet', 'dns/r1');
  let serialAtRelease: number | undefined;
  store.watch((e) => {
    if (e.type === 'delete' && e.key === 'dns/r1')
      serialAtRelease = (store.get('DNSZone', 'dns/example-com')!.status as { serial: number }).serial;
  });
  const second = new Controller({ store, backend: new BuiltinBackend(new ZoneTable()), serials, now });
  second.start();
  await second.idle();
  assert.equal(store.get('DNSRecordSet', 'dns/r1'), undefined);
  assert.ok(
    serialAtRelease !== undefined && serialAtRelease > servedSerial,
    `released while the zone was still published at ${serialAtRelease} (with it), not after a serial without it`,
  );
  second.stop();
});

test('after a restart a deleted record set stays held while its zone fails, and is released once a retry serves the zone without it', async () => {
  const store = storeWith(3);
  const serials = new MemorySerialStore();
  store.apply(
    recordSet('dns', 'implicit', { name: 'x.example.com.', type: 'A', records: ['192.0.2.7'] }, 20),
  );
  await runAndStop(store, serials);
  const servedSerial = zoneSerial(store)!;
  store.remove('DNSRecordSet', 'dns/r1');
  store.remove('DNSRecordSet', 'dns/implicit');
  const { plan, backend, controller } = await restartFailing(store, serials);
  assert.ok(
    store.get('DNSRecordSet', 'dns/r1'),
    'held (zoneRef) while the zone is not served by this process',
  );
  assert.ok(store.get('DNSRecordSet', 'dns/implicit'), 'held (a name in the zone) as well');
  const released = new Map<string, { serial: number; content: string } | undefined>();
  store.watch((e) => {
    if (e.type === 'delete' && e.kind === 'DNSRecordSet') released.set(e.key, backend.served('example.com.'));
  });
  plan.disarm();
  await until(() => released.size === 2, 'both are released');
  await controller.idle();
  for (const key of ['dns/r1', 'dns/implicit']) {
    const served = released.get(key);
    assert.ok(
      served && served.serial > servedSerial,
      `${key} released once a serial above ${servedSerial} is served`,
    );
    assert.equal(served.serial, zoneSerial(store));
    assert.doesNotMatch(served.content, /^(n1|x)\.example\.com\. /m);
    assert.match(served.content, /^n0\.example\.com\. /m);
  }
  controller.stop();
});

test('after a restart a deleted record set that belongs to no zone is released while other zones fail', async () => {
  const store = storeWith(1);
  const serials = new MemorySerialStore();
  store.apply(recordSet('dns', 'lost', { name: 'x.example.net.', type: 'A', records: ['192.0.2.3'] }, 31));
  store.apply(
    recordSet(
      'dns',
      'noref',
      { zoneRef: { name: 'missing' }, name: 'www', type: 'A', records: ['192.0.2.4'] },
      32,
    ),
  );
  store.apply(recordSet('dns', 'relative', { name: 'www', type: 'A', records: ['192.0.2.5'] }, 33));
  await runAndStop(store, serials);
  for (const key of ['dns/lost', 'dns/noref', 'dns/relative']) {
    assert.deepEqual(store.get('DNSRecordSet', key)?.metadata.finalizers, ['dns.zonekeeper.dev/finalizer']);
    store.remove('DNSRecordSet', key);
  }
  const { controller } = await restartFailing(store, serials);
  for (const key of ['dns/lost', 'dns/noref', 'dns/relative'])
    assert.equal(store.get('DNSRecordSet', key), undefined, `${key} is released`);
  controller.stop();
});

test('after a restart a deleted record set of a zone deleted too, or deleted while it is held, is released', async () => {
  const store = storeWith(2);
  const serials = new MemorySerialStore();
  store.apply(zone('other', 'example-org', 'example.org'));
  store.apply(
    recordSet(
      'other',
      'www',
      { zoneRef: { name: 'example-org' }, name: 'www', type: 'A', records: ['192.0.2.4'] },
      5,
    ),
  );
  store.apply(
    recordSet('other', 'mail', { name: 'mail.example.org.', type: 'A', records: ['192.0.2.5'] }, 6),
  );
  await runAndStop(store, serials);
  // While no controller runs, example.org and its record sets are deleted (their finalizers hold them).
  store.remove('DNSRecordSet', 'other/www');
  store.remove('DNSRecordSet', 'other/mail');
  store.remove('DNSZone', 'other/example-org');
  store.remove('DNSRecordSet', 'dns/r1');
  const { controller } = await restartFailing(store, serials);
  assert.equal(store.get('DNSZone', 'other/example-org'), undefined, 'the deleted zone is removed');
  assert.equal(store.get('DNSRecordSet', 'other/www'), undefined, 'its record set (zoneRef) is released');
  assert.equal(
    store.get('DNSRecordSet', 'other/mail'),
    undefined,
    'its record set (a name in it) is released',
  );
  assert.ok(store.get('DNSRecordSet', 'dns/r1'), 'held while example.com fails');
  // example.com is deleted while it still fails: removed, it holds its record set no longer.
  store.remove('DNSZone', 'dns/example-com');
  await until(() => store.get('DNSZone', 'dns/example-com') === undefined, 'example.com is removed');
  await controller.idle();
  assert.equal(store.get('DNSRecordSet', 'dns/r1'), undefined, 'released with its zone');
  controller.stop();
});

test('after a restart a zone deleted while the controller was down is removed from a backend that kept it before its finalizer goes', async () => {
  const store = storeWith(2);
  store.apply(zone('other', 'example-org', 'example.org'));
  const serials = new MemorySerialStore();
  // A backend that keeps its data across processes (as PowerDNS or an RFC 2136 server does).
  const kept = new ZoneTable();
  await runAndStop(store, serials, new BuiltinBackend(kept));
  assert.ok(kept.get(parseName('example.org.')), 'programmed by the first process');
  store.remove('DNSZone', 'other/example-org');
  // The second process's deletes fail twice, then work: the finalizer holds until the backend is clean.
  const inner = new BuiltinBackend(kept);
  let deletes = 0;
  const backend: Backend = {
    name: 'kept',
    capabilities: inner.capabilities,
    applyZone: (z) => inner.applyZone(z),
    servedSerial: (o) => inner.servedSerial(o),
    deleteZone: async (o) => {
      if (++deletes <= 2) throw new Error('backend unreachable');
      await inner.deleteZone(o);
    },
  };
  const second = new Controller({ store, backend, serials, now, retryBaseDelayMs: 2, retryMaxDelayMs: 20 });
  second.start();
  await until(() => store.get('DNSZone', 'other/example-org') === undefined, 'the zone is released');
  await second.idle();
  assert.ok(deletes >= 3, 'held while the backend failed to delete it');
  assert.equal(kept.get(parseName('example.org.')), undefined, 'removed from the backend that kept it');
  assert.ok(kept.get(parseName('example.com.')), 'the zone not deleted stays');
  second.stop();
});

test('after a restart a deleted zone whose origin another zone serves now is not removed from the backend', async () => {
  const store = storeWith(1);
  const serials = new MemorySerialStore();
  const kept = new ZoneTable();
  await runAndStop(store, serials, new BuiltinBackend(kept));
  // While no controller runs, the zone is deleted and another namespace's zone takes its name.
  store.remove('DNSZone', 'dns/example-com');
  store.apply(zone('other', 'example-com', 'example.com'));
  const second = new Controller({ store, backend: new BuiltinBackend(kept), serials, now });
  second.start();
  await until(() => store.get('DNSZone', 'dns/example-com') === undefined, 'the deleted zone is released');
  await second.idle();
  assert.ok(kept.get(parseName('example.com.')), 'the new owner serves example.com');
  second.stop();
});

test("deleting a zone never served here touches nothing the backend holds under its name (another installation's zone)", async () => {
  for (const variant of ['waiting for its Domain', 'not delegated'] as const) {
    // Another installation serves sub.victim.example on the same backend.
    const shared = new ZoneTable();
    const theirs = new MemoryStore(now);
    theirs.apply(zoneClass());
    theirs.apply(zone('victim', 'sub', 'sub.victim.example'));
    const other = new Controller({
      store: theirs,
      backend: new BuiltinBackend(shared),
      serials: new MemorySerialStore(),
      now,
    });
    other.start();
    await other.idle();
    other.stop();
    // Here a tenant's zone of that name is never served: gated, or not delegated by the parent zone.
    const store = new MemoryStore(now);
    if (variant === 'waiting for its Domain')
      store.apply(
        zoneClass('builtin', ['ns1.example.com.', 'ns2.example.com.'], { requireVerifiedDomain: true }),
      );
    else {
      store.apply(zoneClass());
      store.apply(zone('owner', 'victim', 'victim.example'));
    }
    store.apply(zone('tenant', 'z', 'sub.victim.example', {}, 50));
    const controller = new Controller({
      store,
      backend: new BuiltinBackend(shared),
      serials: new MemorySerialStore(),
      now,
    });
    controller.start();
    await controller.idle();
    store.remove('DNSZone', 'tenant/z');
    await until(() => store.get('DNSZone', 'tenant/z') === undefined, 'the zone is released');
    await controller.idle();
    assert.ok(
      shared.get(parseName('sub.victim.example.')),
      `${variant}: the other installation's zone stays`,
    );
    controller.stop();
  }
});

test('after a restart a zone served before and refused now is removed from a backend that kept it', async () => {
  const store = storeWith(2);
  const serials = new MemorySerialStore();
  const kept = new ZoneTable();
  await runAndStop(store, serials, new BuiltinBackend(kept));
  assert.ok(kept.get(parseName('example.com.')));
  // While no controller runs, the class starts requiring a verified Domain: the zone waits for one.
  store.apply(
    zoneClass('builtin', ['ns1.example.com.', 'ns2.example.com.'], { requireVerifiedDomain: true }),
  );
  const second = new Controller({ store, backend: new BuiltinBackend(kept), serials, now });
  second.start();
  await second.idle();
  const programmed = store
    .get('DNSZone', 'dns/example-com')
    ?.status?.conditions?.find((c) => c.type === 'Programmed');
  assert.equal(programmed?.reason, 'DomainNotVerified');
  assert.equal(kept.get(parseName('example.com.')), undefined, 'not served on from before the restart');
  second.stop();
});

/** A store whose status writes take a while, as an API server's do (other work runs meanwhile). */
class SlowStatusStore extends MemoryStore {
  override async updateStatus(...args: Parameters<MemoryStore['updateStatus']>): Promise<void> {
    await new Promise((r) => setTimeout(r, 20));
    return super.updateStatus(...args);
  }
}

test('while running, a deleted record set is released only once the zone status carries a serial without it', async () => {
  const store = storeWith(3, new SlowStatusStore(now));
  const serials = new MemorySerialStore();
  const controller = new Controller({ store, backend: new BuiltinBackend(new ZoneTable()), serials, now });
  controller.start();
  await controller.idle();
  const servedSerial = zoneSerial(store)!;
  let serialAtRelease: number | undefined;
  store.watch((e) => {
    if (e.type === 'delete' && e.key === 'dns/r1') serialAtRelease = zoneSerial(store);
  });
  store.remove('DNSRecordSet', 'dns/r1');
  await until(() => store.get('DNSRecordSet', 'dns/r1') === undefined, 'the record set is released');
  await controller.idle();
  assert.ok(
    serialAtRelease !== undefined && serialAtRelease > servedSerial,
    `released while the zone status still said ${serialAtRelease} (with it), not a serial without it`,
  );
  controller.stop();
});
