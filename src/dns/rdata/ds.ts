/** DS RDATA (RFC 4034 §5). */
import { bytesToHex, hexToBytes } from '../hex.ts';
import type { RdataCodec } from './codec.ts';
import type { DsRdata } from './types.ts';

/** Digest lengths: 1 SHA-1 (RFC 4034), 2 SHA-256 (RFC 4509), 4 SHA-384 (RFC 6605). */
const DIGESTS: Readonly<Record<number, { octets: number; name: string }>> = {
  1: { octets: 20, name: 'SHA-1' },
  2: { octets: 32, name: 'SHA-256' },
  4: { octets: 48, name: 'SHA-384' },
};

export const dsCodec: RdataCodec<DsRdata> = {
  syntax: '<key tag 0-65535> <algorithm 0-255> <digest type 0-255> <digest hex>',
  parse(f) {
    f.expectAtLeast(4);
    const keyTag = f.u16('key tag');
    const algorithm = f.u8('algorithm');
    const digestType = f.u8('digest type');
    const known = DIGESTS[digestType];
    const digest = f.hexRest('digest', known?.octets, `digest type ${digestType} (${known?.name})`);
    return { type: 'DS', keyTag, algorithm, digestType, digest };
  },
  print: (r) => `${r.keyTag} ${r.algorithm} ${r.digestType} ${r.digest}`,
  encode(r, w) {
    w.u16(r.keyTag);
    w.u8(r.algorithm);
    w.u8(r.digestType);
    w.bytes(hexToBytes(r.digest) ?? new Uint8Array(0));
  },
  decode(r, end) {
    const keyTag = r.u16();
    const algorithm = r.u8();
    const digestType = r.u8();
    return { type: 'DS', keyTag, algorithm, digestType, digest: bytesToHex(r.bytes(end - r.offset)) };
  },
};
