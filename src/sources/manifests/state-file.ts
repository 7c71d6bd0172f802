import { constants } from 'node:fs';
import { type FileHandle, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { API_VERSION, KINDS, type Resource } from '../../api/index.ts';
import { jsonEqual } from '../../control/conditions.ts';
import type { SerialStore, ZoneSerialState } from '../../control/serial-store.ts';
import type { Name } from '../../dns/name.ts';
import { Holder, type RecordTable, type RefColumn } from '../../zones/record-table.ts';

/** What folder mode remembers of one object: when it was first seen and the version it accepted. */
export interface StoredObject {
  /** When the object was first seen (its age decides conflicts: oldest wins). */
  created: string;
  /** The manifest file that defined the accepted version, relative to the manifests folder. */
  file?: string;
  /** The last valid version accepted (what is served while the manifest is invalid). */
  resource?: Resource;
  /**
   * `metadata.generation` of the accepted version when above 1, so that generations (and the
   * observedGeneration of remembered conditions) go on across restarts.
   */
  generation?: number;
  /** Text kept with the object (the record writer keeps each remembered request id's digest and result). */
  note?: string;
}

/** One object change of an atomic batch (`StateStore.commitBatch`): put with `object`, else delete. */
export interface BatchOp {
  id: string;
  object?: StoredObject;
}

/**
 * A DNSZone's `Accepted` condition as `serve` last wrote it. After a restart the zones are judged
 * with it (ADR 0013): a zone that was served (`Accepted=True`, since `lastTransitionTime`) stays the
 * incumbent of its domain. Its message is not kept: the first reconcile writes a new one.
 */
export interface StoredAcceptance {
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface StateStoreOptions {
  /** Read what is there and never write (validate, zone export: `serve` may be running). */
  readOnly?: boolean;
  /**
   * The log is compacted into a new snapshot once it is larger than this and than the last snapshot,
   * so the folder stays within about twice the live state plus this (default 8 MiB).
   */
  compactMinBytes?: number;
  /** How long object changes may wait to be written; serials are written at once (default 200 ms). */
  objectDelayMs?: number;
  /** Wait before a failed compaction is tried again (default 30 s). */
  compactRetryMs?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /**
   * The record-set table the memory store keeps its record sets in (`serve` with a folder): the
   * state's entry of each record set is kept in a column of it, by the slot the store holds, instead
   * of in a map of the state's own, so that a record set new to a first load takes one cold walk of a
   * map of every record set instead of two (docs/benchmarks.md, sixteenth round). The state holds the
   * slot (`Holder.state`) while it holds the record set.
   */
  recordTable?: RecordTable;
}

/** The ids of record sets (`DNSRecordSet/namespace/name`): their key in a record table follows. */
export const RECORD_SET_PREFIX = 'DNSRecordSet/';

/** Format of the snapshot and log lines; a snapshot of another version is refused. */
const FORMAT = 2;
const DEFAULT_COMPACT_MIN_BYTES = 8 * 2 ** 20;
const DEFAULT_OBJECT_DELAY_MS = 200;
/** Characters per write when the log is appended to. */
const WRITE_CHUNK_BYTES = 1 << 20;
/** Lines per write while a snapshot is written (each write yields to the event loop). */
const SNAPSHOT_CHUNK = 2000;
/**
 * Fewest pending lines written as a snapshot instead of appended (see `snapshotInstead`): a first
 * start queues a line per object, and appending them only to compact them right after serialised
 * every object twice.
 */
const SNAPSHOT_INSTEAD_MIN_LINES = 1000;
/** Ids in a row not the next of `StateStore`'s walk before it is dropped (see `setTag`). */
const WALK_MISSES = 64;
/** Lines stringified to estimate the size of what is pending. */
const SIZE_SAMPLE_LINES = 64;
/** Wait before retrying a failed compaction. */
const DEFAULT_COMPACT_RETRY_MS = 30_000;

const SNAPSHOT = /^snapshot\.(\d+)\.jsonl$/;
const LOG = /^log\.(\d+)\.jsonl$/;
const snapshotName = (gen: number) => `snapshot.${String(gen).padStart(6, '0')}.jsonl`;
const logName = (gen: number) => `log.${String(gen).padStart(6, '0')}.jsonl`;

type Line =
  | { t: 'snapshot'; version: number; generation: number }
  | { t: 'end'; lines: number }
  | {
      t: 'serial';
      origin: string;
      serial: number;
      hash?: string;
      signedAt?: number;
      signing?: string;
      rrsets?: number;
    }
  | {
      t: 'put';
      id: string;
      created: string;
      file?: string;
      resource?: Resource;
      generation?: number;
      note?: string;
    }
  | ({ t: 'accepted'; id: string } & StoredAcceptance)
  | { t: 'del'; id: string }
  | { t: 'batch'; ops: Line[] };

/** An object's version as a snapshot began (`null`: it did not exist then), kept at its first change. */
type KeptVersion = { entry: Entry; note: string | undefined } | null;

/** What a snapshot writes: the state as it was when the snapshot began (`StateStore.compactNow`). */
interface SnapshotContent {
  gen: number;
  serials: [string, ZoneSerialState][];
  /**
   * Read as the snapshot is written, not copied first (a copy is a pair per object, about 60 MB at
   * a million), with `before`: an object changed meanwhile is written as it was when the snapshot
   * began (kept in `before` at its first change), one added meanwhile not at all. The snapshot is
   * then the state when it began, every later change is in the new log only: a batch
   * (`commitBatch`) is replayed whole or not at all, and the changes on disk after a crash are
   * those made up to some point, in order, as with the log alone.
   */
  objects: ReadonlyMap<string, Entry>;
  /** With `StateStoreOptions.recordTable`: the record sets' entries, read likewise after `objects`. */
  recordSets: { table: RecordTable; entries: RefColumn<Entry> } | undefined;
  before: ReadonlyMap<string, KeptVersion>;
  acceptance: [string, StoredAcceptance][];
}

/**
 * The state folder mode keeps in `--state-dir`, so that a restart serves what was served before:
 * - the serial (and content hash) last published per zone origin, so a restart never lowers one;
 * - per object: when it was first seen ("oldest wins" survives restarts) and the last valid version
 *   `serve` accepted, with its file and generation, so a version kept because its manifest became
 *   invalid is still kept after a restart, and immutable fields (`DNSZone.spec.domainName`) stay
 *   immutable;
 * - per DNSZone: its `Accepted` condition, so that a restart judges which zones were served as the
 *   controller did before it (ADR 0013: a served zone keeps its domain).
 *
 * It is an append-only log plus a snapshot (ADR 0015): every change is one JSON line appended to
 * `log.<generation>.jsonl`; serials are fsynced before `set` resolves (a serial is never served before
 * it is durable), object changes within `objectDelayMs` (or with the next serial, whichever is first:
 * the log is written in order). When the log outgrows the snapshot, the whole state is written to
 * `snapshot.<generation+1>.jsonl` (temporary file, fsync, rename, fsync of the folder) while appends
 * go on into `log.<generation+1>.jsonl`; then the older generation is deleted. Loading reads the newest
 * complete snapshot and replays the logs of its generation and later. A line torn by a crash is
 * dropped (and cut off before the next append). A write that fails leaves the change pending (and the
 * call rejects); a failed fsync or a log replaced behind our back starts a new generation from memory.
 */
/** The state's flags before a first load applied objects early (`StateStore.objectsMark`). */
export interface ObjectsMark {
  unwritten: boolean;
  walkArmed: boolean;
}

export class StateStore implements SerialStore {
  readonly dir: string | undefined;
  /** RRset counts are kept with serials (change safety after a restart, ADR 0018). */
  readonly keepsCounts = true;
  private readonly options: Required<Omit<StateStoreOptions, 'log' | 'recordTable'>> &
    Pick<StateStoreOptions, 'log'>;
  private readonly serials = new Map<string, ZoneSerialState>();
  /** The objects held, by id: every object, or with `recordSets` every object but record sets. */
  private readonly objects = new Map<string, Entry>();
  /**
   * Record sets' entries in a column of the store's record table (`StateStoreOptions.recordTable`),
   * by the record set's slot, and how many there are.
   */
  private readonly recordSets: { table: RecordTable; entries: RefColumn<Entry> } | undefined;
  private recordSetCount = 0;
  /** The text kept with objects (`StoredObject.note`), for the few that have one. */
  private readonly notes = new Map<string, string>();
  /** The Accepted condition per object id (DNSZones), for objects held in `objects` only. */
  private readonly acceptance = new Map<string, StoredAcceptance>();
  /**
   * Objects loaded from disk, by file, until the manifests were read once (see `objectsOfFile`): the
   * ids of those kept in `objects`, and the keys of those kept in `recordSets` (the strings the table
   * holds already; an id made again for each would be one more string per record set until then).
   */
  private byFile: Map<string, { ids: string[]; keys: string[] }> | undefined;

  private generation = 0;
  private snapshotBytes = 0;
  /** The log replayed at load: appends to it continue after its last complete line. */
  private loadedLog: { gen: number; bytes: number } | undefined;
  /** The log appended to, with its length in complete lines. */
  private log: { fd: FileHandle; ino: number; gen: number; bytes: number } | undefined;
  /**
   * Lines not yet durable, oldest first: as lines, made text when written (a line written by a
   * snapshot instead is never made text). The objects a line refers to are never changed in place.
   */
  private pending: (Line | string)[] = [];
  /** Lines ever queued, and how many of them are durable. */
  private queued = 0;
  private durable = 0;
  private inflight: Promise<void> | undefined;
  private lastFailure: { error: unknown; upTo: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The log cannot be trusted (failed fsync, replaced file): the next write starts a new generation. */
  private broken = false;
  private compacting: Promise<void> | undefined;
  private compactNotBefore = 0;
  /** Retries a failed compaction that left objects only memory holds (`unwritten`). */
  private retryTimer: NodeJS.Timeout | undefined;
  /**
   * While a snapshot is written: each object changed since it began, as it was then (null: absent).
   * The snapshot reads the objects as it writes them, and writes these instead, so that it is the
   * state when it began: a batch committed meanwhile is in the new log only, whole or not at all.
   * Only the objects changed during a snapshot are kept twice.
   */
  private before: Map<string, KeptVersion> | undefined;
  private closed = false;
  /** No new compaction starts once closing. */
  private closing = false;
  /** Holds on the compactions the log's size calls for (`holdCompaction`). */
  private compactionHolds = 0;
  /**
   * The state loaded held no object (a first start, or one whose first snapshot a crash cut short):
   * while compactions are held, object changes stay in memory, written by the snapshot the release
   * starts (see `holdCompaction`). Ends when a snapshot takes what memory holds.
   */
  private deferring = false;
  /** Object changes held in memory only (`deferring`): no line holds them until a snapshot does. */
  private unwritten = false;

  private constructor(dir: string | undefined, { recordTable, ...options }: StateStoreOptions) {
    this.dir = dir;
    this.options = {
      readOnly: false,
      compactMinBytes: DEFAULT_COMPACT_MIN_BYTES,
      objectDelayMs: DEFAULT_OBJECT_DELAY_MS,
      compactRetryMs: DEFAULT_COMPACT_RETRY_MS,
      ...options,
    };
    this.recordSets =
      recordTable !== undefined
        ? { table: recordTable, entries: recordTable.column<Entry>(Holder.state, true) }
        : undefined;
  }

  // --- where entries are kept: `objects`, or a record set's in `recordSets` ---

  /** The record table's key of `id` when its entry is kept in `recordSets`, else undefined. */
  private tableKey(id: string): string | undefined {
    return this.recordSets !== undefined && id.startsWith(RECORD_SET_PREFIX)
      ? id.slice(RECORD_SET_PREFIX.length)
      : undefined;
  }

  private entryOf(id: string): Entry | undefined {
    const key = this.tableKey(id);
    return key === undefined ? this.objects.get(id) : this.recordSetEntry(key);
  }

  private recordSetEntry(key: string): Entry | undefined {
    const { table, entries } = this.recordSets!;
    const slot = table.slotOf(key);
    return slot < 0 ? undefined : entries.get(slot);
  }

  private setEntry(id: string, entry: Entry): void {
    const key = this.tableKey(id);
    if (key === undefined) this.objects.set(id, entry);
    else this.setRecordSetEntry(key, entry);
  }

  private setRecordSetEntry(key: string, entry: Entry): void {
    this.setRecordSetEntryAt(this.recordSets!.table.hold(key, Holder.state), entry);
  }

  /** The entry at the record set's slot, which the state holds from now on (`hold` or `holdSlot` gave it). */
  private setRecordSetEntryAt(slot: number, entry: Entry): void {
    const { entries } = this.recordSets!;
    if (entries.get(slot) === undefined) this.recordSetCount++;
    entries.set(slot, entry);
  }

  /** Forgets the entry of `id`; false when there was none. */
  private deleteEntry(id: string): boolean {
    const key = this.tableKey(id);
    if (key === undefined) return this.objects.delete(id);
    const { table } = this.recordSets!;
    const slot = table.slotOf(key);
    if (!table.held(slot, Holder.state)) return false;
    // The state's column is cleared at the slot as it lets go (`Holder.state` owns it).
    table.release(slot, Holder.state);
    this.recordSetCount--;
    return true;
  }

  /** How many objects are held. */
  private get objectCount(): number {
    return this.objects.size + this.recordSetCount;
  }

  /**
   * Every object held with its id: those of `objects` in the order they were first put, then the
   * record sets of `recordSets` in the order the table took their keys first (the order they were
   * first put, but for one put again while another holder still held its slot). Read as it goes:
   * an object added meanwhile may come, one deleted before it came does not.
   */
  private *entries(): Generator<[string, Entry]> {
    yield* this.objects;
    for (const [key, entry] of this.recordSetEntries()) yield [RECORD_SET_PREFIX + key, entry];
  }

  /** The record sets of `recordSets` with their table keys, in the table's order (see `entries`). */
  private *recordSetEntries(): Generator<[string, Entry]> {
    const recordSets = this.recordSets;
    if (recordSets === undefined) return;
    const { table, entries } = recordSets;
    for (const [key, slot] of table.entries()) {
      const entry = entries.get(slot);
      if (entry !== undefined) yield [key, entry];
    }
  }

  /** Forgets every object (a load started again). */
  private clearObjects(): void {
    this.objects.clear();
    const recordSets = this.recordSets;
    if (recordSets === undefined) return;
    const { table } = recordSets;
    for (const [, slot] of table.entries()) table.release(slot, Holder.state);
    this.recordSetCount = 0;
  }

  /** Opens (creating if needed) the state in `dir`; without a folder, everything stays in memory. */
  static async open(dir: string | undefined, options: StateStoreOptions = {}): Promise<StateStore> {
    const store = new StateStore(dir, options);
    if (dir !== undefined) await store.load();
    return store;
  }

  get persistent(): boolean {
    return this.dir !== undefined;
  }

  /** How many zones' serials are held (none: the state is new or was lost). */
  get serialCount(): number {
    return this.serials.size;
  }

  // --- serials (SerialStore) ---

  get(origin: Name): ZoneSerialState | undefined {
    return this.serials.get(origin.toLowerCase());
  }

  /** Resolves once the serial is durable; rejects (the serial stays pending) when it could not be. */
  async set(origin: Name, state: ZoneSerialState): Promise<void> {
    const key = origin.toLowerCase();
    this.serials.set(key, state);
    this.append({
      t: 'serial',
      origin: key,
      serial: state.serial,
      ...(state.hash ? { hash: state.hash } : {}),
      ...signingFields(state),
      ...rrsetsField(state),
    });
    await this.flush();
  }

  // --- objects ---

  createdAt(id: string): string | undefined {
    return this.entryOf(id)?.created;
  }

  /** What is held for an object; its resource is made again from the id when held as its spec alone. */
  object(id: string): StoredObject | undefined {
    const entry = this.entryOf(id);
    return entry && this.stored(id, entry);
  }

  /**
   * The spec of the version held for `id` when `resource`, from `file`, is that version as
   * `putObject` compares them (and no note is kept with it), else undefined: a reload tells an
   * unchanged object without making the held version again.
   */
  heldSpec(id: string, file: string, resource: Resource): unknown {
    const entry = this.entryOf(id);
    if (entry === undefined || entry.file !== file || this.notes.has(id)) return undefined;
    // Kept as `toEntry` keeps it: the spec alone for the usual shape, else the whole resource.
    const usual = usualShape(id, resource);
    if (!entry.holds(usual ? resource.spec : undefined, usual ? undefined : resource)) return undefined;
    return usual ? entry.spec : entry.resource!.spec;
  }

  private stored(id: string, entry: Entry): StoredObject {
    return storedObject(id, entry, this.notes.get(id));
  }

  /**
   * The ids of the objects held: with `recordSets`, the other kinds' first, then the record sets'
   * (see `entries`); else in the order they were first put.
   */
  objectIds(): IterableIterator<string> {
    if (this.recordSets === undefined || this.recordSetCount === 0) return this.objects.keys();
    return this.ids();
  }

  private *ids(): Generator<string> {
    for (const [id] of this.entries()) yield id;
  }

  /**
   * The ids of objects loaded from disk whose accepted version came from `file`, until
   * `loadedFilesRead` is called (it serves the first read of each file after a start).
   */
  objectsOfFile(file: string): readonly string[] {
    const held = this.byFile?.get(file);
    if (held === undefined) return [];
    if (held.keys.length === 0) return held.ids;
    return [...held.ids, ...held.keys.map((key) => RECORD_SET_PREFIX + key)];
  }

  /** The files that defined the objects loaded from disk, until `loadedFilesRead`. */
  loadedFiles(): readonly string[] {
    return this.byFile ? [...this.byFile.keys()] : [];
  }

  /** Every file has been read once: the by-file index of what was loaded is no longer needed. */
  loadedFilesRead(): void {
    this.byFile = undefined;
  }

  /**
   * A value kept with an object the state holds, in memory only (never written): the manifest
   * source keeps which files define the object there rather than in a map of its own. It goes with
   * the object, and stays when a new version is put.
   */
  tagOf(id: string): unknown {
    return this.entryOf(id)?.tag;
  }

  /** The record table whose column holds the record sets' entries (`StateStoreOptions.recordTable`). */
  get recordTable(): RecordTable | undefined {
    return this.recordSets?.table;
  }

  /**
   * `tagOf` of a record set by its slot in `recordTable` (as `slotOf` gave it; -1: no holder holds
   * it): its caller looked the key up once for the state and the store (`putObject`'s `slot`).
   */
  tagAt(slot: number): unknown {
    return slot < 0 ? undefined : this.recordSets?.entries.get(slot)?.tag;
  }

  /** Keeps `tag` with `id`; false when the state does not hold `id`. */
  setTag(id: string, tag: unknown): boolean {
    // The walk is of `objects`: a record set kept in `recordSets` is looked up in the table, right
    // after its put (the manifest source tags it then) a walk of a chain in the cache.
    const key = this.tableKey(id);
    const entry = key !== undefined ? this.recordSetEntry(key) : (this.walkTo(id) ?? this.objects.get(id));
    if (!entry) return false;
    entry.tag = tag;
    return true;
  }

  /**
   * A walk of `objects` from their first, which `setTag` follows while its ids come in the same order:
   * the manifest source tags a first load's objects all at once after putting them, in the order it
   * put them (`Definers.settle`), and the walk finds each one's entry without a lookup in this map of
   * every object (docs/benchmarks.md, eleventh round); of `objects` only (not of `recordSets`).
   * Started by the first `setTag` after an object was put into an empty state (`walkArmed`); dropped
   * when it ends, when ids stop coming in its order, and by any change to `objects` (a walk would
   * keep the map's table from before a resize alive).
   */
  private walk:
    | { entries: IterableIterator<[string, Entry]>; next: [string, Entry] | undefined; misses: number }
    | undefined;
  private walkArmed = false;

  /** The entry of `id` if it is the walk's next one (see `walk`). */
  private walkTo(id: string): Entry | undefined {
    let walk = this.walk;
    if (walk === undefined) {
      if (!this.walkArmed) return undefined;
      this.walkArmed = false;
      const entries = this.objects.entries();
      walk = this.walk = { entries, next: entries.next().value, misses: 0 };
    }
    const next = walk.next;
    if (next === undefined) {
      this.walk = undefined;
      return undefined;
    }
    if (next[0] !== id) {
      if (++walk.misses > WALK_MISSES) this.walk = undefined;
      return undefined;
    }
    walk.misses = 0;
    walk.next = walk.entries.next().value;
    return next[1];
  }

  /**
   * Whether objects put now stay in memory until a snapshot writes them: no folder, read-only, or a
   * first start's changes while compactions are held (`holdCompaction`). A folder's first load
   * applies files while later ones are parsed only then (ADR 0029): what it takes back
   * (`takeBackObjects`) never reached a line.
   */
  holdsObjectsInMemory(): boolean {
    return !this.persistent || this.options.readOnly === true || (this.deferring && this.compactionHolds > 0);
  }

  /** What `takeBackObjects` restores. */
  objectsMark(): ObjectsMark {
    return { unwritten: this.unwritten, walkArmed: this.walkArmed };
  }

  /**
   * Forgets objects put since `mark` was taken while `holdsObjectsInMemory` (none of them written,
   * none there before): the state is as before they were put.
   */
  takeBackObjects(ids: Iterable<string>, mark: ObjectsMark): void {
    for (const id of ids) {
      this.deleteEntry(id);
      this.notes.delete(id);
    }
    this.walk = undefined;
    this.unwritten = mark.unwritten;
    this.walkArmed = mark.walkArmed;
  }

  /**
   * Records the version accepted for an object; written within `objectDelayMs`. `tag` is the tag of
   * a new entry (`tagOf`; an entry put again keeps its own): the manifest source keeps which files
   * define a new object of a first load there as it puts it (ADR 0031). `slot`: for a record set
   * kept in `recordTable`, its slot there, held by some holder (the memory store that took it just
   * now, `MemoryStore.apply`'s `at`): neither its entry nor its holding looks the key up again.
   * `usual`: the caller knows `object.resource` to be of the usual shape for `id` (`toEntry`'s).
   */
  putObject(id: string, object: StoredObject, tag?: unknown, slot = -1, usual = false): void {
    // A record set kept in the record table: its key there taken once for the lookup and the put,
    // or none when the caller gives its slot.
    const inTable = slot >= 0 && this.recordSets !== undefined && id.startsWith(RECORD_SET_PREFIX);
    const key = inTable ? undefined : this.tableKey(id);
    const existing = inTable
      ? this.recordSets!.entries.get(slot)
      : key === undefined
        ? this.objects.get(id)
        : this.recordSetEntry(key);
    const entry = toEntry(id, object, existing === undefined ? tag : undefined, usual);
    if (
      existing &&
      existing.created === entry.created &&
      existing.file === entry.file &&
      existing.generation === entry.generation &&
      this.notes.get(id) === object.note &&
      existing.holds(entry.spec, entry.resource)
    ) {
      // Unchanged: keep the caller's version (the one shared with the resource store), write nothing.
      existing.takeVersion(entry);
      return;
    }
    if (existing !== undefined) entry.tag = existing.tag;
    this.keepBefore(id);
    this.walk = undefined;
    if (this.objectCount === 0) this.walkArmed = true;
    if (inTable) this.setRecordSetEntryAt(this.recordSets!.table.holdSlot(slot, Holder.state), entry);
    else if (key === undefined) this.objects.set(id, entry);
    else this.setRecordSetEntry(key, entry);
    // No note to forget when none is kept (a first load's million puts): no lookup for nothing.
    if (object.note !== undefined || this.notes.size > 0) this.setNote(id, object.note);
    // Nothing written (no folder, or read-only): no line made for nothing.
    if (this.defers() || !this.persistent || this.options.readOnly) return;
    this.append(putLine(id, object));
    this.scheduleFlush();
  }

  /**
   * Whether an object change stays in memory only: on a first start while compactions are held
   * (`holdCompaction`), the snapshot the release starts writes it with every other object.
   */
  private defers(): boolean {
    if (!this.deferring || this.compactionHolds === 0) return false;
    this.unwritten = true;
    return true;
  }

  /**
   * Applies several object changes as one log line and resolves once it is durable: after a crash
   * either all of them are replayed or none (a torn line is dropped, ADR 0015).
   */
  async commitBatch(ops: readonly BatchOp[]): Promise<void> {
    if (this.options.readOnly) throw new Error('the state store is read-only');
    const lines: Line[] = ops.map((op) => (op.object ? putLine(op.id, op.object) : { t: 'del', id: op.id }));
    this.walk = undefined;
    for (const op of ops) {
      this.keepBefore(op.id);
      if (op.object) {
        const entry = toEntry(op.id, op.object);
        entry.tag = this.entryOf(op.id)?.tag;
        this.setEntry(op.id, entry);
        this.setNote(op.id, op.object.note);
      } else {
        this.deleteEntry(op.id);
        this.notes.delete(op.id);
      }
    }
    this.append({ t: 'batch', ops: lines });
    // On failure the line stays pending (memory holds the batch, as the log will once a later flush
    // succeeds): the batch is then in doubt, and the caller completes it after a successful `flush`.
    await this.flush();
  }

  /** Keeps an object as it was before its first change while a snapshot is written (`before`). */
  private keepBefore(id: string): void {
    const before = this.before;
    if (before === undefined || before.has(id)) return;
    const entry = this.entryOf(id);
    before.set(id, entry !== undefined ? { entry, note: this.notes.get(id) } : null);
  }

  private setNote(id: string, note: string | undefined): void {
    if (note === undefined) this.notes.delete(id);
    else this.notes.set(id, note);
  }

  /** Forgets an object, and the condition remembered for it. */
  deleteObject(id: string): void {
    this.walk = undefined;
    this.keepBefore(id);
    this.notes.delete(id);
    const had = this.deleteEntry(id);
    if (!this.acceptance.delete(id) && !had) return;
    if (this.defers()) return;
    this.append({ t: 'del', id });
    this.scheduleFlush();
  }

  /** The Accepted condition remembered for an object (a DNSZone), if any. */
  acceptedOf(id: string): StoredAcceptance | undefined {
    return this.acceptance.get(id);
  }

  /**
   * Remembers an object's Accepted condition; written within `objectDelayMs` when it changed. Only
   * for objects the state holds (a condition written while an object is being deleted is not kept).
   */
  putAccepted(id: string, accepted: StoredAcceptance): void {
    if (this.entryOf(id) === undefined) return;
    const existing = this.acceptance.get(id);
    if (
      existing &&
      existing.status === accepted.status &&
      existing.reason === accepted.reason &&
      existing.lastTransitionTime === accepted.lastTransitionTime &&
      existing.observedGeneration === accepted.observedGeneration
    )
      return;
    const stored: StoredAcceptance = {
      status: accepted.status,
      reason: accepted.reason,
      lastTransitionTime: accepted.lastTransitionTime,
      ...(accepted.observedGeneration !== undefined
        ? { observedGeneration: accepted.observedGeneration }
        : {}),
    };
    this.acceptance.set(id, stored);
    if (this.defers()) return;
    this.append({ t: 'accepted', id, ...stored });
    this.scheduleFlush();
  }

  /** Everything held, read-only (for `zone export`, which reads what `serve` saved). */
  snapshot(): {
    serials: Readonly<Record<string, ZoneSerialState>>;
    created: Readonly<Record<string, string>>;
  } {
    const created: Record<string, string> = {};
    for (const [id, o] of this.entries()) created[id] = o.created;
    return { serials: Object.fromEntries(this.serials), created };
  }

  // --- writing ---

  /**
   * Holds the compactions the log's size calls for until the returned function is called (once is
   * enough; later calls do nothing); then one starts if the log has outgrown its snapshot. `serve`
   * holds them while its first start programs every zone: the first snapshot serialises every object
   * again, work that no answer waits for. Writes and fsyncs are not held (serials are durable before
   * they are served), nor the new generation a broken or replaced log needs.
   *
   * On a first start (the state loaded held no object) object changes made while held are not
   * appended at all: memory holds them, and the release starts the snapshot that writes them, each
   * object serialised once and after the first answers (ADR 0015). A crash before that snapshot is
   * complete leaves the serials (and any batch, `commitBatch`) but no object: the next start reads
   * every object from the folder, as a first start does. `close` writes them too.
   */
  holdCompaction(): () => void {
    this.compactionHolds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.compactionHolds--;
      this.maybeCompact();
    };
  }

  /** Makes every change made so far durable; rejects when it could not (the changes stay pending). */
  async flush(): Promise<void> {
    const target = this.queued;
    while (this.durable < target) {
      if (this.inflight) {
        try {
          await this.inflight;
        } catch (e) {
          if (this.lastFailure && this.lastFailure.upTo >= target) throw e;
        }
        continue;
      }
      this.inflight = this.writePending().finally(() => {
        this.inflight = undefined;
      });
    }
  }

  /**
   * Resolves once no compaction runs (one that a finished one started is waited for too); a failed
   * one counts as finished (it is retried later). `serve` gives memory back after the first one.
   */
  async compactionsSettled(): Promise<void> {
    while (this.compacting) await this.compacting.catch(() => {});
  }

  /** Writes what is pending and closes the log (graceful shutdown); a running compaction finishes first. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.closing = true;
    try {
      await this.flush();
      while (this.compacting) await this.compacting;
      // A first start's objects held in memory (the hold not released, or its snapshot failed).
      if (this.unwritten) await this.compact();
    } finally {
      this.closed = true;
      await this.log?.fd.close().catch(() => {});
      this.log = undefined;
    }
  }

  private append(line: Line): void {
    if (!this.persistent || this.options.readOnly) return;
    this.pending.push(line);
    this.queued++;
  }

  private scheduleFlush(): void {
    if (this.timer || !this.persistent || this.options.readOnly) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch((e: unknown) => {
        this.options.log?.('error', `state ${this.dir}: ${(e as Error).message}; retrying`);
        this.scheduleFlush();
      });
    }, this.options.objectDelayMs);
    this.timer.unref();
  }

  /** One write of every pending line and one fsync; on failure the lines stay pending. */
  private async writePending(): Promise<void> {
    const count = this.pending.length;
    const upTo = this.durable + count;
    try {
      if (this.closed) throw new Error('the state store is closed');
      if (this.broken) await this.compact();
      if (this.snapshotInstead(count)) {
        // The snapshot holds what memory holds, every pending line's change included.
        await this.compact();
        this.pending.splice(0, count);
        this.durable = upTo;
        this.lastFailure = undefined;
        return;
      }
      const log = await this.openLog();
      // In writes of at most WRITE_CHUNK_BYTES (a start-up appends every object: never one huge string).
      const out = new Chunks(log.fd);
      try {
        for (let i = 0; i < count; i++) if (!out.add(this.lineText(i))) await out.write();
        await out.flush();
      } catch (e) {
        // A partial line would merge with the next one: cut it off, or start a new generation.
        await log.fd.truncate(log.bytes).catch(() => {
          this.broken = true;
        });
        throw e;
      }
      try {
        await log.fd.datasync();
      } catch (e) {
        // After a failed fsync the kernel may have dropped the pages: nothing written can be trusted.
        this.broken = true;
        throw e;
      }
      log.bytes += out.bytes;
      this.pending.splice(0, count);
      this.durable = upTo;
      this.lastFailure = undefined;
    } catch (e) {
      this.lastFailure = { error: e, upTo };
      throw new Error(`cannot write the state in ${this.dir}: ${(e as Error).message}`, { cause: e });
    }
    this.maybeCompact();
  }

  /** Pending line `i` as text (kept as text: a failed write retries it). */
  private lineText(i: number): string {
    const line = this.pending[i]!;
    if (typeof line === 'string') return line;
    const text = `${JSON.stringify(line)}\n`;
    this.pending[i] = text;
    return text;
  }

  /**
   * Whether the `count` lines pending are better written as a snapshot of the whole state: when they
   * are most of it (a first start puts every object) and, appended, would make the log call for a
   * compaction at once (its size above the threshold and the last snapshot). Appending them and then
   * compacting serialised every object twice; the snapshot serialises each once. Not while a
   * compaction runs: its snapshot was taken before some of these lines.
   */
  private snapshotInstead(count: number): boolean {
    if (count < SNAPSHOT_INSTEAD_MIN_LINES || this.compacting) return false;
    if (count * 2 < this.serials.size + this.objectCount + this.acceptance.size) return false;
    const sample = Math.min(count, SIZE_SAMPLE_LINES);
    let sampled = 0;
    for (let i = 0; i < sample; i++) sampled += this.lineText(i).length;
    const estimate = (sampled / sample) * count;
    const logBytes =
      this.log?.gen === this.generation
        ? this.log.bytes
        : this.loadedLog?.gen === this.generation
          ? this.loadedLog.bytes
          : 0;
    return logBytes + estimate > Math.max(this.options.compactMinBytes, this.snapshotBytes);
  }

  /** The current generation's log, opened for appending; a log replaced behind our back is not used. */
  private async openLog(): Promise<{ fd: FileHandle; ino: number; gen: number; bytes: number }> {
    const file = path.join(this.dir!, logName(this.generation));
    if (this.log && this.log.gen === this.generation) {
      const now = await stat(file).catch(() => undefined);
      if (now?.ino === this.log.ino) return this.log;
      await this.log.fd.close().catch(() => {});
      this.log = undefined;
      this.options.log?.('warn', `state ${file} was replaced or removed; writing a new snapshot`);
      await this.compact();
      return this.openLog();
    }
    await this.log?.fd.close().catch(() => {});
    this.log = undefined;
    const fd = await open(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o644);
    try {
      const info = await fd.stat();
      if (!info.isFile()) throw new Error(`${file} is not a file`);
      const bytes = this.loadedLog?.gen === this.generation ? this.loadedLog.bytes : 0;
      if (info.size !== bytes) {
        // Not the log we replayed: cut it back to what we know, or start a new generation.
        if (info.size < bytes) {
          this.broken = true;
          throw new Error(`${file} is shorter than the state it held`);
        }
        await fd.truncate(bytes);
      }
      await syncDir(this.dir!);
      this.log = { fd, ino: info.ino, gen: this.generation, bytes };
      return this.log;
    } catch (e) {
      await fd.close().catch(() => {});
      throw e;
    }
  }

  private maybeCompact(): void {
    if (this.compacting || this.closing || this.compactionHolds > 0 || Date.now() < this.compactNotBefore)
      return;
    const bytes = this.log?.gen === this.generation ? this.log.bytes : 0;
    if (!this.unwritten && bytes <= Math.max(this.options.compactMinBytes, this.snapshotBytes)) return;
    this.compact().catch((e: unknown) => {
      this.options.log?.(
        'warn',
        `state ${this.dir}: compaction failed (${(e as Error).message}); retrying later`,
      );
    });
  }

  /**
   * Writes the whole state as the snapshot of a new generation; appends go on meanwhile into the new
   * generation's log. Concurrent calls share one compaction. A failed one is retried after
   * `compactRetryMs`, whoever started it: the back-off is set before the next one may start, and
   * objects only memory holds are not left for the next change to notice.
   */
  private compact(): Promise<void> {
    this.compacting ??= this.compactNow()
      .catch((e: unknown) => {
        this.compactNotBefore = Date.now() + this.options.compactRetryMs;
        if (this.unwritten && !this.closing && this.retryTimer === undefined) {
          this.retryTimer = setTimeout(() => {
            this.retryTimer = undefined;
            this.compactNotBefore = 0;
            this.maybeCompact();
          }, this.options.compactRetryMs);
          this.retryTimer.unref();
        }
        throw e;
      })
      .finally(() => {
        this.compacting = undefined;
        // What was appended meanwhile may already call for the next one.
        if (!this.broken) this.maybeCompact();
      });
    return this.compacting;
  }

  private async compactNow(): Promise<void> {
    const dir = this.dir!;
    const previous = this.generation;
    const gen = previous + 1;
    // From here on, appends go to the new log: the snapshot holds everything before.
    this.generation = gen;
    this.broken = false;
    const serials = [...this.serials];
    const acceptance = [...this.acceptance];
    // The snapshot holds every change made so far: later ones are appended to the new log.
    const covers = this.unwritten;
    this.deferring = false;
    this.unwritten = false;
    const before = new Map<string, KeptVersion>();
    this.before = before;
    try {
      const { objects, recordSets } = this;
      await this.writeSnapshot(dir, { gen, serials, objects, recordSets, before, acceptance });
    } catch (e) {
      if (covers) this.unwritten = true;
      throw e;
    } finally {
      this.before = undefined;
    }
  }

  private async writeSnapshot(dir: string, content: SnapshotContent): Promise<void> {
    const { gen } = content;
    const tmp = path.join(dir, `${snapshotName(gen)}.tmp`);
    const fd = await open(tmp, 'w', 0o644);
    const out = new Chunks(fd);
    try {
      await this.writeSnapshotLines(out, fd, content);
      await rename(tmp, path.join(dir, snapshotName(gen)));
    } catch (e) {
      // Not left to the next start: a snapshot is as large as the state, and a retry writes another.
      await rm(tmp, { force: true }).catch(() => {});
      throw e;
    }
    await syncDir(dir);
    this.snapshotBytes = out.bytes;
    // The new generation is complete: the older ones are no longer needed.
    for (const name of await readdir(dir)) {
      const m = SNAPSHOT.exec(name) ?? LOG.exec(name);
      if (m && Number(m[1]) < gen) await rm(path.join(dir, name), { force: true }).catch(() => {});
    }
  }

  /** The snapshot's lines, written and synced; the file is closed, written or not. */
  private async writeSnapshotLines(
    out: Chunks,
    fd: FileHandle,
    { gen, serials, objects, recordSets, before, acceptance }: SnapshotContent,
  ): Promise<void> {
    try {
      const header: Line = { t: 'snapshot', version: FORMAT, generation: gen };
      out.add(`${JSON.stringify(header)}\n`);
      let lines = 0;
      for (const [origin, s] of serials) {
        const text = `${JSON.stringify({ t: 'serial', origin, serial: s.serial, ...(s.hash ? { hash: s.hash } : {}), ...signingFields(s), ...rrsetsField(s) })}\n`;
        if (!out.add(text)) await out.write();
        lines++;
      }
      const put = new PutText();
      const text = (id: string, o: Entry, note: string | undefined) => {
        const spec = o.spec;
        return spec !== undefined
          ? put.line(id, o.created, o.file, spec, o.generation, note)
          : `${JSON.stringify(putLine(id, storedObject(id, o, note)))}\n`;
      };
      // The objects of `before` written, as they were (one changed, deleted and added again comes
      // twice in the map's order).
      const written = new Set<string>();
      /** An object's line, or undefined when it is not written here. */
      const lineOf = (id: string, o: Entry): string | undefined => {
        const kept = before.get(id);
        if (kept === undefined) return text(id, o, this.notes.get(id));
        if (kept === null || written.has(id)) return undefined;
        written.add(id);
        return text(id, kept.entry, kept.note);
      };
      for (const [id, o] of objects) {
        const line = lineOf(id, o);
        if (line === undefined) continue;
        lines++;
        if (!out.add(line) || lines % SNAPSHOT_CHUNK === 0) await out.write();
      }
      // Record sets kept in the record table, in the order it took their keys: their line made from
      // the key when no object changed since the snapshot began and no note is kept (the usual case),
      // else from the id as above.
      const { table, entries } = recordSets ?? {};
      for (const [key, slot] of table?.entries() ?? []) {
        const o = entries!.get(slot);
        if (o === undefined) continue;
        const spec = o.spec;
        const line =
          before.size === 0 && this.notes.size === 0 && spec !== undefined
            ? put.recordSetLine(key, o.created, o.file, spec, o.generation)
            : lineOf(RECORD_SET_PREFIX + key, o);
        if (line === undefined) continue;
        lines++;
        if (!out.add(line) || lines % SNAPSHOT_CHUNK === 0) await out.write();
      }
      // Objects deleted before the snapshot came to them. One written before its first change comes
      // again here when it was deleted since: the same version twice.
      for (const [id, kept] of before) {
        if (kept === null || written.has(id)) continue;
        written.add(id);
        lines++;
        if (!out.add(text(id, kept.entry, kept.note)) || lines % SNAPSHOT_CHUNK === 0) await out.write();
      }
      for (const [id, a] of acceptance) {
        lines++;
        if (!out.add(`${JSON.stringify({ t: 'accepted', id, ...a })}\n`) || lines % SNAPSHOT_CHUNK === 0)
          await out.write();
      }
      if (!out.add(`${JSON.stringify({ t: 'end', lines })}\n`)) await out.write();
      // Every line written, the end line last (it may be the line that did not fit above).
      await out.flush();
      await fd.sync();
    } finally {
      await fd.close();
    }
  }

  // --- loading ---

  private async load(): Promise<void> {
    // A reader may race with a compaction of a running `serve` (files replaced while listed): retry.
    for (let attempt = 0; ; attempt++) {
      try {
        await this.loadOnce();
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 4) throw e;
        this.serials.clear();
        this.clearObjects();
        this.notes.clear();
        this.acceptance.clear();
      }
    }
  }

  private async loadOnce(): Promise<void> {
    const dir = this.dir!;
    if (!this.options.readOnly) await mkdir(dir, { recursive: true });
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' && this.options.readOnly) return;
      throw e;
    }
    const snapshots = numbered(names, SNAPSHOT);
    const logs = numbered(names, LOG);
    let base = -1;
    for (const gen of snapshots.reverse()) {
      const file = path.join(dir, snapshotName(gen));
      const result = await this.readLines(file, true);
      if (result.complete) {
        base = gen;
        this.snapshotBytes = result.bytes;
        break;
      }
      this.options.log?.('warn', `state ${file} is incomplete; using an older snapshot`);
      this.serials.clear();
      this.clearObjects();
      this.notes.clear();
      this.acceptance.clear();
    }
    let migrated = false;
    if (base < 0 && logs.length === 0) migrated = await this.loadLegacy();
    const replay = logs.filter((gen) => gen >= Math.max(base, 0));
    let damaged = migrated || replay.length > 1 || (replay.length === 1 && replay[0] !== Math.max(base, 0));
    for (const [i, gen] of replay.entries()) {
      const file = path.join(dir, logName(gen));
      const result = await this.readLines(file, false);
      if (result.skipped > 0) {
        damaged = true;
        this.options.log?.('warn', `state ${file}: ${result.skipped} damaged line(s) skipped`);
      }
      if (i === replay.length - 1) {
        this.loadedLog = { gen, bytes: result.validBytes };
        if (result.validBytes !== result.bytes) damaged = true; // a torn tail, cut before appending
      }
    }
    this.generation = Math.max(base, 0, ...replay);
    const byFile = new Map<string, { ids: string[]; keys: string[] }>();
    const fileOf = (file: string) => {
      const held = byFile.get(file);
      if (held !== undefined) return held;
      const made = { ids: [] as string[], keys: [] as string[] };
      byFile.set(file, made);
      return made;
    };
    const loaded = (o: Entry) => o.file !== undefined && (o.resource !== undefined || o.spec !== undefined);
    for (const [id, o] of this.objects) if (loaded(o)) fileOf(o.file!).ids.push(id);
    for (const [key, o] of this.recordSetEntries()) if (loaded(o)) fileOf(o.file!).keys.push(key);
    this.byFile = byFile;
    if (this.options.readOnly) return;
    // Snapshots a crash cut short before they were renamed into place.
    for (const name of names)
      if (name.endsWith('.jsonl.tmp')) await rm(path.join(dir, name), { force: true }).catch(() => {});
    if (damaged) {
      // Several logs (a compaction was interrupted), a torn tail or the old format: start clean.
      await this.compact();
      if (migrated) {
        for (const name of ['state.json', 'created.json']) {
          await rename(path.join(dir, name), path.join(dir, `${name}.migrated`)).catch(() => {});
        }
      }
    }
    // No object: a first start, whose objects wait for the snapshot while compactions are held.
    this.deferring = this.objectCount === 0;
  }

  /**
   * Replays one file's lines into memory. Lines are JSON objects, each ended by a newline: a line cut
   * short by a crash does not parse (or has no newline) and is dropped.
   */
  private async readLines(
    file: string,
    snapshot: boolean,
  ): Promise<{ complete: boolean; bytes: number; validBytes: number; skipped: number }> {
    const fd = await open(file, 'r');
    let bytes = 0;
    let validBytes = 0;
    let skipped = 0;
    let complete = false;
    let lineNo = 0;
    try {
      let rest = Buffer.alloc(0);
      const buffer = Buffer.alloc(1 << 20);
      for (;;) {
        const { bytesRead } = await fd.read(buffer, 0, buffer.length, bytes);
        if (bytesRead === 0) break;
        bytes += bytesRead;
        let data =
          rest.length > 0
            ? Buffer.concat([rest, buffer.subarray(0, bytesRead)])
            : buffer.subarray(0, bytesRead);
        let start = 0;
        for (let nl = data.indexOf(10, start); nl >= 0; nl = data.indexOf(10, start)) {
          const text = data.toString('utf8', start, nl);
          start = nl + 1;
          lineNo++;
          let line: Line | undefined;
          try {
            line = JSON.parse(text) as Line;
          } catch {
            line = undefined;
          }
          if (!line || typeof line !== 'object') {
            skipped++;
            continue;
          }
          if (snapshot && lineNo === 1) {
            if (line.t !== 'snapshot') throw new Error(`${file}: not a Zonekeeper state snapshot`);
            if (line.version !== FORMAT)
              throw new Error(
                `${file}: state format ${String(line.version)} is not supported (expected ${FORMAT})`,
              );
            validBytes = bytes - (data.length - start);
            continue;
          }
          if (line.t === 'end') complete = true;
          else this.apply(line);
          validBytes = bytes - (data.length - start);
        }
        rest = Buffer.from(data.subarray(start));
        data = Buffer.alloc(0);
      }
    } finally {
      await fd.close();
    }
    return { complete: snapshot ? complete : true, bytes, validBytes, skipped };
  }

  private readonly files = new Map<string, string>();

  private apply(line: Line): void {
    switch (line.t) {
      case 'serial':
        if (typeof line.origin === 'string' && Number.isInteger(line.serial))
          this.serials.set(line.origin.toLowerCase(), {
            serial: line.serial,
            ...(typeof line.hash === 'string' ? { hash: line.hash } : {}),
            ...signingFields(line),
            ...rrsetsField(line),
          });
        return;
      case 'put': {
        if (typeof line.id !== 'string' || typeof line.created !== 'string') return;
        // One string per file name, however many objects it defines.
        let file = line.file;
        if (typeof file === 'string') {
          const interned = this.files.get(file);
          if (interned === undefined) this.files.set(file, file);
          else file = interned;
        }
        const resource = line.resource && typeof line.resource === 'object' ? line.resource : undefined;
        const generation = Number.isInteger(line.generation) && line.generation! > 1 ? line.generation! : 0;
        this.setEntry(line.id, toEntry(line.id, { created: line.created, file, resource, generation }));
        this.setNote(line.id, typeof line.note === 'string' ? line.note : undefined);
        return;
      }
      case 'accepted':
        if (
          typeof line.id === 'string' &&
          (line.status === 'True' || line.status === 'False' || line.status === 'Unknown') &&
          typeof line.reason === 'string' &&
          typeof line.lastTransitionTime === 'string'
        )
          this.acceptance.set(line.id, {
            status: line.status,
            reason: line.reason,
            lastTransitionTime: line.lastTransitionTime,
            ...(Number.isInteger(line.observedGeneration)
              ? { observedGeneration: line.observedGeneration }
              : {}),
          });
        return;
      case 'batch':
        if (Array.isArray(line.ops)) for (const op of line.ops) if (op && op.t !== 'batch') this.apply(op);
        return;
      case 'del':
        if (typeof line.id === 'string') {
          this.deleteEntry(line.id);
          this.notes.delete(line.id);
          this.acceptance.delete(line.id);
        }
        return;
      default:
        return;
    }
  }

  /** The state of earlier versions (`state.json` with serials, `created.json`); true when found. */
  private async loadLegacy(): Promise<boolean> {
    const read = async (name: string) => {
      try {
        return JSON.parse(await readFile(path.join(this.dir!, name), 'utf8')) as Record<string, unknown>;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw new Error(`${path.join(this.dir!, name)}: ${(e as Error).message}`);
      }
    };
    const state = await read('state.json');
    const created = await read('created.json');
    if (!state && !created) return false;
    if (state && state.version !== 1)
      throw new Error(
        `${path.join(this.dir!, 'state.json')}: unsupported state version ${String(state.version)}`,
      );
    for (const [origin, s] of Object.entries((state?.serials as Record<string, ZoneSerialState>) ?? {}))
      this.serials.set(origin.toLowerCase(), s);
    const times = (created?.created ?? state?.created ?? {}) as Record<string, string>;
    for (const [id, time] of Object.entries(times)) this.setEntry(id, toEntry(id, { created: time }));
    return true;
  }
}

