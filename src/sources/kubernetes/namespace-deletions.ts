/**
 * Zones removed by a namespace deletion. Deleting a DNSZone is explicit and stays immediate; deleting
 * the namespace it lives in removes it too, often by accident. The Events that would normally tell of
 * it cannot go into that namespace (a terminating namespace takes no new objects), so each zone removed
 * this way gets a Warning Event in the operator's namespace.
 *
 * Detected as it happens: a DNSZone whose deletion starts (deletionTimestamp set, or gone at once)
 * while its namespace is terminating or gone. Only the leader reports.
 */
import type { DNSZone } from '../../api/index.ts';
import type { StoreEvent } from '../../control/resource-store.ts';
import type { ResourceKey } from '../../zones/resource-key.ts';
import type { EventRecorder } from './events.ts';
import type { KubeApi } from './kube-api.ts';

export const NAMESPACE_DELETED_REASON = 'NamespaceDeleted';

export interface NamespaceDeletionOptions {
  api: Pick<KubeApi, 'namespaceState'>;
  events: Pick<EventRecorder, 'record'>;
  /** The operator's namespace, where the Events go. */
  namespace: string;
  /** Whether this replica leads (only the leader reports). */
  leading: () => boolean;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

/** Follows DNSZone deletions from a store's events; returns the store handler. */
export function namespaceDeletionReporter(options: NamespaceDeletionOptions): (event: StoreEvent) => void {
  /** Zones whose deletion was seen (and judged) already. */
  const seen = new Set<ResourceKey>();
  const judge = (zone: DNSZone) => {
    const namespace = zone.metadata.namespace;
    if (!namespace || !options.leading()) return;
    options.api.namespaceState(namespace).then(
      (state) => {
        if (state === 'active') return;
        options.events.record(
          {
            regarding: {
              kind: 'DNSZone',
              name: zone.metadata.name,
              namespace,
              ...(zone.metadata.uid ? { uid: zone.metadata.uid } : {}),
            },
            type: 'Warning',
            reason: NAMESPACE_DELETED_REASON,
            action: 'DeleteZone',
            note:
              `zone ${zone.spec.domainName} (DNSZone ${namespace}/${zone.metadata.name}) is removed from its backend ` +
              `because its namespace ${namespace} is being deleted; re-create the namespace and its DNSZone to serve it again`,
          },
          options.namespace,
        );
      },
      (e: unknown) =>
        options.log?.('warn', `cannot tell whether namespace ${namespace} is being deleted`, {
          zone: `${namespace}/${zone.metadata.name}`,
          error: e instanceof Error ? e.message : String(e),
        }),
    );
  };
  return (event) => {
    if (event.kind !== 'DNSZone') return;
    const zone = event.object as DNSZone;
    if (event.type === 'delete') {
      if (!seen.delete(event.key)) judge(zone);
      return;
    }
    if (zone.metadata.deletionTimestamp && !seen.has(event.key) && options.leading()) {
      seen.add(event.key);
      judge(zone);
    }
  };
}
