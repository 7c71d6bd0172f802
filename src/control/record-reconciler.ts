import type { DNSRecordSet } from '../api/index.ts';
import type { Catalog } from '../zones/catalog.ts';
import { type ResourceKey, resourceKey } from '../zones/resource-key.ts';
import type { ProgrammedZones } from './programmed-zones.ts';
import { FINALIZER, type ResourceStore } from './resource-store.ts';
import type { StatusWriter } from './status-writer.ts';
import type { ReconcileResult } from './work-queue.ts';

/**
 * Reconciles one DNSRecordSet: its finalizer (added while it lives, released once no programmed zone
 * serves it, nor may still serve it as an earlier process left it) and, for a record set that belongs
 * to no zone, the status that says why. The status of a record set in a zone is written by that zone's
 * reconcile.
 */
export async function reconcileRecord(
  key: ResourceKey,
  deps: { store: ResourceStore; catalog: Catalog; programmed: ProgrammedZones; status: StatusWriter },
): Promise<ReconcileResult> {
  const { store } = deps;
  const rs = store.get('DNSRecordSet', key) as DNSRecordSet | undefined;
  if (!rs) return;
  if (rs.metadata.deletionTimestamp) {
    // The finalizer holds the object until no programmed zone serves it any more.
    if (deps.programmed.serves(key)) return;
    // Nor may its zone's backend still serve it from before this process: held until the zone is
    // programmed or removed here, which reconciles it again.
    const zoneKey = zoneOf(rs, deps.catalog);
    if (zoneKey !== undefined && store.get('DNSZone', zoneKey) && deps.programmed.holdsDeleted(key, zoneKey))
      return;
    await store.removeFinalizer('DNSRecordSet', key, FINALIZER);
    return;
  }
  await store.addFinalizer('DNSRecordSet', key, FINALIZER);
  const resolution = deps.catalog.recordResolution(key);
  if (!resolution || resolution.resolved) return; // the zone reconcile writes its status
  await deps.status.unresolvedRecord(rs, resolution, resolution.reason, resolution.message);
}

/**
 * The zone a deleted record set would belong to: the one it resolves to, or names in spec.zoneRef
 * (also a zone that is being deleted, which the catalog no longer holds); none for a name no zone
 * contains.
 */
function zoneOf(rs: DNSRecordSet, catalog: Catalog): ResourceKey | undefined {
  const ref = rs.spec.zoneRef;
  if (ref) return resourceKey({ name: ref.name, namespace: ref.namespace ?? rs.metadata.namespace });
  return catalog.resolve(rs).zone;
}
