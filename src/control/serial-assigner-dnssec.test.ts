import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SerialAssigner } from './serial-assigner.ts';
import { MemorySerialStore } from './serial-store.ts';
import type { ZoneModelState } from './zone-state.ts';

const ORIGIN = 'signed.test.';

/** The part of a zone's model state the assigner reads: the content hash and the serial chosen. */
function modelState(hash: string): ZoneModelState {
  return { model: { contentHash: () => hash }, firstSerial: true } as unknown as ZoneModelState;
}

function assigner(store: MemorySerialStore, now: { t: number }): SerialAssigner {
  return new SerialAssigner({
    serials: store,
    now: () => new Date(now.t * 1000),
    log: () => {},
    hashOnChange: true,
  });
}

/** One signed assignment by a fresh assigner (a restart): the content hash `hash`, the settings `id`. */
function assignSigned(
  store: MemorySerialStore,
  now: { t: number },
  status: Parameters<SerialAssigner['assign']>[1],
  hash: string,
  id: string,
): ReturnType<SerialAssigner['assign']> {
  return assigner(store, now).assign(ORIGIN, status, modelState(hash), undefined, signing(id));
}

const T0 = Date.UTC(2026, 10, 26, 12) / 1000;
const signing = (id: string, dueAfter = 3600) => ({
  id,
  resignDue: (signedAt: number, now: number) => now - signedAt >= dueAfter,
});

describe('the signing time is recorded with the serial (ADR 0021)', () => {
  test('a signed zone’s serial carries its signing time and settings, durably', async () => {
    const store = new MemorySerialStore();
    const now = { t: T0 };
    const state = modelState('h1');
    const a = await assigner(store, now).assign(ORIGIN, undefined, state, undefined, signing('A/NSEC/CSK'));
    assert.equal(a.signedAt, T0);
    assert.equal(a.signing, 'A/NSEC/CSK');
    assert.deepEqual(store.get(ORIGIN), {
      serial: a.serial,
      hash: 'h1',
      signing: 'A/NSEC/CSK',
      signedAt: T0,
    });
  });

  test('a restart keeps the serial and its signing time when the content and settings are the same', async () => {
    const store = new MemorySerialStore();
    const now = { t: T0 };
    const first = await assignSigned(store, now, undefined, 'h1', 'S');
    now.t += 600;
    const again = await assignSigned(store, now, undefined, 'h1', 'S');
    assert.equal(again.serial, first.serial);
    assert.equal(again.signedAt, T0);
  });

  test('signatures due: a new serial with a new signing time, for the same content', async () => {
    const store = new MemorySerialStore();
    const now = { t: T0 };
    const zone = assigner(store, now);
    const state = modelState('h1');
    const first = await zone.assign(ORIGIN, undefined, state, undefined, signing('S'));
    now.t += 1800;
    assert.equal((await zone.assign(ORIGIN, undefined, state, undefined, signing('S'))).serial, first.serial);
    now.t += 1800;
    const resigned = await zone.assign(ORIGIN, undefined, state, undefined, signing('S'));
    assert.ok(resigned.serial > first.serial);
    assert.equal(resigned.signedAt, T0 + 3600);
    assert.equal(store.get(ORIGIN)!.signedAt, T0 + 3600);
  });

  test('after a restart, signatures due are not served again: a new serial', async () => {
    const store = new MemorySerialStore();
    const now = { t: T0 };
    const first = await assignSigned(store, now, undefined, 'h1', 'S');
    now.t += 7200;
    const later = await assignSigned(store, now, undefined, 'h1', 'S');
    assert.ok(later.serial > first.serial);
    assert.equal(later.signedAt, T0 + 7200);
  });

  test('signing turned on, changed or off is a new serial even for the same records', async () => {
    const store = new MemorySerialStore();
    const now = { t: T0 };
    const unsigned = await assigner(store, now).assign(ORIGIN, undefined, modelState('h1'), undefined);
    const on = await assignSigned(store, now, undefined, 'h1', 'S');
    assert.ok(on.serial > unsigned.serial);
    const changed = await assignSigned(store, now, undefined, 'h1', 'S3');
    assert.ok(changed.serial > on.serial);
    const off = await assigner(store, now).assign(ORIGIN, undefined, modelState('h1'), undefined);
    assert.ok(off.serial > changed.serial);
    assert.equal(off.signedAt, undefined);
    assert.equal(store.get(ORIGIN)!.signing, undefined);
  });

  test('saving the content hash later keeps the signing time with the serial', async () => {
    const store = new MemorySerialStore();
    const now = { t: T0 };
    const zone = new SerialAssigner({
      serials: store,
      now: () => new Date(now.t * 1000),
      log: () => {},
      hashOnChange: false,
    });
    const state = modelState('h1');
    state.firstSerial = false;
    const a = await zone.assign(ORIGIN, undefined, state, undefined, signing('S'));
    assert.equal(store.get(ORIGIN)!.hash, undefined);
    await zone.saveHash(ORIGIN, a.serial, 'h1');
    assert.deepEqual(store.get(ORIGIN), { serial: a.serial, hash: 'h1', signing: 'S', signedAt: T0 });
  });

  test('a store without signing times (serial records): the status signing time of the same serial and content is kept', async () => {
    const store = new MemorySerialStore();
    const now = { t: T0 };
    const first = await assignSigned(store, now, undefined, 'h1', 'S');
    const status = { serial: first.serial, hash: 'h1', signedAt: first.signedAt!, signing: 'S' };
    // What the cluster's serial records keep: serial and hash only.
    const records = new MemorySerialStore();
    await records.set(ORIGIN, { serial: first.serial, hash: 'h1' });
    now.t += 600;
    const kept = await assignSigned(records, now, status, 'h1', 'S');
    assert.equal(kept.serial, first.serial);
    assert.equal(kept.signedAt, T0);
    // Other content, other settings, or a signing time in the future: a new serial, signed now.
    for (const [hash, id, signedAt] of [
      ['h2', 'S', T0],
      ['h1', 'T', T0],
      ['h1', 'S', now.t + 3600],
    ] as const) {
      const r = new MemorySerialStore();
      await r.set(ORIGIN, { serial: first.serial, hash: 'h1' });
      const a = await assigner(r, now).assign(
        ORIGIN,
        { ...status, signedAt },
        modelState(hash),
        undefined,
        signing(id),
      );
      assert.notEqual(a.serial, first.serial, `${hash} ${id} ${signedAt}`);
      assert.equal(a.signedAt, now.t);
    }
  });
});
