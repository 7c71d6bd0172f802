/**
 * A zone's RFC 2136 update policy (`DNSZone.spec.updatePolicy`): which names and types a TSIG key may
 * change. Names use the delegation syntax (`@`, `www`, `*.dyn`, `*`; see delegation.ts) plus
 * `<label>.**`: that label as the leftmost label of any name of the zone, the apex included, so
 * `_acme-challenge.**` grants `_acme-challenge`, `_acme-challenge.www` and `_acme-challenge.a.b`.
 */
import type { UpdateRule } from '../api/dnszone.ts';
import { type Name, relativeLabelKeys, relativeName } from '../dns/name.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';
import { namePatternMatches } from './delegation.ts';
import { canonicalKeyName } from './transfers.ts';

/** Whether an update name pattern matches a name relative to the zone (`@` for the apex). */
export function updateNameMatches(pattern: string, relative: string): boolean {
  if (!pattern.endsWith('.**')) return namePatternMatches(pattern, relative);
  let label: string[];
  let r: string[];
  try {
    label = relativeLabelKeys(pattern.slice(0, -3));
    r = relativeLabelKeys(relative);
  } catch {
    return false;
  }
  return label.length === 1 && r.length >= 1 && r[0] === label[0];
}

/** Whether the rules let `key` (a TSIG key name) change `type` at `fqdn` in the zone at `origin`. */
export function updateAllowed(
  rules: readonly UpdateRule[],
  origin: Name,
  key: string,
  fqdn: Name,
  type: RecordTypeName,
): boolean {
  const keyName = canonicalKeyName(key);
  const relative = relativeName(fqdn, origin);
  return rules.some(
    (rule) =>
      canonicalKeyName(rule.key) === keyName &&
      rule.types.includes(type) &&
      rule.names.some((pattern) => updateNameMatches(pattern, relative)),
  );
}

/** Whether any rule names `key`. */
export function updateKeyListed(rules: readonly UpdateRule[], key: string): boolean {
  const keyName = canonicalKeyName(key);
  return rules.some((rule) => canonicalKeyName(rule.key) === keyName);
}
