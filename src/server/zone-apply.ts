import { DnsError } from '../dns/errors.ts';
import { type Name, nameKey } from '../dns/name.ts';
import { type RecordTypeName, RRType, typeName } from '../dns/rrtype.ts';
import type { PublishedByName, RRsetData } from '../zones/rrset.ts';
import type { SoaFields } from '../zones/soa.ts';
import type { ResolvedTransfers } from '../zones/transfers.ts';
import { ContentSource, type ZoneImageBuilder, type ZoneImages } from './image/image-builder.ts';
import { ImageZone } from './image/image-zone.ts';
import { ImageKind, ZoneImage } from './image/zone-image.ts';
import type { JournalEntry } from './transfer/journal.ts';
import { ZoneJournal } from './transfer/journal.ts';
import { TransferPolicy } from './transfer/transfer-policy.ts';
import type { ZoneDnssecData } from './zone-dnssec.ts';
import { patchDiff, type ZonePatch, ZoneSnapshot } from './zone-snapshot.ts';
import type { ServedZone, ZoneTable } from './zone-table.ts';

/**
 * Types that make a zone signed, or part of signing: zones holding any of them are answered from
 * objects, not from zone images (ADR 0020 §7).
 */
export const DNSSEC_TYPES: readonly number[] = [
  RRType.DNSKEY,
  RRType.RRSIG,
  RRType.NSEC,
  RRType.NSEC3,
  RRType.NSEC3PARAM,
  RRType.CDS,
  RRType.CDNSKEY,
];

const DNSSEC_TYPE_CODES: ReadonlySet<number> = new Set(DNSSEC_TYPES);
const DNSSEC_TYPE_NAMES: ReadonlySet<string> = new Set(DNSSEC_TYPES.map((t) => typeName(t)));

/** Whether a type (its code or name) is one of `DNSSEC_TYPES`. */
export function isDnssecType(type: number | string): boolean {
  return typeof type === 'number' ? DNSSEC_TYPE_CODES.has(type) : DNSSEC_TYPE_NAMES.has(type);
}

/**
 * Whether building a zone image failed because no image can hold the zone (a record whose RDATA
 * exceeds 65,535 octets, a name outside the origin or too long): such a zone is served as objects.
 * Anything else is a fault, and is not hidden behind that fallback.
 */
export function imageCannotHold(e: unknown): boolean {
  return e instanceof RangeError || e instanceof DnsError;
}

/** A served zone's RRsets (the SOA excluded) as plain data, e.g. to build it again or send it whole. */
export function* rrsetData(zone: ServedZone): Generator<RRsetData> {
  for (const rrset of zone.transferRRsets()) {
    if (rrset.type === RRType.SOA) continue;
    yield {
      owner: rrset.owner,
      type: typeName(rrset.type) as RecordTypeName,
      ttl: rrset.ttl,
      rdata: rrset.rdata,
    };
  }
}

/**
 * How zone content gets into a `ZoneTable`, one implementation for the process that runs the built-in
 * backend and for every DNS thread: a whole zone is built and swapped in; a patch is applied in
 * place, and only to the zone served at the patch's base serial. Transfer settings become one
 * `TransferPolicy` per distinct configuration, shared by the zones that use it.
 */
export class ZoneApplier {
  readonly table: ZoneTable<ServedZone>;
  private readonly policies = new Map<string, TransferPolicy>();

  /** Builds the images of zones held as images (the main thread of the DNS thread pool). */
  private readonly images: ZoneImageBuilder | undefined;

  constructor(table: ZoneTable<ServedZone>, options: { images?: ZoneImageBuilder } = {}) {
    this.table = table;
    this.images = options.images;
  }

  /**
   * Serves `rrsets` (every RRset but the SOA) as the whole zone at `serial`, replacing what was served;
   * signed with `dnssec` (the signer's records for exactly this content and serial) when given.
   */
  replace(
    origin: Name,
    soa: SoaFields,
    serial: number,
    rrsets: Iterable<RRsetData>,
    transfers: ResolvedTransfers | undefined,
    dnssec?: ZoneDnssecData,
  ): void {
    this.table.set(ZoneSnapshot.build(origin, soa, serial, rrsets, this.policyFor(transfers), dnssec));
  }

