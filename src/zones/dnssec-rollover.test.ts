import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type KeyRollState,
  type KeyRollTimings,
  type KeyRollWant,
  keyRollTimings,
  parseKeyRoll,
  parseRollover,
  printKeyRoll,
  printRollover,
  type RolloverState,
  rolloverTimings,
  stepKeyRoll,
  stepRollover,
  type ZoneKey,
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

describe('algorithm and KSK rollovers (RFC 6781 §4.1.4, RFC 7583 §3.3.1)', () => {
  // DNSKEY TTL 5 + propagation 2 = 7 s; largest TTL 8 + 2 = 10 s.
  const KT: KeyRollTimings = { publish: 7, sign: 10, propagation: 2 };
  const key = (id: number, role: ZoneKey['role'], algorithm: number, active = true, published = true) =>
    ({
      id,
      role,
      algorithm,
      active,
      published,
      ds: role === 'zsk' ? [] : [`${id} ${algorithm} 2 AB${id}`],
    }) as ZoneKey;
  const split13 = [key(1, 'ksk', 13), key(2, 'zsk', 13)];
  const want15: KeyRollWant = { algorithm: 15, split: true, kskLifetime: 0 };
  type Rolling = Exclude<KeyRollState, { phase: 'Idle' }>;

  test('idle on one algorithm: nothing to do, no step due without a KSK lifetime', () => {
    const s = stepKeyRoll(undefined, split13, { ...want15, algorithm: 13 }, undefined, 0, KT);
    assert.deepEqual(s.actions, []);
    assert.deepEqual(s.next, { phase: 'Idle', since: 0 });
    assert.equal(s.dueAt, undefined);
    assert.deepEqual(s.ds, ['1 13 2 AB1']);
  });

  test('algorithm rollover: Sign → Publish → DsChange → DsPropagate → Unpublish → Idle, each at its time', () => {
    const start = stepKeyRoll({ phase: 'Idle', since: 0 }, split13, want15, undefined, 100, KT);
    assert.deepEqual(start.actions, [
      { kind: 'create', role: 'ksk', algorithm: 15, active: true, published: false },
      { kind: 'create', role: 'zsk', algorithm: 15, active: true, published: false },
    ]);
    assert.equal(start.dueAt, 110, 'Sign lasts the largest TTL + propagation');
    assert.deepEqual(start.ds, ['1 13 2 AB1'], 'the parent keeps the old DS while the new keys are hidden');
    let state: KeyRollState = { ...(start.next as Rolling), newKeys: [3, 4] };
    assert.deepEqual(state.oldKeys, [1, 2]);
    let keys = [...split13, key(3, 'ksk', 15, true, false), key(4, 'zsk', 15, true, false)];
    assert.deepEqual(stepKeyRoll(state, keys, want15, undefined, 109, KT).actions, [], 'not before Isig');
    const publish = stepKeyRoll(state, keys, want15, undefined, 110, KT);
    assert.deepEqual(publish.actions, [
      { kind: 'set', key: 3, active: true, published: true },
      { kind: 'set', key: 4, active: true, published: true },
    ]);
    assert.equal(publish.dueAt, 117, 'Publish lasts the DNSKEY TTL + propagation');
    state = publish.next;
    keys = [...split13, key(3, 'ksk', 15), key(4, 'zsk', 15)];
    assert.deepEqual(stepKeyRoll(state, keys, want15, undefined, 116, KT).next, state);
    // The parent is not visible: the phase waits and says what to give the parent.
    const blind = stepKeyRoll(state, keys, want15, undefined, 117, KT);
    assert.equal(blind.next.phase, 'DsChange');
    assert.equal(blind.dueAt, undefined);
    assert.deepEqual(blind.ds, ['3 15 2 AB3']);
    assert.equal(blind.waiting?.reason, 'ParentDsNotVisible');
    assert.match(
      blind.waiting!.message,
      /3 15 2 AB3 in place of 1 13 2 AB1.*dns\.zonekeeper\.dev\/parent-ds/,
    );
    state = blind.next;
    // The parent still holds the old DS: pending, looked at again after the propagation delay.
    const pending = stepKeyRoll(state, keys, want15, { ds: ['1 13 2 ab1'], ttl: 30 }, 118, KT);
    assert.equal(pending.waiting?.reason, 'ParentDsPending');
    assert.equal(pending.dueAt, 120);
    assert.deepEqual(pending.actions, []);
    // The parent publishes the new DS (case and digest grouping aside): its TTL decides the wait.
    const seen = stepKeyRoll(state, keys, want15, { ds: ['1 13 2 AB1', '3 15 2 a b3'], ttl: 30 }, 120, KT);
    assert.equal(seen.next.phase, 'DsPropagate');
    assert.equal(seen.dueAt, 152, "the parent's DS TTL + propagation");
    state = seen.next;
    assert.deepEqual(stepKeyRoll(state, keys, want15, undefined, 151, KT).actions, []);
    const unpublish = stepKeyRoll(state, keys, want15, undefined, 152, KT);
    assert.deepEqual(
      unpublish.actions,
      [
        { kind: 'set', key: 1, active: true, published: false },
        { kind: 'set', key: 2, active: true, published: false },
      ],
      'old DNSKEYs withdrawn first, their signatures stay (RFC 6781 §4.1.4)',
    );
    assert.equal(unpublish.dueAt, 159);
    state = unpublish.next;
    keys = [
      key(1, 'ksk', 13, true, false),
      key(2, 'zsk', 13, true, false),
      key(3, 'ksk', 15),
      key(4, 'zsk', 15),
    ];
    assert.deepEqual(stepKeyRoll(state, keys, want15, undefined, 158, KT).actions, []);
    const done = stepKeyRoll(state, keys, want15, undefined, 159, KT);
    assert.deepEqual(done.actions, [
      { kind: 'remove', key: 1 },
      { kind: 'remove', key: 2 },
    ]);
    assert.deepEqual(done.next, { phase: 'Idle', since: 159 });
    const after = stepKeyRoll(done.next, [key(3, 'ksk', 15), key(4, 'zsk', 15)], want15, undefined, 200, KT);
    assert.deepEqual(after.actions, [], 'one algorithm again: idle');
  });

  test('a CSK zone rolls its algorithm with one new CSK', () => {
    const s = stepKeyRoll(
      undefined,
      [key(1, 'csk', 13)],
      { algorithm: 14, split: false, kskLifetime: 0 },
      undefined,
      0,
      KT,
    );
    assert.deepEqual(s.actions, [
      { kind: 'create', role: 'csk', algorithm: 14, active: true, published: false },
    ]);
  });

  test('KSK rollover (double-KSK): at the lifetime, Publish → DsChange → DsPropagate → old KSK removed', () => {
    const want: KeyRollWant = { algorithm: 13, split: true, kskLifetime: 1000 };
    const idle = stepKeyRoll({ phase: 'Idle', since: 0 }, split13, want, undefined, 999, KT);
    assert.deepEqual(idle.actions, []);
    assert.equal(idle.dueAt, 1000);
    const start = stepKeyRoll({ phase: 'Idle', since: 0 }, split13, want, undefined, 1000, KT);
    assert.deepEqual(start.actions, [
      { kind: 'create', role: 'ksk', algorithm: 13, active: true, published: true },
    ]);
    assert.equal(start.next.phase, 'Publish');
    assert.equal(start.dueAt, 1007);
    let state: KeyRollState = { ...(start.next as Rolling), newKeys: [5] };
    assert.deepEqual(state.oldKeys, [1], 'the ZSK is not part of it');
    const keys = [...split13, key(5, 'ksk', 13)];
    assert.deepEqual(
      stepKeyRoll(state, keys, want, undefined, 1006, KT).ds,
      ['1 13 2 AB1'],
      'old DS until Ipub',
    );
    const change = stepKeyRoll(state, keys, want, { ds: ['1 13 2 AB1'], ttl: 60 }, 1007, KT);
    assert.equal(change.next.phase, 'DsChange');
    assert.deepEqual(change.ds, ['5 13 2 AB5'], 'the DS to give the parent is the new one');
    state = change.next;
    const seen = stepKeyRoll(state, keys, want, { ds: ['5 13 2 AB5'], ttl: 60 }, 1010, KT);
    assert.equal(seen.dueAt, 1072);
    state = seen.next;
    const done = stepKeyRoll(state, keys, want, undefined, 1072, KT);
    assert.deepEqual(done.actions, [{ kind: 'remove', key: 1 }]);
    assert.deepEqual(done.next, { phase: 'Idle', since: 1072 });
    assert.equal(done.dueAt, 2072);
  });

  test('no KSK rollover for a CSK, nor with lifetime 0', () => {
    for (const [keys, want] of [
      [[key(1, 'csk', 13)], { algorithm: 13, split: false, kskLifetime: 10 }],
      [split13, { algorithm: 13, split: true, kskLifetime: 0 }],
    ] as const)
      assert.deepEqual(
        stepKeyRoll({ phase: 'Idle', since: 0 }, keys, want, undefined, 10_000, KT).actions,
        [],
      );
  });

  test('a rollover whose new keys were removed by hand is abandoned and starts over', () => {
    const state: KeyRollState = {
      phase: 'Publish',
      kind: 'Algorithm',
      since: 0,
      wait: 0,
      newKeys: [3, 4],
      oldKeys: [1, 2],
    };
    const s = stepKeyRoll(state, split13, want15, undefined, 50, KT);
    assert.equal(s.next.phase, 'Sign', 'started again from the old keys');
    assert.equal(s.actions.length, 2);
  });

  test('the algorithm changed again mid-rollover: the one in progress finishes, then the next begins', () => {
    const state: KeyRollState = {
      phase: 'Publish',
      kind: 'Algorithm',
      since: 0,
      wait: 0,
      newKeys: [3, 4],
      oldKeys: [1, 2],
    };
    const keys = [...split13, key(3, 'ksk', 15), key(4, 'zsk', 15)];
    const want14: KeyRollWant = { algorithm: 14, split: true, kskLifetime: 0 };
    const s = stepKeyRoll(state, keys, want14, undefined, 7, KT);
    assert.equal(s.next.phase, 'DsChange', 'no key of a third algorithm while two are in play');
    assert.deepEqual(s.actions, []);
    const idle = stepKeyRoll(
      { phase: 'Idle', since: 0 },
      [key(3, 'ksk', 15), key(4, 'zsk', 15)],
      want14,
      undefined,
      50,
      KT,
    );
    assert.deepEqual(
      idle.actions.map((a) => a.kind === 'create' && a.algorithm),
      [14, 14],
    );
  });

  test("the zone's TTLs decide every wait: DNSKEY TTL 1 h, largest TTL 1 day, refresh 2 h, parent DS TTL 1 day", () => {
    const t = keyRollTimings(3600, 86400, 7200);
    const keys = [...split13, key(3, 'ksk', 15), key(4, 'zsk', 15)];
    const start = stepKeyRoll(undefined, split13, want15, undefined, 0, t);
    assert.equal(start.dueAt, 93600, 'Sign: largest TTL + refresh');
    const state = { ...(start.next as Rolling), newKeys: [3, 4] };
    const publish = stepKeyRoll(state, keys, want15, undefined, 93600, t);
    assert.equal(publish.dueAt, 93600 + 10800, 'Publish: DNSKEY TTL + refresh');
    const seen = stepKeyRoll(publish.next, keys, want15, { ds: ['3 15 2 ab3'], ttl: 86400 }, 104400, t);
    assert.equal(seen.next.phase, 'DsPropagate');
    assert.equal(seen.dueAt, 104400 + 93600, "DsPropagate: the parent's DS TTL + refresh");
    const unpublish = stepKeyRoll(seen.next, keys, want15, undefined, 198000, t);
    assert.equal(unpublish.dueAt, 198000 + 10800, 'Unpublish: DNSKEY TTL + refresh');
  });

  test('metadata round trip; garbage reads as no state', () => {
    for (const s of [
      { phase: 'Idle', since: 4 },
      { phase: 'Sign', kind: 'Algorithm', since: 5, wait: 0, newKeys: [3, 4], oldKeys: [1, 2] },
      { phase: 'DsPropagate', kind: 'KSK', since: 6, wait: 62, newKeys: [5], oldKeys: [] },
    ] as KeyRollState[])
      assert.deepEqual(parseKeyRoll(printKeyRoll(s)), s);
    for (const bad of ['Sign KSK 1 0 x -', 'Unknown Algorithm 1 0 1 2', 'Idle', undefined])
      assert.equal(parseKeyRoll(bad), undefined);
  });
});
