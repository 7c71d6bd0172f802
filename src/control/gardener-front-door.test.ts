import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, stamp, zone, zoneClass } from '../../test/support/resources.ts';
import {
  GARDENER_FINALIZER,
  type GardenerDNSRecordSpec,
  type GardenerDNSRecordStatus,
  gardenerDNSRecordFrontDoor,
  OPERATION_ANNOTATION,
} from '../api/frontdoors/gardener/index.ts';
import { type ForeignObject, FrontDoors } from '../api/frontdoors/index.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { Controller } from './controller.ts';
import { FrontDoorStore } from './front-door-store.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';

const DOOR = 'DNSRecord.extensions.gardener.cloud';
const now = () => new Date('2026-11-26T12:00:00Z');
type Rec = ForeignObject<GardenerDNSRecordSpec, GardenerDNSRecordStatus>;

function setup(delegations = [{ namespacePatterns: ['shoot--*'] }]) {
  const store = new MemoryStore(now);
  const table = new ZoneTable();
  const translated = new FrontDoorStore({
    base: store,
    doors: new FrontDoors([gardenerDNSRecordFrontDoor as never]),
    now,
  });
  const controller = new Controller({
    store: translated,
    backend: new BuiltinBackend(table),
    serials: new MemorySerialStore(),
    now,
  });
  store.apply(zoneClass());
  store.apply(zone('dns', 'example-com', 'example.com', { delegations }));
  store.apply(zone('dns', 'sub', 'foo.example.com', { delegations }));
  return { store, table, translated, controller };
}

function rec(
  namespace: string,
  name: string,
  spec: Partial<GardenerDNSRecordSpec> = {},
  annotations?: Record<string, string>,
): Rec {
  return {
    apiVersion: 'extensions.gardener.cloud/v1alpha1',
    kind: 'DNSRecord',
    metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
    spec: {
      type: 'zonekeeper',
      secretRef: { name: 'creds', namespace },
      name: 'api.bar.foo.example.com',
      recordType: 'A',
      values: ['192.0.2.1'],
      ...spec,
    },
  };
}

function served(table: ZoneTable, origin: string, owner: string): string[] | undefined {
  const node = table.get(origin)?.nodes.get(owner);
  const rrset = node ? [...node.rrsets.values()][0] : undefined;
  return rrset?.rdata.map((r) => (r as { address: string }).address);
}

/** Applies an object as a client would: the stored metadata, with changed annotations. */
function annotate(store: MemoryStore, key: string, annotations: Record<string, string>): void {
  const current = store.getForeign(DOOR, key)!;
  store.applyForeign(DOOR, { ...current, metadata: { ...current.metadata, annotations } });
}

async function settle(controller: Controller): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await controller.idle();
    await new Promise((r) => setImmediate(r));
  }
}

