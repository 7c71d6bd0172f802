/**
 * What one apply of a zone changes at an ExternalDNS webhook provider, decided from what the provider
 * lists (`GET /records`), with ExternalDNS's TXT registry for ownership. Pure: no I/O.
 *
 * Ownership: a record is Zonekeeper's when its ownership TXT record (named by `registryName`) holds
 * `owner=<ownerId>` and `resource=dnszone/<origin>` — the zone's own, so a parent and a child zone
 * programmed into one provider never take each other's records. Zonekeeper creates, updates and
 * deletes only its own records (with their ownership records); a record set whose name and type hold
 * a record it does not own — another ExternalDNS owner's, or one made by hand — is reported as a
 * Conflict and left as it is, exactly as an ExternalDNS instance with another owner ID leaves
 * Zonekeeper's records alone.
 */
import type { IgnoreRule } from '../../api/index.ts';
import { isInDomain, type Name } from '../../dns/name.ts';
import { ignoreMatcher } from '../../zones/ignore.ts';
import type { RRset } from '../../zones/rrset.ts';
import type { LiveDiff, LiveRRset, RRsetProblem } from '../backend.ts';
import {
  type Changes,
  type DomainFilter,
  type Endpoint,
  endpointKey,
  endpointRecords,
  looksLikeRegistryValue,
  type RegistryNaming,
  registryLabels,
  registryName,
  registryValue,
  sameEndpoint,
  toEndpoint,
} from './endpoints.ts';

export interface Ownership extends RegistryNaming {
  ownerId: string;
}

/** One desired RRset with its endpoint, as the provider adjusted it (`POST /adjustendpoints`). */
export interface Desired {
  rrset: RRset;
  /** Undefined: the provider dropped it in /adjustendpoints (it cannot hold it). */
  endpoint: Endpoint | undefined;
}

/**
 * A desired RRset the provider refused in `POST /records` at the serial applied (reported then):
 * whatever the provider holds at its name and type is left as it is, neither changed nor deleted.
 */
export interface Held {
  rrset: RRset;
  held: string;
}

export interface PlanInput {
  origin: Name;
  /** The provider's name for messages. */
  provider: string;
  ownership: Ownership;
  filter: DomainFilter;
  ignore?: readonly IgnoreRule[];
  /** The zone's RRsets other than the SOA, each with its endpoint or why it has none. */
  desired: readonly (Desired | Held | { rrset: RRset; refused: string })[];
  /** Every endpoint the provider lists. */
  listing: readonly Endpoint[];
}

/** The changes of one record (with its ownership record), sent alone when a batch is refused. */
export interface PlanUnit {
  /** The desired RRset the unit writes; undefined for a deletion or a release. */
  rrset?: RRset;
  /** For people: `create www.example.com A`. */
  what: string;
  changes: Changes;
}

export interface ZonePlan {
  /** Every change, in one batch. */
  changes: Changes;
  /** The same changes, record by record. */
  units: PlanUnit[];
  problems: RRsetProblem[];
  /** For `plan --live`. */
  diff: Omit<LiveDiff, 'exists' | 'problems'>;
}

/** The `resource` label of the zone's records: which zone of Zonekeeper owns them. */
export function zoneResource(origin: Name): string {
  return `dnszone/${origin.toLowerCase().replace(/\.$/, '')}`;
}

interface Registry {
  endpoint: Endpoint;
  labels: Record<string, string>;
}