/**
 * One object as memory holds it. The accepted version of a manifest of the usual shape (one of our
 * kinds, our API version, metadata of a name, a namespace and at most a generation and creation time,
 * which the resource store sets itself) is held as its spec alone, the one the resource store
 * shares, and made again from the id when asked for: the parsed object and its metadata beside the
 * store's cost about 100 bytes per record set (docs/benchmarks.md, memory budget). Other versions
 * are held whole.
 */
class Entry {
  /** The accepted version's spec when it is of the usual shape, else the version in a `Whole`. */
  private held: unknown;
  /**
   * When the object was first seen, the accepted version's file and generation, and the tag: in an
   * `About` shared by the entries of the same four (objects first seen in one reload share their
   * creation time, and nearly always the one file their version came from is the tag, as the manifest
   * source names it). The entry takes two fields, 40 bytes, not four (docs/benchmarks.md, eighth round).
   */
  private about: About;

  constructor(
    created: string,
    file: string | undefined,
    generation: number,
    spec: unknown,
    resource: Resource | undefined,
    tag?: unknown,
  ) {
    this.held = resource !== undefined ? new Whole(resource) : spec;
    this.about = aboutOf(created, file, generation, tag);
  }

  get created(): string {
    return this.about.created;
  }

  /** `metadata.generation` of the accepted version when above 1, else 0. */
  get generation(): number {
    return this.about.generation;
  }

