/**
 * How objects of an upstream cluster map onto the downstream (serving) cluster, and how the
 * downstream status maps back. Pure: no I/O, no clock (callers pass the time), no state.
 *
 * - Namespace: every (cluster, namespace) pair gets its own downstream namespace,
 *   `<cluster>--<namespace>` cut to 50 characters, then `-` and 12 base32 characters of
 *   SHA-256("<cluster>/<namespace>"): at most 63 characters, a DNS-1123 label, stable, and distinct
 *   pairs get distinct names whatever the truncation does (the readable part is only a hint).
 * - Labels: the copy carries its origin (cluster, namespace, uid) as labels and the upstream name and
 *   generation as annotations. Upstream labels are never copied, so an upstream object cannot forge
 *   another origin; of the upstream annotations only `dns.zonekeeper.dev/confirm-change` is copied.
 * - What is copied: the spec, with every namespace it names (delegations, zoneRef) mapped into the
 *   same cluster's downstream namespaces. Status is never copied down; it flows back up, with
 *   namespaces of the same cluster mapped back and those of other clusters removed, from messages too.
 */
import { createHash } from 'node:crypto';
import { CONFIRM_CHANGE_ANNOTATION } from '../../api/change-safety.ts';
import { API_VERSION } from '../../api/meta.ts';

/** Label and annotation prefix of everything the replicator writes. */
export const PREFIX = 'multicluster.zonekeeper.dev';
export const CLUSTER_LABEL = `${PREFIX}/cluster`;
export const NAMESPACE_LABEL = `${PREFIX}/namespace`;
export const UID_LABEL = `${PREFIX}/uid`;
export const NAME_ANNOTATION = `${PREFIX}/name`;
export const GENERATION_ANNOTATION = `${PREFIX}/generation`;
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'zonekeeper-multicluster';
/** Held on upstream objects until the downstream copy is gone (and with it the backend's records). */
export const UPSTREAM_FINALIZER = `${PREFIX}/finalizer`;
/** The Accepted reason of an upstream DNSZone whose domain another cluster claimed first. */
export const CLAIMED_ELSEWHERE = 'ClaimedByAnotherCluster';
/** The Ready reason of an upstream kubizone Zone whose parent (spec.zoneRef) has no fqdn in its cluster. */
export const NO_FQDN = 'NoFqdn';
/** The Accepted reason of an upstream object whose downstream namespace exists with another origin. */
export const NAMESPACE_TAKEN = 'NamespaceTaken';

/**
 * The kinds mirrored from every upstream cluster: Zonekeeper's own, and the front-door kinds whose
 * specs can be copied without leaking across clusters. A Domain's spec names no namespace, so its copy
 * is its spec as written; in its cluster's mirrored namespace it verifies the domain for that
 * namespace only, which is what requireVerifiedDomain checks for the zones there. ExternalDNS's
 * DNSEndpoint names no namespace; Datum's DNSRecordSet names its zone by name in its own namespace;
 * Gardener's DNSRecord names its zone as "namespace/name", mapped like a zoneRef (mirrorOf).
 * The homelab operator's DNSRecord names no namespace but a cluster-scoped DNSClass (the provider it
 * is pushed to): the name is mapped per cluster (mirrorClassName), so a cluster's records reach only
 * the classes the serving cluster's administrators made for that cluster. kubizone's Zone and Record
 * name Zones by zoneRef (mapped like a zoneRef) and Zones name namespaces in their delegations, an
 * empty list meaning every namespace: it becomes the cluster's own namespaces (mapKubizoneDelegations).
 * Front-door kinds are named by their store id (`Kind.group`, as `frontDoorId`).
 */
