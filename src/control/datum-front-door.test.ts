/**
 * Datum's DNS API (`dns.networking.miloapis.com/v1alpha1`) through the translating store and the
 * controller: Datum's own samples served, the class's default TTL used, names relative to the right
 * origin, a conflict with a native DNSRecordSet, hostile record sets refused, deletions and finalizers.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { recordSet, stamp, zone, zoneClass } from '../../test/support/resources.ts';
import { translatedController } from '../../test/support/translated-controller.ts';
import {
  DATUM_FRONT_DOORS,
  DATUM_RECORDSET_FINALIZER,
  DATUM_ZONE_FINALIZER,
  type DatumRecordSetStatus,
  type DatumZoneStatus,
} from '../api/frontdoors/datum/index.ts';
import { type ForeignObject, FrontDoors, validateAny } from '../api/frontdoors/index.ts';
import type { Condition, DNSRecordSet, DNSZone } from '../api/index.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { printRdata } from '../dns/rdata.ts';
import { typeName } from '../dns/rrtype.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { Controller } from './controller.ts';
import { FrontDoorStore } from './front-door-store.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';

const CLASS = 'DNSZoneClass.dns.networking.miloapis.com';
const ZONE = 'DNSZone.dns.networking.miloapis.com';
const RS = 'DNSRecordSet.dns.networking.miloapis.com';
const API = 'dns.networking.miloapis.com/v1alpha1';
const now = () => new Date('2026-11-26T12:00:00Z');
const doors = new FrontDoors(DATUM_FRONT_DOORS);
const UPSTREAM = path.join(import.meta.dirname, '../../test/support/datum-upstream');

function sample(file: string): ForeignObject {
  const [doc] = parseAllDocuments(readFileSync(path.join(UPSTREAM, file), 'utf8'));
  const result = validateAny(doc!.toJS(), doors);
  assert.ok(result.ok && result.door, `${file}: ${JSON.stringify(result)}`);
  return (result as { foreign: ForeignObject }).foreign;
}

function datumZone(namespace: string, name: string, domainName: string, cls?: string): ForeignObject {
  return {
    apiVersion: API,
    kind: 'DNSZone',
    metadata: { name, namespace },
    spec: { domainName, ...(cls ? { dnsZoneClassName: cls } : {}) },
  };
}

function datumRecordSet(
  namespace: string,
  name: string,
  zoneName: string,
  recordType: string,
  records: Record<string, unknown>[],
): ForeignObject {
  return {
    apiVersion: API,
    kind: 'DNSRecordSet',
    metadata: { name, namespace },
    spec: { dnsZoneRef: { name: zoneName }, recordType, records },
  };
}

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
  store.apply(zoneClass('builtin', ['ns1.example.net.', 'ns2.example.net.']));
  return { store, table, translated, controller };
}

/** The served RRset at `owner` of `type` in zone `origin`: TTL and records in presentation format. */
function served(table: ZoneTable, origin: string, owner: string, type: string) {
  const node = table.get(origin)?.nodes.get(owner);
  const rrset = node ? [...node.rrsets.values()].find((r) => typeName(r.type) === type) : undefined;
  return rrset ? { ttl: rrset.ttl, records: rrset.rdata.map((r) => printRdata(r)).sort() } : undefined;
}

function condition(store: MemoryStore, door: string, key: string, type: string): Condition | undefined {
  const status = store.getForeign(door, key)?.status as { conditions?: Condition[] } | undefined;
  return status?.conditions?.find((c) => c.type === type);
}

