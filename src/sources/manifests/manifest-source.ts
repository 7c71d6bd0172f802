import { type FSWatcher, watch } from 'node:fs';
import { stat } from 'node:fs/promises';
import { KINDS, type Kind, type Problem, type Resource, validateResource } from '../../api/index.ts';
import type { MemoryStore } from '../../control/memory-store.ts';
import { getOrInsert } from '../../util/get-or-insert.ts';
import { resourceKey } from '../../zones/resource-key.ts';
import {
  documentIdentity,
  listManifestTree,
  type ManifestDocument,
  readManifests,
} from './load-manifests.ts';
import type { StateFile } from './state-file.ts';

/** A problem found in the manifests, located as precisely as possible. */
export interface ManifestProblem {
  file: string;
  document?: number;
  line?: number;
  /** `Kind namespace/name` when the document got that far. */
  object?: string;
  path?: string;
  code: string;
  message: string;
}

export function formatProblem(p: ManifestProblem): string {
  const where = [
    p.file,
    p.line !== undefined ? `:${p.line}` : '',
    p.document !== undefined ? ` (document ${p.document})` : '',
  ].join('');
  const what = [p.object, p.path].filter(Boolean).join(' ');
  return `${where}: ${what ? `${what}: ` : ''}${p.message}`;
}

export interface ManifestSourceOptions {
  dir: string;
  store: MemoryStore;
  state: StateFile;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** Quiet period after the last file change before reloading. */
  debounceMs?: number;
}

/** How often the folder is re-checked even without a watcher event. */
const RESCAN_MS = 5000;

/** What one file contributed at its last read. */
interface FileState {
  mtimeMs: number;
  size: number;
  ino: number;
  /** Valid definitions, by object id (`Kind/key`), in document order. */
  definitions: Map<string, { resource: Resource; document: number }>;
  problems: ManifestProblem[];
}

/**
 * Feeds the store from a folder of manifests and keeps it in step: adds, edits and deletions are
 * applied as the folder changes. A reload re-reads only files whose size or modification time
 * changed, and touches only the objects those files define, so an edit costs work proportional to the
 * file edited. Invalid input never deletes anything: an object whose new version is invalid keeps its
 * last valid version, and a file that cannot be fully parsed keeps every object it held. Problems are
 * reported with file, document, line and field.
 */
export class ManifestSource {
  private readonly options: Required<Omit<ManifestSourceOptions, 'log'>> & Pick<ManifestSourceOptions, 'log'>;
  private readonly files = new Map<string, FileState>();
  /** Object id → the files that define it validly; the first in path order wins. */
  private readonly definers = new Map<string, Set<string>>();
  private current: ManifestProblem[] = [];
  private readonly watchers = new Map<string, FSWatcher>();
  private watching = false;
  private timer?: NodeJS.Timeout;
  private rescan?: NodeJS.Timeout;
  private reloading: Promise<void> | undefined;
  private again = false;
  /** Called after each reload with the problems found. */
  onReload?: (problems: readonly ManifestProblem[]) => void;

  constructor(options: ManifestSourceOptions) {
    this.options = { debounceMs: 50, ...options };
  }

  problems(): readonly ManifestProblem[] {
    return this.current;
  }

  /** Loads the folder once and starts watching it. */
  async start(): Promise<void> {
    this.watching = true;
    await this.reload();
    // A safety net for events a watcher misses: a stat pass over the folder now and then.
    this.rescan = setInterval(() => void this.reload(), RESCAN_MS);
    this.rescan.unref();
  }

  stop(): void {
    this.watching = false;
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
    clearTimeout(this.timer);
    clearInterval(this.rescan);
  }

