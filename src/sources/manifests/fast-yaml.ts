/**
 * A fast path for the YAML that manifests contain, tried before js-yaml: block mappings and block
 * sequences, plain and quoted scalars on one line, flow sequences and flow mappings on one line,
 * comments and `---` separators. What it returns is what js-yaml's `loadAll` with the core schema
 * returns for the same text (the same values, empty documents included, in the same order); for
 * anything else it returns `undefined` and the caller parses the file with js-yaml, whose errors and
 * positions are then the same as before. It refuses, among others: tabs, carriage returns, a byte
 * order mark, NUL, anchors, aliases, tags, directives, `...`, block scalars (`|`, `>`), a scalar or
 * a flow collection over more than one line, explicit (`?`) and complex keys, a key that would not
 * resolve to a string (`1:`, `null:`, `true:`), `__proto__`, a repeated key (js-yaml throws for
 * it, and the precise parse reports its line), a nested collection deeper than 48, a content line
 * indented deeper than block collections allow, a document that is
 * a scalar or a flow collection, control characters and lone surrogates in plain scalars.
 *
 * Plain scalars are typed by js-yaml's own resolvers of the core schema (null, bool, int, float), in
 * its order, so `0x1F`, `0o17`, `.inf`, `-0` and friends come out as js-yaml makes them; a scalar
 * whose first character none of them accepts (anything but `~`, `n`, `N`, `t`, `T`, `f`, `F`, a
 * sign, a dot or a digit) is a string without asking them. Work is linear in the text: each line is
 * read at most twice, nesting is bounded, no regular expression runs on the text.
 */
import jsYaml from 'js-yaml';

interface ImplicitType {
  tag: string;
  resolve(data: string): boolean;
  construct(data: string): unknown;
}

/** js-yaml's implicit types of the core schema, in the order its loader tries them. */
const IMPLICIT: readonly ImplicitType[] =
  (jsYaml.CORE_SCHEMA as unknown as { compiledImplicit?: ImplicitType[] }).compiledImplicit ?? [];

/**
 * The fast path assumes the core schema types plain scalars with exactly these four (the prefilter
 * on a scalar's first character depends on it); another js-yaml that differs turns it off.
 */
const ENABLED =
  IMPLICIT.map((t) => t.tag).join(',') ===
  ['null', 'bool', 'int', 'float'].map((t) => `tag:yaml.org,2002:${t}`).join(',');

/** Deepest nesting of collections taken (js-yaml itself stops at 100 nodes deep). */
export const FAST_YAML_MAX_DEPTH = 48;

const LF = 0x0a;
const SPACE = 0x20;
const HASH = 0x23;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const COMMA = 0x2c;
const DASH = 0x2d;
const DOT = 0x2e;
const COLON = 0x3a;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const BACKSLASH = 0x5c;

/** Line indent of "no further content line in this document". */
const END = -1;

/** Thrown inside the parser when the text leaves the subset; never escapes `fastLoadAll`. */
class Outside extends Error {}
const OUTSIDE = new Outside('outside the fast YAML subset');

/** Characters that may start a plain scalar (in block or flow context) in the subset. */
const PLAIN_START = new Uint8Array(128);
/** First characters that one of the core schema's resolvers may accept. */
const MAY_RESOLVE = new Uint8Array(128);
for (let c = 0x21; c < 0x7f; c++) PLAIN_START[c] = 1;
for (const ch of ',[]{}#&*!|>\'"%@`?:') PLAIN_START[ch.charCodeAt(0)] = 0;
for (const ch of '~nNtTfF-+.0123456789') MAY_RESOLVE[ch.charCodeAt(0)] = 1;

/** js-yaml's one-character escapes of double-quoted scalars (YAML 1.2 §5.7), tab aside. */
const ESCAPES: Record<number, string> = {
  48: '\x00',
  97: '\x07',
  98: '\x08',
  116: '\x09',
  110: '\x0a',
  118: '\x0b',
  102: '\x0c',
  114: '\x0d',
  101: '\x1b',
  32: ' ',
  34: '"',
  47: '/',
  92: '\\',
  78: '\x85',
  95: '\xa0',
  76: '\u2028',
  80: '\u2029',
};

