/**
 * Datum Cloud's `dns.networking.miloapis.com/v1alpha1` kinds — `DNSZoneClass`, `DNSZone` and
 * `DNSRecordSet` — with the upstream field names, validation, status shape, printer columns and
 * selectable fields (docs/compat/datum.md lists every field and how Zonekeeper treats it). The kind
 * names are the same as Zonekeeper's own in another group: everything here is keyed by group.
 */
import { conditionsSchema, MAX_TTL } from '../../meta.ts';
import { type Infer, quote, s } from '../../schema.ts';

export const DATUM_RECORD_TYPES = [
  'A',
  'AAAA',
  'CNAME',
  'TXT',
  'MX',
  'SRV',
  'CAA',
  'NS',
  'SOA',
  'PTR',
  'TLSA',
  'HTTPS',
  'SVCB',
] as const;
export type DatumRecordType = (typeof DATUM_RECORD_TYPES)[number];

// DNSZoneClass --------------------------------------------------------------------------------------

export const datumZoneClassSpecSchema = s.object(
  {
    controllerName: s.string({
      description:
        'The controller that provisions zones of this class (Datum: e.g. "powerdns"). Zonekeeper serves zones of ' +
        'every class it reads, whatever the name, through its default DNSZoneClass (dns.zonekeeper.dev).',
      maxLength: 253,
    }),
    nameServerPolicy: s.object(
      {
        mode: s.string({ description: 'How name servers are assigned: Static.', enum: ['Static'] }),
        static: s.optional(
          s.object(
            {
              servers: s.array(s.string({ description: 'A name server host name.', maxLength: 253 }), {
                description: 'The authoritative name servers of zones of this class.',
              }),
            },
            { description: 'The name servers when mode is Static.' },
          ),
        ),
      },
      { description: 'How zones of this class get their name servers.' },
    ),
    defaults: s.optional(
      s.object(
        {
          defaultTTL: s.optional(
            s.integer({
              description: `TTL in seconds of records that set none (1-${MAX_TTL}).`,
              minimum: 1,
              maximum: MAX_TTL,
              format: 'int64',
            }),
          ),
        },
        { description: 'Defaults for zones of this class.' },
      ),
    ),
  },
  { description: 'A kind of zone: who serves it, its name servers and defaults.' },
);
export type DatumZoneClassSpec = Infer<typeof datumZoneClassSpecSchema>;

export const datumZoneClassStatusSchema = s.object(
  {
    conditions: conditionsSchema(
      'Accepted: the class is usable (a Zonekeeper DNSZoneClass serves its zones); Programmed: the name ' +
        'servers it lists are the ones served.',
    ),
  },
  { description: 'Observed state of the class.' },
);
export type DatumZoneClassStatus = Infer<typeof datumZoneClassStatusSchema>;

// DNSZone -------------------------------------------------------------------------------------------

/** Lowercase labels of letters, digits and inner hyphens, dot-separated, no trailing dot (as upstream). */
export const DATUM_DOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

export const datumZoneSpecSchema = s.object(
  {
    domainName: s.string({
      description: 'The zone apex, e.g. "example.com" (lowercase, no trailing dot). Immutable.',
      minLength: 1,
      maxLength: 253,
      pattern: DATUM_DOMAIN_PATTERN,
      patternMessage: (v) =>
        `${quote(v)} is not a lowercase domain name without a trailing dot (e.g. "example.com")`,
      rules: [
        {
          cel: "oldSelf == '' || self == oldSelf",
          message: 'A domain name is immutable and cannot be changed after creation',
          transition: true,
          code: 'DomainNameImmutable',
          check: (self: string, oldSelf?: string) => oldSelf === '' || self === oldSelf,
        },
        {
          cel: "self.indexOf('.') != -1",
          message: 'Must have at least two segments separated by dots',
          code: 'DomainNameOneSegment',
          check: (self: string) => self.includes('.'),
        },
      ],
    }),
    dnsZoneClassName: s.optional(
      s.string({
        description:
          'The DNSZoneClass (dns.networking.miloapis.com) of the zone: its name servers and default TTL. Absent: ' +
          "Zonekeeper's defaults.",
        maxLength: 253,
      }),
    ),
  },
  { description: 'A hosted zone.' },
);
export type DatumZoneSpec = Infer<typeof datumZoneSpecSchema>;