export function planZone(input: PlanInput): ZonePlan {
  const { origin, ownership } = input;
  const resource = zoneResource(origin);
  const units: PlanUnit[] = [];
  const unit = (what: string, rrset?: RRset): Changes => {
    const c: Changes = { create: [], updateOld: [], updateNew: [], delete: [] };
    units.push({ ...(rrset ? { rrset } : {}), what, changes: c });
    return c;
  };
  const problems: RRsetProblem[] = [];
  const diff: ZonePlan['diff'] = { add: [], change: [], delete: [], notOwned: [], ignored: [] };
  const matches = ignoreMatcher(origin, input.ignore);
  const absolute = (n: string): Name => `${n.toLowerCase().replace(/\.$/, '')}.`;
  const inZone = (e: Endpoint) => {
    try {
      return isInDomain(absolute(e.dnsName), origin);
    } catch {
      return false;
    }
  };

  // The provider's records: ownership records (by name and set identifier) and the others.
  const registry = new Map<string, Registry>();
  const data = new Map<string, Endpoint>();
  const byNameType = new Map<string, Endpoint[]>();
  for (const e of input.listing) {
    const labels = e.recordType === 'TXT' && e.targets?.length ? registryLabels(e.targets[0]!) : undefined;
    if (labels) {
      registry.set(`${e.dnsName.toLowerCase().replace(/\.$/, '')} ${e.setIdentifier ?? ''}`, {
        endpoint: e,
        labels,
      });
      continue;
    }
    data.set(endpointKey(e), e);
    const nt = `${e.dnsName.toLowerCase().replace(/\.$/, '')} ${e.recordType}`;
    byNameType.set(nt, [...(byNameType.get(nt) ?? []), e]);
  }
  const ownerOf = (e: Pick<Endpoint, 'dnsName' | 'recordType' | 'setIdentifier'>) =>
    registry.get(`${registryName(bareName(e.dnsName), e.recordType, ownership)} ${e.setIdentifier ?? ''}`);
  const ours = (r: Registry | undefined) =>
    r !== undefined && r.labels.owner === ownership.ownerId && r.labels.resource === resource;
  const heldBy = (r: Registry | undefined) =>
    r === undefined
      ? 'no owner (no ExternalDNS ownership record: made by hand or by another tool)'
      : r.labels.owner === ownership.ownerId
        ? `owner ${r.labels.owner} for ${r.labels.resource ?? 'no resource'} (another zone or program with the same owner ID)`
        : `ExternalDNS owner ${JSON.stringify(r.labels.owner ?? '')}`;

  const live = (e: Endpoint): LiveRRset => ({
    owner: absolute(e.dnsName),
    type: e.recordType,
    ttl: e.recordTTL ?? 0,
    records: endpointRecords(e),
  });
  const problem = (rrset: RRset, reason: RRsetProblem['reason'], message: string) =>
    problems.push({ owner: rrset.owner, type: rrset.type, origin: rrset.origin, reason, message });

  const deletedRegistry = new Set<string>();
  const deleteRegistry = (r: Registry, into?: Changes) => {
    const k = endpointKey(r.endpoint);
    if (deletedRegistry.has(k)) return;
    deletedRegistry.add(k);
    (into ?? unit(`delete the ownership record ${r.endpoint.dnsName}`)).delete.push(r.endpoint);
  };
  const labelsOf = (): Record<string, string> => ({ owner: ownership.ownerId, resource });
  const registryRecord = (e: Endpoint): Endpoint => ({
    dnsName: registryName(e.dnsName, e.recordType, ownership),
    targets: [registryValue(labelsOf())],
    recordType: 'TXT',
    labels: { ownedRecord: e.dnsName },
  });

  // The ownership record names this zone's records use: no record set may take one.
  const registryNames = new Set<string>();
  for (const d of input.desired)
    if ('endpoint' in d && d.endpoint)
      registryNames.add(registryName(d.endpoint.dnsName, d.endpoint.recordType, ownership));

  /** Data keys the zone keeps (programmed, or left as they are): never deleted below. */
  const kept = new Set<string>();
  for (const d of input.desired) {
    const { rrset } = d;
    if (matches?.(rrset.owner, rrset.type)) {
      problem(
        rrset,
        'Conflict',
        `${rrset.owner} ${rrset.type} matches the zone's spec.ignore, so Zonekeeper leaves it at ${input.provider} as it is; remove the rule or this record set`,
      );
      continue; // released below with the other ignored records
    }
    if ('refused' in d) {
      problem(rrset, 'BackendRejected', `${input.provider}: ${d.refused}`);
      continue;
    }
    if ('held' in d) {
      const e = toEndpoint(rrset);
      if (!('refused' in e))
        for (const h of byNameType.get(`${e.dnsName} ${e.recordType}`) ?? []) kept.add(endpointKey(h));
      continue;
    }
    const want = toEndpoint(rrset) as Endpoint; // refusals are in `refused`
    if (!input.filter.match(want.dnsName)) {
      problem(
        rrset,
        'BackendRejected',
        `${input.provider}: ${want.dnsName} is outside the provider's domain filter (${input.filter.text}); configure the provider's domain filter to include it`,
      );
      continue;
    }
    const ownerName = registryName(want.dnsName, want.recordType, ownership);
    if (!input.filter.match(ownerName)) {
      problem(
        rrset,
        'BackendRejected',
        `${input.provider}: the ownership record ${ownerName} of ${want.dnsName} ${want.recordType} is outside the provider's domain filter (${input.filter.text}); set txtPrefix to a value with %{record_type} ending in "." (e.g. "%{record_type}-zk.", which keeps an apex record's ownership record inside the zone), the same in the ExternalDNS instances sharing the provider`,
      );
      continue;
    }
    if (
      rrset.type === 'TXT' &&
      rrset.rdata.some((r) => r.type === 'TXT' && looksLikeRegistryValue(r.strings.join('')))
    ) {
      problem(
        rrset,
        'BackendRejected',
        `${input.provider}: ${rrset.owner} TXT holds heritage=..., the form of an ExternalDNS ownership record; a record set may not claim records for an owner, so it is not written`,
      );
      continue;
    }
    if (registryNames.has(want.dnsName) || registry.has(`${want.dnsName} `)) {
      // A TXT there would take the ownership record; a CNAME there would make the name hold
      // nothing else (RFC 1034 §3.6.2), so the provider would refuse the ownership record.
      problem(
        rrset,
        'Conflict',
        `${input.provider}: ${want.dnsName} is the name of an ExternalDNS ownership record; a ${rrset.type} record set there would take or block it, so it is not written`,
      );
      continue;
    }
    if (d.endpoint === undefined) {
      problem(
        rrset,
        'BackendRejected',
        `${input.provider} cannot hold ${want.dnsName} ${want.recordType}: it dropped the endpoint in /adjustendpoints (a record type or name the provider does not support)`,
      );
      continue;
    }
    const adjusted: Endpoint = { ...d.endpoint, labels: { ...(d.endpoint.labels ?? {}), ...labelsOf() } };
    const key = endpointKey(adjusted);
    const have = data.get(key);
    const owner = ownerOf(adjusted);
    if (have === undefined) {
      const weighted = (byNameType.get(`${adjusted.dnsName} ${adjusted.recordType}`) ?? []).filter(
        (e) => (e.setIdentifier ?? '') !== '',
      );
      if (weighted.length > 0) {
        problem(
          rrset,
          'Conflict',
          `${input.provider} holds ${adjusted.dnsName} ${adjusted.recordType} with set identifiers (${weighted.map((e) => e.setIdentifier).join(', ')}), not Zonekeeper's; remove them there to let Zonekeeper write it`,
        );
        for (const e of weighted) kept.add(endpointKey(e));
        continue;
      }
      if (owner !== undefined && !ours(owner)) {
        problem(
          rrset,
          'Conflict',
          `${input.provider}: ${adjusted.dnsName} ${adjusted.recordType} is claimed by ${heldBy(owner)}; Zonekeeper does not take records others own`,
        );
        continue;
      }
      if (owner === undefined) {
        const txt = registryRecord(adjusted);
        if (data.has(endpointKey(txt)) || data.has(endpointKey({ ...txt, recordType: 'CNAME' }))) {
          // A plain TXT record holds the name the ownership record needs (a record set of another
          // zone, or one made by hand): writing would fail the whole batch or take that record.
          problem(
            rrset,
            'Conflict',
            `${input.provider}: the name of the ownership record of ${adjusted.dnsName} ${adjusted.recordType}, ${txt.dnsName}, holds a ${data.has(endpointKey(txt)) ? 'TXT record that is not an ownership record' : 'CNAME record'}; remove it there, or set txtPrefix`,
          );
          continue;
        }
        unit(`create ${adjusted.dnsName} ${adjusted.recordType}`, rrset).create.push(adjusted, txt);
      } else unit(`create ${adjusted.dnsName} ${adjusted.recordType}`, rrset).create.push(adjusted);
      diff.add.push(live(adjusted));
      kept.add(key);
      continue;
    }
    if (!ours(owner)) {
      problem(
        rrset,
        'Conflict',
        `${input.provider} holds ${adjusted.dnsName} ${adjusted.recordType} owned by ${heldBy(owner)}${sameEndpoint(adjusted, have) ? ' (with the same content)' : ''}; Zonekeeper does not change or delete records it does not own: remove it there to let Zonekeeper take it`,
      );
      kept.add(key);
      continue;
    }
    kept.add(key);
    if (!sameEndpoint(adjusted, have)) {
      const c = unit(`update ${adjusted.dnsName} ${adjusted.recordType}`, rrset);
      c.updateOld.push(have);
      c.updateNew.push(adjusted);
      diff.change.push({
        owner: absolute(have.dnsName),
        type: have.recordType,
        before: live(have),
        after: live(adjusted),
      });
    }
  }

  // The provider's records in the zone the zone no longer has: Zonekeeper's are deleted with their
  // ownership records, unless ignore rules match them (then released: the ownership record goes,
  // the record stays); the others are left alone.
  for (const [key, e] of data) {
    if (!inZone(e)) continue;
    const owner = ownerOf(e);
    if (matches?.(absolute(e.dnsName), e.recordType)) {
      diff.ignored.push(live(e));
      if (ours(owner)) deleteRegistry(owner!);
      continue;
    }
    if (!ours(owner)) {
      diff.notOwned.push(live(e));
      continue;
    }
    if (kept.has(key)) continue;
    const c = unit(`delete ${e.dnsName} ${e.recordType}`);
    c.delete.push(e);
    deleteRegistry(owner!, c);
    diff.delete.push(live(e));
  }
  // Ownership records of this zone whose record is gone (lost, or deleted by hand): deleted too,
  // unless a record being created now uses it.
  const usedRegistry = new Set<string>();
  const deleting = new Set(units.flatMap((u) => u.changes.delete));
  for (const e of [...data.values(), ...units.flatMap((u) => u.changes.create)]) {
    if (e.recordType === 'TXT' && e.targets?.length && registryLabels(e.targets[0]!)) continue;
    if (deleting.has(e)) continue;
    usedRegistry.add(
      `${registryName(bareName(e.dnsName), e.recordType, ownership)} ${e.setIdentifier ?? ''}`,
    );
  }
  for (const [k, r] of registry) {
    if (!ours(r) || usedRegistry.has(k)) continue;
    deleteRegistry(r);
  }
  const changes: Changes = {
    create: units.flatMap((u) => u.changes.create),
    updateOld: units.flatMap((u) => u.changes.updateOld),
    updateNew: units.flatMap((u) => u.changes.updateNew),
    delete: units.flatMap((u) => u.changes.delete),
  };
  return { changes, units, problems, diff };
}

/** An endpoint name as a key: lower case, without a trailing dot (some providers list one). */
function bareName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

/** Whether a plan changes nothing at the provider. */
export function noChanges(changes: Changes): boolean {
  return (
    changes.create.length === 0 &&
    changes.updateOld.length === 0 &&
    changes.updateNew.length === 0 &&
    changes.delete.length === 0
  );
}
