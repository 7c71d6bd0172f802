/**
 * Ignore rules (`DNSZone.spec.ignore`): RRsets of an external backend that Zonekeeper never creates,
 * modifies or deletes, matched by name pattern (the delegation syntax: `@`, `api`, `*.apps`, `*`) and
 * optionally type. The SOA is never ignored: it carries the serial Zonekeeper assigns.
 */
import type { IgnoreRule } from '../api/index.ts';
import { isInDomain, type Name, relativeName } from '../dns/name.ts';
import { namePatternMatches } from './delegation.ts';

/** Whether an RRset of the zone at `origin` matches one of `rules`. */
export type IgnoreMatcher = (owner: Name, type: string) => boolean;

export function ignoreMatcher(
  origin: Name,
  rules: readonly IgnoreRule[] | undefined,
): IgnoreMatcher | undefined {
  if (rules === undefined || rules.length === 0) return undefined;
  return (owner, type) => {
    if (type === 'SOA') return false;
    let relative: string;
    try {
      if (!isInDomain(owner, origin)) return false;
      relative = relativeName(owner, origin);
    } catch {
      return false;
    }
    return rules.some(
      (rule) => (rule.type === undefined || rule.type === type) && namePatternMatches(rule.name, relative),
    );
  };
}
