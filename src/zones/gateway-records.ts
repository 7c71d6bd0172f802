/**
 * Gateway API hostnames as DNSRecordSets, the decisions without the I/O: a Gateway's DNS address
 * (words and entropy from its UID under a target domain), the record sets its listeners' and its
 * routes' hostnames get (CNAME to that address below a zone's apex, ALIAS at the apex, `*` for a
 * wildcard hostname; A/AAAA from the Gateway's addresses when there is no target domain), and which
 * hostnames are refused and why (no served zone, no verified Domain, a record set of another manager).
 * The controller that reads and writes the objects is src/control/gateway-controller.ts.
 */
import { createHash } from 'node:crypto';
import type { DNSRecordSet, DNSZone, Domain } from '../api/index.ts';
import { coveringDomain, isAtOrBelow } from './domain-verification.ts';
import { domainText } from './zone-name-servers.ts';

/** The label every record set the Gateway controller writes carries (its manager). */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const GATEWAY_MANAGER = 'zonekeeper-gateway-dns';
/** The object a record set was made for: `<Kind>.<namespace>.<name>` (for garbage collection by label). */
export const OWNER_LABEL = 'dns.zonekeeper.dev/gateway-owner';
/** The hostname a record set publishes (an annotation: hostnames can be longer than label values). */
export const HOSTNAME_ANNOTATION = 'dns.zonekeeper.dev/hostname';
/** On a Gateway: its DNS address. */
export const ADDRESS_ANNOTATION = 'dns.zonekeeper.dev/gateway-address';
/** On a Gateway or route: the hostnames not published because another manager holds them. */
export const CONFLICT_ANNOTATION = 'dns.zonekeeper.dev/dns-conflicts';

// 64 adjectives and 64 nouns: 12 bits of words, plus 24 bits of hexadecimal entropy.
const ADJECTIVES = (
  'amber bold brave brisk calm clear cool crisp dawn deep eager early fair fast fine firm ' +
  'fresh glad gold grand green keen kind large light live lucky mild neat noble north plain ' +
  'proud pure quick quiet rapid rare red rich round royal safe sharp shy silent silver slow ' +
  'smart soft solid south still sunny swift tall tidy true vast warm west white wide wild wise young'
).split(' ');
const NOUNS = (
  'anchor arrow aspen badger beacon birch brook canyon cedar cliff cloud comet coral creek delta ' +
  'dune eagle ember falcon fern field fjord forest fox glade grove harbor hawk heron hill island ' +
  'lake lark leaf maple meadow mesa moon oak orbit otter owl peak pine planet pond prairie rain ' +
  'raven reef ridge river robin sage shore sky spring star stone summit tide valley willow wind'
).split(' ');

/**
 * The Gateway's DNS address: `<adjective>-<noun>-<6 hex>.<targetDomain>`, all from SHA-256 of its UID:
 * stable across restarts, readable, and not enumerable (the UID is random, and not guessable from
 * the Gateway's name).
 */
export function gatewayAddress(uid: string, targetDomain: string): string {
  const digest = createHash('sha256').update(`zonekeeper-gateway/${uid}`).digest();
  const adjective = ADJECTIVES[digest[0]! % ADJECTIVES.length]!;
  const noun = NOUNS[digest[1]! % NOUNS.length]!;
  return `${adjective}-${noun}-${digest.subarray(2, 5).toString('hex')}.${domainText(targetDomain)}`;
}

/** `<gateway>-<first 8 hex of SHA-256(hostname)>`, within the 253 characters of an object name. */
export function recordSetName(gatewayName: string, hostname: string): string {
  const hash = createHash('sha256').update(domainText(hostname)).digest('hex').slice(0, 8);
  return `${gatewayName.slice(0, 253 - 9)}-${hash}`;
}

/** A hostname to publish, and for whom: a listener of the Gateway, or a route attached to it. */
export interface HostnameClaim {
  hostname: string;
  /** The object that asks for it (its namespace is where the record set goes). */
  owner: { kind: string; apiVersion: string; namespace: string; name: string; uid: string };
  gateway: { namespace: string; name: string };
}

