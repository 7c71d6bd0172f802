import type { ResourceKey } from './resource-key.ts';

/**
 * Who holds a record set's slot in a `RecordTable`. A slot stays assigned while any holder holds it,
 * so that one structure letting go of a record set (the catalog, when its deletion starts) keeps the
 * slot, and what the others hold there, for the others (what a backend programmed, the last status
 * written).
 */
export const Holder = {
  catalog: 1,
  feed: 2,
  programmed: 4,
  status: 8,
  /** The memory store, when it keeps its record sets in the table (`serve`). */
  store: 16,
  /** The folder's metrics: a record set's Ready condition, while they count it (`serve`). */
  metrics: 32,
  /**
   * The folder's state log, while it holds the record set (`serve` with a folder): its entry is kept
   * in a column of the table, not in a map of its own (docs/benchmarks.md, sixteenth round).
   */
  state: 64,
} as const;
export type Holder = (typeof Holder)[keyof typeof Holder];

interface Column {
  clear(slot: number): void;
}

/**
 * How long a column grows to when a slot lies beyond it: by half, as an array grows, so that slots
 * taken one at a time stay cheap; and a dense column (one that holds a value for nearly every record
 * set, as the catalog's and its feed's do) at least to the slots its table has given out
 * (`capacity`), so that the first look, which fills it for every record set at once, makes it once at
 * its size instead of growing it by half some 35 times over a million slots, each time a new array
 * and a copy (docs/benchmarks.md, fifteenth round). A sparse column (what was programmed into an
 * external backend, the statuses written) has no capacity: one value must not make it as long as
 * the whole table.
 */
function grownLength(slot: number, length: number, capacity: number): number {
  return Math.max(slot + 1, capacity, 16, length + (length >> 1));
}

/** A column of values per slot (a plain array, `undefined` where nothing is held). */
export class RefColumn<T> implements Column {
  private values: (T | undefined)[] = [];
  /** The slots the column's table has given out for a dense column (see `grownLength`), else none. */
  private readonly capacity: () => number;

  constructor(capacity: () => number = () => 0) {
    this.capacity = capacity;
  }

  get(slot: number): T | undefined {
    return this.values[slot];
  }

  /** The slots the column has room for (what it costs in memory, with 8 bytes a slot). */
  get length(): number {
    return this.values.length;
  }

  set(slot: number, value: T | undefined): void {
    const values = slot < this.values.length ? this.values : this.grow(slot);
    values[slot] = value;
  }

  clear(slot: number): void {
    if (slot < this.values.length) this.values[slot] = undefined;
  }

  /** Room for at least `length` slots, made at once (see `SlotLists.reserve`). */
  reserve(length: number): void {
    if (length > this.values.length) this.grow(length - 1);
  }

  private grow(slot: number): (T | undefined)[] {
    const before = this.values;
    // Filled whole before the values are copied in: the array stays packed, without holes.
    const grown = new Array<T | undefined>(grownLength(slot, before.length, this.capacity())).fill(undefined);
    for (let i = 0; i < before.length; i++) grown[i] = before[i];
    this.values = grown;
    return grown;
  }
}

/** A column of 32-bit integers per slot, -1 where nothing is held. */
export class Int32Column implements Column {
  private values = new Int32Array(0);
  private readonly capacity: () => number;

  constructor(capacity: () => number = () => 0) {
    this.capacity = capacity;
  }

  get(slot: number): number {
    return slot < this.values.length ? this.values[slot]! : -1;
  }

  /** The slots the column has room for (what it costs in memory, with 4 bytes a slot). */
  get length(): number {
    return this.values.length;
  }

  set(slot: number, value: number): void {
    if (slot >= this.values.length) this.grow(slot);
    this.values[slot] = value;
  }

  /** Room for at least `length` slots, made at once (see `SlotLists.reserve`). */
  reserve(length: number): void {
    if (length > this.values.length) this.grow(length - 1);
  }

