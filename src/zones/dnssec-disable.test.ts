import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DEFAULT_DS_TTL_SECONDS,
  type DisableInput,
  type DisableState,
  parseDisable,
  printDisable,
  stepDisable,
} from './dnssec-disable.ts';

const DS = '12345 13 2 abcdef';
const base: DisableInput = {
  state: undefined,
  enabled: false,
  hasKeys: true,
  ds: [DS],
  parent: undefined,
  servedUnsigned: false,
  now: 1000,
  propagation: 3,
};
const step = (over: Partial<DisableInput>) => stepDisable({ ...base, ...over });

describe('stepDisable (RFC 8078 §4 delete)', () => {
  test('a signed zone turned off stays signed and publishes the delete CDS/CDNSKEY', () => {
    const s = step({});
    assert.deepEqual(s.next, { phase: 'Disabling', since: 1000, dsTtl: 0 });
    assert.equal(s.signed, true);
    assert.equal(s.cds, 'delete');
    assert.equal(s.removeKeys, false);
  });

  test('with no parent to see, it waits with no timeout and says what to remove and how to record it', () => {
    const s = step({ state: { phase: 'Disabling', since: 1000, dsTtl: 0 }, now: 10_000_000 });
    assert.deepEqual(s.next, { phase: 'Disabling', since: 1000, dsTtl: 0 });
    assert.equal(s.signed, true);
    assert.equal(s.dueAt, undefined);
    assert.equal(s.waiting?.reason, 'ParentDsNotRemoved');
    assert.match(s.waiting!.message, /remove the DS 12345 13 2 abcdef/);
    assert.match(s.waiting!.message, /dns\.zonekeeper\.dev\/parent-ds: none/);
  });

  test('a parent seen holding the DS keeps the zone signed and remembers the DS TTL', () => {
    const s = step({ parent: { ds: [DS], ttl: 60 } });
    assert.deepEqual(s.next, { phase: 'Disabling', since: 1000, dsTtl: 60 });
    assert.equal(s.signed, true);
    assert.equal(s.cds, 'delete');
    assert.equal(s.dueAt, 1003);
    assert.equal(s.waiting?.reason, 'ParentDsNotRemoved');
    assert.match(s.waiting!.message, /parent to remove the DS 12345 13 2 abcdef/);
  });

  test('the parent seen without the DS: the DS TTL last seen + propagation, still signed', () => {
    // A parent served here answers ttl 0 once the DS RRset is gone: the TTL remembered counts.
    const s = step({
      state: { phase: 'Disabling', since: 1000, dsTtl: 60 },
      parent: { ds: [], ttl: 0 },
      now: 1100,
    });
    assert.deepEqual(s.next, { phase: 'DsPropagate', since: 1100, wait: 63 });
    assert.equal(s.signed, true);
    assert.equal(s.cds, 'delete');
    assert.equal(s.dueAt, 1163);
    assert.equal(s.waiting, undefined);
  });

  test('a recorded removal ("none; ttl=") waits the recorded TTL; without any TTL known, a day', () => {
    const recorded = step({
      state: { phase: 'Disabling', since: 1000, dsTtl: 0 },
      parent: { ds: [], ttl: 120 },
    });
    assert.deepEqual(recorded.next, { phase: 'DsPropagate', since: 1000, wait: 123 });
    const unknown = step({
      state: { phase: 'Disabling', since: 1000, dsTtl: 0 },
      parent: { ds: [], ttl: 0 },
    });
    assert.deepEqual(unknown.next, { phase: 'DsPropagate', since: 1000, wait: DEFAULT_DS_TTL_SECONDS + 3 });
  });

  test('DsPropagate stays signed until the wait is over, then the zone is served unsigned', () => {
    const state: DisableState = { phase: 'DsPropagate', since: 1000, wait: 63 };
    const early = step({ state, parent: { ds: [], ttl: 0 }, now: 1062 });
    assert.deepEqual(early.next, state);
    assert.equal(early.signed, true);
    assert.equal(early.cds, 'delete');
    assert.equal(early.dueAt, 1063);
    const done = step({ state, parent: { ds: [], ttl: 0 }, now: 1063 });
    assert.deepEqual(done.next, { phase: 'Unsigned', since: 1063 });
    assert.equal(done.signed, false);
    assert.equal(done.cds, 'none');
    assert.equal(done.removeKeys, false, 'the keys stay until the unsigned serial is served');
  });

  test('a DS back at the parent during DsPropagate returns to Disabling with the larger TTL', () => {
    const s = step({
      state: { phase: 'DsPropagate', since: 1000, wait: 63 },
      parent: { ds: [DS], ttl: 30 },
      now: 1050,
    });
    assert.deepEqual(s.next, { phase: 'Disabling', since: 1050, dsTtl: 60 });
    assert.equal(s.signed, true);
  });

  test('the keys are removed only once the unsigned serial is served', () => {
    const state: DisableState = { phase: 'Unsigned', since: 1063 };
    const pending = step({ state, now: 1064 });
    assert.deepEqual(pending.next, state);
    assert.equal(pending.removeKeys, false);
    assert.equal(pending.signed, false);
    const served = step({ state, servedUnsigned: true, now: 1065 });
    assert.equal(served.next, undefined);
    assert.equal(served.removeKeys, true);
    assert.equal(served.signed, false);
  });

  test('re-enabling during Disabling or DsPropagate returns to normal signing with the same keys', () => {
    for (const state of [
      { phase: 'Disabling', since: 1000, dsTtl: 60 },
      { phase: 'DsPropagate', since: 1000, wait: 63 },
    ] as DisableState[]) {
      const s = step({ state, enabled: true, parent: { ds: [], ttl: 0 } });
      assert.equal(s.next, undefined);
      assert.equal(s.signed, true);
      assert.equal(s.cds, 'keys');
      assert.equal(s.removeKeys, false);
    }
  });

  test('a zone with no keys turned off has nothing to wind down; enabled with keys is normal signing', () => {
    assert.deepEqual(step({ hasKeys: false }), {
      next: undefined,
      signed: false,
      cds: 'none',
      removeKeys: false,
      dueAt: undefined,
    });
    const on = step({ enabled: true });
    assert.equal(on.next, undefined);
    assert.equal(on.signed, true);
    assert.equal(on.cds, 'keys');
  });

  test('never unsigned while a DS is held, whatever the order of observations (walk)', () => {
    // A walk over seen parents: the zone is unsigned only after a full wait with no DS seen.
    let state: DisableState | undefined;
    let lastDsAt = 0;
    const seq = [true, true, false, false, true, false, false, false, false, false];
    let now = 1000;
    for (const dsHeld of seq) {
      if (dsHeld) lastDsAt = now;
      const s = step({ state, parent: { ds: dsHeld ? [DS] : [], ttl: dsHeld ? 20 : 0 }, now });
      if (!s.signed) assert.ok(now - lastDsAt >= 20, `unsigned at ${now}, DS seen at ${lastDsAt}`);
      state = s.next;
      now += 10;
    }
    assert.equal(state?.phase, 'Unsigned');
  });

  test('print and parse round-trip; malformed text parses to nothing', () => {
    for (const s of [
      { phase: 'Disabling', since: 5, dsTtl: 0 },
      { phase: 'DsPropagate', since: 6, wait: 90 },
      { phase: 'Unsigned', since: 7 },
    ] as DisableState[])
      assert.deepEqual(parseDisable(printDisable(s)), s);
    for (const bad of [
      undefined,
      '',
      'Disabling',
      'Disabling x 1',
      'DsPropagate 5',
      'Unsigned 5 6',
      'Other 5 6',
    ])
      assert.equal(parseDisable(bad), undefined);
  });
});
