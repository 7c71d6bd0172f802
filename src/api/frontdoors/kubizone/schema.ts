/**
 * kubizone's `kubi.zone/v1alpha1` kinds, `Zone` and `Record`, with the upstream field names and
 * defaults (docs/compat/kubizone.md lists every field and how Zonekeeper treats it).
 */
import { conditionsSchema } from '../../meta.ts';
import { type Infer, s } from '../../schema.ts';

const refSchema = s.object(
  {
    name: s.string({ description: 'Name of the Zone.', minLength: 1, maxLength: 253 }),
    namespace: s.optional(
      s.string({ description: "Namespace of the Zone. Default: the object's namespace.", maxLength: 63 }),
    ),
  },
  { description: 'A Zone.' },
);

function seconds(description: string, fallback: number) {
  return s.optional(
    s.integer({
      description: `${description} Default: ${fallback}.`,
      minimum: 0,
      maximum: 4294967295,
      default: fallback,
    }),
  );
}

export const ZONE_DEFAULTS = {
  ttl: 360,
  refresh: 86400,
  retry: 7200,
  expire: 3600000,
  negativeResponseCache: 360,
} as const;

const delegationSchema = s.object(
  {
    namespaces: s.optional(
      s.array(s.string({ description: 'A namespace.', maxLength: 63 }), {
        description: 'Namespaces admitted. Empty: every namespace.',
        maxItems: 256,
      }),
    ),
    zones: s.optional(
      s.array(s.string({ description: 'A pattern relative to the zone.', maxLength: 253 }), {
        description: 'Sub-zone patterns admitted.',
        maxItems: 256,
      }),
    ),
    records: s.optional(
      s.array(
        s.object(
          {
            pattern: s.string({
              description:
                'Pattern which delegated records must match, relative to the zone: "*" leftmost stands for one or more labels, one "*" inside a segment for any text ("dev*").',
              maxLength: 253,
            }),
            types: s.optional(
              s.array(s.string({ description: 'A record type.', maxLength: 16 }), {
                description: 'Types admitted. Empty implies any.',
                maxItems: 64,
              }),
            ),
          },
          { description: 'Records admitted.' },
        ),
        { description: 'Record patterns admitted.', maxItems: 256 },
      ),
    ),
  },
  { description: 'Namespaces, records and sub-zones allowed to insert themselves into this zone.' },
);
export type KubizoneDelegation = Infer<typeof delegationSchema>;

export const zoneSpecSchema = s.object(
  {
    domainName: s.string({
      description:
        'Fully qualified domain name ending in "." ("example.org."), or a partial name under spec.zoneRef.',
      minLength: 1,
      maxLength: 253,
    }),
    zoneRef: s.optional(refSchema),
    delegations: s.array(delegationSchema, {
      description:
        "Namespaced records and zones allowed to insert themselves into this zone. Every record needs one, including records of the zone's own namespace.",
      maxItems: 256,
    }),
    ttl: seconds('TTL of the SOA record and default TTL of the records.', ZONE_DEFAULTS.ttl),
    refresh: seconds('SOA refresh in seconds.', ZONE_DEFAULTS.refresh),
    retry: seconds('SOA retry in seconds.', ZONE_DEFAULTS.retry),
    expire: seconds('SOA expire in seconds.', ZONE_DEFAULTS.expire),
    negativeResponseCache: seconds(
      'SOA minimum (negative caching TTL) in seconds.',
      ZONE_DEFAULTS.negativeResponseCache,
    ),
  },
  { description: 'A DNS zone.' },
);
export type ZoneSpec = Infer<typeof zoneSpecSchema>;

const entrySchema = s.object(
  {
    fqdn: s.string({ description: 'Owner name.', maxLength: 255 }),
    type: s.string({ description: 'Record type.', maxLength: 16 }),
    class: s.string({ description: 'Class.', maxLength: 8 }),
    ttl: s.integer({ description: 'TTL.', minimum: 0, maximum: 4294967295 }),
    rdata: s.string({ description: 'RDATA in presentation format.', maxLength: 65535 }),
  },
  { description: 'One zone entry.' },
);

export const zoneStatusSchema = s.object(
  {
    fqdn: s.optional(s.string({ description: "The zone's fully qualified domain name.", maxLength: 255 })),
    hash: s.optional(s.string({ description: 'Hash of the zone content.', maxLength: 128 })),
    serial: s.optional(s.integer({ description: 'SOA serial served.', minimum: 0, maximum: 4294967295 })),
    entries: s.optional(
      s.array(entrySchema, { description: 'The zone entries, SOA first.', maxItems: 100000 }),
    ),
    conditions: conditionsSchema('Zonekeeper: Ready, with why not.'),
  },
  { description: 'The zone as served.' },
);
export type ZoneStatus = Infer<typeof zoneStatusSchema>;

export const recordSpecSchema = s.object(
  {
    domainName: s.string({
      description: 'Fully qualified name ending in ".", or a name relative to spec.zoneRef.',
      minLength: 1,
      maxLength: 253,
    }),
    zoneRef: s.optional(refSchema),
    type: s.string({ description: 'Record type, e.g. A.', minLength: 1, maxLength: 16 }),
    class: s.optional(s.string({ description: 'Class. Default: IN.', maxLength: 8, default: 'IN' })),
    ttl: s.optional(
      s.integer({ description: "TTL. Default: the zone's ttl.", minimum: 0, maximum: 4294967295 }),
    ),
    rdata: s.string({
      description: 'RDATA in presentation format, e.g. "192.0.2.1".',
      minLength: 1,
      maxLength: 65535,
    }),
  },
  { description: 'One resource record.' },
);
export type RecordSpec = Infer<typeof recordSpecSchema>;

export const recordStatusSchema = s.object(
  {
    fqdn: s.optional(s.string({ description: "The record's fully qualified name.", maxLength: 255 })),
    conditions: conditionsSchema('Zonekeeper: Ready, with why not.'),
  },
  { description: 'The record as served.' },
);
export type RecordStatus = Infer<typeof recordStatusSchema>;
