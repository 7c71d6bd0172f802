import { randomInt } from 'node:crypto';
import net from 'node:net';

/**
 * Response rate limiting (RRL) for UDP, after BIND's and Knot's: a spoofed-source flood cannot turn the
 * server into an amplifier aimed at the forged address, while every other client keeps its answers.
 *
 * Responses are counted per bucket: the client's network (IPv4 /24, IPv6 /56, so one attacker cannot
 * spread over its neighbours' addresses), the kind of response, and what the response is about — the
 * question (name and type) for answers, the wildcard and type for answers synthesised from a wildcard
 * (random names below one wildcard share a bucket, signed or not), the zone for NXDOMAIN and NODATA (the
 * SOA owner in the authority section, so random subdomains, or random types at one name, share one
 * bucket), the delegation point for referrals, and nothing for errors (all errors to one network share
 * a bucket). Each bucket is a token bucket that fills at `rate` responses per second up to `rate`; a
 * response that finds it empty is dropped, except that every `slip`-th one is sent truncated (TC set,
 * no records), so that a real client behind the forged address retries over TCP (RFC 7766), which is
 * never limited.
 *
 * The table has a fixed number of buckets (two-way associative, least recently used replaced), so a
 * flood from many networks costs memory it already has. Everything is read from the response bytes,
 * whoever made them (answer path, response cache, ALIAS, errors, IXFR over UDP), except which wildcard
 * an answer came from: the answer path passes that along (`wildcardTag`), and the response cache and
 * the child templates keep it with the responses they reuse. Clients in the
 * exempt networks are never limited; by default these are the loopback networks, which cannot be
 * forged from outside the host (RFC 1122 §3.2.1.3: 127/8 never appears on a network).
 */

/** The kinds of response limited separately (each with its own bucket per network and subject). */
export const RRL_KINDS = ['answer', 'nodata', 'nxdomain', 'referral', 'error'] as const;
export type RrlKind = (typeof RRL_KINDS)[number];
const ANSWER = 0;
const NODATA = 1;
const NXDOMAIN = 2;
const REFERRAL = 3;
const ERROR = 4;

export interface RrlSettings {
  /** Off with false; on by default. */
  enabled?: boolean;
  /** Responses per second per bucket (default 20). */
  rate?: number;
  /** Every slip-th limited response is sent truncated instead of dropped; 0 drops them all (default 2). */
  slip?: number;
  /** Buckets in the table, rounded up to a power of two (default 65,536: 1 MB). */
  tableSize?: number;
  /** Client networks (CIDR) never limited; default the loopback networks. */
  exempt?: string[];
}

export const RRL_DEFAULTS = {
  rate: 20,
  slip: 2,
  tableSize: 65_536,
  exempt: ['127.0.0.0/8', '::1/128'],
} as const;

/** The limits the command line accepts. */
export const RRL_LIMITS = { rate: [1, 1_000_000], slip: [0, 10], tableSize: [2, 16_777_216] } as const;

/** Counts what the limiter did, by kind (see ServerMetrics). */
export interface RrlCounters {
  rrlDropped(kind: RrlKind): void;
  rrlSlipped(kind: RrlKind): void;
}

/** A network in CIDR notation (`192.0.2.0/24`, `2001:db8::/56`; a bare address is a /32 or /128), or what is wrong with it. */
export function parseCidr(
  text: string,
): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | string {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const family = net.isIPv4(address) ? 'ipv4' : net.isIPv6(address) ? 'ipv6' : undefined;
  if (family === undefined)
    return `${JSON.stringify(text)} is not an IPv4 or IPv6 network (e.g. 192.0.2.0/24)`;
  const max = family === 'ipv4' ? 32 : 128;
  const prefix = slash < 0 ? max : Number(text.slice(slash + 1));
  if (
    !Number.isInteger(prefix) ||
    prefix < 0 ||
    prefix > max ||
    (slash >= 0 && !/^\d+$/.test(text.slice(slash + 1)))
  ) {
    return `${JSON.stringify(text)}: the prefix length must be a whole number from 0 to ${max}`;
  }
  return { address, prefix, family };
}

/** First key word of an IPv4 bucket: the family and the /24. */
const V4 = 0x4000_0000;

const FNV_PRIME = 0x01000193;

