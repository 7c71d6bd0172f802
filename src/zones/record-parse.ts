import type { DNSRecordSet } from '../api/index.ts';
import { DnsError } from '../dns/errors.ts';
import type { Name } from '../dns/name.ts';
import { parseRdata, printRdata, type Rdata } from '../dns/rdata.ts';

export type ParsedRecords = { ok: true; rdata: Rdata[] } | { ok: false; message: string };

/**
 * Parsed results per spec object. Specs are never mutated (a change is a new object), so a zone
 * reconcile re-parses only the record sets that changed since the last one.
 */
const cache = new WeakMap<DNSRecordSet['spec'], { origin: Name; result: ParsedRecords }>();

/**
 * Parses every entry of `spec.records` strictly for the record set's type, relative names being
 * relative to the zone origin. The first problem is reported with its index, the value and the fix;
 * a duplicate entry is rejected too, since an RRset holds each record once (RFC 2181 §5).
 */
export function parseRecordSetRecords(rs: DNSRecordSet, origin: Name): ParsedRecords {
  const hit = cache.get(rs.spec);
  if (hit && hit.origin === origin) return hit.result;
  const result = parseUncached(rs, origin);
  cache.set(rs.spec, { origin, result });
  return result;
}

function parseUncached(rs: DNSRecordSet, origin: Name): ParsedRecords {
  const rdata: Rdata[] = [];
  const seen = new Map<string, number>();
  for (const [i, text] of rs.spec.records.entries()) {
    let parsed: Rdata;
    try {
      parsed = parseRdata(rs.spec.type, text, origin);
    } catch (e) {
      const detail = e instanceof DnsError || e instanceof Error ? e.message : String(e);
      return { ok: false, message: `spec.records[${i}] ${JSON.stringify(text)}: ${detail}` };
    }
    const canonical = printRdata(parsed).toLowerCase();
    const first = seen.get(canonical);
    if (first !== undefined) {
      return {
        ok: false,
        message: `spec.records[${i}] ${JSON.stringify(text)} repeats spec.records[${first}]; an RRset holds each record once (RFC 2181 §5), remove the duplicate`,
      };
    }
    seen.set(canonical, i);
    rdata.push(parsed);
  }
  return { ok: true, rdata };
}
