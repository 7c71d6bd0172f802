import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  parseRollover,
  printRollover,
  type RolloverState,
  rolloverTimings,
  stepRollover,
} from './dnssec-rollover.ts';

const T = rolloverTimings(100, 5, 8, 2); // lifetime 100 s, Ipub 7 s, Iret 10 s

describe('ZSK rollover by pre-publication (RFC 7583 §3.2.1)', () => {
  test('Active → Publish → Retire → Active, each step at its time, never two steps at once', () => {
    let state: RolloverState | undefined = stepRollover(undefined, 1, new Set([1]), 0, T).next;
    assert.deepEqual(state, { phase: 'Active', key: 1, since: 0 });
    assert.deepEqual(stepRollover(state, 1, new Set([1]), 99, T).actions, []);
    const publish = stepRollover(state, 1, new Set([1]), 100, T);
    assert.deepEqual(publish.actions, [{ kind: 'create-published', replaces: 1 }]);
    state = { ...(publish.next as Extract<RolloverState, { phase: 'Publish' }>), newKey: 2 };
    assert.equal(publish.dueAt, 107);
    assert.deepEqual(stepRollover(state, 1, new Set([1, 2]), 106, T).actions, [], 'not before Ipub');
    const retire = stepRollover(state, 1, new Set([1, 2]), 107, T);
    assert.deepEqual(retire.actions, [
      { kind: 'activate', key: 2 },
      { kind: 'deactivate', key: 1 },
    ]);
    state = retire.next!;
    assert.deepEqual(stepRollover(state, 2, new Set([1, 2]), 116, T).actions, [], 'not before Iret');
    const done = stepRollover(state, 2, new Set([1, 2]), 117, T);
    assert.deepEqual(done.actions, [{ kind: 'remove', key: 1 }]);
    assert.deepEqual(done.next, { phase: 'Active', key: 2, since: 117 });
    assert.equal(done.dueAt, 217);
  });

  test('a state naming a key that is gone starts over from the signing key', () => {
    const stale: RolloverState = { phase: 'Retire', newKey: 5, oldKey: 4, since: 0 };
    assert.deepEqual(stepRollover(stale, 5, new Set([5]), 50, T).next, {
      phase: 'Active',
      key: 5,
      since: 50,
    });
  });

  test('metadata round trip; garbage reads as no state', () => {
    for (const s of [
      { phase: 'Active', key: 3, since: 12 },
      { phase: 'Publish', newKey: 4, oldKey: 3, since: 13 },
      { phase: 'Retire', newKey: 4, oldKey: 3, since: 14 },
    ] as RolloverState[])
      assert.deepEqual(parseRollover(printRollover(s)), s);
    assert.equal(parseRollover('Active x 1'), undefined);
    assert.equal(parseRollover(undefined), undefined);
  });
});
