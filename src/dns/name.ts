/**
 * Domain names in absolute presentation form (RFC 1035 §5.1): labels joined by '.', a trailing '.',
 * case preserved, and octets escaped canonically so that equal names are equal strings modulo ASCII case.
 *
 * Canonical escaping: printable ASCII 0x21..0x7e is printed as itself except the characters that are
 * special in zone files ('.', '\\', '"', '(', ')', ';', '@', '$'), which get a backslash; every other octet
 * (space, control characters, 0x7f..0xff) is printed as \DDD.
 */
import { DnsError } from './errors.ts';

export type Name = string;

/** RFC 1035 §2.3.4: labels are 63 octets or less. */
export const MAX_LABEL_LENGTH = 63;
/** RFC 1035 §2.3.4: names are 255 octets or less in wire form. */
export const MAX_NAME_LENGTH = 255;

const ROOT: Name = '.';
const DOT = 0x2e;
const BACKSLASH = 0x5c;

function buildOctetText(): string[] {
  const table: string[] = [];
  for (let c = 0; c < 256; c++) {
    if (c < 0x21 || c > 0x7e) table.push('\\' + String(c).padStart(3, '0'));
    else if ('.\\"();@$'.includes(String.fromCharCode(c))) table.push('\\' + String.fromCharCode(c));
    else table.push(String.fromCharCode(c));
  }
  return table;
}

/** Canonical presentation text of each label octet (RFC 1035 §5.1 escapes). */
export const LABEL_OCTET_TEXT: readonly string[] = buildOctetText();

/** 1 for the ASCII characters that are their own canonical text in a label (printed unescaped). */
const PLAIN_OCTET = Uint8Array.from({ length: 128 }, (_, c) =>
  LABEL_OCTET_TEXT[c] === String.fromCharCode(c) ? 1 : 0,
);

/**
 * Whether `text` is already a name's canonical presentation text: labels of characters printed as
 * themselves, none empty, none over 63 octets, separated by dots (a trailing dot or not). Then the
 * canonical form of the name is the text itself, and `parseName` need not build it again character by
 * character (a record set's name, at start, for every record set).
 */
function isPlainName(text: string): boolean {
  let labelOctets = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === DOT) {
      if (labelOctets === 0) return false;
      labelOctets = 0;
    } else if (c < 0x80 && PLAIN_OCTET[c] === 1) {
      if (++labelOctets > MAX_LABEL_LENGTH) return false;
    } else return false;
  }
  return true;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function shown(text: string): string {
  return JSON.stringify(text.length > 80 ? text.slice(0, 77) + '...' : text);
}

/**
 * Parses a presentation-format name. "@" is the origin; text ending in an unescaped '.' is absolute;
 * anything else is relative to `origin`. Returns the canonical absolute form.
 */
