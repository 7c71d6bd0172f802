/** DNSZone (namespaced): a hosted zone. */
import { RECORD_TYPES } from '../dns/rrtype.ts';
import { changeSafetySchema } from './change-safety.ts';
import { dnssecSchema, dnssecStatusSchema } from './dnssec.ts';
import { AGE_COLUMN, type KindDefinition, READY_COLUMN } from './kind.ts';
import {
  conditionsSchema,
  DNS1123_LABEL,
  DNS1123_SUBDOMAIN,
  DOMAIN_NAME_PATTERN,
  labelMessage,
  MAX_TTL,
  NAME_PATTERN_PATTERN,
  type ObjectMeta,
  objectRefSchema,
  observedGenerationSchema,
  soaOverridesSchema,
  subdomainMessage,
  ttlSchema,
  zoneDomainMessage,
} from './meta.ts';
import { type Infer, quote, s } from './schema.ts';

export const MAX_DELEGATIONS = 64;
/** Name patterns per delegation entry (`spec.delegations[].names`). */
export const MAX_DELEGATION_NAMES = 64;

/** A namespace pattern: a literal prefix (a DNS label's start) and one trailing `*`. */
export const NAMESPACE_PATTERN_PATTERN = '^[a-z0-9][-a-z0-9]*\\*$';

export const delegationSchema = s.object(
  {
    namespaces: s.optional(
      s.array(
        s.string({
          description: 'A namespace name.',
          minLength: 1,
          maxLength: 63,
          pattern: DNS1123_LABEL,
          patternMessage: labelMessage,
        }),
        {
          description:
            'Namespaces whose DNSRecordSets may publish in this zone. An entry without namespaces admits ' +
            "no other namespace (records from the zone's own namespace are always allowed).",
          maxItems: 64,
          listType: 'set',
        },
      ),
    ),
    namespacePatterns: s.optional(
      s.array(
        s.string({
          description: 'A namespace name prefix followed by one "*", e.g. "shoot--*".',
          minLength: 2,
          maxLength: 63,
          pattern: NAMESPACE_PATTERN_PATTERN,
          patternMessage:
            'is not a namespace pattern; write the literal start of the namespace names followed by one "*" ' +
            '(e.g. "shoot--*"): a prefix of lowercase letters, digits and "-", starting with a letter or digit',
        }),
        {
          description:
            'Namespaces admitted by name pattern, beside spec.delegations[].namespaces: "shoot--*" admits every ' +
            'namespace whose name starts with "shoot--" and has at least one more character. Anchored at the ' +
            'start of the name; "*" only at the end. Whoever can create a namespace of that form is admitted, ' +
            'so use it only for prefixes that only a trusted controller creates.',
          maxItems: 16,
          listType: 'set',
        },
      ),
    ),
    names: s.optional(
      s.array(
        s.string({
          description: 'A name pattern relative to the zone.',
          minLength: 1,
          maxLength: 253,
          pattern: NAME_PATTERN_PATTERN,
          patternMessage:
            'is not a relative name pattern; use "@" for the apex, a relative name like "api" or "a.b", ' +
            '"*.apps" for every name below apps, or "*" for every name below the apex (no trailing dot)',
        }),
        {
          description:
            'Owner names the delegated namespaces may use, relative to the zone: "@" is the apex, "api" ' +
            'exactly api, "*.apps" one or more labels below apps (not apps itself), "*" every name below ' +
            'the apex. Empty or absent: any name.',
          maxItems: MAX_DELEGATION_NAMES,
          listType: 'set',
        },
      ),
    ),
    types: s.optional(
      s.array(s.string({ description: 'A record type.', enum: RECORD_TYPES }), {
        description: 'Record types the delegated namespaces may publish. Empty or absent: any type.',
        maxItems: 32,
        listType: 'set',
      }),
    ),
  },
  { description: 'Lets DNSRecordSets from other namespaces publish in this zone.' },
);
export type Delegation = Infer<typeof delegationSchema>;

export const MAX_IGNORE_RULES = 64;

