/**
 * The key lifecycle of a zone signed by Zonekeeper itself (the built-in server): one step of its
 * rollovers, as a pure function over the stored key set. It drives the steppers of dnssec-rollover.ts
 * — the algorithm and KSK rollovers (RFC 6781 §4.1.4, RFC 7583 §3.3.1) first, the ZSK pre-publication
 * rollover (RFC 7583 §3.2.1) while neither runs — and records what they decide as key events at a
 * time after the signing time of the serial served now (ADR 0021): the serial served keeps its
 * content everywhere, and the next serial, signed at or after that time, carries the step.
 *
 * A step is taken only once the serial served shows every earlier event (its signing time is not
 * before them), so each interval of RFC 7583 is counted from a serial that carried the change.
 */
import type { DnssecStatus, EffectiveDnssec } from '../api/dnssec.ts';
import { DNSKEY_FLAGS, DNSSEC_ALGORITHMS, type DnssecKey, dsOf } from '../dns/dnssec/keys.ts';
import type { Name } from '../dns/name.ts';
import { printRdata } from '../dns/rdata.ts';
import { type KeySetState, keyId, keyStateAt, nextKeyEvent, type ZoneKey } from './dnssec-key-set.ts';
import {
  type KeyRollState,
  type KeyRollStep,
  keyRollTimings,
  parseKeyRoll,
  parseRollover,
  printKeyRoll,
  printRollover,
  type ZoneKey as RollKey,
  type RolloverState,
  rolloverTimings,
  startAlgorithmRoll,
  stepKeyRoll,
  stepRollover,
} from './dnssec-rollover.ts';

export interface LifecycleInput {
  origin: Name;
  held: KeySetState;
  settings: EffectiveDnssec;
  /** The signing time of the serial served now (seconds). */
  signedAt: number;
  /** Seconds since the epoch. */
  now: number;
  /** The zone's TTLs and the propagation delay to secondaries (the SOA refresh), seconds. */
  ttls: { dnskey: number; largest: number; propagation: number };
  /** The DS RRset the parent is seen to publish, or the one the operator recorded; undefined: unknown. */
  parent: { ds: readonly string[]; ttl: number } | undefined;
  generate: (algorithm: DnssecKey['algorithm'], flags: number) => DnssecKey;
}

export interface LifecycleStep {
  /** The key set to store; undefined: unchanged. */
  next: KeySetState | undefined;
  /** `status.dnssec.rollover`: the rollover in progress, or the ZSK's next one. */
  rollover: DnssecStatus['rollover'] | undefined;
  /** When to look again (seconds): a key event recorded (a new serial is due) or the next step. */
  dueAt: number | undefined;
}

const lower = (role: ZoneKey['role']) => role.toLowerCase() as 'csk' | 'ksk' | 'zsk';
const iso = (at: number) => new Date(at * 1000).toISOString();
const dsText = (origin: Name, key: DnssecKey) => printRdata(dsOf(origin, key)).toLowerCase();