export function parseName(text: string, origin?: Name): Name {
  if (text === '@') {
    if (origin === undefined) {
      throw new DnsError(
        'RELATIVE_NAME_WITHOUT_ORIGIN',
        `name "@" means the origin, but no origin is known here; write the absolute name with a trailing dot`,
      );
    }
    return checkedOrigin(origin);
  }
  if (text === '.') return ROOT;
  if (text.length === 0) {
    throw new DnsError('EMPTY_NAME', 'name is empty; write "@" for the origin or "." for the root');
  }
  if (isPlainName(text)) {
    // The same name as the loop below makes, without making it character by character; anything it
    // would refuse (a name too long, a relative name without a valid origin) goes on to the loop.
    // Joined, not concatenated: the name is kept (by the catalog, the zone model), and a concatenation
    // would be a node of 32 bytes beside its flattened copy once it is read.
    const n = text.length;
    if (text.charCodeAt(n - 1) === DOT) {
      // Absolute: n wire octets of labels and their length octets, plus the root label's.
      if (n + 1 <= MAX_NAME_LENGTH) return text;
    } else if (origin === ROOT) {
      if (n + 2 <= MAX_NAME_LENGTH) return [text, ''].join('.');
    } else if (origin !== undefined && origin.length > 0 && origin.charCodeAt(origin.length - 1) === DOT) {
      // n + 1 octets for the relative labels, then the origin's (no more than its text's length + 1).
      if (n + origin.length + 2 <= MAX_NAME_LENGTH || n + nameWireLength(origin) + 1 <= MAX_NAME_LENGTH) {
        return [text, origin].join('.');
      }
    }
  }
  let out = '';
  let label = '';
  let labelOctets = 0;
  let octets = 0; // wire octets so far, excluding the root label
  let absolute = false;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === DOT) {
      if (labelOctets === 0) {
        throw new DnsError(
          'EMPTY_LABEL',
          `name ${shown(text)} has an empty label (leading or doubled '.'); remove the extra dot`,
        );
      }
      out += label + '.';
      octets += labelOctets + 1;
      label = '';
      labelOctets = 0;
      i++;
      if (i === n) absolute = true;
      continue;
    }
    let octet: number;
    if (c === BACKSLASH) {
      // RFC 1035 §5.1: \X is the literal character X; \DDD is the octet with decimal value DDD.
      if (i + 1 >= n) {
        throw new DnsError(
          'BAD_ESCAPE',
          `name ${shown(text)} ends with a lone backslash; escape it as "\\\\" or remove it`,
        );
      }
      const d1 = text.charCodeAt(i + 1);
      if (isDigit(d1)) {
        const d2 = text.charCodeAt(i + 2);
        const d3 = text.charCodeAt(i + 3);
        if (!(isDigit(d2) && isDigit(d3))) {
          throw new DnsError(
            'BAD_ESCAPE',
            `name ${shown(text)} has an incomplete decimal escape at position ${i}; use exactly three digits, e.g. "\\065"`,
          );
        }
        octet = (d1 - 0x30) * 100 + (d2 - 0x30) * 10 + (d3 - 0x30);
        if (octet > 255) {
          throw new DnsError(
            'BAD_ESCAPE',
            `name ${shown(text)} has decimal escape "${text.slice(i, i + 4)}" above 255; an escape encodes one octet (\\000 to \\255)`,
          );
        }
        i += 4;
      } else {
        if (d1 < 0x20 || d1 > 0x7e) throw nonAscii(text, d1);
        octet = d1;
        i += 2;
      }
    } else {
      if (c <= 0x20 || c > 0x7e) {
        if (c > 0x7e) throw nonAscii(text, c);
        throw new DnsError(
          'BAD_NAME_CHARACTER',
          `name ${shown(text)} contains ${c === 0x20 ? 'a space' : `control character 0x${c.toString(16).padStart(2, '0')}`}; write it as a decimal escape ("\\${String(c).padStart(3, '0')}") if it is really intended`,
        );
      }
      octet = c;
      i++;
    }
    label += LABEL_OCTET_TEXT[octet];
    labelOctets++;
    if (labelOctets > MAX_LABEL_LENGTH) {
      throw new DnsError(
        'LABEL_TOO_LONG',
        `name ${shown(text)} has a label longer than ${MAX_LABEL_LENGTH} octets (RFC 1035 §2.3.4); shorten that label`,
      );
    }
  }
  if (!absolute) {
    if (origin === undefined) {
      throw new DnsError(
        'RELATIVE_NAME_WITHOUT_ORIGIN',
        `name ${shown(text)} is relative but no origin is known here; add a trailing dot to make it absolute`,
      );
    }
    const o = checkedOrigin(origin);
    out += label + '.';
    octets += labelOctets + 1;
    if (o !== ROOT) {
      out += o;
      octets += nameWireLength(o) - 1;
    }
  }
  // RFC 1035 §2.3.4: names are 255 octets or less (including the root label's length octet).
  if (octets + 1 > MAX_NAME_LENGTH) {
    throw new DnsError(
      'NAME_TOO_LONG',
      `name ${shown(out)} is ${octets + 1} octets in wire form; DNS names are limited to ${MAX_NAME_LENGTH} octets (RFC 1035 §2.3.4), use fewer or shorter labels`,
    );
  }
  return out;
}

function nonAscii(text: string, c: number): DnsError {
  return new DnsError(
    'NON_ASCII_NAME',
    `name ${shown(text)} contains the non-ASCII character ${JSON.stringify(String.fromCodePoint(c))}; write internationalised names in their IDNA A-label (punycode "xn--...") form, or use decimal escapes for raw octets`,
  );
}

