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
          'Whether the zone is signed (default false). Turning it off on a signed zone (built-in server) goes ' +
          'insecure safely (RFC 8078 §4): the zone stays signed and publishes the delete CDS/CDNSKEY until the ' +
          'parent is seen, or recorded in the dns.zonekeeper.dev/parent-ds annotation as "none", without a DS, ' +
          "then waits the parent's DS TTL, is served unsigned and its keys are removed. Other backends drop " +
          'signing at once: remove the DS at the parent first and wait for its TTL.',
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
    kskLifetimeSeconds: s.optional(
      s.integer({
        description:
          'With keys: Split, how long a key-signing key serves before Zonekeeper rolls it (double-KSK, RFC 7583 ' +
          "§3.3.1). The step that needs the parent's DS changed waits until the parent is seen holding the new " +
          'DS (a parent zone Zonekeeper manages on the same server, or the dns.zonekeeper.dev/parent-ds ' +
          'annotation). Default 0: never.',
        minimum: 0,
        maximum: 315360000,
        format: 'int64',
      }),
    ),
  },
  { description: 'DNSSEC signing of the zone (RFC 4033-4035).' },
);

export const DEFAULT_ZSK_LIFETIME_SECONDS = 90 * 86400;

/**
 * Annotation on a DNSZone recording the DS records its parent publishes, for a parent Zonekeeper cannot
 * see (a registrar): DS records in presentation form separated by `;`, optionally `ttl=<seconds>` (the
 * parent's DS TTL, default a day). An algorithm or KSK rollover waiting for the parent goes on when the
 * new DS is listed; `none` records that the parent publishes no DS (turning signing off goes on).
 */
export const PARENT_DS_ANNOTATION = 'dns.zonekeeper.dev/parent-ds';
export const DEFAULT_PARENT_DS_TTL_SECONDS = 86400;

/**
 * The annotation's DS records and TTL; undefined when absent or empty. The explicit marker `none`
 * (optionally `none; ttl=<seconds>`) records that the parent publishes no DS for the zone: with
 * signing turned off, the zone goes unsigned once that TTL has passed (RFC 8078 §4). A `none` beside
 * DS records is contradictory: the DS records win (the parent is taken to hold them).
 */
export function parseParentDsAnnotation(
  value: string | undefined,
): { ds: string[]; ttl: number } | undefined {
  const ds: string[] = [];
  let ttl = DEFAULT_PARENT_DS_TTL_SECONDS;
  let none = false;
  for (const part of (value ?? '').split(/[;\n]/)) {
    const item = part.trim();
    if (item === '') continue;
    const t = /^ttl=(\d{1,9})$/i.exec(item);
    if (t) ttl = Number(t[1]);
    else if (/^none$/i.test(item)) none = true;
    else if (/^\d{1,5}\s+\d{1,3}\s+\d{1,3}\s+[0-9a-f\s]+$/i.test(item)) ds.push(item.replace(/\s+/g, ' '));
  }
  return ds.length > 0 || none ? { ds, ttl } : undefined;
}

export interface Dnssec {
  enabled?: boolean;
  algorithm?: DnssecAlgorithmSetting;
  denial?: (typeof DNSSEC_DENIALS)[number];
  keys?: (typeof DNSSEC_KEY_MODES)[number];
  zskLifetimeSeconds?: number;
  kskLifetimeSeconds?: number;
}

/** A zone's DNSSEC settings with the class's defaults and Zonekeeper's filled in. */
export interface EffectiveDnssec {
  algorithm: DnssecAlgorithmSetting;
  denial: (typeof DNSSEC_DENIALS)[number];
  keys: (typeof DNSSEC_KEY_MODES)[number];
  /** Split keys only: seconds a ZSK signs before it is rolled; 0 never. */
  zskLifetimeSeconds: number;
  /** Split keys only: seconds a KSK serves before it is rolled; 0 never. */
  kskLifetimeSeconds: number;
  /** The DS the parent publishes as the operator recorded it (PARENT_DS_ANNOTATION), if any. */
  parentDs?: { ds: string[]; ttl: number };
  /**
   * Signing is turned off but the zone is still signed: it stays signed with its keys and publishes
   * the delete CDS/CDNSKEY (RFC 8078 §4) until the parent's DS is gone and its TTL has passed.
   */
  disable?: true;
}

/** The settings with the parent's DS as the annotation records it (unchanged when absent or empty). */
export function withParentDs(dnssec: EffectiveDnssec, annotation: string | undefined): EffectiveDnssec {
  const parentDs = parseParentDsAnnotation(annotation);
  return parentDs ? { ...dnssec, parentDs } : dnssec;
}