/**
 * The documents of `text` as js-yaml's `loadAll` with `CORE_SCHEMA` gives them, or `undefined` when
 * the text has anything outside the fast path's subset (then parse it with js-yaml).
 */
export function fastLoadAll(text: string): unknown[] | undefined {
  if (!ENABLED) return undefined;
  if (
    text.indexOf('\t') !== -1 ||
    text.indexOf('\r') !== -1 ||
    text.indexOf('\0') !== -1 ||
    text.charCodeAt(0) === 0xfeff
  ) {
    return undefined;
  }
  try {
    return new Parser(text).documents();
  } catch (e) {
    if (e === OUTSIDE) return undefined;
    throw e;
  }
}

/**
 * Whether one of the core schema's resolvers may accept `s`: its first character is one they start
 * with, and a scalar starting with a letter (only `null`, `true`, `false` in three spellings each
 * resolve) has four or five characters.
 */
function mayResolve(s: string): boolean {
  const c = s.charCodeAt(0);
  if (MAY_RESOLVE[c] !== 1) return false;
  return c < 0x41 || c === 0x7e /* ~ */ || s.length === 4 || s.length === 5;
}

/** A plain scalar's value: js-yaml's first implicit type that resolves it, else the string. */
function resolvePlain(s: string): unknown {
  if (!mayResolve(s)) return s;
  for (const type of IMPLICIT) if (type.resolve(s)) return type.construct(s);
  return s;
}

/**
 * Keys met before, by a hash of their length and end characters: a manifest repeats a few dozen keys
 * (`apiVersion`, `metadata`, `name`...). The keys `knownKey` does not find by their packed
 * characters (a block key with a space inside, non-ASCII, longer than `PACKED_KEY_LENGTH`) are copied
 * out of the text and compared with the one here (`===`: cheaper than `startsWith` on the text),
 * which, once entered, is the string table's copy, not looked up there again when it becomes a
 * property. Short keys only.
 */
const KEYS: (string | undefined)[] = new Array(1024);
const KEY_CACHE_LENGTH = 40;
/** A mapping's first this many keys are compared one by one for a repeat; later ones looked up. */
const SMALL_MAPPING = 16;

/**
 * The plain mapping key `s[start, end)`: only one that stays a string (js-yaml would turn `1` into
 * "1", `~` into "null").
 */
function plainKey(s: string, start: number, end: number): string {
  const length = end - start;
  let slot = -1;
  if (length <= KEY_CACHE_LENGTH) {
    slot = (length * 31 + s.charCodeAt(start) * 7 + s.charCodeAt(end - 1)) & 1023;
  }
  const key = s.slice(start, end);
  if (slot >= 0) {
    const known = KEYS[slot];
    if (key === known) return known;
  }
  if (mayResolve(key)) {
    for (const type of IMPLICIT) if (type.resolve(key)) throw OUTSIDE;
  }
  if (slot < 0) return key;
  const internal = internalized(key);
  KEYS[slot] = internal;
  return internal;
}

/**
 * Plain flow mapping keys met before, by their characters packed as `flowKey` reads them: the first
 * seven into `PACKED_LO`, the next seven into `PACKED_HI` (base 128: one key per length and pair of
 * numbers), and the length (0: none). A flow mapping's keys (`name`, `namespace`, `zoneRef`, `type`,
 * `records` in `{ ... }`) are then found by three comparisons of numbers.
 */
const PACKED_KEY_LENGTH = 14;
const PACKED_KEYS: (string | undefined)[] = new Array(1024);
const PACKED_LO = new Float64Array(1024);
const PACKED_HI = new Float64Array(1024);
const PACKED_LENGTH = new Int32Array(1024);

