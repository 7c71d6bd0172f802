/**
 * The keys of a signed zone as Zonekeeper's signers hold them, and where they come from: a key store
 * (an adapter: the state directory in folder mode, a Secret in a cluster) that generates them with
 * node:crypto on first use.
 *
 * A key carries its lifecycle as timed events (published, signing, in the parent's DS set): what a
 * serial is signed with is the keys' state at the serial's signing time (ADR 0021), so a rollover step
 * recorded for a later time never changes the content of a serial signed before it, in any process.
 */
import type { EffectiveDnssec } from '../api/dnssec.ts';
import {
  checkDnssecKey,
  DNSKEY_FLAGS,
  DNSSEC_ALGORITHMS,
  type DnssecAlgorithm,
  type DnssecKey,
} from '../dns/dnssec/keys.ts';
import type { Name } from '../dns/name.ts';

/** A change of a key's state from `at` (seconds since the epoch) on. */
export interface KeyEvent {
  at: number;
  /** The key signs (RRsets; the DNSKEY RRset for a KSK or CSK). */
  active: boolean;
  /** The key is in the apex DNSKEY RRset. */
  published: boolean;
  /** KSK/CSK: the key is in the DS set the parent is to hold (CDS/CDNSKEY, `status.dnssec.ds`). Default true. */
  ds?: boolean;
}

/** A key as a key store holds it: the key and the role it was generated for. */
export interface ZoneKey {
  role: 'CSK' | 'KSK' | 'ZSK';
  key: DnssecKey;
  /** The key's number among the zone's keys (rollover states name keys by it); by position when absent. */
  id?: number;
  /** Its state changes, oldest first. None: active, published and in the DS set since always. */
  events?: KeyEvent[];
}

/** A zone's keys with the recorded states of its rollovers (dnssec-rollover.ts print forms). */
export interface KeySetState {
  keys: ZoneKey[];
  /** The ZSK pre-publication rollover (`printRollover`). */
  zskRoll?: string;
  /** The algorithm or KSK rollover (`printKeyRoll`). */
  keyRoll?: string;
  /** Signing being turned off (`printDisable`, dnssec-disable.ts). */
  disable?: string;
}

/**
 * Where the built-in server's signing keys live: generated with node:crypto on first use and stored
 * durably before any signature made with them is served (folder mode: the state directory).
 */
export interface DnssecKeyStore {
  /**
   * The zone's keys for `settings`: the stored ones when they serve its key mode (the algorithm moves
   * by rollover), else new ones, stored before this resolves.
   */
  keysFor(origin: Name, settings: EffectiveDnssec): Promise<ZoneKey[]>;
  /**
   * The signer that owns the keys (serve; the operator's leader) records a rollover step: `step` gets
   * the stored key set and returns the one to store (undefined: unchanged). Stored durably before this
   * resolves. Absent where keys are only read (`zonekeeper server` replicas).
   */
  update?(origin: Name, step: (held: KeySetState) => KeySetState | undefined): Promise<KeySetState>;
}

/** Generates the keys of a key mode: one CSK, or a KSK and a ZSK (RFC 6781 §3.1). */
export function generateZoneKeys(
  settings: EffectiveDnssec,
  generate: (algorithm: DnssecKey['algorithm'], flags: number) => DnssecKey,
): ZoneKey[] {
  const algorithm = DNSSEC_ALGORITHMS[settings.algorithm];
  if (settings.keys === 'Split')
    return [
      { role: 'KSK', key: generate(algorithm, DNSKEY_FLAGS.KSK), id: 1 },
      { role: 'ZSK', key: generate(algorithm, DNSKEY_FLAGS.ZSK), id: 2 },
    ];
  return [{ role: 'CSK', key: generate(algorithm, DNSKEY_FLAGS.KSK), id: 1 }];
}

/**
 * Whether stored keys can sign the zone on the way to `settings`: a key-signing and a zone-signing role
 * (a CSK, or a KSK and a ZSK). Another algorithm or key mode does not disqualify them: a rollover
 * replaces them (dnssec-key-lifecycle.ts), so they are never replaced at once.
 */
export function keysMatch(keys: readonly ZoneKey[], _settings: EffectiveDnssec): boolean {
  const roles = new Set(keys.map((k) => k.role));
  return roles.has('CSK') || (roles.has('KSK') && roles.has('ZSK'));
}

/** The key's id: its recorded one, or its position (1-based) in key files made before ids. */
export function keyId(keys: readonly ZoneKey[], k: ZoneKey): number {
  return k.id ?? keys.indexOf(k) + 1;
}

const ALWAYS = { active: true, published: true, ds: true } as const;

/** A key's state at `at` (seconds): the last event not after it; before its first event, absent. */
export function keyStateAt(k: ZoneKey, at: number): { active: boolean; published: boolean; ds: boolean } {
  const events = k.events;
  if (!events || events.length === 0) return ALWAYS;
  let state: { active: boolean; published: boolean; ds: boolean } | undefined;
  for (const e of events) {
    if (e.at > at) break;
    state = { active: e.active, published: e.published, ds: e.ds ?? state?.ds ?? true };
  }
  return state ?? { active: false, published: false, ds: false };
}

/** The keys as a serial signed at `at` uses them (RFC 4035 §2.1, RFC 7344 §4). */
export interface KeysAt {
  /** The apex DNSKEY RRset. */
  published: DnssecKey[];
  /** Sign the DNSKEY RRset: active KSKs and CSKs. */
  keySigning: DnssecKey[];
  /** Sign every other RRset: active ZSKs and CSKs. */
  zoneSigning: DnssecKey[];
  /** The DS set the parent is to hold (CDS/CDNSKEY): published KSKs and CSKs marked for it. */
  parent: DnssecKey[];
}

