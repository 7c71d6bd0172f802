/** The RDATA model: one variant per supported record type, discriminated on `type`. */
import type { Name } from '../name.ts';

export interface ARdata {
  type: 'A';
  /** Dotted quad, normalised. */
  address: string;
}
export interface AaaaRdata {
  type: 'AAAA';
  /** RFC 5952 canonical text. */
  address: string;
}
export interface CnameRdata {
  type: 'CNAME';
  target: Name;
}
export interface AliasRdata {
  type: 'ALIAS';
  target: Name;
}
export interface NsRdata {
  type: 'NS';
  host: Name;
}
export interface PtrRdata {
  type: 'PTR';
  target: Name;
}
export interface MxRdata {
  type: 'MX';
  preference: number;
  exchange: Name;
}
export interface TxtRdata {
  type: 'TXT';
  /** Binary strings (one char per octet), each at most 255 octets. */
  strings: string[];
}
export interface SrvRdata {
  type: 'SRV';
  priority: number;
  weight: number;
  port: number;
  target: Name;
}
export interface CaaRdata {
  type: 'CAA';
  flags: number;
  tag: string;
  /** Binary string. */
  value: string;
}
export interface SoaRdata {
  type: 'SOA';
  mname: Name;
  rname: Name;
  serial: number;
  refresh: number;
  retry: number;
  expire: number;
  minimum: number;
}
export interface TlsaRdata {
  type: 'TLSA';
  usage: number;
  selector: number;
  matchingType: number;
  /** Lowercase hex. */
  data: string;
}
export interface SshfpRdata {
  type: 'SSHFP';
  algorithm: number;
  fingerprintType: number;
  /** Lowercase hex. */
  fingerprint: string;
}
export interface DsRdata {
  type: 'DS';
  keyTag: number;
  algorithm: number;
  digestType: number;
  /** Lowercase hex. */
  digest: string;
}
export interface NaptrRdata {
  type: 'NAPTR';
  order: number;
  preference: number;
  /** Binary strings. */
  flags: string;
  services: string;
  regexp: string;
  replacement: Name;
}
/** One SvcParam in wire form (RFC 9460 §2.2). */
export interface SvcParam {
  key: number;
  value: Uint8Array;
}
export interface SvcbRdata {
  type: 'SVCB' | 'HTTPS';
  priority: number;
  target: Name;
  /** Sorted by key, no duplicates. */
  params: SvcParam[];
}

export type Rdata =
  | ARdata
  | AaaaRdata
  | CnameRdata
  | AliasRdata
  | NsRdata
  | PtrRdata
  | MxRdata
  | TxtRdata
  | SrvRdata
  | CaaRdata
  | SoaRdata
  | TlsaRdata
  | SshfpRdata
  | DsRdata
  | NaptrRdata
  | SvcbRdata;

/** RFC 3597 opaque RDATA of any type without a structured model here. */
export interface UnknownRdata {
  type: number;
  data: Uint8Array;
}
