/** API group constants, object metadata, conditions and the field schemas the kinds share. */
import { type Infer, quote, s } from './schema.ts';

export const GROUP = 'dns.zonekeeper.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = 'dns.zonekeeper.dev/v1alpha1';

/** The subset of Kubernetes ObjectMeta that Zonekeeper reads and keeps. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
}

export const ConditionType = { Accepted: 'Accepted', Programmed: 'Programmed', Ready: 'Ready' } as const;
export type ConditionTypeName = (typeof ConditionType)[keyof typeof ConditionType];

/** Condition reasons: CamelCase and stable (tools match on them); the messages are for people. */
export const Reason = {
  Accepted: 'Accepted',
  Invalid: 'Invalid',
  Conflict: 'Conflict',
  NotDelegated: 'NotDelegated',
  ZoneShadowed: 'ZoneShadowed',
  PublicSuffix: 'PublicSuffix',
  DomainNotVerified: 'DomainNotVerified',
  ZoneNotFound: 'ZoneNotFound',
  ClassNotFound: 'ClassNotFound',
  BackendUnreachable: 'BackendUnreachable',
  BackendRejected: 'BackendRejected',
  Pending: 'Pending',
  ChangeHeld: 'ChangeHeld',
  Programmed: 'Programmed',
  OutOfZone: 'OutOfZone',
  Ready: 'Ready',
  NotReady: 'NotReady',
} as const;
export type ReasonName = (typeof Reason)[keyof typeof Reason];

// ---------------------------------------------------------------------------------------------------
// Patterns (common subset of RE2 and ECMAScript)

/** RFC 1123 label as Kubernetes uses it for namespaces: lowercase alphanumerics and '-', ≤ 63. */
export const DNS1123_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** RFC 1123 subdomain as Kubernetes uses it for object names: dot-separated labels, ≤ 253. */
export const DNS1123_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

/** A DNS label of a domain name: letters, digits, '-' and '_' (for `_acme-challenge`-style zones), 1-63. */
const DOMAIN_LABEL = '[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?';
/** A host name label (RFC 952/1123): letters, digits and '-', 1-63. */
const HOST_LABEL = '[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?';

/** A domain name of at least two labels; the trailing dot is optional; any letter case. */
export const DOMAIN_NAME_PATTERN = `^(${DOMAIN_LABEL}\\.)+${DOMAIN_LABEL}\\.?$`;
/** An absolute host name: ends with a dot. */
export const ABSOLUTE_HOST_PATTERN = `^(${HOST_LABEL}\\.)+$`;
/** A delegation name pattern relative to the zone: `@`, `*`, `api`, `*.apps`, `a.b`. */
export const NAME_PATTERN_PATTERN = `^(@|\\*|(\\*\\.)?${DOMAIN_LABEL}(\\.${DOMAIN_LABEL})*)$`;
/** An SOA responsible mailbox: `hostmaster@example.com` or the domain-name form `hostmaster.example.com.`. */
export const MAILBOX_PATTERN = `^([-A-Za-z0-9!#$%&'*+/=?^_{|}~.]+@(${DOMAIN_LABEL}\\.)*${DOMAIN_LABEL}\\.?|([-A-Za-z0-9_]|\\\\\\.)+(\\.${DOMAIN_LABEL})*\\.?)$`;

export const MAX_TTL = 2147483647;

// ---------------------------------------------------------------------------------------------------
// Shared field schemas

export function ttlSchema(description: string) {
  return s.integer({ description, minimum: 1, maximum: MAX_TTL, format: 'int32' });
}

/** A 32-bit SOA timer in seconds. */
function soaTimer(description: string) {
  return s.optional(s.integer({ description, minimum: 1, maximum: MAX_TTL, format: 'int32' }));
}

export const soaOverridesSchema = s.object(
  {
    rname: s.optional(
      s.string({
        description:
          'Mailbox of the person responsible for the zone, as an address ("hostmaster@example.com") or in ' +
          'domain-name form ("hostmaster.example.com."; a name without the trailing dot is relative to the ' +
          'zone). Default: hostmaster.<zone>.',
        minLength: 1,
        maxLength: 253,
        pattern: MAILBOX_PATTERN,
        patternMessage:
          'is not a mailbox; use an address like "hostmaster@example.com" or a domain name like "hostmaster.example.com."',
      }),
    ),
    refresh: soaTimer(
      'Seconds a secondary waits before checking the primary for a new serial. Default: 3600.',
    ),
    retry: soaTimer('Seconds a secondary waits before retrying a failed refresh. Default: 600.'),
    expire: soaTimer(
      'Seconds after which a secondary that cannot refresh stops answering. Default: 1209600.',
    ),
    minimum: soaTimer('TTL for negative answers (NXDOMAIN/NODATA, RFC 2308). Default: 300.'),
  },
  { description: 'Overrides for the generated SOA record. The serial is always managed by Zonekeeper.' },
);
export type SOAOverrides = Infer<typeof soaOverridesSchema>;

