import type { DNSZone, DNSZoneClass, SOAOverrides } from '../api/index.ts';
import { type Name, parseName } from '../dns/name.ts';

/** Defaults for SOA timers (RFC 1912 §2.2 ranges; the negative-caching TTL per RFC 2308 §5). */
export const SOA_DEFAULTS = { refresh: 3600, retry: 600, expire: 1_209_600, minimum: 300 } as const;
export const DEFAULT_TTL = 300;

/** Everything in the SOA except the serial, which the reconciler owns. */
export interface SoaFields {
  ttl: number;
  mname: Name;
  rname: Name;
  refresh: number;
  retry: number;
  expire: number;
  minimum: number;
}

/**
 * Turns a responsible-person mailbox into its RNAME (RFC 1035 §8): `hostmaster@example.com` becomes
 * `hostmaster.example.com.`, and a dot in the local part is escaped (`first.last@x` → `first\.last.x.`).
 * A value without `@` is taken as a domain name already.
 */
export function mailboxToRname(mailbox: string, origin: Name): Name {
  const at = mailbox.indexOf('@');
  if (at < 0) return parseName(mailbox, origin);
  const local = mailbox.slice(0, at).replaceAll('\\', '\\\\').replaceAll('.', '\\.');
  const domain = mailbox.slice(at + 1);
  return parseName(`${local}.${domain.endsWith('.') ? domain : `${domain}.`}`);
}

/** The zone's default TTL: the zone's own, else the class default, else 300 seconds. */
export function zoneDefaultTtl(zone: DNSZone, zoneClass: DNSZoneClass): number {
  return zone.spec.ttl ?? zoneClass.spec.defaults?.ttl ?? DEFAULT_TTL;
}

/** The SOA of a zone: MNAME is the class's first nameserver; zone overrides beat class defaults. */
export function soaFor(zone: DNSZone, zoneClass: DNSZoneClass, origin: Name): SoaFields {
  const fromClass: SOAOverrides = zoneClass.spec.defaults?.soa ?? {};
  const fromZone: SOAOverrides = zone.spec.soa ?? {};
  const pick = (key: 'refresh' | 'retry' | 'expire' | 'minimum'): number =>
    fromZone[key] ?? fromClass[key] ?? SOA_DEFAULTS[key];
  const mailbox = fromZone.rname ?? fromClass.rname;
  const firstNameServer = zoneClass.spec.nameServers[0];
  if (firstNameServer === undefined)
    throw new Error(`DNSZoneClass ${zoneClass.metadata.name} has no nameServers`);
  return {
    ttl: zoneDefaultTtl(zone, zoneClass),
    mname: parseName(firstNameServer),
    rname: mailbox === undefined ? parseName(`hostmaster.${origin}`) : mailboxToRname(mailbox, origin),
    refresh: pick('refresh'),
    retry: pick('retry'),
    expire: pick('expire'),
    minimum: pick('minimum'),
  };
}
