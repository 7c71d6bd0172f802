/**
 * DNSSEC keys: the algorithms Zonekeeper signs with, DNSKEY and DS RDATA, key tags. Keys are plain
 * bytes here (the public key field of the DNSKEY and the raw private scalar or seed); where they are
 * stored is the adapters' business.
 */
import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { base64ToBytes, bytesToBase64 } from '../base64.ts';
import { DnsError } from '../errors.ts';
import { bytesToHex } from '../hex.ts';
import type { Name } from '../name.ts';
import type { DsRdata } from '../rdata.ts';
import { canonicalName } from './canonical.ts';

/** The signing algorithms supported (IANA DNS Security Algorithm Numbers). */
export const DNSSEC_ALGORITHMS = {
  /** RFC 6605: ECDSA Curve P-256 with SHA-256. */
  ECDSAP256SHA256: 13,
  /** RFC 6605: ECDSA Curve P-384 with SHA-384. */
  ECDSAP384SHA384: 14,
  /** RFC 8080: Ed25519. */
  ED25519: 15,
} as const;
export type DnssecAlgorithmName = keyof typeof DNSSEC_ALGORITHMS;
export type DnssecAlgorithm = (typeof DNSSEC_ALGORITHMS)[DnssecAlgorithmName];

/** Per algorithm: the JOSE curve, and the octets of the private key and of the DNSKEY public key. */
const CURVES: Readonly<
  Record<
    DnssecAlgorithm,
    { kty: 'EC' | 'OKP'; crv: string; node: string; privateOctets: number; publicOctets: number }
  >
> = {
  13: { kty: 'EC', crv: 'P-256', node: 'P-256', privateOctets: 32, publicOctets: 64 },
  14: { kty: 'EC', crv: 'P-384', node: 'P-384', privateOctets: 48, publicOctets: 96 },
  15: { kty: 'OKP', crv: 'Ed25519', node: 'ed25519', privateOctets: 32, publicOctets: 32 },
};

export function algorithmName(algorithm: number): DnssecAlgorithmName | undefined {
  for (const [name, code] of Object.entries(DNSSEC_ALGORITHMS))
    if (code === algorithm) return name as DnssecAlgorithmName;
  return undefined;
}

/** DNSKEY flags (RFC 4034 §2.1.1): Zone Key, plus Secure Entry Point for a key-signing key. */
export const DNSKEY_FLAGS = { ZSK: 256, KSK: 257 } as const;

export interface DnssecKey {
  algorithm: DnssecAlgorithm;
  /** 257 for a KSK or CSK (SEP bit set), 256 for a ZSK. */
  flags: number;
  /** The DNSKEY public key field: Q = x | y for ECDSA (RFC 6605 §4), A for Ed25519 (RFC 8080 §3). */
  publicKey: Uint8Array;
  /** The private scalar d (ECDSA) or the 32-octet seed (Ed25519). */
  privateKey: Uint8Array;
}

const b64url = (b: Uint8Array) => Buffer.from(b).toString('base64url');
const fromB64url = (s: string | undefined) => new Uint8Array(Buffer.from(s ?? '', 'base64url'));

/** Generates a key pair with node:crypto. */
export function generateDnssecKey(algorithm: DnssecAlgorithm, flags: number = DNSKEY_FLAGS.KSK): DnssecKey {
  const curve = CURVES[algorithm];
  const { privateKey } =
    curve.kty === 'OKP'
      ? generateKeyPairSync('ed25519')
      : generateKeyPairSync('ec', { namedCurve: curve.node });
  const jwk = privateKey.export({ format: 'jwk' });
  const publicKey = curve.kty === 'OKP' ? fromB64url(jwk.x) : concat(fromB64url(jwk.x), fromB64url(jwk.y));
  return { algorithm, flags, publicKey, privateKey: fromB64url(jwk.d) };
}

const keyObjects = new WeakMap<DnssecKey, KeyObject>();

/** The private key as a node:crypto KeyObject (for Ed25519 signing), made once per key. */
export function privateKeyObject(key: DnssecKey): KeyObject {
  let made = keyObjects.get(key);
  if (made === undefined) {
    made = makeKeyObject(key);
    keyObjects.set(key, made);
  }
  return made;
}

function makeKeyObject(key: DnssecKey): KeyObject {
  const curve = CURVES[key.algorithm];
  const half = curve.publicOctets / 2;
  const jwk =
    curve.kty === 'OKP'
      ? { kty: 'OKP', crv: curve.crv, d: b64url(key.privateKey), x: b64url(key.publicKey) }
      : {
          kty: 'EC',
          crv: curve.crv,
          d: b64url(key.privateKey),
          x: b64url(key.publicKey.subarray(0, half)),
          y: b64url(key.publicKey.subarray(half)),
        };
  return createPrivateKey({ key: jwk, format: 'jwk' });
}

