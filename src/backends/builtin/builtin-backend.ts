import type { Name } from '../../dns/name.ts';
import type { Notifier } from '../../server/transfer/notifier.ts';
import { type ResolvedTransfers, TransferPolicy } from '../../server/transfer/transfer-policy.ts';
import { ZoneSnapshot } from '../../server/zone-snapshot.ts';
import type { ZoneTable } from '../../server/zone-table.ts';
import type { Backend, ProgrammedZone } from '../backend.ts';

/**
 * The built-in server as a backend. A change arrives as a delta and patches the served zone in place
 * (work proportional to the change); a zone the server does not hold at the delta's base serial is
 * built whole and swapped in. With a notifier, secondaries are told of every new serial (RFC 1996).
 */
export class BuiltinBackend implements Backend {
  readonly name = 'builtin';
  private readonly table: ZoneTable;
  private readonly notifier: Notifier | undefined;
  private readonly policies = new Map<string, TransferPolicy>();

  constructor(table: ZoneTable, notifier?: Notifier) {
    this.table = table;
    this.notifier = notifier;
  }

  async applyZone(zone: ProgrammedZone): Promise<void> {
    const current = this.table.get(zone.origin);
    const policy = policyFor(this.policies, zone.transfers);
    if (current && current.serial === zone.serial) {
      setPolicy(current, policy);
      return;
    }
    if (current && zone.delta && current.serial === zone.delta.fromSerial) {
      setPolicy(current, policy);
      current.patch(zone.delta, zone.serial, zone.soa);
      this.table.changed(current);
    } else {
      this.table.set(ZoneSnapshot.build(zone.origin, zone.soa, zone.serial, zone.rrsets(), policy));
    }
    const served = this.table.get(zone.origin)!;
    if (policy && policy.notify.length > 0) this.notifier?.notify(served.soa, policy.notify);
  }

  async deleteZone(origin: Name): Promise<void> {
    this.table.delete(origin);
  }

  async servedSerial(origin: Name): Promise<number | undefined> {
    return this.table.get(origin)?.serial;
  }
}

/** One policy object per distinct configuration (the resolved settings are small, plain data). */
export function policyFor(
  cache: Map<string, TransferPolicy>,
  resolved: ResolvedTransfers | undefined,
): TransferPolicy | undefined {
  if (!resolved) return undefined;
  const id = JSON.stringify(resolved);
  let policy = cache.get(id);
  if (!policy) {
    policy = new TransferPolicy(resolved);
    cache.set(id, policy);
  }
  return policy;
}

export function setPolicy(zone: ZoneSnapshot, policy: TransferPolicy | undefined): void {
  zone.transfers = policy;
  zone.journal.resize(policy?.journalSize ?? 0);
}
