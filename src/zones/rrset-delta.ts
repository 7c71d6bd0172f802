import { nameKey } from '../dns/name.ts';
import type { RRset, RRsetDelta, RRsetKey } from './rrset.ts';

/**
 * RRset changes not yet confirmed by whoever serves the zone, merged per owner and type (the last
 * change of an RRset wins): the delta from the content that was last served to the current one.
 */
export class PendingDelta {
  private readonly changes = new Map<string, { upsert: RRset } | { delete: RRsetKey }>();

  /** Adds a change on top of those pending; true when it changed anything. */
  add(delta: RRsetDelta): boolean {
    for (const rrset of delta.upserts) this.changes.set(rrsetId(rrset), { upsert: rrset });
    for (const d of delta.deletes) this.changes.set(rrsetId(d), { delete: d });
    return delta.upserts.length > 0 || delta.deletes.length > 0;
  }

  get size(): number {
    return this.changes.size;
  }

  /** The pending changes as one delta. */
  delta(): { upserts: RRset[]; deletes: RRsetKey[] } {
    const upserts: RRset[] = [];
    const deletes: RRsetKey[] = [];
    for (const change of this.changes.values()) {
      if ('upsert' in change) upserts.push(change.upsert);
      else deletes.push(change.delete);
    }
    return { upserts, deletes };
  }

  clear(): void {
    this.changes.clear();
  }
}

function rrsetId(rrset: RRsetKey): string {
  return `${nameKey(rrset.owner)}\u0000${rrset.type}`;
}
