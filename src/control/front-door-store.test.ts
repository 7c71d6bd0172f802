import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hostname, hostnameFrontDoor } from '../../test/support/hostname-front-door.ts';
import { recordSet, stamp, zone, zoneClass } from '../../test/support/resources.ts';
import { frontDoorCrd } from '../api/crds.ts';
import { type ForeignObject, FrontDoors, validateAny } from '../api/frontdoors/index.ts';
import type { Condition, DNSRecordSet } from '../api/index.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { resourceKey } from '../zones/resource-key.ts';
import { Controller } from './controller.ts';
import { FrontDoorStore, mergeRecordSets } from './front-door-store.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';

const DOOR = 'Hostname.example.test';
const FINALIZER = 'example.test/hostname';
const now = () => new Date('2026-11-21T12:00:00Z');
const doors = new FrontDoors([hostnameFrontDoor]);

function setup() {
  const store = new MemoryStore(now);
  const table = new ZoneTable();
  const translated = new FrontDoorStore({ base: store, doors, now });
  const controller = new Controller({
    store: translated,
    backend: new BuiltinBackend(table),
    serials: new MemorySerialStore(),
    now,
  });
  store.apply(zoneClass());
  store.apply(zone('dns', 'example-com', 'example.com'));
  return { store, table, translated, controller };
}

function add(store: MemoryStore, object: ForeignObject, age: number): void {
  store.applyForeign(DOOR, object, stamp(age));
}

function served(table: ZoneTable, owner: string): string[] | undefined {
  const node = table.get('example.com.')?.nodes.get(owner);
  const rrset = node ? [...node.rrsets.values()][0] : undefined;
  return rrset?.rdata.map((r) => (r as { address: string }).address);
}

function published(store: MemoryStore, key: string): Condition | undefined {
  const status = store.getForeign(DOOR, key)?.status as { conditions?: Condition[] } | undefined;
  return status?.conditions?.find((c) => c.type === 'Published');
}