function checkedOrigin(origin: Name): Name {
  if (origin.length === 0 || origin.charCodeAt(origin.length - 1) !== DOT) {
    throw new DnsError(
      'BAD_ORIGIN',
      `origin ${shown(origin)} is not an absolute name; origins must end with a dot`,
    );
  }
  return origin;
}

const ASCII_UPPER = /[A-Z]/;
const BEYOND_ASCII = /[^\x00-\x7e]/;

/**
 * ASCII-only lowercase (RFC 4343: DNS case-insensitivity covers only A-Z); the string itself when it
 * has no A-Z. Scanned by regular expressions, which V8 runs as machine code: about a third of the CPU
 * of `charCodeAt` per character in JavaScript (a name key is made for every record set at start).
 */
export function asciiLower(s: string): string {
  if (!ASCII_UPPER.test(s)) return s;
  // `toLowerCase` would also fold letters beyond ASCII: there, only A-Z are replaced.
  return BEYOND_ASCII.test(s) ? s.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : s.toLowerCase();
}

/** Case-folded canonical form for use as a Map key. */
export function nameKey(name: Name): string {
  if (name.indexOf('\\') !== -1) {
    // Re-normalise so that e.g. "\065" and "A" give the same key; names from parseName are already canonical.
    try {
      return asciiLower(parseName(name));
    } catch {
      return asciiLower(name);
    }
  }
  return asciiLower(name);
}

export function nameEquals(a: Name, b: Name): boolean {
  if (a === b) return true;
  if (a.length !== b.length && a.indexOf('\\') === -1 && b.indexOf('\\') === -1) return false;
  return nameKey(a) === nameKey(b);
}

/** True when the character at `pos` in canonical text is a label separator rather than an escaped dot. */
function isUnescapedDotAt(text: string, pos: number): boolean {
  if (text.charCodeAt(pos) !== DOT) return false;
  let backslashes = 0;
  for (let j = pos - 1; j >= 0 && text.charCodeAt(j) === BACKSLASH; j--) backslashes++;
  return backslashes % 2 === 0;
}

/** True when `name` equals `domain` or is below it (label-aware, case-insensitive). */
export function isInDomain(name: Name, domain: Name): boolean {
  const d = nameKey(domain);
  if (d === ROOT) return true;
  const k = nameKey(name);
  if (k.length < d.length || !k.endsWith(d)) return false;
  if (k.length === d.length) return true;
  return isUnescapedDotAt(k, k.length - d.length - 1);
}

/** Offsets just after each label separator, i.e. the start of every label and finally name.length. */
function labelStarts(name: Name): number[] {
  const starts = [0];
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === DOT) starts.push(i + 1);
  }
  return starts;
}

/** Presentation labels, leftmost first; the root label is excluded ("." gives []). */
export function nameLabels(name: Name): string[] {
  if (name === ROOT) return [];
  const starts = labelStarts(name);
  const labels: string[] = [];
  for (let i = 0; i + 1 < starts.length; i++) labels.push(name.slice(starts[i], starts[i + 1]! - 1));
  return labels;
}

/**
 * The labels of a name relative to an origin, for comparing names label by label (never by text
 * suffix, where an escaped dot would pass for a separator): "@" gives [], "a.b" gives ["a", "b"], and
 * "evil\\.apps" or "evil\\046apps" gives the single label ["evil\\.apps"]. Each label is in canonical
 * presentation form and ASCII-lowercased (RFC 4343), so equal labels are equal strings. A name with a
 * trailing dot is taken as written. Throws a DnsError for text that is not a name.
 */
export function relativeLabelKeys(relative: string): string[] {
  if (relative === '@') return [];
  return nameLabels(asciiLower(parseName(relative, ROOT)));
}

/** Inverse of nameLabels; each label must be a single presentation label (dots inside it escaped). */
export function nameFromLabels(labels: readonly string[]): Name {
  if (labels.length === 0) return ROOT;
  const name = parseName(labels.join('.') + '.');
  if (labelCount(name) !== labels.length) {
    throw new DnsError(
      'BAD_LABEL',
      `labels ${JSON.stringify(labels)} do not form a name of ${labels.length} labels; escape dots inside a label as "\\."`,
    );
  }
  return name;
}

export function labelCount(name: Name): number {
  if (name === ROOT) return 0;
  let count = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === DOT) count++;
  }
  return count;
}

