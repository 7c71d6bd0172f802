/**
 * The seam's `reads`, `nativeStatus` and `labels`, through the translating store with the kubizone
 * door: translations that depend on other objects of the group and on the default class, read-only
 * replicas learning a translated zone's serial, and a label kept on the objects.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { stamp, zoneClass } from '../../test/support/resources.ts';
import { type ForeignObject, FrontDoors } from '../api/frontdoors/index.ts';
import { KUBIZONE_FRONT_DOORS, PARENT_ZONE_LABEL } from '../api/frontdoors/kubizone/index.ts';
import type { Condition, DNSZone } from '../api/index.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { Controller } from './controller.ts';
import { FrontDoorStore } from './front-door-store.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';

const ZONE = 'Zone.kubi.zone';
const RECORD = 'Record.kubi.zone';
const now = () => new Date('2026-11-21T12:00:00Z');
const doors = new FrontDoors(KUBIZONE_FRONT_DOORS);

function kzZone(namespace: string, name: string, domainName: string, delegations: unknown[]): ForeignObject {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Zone',
    metadata: { name, namespace },
    spec: { domainName, delegations },
  };
}

function kzRecord(namespace: string, name: string, domainName: string, rdata: string): ForeignObject {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Record',
    metadata: { name, namespace },
    spec: { domainName, type: 'A', rdata },
  };
}

/** A translating store and a controller serving into a table of their own, over `store`'s objects. */
function controllerOver(store: MemoryStore) {
  const table = new ZoneTable();
  const translated = new FrontDoorStore({ base: store, doors, now });
  const controller = new Controller({
    store: translated,
    backend: new BuiltinBackend(table),
    serials: new MemorySerialStore(),
    now,
  });
  return { table, translated, controller };
}

function setup(withClass = true) {
  const store = new MemoryStore(now);
  const over = controllerOver(store);
  if (withClass) store.apply(zoneClass());
  return { store, ...over };
}

function served(table: ZoneTable, origin: string, owner: string): string[] | undefined {
  const node = table.get(origin)?.nodes.get(owner);
  const rrset = node ? [...node.rrsets.values()][0] : undefined;
  return rrset?.rdata.map((r) => (r as { address: string }).address).sort();
}

function ready(store: MemoryStore, door: string, key: string): Condition | undefined {
  const status = store.getForeign(door, key)?.status as { conditions?: Condition[] } | undefined;
  return status?.conditions?.find((c) => c.type === 'Ready');
}