export class ResponseRateLimiter {
  private readonly rate: number;
  private readonly slip: number;
  private readonly mask: number;
  /**
   * The buckets, 16 bytes each in one buffer, so that a lookup (a pair of buckets) touches half a
   * cache line and the default table takes 1 MB: as 32-bit integers, [4b] the word identifying the
   * bucket (0: empty), [4b+1] when it was last updated (whole milliseconds, modulo 2^32), [4b+2]
   * responses limited so far (for the slip); as a 32-bit float, [4b+3] its credit.
   */
  private readonly ints: Int32Array;
  private readonly floats: Float32Array;
  /** Exempt IPv4 networks as [network, mask] pairs of 32-bit words (checked on the path of limited responses). */
  private readonly exempt4: Int32Array;
  /** Exempt IPv6 networks. */
  private readonly exempt6: net.BlockList;
  private readonly counters: RrlCounters | undefined;
  private readonly seed: number;
  /** Key words of the client address being looked at (set by `client`). */
  private keyHigh = 0;
  private keyLow = 0;
  /** The whole IPv4 address of the client being looked at, undefined for IPv6. */
  private address4: number | undefined;

  constructor(settings: RrlSettings = {}, counters?: RrlCounters, options: { seed?: number } = {}) {
    this.rate = settings.rate ?? RRL_DEFAULTS.rate;
    this.slip = settings.slip ?? RRL_DEFAULTS.slip;
    let size = 2;
    while (size < (settings.tableSize ?? RRL_DEFAULTS.tableSize)) size *= 2;
    this.mask = size - 1;
    const buffer = new ArrayBuffer(size * 16);
    this.ints = new Int32Array(buffer);
    this.floats = new Float32Array(buffer);
    const v4: number[] = [];
    this.exempt6 = new net.BlockList();
    for (const cidr of settings.exempt ?? RRL_DEFAULTS.exempt) {
      const parsed = parseCidr(cidr);
      if (typeof parsed === 'string') throw new Error(`RRL exempt network ${parsed}`);
      if (parsed.family === 'ipv6') this.exempt6.addSubnet(parsed.address, parsed.prefix, 'ipv6');
      else {
        const mask = parsed.prefix === 0 ? 0 : (0xffffffff << (32 - parsed.prefix)) | 0;
        v4.push(ipv4Word(parsed.address) & mask, mask);
      }
    }
    this.exempt4 = Int32Array.from(v4);
    this.counters = counters;
    this.seed = (options.seed ?? randomInt(0, 2 ** 32)) | 0;
  }

  /** Buckets in the table. */
  get tableSize(): number {
    return this.mask + 1;
  }

  /**
   * What to send `address` instead of `response` over UDP: the response itself while its bucket has
   * credit, a truncated copy (a slip), or null (dropped). `now`: `performance.now()` (milliseconds), as
   * taken when the request arrived. `wildcard`: for an answer synthesised from a wildcard, its
   * `wildcardTag` (the answer path knows it, the bytes of an unsigned answer do not tell); else 0.
   */
  filter(response: Uint8Array, address: string, now: number, wildcard = 0): Uint8Array | null {
    if (response.length < 12 || !this.client(address)) return response;
    const kind = classify(response);
    const subject = this.subject(response, kind, wildcard);
    // The hash places the bucket (its low bits) and identifies it (all 32 bits, never 0: 0 is empty).
    const tag =
      fmix(subject ^ Math.imul(this.keyHigh, 0x9e3779b1) ^ Math.imul(this.keyLow + kind, 0x85ebca6b)) | 1;
    const ints = this.ints;
    const floats = this.floats;
    const ms = now | 0;
    const first = tag & this.mask & ~1;
    let slot = first;
    if (ints[4 * slot] !== tag) {
      slot = first + 1;
      if (ints[4 * slot] !== tag) {
        // A new bucket, in place of the one of the pair idle longest (or empty), with full credit.
        const idle0 = ints[4 * first] === 0 ? 0x7fffffff : (ms - ints[4 * first + 1]!) | 0;
        const idle1 = ints[4 * first + 4] === 0 ? 0x7fffffff : (ms - ints[4 * first + 5]!) | 0;
        slot = (idle0 < 0 ? 0x7fffffff : idle0) >= (idle1 < 0 ? 0x7fffffff : idle1) ? first : first + 1;
        ints[4 * slot] = tag;
        ints[4 * slot + 1] = ms;
        ints[4 * slot + 2] = 0;
        floats[4 * slot + 3] = this.rate;
      }
    }
    const rate = this.rate;
    // Elapsed time modulo 2^32 ms; negative only after weeks of silence: then the bucket is full.
    const elapsed = (ms - ints[4 * slot + 1]!) | 0;
    let credit = elapsed < 0 ? rate : floats[4 * slot + 3]! + (elapsed * rate) / 1000;
    if (credit > rate) credit = rate;
    ints[4 * slot + 1] = ms;
    if (credit >= 1) {
      floats[4 * slot + 3] = credit - 1;
      return response;
    }
    floats[4 * slot + 3] = credit;
    // Over its rate: exempt clients are told apart here, off the common path.
    if (this.isExempt(address)) return response;
    const n = (ints[4 * slot + 2]! + 1) | 0;
    ints[4 * slot + 2] = n;
    if (this.slip > 0 && n % this.slip === 0) {
      this.counters?.rrlSlipped(RRL_KINDS[kind]!);
      return truncated(response);
    }
    this.counters?.rrlDropped(RRL_KINDS[kind]!);
    return null;
  }