/** Checks a key's field lengths, so that a stored key that was cut or mixed up fails loudly. */
export function checkDnssecKey(key: DnssecKey): void {
  const curve = CURVES[key.algorithm];
  if (!curve)
    throw new DnsError('DNSSEC_ALGORITHM', `DNSSEC algorithm ${key.algorithm} is not supported (13, 14, 15)`);
  if (key.privateKey.length !== curve.privateOctets || key.publicKey.length !== curve.publicOctets)
    throw new DnsError(
      'DNSSEC_KEY_LENGTH',
      `a ${curve.crv} key has a ${curve.privateOctets}-octet private key and a ${curve.publicOctets}-octet public key; this one has ${key.privateKey.length} and ${key.publicKey.length}`,
    );
}

/** DNSKEY RDATA (RFC 4034 §2.1): flags, protocol 3, algorithm, public key. */
export function dnskeyRdata(key: Pick<DnssecKey, 'flags' | 'algorithm' | 'publicKey'>): Uint8Array {
  const out = new Uint8Array(4 + key.publicKey.length);
  out[0] = key.flags >>> 8;
  out[1] = key.flags & 0xff;
  out[2] = 3;
  out[3] = key.algorithm;
  out.set(key.publicKey, 4);
  return out;
}

/**
 * RFC 8078 §4: the CDS and CDNSKEY records a signed zone publishes to ask its parent to remove its DS
 * (go insecure): CDS `0 0 0 00`, CDNSKEY `0 3 0 AA==` (algorithm 0, a one-octet zero key).
 */
export const DELETE_CDS: DsRdata = { type: 'DS', keyTag: 0, algorithm: 0, digestType: 0, digest: '00' };
export const DELETE_CDNSKEY: Pick<DnssecKey, 'flags' | 'algorithm' | 'publicKey'> = {
  flags: 0,
  algorithm: 0 as DnssecAlgorithm,
  publicKey: new Uint8Array(1),
};

/** DNSKEY presentation form: `flags 3 algorithm base64`. */
export function printDnskey(key: Pick<DnssecKey, 'flags' | 'algorithm' | 'publicKey'>): string {
  return `${key.flags} 3 ${key.algorithm} ${bytesToBase64(key.publicKey)}`;
}

/** Parses a DNSKEY's presentation form back (flags, algorithm, public key). */
export function parseDnskey(text: string): Pick<DnssecKey, 'flags' | 'algorithm' | 'publicKey'> {
  const [flags, protocol, algorithm, ...key] = text.trim().split(/\s+/);
  const publicKey = base64ToBytes(key.join(''));
  const alg = Number(algorithm);
  if (protocol !== '3' || publicKey === undefined || !CURVES[alg as DnssecAlgorithm])
    throw new DnsError('DNSKEY_SYNTAX', `not a DNSKEY of a supported algorithm: ${JSON.stringify(text)}`);
  return { flags: Number(flags), algorithm: alg as DnssecAlgorithm, publicKey };
}

/** The key tag of a DNSKEY RDATA (RFC 4034 Appendix B; algorithm 1 is not supported here). */
export function keyTag(rdata: Uint8Array): number {
  let ac = 0;
  for (let i = 0; i < rdata.length; i++) ac += i & 1 ? rdata[i]! : rdata[i]! << 8;
  ac += (ac >>> 16) & 0xffff;
  return ac & 0xffff;
}

/** The DS of a DNSKEY at `owner` (RFC 4034 §5.1.4): digest type 2 SHA-256 (RFC 4509) or 4 SHA-384 (RFC 6605). */
export function dsOf(
  owner: Name,
  key: Pick<DnssecKey, 'flags' | 'algorithm' | 'publicKey'>,
  digestType: 2 | 4 = 2,
): DsRdata {
  const rdata = dnskeyRdata(key);
  const digest = createHash(digestType === 2 ? 'sha256' : 'sha384')
    .update(canonicalName(owner))
    .update(rdata)
    .digest();
  return {
    type: 'DS',
    keyTag: keyTag(rdata),
    algorithm: key.algorithm,
    digestType,
    digest: bytesToHex(digest),
  };
}

/** The key in BIND's private key file format (v1.3), which PowerDNS's cryptokeys API also accepts. */
export function iscPrivateKey(key: DnssecKey): string {
  return [
    'Private-key-format: v1.3',
    `Algorithm: ${key.algorithm} (${algorithmName(key.algorithm)})`,
    `PrivateKey: ${bytesToBase64(key.privateKey)}`,
    '',
  ].join('\n');
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