/** The name with its leftmost label removed. */
export function parentName(name: Name): Name {
  if (name === ROOT) {
    throw new DnsError('ROOT_HAS_NO_PARENT', 'the root name "." has no parent; stop walking up at the root');
  }
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === DOT) return i + 1 === name.length ? ROOT : name.slice(i + 1);
  }
  throw new DnsError('BAD_NAME', `name ${shown(name)} is not absolute; parse it with parseName first`);
}

/** RFC 4592 §2.1.1: a wildcard's leftmost label is exactly "*". */
export function isWildcardName(name: Name): boolean {
  return name.charCodeAt(0) === 0x2a && name.charCodeAt(1) === DOT;
}

/** "@" for the origin itself, the relative part for names below the origin, otherwise the absolute name. */
export function relativeName(name: Name, origin: Name): string {
  if (nameEquals(name, origin)) return '@';
  if (origin !== ROOT && isInDomain(name, origin)) {
    const n = nameKey(name).length === name.length ? name : parseName(name);
    return n.slice(0, n.length - nameKey(origin).length - 1);
  }
  return name;
}

export function nameWireLength(name: Name): number {
  if (name === ROOT) return 1;
  let octets = 1;
  for (let i = 0; i < name.length; i++) {
    if (name.charCodeAt(i) === BACKSLASH) {
      i += isDigit(name.charCodeAt(i + 1)) ? 3 : 1;
    }
    octets++; // a label octet, or for a dot the next label's length octet
  }
  return octets;
}

/**
 * Writes the uncompressed wire form (RFC 1035 §3.1) of a canonical name into `buf` at `offset`, returning
 * the offset after it. `buf` must have nameWireLength(name) octets of room.
 */
export function writeNameWire(name: Name, buf: Uint8Array, offset: number): number {
  let pos = offset;
  if (name !== ROOT) {
    let lenAt = pos++;
    let len = 0;
    for (let i = 0; i < name.length; i++) {
      let c = name.charCodeAt(i);
      if (c === DOT) {
        buf[lenAt] = len;
        lenAt = pos++;
        len = 0;
        continue;
      }
      if (c === BACKSLASH) {
        const d = name.charCodeAt(i + 1);
        if (isDigit(d)) {
          c = (d - 0x30) * 100 + (name.charCodeAt(i + 2) - 0x30) * 10 + (name.charCodeAt(i + 3) - 0x30);
          i += 3;
        } else {
          c = d;
          i += 1;
        }
      }
      buf[pos++] = c;
      if (++len > MAX_LABEL_LENGTH) {
        throw new DnsError(
          'LABEL_TOO_LONG',
          `name ${shown(name)} has a label over 63 octets; parse names with parseName`,
        );
      }
    }
    pos = lenAt; // the final dot opened the root label
  }
  buf[pos++] = 0;
  return pos;
}

export function encodeNameUncompressed(name: Name): Uint8Array {
  const length = nameWireLength(name);
  if (length > MAX_NAME_LENGTH) {
    throw new DnsError(
      'NAME_TOO_LONG',
      `name ${shown(name)} is ${length} octets; the limit is 255 (RFC 1035 §2.3.4)`,
    );
  }
  const buf = new Uint8Array(length);
  writeNameWire(name, buf, 0);
  return buf;
}

/** Lowercased label octets, rightmost label first, for canonical comparison. */
function reversedLowerLabels(name: Name): Uint8Array[] {
  const wire = encodeNameUncompressed(name);
  const labels: Uint8Array[] = [];
  let pos = 0;
  while (wire[pos]! !== 0) {
    const len = wire[pos]!;
    const label = wire.slice(pos + 1, pos + 1 + len);
    for (let i = 0; i < label.length; i++) {
      const c = label[i]!;
      if (c >= 0x41 && c <= 0x5a) label[i] = c + 0x20;
    }
    labels.push(label);
    pos += len + 1;
  }
  return labels.reverse();
}

/** RFC 4034 §6.1 canonical ordering: compare labels right to left as lowercased octet strings. */
export function compareCanonical(a: Name, b: Name): number {
  return a === b ? 0 : compareNameKeys(nameKey(a), nameKey(b));
}

