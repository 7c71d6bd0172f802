import type { ObjectMeta } from '../api/index.ts';

/** `namespace/name` for namespaced objects, `name` for cluster-scoped ones (as client-go's MetaNamespaceKeyFunc). */
export type ResourceKey = string;

export function resourceKey(meta: Pick<ObjectMeta, 'name' | 'namespace'>): ResourceKey {
  // Joined, not concatenated: keys are kept by many maps, and a concatenation kept as a map key
  // holds a node of 32 bytes beside its flattened copy (docs/benchmarks.md, memory budget).
  return meta.namespace ? [meta.namespace, meta.name].join('/') : meta.name;
}

export function splitKey(key: ResourceKey): { namespace?: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The `{namespace, name}` reference of a namespaced key (status fields, RRset origins). */
export function refOf(key: ResourceKey): { namespace: string; name: string } {
  const { namespace, name } = splitKey(key);
  return { namespace: namespace ?? '', name };
}

/**
 * Oldest first: creation time, then namespace/name. This is the one ordering used to settle every
 * "one writer" conflict, so the winner is stable and predictable.
 */
export function compareByAge(
  a: { metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'creationTimestamp'> },
  b: { metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'creationTimestamp'> },
): number {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  const ka = resourceKey(a.metadata);
  const kb = resourceKey(b.metadata);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
