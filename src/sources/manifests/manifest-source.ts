import { type FSWatcher, watch } from 'node:fs';
import { KINDS, type Kind, type Problem, type Resource, validateResource } from '../../api/index.ts';
import type { MemoryStore } from '../../control/memory-store.ts';
import { resourceKey } from '../../zones/resource-key.ts';
import { type ManifestDocument, readManifests } from './load-manifests.ts';
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

/**
 * Feeds the store from a folder of manifests and keeps it in step: adds, edits and deletions are
 * applied as the folder changes. Invalid input never deletes anything: an object whose new version is
 * invalid keeps its last valid version, and a file that cannot be parsed keeps all the objects it
 * held. Problems are reported with file, document, line and field.
 */
export class ManifestSource {
  private readonly options: Required<Omit<ManifestSourceOptions, 'log'>> & Pick<ManifestSourceOptions, 'log'>;
  /** Object id (`Kind/key`) → the file it came from, for the objects currently in the store. */
  private readonly origins = new Map<string, string>();
  private current: ManifestProblem[] = [];
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;
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
    await this.reload();
    this.watcher = watch(this.options.dir, { recursive: true }, () => this.schedule());
    this.watcher.on('error', (e) =>
      this.options.log?.('error', `watching ${this.options.dir}: ${e.message}`),
    );
  }

  stop(): void {
    this.watcher?.close();
    clearTimeout(this.timer);
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), this.options.debounceMs);
  }

  /** Re-reads the folder and applies the difference; concurrent calls are folded into one more run. */
  async reload(): Promise<void> {
    if (this.reloading) {
      this.again = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      do {
        this.again = false;
        await this.reloadOnce();
      } while (this.again);
    })().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  private async reloadOnce(): Promise<void> {
    const { store, state } = this.options;
    const read = await readManifests([this.options.dir]);
    const problems: ManifestProblem[] = read.fileErrors.map((e) => ({
      ...e,
      code: 'YAML_INVALID',
      message: e.message,
    }));
    /** Files whose content we could not fully account for: their previous objects are kept. */
    const unsure = new Set(read.fileErrors.map((e) => e.file));
    const desired = new Map<string, { resource: Resource; doc: ManifestDocument }>();
    const keep = new Set<string>();

    for (const doc of read.documents) {
      const identity = identify(doc.value);
      const id = identity ? `${identity.kind}/${identity.key}` : undefined;
      const previous = identity
        ? (store.get(identity.kind, identity.key) as Resource | undefined)
        : undefined;
      const result = validateResource(doc.value, previous);
      if (!result.ok) {
        const object = identity ? `${identity.kind} ${identity.key}` : undefined;
        for (const p of result.problems) problems.push(locate(doc, p, object));
        if (id) keep.add(id);
        else unsure.add(doc.file);
        continue;
      }
      const resource = result.resource;
      const rid = `${resource.kind}/${resourceKey(resource.metadata)}`;
      const first = desired.get(rid);
      if (first) {
        problems.push({
          file: doc.file,
          document: doc.document,
          line: doc.line,
          object: `${resource.kind} ${resourceKey(resource.metadata)}`,
          code: 'DUPLICATE',
          message: `also defined in ${first.doc.file} (document ${first.doc.document}); the first definition is used, remove one`,
        });
        continue;
      }
      desired.set(rid, { resource, doc });
    }

    for (const [id, { resource, doc }] of desired) {
      let created = state.createdAt(id);
      if (!created) {
        created = new Date().toISOString();
        state.noteCreated(id, created);
      }
      this.origins.set(id, doc.file);
      store.apply(resource, created);
    }
    for (const kind of KINDS) {
      for (const object of store.list(kind)) {
        const key = resourceKey(object.metadata);
        const id = `${kind}/${key}`;
        if (desired.has(id) || keep.has(id)) continue;
        const file = this.origins.get(id);
        if (file !== undefined && unsure.has(file)) continue;
        store.remove(kind, key);
        this.origins.delete(id);
        state.forgetCreated(id);
      }
    }
    await state.save();
    this.current = problems;
    for (const p of problems) this.options.log?.('warn', formatProblem(p));
    this.onReload?.(problems);
  }
}

function identify(value: unknown): { kind: Kind; key: string } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } };
  if (typeof v.kind !== 'string' || !(KINDS as readonly string[]).includes(v.kind)) return undefined;
  const name = v.metadata?.name;
  if (typeof name !== 'string' || name === '') return undefined;
  const kind = v.kind as Kind;
  const namespace =
    kind === 'DNSZoneClass'
      ? undefined
      : typeof v.metadata?.namespace === 'string'
        ? v.metadata.namespace
        : 'default';
  return { kind, key: resourceKey({ name, namespace }) };
}

function locate(doc: ManifestDocument, p: Problem, object: string | undefined): ManifestProblem {
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
