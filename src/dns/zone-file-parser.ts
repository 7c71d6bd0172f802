/**
 * A strict RFC 1035 §5 master-file ("zone file") parser. Pure: no I/O; `$INCLUDE` files are read through
 * a callback. Every record whose type Zonekeeper models comes back parsed (RDATA through `parseRdata`);
 * everything else is reported as a problem with its file, line and column, never thrown.
 *
 * Supported: `$ORIGIN`, `$TTL` (RFC 2308 §4), `$INCLUDE file [origin]` (nested, depth-limited, cycles
 * detected), parentheses spanning lines, `;` comments, a blank owner meaning the previous owner, `@`,
 * relative names, TTL and class in either order and optional, `\#` generic RDATA and `TYPEnnn`/`CLASSnnn`
 * (RFC 3597 §5), escapes, and quoted strings holding `;`, parentheses and spaces. ALIAS is read both as
 * the `ALIAS` mnemonic and as `TYPE65401` (how the zone-file printer writes it).
 */
import { DnsError } from './errors.ts';
import { type Name, parseName } from './name.ts';
import { decodeEscapes } from './presentation.ts';
import { parseRdata, type Rdata, recordTypeOfCode } from './rdata.ts';
import { classCode, type RecordTypeName } from './rrtype.ts';
import { parseTtl } from './ttl.ts';

export interface ZoneFileRecord {
  /** Absolute owner name. */
  owner: Name;
  ttl: number;
  class: 'IN';
  type: RecordTypeName;
  rdata: Rdata;
  /** Line where the record starts (1-based). */
  line: number;
  file: string;
}

/**
 * `error`: the file is malformed there (a real server would refuse the zone). `warning`: valid content
 * that is not imported as written (e.g. an unsupported type; `skipped` says the record is left out).
 * `note`: information, nothing is lost.
 */
export type ZoneFileSeverity = 'error' | 'warning' | 'note';

export interface ZoneFileProblem {
  file: string;
  line: number;
  column?: number;
  severity: ZoneFileSeverity;
  /** Stable UPPER_SNAKE identifier. */
  code: string;
  message: string;
  /** The content at this line is left out of the result. */
  skipped?: boolean;
}

export interface ZoneFileParseResult {
  records: ZoneFileRecord[];
  /** The origin the file started with: `options.origin`, else the first `$ORIGIN` of the top file. */
  origin: Name | undefined;
  problems: ZoneFileProblem[];
}

/**
 * Reads an `$INCLUDE`d file. `path` is as written in the directive, `from` the file that includes it.
 * Return the text (the file is then known by `path`) or `{ file, text }` with a resolved name, which is
 * what problems show and what cycle detection compares. Throw when the file cannot be read.
 */
export type IncludeReader = (path: string, from: string) => string | { file: string; text: string };

export interface ZoneFileParseOptions {
  /** Name of the text's file in problems and records. Default `<input>`. */
  file?: string;
  /** The initial origin, normally the zone name (a trailing dot is added). */
  origin?: Name;
  /** Without it, `$INCLUDE` is reported as an error. */
  include?: IncludeReader;
  /** Maximum `$INCLUDE` nesting. Default 10. */
  maxIncludeDepth?: number;
}

export const DEFAULT_MAX_INCLUDE_DEPTH = 10;

// ---------------------------------------------------------------------------------------------------
// Record types known by mnemonic (IANA "Resource Record (RR) TYPEs"), so that types Zonekeeper does not
// model are recognised and reported by name rather than taken for a syntax error.

