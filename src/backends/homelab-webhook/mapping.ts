/**
 * How an RRset of a Zonekeeper zone is one record of the homelab DNS webhook protocol: `domain` is the
 * zone's origin, `subdomain` the owner relative to it (`@` at the apex), `values` one per record, the
 * RRset's TTL, and MX preference / SRV priority, weight and port in the additive `record.metadata`.
 * The protocol carries one metadata object per record set, so an MX or SRV RRset whose records differ
 * in those numbers cannot be expressed; neither can types other than its seven.
 */
import { nameKey, relativeName } from '../../dns/name.ts';
import type { Rdata } from '../../dns/rdata/types.ts';
import { sameHomelabContent } from '../../homelab-protocol/compare.ts';
import {
  HOMELAB_RECORD_TYPES,
  type HomelabRecord,
  type HomelabRecordType,
} from '../../homelab-protocol/protocol.ts';
import type { RRsetData } from '../../zones/rrset.ts';

/** A name without its trailing dot, lower-case (the protocol's form). */
function bare(name: string): string {
  return nameKey(name).replace(/\.$/, '');
}

function value(rdata: Rdata): string | undefined {
  switch (rdata.type) {
    case 'A':
    case 'AAAA':
      return rdata.address;
    case 'CNAME':
      return bare(rdata.target);
    case 'NS':
      return bare(rdata.host);
    case 'MX':
      return bare(rdata.exchange);
    case 'SRV':
      return bare(rdata.target);
    case 'TXT':
      // One value per record: its character-strings joined (RFC 1035 §3.3.14 strings are ≤ 255 octets).
      return rdata.strings.join('');
    default:
      return undefined;
  }
}

/** The record for an RRset of zone `origin`, or why it cannot be one. */
export function toHomelabRecord(origin: string, rrset: RRsetData): HomelabRecord | { refused: string } {
  if (!(HOMELAB_RECORD_TYPES as readonly string[]).includes(rrset.type))
    return {
      refused: `the homelab webhook protocol has no ${rrset.type} records (only ${HOMELAB_RECORD_TYPES.join(', ')})`,
    };
  if (origin.includes('\\') || rrset.owner.includes('\\'))
    return { refused: 'names with escaped characters cannot be sent in a record path' };
  const values: string[] = [];
  for (const r of rrset.rdata) {
    const v = value(r);
    if (v === undefined) return { refused: `${rrset.type} data cannot be expressed` };
    values.push(v);
  }
  const record: HomelabRecord = {
    type: rrset.type as HomelabRecordType,
    domain: bare(origin),
    subdomain: relativeName(nameKey(rrset.owner), nameKey(origin)),
    values,
    ttl: rrset.ttl,
  };
  const first = rrset.rdata[0];
  if (first?.type === 'MX') {
    if (rrset.rdata.some((r) => r.type === 'MX' && r.preference !== first.preference))
      return { refused: 'an MX RRset sent as one record needs one preference for all its records' };
    record.metadata = { priority: first.preference };
  }
  if (first?.type === 'SRV') {
    const same = rrset.rdata.every(
      (r) =>
        r.type === 'SRV' &&
        r.priority === first.priority &&
        r.weight === first.weight &&
        r.port === first.port,
    );
    if (!same)
      return {
        refused: 'an SRV RRset sent as one record needs one priority, weight and port for all its records',
      };
    record.metadata = { priority: first.priority, weight: first.weight, port: first.port };
  }
  return record;
}

/** The key of an RRset's record at the provider. */
export function recordKey(r: Pick<HomelabRecord, 'type' | 'domain' | 'subdomain'>): string {
  return `${r.type} ${r.domain.toLowerCase()} ${r.subdomain.toLowerCase()}`;
}

/**
 * Whether what the provider returned is the record (values as a set in the protocol's meaning: names
 * without case or trailing dot, IPv6 as addresses; TTL and metadata, field by field, when reported).
 */
export function sameRecord(
  want: HomelabRecord,
  have: Pick<HomelabRecord, 'values' | 'ttl' | 'metadata'>,
): boolean {
  if (have.ttl !== undefined && have.ttl !== want.ttl) return false;
  return sameHomelabContent(want, have);
}
