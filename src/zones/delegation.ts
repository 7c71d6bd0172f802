import type { Delegation } from '../api/index.ts';
import { relativeLabelKeys } from '../dns/name.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';

/**
 * Whether a relative name matches a delegation name pattern. Patterns are relative to the zone:
 * `@` is the apex, `api` is exactly `api`, and a leading `*` stands for one or more labels, so
 * `*.apps` admits `web.apps` and `a.b.apps` but not `apps` itself, and `*` admits every name below
 * the apex. Both sides are compared label by label on parsed labels, case-insensitively: `evil\\.apps`
 * (or `evil\\046apps`) is one label under the apex, so `*.apps` does not admit it. Text that is not a
 * name matches nothing.
 */
export function namePatternMatches(pattern: string, relative: string): boolean {
  let p: string[];
  let r: string[];
  try {
    p = relativeLabelKeys(pattern);
    r = relativeLabelKeys(relative);
  } catch {
    return false;
  }
  if (p[0] === '*') {
    // `*` is one or more labels; the labels after it must be the rightmost labels of the name.
    const suffix = p.length - 1;
    if (r.length <= suffix) return false;
    for (let i = 1; i < p.length; i++) if (p[i] !== r[r.length - suffix + i - 1]) return false;
    return true;
  }
  return p.length === r.length && p.every((label, i) => label === r[i]);
}

/**
 * Whether a namespace name matches a namespace pattern (`spec.delegations[].namespacePatterns`): the
 * pattern is a literal prefix and one trailing `*` standing for one or more characters, compared on
 * the whole name from its first character — `shoot--*` admits `shoot--garden--dev` but not
 * `shoot--` itself, `xshoot--dev`, `shoot-dev` or `my-shoot--dev`. A pattern of any other form (no
 * `*`, a `*` elsewhere, an empty prefix) matches nothing, so a malformed pattern can never widen.
 */
export function namespacePatternMatches(pattern: string, namespace: string): boolean {
  if (!/^[a-z0-9][-a-z0-9]*\*$/.test(pattern)) return false;
  const prefix = pattern.slice(0, -1);
  return namespace.length > prefix.length && namespace.startsWith(prefix);
}

/** Whether a delegation names `namespace` explicitly or by one of its patterns. */
export function delegationNamesNamespace(d: Delegation, namespace: string): boolean {
  return (
    (d.namespaces ?? []).includes(namespace) ||
    (d.namespacePatterns ?? []).some((p) => namespacePatternMatches(p, namespace))
  );
}

/** Whether one delegation entry admits a record from `namespace` at `relative` of type `type`. */
export function delegationAdmits(
  d: Delegation,
  namespace: string,
  relative: string,
  type: RecordTypeName,
): boolean {
  const restricted = (d.namespaces ?? []).length > 0 || (d.namespacePatterns ?? []).length > 0;
  if (restricted && !delegationNamesNamespace(d, namespace)) return false;
  const names = d.names ?? [];
  if (names.length > 0 && !names.some((pattern) => namePatternMatches(pattern, relative))) return false;
  const types = d.types ?? [];
  return types.length === 0 || types.includes(type);
}

/**
 * A zone admits records from its own namespace always, and from other namespaces only through one of
 * its delegations. A delegation without `namespaces` would otherwise open the zone to every namespace,
 * so for foreign namespaces an entry must name them explicitly or by a namespace pattern.
 */
export function zoneAdmits(
  zoneNamespace: string,
  delegations: readonly Delegation[] | undefined,
  namespace: string,
  relative: string,
  type: RecordTypeName,
): boolean {
  if (namespace === zoneNamespace) return true;
  return (delegations ?? []).some(
    (d) => delegationNamesNamespace(d, namespace) && delegationAdmits(d, namespace, relative, type),
  );
}