  /**
   * One plain watcher per folder, kept in step with the folders found by each reload. Node's
   * recursive watch on Linux stops reporting a file once a rename has replaced it (what editors, git
   * checkouts and ConfigMap volumes do); plain directory watchers see every replacement.
   */
  private watchFolders(dirs: readonly string[]): void {
    if (!this.watching) return;
    const wanted = new Set(dirs);
    for (const [dir, watcher] of this.watchers) {
      if (wanted.has(dir)) continue;
      watcher.close();
      this.watchers.delete(dir);
    }
    for (const dir of dirs) {
      if (this.watchers.has(dir)) continue;
      try {
        const watcher = watch(dir, () => this.schedule());
        watcher.on('error', () => {
          watcher.close();
          this.watchers.delete(dir); // gone; the next reload decides
          this.schedule();
        });
        this.watchers.set(dir, watcher);
      } catch (e) {
        this.options.log?.('error', `watching ${dir}: ${(e as Error).message}`);
      }
    }
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), this.options.debounceMs);
  }

  /** Re-reads what changed in the folder; concurrent calls are folded into one more run. */
  async reload(): Promise<void> {
    if (this.reloading) {
      this.again = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      do {
        this.again = false;
        try {
          await this.reloadOnce();
        } catch (e) {
          this.options.log?.('error', `reading ${this.options.dir}: ${(e as Error).message}`);
        }
      } while (this.again);
    })().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  private async reloadOnce(): Promise<void> {
    const { store, state } = this.options;
    const { files: paths, dirs } = await listManifestTree(this.options.dir);
    this.watchFolders(dirs);
    const touched = new Set<string>();
    const present = new Set(paths);
    for (const [file, previous] of this.files) {
      if (present.has(file)) continue;
      this.files.delete(file);
      for (const id of previous.definitions.keys()) this.undefine(id, file, touched);
    }
    for (const file of paths) {
      let info: { mtimeMs: number; size: number; ino: number };
      try {
        info = await stat(file);
      } catch {
        continue; // removed between listing and stat: the next reload sees it gone
      }
      const previous = this.files.get(file);
      // A replaced file (rename over it) has a new inode even when size and mtime look the same.
      if (
        previous &&
        previous.mtimeMs === info.mtimeMs &&
        previous.size === info.size &&
        previous.ino === info.ino
      ) {
        continue;
      }
      const next = await this.readFile(file, info, previous);
      this.files.set(file, next);
      for (const id of previous?.definitions.keys() ?? []) {
        if (!next.definitions.has(id)) this.undefine(id, file, touched);
      }
      for (const id of next.definitions.keys()) {
        getOrInsert(this.definers, id, () => new Set()).add(file);
        touched.add(id);
      }
    }

    for (const id of touched) {
      const winner = this.winner(id);
      const { kind, key } = splitId(id);
      if (!winner) {
        store.remove(kind, key);
        state.forgetCreated(id);
        continue;
      }
      let created = state.createdAt(id);
      if (!created) {
        created = new Date().toISOString();
        state.noteCreated(id, created);
      }
      store.apply(winner.resource, created);
    }
    // Creation times are saved in the background (StateFile); serials are saved before they are served.
    const problems: ManifestProblem[] = [];
    for (const file of paths) problems.push(...(this.files.get(file)?.problems ?? []));
    problems.push(...this.duplicateProblems());
    this.current = problems;
    if (touched.size > 0 || problems.length > 0) {
      for (const p of problems) this.options.log?.('warn', formatProblem(p));
    }
    this.onReload?.(problems);
  }

  /**
   * Parses one file. Valid documents become its definitions. An invalid document that names its
   * object keeps that object's previous definition from this file; a file with a YAML error or an
   * anonymous invalid document keeps all of its previous definitions (nothing is deleted on bad input).
   */
  private async readFile(
    file: string,
    info: { mtimeMs: number; size: number; ino: number },
    previous: FileState | undefined,
  ): Promise<FileState> {
    const { store } = this.options;
    const read = await readManifests([file]);
    const problems: ManifestProblem[] = read.fileErrors.map((e) => ({
      ...e,
      code: 'YAML_INVALID',
      message: e.message,
    }));
    let keepAll = read.fileErrors.length > 0;
    const definitions = new Map<string, { resource: Resource; document: number }>();
    const keep = new Set<string>();
    for (const doc of read.documents) {
      const identity = identify(doc.value);
      const previousObject = identity
        ? (store.get(identity.kind, identity.key) as Resource | undefined)
        : undefined;
      const result = validateResource(doc.value, previousObject);
      if (!result.ok) {
        const object = identity ? `${identity.kind} ${identity.key}` : undefined;
        for (const p of result.problems) problems.push(locateProblem(doc, p, object));
        if (identity) keep.add(`${identity.kind}/${identity.key}`);
        else keepAll = true;
        continue;
      }
      const id = `${result.resource.kind}/${resourceKey(result.resource.metadata)}`;
      if (definitions.has(id)) {
        problems.push({
          file,
          document: doc.document,
          line: doc.line,
          object: `${result.resource.kind} ${resourceKey(result.resource.metadata)}`,
          code: 'DUPLICATE',
          message: `defined twice in this file (first in document ${definitions.get(id)!.document}); the first is used, remove one`,
        });
        continue;
      }
      definitions.set(id, { resource: result.resource, document: doc.document });
    }
    for (const [id, definition] of previous?.definitions ?? []) {
      if (definitions.has(id)) continue;
      if (keepAll || keep.has(id)) definitions.set(id, definition);
    }
    if (keepAll && previous) {
      problems.push({
        file,
        code: 'KEPT_PREVIOUS',
        message: 'the file has errors; the objects it defined before keep their last valid versions',
      });
    }
    return { mtimeMs: info.mtimeMs, size: info.size, ino: info.ino, definitions, problems };
  }

  private undefine(id: string, file: string, touched: Set<string>): void {
    const set = this.definers.get(id);
    if (!set) return;
    set.delete(file);
    if (set.size === 0) this.definers.delete(id);
    touched.add(id);
  }

  private winner(id: string): { resource: Resource; file: string } | undefined {
    const files = this.definers.get(id);
    if (!files || files.size === 0) return undefined;
    const file = [...files].sort()[0]!;
    const definition = this.files.get(file)?.definitions.get(id);
    return definition ? { resource: definition.resource, file } : undefined;
  }

  private duplicateProblems(): ManifestProblem[] {
    const out: ManifestProblem[] = [];
    for (const [id, files] of this.definers) {
      if (files.size < 2) continue;
      const [first, ...others] = [...files].sort();
      for (const file of others) {
        const definition = this.files.get(file)?.definitions.get(id);
        out.push({
          file,
          ...(definition ? { document: definition.document } : {}),
          object: id.replace('/', ' '),
          code: 'DUPLICATE',
          message: `also defined in ${first}; the definition there is used, remove one`,
        });
      }
    }
    return out;
  }
}

function splitId(id: string): { kind: Kind; key: string } {
  const slash = id.indexOf('/');
  return { kind: id.slice(0, slash) as Kind, key: id.slice(slash + 1) };
}

/** The identity of a document of one of our kinds (others are not ours to keep). */
function identify(value: unknown): { kind: Kind; key: string } | undefined {
  const id = documentIdentity(value);
  return id && (KINDS as readonly string[]).includes(id.kind)
    ? { kind: id.kind as Kind, key: id.key }
    : undefined;
}

/** A validation problem of a document, placed at its file, document and line. */
export function locateProblem(
  doc: ManifestDocument,
  p: Problem,
  object: string | undefined,
): ManifestProblem {
  return {
    file: doc.file,
    document: doc.document,
    line: (p.path ? doc.lineOf(p.path) : undefined) ?? doc.line,
    ...(object ? { object } : {}),
    ...(p.path ? { path: p.path } : {}),
    code: p.code,
    message: p.message,
  };
}
