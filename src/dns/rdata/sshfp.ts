/** SSHFP RDATA (RFC 4255 §3, RFC 6594). */
import { bytesToHex, hexToBytes } from '../hex.ts';
import type { RdataCodec } from './codec.ts';
import type { SshfpRdata } from './types.ts';

/** RFC 4255 §3.1.2 / RFC 6594 §4: fingerprint type 1 is SHA-1, 2 is SHA-256. */
const DIGEST_OCTETS: Readonly<Record<number, number>> = { 1: 20, 2: 32 };

export const sshfpCodec: RdataCodec<SshfpRdata> = {
  syntax: '<algorithm 0-255> <fingerprint type 0-255> <fingerprint hex>',
  parse(f) {
    f.expectAtLeast(3);
    const algorithm = f.u8('algorithm');
    const fingerprintType = f.u8('fingerprint type');
    const fingerprint = f.hexRest(
      'fingerprint',
      DIGEST_OCTETS[fingerprintType],
      `fingerprint type ${fingerprintType} (${fingerprintType === 1 ? 'SHA-1' : 'SHA-256'})`,
    );
    return { type: 'SSHFP', algorithm, fingerprintType, fingerprint };
  },
  print: (r) => `${r.algorithm} ${r.fingerprintType} ${r.fingerprint}`,
  encode(r, w) {
    w.u8(r.algorithm);
    w.u8(r.fingerprintType);
    w.bytes(hexToBytes(r.fingerprint) ?? new Uint8Array(0));
  },
  decode(r, end) {
    const algorithm = r.u8();
    const fingerprintType = r.u8();
    return { type: 'SSHFP', algorithm, fingerprintType, fingerprint: bytesToHex(r.bytes(end - r.offset)) };
  },
};
