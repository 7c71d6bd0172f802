/** DNS wire-format reader and writer with name compression (RFC 1035 §3.1, §4.1.4). */
import { DnsError } from './errors.ts';
import { asciiLower, LABEL_OCTET_TEXT, MAX_LABEL_LENGTH, MAX_NAME_LENGTH, type Name } from './name.ts';

/** A malformed or truncated wire message; `code` says which rule was broken. */
export class WireError extends DnsError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'WireError';
  }
}

const DOT = 0x2e;
const BACKSLASH = 0x5c;
/** RFC 1035 §4.1.4: a pointer carries a 14-bit offset. */
const MAX_POINTER_OFFSET = 0x3fff;
/** Bound on compression pointers followed while reading one name. */
const MAX_POINTER_HOPS = 128;

export class WireWriter {
  private buf: Uint8Array;
  private len = 0;
  /**
   * Offset of every name suffix written so far, keyed by its lowercased presentation text. A new Map
   * per message (see `reset`).
   */
  private suffixes = new Map<string, number>();
  /**
   * False: names are never replaced by pointers, whatever `name` is asked (RDATA kept apart from any
   * message, e.g. in a zone image, must not point into the bytes it was first written beside), and no
   * suffix is remembered while it is false. Set it before writing, not in the middle of a message.
   */
  compression = true;

  constructor(initialCapacity = 512) {
    this.buf = new Uint8Array(Math.max(16, initialCapacity));
  }

  get length(): number {
    return this.len;
  }

  private ensure(extra: number): void {
    const need = this.len + extra;
    if (need <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < need) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.len++] = v;
  }

  u16(v: number): void {
    this.ensure(2);
    const b = this.buf;
    b[this.len] = v >>> 8;
    b[this.len + 1] = v;
    this.len += 2;
  }

  u32(v: number): void {
    this.ensure(4);
    const b = this.buf;
    const l = this.len;
    b[l] = v >>> 24;
    b[l + 1] = v >>> 16;
    b[l + 2] = v >>> 8;
    b[l + 3] = v;
    this.len += 4;
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }

  /** Writes a binary string (one char code per octet, see octets.ts). */
  binary(s: string): void {
    this.ensure(s.length);
    const b = this.buf;
    let l = this.len;
    for (let i = 0; i < s.length; i++) b[l++] = s.charCodeAt(i);
    this.len = l;
  }

  /**
   * Writes a canonical absolute name. With `compress`, the longest suffix already in the message is replaced
   * by a pointer (RFC 1035 §4.1.4). While `compression` is on, the suffixes written here are remembered for
   * later names either way.
   */
  name(name: Name, compress: boolean): void {
    const n = name.length;
    if (n === 1 && name.charCodeAt(0) === DOT) {
      this.u8(0);
      return;
    }
    this.ensure(n + 1);
    const buf = this.buf;
    // A writer that never compresses keeps no suffixes (no lowercased string or slice per label).
    const remember = this.compression;
    const key = remember ? asciiLower(name) : '';
    const startLen = this.len;
    let start = 0;
    while (start < n) {
      if (remember) {
        const suffix = start === 0 ? key : key.slice(start);
        const known = this.suffixes.get(suffix);
        if (known !== undefined && compress) {
          this.u16(0xc000 | known);
          return;
        }
        if (known === undefined && this.len <= MAX_POINTER_OFFSET) this.suffixes.set(suffix, this.len);
      }
      const lenAt = this.len++;
      let pos = lenAt + 1;
      let i = start;
      for (; i < n; i++) {
        let c = name.charCodeAt(i);
        if (c === DOT) break;
        if (c === BACKSLASH) {
          const d = name.charCodeAt(i + 1);
          if (d >= 0x30 && d <= 0x39) {
            c = (d - 0x30) * 100 + (name.charCodeAt(i + 2) - 0x30) * 10 + (name.charCodeAt(i + 3) - 0x30);
            i += 3;
          } else {
            c = d;
            i += 1;
          }
        }
        buf[pos++] = c;
      }
      const labelLength = pos - lenAt - 1;
      if (labelLength === 0 || labelLength > MAX_LABEL_LENGTH || i === n) {
        this.truncate(startLen);
        throw new DnsError(
          'BAD_NAME',
          `cannot encode name ${JSON.stringify(name)}: it is not a canonical absolute name; build names with parseName`,
        );
      }
      buf[lenAt] = labelLength;
      this.len = pos;
      start = i + 1;
    }
    buf[this.len++] = 0;
    if (this.len - startLen > MAX_NAME_LENGTH) {
      this.truncate(startLen);
      throw new DnsError(
        'NAME_TOO_LONG',
        `cannot encode name ${JSON.stringify(name)}: longer than 255 octets (RFC 1035 §2.3.4)`,
      );
    }
  }

  /**
   * Lowercases the ASCII letters written since `offset`. Meant for name octets only: a length octet is
   * at most 63, below every letter, so a whole uncompressed name can be lowercased in place (the
   * canonical form of RFC 4034 §6.2).
   */
  lowercaseSince(offset: number): void {
    const b = this.buf;
    for (let i = Math.max(0, offset); i < this.len; i++) {
      const c = b[i]!;
      if (c >= 0x41 && c <= 0x5a) b[i] = c + 0x20;
    }
  }

  patchU16(offset: number, v: number): void {
    this.buf[offset] = v >>> 8;
    this.buf[offset + 1] = v;
  }

  /** Rewinds to an earlier length, forgetting compression targets at or beyond it. */
  truncate(length: number): void {
    if (length >= this.len) return;
    this.len = Math.max(0, length);
    for (const [suffix, offset] of this.suffixes) {
      if (offset >= this.len) this.suffixes.delete(suffix);
    }
  }

  /** A copy of the bytes written so far. */
  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }

  /** Copies the bytes written so far into `target` at `offset` (no copy of their own, as `finish` makes). */
  copyInto(target: Uint8Array, offset: number): void {
    target.set(this.buf.subarray(0, this.len), offset);
  }

  /**
   * A copy of the bytes written so far in a Buffer from Node's shared pool: cheaper than `finish` for
   * the small messages written once per query (no ArrayBuffer of their own).
   */
  finishPooled(): Buffer {
    const n = this.len;
    const out = Buffer.allocUnsafe(n);
    const buf = this.buf;
    if (n > 256) out.set(buf.subarray(0, n));
    else for (let i = 0; i < n; i++) out[i] = buf[i]!;
    return out;
  }

  /** Forgets everything written, keeping the buffer for reuse. */
  reset(): void {
    this.len = 0;
    // Not `clear()`: V8 links a cleared Map's old table to its new one, so once a long-lived writer's
    // table has reached the old generation, every later table (and the name strings in it) survives
    // young collections and is promoted: old-generation garbage at the rate of messages written.
    // A new Map per message dies young with its strings.
    this.suffixes = new Map();
  }
}

