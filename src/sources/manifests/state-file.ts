import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SerialStore, ZoneSerialState } from '../../control/serial-store.ts';
import type { Name } from '../../dns/name.ts';

/** How long creation-time changes may wait before they are written (they are not needed to serve). */
const CREATED_DELAY_MS = 2000;

/**
 * The state folder mode keeps across restarts, in `<state-dir>`:
 * - `state.json`: serials per zone origin, so a restart never lowers one. Small (one entry per zone)
 *   and written before a serial is served.
 * - `created.json`: when each object was first seen, so that "oldest wins" survives restarts. One
 *   entry per object (large with many records), written in the background a moment after changes
 *   and on shutdown; losing its last seconds in a crash only makes those objects younger.
 * Writes are atomic (temporary file + rename) and coalesced: saves that overlap share one write.
 */
export class StateFile implements SerialStore {
  private serials: Record<string, ZoneSerialState> = {};
  private created: Record<string, string> = {};
  private readonly serialsFile: JsonFile | undefined;
  private readonly createdFile: JsonFile | undefined;
  private createdTimer: NodeJS.Timeout | undefined;
  private readonly dir: string | undefined;

  constructor(dir: string | undefined) {
    this.dir = dir;
    this.serialsFile = dir === undefined ? undefined : new JsonFile(path.join(dir, 'state.json'));
    this.createdFile = dir === undefined ? undefined : new JsonFile(path.join(dir, 'created.json'));
  }

  get persistent(): boolean {
    return this.dir !== undefined;
  }

  async load(): Promise<void> {
    if (!this.dir) return;
    const state = await this.serialsFile!.read();
    if (state) {
      if (state.version !== 1)
        throw new Error(`${this.serialsFile!.file}: unsupported state version ${String(state.version)}`);
      this.serials = (state.serials as Record<string, ZoneSerialState> | undefined) ?? {};
      // Before created.json existed, creation times lived in state.json.
      this.created = (state.created as Record<string, string> | undefined) ?? {};
    }
    const created = await this.createdFile!.read();
    if (created?.created) this.created = created.created as Record<string, string>;
  }

  get(origin: Name): ZoneSerialState | undefined {
    return this.serials[origin.toLowerCase()];
  }

  /** Everything held, read-only (for `zone export`, which reads what `serve` saved). */
  snapshot(): {
    serials: Readonly<Record<string, ZoneSerialState>>;
    created: Readonly<Record<string, string>>;
  } {
    return { serials: this.serials, created: this.created };
  }

  async set(origin: Name, state: ZoneSerialState): Promise<void> {
    this.serials[origin.toLowerCase()] = state;
    await this.serialsFile?.write(() => ({ version: 1, serials: this.serials }));
  }

  createdAt(id: string): string | undefined {
    return this.created[id];
  }

  /** Records a creation time; written in the background shortly after. */
  noteCreated(id: string, timestamp: string): void {
    if (this.created[id] === timestamp) return;
    this.created[id] = timestamp;
    this.createdChanged();
  }

  forgetCreated(id: string): void {
    if (!(id in this.created)) return;
    delete this.created[id];
    this.createdChanged();
  }

  /** Writes everything now (graceful shutdown). */
  async save(): Promise<void> {
    clearTimeout(this.createdTimer);
    this.createdTimer = undefined;
    await Promise.all([
      this.serialsFile?.write(() => ({ version: 1, serials: this.serials })),
      this.createdFile?.write(() => ({ version: 1, created: this.created })),
    ]);
  }

  private createdChanged(): void {
    if (!this.createdFile || this.createdTimer) return;
    this.createdTimer = setTimeout(() => {
      this.createdTimer = undefined;
      this.createdFile!.write(() => ({ version: 1, created: this.created })).catch(() => {
        // Retried with the next change or at shutdown; creation times are not needed to serve.
      });
    }, CREATED_DELAY_MS);
    this.createdTimer.unref();
  }
}

/**
 * A JSON file written atomically; a write resolves once a write that started after the call (and so
 * holds everything changed before it) is on disk.
 */
class JsonFile {
  readonly file: string;
  private writing: Promise<void> | undefined;
  private version = 0;
  private persisted = 0;

  constructor(file: string) {
    this.file = file;
  }

  async read(): Promise<Record<string, unknown> | undefined> {
    try {
      return JSON.parse(await readFile(this.file, 'utf8')) as Record<string, unknown>;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  async write(content: () => unknown): Promise<void> {
    const target = ++this.version;
    while (this.persisted < target) {
      if (this.writing) {
        await this.writing;
        continue;
      }
      const writingVersion = this.version;
      this.writing = this.writeNow(content())
        .then(() => {
          this.persisted = Math.max(this.persisted, writingVersion);
        })
        .finally(() => {
          this.writing = undefined;
        });
      await this.writing;
    }
  }

  private async writeNow(data: unknown): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(data)}\n`);
    await rename(tmp, this.file);
  }
}
