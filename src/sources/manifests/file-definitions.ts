/**
 * What one manifest file defines, by object id, in the order the definitions were set: a `Map`
 * while the file is being read and applied, then packed (`pack`) into arrays. Once applied, nearly
 * every value is a number (the document of a definition whose version is the state's), and a map
 * entry per object (about 30 bytes at a thousand objects per file) is then an array slot for the id
 * (8 bytes, the id string shared) and its value in an `Int32Array` (4 bytes), about 12 bytes
 * (docs/benchmarks.md, ninth round).
 *
 * Packed, a lookup is a binary search over the ids in sorted order, an index (4 bytes per id) made
 * at the first lookup: most files are only walked until their next read (a file is looked up in when
 * another file defines the same object), and sorting every file's ids at a folder's first load was
 * main-thread work before the first answer. Setting a value for an id it holds keeps it packed (a
 * value that is not a 32-bit integer is kept in a map by its place); setting a new id makes it a
 * `Map` again (in the same order), until the next `pack`. Nothing is ever deleted (a file's next read
 * makes a new one). Unlike a `Map`, a packed one's walk does not visit an id set during the walk:
 * callers do not set ids while they walk one.
 *
 * A file whose ids are known to be distinct as it is read (`listed`: a file read for the first time
 * whose documents' ids were all found distinct where it was parsed) starts as the packed arrays with
 * its values in a plain array beside them instead of a `Map` (no insertion per object, and no walk
 * to pack it): `served` and `pack` then turn the values into the `Int32Array` in place
 * (docs/benchmarks.md, eighteenth round). It answers as the packed form does meanwhile.
 */
export class FileDefinitions<T extends object> {
  /** The definitions while not packed. */
  private map: Map<string, T | number> | undefined = new Map();
  /** Packed: the ids in the order they were set. */
  private ids: string[] = [];
  /** Packed: each id's value (by place) when a 32-bit integer. */
  private ints: Int32Array = EMPTY;
  /** Packed: the places in sorted id order, made at the first lookup. */
  private order: Int32Array | undefined;
  /** Packed: the values (by place) that are not 32-bit integers. */
  private others: Map<number, T | number> | undefined;
  /** Listed (`listed`, not packed yet): each id's value by place, instead of `ints` and `others`. */
  private values: (T | number)[] | undefined;

  /**
   * The definitions of `ids`, which must be pairwise distinct, each with its value at the same place,
   * in that order: as `set` of each in turn would make them, without a `Map` when there are at least
   * `packMin` of them (`values` is kept until packed; the ids are copied once into an array of exactly
   * their number, as `pack` makes it: an array grown by `push` keeps up to half as many slots more).
   */
  static listed<T extends object>(ids: string[], values: (T | number)[]): FileDefinitions<T> {
    const d = new FileDefinitions<T>();
    if (ids.length < FileDefinitions.packMin) {
      const map = d.map!;
      for (let place = 0; place < ids.length; place++) map.set(ids[place]!, values[place]!);
      return d;
    }
    d.map = undefined;
    d.ids = ids.slice();
    d.values = values;
    return d;
  }

  /**
   * Fewest definitions packed: a smaller file stays a `Map` (the arrays' own headers cost more).
   * Tests lower it to run the manifest source's tests with every file packed.
   */
  static packMin = 32;

  get size(): number {
    return this.map !== undefined ? this.map.size : this.ids.length;
  }

  /** Whether the definitions are packed (for tests and the heap figures). */
  get packed(): boolean {
    return this.map === undefined && this.values === undefined;
  }

  /** Whether the definitions are listed (`listed`), not packed yet (for tests). */
  get listedNow(): boolean {
    return this.values !== undefined;
  }

  /** Whether a packed file's sorted index was made (at its first lookup; for tests). */
  get indexed(): boolean {
    return this.order !== undefined;
  }

  get(id: string): T | number | undefined {
    if (this.map !== undefined) return this.map.get(id);
    const place = this.placeOf(id);
    return place < 0 ? undefined : this.valueAt(place);
  }

  has(id: string): boolean {
    return this.map !== undefined ? this.map.has(id) : this.placeOf(id) >= 0;
  }

  set(id: string, value: T | number): this {
    if (this.map !== undefined) {
      this.map.set(id, value);
      return this;
    }
    const place = this.placeOf(id);
    if (place < 0) {
      this.unpack().set(id, value);
      return this;
    }
    if (this.values !== undefined) this.values[place] = value;
    else if (isInt32(value)) {
      this.ints[place] = value;
      this.others?.delete(place);
    } else {
      this.others ??= new Map();
      this.others.set(place, value);
    }
    return this;
  }

  keys(): IterableIterator<string> {
    return this.map !== undefined ? this.map.keys() : this.ids.values();
  }

