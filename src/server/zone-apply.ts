import type { Name } from '../dns/name.ts';
import type { RRsetData } from '../zones/rrset.ts';
import type { SoaFields } from '../zones/soa.ts';
import type { ResolvedTransfers } from '../zones/transfers.ts';
import { ImageZone } from './image/image-zone.ts';
import { ImageKind, ZoneImage } from './image/zone-image.ts';
import type { JournalEntry } from './transfer/journal.ts';
import { ZoneJournal } from './transfer/journal.ts';
import { TransferPolicy } from './transfer/transfer-policy.ts';
import type { ZoneDnssecData } from './zone-dnssec.ts';
import { type ZonePatch, ZoneSnapshot } from './zone-snapshot.ts';
import type { ServedZone, ZoneTable } from './zone-table.ts';

/**
 * How zone content gets into a `ZoneTable`, one implementation for the process that runs the built-in
 * backend and for every DNS worker process: a whole zone is built and swapped in; a patch is applied in
 * place, and only to the zone served at the patch's base serial. Transfer settings become one
 * `TransferPolicy` per distinct configuration, shared by the zones that use it.
 */
export class ZoneApplier {
  readonly table: ZoneTable<ServedZone>;
  private readonly policies = new Map<string, TransferPolicy>();

  constructor(table: ZoneTable<ServedZone>) {
    this.table = table;
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
   * Serves a zone image (ADR 0020 step 3), with the overlay of the names changed since it was built
   * when given (step 5), as the whole zone, replacing what was served. `changes` continue the IXFR
   * journal of the zone served before (a gap starts it again, `ZoneJournal.append`).
   */
  replaceImage(
    buffer: ArrayBuffer,
    transfers: ResolvedTransfers | undefined,
    changes: readonly JournalEntry[] = [],
    overlay?: ArrayBuffer,
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
    buffer: ArrayBuffer,
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
    journal.resize(policy?.journalSize ?? 0);
    for (const change of changes) journal.append(change);
    // A journal that does not end at the new serial describes another history: start again.
    if (journal.length > 0 && journal.since(serial)?.length !== 0) journal.clear();
    const served = new ImageZone(image, policy, journal, overlay);
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
    // A zone served from an image is replaced whole, never patched (ADR 0020 step 3); so is a signed
    // zone, whose signatures cover its serial.
    if (!(zone instanceof ZoneSnapshot) || zone.serial !== fromSerial || zone.dnssec) return false;
    this.setTransfers(zone, transfers);
    zone.patch(patch, serial, soa);
    this.table.changed(zone);
    return true;
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
