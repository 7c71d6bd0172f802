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
 * read at most twice (three times in a document a `RecordSetReader` tried and declined), nesting is
 * bounded, no regular expression runs on the text.
 *
 * With a `RecordSetReader` (a parse thread's), a document of the usual DNSRecordSet's shape is read
 * straight from its text into the fields the reader wants, without the objects (`Parser.recordSet`):
 * the same steps on the same text (its scalars read and typed by the same code), with the keys
 * compared with the expected ones; anything else in such a document, and any document the reader's
 * `accept` refuses, is read as before (docs/benchmarks.md, seventeenth round).
 */
import jsYaml from 'js-yaml';
import type { RecordSetFields } from '../../api/resource.ts';

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
 * Takes a document of the usual record set's shape straight from its text (`Parser.recordSet`): a
 * block mapping at the document's indent 0 of exactly `apiVersion` (this one), `kind` (this one),
 * `metadata` (`name`, perhaps `namespace`) and `spec` (`zoneRef` of a `name`, `name`, `type`, perhaps
 * `ttl`, `records` a list of scalars), in any order, each mapping in flow (`{ ... }` on one line) or
 * block style, the list in flow style or as a block sequence, every value a scalar. `accept` gives
 * what the caller makes of the fields, or undefined to have the document read as usual. `fields` is
 * one object the reader fills again for the file's next document: keep its values, not the object.
 */
export interface RecordSetReader<T> {
  readonly apiVersion: string;
  readonly kind: string;
  accept(document: number, fields: RecordSetFields): T | undefined;
}

/** The value in `fastLoadAll`'s list of a document a `RecordSetReader` took (its answer is in `taken`). */
export const TAKEN: object = Object.freeze({});

/**
 * The documents of `text` as js-yaml's `loadAll` with `CORE_SCHEMA` gives them, or `undefined` when
 * the text has anything outside the fast path's subset (then parse it with js-yaml). With `reader`,
 * a document it takes is `TAKEN` in the list and its answer at the same index of `taken`; such a
 * document is one the reader reads, to a value whose fields are those given to `reader.accept`.
 */
export function fastLoadAll<T>(
  text: string,
  reader?: RecordSetReader<T>,
  taken?: (T | undefined)[],
): unknown[] | undefined {
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
    const parser = new Parser(text);
    if (reader !== undefined && taken !== undefined) {
      parser.reader = reader;
      parser.taken = taken;
    }
    return parser.documents();
  } catch (e) {
    if (taken !== undefined) taken.length = 0;
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

/** `Parser.linesOf` per reader. */
const LINES = new WeakMap<RecordSetReader<unknown>, readonly [string, string, string]>();

/** The keys of a usual record set (`Parser.recordSet`), their order the bits of those seen. */
const TOP_KEYS = ['apiVersion', 'kind', 'metadata', 'spec'];
const META_KEYS = ['name', 'namespace'];
const SPEC_KEYS = ['zoneRef', 'name', 'type', 'ttl', 'records'];
const REF_KEYS = ['name'];
/** What `Parser.recordSet` compares at once: the start of a flow metadata, a flow spec. */
const META_PREFIX = 'metadata: { name: ';
const SPEC_PREFIX = 'spec: { zoneRef: { name: ';

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

  /** Takes usual record sets from their text (`recordSet`); their answers go to `taken`. */
  reader: RecordSetReader<unknown> | undefined;
  taken: unknown[] | undefined;
  /** The fields `recordSet` reads, one object for the file. */
  private fields: RecordSetFields | undefined;
  /** `linesOf(reader)`. */
  private lines: readonly [string, string, string] | undefined;

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
        const taken = this.reader === undefined ? undefined : this.recordSet(documents.length + 1);
        if (taken !== undefined) {
          this.taken![documents.length] = taken;
          value = TAKEN;
        } else {
          value = this.block(0, 1);
          if (!this.ended()) throw OUTSIDE;
        }
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

  /**
   * The reader's answer for the document whose first content line is the current one (at indent 0),
   * when it is a usual record set (`RecordSetReader`) and the reader takes its fields; `pos`,
   * `indent` and `separator` are then where `block` and the document's end would leave them.
   * Otherwise undefined, the position as it was: the document is read by `block`, which then reads
   * (or refuses) it exactly as without this. Each step is one `block` takes on such a text (the same
   * `skip`, `endOfLine`, `inline` and `flowNode` on the same positions), with keys compared with the
   * expected ones instead of made; anything else (another key, a quoted key, a repeated one, a value
   * of another kind, an empty value) declines.
   */
  private recordSet(document: number): unknown {
    const { pos, indent, separator } = this;
    try {
      const fields = this.readRecordSet();
      if (fields !== undefined) {
        const taken = this.reader!.accept(document, fields);
        if (taken !== undefined) return taken;
      }
    } catch (e) {
      if (e !== OUTSIDE) throw e;
    }
    this.pos = pos;
    this.indent = indent;
    this.separator = separator;
    return undefined;
  }

  /**
   * The lines `apiVersion: <reader.apiVersion>` and `kind: <reader.kind>` (with their line break)
   * where the reader reads each as that key and that string (a plain scalar that stays a string,
   * nothing else on its line); `'\0'` where it does not (never in a text the reader takes); and the
   * two lines one after the other.
   */
  private linesOf(reader: RecordSetReader<unknown>): readonly [string, string, string] {
    let lines = LINES.get(reader);
    if (lines === undefined) {
      const line = (key: string, value: string) => {
        const text = `${key}: ${value}\n`;
        try {
          const read = new Parser(text).documents();
          const o = read[0] as Record<string, unknown>;
          if (read.length === 1 && Object.keys(o).length === 1 && o[key] === value) return text;
        } catch (e) {
          if (e !== OUTSIDE) throw e;
        }
        return '\0'; // never in a text the reader takes
      };
      const api = line('apiVersion', reader.apiVersion);
      const kind = line('kind', reader.kind);
      lines = [api, kind, api + kind];
      LINES.set(reader, lines);
    }
    this.lines = lines;
    return lines;
  }

  private readRecordSet(): RecordSetFields | undefined {
    const reader = this.reader!;
    let f = this.fields;
    if (f === undefined) {
      f = {
        name: undefined,
        namespace: undefined,
        zone: undefined,
        owner: undefined,
        type: undefined,
        ttl: undefined,
        records: [],
      };
      this.fields = f;
    } else {
      f.namespace = undefined;
      f.ttl = undefined;
    }
    const { s } = this;
    const lines = this.lines ?? this.linesOf(reader);
    let seen = 0;
    let at = this.pos;
    const head = lines[2];
    if (startsAt(s, head, at)) {
      // Both lines first (the bench's and the examples' order): what reading one then the other does
      seen = 3;
      this.skip(at + head.length);
      if (this.indent !== 0) return undefined;
      at = this.pos;
    }
    for (;;) {
      const c = s.charCodeAt(at);
      const line = c === 0x61 /* a */ ? lines[0] : c === 0x6b /* k */ ? lines[1] : undefined;
      if (line !== undefined && startsAt(s, line, at)) {
        // `apiVersion: <its value>` or `kind: <its value>` and the line's end, compared at once
        const bit = c === 0x61 ? 1 : 2;
        if ((seen & bit) !== 0) return undefined;
        seen |= bit;
        this.skip(at + line.length);
      } else if (c === 0x6d /* m */ && startsAt(s, META_PREFIX, at)) {
        // `metadata: { name: ` (the bench's and the examples' shape), compared at once
        if ((seen & 4) !== 0) return undefined;
        seen |= 4;
        if (!this.metadata(at + META_PREFIX.length, 0, f, true)) return undefined;
      } else if (c === 0x73 /* s */ && startsAt(s, SPEC_PREFIX, at)) {
        // `spec: { zoneRef: { name: `
        if ((seen & 8) !== 0) return undefined;
        seen |= 8;
        if (!this.spec(at + SPEC_PREFIX.length, 0, f, true)) return undefined;
      } else {
        const key = this.keyOf(at, TOP_KEYS, false);
        if (key < 0 || (seen & (1 << key)) !== 0) return undefined;
        seen |= 1 << key;
        const i = this.valueAt(at + TOP_KEYS[key]!.length + 1);
        if (key <= 1) {
          const value = this.scalar(i);
          if (value !== (key === 0 ? reader.apiVersion : reader.kind)) return undefined;
          this.skip(this.endOfLine(this.pos));
        } else if (key === 2) {
          if (!this.metadata(i, 0, f, false)) return undefined;
        } else if (!this.spec(i, 0, f, false)) return undefined;
      }
      if (this.indent === 0) {
        at = this.pos;
        continue;
      }
      if (this.indent !== END || seen !== 15) return undefined;
      return f;
    }
  }

  /**
   * The index in `keys` of the plain key at `at` followed by `:` and (in block context) a space, the
   * line's end or the text's, or (in flow context) a space: what `blockKey` or `flowKey` reads
   * there. -1 for any other key.
   */
  private keyOf(at: number, keys: readonly string[], flow: boolean): number {
    const { s, n } = this;
    const c = s.charCodeAt(at);
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      const length = key.length;
      if (key.charCodeAt(0) !== c || s.charCodeAt(at + length) !== COLON || !startsAt(s, key, at)) continue;
      const after = s.charCodeAt(at + length + 1);
      if (after === SPACE || (!flow && (after === LF || at + length + 1 >= n))) return k;
    }
    return -1;
  }

  /** Past the spaces after a key's `:` at `i - 1`. */
  private valueAt(i: number): number {
    const { s } = this;
    while (s.charCodeAt(i) === SPACE) i++;
    return i;
  }

  /** Whether `i` (after a key's `:` and spaces) ends its line: the value is below it, or null. */
  private empty(i: number): boolean {
    const c = this.s.charCodeAt(i);
    return i >= this.n || c === LF || c === HASH;
  }

  /**
   * A block mapping's scalar value at `i` (as `inline` reads one; `pos` past it): anything but a scalar
   * (a flow collection, nothing) declines.
   */
  private scalar(i: number): unknown {
    const c = this.s.charCodeAt(i);
    if (c === LBRACKET || c === LBRACE || this.empty(i)) throw OUTSIDE;
    return this.inline(i, 0);
  }

  /** A flow collection's scalar entry at `i` (as `flowNode` reads one; `pos` past it). */
  private flowScalar(i: number): unknown {
    const c = this.s.charCodeAt(i);
    if (c === LBRACKET || c === LBRACE) throw OUTSIDE;
    return this.flowNode(i, 0);
  }

  /**
   * The value of a key at indent `indent` whose value starts at `i`: a block mapping on the next
   * lines (its keys' indent returned, the next content line read; not inside a flow collection,
   * `flow`) or a flow mapping on this line (0, `pos` at its first key). -1: neither.
   */
  private mappingAt(i: number, indent: number, flow: boolean): number {
    const { s } = this;
    if (!flow && this.empty(i)) {
      this.skip(this.endOfLine(i));
      if (this.indent <= indent || this.isEntry()) return -1;
      return this.indent;
    }
    if (s.charCodeAt(i) !== LBRACE) return -1;
    i = this.valueAt(i + 1);
    if (s.charCodeAt(i) === RBRACE) return -1; // no key
    this.pos = i;
    return 0;
  }

  /**
   * After a block mapping's value (`pos` past it on its line, or the next content line read when
   * `block`): the next content line read; whether it is another key of the mapping at `indent`.
   */
  private nextKey(block: boolean, indent: number): boolean {
    if (!block) this.skip(this.endOfLine(this.pos));
    if (this.indent === indent) return true;
    if (this.indent > indent) throw OUTSIDE;
    return false;
  }

  /**
   * After a flow mapping's value (`pos` past it): the next key's position, or -1 past its `}` (then
   * the rest of the line and the next content line read, as after any value of a block mapping).
   */
  private nextFlowKey(): number {
    const i = this.next(this.pos, RBRACE);
    if (i < 0) this.skip(this.endOfLine(this.pos));
    return i;
  }

  /** `metadata`'s value at `i` (its key at `indent`): a name and perhaps a namespace. */
  private metadata(i: number, indent: number, f: RecordSetFields, named: boolean): boolean {
    // `named`: `i` is past `metadata: { name: `, at the flow mapping's first value (its name)
    let inner = 0;
    if (!named) {
      inner = this.mappingAt(i, indent, false);
      if (inner < 0) return false;
    }
    const flow = inner === 0;
    let at = named ? i : this.pos;
    let seen = 0;
    for (;;) {
      let key = 0;
      let j: number;
      if (named) {
        named = false;
        j = this.valueAt(at);
      } else {
        key = this.keyOf(at, META_KEYS, flow);
        if (key < 0 || (seen & (1 << key)) !== 0) return false;
        j = this.valueAt(at + META_KEYS[key]!.length + 1);
      }
      seen |= 1 << key;
      const value = flow ? this.flowScalar(j) : this.scalar(j);
      if (key === 0) f.name = value;
      else f.namespace = value;
      if (flow) {
        at = this.nextFlowKey();
        if (at >= 0) continue;
      } else if (this.nextKey(false, inner)) {
        at = this.pos;
        continue;
      }
      return (seen & 1) !== 0;
    }
  }

  /** `spec`'s value at `i` (its key at `indent`): a zoneRef, a name, a type, perhaps a TTL, records. */
  private spec(i: number, indent: number, f: RecordSetFields, zoned: boolean): boolean {
    // `zoned`: `i` is past `spec: { zoneRef: { name: `, at the value of the zoneRef's name
    let inner = 0;
    if (!zoned) {
      inner = this.mappingAt(i, indent, false);
      if (inner < 0) return false;
    }
    const flow = inner === 0;
    let at = zoned ? i : this.pos;
    let seen = 0;
    for (;;) {
      // Whether the value ended with its block below (the next content line read)
      let below = false;
      if (zoned) {
        zoned = false;
        seen = 1;
        f.zone = this.flowScalar(this.valueAt(at));
        // one key only: `}` next
        if (this.next(this.pos, RBRACE) >= 0) return false;
      } else {
        const key = this.keyOf(at, SPEC_KEYS, flow);
        if (key < 0 || (seen & (1 << key)) !== 0) return false;
        seen |= 1 << key;
        const j = this.valueAt(at + SPEC_KEYS[key]!.length + 1);
        this.specValue(key, j, flow, inner, f);
        below = !flow && (key === 0 ? this.below : key === 4 && this.s.charCodeAt(j) !== LBRACKET);
      }
      if (flow) {
        at = this.nextFlowKey();
        if (at >= 0) continue;
      } else if (this.nextKey(below, inner)) {
        at = this.pos;
        continue;
      }
      // zoneRef, name, type and records; ttl perhaps
      return (seen | 8) === 31;
    }
  }

  /** Set by `specValue`: whether the zoneRef was a block mapping (the next content line read). */
  private below = false;

  /**
   * The value of the spec's key `key` at `j` (the spec a flow mapping, or a block one whose keys are
   * at `inner`) into `f`: `pos` past it on its line, or (a block zoneRef or sequence of records) the
   * next content line read. Declines by `OUTSIDE`.
   */
  private specValue(key: number, j: number, flow: boolean, inner: number, f: RecordSetFields): void {
    this.below = false;
    if (key === 0) {
      // zoneRef: a mapping of a name
      const ref = this.mappingAt(j, inner, flow);
      if (ref < 0) throw OUTSIDE;
      const refAt = this.pos;
      if (this.keyOf(refAt, REF_KEYS, ref === 0) !== 0) throw OUTSIDE;
      const k = this.valueAt(refAt + REF_KEYS[0]!.length + 1);
      if (ref === 0) {
        f.zone = this.flowScalar(k);
        // one key only: `}` next
        if (this.next(this.pos, RBRACE) >= 0) throw OUTSIDE;
      } else {
        f.zone = this.scalar(k);
        if (this.nextKey(false, ref)) throw OUTSIDE;
        this.below = true;
      }
    } else if (key === 4) {
      const records = this.records(j, flow, inner);
      if (records === undefined) throw OUTSIDE;
      f.records = records;
    } else {
      const value = flow ? this.flowScalar(j) : this.scalar(j);
      if (key === 1) f.owner = value;
      else if (key === 2) f.type = value;
      else f.ttl = value;
    }
  }

  /**
   * `records`' value at `i` (its key at `indent` of a block mapping, or in a flow mapping): a flow
   * sequence of scalars (`pos` past its `]`), or a block sequence of scalars below the key, or at
   * its indent (the next content line read).
   */
  private records(i: number, flow: boolean, indent: number): unknown[] | undefined {
    const { s } = this;
    const list: unknown[] = [];
    if (s.charCodeAt(i) === LBRACKET) {
      i = this.valueAt(i + 1);
      if (s.charCodeAt(i) === RBRACKET) {
        this.pos = i + 1;
        return list;
      }
      for (;;) {
        list.push(this.flowScalar(i));
        i = this.next(this.pos, RBRACKET);
        if (i < 0) return list;
      }
    }
    if (flow || !this.empty(i)) return undefined;
    this.skip(this.endOfLine(i));
    // `block`'s sequence below the key, or `mapping`'s at the key's own indent
    if (this.indent < indent || !this.isEntry()) return undefined;
    const at = this.indent;
    for (;;) {
      const j = this.valueAt(this.pos + 1);
      list.push(this.scalar(j));
      this.skip(this.endOfLine(this.pos));
      if (this.indent === at && this.isEntry()) continue;
      if (this.indent > at) throw OUTSIDE;
      return list;
    }
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

/**
 * `s.startsWith(prefix, at)` for `at` in `[0, s.length]`: the piece of `s` compared with `prefix` as
 * one string, which V8 does in about three quarters of the time of `startsWith` at an offset here.
 */
function startsAt(s: string, prefix: string, at: number): boolean {
  return s.slice(at, at + prefix.length) === prefix;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}
