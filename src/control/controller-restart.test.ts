import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
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
function storeWith(records: number): MemoryStore {
  const store = new MemoryStore(now);
  store.apply(zoneClass());
  store.apply(zone('dns', 'example-com', 'example.com'));
  for (let i = 0; i < records; i++) store.apply(inZone(`r${i}`, `n${i}`, '192.0.2.1', i + 1));
  return store;
}

/** A controller run until it is idle, its hashes saved, then stopped: the process before a restart. */
async function runAndStop(store: MemoryStore, serials: MemorySerialStore): Promise<void> {
  const first = new Controller({ store, backend: new BuiltinBackend(new ZoneTable()), serials, now });
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

// Known gap, kept as a runnable record until it is mended: a new process knows no programmed content,
// so a record set deleted while the controller was down is released before its zone is first served
// without it (the finalizer's promise holds again once that zone's first reconcile succeeds). The
// mend: hold such record sets per zone until that zone's first programming or removal in this process.
test('after a restart a record set being deleted is released only once its zone is served without it', {
  todo: 'a deleted record set is released before its zone is first served without it after a restart',
}, async () => {
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