const nameserverSchema = s.object(
  {
    hostname: s.string({ description: 'The name server host name.', maxLength: 253 }),
    ips: s.optional(
      s.array(
        s.object(
          {
            address: s.string({ description: 'An address.', maxLength: 64 }),
            registrantName: s.optional(s.string({ description: 'Who registered it.', maxLength: 253 })),
          },
          { description: 'One address of the name server, with where it came from.' },
        ),
        { description: 'Addresses of the name server.' },
      ),
    ),
  },
  { description: 'A name server of the Domain.' },
);

export const datumZoneStatusSchema = s.object(
  {
    nameservers: s.optional(
      s.array(s.string({ description: 'A name server host name.', maxLength: 253 }), {
        description: 'The authoritative name servers of the zone as served (its apex NS records).',
      }),
    ),
    recordCount: s.optional(
      s.integer({ description: 'The number of RRsets served in the zone from record sets.', minimum: 0 }),
    ),
    conditions: conditionsSchema('Accepted and Programmed.'),
    serial: s.optional(
      s.integer({
        description:
          'Zonekeeper: the SOA serial served (YYYYMMDDnn). Read by zonekeeper server replicas, which only read.',
        minimum: 0,
        maximum: 4294967295,
        format: 'int64',
      }),
    ),
    hash: s.optional(
      s.string({ description: 'Zonekeeper: SHA-256 over the zone content served.', maxLength: 128 }),
    ),
    domainRef: s.optional(
      s.object(
        {
          name: s.string({ description: 'The name of the Domain.', maxLength: 253 }),
          status: s.optional(
            s.object(
              {
                nameservers: s.optional(
                  s.array(nameserverSchema, { description: 'The name servers of the Domain.' }),
                ),
              },
              { description: 'What is known about the Domain.' },
            ),
          ),
        },
        {
          description:
            'The Domain (networking.datumapis.com) this zone belongs to. Written by Datum’s domain controller; ' +
            'Zonekeeper keeps it as it is.',
        },
      ),
    ),
  },
  { description: 'Observed state of the zone.' },
);
export type DatumZoneStatus = Infer<typeof datumZoneStatusSchema>;

// DNSRecordSet --------------------------------------------------------------------------------------

const u16 = (description: string) => s.integer({ description, minimum: 0, maximum: 65535 });
const u8 = (description: string) => s.integer({ description, minimum: 0, maximum: 255 });

const CNAME_PATTERN =
  '^([A-Za-z0-9_](?:[-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?)(?:\\.([A-Za-z0-9_](?:[-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?))*\\.?$';
const NS_PATTERN =
  '^([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\\.([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?))*\\.?$';

const content = (description: string, extra: { pattern?: string; format?: string } = {}) =>
  s.object({ content: s.string({ description, ...extra }) }, { description: `${description} (one value).` });

const serviceSchema = s.object(
  {
    priority: u16('SvcPriority: 0 is the alias form.'),
    target: s.string({ description: 'The target name ("." for the owner itself).' }),
    params: s.optional(
      s.map(s.string({ description: 'The parameter value.' }), {
        description: 'SvcParams by key, e.g. alpn: "h2,h3".',
      }),
    ),
  },
  { description: 'A service binding (RFC 9460).' },
);