export type NativeMirroredKind = 'DNSZone' | 'DNSRecordSet' | 'Domain';
export const DNSENDPOINT = 'DNSEndpoint.externaldns.k8s.io';
export const DATUM_ZONE = 'DNSZone.dns.networking.miloapis.com';
export const DATUM_RECORDSET = 'DNSRecordSet.dns.networking.miloapis.com';
export const GARDENER_RECORD = 'DNSRecord.extensions.gardener.cloud';
export const HOMELAB_RECORD = 'DNSRecord.dns.homelab.mortenolsen.pro';
export const KUBIZONE_ZONE = 'Zone.kubi.zone';
export const KUBIZONE_RECORD = 'Record.kubi.zone';
export type FrontDoorMirroredKind =
  | typeof DNSENDPOINT
  | typeof DATUM_ZONE
  | typeof DATUM_RECORDSET
  | typeof GARDENER_RECORD
  | typeof HOMELAB_RECORD
  | typeof KUBIZONE_ZONE
  | typeof KUBIZONE_RECORD;
export type MirroredKind = NativeMirroredKind | FrontDoorMirroredKind;
export const NATIVE_MIRRORED_KINDS: readonly NativeMirroredKind[] = ['DNSZone', 'DNSRecordSet', 'Domain'];
export const FRONT_DOOR_MIRRORED_KINDS: readonly FrontDoorMirroredKind[] = [
  DNSENDPOINT,
  DATUM_ZONE,
  DATUM_RECORDSET,
  GARDENER_RECORD,
  HOMELAB_RECORD,
  KUBIZONE_ZONE,
  KUBIZONE_RECORD,
];
export const MIRRORED_KINDS: readonly MirroredKind[] = [
  ...NATIVE_MIRRORED_KINDS,
  ...FRONT_DOOR_MIRRORED_KINDS,
];

/** How a mirrored kind is reached and treated. */
export interface MirroredKindInfo {
  group: string;
  version: string;
  plural: string;
  /** The kind's name in its API. */
  kind: string;
  /** A front-door kind: its CRD may be missing upstream (no objects, checked again). */
  frontDoor: boolean;
  /** A zone kind: its `spec.domainName` takes part in the cross-cluster claims (ADR 0023). */
  zone: boolean;
  /**
   * How a refusal is shown in the upstream status: with Accepted, Programmed and Ready conditions,
   * only Accepted and Programmed (Datum's shape), or not at all (a status without conditions: an
   * Event says it); Gardener's and the homelab operator's own shapes; kubizone's (a Ready condition).
   */
  refusal: 'conditions' | 'acceptedProgrammed' | 'none' | 'gardener' | 'homelab' | 'ready';
}

const NATIVE = {
  group: 'dns.zonekeeper.dev',
  version: 'v1alpha1',
  frontDoor: false,
  refusal: 'conditions',
} as const;
export const MIRRORED_KIND_INFO: Readonly<Record<MirroredKind, MirroredKindInfo>> = {
  DNSZone: { ...NATIVE, plural: 'dnszones', kind: 'DNSZone', zone: true },
  DNSRecordSet: { ...NATIVE, plural: 'dnsrecordsets', kind: 'DNSRecordSet', zone: false },
  Domain: { ...NATIVE, plural: 'domains', kind: 'Domain', zone: false },
  [DNSENDPOINT]: {
    group: 'externaldns.k8s.io',
    version: 'v1alpha1',
    plural: 'dnsendpoints',
    kind: 'DNSEndpoint',
    frontDoor: true,
    zone: false,
    refusal: 'none',
  },
  [DATUM_ZONE]: {
    group: 'dns.networking.miloapis.com',
    version: 'v1alpha1',
    plural: 'dnszones',
    kind: 'DNSZone',
    frontDoor: true,
    zone: true,
    refusal: 'acceptedProgrammed',
  },
  [DATUM_RECORDSET]: {
    group: 'dns.networking.miloapis.com',
    version: 'v1alpha1',
    plural: 'dnsrecordsets',
    kind: 'DNSRecordSet',
    frontDoor: true,
    zone: false,
    refusal: 'acceptedProgrammed',
  },
  [GARDENER_RECORD]: {
    group: 'extensions.gardener.cloud',
    version: 'v1alpha1',
    plural: 'dnsrecords',
    kind: 'DNSRecord',
    frontDoor: true,
    zone: false,
    refusal: 'gardener',
  },
  [HOMELAB_RECORD]: {
    group: 'dns.homelab.mortenolsen.pro',
    version: 'v1alpha1',
    plural: 'dnsrecords',
    kind: 'DNSRecord',
    frontDoor: true,
    zone: false,
    refusal: 'homelab',
  },
  [KUBIZONE_ZONE]: {
    group: 'kubi.zone',
    version: 'v1alpha1',
    plural: 'zones',
    kind: 'Zone',
    frontDoor: true,
    zone: true,
    refusal: 'ready',
  },
  [KUBIZONE_RECORD]: {
    group: 'kubi.zone',
    version: 'v1alpha1',
    plural: 'records',
    kind: 'Record',
    frontDoor: true,
    zone: false,
    refusal: 'ready',
  },
};

