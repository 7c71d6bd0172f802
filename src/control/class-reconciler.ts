import type { DNSZoneClass } from '../api/index.ts';
import type { Backend } from '../backends/backend.ts';
import type { Catalog } from '../zones/catalog.ts';
import type { ResourceKey } from '../zones/resource-key.ts';
import { classConditions } from './conditions.ts';
import type { ResourceStore } from './resource-store.ts';
import type { StatusWriter } from './status-writer.ts';
import type { ReconcileResult } from './work-queue.ts';

/** How often a class re-checks its backend's health. */
export const HEALTH_INTERVAL_MS = 60_000;

/**
 * Reconciles one DNSZoneClass: its status counts its zones and shows its backend's health. Health is
 * informational (zones are reconciled regardless) and re-checked periodically.
 */
export async function reconcileClass(
  key: ResourceKey,
  deps: {
    store: ResourceStore;
    catalog: Catalog;
    backendFor: (zoneClass: DNSZoneClass) => Backend;
    status: StatusWriter;
  },
): Promise<ReconcileResult> {
  const zoneClass = deps.store.get('DNSZoneClass', key) as DNSZoneClass | undefined;
  if (!zoneClass) return;
  const zones = [...deps.catalog.zones.values()].filter((z) => z.spec.className === key).length;
  const backend = deps.backendFor(zoneClass);
  let health: { ok: boolean; message: string };
  try {
    health = backend.health
      ? await backend.health()
      : { ok: true, message: `backend ${backend.name} is ready` };
  } catch (e) {
    health = { ok: false, message: `backend ${backend.name}: ${e instanceof Error ? e.message : String(e)}` };
  }
  await deps.status.zoneClass(zoneClass, zones, classConditions(health, zoneClass.metadata.generation));
  return backend.health ? { requeueAfterMs: HEALTH_INTERVAL_MS } : undefined;
}
