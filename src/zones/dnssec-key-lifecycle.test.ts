import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EffectiveDnssec } from '../api/dnssec.ts';
import { dnskeyRdata, dsOf, generateDnssecKey, keyTag } from '../dns/dnssec/keys.ts';
import { printRdata } from '../dns/rdata.ts';
import { type LifecycleInput, stepKeyLifecycle } from './dnssec-key-lifecycle.ts';
import {
  generateZoneKeys,
  type KeySetState,
  keyStateAt,
  keysAt,
  keysMatch,
  nextKeyEvent,
} from './dnssec-key-set.ts';

const SPLIT: EffectiveDnssec = {
  algorithm: 'ECDSAP256SHA256',
  denial: 'NSEC',
  keys: 'Split',
  zskLifetimeSeconds: 100,
  kskLifetimeSeconds: 0,
};
// DNSKEY TTL 5, largest TTL 8, propagation 2: Ipub 7 s, Iret 10 s.
const TTLS = { dnskey: 5, largest: 8, propagation: 2 };
/** Every phase of an algorithm roll (also a key mode change), in order, then none. */
const ALGORITHM_ROLL_PHASES = [
  'Algorithm/Sign',
  'Algorithm/Publish',
  'Algorithm/DsChange',
  'Algorithm/DsPropagate',
  'Algorithm/Unpublish',
  'none',
];
const ORIGIN = 'example.com.';
const tag = (k: { key: Parameters<typeof dnskeyRdata>[0] }) => keyTag(dnskeyRdata(k.key));
const tags = (keys: Parameters<typeof dnskeyRdata>[0][]) => keys.map((k) => keyTag(dnskeyRdata(k))).sort();

/**
 * Runs the lifecycle as the built-in backend does: after each served serial, a step; a recorded key
 * event gets a new serial signed at or after it. Returns every serial's signing time and key set.
 */
function run(
  held: KeySetState,
  settings: EffectiveDnssec,
  until: number,
  parent?: (at: number, ds: string[]) => LifecycleInput['parent'],
) {
  const serials: { signedAt: number; keys: KeySetState['keys'] }[] = [];
  let signedAt = 0;
  let state = held;
  let phases: string[] = [];
  for (let now = 0; now <= until; now++) {
    const event = nextKeyEvent(state.keys, signedAt);
    if (event !== undefined && event <= now) {
      signedAt = now;
      serials.push({ signedAt, keys: state.keys });
    }
    const ds = keysAt(state.keys, signedAt).parent.map((k) => printRdata(dsOf(ORIGIN, k)));
    const step = stepKeyLifecycle({
      origin: ORIGIN,
      held: state,
      settings,
      signedAt,
      now,
      ttls: TTLS,
      parent: parent?.(now, ds),
      generate: generateDnssecKey,
    });
    if (step.next) state = step.next;
    const phase = step.rollover ? `${step.rollover.kind}/${step.rollover.phase}` : 'none';
    if (phases.at(-1) !== phase) phases = [...phases, phase];
  }
  return { serials, state, phases };
}