  /** The ids and values in the order they were set (the map's own walk while not packed). */
  entries(): IterableIterator<[string, T | number]> {
    return this.map !== undefined ? this.map.entries() : this[Symbol.iterator]();
  }

  /**
   * Every value becomes `to(value)` (a 32-bit integer), and the definitions are packed as `pack`
   * packs them: one walk, instead of a `set` of each id and then `pack`.
   */
  served(to: (value: T | number) => number): void {
    const map = this.map;
    if (this.values !== undefined) {
      this.packList(to);
      return;
    }
    if (map === undefined || map.size < FileDefinitions.packMin) {
      for (const [id, value] of [...this]) this.set(id, to(value));
      this.pack();
      return;
    }
    this.packFrom(map, to);
  }

  /**
   * Calls `fn` with each value and id in the order they were set (`Map.forEach`'s order), no pair
   * made per definition; as with a walk, callers set no id meanwhile.
   */
  forEach(fn: (value: T | number, id: string) => void): void {
    if (this.map !== undefined) {
      this.map.forEach(fn);
      return;
    }
    const ids = this.ids;
    for (let place = 0; place < ids.length; place++) fn(this.valueAt(place, ids), ids[place]!);
  }

  *[Symbol.iterator](): IterableIterator<[string, T | number]> {
    if (this.map !== undefined) {
      yield* this.map;
      return;
    }
    // The arrays are replaced, never changed in size, while packed: a `set` of a new id during the
    // walk leaves this walk on the ones it started with.
    const ids = this.ids;
    for (let place = 0; place < ids.length; place++) yield [ids[place]!, this.valueAt(place, ids)];
  }

  /** Packs the definitions into arrays (nothing when packed already, or fewer than `packMin`). */
  pack(): void {
    if (this.values !== undefined) {
      this.packList();
      return;
    }
    const map = this.map;
    if (map === undefined || map.size < FileDefinitions.packMin) return;
    this.packFrom(map);
  }

  /** The listed values (each made `to(value)` when given) into `ints` and `others`: the ids and their index stay. */
  private packList(to?: (value: T | number) => number): void {
    const values = this.values!;
    const n = values.length;
    const ints = new Int32Array(n);
    let others: Map<number, T | number> | undefined;
    for (let place = 0; place < n; place++) {
      const stored = values[place]!;
      const value = to === undefined ? stored : to(stored);
      if (isInt32(value)) ints[place] = value;
      else {
        others ??= new Map();
        others.set(place, value);
      }
    }
    this.ints = ints;
    this.others = others;
    this.values = undefined;
  }

  /** Moves the map's ids and values (each made `to(value)` when given) into the packed arrays. */
  private packFrom(map: Map<string, T | number>, to?: (value: T | number) => number): void {
    const n = map.size;
    const ids = new Array<string>(n);
    const ints = new Int32Array(n);
    let others: Map<number, T | number> | undefined;
    let place = 0;
    for (const [id, stored] of map) {
      ids[place] = id;
      const value = to === undefined ? stored : to(stored);
      if (isInt32(value)) ints[place] = value;
      else {
        others ??= new Map();
        others.set(place, value);
      }
      place++;
    }
    this.ids = ids;
    this.ints = ints;
    this.order = undefined;
    this.others = others;
    this.map = undefined;
  }

  private unpack(): Map<string, T | number> {
    const map = new Map<string, T | number>();
    const ids = this.ids;
    for (let place = 0; place < ids.length; place++) map.set(ids[place]!, this.valueAt(place));
    this.map = map;
    this.ids = [];
    this.ints = EMPTY;
    this.order = undefined;
    this.others = undefined;
    this.values = undefined;
    return map;
  }

  private valueAt(place: number, ids: string[] = this.ids): T | number {
    // A walk that outlived an unpack reads the values of the map that replaced the arrays.
    if (ids !== this.ids) return this.get(ids[place]!)!;
    const values = this.values;
    if (values !== undefined) return values[place]!;
    return this.others?.get(place) ?? this.ints[place]!;
  }

  /** The id's place in `ids`, or -1. */
  private placeOf(id: string): number {
    const ids = this.ids;
    const order = this.order ?? this.sortOrder();
    let low = 0;
    let high = ids.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const place = order[middle]!;
      const c = compare(ids[place]!, id);
      if (c === 0) return place;
      if (c < 0) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  private sortOrder(): Int32Array {
    const ids = this.ids;
    const order = Int32Array.from(
      Array.from({ length: ids.length }, (_, i) => i).sort((a, b) => compare(ids[a]!, ids[b]!)),
    );
    this.order = order;
    return order;
  }
}

const EMPTY = new Int32Array(0);

function isInt32(value: unknown): value is number {
  return typeof value === 'number' && (value | 0) === value && !Object.is(value, -0);
}

/** Code-unit order (what `sort()` gives strings). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