/**
 * The plain key `s[start, end)` whose characters `flowKey` or `blockKey` packed into `lo` and `hi`
 * (`packed`: all of them, ASCII, at most `PACKED_KEY_LENGTH`) and hashed into `hash`: the one met
 * before with the same numbers, else `plainKey`'s, entered in the table.
 */
function knownKey(
  s: string,
  start: number,
  end: number,
  packed: boolean,
  lo: number,
  hi: number,
  hash: number,
): string {
  const length = end - start;
  if (!packed || length > PACKED_KEY_LENGTH) return plainKey(s, start, end);
  const slot = (hash ^ (hash >>> 10)) & 1023;
  if (PACKED_LENGTH[slot] === length && PACKED_LO[slot] === lo && PACKED_HI[slot] === hi)
    return PACKED_KEYS[slot]!;
  const key = plainKey(s, start, end);
  PACKED_KEYS[slot] = key;
  PACKED_LO[slot] = lo;
  PACKED_HI[slot] = hi;
  PACKED_LENGTH[slot] = length;
  return key;
}

/** `key` as V8's string table holds it (a property name it need not look up again). */
function internalized(key: string): string {
  const holder: Record<string, number> = {};
  holder[key] = 0;
  for (const k in holder) return k;
  return key;
}

class Parser {
  private readonly s: string;
  private readonly n: number;
  /** The current content line: position of its first character, its indent (END: none). */
  private pos = 0;
  private indent = 0;
  /** Whether the current position is a `---` line (with indent END). */
  private separator = false;
  /** Set by `scanPlain`: end of the scalar (trailing spaces trimmed). */
  private scanEnd = 0;
  /** Set by `doubleQuoted` and `singleQuoted`: just past the closing quote. */
  private quoteEnd = 0;
  /**
   * The keys of the mappings being read, innermost last (each mapping's from the length it found,
   * the first `SMALL_MAPPING` of them): a repeated key is found among them without asking the object.
   */
  private readonly keys: string[] = [];
  /** Set by `blockKey`: where its key's `:` is. */
  private keyStop = 0;
  /** How many of `keys` are in use. */
  private keyTop = 0;

  constructor(text: string) {
    this.s = text;
    this.n = text.length;
  }

  documents(): unknown[] {
    const { s, n } = this;
    // js-yaml reads documents while at least two characters are left of its input, which ends with
    // a line break (one is added when missing).
    const last = (n > 0 && s.charCodeAt(n - 1) !== LF ? n + 1 : n) - 1;
    let at = 0;
    while (s.charCodeAt(at) === SPACE) at++;
    const documents: unknown[] = [];
    let lineStart = 0;
    while (at < last) {
      this.skip(lineStart);
      if (this.separator) {
        // `---`, then nothing but a comment on its line
        this.skip(this.endOfLine(this.pos + 3));
      }
      let value: unknown = null;
      if (this.indent !== END) {
        if (this.indent !== 0 || s.charCodeAt(this.pos) === 0x25 /* % directive */) throw OUTSIDE;
        value = this.block(0, 1);
        if (!this.ended()) throw OUTSIDE;
      }
      documents.push(value);
      if (this.separator) {
        at = lineStart = this.pos;
      } else {
        at = n;
      }
    }
    return documents;
  }

  /** Whether the document has no further content line. */
  private ended(): boolean {
    return this.indent === END;
  }

  /**
   * From `from`, a line start: past blank lines and comment lines to the next content line. Sets
   * `pos`, `indent` and `separator`.
   */
  private skip(from: number): void {
    const { s, n } = this;
    let i = from;
    for (;;) {
      const lineStart = i;
      while (s.charCodeAt(i) === SPACE) i++;
      if (i >= n) {
        this.pos = n;
        this.indent = END;
        this.separator = false;
        return;
      }
      const c = s.charCodeAt(i);
      if (c === LF) {
        i++;
        continue;
      }
      if (c === HASH) {
        const eol = s.indexOf('\n', i);
        i = eol < 0 ? n : eol + 1;
        continue;
      }
      this.pos = i;
      if (
        i === lineStart &&
        (c === DASH || c === DOT) &&
        s.charCodeAt(i + 1) === c &&
        s.charCodeAt(i + 2) === c
      ) {
        const after = s.charCodeAt(i + 3);
        if (c === DASH && (after === LF || after === SPACE || i + 3 >= n)) {
          this.indent = END;
          this.separator = true;
          return;
        }
        throw OUTSIDE; // `...`, or a scalar starting with `---`
      }
      this.indent = i - lineStart;
      this.separator = false;
      return;
    }
  }

