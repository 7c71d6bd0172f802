/**
 * The schema of Gardener's `extensions.gardener.cloud/v1alpha1` `DNSRecord`, with the upstream field
 * names (the extension contract's DNSRecordSpec and DefaultStatus plus DNSRecordStatus.zone).
 */
import { DOMAIN_NAME_PATTERN } from '../../meta.ts';
import { type Infer, s } from '../../schema.ts';

export const GARDENER_RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'TXT'] as const;

const immutable = (field: string, code: string) => ({
  cel: 'self == oldSelf',
  message: `${field} is immutable`,
  transition: true,
  code,
  check: (self: unknown, oldSelf: unknown) => self === oldSelf,
});

export const gardenerDNSRecordSpecSchema = s.object(
  {
    type: s.string({
      description:
        'The DNS provider type; Zonekeeper reconciles the types of --gardener-types (default zonekeeper). Immutable.',
      minLength: 1,
      maxLength: 253,
      rules: [immutable('type', 'TypeImmutable')],
    }),
    class: s.optional(
      s.string({
        description: 'The extension class (shoot, seed or garden); kept as it is.',
        enum: ['shoot', 'seed', 'garden'],
      }),
    ),
    secretRef: s.object(
      {
        name: s.optional(s.string({ description: 'Name of the Secret.', maxLength: 253 })),
        namespace: s.optional(s.string({ description: 'Namespace of the Secret.', maxLength: 63 })),
      },
      {
        description:
          'The Secret with the provider credentials. Kept as it is: Zonekeeper needs no credentials and reads no Secret for it.',
      },
    ),
    region: s.optional(s.string({ description: 'The region (not used by Zonekeeper).', maxLength: 253 })),
    zone: s.optional(
      s.string({
        description:
          'The zone: a served zone\'s domain (e.g. "example.com"), or "namespace/name" of a DNSZone. ' +
          'Absent: the deepest served zone containing spec.name.',
        minLength: 1,
        maxLength: 320,
      }),
    ),
    name: s.string({
      description:
        'The fully qualified domain name of the record, e.g. "api.bar.foo.example.com". Immutable.',
      minLength: 1,
      maxLength: 253,
      pattern: DOMAIN_NAME_PATTERN,
      patternMessage: 'is not a fully qualified domain name',
      rules: [immutable('name', 'NameImmutable')],
    }),
    recordType: s.string({
      description: 'The record type: A, AAAA, CNAME or TXT. Immutable.',
      enum: GARDENER_RECORD_TYPES,
      rules: [immutable('recordType', 'RecordTypeImmutable')],
    }),
    values: s.array(s.string({ description: 'A value.', minLength: 1, maxLength: 4096 }), {
      description: 'The values: addresses for A and AAAA, one host name for CNAME, texts for TXT.',
      minItems: 1,
      maxItems: 256,
    }),
    ttl: s.optional(
      s.integer({ description: 'The TTL in seconds. Default: 120.', minimum: 1, maximum: 2147483647 }),
    ),
  },
  { description: 'One DNS record.' },
);
export type GardenerDNSRecordSpec = Infer<typeof gardenerDNSRecordSpecSchema>;

export const gardenerDNSRecordStatusSchema = s.object(
  {
    lastOperation: s.optional(
      s.object(
        {
          type: s.string({
            description: 'Create, Reconcile, Delete, Migrate or Restore.',
            enum: ['Create', 'Reconcile', 'Delete', 'Migrate', 'Restore'],
          }),
          state: s.string({
            description: 'Processing, Succeeded, Error or Failed.',
            enum: ['Processing', 'Succeeded', 'Error', 'Failed', 'Pending', 'Aborted'],
          }),
          progress: s.integer({ description: 'Progress in percent.', minimum: 0, maximum: 100 }),
          description: s.string({ description: 'What happened.', maxLength: 32768 }),
          lastUpdateTime: s.string({ description: 'When it last changed.', format: 'date-time' }),
        },
        { description: 'The last operation on the record.' },
      ),
    ),
    lastError: s.optional(
      s.object(
        {
          description: s.string({ description: 'The error.', maxLength: 32768 }),
          taskID: s.optional(s.string({ description: 'The task that failed.', maxLength: 253 })),
          codes: s.optional(
            s.array(s.string({ description: 'An error code.', maxLength: 64 }), {
              description: 'Error codes.',
            }),
          ),
          lastUpdateTime: s.optional(s.string({ description: 'When it last changed.', format: 'date-time' })),
        },
        { description: 'The last error.' },
      ),
    ),
    observedGeneration: s.optional(s.integer({ description: 'The generation seen.', minimum: 0 })),
    zone: s.optional(
      s.string({ description: 'The DNSZone the record is published in, "namespace/name".', maxLength: 320 }),
    ),
  },
  { description: 'The state of the record, per the extension contract.' },
);
export type GardenerDNSRecordStatus = Infer<typeof gardenerDNSRecordStatusSchema>;
