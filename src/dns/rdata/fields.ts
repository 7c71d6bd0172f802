/** Field-by-field access to one RDATA's presentation tokens, with BAD_RDATA errors that name the field. */
import { DnsError } from '../errors.ts';
import { bytesToHex, firstNonHex, hexToBytes } from '../hex.ts';
import { type Name, parseName } from '../name.ts';
import { decodeEscapes, parseCharacterString, type Token, tokenize } from '../presentation.ts';
import { parseTtl } from '../ttl.ts';

export const U8_MAX = 0xff;
export const U16_MAX = 0xffff;
export const U32_MAX = 0xffffffff;

function show(text: string): string {
  return JSON.stringify(text.length > 60 ? text.slice(0, 57) + '...' : text);
}

export class RdataFields {
  /** Record type mnemonic used in messages. */
  readonly type: string;
  /** Presentation syntax used in messages, e.g. "<preference> <exchange>". */
  readonly syntax: string;
  /** The whole RDATA text. */
  readonly text: string;
  private parsed: Token[] | undefined;
  private index = 0;

  constructor(type: string, syntax: string, text: string) {
    this.type = type;
    this.syntax = syntax;
    this.text = text;
  }

  /** The tokens, tokenized on first use (TXT inspects `text` before deciding to tokenize). */
  get tokens(): readonly Token[] {
    if (this.parsed === undefined) {
      try {
        this.parsed = tokenize(this.text);
      } catch (e) {
        if (e instanceof DnsError) throw this.fail(`${this.type} RDATA ${show(this.text)}: ${e.message}`, e);
        throw e;
      }
    }
    return this.parsed;
  }

  /** A BAD_RDATA error with the given message. */
  fail(message: string, cause?: unknown): DnsError {
    return new DnsError('BAD_RDATA', message, cause === undefined ? undefined : { cause });
  }

  /** A BAD_RDATA error about one field's value. */
  invalid(field: string, value: string, expected: string, cause?: unknown): DnsError {
    return this.fail(`${this.type} ${field} ${show(value)} is not valid: ${expected}`, cause);
  }

  /** Requires exactly `count` fields. */
  expectCount(count: number): void {
    const got = this.tokens.length;
    if (got !== count) {
      throw this.fail(
        `${this.type} RDATA ${show(this.text)} has ${got} field${got === 1 ? '' : 's'} but needs exactly ${count}: ${this.syntax}`,
      );
    }
  }

  /** Requires at least `count` fields. */
  expectAtLeast(count: number): void {
    const got = this.tokens.length;
    if (got < count) {
      throw this.fail(
        `${this.type} RDATA ${show(this.text)} has ${got} field${got === 1 ? '' : 's'} but needs at least ${count}: ${this.syntax}`,
      );
    }
  }

  get remaining(): number {
    return this.tokens.length - this.index;
  }

  next(field: string): Token {
    const token = this.tokens[this.index];
    if (token === undefined) {
      throw this.fail(`${this.type} ${field} is missing from ${show(this.text)}; expected ${this.syntax}`);
    }
    this.index++;
    return token;
  }

  /** All tokens not consumed yet. */
  rest(): Token[] {
    const rest = this.tokens.slice(this.index);
    this.index = this.tokens.length;
    return rest;
  }

  /** An unsigned decimal integer 0..max. */
  uint(field: string, max: number): number {
    const text = this.next(field).text;
    const bad = (): DnsError => this.invalid(field, text, `expected an integer from 0 to ${max}`);
    if (text.length === 0 || text.length > 10) throw bad();
    let value = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x30 || c > 0x39) throw bad();
      value = value * 10 + (c - 0x30);
    }
    if (value > max) throw bad();
    return value;
  }

  u8(field: string): number {
    return this.uint(field, U8_MAX);
  }

  u16(field: string): number {
    return this.uint(field, U16_MAX);
  }

  u32(field: string): number {
    return this.uint(field, U32_MAX);
  }

  /**
   * A 32-bit time value in seconds (RFC 1035 §3.3.13 SOA timers); BIND-style units ("1h", "2d") are accepted.
   * Plain numbers may use the full unsigned 32-bit range.
   */
  ttl(field: string): number {
    const token = this.tokens[this.index];
    if (token !== undefined && /^[0-9]+$/.test(token.text)) return this.u32(field);
    const text = this.next(field).text;
    try {
      return parseTtl(text);
    } catch (e) {
      throw this.invalid(
        field,
        text,
        `expected seconds or a duration like "1h30m" (${(e as Error).message})`,
        e,
      );
    }
  }

  /** A domain name, relative to `origin` unless absolute; "@" is the origin. */
  name(field: string, origin: Name): Name {
    const token = this.next(field);
    if (token.quoted) {
      throw this.invalid(field, token.text, 'domain names must not be quoted; remove the quotes');
    }
    try {
      return parseName(token.text, origin);
    } catch (e) {
      if (e instanceof DnsError)
        throw this.invalid(field, token.text, `not a valid domain name: ${e.message}`, e);
      throw e;
    }
  }

  /** A <character-string> (RFC 1035 §3.3), quoted or not, as a binary string of ≤255 octets. */
  characterString(field: string): string {
    const token = this.next(field);
    try {
      return parseCharacterString(token);
    } catch (e) {
      if (e instanceof DnsError) throw this.invalid(field, token.text, e.message, e);
      throw e;
    }
  }

  /** A string of any length with escapes decoded (e.g. the CAA value). */
  octetString(field: string): string {
    const token = this.next(field);
    try {
      return decodeEscapes(token.text);
    } catch (e) {
      if (e instanceof DnsError) throw this.invalid(field, token.text, e.message, e);
      throw e;
    }
  }

  /**
   * The remaining tokens as one hex field (zone files may split hex into whitespace-separated chunks).
   * Returns lowercase hex of at least one octet; `expectedOctets` enforces a digest length when known.
   */
  hexRest(field: string, expectedOctets?: number, why?: string): string {
    const tokens = this.rest();
    if (tokens.length === 0) {
      throw this.fail(`${this.type} ${field} is missing from ${show(this.text)}; expected ${this.syntax}`);
    }
    const text = tokens.map((t) => t.text).join('');
    const bad = firstNonHex(text);
    if (bad >= 0) {
      throw this.invalid(
        field,
        text,
        `expected hexadecimal digits 0-9a-f, found ${JSON.stringify(text[bad])}`,
      );
    }
    const bytes = hexToBytes(text);
    if (bytes === undefined) {
      throw this.invalid(
        field,
        text,
        `hex must have an even number of digits (two per octet), got ${text.length}`,
      );
    }
    if (expectedOctets !== undefined && bytes.length !== expectedOctets) {
      throw this.invalid(
        field,
        text,
        `${why ?? 'this type'} needs exactly ${expectedOctets} octets (${expectedOctets * 2} hex digits), got ${bytes.length}`,
      );
    }
    return bytesToHex(bytes);
  }
}