export interface GatewayTarget {
  /** The Gateway's DNS address, when a target domain is configured. */
  address?: string;
  /** Its IPv4 and IPv6 addresses (status.addresses of type IPAddress). */
  ipv4: string[];
  ipv6: string[];
}

export type HostnamePlan =
  | { kind: 'publish'; recordSets: DNSRecordSet[] }
  | { kind: 'skip'; reason: 'NoZone' | 'DomainNotVerified' | 'NoAddress' | 'Conflict'; message: string };

/** The deepest zone that holds `hostname` (at or above it), among the zones served. */
export function zoneHolding(hostname: string, served: readonly DNSZone[]): DNSZone | undefined {
  const name = domainText(hostname).replace(/^\*\./, '');
  return served
    .filter((z) => isAtOrBelow(name, z.spec.domainName))
    .sort((a, b) => b.spec.domainName.length - a.spec.domainName.length)[0];
}

/** The owner label value of a claim's object. */
export function ownerLabel(owner: HostnameClaim['owner']): string {
  return `${owner.kind}.${owner.namespace}.${owner.name}`.slice(0, 63).replace(/[^A-Za-z0-9]+$/, '');
}

/**
 * What one hostname gets: the record sets to publish (in the owner's namespace, `zoneRef` naming the
 * zone), or why none. `existing` are the record sets of the store, for conflicts: one at the same
 * name that this manager did not make for the same owner is another manager's, and is never
 * overwritten.
 */
export function planHostname(
  claim: HostnameClaim,
  served: readonly DNSZone[],
  domains: readonly Domain[],
  target: GatewayTarget,
  existing: readonly DNSRecordSet[],
): HostnamePlan {
  const hostname = domainText(claim.hostname);
  const zone = zoneHolding(hostname, served);
  if (!zone) return { kind: 'skip', reason: 'NoZone', message: `no zone served here holds ${hostname}` };
  if (!coveringDomain(claim.owner.namespace, hostname.replace(/^\*\./, ''), domains))
    return {
      kind: 'skip',
      reason: 'DomainNotVerified',
      message: `no verified Domain in namespace ${claim.owner.namespace} covers ${hostname}; create and verify one (docs/domains.md)`,
    };
  const origin = domainText(zone.spec.domainName);
  const relative = hostname === origin ? '@' : hostname.slice(0, -(origin.length + 1));
  const apex = relative === '@';
  const base = (type: DNSRecordSet['spec']['type'], records: string[], suffix = ''): DNSRecordSet => ({
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSRecordSet',
    metadata: {
      name: `${recordSetName(claim.gateway.name, hostname)}${suffix}`,
      namespace: claim.owner.namespace,
      labels: { [MANAGED_BY_LABEL]: GATEWAY_MANAGER, [OWNER_LABEL]: ownerLabel(claim.owner) },
      annotations: { [HOSTNAME_ANNOTATION]: hostname },
    },
    spec: {
      zoneRef: {
        name: zone.metadata.name,
        ...(zone.metadata.namespace !== claim.owner.namespace ? { namespace: zone.metadata.namespace } : {}),
      },
      name: relative,
      type,
      records,
    },
  });
  let recordSets: DNSRecordSet[];
  if (target.address !== undefined) {
    recordSets = [base(apex ? 'ALIAS' : 'CNAME', [`${target.address}.`])];
  } else if (target.ipv4.length + target.ipv6.length > 0) {
    recordSets = [
      ...(target.ipv4.length > 0 ? [base('A', target.ipv4)] : []),
      ...(target.ipv6.length > 0 ? [base('AAAA', target.ipv6, '-6')] : []),
    ];
  } else {
    return {
      kind: 'skip',
      reason: 'NoAddress',
      message: `Gateway ${claim.gateway.namespace}/${claim.gateway.name} has no addresses yet and no target domain is configured`,
    };
  }
  const ours = new Set(recordSets.map((r) => `${r.metadata.namespace}/${r.metadata.name}`));
  // Only a record set the zone serves holds the name: one its zone refused (another namespace the zone
  // does not delegate to, an invalid one) must not make the Gateway's records go. Record sets of this
  // manager are not looked at: which claim of a hostname wins among Gateways is decided on what they
  // ask for (compareClaims), and those of a claim that lost go in the same run.
  const clash = existing.find(
    (r) =>
      !r.metadata.deletionTimestamp &&
      !ours.has(`${r.metadata.namespace}/${r.metadata.name}`) &&
      r.metadata.labels?.[MANAGED_BY_LABEL] !== GATEWAY_MANAGER &&
      accepted(r) &&
      publishesAt(r, zone, hostname),
  );
  // A record set of another manager at the very name. One of this manager's for another owner (a
  // listener and a route of the Gateway asking for one hostname) is decided by compareClaims.
  const sameName = existing.find(
    (r) =>
      ours.has(`${r.metadata.namespace}/${r.metadata.name}`) &&
      r.metadata.labels?.[MANAGED_BY_LABEL] !== GATEWAY_MANAGER,
  );
  const other = clash ?? sameName;
  if (other)
    return {
      kind: 'skip',
      reason: 'Conflict',
      message: `${hostname} is already published by DNSRecordSet ${other.metadata.namespace}/${other.metadata.name}${
        other.metadata.labels?.[MANAGED_BY_LABEL]
          ? ` (managed by ${other.metadata.labels[MANAGED_BY_LABEL]})`
          : ''
      }; it is not overwritten`,
    };
  return { kind: 'publish', recordSets };
}