/** One step of the zone's rollovers at `now` (see the module comment). */
export function stepKeyLifecycle(input: LifecycleInput): LifecycleStep {
  const { origin, held, settings, signedAt, now, ttls } = input;
  const pending = nextKeyEvent(held.keys, signedAt);
  const recordedRoll = parseKeyRoll(held.keyRoll);
  const recordedZsk = parseRollover(held.zskRoll);
  if (pending !== undefined)
    // A recorded step is not served yet: the serial that carries it comes first.
    return { next: undefined, rollover: statusOf(recordedRoll, recordedZsk, pending), dueAt: pending };

  // Events of this step take effect after every serial signed so far, and not before now.
  const t = Math.max(now, signedAt) + 1;
  const keys = held.keys.map((k) => ({ ...k, id: keyId(held.keys, k), events: [...(k.events ?? [])] }));
  let lastId = Math.max(0, ...keys.map((k) => k.id));
  const byId = new Map(keys.map((k) => [k.id, k]));
  let changed = false;
  const record = (k: ZoneKey, state: { active: boolean; published: boolean; ds?: boolean }) => {
    const before = keyStateAt(k, t - 1);
    const ds = state.ds ?? before.ds;
    if (before.active === state.active && before.published === state.published && before.ds === ds) return;
    // A key with no events was in its state since always: that becomes its first event.
    if ((k.events ?? []).length === 0) k.events = [{ at: 0, ...before }];
    k.events!.push({ at: t, active: state.active, published: state.published, ds });
    changed = true;
  };
  const create = (role: ZoneKey['role'], algorithm: number, active: boolean, published: boolean) => {
    const id = ++lastId;
    const key: ZoneKey = {
      role,
      key: input.generate(
        algorithm as DnssecKey['algorithm'],
        role === 'ZSK' ? DNSKEY_FLAGS.ZSK : DNSKEY_FLAGS.KSK,
      ),
      id,
      events: [{ at: t, active, published, ds: false }],
    };
    keys.push(key as (typeof keys)[number]);
    byId.set(id, key as (typeof keys)[number]);
    changed = true;
    return id;
  };
  const present = keys.filter((k) => {
    const s = keyStateAt(k, t - 1);
    return s.active || s.published;
  });
  const rollKeys = (): RollKey[] =>
    present.map((k) => {
      const s = keyStateAt(k, t - 1);
      return {
        id: k.id,
        role: lower(k.role),
        algorithm: k.key.algorithm,
        active: s.active,
        published: s.published,
        ds: k.role === 'ZSK' ? [] : [dsText(origin, k.key)],
      };
    });

  // The algorithm and KSK rollovers. A change of key mode (CSK ↔ Split) at the same algorithm rolls
  // the same way as an algorithm change (new keys sign hidden, are published, take the DS, the old
  // ones go): the step function starts one only for another algorithm, so it is started here.
  const algorithm = DNSSEC_ALGORITHMS[settings.algorithm];
  const split = settings.keys === 'Split';
  const timings = keyRollTimings(ttls.dnskey, ttls.largest, ttls.propagation);
  const modeChange =
    (recordedRoll === undefined || recordedRoll.phase === 'Idle') &&
    present.length > 0 &&
    present.every((k) => k.key.algorithm === algorithm) &&
    !present.every((k) => (split ? k.role !== 'CSK' : k.role === 'CSK'));
  const rollStep: KeyRollStep = modeChange
    ? startAlgorithmRoll(
        { algorithm, split },
        present.map((k) => k.id),
        t,
        timings,
        [],
      )
    : stepKeyRoll(
        recordedRoll,
        rollKeys(),
        { algorithm, split, kskLifetime: split ? settings.kskLifetimeSeconds : 0 },
        input.parent,
        t,
        timings,
      );
  let roll: KeyRollState = rollStep.next;
  for (const action of rollStep.actions) {
    if (action.kind === 'create') {
      const id = create(
        action.role.toUpperCase() as ZoneKey['role'],
        action.algorithm,
        action.active,
        action.published,
      );
      if (roll.phase !== 'Idle') roll = { ...roll, newKeys: [...roll.newKeys, id] };
    } else {
      const k = byId.get(action.key);
      if (!k) continue;
      if (action.kind === 'remove') record(k, { active: false, published: false, ds: false });
      else record(k, { active: action.active, published: action.published });
    }
  }
  // The DS set moves when the rollover reaches DsChange: CDS/CDNSKEY name the new key-signing keys
  // from then on (RFC 7344 §4), never before the new DNSKEYs had time to reach every cache.
  const before = recordedRoll?.phase;
  if (
    roll.phase === 'DsChange' || roll.phase === 'DsPropagate'
      ? before !== 'DsChange' && before !== 'DsPropagate'
      : false
  ) {
    if (roll.phase !== 'Idle') {
      const newIds = new Set(roll.newKeys);
      for (const k of keys) {
        if (k.role === 'ZSK') continue;
        const s = keyStateAt(k, t);
        if (!s.published && !s.active) continue;
        record(k, { active: s.active, published: s.published, ds: newIds.has(k.id) });
      }
    }
  }
  let dueAt = rollStep.dueAt;
  let zsk: RolloverState | undefined = recordedZsk;
  let zskDue: number | undefined;
  if (roll.phase === 'Idle' && settings.keys === 'Split' && settings.zskLifetimeSeconds > 0) {
    const zsks = present.filter((k) => k.role === 'ZSK' && k.key.algorithm === algorithm);
    const step = stepRollover(
      recordedZsk,
      zsks.find((k) => keyStateAt(k, t - 1).active)?.id,
      new Set(zsks.map((k) => k.id)),
      t,
      rolloverTimings(settings.zskLifetimeSeconds, ttls.dnskey, ttls.largest, ttls.propagation),
    );
    zsk = step.next;
    for (const action of step.actions) {
      if (action.kind === 'create-published') {
        const id = create('ZSK', algorithm, false, true);
        if (zsk?.phase === 'Publish') zsk = { ...zsk, newKey: id };
        continue;
      }
      const k = byId.get(action.key);
      if (!k) continue;
      if (action.kind === 'activate') record(k, { active: true, published: true });
      else if (action.kind === 'deactivate') record(k, { active: false, published: true });
      else record(k, { active: false, published: false });
    }
    zskDue = step.dueAt;
    dueAt = dueAt === undefined ? step.dueAt : Math.min(dueAt, step.dueAt);
  } else if (roll.phase !== 'Idle') zsk = undefined;

  // Keys removed before the serial served was signed are in no serial any process may sign again.
  const kept = keys.filter((k) => {
    const last = k.events.at(-1);
    const gone = last !== undefined && !last.active && !last.published && last.at <= signedAt;
    if (gone) changed = true;
    return !gone;
  });
  const zskRoll = zsk ? printRollover(zsk) : undefined;
  const keyRoll = printKeyRoll(roll);
  if (zskRoll !== held.zskRoll || keyRoll !== held.keyRoll) changed = true;
  const next: KeySetState | undefined = changed
    ? {
        keys: kept.map((k) => (k.events.length === 0 ? { role: k.role, key: k.key, id: k.id } : k)),
        ...(zskRoll !== undefined ? { zskRoll } : {}),
        keyRoll,
      }
    : undefined;
  const event = next ? nextKeyEvent(next.keys, signedAt) : undefined;
  if (event !== undefined) dueAt = dueAt === undefined ? event : Math.min(dueAt, event);
  const rollover: DnssecStatus['rollover'] =
    roll.phase !== 'Idle'
      ? {
          kind: roll.kind,
          phase: roll.phase,
          since: iso(roll.since),
          ...(rollStep.dueAt !== undefined ? { nextStep: iso(rollStep.dueAt) } : {}),
          ...(rollStep.waiting ? { reason: rollStep.waiting.reason, message: rollStep.waiting.message } : {}),
        }
      : zsk && zskDue !== undefined
        ? { kind: 'ZSK', phase: zsk.phase, since: iso(zsk.since), nextStep: iso(zskDue) }
        : undefined;
  return { next, rollover, dueAt };
}

/** The rollover status while a recorded step waits for its serial. */
function statusOf(
  roll: KeyRollState | undefined,
  zsk: RolloverState | undefined,
  pending: number,
): DnssecStatus['rollover'] | undefined {
  if (roll && roll.phase !== 'Idle')
    return { kind: roll.kind, phase: roll.phase, since: iso(roll.since), nextStep: iso(pending) };
  if (zsk) return { kind: 'ZSK', phase: zsk.phase, since: iso(zsk.since), nextStep: iso(pending) };
  return undefined;
}
