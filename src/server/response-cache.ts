import { randomInt } from 'node:crypto';
import { responseLimit } from './response.ts';

/** Default number of responses kept. */
export const DEFAULT_RESPONSE_CACHE_ENTRIES = 100_000;

/**
 * Bytes of answers (key and response) the cache holds per entry it may keep: the store is entries ×
 * this, allocated once. Typical answers take 60–300 bytes with their key; larger ones use the room of
 * smaller ones.
 */
export const BYTES_PER_ENTRY = 256;

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

/** What `set` did with an answer. */
export type CacheStore = 'kept' | 'chain-full' | 'too-large';

/** Longest key: a 255-octet name, type and class, and 6 octets of flags and limits. */
const MAX_KEY = 255 + 4 + 6;

/** Smallest store: any single response (up to 64 KiB over TCP) fits, so size never decides what is cached. */
const MIN_STORE = 4 * (65535 + MAX_KEY);

function storeBytes(entries: number): number {
  return Math.max(MIN_STORE, entries * BYTES_PER_ENTRY);
}

/** Slot states. */
const FREE = 0;
const LIVE = 1;
/** Replaced by a larger answer elsewhere in the store: its bytes wait for the log to pass. */
const DEAD = 2;

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
 * Memory is bounded and allocated once (ADR 0011): at most `maxEntries` entries, whose keys and
 * responses live in one store of `maxEntries × BYTES_PER_ENTRY` bytes (pages are touched as it fills),
 * and whose fields live in typed arrays indexed by slot. Nothing is allocated per entry, so the garbage
 * collector never sees the cache and its size in memory is what it says.
 *
 * The store is a circular log: a new entry is written at the head, and the entries the head reaches
 * are evicted — except entries hit since the head last passed them (and still current), which keep
 * their place while the head skips over them: CLOCK's second chance, in log order. So a stream of
 * one-off names (random subdomains, names synthesised from wildcards) replaces itself instead of
 * flushing the popular answers.
 *
 * This is the hot path of the server, so it allocates nothing until it answers: the key is built in a
 * scratch buffer with its FNV-1a hash (from a random per-process seed), the index is a table of hash
 * buckets with chains of at most MAX_CHAIN entries compared byte by byte, so crafted colliding names
 * cannot make lookups slow.
 *
 * Usage: `read(query)` builds the key of one query; `get` and `set` then apply to that key until the
 * next `read`.
 */