/**
 * Whether an upstream object is one to mirror: a Gardener DNSRecord only when its provider type is
 * one Zonekeeper reconciles (`types`, --gardener-types); the others belong to another extension
 * controller of that cluster and are not touched.
 */
export function mirrorable(
  kind: MirroredKind,
  object: UpstreamObject,
  gardenerTypes: readonly string[],
): boolean {
  return kind !== GARDENER_RECORD || gardenerTypes.includes(String(object.spec?.type ?? ''));
}

/** A `namespace/name` of `cluster` mapped into its mirrored namespace (a bare name or domain as is). */
function mapQualified(value: string, cluster: string): string {
  const slash = value.indexOf('/');
  return slash < 0 ? value : `${mirrorNamespace(cluster, value.slice(0, slash))}${value.slice(slash)}`;
}

/** Whether a kind (a native kind name or a front door's store id) is one of those mirrored. */
export function isMirroredKind(kind: string): kind is MirroredKind {
  return (MIRRORED_KINDS as readonly string[]).includes(kind);
}

/** The kinds that take part in the domain claims. */
export const ZONE_KINDS: readonly MirroredKind[] = MIRRORED_KINDS.filter((k) => MIRRORED_KIND_INFO[k].zone);

const READABLE_MAX = 50;
const HASH_CHARS = 12;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Why a name cannot be a cluster's name, or undefined when it can (a DNS-1123 label, ≤ 63). */
export function clusterNameProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > 63 || !DNS1123_LABEL.test(name))
    return `cluster name ${JSON.stringify(name)} is not a DNS-1123 label (lowercase letters, digits and "-", 1-63 characters, starting and ending with a letter or digit)`;
  return undefined;
}

function base32(bytes: Uint8Array, chars: number): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < chars) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    if (out.length >= chars) break;
    value &= (1 << bits) - 1;
  }
  return out;
}

/** The hash part of a downstream namespace name. */
export function originHash(cluster: string, namespace: string): string {
  return base32(createHash('sha256').update(`${cluster}/${namespace}`).digest(), HASH_CHARS);
}

/** The downstream namespace of `namespace` in `cluster` (see the module comment). */
export function mirrorNamespace(cluster: string, namespace: string): string {
  const readable = `${cluster}--${namespace}`.slice(0, READABLE_MAX).replace(/-+$/, '');
  return `${readable}-${originHash(cluster, namespace)}`;
}

/**
 * The downstream name of the cluster-scoped homelab DNSClass `name` as `cluster`'s DNSRecords name it:
 * `<cluster>--<name>` cut to 50 characters, `-` and 12 base32 characters of SHA-256("<cluster>/<name>")
 * (as mirrorNamespace; distinct pairs get distinct names). DNSClasses are not mirrored (a class is a
 * provider URL and its credentials, chosen by the serving cluster's administrators): they create the
 * classes each cluster may use, under these names.
 */
export function mirrorClassName(cluster: string, name: string): string {
  return mirrorNamespace(cluster, name);
}