  /**
   * Serves `rrsets` (every RRset but the SOA) as the whole zone at `serial` from a base image built
   * straight from them by this applier's `ZoneImageBuilder` (the main thread of the DNS thread pool,
   * ADR 0020 step 4), with no `ZoneSnapshot` made first: the image is the one the snapshot of the same
   * content would give (a second RRset of a name and type replaces the first, `ZoneImage.build`), and
   * the zone starts a new IXFR journal, as `replace` does. False, and nothing changed (`rrsets` read
   * in part or whole: the caller reads the content again), when this applier builds no images, when the content holds
   * DNSSEC material (`DNSSEC_TYPES`: such zones are served as objects), or when no image can hold it
   * (a record whose RDATA exceeds 65,535 octets); the caller then serves it with `replace`.
   */
  replaceWithImage(
    origin: Name,
    soa: SoaFields,
    serial: number,
    rrsets: Iterable<RRsetData>,
    transfers: ResolvedTransfers | undefined,
  ): boolean {
    const images = this.images;
    if (images === undefined) return false;
    // Read once: `merge` asks the source for its RRsets once, and looks up no name in it.
    const source = new ContentSource(origin, soa, serial, () => rrsets);
    let built: ZoneImages;
    try {
      built = images.merge(source);
    } catch (e) {
      images.forget(origin);
      if (imageCannotHold(e)) return false;
      throw e;
    }
    // DNSSEC material is found in the image built (every type of the content is in it), not by a
    // generator wrapped round the content to look at each RRset as it passes.
    if (holdsDnssecType(built.image)) {
      images.forget(origin);
      return false;
    }
    const policy = this.policyFor(transfers);
    this.table.set(new ImageZone(built.image, policy, new ZoneJournal(policy?.journalSize ?? 0)));
    return true;
  }

  /**
   * Serves a zone image (ADR 0020 step 3), with the overlay of the names changed since it was built
   * when given (step 5), as the whole zone, replacing what was served. `changes` continue the IXFR
   * journal of the zone served before (a gap starts it again, `ZoneJournal.append`).
   */
  replaceImage(
    buffer: ArrayBuffer | SharedArrayBuffer,
    transfers: ResolvedTransfers | undefined,
    changes: readonly JournalEntry[] = [],
    overlay?: ArrayBuffer | SharedArrayBuffer,
  ): ImageZone {
    const image = ZoneImage.from(buffer);
    return this.serveImage(
      image,
      overlay === undefined ? undefined : ZoneImage.from(overlay),
      transfers,
      changes,
    );
  }

  /**
   * Serves the zone as the image it serves now with `buffer`, a new overlay over that image, in place
   * of the overlay it had (ADR 0020 §4). False, and nothing changed, when the zone is not served from
   * the image the overlay was built over: the caller sends the whole zone instead.
   */
  applyOverlay(
    buffer: ArrayBuffer | SharedArrayBuffer,
    transfers: ResolvedTransfers | undefined,
    changes: readonly JournalEntry[] = [],
  ): boolean {
    const overlay = ZoneImage.from(buffer);
    const zone = this.table.get(overlay.origin);
    if (
      !(zone instanceof ImageZone) ||
      zone.image.id !== overlay.baseId ||
      overlay.kind !== ImageKind.Overlay
    )
      return false;
    this.serveImage(zone.image, overlay, transfers, changes);
    return true;
  }

  private serveImage(
    image: ZoneImage,
    overlay: ZoneImage | undefined,
    transfers: ResolvedTransfers | undefined,
    changes: readonly JournalEntry[],
  ): ImageZone {
    const policy = this.policyFor(transfers);
    const serial = (overlay ?? image).serial;
    const journal = this.table.get(image.origin)?.journal ?? new ZoneJournal(0);
    // Built before the journal is touched: it throws for an overlay that is not over this base, and
    // the zone served until then must keep a journal that ends at its own serial.
    const served = new ImageZone(image, policy, journal, overlay);
    journal.resize(policy?.journalSize ?? 0);
    for (const change of changes) journal.append(change);
    // A journal that does not end at the new serial describes another history: start again.
    if (journal.length > 0 && journal.since(serial)?.length !== 0) journal.clear();
    this.table.set(served);
    return served;
  }

  /**
   * Moves the zone from `fromSerial` to `serial` in place with `patch`. False, and nothing changed,
   * when the zone is not served at exactly `fromSerial`: the caller serves the whole zone instead.
   */
  patch(
    origin: Name,
    soa: SoaFields,
    serial: number,
    fromSerial: number,
    patch: ZonePatch,
    transfers: ResolvedTransfers | undefined,
  ): boolean {
    const zone = this.table.get(origin);
    // A zone held as an image is replaced whole (`patchImage`); so is a signed zone, whose
    // signatures cover its serial.
    if (!(zone instanceof ZoneSnapshot) || zone.serial !== fromSerial || zone.dnssec) return false;
    this.setTransfers(zone, transfers);
    zone.patch(patch, serial, soa);
    this.table.changed(zone);
    return true;
  }

