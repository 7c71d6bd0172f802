/** Domain (namespaced): a claim to a domain name, its ownership verified before names under it are used. */
import { AGE_COLUMN, type KindDefinition } from './kind.ts';
import {
  conditionsSchema,
  DNS1123_SUBDOMAIN,
  DOMAIN_NAME_PATTERN,
  type ObjectMeta,
  observedGenerationSchema,
  subdomainMessage,
  zoneDomainMessage,
} from './meta.ts';
import { type Infer, quote, s } from './schema.ts';

/** Condition types of a Domain: one per verification path, and Verified (any path). */
export const DomainCondition = {
  VerifiedDNSZone: 'VerifiedDNSZone',
  VerifiedDNS: 'VerifiedDNS',
  VerifiedHTTP: 'VerifiedHTTP',
  Verified: 'Verified',
} as const;

export const domainSpecSchema = s.object(
  {
    domainName: s.string({
      description:
        'The domain claimed, e.g. "example.com" or "shop.example.com" (at least two labels; the trailing dot is ' +
        'optional; case does not matter). Not a public suffix such as "co.uk" or "github.io". Immutable: to claim ' +
        'another domain, create another Domain.',
      minLength: 1,
      maxLength: 253,
      pattern: DOMAIN_NAME_PATTERN,
      patternMessage: zoneDomainMessage,
      rules: [
        {
          cel: 'self == oldSelf',
          message: 'domainName is immutable; create a new Domain instead',
          transition: true,
          code: 'IMMUTABLE',
          check: (self, oldSelf) => self === oldSelf,
          detail: (self, oldSelf) =>
            `domainName is immutable (was ${quote(String(oldSelf))}, now ${quote(self)}); create a new Domain instead`,
        },
      ],
    }),
    className: s.optional(
      s.string({
        description:
          'A DNSZoneClass whose domainVerification settings (the TXT record prefix) apply. Default: the class of ' +
          "the namespace's DNSZone for this domain, if any.",
        minLength: 1,
        maxLength: 253,
        pattern: DNS1123_SUBDOMAIN,
        patternMessage: subdomainMessage,
      }),
    ),
  },
  { description: 'The domain claimed.' },
);
export type DomainSpec = Infer<typeof domainSpecSchema>;

export const domainStatusSchema = s.object(
  {
    observedGeneration: observedGenerationSchema(),
    apex: s.optional(
      s.string({
        description:
          'The registrable domain (eTLD+1 through the Public Suffix List, private section included) that holds spec.domainName.',
        maxLength: 253,
      }),
    ),
    verification: s.optional(
      s.object(
        {
          dnsRecord: s.optional(
            s.object(
              {
                name: s.string({ description: 'Owner name of the TXT record to publish.', maxLength: 253 }),
                type: s.string({ description: 'Record type: TXT.', maxLength: 8 }),
                content: s.string({ description: 'The TXT record value.', maxLength: 255 }),
              },
              { description: 'The TXT record that proves control of the domain (VerifiedDNS).' },
            ),
          ),
          httpToken: s.optional(
            s.object(
              {
                url: s.string({ description: 'The URL that must answer 200.', maxLength: 2048 }),
                body: s.string({ description: 'The exact response body.', maxLength: 255 }),
              },
              { description: 'The HTTP resource that proves control of the domain (VerifiedHTTP).' },
            ),
          ),
          delegatedNameServers: s.optional(
            s.array(s.string({ description: 'An absolute host name.', maxLength: 253 }), {
              description: "The name servers the domain's parent delegates it to, as last seen over DNS.",
              maxItems: 32,
            }),
          ),
        },
        { description: 'How ownership is proven.' },
      ),
    ),
    registration: s.optional(
      s.object(
        {
          source: s.string({
            description: 'Where the data comes from: RDAP or WHOIS.',
            enum: ['RDAP', 'WHOIS'] as const,
          }),
          server: s.string({
            description: 'The RDAP base URL or WHOIS server that answered.',
            maxLength: 2048,
          }),
          registrar: s.optional(s.string({ description: 'The sponsoring registrar.', maxLength: 1024 })),
          registry: s.optional(
            s.string({ description: 'The registry (its RDAP or WHOIS server).', maxLength: 1024 }),
          ),
          created: s.optional(
            s.string({ description: 'When the domain was registered, as the registry says.', maxLength: 64 }),
          ),
          updated: s.optional(
            s.string({ description: 'When the registration last changed.', maxLength: 64 }),
          ),
          expires: s.optional(s.string({ description: 'When the registration expires.', maxLength: 64 })),
          statuses: s.optional(
            s.array(s.string({ description: 'An EPP or RDAP status.', maxLength: 256 }), {
              description: 'Registration statuses, e.g. client transfer prohibited.',
              maxItems: 32,
            }),
          ),
          dnssecSigned: s.optional(
            s.boolean({
              description: 'Whether the parent publishes DS records for the domain (DNSSEC delegation).',
            }),
          ),
          nameservers: s.optional(
            s.array(s.string({ description: 'A host name.', maxLength: 253 }), {
              description:
                'The name servers the registration lists (for information; verification asks DNS).',
              maxItems: 32,
            }),
          ),
          abuseEmail: s.optional(
            s.string({ description: "The registrar's abuse contact e-mail.", maxLength: 1024 }),
          ),
          abusePhone: s.optional(
            s.string({ description: "The registrar's abuse contact phone.", maxLength: 256 }),
          ),
          refreshed: s.string({ description: 'When the data was read.', format: 'date-time' }),
        },
        { description: "The apex's registration data: RDAP first, WHOIS as the fallback; refreshed daily." },
      ),
    ),
    conditions: conditionsSchema(
      'VerifiedDNSZone: the parent delegates the domain to name servers of its own DNSZone in this namespace. ' +
        'VerifiedDNS: the TXT record of status.verification.dnsRecord is published. ' +
        'VerifiedHTTP: the URL of status.verification.httpToken answers its body. ' +
        'Verified: one of them holds, and no older Domain of another namespace holds the name. ' +
        'RegistrationExpiring: the registration expires soon (or has expired); Unknown without registration data.',
    ),
  },
  { description: 'Observed state of the domain.' },
);
export type DomainStatus = Infer<typeof domainStatusSchema>;

export interface Domain {
  apiVersion: string;
  kind: 'Domain';
  metadata: ObjectMeta;
  spec: DomainSpec;
  status?: DomainStatus;
}

export const domainDefinition: KindDefinition<'Domain'> = {
  kind: 'Domain',
  plural: 'domains',
  singular: 'domain',
  listKind: 'DomainList',
  shortNames: ['dnsdom'],
  scope: 'Namespaced',
  description:
    'Domain is a claim to a domain name by a namespace. Ownership is verified by delegation to the ' +
    "namespace's own zone, a TXT record or an HTTP token, and re-confirmed periodically; classes that " +
    'require it serve zones only under a verified Domain.',
  spec: domainSpecSchema,
  status: domainStatusSchema,
  printerColumns: [
    { name: 'Domain', type: 'string', jsonPath: '.spec.domainName' },
    { name: 'Apex', type: 'string', jsonPath: '.status.apex' },
    {
      name: 'Verified',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Verified")].status',
      description: 'Whether ownership is verified.',
    },
    AGE_COLUMN,
  ],
};
