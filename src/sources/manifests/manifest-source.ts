import { type FSWatcher, watch } from 'node:fs';
import { lstat, stat } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import {
  type ForeignObject,
  type FrontDoors,
  frontDoorId,
  NO_FRONT_DOORS,
  validateForeign,
} from '../../api/frontdoors/index.ts';
import {
  type Condition,
  type DNSRecordSet,
  type DNSZone,
  type DNSZoneClass,
  effectiveChangeSafety,
  KINDS,
  type Kind,
  type Problem,
  type Resource,
  validateResource,
} from '../../api/index.ts';
import { jsonEqual } from '../../control/conditions.ts';
import type { MemoryStore, TableSlot } from '../../control/memory-store.ts';
import { type Name, nameKey, parentName, parseName } from '../../dns/name.ts';
import { capped } from '../../util/capped.ts';
import { getOrInsert } from '../../util/get-or-insert.ts';
import { Interner, NameRefInterner } from '../../util/interner.ts';
import { pushAll } from '../../util/push-all.ts';
import { parseRecordSetRecords } from '../../zones/record-parse.ts';
import { resourceKey } from '../../zones/resource-key.ts';
import { Definers } from './definers.ts';
import { FileDefinitions } from './file-definitions.ts';
import type { FolderHold, HeldZoneRemoval } from './folder-hold.ts';
import {
  listManifestTree,
  type ManifestDocument,
  type ManifestFolder,
  type ManifestTree,
} from './load-manifests.ts';
import {
  DEFAULT_MAX_MANIFEST_BYTES,
  LocalManifestParser,
  type LocateRequest,
  type ManifestParser,
  type ParsedManifest,
} from './manifest-parser.ts';
import { type ObjectsMark, RECORD_SET_PREFIX, type StateStore, type StoredObject } from './state-file.ts';

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

/**
 * At most this many problems are reported for one file; the rest are counted in one more. Each
 * document's problems are capped already (`MAX_PROBLEMS`), but a file of many small invalid documents
 * (a few bytes each) would otherwise give a problem, a log line and a status entry for each: hundreds
 * of thousands from one file below the size limit. The objects it names are kept or refused as before.
 */
export const MAX_FILE_PROBLEMS = 1000;

/** The first `MAX_FILE_PROBLEMS` of a file's problems, and one counting the rest (code TOO_MANY_PROBLEMS). */
export function capFileProblems(file: string, problems: ManifestProblem[]): ManifestProblem[] {
  return capped(problems, MAX_FILE_PROBLEMS, (more) => ({
    file,
    code: 'TOO_MANY_PROBLEMS',
    message: `${more} more problem${more === 1 ? '' : 's'} in this file not listed; fix the ones above first`,
  }));
}

/**
 * Why an object that only invalid manifests name is refused: the first problem (field and message) and
 * how many more there are.
 */
