import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSZone } from '../api/index.ts';
import { type Backend, DEFAULT_APPLY_CONCURRENCY } from '../backends/backend.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { Controller } from './controller.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';

const ZONES = 48;

/** The built-in backend behind applies that take a while, like a server of its own; counts overlap. */
function slowBackend(applyConcurrency?: number) {
  const inner = new BuiltinBackend(new ZoneTable());
  const stats = { inFlight: 0, max: 0, applied: 0 };
  const backend: Backend = {
    name: 'slow',
    capabilities: inner.capabilities,
    applyZone: async (z) => {
      stats.max = Math.max(stats.max, ++stats.inFlight);
      await new Promise((r) => setTimeout(r, 3));
      stats.inFlight--;
      stats.applied++;
      return inner.applyZone(z);
    },
    deleteZone: (origin) => inner.deleteZone(origin),
    servedSerial: (origin) => inner.servedSerial(origin),
    ...(applyConcurrency !== undefined ? { applyConcurrency } : {}),
  };
  return { backend, stats };
}

function manyZones(): MemoryStore {
  const store = new MemoryStore(() => new Date('2026-11-27T12:00:00Z'));
  store.apply(zoneClass());
  for (let i = 0; i < ZONES; i++) {
    store.apply(zone('dns', `z${i}`, `z${i}.example`));
    store.apply(
      recordSet('dns', `r${i}`, {
        zoneRef: { name: `z${i}` },
        name: 'www',
        type: 'A',
        records: ['192.0.2.1'],
      }),
    );
  }
  return store;
}

for (const [zoneConcurrency, applyConcurrency, expectMax] of [
  [undefined, Number.POSITIVE_INFINITY, 8],
  [32, Number.POSITIVE_INFINITY, 32],
  [32, undefined, DEFAULT_APPLY_CONCURRENCY],
  [32, 3, 3],
] as const) {
  test(`zone applies in flight: at most ${expectMax} (zoneConcurrency ${zoneConcurrency ?? 'default'}, backend's applyConcurrency ${applyConcurrency ?? 'unset'})`, async () => {
    const store = manyZones();
    const { backend, stats } = slowBackend(applyConcurrency);
    const c = new Controller({
      store,
      backend,
      serials: new MemorySerialStore(),
      ...(zoneConcurrency !== undefined ? { zoneConcurrency } : {}),
    });
    c.start();
    await c.idle();
    c.stop();
    assert.equal(stats.max, expectMax);
    assert.ok(stats.applied >= ZONES);
    for (const z of store.list('DNSZone') as DNSZone[])
      assert.equal(
        z.status?.conditions?.find((cond) => cond.type === 'Ready')?.status,
        'True',
        z.metadata.name,
      );
  });
}

test('the built-in backends take every zone at once', () => {
  assert.equal(new BuiltinBackend(new ZoneTable()).applyConcurrency, Number.POSITIVE_INFINITY);
});

test('a backend asking for fewer than one zone at once gets the default', async () => {
  for (const asked of [0, Number.NaN, -3]) {
    const store = manyZones();
    const { backend, stats } = slowBackend(asked);
    const c = new Controller({ store, backend, serials: new MemorySerialStore(), zoneConcurrency: 32 });
    c.start();
    await c.idle();
    c.stop();
    assert.equal(stats.max, DEFAULT_APPLY_CONCURRENCY, `applyConcurrency ${asked}`);
  }
});
