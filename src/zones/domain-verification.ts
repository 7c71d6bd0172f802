/**
 * Domain ownership verification, the decisions without the I/O: a domain's apex through the Public
 * Suffix List, the challenge names, the retry schedule, which addresses an HTTP challenge may reach,
 * and the conditions that follow from what the look-ups found. The look-ups themselves live in
 * src/domains/ and the controller in src/control/domain-controller.ts.
 */
import { parse } from 'tldts';
import type { Condition, DNSZone, DNSZoneClass, Domain } from '../api/index.ts';
import { embeddedIPv4, parseIPv4, parseIPv6 } from '../dns/ip.ts';
import { compareByAge, type ResourceKey, resourceKey } from './resource-key.ts';
import { domainText, hasZoneNameServers, zoneNameServers } from './zone-name-servers.ts';

export const DEFAULT_TXT_PREFIX = '_zonekeeper-challenge';
/** The path of the HTTP challenge; the token follows. */
export const HTTP_CHALLENGE_PATH = '/.well-known/zonekeeper-challenge/';

const PSL = {
  allowPrivateDomains: true,
  detectIp: false,
  extractHostname: false,
  mixedInputs: false,
  validateHostname: false,
} as const;

export type ApexResult = { apex: string } | { error: string };

/**
 * The registrable domain holding `domainName` (eTLD+1 by the Public Suffix List, private section
 * included: `shop.example.co.uk` → `example.co.uk`, `me.github.io` → `me.github.io`), or why there is
 * none: a public suffix itself (`co.uk`, `github.io`) is owned by nobody who could prove it here.
 */
export function domainApex(domainName: string): ApexResult {
  const host = domainText(domainName);
  const result = parse(host, PSL);
  if (result.publicSuffix === host || result.domain === null) {
    const section = result.isPrivate ? 'private' : 'ICANN';
    return {
      error:
        `${host} is a public suffix (${section} section of the Public Suffix List): names under it belong to ` +
        'unrelated parties, so it cannot be claimed; claim your own domain below it, e.g. "example.' +
        `${host}"`,
    };
  }
  return { apex: result.domain };
}

/** The owner name of the TXT challenge, without the trailing dot. */
export function txtChallengeName(domainName: string, prefix = DEFAULT_TXT_PREFIX): string {
  return `${prefix}.${domainText(domainName)}`;
}

/** The URL of the HTTP challenge (port 80 unless a test gives another). */
export function httpChallengeUrl(domainName: string, token: string, port = 80): string {
  return `http://${domainText(domainName)}${port === 80 ? '' : `:${port}`}${HTTP_CHALLENGE_PATH}${token}`;
}

// ---------------------------------------------------------------------------------------------------
// Schedule

/** Retry every `everyMs` while the first failure is less than `untilMs` ago. */
export interface ScheduleStep {
  everyMs: number;
  untilMs: number;
}

export interface RetrySchedule {
  steps: ScheduleStep[];
  /** After the last step. */
  thenEveryMs: number;
  /** ± this fraction of each delay, at random (0.25: ±25 %). */
  jitter: number;
}

/** Every 5 s for 5 minutes, then every minute up to 15 minutes, then every 5 minutes, ±25 %. */
export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = {
  steps: [
    { everyMs: 5_000, untilMs: 5 * 60_000 },
    { everyMs: 60_000, untilMs: 15 * 60_000 },
  ],
  thenEveryMs: 5 * 60_000,
  jitter: 0.25,
};

/** How long after `elapsedMs` of failing the next attempt waits; `random` is uniform in [0, 1). */
export function retryDelayMs(schedule: RetrySchedule, elapsedMs: number, random: number): number {
  const step = schedule.steps.find((s) => elapsedMs < s.untilMs);
  const base = step ? step.everyMs : schedule.thenEveryMs;
  return Math.max(1, Math.round(base * (1 + schedule.jitter * (2 * random - 1))));
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A duration such as `500ms`, `5s`, `1m`, `24h`. */
export function parseDuration(text: string): number | undefined {
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)$/.exec(text.trim());
  return m ? Math.round(Number(m[1]) * UNITS[m[2]!]!) : undefined;
}

/**
 * A schedule written as `<every>/<until>,...,<every>[±<percent>%]`, e.g. the default
 * `5s/5m,1m/15m,5m±25%`. Throws with what to fix.
 */
