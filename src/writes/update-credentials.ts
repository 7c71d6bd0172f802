/**
 * Credentials of RFC 2136 UPDATE: a TSIG key named in a zone's `updatePolicy` writes as the credential
 * `updateCredentialName(zone namespace, key)`, of kind `tsig`, whose record sets belong to the zone's
 * namespace. They are not configured in the write-access file: the zones' update policies define them,
 * and the operator's leader derives them from its own view of the zones, so a forwarded request cannot
 * name a namespace the zones do not grant.
 */
import { createHash } from 'node:crypto';
import type { SecretRef } from '../api/secret-ref.ts';
import type { CredentialLookup } from './record-writer.ts';

/** The credential (and written-by label value) of `key` writing into `namespace`: `tsig-<key>-<digest>`. */
export function updateCredentialName(namespace: string, key: string): string {
  const canonical = `${key.toLowerCase().replace(/\.$/, '')}.`;
  const digest = createHash('sha256').update(`${namespace}/${canonical}`).digest('hex').slice(0, 10);
  const readable = canonical
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `tsig-${readable ? `${readable}-` : ''}${digest}`;
}

/** A zone's update keys as the store holds them: its namespace, and per key the class key's secret. */
export interface UpdateKeySource {
  namespace: string;
  keys: { name: string; secretRef: SecretRef }[];
}

/**
 * The configured credentials plus those of the zones' update policies (`zones` is read per lookup: a
 * policy that goes away takes its credential with it). The configured table wins a name.
 */
export function withUpdateCredentials(
  base: CredentialLookup,
  zones: () => Iterable<UpdateKeySource>,
): CredentialLookup {
  return {
    quota: (namespace) => base.quota(namespace),
    get(name) {
      const configured = base.get(name);
      if (configured || !name.startsWith('tsig-')) return configured;
      for (const zone of zones()) {
        for (const key of zone.keys) {
          if (updateCredentialName(zone.namespace, key.name) === name)
            return { name, kind: 'tsig', namespace: zone.namespace, secretRef: key.secretRef };
        }
      }
      return undefined;
    },
  };
}
