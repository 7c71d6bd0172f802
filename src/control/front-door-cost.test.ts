/**
 * What a change of a kubizone object costs in the translating store: a Record change translates that
 * Record and the Zones that adopted it before and after, never every Zone; a Zone change translates
 * the Records at or below it, never every Record. Counted in translations and adoptions, not time.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { stamp, zone, zoneClass } from '../../test/support/resources.ts';
import { translatedController } from '../../test/support/translated-controller.ts';
import { dnsEndpointFrontDoor } from '../api/frontdoors/externaldns/index.ts';
import { type ForeignObject, type FrontDoor, FrontDoors, frontDoorId } from '../api/frontdoors/index.ts';
import { adoptRecord, recordFrontDoor, zoneFrontDoor } from '../api/frontdoors/kubizone/index.ts';
import type { DNSZone } from '../api/index.ts';
import { FrontDoorStore, PROJECT_SOON_OVER, RESYNC_CONCURRENCY } from './front-door-store.ts';
import { MemoryStore } from './memory-store.ts';

const ZONE = 'Zone.kubi.zone';
const RECORD = 'Record.kubi.zone';
const ZONES = 20;
const PER_ZONE = 10;
const now = () => new Date('2026-11-21T12:00:00Z');

/**
 * The kubizone doors, each counting its translations and the objects translated (an object refused
 * gets its status written, and that write translates it, alone, once more).
 */
function counted() {
  const calls = { Zone: 0, Record: 0 };
  const objects = { Zone: new Set<string>(), Record: new Set<string>() };
  const wrap = (door: FrontDoor): FrontDoor => ({
    ...door,
    translate(object, context) {
      calls[door.kind as 'Zone' | 'Record']++;
      objects[door.kind as 'Zone' | 'Record'].add(`${object.metadata.namespace}/${object.metadata.name}`);
      return door.translate(object, context);
    },
  });
  return {
    calls,
    objects,
    doors: new FrontDoors([
      wrap(zoneFrontDoor as unknown as FrontDoor),
      wrap(recordFrontDoor as unknown as FrontDoor),
    ]),
  };
}