export function parseRetrySchedule(text: string): RetrySchedule {
  const fail = (why: string): never => {
    throw new Error(
      `retry schedule ${JSON.stringify(text)}: ${why}; write e.g. "5s/5m,1m/15m,5m±25%" (every 5 s for 5 minutes, ...)`,
    );
  };
  let body = text.trim();
  let jitter = 0.25;
  const j = /(?:±|\+-)([0-9]+(?:\.[0-9]+)?)%$/.exec(body);
  if (j) {
    jitter = Number(j[1]) / 100;
    if (jitter >= 1) fail('the jitter must be below 100 %');
    body = body.slice(0, j.index);
  }
  const parts = body.split(',').map((p) => p.trim());
  const last = parts.pop();
  const thenEveryMs = last === undefined ? undefined : parseDuration(last);
  if (thenEveryMs === undefined || thenEveryMs <= 0) return fail('the last part must be one duration');
  const steps: ScheduleStep[] = [];
  for (const p of parts) {
    const [every, until] = p.split('/');
    const everyMs = every === undefined ? undefined : parseDuration(every);
    const untilMs = until === undefined ? undefined : parseDuration(until);
    if (everyMs === undefined || untilMs === undefined || everyMs <= 0)
      return fail(`${JSON.stringify(p)} is not <every>/<until>`);
    if (steps.length > 0 && untilMs <= steps.at(-1)!.untilMs)
      fail('each <until> must be later than the one before');
    steps.push({ everyMs, untilMs });
  }
  return { steps, thenEveryMs, jitter };
}

// ---------------------------------------------------------------------------------------------------
// Addresses an HTTP challenge may reach

/** A network as address bytes and prefix length. */
export interface Network {
  bytes: Uint8Array;
  bits: number;
}

/** Parses `192.0.2.0/24`, `2001:db8::/32` or a bare address (one host); undefined when invalid. */
export function parseNetwork(text: string): Network | undefined {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const bytes = parseIPv4(address) ?? parseIPv6(address);
  if (!bytes) return undefined;
  const bits = slash < 0 ? bytes.length * 8 : Number(text.slice(slash + 1));
  if (!Number.isInteger(bits) || bits < 0 || bits > bytes.length * 8) return undefined;
  return { bytes, bits };
}

function inNetwork(address: Uint8Array, network: Network): boolean {
  if (address.length !== network.bytes.length) return false;
  for (let bit = 0; bit < network.bits; bit++) {
    const mask = 0x80 >> (bit % 8);
    if ((address[bit >> 3]! & mask) !== (network.bytes[bit >> 3]! & mask)) return false;
  }
  return true;
}

/**
 * Where verification never connects unless allow-listed (the HTTP challenge, and the parent zone's
 * servers asked for a delegation): private networks (RFC 1918 10/8, 172.16/12, 192.168/16; RFC 6598
 * shared 100.64/10; RFC 4193 unique local fc00::/7) — a tenant must not reach or map the cluster's
 * own network through it — link-local (cloud metadata services live there: 169.254.169.254,
 * fd00:ec2::254), loopback, "this network", unspecified, multicast, broadcast, Alibaba Cloud's
 * metadata address, Azure's host address (168.63.129.16, as the health probes' guard) and
 * IPv4-mapped IPv6. An IPv6 address that carries an IPv4 one (see
 * `embeddedIPv4` in src/dns/ip.ts) is judged as that IPv4 address too.
 */
const BLOCKED = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.100.100.200/32',
  '168.63.129.16/32',
  '224.0.0.0/4',
  '255.255.255.255/32',
  '::/128',
  '::1/128',
  'fc00::/7',
  'fe80::/10',
  'ff00::/8',
  '::ffff:0:0/96',
].map((n) => parseNetwork(n)!);

/**
 * Whether verification may connect to `address`: not in the blocked ranges, or inside one of the
 * `allow` networks (e.g. a test's 127.0.0.1/32). Unparsable addresses are refused.
 */
