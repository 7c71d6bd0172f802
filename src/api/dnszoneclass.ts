/** DNSZoneClass (cluster-scoped): a backend and the policy its zones share. */
import { isIP } from 'node:net';
import { BACKEND_KINDS, optionalBackendProperties } from './backends/index.ts';
import { changeSafetySchema } from './change-safety.ts';
import { dnssecSchema } from './dnssec.ts';
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
import { secretRefSchema } from './secret-ref.ts';
import { geoIpSchema, topologySchema } from './steering.ts';

/** An IPv4 or IPv6 address, optionally with a prefix length. */
const CIDR_PATTERN =
  '^([0-9]{1,3}(\\.[0-9]{1,3}){3}(/[0-9]{1,2})?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(/[0-9]{1,3})?)$';
/** An absolute host name whose labels may hold "{hash}". */
const ZONE_NAME_SERVER_PATTERN = '^(([A-Za-z0-9]|\\{hash\\})([-A-Za-z0-9]|\\{hash\\})*\\.)+$';
/** host:port with an IPv6 host in brackets. */
const HOST_PORT_PATTERN = '^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+):[0-9]{1,5}$';
/** A domain name, relative or absolute. */
const DOMAIN_NAME_PATTERN_ANY =
  '^([A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?\\.)*[A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?\\.?$';

/**
 * The backends a class can use, exactly one per class: every kind in BACKEND_SCHEMAS
 * (./backends/index.ts). The "exactly one" rule (CEL and TypeScript) is generated from its keys.
 */
const backendProperties = optionalBackendProperties();

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

/** Zone transfers (AXFR, IXFR) and NOTIFY for the zones of a class: replication to any secondary. */
export const transfersSchema = s.object(
  {
    allowFrom: s.optional(
      s.array(
        s.string({
          description:
            'A network in CIDR form, e.g. 192.0.2.0/24 or 2001:db8::/32 (a bare address is one host).',
          maxLength: 64,
          pattern: CIDR_PATTERN,
          patternMessage:
            'is not an address or network; write e.g. "192.0.2.53", "192.0.2.0/24" or "2001:db8::/32"',
          rules: [
            {
              // Kubernetes CEL's IP and CIDR libraries (1.31+); the pattern above only checks the shape.
              cel: 'isIP(self) || isCIDR(self)',
              message: 'must be an IP address or a network in CIDR form, e.g. 192.0.2.0/24 or 2001:db8::/32',
              code: 'BAD_NETWORK',
              check: (self) => isAddressOrNetwork(self),
            },
          ],
        }),
        {
          description:
            'Source networks allowed to transfer the zones. Empty or absent: transfers are refused.',
          maxItems: 64,
          listType: 'set',
        },
      ),
    ),
    requireTsig: s.optional(
      s.boolean({
        description:
          'Whether transfers must be signed with one of tsigKeys (RFC 8945). Default: true when tsigKeys is set.',
      }),
    ),
    tsigKeys: s.optional(
      s.array(
        s.object(
          {
            name: s.string({
              description: 'The key name, a domain name shared with the secondaries, e.g. transfer-key.',
              minLength: 1,
              maxLength: 253,
              pattern: DOMAIN_NAME_PATTERN_ANY,
              patternMessage:
                'is not a valid key name; use a domain name such as "transfer-key" or "xfr.example.com"',
            }),
            algorithm: s.string({
              description: 'HMAC algorithm (RFC 8945 §6).',
              enum: ['hmac-sha256', 'hmac-sha384', 'hmac-sha512'] as const,
            }),
            secretRef: secretRefSchema,
            usage: s.optional(
              s.array(s.string({ description: 'A use of the key.', enum: ['transfer', 'update'] as const }), {
                description:
                  'What the key is for: transfer (AXFR, IXFR, signed SOA queries, NOTIFY) and/or update (RFC 2136 ' +
                  "UPDATE, as zones' updatePolicy allows). Default: [transfer]. An update-only key does not transfer.",
                minItems: 1,
                maxItems: 2,
                listType: 'set',
              }),
            ),
          },
          { description: 'A TSIG key; its base64 secret is read from secretRef.' },
        ),
        {
          description:
            'TSIG keys: accepted for transfers and used to sign NOTIFY, and, with usage update, for RFC 2136 UPDATE.',
          maxItems: 16,
        },
      ),
    ),
    notify: s.optional(
      s.array(
        s.object(
          {
            address: s.string({
              description:
                'host:port of a secondary to NOTIFY on every serial change (RFC 1996), e.g. 192.0.2.53:53.',
              minLength: 1,
              maxLength: 262,
              pattern: HOST_PORT_PATTERN,
              patternMessage: 'is not host:port; write e.g. "192.0.2.53:53" or "[2001:db8::53]:53"',
            }),
            tsigKey: s.optional(
              s.string({ description: 'Name of one of tsigKeys to sign the NOTIFY with.', maxLength: 253 }),
            ),
          },
          { description: 'A secondary to notify.' },
        ),
        { description: 'Secondaries told of every serial change (RFC 1996), with retries.', maxItems: 64 },
      ),
    ),
    journalSize: s.optional(
      s.integer({
        description:
          'How many recent changes per zone are kept to answer IXFR (RFC 1995); older serials get AXFR. Default: 100.',
        minimum: 0,
        maximum: 10000,
        format: 'int32',
      }),
    ),
  },
  {
    description:
      'Zone transfers to secondaries (Knot, NSD, BIND, PowerDNS): who may transfer, with which keys, and whom to notify.',
    rules: [
      {
        cel: '!has(self.requireTsig) || !self.requireTsig || (has(self.tsigKeys) && size(self.tsigKeys) > 0)',
        message: 'requireTsig needs at least one key in tsigKeys',
        code: 'TSIG_KEYS_REQUIRED',
        check: (self) => !self.requireTsig || (self.tsigKeys ?? []).length > 0,
      },
      {
        cel: '!has(self.notify) || self.notify.all(n, !has(n.tsigKey) || (has(self.tsigKeys) && self.tsigKeys.exists(k, k.name == n.tsigKey)))',
        message: 'every notify tsigKey must name one of tsigKeys',
        code: 'UNKNOWN_TSIG_KEY',
        check: (self) =>
          (self.notify ?? []).every(
            (n) => n.tsigKey === undefined || (self.tsigKeys ?? []).some((k) => k.name === n.tsigKey),
          ),
      },
    ],
  },
);

