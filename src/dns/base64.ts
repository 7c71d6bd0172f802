/** Strict RFC 4648 §4 base64 (standard alphabet, padding required). */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const VALUES: Int8Array = (() => {
  const v = new Int8Array(128).fill(-1);
  for (let i = 0; i < ALPHABET.length; i++) v[ALPHABET.charCodeAt(i)] = i;
  return v;
})();

/** Decodes canonical padded base64, or returns undefined if the text is not valid base64. */
export function base64ToBytes(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined;
  let pad = 0;
  if (text.endsWith('==')) pad = 2;
  else if (text.endsWith('=')) pad = 1;
  const out = new Uint8Array((text.length / 4) * 3 - pad);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    let acc = 0;
    for (let j = 0; j < 4; j++) {
      const c = text.charCodeAt(i + j);
      const isPad = c === 0x3d && i + 4 === text.length && j >= 4 - pad;
      const v = isPad ? 0 : c < 128 ? VALUES[c]! : -1;
      if (v < 0) return undefined;
      acc = (acc << 6) | v;
    }
    if (o < out.length) out[o++] = (acc >> 16) & 0xff;
    if (o < out.length) out[o++] = (acc >> 8) & 0xff;
    if (o < out.length) out[o++] = acc & 0xff;
  }
  // Non-canonical encodings (non-zero bits hidden under the padding) are rejected.
  if (bytesToBase64(out) !== text) return undefined;
  return out;
}

export function bytesToBase64(bytes: Uint8Array): string {
  let s = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    s += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + ALPHABET[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    s += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + '==';
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    s += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + '=';
  }
  return s;
}
