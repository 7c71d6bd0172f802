import type { Name } from '../../dns/name.ts';
import { ZoneSnapshot } from '../../server/zone-snapshot.ts';
import type { ZoneTable } from '../../server/zone-table.ts';
import type { Backend, ProgrammedZone } from '../backend.ts';

/**
 * The built-in server as a backend. A change arrives as a delta and patches the served zone in place
 * (work proportional to the change); a zone the server does not hold at the delta's base serial is
 * built whole and swapped in.
 */
export class BuiltinBackend implements Backend {
  readonly name = 'builtin';
  private readonly table: ZoneTable;

  constructor(table: ZoneTable) {
    this.table = table;
  }

  async applyZone(zone: ProgrammedZone): Promise<void> {
    const current = this.table.get(zone.origin);
    if (current && current.serial === zone.serial) return;
    if (current && zone.delta && current.serial === zone.delta.fromSerial) {
      current.patch(zone.delta, zone.serial, zone.soa);
      this.table.changed(current);
      return;
    }
    this.table.set(ZoneSnapshot.build(zone.origin, zone.soa, zone.serial, zone.rrsets()));
  }

  async deleteZone(origin: Name): Promise<void> {
    this.table.delete(origin);
  }

  async servedSerial(origin: Name): Promise<number | undefined> {
    return this.table.get(origin)?.serial;
  }
}
