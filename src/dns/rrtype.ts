/** Resource record TYPE and CLASS codes (RFC 1035 §3.2.2-§3.2.4, IANA DNS parameters). */

export const RRType = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  PTR: 12,
  MX: 15,
  TXT: 16,
  AAAA: 28,
  SRV: 33,
  NAPTR: 35,
  OPT: 41,
  DS: 43,
  SSHFP: 44,
  RRSIG: 46,
  NSEC: 47,
  DNSKEY: 48,
  NSEC3: 50,
  NSEC3PARAM: 51,
  TLSA: 52,
  SVCB: 64,
  HTTPS: 65,
  CDS: 59,
  CDNSKEY: 60,
  IXFR: 251,
  AXFR: 252,
  ANY: 255,
  CAA: 257,
  // PowerDNS uses private-use code 65401 for its ALIAS pseudo-type.
  ALIAS: 65401,
} as const;

/**
 * Whether a type code names data internal to Zonekeeper rather than a DNS type: ALIAS (PowerDNS's
 * private-use code 65401) is answered through A and AAAA queries, so a query for the code itself is
 * answered as for any unknown type (NODATA), and metrics count it as an unknown type.
 */
export function isInternalType(code: number): boolean {
  return code === RRType.ALIAS;
}

/** The record types Zonekeeper manages in zones. */
export type RecordTypeName =
  | 'A'
  | 'AAAA'
  | 'CNAME'
  | 'ALIAS'
  | 'TXT'
  | 'MX'
  | 'SRV'
  | 'CAA'
  | 'NS'
  | 'PTR'
  | 'SOA'
  | 'TLSA'
  | 'SSHFP'
  | 'HTTPS'
  | 'SVCB'
  | 'DS'
  | 'NAPTR';

export const RECORD_TYPES: readonly RecordTypeName[] = [
  'A',
  'AAAA',
  'CNAME',
  'ALIAS',
  'TXT',
  'MX',
  'SRV',
  'CAA',
  'NS',
  'PTR',
  'SOA',
  'TLSA',
  'SSHFP',
  'HTTPS',
  'SVCB',
  'DS',
  'NAPTR',
];

const RECORD_TYPE_SET: ReadonlySet<string> = new Set(RECORD_TYPES);

export function isRecordTypeName(s: string): s is RecordTypeName {
  return RECORD_TYPE_SET.has(s);
}

const CODE_BY_NAME: ReadonlyMap<string, number> = new Map(Object.entries(RRType));
const NAME_BY_CODE: ReadonlyMap<number, string> = new Map(Object.entries(RRType).map(([k, v]) => [v, k]));

/** Parses "TYPE123"/"CLASS5" style generic mnemonics (RFC 3597 §5): a prefix then 1-5 decimal digits ≤ 65535. */
function genericCode(upper: string, prefix: string): number | undefined {
  if (!upper.startsWith(prefix)) return undefined;
  const digits = upper.slice(prefix.length);
  if (digits.length === 0 || digits.length > 5) return undefined;
  let value = 0;
  for (let i = 0; i < digits.length; i++) {
    const c = digits.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return undefined;
    value = value * 10 + (c - 0x30);
  }
  return value <= 0xffff ? value : undefined;
}

/** Type code for a mnemonic (case-insensitive) or "TYPE123" (RFC 3597 §5); undefined if unknown. */
export function typeCode(name: string): number | undefined {
  const upper = name.toUpperCase();
  return CODE_BY_NAME.get(upper) ?? genericCode(upper, 'TYPE');
}

/** Mnemonic for a type code, or "TYPE123" (RFC 3597 §5). */
export function typeName(code: number): string {
  return NAME_BY_CODE.get(code) ?? `TYPE${code}`;
}

export const RRClass = { IN: 1, CH: 3, HS: 4, NONE: 254, ANY: 255 } as const;

const CLASS_CODE_BY_NAME: ReadonlyMap<string, number> = new Map(Object.entries(RRClass));
const CLASS_NAME_BY_CODE: ReadonlyMap<number, string> = new Map(
  Object.entries(RRClass).map(([k, v]) => [v, k]),
);

/** Mnemonic for a class code, or "CLASS5" (RFC 3597 §5). */
export function className(code: number): string {
  return CLASS_NAME_BY_CODE.get(code) ?? `CLASS${code}`;
}

/** Class code for a mnemonic (case-insensitive) or "CLASS5" (RFC 3597 §5); undefined if unknown. */
export function classCode(name: string): number | undefined {
  const upper = name.toUpperCase();
  return CLASS_CODE_BY_NAME.get(upper) ?? genericCode(upper, 'CLASS');
}
