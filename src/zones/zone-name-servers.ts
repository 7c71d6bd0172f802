/**
 * The name servers a zone publishes: its class's shared `nameServers`, or, when the class sets
 * `zoneNameServers`, names of the zone's own made from templates with its hash. A parent that
 * delegates to a zone's own names points at that zone of that namespace, which is what makes a
 * delegation a proof of control (Domain verification, VerifiedDNSZone).
 */
import { createHash } from 'node:crypto';
import type { DNSZone, DNSZoneClass } from '../api/index.ts';

/** Where a template takes the zone's hash. */
export const ZONE_HASH_PLACEHOLDER = '{hash}';

/** Lowercase, without the trailing dot: the form domains are compared and hashed in. */
export function domainText(name: string): string {
  return (name.endsWith('.') ? name.slice(0, -1) : name).toLowerCase();
}

/** The zone hash: the first 12 hexadecimal digits of SHA-256 over `<namespace>/<domain>`. */
export function zoneHash(namespace: string, domainName: string): string {
  return createHash('sha256')
    .update(`${namespace}/${domainText(domainName)}`)
    .digest('hex')
    .slice(0, 12);
}

/** Whether zones of the class get name servers of their own. */
export function hasZoneNameServers(zoneClass: Pick<DNSZoneClass, 'spec'>): boolean {
  return (zoneClass.spec.zoneNameServers?.length ?? 0) > 0;
}

/** The absolute host names a zone publishes as its apex NS records (lowercase when made from a template). */
export function zoneNameServers(
  zone: Pick<DNSZone, 'metadata' | 'spec'>,
  zoneClass: Pick<DNSZoneClass, 'spec'>,
): string[] {
  const templates = zoneClass.spec.zoneNameServers;
  if (templates === undefined || templates.length === 0) return [...zoneClass.spec.nameServers];
  const hash = zoneHash(zone.metadata.namespace ?? 'default', zone.spec.domainName);
  return templates.map((t) => t.split(ZONE_HASH_PLACEHOLDER).join(hash).toLowerCase());
}
