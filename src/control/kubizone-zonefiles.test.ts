/**
 * kubizone's ZoneFile through the controller, the translating store and an in-memory ConfigMap store
 * (the same port the operator implements over the Kubernetes API; test/kubizone-zonefile-kubernetes
 * runs it on a real API server): zone files of the zones as served, updated on a change, and what a
 * tenant must not be able to do with a ZoneFile.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { stamp, zoneClass } from '../../test/support/resources.ts';
import { type ForeignObject, FrontDoors } from '../api/frontdoors/index.ts';
import {
  KUBIZONE_FRONT_DOORS,
  MAX_CONFIGMAP_DATA_BYTES,
  planZoneFile,
  type ZoneFileObject,
  type ZoneFileStatus,
} from '../api/frontdoors/kubizone/index.ts';
import type { Condition, DNSZone } from '../api/index.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { Controller } from './controller.ts';
import { FrontDoorStore } from './front-door-store.ts';
import {
  type ConfigMapPort,
  ZONEFILE_DOOR,
  type ZoneFileConfigMap,
  ZoneFileController,
} from './kubizone-zonefiles.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';

const ZONE = 'Zone.kubi.zone';
const RECORD = 'Record.kubi.zone';
const now = () => new Date('2026-11-21T12:00:00Z');

/** ConfigMaps in memory, with the API server's create and conditional replace. */
class MemoryConfigMaps implements ConfigMapPort {
  readonly maps = new Map<string, ZoneFileConfigMap>();
  writes = 0;
  private version = 0;

  async read(namespace: string, name: string): Promise<ZoneFileConfigMap | undefined> {
    const cm = this.maps.get(`${namespace}/${name}`);
    return cm ? structuredClone(cm) : undefined;
  }

  /** The next writes that fail, as the API server refuses them (a webhook, a quota). */
  failing = 0;

  async create(namespace: string, cm: ZoneFileConfigMap): Promise<void> {
    if (this.failing > 0 && this.failing--) throw new Error('403 Forbidden: exceeded quota');
    if (this.maps.has(`${namespace}/${cm.name}`)) throw new Error('409 AlreadyExists');
    this.put(namespace, cm);
  }

  async replace(namespace: string, cm: ZoneFileConfigMap): Promise<void> {
    const current = this.maps.get(`${namespace}/${cm.name}`);
    if (!current || current.resourceVersion !== cm.resourceVersion) throw new Error('409 Conflict');
    this.put(namespace, cm);
  }

  put(namespace: string, cm: ZoneFileConfigMap): void {
    this.writes++;
    this.maps.set(`${namespace}/${cm.name}`, {
      ...structuredClone(cm),
      resourceVersion: String(++this.version),
    });
  }
}

function kzZone(namespace: string, name: string, domainName: string): ForeignObject {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Zone',
    metadata: { name, namespace },
    spec: { domainName, delegations: [{ namespaces: [namespace], records: [{ pattern: '*' }] }] },
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

function zoneFile(
  namespace: string,
  name: string,
  zoneRefs: { name: string; namespace?: string }[],
  configMapName?: string,
): ForeignObject {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'ZoneFile',
    metadata: { name, namespace },
    spec: { zoneRefs, ...(configMapName ? { configMapName } : {}) },
  };
}

function setup(options: { native?: (get: FrontDoorStore['get']) => FrontDoorStore['get'] } = {}) {
  const store = new MemoryStore(now);
  store.apply(zoneClass());
  const translated = new FrontDoorStore({ base: store, doors: new FrontDoors(KUBIZONE_FRONT_DOORS), now });
  const controller = new Controller({
    store: translated,
    backend: new BuiltinBackend(new ZoneTable()),
    serials: new MemorySerialStore(),
    // As the operator runs it: the content hash is saved with each serial.
    hashOnChange: true,
    now,
  });
  const configMaps = new MemoryConfigMaps();
  const get = translated.get.bind(translated);
  const zoneFiles = new ZoneFileController({
    store,
    native: { get: options.native ? options.native(get) : get },
    catalog: controller.catalog,
    configMaps,
    now,
  });
  controller.start();
  zoneFiles.start();
  const idle = async () => {
    for (let i = 0; i < 5; i++) {
      await controller.idle();
      await zoneFiles.idle();
    }
  };
  return { store, translated, configMaps, idle, zoneFiles, controller };
}

function status(store: MemoryStore, key: string): ZoneFileStatus | undefined {
  return store.getForeign(ZONEFILE_DOOR, key)?.status as ZoneFileStatus | undefined;
}

function ready(store: MemoryStore, key: string): Condition | undefined {
  return status(store, key)?.conditions?.find((c) => c.type === 'Ready');
}