const IANA_TYPES: Readonly<Record<string, number>> = {
  A: 1,
  NS: 2,
  MD: 3,
  MF: 4,
  CNAME: 5,
  SOA: 6,
  MB: 7,
  MG: 8,
  MR: 9,
  NULL: 10,
  WKS: 11,
  PTR: 12,
  HINFO: 13,
  MINFO: 14,
  MX: 15,
  TXT: 16,
  RP: 17,
  AFSDB: 18,
  X25: 19,
  ISDN: 20,
  RT: 21,
  NSAP: 22,
  'NSAP-PTR': 23,
  SIG: 24,
  KEY: 25,
  PX: 26,
  GPOS: 27,
  AAAA: 28,
  LOC: 29,
  NXT: 30,
  EID: 31,
  NIMLOC: 32,
  SRV: 33,
  ATMA: 34,
  NAPTR: 35,
  KX: 36,
  CERT: 37,
  A6: 38,
  DNAME: 39,
  SINK: 40,
  OPT: 41,
  APL: 42,
  DS: 43,
  SSHFP: 44,
  IPSECKEY: 45,
  RRSIG: 46,
  NSEC: 47,
  DNSKEY: 48,
  DHCID: 49,
  NSEC3: 50,
  NSEC3PARAM: 51,
  TLSA: 52,
  SMIMEA: 53,
  HIP: 55,
  NINFO: 56,
  RKEY: 57,
  TALINK: 58,
  CDS: 59,
  CDNSKEY: 60,
  OPENPGPKEY: 61,
  CSYNC: 62,
  ZONEMD: 63,
  SVCB: 64,
  HTTPS: 65,
  DSYNC: 66,
  SPF: 99,
  UINFO: 100,
  UID: 101,
  GID: 102,
  UNSPEC: 103,
  NID: 104,
  L32: 105,
  L64: 106,
  LP: 107,
  EUI48: 108,
  EUI64: 109,
  TKEY: 249,
  TSIG: 250,
  IXFR: 251,
  AXFR: 252,
  MAILB: 253,
  MAILA: 254,
  ANY: 255,
  URI: 256,
  CAA: 257,
  AVC: 258,
  DOA: 259,
  AMTRELAY: 260,
  RESINFO: 261,
  WALLET: 262,
  TA: 32768,
  DLV: 32769,
  // PowerDNS's ALIAS pseudo-type (private use).
  ALIAS: 65401,
};

const MNEMONIC_BY_CODE: ReadonlyMap<number, string> = new Map(
  Object.entries(IANA_TYPES).map(([k, v]) => [v, k]),
);

/** RFC 6895 §3.1: meta-types and QTYPEs exist only in messages, never in zone data. */
const META_TYPES: ReadonlySet<number> = new Set([41, 249, 250, 251, 252, 253, 254, 255]);

/** DNSSEC signing material: keys, signatures, denial of existence (DS alone is managed). */
const DNSSEC_TYPES: ReadonlySet<number> = new Set([24, 25, 30, 46, 47, 48, 50, 51, 59, 60, 32768, 32769]);

/**
 * A class mnemonic (IN, CH, HS, CS) or CLASSnnn (RFC 3597 §5). NONE and ANY are UPDATE/query classes
 * (RFC 2136 §2.4), not data classes, so they are left to be reported as what they are.
 */
function zoneFileClass(text: string): number | undefined {
  const upper = text.toUpperCase();
  if (upper === 'NONE' || upper === 'ANY') return undefined;
  if (upper === 'CS') return 2;
  return classCode(upper);
}

function typeCodeOf(text: string): number | undefined {
  const upper = text.toUpperCase();
  const known = IANA_TYPES[upper];
  if (known !== undefined) return known;
  // RFC 3597 §5: TYPE followed by the decimal code, at most 65535.
  const m = /^TYPE(\d{1,5})$/.exec(upper);
  if (!m) return undefined;
  const code = Number(m[1]);
  return code <= 0xffff ? code : undefined;
}

function mnemonic(code: number): string {
  return MNEMONIC_BY_CODE.get(code) ?? `TYPE${code}`;
}

/** Why a type that exists is not imported; the caller adds "the record is skipped". */
function unsupportedReason(code: number): string {
  const name = mnemonic(code);
  if (DNSSEC_TYPES.has(code))
    return `type ${name} is not supported by Zonekeeper (DNSSEC is not managed yet)`;
  if (code === 63) return `type ZONEMD is not supported by Zonekeeper (zone digests are not managed yet)`;
  if (code === 99) {
    return 'type SPF is not supported by Zonekeeper; RFC 7208 §3.1 retired it, publish the policy as TXT';
  }
  return `type ${name} is not supported by Zonekeeper`;
}

// ---------------------------------------------------------------------------------------------------
// Lexer: the text becomes entries (one per logical line, parentheses joining physical lines), each a
// list of tokens with their raw text (quotes and escapes kept) and position. Comments are dropped.

