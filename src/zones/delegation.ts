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
  if (p[0] === '*') return below(r, p, 1);
  return p.length === r.length && p.every((label, i) => label === r[i]);
}

/**
 * Whether the name of labels `r` is below the labels `p` from `from` on: `*` is one or more labels,
 * and the labels after it must be the rightmost labels of the name.
 */
function below(r: readonly string[], p: readonly string[], from: number): boolean {
  const suffix = p.length - from;
  if (r.length <= suffix) return false;
  const start = r.length - suffix;
  for (let i = 0; i < suffix; i++) if (p[from + i] !== r[start + i]) return false;
  return true;
}

/** A delegation's name patterns, parsed once: exact names by their labels, and the `*` patterns. */
interface NamePatterns {
  /** The labels of each exact pattern (`@` included), as JSON text. */
  exact: Set<string>;
  /** The labels after the leading `*` of each `*` pattern. */
  below: string[][];
}

const parsedPatterns = new WeakMap<readonly string[], NamePatterns>();
/** The last name parsed by `namesAdmit` (a zone's delegations are asked about one name in turn). */
let lastRelative: { relative: string; keys: string[] | undefined } | undefined;

/**
 * Whether one of `patterns` matches `relative`, as `namePatternMatches` decides for each: the
 * patterns are parsed once per list (a zone's spec keeps its lists) and the name once, not each of
 * them for each record set (a zone delegating thousands of names, as kubizone's door makes them,
 * parsed them all for every record set).
 */
export function namesAdmit(patterns: readonly string[], relative: string): boolean {
  let parsed = parsedPatterns.get(patterns);
  if (!parsed) {
    parsed = { exact: new Set(), below: [] };
    for (const pattern of patterns) {
      let p: string[];
      try {
        p = relativeLabelKeys(pattern);
      } catch {
        continue; // text that is not a name matches nothing
      }
      if (p[0] === '*') parsed.below.push(p.slice(1));
      else parsed.exact.add(JSON.stringify(p));
    }
    parsedPatterns.set(patterns, parsed);
  }
  if (lastRelative?.relative !== relative) {
    let keys: string[] | undefined;
    try {
      keys = relativeLabelKeys(relative);
    } catch {
      keys = undefined;
    }
    lastRelative = { relative, keys };
  }
  const r = lastRelative.keys;
  if (r === undefined) return false;
  if (parsed.exact.has(JSON.stringify(r))) return true;
  return parsed.below.some((suffix) => below(r, suffix, 0));
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
  if (names.length > 0 && !namesAdmit(names, relative)) return false;
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