export function refusalText(problems: readonly ManifestProblem[]): string {
  const first = problems[0];
  if (!first) return 'its manifest is invalid';
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem(s))` : '';
  return `${first.path ? `${first.path}: ` : ''}${first.message}${more}`;
}

export interface ManifestSourceOptions {
  /** The manifests folder; file names in the state store are relative to it. */
  dir: string;
  /** What to read instead of `dir` alone: folders and files (`validate PATH...`). */
  roots?: readonly string[];
  store: MemoryStore;
  state: StateStore;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** Quiet period after the last file change before reloading (default 50 ms). */
  debounceMs?: number;
  /** How often the folder is re-checked even without a watcher event (default 5 s). */
  rescanMs?: number;
  /**
   * How long a file caught mid-write must stay unchanged before it is applied (default 250 ms): a file
   * that defined objects and is read empty, or that changed while it was read, is read again after
   * this delay instead of being applied (an in-place write truncates the file first). 0 applies every
   * read as it is (one-shot reads: `validate`, `zone export`).
   */
  settleMs?: number;
  /** Larger manifest files are not read (default 16 MiB); their objects keep their last valid versions. */
  maxFileBytes?: number;
  /** Reads and parses files (default: on this thread; `serve` uses a worker thread). */
  parser?: ManifestParser;
  /** Front doors whose kinds the folder may hold too (the parser must know the same ones). */
  frontDoors?: FrontDoors;
  now?: () => Date;
  /**
   * Change safety for the folder: a reload that would remove every object or more than the threshold
   * keeps them, and holds the affected zones until confirmed (`folder-hold.ts`). Absent: removals apply.
   */
  folderHold?: FolderHold;
  /**
   * Runs a reload's apply, which changes many objects of the store in one run: `serve` gives the
   * translating store's `batch`, which translates the front-door objects that read the changed ones
   * once at its end rather than after each change. Absent: applied as it is.
   */
  batch?: (run: () => void) => void;
}

/** Default of `rescanMs`. */
export const DEFAULT_RESCAN_MS = 5000;
/** Default of `settleMs`. */
export const DEFAULT_SETTLE_MS = 250;
/** Documents checked between two yields to the event loop while a reload checks record values. */
const CHECKS_PER_TURN = 1000;

/** What a file defines: a valid version, with the document it came from (unknown when remembered). */
interface Definition {
  /** A native resource, or an object of a front door's kind (its id is `<door id>/<key>`). */
  resource: Resource | ForeignObject;
  document?: number;
}

/**
 * A definition whose version is the one the state store holds for its object (the served one: its
 * file is the object's in the state), as the number of its document (-1 when unknown). The winning
 * file's definition becomes one once applied, so the parsed object goes and the store's object is
 * the one kept (with the state's entry sharing its spec); a definition object per record set and the
 * parsed object with its metadata cost about 130 bytes (docs/benchmarks.md, memory budget).
 */
type Served = number;

/** What one file contributed at its last read. */
interface FileState {
  mtimeMs: number;
  size: number;
  ino: number;
  /**
   * Valid definitions, by object id (`Kind/key`), in document order; packed into arrays once the
   * file is applied (`FileDefinitions`).
   */
  definitions: FileDefinitions<Definition>;
  problems: ManifestProblem[];
  /** Objects kept at their last valid version because their manifest is invalid, and why. */
  kept: Map<string, ManifestProblem[]>;
  /** Objects named by an invalid document of this file, with its problems. */
  invalid: Map<string, ManifestProblem[]>;
  /**
   * Per definition, by its place in `definitions` as the file was read, 1 where it is a record set a
   * parse thread's message made in its usual shape with its id (`decodeDocuments`: `{ document,
   * resource }`, the resource a literal of the API version, the kind, metadata of its name and
   * namespace, and a spec; the id `DNSRecordSet/namespace/name` of them): the state keeps such a
   * record set as its spec alone without testing its shape. Only for a file taken early whose
   * definitions were listed (`ParsedManifest.distinct`), read by `applyEarly` and dropped right after.
   */
  usual?: Uint8Array;
}

/** What identifies a version of a file: size, modification time and inode. */
interface FileStamp {
  mtimeMs: number;
  size: number;
  ino: number;
}

/** A changed file, read and parsed, waiting to become a FileState. */
interface ReadFile {
  file: string;
  /** The file before it was read. */
  info: FileStamp;
  /** The file after it was read; absent when it was gone by then. */
  after: FileStamp | undefined;
  parsed: ParsedManifest & { token: number };
}

function sameStamp(a: FileStamp, b: FileStamp): boolean {
  return a.mtimeMs === b.mtimeMs && a.size === b.size && a.ino === b.ino;
}

/**
 * Feeds the store from a folder of manifests and keeps it in step: adds, edits and deletions are
 * applied as the folder changes. A reload re-reads only files whose size, modification time or inode
 * changed, and touches only the objects those files define, so an edit costs work proportional to the
 * file edited. Files are parsed by `parser` (a worker thread in `serve`).
 *
 * Invalid input never deletes anything and never changes what is served (ADR 0004): an object whose
 * new version is invalid — schema, rules, immutable fields, or a record value that does not parse —
 * keeps its last valid version, and a file that cannot be read or parsed keeps every object it held.
 * The kept versions, with creation times and files, are remembered in the state store, so a restart
 * serves what was served before. Problems are reported with file, document, line and field, and
 * logged when they appear and when they go.
 */
export class ManifestSource {
  private readonly options: Required<Omit<ManifestSourceOptions, 'log' | 'folderHold' | 'batch'>> &
    Pick<ManifestSourceOptions, 'log' | 'folderHold' | 'batch'>;
  private readonly files = new Map<string, FileState>();
  /** Object id → the files that define it validly; the first in path order wins. */
  private readonly definers: Definers;
  /** One copy of the strings most objects repeat (API version, kind, namespace, zone, type). */
  private readonly interner = new Interner();
  private readonly zoneRefs = new NameRefInterner();
  /** Absolute file → its path relative to the folder (see `relative`). */
  private readonly relatives = new Map<string, string>();
  private current: ManifestProblem[] = [];
  /** Objects served at a last valid version, with the problems of their latest manifest. */
  private kept = new Map<string, ManifestProblem[]>();
  /** Objects named by invalid manifests only: no valid version of them is served or kept. */
  private refused = new Map<string, ManifestProblem[]>();
  private readonly keptSince = new Map<string, string>();
  /** The folder itself cannot be read. */
  private folderError: ManifestProblem | undefined;
  private loadedOnce = false;
  /**
   * The objects a reload touched and then failed before applying (`reloadOnce`): the files it read
   * may keep their new stamps and definitions, so the next reload, which need not read them again,
   * applies these objects' winners (a failure loses nothing).
   */
  private unapplied: Set<string> | undefined;
  /**
   * A reload ran to its end, or failed: from then on whoever starts the folder (`serve`) may watch the
   * store, so no later reload applies objects early (ADR 0029), a first load again included.
   */
  private reloadedOnce = false;
  private logged = new Set<string>();
  private readonly watchers = new Map<string, FSWatcher>();
  private watching = false;
  private timer?: NodeJS.Timeout;
  private rescan?: NodeJS.Timeout;
  /** Files caught mid-write: the version seen and since when (monotonic ms), until it settles. */
  private readonly settling = new Map<string, { stamp: FileStamp; since: number }>();
  private settleTimer?: NodeJS.Timeout;
  private reloading: Promise<void> | undefined;
  private again = false;
  /**
   * The files the watchers named since the last reload took them, or 'all' when a reload must list
   * the folder and stat every file (a watcher's event without a name, a watcher's error, the rescan,
   * the first load, any reload not started by a watcher's event).
   */
  private hints: Set<string> | 'all' = 'all';
  /** What the last listing of the folder found (`list`). */
  private lastTree: ManifestTree | undefined;
  /** A fresh first load's objects applied while later files are parsed (ADR 0029), until its `apply`. */
  private early: EarlyApply | undefined;
  /** `reloadFailure`. */
  private failure: string | undefined;
  /** Called after each reload with the problems found. */
  onReload?: (problems: readonly ManifestProblem[]) => void;
  /** Called after each reload with the zones whose removal is held (by zone key). */
  onHolds?: (holds: ReadonlyMap<string, HeldZoneRemoval>) => void;

  constructor(options: ManifestSourceOptions) {
    this.options = {
      roots: [options.dir],
      debounceMs: 50,
      rescanMs: DEFAULT_RESCAN_MS,
      settleMs: DEFAULT_SETTLE_MS,
      maxFileBytes: DEFAULT_MAX_MANIFEST_BYTES,
      parser: new LocalManifestParser(options.frontDoors),
      frontDoors: NO_FRONT_DOORS,
      now: () => new Date(),
      ...options,
    };
    this.definers = new Definers(options.state);
  }

  problems(): readonly ManifestProblem[] {
    return this.current;
  }

  /** The problem when the folder itself cannot be read (serve is not ready then). */
  folderProblem(): ManifestProblem | undefined {
    return this.folderError;
  }

  /**
   * Why the last reload failed, until one succeeds (each is retried; serve is not ready meanwhile:
   * what changed in the folder since the last reload that succeeded may not be applied).
   */
  reloadFailure(): string | undefined {
    return this.failure;
  }

  /** The ids (`Kind/key`) of objects served at a last valid version, with why. */
  keptObjects(): ReadonlyMap<string, readonly ManifestProblem[]> {
    return this.kept;
  }

  /**
   * The ids (`Kind/key`) of objects that only invalid manifests name — no valid version of them is
   * served or kept — with the problems of their manifests (e.g. a DNSZone that record sets
   * name in spec.zoneRef: they are told it is refused and why, not that it does not exist).
   */
  refusedObjects(): ReadonlyMap<string, readonly ManifestProblem[]> {
    return this.refused;
  }

  /**
   * The object as the API shows it: an object kept at its last valid version has `Accepted=False`
   * (reason `Invalid`, with the problem) and `Ready=False`; `Programmed` still says what is served.
   */
  present(object: Resource): Resource {
    const problems = this.kept.get(`${object.kind}/${resourceKey(object.metadata)}`);
    if (!problems || problems.length === 0) return object;
    const first = problems[0]!;
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem(s))` : '';
    const message = `the manifest is invalid, so the last valid version (generation ${object.metadata.generation ?? 1}) is still served: ${formatProblem(first)}${more}`;
    const generation = object.metadata.generation;
    const conditions: Condition[] = [...(object.status?.conditions ?? [])];
    const transition =
      this.keptSince.get(`${object.kind}/${resourceKey(object.metadata)}`) ?? new Date(0).toISOString();
    for (const type of ['Accepted', 'Ready'] as const) {
      const i = conditions.findIndex((c) => c.type === type);
      const before = i >= 0 ? conditions[i] : undefined;
      const condition: Condition = {
        type,
        status: 'False',
        reason: 'Invalid',
        message,
        ...(generation !== undefined ? { observedGeneration: generation } : {}),
        lastTransitionTime:
          before?.status === 'False' && before.reason === 'Invalid' ? before.lastTransitionTime : transition,
      };
      if (i >= 0) conditions[i] = condition;
      else conditions.push(condition);
    }
    return { ...object, status: { ...object.status, conditions } } as Resource;
  }

  /** Loads the folder once and starts watching it. */
  async start(): Promise<void> {
    this.watching = true;
    await this.reload();
    // A safety net for events a watcher misses: a stat pass over the folder now and then.
    this.rescan = setInterval(() => void this.reload(), this.options.rescanMs);
    this.rescan.unref();
  }

  stop(): void {
    this.watching = false;
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
    clearTimeout(this.timer);
    clearTimeout(this.settleTimer);
    this.settleTimer = undefined;
    clearInterval(this.rescan);
  }

  /**
   * One plain watcher per folder, kept in step with the folders found by each reload. Node's
   * recursive watch on Linux stops reporting a file once a rename has replaced it (what editors, git
   * checkouts and ConfigMap volumes do); plain directory watchers see every replacement. A folder
   * reached through a symbolic link is watched again when the link points elsewhere.
   */
  private watchFolders(dirs: readonly ManifestFolder[]): void {
    if (!this.watching) return;
    const wanted = new Map(dirs.map((d) => [`${d.path}\u0000${d.real}`, d.path]));
    for (const [key, watcher] of this.watchers) {
      if (wanted.has(key)) continue;
      watcher.close();
      this.watchers.delete(key);
    }
    for (const [key, dir] of wanted) {
      if (this.watchers.has(key)) continue;
      try {
        const watcher = watch(dir, (_event, name) => this.schedule(name ? path.join(dir, name) : undefined));
        watcher.on('error', () => {
          watcher.close();
          this.watchers.delete(key); // gone; the next reload decides
          this.schedule();
        });
        this.watchers.set(key, watcher);
      } catch (e) {
        this.options.log?.('error', `watching ${dir}: ${(e as Error).message}`);
      }
    }
  }

  /** A reload after the quiet period; `file`, the entry a watcher named (none: the whole folder). */
  private schedule(file?: string): void {
    if (file === undefined) this.hints = 'all';
    else if (this.hints !== 'all') this.hints.add(file);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reloadWith(), this.options.debounceMs);
  }

  /** Re-reads what changed in the folder; concurrent calls are folded into one more run. */
  reload(): Promise<void> {
    // Listed and every file stat'ed: only a watcher's events name what changed.
    this.hints = 'all';
    return this.reloadWith();
  }

  /**
   * `reload`, where the run reads only the files the watchers named (`hints`) when each of them is
   * a file read before, still there (`reloadOnceEarly`).
   */
  private async reloadWith(): Promise<void> {
    if (this.reloading) {
      this.again = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      do {
        this.again = false;
        try {
          await this.reloadOnce();
          this.failure = undefined;
        } catch (e) {
          // What the failed run did not read is read by the next one: it lists the folder.
          this.hints = 'all';
          this.failure = `reading ${this.options.dir}: ${(e as Error).message}`;
          this.options.log?.('error', this.failure);
        }
      } while (this.again);
    })().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  private async reloadOnce(): Promise<void> {
    try {
      await this.reloadOnceEarly();
    } finally {
      this.early = undefined;
      this.reloadedOnce = true;
    }
  }

  /** `reloadOnce`'s work; what it applies early (`this.early`) lasts until it returns or throws. */
  private async reloadOnceEarly(): Promise<void> {
    const { dir, state } = this.options;
    const first = !this.loadedOnce;
    // Left set if this reload throws: the next one applies what it touched (nothing is lost).
    const touched: Set<string> = this.unapplied ?? new Set<string>();
    this.unapplied = touched;
    let treeProblems: ManifestProblem[] = [];
    let tree: ManifestTree;
    // Only files read before named by the watchers: the last listing stands, and only they are
    // stat'ed, not every file of the folder (docs/benchmarks.md, fifteenth round).
    const named = await this.namedFiles(first);
    try {
      tree = named !== undefined ? this.lastTree! : await this.list();
      this.lastTree = tree;
    } catch (e) {
      this.folderError = {
        file: dir,
        code: 'FOLDER_UNREADABLE',
        message: `cannot read the manifests folder: ${(e as Error).message}; every object keeps its last valid version until the folder can be read`,
      };
      if (first) {
        // Serve what was served before: every remembered object, kept.
        for (const file of state.loadedFiles())
          this.keepRemembered(this.absolute(file), [this.folderError], touched);
        this.finishFirstLoad();
      }
      this.apply(touched);
      this.unapplied = undefined;
      this.publish([this.folderError]);
      return;
    }
    this.watchFolders(tree.dirs);
    const wasUnreadable = this.folderError !== undefined;
    treeProblems = tree.errors.map((e) => ({
      file: e.file,
      code: e.code ?? 'FOLDER_UNREADABLE',
      message: e.message,
    }));
    // Files below a folder that cannot be read (or behind a broken link) are not gone: keep them.
    const unreadable = tree.errors.map((e) => e.file);
    const hidden = (file: string) => unreadable.some((u) => file === u || file.startsWith(`${u}${path.sep}`));
    const present = new Set(tree.files);
    for (const [file, previous] of this.files) {
      if (present.has(file) || hidden(file)) continue;
      this.files.delete(file);
      this.settling.delete(file);
      for (const id of previous.definitions.keys()) this.undefine(id, file, touched);
    }
    if (first) {
      for (const relative of state.loadedFiles()) {
        const file = this.absolute(relative);
        if (!present.has(file) && hidden(file)) {
          const why = treeProblems.filter((p) => file === p.file || file.startsWith(`${p.file}${path.sep}`));
          this.keepRemembered(file, why, touched);
        }
      }
    }

    // A first load into a state that holds no object: the definers need not ask the state, which
    // gains objects only in `apply` (`Definers.stateHoldsNone`).
    const stateEmpty = first && state.objectIds().next().done === true;
    if (stateEmpty) this.definers.stateHoldsNone(true);
    // Nor is a set of every object's id made beside the definers' map: with nothing defined before
    // (no file read, none remembered) the objects touched are exactly those defined, in the order
    // they were first defined (`Definers.definedIds`), as long as no file read now had a previous
    // version (none can have one, but if one did, `touched` is filled from then on).
    let fresh = stateEmpty && this.files.size === 0 && this.definers.size === 0;
    let checked = 0;
    // A promise only when it is time to yield: awaiting one per document costs a turn of the
    // microtask queue each.
    const pace = () => (++checked % CHECKS_PER_TURN === 0 ? yieldToEventLoop() : undefined);
    // On a fresh first load each file is taken as soon as it is parsed, in path order, while later
    // files are still being parsed (ADR 0029): nothing was defined before, and the store and the
    // state are not touched until `apply`, so what a file defines is what it would define below.
    // The first read that cannot be taken so (`takesEarly`) and every later one are taken below,
    // after the last parse, as on any other reload.
    const early = fresh && this.settling.size === 0 ? new EarlyReads() : undefined;
    let earlyOrigins: ((rs: DNSRecordSet) => Name) | undefined;
    /** Files taken early whose problems still want lines, parsed again after the last parse. */
    const locateLater: (() => Promise<void>)[] = [];
    const take =
      early &&
      (async (read: ReadFile): Promise<boolean> => {
        if (!early.on) return false;
        if (!this.takesEarly(read, first) || !early.noteZones(read)) {
          early.on = false;
          return false;
        }
        this.unsettled(read, undefined); // not caught mid-write (`takesEarly`): false
        earlyOrigins ??= this.originFinder([], early.zones, early.used);
        const next = await this.fileState(read, undefined, earlyOrigins, pace, locateLater, true);
        this.options.parser.release(read.parsed.token);
        this.files.set(read.file, next);
        // Applied early, the file's new objects' definers go into their state entries as they are put.
        if (!this.early?.on || !this.applyEarly(read.file, next))
          for (const id of next.definitions.keys()) this.definers.add(id, read.file);
        // Read by the early apply, or not at all: not kept with the file.
        next.usual = undefined;
        early.taken.push(read.file);
        return true;
      });
    // Each file taken early has its new objects applied too, while later files are parsed, where
    // nothing can see them before the load completes nor need them taken back from disk
    // (`appliesEarly`); the final `apply` takes the rest (ADR 0029).
    this.early = early && this.appliesEarly(tree.files) ? new EarlyApply(this.options) : undefined;
    let reads: ReadFile[];
    try {
      reads = await this.readChanged(named ?? tree.files, take || undefined);
      for (const again of locateLater) await again();
    } catch (e) {
      // A failed read leaves the folder as before it (the next reload is a first load again).
      if (early) {
        this.takeBackEarly();
        this.forget(early.taken);
      }
      throw e;
    }
    let origins: (rs: DNSRecordSet) => Name;
    if (!early) origins = this.originFinder(reads);
    else {
      for (const read of reads) early.noteZones(read);
      if (early.conflict && early.taken.length > 0) {
        // A later file gave a zone key another domain than the one a file taken early checked
        // record values against: those files are read again and taken below with the others (a
        // zone defined twice with different domains; rare). What they applied is taken back.
        this.takeBackEarly();
        this.forget(early.taken);
        let again: ReadFile[];
        try {
          again = await this.readChanged(early.taken);
        } catch (e) {
          for (const read of reads) this.options.parser.release(read.parsed.token);
          throw e;
        }
        reads = [...again, ...reads];
        origins = this.originFinder(reads);
      } else origins = this.originFinder([], early.zones); // every read's zones noted
    }
    // A read that fails from here on (its problems' lines asked of a stopped parse thread) leaves
    // the store and the state as the batch path leaves them: what was applied early is taken back.
    try {
      for (const read of reads) {
        const previous = this.files.get(read.file) ?? (first ? this.remembered(read.file) : undefined);
        if (fresh && previous !== undefined) {
          for (const id of this.definers.definedIds()) touched.add(id);
          fresh = false;
        }
        if (this.unsettled(read, previous)) {
          // Not applied: the file keeps what it defined (and its old stamp, so the next reload reads it
          // again). On the first load, what it defined before the restart is served meanwhile.
          this.options.parser.release(read.parsed.token);
          if (previous && !this.files.has(read.file)) {
            this.files.set(read.file, previous);
            for (const id of previous.definitions.keys()) {
              this.definers.add(id, read.file);
              touched.add(id);
            }
          }
          continue;
        }
        const next = await this.fileState(read, previous, origins, pace);
        this.options.parser.release(read.parsed.token);
        this.files.set(read.file, next);
        for (const id of previous?.definitions.keys() ?? []) {
          if (!next.definitions.has(id)) this.undefine(id, read.file, touched);
        }
        // A changed file's objects whose version did not change are not touched: on a one-record
        // edit, `apply` of the file's other objects was most of the main thread's work.
        // The file's path as the state keeps it, made once for the file (when read again).
        const again = !first && previous !== undefined ? this.relative(read.file) : undefined;
        for (const [id, definition] of next.definitions.entries()) {
          this.definers.add(id, read.file);
          if (fresh) continue;
          if (again === undefined || !this.servedAlready(id, definition, again, next.definitions))
            touched.add(id);
        }
      }
    } catch (e) {
      // What was read stays read, its objects (those applied early and taken back included) touched.
      if (fresh) for (const id of this.definers.definedIds()) touched.add(id);
      this.takeBackEarly();
      throw e;
    }
    // The state holds only what was applied early, each defined still: nothing to forget there.
    if (first) this.finishFirstLoad(this.early !== undefined && this.early.count > 0);
    this.apply(fresh ? this.definers.definedIds() : touched, this.early);
    this.unapplied = undefined;

    const problems: ManifestProblem[] = [...treeProblems];
    for (const file of tree.files) pushAll(problems, this.files.get(file)?.problems ?? []);
    for (const [file, fileState] of this.files) if (!present.has(file)) pushAll(problems, fileState.problems);
    pushAll(problems, this.duplicateProblems());
    this.folderError = undefined;
    if (wasUnreadable)
      this.options.log?.('info', `the manifests folder ${this.options.roots.join(', ')} can be read again`);
    if (problems.length === 0 && this.definers.size === 0) {
      problems.push({
        file: this.options.roots.join(', '),
        code: 'NO_RESOURCES',
        message: `no DNSZoneClass, DNSZone or DNSRecordSet found in ${tree.files.length} manifest file(s); manifests are *.yaml and *.yml files (hidden ones skipped) with apiVersion dns.zonekeeper.dev/v1alpha1`,
      });
    }
    this.publish(problems);
  }

  /**
   * The files the watchers named since the last reload (`hints`), in the last listing's order, when
   * a reload may read only them: not a first load, the folder readable at the last listing, no file
   * waiting to settle, and each of them a file read before (in `files`), a regular file still (not a
   * symbolic link, not gone) with no other name (no hard link). Else undefined: the folder is listed
   * and every file stat'ed, as the rescan does. Takes the hints either way.
   */
  private async namedFiles(first: boolean): Promise<string[] | undefined> {
    const hints = this.hints;
    this.hints = new Set();
    if (hints === 'all' || first || this.lastTree === undefined || this.folderError !== undefined)
      return undefined;
    if (this.settling.size > 0) return undefined;
    for (const file of hints) {
      if (!this.files.has(file)) return undefined;
      try {
        // A file with another name too (a hard link) may be read under that name, which the watcher
        // does not name: the folder is listed and every file stat'ed.
        const info = await lstat(file);
        if (!info.isFile() || info.nlink > 1) return undefined;
      } catch {
        return undefined;
      }
    }
    return this.lastTree.files.filter((file) => hints.has(file));
  }

  /** The manifest files of every root; throws when the only root cannot be read. */
  private async list(): Promise<ManifestTree> {
    const { roots } = this.options;
    if (roots.length === 1) return listManifestTree(roots[0]!);
    const tree: ManifestTree = { files: [], dirs: [], errors: [] };
    for (const root of roots) {
      try {
        const one = await listManifestTree(root);
        for (const file of one.files) if (!tree.files.includes(file)) tree.files.push(file);
        pushAll(tree.dirs, one.dirs);
        pushAll(tree.errors, one.errors);
      } catch (e) {
        tree.errors.push({
          file: root,
          code: 'FOLDER_UNREADABLE',
          message: `cannot read: ${(e as Error).message}`,
        });
      }
    }
    return tree;
  }

  /** Where the served version of an object comes from: its file and document (unknown when remembered). */
  definitionOf(id: string): { file: string; document?: number } | undefined {
    const winner = this.winner(id);
    if (!winner) return undefined;
    const document = documentOf(this.files.get(winner.file)?.definitions.get(id));
    return { file: winner.file, ...(document !== undefined ? { document } : {}) };
  }

  /**
   * Whether a read caught its file mid-write, and so waits: a writer that writes in place (not by
   * renaming a new file over it) truncates the file first, then writes, and a reload in between reads
   * an empty or partial file. Applying it would delete what the file defined, and if the next version
   * is invalid there is then no last valid version left to keep. So a read is held back when the file
   * changed while it was read (its stamp after the read differs from before), or when a file that
   * defined objects is read empty; it is applied once the same version has been seen for `settleMs`
   * (a file emptied on purpose deletes its objects then). A partial file that did not change while it
   * was read is not noticed here: cut mid-document it usually fails to parse (its objects keep their
   * last valid versions); cut at a document boundary its later documents look removed.
   */
  private unsettled(read: ReadFile, previous: FileState | undefined): boolean {
    const { settleMs } = this.options;
    const { file, info, after } = read;
    const torn = !after || !sameStamp(info, after);
    const emptied = info.size === 0 && (previous?.definitions.size ?? 0) > 0;
    if (settleMs <= 0 || (!torn && !emptied)) {
      this.settling.delete(file);
      return false;
    }
    const now = performance.now();
    const seen = this.settling.get(file);
    if (!torn && seen && sameStamp(seen.stamp, info) && now - seen.since >= settleMs) {
      this.settling.delete(file);
      return false;
    }
    const stamp = after ?? info;
    if (!seen || !sameStamp(seen.stamp, stamp)) {
      this.settling.set(file, { stamp, since: now });
      this.options.log?.(
        'info',
        `${file} ${torn ? 'changed while it was read' : 'was read empty'}; reading it again once it has stayed the same for ${settleMs} ms`,
      );
    }
    this.scheduleSettle();
    return true;
  }

  /** A reload once the files caught mid-write may have settled (when watching; callers of reload() decide). */
  private scheduleSettle(): void {
    if (!this.watching || this.settleTimer) return;
    this.settleTimer = setTimeout(() => {
      this.settleTimer = undefined;
      void this.reload();
    }, this.options.settleMs);
  }

  /**
   * Whether a fresh first load's read can be taken as soon as it is parsed (`reloadOnce`): its file
   * defined nothing before, it was not caught mid-write (`unsettled` lets it through at once), and
   * each record set in it the parse thread did not check names its zone by zoneRef: its values are
   * checked against the zones of the files read so far (`EarlyReads`); the deepest zone holding a
   * name can be one of any file.
   */
  private takesEarly(read: ReadFile, first: boolean): boolean {
    if (this.files.has(read.file) || (first && this.remembered(read.file) !== undefined)) return false;
    const { info, after, parsed } = read;
    if (this.options.settleMs > 0 && (!after || !sameStamp(info, after))) return false;
    const { documents, checked } = parsed;
    for (let index = 0; index < documents.length; index++) {
      if (checked?.[index] === true) continue;
      const doc = documents[index]!;
      if (doc.foreign?.object.kind === 'DNSRecordSet') return false;
      if (doc.resource?.kind === 'DNSRecordSet' && doc.resource.spec.zoneRef === undefined) return false;
    }
    return true;
  }

  /**
   * Whether a fresh first load's files taken early have their new objects applied too (ADR 0029):
   * the first reload of this source (nothing can watch the store before it ends: `serve` starts its
   * controller after `start`, and a first load that failed leaves a later one to run with it
   * watching), one root listed in code-unit path order (so the first file listed to define an object
   * is the first in path order, its winner: a folder's name sorts before `name-x.yaml` when listed
   * but after it as a path, `name/` against `name-`), a store that holds nothing (no watcher sees an
   * object it had), no removal held by the change safety (its decision touches none of them), and a
   * state that keeps objects in memory until the load completes (nothing taken back was written).
   */
  private appliesEarly(files: readonly string[]): boolean {
    const { roots, store, state, folderHold, frontDoors } = this.options;
    if (this.reloadedOnce || roots.length !== 1 || !state.holdsObjectsInMemory()) return false;
    for (let i = 1; i < files.length; i++) if (!(files[i - 1]! < files[i]!)) return false;
    if ((folderHold?.holds().size ?? 0) > 0) return false;
    for (const kind of KINDS) if (store.count(kind) > 0) return false;
    for (const door of frontDoors.all) if (store.countForeign(frontDoorId(door)) > 0) return false;
    return true;
  }

  /**
   * Applies the objects a file taken early defines first to the store and the state, as `apply`
   * applies a fresh first load's objects: one creation time, generation 1, the file's relative path.
   * Which files define each object is recorded here too (false: nothing applied nor recorded, the
   * caller adds the file's definitions to the definers): a new object's goes into its state entry as
   * it is put (`Definers.addInState`, ADR 0031), a map of every object fewer on a first load. A file
   * whose every object it applied has its definitions made the state's versions at once; `apply`
   * takes the rest. A file that defines a front door's object stops this (its door's store watcher
   * would act on it).
   */
  private applyEarly(file: string, fileState: FileState): boolean {
    const early = this.early!;
    const { store, state } = this.options;
    const { definitions } = fileState;
    for (const id of definitions.keys()) {
      if (!isNativeId(id)) {
        early.on = false;
        return false;
      }
    }
    const relative = this.relative(file);
    let count = 0;
    // A record set kept in the record table the store and the state share (`serve`): its key is
    // looked up there once, for the definers (the state's tag), the store and the state, and its slot
    // carried from one to the next, instead of a look-up by each and again by each holding
    // (docs/benchmarks.md, seventeenth round).
    const table =
      store.recordTable !== undefined && store.recordTable === state.recordTable
        ? store.recordTable
        : undefined;
    const at = early.at;
    // The record sets the message made in their usual shape, of their ids, by place (`FileState.usual`):
    // neither the store nor the state tests their shape (`apply`'s and `putObject`'s `usual`).
    const usualAt = fileState.usual;
    let place = -1;
    // The file's definitions walked in their order (new ones are the definers' next ids), no pair
    // made per definition (`forEach`, not a generator's walk; eighteenth round).
    definitions.forEach((value, id) => {
      place++;
      // The key is the id's after its kind (`Kind/key`, as `splitId`): a slice of the id, which the
      // state keeps anyway, not a copy of its characters joined again from the metadata.
      const key = keyOfId(id);
      const keyed = table !== undefined && id.startsWith(RECORD_SET_PREFIX);
      if (keyed) {
        at.slot = table.slotOf(key);
        if (!this.definers.addInStateKnowing(id, file, state.tagAt(at.slot))) return;
      } else if (!this.definers.addInState(id, file)) return;
      early.now ??= this.options.now().toISOString();
      const created = early.now;
      let accepted = (value as Definition).resource as Resource;
      const usual = usualAt !== undefined && usualAt[place] === 1;
      const held = store.apply(accepted, created, undefined, key, keyed ? at : undefined, usual);
      if (held && held.spec !== accepted.spec) accepted = { ...accepted, spec: held.spec } as Resource;
      const applied = (held ?? store.get(accepted.kind, key))?.metadata.generation ?? 1;
      // Written out rather than spread: no empty object and copy per object.
      const object: StoredObject =
        applied > 1
          ? { created, file: relative, resource: accepted, generation: applied }
          : { created, file: relative, resource: accepted };
      state.putObject(id, object, file, keyed ? at.slot : -1, usual && applied <= 1);
      count++;
    });
    if (count > 0) {
      early.count += count;
      // A file whose every object it applied: its definitions are the state's versions now (`Served`,
      // as `apply` would make them), so the parsed objects they held are garbage at once instead of
      // living on until `apply`, copied by each young-generation collection and then promoted
      // (docs/benchmarks.md, fourteenth round). `takeBackEarly` makes them definitions again.
      const whole = count === definitions.size;
      if (whole) definitions.served(servedDocument);
      early.runs.push({ file, count, served: whole });
    }
    return true;
  }

  /**
   * Takes what `applyEarly` applied out of the store and the state, before the files taken early
   * are forgotten: both are as the reload found them (the store's counters too), and nothing more
   * is applied early.
   */
  private takeBackEarly(): void {
    const early = this.early;
    if (!early) return;
    early.on = false;
    if (early.count === 0) return;
    const { store, state } = this.options;
    // The files whose definitions became the state's versions get them back from the state before
    // it forgets them: as the file defined them (a read that fails after the last parse keeps them).
    for (const { file, served } of early.runs) {
      const definitions = served ? this.files.get(file)?.definitions : undefined;
      if (definitions === undefined) continue;
      for (const [id, value] of [...definitions]) {
        const resource = typeof value === 'number' ? state.object(id)?.resource : undefined;
        if (resource === undefined) continue;
        definitions.set(id, (value as number) >= 0 ? { resource, document: value as number } : { resource });
      }
    }
    const ids: string[] = [];
    for (const id of this.definers.definedIds()) {
      if (ids.length === early.count) break;
      ids.push(id);
    }
    for (const id of ids) {
      const { kind, key } = splitId(id);
      store.remove(kind as Kind, key);
    }
    // Which files define them is kept in their state entries (`Definers.addInState`): moved out first.
    this.definers.leaveState(ids);
    store.rewind(early.counters);
    state.takeBackObjects(ids, early.mark);
    early.count = 0;
    early.runs.length = 0;
    early.now = undefined;
  }

  /** Forgets what the files taken early define (`reloadOnce`): as before they were read. */
  private forget(files: readonly string[]): void {
    for (const file of files) {
      for (const id of this.files.get(file)?.definitions.keys() ?? []) this.definers.remove(id, file);
      this.files.delete(file);
    }
  }

  /**
   * Stats every listed file and reads those that changed, several at a time. With `take`, each read
   * is offered to it as it arrives, in path order, while later files are parsed; those it takes
   * (true) are not returned. Once a read fails, none is offered any more.
   */
  private async readChanged(
    paths: readonly string[],
    take?: (read: ReadFile) => Promise<boolean>,
  ): Promise<ReadFile[]> {
    const changed: { file: string; info: FileStamp }[] = [];
    for (const file of paths) {
      let info: FileStamp;
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
      changed.push({ file, info: { mtimeMs: info.mtimeMs, size: info.size, ino: info.ino } });
    }
    // A few files in flight keep the parser busy while results come in; results keep path order.
    const reads: ReadFile[] = [];
    // Settled promises: a failure is rethrown once nothing is left in flight (never unhandled).
    const inFlight: Promise<{ read?: ReadFile; error?: unknown }>[] = [];
    let failure: { error: unknown } | undefined;
    let next = 0;
    const launch = () => {
      const { file, info } = changed[next++]!;
      inFlight.push(
        this.options.parser.parse(file, this.options.maxFileBytes).then(
          // Stamped again after the read: a file that changed meanwhile was caught mid-write.
          async (parsed) => ({ read: { file, info, after: await stampOf(file), parsed } }),
          (error: unknown) => ({ error }),
        ),
      );
    };
    const concurrency = Math.max(1, this.options.parser.concurrency ?? 4);
    while (next < changed.length && inFlight.length < concurrency) launch();
    while (inFlight.length > 0) {
      const { read, error } = await inFlight.shift()!;
      if (!read) failure ??= { error };
      // The next file is sent off before this one is taken: the parser stays busy meanwhile.
      if (next < changed.length && !failure) launch();
      if (!read) continue;
      let taken = false;
      if (take && !failure) {
        try {
          taken = await take(read);
        } catch (error) {
          failure = { error };
        }
      }
      if (!taken) reads.push(read);
    }
    if (failure) {
      for (const read of reads) this.options.parser.release(read.parsed.token);
      throw failure.error;
    }
    return reads;
  }

  /**
   * The zone origin relative names in a record set's values are relative to: that of the zone its
   * zoneRef names, or the deepest zone containing its absolute name; the root when no zone is known
   * (the zone's own assembly checks again with the zone it lands in).
   */
  private originFinder(
    reads: readonly ReadFile[],
    /**
     * The zones (key → domain) of the files read before `reads` (`reads`' are added): a live map
     * for the files taken early (`EarlyReads`).
     */
    pending = new Map<string, string>(),
    /** The zones looked up by key, each with the domain `pending` had for it then (`EarlyReads`). */
    used?: Map<string, string | undefined>,
  ): (rs: DNSRecordSet) => Name {
    const { store, state } = this.options;
    for (const read of reads)
      for (const doc of read.parsed.documents)
        if (doc.resource?.kind === 'DNSZone')
          pending.set(resourceKey(doc.resource.metadata), doc.resource.spec.domainName);
    const domainOf = (key: string): string | undefined =>
      pending.get(key) ??
      (store.get('DNSZone', key) as DNSZone | undefined)?.spec.domainName ??
      (state.object(`DNSZone/${key}`)?.resource as DNSZone | undefined)?.spec.domainName;
    // One origin string per domain: record parses keep the origin they were parsed against.
    const origins = new Map<string, Name | undefined>();
    const absolute = (domain: string): Name | undefined => {
      if (origins.has(domain)) return origins.get(domain);
      let origin: Name | undefined;
      try {
        origin = parseName(domain.endsWith('.') ? domain : `${domain}.`);
      } catch {
        origin = undefined;
      }
      origins.set(domain, origin);
      return origin;
    };
    let domains: Map<string, Name> | undefined;
    const allDomains = () => {
      if (domains) return domains;
      domains = new Map();
      const add = (domain: string | undefined) => {
        const name = domain === undefined ? undefined : absolute(domain);
        if (name) domains!.set(nameKey(name), name);
      };
      for (const zone of store.list('DNSZone')) add((zone as DNSZone).spec.domainName);
      for (const domain of pending.values()) add(domain);
      return domains;
    };
    return (rs) => {
      const ref = rs.spec.zoneRef;
      if (ref) {
        const key = `${ref.namespace ?? rs.metadata.namespace ?? 'default'}/${ref.name}`;
        if (used && !used.has(key)) used.set(key, pending.get(key));
        const domain = domainOf(key);
        return (domain !== undefined ? absolute(domain) : undefined) ?? '.';
      }
      // The deepest zone holding the name can be one of a later file (`takesEarly` keeps these out).
      if (used) throw new Error('a record set taken before every file was parsed needs a zone by name');
      let name: Name;
      try {
        name = parseName(rs.spec.name);
      } catch {
        return '.';
      }
      const known = allDomains();
      for (;;) {
        const hit = known.get(nameKey(name));
        if (hit) return hit;
        if (name === '.') return '.';
        name = parentName(name);
      }
    };
  }

  /**
   * Turns a parsed file into what it defines. Valid documents become its definitions. An invalid
   * document that names its object keeps that object's previous definition from this file; a file
   * with a YAML error, or too large, or unreadable, or with an anonymous invalid document keeps all of
   * its previous definitions (nothing is deleted on bad input).
   */
  private async fileState(
    read: ReadFile,
    previous: FileState | undefined,
    originOf: (rs: DNSRecordSet) => Name,
    pace: () => Promise<unknown> | undefined,
    locateLater?: (() => Promise<void>)[],
    /** Taken early: `applyEarly` may apply it next (`FileState.usual`). */
    early = false,
  ): Promise<FileState> {
    const { file, info, parsed } = read;
    const fileProblems: ManifestProblem[] = parsed.fileErrors.map((e) => ({
      ...e,
      code: e.code ?? 'YAML_INVALID',
    }));
    let keepAll = parsed.fileErrors.length > 0;
    let definitions = new FileDefinitions<Definition>();
    // A file read for the first time whose documents' ids were all found distinct where it was parsed
    // (`ParsedManifest.distinct`; zones, classes and front-door objects too, not only record sets):
    // its definitions are listed as they come, none looked up first, and made into the file's
    // definitions at the end (`FileDefinitions.listed`; docs/benchmarks.md, eighteenth round).
    const listed =
      previous === undefined && parsed.distinct === true
        ? { ids: [] as string[], values: [] as Definition[] }
        : undefined;
    const invalid = new Map<string, ManifestProblem[]>();
    let problems: ManifestProblem[] = [...fileProblems];
    /** Problems found here, after parsing: their lines are asked of the parser in one go. */
    const unlocated: { problem: ManifestProblem; request: LocateRequest }[] = [];
    const { documents, compact, checked, ids } = parsed;
    // Which definitions, by place, are record sets the message made in their usual shape with their
    // ids, for the early apply (`FileState.usual`).
    const usualAt =
      listed !== undefined && early && this.early?.on === true ? new Uint8Array(documents.length) : undefined;
    const shared = new SharedRuns(this.interner, this.zoneRefs);
    for (let index = 0; index < documents.length; index++) {
      const doc = documents[index]!;
      const turn = pace();
      if (turn !== undefined) await turn;
      // A record set's id as the message brought it (`ParsedManifest.ids`, a kind of ours), its
      // identity made from it only to name the object in a problem.
      const made = ids?.[index];
      const identity = made !== undefined ? undefined : ours(doc.identity, this.options.frontDoors);
      // Joined, not concatenated: the id is kept (definitions, definers, state) as one flat string
      // rather than a concatenation node and its flattened copy.
      const id = made ?? (identity ? [identity.kind, identity.key].join('/') : undefined);
      // Problems name the object (made only for a document that has some; the list too).
      let docProblems: ManifestProblem[] | undefined;
      // One the parse thread's message made in its usual shape already is not made again; its zoneRef
      // by name is still the zone's shared one.
      const usual = compact?.[index] === true;
      if (usual) shared.take(doc.resource as DNSRecordSet);
      else if (doc.resource) shareStrings(doc.resource, this.interner);
      const resource =
        (doc.resource && (usual ? doc.resource : compactRecordSet(doc.resource, this.zoneRefs))) ??
        doc.foreign?.object;
      if (!resource) {
        docProblems = [];
        for (const p of doc.problems ?? [])
          docProblems.push(placed(file, doc.document, p, p.line, this.objectName(identity, made)));
      } else if (checked?.[index] !== true) {
        // A record set whose values the parse thread found valid in any zone is not parsed here:
        // its zone's model parses them once, when it builds.
        for (const p of this.checkFurtherContained(resource, id!, originOf)) {
          const problem = placed(file, doc.document, p, undefined, this.objectName(identity, made));
          docProblems ??= [];
          docProblems.push(problem);
          unlocated.push({
            problem,
            request: { document: doc.document, ...(p.path ? { path: p.path } : {}) },
          });
        }
      }
      if (docProblems !== undefined && docProblems.length > 0) {
        pushAll(problems, docProblems);
        if (id)
          pushAll(
            getOrInsert(invalid, id, () => []),
            docProblems,
          );
        else keepAll = true;
        continue;
      }
      const valid = resource!;
      if (listed !== undefined) {
        const usualMade = usual && made !== undefined;
        if (usualMade && usualAt !== undefined) usualAt[listed.ids.length] = 1;
        listed.ids.push(id!);
        listed.values.push(usualMade ? (doc as Definition) : { resource: valid, document: doc.document });
        continue;
      }
      if (definitions.has(id!)) {
        const problem: ManifestProblem = {
          file,
          document: doc.document,
          object: this.objectName(identity, made)!,
          code: 'DUPLICATE',
          message: `defined twice in this file (first in document ${documentOf(definitions.get(id!))}); the first is used, remove one`,
        };
        problems.push(problem);
        unlocated.push({ problem, request: { document: doc.document } });
        continue;
      }
      // A record set the message brought in the usual shape with its id is `{ document, resource }`
      // already (`decodeDocuments`): it is the definition, not copied into one more object.
      definitions.set(
        id!,
        usual && made !== undefined ? (doc as Definition) : { resource: valid, document: doc.document },
      );
    }
    if (listed !== undefined) definitions = FileDefinitions.listed(listed.ids, listed.values);
    if (unlocated.length > 0) {
      const requests = unlocated.map((u) => u.request);
      const lines = await this.options.parser.locate(parsed.token, requests);
      const place = (found: readonly (number | undefined)[]) =>
        unlocated.forEach((u, i) => {
          if (found[i] !== undefined) u.problem.line = found[i];
        });
      place(lines);
      if (lines.some((line) => line === undefined)) {
        const { info, after } = read;
        const count = documents.length;
        const again = async () => place(await this.locateAgain(file, info, after, count, requests, lines));
        // While later files are parsed, a parse thread drops what it keeps of a file as soon as it
        // has parsed a few more: the file parsed again now could lose its text before `locate`
        // reached it. So a file taken early is parsed again once every file was parsed.
        if (locateLater) locateLater.push(again);
        else await again();
      }
    }
    problems = capFileProblems(file, problems);
    const kept = new Map<string, ManifestProblem[]>();
    for (const [id, definition] of previous?.definitions ?? []) {
      if (definitions.has(id)) continue;
      const why = invalid.get(id) ?? (keepAll ? fileProblems : undefined);
      if (!why) continue;
      definitions.set(id, definition);
      kept.set(id, why.length > 0 ? why : problems);
    }
    if (keepAll && previous && previous.definitions.size > 0) {
      problems.push({
        file,
        code: 'KEPT_PREVIOUS',
        message: 'the file has errors; the objects it defined before keep their last valid versions',
      });
    }
    const state: FileState = { ...info, definitions, problems, kept, invalid };
    // The marks go by place: kept only while every listed id is one definition (the parse thread's
    // `distinct` held), so that no mark could fall on a neighbour's place.
    if (usualAt !== undefined && listed !== undefined && definitions.size === listed.ids.length)
      state.usual = usualAt;
    return state;
  }

  /**
   * Whether a file read again (not on the first load; `relative`, its path as the state keeps it)
   * defines `id` (its `definition` among the file's `definitions`) as the version served from it
   * already: the state holds that version from this file, equal to this one (`StateStore.heldSpec`;
   * the state's version comes from the file that won at the last `apply`, which then made it the
   * file's `Served` definition), and the store holds it (the spec the two share), not being deleted.
   * Then `apply` would change nothing for `id` (the winner changes only with another file's
   * definition, which touches `id` itself); the definition becomes the state's version (`Served`)
   * here, as `apply` would make it. A dozen lookups in maps of every object, the held version made
   * again and compared twice, per object of the file, were most of the main thread's work on a
   * one-record edit (docs/benchmarks.md, fifteenth round).
   */
  private servedAlready(
    id: string,
    definition: Definition | number,
    relative: string,
    definitions: FileDefinitions<Definition>,
  ): boolean {
    if (typeof definition === 'number' || !isNativeId(id)) return false;
    const resource = definition.resource as Resource;
    const spec = this.options.state.heldSpec(id, relative, resource);
    if (spec === undefined) return false;
    const { kind, key } = splitId(id);
    const object = this.options.store.get(kind as Kind, key);
    if (object === undefined || object.spec !== spec || object.metadata.deletionTimestamp !== undefined)
      return false;
    definitions.set(id, definition.document ?? -1);
    return true;
  }

  /** `Kind namespace/name`; a front door's objects by their own kind (the door's id keeps them apart inside). */
  private objectName(
    identity: { kind: string; key: string } | undefined,
    /** The id that stands for the identity (`ParsedManifest.ids`), if it came so. */
    id?: string,
  ): string | undefined {
    if (!identity && id !== undefined) identity = splitId(id);
    if (!identity) return undefined;
    return `${this.options.frontDoors.get(identity.kind)?.kind ?? identity.kind} ${identity.key}`;
  }

  /**
   * `checkFurther`, a throw (a front door's defect, input its code cannot take) made the document's
   * problem: its object keeps its last valid version and the rest of the folder loads, where the same
   * document would otherwise fail every reload.
   */
  private checkFurtherContained(
    resource: Resource | ForeignObject,
    id: string,
    originOf: (rs: DNSRecordSet) => Name,
  ): Problem[] {
    try {
      return this.checkFurther(resource, id, originOf);
    } catch (e) {
      return [
        {
          path: '',
          code: 'CHECK_FAILED',
          message: `cannot check the object: ${(e as Error).message}; it keeps its last valid version`,
        },
      ];
    }
  }

  /**
   * What the schema check in the parser cannot know: transition rules against the version served (a
   * DNSZone's domainName is immutable) and record values, parsed strictly for their type relative to
   * their zone's origin (RFC 1035 §5.1 presentation format).
   */
  private checkFurther(
    resource: Resource | ForeignObject,
    id: string,
    originOf: (rs: DNSRecordSet) => Name,
  ): Problem[] {
    // Only the kind for every document (a first load checks a million): the key for a door's alone.
    const kind = id.slice(0, id.indexOf('/'));
    const door = this.options.frontDoors.get(kind);
    if (door) {
      // Transition rules and the door's admission against the version served.
      const { store, state } = this.options;
      const key = keyOfId(id);
      // While objects are applied early the store and the state held none before (`appliesEarly`).
      const old = (this.early ? undefined : (store.getForeign(kind, key) ?? state.object(id)?.resource)) as
        | ForeignObject
        | undefined;
      if (!old) return [];
      const again = validateForeign(door, resource as unknown as Record<string, unknown>, old);
      return again.ok ? [] : again.problems;
    }
    if (resource.kind === 'DNSZone') {
      const { store, state } = this.options;
      const old = (
        this.early
          ? undefined
          : (store.get('DNSZone', resourceKey(resource.metadata)) ?? state.object(id)?.resource)
      ) as Resource | undefined;
      if (!old) return [];
      const again = validateResource(resource, old);
      return again.ok ? [] : again.problems;
    }
    if (resource.kind === 'DNSRecordSet') {
      const parsed = parseRecordSetRecords(resource as DNSRecordSet, originOf(resource as DNSRecordSet));
      if (!parsed.ok)
        return [{ path: `spec.records[${parsed.index}]`, code: 'INVALID_RDATA', message: parsed.message }];
    }
    return [];
  }

  /**
   * Lines `locate` could not give: a parser keeps only the last few files' text (a parse thread, 8
   * files among the threads), so a file whose problems are found after later files were parsed has
   * lost it (on a reload of many files, or a first load taken after the last parse). Such a file is
   * parsed once more and its lines taken from that parse, only if the file is still the version read
   * (the same stamp before and after the second parse, and as many documents); otherwise the
   * problems keep no line, and the file's change brings a reload that reads it again.
   */
  private async locateAgain(
    file: string,
    info: FileStamp,
    after: FileStamp | undefined,
    documentCount: number,
    requests: readonly LocateRequest[],
    lines: readonly (number | undefined)[],
  ): Promise<(number | undefined)[]> {
    if (!after || !sameStamp(info, after)) return [...lines];
    let again: (ParsedManifest & { token: number }) | undefined;
    try {
      again = await this.options.parser.parse(file, this.options.maxFileBytes);
      const now = await stampOf(file);
      if (!now || !sameStamp(info, now) || again.documents.length !== documentCount) return [...lines];
      const more = await this.options.parser.locate(again.token, requests);
      return lines.map((line, i) => line ?? more[i]);
    } catch {
      return [...lines];
    } finally {
      if (again) this.options.parser.release(again.token);
    }
  }

  /**
   * Applies the winner of each touched object to the store and remembers it in the state store. An
   * object no manifest defines is removed, unless the folder's change safety holds its removal.
   */
  private apply(touchedNow: Touched, early?: EarlyApply): void {
    const { batch } = this.options;
    if (batch) batch(() => this.applyNow(touchedNow, early));
    else this.applyNow(touchedNow, early);
  }

  /** `apply`, within the batch. */
  private applyNow(touchedNow: Touched, early?: EarlyApply): void {
    const { store, state } = this.options;
    // The state gains objects from here on (`Definers.stateHoldsNone`).
    this.definers.stateHoldsNone(false);
    // A state that holds no object now gains only the ones applied here, each once (`touched` is a
    // set): none of them is remembered, and the state is not asked (a lookup per object that missed).
    // Objects applied early (`applyEarly`) are `touched`'s first ones, the only ones the state holds.
    const appliedEarly = early?.count ?? 0;
    const stateHeldNone = appliedEarly > 0 || state.objectIds().next().done === true;
    const now = (appliedEarly > 0 ? early?.now : undefined) ?? this.options.now().toISOString();
    const { touched, keep, winnerFiles, winnerDefinitions } = this.holdRemovals(touchedNow, appliedEarly);
    // Which files define each object goes into its state entry as it is stored (`touched` comes in
    // the definers' order on a first load).
    const settle = this.definers.settleInOrder();
    let index = 0;
    // Objects come file by file: the file's definitions and relative path are looked up once per run.
    let lastFile: string | undefined;
    let lastDefinitions: FileDefinitions<Definition> | undefined;
    let lastRelative = '';
    let lastKind = '';
    let lastForeign = false;
    // Those applied early: their winning definitions become the state's version (which files define
    // them is in their entries already, `Definers.addInState`).
    const ids = touched[Symbol.iterator]();
    for (const { file, count, served } of early?.runs ?? []) {
      const definitions = this.files.get(file)?.definitions;
      // A file whose every object it applied (nearly every file): each definition is the state's
      // version already, made so in one walk of the file's definitions (`served`) by `applyEarly`.
      const whole = served || (definitions !== undefined && definitions.size === count);
      if (whole && !served) definitions!.served(servedDocument);
      for (let i = 0; i < count; i++) {
        const id = ids.next().value as string;
        if (whole) continue;
        const definition = definitions?.get(id);
        if (definitions && definition !== undefined && typeof definition !== 'number')
          definitions.set(id, definition.document ?? -1);
      }
      index += count;
    }
    for (const id of { [Symbol.iterator]: () => ids }) {
      // The change safety looked up the winners of the ids after those applied early already
      // (`touched` starts with them).
      let file: string | undefined;
      let definition: Definition | Served | undefined;
      if (index - appliedEarly < winnerFiles.length) {
        file = winnerFiles[index - appliedEarly];
        definition = winnerDefinitions[index - appliedEarly];
      } else {
        file = this.winnerFile(id);
        definition = file === undefined ? undefined : this.files.get(file)?.definitions.get(id);
      }
      index++;
      const { kind, key } = splitId(id);
      if (kind !== lastKind) {
        lastKind = kind;
        lastForeign = this.options.frontDoors.get(kind) !== undefined;
      }
      const foreign = lastForeign;
      const remembered = stateHeldNone && typeof definition !== 'number' ? undefined : state.object(id);
      // The served definition's version is the state's (`Served`).
      const resource =
        definition === undefined
          ? undefined
          : typeof definition === 'number'
            ? remembered?.resource
            : definition.resource;
      if (file === undefined || !resource) {
        if (keep.has(id)) continue;
        if (foreign) store.removeForeign(kind, key);
        else store.remove(kind as Kind, key);
        state.deleteObject(id);
        continue;
      }
      // Objects first seen in one reload share one creation time: their order is then their name's.
      const created = remembered?.created ?? now;
      // Generations go on across restarts: the version remembered keeps its generation, a new one
      // (changed while serve was stopped) is the next.
      let generation: number | undefined;
      if (remembered?.resource && !(foreign ? store.getForeign(kind, key) : store.get(kind as Kind, key))) {
        generation =
          (remembered.generation ?? 1) + (jsonEqual(remembered.resource.spec, resource.spec) ? 0 : 1);
      }
      // The state keeps front-door objects as accepted too, under their door's id.
      let accepted = resource as Resource;
      let held: Resource | undefined;
      if (foreign) store.applyForeign(kind, resource as ForeignObject, created, generation);
      else {
        // The state shares the spec the store holds (an equal one kept from before, when unchanged).
        held = store.apply(accepted, created, generation);
        if (held && held.spec !== accepted.spec) accepted = { ...accepted, spec: held.spec } as Resource;
      }
      // The object the store holds now is the one `apply` returned (or, when it took none, the one
      // being deleted): not looked up again.
      const applied =
        (foreign ? store.getForeign(kind, key) : (held ?? store.get(kind as Kind, key)))?.metadata
          .generation ?? 1;
      if (file !== lastFile) {
        lastFile = file;
        lastDefinitions = this.files.get(file)?.definitions;
        lastRelative = this.relative(file);
      }
      // Another file's definition held as the state's version is about to stop being it.
      if (remembered?.resource && remembered.file !== lastRelative)
        this.keepOwnVersions(id, file, remembered);
      state.putObject(id, {
        created,
        file: lastRelative,
        resource: accepted,
        ...(applied > 1 ? { generation: applied } : {}),
      });
      settle(id);
      // The winning definition, as looked up above (nothing here changes the winner's file).
      if (lastDefinitions && typeof definition !== 'number')
        lastDefinitions.set(id, definition!.document ?? -1);
    }
    // Which files define the objects the state holds now goes into its entries.
    this.definers.settle();
    // What the files define is final until their next read (values change in place): packed. A
    // packed file is not packed again.
    for (const fileState of this.files.values()) fileState.definitions.pack();
  }

  /** Definitions of `id` in files other than `winner` held as the state's version get it as their own. */
  private keepOwnVersions(id: string, winner: string, remembered: StoredObject): void {
    for (const file of this.definers.files(id)) {
      if (file === winner) continue;
      const definitions = this.files.get(file)?.definitions;
      const definition = definitions?.get(id);
      if (definitions && typeof definition === 'number')
        definitions.set(id, {
          resource: remembered.resource!,
          ...(definition >= 0 ? { document: definition } : {}),
        });
    }
  }

  /**
   * The folder's change safety: which removals wait (`keep`), and the objects to touch, with held
   * removals that are released now.
   */
  private holdRemovals(
    touched: Touched,
    /** Objects of `touched` applied early (`applyEarly`): not in the store before this reload. */
    appliedEarly = 0,
  ): {
    touched: Touched;
    keep: ReadonlySet<string>;
    /**
     * The winning file of each of `touched`'s first ids after the `appliedEarly` ones, in its order
     * (as `winnerFile` gives it).
     */
    winnerFiles: readonly (string | undefined)[];
    /** The winning file's definition of each of those ids (undefined with no winning file). */
    winnerDefinitions: readonly (Definition | Served | undefined)[];
  } {
    const hold = this.options.folderHold;
    if (!hold) return { touched, keep: new Set(), winnerFiles: [], winnerDefinitions: [] };
    const { store, state } = this.options;
    const candidates = new Set<string>();
    const winnerFiles: (string | undefined)[] = [];
    const winnerDefinitions: (Definition | Served | undefined)[] = [];
    // `winnerFile` and `winnerIn` in one: the file's definitions looked up once per run of its objects.
    let lastFile: string | undefined;
    let lastDefinitions: FileDefinitions<Definition> | undefined;
    // A first load's objects come in the order they were defined (`touched` is filled so).
    // Those applied early are defined by the file that applied them, the first to define them in
    // path order (`appliesEarly`), with a definition of their own there: none is a removal, and
    // `apply` does not need their winners (a lookup in the file's definitions each). They are
    // `touched`'s first ones and not in the definers' walk (kept in their state entries,
    // `Definers.addInState`): the walk is made only if an object follows them (on a first load taken
    // whole while parsed, none does).
    let firstOf: ((id: string) => string | undefined) | undefined;
    let skip = appliedEarly;
    for (const id of touched) {
      if (skip > 0) {
        skip--;
        continue;
      }
      firstOf ??= this.definers.firstInOrder();
      const first = firstOf(id);
      if (first !== lastFile) {
        lastFile = first;
        lastDefinitions = first === undefined ? undefined : this.files.get(first)?.definitions;
      }
      const definition = lastDefinitions?.get(id);
      winnerFiles.push(definition === undefined ? undefined : first);
      winnerDefinitions.push(definition);
      if (definition === undefined || (typeof definition === 'number' && !state.object(id)?.resource))
        candidates.add(id);
    }
    for (const part of hold.holds().values())
      for (const id of part.ids) if (!this.winner(id)) candidates.add(id);
    // Counted, not listed: a list of every object per reload was work proportional to the whole
    // folder on a one-record edit (docs/benchmarks.md, a one-record edit in a big zone).
    let existing = 0;
    for (const kind of KINDS) existing += store.count(kind);
    for (const door of this.options.frontDoors.all) existing += store.countForeign(frontDoorId(door));
    existing -= appliedEarly;
    const objectOf = (id: string) => {
      const { kind, key } = splitId(id);
      return (KINDS as readonly string[]).includes(kind) ? store.get(kind as Kind, key) : undefined;
    };
    const decided = hold.decide({
      removals: [...candidates],
      existing,
      now: this.options.now().getTime(),
      zonesOf: (id) => this.zonesOf(id),
      versionOf: (id) => JSON.stringify(objectOf(id)?.spec ?? null),
    });
    const applied = new Set(decided.apply);
    const keep = new Set([...candidates].filter((id) => !applied.has(id)));
    this.heldRemovals = decided.held;
    // `touched`'s ids first, in their order: `winnerFiles` is theirs. Without released removals
    // (every reload but a confirmation's) `touched` itself, not a copy of it.
    const released = decided.apply.filter((id) => !touched.has(id));
    return {
      touched: released.length === 0 ? touched : new Set([...touched, ...released]),
      keep,
      winnerFiles,
      winnerDefinitions,
    };
  }

  /**
   * The zones (keys) the removal of an object affects: itself, a record set's zone, a class's zones;
   * zones that opted out of change safety (`changeSafety.enabled: false`) left out.
   */
  private zonesOf(id: string): string[] {
    const { store } = this.options;
    return this.affectedZones(id).filter((key) => {
      const zone = store.get('DNSZone', key) as DNSZone | undefined;
      const zoneClass = zone
        ? (store.get('DNSZoneClass', zone.spec.className) as DNSZoneClass | undefined)
        : undefined;
      return effectiveChangeSafety(zoneClass?.spec.changeSafety, zone?.spec.changeSafety).enabled;
    });
  }

  private affectedZones(id: string): string[] {
    const { store } = this.options;
    const { kind, key } = splitId(id);
    if (kind === 'DNSZone') return [key];
    if (kind === 'DNSZoneClass')
      return store
        .list('DNSZone')
        .filter((z) => (z as DNSZone).spec.className === key)
        .map((z) => resourceKey(z.metadata));
    if (kind !== 'DNSRecordSet') return [];
    const rs = store.get('DNSRecordSet', key) as DNSRecordSet | undefined;
    if (!rs) return [];
    const ref = rs.spec.zoneRef;
    if (ref) return [`${ref.namespace ?? rs.metadata.namespace ?? 'default'}/${ref.name}`];
    let name: Name;
    try {
      name = parseName(rs.spec.name);
    } catch {
      return [];
    }
    // The deepest zone whose domain holds the name.
    let best: { key: string; depth: number } | undefined;
    for (const z of store.list('DNSZone') as DNSZone[]) {
      let domain: Name;
      try {
        domain = parseName(z.spec.domainName.endsWith('.') ? z.spec.domainName : `${z.spec.domainName}.`);
      } catch {
        continue;
      }
      const dk = nameKey(domain);
      const nk = nameKey(name);
      if (nk !== dk && !nk.endsWith(`.${dk}`)) continue;
      if (!best || dk.length > best.depth) best = { key: resourceKey(z.metadata), depth: dk.length };
    }
    return best ? [best.key] : [];
  }

  /** Zones whose removal the folder's change safety holds, by zone key. */
  heldRemovals: ReadonlyMap<string, HeldZoneRemoval> = new Map();

  /** What a file defined before a restart, as the state store remembers it (its first read only). */
  private remembered(file: string): FileState | undefined {
    const ids = this.options.state.objectsOfFile(this.relative(file));
    if (ids.length === 0) return undefined;
    // The state holds each of their versions (the ids it lists have one).
    const definitions = new FileDefinitions<Definition>();
    for (const id of ids) definitions.set(id, -1);
    return {
      mtimeMs: -1,
      size: -1,
      ino: -1,
      definitions,
      problems: [],
      kept: new Map(),
      invalid: new Map(),
    };
  }

  /** A remembered file that cannot be read now: its objects stay, kept, with why. */
  private keepRemembered(file: string, why: ManifestProblem[], touched: Set<string>): void {
    const fileState = this.remembered(file);
    if (!fileState) return;
    for (const id of fileState.definitions.keys()) {
      fileState.kept.set(id, why);
      this.definers.add(id, file);
      touched.add(id);
    }
    this.files.set(file, fileState);
  }

  /** After the first load: what the state remembers and no file defines any more is forgotten. */
  private finishFirstLoad(
    /** The state holds only objects applied early, each defined still (`applyEarly`). */
    onlyDefined = false,
  ): void {
    const { state } = this.options;
    this.loadedOnce = true;
    state.loadedFilesRead();
    if (onlyDefined) return;
    const gone: string[] = [];
    for (const id of state.objectIds()) if (!this.definers.has(id)) gone.push(id);
    for (const id of gone) state.deleteObject(id);
  }

  /** Records the problems of this reload; logs those that appeared and those that went. */
  private publish(problems: ManifestProblem[]): void {
    this.current = problems;
    const kept = new Map<string, ManifestProblem[]>();
    for (const [file, fileState] of this.files) {
      for (const [id, why] of fileState.kept) if (this.winnerFile(id) === file) kept.set(id, why);
    }
    this.kept = kept;
    const refused = new Map<string, ManifestProblem[]>();
    for (const fileState of this.files.values()) {
      for (const [id, why] of fileState.invalid) {
        if (this.definers.has(id)) continue;
        const list = refused.get(id);
        if (list) pushAll(list, why);
        else refused.set(id, [...why]);
      }
    }
    this.refused = refused;
    // When each object started to be kept: the transition time of its Accepted=False.
    const since = this.options.now().toISOString();
    for (const id of this.keptSince.keys()) if (!kept.has(id)) this.keptSince.delete(id);
    for (const id of kept.keys()) if (!this.keptSince.has(id)) this.keptSince.set(id, since);
    const now = new Set(problems.map(formatProblem));
    for (const text of now) if (!this.logged.has(text)) this.options.log?.('warn', text);
    for (const text of this.logged) if (!now.has(text)) this.options.log?.('info', `resolved: ${text}`);
    this.logged = now;
    this.onReload?.(problems);
    this.onHolds?.(this.heldRemovals);
  }

  /**
   * The path relative to the folder, one string per file: `path.relative` makes a new string (and a
   * new absolute path it is cut from) per call, which the state then kept for every object of the
   * file, about 110 bytes each (docs/benchmarks.md, memory budget).
   */
  private relative(file: string): string {
    let relative = this.relatives.get(file);
    if (relative === undefined) {
      if (this.relatives.size > 1000 + 4 * this.files.size) this.relatives.clear();
      relative = path.relative(this.options.dir, file);
      this.relatives.set(file, relative);
    }
    return relative;
  }

  private absolute(relative: string): string {
    return path.join(this.options.dir, relative);
  }

  private undefine(id: string, file: string, touched: Set<string>): void {
    if (!this.definers.has(id)) return;
    this.definers.remove(id, file);
    touched.add(id);
  }

  private winner(id: string): { resource: Resource | ForeignObject; file: string } | undefined {
    return this.winnerIn(id, this.winnerFile(id));
  }

  /** `winner(id)` when `file` is `winnerFile(id)`. */
  private winnerIn(
    id: string,
    file: string | undefined,
  ): { resource: Resource | ForeignObject; file: string } | undefined {
    if (file === undefined) return undefined;
    const definition = this.files.get(file)?.definitions.get(id);
    if (typeof definition !== 'number') return definition && { resource: definition.resource, file };
    const resource = this.options.state.object(id)?.resource;
    return resource && { resource, file };
  }

  /** The file whose definition of `id` is served (the first in path order), if any. */
  private winnerFile(id: string): string | undefined {
    const file = this.definers.first(id);
    return file !== undefined && this.files.get(file)?.definitions.has(id) ? file : undefined;
  }

  private duplicateProblems(): ManifestProblem[] {
    const out: ManifestProblem[] = [];
    // At most `MAX_FILE_PROBLEMS` a file, as its own problems: a copy of a big file is one line more.
    const perFile = new Map<string, number>();
    for (const [id, files] of this.definers.duplicates()) {
      const [first, ...others] = files;
      for (const file of others) {
        const count = (perFile.get(file) ?? 0) + 1;
        perFile.set(file, count);
        if (count > MAX_FILE_PROBLEMS) continue;
        const document = documentOf(this.files.get(file)?.definitions.get(id));
        out.push({
          file,
          ...(document !== undefined ? { document } : {}),
          object: id.replace('/', ' '),
          code: 'DUPLICATE',
          message: `also defined in ${first}; the definition there is used, remove one`,
        });
      }
    }
    for (const [file, count] of perFile) {
      const more = count - MAX_FILE_PROBLEMS;
      if (more > 0)
        out.push({
          file,
          code: 'TOO_MANY_PROBLEMS',
          message: `${more} more object${more === 1 ? '' : 's'} of this file also defined in other files not listed; fix the ones above first`,
        });
    }
    return out;
  }
}