export type TransfersSpec = Infer<typeof transfersSchema>;

/** An IPv4/IPv6 address, or one with a prefix length valid for its family (what CEL's isIP/isCIDR accept). */
function isAddressOrNetwork(text: string): boolean {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const family = isIP(address);
  if (family === 0) return false;
  if (slash < 0) return true;
  const bits = text.slice(slash + 1);
  return /^[0-9]{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
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
    transfers: s.optional(transfersSchema),
    zoneNameServers: s.optional(
      s.array(
        s.string({
          description:
            'An absolute host name template with "{hash}" in it, e.g. "{hash}.ns1.example.net.": "{hash}" becomes ' +
            'the zone\'s hash (the first 12 hexadecimal digits of SHA-256 over its namespace, "/" and its domain).',
          minLength: 1,
          maxLength: 253,
          pattern: ZONE_NAME_SERVER_PATTERN,
          patternMessage:
            'is not a name server template; write an absolute host name with "{hash}" in one label, e.g. "{hash}.ns1.example.net."',
          rules: [
            {
              cel: "self.contains('{hash}')",
              message: 'a zone name server template must contain "{hash}"',
              code: 'NO_HASH',
              check: (self) => self.includes('{hash}'),
            },
          ],
        }),
        {
          description:
            'Name server names of its own for each zone, published as its apex NS records and status.nameservers ' +
            'instead of nameServers (which stay the SOA MNAME). A delegation to such names points at one zone of ' +
            'one namespace, so it proves control of the domain (Domain VerifiedDNSZone); a delegation to shared ' +
            'names proves nothing. Every expanded name must resolve to the servers (e.g. a wildcard ' +
            '"*.ns1.example.net." record).',
          minItems: 1,
          maxItems: 13,
          listType: 'set',
        },
      ),
    ),
    domainVerification: s.optional(
      s.object(
        {
          txtRecordPrefix: s.optional(
            s.string({
              description:
                'The label before the domain of the TXT challenge record (VerifiedDNS). Default: "_zonekeeper-challenge".',
              minLength: 2,
              maxLength: 63,
              pattern: '^_[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
              patternMessage:
                'is not a TXT record prefix; write "_" and a label, e.g. "_zonekeeper-challenge"',
            }),
          ),
        },
        { description: 'How Domains that name this class prove ownership.' },
      ),
    ),
    requireVerifiedDomain: s.optional(
      s.boolean({
        description:
          'Whether zones of this class are served only under a verified Domain: a DNSZone is Accepted but not ' +
          'served (Programmed=False, reason DomainNotVerified) until a Domain of its namespace for its domain, or ' +
          'a domain above it, is Verified. Closes zone squatting: a namespace cannot serve a domain it has not ' +
          'proven it controls. Default: false.',
      }),
    ),
    allowPublicSuffixZones: s.optional(
      s.boolean({
        description:
          'Whether zones of this class may be public suffixes (co.uk, github.io: names of the ICANN or private ' +
          'section of the Public Suffix List, under which unrelated parties register names). Only for an ' +
          'installation that really operates such a suffix. Default: false (such a DNSZone gets ' +
          'Accepted=False, reason PublicSuffix).',
      }),
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
    topology: s.optional(topologySchema),
    geoip: s.optional(geoIpSchema),
    changeSafety: s.optional({
      ...changeSafetySchema,
      description: `${changeSafetySchema.description} A DNSZone may override each field.`,
    }),
    dnssec: s.optional({
      ...dnssecSchema,
      description: `${dnssecSchema.description} Defaults for the zones of this class; a DNSZone may override each field.`,
    }),
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