  /** Whether the client of the last `client` call is in an exempt network. */
  private isExempt(address: string): boolean {
    if (this.address4 !== undefined) {
      const a = this.address4;
      const list = this.exempt4;
      for (let i = 0; i < list.length; i += 2) if ((a & list[i + 1]!) === list[i]) return true;
      return false;
    }
    return this.exempt6.check(address.split('%')[0]!, 'ipv6');
  }

  /**
   * Reads the client's network into keyHigh/keyLow: IPv4 /24 (IPv4-mapped IPv6 too), IPv6 /56. False
   * for an address it cannot read (then nothing is limited).
   */
  private client(address: string): boolean {
    let start = 0;
    if (address.charCodeAt(0) === 0x3a /* : */ && address.startsWith('::ffff:') && address.includes('.'))
      start = 7;
    // IPv4: four decimal octets; the bucket takes the first three.
    let octets = 0;
    let value = 0;
    let word = 0;
    for (let i = start; i < address.length; i++) {
      const c = address.charCodeAt(i);
      if (c >= 0x30 && c <= 0x39) {
        value = value * 10 + (c - 0x30);
        continue;
      }
      if (c !== 0x2e /* . */) return this.client6(address);
      word = (word << 8) | (value & 0xff);
      value = 0;
      octets++;
    }
    if (octets !== 3) return false;
    word = (word << 8) | (value & 0xff);
    this.address4 = word;
    this.keyHigh = V4 | (word >>> 8);
    this.keyLow = 0;
    return true;
  }

  /** IPv6: the first 56 bits, with `::` expanded and a zone index ignored. */
  private client6(address: string): boolean {
    const percent = address.indexOf('%');
    const text = percent < 0 ? address : address.slice(0, percent);
    const gap = text.indexOf('::');
    const head = gap < 0 ? text : text.slice(0, gap);
    const tail = gap < 0 ? '' : text.slice(gap + 2);
    const headGroups = head === '' ? [] : head.split(':');
    const tailGroups = tail === '' ? [] : tail.split(':');
    // A trailing dotted quad counts as two groups.
    const tailCount = tailGroups.length + (tailGroups.at(-1)?.includes('.') ? 1 : 0);
    if (gap < 0 && headGroups.length + (headGroups.at(-1)?.includes('.') ? 1 : 0) !== 8) return false;
    const groups = [0, 0, 0, 0];
    for (let g = 0; g < 4; g++) {
      let word: string | undefined;
      if (g < headGroups.length) word = headGroups[g];
      else if (gap >= 0 && g >= 8 - tailCount) word = tailGroups[g - (8 - tailCount)];
      if (word === undefined || word === '') continue;
      if (word.includes('.')) return false;
      const v = Number.parseInt(word, 16);
      if (!(v >= 0 && v <= 0xffff)) return false;
      groups[g] = v;
    }
    this.keyHigh = (groups[0]! << 16) | groups[1]!;
    this.keyLow = (groups[2]! << 8) | (groups[3]! >> 8) | 0x0100_0000;
    this.address4 = undefined;
    return true;
  }

