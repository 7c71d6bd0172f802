/**
 * Squatting prevention in the operator's controller and the data plane's follower: zones of a class
 * with requireVerifiedDomain are Accepted but not served until a verified Domain of their namespace
 * covers them, and stop being served when it is no longer verified.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSZone, Domain } from '../api/index.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { Controller } from './controller.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';
import { ZoneFollower } from './zone-follower.ts';

const now = () => new Date('2026-11-21T12:00:00Z');

function domain(namespace: string, domainName: string): Domain {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'Domain',
    metadata: { name: domainName.replace(/\./g, '-'), namespace, generation: 1 },
    spec: { domainName },
  };
}

async function setVerified(store: MemoryStore, d: Domain, status: 'True' | 'False') {
  await store.updateStatus('Domain', `${d.metadata.namespace}/${d.metadata.name}`, {
    conditions: [
      {
        type: 'Verified',
        status,
        reason: status === 'True' ? 'Verified' : 'NotVerified',
        message: status === 'True' ? 'verified through VerifiedDNS' : 'no verification path holds',
        observedGeneration: 1,
        lastTransitionTime: now().toISOString(),
      },
    ],
  });
}

function seed(store: MemoryStore) {
  store.apply(zoneClass('builtin', ['ns1.example.net.'], { requireVerifiedDomain: true }));
  store.apply(zone('team-a', 'shop', 'shop.example.com'));
  store.apply(
    recordSet(
      'team-a',
      'www',
      { zoneRef: { name: 'shop' }, name: 'www', type: 'A', records: ['192.0.2.1'] },
      1,
    ),
  );
}

const cond = (store: MemoryStore, type: string) =>
  (store.get('DNSZone', 'team-a/shop') as DNSZone).status?.conditions?.find((c) => c.type === type);

describe('requireVerifiedDomain', () => {
  test('a zone without a verified Domain is Accepted, not programmed, and says why', async () => {
    const store = new MemoryStore(now);
    const table = new ZoneTable();
    const controller = new Controller({
      store,
      backend: new BuiltinBackend(table),
      serials: new MemorySerialStore(),
      now,
    });
    seed(store);
    controller.start();
    await controller.idle();
    assert.equal(cond(store, 'Accepted')?.status, 'True');
    const programmed = cond(store, 'Programmed');
    assert.equal(programmed?.status, 'False');
    assert.equal(programmed?.reason, 'DomainNotVerified');
    assert.match(programmed?.message ?? '', /no Domain in namespace team-a claims shop\.example\.com/);
    assert.equal(cond(store, 'Ready')?.reason, 'DomainNotVerified');
    assert.equal(table.get('shop.example.com.'), undefined, 'not served');
    const z = store.get('DNSZone', 'team-a/shop') as DNSZone;
    assert.deepEqual(
      z.status?.nameservers,
      ['ns1.example.net.'],
      'the name servers to delegate to are shown',
    );

    // Another namespace's verified Domain does not count.
    const other = domain('team-b', 'example.com');
    store.apply(other);
    await setVerified(store, other, 'True');
    await controller.idle();
    assert.equal(table.get('shop.example.com.'), undefined);

    // An unverified Domain of the namespace: named in the message.
    const mine = domain('team-a', 'example.com');
    store.apply(mine);
    await setVerified(store, mine, 'False');
    await controller.idle();
    assert.match(
      cond(store, 'Programmed')?.message ?? '',
      /Domain example-com \(example\.com\) is not verified/,
    );
    assert.equal(table.get('shop.example.com.'), undefined);

    // Verified above the zone's domain: served.
    await setVerified(store, mine, 'True');
    await controller.idle();
    assert.equal(cond(store, 'Ready')?.status, 'True');
    assert.ok(table.get('shop.example.com.')?.nodes.get('www.shop.example.com.'));

    // Lost: no longer served, never silently kept.
    await setVerified(store, mine, 'False');
    await controller.idle();
    assert.equal(cond(store, 'Programmed')?.reason, 'DomainNotVerified');
    assert.equal(table.get('shop.example.com.'), undefined);
    controller.stop();
  });

  test("a squatter's older zone does not keep the domain from the namespace that verified it", async () => {
    const store = new MemoryStore(now);
    const table = new ZoneTable();
    const controller = new Controller({
      store,
      backend: new BuiltinBackend(table),
      serials: new MemorySerialStore(),
      now,
    });
    store.apply(zoneClass('builtin', ['ns1.example.net.'], { requireVerifiedDomain: true }));
    store.apply(zone('squatter', 'shop', 'shop.example.com'), '2026-01-01T00:00:00Z'); // first
    store.apply(zone('team-a', 'shop', 'shop.example.com'), '2026-01-02T00:00:00Z');
    store.apply(
      recordSet(
        'team-a',
        'www',
        { zoneRef: { name: 'shop' }, name: 'www', type: 'A', records: ['192.0.2.1'] },
        11,
      ),
    );
    controller.start();
    await controller.idle();
    const squat = () => store.get('DNSZone', 'squatter/shop') as DNSZone;
    assert.equal(
      squat().status?.conditions?.find((c) => c.type === 'Programmed')?.reason,
      'DomainNotVerified',
    );
    assert.equal(table.get('shop.example.com.'), undefined);
    const mine = domain('team-a', 'example.com');
    store.apply(mine);
    await setVerified(store, mine, 'True');
    await controller.idle();
    assert.equal(cond(store, 'Ready')?.status, 'True', cond(store, 'Ready')?.message);
    assert.ok(table.get('shop.example.com.')?.nodes.get('www.shop.example.com.'));
    const accepted = squat().status?.conditions?.find((c) => c.type === 'Accepted');
    assert.equal(accepted?.status, 'False');
    assert.equal(accepted?.reason, 'Conflict');
    assert.match(accepted?.message ?? '', /already served by DNSZone team-a\/shop/);
    controller.stop();
  });

  test('a class without the field serves as before', async () => {
    const store = new MemoryStore(now);
    const table = new ZoneTable();
    const controller = new Controller({
      store,
      backend: new BuiltinBackend(table),
      serials: new MemorySerialStore(),
      now,
    });
    store.apply(zoneClass('builtin', ['ns1.example.net.']));
    store.apply(zone('team-a', 'shop', 'shop.example.com'));
    controller.start();
    await controller.idle();
    assert.equal(cond(store, 'Ready')?.status, 'True');
    controller.stop();
  });

  test('the data plane follows the same rule: a zone recorded as served is dropped when its Domain is not verified', async () => {
    const store = new MemoryStore(now);
    seed(store);
    const mine = domain('team-a', 'shop.example.com');
    store.apply(mine);
    await setVerified(store, mine, 'True');
    // The operator's side, to record serial and hash.
    const controller = new Controller({
      store,
      backend: new BuiltinBackend(new ZoneTable()),
      serials: new MemorySerialStore(),
      now,
      hashOnChange: true,
    });
    controller.start();
    await controller.idle();
    await controller.flush();
    await controller.idle();
    assert.ok((store.get('DNSZone', 'team-a/shop') as DNSZone).status?.hash);
    controller.stop();
    const table = new ZoneTable();
    const follower = new ZoneFollower({ store, backend: new BuiltinBackend(table) });
    follower.start();
    await follower.idle();
    assert.ok(table.get('shop.example.com.'), 'served while verified');
    // The status still records a serial; the Domain's verification is what counts.
    await setVerified(store, mine, 'False');
    await follower.idle();
    assert.equal(table.get('shop.example.com.'), undefined);
    follower.stop();
  });
});