describe('the key lifecycle of the built-in signer', () => {
  test('key state at a time: no events is in use since always; before its first event a key is absent', () => {
    const [ksk, zsk] = generateZoneKeys(SPLIT, generateDnssecKey);
    assert.deepEqual(keyStateAt(ksk!, 5), { active: true, published: true, ds: true });
    const later = {
      ...zsk!,
      events: [
        { at: 10, active: false, published: true, ds: false },
        { at: 20, active: true, published: true },
        { at: 30, active: false, published: false },
      ],
    };
    assert.deepEqual(keyStateAt(later, 9), { active: false, published: false, ds: false });
    assert.deepEqual(keyStateAt(later, 10), { active: false, published: true, ds: false });
    assert.deepEqual(keyStateAt(later, 25), { active: true, published: true, ds: false });
    assert.deepEqual(keyStateAt(later, 30), { active: false, published: false, ds: false });
    assert.equal(nextKeyEvent([ksk!, later], 10), 20);
    assert.equal(nextKeyEvent([ksk!, later], 30), undefined);
  });

  test('ZSK pre-publication: published Ipub before it signs, the old one published Iret after its last signature', () => {
    const start: KeySetState = { keys: generateZoneKeys(SPLIT, generateDnssecKey) };
    const { serials, state, phases } = run(start, SPLIT, 140);
    assert.deepEqual(phases, ['ZSK/Active', 'ZSK/Publish', 'ZSK/Retire', 'ZSK/Active']);
    const old = start.keys.find((k) => k.role === 'ZSK')!;
    const fresh = state.keys.find((k) => k.role === 'ZSK' && tag(k) !== tag(old))!;
    assert.ok(fresh, 'a new ZSK');
    assert.equal(
      state.keys.filter((k) => k.role === 'ZSK').length,
      1,
      'the old ZSK removed from the key set',
    );
    // Serial by serial: the ZSK that signs is published, and was published Ipub (7 s) before; the
    // ZSK that stopped signing stays published Iret (10 s).
    const at = (s: (typeof serials)[number]) => keysAt(s.keys, s.signedAt);
    const firstPublished = serials.find((s) => tags(at(s).published).includes(tag(fresh)))!;
    const firstSigning = serials.find((s) => tags(at(s).zoneSigning).includes(tag(fresh)))!;
    const lastOldSig = serials.findLast((s) => tags(at(s).zoneSigning).includes(tag(old)))!;
    const oldGone = serials.find(
      (s) => s.signedAt > lastOldSig.signedAt && !tags(at(s).published).includes(tag(old)),
    )!;
    assert.ok(firstSigning.signedAt - firstPublished.signedAt >= 7);
    // The serial after the old key's last signature is the first without its signatures.
    const firstWithout = serials.find((s) => s.signedAt > lastOldSig.signedAt)!;
    assert.ok(oldGone.signedAt - firstWithout.signedAt >= 10);
    for (const s of serials) {
      const k = at(s);
      assert.equal(k.zoneSigning.length, 1, `one ZSK signs at ${s.signedAt}`);
      assert.ok(
        tags(k.published).includes(tags(k.zoneSigning)[0]!),
        `the signing ZSK is published at ${s.signedAt}`,
      );
      assert.deepEqual(tags(k.keySigning), tags(k.parent), 'the KSK signs and is the DS set');
    }
  });

  test('a step never changes a serial already signed: events come after its signing time', () => {
    const start: KeySetState = { keys: generateZoneKeys(SPLIT, generateDnssecKey), zskRoll: 'Active 0 2' };
    const step = stepKeyLifecycle({
      origin: ORIGIN,
      held: start,
      settings: SPLIT,
      signedAt: 150,
      now: 120,
      ttls: TTLS,
      parent: undefined,
      generate: generateDnssecKey,
    });
    assert.ok(step.next);
    assert.deepEqual(tags(keysAt(step.next.keys, 150).published), tags(keysAt(start.keys, 150).published));
    assert.equal(nextKeyEvent(step.next.keys, 150), 151);
    assert.equal(step.dueAt, 151);
    // Until a serial carries that event, no further step is taken.
    const waiting = stepKeyLifecycle({
      origin: ORIGIN,
      held: step.next,
      settings: SPLIT,
      signedAt: 150,
      now: 1000,
      ttls: TTLS,
      parent: undefined,
      generate: generateDnssecKey,
    });
    assert.equal(waiting.next, undefined);
    assert.equal(waiting.rollover?.phase, 'Publish');
  });

  test('algorithm rollover: waits for the parent with the DS to give it, then finishes on one algorithm', () => {
    const start: KeySetState = {
      keys: generateZoneKeys({ ...SPLIT, zskLifetimeSeconds: 0 }, generateDnssecKey),
    };
    const ed = { ...SPLIT, algorithm: 'ED25519' as const, zskLifetimeSeconds: 0 };
    // No parent seen: it stops in DsChange, saying what to give the parent.
    const stuck = run(start, ed, 200);
    assert.deepEqual(stuck.phases, ['Algorithm/Sign', 'Algorithm/Publish', 'Algorithm/DsChange']);
    // A parent that takes the DS the zone's status asks for once it is asked (a managed parent).
    let held: string[] | undefined;
    const { serials, state, phases } = run(start, ed, 300, (_, ds) => {
      held ??= ds;
      if (ds.some((d) => d.split(' ')[1] === '15')) held = ds;
      return { ds: held, ttl: 3 };
    });
    assert.deepEqual(phases, ALGORITHM_ROLL_PHASES);
    assert.ok(state.keys.every((k) => k.key.algorithm === 15));
    assert.ok(keysMatch(state.keys, ed));
    for (const s of serials) {
      const k = keysAt(s.keys, s.signedAt);
      const published = new Set(k.published.map((p) => p.algorithm));
      // RFC 4035 §2.2 / RFC 6781 §4.1.4: every algorithm published signs; the DS set is published.
      for (const a of published)
        assert.ok(
          k.zoneSigning.some((z) => z.algorithm === a),
          `alg ${a} signs at ${s.signedAt}`,
        );
      assert.ok(k.parent.length > 0 && k.parent.every((p) => k.published.includes(p)));
      assert.ok(
        k.parent.every((p) => p.algorithm === k.parent[0]!.algorithm),
        'one DS algorithm at a time',
      );
    }
  });

  test('keys that sign on the way to the settings: another algorithm or key mode still do (a rollover moves them)', () => {
    const split = generateZoneKeys(SPLIT, generateDnssecKey);
    assert.ok(keysMatch(split, { ...SPLIT, algorithm: 'ED25519' }));
    assert.ok(keysMatch(split, { ...SPLIT, keys: 'CSK' }));
    assert.ok(!keysMatch([], SPLIT));
    assert.ok(!keysMatch([split[1]!], SPLIT), 'a lone ZSK signs nothing');
  });

  test('a key mode change (CSK → Split) rolls like an algorithm change, the DS moving once', () => {
    const csk = { ...SPLIT, keys: 'CSK' as const, zskLifetimeSeconds: 0 };
    const start: KeySetState = { keys: generateZoneKeys(csk, generateDnssecKey) };
    let held: string[] | undefined;
    const { serials, state, phases } = run(start, { ...SPLIT, zskLifetimeSeconds: 0 }, 300, (_, ds) => {
      held ??= ds;
      if (ds.some((d) => d !== held![0])) held = ds;
      return { ds: held, ttl: 3 };
    });
    assert.deepEqual(phases, ALGORITHM_ROLL_PHASES);
    assert.deepEqual(state.keys.map((k) => k.role).sort(), ['KSK', 'ZSK']);
    for (const s of serials) {
      const k = keysAt(s.keys, s.signedAt);
      assert.ok(k.keySigning.length > 0 && k.zoneSigning.length > 0, `signed at ${s.signedAt}`);
      assert.ok(
        k.parent.length === 1 && k.published.includes(k.parent[0]!),
        `one published DS key at ${s.signedAt}`,
      );
    }
  });

  test('KSK rollover (double-KSK) every kskLifetimeSeconds: the ZSK untouched, the DS moving once the parent holds it', () => {
    const settings = { ...SPLIT, zskLifetimeSeconds: 0, kskLifetimeSeconds: 50 };
    const start: KeySetState = { keys: generateZoneKeys(settings, generateDnssecKey) };
    let held: string[] | undefined;
    const { serials, state, phases } = run(start, settings, 120, (_, ds) => {
      held ??= ds;
      if (ds.some((d) => d !== held![0])) held = ds;
      return { ds: held, ttl: 3 };
    });
    assert.deepEqual(phases.slice(0, 5), ['none', 'KSK/Publish', 'KSK/DsChange', 'KSK/DsPropagate', 'none']);
    const zsk = start.keys.find((k) => k.role === 'ZSK')!;
    assert.ok(
      state.keys.some((k) => tag(k) === tag(zsk)),
      'the ZSK stays',
    );
    const oldKsk = start.keys.find((k) => k.role === 'KSK')!;
    assert.ok(!state.keys.some((k) => tag(k) === tag(oldKsk)), 'the old KSK is gone');
    for (const s of serials) {
      const k = keysAt(s.keys, s.signedAt);
      // The DNSKEY RRset is signed by every published KSK while both are there (double-KSK).
      const publishedKsks = k.published.filter((p) => p.flags === 257);
      assert.deepEqual(tags(k.keySigning), tags(publishedKsks), `at ${s.signedAt}`);
      assert.equal(k.parent.length, 1, `one DS at ${s.signedAt}`);
    }
  });
});