  /**
   * What `filter` takes for answers synthesised from the wildcard whose owner key is `key`
   * (`*.example.com.`): a seeded hash, never 0, so that an attacker cannot choose names that collide.
   */
  wildcardTag(key: string): number {
    let h = this.seed ^ 0x2a2e;
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), FNV_PRIME);
    return fmix(h) | 1;
  }

  /** A hash of what the response is about (see the class comment); 0 for errors. */
  private subject(r: Uint8Array, kind: number, wildcardHint: number): number {
    if (kind === ERROR || r[4] !== 0 || r[5] !== 1) return 0;
    let h = this.seed;
    if (kind === ANSWER) {
      const end = hashName(r, 12, h);
      if (end < 0 || end + 4 > r.length) return 0;
      h = nameHash;
      // The question type.
      h = Math.imul(h ^ r[end]!, FNV_PRIME);
      h = Math.imul(h ^ r[end + 1]!, FNV_PRIME);
      // A wildcard expansion: the wildcard it came from, so that random names below one wildcard share
      // a bucket (NSD's rule). The answer path says which (`wildcardHint`, ALIAS answers included);
      // a signed expansion without it still tells by its RRSIG's Labels (RFC 4035 §5.3.4).
      const wildcard = wildcardHint !== 0 ? wildcardHint : wildcardSource(r, end + 4, this.seed);
      return wildcard === 0 ? h : Math.imul(wildcard ^ r[end + 1]!, FNV_PRIME) ^ 0x2c1b3c6d;
    }
    // NXDOMAIN, NODATA and referrals: the owner of the first authority record (the zone's SOA, the
    // cut's NS), so that random names of one zone, or random types at one name, share a bucket.
    let at = skipName(r, 12);
    if (at < 0) return 0;
    at += 4;
    const ancount = (r[6]! << 8) | r[7]!;
    for (let i = 0; i < ancount && at >= 0; i++) at = skipRecord(r, at);
    if (at < 0 || at >= r.length) return 0;
    if (hashName(r, at, h) < 0) return 0;
    return nameHash ^ 0x5bd1e995;
  }
}

/**
 * For an answer section (from `at`) with an RRSIG whose Labels field is below its owner's label
 * count, a wildcard expansion (RFC 4035 §5.3.4): a hash of the wildcard's parent (the owner's last
 * Labels labels), else 0.
 */
function wildcardSource(r: Uint8Array, at: number, seed: number): number {
  const ancount = (r[6]! << 8) | r[7]!;
  let i = at;
  for (let n = 0; n < ancount; n++) {
    const nameEnd = skipName(r, i);
    if (nameEnd < 0 || nameEnd + 10 > r.length) return 0;
    const end = skipRecord(r, i);
    if (end < 0) return 0;
    // TYPE 46 (RRSIG); its Labels octet is the fourth of the RDATA (RFC 4034 §3.1).
    if (r[nameEnd] === 0 && r[nameEnd + 1] === 46 && nameEnd + 14 <= end) {
      const labels = r[nameEnd + 13]!;
      const parent = labelAt(r, i, labels);
      if (parent >= 0 && hashName(r, parent, seed) >= 0) return nameHash | 1;
      return 0;
    }
    i = end;
  }
  return 0;
}

/**
 * Where the name at `at` has only its last `keep` labels left (compression pointers followed), when
 * it has more than `keep`; else -1.
 */
function labelAt(r: Uint8Array, at: number, keep: number): number {
  const starts: number[] = [];
  let i = at;
  for (let hops = 0; hops < 64 && starts.length <= 128; ) {
    const len = r[i];
    if (len === undefined) return -1;
    if (len >= 0xc0) {
      const next = r[i + 1];
      if (next === undefined) return -1;
      i = ((len & 0x3f) << 8) | next;
      hops++;
      continue;
    }
    if (len > 63) return -1;
    if (len === 0) {
      if (starts.length <= keep) return -1;
      return starts[starts.length - keep]!;
    }
    starts.push(i);
    i += 1 + len;
  }
  return -1;
}

/** An IPv4 address as a 32-bit word. */
function ipv4Word(address: string): number {
  return address.split('.').reduce((w, octet) => (w << 8) | Number(octet), 0) | 0;
}

