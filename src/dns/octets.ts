/**
 * Conversions between octet sequences and "binary strings": JS strings in which every char code is one
 * octet 0..255. TXT, CAA and NAPTR string fields use binary strings so arbitrary octets survive unchanged.
 */

/** The binary string of `bytes[start..end)`. */
export function binaryFromBytes(bytes: Uint8Array, start = 0, end = bytes.length): string {
  let s = '';
  // Chunks keep String.fromCharCode's argument count bounded.
  for (let i = start; i < end; i += 4096) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, Math.min(end, i + 4096)) as unknown as number[]);
  }
  return s;
}

/** Octets of a binary string; char codes above 0xff are truncated to their low 8 bits. */
export function bytesFromBinary(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** Appends the UTF-8 encoding of code point `cp` to the binary string `s`. */
export function appendUtf8(s: string, cp: number): string {
  if (cp < 0x80) return s + String.fromCharCode(cp);
  if (cp < 0x800) return s + String.fromCharCode(0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
  if (cp < 0x10000) {
    return s + String.fromCharCode(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
  }
  return (
    s +
    String.fromCharCode(
      0xf0 | (cp >> 18),
      0x80 | ((cp >> 12) & 0x3f),
      0x80 | ((cp >> 6) & 0x3f),
      0x80 | (cp & 0x3f),
    )
  );
}

/** Binary string of the UTF-8 encoding of arbitrary JS text (ASCII passes through unchanged). */
export function utf8Binary(text: string): string {
  let ascii = true;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) return text;
  let s = '';
  for (const ch of text) s = appendUtf8(s, ch.codePointAt(0)!);
  return s;
}