  get file(): string | undefined {
    return this.about.file;
  }

  /** What the state's user keeps with the object (`tagOf`), in memory only. */
  get tag(): unknown {
    return this.about.tag;
  }

  set tag(tag: unknown) {
    const about = this.about;
    if (about.tag !== tag) this.about = aboutOf(about.created, about.file, about.generation, tag);
  }

  /** The accepted version's spec, when it is of the usual shape. */
  get spec(): unknown {
    return this.held instanceof Whole ? undefined : this.held;
  }

  /** The accepted version, when it is not of the usual shape. */
  get resource(): Resource | undefined {
    return this.held instanceof Whole ? this.held.resource : undefined;
  }

  /**
   * Whether the version held equals the one given as `toEntry` keeps it (`spec` for the usual shape,
   * else the whole `resource`): what `putObject` and `heldSpec` both ask.
   */
  holds(spec: unknown, resource: Resource | undefined): boolean {
    const mine = this.resource;
    return (
      (mine === undefined) === (resource === undefined) &&
      (mine === resource || jsonEqual(mine, resource)) &&
      (this.spec === spec || jsonEqual(this.spec, spec))
    );
  }

  /** Holds `other`'s version (equal to this one's) instead of its own. */
  takeVersion(other: Entry): void {
    this.held = other.held;
  }
}