/**
 * A kubizone Zone's fully qualified domain, as its cluster's claim on it is made: its domainName when
 * that ends in ".", else its name under the Zone its spec.zoneRef names, followed through the same
 * cluster's Zones (`lookup`, by "namespace/name") up to 16 levels. Undefined while the chain ends in a
 * Zone that is missing, too deep or a loop (the Zone then waits, unmirrored, for its parent).
 */
export function kubizoneZoneFqdn(
  zone: UpstreamObject,
  lookup: (key: string) => UpstreamObject | undefined,
): string | undefined {
  let current = zone;
  let name = '';
  for (let depth = 0; depth <= 16; depth++) {
    const domainName = String(current.spec?.domainName ?? '');
    if (domainName === '') return undefined;
    name = name === '' ? domainName : `${name}.${domainName}`;
    if (domainName.endsWith('.')) return name.toLowerCase();
    const ref = current.spec?.zoneRef as { name?: string; namespace?: string } | undefined;
    if (!ref?.name) return undefined;
    const next = lookup(`${ref.namespace ?? current.metadata.namespace ?? 'default'}/${ref.name}`);
    if (!next) return undefined;
    current = next;
  }
  return undefined;
}

/** Where a downstream object came from. */
export interface Origin {
  cluster: string;
  namespace: string;
}

/**
 * The origin a downstream namespace's or object's labels claim, accepted only when the namespace name
 * is the one that origin maps to (a label alone proves nothing).
 */
export function originOf(
  namespace: string | undefined,
  labels: Record<string, string> | undefined,
): Origin | undefined {
  const cluster = labels?.[CLUSTER_LABEL];
  const upstreamNamespace = labels?.[NAMESPACE_LABEL];
  if (!namespace || !cluster || !upstreamNamespace) return undefined;
  return mirrorNamespace(cluster, upstreamNamespace) === namespace
    ? { cluster, namespace: upstreamNamespace }
    : undefined;
}

/** The labels of a downstream namespace. */
export function namespaceLabels(origin: Origin): Record<string, string> {
  return {
    [CLUSTER_LABEL]: origin.cluster,
    [NAMESPACE_LABEL]: origin.namespace,
    [MANAGED_BY_LABEL]: MANAGED_BY,
  };
}

/** An object as the API server returns it (the fields the replicator reads). */
export interface UpstreamObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
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
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** The downstream copy the replicator wants: metadata it owns and the mapped spec. */
export interface MirrorObject {
  apiVersion: string;
  /** The kind's name in its API. */
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
  };
  spec: Record<string, unknown>;
}

export interface MirrorContext {
  cluster: string;
  /**
   * Upstream namespaces of the cluster known to the replicator (those holding DNSZones or
   * DNSRecordSets): a delegation's namespacePatterns become the matching ones, since a prefix of an
   * upstream name is no prefix of its downstream name.
   */
  namespaces: Iterable<string>;
}

export interface MirrorResult {
  object: MirrorObject;
  /** What could not be carried over as written (patterns expanded to more names than fit). */
  problems: string[];
}

/** Namespaces per delegation entry and entries per zone (the DNSZone schema's limits). */
const MAX_NAMESPACES = 64;
const MAX_DELEGATIONS = 64;

interface UpstreamDelegation {
  namespaces?: string[];
  namespacePatterns?: string[];
  names?: string[];
  types?: string[];
}

function mapDelegations(
  delegations: UpstreamDelegation[],
  context: MirrorContext,
  problems: string[],
): UpstreamDelegation[] {
  const known = [...new Set(context.namespaces)].sort();
  const out: UpstreamDelegation[] = [];
  for (const d of delegations) {
    const names = new Set(d.namespaces ?? []);
    for (const pattern of d.namespacePatterns ?? []) {
      const prefix = pattern.slice(0, -1);
      for (const ns of known) if (ns.startsWith(prefix) && ns.length > prefix.length) names.add(ns);
    }
    const { namespacePatterns: _patterns, namespaces: _names, ...rest } = d;
    const mapped = [...names].sort().map((ns) => mirrorNamespace(context.cluster, ns));
    if (mapped.length === 0) {
      // An entry without namespaces admits none: keep it so (patterns that match nothing yet included).
      out.push({ ...rest, namespaces: [] });
      continue;
    }
    for (let i = 0; i < mapped.length; i += MAX_NAMESPACES)
      out.push({ ...rest, namespaces: mapped.slice(i, i + MAX_NAMESPACES) });
  }
  if (out.length > MAX_DELEGATIONS) {
    problems.push(
      `spec.delegations: the namespace patterns expand to ${out.length} entries of at most ${MAX_NAMESPACES} namespaces; only the first ${MAX_DELEGATIONS} are applied (name fewer namespaces)`,
    );
    return out.slice(0, MAX_DELEGATIONS);
  }
  return out;
}

