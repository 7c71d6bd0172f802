import { randomInt } from 'node:crypto';
import { responseLimit } from './response.ts';

/** A stored response, with what the metrics need to count a hit like any other answer. */
export interface CachedResponse {
  readonly bytes: Uint8Array;
  readonly version: number;
  readonly qtype: number;
  readonly rcode: number;
}

interface Entry extends CachedResponse {
  bytes: Uint8Array;
  version: number;
  qtype: number;
  rcode: number;
  readonly hash: number;
  readonly key: Uint8Array;
  /** CLOCK bit: set by a hit, cleared as the hand passes. */
  referenced: boolean;
  /** Next entry with the same hash. */
  next: Entry | undefined;
}

/** Default number of responses kept (about 250 bytes each for typical answers). */
export const DEFAULT_RESPONSE_CACHE_ENTRIES = 100_000;

/**
 * Most entries one hash chain may hold. Names that collide are cheap to make for an unkeyed hash, and a
 * long chain would make every lookup in it slow; beyond this, colliding answers are simply not cached.
 */
export const MAX_CHAIN = 8;

export interface ResponseCacheOptions {
  /** Starting state of the key hash; random per cache by default, so collisions cannot be precomputed. */
  seed?: number;
  /** Bits of hash used as the index key (default 30; tests use fewer to force collisions). */
  hashBits?: number;
}

/** Longest key: a 255-octet name, type and class, and 6 octets of flags and limits. */
const MAX_KEY = 255 + 4 + 6;

/**
 * Encoded responses for plain queries, reused byte for byte: a hit copies the stored response and
 * patches in the query's ID and its question as asked (so the case of the name, RFC 1035 §7.1 / 0x20,
 * is the client's), which is all that differs between two answers to the same question.
 *
 * Only the common shape is cached: one question, no answer/authority records, and at most an OPT in
 * the additional section (no TSIG, no options). The key is the lowercased question plus everything else
 * that shapes a response: RD and CD (copied into it), whether EDNS was used, its DO bit, and the size
 * limit. Every entry records the zone table version it was made at, and any change to any zone makes
 * it stale — responses can depend on several zones (CNAME chains, additional data), so per-zone
 * tracking would be unsafe.
 *
 * This is the hot path of the server, so it allocates nothing until it answers: the key is built in a
 * scratch buffer with its FNV-1a hash (from a random per-process seed), the index is a Map from 30-bit
 * hashes (small integers, no string hashing) to chains of at most MAX_CHAIN entries compared byte by
 * byte, so crafted colliding names cannot make lookups slow. Eviction is CLOCK (second chance): an entry
 * that was hit since the hand last passed stays, so a stream of one-off names (random subdomains,
 * synthesized wildcard names) cycles through the unreferenced entries instead of flushing the
 * popular ones, as plain FIFO or LRU would.
 *
 * Usage: `read(query)` builds the key of one query; `get` and `set` then apply to that key until the
 * next `read`.
 */
export class ResponseCache {
  private readonly index = new Map<number, Entry>();
  /** The CLOCK ring: every entry, in the slot it was inserted into. */
  private readonly ring: Entry[] = [];
  private hand = 0;
  private readonly maxEntries: number;
  private readonly scratch = Buffer.alloc(MAX_KEY);
  private keyLength = 0;
  private hash = 0;
  /** Length of the chain `find` last walked for the current key. */
  private chainLength = 0;
  private readonly seed: number;
  private readonly hashMask: number;
  hits = 0;
  misses = 0;
  /** Answers not cached because their hash chain was full. */
  chainFull = 0;

  constructor(maxEntries = DEFAULT_RESPONSE_CACHE_ENTRIES, options: ResponseCacheOptions = {}) {
    this.maxEntries = Math.max(1, Math.floor(maxEntries));
    this.seed = (options.seed ?? randomInt(0, 2 ** 32)) | 0;
    this.hashMask = 2 ** Math.min(30, Math.max(1, options.hashBits ?? 30)) - 1;
  }

  get size(): number {
    return this.ring.length;
  }