/** A version not of the usual shape, held whole. */
class Whole {
  readonly resource: Resource;
  constructor(resource: Resource) {
    this.resource = resource;
  }
}

/** An entry's creation time, file, generation and tag (never changed: entries share them). */
class About {
  readonly created: string;
  readonly file: string | undefined;
  readonly generation: number;
  readonly tag: unknown;
  constructor(created: string, file: string | undefined, generation: number, tag: unknown) {
    this.created = created;
    this.file = file;
    this.generation = generation;
    this.tag = tag;
  }
}

/**
 * Shared `About`s by file, tag, creation time and generation, for tags that are strings or none. At
 * most `ABOUTS_KEPT`; past it the maps start again empty. The two made or found last are looked at
 * first: a load puts the objects of one file one after the other, each put and then tagged.
 */
let abouts = new Map<string | undefined, Map<string | undefined, Map<string, Map<number, About>>>>();
let aboutCount = 0;
const ABOUTS_KEPT = 65_536;
let lastAbout: About | undefined;
let lastButOneAbout: About | undefined;

function aboutOf(created: string, file: string | undefined, generation: number, tag: unknown): About {
  if (lastAbout !== undefined && isAbout(lastAbout, created, file, generation, tag)) return lastAbout;
  if (lastButOneAbout !== undefined && isAbout(lastButOneAbout, created, file, generation, tag)) {
    const about = lastButOneAbout;
    lastButOneAbout = lastAbout;
    lastAbout = about;
    return about;
  }
  const about = sharedAbout(created, file, generation, tag);
  if (about !== lastAbout) {
    lastButOneAbout = lastAbout;
    lastAbout = about;
  }
  return about;
}

