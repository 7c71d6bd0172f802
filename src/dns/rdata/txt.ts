/** TXT RDATA (RFC 1035 §3.3.14): one or more character-strings. */
import { DnsError } from '../errors.ts';
import { binaryFromBytes, utf8Binary } from '../octets.ts';
import { decodeEscapes, MAX_CHARACTER_STRING, printCharacterString } from '../presentation.ts';
import type { RdataCodec } from './codec.ts';
import type { TxtRdata } from './types.ts';

/** Splits a binary string into ≤255-octet character-strings (RFC 7208 §3.3 style); "" stays one string. */
export function splitCharacterStrings(s: string, out: string[]): void {
  if (s.length <= MAX_CHARACTER_STRING) {
    out.push(s);
    return;
  }
  for (let i = 0; i < s.length; i += MAX_CHARACTER_STRING) out.push(s.slice(i, i + MAX_CHARACTER_STRING));
}

function tooLong(s: string): DnsError {
  return new DnsError(
    'BAD_RDATA',
    `cannot encode TXT string of ${s.length} octets: character-strings hold at most 255 (RFC 1035 §3.3); split it or build RDATA with parseRdata`,
  );
}

export const txtCodec: RdataCodec<TxtRdata> = {
  syntax: 'either unquoted text (taken verbatim as one string) or one or more "quoted strings"',
  parse(f) {
    const strings: string[] = [];
    if (!f.text.includes('"')) {
      // Convenience form: the whole text is one string, split at 255 octets (RFC 1035 §3.3.14).
      splitCharacterStrings(utf8Binary(f.text), strings);
      return { type: 'TXT', strings };
    }
    const tokens = f.rest();
    for (const token of tokens) {
      if (!token.quoted) {
        throw f.invalid(
          'string',
          token.text,
          'when TXT text contains quotes, every string must be quoted, e.g. "part one" "part two"; write \\" for a literal quote',
        );
      }
      let s: string;
      try {
        s = decodeEscapes(token.text);
      } catch (e) {
        throw f.invalid('string', token.text, (e as Error).message, e);
      }
      splitCharacterStrings(s, strings);
    }
    if (strings.length === 0) throw f.fail(`TXT RDATA is empty; write "" for an empty string`);
    return { type: 'TXT', strings };
  },
  print: (r) => r.strings.map(printCharacterString).join(' '),
  encode(r, w) {
    for (const s of r.strings) {
      if (s.length > MAX_CHARACTER_STRING) throw tooLong(s);
      w.u8(s.length);
      w.binary(s);
    }
  },
  decode(r, end) {
    const strings: string[] = [];
    // RFC 1035 §3.3.14: one or more character-strings; the bounded reader rejects overruns.
    do {
      const len = r.u8();
      const b = r.bytes(len);
      strings.push(binaryFromBytes(b));
    } while (r.offset < end);
    return { type: 'TXT', strings };
  },
};
