/**
 * RDATA registry: presentation parsing/printing and wire encoding/decoding for every supported record type,
 * dispatching to the per-type codecs in ./rdata/.
 */
import { DnsError } from './errors.ts';
import { bytesToHex } from './hex.ts';
import { type Name, nameEquals, nameKey } from './name.ts';
import { aaaaCodec, aCodec, plainAddress } from './rdata/address.ts';
import { caaCodec } from './rdata/caa.ts';
import type { RdataCodec } from './rdata/codec.ts';
import { dsCodec } from './rdata/ds.ts';
import { RdataFields } from './rdata/fields.ts';
import { mxCodec } from './rdata/mx.ts';
import { aliasCodec, cnameCodec, nsCodec, ptrCodec } from './rdata/name-target.ts';
import { naptrCodec } from './rdata/naptr.ts';
import { soaCodec } from './rdata/soa.ts';
import { srvCodec } from './rdata/srv.ts';
import { sshfpCodec } from './rdata/sshfp.ts';
import { svcbCodec } from './rdata/svcb.ts';
import { tlsaCodec } from './rdata/tlsa.ts';
import { txtCodec } from './rdata/txt.ts';
import type { Rdata, UnknownRdata } from './rdata/types.ts';
import { type RecordTypeName, RRType, typeName } from './rrtype.ts';
import { WireError, WireReader, WireWriter } from './wire.ts';

export { SvcParamKey, svcParamKeyCode, svcParamKeyName } from './rdata/svc-params.ts';
export type {
  AaaaRdata,
  AliasRdata,
  ARdata,
  CaaRdata,
  CnameRdata,
  DsRdata,
  MxRdata,
  NaptrRdata,
  NsRdata,
  PtrRdata,
  Rdata,
  SoaRdata,
  SrvRdata,
  SshfpRdata,
  SvcbRdata,
  SvcParam,
  TlsaRdata,
  TxtRdata,
  UnknownRdata,
} from './rdata/types.ts';

/** The Rdata variant whose `type` admits K. */
export type RdataOf<K extends RecordTypeName> = Rdata extends infer R
  ? R extends { type: infer T }
    ? K extends T
      ? R
      : never
    : never
  : never;

type CodecTable = { readonly [K in RecordTypeName]: RdataCodec<RdataOf<K>> };

const CODECS: CodecTable = {
  A: aCodec,
  AAAA: aaaaCodec,
  CNAME: cnameCodec,
  ALIAS: aliasCodec,
  TXT: txtCodec,
  MX: mxCodec,
  SRV: srvCodec,
  CAA: caaCodec,
  NS: nsCodec,
  PTR: ptrCodec,
  SOA: soaCodec,
  TLSA: tlsaCodec,
  SSHFP: sshfpCodec,
  HTTPS: svcbCodec,
  SVCB: svcbCodec,
  DS: dsCodec,
  NAPTR: naptrCodec,
};

function codecFor(type: RecordTypeName): RdataCodec<Rdata> {
  const codec = CODECS[type] as RdataCodec<Rdata> | undefined;
  if (codec === undefined) {
    throw new DnsError(
      'UNSUPPORTED_TYPE',
      `record type ${JSON.stringify(type)} has no RDATA model; use one of ${Object.keys(CODECS).join(', ')}`,
    );
  }
  return codec;
}

const TYPE_BY_CODE: ReadonlyMap<number, RecordTypeName> = new Map(
  (Object.keys(CODECS) as RecordTypeName[]).map((t) => [RRType[t], t]),
);

/** The managed record type for a type code, if it has a structured model. */
export function recordTypeOfCode(code: number): RecordTypeName | undefined {
  return TYPE_BY_CODE.get(code);
}

/**
 * Strictly parses the presentation text of ONE RDATA of `type`; relative names are resolved against `origin`.
 * The RFC 3597 §5 generic form "\# <length> <hex>" is accepted for every type. Throws DnsError BAD_RDATA.
 */
