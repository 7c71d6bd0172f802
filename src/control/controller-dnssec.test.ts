/**
 * DNSSEC settings in the controller: a zone asking to be signed by a backend that does not sign is
 * served unsigned and says so; a backend that signs gets the zone's effective settings (the zone's
 * fields over the class's) and its report lands in status.dnssec.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSZone, EffectiveDnssec } from '../api/index.ts';
import type { ApplyResult, Backend, ProgrammedZone } from '../backends/backend.ts';
import { BUILTIN_CAPABILITIES, BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { RRType } from '../dns/rrtype.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { Controller } from './controller.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';

const KEY = 'dns/example-com';
const status = (store: MemoryStore) => (store.get('DNSZone', KEY) as DNSZone).status;

describe('controller: DNSSEC settings', () => {
  test('a backend that does not sign: served unsigned, Accepted says so, no status.dnssec', async () => {
    const store = new MemoryStore();
    const controller = new Controller({
      store,
      backend: new BuiltinBackend(new ZoneTable()),
      serials: new MemorySerialStore(),
    });
    store.apply(zoneClass());
    store.apply(zone('dns', 'example-com', 'example.com', { dnssec: { enabled: true } }));
    controller.start();
    await controller.idle();
    controller.stop();
    const s = status(store)!;
    const accepted = s.conditions!.find((c) => c.type === 'Accepted')!;
    assert.match(
      accepted.message,
      /DNSSEC is enabled but backend builtin does not sign zones: served unsigned/,
    );
    assert.equal(s.conditions!.find((c) => c.type === 'Ready')?.status, 'True');
    assert.equal(s.dnssec, undefined);
  });

  test('a backend that signs: the zone fields over the class defaults, and its report in status.dnssec', async () => {
    const seen: (EffectiveDnssec | undefined)[] = [];
    const inner = new BuiltinBackend(new ZoneTable());
    const signing: Backend = Object.assign(Object.create(inner) as Backend, {
      capabilities: { ...BUILTIN_CAPABILITIES, dnssec: true },
      async applyZone(z: ProgrammedZone): Promise<ApplyResult> {
        seen.push(z.dnssec);
        await inner.applyZone(z);
        return z.dnssec
          ? {
              dnssec: {
                keys: [{ keyTag: 4242, algorithm: 15, role: 'CSK', active: true }],
                ds: ['4242 15 2 ab'],
                cds: 'Published',
              },
            }
          : {};
      },
    });
    const store = new MemoryStore();
    const controller = new Controller({ store, backend: signing, serials: new MemorySerialStore() });
    store.apply(
      zoneClass('builtin', undefined, { dnssec: { enabled: true, algorithm: 'ED25519', denial: 'NSEC3' } }),
    );
    const z = zone('dns', 'example-com', 'example.com', { dnssec: { denial: 'NSEC' } });
    store.apply(z);
    controller.start();
    await controller.idle();
    assert.deepEqual(seen.at(-1), {
      algorithm: 'ED25519',
      denial: 'NSEC',
      keys: 'CSK',
      zskLifetimeSeconds: 7776000,
      kskLifetimeSeconds: 0,
    });
    // The DS an operator recorded for a parent Zonekeeper cannot see reaches the backend.
    store.apply({
      ...z,
      metadata: { ...z.metadata, annotations: { 'dns.zonekeeper.dev/parent-ds': '4242 15 2 AB; ttl=600' } },
    });
    await controller.idle();
    controller.stop();
    assert.deepEqual(seen.at(-1)?.parentDs, { ds: ['4242 15 2 AB'], ttl: 600 });
    assert.deepEqual(status(store)!.dnssec?.ds, ['4242 15 2 ab']);
  });

  test('a signed child zone: its DS, from its status, is published at the cut in its managed parent', async () => {
    const table = new ZoneTable();
    const inner = new BuiltinBackend(table);
    const signing: Backend = Object.assign(Object.create(inner) as Backend, {
      capabilities: { ...BUILTIN_CAPABILITIES, dnssec: true },
      async applyZone(z: ProgrammedZone): Promise<ApplyResult> {
        await inner.applyZone(z);
        return z.dnssec ? { dnssec: { ds: [`4242 13 2 ${'ab'.repeat(32)}`] } } : {};
      },
    });
    const store = new MemoryStore();
    const controller = new Controller({ store, backend: signing, serials: new MemorySerialStore() });
    store.apply(zoneClass());
    store.apply(zone('dns', 'example-com', 'example.com'));
    store.apply(zone('dns', 'sub', 'sub.example.com', { dnssec: { enabled: true } }, 5));
    controller.start();
    await controller.idle();
    const served = () => table.get('example.com.')?.nodes.get('sub.example.com.')?.rrsets.get(RRType.DS);
    await waitUntil(
      () => served() !== undefined,
      () => controller.idle(),
    );
    assert.deepEqual(served()!.rdata, [
      { type: 'DS', keyTag: 4242, algorithm: 13, digestType: 2, digest: 'ab'.repeat(32) },
    ]);
    // DNSSEC off in the child: its DS leaves the parent.
    store.apply(zone('dns', 'sub', 'sub.example.com', {}, 5));
    await waitUntil(
      () => served() === undefined,
      () => controller.idle(),
    );
    controller.stop();
  });
});

async function waitUntil(done: () => boolean, step: () => Promise<void>): Promise<void> {
  for (let i = 0; i < 50 && !done(); i++) {
    await step();
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.ok(done(), 'condition reached');
}
