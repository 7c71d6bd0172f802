/**
 * Where which files define an object can be kept with the object itself: the state store's entry
 * (`StateStore.tagOf` and `setTag`), in memory only.
 */
export interface DefinerSlots {
  /** The value kept with `id`, if the store holds `id`. */
  tagOf(id: string): unknown;
  /** Keeps `tag` with `id`; false when the store does not hold `id` (nothing kept). */
  setTag(id: string, tag: unknown): boolean;
}

type Held = string | Set<string>;

/**
 * Which files define each object (by id). Nearly every object is defined by one file, so that file
 * is held as the value itself; a Set only while several files define the same object (then all but
 * the first in path order are reported as duplicates). A Set per object cost about 150 bytes of
 * heap for each of them (docs/benchmarks.md, memory budget).
 *
 * With `slots` (the state store), the value of an object the state holds is kept in the state's
 * entry for it, not in a map of its own: a second map keyed by the same ids cost about 46 bytes per
 * record set. Objects the state does not hold yet (defined, not yet applied) are kept here.
 */
export class Definers {
  private readonly byId = new Map<string, Held>();
  /** Objects defined by several files. */
  private readonly several = new Set<string>();
  private count = 0;
  private readonly slots: DefinerSlots | undefined;

  constructor(slots?: DefinerSlots) {
    this.slots = slots;
  }

  /** How many objects at least one file defines. */
  get size(): number {
    return this.count;
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  add(id: string, file: string): void {
    const held = this.get(id);
    // What is held is passed on: `set` does not look it up again (two map lookups per object on a
    // folder's first load).
    if (held === undefined) this.set(id, file, false);
    else if (typeof held === 'string') {
      if (held !== file) this.set(id, new Set([held, file]), true);
    } else held.add(file);
  }

  /** Forgets that `file` defines `id`; false when it was not recorded. */
  remove(id: string, file: string): boolean {
    const held = this.get(id);
    if (held === undefined) return false;
    if (typeof held === 'string') {
      if (held !== file) return false;
      this.set(id, undefined, true);
      return true;
    }
    const had = held.delete(file);
    if (held.size === 1) this.set(id, held.values().next().value!, true);
    else if (held.size === 0) this.set(id, undefined, true);
    return had;
  }

  /** The files that define `id`, in path order (empty when none). */
  files(id: string): string[] {
    const held = this.get(id);
    if (held === undefined) return [];
    return typeof held === 'string' ? [held] : [...held].sort();
  }

  /** The first of the files that define `id` in path order, if any. */
  first(id: string): string | undefined {
    const held = this.get(id);
    if (held === undefined || typeof held === 'string') return held;
    return [...held].sort()[0];
  }

  /** Objects defined by more than one file, each with its files in path order. */
  *duplicates(): Generator<[string, string[]]> {
    for (const id of [...this.several]) {
      const held = this.get(id);
      if (held !== undefined && typeof held !== 'string') yield [id, [...held].sort()];
    }
  }

  /**
   * The state now holds `id` (or holds it no longer): its value moves into the state's entry. Called
   * after the state stored a new entry for it, which starts without the value.
   */
  settle(id: string): void {
    if (!this.slots) return;
    const held = this.byId.get(id);
    if (held !== undefined && this.slots.tagOf(id) === undefined && this.slots.setTag(id, held))
      this.byId.delete(id);
  }

  private get(id: string): Held | undefined {
    return (this.slots?.tagOf(id) as Held | undefined) ?? this.byId.get(id);
  }

  /** `before`: whether `get(id)` gives a value now, when the caller knows. */
  private set(id: string, held: Held | undefined, before: boolean = this.get(id) !== undefined): void {
    if (this.slots?.setTag(id, held)) this.byId.delete(id);
    else if (held === undefined) this.byId.delete(id);
    else this.byId.set(id, held);
    if (before !== (held !== undefined)) this.count += held === undefined ? -1 : 1;
    if (held !== undefined && typeof held !== 'string') this.several.add(id);
    else this.several.delete(id);
  }
}
