/**
 * Automatic ZSK rollover by pre-publication (RFC 7583 §3.2.1), as a pure step function: given the
 * rollover's recorded state, the zone's ZSKs and the time, the actions to take now and the next state.
 * The backend that holds the keys records the state and carries the actions out.
 *
 * Active(id, since) ──lifetime──▶ Publish(new, old): the new ZSK is in the DNSKEY RRset, not signing
 *   ──Ipub = DNSKEY TTL + propagation──▶ Retire(new, old): the new ZSK signs, the old one stays published
 *   ──Iret = largest TTL + propagation──▶ Active(new): the old ZSK is removed.
 */

export type RolloverState =
  | { phase: 'Active'; key: number; since: number }
  | { phase: 'Publish'; newKey: number; oldKey: number; since: number }
  | { phase: 'Retire'; newKey: number; oldKey: number; since: number };

export interface RolloverTimings {
  /** Seconds a ZSK signs before the next rollover starts. */
  lifetime: number;
  /** Ipub: seconds between publishing the new key and signing with it. */
  publish: number;
  /** Iret: seconds between the last signature of the old key and its removal. */
  retire: number;
  /** The propagation delay included in both (secondaries that miss a NOTIFY). */
  propagation: number;
}

export type RolloverAction =
  | { kind: 'create-published'; replaces: number }
  | { kind: 'activate'; key: number }
  | { kind: 'deactivate'; key: number }
  | { kind: 'remove'; key: number };

export interface RolloverStep {
  actions: RolloverAction[];
  /** The state after the actions (for `create-published`, the new key's id is filled in by the caller). */
  next: RolloverState | undefined;
  /** When the next step is due (seconds). */
  dueAt: number;
}

/** Ipub and Iret from the zone's TTLs and the propagation delay (RFC 7583 §3.2.1). */
export function rolloverTimings(
  lifetime: number,
  dnskeyTtl: number,
  largestTtl: number,
  propagation: number,
): RolloverTimings {
  return { lifetime, publish: dnskeyTtl + propagation, retire: largestTtl + propagation, propagation };
}

/**
 * One step. `activeZsk` is the ZSK that signs now (the one a missing or stale state starts from);
 * `present` the ids of the zone's ZSKs.
 */
export function stepRollover(
  state: RolloverState | undefined,
  activeZsk: number | undefined,
  present: ReadonlySet<number>,
  now: number,
  t: RolloverTimings,
): RolloverStep {
  // No state, or one naming keys that are gone (removed by hand): start over from the signing key.
  const valid =
    state !== undefined &&
    (state.phase === 'Active'
      ? present.has(state.key)
      : present.has(state.newKey) && present.has(state.oldKey));
  if (!valid) {
    if (activeZsk === undefined) return { actions: [], next: undefined, dueAt: now + t.lifetime };
    const fresh: RolloverState = { phase: 'Active', key: activeZsk, since: now };
    return { actions: [], next: fresh, dueAt: now + t.lifetime };
  }
  switch (state.phase) {
    case 'Active':
      if (now - state.since < t.lifetime)
        return { actions: [], next: state, dueAt: state.since + t.lifetime };
      return {
        actions: [{ kind: 'create-published', replaces: state.key }],
        next: { phase: 'Publish', newKey: -1, oldKey: state.key, since: now },
        dueAt: now + t.publish,
      };
    case 'Publish':
      if (now - state.since < t.publish) return { actions: [], next: state, dueAt: state.since + t.publish };
      return {
        actions: [
          { kind: 'activate', key: state.newKey },
          { kind: 'deactivate', key: state.oldKey },
        ],
        next: { phase: 'Retire', newKey: state.newKey, oldKey: state.oldKey, since: now },
        dueAt: now + t.retire,
      };
    case 'Retire':
      if (now - state.since < t.retire) return { actions: [], next: state, dueAt: state.since + t.retire };
      return {
        actions: [{ kind: 'remove', key: state.oldKey }],
        next: { phase: 'Active', key: state.newKey, since: now },
        dueAt: now + t.lifetime,
      };
  }
}

/** The state as one metadata string: `Active <since> <key>` or `<phase> <since> <new> <old>`. */
export function printRollover(s: RolloverState): string {
  return s.phase === 'Active'
    ? `Active ${s.since} ${s.key}`
    : `${s.phase} ${s.since} ${s.newKey} ${s.oldKey}`;
}