interface Token {
  /** Raw text: quotes and escape sequences as written. */
  raw: string;
  /** The whole token was a "quoted string". */
  quoted: boolean;
  line: number;
  column: number;
}

interface Entry {
  /** Line where the entry begins. */
  line: number;
  tokens: Token[];
  /** A lexical error was reported for this entry: it is not interpreted. */
  broken: boolean;
}

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const QUOTE = 0x22;
const LPAREN = 0x28;
const RPAREN = 0x29;
const SEMICOLON = 0x3b;
const BACKSLASH = 0x5c;
const EQUALS = 0x3d;

function isDelimiter(c: number): boolean {
  return c === SPACE || c === TAB || c === CR || c === LF || c === SEMICOLON || c === LPAREN || c === RPAREN;
}

type Report = (line: number, column: number | undefined, code: string, message: string) => void;

function lex(text: string, report: Report): Entry[] {
  const entries: Entry[] = [];
  const n = text.length;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0; // a UTF-8 byte-order mark
  let line = 1;
  let lineStart = i;
  let open: { line: number; column: number } | undefined;
  let current: Entry | undefined;
  const column = (at: number) => at - lineStart + 1;
  const entry = (): Entry => {
    current ??= { line, tokens: [], broken: false };
    return current;
  };
  const fail = (l: number, c: number | undefined, code: string, message: string) => {
    entry().broken = true;
    report(l, c, code, message);
  };
  const flush = () => {
    if (current && (current.tokens.length > 0 || current.broken)) entries.push(current);
    current = undefined;
  };
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === LF) {
      i++;
      line++;
      lineStart = i;
      if (!open) flush();
      continue;
    }
    if (c === SPACE || c === TAB || c === CR) {
      i++;
      continue;
    }
    if (c === SEMICOLON) {
      // RFC 1035 §5.1: a comment runs to the end of the line (parentheses may continue the entry).
      while (i < n && text.charCodeAt(i) !== LF) i++;
      continue;
    }
    if (c === LPAREN) {
      entry();
      if (open) {
        fail(
          line,
          column(i),
          'NESTED_PARENTHESES',
          `"(" inside the parentheses opened at line ${open.line}; parentheses do not nest, remove one (or escape it as "\\(")`,
        );
      } else {
        open = { line, column: column(i) };
      }
      i++;
      continue;
    }
    if (c === RPAREN) {
      if (open) open = undefined;
      else {
        fail(
          line,
          column(i),
          'UNBALANCED_PARENTHESIS',
          '")" without a matching "("; remove it or add the "("',
        );
      }
      i++;
      continue;
    }
    // A token: a "quoted string", or a word that ends at whitespace, ';', '(' or ')'.
    const target = entry();
    const start = i;
    const startLine = line;
    const startColumn = column(i);
    const quoted = c === QUOTE;
    let inQuotes = quoted;
    if (quoted) i++;
    while (i < n) {
      const d = text.charCodeAt(i);
      if (d === LF) break;
      if (d === BACKSLASH) {
        const next = text.charCodeAt(i + 1);
        if (i + 1 >= n || next === LF || next === CR) {
          fail(
            line,
            column(i),
            'BAD_ESCAPE',
            'a backslash at the end of a line escapes nothing; write "\\\\" for a backslash, or use parentheses to continue an entry on the next line',
          );
          i++;
          continue;
        }
        i += 2; // RFC 1035 §5.1: \X is X itself, \DDD an octet; either way the next char is not special
        continue;
      }
      if (inQuotes) {
        i++;
        if (d === QUOTE) {
          inQuotes = false;
          if (quoted) {
            if (i < n && !isDelimiter(text.charCodeAt(i))) {
              fail(
                line,
                column(i),
                'BAD_QUOTE',
                'a closing quote must be followed by a space, a comment or the end of the line; separate the strings with a space',
              );
            }
            break;
          }
        }
        continue;
      }
      if (isDelimiter(d)) break;
      if (d === QUOTE) {
        // RFC 9460 §2.1: `key="value"` quotes a SvcParam value inside the word.
        if (i > start && text.charCodeAt(i - 1) === EQUALS) {
          inQuotes = true;
        } else if (!target.broken) {
          fail(
            line,
            column(i),
            'BAD_QUOTE',
            'a quote in the middle of a word; quote the whole string, or escape the quote as \\"',
          );
        }
      }
      i++;
    }
    if (inQuotes) {
      fail(
        startLine,
        startColumn,
        'UNTERMINATED_QUOTE',
        'this quoted string is not closed on its line; add the closing quote (strings cannot span lines)',
      );
    }
    target.tokens.push({ raw: text.slice(start, i), quoted, line: startLine, column: startColumn });
  }
  if (open) {
    fail(
      open.line,
      open.column,
      'UNCLOSED_PARENTHESIS',
      '"(" is never closed; add the ")" at the end of the entry',
    );
    open = undefined;
  }
  flush();
  return entries;
}