export const ignoreRuleSchema = s.object(
  {
    name: s.string({
      description:
        'A name pattern relative to the zone, as in delegations: "@" the apex, "api" exactly api, "*.apps" ' +
        'one or more labels below apps, "*" every name below the apex.',
      minLength: 1,
      maxLength: 253,
      pattern: NAME_PATTERN_PATTERN,
      patternMessage:
        'is not a relative name pattern; use "@" for the apex, a relative name like "api" or "a.b", ' +
        '"*.apps" for every name below apps, or "*" for every name below the apex (no trailing dot)',
    }),
    type: s.optional(
      s.string({
        description: 'A record type; absent: every type (the SOA is never ignored).',
        enum: RECORD_TYPES,
      }),
    ),
  },
  { description: 'RRsets an external backend keeps as they are.' },
);
export type IgnoreRule = Infer<typeof ignoreRuleSchema>;
export const MAX_UPDATE_RULES = 64;

/**
 * A name pattern of an update policy: the delegation syntax ("@", "api", "*.apps", "*") plus
 * "<label>.**": that leftmost label under any name of the zone, the apex included.
 */
export const UPDATE_NAME_PATTERN = `^(${NAME_PATTERN_PATTERN.slice(2, -2)}|[A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?\\.\\*\\*)$`;

export const updateRuleSchema = s.object(
  {
    key: s.string({
      description:
        "Name of one of the class's transfers.tsigKeys whose usage includes update; UPDATE messages signed with it may make the changes this rule allows.",
      minLength: 1,
      maxLength: 253,
    }),
    names: s.array(
      s.string({
        description: 'A name pattern relative to the zone.',
        minLength: 1,
        maxLength: 253,
        pattern: UPDATE_NAME_PATTERN,
        patternMessage:
          'is not an update name pattern; use "@" for the apex, a relative name like "_acme-challenge.www", ' +
          '"*.dyn" for every name below dyn, "*" for every name below the apex, or "_acme-challenge.**" for ' +
          'that leftmost label under any name of the zone (no trailing dot)',
      }),
      {
        description:
          'Owner names the key may change, relative to the zone: "@" the apex, "www" exactly www, "*.dyn" one or ' +
          'more labels below dyn, "*" every name below the apex, "_acme-challenge.**" the label _acme-challenge ' +
          'directly under any name of the zone (the apex included).',
        minItems: 1,
        maxItems: 64,
        listType: 'set',
      },
    ),
    types: s.array(s.string({ description: 'A record type.', enum: RECORD_TYPES }), {
      description: 'Record types the key may add and delete at those names.',
      minItems: 1,
      maxItems: 32,
      listType: 'set',
    }),
  },
  { description: 'What one TSIG key may change in this zone through RFC 2136 UPDATE.' },
);
export type UpdateRule = Infer<typeof updateRuleSchema>;

export const dnsZoneSpecSchema = s.object(
  {
    domainName: s.string({
      description:
        'The zone apex, e.g. "example.com" (at least two labels; the trailing dot is optional; case does ' +
        'not matter; not a public suffix such as "co.uk" unless the class sets allowPublicSuffixZones). ' +
        'Immutable: to move a zone, create a new DNSZone.',
      minLength: 1,
      maxLength: 253,
      pattern: DOMAIN_NAME_PATTERN,
      patternMessage: zoneDomainMessage,
      rules: [
        {
          cel: 'self == oldSelf',
          message: 'domainName is immutable; create a new DNSZone instead',
          transition: true,
          code: 'IMMUTABLE',
          check: (self, oldSelf) => self === oldSelf,
          detail: (self, oldSelf) =>
            `domainName is immutable (was ${quote(String(oldSelf))}, now ${quote(self)}); create a new DNSZone instead`,
        },
      ],
    }),
    className: s.string({
      description: 'Name of the DNSZoneClass whose backend serves this zone.',
      minLength: 1,
      maxLength: 253,
      pattern: DNS1123_SUBDOMAIN,
      patternMessage: subdomainMessage,
    }),
    ttl: s.optional(
      ttlSchema(
        `Default TTL in seconds for records of this zone without their own (1-${MAX_TTL}). Default: the class's defaults.ttl, else 300.`,
      ),
    ),
    soa: s.optional({
      ...soaOverridesSchema,
      description: "Overrides for the zone's SOA record; each field defaults to the class's defaults.soa.",
    }),
    delegations: s.optional(
      s.array(delegationSchema, {
        description:
          'Who else may publish records in this zone. Records from the same namespace are always allowed; ' +
          'a record set from another namespace is accepted when one entry admits its namespace, name and type.',
        maxItems: MAX_DELEGATIONS,
      }),
    ),
    ignore: s.optional(
      s.array(ignoreRuleSchema, {
        description:
          'RRsets of an external backend (PowerDNS, RFC 2136) that Zonekeeper never creates, modifies or deletes, ' +
          'whoever made them, even ones it created before: for migrating a zone piece by piece. Record sets ' +
          'of the zone that match are reported as not programmed. The SOA is never ignored; the built-in ' +
          'server holds nothing but Zonekeeper content and ignores the list.',
        maxItems: MAX_IGNORE_RULES,
      }),
    ),
    changeSafety: s.optional({
      ...changeSafetySchema,
      description: `${changeSafetySchema.description} Each field overrides the class's changeSafety.`,
    }),
    dnssec: s.optional({
      ...dnssecSchema,
      description: `${dnssecSchema.description} Each field overrides the class's dnssec.`,
    }),
    updatePolicy: s.optional(
      s.array(updateRuleSchema, {
        description:
          'Who may change records of this zone with RFC 2136 UPDATE (TSIG-signed, built-in server only). What an ' +
          "UPDATE writes belongs to the zone's namespace, as API-written DNSRecordSets. Empty or absent: UPDATE is refused.",
        maxItems: MAX_UPDATE_RULES,
      }),
    ),
  },
  { description: 'The desired zone.' },
);
export type DNSZoneSpec = Infer<typeof dnsZoneSpecSchema>;