export function parseRollover(text: string | undefined): RolloverState | undefined {
  const [phase, since, a, b] = (text ?? '').trim().split(/\s+/);
  const n = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined);
  const at = n(since);
  if (at === undefined) return undefined;
  if (phase === 'Active' && n(a) !== undefined) return { phase, since: at, key: n(a)! };
  if ((phase === 'Publish' || phase === 'Retire') && n(a) !== undefined && n(b) !== undefined)
    return { phase, since: at, newKey: n(a)!, oldKey: n(b)! };
  return undefined;
}

/*
 * Key rollovers that change what the parent must hold — the algorithm, or the KSK — as a second pure
 * step function beside the ZSK's. Both follow the conservative orders:
 *
 * Algorithm rollover (RFC 6781 §4.1.4, "conservative approach"; RFC 4035 §2.2 asks every RRset to be
 * signed by every algorithm in the apex DNSKEY RRset, and some validators insist):
 *   Idle ──algorithm changed──▶ Sign: new keys sign, unpublished
 *     ──largest TTL + propagation (every cached RRset carries both signatures)──▶ Publish: new DNSKEYs
 *     published ──DNSKEY TTL + propagation──▶ DsChange: the new DS is what the parent must hold; waits
 *     until the parent is seen holding it ──▶ DsPropagate ──the parent's DS TTL + propagation──▶
 *     Unpublish: old DNSKEYs withdrawn, still signing ──DNSKEY TTL + propagation──▶ old keys removed, Idle.
 *
 * KSK rollover, double-KSK (RFC 7583 §3.3.1, the DS changed once, the DNSKEY RRset signed by both KSKs):
 *   Idle ──KSK lifetime──▶ Publish: new KSK published and signing the DNSKEY RRset
 *     ──DNSKEY TTL + propagation──▶ DsChange ──parent seen holding the new DS──▶ DsPropagate
 *     ──the parent's DS TTL + propagation──▶ old KSK removed, Idle.
 *
 * Only the parent's DS needs someone outside the zone: the step waits in DsChange until `parent` (the DS
 * RRset the parent is seen to publish) holds a DS of every new key-signing key. A parent that is not
 * visible leaves the phase waiting, with the DS to give the parent in the step's `waiting`.
 */

/** A key of the zone as the rollover sees it. `ds`: its DS records in presentation form (KSK/CSK). */
export interface ZoneKey {
  id: number;
  role: 'csk' | 'ksk' | 'zsk';
  algorithm: number;
  active: boolean;
  published: boolean;
  ds: readonly string[];
}

export type KeyRollPhase = 'Sign' | 'Publish' | 'DsChange' | 'DsPropagate' | 'Unpublish';
export type KeyRollKind = 'Algorithm' | 'KSK';

export type KeyRollState =
  /** No rollover; `since`: when the current key-signing key began (for the KSK lifetime). */
  | { phase: 'Idle'; since: number }
  | {
      phase: KeyRollPhase;
      kind: KeyRollKind;
      since: number;
      /** DsPropagate: seconds to wait (the parent's DS TTL + propagation). */
      wait: number;
      newKeys: number[];
      oldKeys: number[];
    };

export interface KeyRollTimings {
  /** DNSKEY TTL + propagation: a DNSKEY RRset change reaches every cache. */
  publish: number;
  /** Largest TTL + propagation: every cached RRset carries the new algorithm's signatures. */
  sign: number;
  /** The propagation delay alone (how often a waiting DsChange looks at the parent again). */
  propagation: number;
}

/** The intervals from the zone's TTLs and the propagation delay (RFC 7583 §3.2.1, RFC 6781 §4.1.4). */
export function keyRollTimings(dnskeyTtl: number, largestTtl: number, propagation: number): KeyRollTimings {
  return { publish: dnskeyTtl + propagation, sign: largestTtl + propagation, propagation };
}

export interface KeyRollWant {
  /** The algorithm number the zone is to be signed with. */
  algorithm: number;
  split: boolean;
  /** Split keys: seconds a KSK serves before it is rolled; 0 never. */
  kskLifetime: number;
}

export type KeyRollAction =
  | { kind: 'create'; role: 'csk' | 'ksk' | 'zsk'; algorithm: number; active: boolean; published: boolean }
  | { kind: 'set'; key: number; active: boolean; published: boolean }
  | { kind: 'remove'; key: number };

export interface KeyRollStep {
  /** `create` actions' new ids are appended to `next.newKeys` by the caller, in order. */
  actions: KeyRollAction[];
  next: KeyRollState;
  /** When the next step is due (seconds); undefined: not before something outside changes. */
  dueAt: number | undefined;
  /** The DS records the parent should hold now (presentation form, as the keys carry them). */
  ds: string[];
  /** Set while the step waits for the parent's DS: a stable reason and what the operator must do. */
  waiting?: { reason: 'ParentDsNotVisible' | 'ParentDsPending'; message: string };
}

