import type { DNSRecordSet } from '../api/index.ts';
import { type GeoIp, resolveSteering, type Steering, type Topology } from '../api/steering.ts';
import { recordIdentity } from '../dns/dnssec/canonical.ts';
import { DnsError } from '../dns/errors.ts';
import type { Name } from '../dns/name.ts';
import { utf8Binary } from '../dns/octets.ts';
import { decodeEscapes, isPlainText, MAX_CHARACTER_STRING } from '../dns/presentation.ts';
import { parseRdata, printRdata, type Rdata } from '../dns/rdata.ts';

export type ParsedRecords =
  | { ok: true; rdata: Rdata[] }
  /** `index`: the entry of `spec.records` at fault; the message starts with `spec.records[index]`. */
  | { ok: false; message: string; index: number };

/** A cached parse: the records themselves when they parsed, what is wrong with them otherwise. */
export type Kept = Rdata[] | { readonly message: string; readonly index: number };

/**
 * Parsed results per zone origin and spec object. Specs are never mutated (a change is a new
 * object), so a zone reconcile re-parses only the record sets that changed since the last one, and a
 * record set validated when its manifest was read is not parsed again by its zone's model. A zone
 * model's first build reads the cache but does not fill it (`keptRecords`' `keep`): the model holds
 * what it parsed, and a model built again for the zone takes it from there. A result
 * is kept as its RDATA list itself, the one the zone model's RRset holds, under a map per origin
 * (there is one origin per zone), not in an object beside it naming the origin: one object less per
 * record set (docs/benchmarks.md, the zone model). The maps are weak in the spec: a result goes
 * when its record set's version does.
 */
const byOrigin = new Map<Name, WeakMap<DNSRecordSet['spec'], Kept>>();

/**
 * At most this many origins are kept (origins of zones long gone would otherwise stay as keys with
 * empty maps): past it the origin cached longest ago is dropped, one at a time, so a writer who can
 * get many zones accepted costs other zones a parse of what they change, never the whole cache.
 */
export const MAX_CACHED_ORIGINS = 65_536;

/**
 * Parses every entry of `spec.records` strictly for the record set's type, relative names being
 * relative to the zone origin. The first problem is reported with its index, the value and the fix;
 * a duplicate entry is rejected too, since an RRset holds each record once (RFC 2181 §5).
 */
export function parseRecordSetRecords(rs: DNSRecordSet, origin: Name): ParsedRecords {
  const kept = keptRecords(rs, origin);
  return Array.isArray(kept)
    ? { ok: true, rdata: kept }
    : { ok: false, message: kept.message, index: kept.index };
}

/**
 * `parseRecordSetRecords` as the cache keeps it: the records when they parsed, else what is wrong
 * with them (no result object around the list: a zone's model reads one per record set it takes).
 * With `keep` false a value not cached yet is parsed and not cached: for a zone model's first build,
 * which holds what it parsed itself from then on (a model rebuilt later takes them from it), so the
 * cache would only cost an entry in a weak map per record set (its set, its memory, and the
 * collector's work on weak entries) that nothing reads (docs/benchmarks.md, fourteenth round).
 */
export function keptRecords(rs: DNSRecordSet, origin: Name, keep = true): Kept {
  let cache = byOrigin.get(origin);
  const hit = cache?.get(rs.spec);
  if (hit !== undefined) return hit;
  const result = parseValues(rs.spec.type, rs.spec.records, origin);
  if (!keep) return result;
  if (cache === undefined) {
    if (byOrigin.size >= MAX_CACHED_ORIGINS) {
      // A Map iterates in insertion order: its first key is the origin cached longest ago.
      const oldest = byOrigin.keys().next();
      if (oldest.done !== true) byOrigin.delete(oldest.value);
    }
    cache = new WeakMap();
    byOrigin.set(origin, cache);
  }
  cache.set(rs.spec, result);
  return result;
}

/** Origins with a map in the parse cache (for tests). */
export function cachedOrigins(): number {
  return byOrigin.size;
}

