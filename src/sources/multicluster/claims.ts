/**
 * Claims on zone domains across upstream clusters (pure). A domain is owned by one upstream cluster:
 * the one whose claim the replicator observed first. Upstream clocks and creation times are not
 * comparable, so the time recorded is the replicator's own, at the first observation, and it is kept
 * durably (one ConfigMap per domain, see claim-store.ts) so that a restart, a new leader or a cluster
 * that flaps does not reorder the claims. Every cluster that claims a domain is recorded with its
 * time; when the owner lets go (its last DNSZone for the domain is gone, or the cluster left the set)
 * the next-oldest claim owns the domain.
 */
import { createHash } from 'node:crypto';
import { type Condition, claimDomain, KUBIZONE_ZONE, type MirroredKind } from './mapping.ts';

export interface Claimant {
  cluster: string;
  /** When the replicator first observed this cluster's claim (RFC 3339, the replicator's clock). */
  observed: string;
}

export interface ClaimRecord {
  domain: string;
  claimants: Claimant[];
}

/** Oldest first; equal times by cluster name (deterministic). */
function order(a: Claimant, b: Claimant): number {
  return a.observed < b.observed ? -1 : a.observed > b.observed ? 1 : a.cluster < b.cluster ? -1 : 1;
}

/** The owning cluster, or undefined when nobody claims the domain. */
export function ownerOf(record: ClaimRecord | undefined): Claimant | undefined {
  if (!record || record.claimants.length === 0) return undefined;
  return [...record.claimants].sort(order)[0];
}

/** The record with `cluster` among the claimants (unchanged when it already is one). */
export function withClaimant(
  record: ClaimRecord | undefined,
  domain: string,
  cluster: string,
  now: Date,
): ClaimRecord {
  const current = record ?? { domain, claimants: [] };
  if (current.claimants.some((c) => c.cluster === cluster)) return current;
  return {
    domain,
    claimants: [...current.claimants, { cluster, observed: now.toISOString() }].sort(order),
  };
}

/** The record without `cluster` (unchanged when it is not a claimant). */
export function withoutClaimant(record: ClaimRecord, cluster: string): ClaimRecord {
  return { domain: record.domain, claimants: record.claimants.filter((c) => c.cluster !== cluster) };
}

/** The name of a domain's claim ConfigMap: a fixed prefix and a hash of the domain (names are ≤ 253). */
export function claimObjectName(domain: string): string {
  return `zonekeeper-claim-${createHash('sha256').update(domain).digest('hex').slice(0, 32)}`;
}

/** The ConfigMap data of a record. */
export function claimData(record: ClaimRecord): Record<string, string> {
  return { domain: record.domain, claimants: JSON.stringify(record.claimants) };
}

/** A record from ConfigMap data; undefined when the data is not one. */
export function claimFromData(data: Record<string, string>): ClaimRecord | undefined {
  if (typeof data.domain !== 'string') return undefined;
  try {
    const claimants = JSON.parse(data.claimants ?? '[]') as unknown;
    if (!Array.isArray(claimants)) return undefined;
    const valid = claimants.filter(
      (c): c is Claimant =>
        typeof c === 'object' &&
        c !== null &&
        typeof (c as Claimant).cluster === 'string' &&
        typeof (c as Claimant).observed === 'string',
    );
    return { domain: data.domain, claimants: valid.sort(order) };
  } catch {
    return undefined;
  }
}

/**
 * The domain a downstream zone copy stands for: its domainName; for a kubizone Zone copy with a
 * partial one, the fqdn the door computed (status.fqdn), else none.
 */
export function copyDomain(kind: MirroredKind, o: { spec?: unknown; status?: unknown }): string | undefined {
  const domainName = String((o.spec as { domainName?: unknown } | undefined)?.domainName ?? '');
  if (kind !== KUBIZONE_ZONE || domainName.endsWith('.'))
    return domainName ? claimDomain(domainName) : undefined;
  const fqdn = (o.status as { fqdn?: unknown } | undefined)?.fqdn;
  return typeof fqdn === 'string' && fqdn !== '' ? claimDomain(fqdn) : undefined;
}

/** Ready reasons of a kubizone Zone copy that is refused (not merely pending or failing to program). */
const KUBIZONE_REFUSALS = new Set([
  'NotDelegated',
  'NoZone',
  'NoFqdn',
  'OutOfZone',
  'Rejected',
  'DomainNotVerified',
  'Conflict',
  'NoDefaultClass',
  'SeveralDefaultClasses',
]);

/**
 * What a zone copy's downstream status says of its domain claim, for the copy's generation:
 * 'accepted' (Accepted=True and not waiting for a verified Domain), 'refused' (Accepted=False, or
 * waiting for a verified Domain), or 'pending' (no verdict on this generation yet).
 */
export function zoneCopyVerdict(copy: {
  metadata: { generation?: number };
  status?: unknown;
}): 'accepted' | 'refused' | 'pending' {
  const conditions = ((copy.status as { conditions?: unknown } | undefined)?.conditions ?? []) as Condition[];
  if (!Array.isArray(conditions)) return 'pending';
  const current = (c: Condition | undefined) =>
    c !== undefined &&
    (copy.metadata.generation === undefined || c.observedGeneration === copy.metadata.generation);
  const accepted = conditions.find((c) => c.type === 'Accepted');
  if (accepted === undefined) {
    // kubizone's shape: one Ready condition, in the copy's generations like the others.
    const ready = conditions.find((c) => c.type === 'Ready');
    if (!current(ready)) return 'pending';
    if (ready?.status === 'True') return 'accepted';
    return ready?.status === 'False' && KUBIZONE_REFUSALS.has(ready.reason) ? 'refused' : 'pending';
  }
  if (!current(accepted)) return 'pending';
  if (accepted!.status !== 'True') return 'refused';
  const programmed = conditions.find((c) => c.type === 'Programmed');
  if (current(programmed) && programmed!.status === 'False' && programmed!.reason === 'DomainNotVerified')
    return 'refused';
  return 'accepted';
}