describe('Gardener DNSRecord through the translating store', () => {
  test('created in the deepest zone, status per the contract, changed, deleted', async () => {
    const { store, table, controller } = setup();
    store.applyForeign(DOOR, rec('shoot--foo--bar', 'external'), stamp(1));
    controller.start();
    await settle(controller);
    assert.deepEqual(served(table, 'foo.example.com.', 'api.bar.foo.example.com.'), ['192.0.2.1']);
    const object = store.getForeign(DOOR, 'shoot--foo--bar/external')!;
    assert.deepEqual(object.metadata.finalizers, [GARDENER_FINALIZER]);
    const status = object.status as GardenerDNSRecordStatus;
    assert.equal(status.zone, 'dns/sub', 'the longest served zone, written on the first reconcile');
    assert.equal(status.lastOperation?.type, 'Create');
    assert.equal(status.lastOperation?.state, 'Succeeded');
    assert.equal(status.observedGeneration, 1);
    const ttl = [...table.get('foo.example.com.')!.nodes.get('api.bar.foo.example.com.')!.rrsets.values()][0]!
      .ttl;
    assert.equal(ttl, 120);
    // A change: status.zone is reused, the operation is a Reconcile.
    store.applyForeign(DOOR, { ...rec('shoot--foo--bar', 'external', { values: ['192.0.2.9'] }) });
    await settle(controller);
    assert.deepEqual(served(table, 'foo.example.com.', 'api.bar.foo.example.com.'), ['192.0.2.9']);
    const changed = store.getForeign(DOOR, 'shoot--foo--bar/external')!.status as GardenerDNSRecordStatus;
    assert.equal(changed.lastOperation?.type, 'Reconcile');
    assert.equal(changed.lastOperation?.state, 'Succeeded');
    assert.equal(changed.observedGeneration, 2);
    // A reconcile annotation is removed.
    annotate(store, 'shoot--foo--bar/external', { [OPERATION_ANNOTATION]: 'reconcile' });
    await settle(controller);
    assert.equal(
      store.getForeign(DOOR, 'shoot--foo--bar/external')!.metadata.annotations?.[OPERATION_ANNOTATION],
      undefined,
    );
    // Delete: held by the finalizer until withdrawn.
    store.removeForeign(DOOR, 'shoot--foo--bar/external');
    await settle(controller);
    assert.equal(store.getForeign(DOOR, 'shoot--foo--bar/external'), undefined);
    assert.equal(served(table, 'foo.example.com.', 'api.bar.foo.example.com.'), undefined);
    controller.stop();
  });

  test('records of other provider types are left strictly alone', async () => {
    const { store, table, translated, controller } = setup();
    store.applyForeign(DOOR, rec('shoot--foo--bar', 'route53', { type: 'aws-route53' }), stamp(1));
    controller.start();
    await settle(controller);
    const object = store.getForeign(DOOR, 'shoot--foo--bar/route53')!;
    assert.equal(object.status, undefined, 'no status');
    assert.equal(object.metadata.finalizers, undefined, 'no finalizer');
    assert.equal(translated.list('DNSRecordSet').length, 0, 'not in the catalog');
    assert.equal(served(table, 'foo.example.com.', 'api.bar.foo.example.com.'), undefined);
    controller.stop();
  });

  test('migrate drops the finalizer, never the records; restore takes them over again', async () => {
    const { store, table, controller } = setup();
    const key = 'shoot--foo--bar/external';
    store.applyForeign(DOOR, rec('shoot--foo--bar', 'external'), stamp(1));
    controller.start();
    await settle(controller);
    annotate(store, key, { [OPERATION_ANNOTATION]: 'migrate' });
    await settle(controller);
    let object = store.getForeign(DOOR, key)!;
    assert.deepEqual(object.metadata.finalizers ?? [], []);
    assert.equal(object.metadata.annotations?.[OPERATION_ANNOTATION], undefined, 'removed once migrated');
    assert.deepEqual((object.status as GardenerDNSRecordStatus).lastOperation?.type, 'Migrate');
    assert.deepEqual((object.status as GardenerDNSRecordStatus).lastOperation?.state, 'Succeeded');
    assert.deepEqual(served(table, 'foo.example.com.', 'api.bar.foo.example.com.'), ['192.0.2.1']);
    annotate(store, key, { [OPERATION_ANNOTATION]: 'restore' });
    await settle(controller);
    object = store.getForeign(DOOR, key)!;
    assert.deepEqual(object.metadata.finalizers, [GARDENER_FINALIZER]);
    assert.equal(object.metadata.annotations?.[OPERATION_ANNOTATION], undefined, 'removed once restored');
    assert.equal((object.status as GardenerDNSRecordStatus).lastOperation?.type, 'Restore');
    assert.equal((object.status as GardenerDNSRecordStatus).lastOperation?.state, 'Succeeded');
    assert.deepEqual(served(table, 'foo.example.com.', 'api.bar.foo.example.com.'), ['192.0.2.1']);
    controller.stop();
  });

  test('hostile tenant: spec.zone naming another namespace zone still needs its delegation', async () => {
    const { store, table, controller } = setup();
    store.applyForeign(
      DOOR,
      rec('team-x', 'grab', { name: 'mail.example.com', zone: 'dns/example-com' }),
      stamp(1),
    );
    controller.start();
    await settle(controller);
    assert.equal(served(table, 'example.com.', 'mail.example.com.'), undefined);
    const refused = store.getForeign(DOOR, 'team-x/grab')!;
    assert.equal((refused.status as GardenerDNSRecordStatus).lastOperation?.state, 'Error');
    assert.equal((refused.status as GardenerDNSRecordStatus).zone, undefined, 'no zone adopted it');
    controller.stop();
  });

  test('mixed with native record sets: the oldest wins, the loser reads why in its own status', async () => {
    const { store, table, controller } = setup();
    store.apply(
      recordSet('dns', 'www', { name: 'www.example.com.', type: 'A', records: ['192.0.2.50'] }),
      stamp(1),
    );
    store.applyForeign(DOOR, rec('shoot--foo--bar', 'late', { name: 'www.example.com' }), stamp(5));
    controller.start();
    await settle(controller);
    assert.deepEqual(served(table, 'example.com.', 'www.example.com.'), ['192.0.2.50']);
    const status = store.getForeign(DOOR, 'shoot--foo--bar/late')!.status as GardenerDNSRecordStatus;
    assert.equal(status.lastOperation?.state, 'Error');
    assert.match(status.lastError?.description ?? '', /dns\/www/, status.lastError?.description);
    controller.stop();
  });

  test('zones of every class are considered: the deepest wins whatever its class', async () => {
    const { store, table, controller } = setup();
    store.apply(zoneClass('other', ['ns1.other.example.', 'ns2.other.example.']));
    store.apply(
      zone('dns', 'deep', 'bar.foo.example.com', {
        className: 'other',
        delegations: [{ namespacePatterns: ['shoot--*'] }],
      }),
    );
    store.applyForeign(DOOR, rec('shoot--foo--bar', 'external'), stamp(1));
    controller.start();
    await settle(controller);
    assert.deepEqual(served(table, 'bar.foo.example.com.', 'api.bar.foo.example.com.'), ['192.0.2.1']);
    const status = store.getForeign(DOOR, 'shoot--foo--bar/external')!.status as GardenerDNSRecordStatus;
    assert.equal(status.zone, 'dns/deep');
    controller.stop();
  });

  test('hostile tenant: a lookalike of the shoot namespace pattern is not admitted', async () => {
    const { store, table, controller } = setup();
    store.applyForeign(DOOR, rec('xshoot--foo--bar', 'grab', { name: 'www.example.com' }), stamp(1));
    store.applyForeign(DOOR, rec('shoot--foo--bar', 'ok', { name: 'ok.example.com' }), stamp(2));
    controller.start();
    await settle(controller);
    assert.equal(served(table, 'example.com.', 'www.example.com.'), undefined);
    const refused = store.getForeign(DOOR, 'xshoot--foo--bar/grab')!.status as GardenerDNSRecordStatus;
    assert.equal(refused.lastOperation?.state, 'Error');
    assert.match(refused.lastError?.description ?? '', /NotDelegated|deleg/i);
    assert.deepEqual(served(table, 'example.com.', 'ok.example.com.'), ['192.0.2.1']);
    controller.stop();
  });
});
