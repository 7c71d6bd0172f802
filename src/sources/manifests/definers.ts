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

/** No tag given: `Definers.get` asks the state. */
const UNASKED: unique symbol = Symbol('unasked');

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
  private byId = new Map<string, Held>();
  /** Objects defined by several files. */
  private readonly several = new Set<string>();
  private count = 0;
  private readonly slots: DefinerSlots | undefined;
  /** `slots`, unless the state is known to hold none of the objects (`stateHoldsNone`). */
  private asked: DefinerSlots | undefined;
  /**
   * The objects `addInState` found new on a fresh first load, in that order: the state's first ones,
   * held by it alone (their values are in its entries from the moment they are put, and not in
   * `byId`). Kept here, not read off the state: the state gives its record sets after its other
   * objects (`StateStore.objectIds`), not in the order they were put.
   */
  private inState: string[] = [];

  constructor(slots?: DefinerSlots) {
    this.slots = slots;
    this.asked = slots;
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
    if (held === undefined) this.set(id, file, held);
    else this.addTo(id, file, held);
  }

  /**
   * `add` for a fresh first load's file applied as it is read (ADR 0029, ADR 0031), with the state
   * holding none of the objects before this load: true when no file defined `id` before, which the
   * caller then puts into the state at once with `file` as its tag (`StateStore.putObject`), so that
   * which files define it is kept in its state entry from the start, never in a map of its own: one
   * map of every object fewer filled (a lookup and an insertion per object) and nothing to move later
   * (`settle`). False when `id` is defined already (its files are updated where they are kept).
   * Nothing is stored for a new id until the caller puts it; `add` must not be used for the same
   * ids meanwhile.
   */
  addInState(id: string, file: string): boolean {
    return this.addInStateKnowing(id, file, UNASKED);
  }

  /**
   * `addInState` with `tag`, what `tagOf(id)` of the state gives (undefined: none), asked by the
   * caller already (`StateStore.tagAt`, by the record set's slot it looked up once for the store and
   * the state too): the state is not asked again.
   */
  addInStateKnowing(id: string, file: string, tag: unknown): boolean {
    if (!this.slots) throw new Error('Definers.addInState needs the state (slots)');
    const held = this.known(id, tag);
    if (held !== undefined) {
      this.addTo(id, file, held);
      return false;
    }
    this.count++;
    this.inState.push(id);
    // The state holds objects now: a later definition of the same id is found there.
    this.asked = this.slots;
    return true;
  }

  /**
   * Undoes `addInState` for the objects the caller is about to take out of the state (the first ones
   * it put, `ids` in that order): their values move into this map before them, as `add` would have
   * kept them. Call it before the state forgets them.
   */
  leaveState(ids: readonly string[]): void {
    if (!this.slots || ids.length === 0) return;
    const byId = new Map<string, Held>();
    for (const id of ids) {
      const held = this.slots.tagOf(id) as Held | undefined;
      if (held !== undefined) byId.set(id, held);
    }
    for (const [id, held] of this.byId) byId.set(id, held);
    this.byId = byId;
    this.inState = this.inState.slice(ids.length);
    this.settled = -1;
  }

  private addTo(id: string, file: string, held: Held): void {
    if (typeof held === 'string') {
      if (held !== file) this.set(id, new Set([held, file]), held);
    } else held.add(file);
  }

  /** Forgets that `file` defines `id`; false when it was not recorded. */
  remove(id: string, file: string): boolean {
    const held = this.get(id);
    if (held === undefined) return false;
    if (typeof held === 'string') {
      if (held !== file) return false;
      this.set(id, undefined, held);
      return true;
    }
    const had = held.delete(file);
    if (held.size === 1) this.set(id, held.values().next().value!, held);
    else if (held.size === 0) this.set(id, undefined, held);
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

  /**
   * `first` for objects asked about in the order they were first defined (a folder's first load
   * applies them so): read off a walk of the values kept here while the ids come in its order, looked
   * up otherwise. For a first load's every object, a lookup in this map of every object is saved.
   * Nothing may be defined or forgotten while the returned function is used.
   */
  firstInOrder(): (id: string) => string | undefined {
    // Objects new to a fresh first load kept in the state (`addInState`) are not in this walk:
    // callers skip them.
    const walk = this.byId.entries();
    let next = walk.next();
    return (id) => {
      if (next.done || next.value[0] !== id) return this.first(id);
      const held = next.value[1];
      next = walk.next();
      return typeof held === 'string' ? held : [...held].sort()[0];
    };
  }

  /**
   * The ids of the objects whose values are kept here (not in the state's entries), in the order
   * they were first defined, after those `addInState` kept in the state (its first ones): on a
   * folder's first load into a state that holds no object, every object defined
   * (`stateHoldsNone`). A view: it changes as they do.
   */
  definedIds(): Iterable<string> & { has(id: string): boolean } {
    const byId = this.byId;
    return {
      [Symbol.iterator]: () => (this.inState.length > 0 ? this.inStateThen(byId) : byId.keys()),
      has: (id) => byId.has(id) || (this.inState.length > 0 && this.slots!.tagOf(id) !== undefined),
    };
  }

  /** The `inState` ids, then `byId`'s. */
  private *inStateThen(byId: Map<string, Held>): Generator<string> {
    yield* this.inState;
    yield* byId.keys();
  }

  /**
   * `settle` object by object, for objects the state has just stored in the order they were first
   * defined (a folder's first load applies them so): the value kept here goes into the state's entry
   * of `id` right after the state stored it, while that entry is still in the cache, instead of in
   * a second walk of every object; `settle` then only drops this map when every value went so.
   * Read off a walk of this map (an id out of its order is left to `settle`). Nothing may be defined
   * or forgotten while the returned function is used (if something is, `settle` moves them all).
   */
  settleInOrder(): (id: string) => void {
    if (!this.slots) return () => {};
    const slots = this.slots;
    const walk = this.byId.entries();
    let next = walk.next();
    this.settled = 0;
    return (id) => {
      if (next.done || next.value[0] !== id) return;
      // Counted only while no value changed (`set` sets -1).
      if (slots.setTag(id, next.value[1]) && this.settled >= 0) this.settled++;
      next = walk.next();
    };
  }

  /** Values `settleInOrder` moved since it was called; -1 when one kept here changed since. */
  private settled = -1;

  /** Objects defined by more than one file, each with its files in path order. */
  *duplicates(): Generator<[string, string[]]> {
    for (const id of [...this.several]) {
      const held = this.get(id);
      if (held !== undefined && typeof held !== 'string') yield [id, [...held].sort()];
    }
  }

  /**
   * Values kept here of objects the state holds now move into the state's entries (whatever `byId`
   * holds, the state's tag for it is unset: see `get`). Called once the state stored new entries,
   * which start without the value: after a reload's objects are applied, all at once, not one by one
   * (a first load kept every object here, and a lookup and a deletion each in this map of every
   * object were taken off the folder's first load, docs/benchmarks.md, tenth round).
   */
  settle(): void {
    const settled = this.settled;
    this.settled = -1;
    // The state holds the objects `addInState` kept there as any other now.
    this.inState = [];
    if (!this.slots || this.byId.size === 0) return;
    // Every value moved already (`settleInOrder`), none changed since.
    if (settled === this.byId.size) {
      this.byId = new Map();
      return;
    }
    let left: Map<string, Held> | undefined;
    for (const [id, held] of this.byId) {
      if (this.slots.setTag(id, held)) continue;
      left ??= new Map();
      left.set(id, held);
    }
    if (left?.size !== this.byId.size) this.byId = left ?? new Map();
  }

  /**
   * While `on`, values are kept here and the state is not asked (`settle` moves them): for a
   * folder's first load into a state that holds no object, which it cannot gain before `apply`, so
   * asking it was two lookups per object that always missed.
   */
  stateHoldsNone(on: boolean): void {
    this.asked = on ? undefined : this.slots;
  }

  /**
   * An object's value is in one place: in `byId` only while the state does not keep it (whatever
   * `byId` holds, the state's tag for it is unset), so `byId` is asked first while it holds any, and
   * the state only when it does not know the object. `inById` says where `get` found it.
   */
  private get(id: string): Held | undefined {
    return this.known(id, UNASKED);
  }

  /** `get`, with the state's tag of `id` when its caller has it (else `UNASKED`: asked here). */
  private known(id: string, tag: unknown): Held | undefined {
    if (this.byId.size > 0) {
      const held = this.byId.get(id);
      this.inById = held !== undefined;
      if (held !== undefined) return held;
    } else this.inById = false;
    const asked = this.asked;
    if (asked === undefined) return undefined;
    return (tag !== UNASKED ? tag : asked.tagOf(id)) as Held | undefined;
  }

  /** Where the last `get` found its value: in `byId` (then the state keeps no tag for it). */
  private inById = false;

  /**
   * `before`: what `get(id)` gave just now (its `inById` still the last): the value is written where
   * it was found, without asking the state again, and `several` is touched only when it changes.
   */
  private set(id: string, held: Held | undefined, before: Held | undefined): void {
    this.settled = -1;
    // Found in the state's entry (or nowhere, and the state takes it): nothing here to delete. Found
    // nowhere (`before` undefined, the state asked when it holds any object), the state cannot take it.
    if (before === undefined || this.inById || !this.asked?.setTag(id, held)) {
      if (held === undefined) this.byId.delete(id);
      else this.byId.set(id, held);
    }
    if ((before !== undefined) !== (held !== undefined)) this.count += held === undefined ? -1 : 1;
    if (held !== undefined && typeof held !== 'string') this.several.add(id);
    else if (before !== undefined && typeof before !== 'string') this.several.delete(id);
  }
}
