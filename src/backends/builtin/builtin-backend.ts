import type { Name } from '../../dns/name.ts';
import { ZoneSnapshot } from '../../server/zone-snapshot.ts';
import type { ZoneTable } from '../../server/zone-table.ts';
import type { Backend, ProgrammedZone } from '../backend.ts';

/** The built-in server as a backend: a zone is programmed by swapping in a new immutable snapshot. */
export class BuiltinBackend implements Backend {
  readonly name = 'builtin';
  private readonly table: ZoneTable;

  constructor(table: ZoneTable) {
    this.table = table;
  }

  async applyZone({ zone, serial }: ProgrammedZone): Promise<void> {
    const current = this.table.get(zone.origin);
    if (current && current.serial === serial) return;
    this.table.set(ZoneSnapshot.fromAssembled(zone, serial));
  }

  async deleteZone(origin: Name): Promise<void> {
    this.table.delete(origin);
  }

  async servedSerial(origin: Name): Promise<number | undefined> {
    return this.table.get(origin)?.serial;
  }
}