  /** From `i`, after a value on its line: spaces and a comment allowed. Returns the next line's start. */
  private endOfLine(i: number): number {
    const { s, n } = this;
    const start = i;
    while (s.charCodeAt(i) === SPACE) i++;
    if (i >= n) return n;
    const c = s.charCodeAt(i);
    if (c === LF) return i + 1;
    if (c === HASH && (i > start || s.charCodeAt(i - 1) === SPACE)) {
      const eol = s.indexOf('\n', i);
      return eol < 0 ? n : eol + 1;
    }
    throw OUTSIDE;
  }

  /**
   * Whether a plain scalar may start at `i` (YAML 1.2 §7.3.3 ns-plain-first, as js-yaml reads it):
   * not an indicator; `-` only when something other than a space, a line end or (in a flow
   * collection) a flow indicator follows; non-ASCII only when js-yaml takes it.
   */
  private plainStart(i: number, flow: boolean): boolean {
    const { s } = this;
    const c = s.charCodeAt(i);
    if (c >= 0x80) {
      this.printable(i);
      return true;
    }
    if (PLAIN_START[c] !== 1) return false;
    if (c === DASH) {
      const after = s.charCodeAt(i + 1);
      if (after === SPACE || after === LF || i + 1 >= this.n) return false;
      if (
        flow &&
        (after === COMMA || after === RBRACKET || after === RBRACE || after === LBRACKET || after === LBRACE)
      )
        return false;
    }
    return true;
  }

  /** Whether `pos` (a content line) is a block sequence entry: `-` then a space or the line's end. */
  private isEntry(): boolean {
    const { s, pos } = this;
    if (s.charCodeAt(pos) !== DASH) return false;
    const after = s.charCodeAt(pos + 1);
    return after === SPACE || after === LF || pos + 1 >= this.n;
  }

  /** A block collection whose first line is the current content line, at indent `indent`. */
  private block(indent: number, depth: number): unknown {
    if (depth > FAST_YAML_MAX_DEPTH) throw OUTSIDE;
    return this.isEntry() ? this.sequence(indent, depth) : this.mapping(this.pos, indent, depth);
  }

  /**
   * `object[key] = value` for the mapping whose keys start at `from` in `keys`. js-yaml defines
   * `__proto__` as an own property, and throws for a repeated key (json: false): both refused.
   * The object's own keys are exactly those set here, so a small mapping's are compared in `keys`
   * (mostly the same string, from `plainKey`'s table) instead of looked up in the object.
   */
  private setKey(object: Record<string, unknown>, from: number, key: string, value: unknown): void {
    if (key === '__proto__') throw OUTSIDE;
    const keys = this.keys;
    const end = this.keyTop;
    if (end - from < SMALL_MAPPING) {
      for (let k = from; k < end; k++) if (keys[k] === key) throw OUTSIDE;
      keys[end] = key;
      this.keyTop = end + 1;
    } else if (Object.hasOwn(object, key)) {
      throw OUTSIDE;
    }
    object[key] = value;
  }