/**
 * RFC 4034 §6.1 canonical order of two name keys (`nameKey`s, lowercase): labels compared right to
 * left, octet by octet, a shorter label or name first. Read in place from the presentation text
 * (no label lists or sort-key strings made) when neither has an escape, which is what names are;
 * escaped names compare by their `canonicalSortKey`.
 */
export function compareNameKeys(a: string, b: string): number {
  if (a === b) return 0;
  if (a === '.' || b === '.') return a === '.' ? -1 : 1;
  if (a.indexOf('\\') >= 0 || b.indexOf('\\') >= 0) return bySortKey(a, b);
  // Skip the text the two end with (the zone's labels, mostly), from the right.
  let i = a.length - 1;
  let j = b.length - 1;
  while (i >= 0 && j >= 0 && a.charCodeAt(i) === b.charCodeAt(j)) {
    i--;
    j--;
  }
  const aAtLabel = i < 0 || a.charCodeAt(i) === 0x2e;
  const bAtLabel = j < 0 || b.charCodeAt(j) === 0x2e;
  // Whole labels in common and one name ends there: it is the other's ancestor, so first.
  if (aAtLabel && bAtLabel) return i < 0 ? -1 : 1;
  // Otherwise the first labels that differ end at the first dot of the common text (or at the end of
  // a relative name, which has no final dot).
  let pa = a.indexOf('.', i + 1);
  if (pa < 0) pa = a.length;
  const pb = pa - a.length + b.length;
  const sa = a.lastIndexOf('.', pa - 1) + 1;
  const sb = b.lastIndexOf('.', pb - 1) + 1;
  const la = pa - sa;
  const lb = pb - sb;
  const m = Math.min(la, lb);
  for (let k = 0; k < m; k++) {
    const x = a.charCodeAt(sa + k);
    const y = b.charCodeAt(sb + k);
    // Names from parseName are printable ASCII; anything else is left to the sort key.
    if (x > 0x7e || y > 0x7e) return bySortKey(a, b);
    if (x !== y) return x - y;
  }
  return la - lb;
}

function bySortKey(a: string, b: string): number {
  const x = canonicalSortKey(a);
  const y = canonicalSortKey(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * A string whose plain (code-unit) order is the RFC 4034 §6.1 canonical order of names: labels
 * rightmost first, each octet lowercased and written as the character (octet + 1), labels separated by
 * U+0000, which sorts before every octet ("absence of an octet sorts before a zero-value octet").
 * The descendants of a name are exactly the keys that start with its key followed by U+0000, so a
 * sorted array of keys holds every subtree as one contiguous range. The root's key is "".
 */
export function canonicalSortKey(name: Name): string {
  const labels = reversedLowerLabels(name);
  let out = '';
  for (let i = 0; i < labels.length; i++) {
    if (i > 0) out += '\u0000';
    const label = labels[i]!;
    for (let j = 0; j < label.length; j++) out += String.fromCharCode(label[j]! + 1);
  }
  return out;
}

function isLdhLabel(name: Name, start: number, end: number): boolean {
  if (end <= start) return false;
  for (let i = start; i < end; i++) {
    const c = name.charCodeAt(i);
    const letterOrDigit = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || isDigit(c);
    if (letterOrDigit) continue;
    // RFC 952 / RFC 1123 §2.1: hyphens only inside a label.
    if (c === 0x2d && i !== start && i !== end - 1) continue;
    return false;
  }
  return true;
}

/**
 * RFC 952 / RFC 1123 §2.1 host name: letters, digits and inner hyphens only; "*" is allowed as the leftmost
 * label. The root "." is accepted (it is the "no target" value of null MX and SRV).
 */
export function isHostname(name: Name): boolean {
  if (name === ROOT) return true;
  const starts = labelStarts(name);
  for (let i = 0; i + 1 < starts.length; i++) {
    const start = starts[i]!;
    const end = starts[i + 1]! - 1;
    if (i === 0 && end - start === 1 && name.charCodeAt(start) === 0x2a) continue;
    if (!isLdhLabel(name, start, end)) return false;
  }
  return true;
}

/** Removes the leftmost label of a name key, honouring `\.` and `\DDD` escapes. */
export function stripFirstLabel(key: string): string {
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c === 0x5c /* \ */) {
      i++;
      continue;
    }
    if (c === 0x2e /* . */) return i + 1 >= key.length ? '.' : key.slice(i + 1);
  }
  return '.';
}
