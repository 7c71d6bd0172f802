/**
 * Values that carry their own string key, found by key and iterated in the order they were added (a
 * value added again after its delete goes to the end), as a `Map` from the key to the value does,
 * for about half its memory: a `Map` keeps three fields per entry and grows by doubling (about 48
 * bytes per entry in the zone model, docs/benchmarks.md, seventh round), this keeps the values in
 * one list (8 bytes each) and their positions in an open-addressing index of 32-bit numbers at most
 * half full (8–16 bytes each, outside the V8 heap). The key is read from the value (`key`), so no
 * key is kept beside it. Deleted values leave a hole in the list until holes are as many as the
 * values, then the list is compacted and the index rebuilt. Iterate over a copy to change it while
 * iterating (`[...values()]`).
 */
export class KeyedList<V extends { readonly key: string }> {
  private list: (V | undefined)[] = [];
  /** Position in `list` per index slot: EMPTY, DELETED, or a position. */
  private index = new Int32Array(MIN_SLOTS).fill(EMPTY);
  /** Index slots not EMPTY (live and DELETED). */
  private taken = 0;
  private live = 0;

  get size(): number {
    return this.live;
  }

  get(key: string): V | undefined {
    const at = this.find(key);
    return at < 0 ? undefined : this.list[this.index[at]!];
  }

  has(key: string): boolean {
    return this.find(key) >= 0;
  }

  /** Adds `value` under its key at the end, or puts it in the place of the value with its key. */
  set(value: V): void {
    const at = this.find(value.key);
    if (at >= 0) {
      this.list[this.index[at]!] = value;
      return;
    }
    if ((this.taken + 1) * 2 > this.index.length) this.rebuild(this.live + 1);
    this.list.push(value);
    this.place(value.key, this.list.length - 1);
    this.live++;
  }

  delete(key: string): boolean {
    const at = this.find(key);
    if (at < 0) return false;
    this.list[this.index[at]!] = undefined;
    this.index[at] = DELETED;
    this.live--;
    const holes = this.list.length - this.live;
    if (holes > 16 && holes > this.live) this.rebuild(this.live);
    return true;
  }

  /** The values in the order they were added. */
  *values(): IterableIterator<V> {
    const list = this.list;
    for (let i = 0; i < list.length; i++) {
      const value = list[i];
      if (value !== undefined) yield value;
    }
  }

  /** `[key, value]` pairs, in the order the values were added (as a `Map` iterates). */
  *entries(): IterableIterator<[string, V]> {
    for (const value of this.values()) yield [value.key, value];
  }

  [Symbol.iterator](): IterableIterator<[string, V]> {
    return this.entries();
  }

  /**
   * Throws unless the list and the index agree: every live value found by its key at its position,
   * as many index slots in use as values, no key twice (for tests, e.g. the randomized model test).
   */
  check(): void {
    let live = 0;
    const keys = new Set<string>();
    for (let i = 0; i < this.list.length; i++) {
      const value = this.list[i];
      if (value === undefined) continue;
      live++;
      if (keys.has(value.key)) throw new Error(`KeyedList: key ${value.key} twice`);
      keys.add(value.key);
      const at = this.find(value.key);
      if (at < 0 || this.index[at] !== i) throw new Error(`KeyedList: ${value.key} not indexed at ${i}`);
    }
    if (live !== this.live) throw new Error(`KeyedList: ${live} values, size says ${this.live}`);
    let used = 0;
    let taken = 0;
    for (const slot of this.index) {
      if (slot !== EMPTY) taken++;
      if (slot >= 0) used++;
    }
    if (used !== this.live || taken !== this.taken)
      throw new Error(`KeyedList: index holds ${used} positions and ${taken} slots taken`);
    if (this.taken * 2 > this.index.length) throw new Error('KeyedList: index over half full');
  }

  /** The index slot holding `key`'s position, or -1. */
  private find(key: string): number {
    const index = this.index;
    const mask = index.length - 1;
    for (let i = hash(key) & mask; ; i = (i + 1) & mask) {
      const pos = index[i]!;
      if (pos === EMPTY) return -1;
      if (pos >= 0 && this.list[pos]!.key === key) return i;
    }
  }

  private place(key: string, pos: number): void {
    const index = this.index;
    const mask = index.length - 1;
    let i = hash(key) & mask;
    while (index[i] !== EMPTY) i = (i + 1) & mask;
    index[i] = pos;
    this.taken++;
  }

  /** Compacts the list (holes out, order kept) and rebuilds the index for `room` values. */
  private rebuild(room: number): void {
    const list: V[] = [];
    for (const value of this.list) if (value !== undefined) list.push(value);
    this.list = list;
    let slots = MIN_SLOTS;
    while (slots < room * 2) slots *= 2;
    // At most half full for `room` values: a rebuild for one more value than fits doubles it.
    this.index = new Int32Array(slots).fill(EMPTY);
    this.taken = 0;
    for (let i = 0; i < list.length; i++) this.place(list[i]!.key, i);
  }
}

const EMPTY = -1;
const DELETED = -2;
const MIN_SLOTS = 8;

/** FNV-1a over the key's UTF-16 code units. */
function hash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
