import { createHash } from 'node:crypto';
import { nameKey } from '../dns/name.ts';
import { printRdata } from '../dns/rdata.ts';
import type { RRset } from './rrset.ts';
import type { SoaFields } from './soa.ts';

/**
 * SHA-256 over the canonical, sorted content of a zone: every RR as `owner TTL type rdata` with the
 * owner lowercased and RDATA in canonical presentation form, one per line, sorted; the SOA without its
 * serial first. Two zones with equal content hash equal regardless of the order their records arrived
 * in, and any change that a resolver could observe changes the hash.
 */
export function zoneContentHash(soa: SoaFields, rrsets: readonly RRset[]): string {
  const lines: string[] = [];
  for (const rrset of rrsets) {
    const owner = nameKey(rrset.owner);
    for (const rdata of rrset.rdata) lines.push(`${owner} ${rrset.ttl} ${rrset.type} ${printRdata(rdata)}`);
  }
  lines.sort();
  const head = `SOA ${soa.ttl} ${nameKey(soa.mname)} ${nameKey(soa.rname)} ${soa.refresh} ${soa.retry} ${soa.expire} ${soa.minimum}`;
  const hash = createHash('sha256');
  hash.update(head);
  for (const line of lines) hash.update(`\n${line}`);
  return hash.digest('hex');
}
