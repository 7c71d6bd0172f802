import { isKind, KINDS, type Kind, type Resource } from '../../api/index.ts';
import type { MemoryStore } from '../../control/memory-store.ts';
import type { ResourceStore } from '../../control/resource-store.ts';
import type { Registry } from '../../metrics/registry.ts';
import type { Int32Column, RecordTable } from '../../zones/record-table.ts';
import type { ManifestProblem, ManifestSource } from './manifest-source.ts';

const READINESS = ['true', 'false', 'unknown'] as const;
type Readiness = (typeof READINESS)[number];
type Known = Exclude<Readiness, 'unknown'>;

function readiness(object: Resource): Readiness {
  const ready = object.status?.conditions?.find((c) => c.type === 'Ready');
  return ready?.status === 'True' ? 'true' : ready?.status === 'False' ? 'false' : 'unknown';
}

/**
 * The folder source's metrics:
 * - `zonekeeper_resources{kind,ready}`: objects by kind and `Ready` condition (`true`, `false`,
 *   `unknown` before the first reconcile), counted as store events come (no walk over every object
 *   at scrape time); an object kept at its last valid version counts as not ready, as its status says;
 * - `zonekeeper_manifest_problems`: problems found at the last reload;
 * - `zonekeeper_manifest_folder_readable`: 1 when the manifests folder can be read, else 0.
 */
export function registerSourceMetrics(
  registry: Registry,
  store: ResourceStore & Pick<MemoryStore, 'count'>,
  source: ManifestSource,
  /** The record-set table `store` keeps its record sets in (`MemoryStore`'s `recordSets`), if any. */
  recordSets?: RecordTable,
): void {
  // Per kind, the objects whose Ready condition is true or false; an object of the store not held
  // here is unknown, so the unknown ones are the store's count less the others. A first load (a
  // million objects without a status) then adds nothing here: an entry per object, and a lookup and
  // an insertion per store event, waited for the first status written (docs/benchmarks.md, eighth
  // round). Record sets kept in `recordSets` are held in a column of it by their slot, not in a map
  // with its own copy of each key (about 80 bytes per record set, docs/benchmarks.md, ninth round).
  const state = new Map<string, Held>();
  const stateOf = (kind: string) => {
    let m = state.get(kind);
    if (!m) {
      m = kind === 'DNSRecordSet' && recordSets ? new TableReadiness(recordSets) : new MapReadiness();
      state.set(kind, m);
    }
    return m;
  };
  /** Per kind, how many objects are Ready true and false (`state`'s entries counted). */
  const counts = new Map<string, [number, number]>();
  const bump = (kind: string, r: Known, by: number) => {
    let c = counts.get(kind);
    if (!c) {
      c = [0, 0];
      counts.set(kind, c);
    }
    c[r === 'true' ? 0 : 1]! += by;
  };
  const track = (kind: Kind, key: string, object: Resource | undefined, deleted?: Resource) => {
    const held = stateOf(kind);
    const now = object === undefined ? 'unknown' : readiness(object);
    // A deleted record set whose slot the store let go of first (its column cleared) is counted out
    // by its last version's readiness; anything else by what was tracked from its events only (a
    // delete event carrying a status never delivered before must not take from a count).
    let before = held.get(key);
    if (before === undefined && deleted !== undefined && held.mayHaveLost(key)) {
      const last = readiness(deleted);
      if (last !== 'unknown') before = last;
    }
    if (before === now) return;
    if (before !== undefined) bump(kind, before, -1);
    if (now === 'unknown') {
      if (before !== undefined) held.set(key, undefined);
      return;
    }
    held.set(key, now);
    bump(kind, now, 1);
  };
  for (const kind of KINDS) for (const object of store.list(kind)) track(kind, keyOf(object), object);
  store.watch((event) =>
    event.type === 'delete'
      ? track(event.kind, event.key, undefined, event.object)
      : track(event.kind, event.key, event.object),
  );

  const resources = registry.gauge(
    'zonekeeper_resources',
    'Resources by kind and Ready condition (true, false, unknown); kept last valid versions count as not ready.',
    ['kind', 'ready'],
  );
  resources.collect = () => {
    const shown = new Map<string, number[]>();
    for (const kind of KINDS) {
      const [t, f] = counts.get(kind) ?? [0, 0];
      shown.set(kind, [t, f, store.count(kind) - t - f]);
    }
    // Kept objects show Ready=False whatever the controller wrote for their served version.
    for (const id of source.keptObjects().keys()) {
      const slash = id.indexOf('/');
      const kind = id.slice(0, slash);
      if (!isKind(kind)) continue;
      const key = id.slice(slash + 1);
      const before: Readiness | undefined =
        state.get(kind)?.get(key) ?? (store.get(kind, key) !== undefined ? 'unknown' : undefined);
      if (before === undefined || before === 'false') continue;
      const c = shown.get(kind)!;
      c[READINESS.indexOf(before)]!--;
      c[READINESS.indexOf('false')]!++;
    }
    resources.reset();
    for (const kind of KINDS)
      for (const r of READINESS) resources.set(shown.get(kind)?.[READINESS.indexOf(r)] ?? 0, kind, r);
  };

  const problems = registry.gauge(
    'zonekeeper_manifest_problems',
    'Problems found in the manifests folder at the last reload (invalid record values included).',
  );
  const folder = registry.gauge(
    'zonekeeper_manifest_folder_readable',
    '1 when the manifests folder can be read, 0 when it cannot (missing, not a folder, no permission).',
  );
  const update = (list: readonly ManifestProblem[]) => {
    problems.set(list.length);
    folder.set(source.folderProblem() ? 0 : 1);
  };
  update(source.problems());
  const previous = source.onReload;
  source.onReload = (list) => {
    previous?.(list);
    update(list);
  };
}

