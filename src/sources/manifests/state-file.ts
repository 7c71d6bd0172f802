import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SerialStore, ZoneSerialState } from '../../control/serial-store.ts';
import type { Name } from '../../dns/name.ts';

interface StateData {
  version: 1;
  /** Per zone origin (lowercase): the last serial and hash published. */
  serials: Record<string, ZoneSerialState>;
  /** Per `Kind/namespace/name`: when the object was first seen, so that "oldest wins" survives restarts. */
  created: Record<string, string>;
}

/**
 * The state folder mode keeps across restarts, in `<state-dir>/state.json`: serials (so a restart
 * never lowers one) and creation times. Writes are atomic (temporary file + rename) and coalesced:
 * callers that save at the same time share one write.
 */
export class StateFile implements SerialStore {
  private data: StateData = { version: 1, serials: {}, created: {} };
  private readonly file: string | undefined;
  private writing: Promise<void> | undefined;
  /** Bumped by every change; `persisted` is the version the file holds. */
  private version = 0;
  private persisted = 0;

  constructor(dir: string | undefined) {
    this.file = dir === undefined ? undefined : path.join(dir, 'state.json');
  }

  get persistent(): boolean {
    return this.file !== undefined;
  }

  async load(): Promise<void> {
    if (!this.file) return;
    await mkdir(path.dirname(this.file), { recursive: true });
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    const parsed = JSON.parse(text) as Partial<StateData>;
    if (parsed.version !== 1)
      throw new Error(`${this.file}: unsupported state version ${String(parsed.version)}`);
    this.data = { version: 1, serials: parsed.serials ?? {}, created: parsed.created ?? {} };
  }

  get(origin: Name): ZoneSerialState | undefined {
    return this.data.serials[origin.toLowerCase()];
  }

  async set(origin: Name, state: ZoneSerialState): Promise<void> {
    this.data.serials[origin.toLowerCase()] = state;
    await this.save();
  }

  createdAt(id: string): string | undefined {
    return this.data.created[id];
  }

  /** Records creation times; saved with the next write. */
  noteCreated(id: string, timestamp: string): void {
    if (this.data.created[id] !== timestamp) {
      this.data.created[id] = timestamp;
      this.version++;
    }
  }

  forgetCreated(id: string): void {
    if (id in this.data.created) {
      delete this.data.created[id];
      this.version++;
    }
  }

  /** Resolves once everything changed before the call is on disk. */
  async save(): Promise<void> {
    if (!this.file) return;
    const target = ++this.version;
    while (this.persisted < target) {
      if (this.writing) {
        await this.writing;
        continue;
      }
      const writingVersion = this.version;
      this.writing = this.write()
        .then(() => {
          this.persisted = Math.max(this.persisted, writingVersion);
        })
        .finally(() => {
          this.writing = undefined;
        });
      await this.writing;
    }
  }

  private async write(): Promise<void> {
    const file = this.file!;
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(this.data, null, 1)}\n`);
    await rename(tmp, file);
  }
}
