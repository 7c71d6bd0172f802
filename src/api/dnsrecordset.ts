/** DNSRecordSet (namespaced): one RRset, one owner name and one type. */
import { RECORD_TYPES } from '../dns/rrtype.ts';
import { AGE_COLUMN, type KindDefinition, READY_COLUMN } from './kind.ts';
import {
  conditionsSchema,
  DNS1123_LABEL,
  DNS1123_SUBDOMAIN,
  labelMessage,
  type ObjectMeta,
  objectRefSchema,
  observedGenerationSchema,
  subdomainMessage,
  ttlSchema,
} from './meta.ts';
import { type Infer, quote, s } from './schema.ts';
import { healthCheckSchema, placementSchema, selectionSchema, steeringRules } from './steering.ts';

/** A wildcard owner name as written: "*" or "*." followed by more (RFC 4592 §2.1.1). */
function isWildcardText(name: string): boolean {
  return name === '*' || name.startsWith('*.');
}

export const MAX_RECORDS = 1000;
export const MAX_RECORD_LENGTH = 65535;

export const dnsRecordSetSpecSchema = s.object(
  {
    zoneRef: s.optional(
      s.object(
        {
          name: s.string({
            description: 'Name of the DNSZone.',
            minLength: 1,
            maxLength: 253,
            pattern: DNS1123_SUBDOMAIN,
            patternMessage: subdomainMessage,
          }),
          namespace: s.optional(
            s.string({
              description: "Namespace of the DNSZone. Default: the record set's namespace.",
              minLength: 1,
              maxLength: 63,
              pattern: DNS1123_LABEL,
              patternMessage: labelMessage,
            }),
          ),
        },
        {
          description:
            'The DNSZone to publish in. Without it, spec.name must be absolute and the deepest managed zone ' +
            'containing it adopts the record set, if that zone admits this namespace, name and type.',
        },
      ),
    ),
    name: s.string({
      description:
        'Owner name: relative to the zone of spec.zoneRef ("www", "@" for the apex, "*.apps" for a ' +
        'wildcard) or absolute with a trailing dot ("www.example.com."); absolute when spec.zoneRef is not set.',
      minLength: 1,
      maxLength: 255,
    }),
    type: s.string({ description: 'Record type.', enum: RECORD_TYPES }),
    ttl: s.optional(ttlSchema("TTL in seconds. Default: the zone's ttl.")),
    records: s.array(
      s.string({
        description: 'One record in RFC 1035 presentation format.',
        minLength: 1,
        maxLength: 65535,
      }),
      {
        description:
          'The records (RDATA) in RFC 1035 presentation format, e.g. "192.0.2.1" for A, "10 mail" for MX, ' +
          '"\\"v=spf1 -all\\"" for TXT. Relative names are relative to the zone.',
        minItems: 1,
        maxItems: MAX_RECORDS,
      },
    ),
    healthCheck: s.optional(healthCheckSchema),
    selection: s.optional(selectionSchema),
    placement: placementSchema,
  },
  {
    description: 'The desired RRset.',
    rules: [
      ...steeringRules,
      {
        cel: "!(self.type in ['CNAME', 'ALIAS']) || size(self.records) == 1",
        message: 'a CNAME or ALIAS record set has exactly one record',
        fieldPath: '.records',
        code: 'SINGLE_RECORD',
        check: (self) => !(self.type === 'CNAME' || self.type === 'ALIAS') || self.records.length === 1,
        detail: (self) =>
          `${self.type === 'ALIAS' ? 'an' : 'a'} ${self.type} record set has exactly one record, found ${self.records.length}; keep one`,
      },
      {
        // RFC 4592 §4.2: an NS RRset at a wildcard name does not delegate anything; its meaning is undefined.
        cel: "self.type != 'NS' || !(self.name == '*' || self.name.startsWith('*.'))",
        message:
          'an NS record set cannot have a wildcard owner name: a wildcard does not delegate (RFC 4592 §4.2); publish NS records at each name to delegate',
        fieldPath: '.name',
        code: 'WILDCARD_NS',
        check: (self) => !(self.type === 'NS' && isWildcardText(self.name)),
        detail: (self) =>
          `an NS record set cannot have a wildcard owner name (${quote(self.name)}): a wildcard does not delegate (RFC 4592 §4.2); publish NS records at each name to delegate`,
      },
      {
        cel: "self.type != 'SOA'",
        message: 'the SOA is generated from the DNSZone and its class; set spec.soa on the DNSZone',
        fieldPath: '.type',
        reason: 'FieldValueForbidden',
        code: 'SOA_FORBIDDEN',
        check: (self) => self.type !== 'SOA',
      },
    ],
  },
);
export type DNSRecordSetSpec = Infer<typeof dnsRecordSetSpecSchema>;

export const dnsRecordSetStatusSchema = s.object(
  {
    observedGeneration: observedGenerationSchema(),
    fqdn: s.optional(s.string({ description: 'The absolute owner name.', maxLength: 255 })),
    zone: s.optional({ ...objectRefSchema, description: 'The DNSZone that publishes the record set.' }),
    targets: s.optional(
      s.array(
        s.object(
          {
            address: s.string({ description: 'The record (its address) probed.', maxLength: 64 }),
            state: s.string({
              description: 'Up, Down, or Unknown before the thresholds decided.',
              enum: ['Up', 'Down', 'Unknown'] as const,
            }),
            lastTransitionTime: s.optional(
              s.string({ description: 'When the state last changed.', format: 'date-time', maxLength: 64 }),
            ),
            lastError: s.optional(
              s.string({ description: 'Why the last failed probe failed.', maxLength: 1024 }),
            ),
          },
          { description: 'The health of one record of a steered record set.' },
        ),
        {
          description:
            'Health-checked record sets: the state of each record as the probes of the process writing status ' +
            'see it (every answering replica probes on its own; see docs/steering.md).',
          maxItems: 64,
        },
      ),
    ),
    conditions: conditionsSchema(
      'Accepted: a zone adopted the record set, its records are valid and it owns its name and type. ' +
        'Programmed: the backend serves it. Ready: both.',
    ),
  },
  { description: 'Observed state of the record set.' },
);
export type DNSRecordSetStatus = Infer<typeof dnsRecordSetStatusSchema>;

export interface DNSRecordSet {
  apiVersion: string;
  kind: 'DNSRecordSet';
  metadata: ObjectMeta;
  spec: DNSRecordSetSpec;
  status?: DNSRecordSetStatus;
}

export const dnsRecordSetDefinition: KindDefinition<'DNSRecordSet'> = {
  kind: 'DNSRecordSet',
  plural: 'dnsrecordsets',
  singular: 'dnsrecordset',
  listKind: 'DNSRecordSetList',
  shortNames: ['dnsrs'],
  scope: 'Namespaced',
  description:
    'DNSRecordSet is one RRset: an owner name, a type, a TTL and the records. The oldest record set wins ' +
    'a (zone, name, type); the others are reported as conflicts.',
  spec: dnsRecordSetSpecSchema,
  status: dnsRecordSetStatusSchema,
  printerColumns: [
    { name: 'Zone', type: 'string', jsonPath: '.status.zone.name' },
    { name: 'Name', type: 'string', jsonPath: '.spec.name' },
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    READY_COLUMN,
    AGE_COLUMN,
  ],
};