export class ResponseCache {
  private readonly maxEntries: number;
  /** Keys and responses, entry after entry, written circularly at `head`. */
  private readonly store: Buffer;
  private head = 0;
  /** Per slot. */
  private readonly state: Uint8Array;
  private readonly hashOf: Int32Array;
  /** Next slot in the same bucket, -1 at the end. */
  private readonly nextOf: Int32Array;
  private readonly offsetOf: Uint32Array;
  /** Bytes the slot occupies in the store (at least its key and response). */
  private readonly roomOf: Uint32Array;
  private readonly keyLengthOf: Uint16Array;
  private readonly responseLengthOf: Uint32Array;
  private readonly versionOf: Float64Array;
  private readonly qtypeOf: Uint16Array;
  private readonly rcodeOf: Uint8Array;
  /** For an answer synthesised from a wildcard, the rate limiter's tag for it (`wildcardTag`); else 0. */
  private readonly wildcardOf: Int32Array;
  /** The second-chance bit: set by a hit, cleared as the head passes. */
  private readonly referenced: Uint8Array;
  /** First slot of each bucket, -1 when empty. */
  private readonly buckets: Int32Array;
  private readonly bucketMask: number;
  /** Slots in store order from the head (oldest first): a circular queue. */
  private readonly order: Int32Array;
  private orderStart = 0;
  private orderCount = 0;
  /** Free slots (a stack). */
  private readonly freeSlots: Int32Array;
  private freeCount: number;
  private live = 0;
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
    const n = Math.max(1, Math.floor(maxEntries));
    this.maxEntries = n;
    this.seed = (options.seed ?? randomInt(0, 2 ** 32)) | 0;
    this.hashMask = 2 ** Math.min(30, Math.max(1, options.hashBits ?? 30)) - 1;
    // Zero-filled: the pages are mapped lazily, so resident memory grows as the log first goes round.
    this.store = Buffer.alloc(storeBytes(n));
    this.state = new Uint8Array(n);
    this.hashOf = new Int32Array(n);
    this.nextOf = new Int32Array(n);
    this.offsetOf = new Uint32Array(n);
    this.roomOf = new Uint32Array(n);
    this.keyLengthOf = new Uint16Array(n);
    this.responseLengthOf = new Uint32Array(n);
    this.versionOf = new Float64Array(n);
    this.qtypeOf = new Uint16Array(n);
    this.rcodeOf = new Uint8Array(n);
    this.wildcardOf = new Int32Array(n);
    this.referenced = new Uint8Array(n);
    // At least two buckets per entry: chains stay short unless names are made to collide.
    let buckets = 2;
    while (buckets < 2 * n) buckets *= 2;
    this.buckets = new Int32Array(buckets).fill(-1);
    this.bucketMask = buckets - 1;
    this.order = new Int32Array(n);
    this.freeSlots = new Int32Array(n);
    for (let i = 0; i < n; i++) this.freeSlots[i] = n - 1 - i;
    this.freeCount = n;
  }

  /** Entries held. */
  get size(): number {
    return this.live;
  }

  /** Bytes of the store for keys and responses (fixed at construction). */
  get storeBytes(): number {
    return this.store.length;
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

  /**
   * The first label of the name of the last key read, as lowercased presentation text, when it holds
   * only letters, digits, `-` and `_` (no character that presentation text would escape, and not `*`);
   * undefined otherwise or for the root. For `ChildTemplates`.
   */
  firstLabel(): string | undefined {
    const scratch = this.scratch;
    const len = scratch[0]!;
    if (len === 0) return undefined;
    for (let i = 1; i <= len; i++) {
      const c = scratch[i]!;
      if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x5f))
        return undefined;
    }
    return scratch.toString('latin1', 1, 1 + len);
  }

  /** The last key read without the first label of its name (the key of `ChildTemplates`); undefined for the root. */
  parentKey(): string | undefined {
    const len = this.scratch[0]!;
    return len === 0 ? undefined : this.scratch.toString('latin1', 1 + len, this.keyLength);
  }

  /** The key built by the last `read`, as text (for tests and diagnostics). */
  lastKey(): string {
    return this.scratch.toString('latin1', 0, this.keyLength);
  }

  /**
   * The slot of the cached response for the last key read (for `answer`, `qtypeAt`, `rcodeAt`), or -1.
   */
  get(version: number): number {
    const slot = this.find();
    if (slot < 0 || this.versionOf[slot] !== version) {
      this.misses++;
      return -1;
    }
    this.referenced[slot] = 1;
    this.hits++;
    return slot;
  }

  /** The query type of the answer in `slot` (for metrics). */
  qtypeAt(slot: number): number {
    return this.qtypeOf[slot]!;
  }

  /** The response code of the answer in `slot` (for metrics). */
  rcodeAt(slot: number): number {
    return this.rcodeOf[slot]!;
  }

  /** The wildcard the answer in `slot` was synthesised from, as given to `set` (for rate limiting). */
  wildcardAt(slot: number): number {
    return this.wildcardOf[slot]!;
  }

  /** A copy of the response in `slot` carrying the query's ID and its question as asked. */
  answer(slot: number, query: Uint8Array, questionEnd: number): Uint8Array {
    const length = this.responseLengthOf[slot]!;
    const from = this.offsetOf[slot]! + this.keyLengthOf[slot]!;
    const out = Buffer.allocUnsafe(length);
    this.store.copy(out, 0, from, from + length);
    out[0] = query[0]!;
    out[1] = query[1]!;
    for (let i = 12; i < questionEnd; i++) out[i] = query[i]!;
    return out;
  }

  /**
   * Stores a response under the last key read; says whether it was kept, and why not. `wildcard`: the
   * rate limiter's tag for the wildcard it was synthesised from, 0 if none (see `wildcardAt`).
   */
  set(response: Uint8Array, version: number, qtype: number, wildcard = 0): CacheStore {
    const keyLength = this.keyLength;
    const size = keyLength + response.length;
    // One answer may take at most a quarter of the store, so the log always has room to turn.
    if (size > this.store.length / 4) return 'too-large';
    const rcode = response[3]! & 0xf;
    let slot = this.find();
    if (slot >= 0) {
      if (size <= this.roomOf[slot]!) {
        // Same key, made again (after a change): in place.
        this.write(slot, response, version, qtype, rcode, wildcard);
        return 'kept';
      }
      // Larger than its room: the old bytes stay until the head passes them; the answer goes to the head.
      this.unlink(slot);
      this.state[slot] = DEAD;
      this.live--;
    } else if (this.chainLength >= MAX_CHAIN) {
      this.chainFull++;
      return 'chain-full';
    }
    while (this.freeCount === 0) this.advance(version);
    this.makeRoom(size, version);
    slot = this.freeSlots[--this.freeCount]!;
    this.state[slot] = LIVE;
    this.live++;
    this.offsetOf[slot] = this.head;
    this.roomOf[slot] = size;
    this.keyLengthOf[slot] = keyLength;
    this.scratch.copy(this.store, this.head, 0, keyLength);
    this.write(slot, response, version, qtype, rcode, wildcard);
    this.head += size;
    this.order[(this.orderStart + this.orderCount++) % this.maxEntries] = slot;
    this.hashOf[slot] = this.hash;
    const bucket = this.hash & this.bucketMask;
    this.nextOf[slot] = this.buckets[bucket]!;
    this.buckets[bucket] = slot;
    return 'kept';
  }

  private write(
    slot: number,
    response: Uint8Array,
    version: number,
    qtype: number,
    rcode: number,
    wildcard: number,
  ): void {
    this.store.set(response, this.offsetOf[slot]! + this.keyLengthOf[slot]!);
    this.responseLengthOf[slot] = response.length;
    this.versionOf[slot] = version;
    this.qtypeOf[slot] = qtype;
    this.rcodeOf[slot] = rcode;
    this.wildcardOf[slot] = wildcard;
    // New entries start without a second chance: one-off names are the first to go.
    this.referenced[slot] = 0;
  }

  /** Frees `size` bytes at the head, before the end of the store, by evicting what the head reaches. */
  private makeRoom(size: number, version: number): void {
    const end = this.store.length;
    for (;;) {
      if (this.head + size > end) {
        // Not enough room before the end: deal with the entries between the head and the end, then wrap.
        while (this.orderCount > 0 && this.offsetOf[this.order[this.orderStart]!]! >= this.head) {
          this.advance(version, false);
        }
        this.head = 0;
        continue;
      }
      if (this.orderCount === 0) return;
      const offset = this.offsetOf[this.order[this.orderStart]!]!;
      // The oldest entry lies behind the head (nothing up to the end), or far enough ahead.
      if (offset < this.head || offset >= this.head + size) return;
      this.advance(version);
    }
  }

  /**
   * Takes the oldest entry in the log: evicts it, or gives it its second chance (it stays where it is
   * and becomes the newest; with `skip`, the head moves past it).
   */
  private advance(version: number, skip = true): void {
    const slot = this.order[this.orderStart]!;
    this.orderStart = this.orderStart + 1 === this.maxEntries ? 0 : this.orderStart + 1;
    this.orderCount--;
    if (this.state[slot] === LIVE && this.referenced[slot] === 1 && this.versionOf[slot] === version) {
      this.referenced[slot] = 0;
      this.order[(this.orderStart + this.orderCount++) % this.maxEntries] = slot;
      if (skip) this.head = this.offsetOf[slot]! + this.roomOf[slot]!;
      return;
    }
    if (this.state[slot] === LIVE) {
      this.unlink(slot);
      this.live--;
    }
    this.state[slot] = FREE;
    this.freeSlots[this.freeCount++] = slot;
  }

  private unlink(slot: number): void {
    const bucket = this.hashOf[slot]! & this.bucketMask;
    let s = this.buckets[bucket]!;
    if (s === slot) {
      this.buckets[bucket] = this.nextOf[slot]!;
      return;
    }
    while (s >= 0 && this.nextOf[s] !== slot) s = this.nextOf[s]!;
    if (s >= 0) this.nextOf[s] = this.nextOf[slot]!;
  }

  /** The slot holding the last key read, or -1; notes the length of the chain walked. */
  private find(): number {
    const scratch = this.scratch;
    const store = this.store;
    const n = this.keyLength;
    const hash = this.hash;
    let length = 0;
    for (let s = this.buckets[hash & this.bucketMask]!; s >= 0; s = this.nextOf[s]!) {
      length++;
      if (this.hashOf[s] !== hash || this.keyLengthOf[s] !== n) continue;
      const at = this.offsetOf[s]!;
      let i = 0;
      while (i < n && store[at + i] === scratch[i]) i++;
      if (i === n) {
        this.chainLength = length;
        return s;
      }
    }
    this.chainLength = length;
    return -1;
  }
}
