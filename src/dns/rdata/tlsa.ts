/** TLSA RDATA (RFC 6698 §2). */
import { bytesToHex, hexToBytes } from '../hex.ts';
import type { RdataCodec } from './codec.ts';
import type { TlsaRdata } from './types.ts';

/** RFC 6698 §2.1.3: matching type 1 is SHA-256, 2 is SHA-512. */
const DIGEST_OCTETS: Readonly<Record<number, number>> = { 1: 32, 2: 64 };

export const tlsaCodec: RdataCodec<TlsaRdata> = {
  syntax: '<usage 0-255> <selector 0-255> <matching type 0-255> <certificate association data hex>',
  parse(f) {
    f.expectAtLeast(4);
    const usage = f.u8('usage');
    const selector = f.u8('selector');
    const matchingType = f.u8('matching type');
    const data = f.hexRest(
      'certificate association data',
      DIGEST_OCTETS[matchingType],
      `matching type ${matchingType} (${matchingType === 1 ? 'SHA-256' : 'SHA-512'})`,
    );
    return { type: 'TLSA', usage, selector, matchingType, data };
  },
  print: (r) => `${r.usage} ${r.selector} ${r.matchingType} ${r.data}`,
  encode(r, w) {
    w.u8(r.usage);
    w.u8(r.selector);
    w.u8(r.matchingType);
    w.bytes(hexToBytes(r.data) ?? new Uint8Array(0));
  },
  decode(r, end) {
    const usage = r.u8();
    const selector = r.u8();
    const matchingType = r.u8();
    return { type: 'TLSA', usage, selector, matchingType, data: bytesToHex(r.bytes(end - r.offset)) };
  },
};
