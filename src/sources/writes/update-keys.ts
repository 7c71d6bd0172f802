import type { DNSZone, DNSZoneClass } from '../../api/index.ts';
import { API_VERSION } from '../../api/meta.ts';
import type { ResourceStore } from '../../control/resource-store.ts';
import type { Name } from '../../dns/name.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import type { RecordWriter } from '../../writes/record-writer.ts';
import { type UpdateKeySource, updateCredentialName } from '../../writes/update-credentials.ts';
import { WriteError } from '../../writes/write-request.ts';
import type { Catalog } from '../../zones/catalog.ts';
import { canonicalKeyName } from '../../zones/transfers.ts';
import { updateAllowed } from '../../zones/update-policy.ts';

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

/**
 * The leader's check of RFC 2136 UPDATE writes (ADR 0016, docs/rfc2136.md "In a cluster"): a request
 * under an update credential (`tsig-<key>-<digest>`) is applied only when every change lies in a zone of
 * the credential's namespace whose current `updatePolicy` lets that key change that name and type. A
 * server replica verified the TSIG signature, but the leader trusts the replica's claim of which key
 * signed only as far as the forwarding protocol authenticates the replica (TokenReview, forwarders):
 * whatever a replica forwards stays inside what the policy grants the key it names, judged on the
 * leader's own view of the zones. Other credentials pass through unchanged.
 */
export function updatePolicyGuard(
  writer: RecordWriter,
  store: ResourceStore,
  catalog: Catalog,
): RecordWriter {
  return {
    apply(credential, request) {
      if (!credential.startsWith('tsig-')) return writer.apply(credential, request);
      const grants: { namespace: string; key: string }[] = [];
      for (const zone of updateKeySources(store)())
        for (const key of zone.keys)
          if (updateCredentialName(zone.namespace, key.name) === credential)
            grants.push({ namespace: zone.namespace, key: key.name });
      // A configured credential (write-access file) or an unknown one: the writer decides.
      if (grants.length === 0) return writer.apply(credential, request);
      for (const [i, change] of request.changes.entries()) {
        const why = refusal(store, catalog, grants, change.name, change.type);
        if (why) return Promise.reject(new WriteError('NOT_DELEGATED', why, { change: i }));
      }
      return writer.apply(credential, request);
    },
  };
}

function refusal(
  store: ResourceStore,
  catalog: Catalog,
  grants: readonly { namespace: string; key: string }[],
  name: string,
  type: RecordTypeName,
): string | undefined {
  const fqdn = absoluteName(name);
  const resolution = catalog.resolve({
    apiVersion: API_VERSION,
    kind: 'DNSRecordSet',
    metadata: { name: 'update-probe', namespace: grants[0]!.namespace },
    spec: { name: fqdn, type, records: ['-'] },
  });
  const zoneKey = resolution.zone;
  const verdict = zoneKey === undefined ? undefined : catalog.zoneVerdict(zoneKey);
  const zone = zoneKey === undefined ? undefined : (store.get('DNSZone', zoneKey) as DNSZone | undefined);
  if (!zone || !verdict?.accepted) return `no served zone contains ${fqdn}`;
  const namespace = zone.metadata.namespace ?? 'default';
  const rules = zone.spec.updatePolicy ?? [];
  const allowed = grants.some(
    (g) => g.namespace === namespace && updateAllowed(rules, verdict.origin, g.key, fqdn, type),
  );
  return allowed
    ? undefined
    : `the updatePolicy of DNSZone ${zoneKey} does not let this key change ${type} at ${fqdn}`;
}

function absoluteName(name: string): Name {
  return (name.endsWith('.') ? name : `${name}.`) as Name;
}
