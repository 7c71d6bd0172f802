/**
 * Where a zone's next serial comes from when more than one writer keeps serials: the serial store
 * refusing a serial another writer recorded (a leader handover), and a DNSZone status that knows a
 * higher serial than the store. Each case checks that no serial is served with two contents and that
 * serials never go back.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FailurePlan, RecordingBackend } from '../../test/support/failure-injection.ts';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSZone } from '../api/index.ts';
import { type Name, nameKey } from '../dns/name.ts';
import { Controller } from './controller.ts';
import { MemoryStore } from './memory-store.ts';
import {
  MemorySerialStore,
  type SerialStore,
  SerialTakenError,
  type ZoneSerialState,
} from './serial-store.ts';

const now = () => new Date('2026-11-21T12:00:00Z');
const ORIGIN = 'example.com.';
const ZONE_KEY = 'dns/example-com';

function www(store: MemoryStore, address: string): void {
  store.apply(
    recordSet(
      'dns',
      'www',
      { zoneRef: { name: 'example-com' }, name: 'www', type: 'A', records: [address] },
      1,
    ),
  );
}

function seeded(address: string): MemoryStore {
  const store = new MemoryStore(now);
  store.apply(zoneClass());
  store.apply(zone('dns', 'example-com', 'example.com'));
  www(store, address);
  return store;
}

function start(store: MemoryStore, backend: RecordingBackend, serials: SerialStore): Controller {
  const controller = new Controller({
    store,
    backend,
    serials,
    now,
    hashOnChange: true,
    retryBaseDelayMs: 2,
    retryMaxDelayMs: 20,
  });
  controller.start();
  return controller;
}

function status(store: MemoryStore): DNSZone['status'] {
  return (store.get('DNSZone', ZONE_KEY) as DNSZone | undefined)?.status;
}

/** Waits until the zone is Ready and the backend serves `address` at the status serial; returns it. */
async function ready(store: MemoryStore, backend: RecordingBackend, address: string): Promise<number> {
  const deadline = performance.now() + 5000;
  for (;;) {
    const s = status(store);
    const served = backend.served(ORIGIN);
    if (
      s?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' &&
      served !== undefined &&
      served.serial === s.serial &&
      served.content.includes(` A ${address}`)
    )
      return served.serial;
    if (performance.now() > deadline)
      assert.fail(`not Ready with ${address}: status ${JSON.stringify(s)}, served ${JSON.stringify(served)}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * A store another writer shares: it has recorded `other` for the origin, but this process read the
 * store before that, so `get` does not show it until a save finds it (as a conditional write would).
 */
class SharedSerialStore implements SerialStore {
  private readonly states = new Map<string, ZoneSerialState>();
  readonly refused: number[] = [];
  private other: ZoneSerialState | undefined;

  constructor(other: ZoneSerialState | undefined) {
    this.other = other;
  }

  get(origin: Name): ZoneSerialState | undefined {
    return this.states.get(nameKey(origin));
  }

  async set(origin: Name, state: ZoneSerialState): Promise<void> {
    const other = this.other;
    if (other && state.serial <= other.serial) {
      this.other = undefined;
      this.states.set(nameKey(origin), other);
      this.refused.push(state.serial);
      throw new SerialTakenError(
        `serial ${state.serial} is at or below ${other.serial}, recorded by another writer`,
      );
    }
    this.states.set(nameKey(origin), { ...state });
  }
}

describe('Controller: serials shared with another writer', () => {
  test('a serial another writer recorded is not saved again: the retry takes one above it', async () => {
    const store = seeded('192.0.2.1');
    const backend = new RecordingBackend(new FailurePlan());
    // The other writer (the leader before) recorded serial ...05 after this one read the store.
    const serials = new SharedSerialStore({ serial: 2026112105 });
    const controller = start(store, backend, serials);
    try {
      const serial = await ready(store, backend, '192.0.2.1');
      assert.deepEqual(serials.refused, [2026112100]);
      assert.equal(serial, 2026112106);
      assert.deepEqual(backend.violations, []);
      // The refused serial was never served.
      assert.equal(backend.history.get(ORIGIN)?.has(2026112100), false);
    } finally {
      controller.stop();
    }
  });

  test('a status serial above the stored one wins: new content is served above both', async () => {
    const store = seeded('192.0.2.1');
    // The zone's status recorded ...07 (e.g. before the store held this origin); the store knows ...03.
    await store.updateStatus('DNSZone', ZONE_KEY, { serial: 2026112107, hash: 'content-before' });
    const serials = new MemorySerialStore();
    await serials.set(ORIGIN, { serial: 2026112103 });
    const backend = new RecordingBackend(new FailurePlan());
    const controller = start(store, backend, serials);
    try {
      assert.equal(await ready(store, backend, '192.0.2.1'), 2026112108);
    } finally {
      controller.stop();
    }
  });

  test('at an equal serial, the status that knows the content hash keeps the serial of unchanged content', async () => {
    const store = seeded('192.0.2.1');
    const backend = new RecordingBackend(new FailurePlan());
    const first = start(store, backend, new MemorySerialStore());
    const serial = await ready(store, backend, '192.0.2.1');
    first.stop();
    // A reservation recorded the serial without a hash (a block reserved ahead); the status confirms
    // which content it was served with.
    const serials = new MemorySerialStore();
    await serials.set(ORIGIN, { serial });
    const next = start(store, backend, serials);
    try {
      assert.equal(await ready(store, backend, '192.0.2.1'), serial);
      www(store, '192.0.2.2');
      assert.equal(await ready(store, backend, '192.0.2.2'), serial + 1);
      assert.deepEqual(backend.violations, []);
    } finally {
      next.stop();
    }
  });
});