function isAbout(
  a: About,
  created: string,
  file: string | undefined,
  generation: number,
  tag: unknown,
): boolean {
  return a.created === created && a.file === file && a.generation === generation && a.tag === tag;
}

function sharedAbout(created: string, file: string | undefined, generation: number, tag: unknown): About {
  if (tag !== undefined && typeof tag !== 'string') return new About(created, file, generation, tag);
  let byTag = abouts.get(file);
  let byCreated = byTag?.get(tag);
  let byGeneration = byCreated?.get(created);
  let about = byGeneration?.get(generation);
  if (about !== undefined) return about;
  about = new About(created, file, generation, tag);
  if (aboutCount >= ABOUTS_KEPT) {
    // Full (files renamed or removed, creation times of objects gone stay as keys): start again.
    // Entries keep the holders they have; only later entries share new ones.
    abouts = new Map();
    aboutCount = 0;
    byTag = undefined;
    byCreated = undefined;
    byGeneration = undefined;
  }
  if (byTag === undefined) {
    byTag = new Map();
    abouts.set(file, byTag);
  }
  if (byCreated === undefined) {
    byCreated = new Map();
    byTag.set(tag as string | undefined, byCreated);
  }
  if (byGeneration === undefined) {
    byGeneration = new Map();
    byCreated.set(created, byGeneration);
  }
  byGeneration.set(generation, about);
  aboutCount++;
  return about;
}