// ---------------------------------------------------------------------------------------------------
// Interpretation

interface FileContext {
  file: string;
  origin: Name | undefined;
  /** The previous owner; null after an owner that could not be parsed (its lines are skipped quietly). */
  owner: Name | null | undefined;
  depth: number;
  /** Files being read, outermost first (for cycle detection). */
  stack: string[];
}

interface State {
  records: ZoneFileRecord[];
  problems: ZoneFileProblem[];
  include: IncludeReader | undefined;
  maxDepth: number;
  /** RFC 2308 §4: the $TTL in effect. */
  dollarTtl: number | undefined;
  /** RFC 1035 §5.1: the last TTL stated explicitly. */
  lastTtl: number | undefined;
  lastClass: number | undefined;
  soaMinimum: number | undefined;
  warnedPreviousTtl: boolean;
  warnedSoaMinimum: boolean;
  firstOrigin: Name | undefined;
}

/** Parses zone-file text. Never throws for bad input: every problem is in `problems`. */
export function parseZoneFile(text: string, options: ZoneFileParseOptions = {}): ZoneFileParseResult {
  const file = options.file ?? '<input>';
  const state: State = {
    records: [],
    problems: [],
    include: options.include,
    maxDepth: options.maxIncludeDepth ?? DEFAULT_MAX_INCLUDE_DEPTH,
    dollarTtl: undefined,
    lastTtl: undefined,
    lastClass: undefined,
    soaMinimum: undefined,
    warnedPreviousTtl: false,
    warnedSoaMinimum: false,
    firstOrigin: undefined,
  };
  let origin = options.origin;
  if (origin !== undefined) {
    try {
      origin = parseName(origin.endsWith('.') ? origin : `${origin}.`);
    } catch (e) {
      state.problems.push({
        file,
        line: 1,
        severity: 'error',
        code: 'BAD_ORIGIN',
        message: `the initial origin ${JSON.stringify(options.origin)} is not a valid name: ${messageOf(e)}`,
      });
      return { records: [], origin: undefined, problems: state.problems };
    }
  }
  parseText(text, { file, origin, owner: undefined, depth: 0, stack: [file] }, state);
  return { records: state.records, origin: origin ?? state.firstOrigin, problems: state.problems };
}

function parseText(text: string, ctx: FileContext, state: State): void {
  const report: Report = (line, column, code, message) =>
    state.problems.push({
      file: ctx.file,
      line,
      ...(column !== undefined ? { column } : {}),
      severity: 'error',
      code,
      message,
    });
  for (const entry of lex(text, report)) {
    if (entry.broken) {
      // The owner of a broken line is unknown: following blank-owner lines are skipped quietly.
      if (entry.tokens[0]?.column === 1 && entry.tokens[0].line === entry.line) ctx.owner = null;
      continue;
    }
    const first = entry.tokens[0]!;
    const atColumnOne = first.line === entry.line && first.column === 1;
    if (atColumnOne && !first.quoted && first.raw.startsWith('$')) directive(entry, ctx, state);
    else record(entry, atColumnOne, ctx, state);
  }
}

function problem(
  state: State,
  ctx: FileContext,
  at: { line: number; column?: number },
  severity: ZoneFileSeverity,
  code: string,
  message: string,
  skipped = false,
): void {
  state.problems.push({
    file: ctx.file,
    line: at.line,
    ...(at.column !== undefined ? { column: at.column } : {}),
    severity,
    code,
    message,
    ...(skipped ? { skipped: true } : {}),
  });
}