/**
 * The files of a fresh first load taken as they are parsed (`reloadOnce`), and the zones they and
 * the later files give: a record set's values are checked against its zone's origin (`originFinder`),
 * which the batch path finds among every file's zones, the last in path order for a key. A file taken
 * early checks against the zones of the files read so far (its own too); each zone key it looks up is
 * remembered with the domain it had then, and a later file giving that key another domain is a
 * conflict: the files taken early are then read again and taken with the others.
 */
class EarlyReads {
  /** Still taking files as they come. */
  on = true;
  /** The files taken, a prefix of the files read, in path order. */
  readonly taken: string[] = [];
  /** Zone key → domain, from every file noted so far (the last in path order). */
  readonly zones = new Map<string, string>();
  /** Zone keys looked up by the files taken, with the domain `zones` had for them then. */
  readonly used = new Map<string, string | undefined>();
  conflict = false;

  /** Adds the read's zones; false once one gave a domain other than the one a taken file used. */
  noteZones(read: ReadFile): boolean {
    for (const doc of read.parsed.documents) {
      if (doc.resource?.kind !== 'DNSZone') continue;
      const key = resourceKey(doc.resource.metadata);
      const domain = doc.resource.spec.domainName;
      if (this.used.has(key) && this.used.get(key) !== domain) this.conflict = true;
      this.zones.set(key, domain);
    }
    return !this.conflict;
  }
}

