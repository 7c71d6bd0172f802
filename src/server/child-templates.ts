import { RRType } from '../dns/rrtype.ts';
import type { ZoneView } from './answer.ts';

/** Default number of templates kept (one per parent name, question type and response shape). */
export const DEFAULT_CHILD_TEMPLATES = 10_000;
/**
 * Default budget for the bytes of all templates together (4 MiB per answering thread). A response may
 * be up to 16 KiB over TCP, so a count alone would let one tenant's large wildcard RRsets, asked with
 * every header and EDNS variation the key tells apart, hold far more.
 */
export const DEFAULT_CHILD_TEMPLATE_BYTES = 4 * 1024 * 1024;

/** What a response may hold for its template to be kept: nothing in it may depend on the child's name. */
export interface TemplateSource {
  /** The response as the answer path encoded it, for the question whose key `ResponseCache.read` built. */
  bytes: Uint8Array;
  /** Where its question ends (the same in the query and the response: the question is copied). */
  questionEnd: number;
  /** The largest response allowed for this question (RFC 6891 §6.2.5). */
  limit: number;
  /** The zone table's version the response was made at. */
  version: number;
  /** The zone answering, and the presentation keys of the child (the question's name) and its parent. */
  zone: ZoneView;
  childKey: string;
  parentKey: string;
  qtype: number;
  /** The rate limiter's tag for the wildcard the answer was synthesised from (`wildcardTag`), else 0. */
  wildcard: number;
}

interface Template {
  zone: ZoneView;
  parentKey: string;
  bytes: Uint8Array;
  questionEnd: number;
  /** Offsets of the compression pointers after the question, and whether each points at the question's name. */
  pointers: Int32Array;
  toQname: Uint8Array;
  qtype: number;
  rcode: number;
  wildcard: number;
}

/**
 * Responses for names that do not exist below a name that does, reused for every such name.
 *
 * In a zone, a name N with no node, that is neither an empty non-terminal nor a zone apex, is answered
 * (RFC 1034 §4.3.2 step 3c, RFC 4592 §3.3.1) from its closest encloser alone: NXDOMAIN with the
 * zone's SOA, or the wildcard's RRsets under N, or NODATA at the wildcard. The closest encloser search
 * starts at N's parent, so every child of one parent that has no node gets the same answer apart from
 * N itself — which appears only as the question and as the owner of records synthesised from a
 * wildcard, and compressed names pointing into it. A template keeps one such response; another child's
 * response is the template with that child's question, its ID, and the compression pointers moved by
 * the difference in length of the two questions. So a random-subdomain flood and names synthesised
 * from wildcards (names the response cache never sees twice) cost a template copy instead of a lookup
 * and an encoding.
 *
 * Only responses in which nothing else depends on N are kept (`learn`): no DNSSEC (the NSEC/NSEC3
 * proofs name N; the DO bit is part of the key, and DO queries are never learned), no CNAME (a chain
 * could come back to N), no RRset selection (answers per client), nothing truncated or left out and
 * room for the longest name, and no pointer into N's first labels except an owner pointing at N
 * itself. Only parents that exist are learned, so an attacker's random parents cannot fill it. The
 * templates are all of one zone table version; any change to any zone makes them stale, and the first
 * `answer` or `learn` at another version drops them all (so none keeps an old zone alive).
 *
 * Templates are bounded both by count (`maxEntries`, DEFAULT_CHILD_TEMPLATES) and by the bytes they
 * hold together (`maxBytes`, DEFAULT_CHILD_TEMPLATE_BYTES); all are dropped when either would be
 * passed, and a template larger than the whole byte budget is never kept.
 *
 * The key is the one `ResponseCache.read` builds, minus N's first label (see `ResponseCache.parentKey`).
 */
export class ChildTemplates {
  private readonly max: number;
  private readonly maxBytes: number;
  /** The bytes the templates hold (their responses and pointer tables). */
  private held = 0;
  private readonly templates = new Map<string, Template>();
  /** The zone table's version every template was made at (templates from other versions are dropped). */
  private version = Number.NaN;
  /** Templates used, and responses kept as templates (for tests and diagnostics). */
  hits = 0;
  learned = 0;
  /** The response code of the last response `answer` made (for metrics). */
  rcode = 0;
  /** The wildcard tag of the last response `answer` made (for rate limiting, see `TemplateSource`). */
  wildcard = 0;

  constructor(maxEntries = DEFAULT_CHILD_TEMPLATES, maxBytes = DEFAULT_CHILD_TEMPLATE_BYTES) {
    this.max = Math.max(1, Math.floor(maxEntries));
    this.maxBytes = Math.max(0, Math.floor(maxBytes));
  }

  /** The bytes the templates hold. */
  get bytes(): number {
    return this.held;
  }

  private clear(): void {
    this.templates.clear();
    this.held = 0;
  }

  /**
   * Drops every template when the zone table is at another version than theirs: any change to any zone
   * makes them stale, and they must not keep the zones they were made from (and their images) alive.
   */
  private at(version: number): void {
    if (version === this.version) return;
    this.clear();
    this.version = version;
  }

  get size(): number {
    return this.templates.size;
  }

