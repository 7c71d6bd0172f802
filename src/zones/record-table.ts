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
 * A key's 32-bit hash under a table's `seed`: FNV-1a over the UTF-16 code units one at a time, each
 * step followed by a shift down (so that the high bits a multiplication makes reach the low bits the
 * buckets are chosen by), then MurmurHash3's finalizer. Seeded per table, so that keys chosen to
 * collide under one seed do not under another (see `RecordTable`'s look-ups). One unit (16 bits) a
 * step, not two packed in 32: a multiplication carries a difference in the top bit of its input to
 * the top bit of its output under any hash seed, so two units a step let keys differing in the top
 * bit of their second units (characters beyond U+7FFF) collide under every seed.
 */
export function keyHash(key: string, seed: number): number {
  let h = seed ^ 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    h ^= h >>> 15;
  }
  h ^= key.length;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** A seed for the key index from the platform's secure generator (not one a client could predict). */
function randomSeed(): number {
  return crypto.getRandomValues(new Int32Array(1))[0]!;
}

/** The fewest buckets of the key index (a power of two). */
const MIN_BUCKETS = 16;
/**
 * Buckets an insertion may probe before the index takes a new seed and places every key again: far
 * beyond what a random hash makes at the index's load (at most a half), so only keys chosen to
 * collide under the table's seed reach it (see `RecordTable.hold`).
 */
const LONG_PROBE = 128;

/**
 * The held slots in the order their keys were first taken: slot numbers at positions, -1 where the
 * slot was freed since. Compacted into a new one (`next`) when freed positions are more than half of
 * it; an iterator on this one carries its position over (`TableEntries`).
 */
interface Order {
  slots: Int32Array;
  length: number;
  /** What replaced this one when it was compacted (this one is then left as it was). */
  next: Order | undefined;
}

/**
 * The entries of a `RecordTable` in its order, read as they go, as a `Map`'s iterator reads them: a
 * key taken meanwhile comes (at the end), one freed before it came does not, and once it has said
 * done it stays done.
 */
class TableEntries implements IterableIterator<[ResourceKey, number]> {
  private order: Order;
  private at = 0;
  /** Said done: a key taken later does not come (a `Map`'s iterator, once done, stays done). */
  private finished = false;
  private readonly table: RecordTable;

  constructor(table: RecordTable, order: Order) {
    this.table = table;
    this.order = order;
  }

  next(): IteratorResult<[ResourceKey, number]> {
    if (this.finished) return { value: undefined, done: true };
    let order = this.order;
    while (order.next !== undefined) {
      // Compacted since: the position is the count of slots held before it in the old one.
      let at = 0;
      const old = order.slots;
      for (let i = 0; i < this.at; i++) if (old[i]! >= 0) at++;
      this.at = at;
      order = order.next;
      this.order = order;
    }
    while (this.at < order.length) {
      const slot = order.slots[this.at++]!;
      if (slot >= 0) return { value: [this.table.keyOf(slot), slot], done: false };
    }
    this.finished = true;
    return { value: undefined, done: true };
  }

  [Symbol.iterator](): IterableIterator<[ResourceKey, number]> {
    return this;
  }
}

/**
 * One number per record set (by its `namespace/name` key), shared by the structures that keep
 * something per record set (the catalog, its feed, what was programmed, the last status written):
 * each keeps a column indexed by the number instead of a map of its own with its own copy of the key
 * (docs/benchmarks.md, memory budget). A number is assigned when the first holder takes the key and
 * freed, with every column's value at it cleared, when the last lets go; freed numbers are reused.
 *
 * The keys are found by an index of the table's own (docs/benchmarks.md, seventeenth round): open
 * addressing with linear probing in one `Int32Array`, each bucket the slot (plus one; 0 for none)
 * beside its key's hash (`keyHash`, seeded at random per table), so that a look-up of a key the
 * table does not hold (each new record set's first) usually reads one cache line and no key string;
 * a key string is compared only where the hashes are equal. The index grows by doubling from the
 * hashes in its buckets, without reading a key; a key is taken out by shifting the buckets after it
 * back (no tombstones). An insertion that probes more than `LONG_PROBE` buckets (keys chosen to
 * collide under this table's seed) makes the index take a new seed and place every key again.
 */
export class RecordTable {
  /** Buckets: `[slot + 1, hash]` pairs, a power of two of them, at most half of them used. */
  private buckets = new Int32Array(2 * MIN_BUCKETS);
  private mask = MIN_BUCKETS - 1;
  private seed: number;
  private count = 0;
  /** Insertions left before a long probe may make the index take a new seed again. */
  private reseedAfter = 0;
  /** How many new seeds the index took (`reseed`). */
  private reseeds = 0;
  private order: Order = { slots: new Int32Array(16), length: 0, next: undefined };
  /** Each held slot's position in `order`. */
  private orderAt = new Int32Array(0);
  private readonly keys = new RefColumn<ResourceKey>();
  private holders = new Uint8Array(0);
  private readonly free: number[] = [];
  private next = 0;
  private readonly columns: Column[] = [];
  /** The columns each holder owns (cleared at a slot when that holder lets go of it), by holder bit. */
  private readonly owned = new Map<Holder, Column[]>();

  /** Where the index's next seeds come from (`reseed`). */
  private readonly seeds: () => number;

  /**
   * `seed`: the key index's first seed, random when not given; `seeds`, where its next ones come from
   * (tests: keys that collide under every seed it takes).
   */
  constructor(seed: number = randomSeed(), seeds: () => number = randomSeed) {
    this.seed = seed;
    this.seeds = seeds;
  }

  /** Record sets held by at least one holder. */
  get size(): number {
    return this.count;
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
    const hash = keyHash(key, this.seed);
    const buckets = this.buckets;
    const mask = this.mask;
    for (let b = hash & mask; ; b = (b + 1) & mask) {
      const held = buckets[2 * b]!;
      if (held === 0) {
        this.missed = key;
        this.missedHash = hash;
        this.missedBucket = b;
        return -1;
      }
      if (buckets[2 * b + 1] === hash && this.keys.get(held - 1) === key) return held - 1;
    }
  }

  /**
   * The last key `slotOf` did not find, with its hash and the empty bucket its probe ended at, until
   * the index changes: `hold` of it right after (a new record set, as the store and the catalog take
   * it) does not look it up again.
   */
  private missed: ResourceKey | undefined;
  private missedHash = 0;
  private missedBucket = 0;

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
    let slot = key === this.missed ? -1 : this.slotOf(key);
    if (slot < 0) {
      const hash = this.missedHash;
      const bucket = this.missedBucket;
      this.missed = undefined;
      slot = this.free.pop() ?? this.next++;
      this.keys.set(slot, key);
      this.count++;
      if (2 * this.count > this.mask + 1) {
        this.grow();
        this.place(slot, hash);
      } else {
        this.buckets[2 * bucket] = slot + 1;
        this.buckets[2 * bucket + 1] = hash;
        if (((bucket - hash) & this.mask) > LONG_PROBE && this.reseedAfter <= 0) this.reseed();
      }
      this.reseedAfter--;
      if (slot >= this.holders.length) {
        const grown = new Uint8Array(Math.max(slot + 1, 16, Math.floor(this.holders.length * 1.5)));
        grown.set(this.holders);
        this.holders = grown;
      }
      this.append(slot);
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
    this.unindex(slot);
    this.keys.clear(slot);
    for (const column of this.columns) column.clear(slot);
    this.free.push(slot);
  }

  /** Every held slot, in the order their keys were first taken (read as it goes, as a `Map`'s iterator). */
  entries(): IterableIterator<[ResourceKey, number]> {
    return new TableEntries(this, this.order);
  }

  /** How many times the index took a new seed (tests: keys chosen to collide). */
  get reseedCount(): number {
    return this.reseeds;
  }

  /** The longest run of used buckets in the index (tests: what a miss may probe at worst). */
  longestRun(): number {
    let longest = 0;
    let run = 0;
    const buckets = this.buckets;
    // Twice round: a run may wrap past the last bucket.
    for (let i = 0; i < 2 * (this.mask + 1); i++) {
      run = buckets[2 * (i & this.mask)] === 0 ? 0 : run + 1;
      if (run > longest) longest = Math.min(run, this.mask + 1);
    }
    return longest;
  }

  /** Puts a slot whose key hashes to `hash` into the first empty bucket from its own. */
  private place(slot: number, hash: number): void {
    const buckets = this.buckets;
    const mask = this.mask;
    let b = hash & mask;
    while (buckets[2 * b] !== 0) b = (b + 1) & mask;
    buckets[2 * b] = slot + 1;
    buckets[2 * b + 1] = hash;
  }

  /** Twice the buckets, each slot placed again by the hash beside it (no key is read). */
  private grow(): void {
    const old = this.buckets;
    this.buckets = new Int32Array(2 * old.length);
    this.mask = old.length - 1;
    for (let i = 0; i < old.length; i += 2) if (old[i] !== 0) this.place(old[i]! - 1, old[i + 1]!);
  }

  /**
   * A new seed, every key hashed again under it and placed: keys that collided under the old seed
   * (chosen to) are spread. Not again before as many insertions as half the buckets (at least the
   * keys held), so that the rehashing, which reads every bucket, stays a constant cost per insertion
   * however many keys were taken out since the index grew.
   */
  private reseed(): void {
    this.seed = this.seeds();
    this.reseedAfter = (this.mask + 1) >> 1;
    this.reseeds++;
    const old = this.buckets;
    this.buckets = new Int32Array(old.length);
    for (let i = 0; i < old.length; i += 2) {
      if (old[i] === 0) continue;
      const slot = old[i]! - 1;
      this.place(slot, keyHash(this.keys.get(slot)!, this.seed));
    }
  }

  /** Takes a freed slot's bucket out, shifting back those after it that may move (no tombstone). */
  private unindex(slot: number): void {
    this.missed = undefined;
    const buckets = this.buckets;
    const mask = this.mask;
    let hole = keyHash(this.keys.get(slot)!, this.seed) & mask;
    while (buckets[2 * hole] !== slot + 1) hole = (hole + 1) & mask;
    for (let b = (hole + 1) & mask; buckets[2 * b] !== 0; b = (b + 1) & mask) {
      const home = buckets[2 * b + 1]! & mask;
      // The entry at b may move back to the hole unless its home lies after the hole, up to b.
      if (((b - home) & mask) >= ((b - hole) & mask)) {
        buckets[2 * hole] = buckets[2 * b]!;
        buckets[2 * hole + 1] = buckets[2 * b + 1]!;
        hole = b;
      }
    }
    buckets[2 * hole] = 0;
    buckets[2 * hole + 1] = 0;
    this.count--;
    // Out of the order: its position marked freed, the order compacted when most of it is.
    const order = this.order;
    order.slots[this.orderAt[slot]!] = -1;
  }

  /** Appends a newly taken slot to the order (compacting it first when more than half is freed). */
  private append(slot: number): void {
    let order = this.order;
    if (order.length === order.slots.length) {
      if (2 * this.count < order.length) {
        // Compacted into a new order; iterators on the old one carry their position over.
        const slots = new Int32Array(Math.max(16, 2 * this.count));
        let n = 0;
        for (let i = 0; i < order.length; i++) {
          const s = order.slots[i]!;
          if (s >= 0) {
            this.orderAt[s] = n;
            slots[n++] = s;
          }
        }
        const compacted: Order = { slots, length: n, next: undefined };
        order.next = compacted;
        this.order = order = compacted;
      } else {
        const slots = new Int32Array(Math.max(16, order.length + (order.length >> 1)));
        slots.set(order.slots);
        order.slots = slots;
      }
    }
    if (slot >= this.orderAt.length) {
      const grown = new Int32Array(Math.max(slot + 1, 16, Math.floor(this.orderAt.length * 1.5)));
      grown.set(this.orderAt);
      this.orderAt = grown;
    }
    this.orderAt[slot] = order.length;
    order.slots[order.length++] = slot;
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
