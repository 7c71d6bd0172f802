import { responseLimit } from './response.ts';

/** A stored response, with what the metrics need to count a hit like any other answer. */
export interface CachedResponse {
  bytes: Uint8Array;
  version: number;
  qtype: number;
  rcode: number;
}

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
 */
export class ResponseCache {
  private readonly entries = new Map<string, CachedResponse>();
  private readonly maxEntries: number;
  private readonly scratch = Buffer.alloc(512);
  hits = 0;
  misses = 0;

  constructor(maxEntries = 20_000) {
    this.maxEntries = maxEntries;
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * The cache key of a query, or undefined when the query is not of the cacheable shape; also where
   * its question ends.
   */
  keyOf(query: Uint8Array, tcp: boolean): { key: string; questionEnd: number } | undefined {
    const n = query.length;
    if (n < 17 || n > 512) return undefined;
    // Header: QR=0, opcode QUERY, QDCOUNT=1, ANCOUNT=NSCOUNT=0, ARCOUNT<=1.
    if ((query[2]! & 0xf8) !== 0 || query[4] !== 0 || query[5] !== 1) return undefined;
    if (query[6] !== 0 || query[7] !== 0 || query[8] !== 0 || query[9] !== 0 || query[10] !== 0)
      return undefined;
    const arcount = query[11]!;
    if (arcount > 1) return undefined;
    const scratch = this.scratch;
    let i = 12;
    let o = 0;
    for (;;) {
      const len = query[i];
      if (len === undefined || len > 63) return undefined; // pointers and reserved label types: slow path
      scratch[o++] = len;
      i++;
      if (len === 0) break;
      if (i + len > n || o + len > 255) return undefined;
      for (let j = 0; j < len; j++) {
        const c = query[i++]!;
        scratch[o++] = c >= 0x41 && c <= 0x5a ? c | 0x20 : c;
      }
    }
    if (i + 4 > n) return undefined;
    for (let j = 0; j < 4; j++) scratch[o++] = query[i++]!;
    const questionEnd = i;
    // RD and CD are copied into the response; the rest of the flags must be clear.
    scratch[o++] = query[2]! & 0x01;
    scratch[o++] = query[3]! & 0x10;
    let limit: number;
    if (arcount === 1) {
      // OPT: root owner, type 41, version 0, no options (RFC 6891 §6.1.2); anything else: slow path.
      if (i + 11 !== n || query[i] !== 0 || query[i + 1] !== 0 || query[i + 2] !== 41) return undefined;
      if (query[i + 5] !== 0 || query[i + 6] !== 0 || query[i + 9] !== 0 || query[i + 10] !== 0)
        return undefined;
      scratch[o++] = 1;
      scratch[o++] = query[i + 7]! & 0x80; // DO
      limit = responseLimit(
        { udpSize: (query[i + 3]! << 8) | query[i + 4]!, version: 0, dnssecOk: false },
        tcp,
      );
    } else {
      if (i !== n) return undefined;
      scratch[o++] = 0;
      limit = responseLimit(undefined, tcp);
    }
    scratch[o++] = limit >> 8;
    scratch[o++] = limit & 0xff;
    return { key: scratch.toString('latin1', 0, o), questionEnd };
  }

  /** The cached response (to copy with `answer`), or undefined. */
  get(key: string, version: number): CachedResponse | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.version !== version) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    return entry;
  }

  /** A copy of a cached response carrying the query's ID and its question as asked. */
  static answer(entry: CachedResponse, query: Uint8Array, questionEnd: number): Uint8Array {
    const out = Buffer.allocUnsafe(entry.bytes.length);
    out.set(entry.bytes);
    out[0] = query[0]!;
    out[1] = query[1]!;
    out.set(query.subarray(12, questionEnd), 12);
    return out;
  }

  set(key: string, response: Uint8Array, version: number, qtype: number): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) {
      // Oldest first (Map keeps insertion order): bounded memory whatever the query stream.
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(key, { bytes: new Uint8Array(response), version, qtype, rcode: response[3]! & 0xf });
  }
}