/** Whether a record set publishes at `hostname` in `zone` (by its zoneRef and name, or its status). */
function accepted(r: DNSRecordSet): boolean {
  return r.status?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True') ?? false;
}

function publishesAt(r: DNSRecordSet, zone: DNSZone, hostname: string): boolean {
  if (r.status?.fqdn !== undefined && domainText(r.status.fqdn) === hostname) return true;
  const ref = r.spec.zoneRef;
  if (ref) {
    const ns = ref.namespace ?? r.metadata.namespace;
    if (ref.name !== zone.metadata.name || ns !== zone.metadata.namespace) return false;
    const origin = domainText(zone.spec.domainName);
    const fqdn =
      r.spec.name === '@'
        ? origin
        : r.spec.name.endsWith('.')
          ? domainText(r.spec.name)
          : `${r.spec.name}.${origin}`;
    return domainText(fqdn) === hostname;
  }
  return r.spec.name.endsWith('.') && domainText(r.spec.name) === hostname;
}

// ---------------------------------------------------------------------------------------------------
// Which routes are attached, and which claim of a hostname wins

/** A route's reference to its parent, as in `spec.parentRefs` and `status.parents[].parentRef`. */
export interface ParentRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  sectionName?: string;
  port?: number;
}

/** The parts of a listener that decide which routes may attach (Gateway API `Listener`). */
export interface ListenerAdmission {
  name?: string;
  port?: number;
  allowedRoutes?: {
    namespaces?: {
      from?: string;
      selector?: {
        matchLabels?: Record<string, string>;
        matchExpressions?: { key: string; operator: string; values?: string[] }[];
      };
    };
  };
}

/** The label the API server sets on every namespace to its own name (immutable). */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/**
 * Whether a listener admits routes of `routeNamespace` (`allowedRoutes.namespaces`, default `Same`).
 * `Selector` is judged only on `kubernetes.io/metadata.name`, which the API server sets to the
 * namespace's name; a selector on any other label admits nothing (the labels of namespaces are not
 * read), so a route is never published on a guess.
 */
export function listenerAdmits(
  listener: ListenerAdmission,
  routeNamespace: string,
  gatewayNamespace: string,
): boolean {
  const from = listener.allowedRoutes?.namespaces?.from ?? 'Same';
  if (from === 'All') return true;
  if (from === 'Same') return routeNamespace === gatewayNamespace;
  if (from !== 'Selector') return false;
  const selector = listener.allowedRoutes?.namespaces?.selector;
  if (!selector) return false;
  const labels = { [NAMESPACE_NAME_LABEL]: routeNamespace };
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (key !== NAMESPACE_NAME_LABEL || labels[key] !== value) return false;
  for (const e of selector.matchExpressions ?? []) {
    if (e.key !== NAMESPACE_NAME_LABEL) return false;
    const has = (e.values ?? []).includes(routeNamespace);
    if (e.operator === 'In' ? !has : e.operator === 'NotIn' ? has : e.operator !== 'Exists') return false;
  }
  return true;
}

