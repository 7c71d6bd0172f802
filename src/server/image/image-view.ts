import { nameKey } from '../../dns/name.ts';
import { decodeRdata, type Rdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
import { WireReader } from '../../dns/wire.ts';
import type { ZoneView } from '../answer.ts';
import type { ServedRRset, ZoneNode } from '../zone-snapshot.ts';
import { NodeFlag, type ZoneImage } from './zone-image.ts';

/**
 * The answer algorithm's view (`ZoneView`) of a zone image (ADR 0020 step 2): names are looked up in
 * the image, and a node is turned into the objects `answer.ts` and the encoder read the first time it
 * is asked for, then kept. This is the reference the image's answers are tested against (the same
 * answers as `ZoneSnapshot`); answering from images without objects per node is the next step.
 */
export class ZoneImageView implements ZoneView {
  readonly image: ZoneImage;
  readonly originKey: string;
  readonly negativeSoa: ServedRRset;
  readonly cutCount: number;
  private readonly nodes = new Map<string, ZoneNode | null>();

  constructor(image: ZoneImage) {
    this.image = image;
    this.originKey = nameKey(image.origin);
    let cuts = 0;
    for (let n = 0; n < image.nodeCount; n++) if (image.flags(n) & NodeFlag.Cut) cuts++;
    this.cutCount = cuts;
    const apex = this.node(this.originKey);
    const soa = apex?.rrsets.get(RRType.SOA);
    if (!soa) throw new Error(`zone image of ${image.origin} has no SOA at its apex`);
    const minimum = (soa.rdata[0] as Extract<Rdata, { type: 'SOA' }>).minimum;
    // RFC 2308 §5: negative answers carry the SOA with TTL = min(SOA TTL, SOA MINIMUM).
    this.negativeSoa = { ...soa, ttl: Math.min(soa.ttl, minimum) };
  }

  node(key: string): ZoneNode | undefined {
    const known = this.nodes.get(key);
    if (known !== undefined) return known ?? undefined;
    const image = this.image;
    const n = image.find(key);
    if (n < 0 || image.flags(n) & NodeFlag.EmptyNonTerminal) {
      this.nodes.set(key, null);
      return undefined;
    }
    const owner = image.ownerName(n);
    const rrsets = new Map<number, ServedRRset>();
    const { first, count } = image.rrsetRange(n);
    for (let r = first; r < first + count; r++) {
      const type = image.rrsetType(r);
      const rdata = image
        .rdata(r)
        .map((bytes) => decodeRdata(type, new WireReader(bytes), bytes.length) as Rdata);
      rrsets.set(type, { owner, type, ttl: image.ttl(r), rdata });
    }
    const node: ZoneNode = { owner, rrsets, cut: (image.flags(n) & NodeFlag.Cut) !== 0 };
    this.nodes.set(key, node);
    return node;
  }

  isEmptyNonTerminal(key: string): boolean {
    const n = this.image.find(key);
    return n >= 0 && (this.image.flags(n) & NodeFlag.EmptyNonTerminal) !== 0;
  }
}
