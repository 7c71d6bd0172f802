import { encodeNameUncompressed, type Name, nameKey } from '../../dns/name.ts';
import { decodeRdata, type Rdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
import { WireReader } from '../../dns/wire.ts';
import type { ServedRRset } from '../served-rrset.ts';
import { ZoneJournal } from '../transfer/journal.ts';
import type { TransferPolicy } from '../transfer/transfer-policy.ts';
import type { ZoneNode } from '../zone-snapshot.ts';
import type { ServedZone } from '../zone-table.ts';
import { ImageKind, NodeFlag, ZoneImage } from './zone-image.ts';

/**
 * Decoded nodes kept by all image zones of a process together (ADR 0020 step 3). When the count
 * passes this, every image zone drops what it decoded and starts again: the memory for decoded
 * nodes is bounded whatever the number of zones and names (about 1 KiB per node measured on the
 * bench zone, so about 10 MiB), and a name asked for often is decoded again at most once per
 * emptying. The response cache in front of it holds the answers to frequent questions anyway.
 */
export const DECODED_NODE_LIMIT = 10_000;

/** Types whose RDATA holds names the encoder compresses or registers, or that answers read (CNAME, ALIAS, additional targets). */
const NAMED_RDATA: ReadonlySet<number> = new Set([
  RRType.NS,
  RRType.CNAME,
  RRType.SOA,
  RRType.PTR,
  RRType.MX,
  RRType.SRV,
  RRType.NAPTR,
  RRType.SVCB,
  RRType.HTTPS,
  RRType.ALIAS,
]);

/** What the decoded-node cache of every image zone of this process holds. */
const decoded = { count: 0, holders: new Set<ImageZone>() };

/** Nodes decoded and kept now, over all image zones of this process. */
export function decodedNodeCount(): number {
  return decoded.count;
}

/**
 * An RRset read from a zone image. RDATA without names is not decoded: `wire` holds views into the
 * image, which the encoder copies into responses as they are; `rdata` is decoded only when someone
 * reads it (a selection policy, a wildcard synthesis, a transfer) and then kept. RDATA with names is
 * decoded when the RRset is made, since the encoder writes those names with compression.
 */
export class ImageRRset implements ServedRRset {
  readonly owner: Name;
  readonly type: number;
  readonly ttl: number;
  readonly wire: readonly Uint8Array[] | null;
  private decodedRdata: Rdata[] | undefined;

  constructor(owner: Name, type: number, ttl: number, blocks: Uint8Array[]) {
    this.owner = owner;
    this.type = type;
    this.ttl = ttl;
    if (NAMED_RDATA.has(type)) {
      this.wire = null;
      this.decodedRdata = decodeAll(type, blocks);
    } else {
      this.wire = blocks;
    }
  }

  get rdata(): Rdata[] {
    this.decodedRdata ??= decodeAll(this.type, this.wire!);
    return this.decodedRdata;
  }
}

function decodeAll(type: number, blocks: readonly Uint8Array[]): Rdata[] {
  return blocks.map((bytes) => decodeRdata(type, new WireReader(bytes), bytes.length) as Rdata);
}

/**
 * A zone served from its image (ADR 0020 step 3), or from a base image and an overlay of the names
 * changed since (step 5): what a DNS thread holds of a zone instead of a `ZoneSnapshot`.
 * Lookups go to the overlay's hash table first and then to the base's; a node the answer algorithm
 * asks for is made into objects (an owner string, one `ServedRRset` per type whose RDATA without
 * names stays a view into the image) and kept in a cache bounded for the whole process
 * (`DECODED_NODE_LIMIT`). Names that do not exist are never cached, so a random-subdomain flood costs
 * hash lookups only.
 *
 * The zone is immutable: a change is a new overlay (or a new image) and a new `ImageZone`, which takes
 * over the previous one's IXFR journal (`journal`). Answers are the same bytes as from the
 * `ZoneSnapshot` of the same content (differential tests in image-zone.test.ts, overlay.test.ts and
 * query.fuzz.test.ts).
 */
export class ImageZone implements ServedZone {
  /** The base image (a whole zone). */
  readonly image: ZoneImage;
  /** The names changed since `image`, over it (ADR 0020 §4); undefined: the base is the zone. */
  readonly overlay: ZoneImage | undefined;
  readonly origin: Name;
  readonly originKey: string;
  readonly serial: number;
  readonly soa: ServedRRset;
  readonly negativeSoa: ServedRRset;
  readonly cutCount: number;
  readonly recordCount: number;
  transfers: TransferPolicy | undefined;
  readonly journal: ZoneJournal;
  private readonly nodes = new Map<string, ZoneNode>();
  private lastKey: string | undefined;
  private lastNode = -1;
  private lastImage: ZoneImage;

  constructor(image: ZoneImage, transfers?: TransferPolicy, journal?: ZoneJournal, overlay?: ZoneImage) {
    if (image.kind !== ImageKind.Base) throw new Error(`zone image of ${image.origin} is not a base image`);
    if (overlay !== undefined && (overlay.kind !== ImageKind.Overlay || overlay.baseId !== image.id))
      throw new Error(`zone image of ${image.origin}: the overlay is not one over this base`);
    this.image = image;
    this.overlay = overlay;
    this.lastImage = image;
    this.origin = image.origin;
    this.originKey = nameKey(image.origin);
    this.serial = (overlay ?? image).serial;
    this.transfers = transfers;
    this.journal = journal ?? new ZoneJournal(transfers?.journalSize ?? 0);
    let { cuts, records } = image.totals();
    if (overlay !== undefined) {
      // Each overlay node replaces the base's node of its name whole.
      for (let o = 0; o < overlay.nodeCount; o++) {
        const name = overlay.relativeName(o);
        const b = image.findRelative(name, 0, name.length);
        if (b >= 0) {
          if (image.flags(b) & NodeFlag.Cut) cuts--;
          records -= nodeRecords(image, b);
        }
      }
      const added = overlay.totals();
      cuts += added.cuts;
      records += added.records;
    }
    this.cutCount = cuts;
    this.recordCount = records;
    const top = overlay ?? image;
    const apex = top.find(image.origin);
    const soaAt = apex < 0 ? -1 : top.rrsetOf(apex, RRType.SOA);
    if (soaAt < 0) throw new Error(`zone image of ${image.origin} has no SOA at its apex`);
    this.soa = rrsetOf(top, top.ownerName(apex), soaAt);
    const minimum = (this.soa.rdata[0] as Extract<Rdata, { type: 'SOA' }>).minimum;
    // RFC 2308 §5: negative answers carry the SOA with TTL = min(SOA TTL, SOA MINIMUM).
    this.negativeSoa = {
      owner: this.soa.owner,
      type: RRType.SOA,
      ttl: Math.min(this.soa.ttl, minimum),
      rdata: this.soa.rdata,
      wire: null,
    };
  }

  /** Reads an image (and an overlay over it) received from the main thread (see `ZoneImage.from`). */
  static from(
    buffer: ArrayBuffer | SharedArrayBuffer,
    transfers?: TransferPolicy,
    journal?: ZoneJournal,
    overlay?: ArrayBuffer | SharedArrayBuffer,
  ): ImageZone {
    return new ImageZone(
      ZoneImage.from(buffer),
      transfers,
      journal,
      overlay === undefined ? undefined : ZoneImage.from(overlay),
    );
  }

  node(key: string): ZoneNode | undefined {
    const known = this.nodes.get(key);
    if (known !== undefined) return known;
    const n = this.find(key);
    const image = this.lastImage;
    if (n < 0 || image.flags(n) & NodeFlag.EmptyNonTerminal) return undefined;
    const node = decodeNode(image, n);
    if (++decoded.count > DECODED_NODE_LIMIT) {
      for (const zone of decoded.holders) zone.nodes.clear();
      decoded.holders.clear();
      decoded.count = 1;
    }
    this.nodes.set(key, node);
    decoded.holders.add(this);
    return node;
  }

  isEmptyNonTerminal(key: string): boolean {
    const n = this.find(key);
    return n >= 0 && (this.lastImage.flags(n) & NodeFlag.EmptyNonTerminal) !== 0;
  }

  /**
   * The node for a key in the overlay, or else in the base (`lastImage` says which), or -1; an
   * overlay's tombstone hides the base's node. Remembers the last one: the answer algorithm asks
   * `node` and then `isEmptyNonTerminal` of the same name when it holds no RRsets (every NXDOMAIN does).
   */
  private find(key: string): number {
    if (key === this.lastKey) return this.lastNode;
    let image = this.image;
    let n: number;
    const overlay = this.overlay;
    if (overlay === undefined) n = image.find(key);
    else {
      const wire = encodeNameUncompressed(key);
      n = overlay.findWire(wire);
      if (n >= 0) {
        image = overlay;
        if (overlay.flags(n) & NodeFlag.Tombstone) n = -1;
      } else n = image.findWire(wire);
    }
    this.lastKey = key;
    this.lastNode = n;
    this.lastImage = image;
    return n;
  }

  /**
   * Every RRset but the SOA, in canonical order of owners (AXFR, RFC 5936 §2.2): the base's nodes
   * that the overlay does not replace, merged with the overlay's; not cached.
   */
  *transferRRsets(): Generator<ServedRRset> {
    const base = this.image;
    const overlay = this.overlay;
    const transfer = function* (image: ZoneImage, n: number): Generator<ServedRRset> {
      const { first, count } = image.rrsetRange(n);
      if (count === 0) return;
      const owner = image.ownerName(n);
      for (let r = first; r < first + count; r++) {
        if (image.rrsetType(r) !== RRType.SOA) yield rrsetOf(image, owner, r);
      }
    };
    if (overlay === undefined) {
      for (let n = 0; n < base.nodeCount; n++) yield* transfer(base, n);
      return;
    }
    let o = 0;
    const overlayKey = (i: number) => (i < overlay.nodeCount ? overlay.sortKey(i) : undefined);
    let next = overlayKey(0);
    for (let n = 0; n < base.nodeCount; n++) {
      const name = base.relativeName(n);
      if (next !== undefined) {
        const key = base.sortKey(n);
        while (next !== undefined && next < key) {
          yield* transfer(overlay, o);
          next = overlayKey(++o);
        }
      }
      if (overlay.findRelative(name, 0, name.length) >= 0) continue;
      yield* transfer(base, n);
    }
    for (; o < overlay.nodeCount; o++) yield* transfer(overlay, o);
  }

  /** Drops what this zone decoded (it is no longer served). */
  release(): void {
    if (!decoded.holders.delete(this)) return;
    decoded.count -= this.nodes.size;
    this.nodes.clear();
  }
}

function nodeRecords(image: ZoneImage, n: number): number {
  const { first, count } = image.rrsetRange(n);
  let records = 0;
  for (let r = first; r < first + count; r++) records += image.recordCount(r);
  return records;
}

function decodeNode(image: ZoneImage, n: number): ZoneNode {
  const owner = image.ownerName(n);
  const rrsets = new Map<number, ServedRRset>();
  const { first, count } = image.rrsetRange(n);
  for (let r = first; r < first + count; r++) rrsets.set(image.rrsetType(r), rrsetOf(image, owner, r));
  return { owner, rrsets, cut: (image.flags(n) & NodeFlag.Cut) !== 0 };
}

function rrsetOf(image: ZoneImage, owner: Name, r: number): ServedRRset {
  return new ImageRRset(owner, image.rrsetType(r), image.ttl(r), image.rdata(r));
}
