import { KINDS, type Kind, type Resource } from '../../api/index.ts';
import type { ResourceStore } from '../../control/resource-store.ts';
import type { Registry } from '../../metrics/registry.ts';
import { getOrInsert } from '../../util/get-or-insert.ts';
import type { ManifestProblem, ManifestSource } from './manifest-source.ts';

type Readiness = 'true' | 'false' | 'unknown';

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
  store: ResourceStore,
  source: ManifestSource,
): void {
  // Per kind, by the store's own key string: an id built per object (`kind/key`) was a concatenation
  // kept beside its flattened copy, about 80 bytes per record set (docs/benchmarks.md, memory budget).
  const state = new Map<string, Map<string, Readiness>>();
  const stateOf = (kind: string) => getOrInsert(state, kind, () => new Map<string, Readiness>());
  const counts = new Map<string, number>();
  const bump = (kind: Kind, r: Readiness, by: number) => {
    const key = `${kind}\u0000${r}`;
    counts.set(key, (counts.get(key) ?? 0) + by);
  };
  const track = (kind: Kind, key: string, object: Resource | undefined) => {
    const ofKind = stateOf(kind);
    const before = ofKind.get(key);
    if (before) bump(kind, before, -1);
    if (!object) {
      ofKind.delete(key);
      return;
    }
    const now = readiness(object);
    ofKind.set(key, now);
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
    const shown = new Map(counts);
    // Kept objects show Ready=False whatever the controller wrote for their served version.
    for (const id of source.keptObjects().keys()) {
      const kind = id.slice(0, id.indexOf('/')) as Kind;
      const before = state.get(kind)?.get(id.slice(id.indexOf('/') + 1));
      if (before === undefined || before === 'false') continue;
      shown.set(`${kind}\u0000${before}`, (shown.get(`${kind}\u0000${before}`) ?? 0) - 1);
      shown.set(`${kind}\u0000false`, (shown.get(`${kind}\u0000false`) ?? 0) + 1);
    }
    resources.reset();
    for (const kind of KINDS)
      for (const r of ['true', 'false', 'unknown'] as const)
        resources.set(shown.get(`${kind}\u0000${r}`) ?? 0, kind, r);
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