  private grow(slot: number): void {
    const grown = new Int32Array(grownLength(slot, this.values.length, this.capacity())).fill(-1);
    grown.set(this.values);
    this.values = grown;
  }

  clear(slot: number): void {
    if (slot < this.values.length) this.values[slot] = -1;
  }
}

/**
 * One number per record set (by its `namespace/name` key), shared by the structures that keep
 * something per record set (the catalog, its feed, what was programmed, the last status written):
 * each keeps a column indexed by the number instead of a map of its own with its own copy of the key
 * (docs/benchmarks.md, memory budget). A number is assigned when the first holder takes the key and
 * freed, with every column's value at it cleared, when the last lets go; freed numbers are reused.
 */
export class RecordTable {
  private readonly slots = new Map<ResourceKey, number>();
  private readonly keys = new RefColumn<ResourceKey>();
  private holders = new Uint8Array(0);
  private readonly free: number[] = [];
  private next = 0;
  private readonly columns: Column[] = [];
  /** The columns each holder owns (cleared at a slot when that holder lets go of it), by holder bit. */
  private readonly owned = new Map<Holder, Column[]>();

  /** Record sets held by at least one holder. */
  get size(): number {
    return this.slots.size;
  }

  /**
   * A new column whose values are cleared when their slot is freed, and, when it belongs to a
   * `holder`, when that holder lets go of the slot: a holder never leaves a value behind for itself.
   * `dense`: it will hold a value for nearly every record set (see `grownLength`).
   */
  column<T>(holder?: Holder, dense = false): RefColumn<T> {
    return this.add(new RefColumn<T>(dense ? this.capacity : undefined), holder);
  }

  /** A new column of integers (-1 for none), cleared likewise. */
  int32Column(holder?: Holder, dense = false): Int32Column {
    return this.add(new Int32Column(dense ? this.capacity : undefined), holder);
  }

  /** The slots given out so far: a dense column's least length when it grows (`grownLength`). */
  private readonly capacity = (): number => this.next;

  private add<C extends Column>(column: C, holder: Holder | undefined): C {
    this.columns.push(column);
    if (holder !== undefined) {
      const mine = this.owned.get(holder);
      if (mine) mine.push(column);
      else this.owned.set(holder, [column]);
    }
    return column;
  }

  /** The key's slot, or -1 when no holder holds it. */
  slotOf(key: ResourceKey): number {
    const slot = this.slots.get(key);
    if (slot !== undefined) return slot;
    this.missed = key;
    return -1;
  }

  /**
   * The last key `slotOf` did not find, until a key is taken: `hold` of it right after (a new record
   * set, as the store and the catalog take it) does not look it up again.
   */
  private missed: ResourceKey | undefined;

  /** The key held at a slot (the table's one copy of it). */
  keyOf(slot: number): ResourceKey {
    return this.keys.get(slot)!;
  }

  /** Whether the holder holds the slot. */
  held(slot: number, holder: Holder): boolean {
    return slot >= 0 && slot < this.holders.length && (this.holders[slot]! & holder) !== 0;
  }

  /** The key's slot, assigned if no holder held it, now held by `holder` too. */
  hold(key: ResourceKey, holder: Holder): number {
    let slot = key === this.missed ? undefined : this.slots.get(key);
    if (slot === undefined) {
      this.missed = undefined;
      slot = this.free.pop() ?? this.next++;
      this.slots.set(key, slot);
      this.keys.set(slot, key);
      if (slot >= this.holders.length) {
        const grown = new Uint8Array(Math.max(slot + 1, 16, Math.floor(this.holders.length * 1.5)));
        grown.set(this.holders);
        this.holders = grown;
      }
    }
    this.holders[slot]! |= holder;
    return slot;
  }