export function parseRdata(type: RecordTypeName, text: string, origin: Name): Rdata {
  if (type === 'A' || type === 'AAAA') {
    // Most values of the most common types: the address alone, parsed as the codec would.
    const plain = plainAddress(type, text);
    if (plain !== undefined) return plain;
  }
  const codec = codecFor(type);
  const fields = new RdataFields(type, codec.syntax, text);
  if (/^\s*\\#(\s|$)/.test(text)) return parseGenericRdata(type, fields);
  try {
    return codec.parse(fields, origin, type);
  } catch (e) {
    if (e instanceof DnsError && e.code !== 'BAD_RDATA') {
      throw new DnsError('BAD_RDATA', `${type} RDATA ${JSON.stringify(text)}: ${e.message}`, { cause: e });
    }
    throw e;
  }
}

/** RFC 3597 §5: "\# <length> <hex...>" decoded with the type's wire codec. */
function parseGenericRdata(type: RecordTypeName, fields: RdataFields): Rdata {
  fields.expectAtLeast(2);
  fields.next('\\#');
  const length = fields.u16('generic RDATA length');
  const hex = length === 0 ? '' : fields.hexRest('generic RDATA');
  if (fields.remaining > 0 || hex.length !== length * 2) {
    throw fields.invalid(
      'generic RDATA',
      fields.text,
      `the length says ${length} octets but ${hex.length / 2} were given (RFC 3597 §5)`,
    );
  }
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  try {
    return decodeRdata(RRType[type], new WireReader(bytes), length) as Rdata;
  } catch (e) {
    if (e instanceof DnsError) {
      throw fields.invalid('generic RDATA', fields.text, `does not decode as ${type}: ${e.message}`, e);
    }
    throw e;
  }
}

/**
 * Types whose parser enforces semantic rules (digest lengths, RFC 9460 §2.4.2/§8 consistency, ...) that
 * RDATA decoded from the wire may violate.
 */
const SEMANTICALLY_CHECKED: ReadonlySet<RecordTypeName> = new Set([
  'TLSA',
  'SSHFP',
  'DS',
  'SVCB',
  'HTTPS',
  'TXT',
]);

/**
 * Canonical presentation text: absolute names, quoted strings, lowercase hex, RFC 5952 IPv6. RDATA that the
 * strict parser would reject (possible for RDATA decoded from the wire) is printed in the RFC 3597 §5
 * generic form "\# <length> <hex>" instead, so that parseRdata(printRdata(r)) always gives back r.
 */
export function printRdata(rdata: Rdata): string {
  const codec = codecFor(rdata.type);
  const text = codec.print(rdata);
  if (SEMANTICALLY_CHECKED.has(rdata.type)) {
    try {
      codec.parse(new RdataFields(rdata.type, codec.syntax, text), '.', rdata.type);
    } catch {
      const w = new WireWriter(64);
      codec.encode(rdata, w);
      return printUnknownRdata({ type: RRType[rdata.type], data: w.finish() });
    }
  }
  return text;
}

/** RFC 3597 §5 generic presentation "\# <length> <hex>" of opaque RDATA. */
export function printUnknownRdata(rdata: UnknownRdata): string {
  return rdata.data.length === 0 ? '\\# 0' : `\\# ${rdata.data.length} ${bytesToHex(rdata.data)}`;
}

/** Writes the RDATA only (the caller writes RDLENGTH). */
export function encodeRdata(rdata: Rdata, w: WireWriter): void {
  codecFor(rdata.type).encode(rdata, w);
}

/**
 * Reads exactly `length` octets of RDATA of type code `type`. Types without a structured model come back
 * as UnknownRdata (RFC 3597) holding a copy of the octets.
 */
export function decodeRdata(type: number, r: WireReader, length: number): Rdata | UnknownRdata {
  const start = r.offset;
  const end = start + length;
  if (end > r.buf.length) {
    throw new WireError(
      'TRUNCATED',
      `message truncated: ${typeName(type)} RDATA at offset ${start} needs ${length} octets but only ${r.buf.length - start} remain`,
    );
  }
  const name = TYPE_BY_CODE.get(type);
  if (name === undefined) {
    r.offset = end;
    return { type, data: r.buf.slice(start, end) };
  }
  // A reader that ends with the RDATA turns any overrun into an error instead of reading the next record.
  const bounded = end === r.buf.length ? r : new WireReader(r.buf.subarray(0, end), start);
  let rdata: Rdata;
  try {
    rdata = codecFor(name).decode(bounded, end, name);
  } catch (e) {
    if (e instanceof WireError && e.code === 'TRUNCATED') {
      throw new WireError(
        'BAD_RDATA',
        `${name} RDATA at offset ${start} is malformed: its fields do not fit its RDLENGTH of ${length} (${e.message})`,
        { cause: e },
      );
    }
    throw e;
  }
  if (bounded.offset !== end) {
    throw new WireError(
      'BAD_RDATA',
      `${name} RDATA at offset ${start} has ${end - bounded.offset} octet(s) left over after its fields; RDLENGTH ${length} does not match`,
    );
  }
  r.offset = end;
  return rdata;
}

/**
 * Names that need A/AAAA in the additional section: NS host (RFC 1034 §4.3.2 step 6), MX exchange
 * (RFC 1035 §3.3.9), SRV target (RFC 2782) and SVCB/HTTPS target (RFC 9460 §4), except the root ".".
 */
export function additionalTargets(rdata: Rdata): Name[] {
  switch (rdata.type) {
    case 'NS':
      return [rdata.host];
    case 'MX':
      return rdata.exchange === '.' ? [] : [rdata.exchange];
    case 'SRV':
    case 'SVCB':
    case 'HTTPS':
      return rdata.target === '.' ? [] : [rdata.target];
    default:
      return [];
  }
}

/** Fields holding domain names, compared case-insensitively. */
const NAME_FIELDS: ReadonlySet<string> = new Set([
  'target',
  'host',
  'exchange',
  'mname',
  'rname',
  'replacement',
]);

/** Field by field; with `foldNames`, the domain names of `NAME_FIELDS` compared case-insensitively. */
function valueEquals(a: unknown, b: unknown, foldNames: boolean): boolean {
  if (a === b) return true;
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!valueEquals(a[i], b[i], foldNames)) return false;
    return true;
  }
  if (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    const ra = a as Record<string, unknown>;
    const rb = b as Record<string, unknown>;
    for (const k of ka) {
      if (!(k in rb)) return false;
      const x = ra[k];
      const y = rb[k];
      if (foldNames && NAME_FIELDS.has(k) && typeof x === 'string' && typeof y === 'string') {
        if (!nameEquals(x, y)) return false;
      } else if (!valueEquals(x, y, foldNames)) {
        return false;
      }
    }
    return true;
  }
  return false;
}