/** An object as `StateStore.object` gives it, with `note` kept with it. */
function storedObject(id: string, entry: Entry, note: string | undefined): StoredObject {
  const resource = entry.resource ?? (entry.spec !== undefined ? rebuild(id, entry.spec) : undefined);
  return {
    created: entry.created,
    ...(entry.file !== undefined ? { file: entry.file } : {}),
    ...(resource !== undefined ? { resource } : {}),
    ...(entry.generation > 1 ? { generation: entry.generation } : {}),
    ...(note !== undefined ? { note } : {}),
  };
}

/**
 * The entry of `o`. `known`, when its caller knows it to be so (a first load's record set as a parse
 * thread's message made it, `ManifestSource.applyEarly` through `putObject`): `o.resource` is of the
 * usual shape for `id` (`usualShape` would say true), so it is not tested again (docs/benchmarks.md,
 * eighteenth round).
 */
function toEntry(
  id: string,
  o: {
    created: string;
    file?: string | undefined;
    resource?: Resource | undefined;
    generation?: number;
  },
  tag?: unknown,
  known = false,
): Entry {
  const generation = o.generation !== undefined && o.generation > 1 ? o.generation : 0;
  const r = o.resource;
  const usual = r !== undefined && (known || usualShape(id, r));
  return new Entry(o.created, o.file, generation, usual ? r.spec : undefined, usual ? undefined : r, tag);
}

