/**
 * Tokenizer and character-string helpers for RDATA presentation text (RFC 1035 §5.1).
 *
 * Tokens keep their escape sequences (a name needs "\." to stay distinguishable from a label separator);
 * decode them with decodeEscapes / parseCharacterString when a field is a character-string.
 */
import { DnsError } from './errors.ts';
import { appendUtf8 } from './octets.ts';

export interface Token {
  /** Raw token text with surrounding quotes removed and escape sequences still in place. */
  readonly text: string;
  /** True when the whole token was written as a "quoted string". */
  readonly quoted: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const EQUALS = 0x3d;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** RFC 1035 §3.3: a <character-string> is at most 255 octets. */
export const MAX_CHARACTER_STRING = 255;

/**
 * Splits presentation text on unquoted, unescaped whitespace. A token beginning with '"' is a quoted string
 * that must end with an unescaped '"' followed by whitespace or the end. A quoted part may also follow '='
 * inside a token (RFC 9460 §2.1 `key="value"`).
 */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    let c = text.charCodeAt(i);
    if (isSpace(c)) {
      i++;
      continue;
    }
    const quoted = c === QUOTE;
    let inQuotes = quoted;
    if (quoted) i++;
    let raw = '';
    let segmentStart = i;
    while (i < n) {
      c = text.charCodeAt(i);
      if (c === BACKSLASH) {
        if (i + 1 >= n) {
          throw new DnsError(
            'BAD_ESCAPE',
            `text ${JSON.stringify(text)} ends with a lone backslash; write "\\\\" for a literal backslash`,
          );
        }
        i += 2;
        continue;
      }
      if (inQuotes) {
        if (c === QUOTE) {
          raw += text.slice(segmentStart, i);
          inQuotes = false;
          i++;
          segmentStart = i;
          if (i < n && !isSpace(text.charCodeAt(i))) {
            throw new DnsError(
              'BAD_QUOTE',
              `text ${JSON.stringify(text)} has a closing quote directly followed by ${JSON.stringify(text[i])}; separate strings with whitespace`,
            );
          }
          break;
        }
        i++;
        continue;
      }
      if (isSpace(c)) break;
      if (c === QUOTE) {
        if (i === 0 || text.charCodeAt(i - 1) !== EQUALS) {
          throw new DnsError(
            'BAD_QUOTE',
            `text ${JSON.stringify(text)} has a quote inside a word at position ${i}; quote the whole string or escape the quote as \\"`,
          );
        }
        raw += text.slice(segmentStart, i);
        inQuotes = true;
        i++;
        segmentStart = i;
        continue;
      }
      i++;
    }
    if (inQuotes) {
      throw new DnsError(
        'UNTERMINATED_QUOTE',
        `text ${JSON.stringify(text)} has an unterminated quoted string; add the closing '"'`,
      );
    }
    raw += text.slice(segmentStart, i);
    tokens.push({ text: raw, quoted });
  }
  return tokens;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** Whether text is ASCII without a backslash: `decodeEscapes` gives it back as it is. */
export function isPlainText(raw: string): boolean {
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === BACKSLASH || c >= 0x80) return false;
  }
  return true;
}

/**
 * Decodes RFC 1035 §5.1 escapes (\X and \DDD) into a binary string (one char per octet). Characters
 * outside ASCII are encoded as UTF-8 octets.
 */
export function decodeEscapes(raw: string): string {
  // Most text holds no escape and only ASCII, which decodes to itself: kept as it is, not copied a
  // character at a time (a copy made so is a chain of pieces until something reads it whole).
  if (isPlainText(raw)) return raw;
  const n = raw.length;
  let out = '';
  for (let i = 0; i < n; ) {
    const c = raw.charCodeAt(i);
    if (c === BACKSLASH) {
      if (i + 1 >= n) {
        throw new DnsError(
          'BAD_ESCAPE',
          `text ${JSON.stringify(raw)} ends with a lone backslash; write "\\\\"`,
        );
      }
      const d1 = raw.charCodeAt(i + 1);
      if (isDigit(d1)) {
        const d2 = raw.charCodeAt(i + 2);
        const d3 = raw.charCodeAt(i + 3);
        if (!(isDigit(d2) && isDigit(d3))) {
          throw new DnsError(
            'BAD_ESCAPE',
            `text ${JSON.stringify(raw)} has an incomplete decimal escape "${raw.slice(i, i + 4)}"; use exactly three digits, e.g. "\\034"`,
          );
        }
        const v = (d1 - 0x30) * 100 + (d2 - 0x30) * 10 + (d3 - 0x30);
        if (v > 255) {
          throw new DnsError(
            'BAD_ESCAPE',
            `text ${JSON.stringify(raw)} has decimal escape "${raw.slice(i, i + 4)}" above 255; use \\000 to \\255`,
          );
        }
        out += String.fromCharCode(v);
        i += 4;
        continue;
      }
      const cp = raw.codePointAt(i + 1)!;
      out = appendUtf8(out, cp);
      i += cp > 0xffff ? 3 : 2;
      continue;
    }
    if (c < 0x80) {
      out += raw[i];
      i++;
      continue;
    }
    const cp = raw.codePointAt(i)!;
    out = appendUtf8(out, cp);
    i += cp > 0xffff ? 2 : 1;
  }
  return out;
}

/** Decodes one <character-string> token into a binary string of at most 255 octets (RFC 1035 §3.3). */
export function parseCharacterString(token: Token | string): string {
  const raw = typeof token === 'string' ? token : token.text;
  const s = decodeEscapes(raw);
  if (s.length > MAX_CHARACTER_STRING) {
    throw new DnsError(
      'CHARACTER_STRING_TOO_LONG',
      `string ${JSON.stringify(raw.length > 40 ? raw.slice(0, 37) + '...' : raw)} is ${s.length} octets; a character-string holds at most 255 octets (RFC 1035 §3.3), split it into several strings`,
    );
  }
  return s;
}

/** Escapes a binary string for use inside quotes: '"' and '\' get a backslash, non-printables become \DDD. */
export function escapeQuotedText(s: string): string {
  let out = '';
  let plainFrom = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c <= 0x7e && c !== QUOTE && c !== BACKSLASH) continue;
    out += s.slice(plainFrom, i);
    if (c === QUOTE || c === BACKSLASH) out += '\\' + s[i];
    else out += '\\' + String(c & 0xff).padStart(3, '0');
    plainFrom = i + 1;
  }
  return out + s.slice(plainFrom);
}

/** Canonical presentation of a character-string (a binary string): always quoted, with escapes. */
export function printCharacterString(s: string): string {
  return '"' + escapeQuotedText(s) + '"';
}