/** kubizone's limits: namespaces per delegation entry and entries per Zone. */
const KUBIZONE_MAX_NAMESPACES = 256;
const KUBIZONE_MAX_DELEGATIONS = 256;

/**
 * A kubizone Zone's delegations for its copy: every namespace named becomes its mirrored namespace in
 * the same cluster, and an empty (or absent) list, which kubizone reads as every namespace, becomes
 * the explicit list of the cluster's namespaces (those known, and the Zone's own): downstream, an
 * empty list would admit the Records of every cluster. A list is never left empty (the Zone's own
 * namespace is always in it), and a list too long is split over entries; entries past kubizone's
 * limit are dropped (they admit less, never more) with a problem.
 */
function mapKubizoneDelegations(
  delegations: { namespaces?: string[] }[],
  ownNamespace: string,
  context: MirrorContext,
  problems: string[],
): { namespaces: string[] }[] {
  const all = [...new Set([...context.namespaces, ownNamespace])]
    .sort()
    .map((ns) => mirrorNamespace(context.cluster, ns));
  const out: { namespaces: string[] }[] = [];
  for (const d of delegations) {
    const named = d.namespaces ?? [];
    const mapped =
      named.length === 0 ? all : [...new Set(named)].map((ns) => mirrorNamespace(context.cluster, ns));
    for (let i = 0; i < mapped.length; i += KUBIZONE_MAX_NAMESPACES)
      out.push({ ...d, namespaces: mapped.slice(i, i + KUBIZONE_MAX_NAMESPACES) });
  }
  if (out.length > KUBIZONE_MAX_DELEGATIONS) {
    problems.push(
      `spec.delegations: every namespace of the cluster makes ${out.length} entries of at most ${KUBIZONE_MAX_NAMESPACES} namespaces; only the first ${KUBIZONE_MAX_DELEGATIONS} are applied (name the namespaces)`,
    );
    return out.slice(0, KUBIZONE_MAX_DELEGATIONS);
  }
  return out;
}