function directive(entry: Entry, ctx: FileContext, state: State): void {
  const [head, ...args] = entry.tokens as [Token, ...Token[]];
  const name = head.raw.toUpperCase();
  const arity = (min: number, max: number, usage: string): boolean => {
    if (args.length >= min && args.length <= max) return true;
    const extra = args.length > max ? args[max]! : head;
    problem(
      state,
      ctx,
      extra,
      'error',
      'BAD_DIRECTIVE',
      `${name} takes ${usage}, got ${args.length} argument(s); comments start with ";"`,
    );
    return false;
  };
  switch (name) {
    case '$ORIGIN': {
      if (!arity(1, 1, 'one domain name')) return;
      const arg = args[0]!;
      try {
        // A relative $ORIGIN is relative to the current origin (as BIND and Knot read it).
        ctx.origin = parseName(plainText(arg), ctx.origin);
        if (ctx.depth === 0) state.firstOrigin ??= ctx.origin;
      } catch (e) {
        problem(state, ctx, arg, 'error', 'BAD_ORIGIN', `$ORIGIN ${arg.raw}: ${messageOf(e)}`);
      }
      return;
    }
    case '$TTL': {
      if (!arity(1, 1, 'one TTL')) return;
      const arg = args[0]!;
      try {
        state.dollarTtl = parseTtl(plainText(arg)); // RFC 2308 §4
      } catch (e) {
        problem(state, ctx, arg, 'error', 'BAD_TTL', `$TTL: ${messageOf(e)}`);
      }
      return;
    }
    case '$INCLUDE':
      if (arity(1, 2, 'a file name and optionally an origin')) include(args, head, ctx, state);
      return;
    case '$GENERATE':
      problem(
        state,
        ctx,
        head,
        'warning',
        'UNSUPPORTED_DIRECTIVE',
        '$GENERATE is not supported; the records it would generate are skipped. Expand it first, e.g. with ' +
          '`named-compilezone -o expanded.zone ZONE FILE`, and import the expanded file',
        true,
      );
      return;
    default:
      problem(
        state,
        ctx,
        head,
        'error',
        'UNKNOWN_DIRECTIVE',
        `unknown directive ${head.raw}; zone files know $ORIGIN, $TTL and $INCLUDE (an owner name starting with "$" is written "\\$")`,
      );
  }
}

function include(args: Token[], head: Token, ctx: FileContext, state: State): void {
  const pathToken = args[0]!;
  const path = utf8Text(plainText(pathToken));
  let origin = ctx.origin;
  if (args[1] !== undefined) {
    try {
      origin = parseName(plainText(args[1]), ctx.origin);
    } catch (e) {
      problem(state, ctx, args[1], 'error', 'BAD_ORIGIN', `$INCLUDE origin ${args[1].raw}: ${messageOf(e)}`);
      return;
    }
  }
  if (!state.include) {
    problem(
      state,
      ctx,
      head,
      'error',
      'INCLUDE_UNAVAILABLE',
      `$INCLUDE ${path}: included files cannot be read here; inline the file`,
      true,
    );
    return;
  }
  if (ctx.depth + 1 > state.maxDepth) {
    problem(
      state,
      ctx,
      head,
      'error',
      'INCLUDE_TOO_DEEP',
      `$INCLUDE ${path}: more than ${state.maxDepth} nested includes (${ctx.stack.join(' → ')}); flatten the includes`,
      true,
    );
    return;
  }
  let resolved: { file: string; text: string };
  try {
    const got = state.include(path, ctx.file);
    resolved = typeof got === 'string' ? { file: path, text: got } : got;
  } catch (e) {
    problem(state, ctx, pathToken, 'error', 'INCLUDE_UNREADABLE', `$INCLUDE ${path}: ${messageOf(e)}`, true);
    return;
  }
  if (ctx.stack.includes(resolved.file)) {
    problem(
      state,
      ctx,
      pathToken,
      'error',
      'INCLUDE_CYCLE',
      `$INCLUDE ${path} includes itself: ${[...ctx.stack, resolved.file].join(' → ')}; remove the cycle`,
      true,
    );
    return;
  }
  // RFC 1035 §5.1: an $INCLUDE never changes the origin of the including file; the current owner
  // reverts too (as in BIND). $TTL and the last TTL carry on.
  parseText(
    resolved.text,
    {
      file: resolved.file,
      origin,
      owner: ctx.owner,
      depth: ctx.depth + 1,
      stack: [...ctx.stack, resolved.file],
    },
    state,
  );
}

