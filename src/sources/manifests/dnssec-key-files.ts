/**
 * DNSSEC keys of `zonekeeper serve` in the state directory: `<state-dir>/dnssec/<zone>.json`, one file
 * per zone, mode 0600 in a folder of mode 0700 (only the user the server runs as reads them). A key is
 * written (temporary file, fsync, rename, fsync of the folder) before any signature made with it is
 * served, so the same keys sign after a restart and the DS at the parent stays valid.
 */
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { EffectiveDnssec } from '../../api/dnssec.ts';
import { generateDnssecKey } from '../../dns/dnssec/keys.ts';
import type { Name } from '../../dns/name.ts';
import {
  type DnssecKeyStore,
  decodeKeySet,
  encodeKeyFile,
  generateZoneKeys,
  type KeySetState,
  keysMatch,
  type ZoneKey,
} from '../../zones/dnssec-key-set.ts';

/** The file name of a zone's keys: the origin without its final dot (`root` for the root zone). */
export function keyFileName(origin: Name): string {
  const name = origin.toLowerCase().replace(/\.$/, '');
  // Origins are host names here; anything else is escaped so that it stays one file in the folder.
  return `${name === '' ? 'root' : encodeURIComponent(name)}.json`;
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