  /**
   * Reads the cache key of a query. Returns where its question ends, or 0 when the query is not of the
   * cacheable shape (then `get` and `set` must not be called for it).
   */
  read(query: Uint8Array, tcp: boolean): number {
    const n = query.length;
    if (n < 17 || n > 512) return 0;
    // Header: QR=0, opcode QUERY, QDCOUNT=1, ANCOUNT=NSCOUNT=0, ARCOUNT<=1.
    if ((query[2]! & 0xf8) !== 0 || query[4] !== 0 || query[5] !== 1) return 0;
    if (query[6] !== 0 || query[7] !== 0 || query[8] !== 0 || query[9] !== 0 || query[10] !== 0) return 0;
    const arcount = query[11]!;
    if (arcount > 1) return 0;
    const scratch = this.scratch;
    // FNV-1a, 32 bits, from the cache's seed.
    let h = this.seed;
    let i = 12;
    let o = 0;
    for (;;) {
      const len = query[i];
      if (len === undefined || len > 63) return 0; // pointers and reserved label types: slow path
      scratch[o++] = len;
      h = Math.imul(h ^ len, 0x01000193);
      i++;
      if (len === 0) break;
      if (i + len > n || o + len > 255) return 0;
      for (let j = 0; j < len; j++) {
        let c = query[i++]!;
        if (c >= 0x41 && c <= 0x5a) c |= 0x20;
        scratch[o++] = c;
        h = Math.imul(h ^ c, 0x01000193);
      }
    }
    if (i + 4 > n) return 0;
    for (let j = 0; j < 4; j++) {
      const c = query[i++]!;
      scratch[o++] = c;
      h = Math.imul(h ^ c, 0x01000193);
    }
    const questionEnd = i;
    // RD and CD are copied into the response; the rest of the flags must be clear.
    let flags = (query[2]! & 0x01) | (query[3]! & 0x10);
    let limit: number;
    if (arcount === 1) {
      // OPT: root owner, type 41, version 0, no options (RFC 6891 §6.1.2); anything else: slow path.
      if (i + 11 !== n || query[i] !== 0 || query[i + 1] !== 0 || query[i + 2] !== 41) return 0;
      if (query[i + 5] !== 0 || query[i + 6] !== 0 || query[i + 9] !== 0 || query[i + 10] !== 0) return 0;
      flags |= 0x40 | (query[i + 7]! & 0x80); // EDNS used, DO
      limit = responseLimit(
        { udpSize: (query[i + 3]! << 8) | query[i + 4]!, version: 0, dnssecOk: false },
        tcp,
      );
    } else {
      if (i !== n) return 0;
      limit = responseLimit(undefined, tcp);
    }
    scratch[o++] = flags;
    scratch[o++] = limit >> 8;
    scratch[o++] = limit & 0xff;
    h = Math.imul(h ^ flags, 0x01000193);
    h = Math.imul(h ^ (limit >> 8), 0x01000193);
    h = Math.imul(h ^ (limit & 0xff), 0x01000193);
    this.keyLength = o;
    // 30 bits keep the Map key a small integer (no heap number per lookup).
    this.hash = h & this.hashMask;
    return questionEnd;
  }

  /** The key built by the last `read`, as text (for tests and diagnostics). */
  lastKey(): string {
    return this.scratch.toString('latin1', 0, this.keyLength);
  }

  /** The cached response for the last key read (to copy with `answer`), or undefined. */
  get(version: number): CachedResponse | undefined {
    const entry = this.find();
    if (entry === undefined || entry.version !== version) {
      this.misses++;
      return undefined;
    }
    entry.referenced = true;
    this.hits++;
    return entry;
  }

  /** A copy of a cached response carrying the query's ID and its question as asked. */
  static answer(entry: CachedResponse, query: Uint8Array, questionEnd: number): Uint8Array {
    const out = Buffer.allocUnsafe(entry.bytes.length);
    out.set(entry.bytes);
    out[0] = query[0]!;
    out[1] = query[1]!;
    for (let i = 12; i < questionEnd; i++) out[i] = query[i]!;
    return out;
  }

  /** Stores a response under the last key read; false when its hash chain is full and it was not kept. */
  set(response: Uint8Array, version: number, qtype: number): boolean {
    const existing = this.find();
    const rcode = response[3]! & 0xf;
    if (existing !== undefined) {
      existing.bytes = new Uint8Array(response);
      existing.version = version;
      existing.qtype = qtype;
      existing.rcode = rcode;
      return true;
    }
    if (this.chainLength >= MAX_CHAIN) {
      this.chainFull++;
      return false;
    }
    const keyLength = this.keyLength;
    const block = new Uint8Array(keyLength + response.length);
    block.set(this.scratch.subarray(0, keyLength));
    block.set(response, keyLength);
    const entry: Entry = {
      hash: this.hash,
      key: block.subarray(0, keyLength),
      bytes: block.subarray(keyLength),
      version,
      qtype,
      rcode,
      // New entries start without a second chance: one-off names are the first to go.
      referenced: false,
      next: this.index.get(this.hash),
    };
    this.index.set(this.hash, entry);
    if (this.ring.length < this.maxEntries) {
      this.ring.push(entry);
      return true;
    }
    this.ring[this.evictSlot(version)] = entry;
    return true;
  }

  /** Advances the CLOCK hand to an entry without a second chance (or a stale one), unlinks it, returns its slot. */
  private evictSlot(version: number): number {
    const ring = this.ring;
    for (;;) {
      const slot = this.hand;
      this.hand = slot + 1 === ring.length ? 0 : slot + 1;
      const victim = ring[slot]!;
      if (victim.referenced && victim.version === version) {
        victim.referenced = false;
        continue;
      }
      this.unlink(victim);
      return slot;
    }
  }

  private unlink(victim: Entry): void {
    let e = this.index.get(victim.hash);
    if (e === victim) {
      if (victim.next === undefined) this.index.delete(victim.hash);
      else this.index.set(victim.hash, victim.next);
      return;
    }
    while (e !== undefined && e.next !== victim) e = e.next;
    if (e !== undefined) e.next = victim.next;
  }

  private find(): Entry | undefined {
    const scratch = this.scratch;
    const n = this.keyLength;
    let length = 0;
    for (let e = this.index.get(this.hash); e !== undefined; e = e.next) {
      length++;
      const key = e.key;
      if (key.length !== n) continue;
      let i = 0;
      while (i < n && key[i] === scratch[i]) i++;
      if (i === n) {
        this.chainLength = length;
        return e;
      }
    }
    this.chainLength = length;
    return undefined;
  }
}
