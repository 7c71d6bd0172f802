/**
 * RRSIG: building the data a signature covers and signing it (RFC 4034 §3), with signatures that are
 * a function of their input — ECDSA with RFC 6979 deterministic nonces, Ed25519 deterministic by
 * definition (RFC 8032) — so that every process signing the same RRset at the same times with the same
 * key produces the same bytes.
 */
import { createHash, createPublicKey, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { bytesToBase64 } from '../base64.ts';
import { DnsError } from '../errors.ts';
import { isWildcardName, labelCount, type Name } from '../name.ts';
import { typeName } from '../rrtype.ts';
import { canonicalName, canonicalOrder } from './canonical.ts';
import { P256, P384, signEcdsaDeterministic } from './ecdsa.ts';
import { type DnssecKey, dnskeyRdata, keyTag, privateKeyObject } from './keys.ts';

export interface RrsigRdata {
  typeCovered: number;
  algorithm: number;
  /** Labels of the owner name, not counting the root or a leading wildcard (RFC 4034 §3.1.3). */
  labels: number;
  originalTtl: number;
  /** Seconds since the epoch, modulo 2^32 (RFC 4034 §3.1.5). */
  expiration: number;
  inception: number;
  keyTag: number;
  signerName: Name;
  signature: Uint8Array;
}

/** The RRSIG Labels field of an owner (RFC 4034 §3.1.3). */
export function rrsigLabels(owner: Name): number {
  return labelCount(owner) - (isWildcardName(owner) ? 1 : 0);
}

export interface RRsetToSign {
  owner: Name;
  /** Type code of the RRset. */
  type: number;
  ttl: number;
  /** Each RR's RDATA in canonical wire form (see canonicalRdata). */
  rdatas: readonly Uint8Array[];
}

export interface SignatureWindow {
  inception: number;
  expiration: number;
}

/** RRSIG RDATA up to (not including) the signature, signer name canonical (RFC 4034 §3.1.8.1). */
function rrsigPrefix(r: Omit<RrsigRdata, 'signature'>): Uint8Array {
  const signer = canonicalName(r.signerName);
  const out = new Uint8Array(18 + signer.length);
  const v = new DataView(out.buffer);
  v.setUint16(0, r.typeCovered);
  out[2] = r.algorithm;
  out[3] = r.labels;
  v.setUint32(4, r.originalTtl >>> 0);
  v.setUint32(8, r.expiration >>> 0);
  v.setUint32(12, r.inception >>> 0);
  v.setUint16(16, r.keyTag);
  out.set(signer, 18);
  return out;
}

/**
 * The octets a signature covers (RFC 4034 §3.1.8.1): the RRSIG RDATA without its signature, then every
 * RR of the RRset in canonical form and order (owner lowercased — for a wildcard expansion the
 * wildcard owner — class IN, the original TTL).
 */
export function signedData(prefix: Omit<RrsigRdata, 'signature'>, rrset: RRsetToSign): Uint8Array {
  const head = rrsigPrefix(prefix);
  const owner = canonicalName(rrset.owner);
  const rdatas = canonicalOrder(rrset.rdatas);
  let size = head.length;
  for (const r of rdatas) size += owner.length + 10 + r.length;
  const out = new Uint8Array(size);
  const v = new DataView(out.buffer);
  out.set(head);
  let at = head.length;
  for (const r of rdatas) {
    out.set(owner, at);
    at += owner.length;
    v.setUint16(at, rrset.type);
    v.setUint16(at + 2, 1); // class IN
    v.setUint32(at + 4, prefix.originalTtl >>> 0);
    v.setUint16(at + 8, r.length);
    out.set(r, at + 10);
    at += 10 + r.length;
  }
  return out;
}

/**
 * Signs octets with a key: ECDSA as r | s (RFC 6605 §4) with RFC 6979 nonces, Ed25519 as R | S
 * (RFC 8080 §4); both deterministic. Several messages at once cost less for ECDSA (see ecdsa.ts).
 */
export function signOctets(key: DnssecKey, data: readonly Uint8Array[]): Uint8Array[] {
  switch (key.algorithm) {
    case 13:
      return signEcdsaDeterministic(P256, key.privateKey, data);
    case 14:
      return signEcdsaDeterministic(P384, key.privateKey, data);
    case 15: {
      const privateKey = privateKeyObject(key);
      return data.map((d) => new Uint8Array(nodeSign(null, d, privateKey)));
    }
    default:
      throw new DnsError(
        'DNSSEC_ALGORITHM',
        `DNSSEC algorithm ${(key as DnssecKey).algorithm} is not supported`,
      );
  }
}

/**
 * Signatures kept from one signing of a zone to the next, by the octets they cover and the key. The
 * signatures here are functions of those (RFC 6979, RFC 8032), so one taken from here is the very
 * signature signing again would make: a zone signed again after a change signs only the RRsets whose
 * content, TTL or window changed, and the result is the same bytes as signing everything.
 */
export class SignatureReuse {
  private previous = new Map<string, Uint8Array>();
  private current = new Map<string, Uint8Array>();
  /** Signatures taken from the last signing, and made, in the current one. */
  reused = 0;
  made = 0;

  /** The id of a signature: a SHA-256 of the key's public key and the signed octets. */
  static id(key: DnssecKey, data: Uint8Array): string {
    return createHash('sha256').update(key.publicKey).update(data).digest('base64');
  }

  take(id: string): Uint8Array | undefined {
    const found = this.current.get(id) ?? this.previous.get(id);
    if (found) {
      this.current.set(id, found);
      this.reused++;
    }
    return found;
  }

  keep(id: string, signature: Uint8Array): void {
    this.current.set(id, signature);
    this.made++;
  }

  /** Ends one signing of the zone: signatures it did not use are forgotten at the end of the next. */
  finish(): void {
    this.previous = this.current;
    this.current = new Map();
  }
}

/** Signs RRsets with one key over a validity window (RFC 4034 §3, RFC 4035 §2.2). */
export function signRRsets(
  rrsets: readonly RRsetToSign[],
  key: DnssecKey,
  signer: Name,
  window: SignatureWindow | ((rrset: RRsetToSign) => SignatureWindow),
  reuse?: SignatureReuse,
): RrsigRdata[] {
  const tag = keyTag(dnskeyRdata(key));
  const windowOf = typeof window === 'function' ? window : () => window;
  const prefixes = rrsets.map(
    (rrset, _i, _all, w = windowOf(rrset)): Omit<RrsigRdata, 'signature'> => ({
      typeCovered: rrset.type,
      algorithm: key.algorithm,
      labels: rrsigLabels(rrset.owner),
      originalTtl: rrset.ttl,
      expiration: w.expiration >>> 0,
      inception: w.inception >>> 0,
      keyTag: tag,
      signerName: signer,
    }),
  );
  const data = rrsets.map((rrset, i) => signedData(prefixes[i]!, rrset));
  if (!reuse) {
    const signatures = signOctets(key, data);
    return prefixes.map((prefix, i) => ({ ...prefix, signature: signatures[i]! }));
  }
  const ids = data.map((d) => SignatureReuse.id(key, d));
  const found = ids.map((id) => reuse.take(id));
  const missing = found.flatMap((f, i) => (f === undefined ? [i] : []));
  const made = signOctets(
    key,
    missing.map((i) => data[i]!),
  );
  missing.forEach((i, j) => {
    found[i] = made[j]!;
    reuse.keep(ids[i]!, made[j]!);
  });
  return prefixes.map((prefix, i) => ({ ...prefix, signature: found[i]! }));
}

/** Signs one RRset with one key. */
export function signRRset(
  rrset: RRsetToSign,
  key: DnssecKey,
  signer: Name,
  window: SignatureWindow,
): RrsigRdata {
  return signRRsets([rrset], key, signer, window)[0]!;
}

/**
 * Verifies a signature with node:crypto — an implementation independent of the signing one (used by
 * tests and to check keys read back from storage).
 */
export function verifyRrsig(
  rrsig: RrsigRdata,
  rrset: RRsetToSign,
  key: Pick<DnssecKey, 'algorithm' | 'publicKey'>,
): boolean {
  const data = signedData(rrsig, rrset);
  const half = key.publicKey.length / 2;
  const b64url = (b: Uint8Array) => Buffer.from(b).toString('base64url');
  const jwk =
    key.algorithm === 15
      ? { kty: 'OKP', crv: 'Ed25519', x: b64url(key.publicKey) }
      : {
          kty: 'EC',
          crv: key.algorithm === 13 ? 'P-256' : 'P-384',
          x: b64url(key.publicKey.subarray(0, half)),
          y: b64url(key.publicKey.subarray(half)),
        };
  const publicKey = createPublicKey({ key: jwk, format: 'jwk' });
  if (key.algorithm === 15) return nodeVerify(null, data, publicKey, rrsig.signature);
  return nodeVerify(
    key.algorithm === 13 ? 'sha256' : 'sha384',
    data,
    { key: publicKey, dsaEncoding: 'ieee-p1363' },
    rrsig.signature,
  );
}

/** RRSIG RDATA in wire form (the signer name uncompressed, RFC 4034 §3.1.7). */
export function encodeRrsig(r: RrsigRdata): Uint8Array {
  const prefix = rrsigPrefix(r);
  const out = new Uint8Array(prefix.length + r.signature.length);
  out.set(prefix);
  out.set(r.signature, prefix.length);
  return out;
}

/** YYYYMMDDHHmmSS for an RRSIG time field (RFC 4034 §3.2). */
export function printRrsigTime(seconds: number): string {
  return new Date((seconds >>> 0) * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

/** RRSIG presentation form (RFC 4034 §3.2). */
export function printRrsig(r: RrsigRdata): string {
  return [
    typeName(r.typeCovered),
    r.algorithm,
    r.labels,
    r.originalTtl,
    printRrsigTime(r.expiration),
    printRrsigTime(r.inception),
    r.keyTag,
    r.signerName,
    bytesToBase64(r.signature),
  ].join(' ');
}
