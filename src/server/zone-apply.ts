import type { Name } from '../dns/name.ts';
import type { RRsetData } from '../zones/rrset.ts';
import type { SoaFields } from '../zones/soa.ts';
import type { ResolvedTransfers } from '../zones/transfers.ts';
import { TransferPolicy } from './transfer/transfer-policy.ts';
import type { ZoneDnssecData } from './zone-dnssec.ts';
import { type ZonePatch, ZoneSnapshot } from './zone-snapshot.ts';
import type { ZoneTable } from './zone-table.ts';

/**
 * How zone content gets into a `ZoneTable`, one implementation for the process that runs the built-in
 * backend and for every DNS worker process: a whole zone is built and swapped in; a patch is applied in
 * place, and only to the zone served at the patch's base serial. Transfer settings become one
 * `TransferPolicy` per distinct configuration, shared by the zones that use it.
 */
export class ZoneApplier {
  readonly table: ZoneTable;
  private readonly policies = new Map<string, TransferPolicy>();

  constructor(table: ZoneTable) {
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
    // A signed zone's signatures cover its serial: it is always served whole.
    if (!zone || zone.serial !== fromSerial || zone.dnssec) return false;
    this.setTransfers(zone, transfers);
    zone.patch(patch, serial, soa);
    this.table.changed(zone);
    return true;
  }

  /** Gives a served zone the class's current transfer settings (its content unchanged). */
  setTransfers(zone: ZoneSnapshot, transfers: ResolvedTransfers | undefined): void {
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
