/** IPv4 and IPv6 address text <-> octets. */

/**
 * Parses strict dotted-quad IPv4 text into `out` at `offset`: exactly four decimal octets 0-255 without
 * leading zeros (leading zeros are ambiguous: some resolvers read them as octal). Returns false if invalid.
 */
export function parseIPv4Into(text: string, out: Uint8Array, offset: number): boolean {
  let part = 0;
  let value = 0;
  let digits = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0x2e;
    if (c === 0x2e) {
      if (digits === 0 || part > 3) return false;
      out[offset + part] = value;
      part++;
      value = 0;
      digits = 0;
      continue;
    }
    if (c < 0x30 || c > 0x39) return false;
    if (digits === 1 && value === 0) return false; // leading zero
    value = value * 10 + (c - 0x30);
    digits++;
    if (value > 255) return false;
  }
  return part === 4;
}

export function parseIPv4(text: string): Uint8Array | undefined {
  const out = new Uint8Array(4);
  return parseIPv4Into(text, out, 0) ? out : undefined;
}

export function formatIPv4(bytes: Uint8Array, offset = 0): string {
  return `${bytes[offset]}.${bytes[offset + 1]}.${bytes[offset + 2]}.${bytes[offset + 3]}`;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/** Parses hex groups "x:x:..." (optionally ending in a dotted quad) into 16-bit values; undefined if invalid. */
function parseGroups(text: string, allowIPv4Tail: boolean): number[] | undefined {
  const groups: number[] = [];
  if (text.length === 0) return groups;
  const parts = text.split(':');
  for (let p = 0; p < parts.length; p++) {
    const part = parts[p]!;
    if (allowIPv4Tail && p === parts.length - 1 && part.includes('.')) {
      const v4 = parseIPv4(part);
      if (v4 === undefined) return undefined;
      groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      continue;
    }
    if (part.length === 0 || part.length > 4) return undefined;
    let value = 0;
    for (let i = 0; i < part.length; i++) {
      const h = hexValue(part.charCodeAt(i));
      if (h < 0) return undefined;
      value = (value << 4) | h;
    }
    groups.push(value);
  }
  return groups;
}

/** Parses any RFC 4291 §2.2 text form of an IPv6 address into `out` at `offset`. Returns false if invalid. */
export function parseIPv6Into(text: string, out: Uint8Array, offset: number): boolean {
  return parseHexIPv6Into(text, out, offset) || parseIPv6GeneralInto(text, out, offset);
}

const hexGroups = new Int32Array(8);

/**
 * The common forms without allocating: hex groups of one to four digits and at most one "::" (RFC
 * 4291 §2.2 forms 1 and 2). False for anything else (invalid text, a dotted-quad tail), which
 * `parseIPv6GeneralInto` then judges: it accepts every address this does, with the same octets.
 */
export function parseHexIPv6Into(text: string, out: Uint8Array, offset: number): boolean {
  const n = text.length;
  if (n < 2) return false;
  let count = 0;
  let gap = -1;
  let value = 0;
  let digits = 0;
  let i = 0;
  if (text.charCodeAt(0) === 0x3a) {
    if (text.charCodeAt(1) !== 0x3a) return false;
    gap = 0;
    i = 2;
  }
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x3a) {
      if (digits === 0 || count === 8) return false;
      hexGroups[count++] = value;
      value = 0;
      digits = 0;
      i++;
      if (i === n) return false;
      if (text.charCodeAt(i) === 0x3a) {
        if (gap !== -1) return false;
        gap = count;
        i++;
      }
      continue;
    }
    const h = hexValue(c);
    if (h < 0 || digits === 4) return false;
    value = (value << 4) | h;
    digits++;
    i++;
  }
  if (digits > 0) {
    if (count === 8) return false;
    hexGroups[count++] = value;
  }
  // Without "::" eight groups; with it at most seven ("::" stands for at least one zero group).
  if (gap === -1 ? count !== 8 : count > 7) return false;
  const zeros = 8 - count;
  for (let g = 0, k = 0; g < 8; g++) {
    const v = gap !== -1 && g >= gap && g < gap + zeros ? 0 : hexGroups[k++]!;
    out[offset + 2 * g] = v >> 8;
    out[offset + 2 * g + 1] = v & 0xff;
  }
  return true;
}

/** `parseIPv6Into` for every text form, the dotted-quad tail of RFC 4291 §2.2 form 3 included. */
export function parseIPv6GeneralInto(text: string, out: Uint8Array, offset: number): boolean {
  const gap = text.indexOf('::');
  let groups: number[];
  if (gap === -1) {
    const g = parseGroups(text, true);
    if (g === undefined || g.length !== 8) return false;
    groups = g;
  } else {
    if (text.indexOf('::', gap + 1) !== -1) return false; // "::" may appear only once
    const head = parseGroups(text.slice(0, gap), false);
    const tail = parseGroups(text.slice(gap + 2), true);
    if (head === undefined || tail === undefined) return false;
    const missing = 8 - head.length - tail.length;
    if (missing < 1) return false; // "::" stands for at least one zero group
    groups = [...head, ...new Array<number>(missing).fill(0), ...tail];
  }
  for (let i = 0; i < 8; i++) {
    const g = groups[i]!;
    out[offset + 2 * i] = g >> 8;
    out[offset + 2 * i + 1] = g & 0xff;
  }
  return true;
}