describe('kubizone ZoneFile', () => {
  test('renders each Zone as served into an owned ConfigMap; status maps origin to hash and serial', async () => {
    const { store, translated, configMaps, idle, zoneFiles, controller } = setup();
    store.applyForeign(ZONE, kzZone('dns', 'example-org', 'example.org.'), stamp(1));
    store.applyForeign(RECORD, kzRecord('dns', 'www', 'www.example.org.', '192.0.2.1'), stamp(2));
    store.applyForeign(ZONEFILE_DOOR, zoneFile('dns', 'example', [{ name: 'example-org' }]), stamp(3));
    await idle();
    const cm = configMaps.maps.get('dns/example');
    assert.ok(cm, 'the ConfigMap is created, named after the ZoneFile');
    const zf = store.getForeign(ZONEFILE_DOOR, 'dns/example')!;
    assert.deepEqual(cm.ownerReferences, [
      {
        apiVersion: 'kubi.zone/v1alpha1',
        kind: 'ZoneFile',
        name: 'example',
        uid: zf.metadata.uid,
        controller: true,
      },
    ]);
    assert.deepEqual(Object.keys(cm.data), ['example.org.']);
    const text = cm.data['example.org.']!;
    const native = translated.get('DNSZone', 'dns/zones.kubi.zone:example-org') as DNSZone;
    const serial = native.status!.serial!;
    assert.match(text, /^\$ORIGIN example\.org\.$/m);
    assert.match(text, new RegExp(`^example\\.org\\.\\t360\\tIN\\tSOA\\t\\S+ \\S+ ${serial} `, 'm'));
    assert.match(text, /^www\.example\.org\.\t360\tIN\tA\t192\.0\.2\.1$/m);
    assert.deepEqual(status(store, 'dns/example')?.serial, { 'example.org.': serial });
    assert.deepEqual(status(store, 'dns/example')?.hash, { 'example.org.': native.status!.hash });
    assert.equal(ready(store, 'dns/example')?.status, 'True');

    // A Record changes: the zone file follows with the new serial.
    store.applyForeign(RECORD, kzRecord('dns', 'www', 'www.example.org.', '192.0.2.9'), stamp(2));
    await idle();
    const after = configMaps.maps.get('dns/example')!.data['example.org.']!;
    assert.match(after, /^www\.example\.org\.\t360\tIN\tA\t192\.0\.2\.9$/m);
    const serial2 = (translated.get('DNSZone', 'dns/zones.kubi.zone:example-org') as DNSZone).status!.serial!;
    assert.ok(serial2 > serial);
    assert.deepEqual(status(store, 'dns/example')?.serial, { 'example.org.': serial2 });

    // Nothing changed: nothing is written.
    const writes = configMaps.writes;
    store.applyForeign(ZONEFILE_DOOR, {
      ...zoneFile('dns', 'example', [{ name: 'example-org' }]),
      metadata: { name: 'example', namespace: 'dns', labels: { a: 'b' } },
    });
    await idle();
    assert.equal(configMaps.writes, writes);
    zoneFiles.stop();
    controller.stop();
  });

  test('hostile: a ConfigMap that exists without the ownerReference is never written', async () => {
    const { store, configMaps, idle, zoneFiles, controller } = setup();
    configMaps.put('dns', { name: 'app-config', data: { 'settings.yaml': 'mine' } });
    const writes = configMaps.writes;
    store.applyForeign(ZONE, kzZone('dns', 'example-org', 'example.org.'), stamp(1));
    store.applyForeign(
      ZONEFILE_DOOR,
      zoneFile('dns', 'steal', [{ name: 'example-org' }], 'app-config'),
      stamp(2),
    );
    await idle();
    assert.deepEqual(configMaps.maps.get('dns/app-config')?.data, { 'settings.yaml': 'mine' });
    assert.equal(configMaps.writes, writes);
    assert.equal(ready(store, 'dns/steal')?.reason, 'ConfigMapNotOwned');
    assert.deepEqual(status(store, 'dns/steal')?.serial, {});
    // Another ZoneFile's ConfigMap is not this one's either.
    store.applyForeign(ZONEFILE_DOOR, zoneFile('dns', 'first', [{ name: 'example-org' }], 'zones'), stamp(3));
    await idle();
    const owned = structuredClone(configMaps.maps.get('dns/zones'));
    store.applyForeign(ZONEFILE_DOOR, zoneFile('dns', 'second', [], 'zones'), stamp(4));
    await idle();
    assert.deepEqual(configMaps.maps.get('dns/zones'), owned);
    assert.equal(ready(store, 'dns/second')?.reason, 'ConfigMapNotOwned');
    assert.equal(ready(store, 'dns/first')?.status, 'True');
    zoneFiles.stop();
    controller.stop();
  });

  test('hostile: a Zone of another namespace is not rendered', async () => {
    const { store, configMaps, idle, zoneFiles, controller } = setup();
    store.applyForeign(ZONE, kzZone('secret', 'internal', 'internal.example.'), stamp(1));
    store.applyForeign(RECORD, kzRecord('secret', 'db', 'db.internal.example.', '10.0.0.1'), stamp(2));
    store.applyForeign(
      ZONEFILE_DOOR,
      zoneFile('tenant', 'peek', [{ name: 'internal', namespace: 'secret' }]),
      stamp(3),
    );
    await idle();
    assert.deepEqual(configMaps.maps.get('tenant/peek')?.data, {});
    assert.equal(ready(store, 'tenant/peek')?.reason, 'ZoneRefOutsideNamespace');
    assert.match(ready(store, 'tenant/peek')!.message, /own namespace \(tenant\)/);
    zoneFiles.stop();
    controller.stop();
  });

  test('a zone whose newest content is not served yet keeps its last zone file and is not Ready', async () => {
    let lag = false;
    const { store, configMaps, idle, zoneFiles, controller } = setup({
      // The native status as it is between a change and its serial: the hash of the content before.
      native: (get) => (kind, key) => {
        const o = get(kind, key) as DNSZone | undefined;
        return lag && o?.status
          ? ({ ...o, status: { ...o.status, hash: 'an-older-content' } } as DNSZone)
          : o;
      },
    });
    store.applyForeign(ZONE, kzZone('dns', 'example-org', 'example.org.'), stamp(1));
    store.applyForeign(RECORD, kzRecord('dns', 'www', 'www.example.org.', '192.0.2.1'), stamp(2));
    store.applyForeign(ZONEFILE_DOOR, zoneFile('dns', 'example', [{ name: 'example-org' }]), stamp(3));
    await idle();
    const before = structuredClone(configMaps.maps.get('dns/example'));
    const statusBefore = status(store, 'dns/example');
    lag = true;
    store.applyForeign(RECORD, kzRecord('dns', 'www', 'www.example.org.', '192.0.2.9'), stamp(2));
    await idle();
    assert.deepEqual(configMaps.maps.get('dns/example'), before);
    assert.equal(ready(store, 'dns/example')?.reason, 'Pending');
    assert.deepEqual(status(store, 'dns/example')?.serial, statusBefore?.serial);
    zoneFiles.stop();
    controller.stop();
  });

  test('a missing Zone says so; the ZoneFile is Ready once it exists', async () => {
    const { store, configMaps, idle, zoneFiles, controller } = setup();
    store.applyForeign(ZONEFILE_DOOR, zoneFile('dns', 'example', [{ name: 'example-org' }]), stamp(1));
    await idle();
    assert.equal(ready(store, 'dns/example')?.reason, 'ZoneNotFound');
    store.applyForeign(ZONE, kzZone('dns', 'example-org', 'example.org.'), stamp(2));
    await idle();
    assert.equal(ready(store, 'dns/example')?.status, 'True');
    assert.deepEqual(Object.keys(configMaps.maps.get('dns/example')!.data), ['example.org.']);
    zoneFiles.stop();
    controller.stop();
  });

  test('a write the API server refuses is said in the status and retried', async () => {
    const { store, configMaps, idle, zoneFiles, controller } = setup();
    configMaps.failing = 1;
    const said: string[] = [];
    store.watchForeign((e) => {
      const c = (e.object.status as ZoneFileStatus | undefined)?.conditions?.[0];
      if (e.door === ZONEFILE_DOOR && c) said.push(`${c.reason}: ${c.message}`);
    });
    store.applyForeign(ZONE, kzZone('dns', 'example-org', 'example.org.'), stamp(1));
    store.applyForeign(ZONEFILE_DOOR, zoneFile('dns', 'example', [{ name: 'example-org' }]), stamp(2));
    await idle();
    await new Promise((r) => setTimeout(r, 200)); // the retry's backoff
    await idle();
    assert.deepEqual(Object.keys(configMaps.maps.get('dns/example')?.data ?? {}), ['example.org.']);
    assert.equal(ready(store, 'dns/example')?.status, 'True');
    assert.ok(
      said.some((m) => /^ConfigMapWriteFailed: .*exceeded quota; retrying$/.test(m)),
      said.join('\n'),
    );
    zoneFiles.stop();
    controller.stop();
  });

  test('zone files larger than a ConfigMap holds are not written; the status says how to split them', () => {
    const zf = {
      ...zoneFile('dns', 'big', [{ name: 'a' }, { name: 'b' }]),
      metadata: { name: 'big', namespace: 'dns', uid: 'u', generation: 3 },
      status: { hash: { 'a.example.': 'h' }, serial: { 'a.example.': 7 } },
    } as unknown as ZoneFileObject;
    const half = 'x'.repeat(MAX_CONFIGMAP_DATA_BYTES / 2);
    const plan = planZoneFile({
      zoneFile: zf,
      zones: [
        { state: 'ready', origin: 'a.example.', serial: 8, hash: 'h2', text: half },
        { state: 'ready', origin: 'b.example.', serial: 1, hash: 'h3', text: half },
      ],
      current: { 'a.example.': 'old' },
      now: '2026-11-21T12:00:00Z',
    });
    assert.equal(plan.write, false);
    const condition = plan.status.conditions?.[0];
    assert.equal(condition?.reason, 'ConfigMapTooLarge');
    assert.equal(condition?.observedGeneration, 3);
    assert.match(condition!.message, /several ZoneFiles/);
    assert.deepEqual(plan.status.serial, { 'a.example.': 7 }, 'the status keeps what the ConfigMap holds');
  });
});