/** What a fresh first load applied early (`ManifestSource.applyEarly`). */
class EarlyApply {
  /** Still applying the files taken early. */
  on = true;
  /** How many of the definers' ids were applied: the first ones. */
  count = 0;
  /**
   * The files applied, in order, each with how many objects it defined first, and whether every
   * object it defines was applied, its definitions then the state's versions (`Served`).
   */
  readonly runs: { file: string; count: number; served: boolean }[] = [];
  /** The creation time of every object of the reload, chosen by the first applied. */
  now: string | undefined;
  /** A record set's slot, carried from its look-up to the store and the state (`applyEarly`). */
  readonly at: TableSlot = { slot: -1 };
  /** The store's counters and the state's flags before anything was applied. */
  readonly counters: { uid: number; resourceVersion: number };
  readonly mark: ObjectsMark;

  constructor(options: { store: MemoryStore; state: StateStore }) {
    this.counters = options.store.counters();
    this.mark = options.state.objectsMark();
  }
}

/** The ids a reload touched, in order (a set, or the definers' ids on a fresh first load). */
type Touched = Iterable<string> & { has(id: string): boolean };

/** The document a definition came from, when known. */
function documentOf(definition: Definition | Served | undefined): number | undefined {
  if (typeof definition === 'number') return definition >= 0 ? definition : undefined;
  return definition?.document;
}

