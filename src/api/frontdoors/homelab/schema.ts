/**
 * The homelab DNS operator's API (`dns.homelab.mortenolsen.pro/v1alpha1`): `DNSClass` (a provider
 * reached over the HMAC-signed webhook protocol) and `DNSRecord` (one record pushed to the provider of
 * its class), with the upstream field names so that its manifests apply unchanged. Every CEL rule has
 * its TypeScript twin, so the manifests folder refuses exactly what the API server refuses.
 */
import { isIP } from 'node:net';
import { type Infer, quote, s } from '../../schema.ts';

/** A label of a domain name: letters, digits, '-' and '_' (`_sip`), 1–63 characters. */
const LABEL = '[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?';
/** A domain name of at least two labels, trailing dot optional. */
export const HOMELAB_DOMAIN_PATTERN = `^(${LABEL}\\.)+${LABEL}\\.?$`;
/** `@` (the domain itself) or a relative name: one label, or several for `_sip._tcp`. */
export const HOMELAB_SUBDOMAIN_PATTERN = `^(@|${LABEL}(\\.${LABEL})*)$`;
/** An http or https URL with a host. */
export const HOMELAB_SERVER_PATTERN = '^https?://[^\\s/?#]+([/?#]\\S*)?$';

const DOMAIN_RE = new RegExp(HOMELAB_DOMAIN_PATTERN);

/** CEL's `isIP(v) && ip(v).family() == f`: dotted-quad IPv4 or IPv6 without a zone, no IPv4-mapped IPv6. */
export function isAddressOfFamily(value: string, family: 4 | 6): boolean {
  if (isIP(value) !== family) return false;
  if (family === 4) return true;
  return !value.includes('%') && !/^(0{0,4}:){0,5}:?ffff:/i.test(value);
}

const positiveTtl = s.integer({
  description: 'TTL in seconds.',
  minimum: 1,
  maximum: 2147483647,
  format: 'int32',
});

export const dnsClassSpecSchema = s.object(
  {
    server: s.string({
      description:
        'Base URL of the DNS provider webhook service, http or https (e.g. http://dns.dns.svc:7100).',
      minLength: 8,
      maxLength: 2048,
      pattern: HOMELAB_SERVER_PATTERN,
      patternMessage: 'is not an http(s) URL; write e.g. "http://cloudflare-dns.dns.svc:7100"',
    }),
    defaultTTL: s.optional({
      ...positiveTtl,
      description: 'TTL for records of this class that set none. Default 300.',
    }),
    timeoutSeconds: s.optional(
      s.integer({
        description: 'Timeout of each request to the provider, in seconds. Default 30.',
        minimum: 1,
        maximum: 3600,
      }),
    ),
    hmacAuth: s.optional(
      s.object(
        {
          secretRef: s.optional(
            s.object(
              {
                name: s.string({
                  description:
                    'Name of the Kubernetes Secret. In folder mode: "file:<path>" or "env:<VARIABLE>" instead.',
                  minLength: 1,
                  maxLength: 4096,
                }),
                namespace: s.optional(s.string({ description: 'Namespace of the Secret.', maxLength: 63 })),
                key: s.optional(
                  s.string({ description: 'Key in the Secret holding the shared secret.', maxLength: 253 }),
                ),
              },
              { description: 'The shared secret, by reference (preferred).' },
            ),
          ),
          secret: s.optional(
            s.string({
              description: 'The shared secret inline (for testing only).',
              minLength: 1,
              maxLength: 4096,
            }),
          ),
          algorithm: s.optional(
            s.string<'SHA256' | 'SHA512'>({
              description: 'HMAC algorithm. Default SHA256.',
              enum: ['SHA256', 'SHA512'],
            }),
          ),
        },
        {
          description: 'HMAC request signing: headers X-DNS-Timestamp, X-DNS-Nonce and X-DNS-Signature.',
          rules: [
            {
              cel: 'has(self.secretRef) != has(self.secret)',
              message: 'hmacAuth needs exactly one of secretRef or secret',
              code: 'InvalidConfiguration',
              check: (self) => (self.secretRef === undefined) !== (self.secret === undefined),
            },
          ],
        },
      ),
    ),
  },
  { description: 'A DNS provider reached through the homelab DNS webhook protocol.' },
);
export type DNSClassSpec = Infer<typeof dnsClassSpecSchema>;