const entry = (k: ZoneKey) => k.role !== 'zsk';
const dsOfKeys = (keys: readonly ZoneKey[], ids: ReadonlySet<number> | undefined) =>
  keys.filter((k) => entry(k) && k.published && (ids === undefined || ids.has(k.id))).flatMap((k) => k.ds);
/** DS presentation forms compared without case and digest grouping. */
export const normalizeDs = (ds: string) => {
  const [tag, alg, type, ...digest] = ds.trim().toLowerCase().split(/\s+/);
  return `${tag} ${alg} ${type} ${digest.join('')}`;
};

/**
 * The first step of an algorithm roll, which is also how a change of key mode (CSK ↔ Split) at the same
 * algorithm rolls: new keys of the wanted mode are created signing but not published, and the roll waits
 * in Sign for `t.sign` before it publishes them. `oldKeys` are the keys the roll retires; `ds` is what the
 * parent should hold meanwhile.
 */
export function startAlgorithmRoll(
  want: Pick<KeyRollWant, 'algorithm' | 'split'>,
  oldKeys: number[],
  now: number,
  t: KeyRollTimings,
  ds: string[],
): KeyRollStep {
  const roles: ('csk' | 'ksk' | 'zsk')[] = want.split ? ['ksk', 'zsk'] : ['csk'];
  return {
    actions: roles.map((role) => ({
      kind: 'create',
      role,
      algorithm: want.algorithm,
      active: true,
      published: false,
    })),
    next: { phase: 'Sign', kind: 'Algorithm', since: now, wait: 0, newKeys: [], oldKeys },
    dueAt: now + t.sign,
    ds,
  };
}

/**
 * One step of the algorithm and KSK rollovers. `keys`: the zone's keys Zonekeeper manages; `parent`:
 * the DS RRset the parent is seen to publish for the zone and its TTL, undefined when not visible.
 */
