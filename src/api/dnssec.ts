/**
 * DNSSEC settings shared by DNSZoneClass (defaults for its zones) and DNSZone (each field overrides the
 * class's), and the DNSSEC part of a zone's status.
 */
import { s } from './schema.ts';

export const DNSSEC_ALGORITHM_NAMES = ['ECDSAP256SHA256', 'ECDSAP384SHA384', 'ED25519'] as const;
export type DnssecAlgorithmSetting = (typeof DNSSEC_ALGORITHM_NAMES)[number];
export const DNSSEC_DENIALS = ['NSEC', 'NSEC3'] as const;
export const DNSSEC_KEY_MODES = ['CSK', 'Split'] as const;

export const dnssecSchema = s.object(
  {
    enabled: s.optional(
      s.boolean({
        description:
          'Whether the zone is signed (default false). Turning it off removes the keys: remove the DS at the ' +
          'parent first and wait for its TTL, or resolvers that validate will fail the zone.',
      }),
    ),
    algorithm: s.optional(
      s.string({
        description:
          'Signing algorithm: ECDSAP256SHA256 (13, default; RFC 6605), ECDSAP384SHA384 (14) or ED25519 (15; RFC 8080).',
        enum: DNSSEC_ALGORITHM_NAMES,
      }),
    ),
    denial: s.optional(
      s.string({
        description:
          'Authenticated denial of existence: NSEC (default; RFC 4034) or NSEC3 (RFC 5155) with the parameters of ' +
          'RFC 9276 — no extra iterations, no salt, no opt-out.',
        enum: DNSSEC_DENIALS,
      }),
    ),
    keys: s.optional(
      s.string({
        description:
          'CSK (default): one combined signing key, not rolled automatically. Split: a key-signing key and a ' +
          'zone-signing key.',
        enum: DNSSEC_KEY_MODES,
      }),
    ),
    zskLifetimeSeconds: s.optional(
      s.integer({
        description:
          'With keys: Split, how long a zone-signing key signs before Zonekeeper rolls it over by pre-publication ' +
          '(RFC 7583 §3.2.1; the steps wait for the DNSKEY TTL and the largest TTL plus the SOA refresh). ' +
          'Default 7776000 (90 days); 0: never.',
        minimum: 0,
        maximum: 315360000,
        format: 'int64',
      }),
    ),
  },
  { description: 'DNSSEC signing of the zone (RFC 4033-4035).' },
);

export const DEFAULT_ZSK_LIFETIME_SECONDS = 90 * 86400;

export interface Dnssec {
  enabled?: boolean;
  algorithm?: DnssecAlgorithmSetting;
  denial?: (typeof DNSSEC_DENIALS)[number];
  keys?: (typeof DNSSEC_KEY_MODES)[number];
  zskLifetimeSeconds?: number;
}

/** A zone's DNSSEC settings with the class's defaults and Zonekeeper's filled in. */
export interface EffectiveDnssec {
  algorithm: DnssecAlgorithmSetting;
  denial: (typeof DNSSEC_DENIALS)[number];
  keys: (typeof DNSSEC_KEY_MODES)[number];
  /** Split keys only: seconds a ZSK signs before it is rolled; 0 never. */
  zskLifetimeSeconds: number;
}

/** The zone's field wins over the class's; `undefined` when the zone is not signed. */
export function effectiveDnssec(
  zoneClass: Dnssec | undefined,
  zone: Dnssec | undefined,
): EffectiveDnssec | undefined {
  if (!(zone?.enabled ?? zoneClass?.enabled ?? false)) return undefined;
  return {
    algorithm: zone?.algorithm ?? zoneClass?.algorithm ?? 'ECDSAP256SHA256',
    denial: zone?.denial ?? zoneClass?.denial ?? 'NSEC',
    keys: zone?.keys ?? zoneClass?.keys ?? 'CSK',
    zskLifetimeSeconds:
      zone?.zskLifetimeSeconds ?? zoneClass?.zskLifetimeSeconds ?? DEFAULT_ZSK_LIFETIME_SECONDS,
  };
}

export const dnssecStatusSchema = s.object(
  {
    keys: s.optional(
      s.array(
        s.object(
          {
            keyTag: s.integer({
              description: 'The key tag (RFC 4034 Appendix B).',
              minimum: 0,
              maximum: 65535,
              format: 'int32',
            }),
            algorithm: s.integer({
              description: 'The DNSSEC algorithm number.',
              minimum: 0,
              maximum: 255,
              format: 'int32',
            }),
            role: s.string({ description: 'CSK, KSK or ZSK.', enum: ['CSK', 'KSK', 'ZSK'] }),
            active: s.boolean({ description: 'Whether the key signs.' }),
          },
          { description: 'One key of the zone.' },
        ),
        { description: 'The keys published in the zone DNSKEY RRset.', maxItems: 16 },
      ),
    ),
    ds: s.optional(
      s.array(
        s.string({
          description: 'A DS record in presentation form: key tag, algorithm, digest type, digest.',
          maxLength: 256,
        }),
        {
          description:
            "The DS records (SHA-256, RFC 4509) to give the parent zone's operator or the registrar, one per key-signing key.",
          maxItems: 16,
        },
      ),
    ),
    rollover: s.optional(
      s.object(
        {
          phase: s.string({
            description:
              'Active: one ZSK signs. Publish: its successor is published, not yet signing. Retire: the successor ' +
              'signs, the old key stays published until cached signatures of it expire.',
            enum: ['Active', 'Publish', 'Retire'],
          }),
          since: s.string({
            description: 'When the phase began (RFC 3339).',
            format: 'date-time',
            maxLength: 64,
          }),
          nextStep: s.string({
            description: 'When the next step is due (RFC 3339).',
            format: 'date-time',
            maxLength: 64,
          }),
        },
        { description: 'The automatic ZSK rollover (keys: Split).' },
      ),
    ),
    cds: s.optional(
      s.string({
        description:
          'Whether CDS/CDNSKEY (RFC 7344, RFC 8078) are published for the parent to pick up: Published or NotPublished.',
        enum: ['Published', 'NotPublished'],
      }),
    ),
  },
  { description: 'DNSSEC state of the zone, as the backend signs it.' },
);

export interface DnssecStatus {
  keys?: { keyTag: number; algorithm: number; role: 'CSK' | 'KSK' | 'ZSK'; active: boolean }[];
  ds?: string[];
  rollover?: { phase: 'Active' | 'Publish' | 'Retire'; since: string; nextStep: string };
  cds?: 'Published' | 'NotPublished';
}