/** The Ready condition, true or false, of the objects of one kind that have one, by key. */
interface Held {
  get(key: string): Known | undefined;
  /** Keeps `value` for `key`; undefined forgets it. */
  set(key: string, value: Known | undefined): void;
  /**
   * Whether what was kept for `key` may be gone before its delete event (a record set's slot freed
   * by the store first), so the deleted version's readiness stands in for it.
   */
  mayHaveLost(key: string): boolean;
}

class MapReadiness implements Held {
  private readonly byKey = new Map<string, Known>();

  get size(): number {
    return this.byKey.size;
  }

  get(key: string): Known | undefined {
    return this.byKey.size === 0 ? undefined : this.byKey.get(key);
  }

  set(key: string, value: Known | undefined): void {
    if (value === undefined) this.byKey.delete(key);
    else this.byKey.set(key, value);
  }

  mayHaveLost(): boolean {
    return false;
  }
}

/**
 * Readiness of record sets in an integer column of the record-set table the store keeps them in (1
 * true, 0 false, -1 none), by the slot the store holds while it holds the record set: no map entry
 * and no key string per record set. The column is cleared when the slot is freed; a value is
 * forgotten when its record set is deleted (the slot may stay, held by others, and go to the same
 * key again). A key without a slot (a store not keeping its record sets in this table) is kept in a
 * map instead.
 */
class TableReadiness implements Held {
  private readonly table: RecordTable;
  private readonly column: Int32Column;
  private readonly others = new MapReadiness();
  /**
   * Values set in the column, at least: a value the table cleared with its slot is still counted,
   * which only costs `get` its shortcut.
   */
  private held = 0;

  constructor(table: RecordTable) {
    this.table = table;
    this.column = table.int32Column();
  }

  get(key: string): Known | undefined {
    // Nothing held (a first load, before any status): no lookup per store event.
    if (this.held === 0 && this.others.size === 0) return undefined;
    const slot = this.table.slotOf(key);
    const value = slot >= 0 ? this.column.get(slot) : -1;
    return value === 1 ? 'true' : value === 0 ? 'false' : this.others.get(key);
  }

  set(key: string, value: Known | undefined): void {
    const slot = this.table.slotOf(key);
    if (slot < 0) {
      this.others.set(key, value);
      return;
    }
    this.others.set(key, undefined);
    const before = this.column.get(slot);
    const now = value === undefined ? -1 : value === 'true' ? 1 : 0;
    if (before === now) return;
    this.column.set(slot, now);
    if (before === -1) this.held++;
    else if (now === -1) this.held--;
  }

  mayHaveLost(key: string): boolean {
    return this.held > 0 && this.table.slotOf(key) < 0;
  }
}

function keyOf(object: Resource): string {
  return object.metadata.namespace
    ? `${object.metadata.namespace}/${object.metadata.name}`
    : object.metadata.name;
}
