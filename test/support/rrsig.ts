/** RRSIG RDATA read back in tests, to check what a signer or a server put in it. */
import type { RrsigRdata } from '../../src/dns/dnssec/rrsig.ts';

/**
 * RRSIG RDATA back into its fields (RFC 4034 §3.1): the fixed 18 octets, then the signer's name,
 * uncompressed (RFC 4034 §3.1.7), its labels read octet for octet, then the signature.
 */
export function decodeRrsig(w: Uint8Array): RrsigRdata {
  const v = new DataView(w.buffer, w.byteOffset, w.byteLength);
  let at = 18;
  const labels: string[] = [];
  while (w[at] !== 0) {
    labels.push(Buffer.from(w.subarray(at + 1, at + 1 + w[at]!)).toString('latin1'));
    at += w[at]! + 1;
  }
  return {
    typeCovered: v.getUint16(0),
    algorithm: w[2]!,
    labels: w[3]!,
    originalTtl: v.getUint32(4),
    expiration: v.getUint32(8),
    inception: v.getUint32(12),
    keyTag: v.getUint16(16),
    signerName: `${labels.join('.')}.`,
    signature: w.subarray(at + 1),
  };
}