export const recordEntrySchema = s.object(
  {
    name: s.string({
      description:
        'The owner name: "@" for the apex, a name relative to the zone ("www"), or absolute ("www.example.com." ' +
        'or "www.example.com"); it must be inside the zone.',
      minLength: 1,
      pattern: '^(@|[A-Za-z0-9*._-]+)$',
      patternMessage: (v) =>
        `${quote(v)} is not an owner name: "@" or letters, digits, "*", ".", "_" and "-" only`,
    }),
    ttl: s.optional(
      s.integer({
        description:
          "TTL in seconds of this owner's RRset. Default: the class's defaults.defaultTTL, else Zonekeeper's zone TTL.",
        format: 'int64',
      }),
    ),
    a: s.optional(content('An IPv4 address', { format: 'ipv4' })),
    aaaa: s.optional(content('An IPv6 address', { format: 'ipv6' })),
    cname: s.optional(
      s.object(
        {
          content: s.string({
            description: 'The canonical name.',
            minLength: 1,
            maxLength: 253,
            pattern: CNAME_PATTERN,
          }),
        },
        { description: 'The canonical name (one value).' },
      ),
    ),
    ns: s.optional(
      s.object(
        {
          content: s.string({
            description: 'A name server host name (no underscores).',
            minLength: 1,
            maxLength: 253,
            pattern: NS_PATTERN,
          }),
        },
        { description: 'A name server (one value).' },
      ),
    ),
    txt: s.optional(content('The text')),
    soa: s.optional(
      s.object(
        {
          mname: s.string({ description: 'Primary name server.', minLength: 1 }),
          rname: s.string({ description: 'Responsible mailbox.', minLength: 1 }),
          serial: s.optional(s.integer({ description: 'Serial.', format: 'int32' })),
          refresh: s.optional(s.integer({ description: 'Refresh.', format: 'int32' })),
          retry: s.optional(s.integer({ description: 'Retry.', format: 'int32' })),
          expire: s.optional(s.integer({ description: 'Expire.', format: 'int32' })),
          ttl: s.optional(s.integer({ description: 'TTL.', format: 'int32' })),
        },
        { description: "Not served: Zonekeeper writes the zone's SOA itself." },
      ),
    ),
    caa: s.optional(
      s.object(
        {
          flag: u8('0-255 flags.'),
          tag: s.string({
            description: 'The property tag, e.g. issue.',
            minLength: 1,
            pattern: '^[a-z0-9]+$',
          }),
          value: s.string({ description: 'The property value.', minLength: 1 }),
        },
        { description: 'A CAA record (one value).' },
      ),
    ),
    mx: s.optional(
      s.object(
        {
          preference: u16('Preference, lower first.'),
          exchange: s.string({ description: 'The mail exchange host.', minLength: 1 }),
        },
        { description: 'An MX record (one value).' },
      ),
    ),
    srv: s.optional(
      s.object(
        {
          priority: u16('Priority.'),
          weight: u16('Weight.'),
          port: u16('Port.'),
          target: s.string({ description: 'The target host.', minLength: 1 }),
        },
        { description: 'An SRV record (one value).' },
      ),
    ),
    tlsa: s.optional(
      s.object(
        {
          usage: s.integer({ description: 'Certificate usage.' }),
          selector: s.integer({ description: 'Selector.' }),
          matchingType: s.integer({ description: 'Matching type.' }),
          certData: s.string({ description: 'Certificate association data, hexadecimal.' }),
        },
        { description: 'A TLSA record (one value).' },
      ),
    ),
    https: s.optional({ ...serviceSchema, description: 'An HTTPS record (one value).' }),
    svcb: s.optional({ ...serviceSchema, description: 'An SVCB record (one value).' }),
    ptr: s.optional(content('The pointer target')),
  },
  {
    description:
      'One owner name and one value; exactly one type-specific field, the one of spec.recordType. Entries with ' +
      'the same owner name are one RRset.',
  },
);
export type RecordEntry = Infer<typeof recordEntrySchema>;

export const datumRecordSetSpecSchema = s.object(
  {
    dnsZoneRef: s.object(
      {
        name: s.string<string>({
          description: 'Name of the DNSZone (dns.networking.miloapis.com) in the same namespace.',
          maxLength: 253,
          default: '',
        }),
      },
      {
        description: 'The DNSZone (same namespace) this record set belongs to.',
        rules: [
          {
            cel: "self.name != ''",
            message: 'dnsZoneRef.name must be set',
            code: 'DNSZoneRefNameEmpty',
            check: (self: { name?: string }) => (self.name ?? '') !== '',
          },
        ],
      },
    ),
    recordType: s.string({ description: 'The record type.', enum: DATUM_RECORD_TYPES }),
    records: s.array(recordEntrySchema, {
      description: 'Owner names with one value each, for spec.recordType.',
      minItems: 1,
    }),
  },
  { description: 'Records of one type in one zone.' },
);
export type DatumRecordSetSpec = Infer<typeof datumRecordSetSpecSchema>;

export const datumRecordSetStatusSchema = s.object(
  {
    conditions: conditionsSchema('Accepted and Programmed, over all owner names.'),
    recordSets: s.optional(
      s.array(
        s.object(
          {
            name: s.string({ description: 'The owner name as written in spec.records.', maxLength: 255 }),
            conditions: conditionsSchema('Accepted and Programmed of this owner name.'),
          },
          { description: 'The state of one owner name.' },
        ),
        { description: 'Per owner name: its state.' },
      ),
    ),
  },
  { description: 'Observed state of the record set.' },
);
export type DatumRecordSetStatus = Infer<typeof datumRecordSetStatusSchema>;