/** Canonical equality: same type and fields, with domain names compared case-insensitively. */
export function rdataEquals(a: Rdata, b: Rdata): boolean {
  return a.type === b.type && valueEquals(a, b, true);
}

/**
 * A string equal for two RDATA exactly when `rdataEquals` holds: the type and every field, domain
 * names of `NAME_FIELDS` case-folded (`nameKey`), octets in hex. For sets and maps of RDATA, so that
 * finding duplicates among n records takes n keys instead of n² comparisons.
 */
export function rdataKey(rdata: Rdata): string {
  return valueKey(rdata, undefined);
}

function valueKey(value: unknown, field: string | undefined): string {
  if (typeof value === 'string')
    return JSON.stringify(field !== undefined && NAME_FIELDS.has(field) ? nameKey(value) : value);
  if (value instanceof Uint8Array) return `x${bytesToHex(value)}`;
  if (Array.isArray(value)) return `[${value.map((v) => valueKey(v, undefined)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${valueKey(record[k], k)}`)
      .join(',')}}`;
  }
  return `${typeof value}:${String(value)}`;
}

/**
 * The same fields with the same values, names spelled alike (case kept): identical RDATA print the
 * same `printRdata` text. Cheaper than printing both; RDATA that are not identical may still print
 * alike (e.g. an address kept in another spelling), which only `printRdata` tells.
 */
export function rdataIdentical(a: Rdata, b: Rdata): boolean {
  return a.type === b.type && valueEquals(a, b, false);
}