export function parseIPv6(text: string): Uint8Array | undefined {
  const out = new Uint8Array(16);
  return parseIPv6Into(text, out, 0) ? out : undefined;
}

/**
 * The IPv4 address a 16-byte IPv6 address carries in a form a socket reaches it by, as its 4 bytes:
 * IPv4-mapped ::ffff:a.b.c.d (RFC 4291 §2.5.5.2), IPv4-compatible ::a.b.c.d (§2.5.5.1; not :: and ::1),
 * NAT64 64:ff9b::/96 (RFC 6052 §2.1) and 6to4 2002:aabb:ccdd::/48 (RFC 3056 §2). Undefined otherwise.
 * Both address guards (health probes, domain verification) judge such an address as that IPv4 one too.
 */
export function embeddedIPv4(bytes: Uint8Array): Uint8Array | undefined {
  if (bytes.length !== 16) return undefined;
  const zero = (from: number, to: number) => bytes.subarray(from, to).every((b) => b === 0);
  if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.slice(12);
  if (zero(0, 12) && !zero(12, 15)) return bytes.slice(12);
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(4, 12))
    return bytes.slice(12);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return bytes.slice(2, 6);
  return undefined;
}

/**
 * Whether `text`, which `parseHexIPv6Into` accepted into `bytes` at `offset`, is already the RFC 5952
 * §4 text `formatIPv6` gives for those octets, judged without making that text: lowercase hex, no
 * leading zero in a group, and "::" exactly where the first longest run of two or more zero groups
 * is (none without such a run). False for an IPv4-mapped address, whose canonical text is mixed
 * (RFC 5952 §5) and so never hex groups alone.
 */
export function isCanonicalHexIPv6(text: string, bytes: Uint8Array, offset = 0): boolean {
  let bestStart = -1;
  let bestLen = 1; // RFC 5952 §4.2.2: a single zero group is not shortened
  let runStart = -1;
  let leadingZeros = true;
  for (let g = 0; g < 8; g++) {
    const v = (bytes[offset + 2 * g]! << 8) | bytes[offset + 2 * g + 1]!;
    if (g === 5 && v === 0xffff && leadingZeros) return false;
    if (v !== 0) {
      runStart = -1;
      leadingZeros = false;
      continue;
    }
    if (runStart < 0) runStart = g;
    // RFC 5952 §4.2.3: the longest run wins; on a tie, the first one (a later run must be longer).
    if (g - runStart + 1 > bestLen) {
      bestStart = runStart;
      bestLen = g - runStart + 1;
    }
  }
  const n = text.length;
  let groups = 0;
  let gapAt = -1;
  let digits = 0;
  let first = 0;
  let i = 0;
  if (n >= 2 && text.charCodeAt(0) === 0x3a && text.charCodeAt(1) === 0x3a) {
    gapAt = 0;
    i = 2;
  }
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x3a) {
      if (c >= 0x41 && c <= 0x46) return false; // uppercase
      if (digits === 0) first = c;
      digits++;
      continue;
    }
    if (digits > 1 && first === 0x30) return false; // a leading zero
    groups++;
    digits = 0;
    if (i + 1 < n && text.charCodeAt(i + 1) === 0x3a) {
      gapAt = groups;
      i++;
    }
  }
  if (digits > 0) {
    if (digits > 1 && first === 0x30) return false;
    groups++;
  }
  if (bestStart < 0) return gapAt === -1;
  return gapAt === bestStart && 8 - groups === bestLen;
}

/** RFC 5952 §4 canonical text: lowercase, no leading zeros, longest run (≥2) of zero groups as "::". */
export function formatIPv6(bytes: Uint8Array, offset = 0): string {
  const groups: number[] = [];
  for (let i = 0; i < 8; i++) groups.push((bytes[offset + 2 * i]! << 8) | bytes[offset + 2 * i + 1]!);
  // RFC 5952 §5: IPv4-mapped addresses use the mixed notation ::ffff:a.b.c.d.
  if (groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0) {
    if (groups[5] === 0xffff) return `::ffff:${formatIPv4(bytes, offset + 12)}`;
  }
  let bestStart = -1;
  let bestLen = 1; // RFC 5952 §4.2.2: a single zero group is not shortened
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    // RFC 5952 §4.2.3: the longest run wins; on a tie, the first one.
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number): string =>
    groups
      .slice(from, to)
      .map((g) => g.toString(16))
      .join(':');
  if (bestStart < 0) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLen, 8)}`;
}