const condition = s.object(
  {
    type: s.string({ description: 'Ready.', maxLength: 316 }),
    status: s.string({ description: 'True, False or Unknown.', enum: ['True', 'False', 'Unknown'] }),
    observedGeneration: s.optional(
      s.integer({ description: 'The generation this condition describes.', minimum: 0 }),
    ),
    lastTransitionTime: s.string({ description: 'When the status last changed.', format: 'date-time' }),
    reason: s.string({ description: 'Why, in CamelCase.', maxLength: 1024 }),
    message: s.string({ description: 'Human-readable details.', maxLength: 32768 }),
  },
  { description: 'A condition (metav1.Condition).' },
);
const conditions = s.optional(
  s.array(condition, { description: 'Ready.', listType: 'map', listMapKeys: ['type'], maxItems: 8 }),
);

export const dnsClassStatusSchema = s.object(
  {
    conditions,
    lastHealthCheck: s.optional(
      s.string({ description: 'When /health was last asked.', format: 'date-time' }),
    ),
    health: s.optional(
      s.object(
        {
          status: s.string({
            description: 'Healthy, Unhealthy or Unknown.',
            enum: ['Healthy', 'Unhealthy', 'Unknown'],
          }),
          lastCheck: s.optional(s.string({ description: 'When it was checked.', format: 'date-time' })),
          message: s.optional(
            s.string({ description: 'What the provider or the check said.', maxLength: 4096 }),
          ),
        },
        { description: 'Provider health (informational: it never blocks records).' },
      ),
    ),
    observedGeneration: s.optional(s.integer({ description: 'The generation last checked.', minimum: 0 })),
  },
  { description: 'Provider health.' },
);
export type DNSClassStatus = Infer<typeof dnsClassStatusSchema>;

export const HOMELAB_TYPES = ['A', 'CNAME', 'AAAA', 'TXT', 'MX', 'SRV', 'NS'] as const;

const u16 = (description: string) => s.optional(s.integer({ description, minimum: 0, maximum: 65535 }));

const allDomains = (values: readonly string[]) => values.every((v) => DOMAIN_RE.test(v));
const DOMAIN_CEL = `self.values.all(v, v.matches('${HOMELAB_DOMAIN_PATTERN.replaceAll('\\', '\\\\')}'))`;