/** A winning definition as the state's version (`Served`): its document, -1 when unknown. */
function servedDocument(definition: Definition | Served): Served {
  return typeof definition === 'number' ? definition : (definition.document ?? -1);
}

/** The file's stamp now; undefined when it is gone. */
async function stampOf(file: string): Promise<FileStamp | undefined> {
  try {
    const { mtimeMs, size, ino } = await stat(file);
    return { mtimeMs, size, ino };
  } catch {
    return undefined;
  }
}

/** Whether the id is of a native kind (`splitId(id).kind` one of `KINDS`), nothing made to tell. */
function isNativeId(id: string): boolean {
  // Record sets first: nearly every object is one (one comparison instead of two and a test of each
  // kind before theirs).
  if (id.startsWith(RECORD_SET_PREFIX)) return true;
  for (const kind of KINDS)
    if (id.length > kind.length && id.charCodeAt(kind.length) === 47 /* / */ && id.startsWith(kind))
      return true;
  return false;
}

/** `Kind/key` apart: a native kind, or a front door's id. */
/** The key of an id (`Kind/key`), as `splitId` gives it, with no pair made: a slice of the id. */
function keyOfId(id: string): string {
  return id.slice(id.indexOf('/') + 1);
}

function splitId(id: string): { kind: string; key: string } {
  const slash = id.indexOf('/');
  return { kind: id.slice(0, slash), key: id.slice(slash + 1) };
}