  /** A block mapping at `indent`, its first key at `at` (on the current content line). */
  private mapping(at: number, indent: number, depth: number): Record<string, unknown> {
    const { s, n } = this;
    const object: Record<string, unknown> = {};
    const from = this.keyTop;
    for (;;) {
      // The key, then `:` and a space or the line's end.
      let key: string;
      let i: number;
      const c = s.charCodeAt(at);
      if (c === DQUOTE || c === SQUOTE) {
        key = c === DQUOTE ? this.doubleQuoted(at) : this.singleQuoted(at);
        i = this.quoteEnd;
        if (s.charCodeAt(i) !== COLON) throw OUTSIDE;
        const after = s.charCodeAt(i + 1);
        if (after !== SPACE && after !== LF && i + 1 < n) throw OUTSIDE;
      } else {
        if (!this.plainStart(at, false)) throw OUTSIDE;
        key = this.blockKey(at);
        i = this.keyStop;
      }
      i++; // past `:`
      while (s.charCodeAt(i) === SPACE) i++;
      const v = s.charCodeAt(i);
      let value: unknown;
      if (i >= n || v === LF || v === HASH) {
        // Nothing on the key's line: a nested collection below, a sequence at the key's own indent, or null.
        this.skip(this.endOfLine(i));
        if (this.indent > indent) value = this.block(this.indent, depth + 1);
        else if (this.indent === indent && this.isEntry()) value = this.sequence(indent, depth + 1);
        else value = null;
      } else {
        value = this.inline(i, depth);
        // A deeper content line next would continue a plain scalar, or be an error: refused below. (A
        // deeper comment line ends a plain scalar in js-yaml as anywhere else.)
        this.skip(this.endOfLine(this.pos));
      }
      this.setKey(object, from, key, value);
      if (this.indent === indent) {
        at = this.pos;
        continue;
      }
      if (this.indent > indent) throw OUTSIDE;
      this.keyTop = from;
      return object;
    }
  }