export function challengeAddressAllowed(address: string, allow: readonly Network[] = []): boolean {
  const bytes = parseIPv4(address) ?? parseIPv6(address);
  if (!bytes) return false;
  const v4 = embeddedIPv4(bytes);
  for (const form of v4 ? [bytes, v4] : [bytes]) {
    if (allow.some((n) => inNetwork(form, n))) continue;
    if (BLOCKED.some((n) => inNetwork(form, n))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------
// Which zone proves a delegation, which Domain covers a zone, which claim is older

/** The namespace's accepted DNSZone for exactly this domain, if any. */
export function zoneForDomain(domain: Domain, zones: readonly DNSZone[]): DNSZone | undefined {
  const name = domainText(domain.spec.domainName);
  return zones.find(
    (z) =>
      z.metadata.namespace === domain.metadata.namespace &&
      !z.metadata.deletionTimestamp &&
      domainText(z.spec.domainName) === name,
  );
}

export type DelegationCheck =
  | { kind: 'noZone'; message: string }
  | { kind: 'sharedNameServers'; message: string }
  | { kind: 'check'; zone: DNSZone; nameServers: string[] };

/**
 * Whether the delegated-zone path can prove anything for this Domain: only when the namespace has a
 * DNSZone for the domain whose class gives it name servers of its own. Shared name servers prove that
 * the domain points at this provider, not at this tenant: any namespace could claim it first.
 */
export function delegationCheck(
  domain: Domain,
  zones: readonly DNSZone[],
  classes: ReadonlyMap<string, DNSZoneClass>,
): DelegationCheck {
  const zone = zoneForDomain(domain, zones);
  if (!zone)
    return {
      kind: 'noZone',
      message: `no DNSZone for ${domainText(domain.spec.domainName)} in namespace ${domain.metadata.namespace}; publish the TXT record or the HTTP token instead`,
    };
  const zoneClass = classes.get(zone.spec.className);
  if (!zoneClass)
    return {
      kind: 'noZone',
      message: `DNSZone ${zone.metadata.name} names DNSZoneClass ${zone.spec.className}, which does not exist`,
    };
  if (!hasZoneNameServers(zoneClass))
    return {
      kind: 'sharedNameServers',
      message:
        `DNSZoneClass ${zoneClass.metadata.name} gives every zone the same name servers, so a delegation to them ` +
        'shows that the domain points at this DNS service, not at this namespace (any namespace could claim it ' +
        'first); publish the TXT record or the HTTP token, or use a class with spec.zoneNameServers',
    };
  return { kind: 'check', zone, nameServers: zoneNameServers(zone, zoneClass).map(domainText) };
}

/** The names in both sets (compared lowercase, without trailing dots). */
export function nameServerOverlap(delegated: readonly string[], own: readonly string[]): string[] {
  const mine = new Set(own.map(domainText));
  return [...new Set(delegated.map(domainText))].filter((n) => mine.has(n)).sort();
}

/** Whether a Domain's Verified condition is True for its current generation. */
export function isVerified(domain: Domain): boolean {
  return (
    domain.status?.conditions?.some(
      (c) =>
        c.type === 'Verified' &&
        c.status === 'True' &&
        (c.observedGeneration === undefined || c.observedGeneration === domain.metadata.generation),
    ) ?? false
  );
}

/**
 * The Domain of another namespace that holds the same name: verified while this one is not (it was
 * verified first), or, when both are verified (two reconciles that raced), the older one (creation
 * time, then namespace/name). A holder keeps the name while it stays verified.
 */
export function olderClaim(domain: Domain, all: readonly Domain[]): Domain | undefined {
  const name = domainText(domain.spec.domainName);
  const rivals = all.filter(
    (d) =>
      d.metadata.namespace !== domain.metadata.namespace &&
      !d.metadata.deletionTimestamp &&
      domainText(d.spec.domainName) === name &&
      isVerified(d),
  );
  return rivals.sort(compareByAge).find((r) => !isVerified(domain) || compareByAge(r, domain) < 0);
}

/** Whether `name` is `domain` or below it. */
export function isAtOrBelow(name: string, domain: string): boolean {
  const n = domainText(name);
  const d = domainText(domain);
  return n === d || n.endsWith(`.${d}`);
}

/**
 * The verified Domain of the namespace that covers a zone's domain (the zone's domain at or below
 * the Domain's), the deepest first; undefined when none does.
 */
export function coveringDomain(
  namespace: string,
  zoneDomain: string,
  domains: readonly Domain[],
): Domain | undefined {
  return domains
    .filter(
      (d) =>
        d.metadata.namespace === namespace &&
        !d.metadata.deletionTimestamp &&
        isVerified(d) &&
        isAtOrBelow(zoneDomain, d.spec.domainName),
    )
    .sort((a, b) => b.spec.domainName.length - a.spec.domainName.length)[0];
}

// ---------------------------------------------------------------------------------------------------
// Conditions

/** What one verification path found: passed, failed (and why), or not applicable (and why). */
export interface PathResult {
  passed: boolean;
  reason: string;
  message: string;
}

export interface VerificationResults {
  dnsZone: PathResult;
  dns: PathResult;
  http: PathResult;
  /** A Domain of another namespace that holds the name first. */
  claimedBy?: Domain;
}

/** The four conditions, each with the generation they are about. */
export function verificationConditions(
  results: VerificationResults,
  generation: number | undefined,
): Omit<Condition, 'lastTransitionTime'>[] {
  const path = (type: string, r: PathResult): Omit<Condition, 'lastTransitionTime'> => ({
    type,
    status: r.passed ? 'True' : 'False',
    reason: r.reason,
    message: r.message,
    observedGeneration: generation,
  });
  const passed = [
    ['VerifiedDNSZone', results.dnsZone],
    ['VerifiedDNS', results.dns],
    ['VerifiedHTTP', results.http],
  ].filter(([, r]) => (r as PathResult).passed);
  let verified: Omit<Condition, 'lastTransitionTime'>;
  if (results.claimedBy) {
    const c = results.claimedBy;
    verified = {
      type: 'Verified',
      status: 'False',
      reason: 'ClaimedByOtherNamespace',
      message:
        `${domainText(c.spec.domainName)} is claimed and verified by Domain ${c.metadata.name} in namespace ` +
        `${c.metadata.namespace}, which holds it (verified first, or the older claim when both were verified at once); ` +
        'it can be claimed here once that Domain is deleted or loses its verification',
      observedGeneration: generation,
    };
  } else if (passed.length > 0) {
    verified = {
      type: 'Verified',
      status: 'True',
      reason: 'Verified',
      message: `ownership verified through ${passed.map(([t]) => t).join(', ')}`,
      observedGeneration: generation,
    };
  } else {
    verified = {
      type: 'Verified',
      status: 'False',
      reason: 'NotVerified',
      message: `no verification path holds: ${[results.dnsZone, results.dns, results.http].map((r) => r.message).join('; ')}`,
      observedGeneration: generation,
    };
  }
  return [
    path('VerifiedDNSZone', results.dnsZone),
    path('VerifiedDNS', results.dns),
    path('VerifiedHTTP', results.http),
    verified,
  ];
}

/**
 * Why a zone of a class with `requireVerifiedDomain` is not served, or undefined when it may be: a
 * Domain of the zone's namespace for its domain, or a domain above it, must be Verified. Says what
 * to do, naming the Domain that is waiting when there is one.
 */
export function domainGate(
  zone: Pick<DNSZone, 'metadata' | 'spec'>,
  zoneClass: Pick<DNSZoneClass, 'metadata' | 'spec'>,
  domains: readonly Domain[],
): string | undefined {
  if (zoneClass.spec.requireVerifiedDomain !== true) return undefined;
  const namespace = zone.metadata.namespace ?? 'default';
  if (coveringDomain(namespace, zone.spec.domainName, domains)) return undefined;
  const name = domainText(zone.spec.domainName);
  const waiting = domains.find(
    (d) =>
      d.metadata.namespace === namespace &&
      !d.metadata.deletionTimestamp &&
      isAtOrBelow(zone.spec.domainName, d.spec.domainName),
  );
  const why = waiting
    ? `Domain ${waiting.metadata.name} (${domainText(waiting.spec.domainName)}) is not verified: ${
        waiting.status?.conditions?.find((c) => c.type === 'Verified')?.message ?? 'not verified yet'
      }`
    : `no Domain in namespace ${namespace} claims ${name} or a domain above it; create one and verify it`;
  return `DNSZoneClass ${zoneClass.metadata.name} serves only zones under a verified Domain, so ${name} is not served: ${why}`;
}

/** The keys of the zones a Domain covers or could cover: its namespace's, at or below its domain. */
export function zonesUnder(zones: Iterable<DNSZone>, domain: Domain): ResourceKey[] {
  const out: ResourceKey[] = [];
  for (const z of zones)
    if (
      z.metadata.namespace === domain.metadata.namespace &&
      isAtOrBelow(z.spec.domainName, domain.spec.domainName)
    )
      out.push(resourceKey(z.metadata));
  return out;
}