/**
 * Replaces the strings that many objects repeat by one shared copy: each parsed document arrives with
 * its own copy of its API version, kind, namespace and, for a record set, its zone's name and its
 * type (about 120 bytes of heap per record set; docs/benchmarks.md, memory budget).
 */
function shareStrings(resource: Resource, interner: Interner): void {
  const meta = resource.metadata;
  resource.apiVersion = interner.get(resource.apiVersion) as typeof resource.apiVersion;
  resource.kind = interner.get(resource.kind) as typeof resource.kind;
  if (meta.namespace !== undefined) meta.namespace = interner.get(meta.namespace);
  if (resource.kind === 'DNSRecordSet') {
    const spec = resource.spec;
    spec.type = interner.get(spec.type) as typeof spec.type;
    if (spec.zoneRef) spec.zoneRef.name = interner.get(spec.zoneRef.name);
  }
}

/**
 * A parsed record set with its small objects (the resource, metadata and spec) made again as
 * literals of exactly their fields, in their usual shapes: as they arrive from the parse thread each
 * takes 56 bytes whatever it holds, about 130 bytes more per record set for as long as the state and
 * the file's definitions keep it (docs/benchmarks.md, memory budget). A zoneRef by name alone is the
 * one frozen `{ name }` of `zoneRefs` that every record set naming that zone shares (32 bytes per
 * record set; docs/benchmarks.md, eighth round). Values (strings, arrays) are kept as they are; other
 * shapes and kinds are left alone.
 */
