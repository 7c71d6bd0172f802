import type { Name } from '../dns/name.ts';
import type { Rdata } from '../dns/rdata.ts';

/** An RRset as the server holds it: wire type code, TTL and RDATA. */
export interface ServedRRset {
  owner: Name;
  type: number;
  ttl: number;
  rdata: Rdata[];
  /**
   * The RDATA in wire form, filled in by the first response that carries the RRset (null for types
   * whose RDATA holds domain names, which are written in place for name compression). RRsets are replaced, never
   * mutated, when a zone changes, so this never goes stale.
   */
  wire?: readonly Uint8Array[] | null;
  /**
   * For an RRset synthesized from a wildcard (RFC 4592 §3.3.1): the wildcard's RRset, whose RDATA (and
   * so whose wire form) it shares.
   */
  source?: ServedRRset;
  /**
   * Made by the zone signer (DNSKEY, NSEC3PARAM, NSEC, RRSIG, NSEC3; see zone-dnssec.ts): `wire` holds
   * the RDATA and `rdata` only counts the records. Not part of the zone's own content (`rrsets()`).
   */
  dnssec?: true;
}
