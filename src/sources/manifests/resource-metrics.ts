import { isKind, KINDS, type Kind, type Resource } from '../../api/index.ts';
import type { MemoryStore } from '../../control/memory-store.ts';
import type { ResourceStore } from '../../control/resource-store.ts';
import type { Registry } from '../../metrics/registry.ts';
import { Holder, type RecordTable } from '../../zones/record-table.ts';
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
  /**
   * The record table the store keeps its record sets in (`serve`): a record set's readiness is then a
   * number in a column of it, not a map entry and a key per record set that has a Ready condition.
   */
  recordTable?: RecordTable,
): void {
  // Per kind, the objects whose Ready condition is true or false, by the store's own key strings (no
  // id built per event); an object of the store not held here is unknown, so the unknown ones are
  // the store's count less the others. A first load (a million objects without a status) then adds
  // nothing here: an entry per object, and a lookup and an insertion per store event, waited for
  // the first status written (docs/benchmarks.md, eighth round).
  const state = new Map<string, Map<string, Known>>();
  const stateOf = (kind: string) => {
    let m = state.get(kind);
    if (!m) {
      m = new Map();
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
  // Per record set slot: 1 Ready true, 0 false, -1 unknown (the slot held by `Holder.metrics` while
  // it is known, so that it outlives the store's letting go of a deleted record set until it is counted).
  const recordReadiness = recordTable?.int32Column(Holder.metrics);
  const trackRecord = (table: RecordTable, key: string, object: Resource | undefined) => {
    const column = recordReadiness!;
    const now = object === undefined ? 'unknown' : readiness(object);
    const slot = table.slotOf(key);
    const held = slot < 0 ? -1 : column.get(slot);
    const before: Known | undefined = held < 0 ? undefined : held === 1 ? 'true' : 'false';
    if (before === now) return;
    if (before !== undefined) bump('DNSRecordSet', before, -1);
    if (now === 'unknown') {
      if (before !== undefined) table.release(slot, Holder.metrics);
      return;
    }
    column.set(before !== undefined ? slot : table.hold(key, Holder.metrics), now === 'true' ? 1 : 0);
    bump('DNSRecordSet', now, 1);
  };
  /** The readiness counted for an object, undefined while unknown. */
  const counted = (kind: Kind, key: string): Known | undefined => {
    if (kind !== 'DNSRecordSet' || recordTable === undefined) return state.get(kind)?.get(key);
    const slot = recordTable.slotOf(key);
    const held = slot < 0 ? -1 : recordReadiness!.get(slot);
    return held < 0 ? undefined : held === 1 ? 'true' : 'false';
  };
  const track = (kind: Kind, key: string, object: Resource | undefined) => {
    if (kind === 'DNSRecordSet' && recordTable !== undefined) return trackRecord(recordTable, key, object);
    const byKey = stateOf(kind);
    const now = object === undefined ? 'unknown' : readiness(object);
    const before = byKey.size === 0 ? undefined : byKey.get(key);
    if (before === now) return;
    if (before !== undefined) bump(kind, before, -1);
    if (now === 'unknown') {
      if (before !== undefined) byKey.delete(key);
      return;
    }
    byKey.set(key, now);
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
        counted(kind, key) ?? (store.get(kind, key) !== undefined ? 'unknown' : undefined);
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

function keyOf(object: Resource): string {
  return object.metadata.namespace
    ? `${object.metadata.namespace}/${object.metadata.name}`
    : object.metadata.name;
}