  /**
   * Moves a zone held as an image (the main thread of the DNS thread pool, ADR 0020 step 4) from
   * `fromSerial` to `serial`: the overlay of the names changed since its base (step 5), built by the
   * pool's `ZoneImageBuilder` from `content` (the whole new zone, SOA excluded, as programmed) for the
   * changed names only (looked up in `byName`, the same content by owner name, when given), or a new
   * base when the change alone passes the overlay limit; the patch's IXFR
   * journal entry (what it removes and adds) is read from the image served before, for the patched
   * RRsets only. False, and nothing changed, when the zone is not an image at exactly `fromSerial`,
   * when this applier builds no images, or when no image can hold the new content.
   */
  patchImage(
    origin: Name,
    soa: SoaFields,
    serial: number,
    fromSerial: number,
    patch: ZonePatch,
    content: () => Iterable<RRsetData>,
    transfers: ResolvedTransfers | undefined,
    byName?: PublishedByName,
  ): boolean {
    const held = this.table.get(origin);
    const images = this.images;
    if (images === undefined || !(held instanceof ImageZone) || held.serial !== fromSerial) return false;
    const source = new ContentSource(origin, soa, serial, content, byName);
    let next: ZoneImages;
    try {
      const owners = [...patch.upserts.map((r) => r.owner), ...patch.deletes.map((r) => r.owner)];
      const overlay = images.change(source, fromSerial, owners);
      // An overlay over another base than the one served here: never expected (the pool builds both).
      next =
        overlay !== undefined && overlay.baseId === held.image.id
          ? images.current(source)
          : images.merge(source);
    } catch {
      images.forget(origin);
      return false;
    }
    const policy = this.policyFor(transfers);
    const journal = held.journal;
    journal.resize(policy?.journalSize ?? 0);
    if (journal.enabled) {
      // Plain objects (RDATA decoded): an image's RRset is a view into its buffer, which the journal
      // would keep alive after the image is replaced.
      const { removed, added } = patchDiff((key, type) => {
        const rrset = held.node(key)?.rrsets.get(type);
        return (
          rrset && {
            owner: rrset.owner,
            type: rrset.type,
            ttl: rrset.ttl,
            rdata: rrset.rdata,
            wire: undefined,
          }
        );
      }, patch);
      journal.append({ from: fromSerial, to: serial, removed, added });
    }
    this.table.set(new ImageZone(next.image, policy, journal, next.overlay));
    return true;
  }

  /**
   * Makes a zone held as an image into objects again (a `ZoneSnapshot` of the same serial, journal
   * and transfer settings), for a zone about to take `patch` that gains DNSSEC material (patched in
   * place from then on): the zone's objects before the patch are `content` (the whole zone after the
   * patch, as objects) with the patched RRsets as the image holds them, so only those are read from
   * the image. Decoding a whole image is the slow way (about 1.7 s for 20,000 records on the bench
   * machine, against 0.1–0.6 s to build from objects).
   */
  unpackBefore(origin: Name, patch: ZonePatch, content: Iterable<RRsetData>): void {
    const held = this.table.get(origin);
    if (!(held instanceof ImageZone)) return;
    const patched = new Set<string>();
    const before: RRsetData[] = [];
    for (const r of [...patch.deletes, ...patch.upserts]) {
      const key = nameKey(r.owner);
      const id = `${r.type}/${key}`;
      if (patched.has(id)) continue;
      patched.add(id);
      const old = held.node(key)?.rrsets.get(RRType[r.type]);
      if (old) before.push({ owner: old.owner, type: r.type, ttl: old.ttl, rdata: old.rdata });
    }
    function* rest(): Generator<RRsetData> {
      for (const r of content) if (!patched.has(`${r.type}/${nameKey(r.owner)}`)) yield r;
      yield* before;
    }
    const snapshot = this.snapshotOf(held, rest());
    if (snapshot) this.table.set(snapshot);
  }

  /** A served zone as a `ZoneSnapshot` of the same content, serial and journal. */
  private snapshotOf(zone: ServedZone, rrsets: Iterable<RRsetData>): ZoneSnapshot | undefined {
    const soa = zone.soa.rdata[0];
    if (soa?.type !== 'SOA') return undefined;
    const fields: SoaFields = {
      ttl: zone.soa.ttl,
      mname: soa.mname,
      rname: soa.rname,
      refresh: soa.refresh,
      retry: soa.retry,
      expire: soa.expire,
      minimum: soa.minimum,
    };
    return ZoneSnapshot.build(
      zone.origin,
      fields,
      zone.serial,
      rrsets,
      zone.transfers,
      undefined,
      zone.journal,
    );
  }

  /** Gives a served zone the class's current transfer settings (its content unchanged). */
  setTransfers(zone: ServedZone, transfers: ResolvedTransfers | undefined): void {
    const policy = this.policyFor(transfers);
    zone.transfers = policy;
    zone.journal.resize(policy?.journalSize ?? 0);
  }

  /** One policy object per distinct configuration (the resolved settings are small, plain data). */
  private policyFor(resolved: ResolvedTransfers | undefined): TransferPolicy | undefined {
    if (!resolved) return undefined;
    const id = JSON.stringify(resolved);
    let policy = this.policies.get(id);
    if (!policy) {
      policy = new TransferPolicy(resolved);
      this.policies.set(id, policy);
    }
    return policy;
  }
}

/** Whether an image holds an RRset of one of `DNSSEC_TYPES`. */
function holdsDnssecType(image: ZoneImage): boolean {
  for (let r = 0; r < image.rrsetCount; r++) if (DNSSEC_TYPE_CODES.has(image.rrsetType(r))) return true;
  return false;
}