function record(entry: Entry, hasOwner: boolean, ctx: FileContext, state: State): void {
  const tokens = entry.tokens;
  const first = tokens[0]!;
  const at = { line: first.line };
  let k = 0;
  let owner: Name;
  if (hasOwner) {
    k = 1;
    if (first.quoted) {
      ctx.owner = null;
      problem(state, ctx, first, 'error', 'BAD_OWNER', 'an owner name cannot be quoted; remove the quotes');
      return;
    }
    try {
      owner = parseName(first.raw, ctx.origin);
    } catch (e) {
      ctx.owner = null;
      problem(state, ctx, first, 'error', 'BAD_OWNER', `owner ${first.raw}: ${messageOf(e)}`);
      return;
    }
    ctx.owner = owner;
  } else {
    if (ctx.owner === null) return; // the owner line was reported already
    if (ctx.owner === undefined) {
      problem(
        state,
        ctx,
        first,
        'error',
        'NO_OWNER',
        'the line starts with a blank, which repeats the previous owner, but there is none; write the owner name in the first column',
      );
      return;
    }
    owner = ctx.owner;
  }

  // RFC 1035 §5.1: [<TTL>] [<class>] <type> <RDATA>, TTL and class in either order.
  let ttl: number | undefined;
  let klass: number | undefined;
  let classToken: Token | undefined;
  for (; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (t.quoted) break;
    const c = t.raw.charCodeAt(0);
    if (ttl === undefined && c >= 0x30 && c <= 0x39) {
      try {
        ttl = parseTtl(t.raw);
      } catch (e) {
        problem(state, ctx, t, 'error', 'BAD_TTL', messageOf(e));
        return;
      }
      continue;
    }
    if (klass === undefined) {
      const code = zoneFileClass(t.raw);
      if (code !== undefined) {
        klass = code;
        classToken = t;
        continue;
      }
    }
    break;
  }
  const typeToken = tokens[k];
  if (typeToken === undefined) {
    problem(
      state,
      ctx,
      tokens[tokens.length - 1]!,
      'error',
      'NO_TYPE',
      'the record has no type; write [TTL] [class] TYPE RDATA after the owner',
    );
    return;
  }
  if (ttl !== undefined) state.lastTtl = ttl;
  // A class other than IN is an error below; it does not become the default for the next lines.
  if (klass === 1) state.lastClass = klass;
  const code = typeToken.quoted ? undefined : typeCodeOf(typeToken.raw);
  if (code === undefined) {
    problem(
      state,
      ctx,
      typeToken,
      'error',
      'UNKNOWN_TYPE',
      `${JSON.stringify(typeToken.raw)} is not a TTL, a class or a record type; write [TTL] [class] TYPE RDATA (unknown types as TYPEnnn, RFC 3597 §5)`,
    );
    return;
  }
  const effectiveClass = klass ?? state.lastClass ?? 1;
  if (effectiveClass !== 1) {
    problem(
      state,
      ctx,
      classToken ?? typeToken,
      'error',
      'UNSUPPORTED_CLASS',
      `class ${classToken?.raw ?? `CLASS${effectiveClass}`} is not supported: Zonekeeper zones are class IN, and a zone file holds one class (RFC 1035 §5.2)`,
      true,
    );
    return;
  }
  if (META_TYPES.has(code)) {
    problem(
      state,
      ctx,
      typeToken,
      'error',
      'META_TYPE',
      `${mnemonic(code)} is a query or meta type (RFC 6895 §3.1) and cannot appear in a zone file; remove the line`,
      true,
    );
    return;
  }
  const type = recordTypeOfCode(code);
  if (type === undefined) {
    problem(
      state,
      ctx,
      typeToken,
      'warning',
      'UNSUPPORTED_TYPE',
      `${unsupportedReason(code)}; the record is skipped`,
      true,
    );
    return;
  }

  const rdataTokens = tokens.slice(k + 1);
  const rdataAt = rdataTokens[0] ?? typeToken;
  const text = rdataText(type, rdataTokens);
  let rdata: Rdata;
  try {
    rdata = parseRdata(type, text, ctx.origin ?? '');
  } catch (e) {
    const noOrigin = ctx.origin === undefined && hasCode(e, 'BAD_ORIGIN');
    problem(
      state,
      ctx,
      rdataAt,
      'error',
      noOrigin ? 'RELATIVE_NAME_WITHOUT_ORIGIN' : e instanceof DnsError ? e.code : 'BAD_RDATA',
      noOrigin
        ? `${type} RDATA ${JSON.stringify(text)} has a relative name but no origin is known; add $ORIGIN or write absolute names`
        : messageOf(e),
    );
    return;
  }
  if (rdata.type === 'SOA') state.soaMinimum = rdata.minimum;

  if (ttl === undefined) {
    if (state.dollarTtl !== undefined) {
      ttl = state.dollarTtl;
    } else if (state.lastTtl !== undefined) {
      ttl = state.lastTtl;
      if (!state.warnedPreviousTtl) {
        state.warnedPreviousTtl = true;
        problem(
          state,
          ctx,
          at,
          'warning',
          'TTL_FROM_PREVIOUS',
          `no $TTL and no TTL on this record: using the last TTL stated, ${ttl} (RFC 1035 §5.1); add "$TTL ${ttl}" at the top to make it explicit (RFC 2308 §4)`,
        );
      }
    } else if (state.soaMinimum !== undefined) {
      ttl = state.soaMinimum;
      if (!state.warnedSoaMinimum) {
        state.warnedSoaMinimum = true;
        problem(
          state,
          ctx,
          at,
          'warning',
          'TTL_FROM_SOA_MINIMUM',
          `no $TTL and no TTL on this record: using the SOA MINIMUM, ${ttl}, as RFC 1035 did; RFC 2308 §4 made MINIMUM the negative-caching TTL, so add "$TTL ${ttl}" at the top`,
        );
      }
    } else {
      problem(
        state,
        ctx,
        at,
        'error',
        'NO_TTL',
        'the record has no TTL and none is known yet; add "$TTL <seconds>" at the top of the file (RFC 2308 §4) or a TTL on the record',
      );
      return;
    }
  }
  state.records.push({ owner, ttl, class: 'IN', type, rdata, line: first.line, file: ctx.file });
}