/** The downstream copy of an upstream object of a mirrored kind of `context.cluster`. */
export function mirrorOf(kind: MirroredKind, upstream: UpstreamObject, context: MirrorContext): MirrorResult {
  const { metadata } = upstream;
  const namespace = metadata.namespace ?? 'default';
  const problems: string[] = [];
  const spec: Record<string, unknown> = structuredClone(upstream.spec ?? {});
  if (kind === 'DNSZone' && Array.isArray(spec.delegations))
    spec.delegations = mapDelegations(spec.delegations as UpstreamDelegation[], context, problems);
  if (kind === 'DNSRecordSet') {
    const ref = spec.zoneRef as { name?: string; namespace?: string } | undefined;
    if (ref?.namespace !== undefined)
      spec.zoneRef = { ...ref, namespace: mirrorNamespace(context.cluster, ref.namespace) };
  }
  if (kind === GARDENER_RECORD) {
    // spec.zone "namespace/name" names a DNSZone of the same cluster (a domain, or none, leaves the
    // zone to the catalog, whose delegations keep it to zones that admit this namespace); the Secret
    // reference is not used by Zonekeeper, and names a namespace of the same cluster too.
    if (typeof spec.zone === 'string') spec.zone = mapQualified(spec.zone, context.cluster);
    const secretRef = spec.secretRef as { namespace?: string } | undefined;
    if (secretRef?.namespace !== undefined)
      spec.secretRef = { ...secretRef, namespace: mirrorNamespace(context.cluster, secretRef.namespace) };
  }
  if (kind === KUBIZONE_ZONE || kind === KUBIZONE_RECORD) {
    const ref = spec.zoneRef as { name?: string; namespace?: string } | undefined;
    if (ref?.namespace !== undefined)
      spec.zoneRef = { ...ref, namespace: mirrorNamespace(context.cluster, ref.namespace) };
  }
  if (kind === KUBIZONE_ZONE)
    spec.delegations = mapKubizoneDelegations(
      Array.isArray(spec.delegations) ? (spec.delegations as { namespaces?: string[] }[]) : [],
      namespace,
      context,
      problems,
    );
  if (kind === HOMELAB_RECORD) {
    const ref = spec.dnsClassRef as { name?: string } | undefined;
    if (typeof ref?.name === 'string')
      spec.dnsClassRef = { ...ref, name: mirrorClassName(context.cluster, ref.name) };
  }
  const annotations: Record<string, string> = {
    [NAME_ANNOTATION]: metadata.name,
    [GENERATION_ANNOTATION]: String(metadata.generation ?? 0),
  };
  const confirm = metadata.annotations?.[CONFIRM_CHANGE_ANNOTATION];
  if (confirm !== undefined) annotations[CONFIRM_CHANGE_ANNOTATION] = confirm;
  const info = MIRRORED_KIND_INFO[kind];
  return {
    object: {
      apiVersion: info.frontDoor ? `${info.group}/${info.version}` : API_VERSION,
      kind: info.kind,
      metadata: {
        name: metadata.name,
        namespace: mirrorNamespace(context.cluster, namespace),
        labels: {
          [CLUSTER_LABEL]: context.cluster,
          [NAMESPACE_LABEL]: namespace,
          ...(metadata.uid ? { [UID_LABEL]: metadata.uid } : {}),
          [MANAGED_BY_LABEL]: MANAGED_BY,
        },
        annotations,
      },
      spec,
    },
    problems,
  };
}

/** Whether the downstream object already carries what `desired` asks for (spec, our labels and annotations). */
export function mirrorUpToDate(
  desired: MirrorObject,
  actual: {
    metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec?: unknown;
  },
): boolean {
  const labels = actual.metadata.labels ?? {};
  const annotations = actual.metadata.annotations ?? {};
  for (const [k, v] of Object.entries(desired.metadata.labels)) if (labels[k] !== v) return false;
  for (const [k, v] of Object.entries(desired.metadata.annotations)) if (annotations[k] !== v) return false;
  if (
    annotations[CONFIRM_CHANGE_ANNOTATION] !== undefined &&
    desired.metadata.annotations[CONFIRM_CHANGE_ANNOTATION] === undefined
  )
    return false;
  return canonicalJson(desired.spec) === canonicalJson(actual.spec ?? {});
}

/** JSON with object keys sorted (so equal content compares equal whatever the key order). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/** Resolves a downstream namespace to its origin, when it is a mirrored one. */
export type NamespaceOrigins = (downstreamNamespace: string) => Origin | undefined;

const MIRRORED_NAMESPACE_IN_TEXT = new RegExp(
  `[a-z0-9][-a-z0-9]*-[${BASE32}]{${HASH_CHARS}}(/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?`,
  'g',
);

/**
 * A downstream message as an upstream cluster may read it: a mirrored namespace of the same cluster
 * becomes its upstream name, one of another cluster (with the object name after it) becomes
 * "another cluster's object".
 */
