/** Lowercase hexadecimal encoding of octets (RFC 4648 §8 alphabet). */

const HEX_DIGITS = '0123456789abcdef';

function nibble(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/** Octets of an even-length hex string (either case), or undefined if it is not one. */
export function hexToBytes(hex: string): Uint8Array | undefined {
  if (hex.length % 2 !== 0) return undefined;
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = nibble(hex.charCodeAt(2 * i));
    const lo = nibble(hex.charCodeAt(2 * i + 1));
    if (hi < 0 || lo < 0) return undefined;
    out[i] = (hi << 4) | lo;
  }
  return out;
}

export function bytesToHex(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    s += HEX_DIGITS[b >> 4]! + HEX_DIGITS[b & 15]!;
  }
  return s;
}

/** Index of the first character that is not a hex digit, or -1. */
export function firstNonHex(text: string): number {
  for (let i = 0; i < text.length; i++) if (nibble(text.charCodeAt(i)) < 0) return i;
  return -1;
}