export const objectRefSchema = s.object(
  {
    namespace: s.string({ description: 'Namespace of the object.', maxLength: 63 }),
    name: s.string({ description: 'Name of the object.', maxLength: 253 }),
  },
  { description: 'A namespaced object.' },
);
export type ObjectRef = Infer<typeof objectRefSchema>;

/** metav1.Condition, as the Kubernetes API conventions define it. */
export const conditionSchema = s.object(
  {
    type: s.string({
      description: 'Type of condition in CamelCase: Accepted, Programmed or Ready.',
      maxLength: 316,
      pattern:
        '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    }),
    status: s.string({ description: 'Status of the condition.', enum: ['True', 'False', 'Unknown'] }),
    reason: s.string({
      description: "Programmatic identifier of the condition's last transition, in CamelCase.",
      minLength: 1,
      maxLength: 1024,
      pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
    }),
    message: s.string({ description: 'Human-readable details about the transition.', maxLength: 32768 }),
    observedGeneration: s.optional(
      s.integer({
        description: 'The .metadata.generation the condition was set for.',
        minimum: 0,
        format: 'int64',
      }),
    ),
    lastTransitionTime: s.string({
      description: 'Last time the condition changed status.',
      format: 'date-time',
    }),
  },
  { description: 'The state of one aspect of the object.' },
);
export type Condition = Infer<typeof conditionSchema>;

export function conditionsSchema(description: string) {
  return s.optional(s.array(conditionSchema, { description, listType: 'map', listMapKeys: ['type'] }));
}

export function observedGenerationSchema() {
  return s.optional(
    s.integer({
      description: 'The .metadata.generation the status was computed for.',
      minimum: 0,
      format: 'int64',
    }),
  );
}

/**
 * A valid Kubernetes name close to `value` (lowercased, other characters turned into "-", ends trimmed),
 * or undefined when there is none or it would be the same text.
 */
function validNameLike(value: string, subdomain: boolean): string | undefined {
  const label = (text: string) => text.replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '');
  const lower = value.toLowerCase();
  let name = subdomain
    ? lower
        .split('.')
        .map(label)
        .filter((l) => l.length > 0)
        .join('.')
    : label(lower.replace(/\./g, '-'));
  name = name.slice(0, subdomain ? 253 : 63).replace(/[-.]+$/, '');
  const pattern = new RegExp(subdomain ? DNS1123_SUBDOMAIN : DNS1123_LABEL);
  return name !== value && pattern.test(name) ? name : undefined;
}

/** `name must be ...` message helper for Kubernetes object names. */
export function subdomainMessage(value: string): string {
  const suggestion = validNameLike(value, true);
  const hint = suggestion !== undefined ? `; try ${quote(suggestion)}` : '';
  return `is not a valid name: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit${hint}`;
}

export function labelMessage(value: string): string {
  const suggestion = validNameLike(value, false);
  const hint = suggestion !== undefined ? `; try ${quote(suggestion)}` : '';
  return `is not a valid namespace name: use lowercase letters, digits and '-', starting and ending with a letter or digit (at most 63)${hint}`;
}

/**
 * What is wrong with a zone domain name that fails DOMAIN_NAME_PATTERN, told precisely: an empty label,
 * a single label, a label that is too long, a character a label cannot have, or a hyphen at a label's end.
 */
export function zoneDomainMessage(value: string): string {
  const name = value.endsWith('.') ? value.slice(0, -1) : value;
  const labels = name.split('.');
  if (labels.some((l) => l.length === 0)) {
    return 'has an empty label (a leading or doubled "."); remove the extra dot';
  }
  if (labels.length < 2) {
    return 'is not a valid zone name: use a domain name of at least two labels, e.g. "example.com"';
  }
  for (const l of labels) {
    if (l.length > 63) {
      return `has a label of ${l.length} characters (${quote(`${l.slice(0, 16)}...`)}); a label is at most 63 (RFC 1035 §2.3.4)`;
    }
    const bad = /[^A-Za-z0-9_-]/u.exec(l);
    if (bad) {
      const hint = /[^\x00-\x7f]/u.test(bad[0])
        ? '; write an internationalised name in its IDNA A-label ("xn--...") form'
        : '';
      return `is not a valid domain name: label ${quote(l)} contains ${quote(bad[0])}; labels are letters, digits, "-" and "_"${hint}`;
    }
    if (l.startsWith('-')) return `is not a valid domain name: label ${quote(l)} starts with "-"; remove it`;
    if (l.endsWith('-')) return `is not a valid domain name: label ${quote(l)} ends with "-"; remove it`;
  }
  return 'is not a valid domain name: labels are 1-63 letters, digits, "-" or "_", not starting or ending with "-"';
}