export class WireReader {
  offset: number;
  readonly buf: Uint8Array;

  constructor(buf: Uint8Array, offset = 0) {
    this.buf = buf;
    this.offset = offset;
  }

  get remaining(): number {
    return this.buf.length - this.offset;
  }

  private truncated(need: number, what: string): WireError {
    return new WireError(
      'TRUNCATED',
      `message truncated: needed ${need} more octet(s) for ${what} at offset ${this.offset} but only ${this.remaining} remain`,
    );
  }

  u8(): number {
    if (this.offset + 1 > this.buf.length) throw this.truncated(1, 'an 8-bit field');
    return this.buf[this.offset++]!;
  }

  u16(): number {
    const o = this.offset;
    if (o + 2 > this.buf.length) throw this.truncated(2, 'a 16-bit field');
    this.offset = o + 2;
    return (this.buf[o]! << 8) | this.buf[o + 1]!;
  }

  u32(): number {
    const o = this.offset;
    if (o + 4 > this.buf.length) throw this.truncated(4, 'a 32-bit field');
    this.offset = o + 4;
    const b = this.buf;
    return b[o]! * 0x1000000 + ((b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!);
  }

  /** The next `n` octets as a view into the buffer (not a copy). */
  bytes(n: number): Uint8Array {
    const o = this.offset;
    if (n < 0 || o + n > this.buf.length) throw this.truncated(n, 'a byte field');
    this.offset = o + n;
    return this.buf.subarray(o, o + n);
  }

  /**
   * Reads a possibly compressed name (RFC 1035 §4.1.4). Every pointer must point strictly before the start
   * of the label sequence it interrupts, so decoding always terminates.
   */
  name(): Name {
    const buf = this.buf;
    let pos = this.offset;
    let sequenceStart = pos;
    let end = -1;
    let hops = 0;
    let wireLength = 1; // the root label
    let out = '';
    for (;;) {
      if (pos >= buf.length) {
        throw new WireError('TRUNCATED', `message truncated inside a name at offset ${pos}`);
      }
      const len = buf[pos]!;
      const kind = len & 0xc0;
      if (kind === 0) {
        if (len === 0) {
          pos++;
          break;
        }
        if (pos + 1 + len > buf.length) {
          throw new WireError('TRUNCATED', `message truncated inside a ${len}-octet label at offset ${pos}`);
        }
        wireLength += len + 1;
        // RFC 1035 §2.3.4: names are 255 octets or less.
        if (wireLength > MAX_NAME_LENGTH) {
          throw new WireError(
            'NAME_TOO_LONG',
            `name at offset ${this.offset} exceeds 255 octets (RFC 1035 §2.3.4)`,
          );
        }
        for (let i = pos + 1; i <= pos + len; i++) out += LABEL_OCTET_TEXT[buf[i]!];
        out += '.';
        pos += len + 1;
      } else if (kind === 0xc0) {
        if (pos + 2 > buf.length) {
          throw new WireError('TRUNCATED', `message truncated inside a compression pointer at offset ${pos}`);
        }
        const target = ((len & 0x3f) << 8) | buf[pos + 1]!;
        if (end < 0) end = pos + 2;
        if (target >= sequenceStart) {
          throw new WireError(
            'BAD_POINTER',
            `compression pointer at offset ${pos} points to ${target}, not before the labels it continues (offset ${sequenceStart}); pointers must point backwards (RFC 1035 §4.1.4)`,
          );
        }
        if (++hops > MAX_POINTER_HOPS) {
          throw new WireError(
            'BAD_POINTER',
            `name at offset ${this.offset} follows more than ${MAX_POINTER_HOPS} pointers`,
          );
        }
        pos = target;
        sequenceStart = target;
      } else {
        // RFC 6891 §5: label types 0b01 (extended) and 0b10 are not in use.
        throw new WireError(
          'BAD_LABEL_TYPE',
          `unsupported label type 0x${kind.toString(16)} at offset ${pos}; only plain labels and pointers are valid`,
        );
      }
    }
    this.offset = end < 0 ? pos : end;
    return out === '' ? '.' : out;
  }
}