  /** A slot some holder holds (`hold` returned it), now held by `holder` too: no look-up of its key. */
  holdSlot(slot: number, holder: Holder): number {
    if (!(slot >= 0 && slot < this.holders.length && this.holders[slot] !== 0))
      throw new RangeError(`record table: slot ${slot} is not held`);
    this.holders[slot]! |= holder;
    return slot;
  }

  /**
   * The holder lets go of the slot, and its own columns are cleared there; the last one to let go
   * frees it (and clears every column there).
   */
  release(slot: number, holder: Holder): void {
    if (!this.held(slot, holder)) return;
    for (const column of this.owned.get(holder) ?? []) column.clear(slot);
    const left = this.holders[slot]! & ~holder;
    this.holders[slot] = left;
    if (left !== 0) return;
    this.slots.delete(this.keys.get(slot)!);
    this.keys.clear(slot);
    for (const column of this.columns) column.clear(slot);
    this.free.push(slot);
  }

  /** Every held slot, in the order their keys were first taken (the map's own iterator: no generator). */
  entries(): IterableIterator<[ResourceKey, number]> {
    return this.slots.entries();
  }
}

/**
 * Slots linked in lists named by a string (a zone's key), each in at most one list, in the order they
 * joined it (as a `Set` keeps them), with two integer columns for the links instead of a `Set` entry
 * per member.
 */
export class SlotLists {
  private readonly lists = new Map<string, { name: string; first: number; last: number; size: number }>();
  private readonly listOf: RefColumn<{ name: string; first: number; last: number; size: number }>;
  private readonly prev: Int32Column;
  private readonly next: Int32Column;

  /**
   * Lists over `table`'s slots; unlink a slot (`move(slot, undefined)`) before its holder releases it.
   * `dense`: nearly every record set is in a list (see `grownLength`).
   */
  constructor(table: RecordTable, dense = false) {
    this.listOf = table.column(undefined, dense);
    this.prev = table.int32Column(undefined, dense);
    this.next = table.int32Column(undefined, dense);
  }

  /**
   * Room for slots below `length` in every column at once: for lists that are not dense but will
   * hold many slots in one go (a first look's record sets by zoneRef, when most name their zone),
   * instead of growing each column by half some 35 times over a million slots.
   */
  reserve(length: number): void {
    this.listOf.reserve(length);
    this.prev.reserve(length);
    this.next.reserve(length);
  }

  /** The list the slot is in, if any. */
  nameOf(slot: number): string | undefined {
    return this.listOf.get(slot)?.name;
  }

  /** Moves the slot to the end of list `name` (out of every list for `undefined`); a no-op when it is there. */
  move(slot: number, name: string | undefined): void {
    const from = this.listOf.get(slot);
    if (from?.name === name) return;
    if (from !== undefined) {
      const p = this.prev.get(slot);
      const n = this.next.get(slot);
      if (p >= 0) this.next.set(p, n);
      else from.first = n;
      if (n >= 0) this.prev.set(n, p);
      else from.last = p;
      from.size--;
      if (from.size === 0) this.lists.delete(from.name);
      this.prev.set(slot, -1);
      this.next.set(slot, -1);
      this.listOf.set(slot, undefined);
    }
    if (name === undefined) return;
    let to = this.lists.get(name);
    if (to === undefined) {
      to = { name, first: -1, last: -1, size: 0 };
      this.lists.set(name, to);
    }
    this.prev.set(slot, to.last);
    this.next.set(slot, -1);
    if (to.last >= 0) this.next.set(to.last, slot);
    else to.first = slot;
    to.last = slot;
    to.size++;
    this.listOf.set(slot, to);
  }

  /** The slots in list `name`, in the order they joined it (a copy: moving them is safe). */
  slots(name: string): number[] {
    const list = this.lists.get(name);
    const out: number[] = [];
    if (list === undefined) return out;
    for (let s = list.first; s >= 0; s = this.next.get(s)) out.push(s);
    return out;
  }
}
