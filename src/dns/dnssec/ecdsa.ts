/**
 * Deterministic ECDSA (RFC 6979) over P-256/SHA-256 and P-384/SHA-384 (RFC 6605), with node:crypto:
 * the nonce k is derived from the key and the message by HMAC-DRBG (RFC 6979 §3.2), k·G is computed by
 * OpenSSL through ECDH (the only scalar multiplication, at native speed), and the rest is arithmetic
 * modulo the group order. Same key and message, same signature — in every process that signs.
 */
import { createECDH, hash as digest } from 'node:crypto';

interface Curve {
  /** The group order q. */
  q: bigint;
  /** Octets of q (and of the hash: SHA-256 for P-256, SHA-384 for P-384, so hlen = qlen). */
  octets: number;
  hash: 'sha256' | 'sha384';
  ecdh: string;
}

export const P256: Curve = {
  q: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
  octets: 32,
  hash: 'sha256',
  ecdh: 'prime256v1',
};
export const P384: Curve = {
  q: 0xffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973n,
  octets: 48,
  hash: 'sha384',
  ecdh: 'secp384r1',
};

function toInt(bytes: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`);
}

function toOctets(v: bigint, octets: number): Uint8Array {
  return new Uint8Array(Buffer.from(v.toString(16).padStart(octets * 2, '0'), 'hex'));
}

/**
 * HMAC (RFC 2104) from two one-shot hashes: the nonce derivation makes at least five per signature, and
 * a one-shot hash costs a fraction of a createHmac object. The key is never longer than the block.
 */
function hmacOneShot(
  hash: 'sha256' | 'sha384',
  hashOctets: number,
  key: Uint8Array,
  parts: readonly Uint8Array[],
): Uint8Array {
  const block = hash === 'sha256' ? 64 : 128;
  let length = 0;
  for (const p of parts) length += p.length;
  const inner = new Uint8Array(block + length);
  const outer = new Uint8Array(block + hashOctets);
  for (let i = 0; i < block; i++) {
    const b = i < key.length ? key[i]! : 0;
    inner[i] = b ^ 0x36;
    outer[i] = b ^ 0x5c;
  }
  let at = block;
  for (const p of parts) {
    inner.set(p, at);
    at += p.length;
  }
  outer.set(digest(hash, inner, 'buffer'), block);
  return new Uint8Array(digest(hash, outer, 'buffer'));
}

/** a⁻¹ mod m (m prime, a not a multiple of m), by the extended Euclidean algorithm. */
function modInverse(a: bigint, m: bigint): bigint {
  let r0 = a % m;
  let r1 = m;
  let s0 = 1n;
  let s1 = 0n;
  while (r1 !== 0n) {
    const quotient = r0 / r1;
    const r2 = r0 - quotient * r1;
    r0 = r1;
    r1 = r2;
    const s2 = s0 - quotient * s1;
    s0 = s1;
    s1 = s2;
  }
  return s0 < 0n ? s0 + m : s0;
}

interface Nonce {
  h: bigint;
  k: bigint;
  r: bigint;
}

/** RFC 6979 §3.2: the nonce for one message, and r = (k·G).x mod q computed by OpenSSL (ECDH). */
function nonceOf(
  curve: Curve,
  x: bigint,
  xOctets: Uint8Array,
  message: Uint8Array,
  ecdh: ReturnType<typeof createECDH>,
): Nonce {
  const { q, octets, hash } = curve;
  const h = toInt(digest(hash, message, 'buffer'));
  // bits2octets(h1) (RFC 6979 §2.3.4): hlen = qlen here, so bits2int is the plain integer.
  const hOctets = toOctets(h % q, octets);
  const hmac = (key: Uint8Array, ...parts: Uint8Array[]) => hmacOneShot(hash, octets, key, parts);
  // Steps b-g.
  let v: Uint8Array = new Uint8Array(octets).fill(1);
  let k: Uint8Array = new Uint8Array(octets);
  k = hmac(k, v, Uint8Array.of(0), xOctets, hOctets);
  v = hmac(k, v);
  k = hmac(k, v, Uint8Array.of(1), xOctets, hOctets);
  v = hmac(k, v);
  for (;;) {
    // Step h: hlen = qlen, so one HMAC output is T.
    v = hmac(k, v);
    const nonce = toInt(v);
    if (nonce >= 1n && nonce < q) {
      ecdh.setPrivateKey(Buffer.from(v));
      const point = ecdh.getPublicKey(); // 0x04 | X | Y
      const r = toInt(point.subarray(1, 1 + octets)) % q;
      // s = 0 needs h + x·r ≡ 0 (mod q): probability 2^-256, checked below all the same.
      if (r !== 0n && (h + x * r) % q !== 0n) return { h, k: nonce, r };
    }
    k = hmac(k, v, Uint8Array.of(0));
    v = hmac(k, v);
  }
}

/**
 * Signs each message (hashed here with the curve's hash) with private scalar `d`; returns r | s per
 * message, each half `curve.octets` long (the DNSSEC signature field, RFC 6605 §4). The modular
 * inverses of the nonces are taken all at once (Montgomery's trick: one inversion and three
 * multiplications per message), since an inversion is the costliest step done in JavaScript.
 */
export function signEcdsaDeterministic(
  curve: Curve,
  d: Uint8Array,
  messages: readonly Uint8Array[],
): Uint8Array[] {
  const { q, octets } = curve;
  const x = toInt(d);
  const xOctets = toOctets(x, octets);
  const ecdh = createECDH(curve.ecdh);
  const nonces = messages.map((m) => nonceOf(curve, x, xOctets, m, ecdh));
  const prefix: bigint[] = [];
  let product = 1n;
  for (const n of nonces) {
    prefix.push(product);
    product = (product * n.k) % q;
  }
  let inverse = modInverse(product, q);
  const out: Uint8Array[] = new Array(nonces.length);
  for (let i = nonces.length - 1; i >= 0; i--) {
    const n = nonces[i]!;
    const kInverse = (inverse * prefix[i]!) % q;
    inverse = (inverse * n.k) % q;
    const s = (kInverse * ((n.h + x * n.r) % q)) % q;
    const sig = new Uint8Array(2 * octets);
    sig.set(toOctets(n.r, octets));
    sig.set(toOctets(s, octets), octets);
    out[i] = sig;
  }
  return out;
}