/**
 * An object's own keys `rebuild` makes. Compared with each constant, not looked up in a set: a key
 * read by `Object.keys` and a constant are the same internalized string, so each test is one compare
 * (a first load tests a million objects' six keys).
 */
function isUsualTop(key: string): boolean {
  return key === 'apiVersion' || key === 'kind' || key === 'metadata' || key === 'spec';
}
/** A manifest's metadata fields that `rebuild` gives back (or the store sets itself). */
function isRebuiltMeta(key: string): boolean {
  return key === 'name' || key === 'namespace' || key === 'generation' || key === 'creationTimestamp';
}

/** Whether `rebuild(id, r.spec)` gives `r` back, but for its metadata's generation and creation time. */
function usualShape(id: string, r: Resource): boolean {
  if (r.apiVersion !== API_VERSION || !(KINDS as readonly string[]).includes(r.kind)) return false;
  if (typeof r.spec !== 'object' || r.spec === null) return false;
  for (const key of Object.keys(r)) if (!isUsualTop(key)) return false;
  const m = r.metadata;
  if (typeof m !== 'object' || m === null || typeof m.name !== 'string') return false;
  if (m.namespace !== undefined && (typeof m.namespace !== 'string' || m.namespace === '')) return false;
  for (const key of Object.keys(m)) if (!isRebuiltMeta(key)) return false;
  return isIdOf(id, r.kind, m.namespace, m.name);
}

