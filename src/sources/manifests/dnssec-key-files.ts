/**
 * DNSSEC keys of `zonekeeper serve` in the state directory: `<state-dir>/dnssec/<zone>.json`, one file
 * per zone, mode 0600 in a folder of mode 0700 (only the user the server runs as reads them). A key is
 * written (temporary file, fsync, rename, fsync of the folder) before any signature made with it is
 * served, so the same keys sign after a restart and the DS at the parent stays valid.
 */
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { EffectiveDnssec } from '../../api/dnssec.ts';
import { checkDnssecKey, type DnssecAlgorithm, generateDnssecKey } from '../../dns/dnssec/keys.ts';
import type { Name } from '../../dns/name.ts';
import {
  type DnssecKeyStore,
  generateZoneKeys,
  type KeyEvent,
  type KeySetState,
  keysMatch,
  type ZoneKey,
} from '../../zones/dnssec-key-set.ts';

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

/** The file name of a zone's keys: the origin without its final dot (`root` for the root zone). */
export function keyFileName(origin: Name): string {
  const name = origin.toLowerCase().replace(/\.$/, '');
  // Origins are host names here; anything else is escaped so that it stays one file in the folder.
  return `${name === '' ? 'root' : encodeURIComponent(name)}.json`;
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

export class FolderKeyStore implements DnssecKeyStore {
  readonly dir: string;
  private readonly held = new Map<string, KeySetState>();
  private readonly log: ((level: 'info' | 'warn', message: string) => void) | undefined;

  /** `stateDir`: the state directory; keys go to its `dnssec` folder. */
  constructor(stateDir: string, log?: (level: 'info' | 'warn', message: string) => void) {
    this.dir = path.join(stateDir, 'dnssec');
    this.log = log;
  }

  async keysFor(origin: Name, settings: EffectiveDnssec): Promise<ZoneKey[]> {
    const id = origin.toLowerCase();
    const cached = this.held.get(id);
    if (cached && keysMatch(cached.keys, settings)) return cached.keys;
    const stored = await this.read(origin);
    if (stored && keysMatch(stored.keys, settings)) {
      this.held.set(id, stored);
      return stored.keys;
    }
    if (stored)
      this.log?.(
        'warn',
        `zone ${origin}: its stored DNSSEC keys do not match ${settings.algorithm}/${settings.keys}; new keys replace them ` +
          '(update the DS at the parent: validating resolvers fail the zone until it matches)',
      );
    const made = generateZoneKeys(settings, generateDnssecKey);
    await this.write(origin, { keys: made });
    this.held.set(id, { keys: made });
    this.log?.('info', `zone ${origin}: DNSSEC keys generated and stored in ${this.file(origin)}`);
    return made;
  }

  async update(origin: Name, step: (held: KeySetState) => KeySetState | undefined): Promise<KeySetState> {
    const id = origin.toLowerCase();
    const held = this.held.get(id) ?? (await this.read(origin)) ?? { keys: [] };
    const next = step(held);
    if (!next) return held;
    await this.write(origin, next);
    this.held.set(id, next);
    return next;
  }

  private file(origin: Name): string {
    return path.join(this.dir, keyFileName(origin));
  }

  private async read(origin: Name): Promise<KeySetState | undefined> {
    let text: string;
    try {
      text = await readFile(this.file(origin), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    return decodeKeySet(text);
  }

  private async write(origin: Name, set: KeySetState): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.file(origin);
    const tmp = `${file}.tmp`;
    const fd = await open(tmp, 'w', 0o600);
    try {
      await fd.writeFile(encodeKeyFile(origin, set.keys, set));
      await fd.sync();
    } finally {
      await fd.close();
    }
    await rename(tmp, file);
    const dirFd = await open(this.dir, 'r');
    try {
      await dirFd.sync();
    } finally {
      await dirFd.close();
    }
  }
}