export function upstreamText(text: string, cluster: string, origins: NamespaceOrigins): string {
  return text.replace(MIRRORED_NAMESPACE_IN_TEXT, (match) => {
    const slash = match.indexOf('/');
    const ns = slash < 0 ? match : match.slice(0, slash);
    const origin = origins(ns);
    if (!origin) return match;
    if (origin.cluster === cluster)
      return slash < 0 ? origin.namespace : `${origin.namespace}${match.slice(slash)}`;
    return "another cluster's object";
  });
}

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/**
 * The upstream status for a downstream copy's status, or undefined while the copy's status is not for
 * its current spec (observedGeneration behind its generation): the upstream then keeps what it has.
 * `observedGeneration` fields become the upstream generation the copy was written for.
 */
export function upstreamStatus(
  kind: MirroredKind,
  downstream: {
    metadata: { generation?: number; annotations?: Record<string, string> };
    status?: Record<string, unknown> | undefined;
  },
  cluster: string,
  origins: NamespaceOrigins,
): Record<string, unknown> | undefined {
  const status = downstream.status;
  const generation = downstream.metadata.generation;
  const upstreamGeneration = Number(downstream.metadata.annotations?.[GENERATION_ANNOTATION]);
  if (!status || generation === undefined || !Number.isInteger(upstreamGeneration)) return undefined;
  if (kind === KUBIZONE_ZONE || kind === KUBIZONE_RECORD) {
    // kubizone's status has no observedGeneration; the Ready condition the downstream door writes
    // carries the copy's generation it was judged at (front doors translate the native status's
    // generations into the foreign object's): passed up only when that is the copy's current one.
    const ready = (Array.isArray(status.conditions) ? (status.conditions as Condition[]) : []).find(
      (c) => c.type === 'Ready',
    );
    if (!ready || ready.observedGeneration !== generation) return undefined;
  } else if (status.observedGeneration !== undefined) {
    if (status.observedGeneration !== generation) return undefined;
  } else {
    // A status shape without observedGeneration (Datum's): its Accepted condition says which
    // generation it is for.
    const accepted = (Array.isArray(status.conditions) ? (status.conditions as Condition[]) : []).find(
      (c) => c.type === 'Accepted',
    );
    if (accepted?.observedGeneration !== generation) return undefined;
  }
  const mapConditions = (conditions: Condition[]) =>
    conditions.map((c) => ({
      ...c,
      message: upstreamText(c.message ?? '', cluster, origins),
      ...(c.observedGeneration !== undefined
        ? {
            observedGeneration: c.observedGeneration === generation ? upstreamGeneration : 0,
          }
        : {}),
    }));
  const out: Record<string, unknown> = {};
  const mapRef = (ref: unknown): { namespace: string; name: string } | undefined => {
    const r = ref as { namespace?: string; name?: string } | undefined;
    if (!r?.namespace || !r.name) return undefined;
    const origin = origins(r.namespace);
    return origin && origin.cluster === cluster ? { namespace: origin.namespace, name: r.name } : undefined;
  };
  for (const [field, value] of Object.entries(status)) {
    if (field === 'observedGeneration') out[field] = upstreamGeneration;
    else if (field === 'conditions' && Array.isArray(value)) out[field] = mapConditions(value as Condition[]);
    else if (field === 'recordSets' && Array.isArray(value))
      // Datum's per-owner-name state.
      out[field] = (value as { conditions?: Condition[] }[]).map((r) => ({
        ...structuredClone(r),
        ...(Array.isArray(r.conditions) ? { conditions: mapConditions(r.conditions) } : {}),
      }));
    else if (field === 'domainRef' && kind === DATUM_ZONE) {
      // Written upstream by Datum's domain controller: the upstream's own is kept (see the caller).
    } else if (kind === GARDENER_RECORD && field === 'zone' && typeof value === 'string') {
      // Gardener's "namespace/name": back to the upstream namespace when of the same cluster.
      const slash = value.indexOf('/');
      const origin = slash < 0 ? undefined : origins(value.slice(0, slash));
      if (origin?.cluster === cluster) out[field] = `${origin.namespace}${value.slice(slash)}`;
    } else if (kind === GARDENER_RECORD && (field === 'lastOperation' || field === 'lastError')) {
      const v = structuredClone(value) as { description?: string };
      if (typeof v.description === 'string') v.description = upstreamText(v.description, cluster, origins);
      out[field] = v;
    } else if (kind === HOMELAB_RECORD && field === 'error') {
      const v = structuredClone(value) as { message?: string };
      if (typeof v.message === 'string') v.message = upstreamText(v.message, cluster, origins);
      out[field] = v;
    } else if (kind === KUBIZONE_ZONE && field === 'entries') {
      // The zone as served: names and data, no namespaces.
      out[field] = structuredClone(value);
    } else if (field === 'zone' || field === 'parentZone') {
      const ref = mapRef(value);
      if (ref) out[field] = ref;
    } else out[field] = structuredClone(value);
  }
  if (kind === 'DNSRecordSet' && out.zone === undefined) delete out.fqdn;
  return out;
}

