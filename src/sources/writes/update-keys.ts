import type { DNSZone, DNSZoneClass } from '../../api/index.ts';
import type { ResourceStore } from '../../control/resource-store.ts';
import type { UpdateKeySource } from '../../writes/update-credentials.ts';
import { canonicalKeyName } from '../../zones/transfers.ts';

/**
 * The update keys of every DNSZone with an `updatePolicy`, as the store holds them: each rule's key
 * when the zone's class has it with usage update (what `withUpdatePolicy` serves too).
 */
export function updateKeySources(store: ResourceStore): () => Iterable<UpdateKeySource> {
  return function* () {
    for (const object of store.list('DNSZone')) {
      const zone = object as DNSZone;
      const rules = zone.spec.updatePolicy;
      if (!rules || rules.length === 0) continue;
      const zoneClass = store.get('DNSZoneClass', zone.spec.className) as DNSZoneClass | undefined;
      const classKeys = zoneClass?.spec.transfers?.tsigKeys ?? [];
      const keys: UpdateKeySource['keys'] = [];
      for (const rule of rules) {
        const key = classKeys.find((k) => canonicalKeyName(k.name) === canonicalKeyName(rule.key));
        if (key?.usage?.includes('update')) keys.push({ name: key.name, secretRef: key.secretRef });
      }
      yield { namespace: zone.metadata.namespace ?? 'default', keys };
    }
  };
}