/** Whether a status parent and a spec parentRef name the same parent (defaults filled in). */
function sameParent(a: ParentRef, b: ParentRef, routeNamespace: string): boolean {
  return (
    (a.group ?? GATEWAY_API_GROUP) === (b.group ?? GATEWAY_API_GROUP) &&
    (a.kind ?? 'Gateway') === (b.kind ?? 'Gateway') &&
    a.name === b.name &&
    (a.namespace ?? routeNamespace) === (b.namespace ?? routeNamespace) &&
    (a.sectionName ?? '') === (b.sectionName ?? '') &&
    (a.port ?? 0) === (b.port ?? 0)
  );
}

const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';

export type Attachment = { attached: true } | { attached: false; message: string };

/**
 * Whether a route is attached to the Gateway through `ref`: the gateway implementation accepted it
 * (a `status.parents` entry for that parentRef, written by the controller of the Gateway's
 * GatewayClass — its `controllerName` is the class's `spec.controllerName` — with `Accepted=True`),
 * and a listener of the Gateway it may bind to (by `sectionName` and `port`, when given) admits its
 * namespace. A route anyone may write otherwise publishes hostnames through any Gateway it names, and
 * another gateway implementation (or whoever may write route status) could mark it accepted. A
 * Gateway whose GatewayClass is not known (`controllerName` undefined) attaches no route.
 */
export function routeAttachment(
  route: {
    namespace: string;
    parents?: readonly {
      parentRef: ParentRef;
      controllerName?: string;
      conditions?: readonly { type: string; status: string }[];
    }[];
  },
  ref: ParentRef,
  gateway: {
    namespace: string;
    name: string;
    listeners: readonly ListenerAdmission[];
    /** The `spec.controllerName` of the Gateway's GatewayClass; undefined when the class is not known. */
    controllerName?: string;
  },
): Attachment {
  if (gateway.controllerName === undefined)
    return {
      attached: false,
      message: `not accepted by Gateway ${gateway.namespace}/${gateway.name}: its GatewayClass is not known (create the GatewayClass the Gateway names in spec.gatewayClassName)`,
    };
  const status = route.parents?.find(
    (p) => sameParent(p.parentRef, ref, route.namespace) && p.controllerName === gateway.controllerName,
  );
  if (!status?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True'))
    return {
      attached: false,
      message: `not accepted by Gateway ${gateway.namespace}/${gateway.name} (no status.parents entry of controller ${gateway.controllerName} with Accepted=True)`,
    };
  const listeners = gateway.listeners.filter(
    (l) =>
      (ref.sectionName === undefined || l.name === ref.sectionName) &&
      (ref.port === undefined || l.port === ref.port),
  );
  if (!listeners.some((l) => listenerAdmits(l, route.namespace, gateway.namespace)))
    return {
      attached: false,
      message: `no listener of Gateway ${gateway.namespace}/${gateway.name} admits routes of namespace ${route.namespace} (allowedRoutes)`,
    };
  return { attached: true };
}

/**
 * The order in which claims of one hostname win: the oldest Gateway (creation time, then
 * namespace/name), then the Gateway's own listener before routes, then the oldest owner. Decided on
 * what is asked for, not on what exists, so two Gateways claiming a hostname never take turns.
 */
export function compareClaims(
  a: { gatewayCreated?: string; claim: HostnameClaim; ownerCreated?: string },
  b: { gatewayCreated?: string; claim: HostnameClaim; ownerCreated?: string },
): number {
  const key = (x: typeof a) => [
    x.gatewayCreated ?? '',
    `${x.claim.gateway.namespace}/${x.claim.gateway.name}`,
    x.claim.owner.kind === 'Gateway' ? '0' : '1',
    x.ownerCreated ?? '',
    `${x.claim.owner.kind}/${x.claim.owner.namespace}/${x.claim.owner.name}`,
  ];
  const ka = key(a);
  const kb = key(b);
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
  return 0;
}