/**
 * The RDATA text for parseRdata: the tokens joined by single spaces. Zone-file TXT is a list of
 * character-strings where each unquoted word is one string, so unquoted words are quoted (parseRdata
 * would take unquoted text as one string). The generic form `\# len hex` is passed through.
 */
function rdataText(type: RecordTypeName, tokens: readonly Token[]): string {
  if (type === 'TXT' && tokens[0]?.raw !== '\\#') {
    return tokens.map((t) => (t.quoted ? t.raw : `"${escapeBareQuotes(t.raw)}"`)).join(' ');
  }
  return tokens.map((t) => t.raw).join(' ');
}

/** Escapes the unescaped '"' of a word (only possible after '=') so the word can be quoted. */
function escapeBareQuotes(raw: string): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === '\\') {
      out += raw.slice(i, i + 2);
      i++;
    } else {
      out += c === '"' ? '\\"' : c;
    }
  }
  return out;
}

/** Text of a directive argument: quotes removed and escapes decoded for quoted tokens, else as written. */
function plainText(t: Token): string {
  return t.quoted ? decodeEscapes(t.raw.slice(1, -1)) : t.raw;
}

/** A binary string (one char per octet) read back as UTF-8, for file names. */
function utf8Text(binary: string): string {
  if (!/[\u0080-\u00ff]/.test(binary)) return binary;
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return new TextDecoder().decode(bytes);
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function hasCode(e: unknown, code: string): boolean {
  for (let x: unknown = e; x instanceof Error; x = x.cause) {
    if (x instanceof DnsError && x.code === code) return true;
  }
  return false;
}

/** `file:line[:column]: severity: message [CODE]`, the form compilers use. */
export function formatZoneFileProblem(p: ZoneFileProblem): string {
  const where = `${p.file}:${p.line}${p.column !== undefined ? `:${p.column}` : ''}`;
  return `${where}: ${p.severity}: ${p.message} [${p.code}]`;
}
