/**
 * Owner names and targets of Datum record sets, made absolute against the zone they belong to
 * (RFC 1035 §5.1: a name without a trailing dot is relative to the origin). Pure.
 */

/** `example.com` → `example.com.` (lowercase). */
export function originOf(domainName: string): string {
  return `${domainName.toLowerCase().replace(/\.$/, '')}.`;
}

export function isInside(name: string, origin: string): boolean {
  return name === origin || name.endsWith(`.${origin}`);
}

/**
 * An owner name as written in `spec.records[].name`: `@` (or empty) is the apex; a trailing dot
 * makes it absolute; a name that already ends in the zone's domain ("www.example.com", Datum's
 * spelling of fully qualified names, which carry no trailing dot) is taken as absolute too; any other
 * is relative to the zone ("www" → www.example.com.). Lowercase.
 */
export function qualifyOwner(owner: string, origin: string): string {
  const o = owner.trim().toLowerCase();
  if (o === '@' || o === '') return origin;
  if (o.endsWith('.')) return o;
  const domain = origin.slice(0, -1);
  if (o === domain || o.endsWith(`.${domain}`)) return `${o}.`;
  return `${o}.${origin}`;
}

/**
 * A target (CNAME, NS, PTR, MX exchange, SRV and service-binding targets): a trailing dot makes it
 * absolute; a name with several labels ("lb.example.net") is absolute, as Datum's controllers write
 * them; `@` is the apex and a single label ("www") is relative to the zone — not to the root, which
 * would name a top-level domain nobody meant.
 */
export function qualifyTarget(target: string, origin: string): string {
  const t = target.trim();
  if (t === '@') return origin;
  if (t.endsWith('.')) return t;
  if (t.includes('.')) return `${t}.`;
  return `${t}.${origin}`;
}