  /**
   * A block mapping's plain key at `at` (a plain scalar may start there), read as `scanPlain` reads a
   * scalar, then `: `, `:` at the line's end or the text's; sets `keyStop` at the `:`. A key of up to
   * `PACKED_KEY_LENGTH` ASCII characters and no space is packed as it is read (as `flowKey` packs
   * one), and found among the keys met before by its numbers.
   */
  private blockKey(at: number): string {
    const { s, n } = this;
    let i = at;
    let end = at;
    let packed = true;
    let lo = 0;
    let hi = 0;
    let hash = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c === SPACE) continue;
      if (c === LF) break;
      if (c === HASH && s.charCodeAt(i - 1) === SPACE) break;
      if (c === COLON) {
        const after = s.charCodeAt(i + 1);
        if (after === SPACE || after === LF || i + 1 >= n) break;
      } else if (c < 0x20 || c >= 0x7f) {
        i = this.printable(i);
        packed = false;
      }
      // A space inside the key: not packed (`plainKey` takes it)
      if (i > end) packed = false;
      const k = i - at;
      if (k < 7) lo = lo * 128 + c;
      else if (k < PACKED_KEY_LENGTH) hi = hi * 128 + c;
      hash = (hash * 31 + c) | 0;
      end = i + 1;
    }
    if (s.charCodeAt(i) !== COLON) throw OUTSIDE; // a line that is not `key: ...`
    this.keyStop = i;
    return knownKey(s, at, end, packed, lo, hi, hash);
  }

  /** A block sequence at `indent`, its first entry on the current content line. */
  private sequence(indent: number, depth: number): unknown[] {
    const { s, n } = this;
    const list: unknown[] = [];
    for (;;) {
      const lineStart = this.pos - indent;
      let i = this.pos + 1;
      while (s.charCodeAt(i) === SPACE) i++;
      const c = s.charCodeAt(i);
      if (i >= n || c === LF || c === HASH) {
        this.skip(this.endOfLine(i));
        if (this.indent > indent) {
          list.push(this.block(this.indent, depth + 1));
        } else {
          list.push(null);
          // js-yaml goes on with this sequence at an entry indented less than it, after an empty one
          if (this.indent !== END && this.indent < indent && this.isEntry()) throw OUTSIDE;
        }
      } else if (this.keyAhead(i)) {
        // `- key: value`: a mapping whose keys are at the column of the first one.
        if (depth + 1 > FAST_YAML_MAX_DEPTH) throw OUTSIDE;
        list.push(this.mapping(i, i - lineStart, depth + 1));
      } else {
        list.push(this.inline(i, depth));
        this.skip(this.endOfLine(this.pos));
      }
      if (this.indent === indent && this.isEntry()) continue;
      if (this.indent > indent) throw OUTSIDE;
      return list;
    }
  }

  /** Whether a sequence entry's content at `i` starts with a mapping key (`key:` then a space or line end). */
  private keyAhead(i: number): boolean {
    const { s, n } = this;
    const c = s.charCodeAt(i);
    let j: number;
    if (c === DQUOTE || c === SQUOTE) {
      if (c === DQUOTE) this.doubleQuoted(i);
      else this.singleQuoted(i);
      j = this.quoteEnd;
    } else if (!this.plainStart(i, false)) {
      return false;
    } else {
      j = this.scanPlain(i);
    }
    if (s.charCodeAt(j) !== COLON) return false;
    const after = s.charCodeAt(j + 1);
    return after === SPACE || after === LF || j + 1 >= n;
  }

  /** A value on the rest of a line at `i` (a scalar or a flow collection); sets `pos` past it. */
  private inline(i: number, depth: number): unknown {
    const { s, n } = this;
    const c = s.charCodeAt(i);
    if (c === LBRACKET || c === LBRACE) return this.flow(i, depth + 1);
    if (c === DQUOTE || c === SQUOTE) {
      const value = c === DQUOTE ? this.doubleQuoted(i) : this.singleQuoted(i);
      this.pos = this.quoteEnd;
      return value;
    }
    if (!this.plainStart(i, false)) throw OUTSIDE; // an indicator, or `key: - x`
    const j = this.scanPlain(i);
    if (j < n && s.charCodeAt(j) !== LF && s.charCodeAt(j) !== HASH) throw OUTSIDE; // `a: b: c`
    this.pos = this.scanEnd;
    return resolvePlain(s.slice(i, this.scanEnd));
  }

  /**
   * A plain scalar in block context from `i` to its line's end, a comment (` #`) or a `:` followed by
   * a space or the line's end. Returns where it stopped (the `:`, `#`, line break or text end) and
   * sets `scanEnd` to the end of its last non-space character.
   */
  private scanPlain(i: number): number {
    const { s, n } = this;
    let end = i;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c === SPACE) continue;
      if (c === LF) break;
      if (c === HASH && s.charCodeAt(i - 1) === SPACE) break;
      if (c === COLON) {
        const after = s.charCodeAt(i + 1);
        if (after === SPACE || after === LF || i + 1 >= n) break;
      } else if (c < 0x20 || c >= 0x7f) {
        i = this.printable(i);
      }
      end = i + 1;
    }
    this.scanEnd = end;
    return i;
  }

  /**
   * A character outside printable ASCII at `i` of a plain scalar: taken when js-yaml takes it too;
   * returns the index of its last UTF-16 unit. Control characters, C1, U+2028/2029, U+FEFF,
   * U+FFFE/FFFF and lone surrogates are refused (js-yaml throws for some, reads others as breaks).
   */
  private printable(i: number): number {
    const c = this.s.charCodeAt(i);
    if (c < 0xa0 || c === 0x2028 || c === 0x2029 || c === 0xfeff || c >= 0xfffe) throw OUTSIDE;
    if (c >= 0xd800 && c <= 0xdfff) {
      const low = this.s.charCodeAt(i + 1);
      if (c <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) return i + 1;
      throw OUTSIDE;
    }
    return i;
  }

  /** A double-quoted scalar on one line from `i` (its `"`); sets `quoteEnd` past the closing quote. */
  private doubleQuoted(i: number): string {
    const { s, n } = this;
    let out = '';
    let start = ++i;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c === DQUOTE) {
        this.quoteEnd = i + 1;
        return out + s.slice(start, i);
      }
      if (c === BACKSLASH) {
        out += s.slice(start, i);
        const e = s.charCodeAt(++i);
        const simple = ESCAPES[e];
        if (simple !== undefined) {
          out += simple;
        } else {
          const digits = e === 0x78 ? 2 : e === 0x75 ? 4 : e === 0x55 ? 8 : 0;
          if (digits === 0) throw OUTSIDE; // a line break escaped, or an unknown escape
          let code = 0;
          for (let k = 0; k < digits; k++) {
            const h = hexValue(s.charCodeAt(++i));
            if (h < 0) throw OUTSIDE;
            code = code * 16 + h;
          }
          if (code > 0x10ffff) throw OUTSIDE;
          out +=
            code <= 0xffff
              ? String.fromCharCode(code)
              : String.fromCharCode(((code - 0x10000) >> 10) + 0xd800, ((code - 0x10000) & 0x3ff) + 0xdc00);
        }
        start = i + 1;
      } else if (c < 0x20) {
        throw OUTSIDE; // a line break (a scalar over lines), or a control character
      }
    }
    throw OUTSIDE;
  }

  /** A single-quoted scalar on one line from `i` (its `'`); sets `quoteEnd` past the closing quote. */
  private singleQuoted(i: number): string {
    const { s, n } = this;
    let out = '';
    let start = ++i;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c === SQUOTE) {
        out += s.slice(start, i);
        if (s.charCodeAt(i + 1) !== SQUOTE) {
          this.quoteEnd = i + 1;
          return out;
        }
        start = ++i; // `''` is one quote: keep the second
      } else if (c < 0x20) {
        throw OUTSIDE;
      }
    }
    throw OUTSIDE;
  }

  /** A flow collection on one line from `i` (its `[` or `{`); sets `pos` past its closing bracket. */
  private flow(i: number, depth: number): unknown {
    if (depth > FAST_YAML_MAX_DEPTH) throw OUTSIDE;
    return this.s.charCodeAt(i) === LBRACE ? this.flowMapping(i + 1, depth) : this.flowSequence(i + 1, depth);
  }

  /** The entries of a flow sequence from `i` (after its `[`); sets `pos` past its `]`. */
  private flowSequence(i: number, depth: number): unknown[] {
    const { s } = this;
    const list: unknown[] = [];
    while (s.charCodeAt(i) === SPACE) i++;
    if (s.charCodeAt(i) === RBRACKET) {
      this.pos = i + 1;
      return list;
    }
    for (;;) {
      list.push(this.flowNode(i, depth));
      i = this.next(this.pos, RBRACKET);
      if (i < 0) return list;
    }
  }

  /** The pairs of a flow mapping from `i` (after its `{`); sets `pos` past its `}`. */
  private flowMapping(i: number, depth: number): Record<string, unknown> {
    const { s } = this;
    const object: Record<string, unknown> = {};
    while (s.charCodeAt(i) === SPACE) i++;
    if (s.charCodeAt(i) === RBRACE) {
      this.pos = i + 1;
      return object;
    }
    const from = this.keyTop;
    for (;;) {
      const key = this.flowKey(i);
      i = this.pos;
      // `:` then at least one space
      if (s.charCodeAt(i) !== COLON || s.charCodeAt(i + 1) !== SPACE) throw OUTSIDE;
      i += 2;
      while (s.charCodeAt(i) === SPACE) i++;
      this.setKey(object, from, key, this.flowNode(i, depth));
      i = this.next(this.pos, RBRACE);
      if (i < 0) {
        this.keyTop = from;
        return object;
      }
    }
  }

  /**
   * After an entry of a flow collection, at `i`: the start of the next entry (after `, `), or -1 at
   * the collection's end (`pos` set past `close`). A trailing comma is refused.
   */
  private next(i: number, close: number): number {
    const { s } = this;
    while (s.charCodeAt(i) === SPACE) i++;
    const c = s.charCodeAt(i);
    if (c === close) {
      this.pos = i + 1;
      return -1;
    }
    if (c !== COMMA) throw OUTSIDE;
    i++;
    while (s.charCodeAt(i) === SPACE) i++;
    if (s.charCodeAt(i) === close) throw OUTSIDE; // a trailing comma
    return i;
  }

  /**
   * A key of a flow mapping at `i`, a plain one followed by `: ` (as `flowPlain` reads a key, which it
   * was before); sets `pos` just past it, at its `:`. A plain key of up to `PACKED_KEY_LENGTH` ASCII
   * characters is packed into numbers as it is read and found among the keys met before by them,
   * without being copied out of the text or compared with it.
   */
  private flowKey(i: number): string {
    const { s, n } = this;
    const c = s.charCodeAt(i);
    if (c === DQUOTE || c === SQUOTE) {
      const key = c === DQUOTE ? this.doubleQuoted(i) : this.singleQuoted(i);
      this.pos = this.quoteEnd;
      return key;
    }
    if (!this.plainStart(i, true)) throw OUTSIDE;
    const start = i;
    let end = i;
    let ascii = true;
    let lo = 0;
    let hi = 0;
    let hash = 0;
    for (; i < n; i++) {
      const d = s.charCodeAt(i);
      if (d === COLON) {
        // `: ` right after the key's last character (a space before the `:` is refused, as a `:`
        // inside the key)
        if (s.charCodeAt(i + 1) === SPACE && end === i) break;
        throw OUTSIDE;
      }
      if (d !== SPACE) {
        // `,`, `]` or `}` ends a scalar that is then not a key: refused, as the caller would
        if (
          d === COMMA ||
          d === RBRACKET ||
          d === RBRACE ||
          d === LF ||
          d === HASH ||
          d === LBRACKET ||
          d === LBRACE
        )
          throw OUTSIDE;
        if (d < 0x20 || d >= 0x7f) {
          i = this.printable(i);
          ascii = false;
        }
        end = i + 1;
      }
      // Seven 7-bit characters to a number (below 2^53: exact); spaces inside the key too.
      const k = i - start;
      if (k < 7) lo = lo * 128 + d;
      else if (k < PACKED_KEY_LENGTH) hi = hi * 128 + d;
      hash = (hash * 31 + d) | 0;
    }
    if (i >= n) throw OUTSIDE;
    this.pos = i;
    return knownKey(s, start, i, ascii, lo, hi, hash);
  }

  /** An entry of a flow collection at `i`: a scalar or a nested flow collection; sets `pos` past it. */
  private flowNode(i: number, depth: number): unknown {
    const c = this.s.charCodeAt(i);
    if (c === LBRACKET || c === LBRACE) return this.flow(i, depth + 1);
    if (c === DQUOTE || c === SQUOTE) {
      const value = c === DQUOTE ? this.doubleQuoted(i) : this.singleQuoted(i);
      this.pos = this.quoteEnd;
      return value;
    }
    this.flowPlain(i, false);
    return resolvePlain(this.s.slice(i, this.pos));
  }

  /**
   * A plain scalar inside a flow collection from `i`, up to `,`, `]` or `}` (or, for a key, `: `);
   * a `:`, `#`, `[`, `{` or line break inside it is refused. Sets `pos` past its last non-space
   * character.
   */
  private flowPlain(i: number, key: boolean): void {
    const { s, n } = this;
    if (!this.plainStart(i, true)) throw OUTSIDE;
    let end = i;
    for (; i < n; i++) {
      const d = s.charCodeAt(i);
      if (d === SPACE) continue;
      if (d === COMMA || d === RBRACKET || d === RBRACE) break;
      if (d === COLON) {
        if (key && s.charCodeAt(i + 1) === SPACE && end === i) break;
        throw OUTSIDE;
      }
      if (d === LF || d === HASH || d === LBRACKET || d === LBRACE) throw OUTSIDE;
      if (d < 0x20 || d >= 0x7f) i = this.printable(i);
      end = i + 1;
    }
    if (i >= n) throw OUTSIDE;
    this.pos = end;
  }
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}
