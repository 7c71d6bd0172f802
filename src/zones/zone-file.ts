import { type Name, nameKey } from '../dns/name.ts';
import { encodeRdata, printRdata, type Rdata } from '../dns/rdata.ts';
import { RRType } from '../dns/rrtype.ts';
import { WireWriter } from '../dns/wire.ts';
import type { AssembledZone } from './assemble.ts';

/**
 * Prints a zone in RFC 1035 §5 master-file format, exactly as served: the SOA with the given serial
 * first, then every RRset in canonical order, one record per line with absolute owner names, TTL and
 * class. ALIAS has no standard mnemonic, so it is written in the RFC 3597 §5 generic form
 * (`TYPE65401 \# len hex`), which every zone-file parser accepts, with the target in a comment.
 */
export function printZoneFile(zone: AssembledZone, serial: number, header?: string): string {
  const lines: string[] = [];
  if (header) for (const line of header.split('\n')) lines.push(`; ${line}`);
  lines.push(`$ORIGIN ${zone.origin}`);
  const soa: Rdata = { type: 'SOA', ...zone.soa, serial };
  lines.push(record(zone.origin, zone.soa.ttl, 'SOA', printRdata(soa)));
  for (const rrset of zone.rrsets) {
    for (const rdata of rrset.rdata) {
      if (rdata.type === 'ALIAS') {
        lines.push(
          `${record(rrset.owner, rrset.ttl, 'TYPE65401', genericRdata(rdata))} ; ALIAS ${rdata.target}`,
        );
      } else {
        lines.push(record(rrset.owner, rrset.ttl, rrset.type, printRdata(rdata)));
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

function record(owner: Name, ttl: number, type: string, rdata: string): string {
  return `${owner}\t${ttl}\tIN\t${type}\t${rdata}`;
}

/** RFC 3597 §5: `\# <length> <hex>` of the uncompressed RDATA. */
export function genericRdata(rdata: Rdata): string {
  const w = new WireWriter(256);
  encodeRdata(rdata, w);
  const bytes = w.finish();
  return `\\# ${bytes.length} ${Buffer.from(bytes).toString('hex')}`;
}

/** Orders names so that `$ORIGIN`-relative readers see the apex first (used by exports). */
export function isApex(zone: AssembledZone, owner: Name): boolean {
  return nameKey(owner) === nameKey(zone.origin);
}

export { RRType };
