import { isKind, KINDS, type Kind, type Resource } from '../../api/index.ts';
import type { MemoryStore } from '../../control/memory-store.ts';
import type { ResourceStore } from '../../control/resource-store.ts';
import type { Registry } from '../../metrics/registry.ts';
import { Holder, type Int32Column, type RecordTable } from '../../zones/record-table.ts';
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
  const track = (kind: Kind, key: string, object: Resource | undefined) => {
    const held = stateOf(kind);
    const now = object === undefined ? 'unknown' : readiness(object);
    // Counted out by what its own events delivered (a delete event carrying a status never delivered
    // before takes nothing from a count).
    const before = held.get(key);
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
  store.watch((event) => track(event.kind, event.key, event.type === 'delete' ? undefined : event.object));

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
}

/**
 * Readiness of record sets in an integer column of the record-set table (1 true, 0 false), at the
 * record set's slot, which the metrics hold (`Holder.metrics`) while they count it: no map entry and
 * no key string per record set, and the slot (with its value) stays until the metrics count the
 * record set out, even when the store let go of it before its delete event came.
 */
class TableReadiness implements Held {
  private readonly table: RecordTable;
  private readonly column: Int32Column;
  /** Record sets whose readiness is held. */
  private held = 0;

  constructor(table: RecordTable) {
    this.table = table;
    this.column = table.int32Column(Holder.metrics);
  }

  get(key: string): Known | undefined {
    // Nothing held (a first load, before any status): no lookup per store event.
    if (this.held === 0) return undefined;
    const slot = this.table.slotOf(key);
    if (!this.table.held(slot, Holder.metrics)) return undefined;
    return this.column.get(slot) === 1 ? 'true' : 'false';
  }

  set(key: string, value: Known | undefined): void {
    if (value === undefined) {
      const slot = this.table.slotOf(key);
      if (!this.table.held(slot, Holder.metrics)) return;
      this.table.release(slot, Holder.metrics);
      this.held--;
      return;
    }
    const known = this.table.held(this.table.slotOf(key), Holder.metrics);
    const slot = this.table.hold(key, Holder.metrics);
    if (!known) this.held++;
    this.column.set(slot, value === 'true' ? 1 : 0);
  }
}

function keyOf(object: Resource): string {
  return object.metadata.namespace
    ? `${object.metadata.namespace}/${object.metadata.name}`
    : object.metadata.name;
}