  /**
   * The response for a query whose first label is `label` (lowercased presentation text, see
   * `ResponseCache.firstLabel`) and whose key without it is `key`, made from a template when there is a
   * current one and the query's name has no data of its own; null otherwise.
   */
  answer(
    query: Uint8Array,
    questionEnd: number,
    key: string,
    label: string,
    version: number,
    isApex: (key: string) => boolean,
  ): Uint8Array | null {
    this.at(version);
    const t = this.templates.get(key);
    if (t === undefined) return null;
    const childKey = t.parentKey === '.' ? `${label}.` : `${label}.${t.parentKey}`;
    const zone = t.zone;
    if (zone.node(childKey) !== undefined || zone.isEmptyNonTerminal(childKey) || isApex(childKey))
      return null;
    const bytes = t.bytes;
    const delta = questionEnd - t.questionEnd;
    const out = Buffer.allocUnsafe(bytes.length + delta);
    out[0] = query[0]!;
    out[1] = query[1]!;
    for (let i = 2; i < 12; i++) out[i] = bytes[i]!;
    for (let i = 12; i < questionEnd; i++) out[i] = query[i]!;
    out.set(bytes.subarray(t.questionEnd), questionEnd);
    const pointers = t.pointers;
    for (let p = 0; p < pointers.length; p++) {
      const at = pointers[p]!;
      const target = t.toQname[p] === 1 ? 12 : (((bytes[at]! & 0x3f) << 8) | bytes[at + 1]!) + delta;
      const o = at + delta;
      out[o] = 0xc0 | (target >> 8);
      out[o + 1] = target & 0xff;
    }
    this.hits++;
    this.rcode = t.rcode;
    this.wildcard = t.wildcard;
    return out;
  }

  /**
   * Keeps `source` as the template for `key` when nothing in it depends on the child's name (see the
   * class comment; the caller checks the answer's kind). Says whether it was kept.
   */
  learn(key: string, source: TemplateSource): boolean {
    const { bytes, questionEnd, zone, childKey, parentKey } = source;
    this.at(source.version);
    if (this.templates.has(key)) return false;
    // Room for any child: the response for the longest name (255 octets) must still fit whole, and every
    // pointer must stay within the 14 bits of an offset (RFC 1035 §4.1.4).
    const qnameLength = questionEnd - 4 - 12;
    const headroom = 255 - qnameLength;
    if (bytes.length + headroom > Math.min(source.limit, 0x3fff)) return false;
    if (bytes[4] !== 0 || bytes[5] !== 1 || bytes.length <= questionEnd) return false;
    // The child has no data of its own, and its parent exists (so templates are bounded by the names served).
    if (zone.originKey === childKey || zone.node(childKey) !== undefined || zone.isEmptyNonTerminal(childKey))
      return false;
    if (
      parentKey !== zone.originKey &&
      zone.node(parentKey) === undefined &&
      !zone.isEmptyNonTerminal(parentKey)
    )
      return false;
    const parentStart = 12 + 1 + bytes[12]!;
    const positions: number[] = [];
    const toQname: number[] = [];
    /** Reads the name at `at`, noting its pointer; returns where it ends, or -1 when it cannot be moved. */
    const name = (at: number, owner: boolean): number => {
      let i = at;
      for (;;) {
        const len = bytes[i];
        if (len === undefined) return -1;
        if (len === 0) return i + 1;
        if (len >= 0xc0) {
          if (i + 1 >= bytes.length) return -1;
          const target = ((len & 0x3f) << 8) | bytes[i + 1]!;
          if (target === 12) {
            // The child's name itself: only as the owner of a synthesised RRset, never inside RDATA.
            if (!owner) return -1;
            toQname.push(1);
          } else if ((target >= parentStart && target < questionEnd - 4) || target >= questionEnd) {
            toQname.push(0);
          } else return -1;
          positions.push(i);
          return i + 2;
        }
        if (len > 63) return -1;
        i += 1 + len;
      }
    };
    const records =
      ((bytes[6]! << 8) | bytes[7]!) + ((bytes[8]! << 8) | bytes[9]!) + ((bytes[10]! << 8) | bytes[11]!);
    let at = questionEnd;
    for (let r = 0; r < records; r++) {
      at = name(at, true);
      if (at < 0 || at + 10 > bytes.length) return false;
      const type = (bytes[at]! << 8) | bytes[at + 1]!;
      const rdlength = (bytes[at + 8]! << 8) | bytes[at + 9]!;
      const rdata = at + 10;
      const end = rdata + rdlength;
      if (end > bytes.length) return false;
      // The RDATA types this server writes with compressed names (RFC 3597 §4); every other RDATA is
      // written uncompressed, the same bytes whatever the message.
      let n = rdata;
      switch (type) {
        case RRType.NS:
        case RRType.CNAME:
        case RRType.PTR:
          n = name(rdata, false);
          break;
        case RRType.MX:
          n = name(rdata + 2, false);
          break;
        case RRType.SOA:
          n = name(rdata, false);
          if (n >= 0) n = name(n, false);
          break;
      }
      if (n < 0 || n > end) return false;
      at = end;
    }
    if (at !== bytes.length) return false;
    // What the template holds: its response, and a 4-octet offset and a flag per pointer.
    const size = bytes.length + 5 * positions.length;
    if (size > this.maxBytes) return false;
    if (this.templates.size >= this.max || this.held + size > this.maxBytes) this.clear();
    this.held += size;
    this.templates.set(key, {
      zone,
      parentKey,
      bytes: Uint8Array.from(bytes),
      questionEnd,
      pointers: Int32Array.from(positions),
      toQname: Uint8Array.from(toQname),
      qtype: source.qtype,
      rcode: bytes[3]! & 0xf,
      wildcard: source.wildcard,
    });
    this.learned++;
    return true;
  }
}
