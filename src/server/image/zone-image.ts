import {
  encodeNameUncompressed,
  MAX_NAME_LENGTH,
  type Name,
  nameWireLength,
  writeNameWire,
} from '../../dns/name.ts';
import { encodeRdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
import { WireReader, WireWriter } from '../../dns/wire.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import type { SoaFields } from '../../zones/soa.ts';

/** "ZKZ1", little-endian: the first word of every zone image. */
export const IMAGE_MAGIC = 0x315a4b5a;
/** The layout described below; a reader refuses any other. */
export const IMAGE_FORMAT = 1;

/**
 * `RRType` as a map: an RRset's type code looked up by its name once per RRset of every build, which
 * on the object is a megamorphic keyed load.
 */
const TYPE_CODES: ReadonlyMap<string, number> = new Map(Object.entries(RRType));

/** Node flags. */
export const NodeFlag = {
  /** A name with no RRsets that has descendants (RFC 4592 §2.2.2): NODATA, never NXDOMAIN. */
  EmptyNonTerminal: 1,
  /** A delegation point: NS below the apex (RFC 1034 §4.2.1). */
  Cut: 2,
  /** The leftmost label is `*` (RFC 4592 §2.1.1). */
  Wildcard: 4,
  Apex: 8,
  /**
   * In an overlay only: the name no longer exists (neither RRsets nor descendants), whatever the base
   * image holds for it (ADR 0020 §4).
   */
  Tombstone: 16,
} as const;

/** Header flags. */
export const ImageKind = {
  /** A whole zone. */
  Base: 0,
  /**
   * The changed names of a zone over a base image (ADR 0020 §4): each of its nodes replaces the
   * base's node of that name whole (RRsets and flags), a `Tombstone` node hides it, and every other
   * name is the base's. The builder puts in it each changed name and every ancestor of one, in its
   * new state, so empty non-terminals stay exact without reading the base.
   */
  Overlay: 1,
} as const;

// Header: 16 little-endian 32-bit words.
const H_MAGIC = 0;
const H_FORMAT = 1;
const H_SERIAL = 2;
const H_NODES = 3;
const H_RRSETS = 4;
const H_HASH_SLOTS = 5;
const H_NODES_AT = 6;
const H_RRSETS_AT = 7;
const H_HASH_AT = 8;
const H_NAMES_AT = 9;
const H_RDATA_AT = 10;
const H_ORIGIN_LENGTH = 11;
const H_LENGTH = 12;
/** `ImageKind`. */
const H_KIND = 13;
/** An overlay: the `id` of the base image it applies to (0 in a base image). */
const H_BASE_ID = 14;
/** A number the building process gives each image it builds, so an overlay names its base. */
const H_ID = 15;
const HEADER_WORDS = 16;
/** Node: name offset, name length | flags << 16, first RRset, RRset count. */
const NODE_WORDS = 4;
/** RRset: type | record count << 16, TTL, RDATA offset, RRSIG offset (0: none). */
const RRSET_WORDS = 4;

/**
 * One zone as one immutable buffer, the data-plane layout of ADR 0020 (format 1). Little-endian, every
 * section 4-byte aligned:
 *
 * - header (16 words): magic, format, serial, node and RRset counts, hash slots, section offsets, the
 *   origin's wire length, the total length, the kind (base or overlay), the base's id (an overlay),
 *   the image's id;
 * - nodes in RFC 4034 §6.1 canonical order (so a node's index is its rank: the name before a name,
 *   which NSEC denial needs, is the node before it): name offset and length, flags, RRset range;
 * - RRsets, by node and then by type code: type, record count, TTL, RDATA offset, and the offset of
 *   its RRSIGs (0 until the zone is signed);
 * - a hash table (open addressing, FNV-1a over the lowercased name) from names to nodes;
 * - names: the origin once in wire form, then each node's labels below the origin, as written (case
 *   kept, RFC 1035 §2.3.3; lookups fold ASCII case). An owner's origin part is therefore written as
 *   the zone's origin is, whatever case a record spelled it in;
 * - RDATA: per record a 16-bit length and the uncompressed wire RDATA.
 *
 * Built once per serial and never written afterwards, so any number of threads may read one
 * (`SharedArrayBuffer`) without locks.
 */
export class ZoneImage {
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
  readonly origin: Name;
  readonly serial: number;
  readonly nodeCount: number;
  readonly rrsetCount: number;
  /** `ImageKind`. */
  readonly kind: number;
  /** Given by the building process, unique among the images it built (not 0). */
  readonly id: number;
  /** An overlay: the `id` of the base it applies to; 0 for a base image. */
  readonly baseId: number;
  private readonly bytes: Uint8Array;
  private readonly words: Uint32Array;
  private readonly nodesAt: number;
  private readonly rrsetsAt: number;
  private readonly hashAt: number;
  private readonly hashMask: number;
  private readonly namesAt: number;
  private readonly originLength: number;
  private counted: { cuts: number; records: number } | undefined;

  private constructor(buffer: ArrayBuffer | SharedArrayBuffer, origin: Name) {
    this.buffer = buffer;
    this.bytes = new Uint8Array(buffer);
    this.words = new Uint32Array(buffer, 0, buffer.byteLength >>> 2);
    const w = this.words;
    this.origin = origin;
    this.serial = w[H_SERIAL]!;
    this.nodeCount = w[H_NODES]!;
    this.rrsetCount = w[H_RRSETS]!;
    this.kind = w[H_KIND]!;
    this.id = w[H_ID]!;
    this.baseId = w[H_BASE_ID]!;
    this.nodesAt = w[H_NODES_AT]! >>> 2;
    this.rrsetsAt = w[H_RRSETS_AT]! >>> 2;
    this.hashAt = w[H_HASH_AT]! >>> 2;
    this.hashMask = w[H_HASH_SLOTS]! - 1;
    this.namesAt = w[H_NAMES_AT]!;
    this.originLength = w[H_ORIGIN_LENGTH]!;
  }

  /**
   * Builds the image of a zone: the SOA (from `soa` and `serial`) and `rrsets` (the SOA excluded).
   * `shared` puts it in a `SharedArrayBuffer`, to hand to other threads without copying.
   *
   * With `overlay`, the image is an overlay over the base image `overlay.base` (see `ImageKind`):
   * `rrsets` are those of the changed names, `emptyNonTerminals` the changed names that are empty
   * non-terminals now, and `tombstones` those that no longer exist; no empty non-terminal is
   * derived (the caller states each name's state, see `overlay.ts`). The apex is always in it (the SOA).
   */
  static build(
    origin: Name,
    soa: SoaFields,
    serial: number,
    rrsets: Iterable<RRsetData>,
    options: {
      shared?: boolean;
      overlay?: { base: number; emptyNonTerminals: Iterable<Name>; tombstones: Iterable<Name> };
    } = {},
  ): ZoneImage {
    const originWire = encodeNameUncompressed(origin);
    const names = NameSet.take(originWire.length, Array.isArray(rrsets) ? rrsets.length + 1 : 64);
    try {
      return ZoneImage.laidOut(origin, originWire, soa, serial, rrsets, names, options);
    } finally {
      names.give();
    }
  }

  /** `build` with the name set to fill and lay out. */
  private static laidOut(
    origin: Name,
    originWire: Uint8Array,
    soa: SoaFields,
    serial: number,
    rrsets: Iterable<RRsetData>,
    names: NameSet,
    options: {
      shared?: boolean;
      overlay?: { base: number; emptyNonTerminals: Iterable<Name>; tombstones: Iterable<Name> };
    },
  ): ZoneImage {
    const overlay = options.overlay;
    names.add(
      { owner: origin, type: 'SOA', ttl: soa.ttl, rdata: [{ type: 'SOA', ...soa, serial }] },
      RRType.SOA,
    );
    for (const rrset of rrsets) {
      if (rrset.type === 'SOA') continue;
      names.add(rrset, TYPE_CODES.get(rrset.type)!);
    }
    if (overlay) {
      for (const name of overlay.emptyNonTerminals) names.addName(name, false);
      for (const name of overlay.tombstones) names.addName(name, true);
    } else {
      // Empty non-terminals: every missing name between an owner and the apex.
      names.addEmptyNonTerminals();
    }
    // Nodes in canonical order (RFC 4034 §6.1), compared by their labels below the origin alone
    // (every name shares the origin).
    const nodes = names.sorted();
    const nodeCount = nodes.length;

    // Encode every record's RDATA, in image order, into one writer first (to size the buffer):
    // per record a 16-bit length and the uncompressed wire RDATA. `starts` holds each RRset's offset
    // in it, `order` the RRsets in image order (by node, then by type code).
    const writer = rdataScratch();
    const list = names.rrsets;
    const order = new Int32Array(list.length);
    const starts = new Int32Array(list.length);
    let rrsetTotal = 0;
    let nameBytes = originWire.length;
    // Each node's work in a function of its own, the loop here holding no loop: see `encodeNode`.
    for (let i = 0; i < nodeCount; i++) {
      const node = nodes[i]!;
      nameBytes += names.nameLength[node]!;
      rrsetTotal = encodeNode(names, node, order, starts, rrsetTotal, writer);
    }
    const rdataBytes = writer.length;
    let slots = 8;
    while (slots < nodeCount * 2) slots *= 2;
    const align = (n: number) => (n + 3) & ~3;
    const nodesAt = HEADER_WORDS * 4;
    const rrsetsAt = nodesAt + nodeCount * NODE_WORDS * 4;
    const hashAt = rrsetsAt + rrsetTotal * RRSET_WORDS * 4;
    const namesAt = hashAt + slots * 4;
    const rdataAt = align(namesAt + nameBytes);
    const length = align(rdataAt + rdataBytes);
    const buffer = options.shared ? new SharedArrayBuffer(length) : new ArrayBuffer(length);
    const bytes = new Uint8Array(buffer);
    const words = new Uint32Array(buffer);
    words[H_MAGIC] = IMAGE_MAGIC;
    words[H_FORMAT] = IMAGE_FORMAT;
    words[H_SERIAL] = serial >>> 0;
    words[H_NODES] = nodeCount;
    words[H_RRSETS] = rrsetTotal;
    words[H_HASH_SLOTS] = slots;
    words[H_NODES_AT] = nodesAt;
    words[H_RRSETS_AT] = rrsetsAt;
    words[H_HASH_AT] = hashAt;
    words[H_NAMES_AT] = namesAt;
    words[H_RDATA_AT] = rdataAt;
    words[H_ORIGIN_LENGTH] = originWire.length;
    words[H_LENGTH] = length;
    words[H_KIND] = overlay ? ImageKind.Overlay : ImageKind.Base;
    words[H_BASE_ID] = overlay ? overlay.base : 0;
    words[H_ID] = nextImageId();
    bytes.set(originWire, namesAt);
    writer.copyInto(bytes, rdataAt);
    const hashWords = hashAt >>> 2;
    const mask = slots - 1;
    let namePos = namesAt + originWire.length;
    const layout: NodeLayout = { bytes, words, order, starts, rrsetsAt, rdataAt, nodesAt, hashWords, mask };
    let r = 0;
    for (let i = 0; i < nodeCount; i++) {
      const node = nodes[i]!;
      r = writeNode(names, node, i, namePos, r, layout);
      namePos += names.nameLength[node]!;
    }
    return new ZoneImage(buffer, origin);
  }

  /**
   * An overlay over this image (a base): the zone at `serial` whose changed names are those given
   * (see `build` and `overlay.ts`).
   */
  overlay(
    soa: SoaFields,
    serial: number,
    rrsets: Iterable<RRsetData>,
    changed: { emptyNonTerminals: Iterable<Name>; tombstones: Iterable<Name>; shared?: boolean },
  ): ZoneImage {
    if (this.kind !== ImageKind.Base) throw new Error('zone image: an overlay goes over a base image');
    return ZoneImage.build(this.origin, soa, serial, rrsets, {
      ...(changed.shared ? { shared: true } : {}),
      overlay: {
        base: this.id,
        emptyNonTerminals: changed.emptyNonTerminals,
        tombstones: changed.tombstones,
      },
    });
  }

  /** Reads an image built by `build` (e.g. received from another thread); throws if it is not one. */
  static from(buffer: ArrayBuffer | SharedArrayBuffer): ZoneImage {
    if (buffer.byteLength < HEADER_WORDS * 4) throw new Error('zone image: shorter than its header');
    const words = new Uint32Array(buffer, 0, HEADER_WORDS);
    if (words[H_MAGIC] !== IMAGE_MAGIC) throw new Error('zone image: wrong magic number');
    if (words[H_FORMAT] !== IMAGE_FORMAT)
      throw new Error(`zone image: format ${words[H_FORMAT]}, this reader knows format ${IMAGE_FORMAT}`);
    if (words[H_LENGTH] !== buffer.byteLength) throw new Error('zone image: length does not match');
    checkLayout(buffer);
    const bytes = new Uint8Array(buffer);
    const namesAt = words[H_NAMES_AT]!;
    const origin = new WireReader(bytes.subarray(namesAt, namesAt + words[H_ORIGIN_LENGTH]!)).name();
    return new ZoneImage(buffer, origin);
  }

  get byteLength(): number {
    return this.buffer.byteLength;
  }

  /** The node of `name` (any letter case), or -1 when the zone has no such name. */
  find(name: Name): number {
    return this.findWire(encodeNameUncompressed(name));
  }

  /** `find` for a name already in uncompressed wire form (one encoding for a base and its overlay). */
  findWire(wire: Uint8Array): number {
    const relative = wire.length - this.originLength;
    if (relative < 0) return -1;
    // The name must end with the origin at a label boundary.
    let pos = 0;
    while (pos < relative) pos += wire[pos]! + 1;
    if (pos !== relative) return -1;
    const o = this.namesAt;
    for (let i = 0; i < this.originLength; i++) {
      if (lower(wire[relative + i]!) !== lower(this.bytes[o + i]!)) return -1;
    }
    return this.findRelative(wire, 0, relative);
  }

  /** The node whose labels below the origin are `wire[start, end)` (as in a query), or -1. */
  findRelative(wire: Uint8Array, start: number, end: number): number {
    const length = end - start;
    const bytes = this.bytes;
    const words = this.words;
    let slot = hashName(wire, start, length) & this.hashMask;
    for (;;) {
      const entry = words[this.hashAt + slot]!;
      if (entry === 0) return -1;
      const node = entry - 1;
      const n = this.nodesAt + node * NODE_WORDS;
      if ((words[n + 1]! & 0xffff) === length) {
        const at = words[n]!;
        let same = true;
        for (let i = 0; i < length; i++) {
          if (lower(bytes[at + i]!) !== lower(wire[start + i]!)) {
            same = false;
            break;
          }
        }
        if (same) return node;
      }
      slot = (slot + 1) & this.hashMask;
    }
  }

  /** A node's labels below the origin in wire form, as a view into the image (never to be written). */
  relativeName(node: number): Uint8Array {
    const n = this.nodesAt + node * NODE_WORDS;
    const at = this.words[n]!;
    return this.bytes.subarray(at, at + (this.words[n + 1]! & 0xffff));
  }

  /** The node's place in RFC 4034 §6.1 canonical order as a string (compare two with `<`). */
  sortKey(node: number): string {
    return relativeSortKey(this.relativeName(node));
  }

  /** Delegation points and records (the SOA included) in the image, counted once and kept. */
  totals(): { cuts: number; records: number } {
    if (this.counted === undefined) {
      let cuts = 0;
      let records = 0;
      for (let n = 0; n < this.nodeCount; n++) if (this.flags(n) & NodeFlag.Cut) cuts++;
      for (let r = 0; r < this.rrsetCount; r++) records += this.recordCount(r);
      this.counted = { cuts, records };
    }
    return this.counted;
  }

  flags(node: number): number {
    return this.words[this.nodesAt + node * NODE_WORDS + 1]! >>> 16;
  }

  /** The node's owner name as written, absolute (for transfers and tests; the answer path copies bytes). */
  ownerName(node: number): Name {
    const n = this.nodesAt + node * NODE_WORDS;
    const at = this.words[n]!;
    const length = this.words[n + 1]! & 0xffff;
    const wire = new Uint8Array(length + this.originLength);
    wire.set(this.bytes.subarray(at, at + length));
    wire.set(this.bytes.subarray(this.namesAt, this.namesAt + this.originLength), length);
    return new WireReader(wire).name();
  }

  /** The node's RRsets: indexes `first` to `first + count - 1`, by type code. */
  rrsetRange(node: number): { first: number; count: number } {
    const n = this.nodesAt + node * NODE_WORDS;
    return { first: this.words[n + 2]!, count: this.words[n + 3]! };
  }

  /** The node's RRset of `type`, or -1. */
  rrsetOf(node: number, type: number): number {
    const n = this.nodesAt + node * NODE_WORDS;
    const first = this.words[n + 2]!;
    const end = first + this.words[n + 3]!;
    for (let r = first; r < end; r++) {
      const t = this.words[this.rrsetsAt + r * RRSET_WORDS]! & 0xffff;
      if (t === type) return r;
      if (t > type) return -1;
    }
    return -1;
  }

  rrsetType(rrset: number): number {
    return this.words[this.rrsetsAt + rrset * RRSET_WORDS]! & 0xffff;
  }

  recordCount(rrset: number): number {
    return this.words[this.rrsetsAt + rrset * RRSET_WORDS]! >>> 16;
  }

  ttl(rrset: number): number {
    return this.words[this.rrsetsAt + rrset * RRSET_WORDS + 1]!;
  }

  /** Offset of the RRset's RRSIG block; 0 while the zone is not signed (format 1 writes none yet). */
  signaturesAt(rrset: number): number {
    return this.words[this.rrsetsAt + rrset * RRSET_WORDS + 3]!;
  }

  /** Each record's uncompressed wire RDATA, as views into the image (never to be written). */
  rdata(rrset: number): Uint8Array[] {
    const count = this.recordCount(rrset);
    let pos = this.words[this.rrsetsAt + rrset * RRSET_WORDS + 2]!;
    const out: Uint8Array[] = [];
    for (let i = 0; i < count; i++) {
      const length = (this.bytes[pos]! << 8) | this.bytes[pos + 1]!;
      out.push(this.bytes.subarray(pos + 2, pos + 2 + length));
      pos += 2 + length;
    }
    return out;
  }
}

/**
 * Throws unless the image's sections are where `build` puts them and every index in it stays inside
 * its section: a node's name inside the names, its RRset range inside the RRsets, an RRset's RDATA
 * inside the RDATA, each hash entry a node or empty, and at least one slot empty. Lookups then never
 * read outside the buffer nor probe the hash table forever, whatever the bytes (a damaged image is
 * refused here, not met by a DNS worker while answering). O(nodes + RRsets), no allocation.
 */
function checkLayout(buffer: ArrayBuffer | SharedArrayBuffer): void {
  const bad = (what: string): never => {
    throw new Error(`zone image: ${what}`);
  };
  if (buffer.byteLength % 4 !== 0) bad('length is not a multiple of 4');
  const w = new Uint32Array(buffer);
  const length = buffer.byteLength;
  const nodes = w[H_NODES]!;
  const rrsets = w[H_RRSETS]!;
  const slots = w[H_HASH_SLOTS]!;
  const nodesAt = w[H_NODES_AT]!;
  const rrsetsAt = w[H_RRSETS_AT]!;
  const hashAt = w[H_HASH_AT]!;
  const namesAt = w[H_NAMES_AT]!;
  const rdataAt = w[H_RDATA_AT]!;
  const originLength = w[H_ORIGIN_LENGTH]!;
  if (w[H_KIND]! > ImageKind.Overlay) bad(`unknown kind ${w[H_KIND]}`);
  if ((w[H_KIND] === ImageKind.Overlay) !== (w[H_BASE_ID] !== 0))
    bad('an overlay names its base, a base none');
  if (slots < 8 || (slots & (slots - 1)) !== 0 || slots <= nodes)
    bad('hash slots are not a power of two above the nodes');
  if (
    nodesAt !== HEADER_WORDS * 4 ||
    rrsetsAt !== nodesAt + nodes * NODE_WORDS * 4 ||
    hashAt !== rrsetsAt + rrsets * RRSET_WORDS * 4 ||
    namesAt !== hashAt + slots * 4 ||
    originLength < 1 ||
    originLength > 255 ||
    rdataAt < namesAt + originLength ||
    rdataAt % 4 !== 0 ||
    rdataAt > length
  )
    bad('sections are not where the header says');
  let rrsetEnd = 0;
  for (let i = 0; i < nodes; i++) {
    const n = (nodesAt >>> 2) + i * NODE_WORDS;
    const at = w[n]!;
    const nameLength = w[n + 1]! & 0xffff;
    if (at < namesAt + originLength || at + nameLength > rdataAt || nameLength > 255)
      bad(`node ${i}: name outside the names`);
    const first = w[n + 2]!;
    const count = w[n + 3]!;
    if (first !== rrsetEnd || count > rrsets - first) bad(`node ${i}: RRsets outside the RRsets`);
    rrsetEnd = first + count;
  }
  if (rrsetEnd !== rrsets) bad('RRsets not all held by nodes');
  for (let r = 0; r < rrsets; r++) {
    const at = w[(rrsetsAt >>> 2) + r * RRSET_WORDS + 2]!;
    if (at < rdataAt || at > length) bad(`RRset ${r}: RDATA outside the RDATA`);
  }
  let empty = 0;
  for (let i = 0; i < slots; i++) {
    const entry = w[(hashAt >>> 2) + i]!;
    if (entry === 0) empty++;
    else if (entry > nodes) bad(`hash slot ${i}: no such node`);
  }
  if (empty === 0) bad('hash table has no empty slot');
}

/**
 * The names of an image being built, each once (any letter case), with their RRsets: what `build`
 * lays out. Names are held as their labels below the origin in wire form, as first written (case
 * kept), in one byte arena, and found again by FNV-1a over the lowercased octets (the hash the image's
 * own table uses) in an open-addressing table; nodes and RRsets are indexes into typed arrays, an
 * RRset list per node linked through `nextRRset`. No string is built per name.
 *
 * A build takes one (`take`) and gives it back when done (`give`): the next build reuses its arrays
 * rather than allocating a dozen typed arrays again (at start every zone is built once, most of them
 * small, and those allocations were about a tenth of a 100-record zone's build). Only a set sized for
 * a small zone is kept, emptied of the RRsets it held.
 */
class NameSet {
  /** The set kept for the next build (builds are synchronous: a build nested in another makes its own). */
  private static spare: NameSet | undefined;
  bytes: Uint8Array;
  private used = 0;
  nameAt: Int32Array;
  nameLength: Int32Array;
  hash: Int32Array;
  tombstone: Uint8Array;
  firstRRset: Int32Array;
  private lastRRset: Int32Array;
  rrsetCount: Int32Array;
  count = 0;
  readonly rrsets: RRsetData[] = [];
  rrsetType: Int32Array;
  nextRRset: Int32Array;
  private table: Int32Array;
  private created = false;
  private scratch = new Uint8Array(512);
  private sortKeys = new Uint8Array(0);
  private sortKeyAt = new Int32Array(0);
  private readonly labelStarts = new Int32Array(128);
  private lastOwner: Name | undefined;
  private lastNode = -1;
  private originLength: number;

  /** A name set for a build whose names are below an origin of `originLength` octets, with room for `expected` names. */
  static take(originLength: number, expected: number): NameSet {
    const spare = NameSet.spare;
    if (spare === undefined || spare.nameAt.length < expected) return new NameSet(originLength, expected);
    NameSet.spare = undefined;
    spare.originLength = originLength;
    spare.used = 0;
    spare.count = 0;
    spare.created = false;
    spare.lastNode = -1;
    spare.table.fill(0);
    return spare;
  }

  /** Done with the set: kept for the next build when small, holding no RRset of this one either way. */
  give(): void {
    this.rrsets.length = 0;
    this.lastOwner = undefined;
    if (
      this.nameAt.length <= SPARE_NAMES &&
      this.rrsetType.length <= SPARE_NAMES * 4 &&
      this.bytes.length <= SPARE_NAMES * 32 &&
      this.sortKeys.length <= SPARE_NAMES * 32 &&
      this.sortKeyAt.length <= SPARE_NAMES
    )
      NameSet.spare = this;
  }

  private constructor(originLength: number, expected: number) {
    this.originLength = originLength;
    const n = Math.max(16, expected);
    this.bytes = new Uint8Array(n * 8);
    this.nameAt = new Int32Array(n);
    this.nameLength = new Int32Array(n);
    this.hash = new Int32Array(n);
    this.tombstone = new Uint8Array(n);
    this.firstRRset = new Int32Array(n);
    this.lastRRset = new Int32Array(n);
    this.rrsetCount = new Int32Array(n);
    this.rrsetType = new Int32Array(n);
    this.nextRRset = new Int32Array(n);
    let slots = 16;
    while (slots < n * 2) slots *= 2;
    this.table = new Int32Array(slots);
  }

  /**
   * Adds an RRset of type code `type` to the node of its owner. A second RRset of a name and type
   * replaces the first in its place, as `ZoneSnapshot.build` keeps the last: content read straight
   * from what was programmed makes the image the snapshot of the same content would. The name is
   * spelled as the RRset of the node's first type that is kept spells it (the snapshot's first RRset
   * of that node).
   */
  add(rrset: RRsetData, type: number): void {
    const owner = rrset.owner;
    const node = owner === this.lastOwner ? this.lastNode : this.ownerNode(owner);
    this.lastOwner = owner;
    this.lastNode = node;
    for (let r = this.firstRRset[node]!; r !== -1; r = this.nextRRset[r]!) {
      if (this.rrsetType[r] !== type) continue;
      const before = this.rrsets[r]!.owner;
      this.rrsets[r] = rrset;
      if (r === this.firstRRset[node] && before !== owner) this.respell(node, owner);
      return;
    }
    const r = this.rrsets.length;
    if (r === this.rrsetType.length) {
      this.rrsetType = grown(this.rrsetType);
      this.nextRRset = grown(this.nextRRset);
    }
    this.rrsets.push(rrset);
    this.rrsetType[r] = type;
    this.nextRRset[r] = -1;
    if (this.firstRRset[node] === -1) this.firstRRset[node] = r;
    else this.nextRRset[this.lastRRset[node]!] = r;
    this.lastRRset[node] = r;
    this.rrsetCount[node]!++;
  }

  /**
   * Writes the node's labels as `owner` spells them (the same name in another letter case: the same
   * length and hash). Every node has its own copy of its name while RRsets are added (empty
   * non-terminals, which share their child's, come after).
   */
  private respell(node: number, owner: Name): void {
    if (owner.length + 1 > this.scratch.length) this.scratch = new Uint8Array(owner.length * 2 + 2);
    const relative = writeNameWire(owner, this.scratch, 0) - this.originLength;
    const at = this.nameAt[node]!;
    for (let i = 0; i < relative; i++) this.bytes[at + i] = this.scratch[i]!;
  }

  /** Adds a name without RRsets (an overlay's empty non-terminal or tombstone) unless it is there. */
  addName(name: Name, tombstone: boolean): void {
    const node = this.ownerNode(name);
    if (this.created && tombstone) this.tombstone[node] = 1;
  }

  /** Adds every missing name between a node and the apex (RFC 4592 §2.2.2), as its first descendant spells it. */
  addEmptyNonTerminals(): void {
    const count = this.count;
    for (let node = 0; node < count; node++) {
      let at = this.nameAt[node]!;
      let length = this.nameLength[node]!;
      while (length > 0) {
        const label = this.bytes[at]! + 1;
        if (label > length) break;
        at += label;
        length -= label;
        // The parent's labels are the end of the child's: no copy.
        this.find(this.bytes, at, length, false);
        if (!this.created) break;
      }
    }
  }

  /** The nodes in RFC 4034 §6.1 canonical order. */
  sorted(): number[] {
    const count = this.count;
    let total = 0;
    for (let i = 0; i < count; i++) total += this.nameLength[i]!;
    // Per node its labels rightmost first, each as its length octet and its lowercased octets (in
    // arrays kept with the set, as its others are).
    if (this.sortKeys.length < total) this.sortKeys = new Uint8Array(total * 2);
    if (this.sortKeyAt.length < count) this.sortKeyAt = new Int32Array(count * 2);
    const keys = this.sortKeys;
    const keyAt = this.sortKeyAt;
    const starts = this.labelStarts;
    const bytes = this.bytes;
    let p = 0;
    for (let i = 0; i < count; i++) {
      keyAt[i] = p;
      const at = this.nameAt[i]!;
      const end = at + this.nameLength[i]!;
      let labels = 0;
      for (let q = at; q < end; q += bytes[q]! + 1) starts[labels++] = q;
      for (let l = labels - 1; l >= 0; l--) {
        const q = starts[l]!;
        const length = bytes[q]!;
        keys[p++] = length;
        for (let k = 1; k <= length; k++) keys[p++] = lower(bytes[q + k]!);
      }
    }
    const lengths = this.nameLength;
    const order: number[] = new Array(count);
    for (let i = 0; i < count; i++) order[i] = i;
    // Content read in canonical order (a zone model's RRsets: every first program) made its nodes
    // in that order, the empty non-terminals last: the run in order from the first node is kept as
    // it is, the rest sorted and merged into it. Names are distinct, so no two compare equal and the
    // order is the one a sort of all of them gives.
    let run = 1;
    while (run < count && compareKeys(keys, keyAt, lengths, run - 1, run) < 0) run++;
    if (run >= count) return order;
    const rest = order.slice(run);
    rest.sort((a, b) => compareKeys(keys, keyAt, lengths, a, b));
    let i = 0;
    let j = 0;
    let out = 0;
    while (i < run && j < rest.length) {
      const b = rest[j]!;
      if (compareKeys(keys, keyAt, lengths, i, b) < 0) order[out++] = i++;
      else {
        order[out++] = b;
        j++;
      }
    }
    while (i < run) order[out++] = i++;
    while (j < rest.length) order[out++] = rest[j++]!;
    return order;
  }

  /** The node of an owner name (added when new), from its wire form. */
  private ownerNode(owner: Name): number {
    if (owner.length >= MAX_NAME_LENGTH && nameWireLength(owner) > MAX_NAME_LENGTH)
      encodeNameUncompressed(owner); // throws NAME_TOO_LONG
    if (owner.length + 1 > this.scratch.length) this.scratch = new Uint8Array(owner.length * 2 + 2);
    const relative = writeNameWire(owner, this.scratch, 0) - this.originLength;
    if (relative < 0) throw new RangeError(`zone image: ${owner} is not a name of the zone`);
    return this.find(this.scratch, 0, relative, true);
  }

  /**
   * The node of the name whose labels below the origin are `from[start, start + length)`; a new node
   * when there is none (`created`), its name copied into the arena when `copy`, else `from` is the
   * arena itself.
   */
  private find(from: Uint8Array, start: number, length: number, copy: boolean): number {
    // As an int32, like the table's entries (`hashName` gives the same bits unsigned).
    let h = 0x811c9dc5 | 0;
    for (let i = 0; i < length; i++) {
      h ^= lower(from[start + i]!);
      h = Math.imul(h, 0x01000193);
    }
    const table = this.table;
    const mask = table.length - 1;
    const bytes = this.bytes;
    let slot = h & mask;
    for (;;) {
      const entry = table[slot]!;
      if (entry === 0) break;
      const node = entry - 1;
      if (this.hash[node] === h && this.nameLength[node] === length) {
        const at = this.nameAt[node]!;
        let same = true;
        for (let i = 0; i < length; i++) {
          if (lower(bytes[at + i]!) !== lower(from[start + i]!)) {
            same = false;
            break;
          }
        }
        if (same) {
          this.created = false;
          return node;
        }
      }
      slot = (slot + 1) & mask;
    }
    const node = this.count++;
    if (node === this.nameAt.length) this.growNodes();
    let at = start;
    if (copy) {
      if (this.used + length > this.bytes.length) {
        const next = new Uint8Array(Math.max(this.bytes.length * 2, this.used + length));
        next.set(this.bytes.subarray(0, this.used));
        this.bytes = next;
      }
      at = this.used;
      const arena = this.bytes;
      for (let i = 0; i < length; i++) arena[at + i] = from[start + i]!;
      this.used += length;
    }
    this.nameAt[node] = at;
    this.nameLength[node] = length;
    this.hash[node] = h;
    this.firstRRset[node] = -1;
    this.rrsetCount[node] = 0;
    this.tombstone[node] = 0;
    this.created = true;
    if (this.count * 2 > this.table.length) this.rehash();
    else this.table[slot] = node + 1;
    return node;
  }

  private growNodes(): void {
    this.nameAt = grown(this.nameAt);
    this.nameLength = grown(this.nameLength);
    this.hash = grown(this.hash);
    this.firstRRset = grown(this.firstRRset);
    this.lastRRset = grown(this.lastRRset);
    this.rrsetCount = grown(this.rrsetCount);
    const tombstone = new Uint8Array(this.tombstone.length * 2);
    tombstone.set(this.tombstone);
    this.tombstone = tombstone;
  }

  /** A table twice the size, every node (the last one added included) placed again. */
  private rehash(): void {
    const table = new Int32Array(this.table.length * 2);
    const mask = table.length - 1;
    for (let node = 0; node < this.count; node++) {
      let slot = this.hash[node]! & mask;
      while (table[slot] !== 0) slot = (slot + 1) & mask;
      table[slot] = node + 1;
    }
    this.table = table;
  }
}

/**
 * Most names a name set kept for the next build has room for (about 32 octets of names each): at
 * most about 0.2 MB stays allocated between builds; a big zone's arrays (megabytes) are let go.
 */
const SPARE_NAMES = 2048;

function grown(array: Int32Array): Int32Array {
  const next = new Int32Array(array.length * 2);
  next.set(array);
  return next;
}

let imageIds = 0;

/** Ids of built images, unique within this process (1 to 2^32 - 1, then around again). */
function nextImageId(): number {
  imageIds = (imageIds % 0xffffffff) + 1;
  return imageIds;
}

/**
 * The writer `build` encodes RDATA into (builds are synchronous, so one serves them all); replaced
 * after a build that grew it past 1 MiB, so a large zone does not keep its size allocated.
 */
let scratch: WireWriter | undefined;

/**
 * Adds the RRsets of a name set's node to the image's order (`order`, from `at`: by type code, RRsets
 * of one type in the order given) and encodes their RDATA into `writer` (per record a 16-bit length
 * and the uncompressed wire RDATA; `starts` holds each RRset's offset there); returns the RRsets
 * placed so far. A function of its own, called per node, not a loop inside the loop over the nodes:
 * a big zone's first image is built by code that is not optimised yet; V8 may optimise such a loop
 * while it runs (on-stack replacement) at the inner loop, then leave that code each time the inner
 * loop ends ("exit from OSR'd inner loop"), a deoptimisation per node. Seen with `--single-threaded`
 * (25,860 in the first image of a zone of 100,000 names, a third of its time); as `serve` runs,
 * compiling on V8's threads, the first image took 10 % fewer instructions (docs/benchmarks.md,
 * fifteenth round).
 */
function encodeNode(
  names: NameSet,
  node: number,
  order: Int32Array,
  starts: Int32Array,
  at: number,
  writer: WireWriter,
): number {
  const list = names.rrsets;
  const first = at;
  let total = at;
  for (let r = names.firstRRset[node]!; r !== -1; r = names.nextRRset[r]!) {
    // By type code, RRsets of one type in the order given (an insertion sort: a node has a few).
    const type = names.rrsetType[r]!;
    let k = total++;
    while (k > first && names.rrsetType[order[k - 1]!]! > type) {
      order[k] = order[k - 1]!;
      k--;
    }
    order[k] = r;
  }
  for (let k = first; k < total; k++) {
    const rrset = list[order[k]!]!;
    if (rrset.rdata.length > 0xffff) throw new RangeError(`RRset ${rrset.owner} ${rrset.type} is too large`);
    starts[k] = writer.length;
    for (const r of rrset.rdata) {
      const at = writer.length;
      writer.u16(0);
      encodeRdata(r, writer);
      // RFC 1035 §3.2.1: RDLENGTH is 16 bits. A longer record (a TXT of 65,535 multi-byte
      // characters passes the schema) would have its length cut here and every later record of
      // the RRset read from the wrong offset: refuse the image, the zone goes as objects.
      const length = writer.length - at - 2;
      if (length > 0xffff) {
        writer.reset();
        throw new RangeError(
          `RRset ${rrset.owner} ${rrset.type}: RDATA of ${length} octets exceeds 65535 (RFC 1035 §3.2.1)`,
        );
      }
      writer.patchU16(at, length);
    }
  }
  return total;
}

/** Where `writeNode` writes in an image being laid out (`ZoneImage.laidOut`), and what it reads. */
interface NodeLayout {
  bytes: Uint8Array;
  words: Uint32Array;
  /** The RRsets in image order and each one's RDATA offset (`encodeNode`). */
  order: Int32Array;
  starts: Int32Array;
  rrsetsAt: number;
  rdataAt: number;
  nodesAt: number;
  hashWords: number;
  mask: number;
}

/**
 * Writes the `i`th node of the image (the name set's `node`): its name at `namePos`, its RRsets from
 * the `r`th on, its node words and its hash slot; returns the RRsets written so far. A function of
 * its own for the reason `encodeNode` is.
 */
function writeNode(
  names: NameSet,
  node: number,
  i: number,
  namePos: number,
  r: number,
  at: NodeLayout,
): number {
  const { bytes, words, order, starts } = at;
  const list = names.rrsets;
  const arena = names.bytes;
  const nameLength = names.nameLength[node]!;
  const from = names.nameAt[node]!;
  for (let k = 0; k < nameLength; k++) bytes[namePos + k] = arena[from + k]!;
  const first = r;
  let ns = false;
  for (let end = first + names.rrsetCount[node]!; r < end; r++) {
    const rrset = list[order[r]!]!;
    const type = names.rrsetType[order[r]!]!;
    if (type === RRType.NS) ns = true;
    const w = (at.rrsetsAt >>> 2) + r * RRSET_WORDS;
    words[w] = type | (rrset.rdata.length << 16);
    words[w + 1] = rrset.ttl >>> 0;
    words[w + 2] = at.rdataAt + starts[r]!;
    words[w + 3] = 0;
  }
  let flags = 0;
  const apex = nameLength === 0;
  if (apex) flags |= NodeFlag.Apex;
  if (names.tombstone[node] === 1) flags |= NodeFlag.Tombstone;
  else if (r === first) flags |= NodeFlag.EmptyNonTerminal;
  if (!apex && ns) flags |= NodeFlag.Cut;
  if (nameLength >= 2 && arena[from] === 1 && arena[from + 1] === 0x2a /* * */) flags |= NodeFlag.Wildcard;
  const n = (at.nodesAt >>> 2) + i * NODE_WORDS;
  words[n] = namePos;
  words[n + 1] = nameLength | (flags << 16);
  words[n + 2] = first;
  words[n + 3] = r - first;
  const hashWords = at.hashWords;
  const mask = at.mask;
  let slot = names.hash[node]! & mask;
  while (words[hashWords + slot] !== 0) slot = (slot + 1) & mask;
  words[hashWords + slot] = i + 1;
  return r;
}

function rdataScratch(): WireWriter {
  if (scratch === undefined || scratch.length > 1 << 20) {
    scratch = new WireWriter(64 * 1024);
    scratch.compression = false;
  }
  scratch.reset();
  return scratch;
}

/**
 * The order of `canonicalSortKey` (RFC 4034 §6.1) for names below one origin, from their labels below
 * it in wire form: labels rightmost first, octets lowercased and written as (octet + 1), labels
 * separated by U+0000.
 */
function relativeSortKey(relative: Uint8Array): string {
  const starts: number[] = [];
  for (let p = 0; p < relative.length; p += relative[p]! + 1) starts.push(p);
  let out = '';
  const codes: number[] = [];
  for (let i = starts.length - 1; i >= 0; i--) {
    const at = starts[i]!;
    const length = relative[at]!;
    codes.length = 0;
    if (i !== starts.length - 1) codes.push(0);
    for (let j = 1; j <= length; j++) codes.push(lower(relative[at + j]!) + 1);
    out += String.fromCharCode.apply(null, codes);
  }
  return out;
}

/**
 * The order of two nodes of a name set by their sort keys (`NameSet.sorted`): labels compared
 * rightmost first as octet strings, a label before any longer one it begins, a name before the names
 * below it (RFC 4034 §6.1).
 */
function compareKeys(keys: Uint8Array, keyAt: Int32Array, lengths: Int32Array, a: number, b: number): number {
  let pa = keyAt[a]!;
  let pb = keyAt[b]!;
  const ea = pa + lengths[a]!;
  const eb = pb + lengths[b]!;
  while (pa < ea && pb < eb) {
    const la = keys[pa]!;
    const lb = keys[pb]!;
    const m = Math.min(la, lb);
    for (let k = 1; k <= m; k++) {
      const d = keys[pa + k]! - keys[pb + k]!;
      if (d !== 0) return d;
    }
    if (la !== lb) return la - lb;
    pa += la + 1;
    pb += lb + 1;
  }
  return ea - pa - (eb - pb);
}

function lower(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c + 0x20 : c;
}

/** FNV-1a over the ASCII-lowercased octets. */
function hashName(bytes: Uint8Array, start: number, length: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < length; i++) {
    h ^= lower(bytes[start + i]!);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
