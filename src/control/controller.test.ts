import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSRecordSet, DNSZone, DNSZoneClass, Kind, Resource } from '../api/index.ts';
import {
  type ApplyResult,
  type Backend,
  BackendError,
  type ProgrammedZone,
  type RRsetProblem,
} from '../backends/backend.ts';
import { BUILTIN_CAPABILITIES, BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import type { Name } from '../dns/name.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { v8GcFunction } from '../util/memory-release.ts';
import { Holder, RecordTable } from '../zones/record-table.ts';
import { Controller, type ControllerOptions } from './controller.ts';
import { MemoryStore } from './memory-store.ts';
import { FINALIZER, type ResourceStore } from './resource-store.ts';
import { MemorySerialStore, type SerialStore } from './serial-store.ts';
import { DEFER_RECORD_STATUSES_OVER } from './zone-reconciler.ts';

const now = () => new Date('2026-11-21T12:00:00Z');

function setup(backend?: Backend, serials: SerialStore = new MemorySerialStore()) {
  const store = new MemoryStore(now);
  const table = new ZoneTable();
  const controller = new Controller({ store, backend: backend ?? new BuiltinBackend(table), serials, now });
  return { store, table, controller };
}

function cond(store: MemoryStore, kind: Kind, key: string, type: string) {
  return (store.get(kind, key) as Resource | undefined)?.status?.conditions?.find((c) => c.type === type);
}

function seed(store: MemoryStore) {
  store.apply(zoneClass());
  store.apply(zone('dns', 'example-com', 'example.com'));
  store.apply(
    recordSet(
      'dns',
      'www',
      { zoneRef: { name: 'example-com' }, name: 'www', type: 'A', records: ['192.0.2.1'] },
      1,
    ),
  );
}

describe('Controller', () => {
  test('the first versions the first load listed are not kept once the store holds newer ones', async () => {
    // Regression: the lists of the first load were captured by a closure sharing its context with
    // the watch handler, which kept every object's first version alive beside the store's.
    const gc = v8GcFunction();
    if (gc === undefined) return;
    const { store, controller } = setup();
    seed(store);
    const first = new WeakRef(store.get('DNSRecordSet', 'dns/www')!);
    controller.start();
    await controller.idle();
    assert.notEqual(
      store.get('DNSRecordSet', 'dns/www'),
      first.deref(),
      'the status write made a new version',
    );
    for (let i = 0; i < 3 && first.deref() !== undefined; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    assert.equal(first.deref(), undefined);
    controller.stop();
  });

  test('a store and a controller sharing one record-set table (serve): one slot per record set, served through a delete and re-add', async () => {
    const recordTable = new RecordTable();
    const store = new MemoryStore(now, { restoreDeleting: true, recordSets: recordTable });
    const table = new ZoneTable();
    const controller = new Controller({
      store,
      backend: new BuiltinBackend(table),
      serials: new MemorySerialStore(),
      now,
      recordTable,
    });
    assert.equal(controller.catalog.table, recordTable);
    seed(store);
    controller.start();
    await controller.idle();
    const ready = () => cond(store, 'DNSRecordSet', 'dns/www', 'Ready')?.status;
    const served = () => {
      const node = table.get('example.com.')?.nodes.get('www.example.com.');
      return node ? [...node.rrsets.values()].flatMap((rrset) => rrset.rdata) : [];
    };
    assert.equal(ready(), 'True');
    assert.deepEqual(served(), [{ type: 'A', address: '192.0.2.1' }]);
    const slot = recordTable.slotOf('dns/www');
    assert.ok(recordTable.held(slot, Holder.store) && recordTable.held(slot, Holder.catalog));
    assert.equal(recordTable.size, 1, 'one slot for the record set, whoever holds it');
    // Deleted (its finalizer lets it go once the zone no longer serves it), then applied again.
    store.remove('DNSRecordSet', 'dns/www');
    await controller.idle();
    assert.equal(store.get('DNSRecordSet', 'dns/www'), undefined);
    assert.deepEqual(served(), []);
    store.apply(
      recordSet('dns', 'www', {
        zoneRef: { name: 'example-com' },
        name: 'www',
        type: 'A',
        records: ['192.0.2.2'],
      }),
    );
    await controller.idle();
    assert.equal(ready(), 'True');
    assert.deepEqual(served(), [{ type: 'A', address: '192.0.2.2' }]);
    assert.equal(recordTable.size, 1);
    controller.stop();
  });

  test('a first load takes the record sets the store keeps in its table by their slots and reconciles each; a store with another table is looked up by key', async () => {
    class CountingTable extends RecordTable {
      holds = 0;
      counting = true;
      override hold(key: string, holder: Holder): number {
        if (this.counting && (holder === Holder.feed || holder === Holder.catalog)) this.holds++;
        return super.hold(key, holder);
      }
    }
    for (const shared of [true, false]) {
      const controllerTable = new CountingTable();
      const store = new MemoryStore(now, { recordSets: shared ? controllerTable : new RecordTable() });
      const table = new ZoneTable();
      const controller = new Controller({
        store,
        backend: new BuiltinBackend(table),
        serials: new MemorySerialStore(),
        now,
        recordTable: controllerTable,
      });
      store.apply(zoneClass());
      store.apply(zone('dns', 'example-com', 'example.com'));
      const names = ['b', 'a', 'c', 'd'];
      for (const name of names)
        store.apply(
          recordSet('dns', name, {
            zoneRef: { name: 'example-com' },
            name,
            type: 'A',
            records: ['192.0.2.1'],
          }),
        );
      const holdsBefore = controllerTable.holds;
      // Counted until the store's first event (the first reconciles), which this handler sees first.
      store.watch(() => {
        controllerTable.counting = false;
      });
      controller.start();
      // The feed takes the store's slots (no lookup), and the catalog the feed's; with another table the feed looks each key up.
      assert.equal(controllerTable.holds - holdsBefore, shared ? 0 : names.length);
      await controller.idle();
      const node = (name: string) => table.get('example.com.')?.nodes.get(`${name}.example.com.`);
      for (const name of names) {
        assert.ok(node(name), `${name} served (${shared})`);
        assert.equal(cond(store, 'DNSRecordSet', `dns/${name}`, 'Ready')?.status, 'True');
      }
      // Each record set was reconciled (its finalizer added with its first status).
      for (const name of names)
        assert.deepEqual(store.get('DNSRecordSet', `dns/${name}`)?.metadata.finalizers, [FINALIZER]);
      controller.stop();
    }
  });

  test("the first load takes each object's key from the store (forEachKeyed) where it hands them out, and serves the same", async () => {
    class CountingStore extends MemoryStore {
      visited = 0;
      override forEachKeyed(kind: Kind, visit: (object: Resource, key: string) => void): void {
        super.forEachKeyed(kind, (object, key) => {
          this.visited++;
          visit(object, key);
        });
      }
    }
    const counting = new CountingStore(now);
    const table = new ZoneTable();
    const controller = new Controller({
      store: counting,
      backend: new BuiltinBackend(table),
      serials: new MemorySerialStore(),
      now,
    });
    seed(counting);
    controller.start();
    await controller.idle();
    assert.equal(counting.visited, 3, 'the class, the zone and the record set, each once');
    // A store without it (the Kubernetes one) is listed, with keys made from the objects.
    const plain = new MemoryStore(now);
    const listed: ResourceStore = {
      list: (kind) => plain.list(kind),
      get: (kind, key) => plain.get(kind, key),
      watch: (handler) => plain.watch(handler),
      updateStatus: (kind, key, status) => plain.updateStatus(kind, key, status),
      updateStatusWith: (kind, key, plan) => plain.updateStatusWith(kind, key, plan),
      addFinalizer: (kind, key, f) => plain.addFinalizer(kind, key, f),
      removeFinalizer: (kind, key, f) => plain.removeFinalizer(kind, key, f),
    };
    const other = new ZoneTable();
    const second = new Controller({
      store: listed,
      backend: new BuiltinBackend(other),
      serials: new MemorySerialStore(),
      now,
    });
    seed(plain);
    second.start();
    await second.idle();
    for (const t of [table, other])
      assert.equal(t.get('example.com.')?.nodes.get('www.example.com.')?.rrsets.size, 1);
    assert.equal(
      (counting.get('DNSZone', 'dns/example-com') as DNSZone).status?.serial,
      (plain.get('DNSZone', 'dns/example-com') as DNSZone).status?.serial,
    );
    controller.stop();
    second.stop();
  });

  test('programs the zone and writes Accepted/Programmed/Ready with observedGeneration', async () => {
    const { store, table, controller } = setup();
    seed(store);
    controller.start();
    await controller.idle();
    const z = store.get('DNSZone', 'dns/example-com') as DNSZone;
    assert.equal(z.status?.serial, 2026112100);
    assert.equal(z.status?.recordCount, 1);
    assert.deepEqual(z.status?.nameservers, ['ns1.example.com.', 'ns2.example.com.']);
    for (const type of ['Accepted', 'Programmed', 'Ready']) {
      const c = cond(store, 'DNSZone', 'dns/example-com', type);
      assert.equal(c?.status, 'True', `${type}: ${c?.message}`);
      assert.equal(c?.observedGeneration, 1);
    }
    assert.equal(cond(store, 'DNSRecordSet', 'dns/www', 'Ready')?.status, 'True');
    const rs = store.get('DNSRecordSet', 'dns/www') as DNSRecordSet;
    assert.equal(rs.status?.fqdn, 'www.example.com.');
    assert.deepEqual(rs.status?.zone, { namespace: 'dns', name: 'example-com' });
    assert.equal(table.get('example.com.')?.serial, 2026112100);
    assert.deepEqual(z.metadata.finalizers, [FINALIZER]);
    controller.stop();
  });

  test("the catalog holds the store's own version of each record set, not one from before its finalizer", async () => {
    const { store, controller } = setup();
    seed(store);
    controller.start();
    await controller.idle();
    // Status written before the finalizer is added (the order a first start's zone reconciles make).
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www.example.com.' });
    await store.removeFinalizer('DNSRecordSet', 'dns/www', FINALIZER);
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www.example.com.' });
    await store.addFinalizer('DNSRecordSet', 'dns/www', FINALIZER);
    await controller.idle();
    const held = store.get('DNSRecordSet', 'dns/www');
    assert.deepEqual(held?.metadata.finalizers, [FINALIZER]);
    assert.equal(controller.catalog.records.get('dns/www'), held);
    controller.stop();
  });

  test('a first start serves every zone while record-set status writes wait; each is written once', async () => {
    // More zones than are reconciled at once, and the API server slow to take record-set statuses: no
    // zone waits for the record-set writes of the zones before it (its own status is what serves it).
    const { store, controller } = setup();
    store.apply(zoneClass());
    const zones = 12;
    const perZone = DEFER_RECORD_STATUSES_OVER + 1;
    for (let z = 0; z < zones; z++) {
      store.apply(zone('dns', `z${z}`, `z${z}.example.com`));
      for (let r = 0; r < perZone; r++)
        store.apply(
          recordSet('dns', `z${z}-r${r}`, {
            zoneRef: { name: `z${z}` },
            name: `r${r}`,
            type: 'A',
            records: ['192.0.2.1'],
          }),
        );
    }
    const recordWrites: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const update = store.updateStatus.bind(store);
    store.updateStatus = async (kind, key, status) => {
      if (kind === 'DNSRecordSet') {
        recordWrites.push(key);
        await released;
      }
      await update(kind, key, status);
    };
    controller.start();
    const served = () =>
      Array.from({ length: zones }, (_, z) => store.get('DNSZone', `dns/z${z}`) as DNSZone).filter(
        (z) => z.status?.serial !== undefined,
      ).length;
    for (let i = 0; i < 500 && served() < zones; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(served(), zones, 'every zone is served before any record-set status is written');
    for (const key of recordWrites)
      assert.equal(cond(store, 'DNSRecordSet', key, 'Ready'), undefined, `${key} Ready before its write`);
    release();
    await controller.idle();
    assert.equal(recordWrites.length, zones * perZone);
    assert.equal(new Set(recordWrites).size, zones * perZone, 'each record set status written once');
    for (let z = 0; z < zones; z++)
      for (let r = 0; r < perZone; r++)
        assert.equal(cond(store, 'DNSRecordSet', `dns/z${z}-r${r}`, 'Ready')?.status, 'True');
    controller.stop();
  });

  test('a first start programs every zone before the record sets get their finalizers; none is lost', async () => {
    // A record set's reconcile (its finalizer, the status of one no zone takes) is work no answer
    // waits for: its queue takes keys only once the zones' has none waiting.
    const { store, table, controller } = setup();
    store.apply(zoneClass());
    const zones = 20;
    for (let z = 0; z < zones; z++) {
      store.apply(zone('dns', `z${z}`, `z${z}.example.com`));
      for (let r = 0; r < 3; r++)
        store.apply(
          recordSet('dns', `z${z}-r${r}`, {
            zoneRef: { name: `z${z}` },
            name: `r${r}`,
            type: 'A',
            records: ['192.0.2.1'],
          }),
        );
    }
    store.apply(
      recordSet('dns', 'orphan', {
        zoneRef: { name: 'missing' },
        name: 'o',
        type: 'A',
        records: ['192.0.2.9'],
      }),
    );
    const servedAtFinalizer: number[] = [];
    const addFinalizer = store.addFinalizer.bind(store);
    store.addFinalizer = async (kind, key, finalizer) => {
      if (kind === 'DNSRecordSet') servedAtFinalizer.push(table.size);
      await addFinalizer(kind, key, finalizer);
    };
    controller.start();
    await controller.idle();
    assert.equal(servedAtFinalizer.length, zones * 3 + 1, 'every record set got its finalizer');
    // Zones still reconciling (at most 8 at once) may be finishing; none is waiting any more.
    assert.ok(
      servedAtFinalizer[0]! >= zones - 8,
      `first finalizer with ${servedAtFinalizer[0]} zones served`,
    );
    for (let z = 0; z < zones; z++) {
      assert.equal(cond(store, 'DNSZone', `dns/z${z}`, 'Ready')?.status, 'True');
      for (let r = 0; r < 3; r++) {
        const key = `dns/z${z}-r${r}`;
        assert.equal(cond(store, 'DNSRecordSet', key, 'Ready')?.status, 'True');
        assert.deepEqual((store.get('DNSRecordSet', key) as DNSRecordSet).metadata.finalizers, [FINALIZER]);
      }
    }
    assert.equal(cond(store, 'DNSRecordSet', 'dns/orphan', 'Ready')?.status, 'False');
    assert.deepEqual((store.get('DNSRecordSet', 'dns/orphan') as DNSRecordSet).metadata.finalizers, [
      FINALIZER,
    ]);
    controller.stop();
  });

  test('a change raises the serial once; an unchanged resync writes no status', async () => {
    const { store, controller } = setup();
    seed(store);
    controller.start();
    await controller.idle();
    store.apply(
      recordSet(
        'dns',
        'www',
        { zoneRef: { name: 'example-com' }, name: 'www', type: 'A', records: ['192.0.2.2'] },
        1,
      ),
    );
    await controller.idle();
    assert.equal((store.get('DNSZone', 'dns/example-com') as DNSZone).status?.serial, 2026112101);
    assert.equal(cond(store, 'DNSRecordSet', 'dns/www', 'Ready')?.observedGeneration, 2);
    let writes = 0;
    const original = store.updateStatus.bind(store);
    store.updateStatus = async (...args) => {
      writes++;
      return original(...args);
    };
    // Touch a label only: the generation stays, nothing is reconciled into a new status.
    store.apply({
      ...zone('dns', 'example-com', 'example.com'),
      metadata: { ...zone('dns', 'example-com', 'example.com').metadata, labels: { a: 'b' } },
    });
    await controller.idle();
    assert.equal(writes, 0);
    controller.stop();
  });

  test('a first start builds the first zone before the record sets naming other zones are resolved, and serves and reports each as a full first look would', async () => {
    const store = new MemoryStore(now);
    const table = new ZoneTable();
    const controller = new Controller({
      store,
      backend: new BuiltinBackend(table),
      serials: new MemorySerialStore(),
      now,
    });
    // Record sets resolved so far, and before and after each zone's first build took its members.
    const catalog = controller.catalog;
    let resolved = 0;
    const resolve = catalog.resolve.bind(catalog);
    catalog.resolve = (...args) => {
      resolved++;
      return resolve(...args);
    };
    const builds: string[] = [];
    const zoneMembers = catalog.zoneMembers.bind(catalog);
    catalog.zoneMembers = (zone, slots) => {
      const before = resolved;
      const members = zoneMembers(zone, slots);
      builds.push(`${zone} ${before} ${resolved}`);
      return members;
    };
    store.apply(zoneClass());
    // The zone queued first (the store's order) is built first: example.com, then its child.
    store.apply(zone('dns', 'example-com', 'example.com'));
    store.apply(zone('dns', 'sub', 'sub.example.com', {}, 1));
    const rs = (name: string, spec: DNSRecordSet['spec'], age = 0) =>
      store.apply(recordSet('dns', name, spec, age));
    // Without a zoneRef: its deepest zone is the first zone built.
    rs('apex-free', { name: 'free.example.com.', type: 'A', records: ['192.0.2.1'] });
    rs('www', { zoneRef: { name: 'example-com' }, name: 'www', type: 'A', records: ['192.0.2.2'] });
    // Decided across zones: below the child's cut (OutOfZone), and a conflict inside the child.
    rs('cut', { zoneRef: { name: 'example-com' }, name: 'x.sub', type: 'A', records: ['192.0.2.3'] });
    rs('in-sub', { zoneRef: { name: 'sub' }, name: 'x', type: 'A', records: ['192.0.2.4'] });
    rs('in-sub-2', { zoneRef: { name: 'sub' }, name: 'x', type: 'A', records: ['192.0.2.5'] }, 5);
    rs('sub-free', { name: 'y.sub.example.com.', type: 'A', records: ['192.0.2.6'] });
    rs('lost', { zoneRef: { name: 'nowhere' }, name: 'z', type: 'A', records: ['192.0.2.7'] });
    controller.start();
    await controller.idle();
    // The first zone was built once the 2 record sets without a zoneRef and its own 2 were resolved;
    // those of sub then, and the one naming no zone by its record set's reconcile: each once.
    assert.deepEqual(builds, ['dns/example-com 2 4', 'dns/sub 4 6']);
    assert.equal(resolved, 7);
    const node = (origin: string, name: string) => table.get(origin)?.nodes.get(name);
    assert.ok(node('example.com.', 'free.example.com.'));
    assert.ok(node('example.com.', 'www.example.com.'));
    assert.equal(node('example.com.', 'x.sub.example.com.'), undefined);
    assert.ok(node('sub.example.com.', 'y.sub.example.com.'));
    const x = node('sub.example.com.', 'x.sub.example.com.')!;
    assert.deepEqual([...x.rrsets.values()][0]!.rdata, [{ type: 'A', address: '192.0.2.4' }]);
    const accepted = (name: string) => cond(store, 'DNSRecordSet', `dns/${name}`, 'Accepted');
    for (const name of ['apex-free', 'www', 'in-sub', 'sub-free'])
      assert.equal(cond(store, 'DNSRecordSet', `dns/${name}`, 'Ready')?.status, 'True', name);
    assert.equal(accepted('cut')?.reason, 'OutOfZone');
    assert.equal(accepted('in-sub-2')?.reason, 'Conflict');
    assert.equal(accepted('lost')?.reason, 'ZoneNotFound');
    controller.stop();
  });

  test("a zone whose domain changes in place (a front door's) stops serving the old origin", async () => {
    // Regression: a kubizone Zone's domainName may change (a DNSZone's may not); the new origin was
    // programmed beside the old one, which stayed served until a restart.
    const { store, table, controller } = setup();
    seed(store);
    controller.start();
    await controller.idle();
    assert.ok(table.get('example.com.')?.nodes.get('www.example.com.'));
    store.apply(zone('dns', 'example-com', 'example.org'));
    await controller.idle();
    assert.equal(table.get('example.com.'), undefined, 'the old origin is no longer served');
    assert.ok(table.get('example.org.')?.nodes.get('www.example.org.'));
    assert.equal(table.size, 1);
    assert.equal(cond(store, 'DNSRecordSet', 'dns/www', 'Ready')?.status, 'True');
    controller.stop();
  });

  test('a conflicting record set gets Conflict naming the winner; the winner keeps serving', async () => {
    const { store, table, controller } = setup();
    seed(store);
    store.apply(
      recordSet(
        'dns',
        'www-2',
        { zoneRef: { name: 'example-com' }, name: 'www', type: 'A', records: ['192.0.2.66'] },
        9,
      ),
    );
    controller.start();
    await controller.idle();
    const c = cond(store, 'DNSRecordSet', 'dns/www-2', 'Accepted');
    assert.equal(c?.status, 'False');
    assert.equal(c?.reason, 'Conflict');
    assert.match(c?.message ?? '', /dns\/www/);
    const node = table.get('example.com.')!.nodes.get('www.example.com.')!;
    assert.deepEqual([...node.rrsets.values()][0]!.rdata, [{ type: 'A', address: '192.0.2.1' }]);
    controller.stop();
  });

  test('a record without a zone gets ZoneNotFound; it is adopted when the zone appears', async () => {
    const { store, controller } = setup();
    store.apply(zoneClass());
    store.apply(recordSet('dns', 'orphan', { name: 'www.example.org.', type: 'A', records: ['192.0.2.1'] }));
    controller.start();
    await controller.idle();
    assert.equal(cond(store, 'DNSRecordSet', 'dns/orphan', 'Accepted')?.reason, 'ZoneNotFound');
    store.apply(zone('dns', 'org', 'example.org'));
    await controller.idle();
    assert.equal(cond(store, 'DNSRecordSet', 'dns/orphan', 'Ready')?.status, 'True');
    controller.stop();
  });

  test('deleting a zone waits on the finalizer until the backend no longer serves it', async () => {
    const { store, table, controller } = setup();
    seed(store);
    controller.start();
    await controller.idle();
    store.remove('DNSZone', 'dns/example-com');
    assert.ok(store.get('DNSZone', 'dns/example-com'), 'held by the finalizer');
    await controller.idle();
    assert.equal(store.get('DNSZone', 'dns/example-com'), undefined);
    assert.equal(table.get('example.com.'), undefined);
    assert.equal(cond(store, 'DNSRecordSet', 'dns/www', 'Accepted')?.reason, 'ZoneNotFound');
    controller.stop();
  });

  test('deleting a record set releases it only after the zone stopped serving it', async () => {
    const { store, table, controller } = setup();
    seed(store);
    controller.start();
    await controller.idle();
    store.remove('DNSRecordSet', 'dns/www');
    await controller.idle();
    assert.equal(store.get('DNSRecordSet', 'dns/www'), undefined);
    assert.equal(table.get('example.com.')!.nodes.get('www.example.com.'), undefined);
    controller.stop();
  });

  test('a backend outage loses nothing: Programmed=False, retried, then Ready', async () => {
    const table = new ZoneTable();
    const real = new BuiltinBackend(table);
    let down = true;
    const flaky: Backend = {
      name: 'flaky',
      capabilities: BUILTIN_CAPABILITIES,
      applyZone: (z: ProgrammedZone) =>
        down
          ? Promise.reject(new BackendError('BackendUnreachable', 'connection refused'))
          : real.applyZone(z),
      deleteZone: (o: Name) => real.deleteZone(o),
      servedSerial: (o: Name) => real.servedSerial(o),
    };
    const { store, controller } = setup(flaky);
    seed(store);
    controller.start();
    await new Promise((r) => setTimeout(r, 150));
    const c = cond(store, 'DNSZone', 'dns/example-com', 'Programmed');
    assert.equal(c?.status, 'False');
    assert.equal(c?.reason, 'BackendUnreachable');
    assert.match(c?.message ?? '', /connection refused/);
    store.apply(
      recordSet(
        'dns',
        'mail',
        { zoneRef: { name: 'example-com' }, name: 'mail', type: 'A', records: ['192.0.2.25'] },
        2,
      ),
    );
    down = false;
    for (let i = 0; i < 100 && cond(store, 'DNSZone', 'dns/example-com', 'Ready')?.status !== 'True'; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(cond(store, 'DNSZone', 'dns/example-com', 'Ready')?.status, 'True');
    assert.ok(
      table.get('example.com.')!.nodes.get('mail.example.com.'),
      'the change made during the outage is served',
    );
    controller.stop();
  });

  test('serials are kept across a graceful restart and never lowered', async () => {
    const serials = new MemorySerialStore();
    const first = setup(undefined, serials);
    seed(first.store);
    first.controller.start();
    await first.controller.idle();
    // A first serve saves the serial; its content hash follows (as after any change) or, at the
    // latest, when the process stops gracefully.
    assert.equal(serials.get('example.com.')?.hash, undefined);
    await first.controller.flush();
    assert.notEqual(serials.get('example.com.')?.hash, undefined);
    first.controller.stop();
    const second = setup(undefined, serials);
    seed(second.store);
    second.controller.start();
    await second.controller.idle();
    assert.equal((second.store.get('DNSZone', 'dns/example-com') as DNSZone).status?.serial, 2026112100);
    second.controller.stop();
  });

  test("a restart after a crash before the first serve's hash was saved raises the serial", async () => {
    const serials = new MemorySerialStore();
    const first = setup(undefined, serials);
    seed(first.store);
    first.controller.start();
    await first.controller.idle();
    first.controller.stop(); // no flush: the hash was never saved
    const second = setup(undefined, serials);
    seed(second.store);
    second.controller.start();
    await second.controller.idle();
    assert.equal((second.store.get('DNSZone', 'dns/example-com') as DNSZone).status?.serial, 2026112101);
    second.controller.stop();
  });

  test('the class counts its zones', async () => {
    const { store, controller } = setup();
    seed(store);
    controller.start();
    await controller.idle();
    store.apply(zone('dns', 'org', 'example.org'));
    await controller.idle();
    assert.equal((store.get('DNSZoneClass', 'builtin') as DNSZoneClass).status?.zones, 2);
    controller.stop();
  });

  test('RRsets a backend leaves out are reported on their record sets; the rest of the zone is Ready', async () => {
    const table = new ZoneTable();
    const real = new BuiltinBackend(table);
    let problems: RRsetProblem[] = [];
    const partial: Backend = {
      name: 'partial',
      capabilities: BUILTIN_CAPABILITIES,
      applyZone: async (z: ProgrammedZone): Promise<ApplyResult> => {
        await real.applyZone(z);
        const out: RRsetProblem[] = [];
        for (const rrset of z.rrsets()) {
          const p = problems.find((q) => q.owner === rrset.owner && q.type === rrset.type);
          if (p) out.push({ ...p, origin: rrset.origin });
        }
        return { problems: out };
      },
      deleteZone: (o: Name) => real.deleteZone(o),
      servedSerial: (o: Name) => real.servedSerial(o),
    };
    const { store, controller } = setup(partial);
    seed(store);
    store.apply(
      recordSet(
        'dns',
        'txt',
        { zoneRef: { name: 'example-com' }, name: '@', type: 'TXT', records: ['"x"'] },
        2,
      ),
    );
    problems = [
      {
        owner: 'www.example.com.',
        type: 'A',
        origin: { kind: 'apex' },
        reason: 'Conflict',
        message: 'PowerDNS already holds www.example.com. A, which Zonekeeper did not create',
      },
      {
        owner: 'example.com.',
        type: 'TXT',
        origin: { kind: 'apex' },
        reason: 'BackendRejected',
        message: 'PowerDNS refused example.com. TXT: too long',
      },
    ];
    controller.start();
    await controller.idle();
    assert.equal(cond(store, 'DNSZone', 'dns/example-com', 'Ready')?.status, 'True');
    const accepted = cond(store, 'DNSRecordSet', 'dns/www', 'Accepted');
    assert.equal(accepted?.status, 'False');
    assert.equal(accepted?.reason, 'Conflict');
    assert.match(accepted?.message ?? '', /^backend partial: PowerDNS already holds www\.example\.com\. A/);
    assert.equal(cond(store, 'DNSRecordSet', 'dns/txt', 'Accepted')?.status, 'True');
    const programmed = cond(store, 'DNSRecordSet', 'dns/txt', 'Programmed');
    assert.equal(programmed?.status, 'False');
    assert.equal(programmed?.reason, 'BackendRejected');
    assert.match(programmed?.message ?? '', /too long/);
    // The conflict is resolved in the backend: the next apply (any change) clears it.
    problems = [];
    store.apply(
      recordSet(
        'dns',
        'mail',
        { zoneRef: { name: 'example-com' }, name: 'mail', type: 'A', records: ['192.0.2.25'] },
        3,
      ),
    );
    await controller.idle();
    assert.equal(cond(store, 'DNSRecordSet', 'dns/www', 'Ready')?.status, 'True');
    assert.equal(cond(store, 'DNSRecordSet', 'dns/txt', 'Ready')?.status, 'True');
    controller.stop();
  });

  test('a backend with resyncIntervalMs has every zone applied again periodically (drift repair)', async () => {
    const table = new ZoneTable();
    const real = new BuiltinBackend(table);
    let applies = 0;
    const resyncing: Backend = {
      name: 'resyncing',
      capabilities: BUILTIN_CAPABILITIES,
      resyncIntervalMs: 40,
      applyZone: (z: ProgrammedZone) => {
        applies++;
        return real.applyZone(z);
      },
      deleteZone: (o: Name) => real.deleteZone(o),
      servedSerial: (o: Name) => real.servedSerial(o),
    };
    const { store, controller } = setup(resyncing);
    seed(store);
    controller.start();
    await controller.idle();
    const serial = (store.get('DNSZone', 'dns/example-com') as DNSZone).status?.serial;
    const after = applies;
    // Three more applies at a 40 ms interval; waited for, not timed (a loaded machine is slower).
    for (let waited = 0; applies < after + 3 && waited < 20_000; waited += 20)
      await new Promise((r) => setTimeout(r, 20));
    assert.ok(applies >= after + 3, `applied ${applies - after} more times`);
    assert.equal(
      (store.get('DNSZone', 'dns/example-com') as DNSZone).status?.serial,
      serial,
      'no new serial',
    );
    controller.stop();
    // Without an interval (the built-in server), nothing is applied again without a change.
    let quietApplies = 0;
    const quietReal = new BuiltinBackend(new ZoneTable());
    const quiet = setup({
      name: 'quiet',
      capabilities: BUILTIN_CAPABILITIES,
      applyZone: (z) => {
        quietApplies++;
        return quietReal.applyZone(z);
      },
      deleteZone: (o) => quietReal.deleteZone(o),
      servedSerial: (o) => quietReal.servedSerial(o),
    });
    seed(quiet.store);
    quiet.controller.start();
    await quiet.controller.idle();
    const settled = quietApplies;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(quietApplies, settled);
    quiet.controller.stop();
  });
});

describe('Controller: nothing stored for a zone', () => {
  const notifying = () =>
    zoneClass('builtin', ['ns1.example.com.', 'ns2.example.com.'], {
      transfers: { allowFrom: ['127.0.0.1/32'], notify: [{ address: '127.0.0.1:5300' }] },
    });

  function start(secondarySerials: ControllerOptions['secondarySerials'], serials = new MemorySerialStore()) {
    const store = new MemoryStore(now);
    const table = new ZoneTable();
    const logs: string[] = [];
    const controller = new Controller({
      store,
      backend: new BuiltinBackend(table),
      serials,
      now,
      log: (level, message, fields) => logs.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`),
      ...(secondarySerials ? { secondarySerials } : {}),
    });
    store.apply(notifying());
    store.apply(zone('dns', 'example-com', 'example.com'));
    controller.start();
    return { store, table, controller, logs };
  }

  test('starts above the highest serial the secondaries answer, and says so', async () => {
    const asked: string[] = [];
    const { store, controller, logs } = start(async (origin, transfers) => {
      asked.push(`${origin} ${transfers.notify.map((n) => n.address).join(',')}`);
      return [
        { target: '127.0.0.1:5300', serial: 2026112107 },
        { target: '127.0.0.1:5301', error: 'no answer within 2000 ms' },
      ];
    });
    await controller.idle();
    assert.deepEqual(asked, ['example.com. 127.0.0.1:5300']);
    assert.equal((store.get('DNSZone', 'dns/example-com') as DNSZone).status?.serial, 2026112108);
    assert.ok(logs.some((l) => /^warn zone example\.com\.: no serial stored; .*up to 2026112107/.test(l)));
    assert.ok(logs.some((l) => /127\.0\.0\.1:5301: no answer/.test(l)));
    controller.stop();
  });

  test('secondaries below the date serial, none answering, or a failing probe: the date serial', async () => {
    for (const answer of [
      async () => [{ target: 'a', serial: 2025010100 }],
      async () => [{ target: 'a', error: 'timeout' }],
      async () => {
        throw new Error('socket error');
      },
    ]) {
      const { store, controller, logs } = start(answer);
      await controller.idle();
      assert.equal((store.get('DNSZone', 'dns/example-com') as DNSZone).status?.serial, 2026112100);
      assert.ok(logs.some((l) => l.startsWith('warn zone example.com.: no serial stored')));
      controller.stop();
    }
  });

  test('a stored serial is used without asking the secondaries', async () => {
    const serials = new MemorySerialStore();
    await serials.set('example.com.', { serial: 2026112105 });
    let asked = 0;
    const { store, controller } = start(async () => {
      asked++;
      return [];
    }, serials);
    await controller.idle();
    assert.equal(asked, 0);
    assert.equal((store.get('DNSZone', 'dns/example-com') as DNSZone).status?.serial, 2026112106);
    controller.stop();
  });
});