/** The signing settings a serial is recorded with (`status.signing`): a change of them is a new serial. */
export function signingId(dnssec: EffectiveDnssec): string {
  return `${dnssec.algorithm}/${dnssec.denial}/${dnssec.keys}${dnssec.disable ? '/delete' : ''}`;
}

/**
 * The settings a zone whose signing is turned off is still signed with while it goes insecure (RFC
 * 8078 §4): its settings as if enabled, with `disable`. Undefined when signing is on.
 */
export function disablingDnssec(
  zoneClass: Dnssec | undefined,
  zone: Dnssec | undefined,
): EffectiveDnssec | undefined {
  if (effectiveDnssec(zoneClass, zone) !== undefined) return undefined;
  return { ...effectiveDnssec(zoneClass, { ...zone, enabled: true })!, disable: true };
}

/**
 * Whether a zone whose signing is turned off is to stay signed while it goes insecure: it was signed
 * (its status has keys) and has not reached the Unsigned phase (RFC 8078 §4, dnssec-disable.ts).
 */
export function stillDisabling(status: DnssecStatus | undefined): boolean {
  if (!status?.keys || status.keys.length === 0) return false;
  return !(status.rollover?.kind === 'Disable' && status.rollover.phase === 'Unsigned');
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
    kskLifetimeSeconds: zone?.kskLifetimeSeconds ?? zoneClass?.kskLifetimeSeconds ?? 0,
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
            published: s.optional(
              s.boolean({
                description:
                  'Whether the key is in the DNSKEY RRset (false while an algorithm rollover signs with it hidden, ' +
                  'or withdraws it).',
              }),
            ),
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
          kind: s.optional(
            s.string({
              description:
                'ZSK: the zone-signing key rolls by pre-publication. Algorithm: every key is replaced by one of ' +
                'spec.dnssec.algorithm (RFC 6781 §4.1.4). KSK: the key-signing key rolls (double-KSK). ' +
                'Disable: signing is turned off and the zone goes insecure (RFC 8078 §4).',
              enum: ['ZSK', 'Algorithm', 'KSK', 'Disable'],
            }),
          ),
          phase: s.string({
            description:
              'ZSK — Active: one ZSK signs. Publish: its successor is published, not yet signing. Retire: the ' +
              'successor signs, the old key stays published until cached signatures of it expire. Algorithm ' +
              'and KSK — Sign: the new keys sign, unpublished. Publish: the new keys are published. DsChange: ' +
              'waiting for the parent to hold the DS in status.dnssec.ds. DsPropagate: the parent holds it; ' +
              'waiting for its DS TTL. Unpublish: the old keys are withdrawn from the DNSKEY RRset, their ' +
              'signatures stay until no cache holds them. Disable — Disabling: still signed, publishing the ' +
              'delete CDS/CDNSKEY, waiting for the parent to remove the DS. DsPropagate: the parent holds none; ' +
              'waiting for its DS TTL. Unsigned: served unsigned, the keys are removed.',
            enum: [
              'Active',
              'Publish',
              'Retire',
              'Sign',
              'DsChange',
              'DsPropagate',
              'Unpublish',
              'Disabling',
              'Unsigned',
            ],
          }),
          since: s.string({
            description: 'When the phase began (RFC 3339).',
            format: 'date-time',
            maxLength: 64,
          }),
          nextStep: s.optional(
            s.string({
              description: 'When the next step is due (RFC 3339); absent while it waits for the parent.',
              format: 'date-time',
              maxLength: 64,
            }),
          ),
          reason: s.optional(
            s.string({
              description:
                "While waiting for the parent's DS: ParentDsNotVisible (Zonekeeper cannot see the parent; the " +
                'message says what to give it and how to record that it did) or ParentDsPending; while turning ' +
                'signing off: ParentDsNotRemoved (the message names the DS to remove at the parent).',
              maxLength: 64,
            }),
          ),
          message: s.optional(s.string({ description: 'What the rollover waits for.', maxLength: 1024 })),
        },
        {
          description:
            'The automatic rollover in progress: of the ZSK (keys: Split), the algorithm or the KSK; or signing ' +
            'being turned off (kind Disable).',
        },
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
  keys?: {
    keyTag: number;
    algorithm: number;
    role: 'CSK' | 'KSK' | 'ZSK';
    active: boolean;
    published?: boolean;
  }[];
  ds?: string[];
  rollover?: {
    kind?: 'ZSK' | 'Algorithm' | 'KSK' | 'Disable';
    phase:
      | 'Active'
      | 'Publish'
      | 'Retire'
      | 'Sign'
      | 'DsChange'
      | 'DsPropagate'
      | 'Unpublish'
      | 'Disabling'
      | 'Unsigned';
    since: string;
    nextStep?: string;
    reason?: string;
    message?: string;
  };
  cds?: 'Published' | 'NotPublished';
}
