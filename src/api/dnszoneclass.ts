/** DNSZoneClass (cluster-scoped): a backend and the policy its zones share. */
import { AGE_COLUMN, type KindDefinition, READY_COLUMN } from './kind.ts';
import {
  ABSOLUTE_HOST_PATTERN,
  conditionsSchema,
  type ObjectMeta,
  observedGenerationSchema,
  soaOverridesSchema,
  ttlSchema,
} from './meta.ts';
import { type Infer, quote, type Rule, s } from './schema.ts';

/**
 * The backends a class can use, exactly one per class. Adding a backend is one line here: the
 * "exactly one" rule (CEL and TypeScript) is generated from these keys.
 */
const backendProperties = {
  builtin: s.optional(
    s.object(
      {},
      {
        description:
          "Zonekeeper's own authoritative DNS server (`zonekeeper serve` or `zonekeeper server`). Takes no settings: set it to {}.",
      },
    ),
  ),
};
export const BACKEND_KINDS = Object.keys(backendProperties) as (keyof typeof backendProperties)[];

function exactlyOneOf(keys: readonly string[], what: string): Rule<Record<string, unknown>> {
  const cel = `${keys.map((k) => `(has(self.${k}) ? 1 : 0)`).join(' + ')} == 1`;
  const set = (self: Record<string, unknown>) =>
    keys.filter((k) => self[k] !== undefined && self[k] !== null);
  return {
    cel,
    message: `exactly one ${what} must be set: ${keys.join(', ')}`,
    code: 'EXACTLY_ONE',
    check: (self) => set(self).length === 1,
    detail: (self, _old, path) => {
      const found = set(self);
      return found.length === 0
        ? `exactly one ${what} must be set, found none; set ${path}.${keys[0]}: {}${keys.length > 1 ? ` (or one of ${keys.slice(1).join(', ')})` : ''}`
        : `exactly one ${what} must be set, found ${found.length} (${found.join(', ')}); keep one`;
    },
  };
}

export const dnsZoneClassSpecSchema = s.object(
  {
    backend: s.object(backendProperties, {
      description: `Where the zones of this class are served. Exactly one of: ${BACKEND_KINDS.join(', ')}.`,
      rules: [exactlyOneOf(BACKEND_KINDS, 'backend')],
    }),
    nameServers: s.array(
      s.string({
        description: 'An absolute host name with a trailing dot.',
        minLength: 1,
        maxLength: 253,
        pattern: ABSOLUTE_HOST_PATTERN,
        patternMessage:
          'is not an absolute host name; use letters, digits and "-" in labels, e.g. "ns1.example.net."',
        rules: [
          {
            cel: "self.endsWith('.')",
            message: 'name servers must be absolute host names ending with a dot; add the trailing dot',
            code: 'NOT_ABSOLUTE',
            check: (self) => self.endsWith('.'),
            detail: (self) =>
              `${quote(self)} must be an absolute host name ending with a dot; add the trailing dot: ${quote(`${self}.`)}`,
          },
        ],
      }),
      {
        description:
          'Authoritative name servers published as the apex NS records of every zone of this class (and ' +
          'copied to the zone status so the parent can delegate). The first one is the SOA MNAME.',
        minItems: 1,
        maxItems: 13,
        listType: 'set',
      },
    ),
    defaults: s.optional(
      s.object(
        {
          ttl: s.optional(
            ttlSchema(
              'Default TTL in seconds for the records of zones of this class (RFC 2181 §8). Default: 300.',
            ),
          ),
          soa: s.optional(soaOverridesSchema),
        },
        { description: 'Defaults for zones of this class; a DNSZone may override each.' },
      ),
    ),
  },
  { description: 'A backend and the policy shared by its zones.' },
);
export type DNSZoneClassSpec = Infer<typeof dnsZoneClassSpecSchema>;

export const dnsZoneClassStatusSchema = s.object(
  {
    conditions: conditionsSchema('Ready: the backend is reachable and healthy.'),
    observedGeneration: observedGenerationSchema(),
    zones: s.optional(
      s.integer({ description: 'Number of DNSZones using this class.', minimum: 0, format: 'int32' }),
    ),
  },
  { description: 'Observed state of the class.' },
);
export type DNSZoneClassStatus = Infer<typeof dnsZoneClassStatusSchema>;

export interface DNSZoneClass {
  apiVersion: string;
  kind: 'DNSZoneClass';
  metadata: ObjectMeta;
  spec: DNSZoneClassSpec;
  status?: DNSZoneClassStatus;
}

export const dnsZoneClassDefinition: KindDefinition<'DNSZoneClass'> = {
  kind: 'DNSZoneClass',
  plural: 'dnszoneclasses',
  singular: 'dnszoneclass',
  listKind: 'DNSZoneClassList',
  shortNames: ['dnszc'],
  scope: 'Cluster',
  description:
    'DNSZoneClass is a DNS backend (the built-in server, and later PowerDNS, RFC 2136 servers or webhooks) ' +
    'and the policy shared by the zones that use it: published name servers and default TTL and SOA values.',
  spec: dnsZoneClassSpecSchema,
  status: dnsZoneClassStatusSchema,
  printerColumns: [
    {
      name: 'Zones',
      type: 'integer',
      jsonPath: '.status.zones',
      description: 'Number of zones using the class.',
    },
    READY_COLUMN,
    AGE_COLUMN,
  ],
};