export function keysAt(keys: readonly ZoneKey[], at: number): KeysAt {
  const out: KeysAt = { published: [], keySigning: [], zoneSigning: [], parent: [] };
  for (const k of keys) {
    const s = keyStateAt(k, at);
    if (s.published) out.published.push(k.key);
    if (s.active && k.role !== 'ZSK') out.keySigning.push(k.key);
    if (s.active && k.role !== 'KSK') out.zoneSigning.push(k.key);
    if (s.published && s.ds && k.role !== 'ZSK') out.parent.push(k.key);
  }
  return out;
}

/** Whether the key is published or signs at `at` (the keys a serial signed then depends on). */
export function inEffectAt(k: ZoneKey, at: number): boolean {
  const s = keyStateAt(k, at);
  return s.active || s.published;
}

/** The first key event after `at`, if any: a serial signed at `at` is stale from then on. */
export function nextKeyEvent(keys: readonly ZoneKey[], at: number): number | undefined {
  let next: number | undefined;
  for (const k of keys)
    for (const e of k.events ?? []) if (e.at > at && (next === undefined || e.at < next)) next = e.at;
  return next;
}

/** The key data of a zone: its key file in folder mode, its key Secret's `keys.json` in a cluster. */
interface KeyFile {
  origin: string;
  /** The ZSK rollover's state (`printRollover`), the algorithm/KSK rollover's (`printKeyRoll`). */
  zskRoll?: string;
  keyRoll?: string;
  /** Signing being turned off (`printDisable`, RFC 8078 §4). */
  disable?: string;
  keys: {
    /** The key's number among the zone's keys (rollover states name keys by it). */
    id?: number;
    /** Its state changes (seconds since the epoch), oldest first; none: in use since always. */
    events?: KeyEvent[];
    role: ZoneKey['role'];
    algorithm: number;
    flags: number;
    /** Base64 of the DNSKEY public key field. */
    publicKey: string;
    /** Base64 of the private scalar (ECDSA) or seed (Ed25519). */
    privateKey: string;
    created: string;
  }[];
}

/**
 * A zone's keys as the JSON kept in its key file (and, in a cluster, in its key Secret): role,
 * algorithm, flags, public key and private key (base64) per key, its id and timed state changes, and
 * the states of the zone's rollovers.
 */
export function encodeKeyFile(
  origin: Name,
  keys: readonly ZoneKey[],
  rolls: Omit<KeySetState, 'keys'> = {},
): string {
  const created = new Date().toISOString();
  const data: KeyFile = {
    origin: origin.toLowerCase(),
    ...(rolls.zskRoll !== undefined ? { zskRoll: rolls.zskRoll } : {}),
    ...(rolls.keyRoll !== undefined ? { keyRoll: rolls.keyRoll } : {}),
    ...(rolls.disable !== undefined ? { disable: rolls.disable } : {}),
    keys: keys.map(({ role, key, id, events }, i) => ({
      id: id ?? i + 1,
      ...(events && events.length > 0 ? { events } : {}),
      role,
      algorithm: key.algorithm,
      flags: key.flags,
      publicKey: Buffer.from(key.publicKey).toString('base64'),
      privateKey: Buffer.from(key.privateKey).toString('base64'),
      created,
    })),
  };
  return `${JSON.stringify(data, null, 2)}\n`;
}

/** The keys of `encodeKeyFile`'s text, each checked (a cut or mixed-up file fails loudly). */
export function decodeKeyFile(text: string): ZoneKey[] {
  return decodeKeySet(text).keys;
}

/** The keys and rollover states of `encodeKeyFile`'s text. */
export function decodeKeySet(text: string): KeySetState {
  const data = JSON.parse(text) as KeyFile;
  if (!Array.isArray(data?.keys)) throw new Error('no keys in the key data');
  const keys = data.keys.map((k, i): ZoneKey => {
    const key = {
      algorithm: k.algorithm as DnssecAlgorithm,
      flags: k.flags,
      publicKey: new Uint8Array(Buffer.from(k.publicKey, 'base64')),
      privateKey: new Uint8Array(Buffer.from(k.privateKey, 'base64')),
    };
    // A cut or mixed-up file fails loudly rather than signing with a broken key.
    checkDnssecKey(key);
    const events = Array.isArray(k.events)
      ? k.events.map((e) => {
          if (
            !Number.isSafeInteger(e?.at) ||
            typeof e.active !== 'boolean' ||
            typeof e.published !== 'boolean'
          )
            throw new Error(`key ${k.id ?? i + 1} has a malformed state change`);
          return {
            at: e.at,
            active: e.active,
            published: e.published,
            ...(typeof e.ds === 'boolean' ? { ds: e.ds } : {}),
          };
        })
      : undefined;
    return {
      role: k.role,
      key,
      id: Number.isSafeInteger(k.id) ? k.id! : i + 1,
      ...(events && events.length > 0 ? { events } : {}),
    };
  });
  return {
    keys,
    ...(typeof data.zskRoll === 'string' ? { zskRoll: data.zskRoll } : {}),
    ...(typeof data.keyRoll === 'string' ? { keyRoll: data.keyRoll } : {}),
    ...(typeof data.disable === 'string' ? { disable: data.disable } : {}),
  };
}
