import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSRecordSet, Kind, Resource } from '../api/index.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { ZoneTable } from '../server/zone-table.ts';
import type { ResourceKey } from '../zones/resource-key.ts';
import { Controller } from './controller.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';

/** A store whose status writes take a while, like round trips to an API server; counts overlap. */
function slowStore(failOnce?: ResourceKey) {
  const store = new MemoryStore(() => new Date('2026-11-21T12:00:00Z'));
  const stats = { inFlight: 0, max: 0, failed: false };
  const update = store.updateStatus.bind(store);
  store.updateStatus = async (kind: Kind, key: ResourceKey, status: NonNullable<Resource['status']>) => {
    if (kind !== 'DNSRecordSet') return update(kind, key, status);
    stats.inFlight++;
    stats.max = Math.max(stats.max, stats.inFlight);
    await new Promise((r) => setTimeout(r, 2));
    stats.inFlight--;
    if (key === failOnce && !stats.failed) {
      stats.failed = true;
      throw new Error('conflict storm');
    }
    return update(kind, key, status);
  };
  store.apply(zoneClass());
  store.apply(zone('dns', 'example-com', 'example.com'));
  for (let i = 0; i < 40; i++)
    store.apply(
      recordSet(
        'dns',
        `r${i}`,
        { zoneRef: { name: 'example-com' }, name: `h${i}`, type: 'A', records: ['192.0.2.1'] },
        i,
      ),
    );
  return { store, stats };
}

function allReady(store: MemoryStore): boolean {
  return store
    .list('DNSRecordSet')
    .every(
      (rs) => (rs as DNSRecordSet).status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True',
    );
}

for (const [writeConcurrency, expectMax] of [
  [undefined, 1],
  [8, 8],
] as const) {
  test(`record-set status writes: at most ${expectMax} in flight (writeConcurrency ${writeConcurrency ?? 'default'})`, async () => {
    const { store, stats } = slowStore();
    const c = new Controller({
      store,
      backend: new BuiltinBackend(new ZoneTable()),
      serials: new MemorySerialStore(),
      ...(writeConcurrency ? { writeConcurrency } : {}),
    });
    c.start();
    await c.idle();
    c.stop();
    assert.ok(allReady(store));
    // Record reconciles write nothing here (the zone writes every status), so the zone's pool is measured.
    assert.equal(stats.max, expectMax);
  });
}

for (const writeConcurrency of [1, 4]) {
  test(`a failed status write fails the zone reconcile; the retry writes every status left (writeConcurrency ${writeConcurrency})`, async () => {
    const { store, stats } = slowStore('dns/r5');
    const c = new Controller({
      store,
      backend: new BuiltinBackend(new ZoneTable()),
      serials: new MemorySerialStore(),
      writeConcurrency,
    });
    c.start();
    for (let i = 0; i < 100 && !allReady(store); i++) {
      await c.idle();
      await new Promise((r) => setTimeout(r, 20));
    }
    c.stop();
    assert.ok(stats.failed);
    assert.ok(allReady(store));
  });
}