function parseValues(type: DNSRecordSet['spec']['type'], records: readonly string[], origin: Name): Kept {
  // One value (most record sets): nothing to compare it with, so no canonical text and no map. Not
  // for TXT with an escape or other than ASCII: printing its canonical text reads its strings, which
  // the parse builds a piece at a time, and so leaves them flat; unprinted, each string kept is a
  // chain of pieces (about 810 bytes per one-string record set instead of 345). TXT text of ASCII
  // without escapes is kept as written (`decodeEscapes`), its strings parts of the text itself.
  if (records.length === 1 && (type !== 'TXT' || isPlainText(records[0]!))) {
    try {
      return [parseRdata(type, records[0]!, origin)];
    } catch (e) {
      return badValue(0, records[0]!, e);
    }
  }
  const rdata: Rdata[] = [];
  const seen = new Map<string, number>();
  for (let i = 0; i < records.length; i++) {
    const text = records[i]!;
    let parsed: Rdata;
    try {
      parsed = parseRdata(type, text, origin);
    } catch (e) {
      return badValue(i, text, e);
    }
    // Names without regard to case, text and octets as written (RFC 4343 §3, RFC 2181 §5).
    const identity = recordIdentity(parsed);
    const first = seen.get(identity);
    if (first !== undefined) {
      return {
        message: `spec.records[${i}] ${JSON.stringify(text)} repeats spec.records[${first}]; an RRset holds each record once (RFC 2181 §5), remove the duplicate`,
        index: i,
      };
    }
    seen.set(identity, i);
    rdata.push(parsed);
  }
  // A copy of exactly the records: an array grown by push keeps room for more for as long as the
  // zone serves it (128 bytes for a one-record set).
  return rdata.slice();
}

function badValue(i: number, text: string, e: unknown): Kept {
  const detail = e instanceof DnsError || e instanceof Error ? e.message : String(e);
  return { message: `spec.records[${i}] ${JSON.stringify(text)}: ${detail}`, index: i };
}

/**
 * Types whose values hold no domain name: they parse the same, or fail the same, whatever the zone's
 * origin (a name's length, and so its validity, depends on the origin it is relative to).
 */
const WITHOUT_NAMES: ReadonlySet<string> = new Set(['A', 'AAAA', 'TXT', 'CAA', 'DS', 'SSHFP', 'TLSA']);

/**
 * Whether a record set's values all parse for its type, without duplicates, at any zone origin:
 * true only for a type whose values hold no name and when `parseRecordSetRecords` would accept them
 * in every zone. False says nothing (a value is wrong, or the type holds names): the values are then
 * parsed against the zone's origin where the answer is needed. Parse threads check with this, so the
 * thread that receives the record set need not parse its values before its zone's model does.
 */
export function valuesValidAnywhere(type: string, records: readonly unknown[]): boolean {
  if (!WITHOUT_NAMES.has(type) || records.length === 0) return false;
  for (const r of records) if (typeof r !== 'string') return false;
  return Array.isArray(parseValues(type as DNSRecordSet['spec']['type'], records as string[], '.'));
}

/**
 * The strings of a TXT record set longer than 255 octets. A character-string holds at most 255
 * octets (RFC 1035 §3.3), so each is split into consecutive strings of 255 (RFC 1035 §3.3.14, as
 * RFC 7208 §3.3 does for SPF): clients that join the strings see the text as written, others see parts.
 */
export function longTxtStrings(rs: DNSRecordSet): { index: number; octets: number; parts: number }[] {
  if (rs.spec.type !== 'TXT') return [];
  const out: { index: number; octets: number; parts: number }[] = [];
  for (const [index, text] of rs.spec.records.entries()) {
    const strings: string[] = [];
    if (!text.includes('"')) strings.push(utf8Binary(text));
    else {
      for (const m of text.matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
        try {
          strings.push(decodeEscapes(m[1]!));
        } catch {
          // not a valid string: the record's parse reports it
        }
      }
    }
    for (const s of strings)
      if (s.length > MAX_CHARACTER_STRING)
        out.push({ index, octets: s.length, parts: Math.ceil(s.length / MAX_CHARACTER_STRING) });
  }
  return out;
}

/**
 * The steering of a record set whose records parsed as `rdata` (in the order of `spec.records`), with
 * each candidate in its canonical form (`printRdata`), so that a weight or region keyed by the record
 * as written follows the record whatever its spelling. Undefined when the record set asks for none.
 */
export function steeringOf(
  rs: Pick<DNSRecordSet, 'spec'>,
  fqdn: Name,
  rdata: readonly Rdata[],
  topology?: Topology,
  geoip?: GeoIp,
): Steering | undefined {
  if (rs.spec.healthCheck === undefined && rs.spec.selection === undefined && rs.spec.placement === undefined)
    return undefined;
  const canonical = new Map(rs.spec.records.map((r, i) => [r, rdata[i] ? printRdata(rdata[i]) : r]));
  return resolveSteering(rs.spec, fqdn, (r) => canonical.get(r) ?? r, topology, geoip);
}