/** The kind of a response, from its header: rcode, AA, TC and the section counts. */
function classify(r: Uint8Array): number {
  const rcode = r[3]! & 0xf;
  if (rcode === 3) return NXDOMAIN;
  if (rcode !== 0) return ERROR;
  if ((r[2]! & 0x02) !== 0 || r[6]! !== 0 || r[7]! !== 0) return ANSWER;
  if ((r[2]! & 0x04) === 0 && (r[8]! !== 0 || r[9]! !== 0)) return REFERRAL;
  return NODATA;
}

/** The hash `hashName` computed last (a module variable: the hot path returns one number only). */
let nameHash = 0;

/**
 * Hashes the name at `at` (labels lowercased, compression pointers followed) into `nameHash`, starting
 * from `seed`; returns where the name ends in the message, or -1 if it is malformed.
 */
function hashName(r: Uint8Array, at: number, seed: number): number {
  let h = seed;
  let i = at;
  let end = -1;
  for (let hops = 0; hops < 64; ) {
    const len = r[i];
    if (len === undefined) return -1;
    if (len >= 0xc0) {
      const next = r[i + 1];
      if (next === undefined) return -1;
      if (end < 0) end = i + 2;
      i = ((len & 0x3f) << 8) | next;
      hops++;
      continue;
    }
    if (len > 63) return -1;
    h = Math.imul(h ^ len, FNV_PRIME);
    i++;
    if (len === 0) {
      nameHash = h;
      return end < 0 ? i : end;
    }
    if (i + len > r.length) return -1;
    for (let j = 0; j < len; j++) {
      let c = r[i++]!;
      if (c >= 0x41 && c <= 0x5a) c |= 0x20;
      h = Math.imul(h ^ c, FNV_PRIME);
    }
  }
  return -1;
}

/** Where the name at `at` ends, or -1. */
function skipName(r: Uint8Array, at: number): number {
  let i = at;
  for (;;) {
    const len = r[i];
    if (len === undefined) return -1;
    if (len >= 0xc0) return i + 2 <= r.length ? i + 2 : -1;
    if (len > 63) return -1;
    i += 1 + len;
    if (len === 0) return i;
  }
}

/** Where the record at `at` ends, or -1. */
function skipRecord(r: Uint8Array, at: number): number {
  const i = skipName(r, at);
  if (i < 0 || i + 10 > r.length) return -1;
  const end = i + 10 + ((r[i + 8]! << 8) | r[i + 9]!);
  return end <= r.length ? end : -1;
}

/**
 * The slip: the response cut to its header and question with TC set (RFC 2181 §9 tells the client to
 * retry over TCP), keeping the OPT record when there is one (RFC 6891 §7).
 */
export function truncated(r: Uint8Array): Uint8Array {
  const qdcount = (r[4]! << 8) | r[5]!;
  let at = 12;
  for (let i = 0; i < qdcount && at >= 0; i++) {
    at = skipName(r, at);
    if (at >= 0) at = at + 4 <= r.length ? at + 4 : -1;
  }
  if (at < 0) at = 12;
  const questionEnd = at;
  // Find the OPT among the records.
  let opt: Uint8Array | undefined;
  const records = ((r[6]! << 8) | r[7]!) + ((r[8]! << 8) | r[9]!) + ((r[10]! << 8) | r[11]!);
  for (let i = 0; i < records && at >= 0; i++) {
    const nameEnd = skipName(r, at);
    const end = skipRecord(r, at);
    if (end < 0) break;
    if (r[nameEnd] === 0 && r[nameEnd + 1] === 41) opt = r.subarray(at, end);
    at = end;
  }
  const out = Buffer.allocUnsafe(questionEnd + (opt?.length ?? 0));
  out.set(r.subarray(0, questionEnd));
  if (questionEnd === 12) {
    out[4] = 0;
    out[5] = 0;
  }
  out[2] = out[2]! | 0x02;
  out[6] = out[7] = out[8] = out[9] = out[10] = 0;
  out[11] = opt ? 1 : 0;
  if (opt) out.set(opt, questionEnd);
  return out;
}

/** MurmurHash3's finaliser: spreads every input bit over the word. */
function fmix(x: number): number {
  let h = x | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}