/**
 * Conditions for an upstream object the replicator refuses to mirror (Accepted, Programmed, Ready all
 * False; Datum's shape has no Ready and no observedGeneration at the top).
 */
export function refusedStatus(
  reason: string,
  message: string,
  generation: number | undefined,
  previous: Condition[] | undefined,
  now: Date,
  shape: 'conditions' | 'acceptedProgrammed' | 'gardener' | 'homelab' | 'ready' = 'conditions',
  previousStatus?: Record<string, unknown>,
): Record<string, unknown> {
  const stamp = now.toISOString().replace(/\.\d+Z$/, 'Z');
  if (shape === 'homelab' || shape === 'ready') {
    // kubizone's shape (a Ready condition) and the homelab operator's (state and error besides).
    const before = previous?.find((c) => c.type === 'Ready');
    const ready: Condition = {
      type: 'Ready',
      status: 'False',
      reason,
      message,
      lastTransitionTime: before && before.status === 'False' ? before.lastTransitionTime : stamp,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    };
    if (shape === 'ready') return { conditions: [ready] };
    const error = previousStatus?.error as
      | { code?: string; message?: string; timestamp?: string }
      | undefined;
    return {
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      state: 'Error',
      error: {
        code: reason,
        message,
        timestamp:
          error?.code === reason && error.message === message && error.timestamp ? error.timestamp : stamp,
      },
      conditions: [ready],
    };
  }
  if (shape === 'gardener') {
    // The extension contract's shape: the last operation failed, with the reason as its error code.
    const description = `${reason}: ${message}`;
    const before = previousStatus?.lastError as { description?: string; lastUpdateTime?: string } | undefined;
    const time =
      before?.description === description && before.lastUpdateTime
        ? before.lastUpdateTime
        : now.toISOString().replace(/\.\d+Z$/, 'Z');
    return {
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastOperation: { type: 'Reconcile', state: 'Error', progress: 0, description, lastUpdateTime: time },
      lastError: { description, codes: ['ERR_CONFIGURATION_PROBLEM'], lastUpdateTime: time },
    };
  }
  const types =
    shape === 'acceptedProgrammed' ? ['Accepted', 'Programmed'] : ['Accepted', 'Programmed', 'Ready'];
  const conditions: Condition[] = types.map((type) => {
    const before = previous?.find((c) => c.type === type);
    const r = type === 'Accepted' ? reason : type === 'Programmed' ? 'Pending' : 'NotReady';
    const m =
      type === 'Accepted' ? message : type === 'Programmed' ? 'not programmed: not accepted' : message;
    return {
      type,
      status: 'False',
      reason: r,
      message: m,
      lastTransitionTime:
        before && before.status === 'False'
          ? before.lastTransitionTime
          : now.toISOString().replace(/\.\d+Z$/, 'Z'),
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    };
  });
  if (shape === 'acceptedProgrammed') return { conditions };
  return { ...(generation !== undefined ? { observedGeneration: generation } : {}), conditions };
}

/** A zone domain as claims compare it: lowercase, no trailing dot. */
export function claimDomain(domainName: string): string {
  return domainName.toLowerCase().replace(/\.$/, '');
}
