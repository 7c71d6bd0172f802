import { labelCount, type Name, nameKey, parentName } from '../../dns/name.ts';
import { RRType } from '../../dns/rrtype.ts';
import type { PublishedByName, RRsetData } from '../../zones/rrset.ts';
import type { SoaFields } from '../../zones/soa.ts';
import type { ServedRRset } from '../served-rrset.ts';
import type { ZoneNode } from '../zone-snapshot.ts';
import { addChangedNames, buildOverlay, type OverlaySource, overlayLimit } from './overlay.ts';
import { ZoneImage } from './zone-image.ts';

/** A zone as the builder reads it (a `ZoneSnapshot`, or the content of a change: `ContentSource`). */
export interface ImageSource extends OverlaySource {
  rrsets(): Iterable<RRsetData>;
}

/** What serves a zone at `serial`: a base image and, when names changed since it, an overlay over it. */
export interface ZoneImages {
  readonly serial: number;
  readonly image: ZoneImage;
  readonly overlay: ZoneImage | undefined;
}

interface Held extends ZoneImages {
  /** Every name changed since `image` was built, and their ancestors (`addChangedNames`). */
  readonly changed: Map<string, Name>;
}

/**
 * Builds the images DNS workers answer from (ADR 0020 §4), once per serial for all of them: a zone's
 * first image is built whole; a change becomes an overlay of the names changed since that base,
 * small whatever the zone's size; once the overlay holds more names than `overlayLimit` of its
 * base, the caller merges (`merge`, a new base built whole) after the change is served, so no change
 * waits for a whole build. A change that alone passes the limit (a bulk change) is built whole at once.
 * Holds the last images per zone (about 60 bytes per record set) so that a worker that starts or asks
 * again gets them without a build.
 */
export class ZoneImageBuilder {
  private readonly zones = new Map<string, Held>();
  private readonly shared: boolean;

  constructor(options: { shared?: boolean } = {}) {
    this.shared = options.shared === true;
  }

  /** The images of `zone` at its serial: those held, or a base built whole now. Throws if no image can hold it. */
  current(zone: ImageSource): ZoneImages {
    const held = this.zones.get(zone.originKey);
    if (held !== undefined && held.serial === zone.serial) return held;
    return this.merge(zone);
  }

  /**
   * The overlay for `zone` (at its new serial) after a change from `fromSerial` that touched
   * `owners`. Undefined when the images held are not at `fromSerial` or the change alone passes the
   * overlay limit: the caller then sends the zone whole (`current`). Throws if no image can hold it.
   */
  change(zone: ImageSource, fromSerial: number, owners: Iterable<Name>): ZoneImage | undefined {
    const held = this.zones.get(zone.originKey);
    if (held === undefined || held.serial !== fromSerial) return undefined;
    const limit = overlayLimit(held.image.nodeCount);
    const touched = new Map<string, Name>();
    addChangedNames(touched, owners, zone.origin);
    if (touched.size > limit) return undefined;
    const changed = new Map(held.changed);
    for (const [key, name] of touched) changed.set(key, name);
    let overlay: ZoneImage;
    try {
      overlay = buildOverlay(zone, held.image, changed, { shared: this.shared });
    } catch (e) {
      this.zones.delete(zone.originKey);
      throw e;
    }
    this.zones.set(zone.originKey, { serial: zone.serial, image: held.image, overlay, changed });
    return overlay;
  }

  /** Whether the overlay held for the zone passed its limit: time to `merge`. */
  needsMerge(origin: Name): boolean {
    const held = this.zones.get(nameKey(origin));
    return held?.overlay !== undefined && held.overlay.nodeCount > overlayLimit(held.image.nodeCount);
  }

  /** A new base of `zone` as it is now, built whole (the overlay merged into it). */
  merge(zone: ImageSource): ZoneImages {
    this.zones.delete(zone.originKey);
    const image = ZoneImage.build(zone.origin, zone.soaFields, zone.serial, zone.rrsets(), {
      shared: this.shared,
    });
    const held: Held = { serial: zone.serial, image, overlay: undefined, changed: new Map() };
    this.zones.set(zone.originKey, held);
    return held;
  }

  forget(origin: Name): void {
    this.zones.delete(nameKey(origin));
  }
}

/**
 * A zone's content as plain RRsets (what the control plane programs), read as the builder reads a
 * `ZoneSnapshot`: where the zone is held only as images (the main thread of the DNS thread pool, ADR
 * 0020 step 4), the overlay of a change is built from the programmed content, with no objects of the
 * zone kept. With `byName` (the zone model the content comes from) a name is looked up there, so an
 * overlay of a few names costs a few look-ups; without it the names are indexed on the first look-up,
 * one pass over the content (about 120 ms and 40 MiB of garbage for 100,000 record sets, per change):
 * the content is read twice at most (that pass, and a base built whole), never decoded from an image.
 */
export class ContentSource implements ImageSource {
  readonly origin: Name;
  readonly originKey: string;
  readonly serial: number;
  readonly soaFields: SoaFields;
  private readonly content: () => Iterable<RRsetData>;
  private readonly byName: PublishedByName | undefined;
  private nodes: Map<string, ZoneNode> | undefined;
  private ancestors: Set<string> | undefined;

  constructor(
    origin: Name,
    soa: SoaFields,
    serial: number,
    content: () => Iterable<RRsetData>,
    byName?: PublishedByName,
  ) {
    this.origin = origin;
    this.originKey = nameKey(origin);
    this.serial = serial;
    this.soaFields = soa;
    this.content = content;
    this.byName = byName;
  }

  rrsets(): Iterable<RRsetData> {
    return this.content();
  }

  node(key: string): ZoneNode | undefined {
    if (this.byName === undefined) return this.index().get(key);
    const published = this.byName.publishedAt(key);
    if (published.length === 0) return undefined;
    const node: ZoneNode = { owner: published[0]!.owner, rrsets: new Map(), cut: false };
    for (const r of published) addRRset(node, r, key, this.originKey);
    return node;
  }

  isEmptyNonTerminal(key: string): boolean {
    if (this.byName !== undefined) return this.byName.isEmptyNonTerminal(key);
    this.index();
    return !this.nodes!.has(key) && this.ancestors!.has(key);
  }

  private index(): Map<string, ZoneNode> {
    if (this.nodes !== undefined) return this.nodes;
    const nodes = new Map<string, ZoneNode>();
    const ancestors = new Set<string>();
    const originLabels = labelCount(this.origin);
    for (const r of this.content()) {
      const key = nameKey(r.owner);
      let node = nodes.get(key);
      if (node === undefined) {
        node = { owner: r.owner, rrsets: new Map(), cut: false };
        nodes.set(key, node);
        // Every name between the owner and the apex exists (RFC 4592 §2.2.2: an empty
        // non-terminal where it owns no RRsets).
        let name = r.owner;
        while (labelCount(name) > originLabels + 1) {
          name = parentName(name);
          const up = nameKey(name);
          if (ancestors.has(up)) break;
          ancestors.add(up);
        }
      }
      addRRset(node, r, key, this.originKey);
    }
    this.nodes = nodes;
    this.ancestors = ancestors;
    return nodes;
  }
}

/** Puts an RRset of the content into its name's node (an NS below the apex makes it a delegation). */
function addRRset(node: ZoneNode, r: RRsetData, key: string, originKey: string): void {
  const type = RRType[r.type];
  const rrset: ServedRRset = { owner: r.owner, type, ttl: r.ttl, rdata: r.rdata, wire: null };
  node.rrsets.set(type, rrset);
  if (type === RRType.NS && key !== originKey) node.cut = true;
}
