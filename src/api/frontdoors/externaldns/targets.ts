/**
 * ExternalDNS endpoint targets and RFC 1035 presentation format, both ways: shared by the
 * `DNSEndpoint` front door and the ExternalDNS webhook provider. Pure.
 */
import { parseName } from '../../../dns/name.ts';
import { parseRdata } from '../../../dns/rdata.ts';
import type { RecordTypeName } from '../../../dns/rrtype.ts';

/** Record types an endpoint may have here (ExternalDNS's managed types that this server serves). */
export const ENDPOINT_TYPES: ReadonlySet<RecordTypeName> = new Set<RecordTypeName>([
  'A',
  'AAAA',
  'CNAME',
  'TXT',
  'MX',
  'SRV',
  'NS',
  'PTR',
  'CAA',
  'NAPTR',
]);

/** A host name as ExternalDNS writes it (no trailing dot) made absolute. */
function absolute(host: string): string {
  return host.endsWith('.') ? host : `${host}.`;
}

/**
 * ExternalDNS targets in presentation format (RFC 1035 §5.1): host names made absolute (CNAME, NS,
 * PTR, and the last field of MX, SRV and NAPTR); TXT targets are raw text, quoted here as
 * character-strings of at most 255 octets each (RFC 1035 §3.3.14), their bytes escaped.
 */
export function targetsToRecords(type: RecordTypeName, targets: readonly string[]): string[] {
  return targets.map((t) => {
    switch (type) {
      case 'CNAME':
      case 'NS':
      case 'PTR':
        return absolute(t.trim());
      case 'MX':
      case 'SRV':
      case 'NAPTR': {
        const fields = t.trim().split(/\s+/);
        const last = fields.length - 1;
        if (last > 0 && fields[last] !== '.') fields[last] = absolute(fields[last]!);
        return fields.join(' ');
      }
      case 'TXT':
        return quoteText(t);
      default:
        return t.trim();
    }
  });
}

/** One record in presentation format as an ExternalDNS target (the inverse of `targetsToRecords`). */
export function recordToTarget(type: RecordTypeName, record: string): string {
  switch (type) {
    case 'CNAME':
    case 'NS':
    case 'PTR':
      return record.replace(/\.$/, '');
    case 'MX':
    case 'SRV':
    case 'NAPTR': {
      const fields = record.trim().split(/\s+/);
      const last = fields.length - 1;
      if (last > 0 && fields[last] !== '.') fields[last] = fields[last]!.replace(/\.$/, '');
      return fields.join(' ');
    }
    case 'TXT': {
      const rdata = parseRdata('TXT', record, parseName('.'));
      if (rdata.type !== 'TXT') return record;
      return Buffer.from(rdata.strings.join(''), 'latin1').toString('utf8');
    }
    default:
      return record;
  }
}

/** Raw text as quoted character-strings of at most 255 octets each, escaped (RFC 1035 §5.1). */
export function quoteText(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  const parts: string[] = [];
  for (let start = 0; start < bytes.length || parts.length === 0; start += 255) {
    let s = '"';
    for (const b of bytes.subarray(start, start + 255)) {
      if (b === 0x22 || b === 0x5c) s += `\\${String.fromCharCode(b)}`;
      else if (b < 0x20 || b > 0x7e) s += `\\${String(b).padStart(3, '0')}`;
      else s += String.fromCharCode(b);
    }
    parts.push(`${s}"`);
    if (bytes.length === 0) break;
  }
  return parts.join(' ');
}