describe('front doors: a foreign kind through the translating store', () => {
  test('an object maps to a served RRset; status and finalizer go to the foreign object in its shape', async () => {
    const { store, table, translated, controller } = setup();
    add(
      store,
      hostname('dns', 'web', { hostname: 'www.example.com', addresses: ['192.0.2.1', '192.0.2.2'] }),
      1,
    );
    controller.start();
    await controller.idle();
    assert.deepEqual(served(table, 'www.example.com.'), ['192.0.2.1', '192.0.2.2']);
    const object = store.getForeign(DOOR, 'dns/web')!;
    assert.deepEqual(object.metadata.finalizers, [FINALIZER]);
    const status = object.status as { fqdn?: string; observedGeneration?: number; conditions: Condition[] };
    assert.equal(status.fqdn, 'www.example.com.');
    assert.equal(status.observedGeneration, 1);
    assert.deepEqual(
      status.conditions.map((c) => [c.type, c.status, c.reason, c.observedGeneration]),
      [['Published', 'True', 'Published', 1]],
    );
    // No native object was written to the source: the translated one lives in the translating store.
    assert.equal(store.list('DNSRecordSet').length, 0);
    assert.equal(translated.list('DNSRecordSet').length, 1);
    // A change bumps the foreign generation; the status follows it.
    add(store, hostname('dns', 'web', { hostname: 'www.example.com', addresses: ['192.0.2.9'] }), 1);
    await controller.idle();
    assert.deepEqual(served(table, 'www.example.com.'), ['192.0.2.9']);
    assert.equal(published(store, 'dns/web')?.observedGeneration, 2);
    // Nothing changed: no status write.
    const rv = store.getForeign(DOOR, 'dns/web')!.metadata.resourceVersion;
    controller.recheckZone('dns/example-com');
    await controller.idle();
    assert.equal(store.getForeign(DOOR, 'dns/web')!.metadata.resourceVersion, rv);
    controller.stop();
  });

  test('updateStatusWith on a translated object plans on its status and projects the result', async () => {
    const { store, translated, controller } = setup();
    add(store, hostname('dns', 'web', { hostname: 'www.example.com', addresses: ['192.0.2.1'] }), 1);
    controller.start();
    await controller.idle();
    const [object] = translated.list('DNSRecordSet');
    const key = resourceKey(object!.metadata);
    const before = object!.status;
    let seen: unknown;
    const written = await translated.updateStatusWith('DNSRecordSet', key, (status) => {
      seen = status;
      return { ...status, fqdn: 'other.example.com.' };
    });
    assert.deepEqual(seen, before);
    assert.equal((written as { fqdn?: string }).fqdn, 'other.example.com.');
    assert.equal(
      (translated.get('DNSRecordSet', key)?.status as { fqdn?: string } | undefined)?.fqdn,
      'other.example.com.',
    );
    assert.equal(
      (store.getForeign(DOOR, 'dns/web')?.status as { fqdn?: string } | undefined)?.fqdn,
      'other.example.com.',
    );
    const rv = translated.get('DNSRecordSet', key)?.metadata.resourceVersion;
    assert.equal(await translated.updateStatusWith('DNSRecordSet', key, (s) => ({ ...s })), undefined);
    assert.equal(translated.get('DNSRecordSet', key)?.metadata.resourceVersion, rv, 'nothing written');
    controller.stop();
  });

  test('forEachKeyed visits what list returns, translated objects included, each with its key', async () => {
    const { store, translated, controller } = setup();
    store.apply(
      recordSet('dns', 'native', {
        zoneRef: { name: 'example-com' },
        name: 'n',
        type: 'A',
        records: ['192.0.2.7'],
      }),
    );
    add(store, hostname('dns', 'web', { hostname: 'www.example.com', addresses: ['192.0.2.1'] }), 1);
    controller.start();
    await controller.idle();
    for (const kind of ['DNSZoneClass', 'DNSZone', 'DNSRecordSet'] as const) {
      const visited: [string, unknown][] = [];
      translated.forEachKeyed(kind, (object, key) => visited.push([key, object]));
      assert.deepEqual(
        visited,
        translated.list(kind).map((o) => [resourceKey(o.metadata), o]),
        kind,
      );
    }
    assert.equal(translated.list('DNSRecordSet').length, 2, 'the native record set and the translated one');
    controller.stop();
  });

  test('objects of one namespace with one hostname merge: records united, the oldest owns the TTL', async () => {
    const { store, table, controller } = setup();
    add(store, hostname('dns', 'a', { hostname: 'www.example.com', addresses: ['192.0.2.1'], ttl: 60 }), 1);
    add(
      store,
      hostname('dns', 'b', { hostname: 'WWW.example.com.', addresses: ['192.0.2.2', '192.0.2.1'], ttl: 999 }),
      2,
    );
    controller.start();
    await controller.idle();
    assert.deepEqual(served(table, 'www.example.com.'), ['192.0.2.1', '192.0.2.2']);
    const node = table.get('example.com.')!.nodes.get('www.example.com.')!;
    assert.equal([...node.rrsets.values()][0]!.ttl, 60);
    for (const key of ['dns/a', 'dns/b']) {
      assert.equal(published(store, key)?.status, 'True', key);
      assert.deepEqual((store.getForeign(DOOR, key)!.status as { mergedWith: string[] }).mergedWith, [
        'dns/a',
        'dns/b',
      ]);
    }
    // The oldest goes: its addresses leave once the RRset without them is served, then its finalizer.
    store.removeForeign(DOOR, 'dns/a');
    assert.ok(store.getForeign(DOOR, 'dns/a')?.metadata.deletionTimestamp, 'held by its finalizer');
    await controller.idle();
    assert.equal(store.getForeign(DOOR, 'dns/a'), undefined, 'released once served without it');
    assert.deepEqual(served(table, 'www.example.com.'), ['192.0.2.2', '192.0.2.1']);
    assert.equal(
      table.get('example.com.')!.nodes.get('www.example.com.')!.rrsets.values().next().value!.ttl,
      999,
    );
    // The last goes: the RRset goes, then the object.
    store.removeForeign(DOOR, 'dns/b');
    await controller.idle();
    assert.equal(store.getForeign(DOOR, 'dns/b'), undefined);
    assert.equal(served(table, 'www.example.com.'), undefined);
    controller.stop();
  });

  test('hostile tenant: no publishing outside its namespace delegations', async () => {
    const { store, table, controller } = setup();
    add(store, hostname('team-b', 'grab', { hostname: 'mail.example.com', addresses: ['198.51.100.1'] }), 1);
    controller.start();
    await controller.idle();
    assert.equal(served(table, 'mail.example.com.'), undefined);
    const c = published(store, 'team-b/grab');
    assert.equal(c?.status, 'False');
    assert.equal(c?.reason, 'NotDelegated');
    // The zone delegates `*.apps` to team-b: names there are admitted, others still not.
    store.apply(
      zone('dns', 'example-com', 'example.com', {
        delegations: [{ namespaces: ['team-b'], names: ['*.apps'] }],
      }),
    );
    add(store, hostname('team-b', 'app', { hostname: 'x.apps.example.com', addresses: ['198.51.100.2'] }), 2);
    await controller.idle();
    assert.deepEqual(served(table, 'x.apps.example.com.'), ['198.51.100.2']);
    assert.equal(published(store, 'team-b/app')?.status, 'True');
    assert.equal(published(store, 'team-b/grab')?.reason, 'NotDelegated');
    controller.stop();
  });

  test('hostile tenant: an object of another namespace never merges into an RRset; it conflicts', async () => {
    const { store, table, controller } = setup();
    store.apply(zone('dns', 'example-com', 'example.com', { delegations: [{ namespaces: ['team-b'] }] }));
    add(store, hostname('dns', 'own', { hostname: 'www.example.com', addresses: ['192.0.2.1'] }), 1);
    add(store, hostname('team-b', 'join', { hostname: 'www.example.com', addresses: ['198.51.100.66'] }), 2);
    controller.start();
    await controller.idle();
    assert.deepEqual(served(table, 'www.example.com.'), ['192.0.2.1']);
    assert.equal(published(store, 'dns/own')?.status, 'True');
    const c = published(store, 'team-b/join');
    assert.equal(c?.status, 'False');
    assert.equal(c?.reason, 'Conflict');
    assert.equal(
      (store.getForeign(DOOR, 'dns/own')!.status as { mergedWith?: string[] }).mergedWith,
      undefined,
    );
    controller.stop();
  });

  test('translated and native objects meet the same conflict rule: the older wins', async () => {
    const { store, table, controller } = setup();
    store.apply(
      recordSet('dns', 'native-www', { name: 'www.example.com.', type: 'A', records: ['192.0.2.50'] }),
      stamp(0),
    );
    add(store, hostname('dns', 'late', { hostname: 'www.example.com', addresses: ['192.0.2.1'] }), 5);
    controller.start();
    await controller.idle();
    assert.deepEqual(served(table, 'www.example.com.'), ['192.0.2.50']);
    assert.equal(published(store, 'dns/late')?.reason, 'Conflict');
    const native = store.get('DNSRecordSet', 'dns/native-www') as DNSRecordSet;
    assert.equal(native.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    controller.stop();
  });

  test('admission: the door own rules, codes and paths; its transition rule', () => {
    const bad = validateAny(
      {
        ...hostname('dns', 'x', {
          hostname: 'a.example.com',
          addresses: ['2001:db8::1', '192.0.2.1', '192.0.2.1'],
        }),
      },
      doors,
    );
    assert.equal(bad.ok, false);
    assert.deepEqual(!bad.ok && bad.problems.map((p) => [p.path, p.code]), [
      ['spec.addresses[0]', 'AddressNotIPv4'],
      ['spec.addresses[2]', 'AddressRepeated'],
    ]);
    const old = hostname('dns', 'x', { hostname: 'a.example.com', addresses: ['192.0.2.1'] });
    const moved = validateAny(
      hostname('dns', 'x', { hostname: 'b.example.com', addresses: ['192.0.2.1'] }),
      doors,
      old,
    );
    assert.equal(moved.ok, false);
    assert.equal(!moved.ok && moved.problems[0]?.code, 'HostnameImmutable');
    const wrongVersion = validateAny({ ...old, apiVersion: 'example.test/v2' }, doors);
    assert.equal(!wrongVersion.ok && wrongVersion.problems[0]?.code, 'API_VERSION');
    const ok = validateAny(old, doors);
    assert.ok(ok.ok && ok.door === hostnameFrontDoor);
    // Native kinds are validated as before.
    assert.equal(validateAny(zone('dns', 'z', 'example.org'), doors).ok, true);
  });

  test('status projection: native conditions in the door shape, generations translated', () => {
    const object = { ...hostname('dns', 'x', { hostname: 'a.example.com', addresses: ['192.0.2.1'] }) };
    object.metadata = { ...object.metadata, generation: 4 };
    const status = hostnameFrontDoor.project({
      object,
      outputs: [
        {
          kind: 'DNSRecordSet',
          key: 'a.example.com.',
          namespace: 'dns',
          name: 'hostnames.example.test:=a.example.com.',
          status: {
            observedGeneration: 4,
            fqdn: 'a.example.com.',
            conditions: [
              {
                type: 'Accepted',
                status: 'False',
                reason: 'NotDelegated',
                message: 'no',
                lastTransitionTime: 't',
                observedGeneration: 4,
              },
              {
                type: 'Ready',
                status: 'False',
                reason: 'NotDelegated',
                message: 'no',
                lastTransitionTime: 't',
                observedGeneration: 4,
              },
            ],
          },
        },
      ],
      now: '2026-01-01T00:00:00.000Z',
    });
    assert.deepEqual(status.conditions, [
      {
        type: 'Published',
        status: 'False',
        reason: 'NotDelegated',
        message: 'no',
        observedGeneration: 4,
        lastTransitionTime: '2026-01-01T00:00:00.000Z',
      },
    ]);
    // Unchanged state keeps its transition time.
    const again = hostnameFrontDoor.project({
      object: { ...object, status },
      outputs: [],
      now: '2027-01-01T00:00:00.000Z',
    });
    assert.equal(again.conditions?.[0]?.reason, 'Pending');
  });

  test('merge: oldest first, records united without duplicates', () => {
    const spec = (records: string[], ttl?: number) => ({
      kind: 'DNSRecordSet' as const,
      key: 'k',
      spec: { name: 'a.example.com.', type: 'A' as const, records, ...(ttl ? { ttl } : {}) },
    });
    assert.deepEqual(mergeRecordSets([spec(['192.0.2.1'], 5), spec(['192.0.2.2', '192.0.2.1'], 9)]), {
      name: 'a.example.com.',
      type: 'A',
      records: ['192.0.2.1', '192.0.2.2'],
      ttl: 5,
    });
  });

  test('the CRD is generated like the native ones, with its group, names, scope and rules', () => {
    const crd = frontDoorCrd(hostnameFrontDoor) as {
      metadata: { name: string };
      spec: {
        group: string;
        scope: string;
        names: { kind: string; plural: string };
        versions: {
          name: string;
          subresources: unknown;
          schema: {
            openAPIV3Schema: { properties: { spec: { properties: { hostname: Record<string, unknown> } } } };
          };
        }[];
      };
    };
    assert.equal(crd.metadata.name, 'hostnames.example.test');
    assert.equal(crd.spec.group, 'example.test');
    assert.equal(crd.spec.scope, 'Namespaced');
    assert.deepEqual(crd.spec.names.kind, 'Hostname');
    assert.equal(crd.spec.versions[0]!.name, 'v1');
    assert.deepEqual(crd.spec.versions[0]!.subresources, { status: {} });
    const hostnameField = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.hostname;
    assert.deepEqual(hostnameField['x-kubernetes-validations'], [
      { rule: 'self == oldSelf', message: 'hostname is immutable' },
    ]);
  });

  test('registration refuses a door twice and Zonekeeper own group', () => {
    assert.throws(() => new FrontDoors([hostnameFrontDoor, hostnameFrontDoor]), /registered twice/);
    assert.throws(() => new FrontDoors([{ ...hostnameFrontDoor, group: 'dns.zonekeeper.dev' }]), /own/);
  });
});