export function stepKeyRoll(
  state: KeyRollState | undefined,
  keys: readonly ZoneKey[],
  want: KeyRollWant,
  parent: { ds: readonly string[]; ttl: number } | undefined,
  now: number,
  t: KeyRollTimings,
): KeyRollStep {
  const byId = new Map(keys.map((k) => [k.id, k]));
  const idle = (since: number): KeyRollStep => {
    const published = keys.filter((k) => k.published);
    // RFC 4035 §2.2: the zone is on one algorithm when every published key has it.
    if (published.length > 0 && published.some((k) => k.algorithm !== want.algorithm)) {
      return startAlgorithmRoll(
        want,
        keys.map((k) => k.id),
        now,
        t,
        dsOfKeys(keys, undefined),
      );
    }
    const ksks = published.filter((k) => k.role === 'ksk');
    if (want.split && want.kskLifetime > 0 && ksks.length > 0 && now - since >= want.kskLifetime)
      return {
        actions: [{ kind: 'create', role: 'ksk', algorithm: want.algorithm, active: true, published: true }],
        next: {
          phase: 'Publish',
          kind: 'KSK',
          since: now,
          wait: 0,
          newKeys: [],
          oldKeys: ksks.map((k) => k.id),
        },
        dueAt: now + t.publish,
        ds: dsOfKeys(keys, undefined),
      };
    return {
      actions: [],
      next: { phase: 'Idle', since },
      dueAt: want.split && want.kskLifetime > 0 ? since + want.kskLifetime : undefined,
      ds: dsOfKeys(keys, undefined),
    };
  };
  if (state === undefined) return idle(now);
  if (state.phase === 'Idle') return idle(state.since);
  // A rollover whose new keys are gone (removed by hand) is abandoned: the next step starts over.
  if (state.newKeys.length === 0 || state.newKeys.some((id) => !byId.has(id))) return idle(now);
  const oldKeys = state.oldKeys.filter((id) => byId.has(id));
  const s = { ...state, oldKeys };
  const newIds = new Set(s.newKeys);
  const oldIds = new Set(oldKeys);
  const at = (phase: KeyRollPhase, wait = 0) => ({ ...s, phase, since: now, wait });
  const due = (interval: number) => now - s.since >= interval;
  const oldDs = dsOfKeys(keys, oldIds);
  const newDs = keys.filter((k) => entry(k) && newIds.has(k.id)).flatMap((k) => k.ds);
  switch (s.phase) {
    case 'Sign':
      if (!due(t.sign)) return { actions: [], next: s, dueAt: s.since + t.sign, ds: oldDs };
      return {
        actions: s.newKeys.map((key) => ({ kind: 'set', key, active: true, published: true })),
        next: at('Publish'),
        dueAt: now + t.publish,
        ds: oldDs,
      };
    case 'Publish':
      if (!due(t.publish)) return { actions: [], next: s, dueAt: s.since + t.publish, ds: oldDs };
      return stepKeyRoll(at('DsChange'), keys, want, parent, now, t);
    case 'DsChange': {
      if (parent === undefined)
        return {
          actions: [],
          next: s,
          dueAt: undefined,
          ds: newDs,
          waiting: {
            reason: 'ParentDsNotVisible',
            message:
              `${s.kind === 'Algorithm' ? 'algorithm' : 'KSK'} rollover waits for the parent's DS: give the ` +
              `parent (registrar) the DS ${newDs.join(', ')} in place of ${oldDs.join(', ') || 'the old one'}, ` +
              'then record what the parent publishes in the annotation dns.zonekeeper.dev/parent-ds',
          },
        };
      const held = new Set(parent.ds.map(normalizeDs));
      const entryNew = keys.filter((k) => entry(k) && newIds.has(k.id));
      if (entryNew.every((k) => k.ds.some((d) => held.has(normalizeDs(d)))))
        return {
          actions: [],
          next: at('DsPropagate', parent.ttl + t.propagation),
          dueAt: now + parent.ttl + t.propagation,
          ds: newDs,
        };
      return {
        actions: [],
        next: s,
        dueAt: now + Math.max(1, t.propagation),
        ds: newDs,
        waiting: {
          reason: 'ParentDsPending',
          message:
            `${s.kind === 'Algorithm' ? 'algorithm' : 'KSK'} rollover waits for the parent to publish the DS ` +
            `${newDs.join(', ')} (it publishes ${parent.ds.join(', ') || 'none'})`,
        },
      };
    }
    case 'DsPropagate':
      if (!due(s.wait)) return { actions: [], next: s, dueAt: s.since + s.wait, ds: newDs };
      if (s.kind === 'KSK')
        return {
          actions: oldKeys.map((key) => ({ kind: 'remove', key })),
          next: { phase: 'Idle', since: now },
          dueAt: want.kskLifetime > 0 ? now + want.kskLifetime : undefined,
          ds: newDs,
        };
      // RFC 6781 §4.1.4: the old DNSKEYs go first; their signatures stay until no cache holds them.
      return {
        actions: oldKeys.map((key) => ({
          kind: 'set',
          key,
          active: byId.get(key)!.active,
          published: false,
        })),
        next: at('Unpublish'),
        dueAt: now + t.publish,
        ds: newDs,
      };
    case 'Unpublish':
      if (!due(t.publish)) return { actions: [], next: s, dueAt: s.since + t.publish, ds: newDs };
      return {
        actions: oldKeys.map((key) => ({ kind: 'remove', key })),
        next: { phase: 'Idle', since: now },
        dueAt: want.split && want.kskLifetime > 0 ? now + want.kskLifetime : undefined,
        ds: newDs,
      };
  }
}

/** `Idle <since>` or `<phase> <kind> <since> <wait> <new ids,> <old ids,>` (one metadata string). */
export function printKeyRoll(s: KeyRollState): string {
  return s.phase === 'Idle'
    ? `Idle ${s.since}`
    : `${s.phase} ${s.kind} ${s.since} ${s.wait} ${s.newKeys.join(',') || '-'} ${s.oldKeys.join(',') || '-'}`;
}

export function parseKeyRoll(text: string | undefined): KeyRollState | undefined {
  const [phase, ...rest] = (text ?? '').trim().split(/\s+/);
  const n = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined);
  const ids = (v: string | undefined) =>
    v === '-' ? [] : v !== undefined && /^\d+(,\d+)*$/.test(v) ? v.split(',').map(Number) : undefined;
  if (phase === 'Idle') {
    const since = n(rest[0]);
    return since === undefined ? undefined : { phase, since };
  }
  const [kind, since, wait, newKeys, oldKeys] = rest;
  if (!['Sign', 'Publish', 'DsChange', 'DsPropagate', 'Unpublish'].includes(phase ?? '')) return undefined;
  if (kind !== 'Algorithm' && kind !== 'KSK') return undefined;
  const at = n(since);
  const w = n(wait);
  const a = ids(newKeys);
  const b = ids(oldKeys);
  if (at === undefined || w === undefined || a === undefined || b === undefined) return undefined;
  return { phase: phase as KeyRollPhase, kind, since: at, wait: w, newKeys: a, oldKeys: b };
}