/**
 * Whether `id` is `[kind, resourceKey({ namespace, name })].join('/')`, compared in place: that id
 * made again per object put was about a third of `usualShape` (docs/benchmarks.md, eleventh round).
 */
function isIdOf(id: string, kind: string, namespace: string | undefined, name: string): boolean {
  if (!id.startsWith(kind) || id.charCodeAt(kind.length) !== SLASH) return false;
  let at = kind.length + 1;
  if (namespace) {
    if (!id.startsWith(namespace, at) || id.charCodeAt(at + namespace.length) !== SLASH) return false;
    at += namespace.length + 1;
  }
  return id.length === at + name.length && id.endsWith(name);
}

const SLASH = 0x2f;

/** The version held as its spec, made again from its id (`Kind/namespace/name` or `Kind/name`). */
function rebuild(id: string, spec: unknown): Resource {
  const slash = id.indexOf('/');
  const kind = id.slice(0, slash);
  const key = id.slice(slash + 1);
  const inner = key.indexOf('/');
  const metadata = inner < 0 ? { name: key } : { name: key.slice(inner + 1), namespace: key.slice(0, inner) };
  return { apiVersion: API_VERSION, kind, metadata, spec } as Resource;
}

function putLine(id: string, o: StoredObject): Line {
  return {
    t: 'put',
    id,
    created: o.created,
    ...(o.file !== undefined ? { file: o.file } : {}),
    ...(o.resource !== undefined ? { resource: o.resource } : {}),
    ...(o.generation !== undefined && o.generation > 1 ? { generation: o.generation } : {}),
    ...(o.note !== undefined ? { note: o.note } : {}),
  };
}

/**
 * Lines written to a file in chunks: each line encoded into one buffer as it comes, written when full
 * or asked to. A string of many lines would be joined and then encoded at each write, which cost a
 * snapshot about as much main-thread CPU as serialising its objects (docs/benchmarks.md, ninth round).
 */
class Chunks {
  private readonly fd: FileHandle;
  private readonly buffer = Buffer.allocUnsafe(WRITE_CHUNK_BYTES);
  private used = 0;
  /** A line that did not fit, written after the buffer. */
  private over: string | undefined;
  /** Bytes written. */
  bytes = 0;

  constructor(fd: FileHandle) {
    this.fd = fd;
  }

  /** Adds a line; false when it did not fit: then `write` must be awaited before the next `add`. */
  add(text: string): boolean {
    // At most 3 bytes of UTF-8 per UTF-16 code unit.
    if (this.used + text.length * 3 > this.buffer.length) {
      this.over = text;
      return false;
    }
    this.used += this.buffer.write(text, this.used, 'utf8');
    return true;
  }

  /**
   * Writes the buffer and makes room: a line that did not fit goes into the emptied buffer (or
   * straight to the file when larger than the buffer), so it may still be buffered; `flush` writes
   * everything.
   */
  async write(): Promise<void> {
    await this.writeBuffer();
    const over = this.over;
    this.over = undefined;
    if (over === undefined) return;
    if (this.add(over)) return;
    this.over = undefined;
    const data = Buffer.from(over, 'utf8');
    await this.writeAll(data, data.length);
  }

  /** Writes everything added, a line that did not fit included. */
  async flush(): Promise<void> {
    await this.write();
    if (this.used > 0) await this.writeBuffer();
  }

  private async writeBuffer(): Promise<void> {
    await this.writeAll(this.buffer, this.used);
    this.used = 0;
  }

  private async writeAll(data: Buffer, length: number): Promise<void> {
    for (let at = 0; at < length; ) {
      const { bytesWritten } = await this.fd.write(data, at, length - at);
      at += bytesWritten;
    }
    this.bytes += length;
  }
}

/**
 * The text of the put line of an object held as its spec (`JSON.stringify(putLine(id, stored))` with
 * the version made again from the id), written without making that version, the stored object and
 * the line as objects first: only the spec is serialised, the rest is joined from strings serialised
 * once per creation time and file, kind and namespace (a snapshot writes a line per object; a first
 * start's is the state log's largest main-thread work, docs/benchmarks.md, ninth round).
 */
export class PutText {
  private created: string | undefined;
  private file: string | undefined;
  private about = '';
  private kind: string | undefined;
  private kindText = '';
  private namespace: string | undefined;
  private namespaceText = '';

  line(
    id: string,
    created: string,
    file: string | undefined,
    spec: unknown,
    generation: number,
    note: string | undefined,
  ): string {
    const slash = id.indexOf('/');
    return this.lineOf(
      id.slice(0, slash),
      id.slice(slash + 1),
      JSON.stringify(id),
      created,
      file,
      spec,
      generation,
      note,
    );
  }

  /**
   * `line` of a record set by its key (`namespace/name`, as a record table holds it): its id is not
   * made to be taken apart again (`StateStoreOptions.recordTable`).
   */
  recordSetLine(
    key: string,
    created: string,
    file: string | undefined,
    spec: unknown,
    generation: number,
  ): string {
    // `JSON.stringify` of the id: the kind and its slash need no escape.
    const idText = `"${RECORD_SET_PREFIX}${JSON.stringify(key).slice(1)}`;
    return this.lineOf('DNSRecordSet', key, idText, created, file, spec, generation, undefined);
  }

  private lineOf(
    kind: string,
    key: string,
    idText: string,
    created: string,
    file: string | undefined,
    spec: unknown,
    generation: number,
    note: string | undefined,
  ): string {
    if (created !== this.created || file !== this.file || this.about === '') {
      this.created = created;
      this.file = file;
      this.about = `,"created":${JSON.stringify(created)}${file !== undefined ? `,"file":${JSON.stringify(file)}` : ''}`;
    }
    if (kind !== this.kind) {
      this.kind = kind;
      this.kindText = `,"resource":{"apiVersion":${JSON.stringify(API_VERSION)},"kind":${JSON.stringify(kind)},"metadata":{"name":`;
    }
    const inner = key.indexOf('/');
    let metadata: string;
    if (inner < 0) metadata = `${JSON.stringify(key)}}`;
    else {
      const namespace = key.slice(0, inner);
      if (namespace !== this.namespace) {
        this.namespace = namespace;
        this.namespaceText = `,"namespace":${JSON.stringify(namespace)}}`;
      }
      metadata = JSON.stringify(key.slice(inner + 1)) + this.namespaceText;
    }
    return `{"t":"put","id":${idText}${this.about}${this.kindText}${metadata},"spec":${JSON.stringify(spec)}}${generation > 1 ? `,"generation":${generation}` : ''}${note !== undefined ? `,"note":${JSON.stringify(note)}` : ''}}\n`;
  }
}

function numbered(names: readonly string[], pattern: RegExp): number[] {
  const out: number[] = [];
  for (const name of names) {
    const m = pattern.exec(name);
    if (m) out.push(Number(m[1]));
  }
  return out.sort((a, b) => a - b);
}

/** Makes a folder's entries (a created or renamed file) durable. */
async function syncDir(dir: string): Promise<void> {
  const fd = await open(dir, 'r');
  try {
    await fd.sync();
  } finally {
    await fd.close();
  }
}

/** The RRset count recorded with a serial (change safety after a restart), when well-formed. */
function rrsetsField(s: { rrsets?: unknown }): { rrsets?: number } {
  return Number.isInteger(s.rrsets) && (s.rrsets as number) >= 0 ? { rrsets: s.rrsets as number } : {};
}

/** The signing time and settings recorded with a signed zone's serial (ADR 0021), when present and well-formed. */
function signingFields(s: { signedAt?: unknown; signing?: unknown }): {
  signedAt?: number;
  signing?: string;
} {
  return {
    ...(Number.isInteger(s.signedAt) ? { signedAt: s.signedAt as number } : {}),
    ...(typeof s.signing === 'string' ? { signing: s.signing } : {}),
  };
}