function compactRecordSet(resource: Resource, zoneRefs: NameRefInterner): Resource {
  if (resource.kind !== 'DNSRecordSet' || !only(resource, TOP)) return resource;
  const { apiVersion, kind, metadata: m, spec: sp } = resource;
  const metadata = only(m, META) && m.namespace !== undefined ? { name: m.name, namespace: m.namespace } : m;
  let spec = sp;
  if (only(sp, SPEC)) {
    const { zoneRef: z, name, type, records, ttl } = sp;
    const zoneRef = z !== undefined && only(z, REF) ? zoneRefs.get(z.name) : z;
    spec = ttl === undefined ? { zoneRef, name, type, records } : { zoneRef, name, type, records, ttl };
  }
  return { apiVersion, kind, metadata, spec };
}

/**
 * `shareStrings` for the record sets a parse thread's message made in the usual shape
 * (`ParsedManifest.compact`): its API version and kind are its constants already; its namespace and
 * type become the interner's copies, and its zoneRef by name the frozen one of `zoneRefs` every
 * record set naming that zone shares. A file's record sets nearly always share them, and a message
 * brings each as one string while it stays the same (`decodeDocuments`): the last ones are kept
 * here, and the interners asked only when one changes.
 */
class SharedRuns {
  private readonly interner: Interner;
  private readonly zoneRefs: NameRefInterner;
  private namespace: string | undefined;
  private sharedNamespace: string | undefined;
  private type = '';
  private sharedType = '';
  private zone = '';
  private ref: Readonly<{ name: string }> | undefined;