export const dnsRecordSpecSchema = s.object(
  {
    type: s.string<(typeof HOMELAB_TYPES)[number]>({
      description: 'Record type: A, CNAME, AAAA, TXT, MX, SRV or NS.',
      enum: HOMELAB_TYPES,
    }),
    domain: s.string({
      description: 'The domain, e.g. "example.com".',
      minLength: 1,
      maxLength: 253,
      pattern: HOMELAB_DOMAIN_PATTERN,
      patternMessage: 'is not a domain name; write e.g. "example.com"',
    }),
    subdomain: s.string({
      description: '"@" for the domain itself, or the name below it ("www", "_sip._tcp").',
      minLength: 1,
      maxLength: 253,
      pattern: HOMELAB_SUBDOMAIN_PATTERN,
      patternMessage: 'is not a subdomain; write a label such as "www", or "@" for the domain itself',
    }),
    dnsClassRef: s.object(
      { name: s.string({ description: 'Name of the DNSClass.', minLength: 1, maxLength: 253 }) },
      { description: 'The DNSClass (provider) this record is pushed to.' },
    ),
    values: s.array(s.string({ description: 'One value.', maxLength: 512 }), {
      description:
        'The record values: addresses (A, AAAA), one name (CNAME), names (MX, NS, SRV target), text (TXT).',
      minItems: 1,
      maxItems: 16,
    }),
    ttl: s.optional({
      ...positiveTtl,
      description: 'TTL override (default: the class defaultTTL, else 300).',
    }),
    description: s.optional(s.string({ description: 'Notes.', maxLength: 1024 })),
    metadata: s.optional(
      s.object(
        {
          priority: u16('MX and SRV priority.'),
          weight: u16('SRV weight.'),
          port: u16('SRV port.'),
        },
        { description: 'Record-specific data: MX priority; SRV priority, weight and port.' },
      ),
    ),
  },
  {
    description: 'A DNS record pushed to the provider of its DNSClass.',
    rules: [
      {
        cel: "self.type != 'A' || self.values.all(v, isIP(v) && ip(v).family() == 4)",
        message: 'A record values must be IPv4 addresses',
        fieldPath: '.values',
        code: 'ValidationFailed',
        check: (self) => self.type !== 'A' || self.values.every((v) => isAddressOfFamily(v, 4)),
        detail: (self) =>
          `A record values must be IPv4 addresses: ${self.values
            .filter((v) => !isAddressOfFamily(v, 4))
            .map(quote)
            .join(', ')}`,
      },
      {
        cel: "self.type != 'AAAA' || self.values.all(v, isIP(v) && ip(v).family() == 6)",
        message: 'AAAA record values must be IPv6 addresses',
        fieldPath: '.values',
        code: 'ValidationFailed',
        check: (self) => self.type !== 'AAAA' || self.values.every((v) => isAddressOfFamily(v, 6)),
        detail: (self) =>
          `AAAA record values must be IPv6 addresses: ${self.values
            .filter((v) => !isAddressOfFamily(v, 6))
            .map(quote)
            .join(', ')}`,
      },
      {
        cel: "self.type != 'CNAME' || size(self.values) == 1",
        message: 'a CNAME record has exactly one value',
        fieldPath: '.values',
        code: 'ValidationFailed',
        check: (self) => self.type !== 'CNAME' || self.values.length === 1,
      },
      {
        cel: `!(self.type in ['CNAME', 'MX', 'NS', 'SRV']) || ${DOMAIN_CEL}`,
        message: 'CNAME, MX, NS and SRV values must be domain names (e.g. "mail.example.com")',
        fieldPath: '.values',
        code: 'ValidationFailed',
        check: (self) => !['CNAME', 'MX', 'NS', 'SRV'].includes(self.type) || allDomains(self.values),
        detail: (self) =>
          `${self.type} values must be domain names: ${self.values
            .filter((v) => !DOMAIN_RE.test(v))
            .map(quote)
            .join(', ')}`,
      },
      {
        cel: "self.type != 'MX' || (has(self.metadata) && has(self.metadata.priority))",
        message: 'an MX record needs metadata.priority',
        fieldPath: '.metadata',
        reason: 'FieldValueRequired',
        code: 'ValidationFailed',
        check: (self) => self.type !== 'MX' || self.metadata?.priority !== undefined,
      },
      {
        cel: "self.type != 'SRV' || (has(self.metadata) && has(self.metadata.priority) && has(self.metadata.weight) && has(self.metadata.port))",
        message: 'an SRV record needs metadata.priority, metadata.weight and metadata.port',
        fieldPath: '.metadata',
        reason: 'FieldValueRequired',
        code: 'ValidationFailed',
        check: (self) =>
          self.type !== 'SRV' ||
          (self.metadata?.priority !== undefined &&
            self.metadata.weight !== undefined &&
            self.metadata.port !== undefined),
      },
    ],
  },
);
export type DNSRecordSpec = Infer<typeof dnsRecordSpecSchema>;

export const dnsRecordStatusSchema = s.object(
  {
    conditions,
    state: s.optional(
      s.string({
        description: 'Created, Updated, Deleted, Error or Pending.',
        enum: ['Created', 'Updated', 'Deleted', 'Error', 'Pending'],
      }),
    ),
    lastSyncTime: s.optional(
      s.string({ description: 'When the provider last accepted the record.', format: 'date-time' }),
    ),
    fqdn: s.optional(s.string({ description: 'The full name (subdomain.domain).', maxLength: 507 })),
    observedGeneration: s.optional(s.integer({ description: 'The generation last reconciled.', minimum: 0 })),
    error: s.optional(
      s.object(
        {
          code: s.string({ description: 'Stable error code.', maxLength: 128 }),
          message: s.string({ description: 'What went wrong and what to do.', maxLength: 4096 }),
          timestamp: s.string({ description: 'When.', format: 'date-time' }),
        },
        { description: 'The last error, while there is one.' },
      ),
    ),
  },
  { description: 'Whether the record is at its provider.' },
);
export type DNSRecordStatus = Infer<typeof dnsRecordStatusSchema>;