describe('front doors whose translation reads other objects (kubizone)', () => {
  test('a Record waits for its Zone, and goes when the delegation is withdrawn', async () => {
    const { store, table, controller } = setup();
    controller.start();
    store.applyForeign(RECORD, kzRecord('web', 'www', 'www.example.org.', '192.0.2.1'), stamp(1));
    await controller.idle();
    assert.equal(ready(store, RECORD, 'web/www')?.reason, 'NoZone');
    store.applyForeign(
      ZONE,
      kzZone('dns', 'example-org', 'example.org.', [{ records: [{ pattern: '*' }] }]),
      stamp(2),
    );
    await controller.idle();
    assert.deepEqual(served(table, 'example.org.', 'www.example.org.'), ['192.0.2.1']);
    assert.equal(ready(store, RECORD, 'web/www')?.status, 'True');
    assert.equal(
      store.getForeign(RECORD, 'web/www')?.metadata.labels?.[PARENT_ZONE_LABEL],
      'example-org.dns',
    );
    // The zone owner narrows the delegation to its own namespace: the web Record is withdrawn.
    store.applyForeign(
      ZONE,
      kzZone('dns', 'example-org', 'example.org.', [{ namespaces: ['dns'], records: [{ pattern: '*' }] }]),
      stamp(2),
      2,
    );
    await controller.idle();
    assert.equal(served(table, 'example.org.', 'www.example.org.'), undefined);
    assert.equal(ready(store, RECORD, 'web/www')?.reason, 'NotDelegated');
    assert.equal(store.getForeign(RECORD, 'web/www')?.metadata.labels?.[PARENT_ZONE_LABEL], undefined);
  });

  test('a Record refused before the store starts gets its status at start, with no other change', async () => {
    const store = new MemoryStore(now);
    store.apply(zoneClass());
    store.applyForeign(RECORD, kzRecord('web', 'www', 'www.example.org.', '192.0.2.1'), stamp(1));
    const translated = new FrontDoorStore({ base: store, doors, now });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(ready(store, RECORD, 'web/www')?.reason, 'NoZone');
    translated.close();
  });

  test('a conflict lost to another translated object names it as its own API does', async () => {
    const { store, controller } = setup();
    controller.start();
    store.applyForeign(
      ZONE,
      kzZone('dns', 'example-org', 'example.org.', [{ records: [{ pattern: '*' }] }]),
      stamp(1),
    );
    store.applyForeign(RECORD, kzRecord('web', 'first', 'www.example.org.', '192.0.2.1'), stamp(2));
    store.applyForeign(RECORD, kzRecord('other', 'second', 'www.example.org.', '192.0.2.2'), stamp(3));
    await controller.idle();
    const lost = ready(store, RECORD, 'other/second');
    assert.equal(lost?.reason, 'Conflict');
    assert.match(lost!.message, /already published by Record web\/first \(kubi\.zone\), which is older/);
    controller.stop();
  });

  test('without a default class a Zone says so; a class created later serves it', async () => {
    const { store, table, controller } = setup(false);
    controller.start();
    store.applyForeign(ZONE, kzZone('dns', 'example-org', 'example.org.', []), stamp(1));
    await controller.idle();
    assert.equal(ready(store, ZONE, 'dns/example-org')?.reason, 'NoDefaultClass');
    store.apply(zoneClass());
    await controller.idle();
    assert.ok(table.get('example.org.'));
    assert.equal(ready(store, ZONE, 'dns/example-org')?.status, 'True');
  });

  test('hostile tenant: an older Zone renamed onto a served domain does not take it, before or after a restart', async () => {
    // Regression: a translated zone's standing as the served one lived only in the operator's memory,
    // so after a restart (or in a new server replica) the older object, renamed onto the domain,
    // was judged first and took the zone.
    const { store, table, controller } = setup();
    controller.start();
    store.applyForeign(ZONE, kzZone('evil', 'early', 'placeholder.example.net.', []), stamp(1));
    store.applyForeign(
      ZONE,
      kzZone('team-a', 'victim', 'victim.example.org.', [{ records: [{ pattern: '*' }] }]),
      stamp(2),
    );
    store.applyForeign(RECORD, kzRecord('team-a', 'www', 'www.victim.example.org.', '192.0.2.1'), stamp(3));
    await controller.idle();
    assert.deepEqual(served(table, 'victim.example.org.', 'www.victim.example.org.'), ['192.0.2.1']);
    store.applyForeign(ZONE, kzZone('evil', 'early', 'victim.example.org.', []), stamp(1));
    await controller.idle();
    assert.equal(ready(store, ZONE, 'team-a/victim')?.status, 'True');
    assert.notEqual(ready(store, ZONE, 'evil/early')?.status, 'True');
    // Its Records stay with the served Zone (they went to the older one, and were refused there).
    assert.deepEqual(served(table, 'victim.example.org.', 'www.victim.example.org.'), ['192.0.2.1']);
    // A younger Zone for the domain in a namespace named to sort first takes nothing either.
    store.applyForeign(ZONE, kzZone('aaa', 'aaa', 'victim.example.org.', []), stamp(9));
    await controller.idle();
    assert.deepEqual(served(table, 'victim.example.org.', 'www.victim.example.org.'), ['192.0.2.1']);
    assert.notEqual(ready(store, ZONE, 'aaa/aaa')?.status, 'True');
    controller.stop();

    // A restart: a new translating store and controller over the same objects and statuses.
    const { table: table2, controller: restarted } = controllerOver(store);
    restarted.start();
    await restarted.idle();
    assert.deepEqual(served(table2, 'victim.example.org.', 'www.victim.example.org.'), ['192.0.2.1']);
    assert.equal(ready(store, ZONE, 'team-a/victim')?.status, 'True');
    assert.notEqual(ready(store, ZONE, 'evil/early')?.status, 'True');
    // The victim's content held (Ready=False, ChangeHeld: a tenant with records in it can cause
    // that) when the operator restarts again: it was accepted, and keeps its domain.
    restarted.stop();
    const held = store.getForeign(ZONE, 'team-a/victim')!.status as { conditions: Condition[] };
    assert.equal(held.conditions.find((c) => c.type === 'Accepted')?.status, 'True');
    await store.updateForeignStatus(ZONE, 'team-a/victim', {
      ...held,
      conditions: held.conditions.map((c) =>
        c.type === 'Ready' ? { ...c, status: 'False', reason: 'ChangeHeld', message: 'held' } : c,
      ),
    });
    const { table: table3, controller: again } = controllerOver(store);
    again.start();
    await again.idle();
    assert.deepEqual(served(table3, 'victim.example.org.', 'www.victim.example.org.'), ['192.0.2.1']);
    assert.notEqual(ready(store, ZONE, 'evil/early')?.status, 'True');
    again.stop();
    // A read-only replica's first look sees the same.
    const replica = new FrontDoorStore({ base: store, doors, now, readOnly: true });
    const zones = replica.list('DNSZone') as DNSZone[];
    const victim = zones.find((z) => z.metadata.namespace === 'team-a');
    const evil = zones.find((z) => z.metadata.namespace === 'evil');
    assert.equal(victim?.status?.conditions?.find((c) => c.type === 'Accepted')?.status, 'True');
    assert.equal(
      evil?.status?.conditions?.find((c) => c.type === 'Accepted'),
      undefined,
    );
    replica.close();
  });

  test('a read-only replica learns the serial and hash of a translated zone from the Zone status', async () => {
    const { store, controller } = setup();
    controller.start();
    store.applyForeign(
      ZONE,
      kzZone('dns', 'example-org', 'example.org.', [{ records: [{ pattern: '*' }] }]),
      stamp(1),
    );
    await controller.idle();
    const replica = new FrontDoorStore({ base: store, doors, now, readOnly: true });
    const zones = replica.list('DNSZone') as DNSZone[];
    const status = store.getForeign(ZONE, 'dns/example-org')?.status as { serial?: number; hash?: string };
    assert.ok(status.serial !== undefined && status.hash);
    assert.equal(zones.length, 1);
    assert.equal(zones[0]!.status?.serial, status.serial);
    assert.equal(zones[0]!.status?.hash, status.hash);
    replica.close();
  });
});