describe("Datum's DNS API through the translating store", () => {
  test("Datum's samples: served with the class's defaultTTL, statuses in Datum's shape, finalizers", async () => {
    const { store, table, controller } = setup();
    controller.start();
    store.applyForeign(CLASS, sample('dns_v1alpha1_dnszoneclass.yaml'), stamp(1));
    store.applyForeign(ZONE, sample('dns_v1alpha1_dnszone.yaml'), stamp(2));
    store.applyForeign(RS, sample('dns_v1alpha1_dnsrecordset.yaml'), stamp(3));
    await controller.idle();
    assert.deepEqual(served(table, 'example.com.', 'www.example.com.', 'A'), {
      ttl: 300,
      records: ['10.0.0.1'],
    });
    const z = store.getForeign(ZONE, 'default/example-com')!;
    const zs = z.status as DatumZoneStatus;
    assert.deepEqual(z.metadata.finalizers, [DATUM_ZONE_FINALIZER]);
    assert.deepEqual(zs.nameservers, ['ns1.example.net', 'ns2.example.net']);
    assert.equal(zs.recordCount, 1);
    assert.deepEqual(
      zs.conditions?.map((c) => [c.type, c.status, c.reason, c.observedGeneration]),
      [
        ['Accepted', 'True', 'Accepted', 1],
        ['Programmed', 'True', 'Programmed', 1],
      ],
    );
    const rs = store.getForeign(RS, 'default/www-example-com')!;
    assert.deepEqual(rs.metadata.finalizers, [DATUM_RECORDSET_FINALIZER]);
    const rss = rs.status as DatumRecordSetStatus;
    assert.deepEqual(
      rss.conditions?.map((c) => [c.type, c.status, c.reason]),
      [
        ['Accepted', 'True', 'Accepted'],
        ['Programmed', 'True', 'Programmed'],
      ],
    );
    assert.deepEqual(
      rss.recordSets?.map((r) => [r.name, r.conditions?.map((c) => `${c.type}=${c.status}`).join(',')]),
      [['www', 'Accepted=True,Programmed=True']],
    );
    // The class: served by the default Zonekeeper class, whose name servers differ from the sample's.
    assert.equal(condition(store, CLASS, 'powerdns-static', 'Accepted')?.status, 'True');
    const p = condition(store, CLASS, 'powerdns-static', 'Programmed');
    assert.equal(p?.reason, 'NameServersDiffer');
    assert.match(
      p!.message,
      /ns1\.example\.net, ns2\.example\.net, not ns1\.example\.com, ns2\.example\.com/,
    );
  });

  test('objects already there when the store starts get their status; replicas learn the serial', async () => {
    const store = new MemoryStore(now);
    store.apply(zoneClass('builtin', ['ns1.example.com.', 'ns2.example.com.']));
    store.applyForeign(CLASS, sample('dns_v1alpha1_dnszoneclass.yaml'), stamp(1));
    store.applyForeign(ZONE, datumZone('web', 'orphan', 'example.org', 'missing'), stamp(2));
    const { controller } = translatedController(store, doors, now);
    controller.start();
    await controller.idle();
    // The class lists the name servers served: Programmed.
    assert.equal(condition(store, CLASS, 'powerdns-static', 'Programmed')?.reason, 'Programmed');
    assert.equal(condition(store, ZONE, 'web/orphan', 'Accepted')?.reason, 'DNSZoneClassNotFound');
    // The zone's serial is kept in its status, for read-only replicas.
    store.applyForeign(ZONE, sample('dns_v1alpha1_dnszone.yaml'), stamp(3));
    await controller.idle();
    const status = store.getForeign(ZONE, 'default/example-com')!.status as DatumZoneStatus;
    assert.ok(status.serial && status.hash);
    const replica = new FrontDoorStore({ base: store, doors, now, readOnly: true });
    const seen = replica.list('DNSZone')[0]?.status as { serial?: number } | undefined;
    assert.equal(seen?.serial, status.serial);
    // And that it was served: an older object claiming its domain after a restart does not take it.
    const accepted = (replica.list('DNSZone')[0]?.status as DNSZone['status'])?.conditions?.find(
      (c) => c.type === 'Accepted',
    );
    assert.equal(accepted?.status, 'True');
  });

  test('the default TTL is used for records without one, and follows the class; the class deleted', async () => {
    const { store, table, controller } = setup();
    controller.start();
    store.applyForeign(CLASS, sample('dns_v1alpha1_dnszoneclass.yaml'), stamp(1));
    store.applyForeign(ZONE, sample('dns_v1alpha1_dnszone.yaml'), stamp(2));
    store.applyForeign(
      RS,
      datumRecordSet('default', 'txt', 'example-com', 'TXT', [
        { name: '@', txt: { content: 'v=spf1 -all' } },
      ]),
      stamp(3),
    );
    await controller.idle();
    assert.deepEqual(served(table, 'example.com.', 'example.com.', 'TXT'), {
      ttl: 300,
      records: ['"v=spf1 -all"'],
    });
    const cls = sample('dns_v1alpha1_dnszoneclass.yaml');
    store.applyForeign(CLASS, { ...cls, spec: { ...cls.spec, defaults: { defaultTTL: 120 } } }, stamp(1));
    await controller.idle();
    assert.equal(served(table, 'example.com.', 'example.com.', 'TXT')?.ttl, 120);
    // The class deleted: its zones are no longer served, and say why.
    store.removeForeign(CLASS, 'powerdns-static');
    await controller.idle();
    assert.equal(store.getForeign(CLASS, 'powerdns-static'), undefined);
    assert.equal(table.get('example.com.'), undefined);
    assert.equal(condition(store, ZONE, 'default/example-com', 'Accepted')?.reason, 'DNSZoneClassNotFound');
    assert.equal(condition(store, RS, 'default/txt', 'Accepted')?.reason, 'Pending');
  });

  test('owners and targets relative to the zone; entries of one owner are one RRset', async () => {
    const { store, table, controller } = setup();
    controller.start();
    store.applyForeign(ZONE, datumZone('web', 'zone', 'example.org'), stamp(1));
    store.applyForeign(
      RS,
      datumRecordSet('web', 'cname', 'zone', 'CNAME', [
        { name: 'www', cname: { content: 'app' } },
        { name: 'api.example.org', cname: { content: 'lb.example.net' } },
        { name: 'docs.example.org.', cname: { content: '@' } },
      ]),
      stamp(2),
    );
    store.applyForeign(
      RS,
      datumRecordSet('web', 'mx', 'zone', 'MX', [
        { name: '@', mx: { preference: 10, exchange: 'mail' } },
        { name: '@', ttl: 600, mx: { preference: 20, exchange: 'mx.example.net.' } },
      ]),
      stamp(3),
    );
    store.applyForeign(
      RS,
      datumRecordSet('web', 'https', 'zone', 'HTTPS', [
        { name: '@', https: { priority: 1, target: '.', params: { alpn: 'h2,h3', port: '443' } } },
      ]),
      stamp(4),
    );
    await controller.idle();
    assert.deepEqual(served(table, 'example.org.', 'www.example.org.', 'CNAME')?.records, [
      'app.example.org.',
    ]);
    assert.deepEqual(served(table, 'example.org.', 'api.example.org.', 'CNAME')?.records, [
      'lb.example.net.',
    ]);
    assert.deepEqual(served(table, 'example.org.', 'docs.example.org.', 'CNAME')?.records, ['example.org.']);
    assert.deepEqual(served(table, 'example.org.', 'example.org.', 'MX'), {
      ttl: 600,
      records: ['10 mail.example.org.', '20 mx.example.net.'],
    });
    assert.deepEqual(served(table, 'example.org.', 'example.org.', 'HTTPS')?.records, [
      '1 . alpn="h2,h3" port=443',
    ]);
    // No class named: the zone is the default Zonekeeper class's, with its TTL (300).
    assert.equal(served(table, 'example.org.', 'www.example.org.', 'CNAME')?.ttl, 300);
  });

  test('a Datum record set and a native DNSRecordSet on one name: the older wins, the loser says Conflict', async () => {
    const { store, table, controller } = setup();
    controller.start();
    store.applyForeign(ZONE, datumZone('web', 'zone', 'example.org'), stamp(1));
    store.apply(
      recordSet('web', 'native', { name: 'www.example.org.', type: 'A', records: ['192.0.2.1'] }),
      stamp(2),
    );
    store.applyForeign(
      RS,
      datumRecordSet('web', 'late', 'zone', 'A', [{ name: 'www', a: { content: '192.0.2.66' } }]),
      stamp(3),
    );
    await controller.idle();
    assert.deepEqual(served(table, 'example.org.', 'www.example.org.', 'A')?.records, ['192.0.2.1']);
    const accepted = condition(store, RS, 'web/late', 'Accepted');
    assert.equal(accepted?.status, 'False');
    assert.equal(accepted?.reason, 'Conflict');
    const perName = (store.getForeign(RS, 'web/late')!.status as DatumRecordSetStatus).recordSets?.[0];
    assert.equal(perName?.name, 'www');
    assert.equal(perName?.conditions?.find((c) => c.type === 'Accepted')?.reason, 'Conflict');
    // The native one goes: the Datum record set takes the name.
    store.remove('DNSRecordSet', 'web/native');
    await controller.idle();
    assert.deepEqual(served(table, 'example.org.', 'www.example.org.', 'A')?.records, ['192.0.2.66']);
    assert.equal(condition(store, RS, 'web/late', 'Programmed')?.status, 'True');
  });

  test('a native record set that is younger loses to the Datum one and says so in its own status', async () => {
    const { store, table, translated, controller } = setup();
    controller.start();
    store.applyForeign(ZONE, datumZone('web', 'zone', 'example.org'), stamp(1));
    store.applyForeign(
      RS,
      datumRecordSet('web', 'early', 'zone', 'A', [{ name: 'www', a: { content: '192.0.2.7' } }]),
      stamp(2),
    );
    store.apply(
      recordSet('web', 'native', { name: 'www.example.org.', type: 'A', records: ['192.0.2.1'] }),
      stamp(3),
    );
    await controller.idle();
    assert.deepEqual(served(table, 'example.org.', 'www.example.org.', 'A')?.records, ['192.0.2.7']);
    const native = translated.get('DNSRecordSet', 'web/native') as DNSRecordSet;
    assert.equal(native.status?.conditions?.find((c) => c.type === 'Accepted')?.reason, 'Conflict');
  });

  test('hostile record sets: outside their zone, into another namespace’s zone', async () => {
    const { store, table, controller } = setup();
    controller.start();
    // The victims: a native zone and a Datum zone in namespace bank.
    store.apply(zone('bank', 'bank', 'bank.example'), stamp(0));
    store.applyForeign(ZONE, datumZone('bank', 'vault', 'vault.example'), stamp(0));
    store.applyForeign(ZONE, datumZone('tenant', 'mine', 'tenant.example'), stamp(1));
    store.applyForeign(
      RS,
      datumRecordSet('tenant', 'escape', 'mine', 'A', [
        { name: 'ok', a: { content: '192.0.2.1' } },
        { name: 'www.bank.example.', a: { content: '203.0.113.66' } },
      ]),
      stamp(2),
    );
    store.applyForeign(
      RS,
      // dnsZoneRef is local: the bank's zone of that name is not reached from tenant.
      datumRecordSet('tenant', 'sub', 'vault', 'A', [{ name: 'www', a: { content: '203.0.113.66' } }]),
      stamp(3),
    );
    // A Datum zone claiming the victim's domain: refused, and its record sets with it.
    store.applyForeign(ZONE, datumZone('tenant', 'bank', 'bank.example'), stamp(4));
    store.applyForeign(
      RS,
      datumRecordSet('tenant', 'grab', 'bank', 'A', [{ name: 'www', a: { content: '203.0.113.66' } }]),
      stamp(5),
    );
    await controller.idle();
    // One owner outside refuses the whole record set: nothing of it is published.
    assert.equal(served(table, 'tenant.example.', 'ok.tenant.example.', 'A'), undefined);
    assert.equal(served(table, 'bank.example.', 'www.bank.example.', 'A'), undefined);
    assert.equal(served(table, 'vault.example.', 'www.vault.example.', 'A'), undefined);
    const escaped = store.getForeign(RS, 'tenant/escape')!.status as DatumRecordSetStatus;
    assert.equal(escaped.conditions?.find((c) => c.type === 'Accepted')?.reason, 'InvalidDNSRecordSet');
    assert.match(
      escaped.recordSets?.[1]?.conditions?.[0]?.message ?? '',
      /www\.bank\.example\. is www\.bank\.example\., outside the zone tenant\.example\./,
    );
    assert.match(
      escaped.recordSets?.[0]?.conditions?.[0]?.message ?? '',
      /ok\.tenant\.example\.: not published/,
    );
    const sub = condition(store, RS, 'tenant/sub', 'Accepted');
    assert.equal(sub?.reason, 'Pending');
    assert.match(sub!.message, /DNSZone vault .* in namespace tenant: it does not exist/);
    assert.equal(condition(store, ZONE, 'tenant/bank', 'Accepted')?.reason, 'DNSZoneInUse');
    // Its record set lands in the bank's zone of that domain, whose delegations do not admit it.
    assert.equal(condition(store, RS, 'tenant/grab', 'Accepted')?.reason, 'NotOwner');
  });

  test('deleting: a record set is held until served without it; a zone and its record sets go', async () => {
    const { store, table, controller } = setup();
    controller.start();
    store.applyForeign(ZONE, datumZone('web', 'zone', 'example.org'), stamp(1));
    store.applyForeign(
      RS,
      datumRecordSet('web', 'www', 'zone', 'A', [{ name: 'www', a: { content: '192.0.2.1' } }]),
      stamp(2),
    );
    await controller.idle();
    assert.ok(served(table, 'example.org.', 'www.example.org.', 'A'));
    store.removeForeign(RS, 'web/www');
    await controller.idle();
    assert.equal(served(table, 'example.org.', 'www.example.org.', 'A'), undefined);
    assert.equal(store.getForeign(RS, 'web/www'), undefined);
    store.applyForeign(
      RS,
      datumRecordSet('web', 'api', 'zone', 'A', [{ name: 'api', a: { content: '192.0.2.2' } }]),
      stamp(3),
    );
    await controller.idle();
    store.removeForeign(ZONE, 'web/zone');
    await controller.idle();
    assert.equal(table.get('example.org.'), undefined);
    assert.equal(store.getForeign(ZONE, 'web/zone'), undefined);
    assert.equal(condition(store, RS, 'web/api', 'Accepted')?.reason, 'Pending');
    // The record set, left without its zone, is deleted freely: nothing of it is served.
    store.removeForeign(RS, 'web/api');
    await controller.idle();
    assert.equal(store.getForeign(RS, 'web/api'), undefined);
  });

  test('status writes are one at a time per object: an older view never lands after a newer one', async () => {
    // The zone's first status write (its class missing) is held until the zone is served.
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let first = true;
    class SlowStore extends MemoryStore {
      override async updateForeignStatus(door: string, key: string, status: Record<string, unknown>) {
        if (door === ZONE && first) {
          first = false;
          await held;
        }
        return super.updateForeignStatus(door, key, status);
      }
    }
    const store = new SlowStore(now);
    const table = new ZoneTable();
    store.apply(zoneClass('builtin', ['ns1.example.net.', 'ns2.example.net.']));
    const translated = new FrontDoorStore({ base: store, doors, now, resyncMs: 0 });
    const controller = new Controller({
      store: translated,
      backend: new BuiltinBackend(table),
      serials: new MemorySerialStore(),
      now,
    });
    controller.start();
    store.applyForeign(ZONE, sample('dns_v1alpha1_dnszone.yaml'), stamp(2));
    await controller.idle();
    store.applyForeign(CLASS, sample('dns_v1alpha1_dnszoneclass.yaml'), stamp(1));
    // The zone is served (its status on the way) before the first write lands.
    for (let i = 0; i < 200 && !table.get('example.com.'); i++) await new Promise((r) => setImmediate(r));
    assert.ok(table.get('example.com.'));
    release();
    await controller.idle();
    assert.equal(condition(store, ZONE, 'default/example-com', 'Accepted')?.reason, 'Accepted');
    translated.close();
  });

  test('a status lost on the way is written again by the periodic resync', async () => {
    const { store, translated, controller } = setup();
    controller.start();
    store.applyForeign(CLASS, sample('dns_v1alpha1_dnszoneclass.yaml'), stamp(1));
    await controller.idle();
    assert.equal(condition(store, CLASS, 'powerdns-static', 'Accepted')?.status, 'True');
    // As if the write had never reached the API server.
    await store.updateForeignStatus(CLASS, 'powerdns-static', {});
    await translated.resyncStatus();
    assert.equal(condition(store, CLASS, 'powerdns-static', 'Accepted')?.status, 'True');
  });
});
