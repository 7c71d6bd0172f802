/**
 * Authenticated denial of existence: NSEC (RFC 4034 §4) and NSEC3 (RFC 5155) RDATA, the type bit maps
 * they share, and the NSEC3 owner hash.
 */
import { createHash } from 'node:crypto';
import { DnsError } from '../errors.ts';
import { hexToBytes } from '../hex.ts';
import { encodeNameUncompressed, type Name } from '../name.ts';
import { typeName } from '../rrtype.ts';
import { canonicalName } from './canonical.ts';

/** The Type Bit Maps field (RFC 4034 §4.1.2): one window block per 256 type codes present. */
export function typeBitmaps(types: Iterable<number>): Uint8Array {
  const sorted = [...new Set(types)].sort((a, b) => a - b);
  const blocks: number[] = [];
  let i = 0;
  while (i < sorted.length) {
    const window = sorted[i]! >>> 8;
    const bits = new Uint8Array(32);
    let length = 0;
    while (i < sorted.length && sorted[i]! >>> 8 === window) {
      const low = sorted[i]! & 0xff;
      bits[low >>> 3]! |= 0x80 >>> (low & 7);
      length = (low >>> 3) + 1;
      i++;
    }
    blocks.push(window, length, ...bits.subarray(0, length));
  }
  return new Uint8Array(blocks);
}

/** The type mnemonics of a bit map, in order, for the presentation form. */
export function printTypes(types: Iterable<number>): string {
  return [...new Set(types)]
    .sort((a, b) => a - b)
    .map(typeName)
    .join(' ');
}

/** NSEC RDATA (RFC 4034 §4.1): the next owner name (uncompressed, case kept, RFC 6840 §5.1) and the bit maps. */
export function nsecRdata(next: Name, types: Iterable<number>): Uint8Array {
  const name = encodeNameUncompressed(next);
  const maps = typeBitmaps(types);
  const out = new Uint8Array(name.length + maps.length);
  out.set(name);
  out.set(maps, name.length);
  return out;
}

/** RFC 9276 §3.1: zero extra iterations and an empty salt. */
export interface Nsec3Params {
  /** 1 = SHA-1, the only hash algorithm defined (RFC 5155 §11). */
  hashAlgorithm: 1;
  /** Opt-Out (RFC 5155 §3.1.2.1); NSEC3PARAM always carries 0 (§4.1.2). */
  flags: number;
  iterations: number;
  /** Hex, empty for no salt. */
  salt: string;
}
export const NSEC3_RFC9276: Nsec3Params = { hashAlgorithm: 1, flags: 0, iterations: 0, salt: '' };

/** The NSEC3 hash of a name: IH(salt, x, k) (RFC 5155 §5), SHA-1 over the canonical wire name. */
export function nsec3Hash(name: Name, params: Pick<Nsec3Params, 'iterations' | 'salt'>): Uint8Array {
  const salt = hexToBytes(params.salt);
  if (salt === undefined || salt.length > 255)
    throw new DnsError(
      'NSEC3_SALT',
      `NSEC3 salt ${JSON.stringify(params.salt)} is not hex of at most 255 octets`,
    );
  let digest = createHash('sha1').update(canonicalName(name)).update(salt).digest();
  for (let k = 0; k < params.iterations; k++)
    digest = createHash('sha1').update(digest).update(salt).digest();
  return new Uint8Array(digest);
}

const BASE32HEX = '0123456789abcdefghijklmnopqrstuv';

/** Base32 with the extended hex alphabet, no padding (RFC 4648 §7, RFC 5155 §3.3), lowercase. */
export function base32hex(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const b of bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32HEX[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32HEX[(buffer << (5 - bits)) & 31];
  return out;
}

/** The owner label of a name's NSEC3 record (RFC 5155 §3): base32hex of its hash. */
export function nsec3Label(name: Name, params: Pick<Nsec3Params, 'iterations' | 'salt'>): string {
  return base32hex(nsec3Hash(name, params));
}

/** NSEC3 RDATA (RFC 5155 §3.2). */
export function nsec3Rdata(params: Nsec3Params, nextHashed: Uint8Array, types: Iterable<number>): Uint8Array {
  const salt = hexToBytes(params.salt) ?? new Uint8Array(0);
  const maps = typeBitmaps(types);
  const out = new Uint8Array(6 + salt.length + nextHashed.length + maps.length);
  out[0] = params.hashAlgorithm;
  out[1] = params.flags;
  out[2] = params.iterations >>> 8;
  out[3] = params.iterations & 0xff;
  out[4] = salt.length;
  out.set(salt, 5);
  out[5 + salt.length] = nextHashed.length;
  out.set(nextHashed, 6 + salt.length);
  out.set(maps, 6 + salt.length + nextHashed.length);
  return out;
}

/** NSEC3PARAM RDATA (RFC 5155 §4.2): flags are 0 here whatever the chain's Opt-Out. */
export function nsec3paramRdata(params: Nsec3Params): Uint8Array {
  const salt = hexToBytes(params.salt) ?? new Uint8Array(0);
  const out = new Uint8Array(5 + salt.length);
  out[0] = params.hashAlgorithm;
  out[1] = 0;
  out[2] = params.iterations >>> 8;
  out[3] = params.iterations & 0xff;
  out[4] = salt.length;
  out.set(salt, 5);
  return out;
}

/** NSEC3 presentation form (RFC 5155 §3.3): `alg flags iterations salt|- next types…`. */
export function printNsec3(params: Nsec3Params, nextHashed: Uint8Array, types: Iterable<number>): string {
  const t = printTypes(types);
  return `${params.hashAlgorithm} ${params.flags} ${params.iterations} ${params.salt === '' ? '-' : params.salt.toLowerCase()} ${base32hex(nextHashed)}${t ? ` ${t}` : ''}`;
}

/** NSEC3PARAM presentation form (RFC 5155 §4.3). */
export function printNsec3param(params: Nsec3Params): string {
  return `${params.hashAlgorithm} 0 ${params.iterations} ${params.salt === '' ? '-' : params.salt.toLowerCase()}`;
}
