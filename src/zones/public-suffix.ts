import { parse } from 'tldts';
import { asciiLower, type Name } from '../dns/name.ts';

/** Which section of the Public Suffix List made a name a public suffix. */
export type PublicSuffixSection = 'ICANN' | 'private';

const OPTIONS = {
  allowPrivateDomains: true,
  detectIp: false,
  extractHostname: false,
  mixedInputs: false,
  validateHostname: false,
} as const;

/**
 * Whether an absolute name is itself a public suffix — a name under which unrelated parties register
 * names, such as `co.uk` (ICANN section of the Public Suffix List) or `github.io` (private section) —
 * and in which section. Names below a suffix (`shop.co.uk`) and names no rule lists are not. The list
 * is the one shipped with the `tldts` package: no network, the same answer everywhere.
 */
export function publicSuffixSection(name: Name): PublicSuffixSection | undefined {
  if (name === '.' || name.includes('\\')) return undefined; // zone names are letters, digits, "-" and "_"
  const host = asciiLower(name.endsWith('.') ? name.slice(0, -1) : name);
  const result = parse(host, OPTIONS);
  if (result.publicSuffix !== host) return undefined;
  if (result.isIcann) return 'ICANN';
  if (result.isPrivate) return 'private';
  return undefined; // only the default rule ("*": the last label) matched
}
