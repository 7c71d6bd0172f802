/**
 * Which files define each object (by id). Nearly every object is defined by one file, so that file
 * is held as the map's value itself; a Set only while several files define the same object (then all
 * but the first in path order are reported as duplicates). A Set per object cost about 150 bytes of
 * heap for each of them (docs/benchmarks.md, memory budget).
 */
export class Definers {
  private readonly byId = new Map<string, string | Set<string>>();

  get size(): number {
    return this.byId.size;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  add(id: string, file: string): void {
    const held = this.byId.get(id);
    if (held === undefined) this.byId.set(id, file);
    else if (typeof held === 'string') {
      if (held !== file) this.byId.set(id, new Set([held, file]));
    } else held.add(file);
  }

  /** Forgets that `file` defines `id`; false when it was not recorded. */
  remove(id: string, file: string): boolean {
    const held = this.byId.get(id);
    if (held === undefined) return false;
    if (typeof held === 'string') {
      if (held !== file) return false;
      this.byId.delete(id);
      return true;
    }
    const had = held.delete(file);
    if (held.size === 1) this.byId.set(id, held.values().next().value!);
    else if (held.size === 0) this.byId.delete(id);
    return had;
  }

  /** The files that define `id`, in path order (empty when none). */
  files(id: string): string[] {
    const held = this.byId.get(id);
    if (held === undefined) return [];
    return typeof held === 'string' ? [held] : [...held].sort();
  }

  /** Objects defined by more than one file, each with its files in path order. */
  *duplicates(): Generator<[string, string[]]> {
    for (const [id, held] of this.byId) if (typeof held !== 'string') yield [id, [...held].sort()];
  }
}
