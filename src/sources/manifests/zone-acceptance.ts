import type { Condition } from '../../api/index.ts';
import type { MemoryStore } from '../../control/memory-store.ts';
import { resourceKey } from '../../zones/resource-key.ts';
import type { StateStore, StoredAcceptance } from './state-file.ts';

/**
 * Folder mode keeps statuses in memory, but which zones were served must survive a restart: zones are
 * judged served first, in the order they became served, and after a restart that is read from each
 * DNSZone's `Accepted` condition (ADR 0013). So `serve` remembers every DNSZone's Accepted condition in
 * the state folder as the controller writes it, and puts it back before the controller starts.
 *
 * Only what the controller wrote is remembered: a `status` in a manifest is dropped by the store, so a
 * tenant cannot make a zone look served.
 */

const zoneId = (key: string) => `DNSZone/${key}`;

/**
 * Gives every DNSZone of the store without a status the Accepted condition the state remembers for it.
 * Called once the manifests are loaded and before anything judges the zones (`serve` before the
 * controller starts; `validate --state-dir` and `zone export` before they build their catalog).
 * Returns how many zones got one.
 */
export async function restoreAcceptance(store: MemoryStore, state: StateStore): Promise<number> {
  let restored = 0;
  for (const zone of store.list('DNSZone')) {
    if (zone.status !== undefined || zone.metadata.deletionTimestamp) continue;
    const key = resourceKey(zone.metadata);
    const remembered = state.acceptedOf(zoneId(key));
    if (!remembered) continue;
    const condition: Condition = {
      type: 'Accepted',
      status: remembered.status,
      reason: remembered.reason,
      message:
        remembered.status === 'True'
          ? 'served before the restart (remembered in the state folder); judged again at start'
          : `refused before the restart (${remembered.reason}; remembered in the state folder); judged again at start`,
      lastTransitionTime: remembered.lastTransitionTime,
      ...(remembered.observedGeneration !== undefined
        ? { observedGeneration: remembered.observedGeneration }
        : {}),
    };
    await store.updateStatus('DNSZone', key, { conditions: [condition] });
    restored++;
  }
  return restored;
}

/**
 * Remembers each DNSZone's Accepted condition in the state whenever a status write changes it (the
 * state writes a line only when status, reason, transition time or observed generation changed).
 * Returns the function that stops it.
 */
export function rememberAcceptance(store: MemoryStore, state: StateStore): () => void {
  return store.watch((event) => {
    if (event.type !== 'upsert' || event.kind !== 'DNSZone') return;
    const accepted = event.object.status?.conditions?.find((c) => c.type === 'Accepted');
    if (!accepted) return;
    const stored: StoredAcceptance = {
      status: accepted.status,
      reason: accepted.reason,
      lastTransitionTime: accepted.lastTransitionTime,
      ...(accepted.observedGeneration !== undefined
        ? { observedGeneration: accepted.observedGeneration }
        : {}),
    };
    state.putAccepted(zoneId(event.key), stored);
  });
}
