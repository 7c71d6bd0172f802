/**
 * Pure parts of the homelab controller: the record a DNSRecord pushes, where it goes, and the
 * secret reference a DNSClass names.
 */
import type { DNSClassSpec, DNSRecordSpec } from '../../api/frontdoors/homelab/index.ts';
import type { SecretRef } from '../../api/secret-ref.ts';
import { sameHomelabContent } from '../../homelab-protocol/compare.ts';
import type { HomelabRecord, HomelabRecordType } from '../../homelab-protocol/protocol.ts';

export const DEFAULT_TTL = 300;
export const DEFAULT_TIMEOUT_SECONDS = 30;

/**
 * The record sent in `POST /records`. TTL: the record's, else the class's `defaultTTL`, else 300.
 * `metadata` (Zonekeeper's additive field) carries MX priority and SRV priority/weight/port only.
 */
export function desiredRecord(spec: DNSRecordSpec, cls: DNSClassSpec): HomelabRecord {
  const record: HomelabRecord = {
    type: spec.type as HomelabRecordType,
    domain: spec.domain,
    subdomain: spec.subdomain,
    values: [...spec.values],
    ttl: spec.ttl ?? cls.defaultTTL ?? DEFAULT_TTL,
  };
  const m = spec.metadata;
  if (spec.type === 'MX' && m?.priority !== undefined) record.metadata = { priority: m.priority };
  if (spec.type === 'SRV' && m)
    record.metadata = {
      ...(m.priority !== undefined ? { priority: m.priority } : {}),
      ...(m.weight !== undefined ? { weight: m.weight } : {}),
      ...(m.port !== undefined ? { port: m.port } : {}),
    };
  return record;
}

/** Which provider record a record is: type, domain and subdomain (names compared without case). */
export function recordIdentity(r: Pick<HomelabRecord, 'type' | 'domain' | 'subdomain'>): string {
  return `${r.type}/${r.domain.toLowerCase().replace(/\.$/, '')}/${r.subdomain.toLowerCase()}`;
}

/**
 * Whether what a provider holds is what was pushed (values as a set in the protocol's meaning: names
 * without case or trailing dot, IPv6 as addresses; TTL and metadata, field by field, when it reports them).
 */
export const sameContent = sameHomelabContent;

/** Where a provider is: its URL without trailing slashes (two classes with one server are one provider). */
export function providerIdentity(server: string): string {
  return server.replace(/\/+$/, '');
}

/**
 * The secret reference of `hmacAuth.secretRef`. A Kubernetes Secret in a cluster (`name`, `key`,
 * `namespace`); `file:<path>` or `env:<VARIABLE>` as the name reads a file or an environment variable
 * (folder mode, or a mounted secret).
 */
export function homelabSecretRef(ref: {
  name: string;
  namespace?: string | undefined;
  key?: string | undefined;
}): SecretRef | { error: string } {
  if (ref.name.startsWith('file:')) {
    const file = ref.name.slice('file:'.length);
    return file === '' ? { error: 'hmacAuth.secretRef.name "file:" names no file' } : { file };
  }
  if (ref.name.startsWith('env:')) {
    const env = ref.name.slice('env:'.length);
    return /^[A-Za-z_][A-Za-z0-9_]*$/.test(env)
      ? { env }
      : {
          error: `hmacAuth.secretRef.name ${JSON.stringify(ref.name)}: "${env}" is not an environment variable name`,
        };
  }
  if (ref.key === undefined || ref.key === '')
    return { error: `hmacAuth.secretRef names Secret ${ref.name} but no key; set secretRef.key` };
  return { name: ref.name, key: ref.key, ...(ref.namespace ? { namespace: ref.namespace } : {}) };
}
