/** Reading a target's zone into the kit's `HeldZone`, for harnesses. */
import type { Name } from '../../dns/name.ts';
import { parseRdata, printRdata } from '../../dns/rdata.ts';
import { isRecordTypeName, typeName } from '../../dns/rrtype.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import { type HeldZone, heldKey } from './kit.ts';

/** From RRsets already parsed (an in-process table). */
export function heldFromRRsets(serial: number | undefined, rrsets: Iterable<RRsetData>): HeldZone {
  const out = new Map<string, string[]>();
  for (const r of rrsets) {
    if (r.type === 'SOA') continue;
    out.set(heldKey(r.owner, r.type), r.rdata.map((d) => printRdata(d)).sort());
  }
  return { serial, rrsets: out };
}

/**
 * From records in presentation form (`owner type rdata`, e.g. from an AXFR or an HTTP API; RFC 3597
 * `TYPEnnn` and `\# len hex` accepted): the SOA gives the serial; a type Zonekeeper does not know is
 * kept as written so it still counts.
 */
export function heldFromRecords(
  origin: Name,
  records: Iterable<{ owner: Name; type: string; rdata: string }>,
): HeldZone {
  let serial: number | undefined;
  const out = new Map<string, string[]>();
  for (const record of records) {
    const { owner, rdata } = record;
    // RFC 3597 spelling of a type Zonekeeper knows (dig prints ALIAS, a private type, as TYPE65401).
    const generic = /^TYPE([0-9]+)$/.exec(record.type);
    const type = generic ? typeName(Number(generic[1])) : record.type;
    if (type === 'SOA') {
      serial = Number(rdata.trim().split(/\s+/)[2]);
      continue;
    }
    const text = isRecordTypeName(type) ? printRdata(parseRdata(type, rdata, origin)) : rdata;
    const key = isRecordTypeName(type) ? heldKey(owner, type) : `${owner.toLowerCase()} ${type}`;
    const list = out.get(key) ?? [];
    list.push(text);
    out.set(key, list);
  }
  for (const list of out.values()) list.sort();
  return { serial, rrsets: out };
}