  constructor(interner: Interner, zoneRefs: NameRefInterner) {
    this.interner = interner;
    this.zoneRefs = zoneRefs;
  }

  take(resource: DNSRecordSet): void {
    const meta = resource.metadata;
    if (meta.namespace !== this.namespace) {
      this.namespace = meta.namespace;
      this.sharedNamespace = this.interner.get(meta.namespace);
    }
    if (meta.namespace !== undefined) meta.namespace = this.sharedNamespace;
    const spec = resource.spec;
    if (spec.type !== this.type || this.sharedType === '') {
      this.type = spec.type;
      this.sharedType = this.interner.get(spec.type);
    }
    spec.type = this.sharedType as typeof spec.type;
    const zoneRef = spec.zoneRef;
    if (zoneRef === undefined) return;
    if (zoneRef.name !== this.zone || this.ref === undefined) {
      this.zone = zoneRef.name;
      this.ref = this.zoneRefs.get(zoneRef.name);
    }
    spec.zoneRef = this.ref;
  }
}

const TOP = ['apiVersion', 'kind', 'metadata', 'spec'];
const META = ['name', 'namespace'];
const SPEC = ['zoneRef', 'name', 'type', 'records', 'ttl'];
const REF = ['name'];

/** Whether the object's fields are all among `fields`, each set, and all of them but `ttl` there. */
function only(o: object, fields: readonly string[]): boolean {
  const keys = Object.keys(o);
  const need = fields.filter((f) => f !== 'ttl').length;
  const has = keys.filter((k) => (o as Record<string, unknown>)[k] !== undefined);
  return (
    has.length === keys.length &&
    keys.every((k) => fields.includes(k)) &&
    (keys.length === need || (keys.length === need + 1 && keys.includes('ttl')))
  );
}

/** The identity of a document of one of our kinds or a front door's (others are not ours to keep). */
function ours(
  identity: { kind: string; key: string } | undefined,
  doors: FrontDoors,
): { kind: string; key: string } | undefined {
  return identity && ((KINDS as readonly string[]).includes(identity.kind) || doors.get(identity.kind))
    ? identity
    : undefined;
}

/** A problem of a document, placed at its file, document and line. */
function placed(
  file: string,
  document: number,
  p: Problem,
  line: number | undefined,
  object: string | undefined,
): ManifestProblem {
  return {
    file,
    document,
    ...(line !== undefined ? { line } : {}),
    ...(object ? { object } : {}),
    ...(p.path ? { path: p.path } : {}),
    code: p.code,
    message: p.message,
  };
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