function kzZone(name: string, domainName: string, delegations: unknown[]): ForeignObject {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Zone',
    metadata: { name, namespace: 'dns' },
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

/** ZONES zones z<i>.example. admitting A records from every namespace, PER_ZONE Records in each. */
function populated(options: { coalesce?: boolean } = {}) {
  const store = new MemoryStore(now);
  store.apply(zoneClass());
  for (let z = 0; z < ZONES; z++)
    store.applyForeign(ZONE, kzZone(`z${z}`, `z${z}.example.`, [{ records: [{ pattern: '*' }] }]), stamp(z));
  for (let z = 0; z < ZONES; z++)
    for (let r = 0; r < PER_ZONE; r++)
      store.applyForeign(RECORD, kzRecord('web', `r${z}-${r}`, `h${r}.z${z}.example.`, `192.0.2.${r + 1}`));
  const { calls, objects, doors } = counted();
  const translated = new FrontDoorStore({ base: store, doors, now, ...options });
  calls.Zone = 0;
  calls.Record = 0;
  objects.Zone.clear();
  objects.Record.clear();
  adoptRecord.calls = 0;
  return { store, translated, calls, objects };
}

function delegatedNames(translated: FrontDoorStore, zone: string): string[] {
  const z = translated.get('DNSZone', `dns/zones.kubi.zone:${zone}`) as DNSZone | undefined;
  return (z?.spec.delegations ?? []).flatMap((d) => d.names ?? []).sort();
}

describe('kubizone: a change costs what it touches', () => {
  test('a Record change translates that Record and its Zone, not every Zone', () => {
    const { store, translated, calls } = populated();
    store.applyForeign(RECORD, kzRecord('web', 'r3-1', 'h1.z3.example.', '198.51.100.7'));
    assert.equal(calls.Record, 1);
    assert.equal(calls.Zone, 1, 'only the adopting Zone is translated again');
    assert.ok(adoptRecord.calls <= 2, `adoptions computed: ${adoptRecord.calls}`);
    translated.close();
  });

  test('a Record moving between Zones translates both, and both delegations follow', () => {
    const { store, translated, calls } = populated();
    assert.ok(delegatedNames(translated, 'z3').includes('h1'));
    store.applyForeign(RECORD, kzRecord('web', 'r3-1', 'moved.z4.example.', '198.51.100.7'));
    assert.equal(calls.Zone, 2);
    assert.ok(!delegatedNames(translated, 'z3').includes('h1'));
    assert.ok(delegatedNames(translated, 'z4').includes('moved'));
    // Deleted: the Zone that adopted it forgets it.
    store.removeForeign(RECORD, 'web/r3-1');
    assert.equal(calls.Zone, 3);
    assert.ok(!delegatedNames(translated, 'z4').includes('moved'));
    translated.close();
  });

  test('in a batch (a folder reload), many Record changes translate their Zone once, at its end', () => {
    const { store, translated, calls, objects } = populated();
    translated.batch(() => {
      for (let r = 0; r < 40; r++)
        store.applyForeign(RECORD, kzRecord('web', `new-${r}`, `n${r}.z3.example.`, '198.51.100.7'));
      store.applyForeign(RECORD, kzRecord('web', 'r4-1', 'moved.z5.example.', '198.51.100.8'));
      // Inside the batch the Zones are not translated again yet.
      assert.equal(calls.Zone, 0);
    });
    assert.equal(calls.Record, 41);
    // z3 (40 new Records), z4 (one left), z5 (one came): each once, and a Zone whose status changed
    // once more for that write (as outside a batch). Before, z3 was translated 40 times, each time
    // reading every Record: quadratic in the Records a reload brings.
    assert.deepEqual([...objects.Zone].sort(), ['dns/z3', 'dns/z4', 'dns/z5']);
    assert.ok(calls.Zone <= 6, `${calls.Zone} translations of Zones`);
    const z3 = delegatedNames(translated, 'z3');
    assert.ok(z3.includes('n0') && z3.includes('n39'));
    assert.ok(!delegatedNames(translated, 'z4').includes('h1'));
    assert.ok(delegatedNames(translated, 'z5').includes('moved'));
    // Outside a batch a change is followed at once, as before.
    store.applyForeign(RECORD, kzRecord('web', 'late', 'late.z3.example.', '198.51.100.9'));
    assert.ok(delegatedNames(translated, 'z3').includes('late'));
    translated.close();
  });

  test('coalesced (as a Kubernetes watch delivers): the changes of one turn translate their Zone once, after it', async () => {
    const { store, translated, calls, objects } = populated({ coalesce: true });
    for (let r = 0; r < 40; r++)
      store.applyForeign(RECORD, kzRecord('web', `new-${r}`, `n${r}.z3.example.`, '198.51.100.7'));
    store.removeForeign(RECORD, 'web/r4-1');
    // The Records changed are translated at once; the Zones reading them at the end of the turn.
    assert.equal(calls.Record, 40);
    assert.equal(calls.Zone, 0);
    await Promise.resolve();
    assert.deepEqual([...objects.Zone].sort(), ['dns/z3', 'dns/z4']);
    assert.ok(calls.Zone <= 4, `${calls.Zone} translations of Zones`);
    const z3 = delegatedNames(translated, 'z3');
    assert.ok(z3.includes('n0') && z3.includes('n39'));
    assert.ok(!delegatedNames(translated, 'z4').includes('h1'));
    // The next turn's change is followed at the end of that turn; none once the store is closed.
    store.applyForeign(RECORD, kzRecord('web', 'late', 'late.z3.example.', '198.51.100.9'));
    await Promise.resolve();
    assert.ok(delegatedNames(translated, 'z3').includes('late'));
    translated.close();
    calls.Zone = 0;
    store.applyForeign(RECORD, kzRecord('web', 'later', 'later.z3.example.', '198.51.100.9'));
    await Promise.resolve();
    assert.equal(calls.Zone, 0);
  });

  test('a resync projects a few objects at a time, and a tick while one runs starts no other', async () => {
    // Regression: every object at once; during a burst of 20,000 new Records in a real API server
    // that was 20,000 status writes together, refused (429) with the Lease renewals.
    const { store, translated } = populated();
    const write = store.updateForeignStatus.bind(store);
    let inFlight = 0;
    let most = 0;
    let writes = 0;
    store.updateForeignStatus = async (...args: Parameters<typeof write>) => {
      inFlight++;
      most = Math.max(most, inFlight);
      try {
        await new Promise((resolve) => setTimeout(resolve, 1));
        return await write(...args);
      } finally {
        inFlight--;
        writes++;
      }
    };
    const first = translated.resyncStatus();
    assert.equal(translated.resyncStatus(), first);
    await first;
    assert.equal(writes, ZONES + ZONES * PER_ZONE, 'every status written once');
    assert.equal(most, RESYNC_CONCURRENCY);
    // Written already: the next resync writes nothing.
    await translated.resyncStatus();
    assert.equal(writes, ZONES + ZONES * PER_ZONE);
    translated.close();
  });

  test('a resync goes on past writes that never return, and the next one past those it left running', async () => {
    // Regression: each resync waited for every projection, so eight writes an API server held
    // stopped the resync for good, and every later tick waited for it.
    const { store, translated: first } = populated();
    first.close();
    const translated = new FrontDoorStore({ base: store, doors: counted().doors, now, resyncWaitMs: 20 });
    const write = store.updateForeignStatus.bind(store);
    const hung = new Set([
      'dns/z0',
      'dns/z1',
      'web/r0-0',
      'web/r0-1',
      'web/r1-0',
      'web/r1-1',
      'web/r2-0',
      'web/r2-1',
    ]);
    let writes = 0;
    store.updateForeignStatus = async (...args: Parameters<typeof write>) => {
      if (hung.has(args[1])) return new Promise<void>(() => {});
      writes++;
      return write(...args);
    };
    await translated.resyncStatus();
    assert.equal(writes, ZONES + ZONES * PER_ZONE - hung.size, 'every other status written');
    // The next resync ends too (it would never, waiting on those held), and writes nothing new.
    await translated.resyncStatus();
    assert.equal(writes, ZONES + ZONES * PER_ZONE - hung.size);
    translated.close();
  });

  test('a status write of a Record or a Zone translates no other object', () => {
    const { store, translated, calls } = populated();
    void store.updateForeignStatus(RECORD, 'web/r0-0', { fqdn: 'h0.z0.example.' });
    void store.updateForeignStatus(ZONE, 'dns/z0', { fqdn: 'z0.example.' });
    assert.equal(calls.Record, 1);
    assert.equal(calls.Zone, 1);
    assert.ok(adoptRecord.calls <= 1, `adoptions computed: ${adoptRecord.calls}`);
    translated.close();
  });

  test('a Zone change translates the Records below it, not every Record', () => {
    const { store, translated, calls, objects } = populated();
    // z5 narrows its delegation to its own namespace: its Records (namespace web) are refused.
    store.applyForeign(
      ZONE,
      kzZone('z5', 'z5.example.', [{ namespaces: ['dns'], records: [{ pattern: '*' }] }]),
    );
    assert.equal(objects.Record.size, PER_ZONE);
    assert.ok([...objects.Record].every((k) => k.startsWith('web/r5-')));
    assert.equal(calls.Zone, 1);
    assert.equal(translated.get('DNSRecordSet', 'web/records.kubi.zone:=A:h0.z5.example.'), undefined);
    assert.ok(translated.get('DNSRecordSet', 'web/records.kubi.zone:=A:h0.z6.example.'));
    // A sub-zone appears: the Records below it move to it; its parent is translated again.
    store.applyForeign(ZONE, kzZone('sub', 'h2.z6.example.', [{ records: [{ pattern: '@' }] }]));
    assert.equal(objects.Record.size, PER_ZONE + 1);
    assert.ok(objects.Record.has('web/r6-2'));
    assert.deepEqual([...objects.Zone].sort(), ['dns/sub', 'dns/z5', 'dns/z6']);
    translated.close();
  });
});

describe('a foreign object with many outputs: its status projections', () => {
  test('the status writes of 200 outputs project their DNSEndpoint a few times, not once each', async () => {
    // Regression: each output's status write projected the object over all its outputs, one write
    // after another: one DNSEndpoint of 10,000 endpoints took 104 s to become ready.
    let projections = 0;
    const door: FrontDoor = {
      ...(dnsEndpointFrontDoor as unknown as FrontDoor),
      project(input) {
        projections++;
        return (dnsEndpointFrontDoor as unknown as FrontDoor).project(input);
      },
    };
    const id = frontDoorId(door);
    const store = new MemoryStore(now);
    store.apply(zoneClass());
    store.apply(zone('dns', 'example-com', 'example.com'));
    const endpoints = Array.from({ length: PROJECT_SOON_OVER + 136 }, (_, i) => ({
      dnsName: `e${i}.example.com`,
      recordType: 'A',
      targets: ['192.0.2.1'],
    }));
    store.applyForeign(id, {
      apiVersion: 'externaldns.k8s.io/v1alpha1',
      kind: 'DNSEndpoint',
      metadata: { name: 'many', namespace: 'dns', generation: 1 },
      spec: { endpoints },
    });
    const { table, translated, controller } = translatedController(store, new FrontDoors([door]), now, {
      resyncMs: 0,
    });
    controller.start();
    await controller.idle();
    // The projection follows the writes once they are done.
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.ok(table.get('example.com.')?.nodes.get('e199.example.com.'));
    assert.deepEqual(store.getForeign(id, 'dns/many')?.status, { observedGeneration: 1 });
    assert.ok(projections <= 10, `${projections} projections for 200 status writes`);
    controller.stop();
    translated.close();
  });
});
