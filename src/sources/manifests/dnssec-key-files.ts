/**
 * DNSSEC keys of `zonekeeper serve` in the state directory: `<state-dir>/dnssec/<zone>.json`, one file
 * per zone, mode 0600 in a folder of mode 0700 (only the user the server runs as reads them). A key is
 * written (temporary file, fsync, rename, fsync of the folder) before any signature made with it is
 * served, so the same keys sign after a restart and the DS at the parent stays valid.
 */
import { type FSWatcher, watch } from 'node:fs';
import { mkdir, open, readdir, readFile, rename } from 'node:fs/promises';
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

/** How the store reads, lists and watches its folder (tests count the reads). */
export interface KeyFolderIo {
  readFile(file: string): Promise<string>;
  readdir(dir: string): Promise<string[]>;
  /** A watcher calling `changed` on every change in the folder; it must not keep the process alive. */
  watch(dir: string, changed: () => void): FSWatcher;
}

/** How long a listing of the key folder is believed without a look (one `readdir` a minute at most). */
const LISTING_MAX_AGE_MS = 60_000;

const NODE_IO: KeyFolderIo = {
  readFile: (file) => readFile(file, 'utf8'),
  readdir: (dir) => readdir(dir),
  watch: (dir, changed) => watch(dir, { persistent: false }, () => changed()),
};

export class FolderKeyStore implements DnssecKeyStore {
  readonly dir: string;
  private readonly held = new Map<string, KeySetState>();
  private readonly log: ((level: 'info' | 'warn', message: string) => void) | undefined;
  private readonly io: KeyFolderIo;
  /**
   * The names in the key folder, kept while a watcher on the folder reports no change: a zone whose
   * file is not among them has no keys, so `update` reads nothing for it. Most zones are never signed,
   * and every visit to one before its first serial asks whether signing was being turned off there
   * (`BuiltinBackend.signingTurnedOff`): without the listing, one read of a missing file per zone and
   * visit. The store's own writes add their file; any change the watcher reports (a key file put there
   * by hand, e.g. from a backup; the folder removed) drops the listing and the watcher, and the next
   * `update` makes the folder, watches it and lists it again. Without a watcher, nothing is kept.
   * A listing is also kept at most `LISTING_MAX_AGE_MS`: a watcher reports nothing when the folder
   * itself is replaced (a symbolic link pointed at a restored copy), nor on some network file systems.
   */
  private names: Set<string> | undefined;
  private listedAt = 0;
  private listing: Promise<Set<string> | undefined> | undefined;
  private watcher: FSWatcher | undefined;
  /** Bumped by every change the watcher reports: a listing read across one is not kept. */
  private changes = 0;
  /** The folder could not be made or watched: every `update` reads the zone's file. */
  private unwatchable = false;

  /** `stateDir`: the state directory; keys go to its `dnssec` folder. */
  constructor(
    stateDir: string,
    log?: (level: 'info' | 'warn', message: string) => void,
    io: KeyFolderIo = NODE_IO,
  ) {
    this.dir = path.join(stateDir, 'dnssec');
    this.log = log;
    this.io = io;
  }

  /** Stops watching the folder. */
  close(): void {
    this.forget();
    this.unwatchable = true;
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
    const held = this.held.get(id) ?? (await this.stored(origin)) ?? { keys: [] };
    const next = step(held);
    if (!next) return held;
    await this.write(origin, next);
    this.held.set(id, next);
    return next;
  }

  /**
   * The zone's key file, read unless the watched folder's listing shows there is none. (`keysFor`
   * always reads: it writes new keys where it finds none, and must never replace a file it missed.)
   */
  private async stored(origin: Name): Promise<KeySetState | undefined> {
    if (this.names && Date.now() - this.listedAt > LISTING_MAX_AGE_MS) this.names = undefined;
    const names = this.names ?? (await this.list());
    if (names && !names.has(keyFileName(origin))) return undefined;
    return this.read(origin);
  }

  /** Makes and watches the folder, then lists it; undefined when it cannot be watched. */
  private list(): Promise<Set<string> | undefined> {
    if (this.unwatchable) return Promise.resolve(undefined);
    this.listing ??= (async () => {
      const seen = this.changes;
      try {
        if (!this.watcher) {
          await mkdir(this.dir, { recursive: true, mode: 0o700 });
          if (this.unwatchable) return undefined; // closed meanwhile
          const watcher = this.io.watch(this.dir, () => this.forget());
          watcher.on('error', () => this.forget());
          this.watcher = watcher;
        }
        const names = new Set(await this.io.readdir(this.dir));
        // A change reported while listing (the watcher is gone then): not kept, read again next time.
        if (this.changes !== seen) return undefined;
        this.names = names;
        this.listedAt = Date.now();
        return names;
      } catch (e) {
        this.unwatchable = true;
        this.forget();
        this.log?.(
          'warn',
          `cannot watch ${this.dir} (${(e as Error).message}): the key file of every zone is read at each visit`,
        );
        return undefined;
      } finally {
        this.listing = undefined;
      }
    })();
    return this.listing;
  }

  /** The folder changed (or its watcher failed): the listing goes, and the watcher with it. */
  private forget(): void {
    this.changes++;
    this.names = undefined;
    this.watcher?.close();
    this.watcher = undefined;
  }

  private file(origin: Name): string {
    return path.join(this.dir, keyFileName(origin));
  }

  private async read(origin: Name): Promise<KeySetState | undefined> {
    let text: string;
    try {
      text = await this.io.readFile(this.file(origin));
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
    this.names?.add(keyFileName(origin));
    const dirFd = await open(this.dir, 'r');
    try {
      await dirFd.sync();
    } finally {
      await dirFd.close();
    }
  }
}