export const dnsZoneStatusSchema = s.object(
  {
    observedGeneration: observedGenerationSchema(),
    serial: s.optional(
      s.integer({
        description:
          'SOA serial of the current content: YYYYMMDDnn, increased whenever the content hash changes, never decreased.',
        minimum: 0,
        maximum: 4294967295,
        format: 'int64',
      }),
    ),
    hash: s.optional(s.string({ description: 'SHA-256 over the canonical zone content.', maxLength: 128 })),
    signedAt: s.optional(
      s.integer({
        description:
          'For a zone the built-in server signs: the signing time of status.serial (seconds since 1970), from which ' +
          'every signature window derives, so every replica signs the serial byte for byte alike.',
        minimum: 0,
        format: 'int64',
      }),
    ),
    signing: s.optional(
      s.string({
        description: 'The signing settings status.serial was signed with (algorithm/denial/keys).',
        maxLength: 64,
      }),
    ),
    recordCount: s.optional(
      s.integer({
        description: 'Number of DNSRecordSets published in the zone.',
        minimum: 0,
        format: 'int32',
      }),
    ),
    rrsetCount: s.optional(
      s.integer({
        description:
          'RRsets of the content served at status.serial, the SOA not counted: after a restart, change safety measures the first content against it.',
        minimum: 0,
        format: 'int32',
      }),
    ),
    nameservers: s.optional(
      s.array(s.string({ description: 'An absolute host name.', maxLength: 253 }), {
        description: 'The name servers to delegate to from the parent zone.',
      }),
    ),
    dnssec: s.optional(dnssecStatusSchema),
    parentZone: s.optional({
      ...objectRefSchema,
      description: 'The managed DNSZone that delegates to this one, if any.',
    }),
    conditions: conditionsSchema(
      'Accepted: the spec is valid, the class exists and the zone may be served at its domain (no zone judged ' +
        'before it, a served zone or else an older one, holds it, and the delegations between it and such zones ' +
        'of other namespaces admit it). ' +
        'Programmed: the backend serves exactly status.serial. ' +
        'Ready: both.',
    ),
  },
  { description: 'Observed state of the zone.' },
);
export type DNSZoneStatus = Infer<typeof dnsZoneStatusSchema>;

export interface DNSZone {
  apiVersion: string;
  kind: 'DNSZone';
  metadata: ObjectMeta;
  spec: DNSZoneSpec;
  status?: DNSZoneStatus;
}

export const dnsZoneDefinition: KindDefinition<'DNSZone'> = {
  kind: 'DNSZone',
  plural: 'dnszones',
  singular: 'dnszone',
  listKind: 'DNSZoneList',
  shortNames: ['dnsz'],
  scope: 'Namespaced',
  description:
    'DNSZone is a hosted zone: its apex, the class that serves it, TTL and SOA overrides, and which ' +
    'other namespaces may publish records in it.',
  spec: dnsZoneSpecSchema,
  status: dnsZoneStatusSchema,
  printerColumns: [
    { name: 'Domain', type: 'string', jsonPath: '.spec.domainName' },
    { name: 'Class', type: 'string', jsonPath: '.spec.className' },
    { name: 'Serial', type: 'integer', jsonPath: '.status.serial' },
    { name: 'Records', type: 'integer', jsonPath: '.status.recordCount' },
    READY_COLUMN,
    AGE_COLUMN,
  ],
};
