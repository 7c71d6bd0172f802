import type { DNSRecordSet, DNSZone } from '../api/index.ts';
import { isInDomain, type Name, nameEquals, parseName } from '../dns/name.ts';
import { parseRdata, type Rdata } from '../dns/rdata.ts';
import type { AssemblyInput, ChildDelegation } from './assemble.ts';
import type { Catalog } from './catalog.ts';
import { parseRecordSetRecords } from './record-parse.ts';
import { compareByAge, type ResourceKey, resourceKey } from './resource-key.ts';
import type { RRset } from './rrset.ts';
import { zoneDefaultTtl } from './soa.ts';
import { zoneNameServers } from './zone-name-servers.ts';

/**
 * Gathers what `assembleZone` needs for one accepted zone from the catalog: the zone, its class, the
 * record sets resolved to it, and each managed child zone's NS and glue. Undefined when the zone is
 * not accepted.
 */
export function zoneAssemblyInput(catalog: Catalog, key: ResourceKey): AssemblyInput | undefined {
  const verdict = catalog.zoneVerdict(key);
  const zone = catalog.zones.get(key);
  if (!verdict?.accepted || !zone) return undefined;
  const records: AssemblyInput['records'] = [];
  for (const rs of catalog.recordsOf(key)) {
    const resolution = catalog.recordResolution(resourceKey(rs.metadata));
    if (resolution?.resolved) records.push({ recordSet: rs, fqdn: resolution.fqdn });
  }
  const children = zoneChildren(catalog, key);
  return { zone, zoneClass: verdict.zoneClass, origin: verdict.origin, records, children };
}

/** Each accepted child zone of the zone as its parent publishes it: NS at the cut, glue below. */
export function zoneChildren(catalog: Catalog, key: ResourceKey): ChildDelegation[] {
  const zone = catalog.zones.get(key);
  const verdict = catalog.zoneVerdict(key);
  if (!zone || !verdict?.accepted) return [];
  const children: ChildDelegation[] = [];
  for (const child of catalog.childZonesOf(key)) {
    const childKey = resourceKey(child.metadata);
    const childVerdict = catalog.zoneVerdict(childKey);
    if (!childVerdict?.accepted) continue;
    const nameServers = zoneNameServers(child, childVerdict.zoneClass).map((ns) => parseName(ns));
    children.push({
      zone: childKey,
      origin: childVerdict.origin,
      nameServers,
      ttl: zoneDefaultTtl(zone, verdict.zoneClass),
      glue: glueFromChild(catalog, childKey, childVerdict.origin, nameServers),
      ...childDs(child),
    });
  }
  return children;
}

/** The DS records a signed child zone reports in its status (each a DS in presentation form). */
function childDs(child: DNSZone): { ds?: Rdata[] } {
  const ds: Rdata[] = [];
  for (const text of child.status?.dnssec?.ds ?? []) {
    try {
      ds.push(parseRdata('DS', text, '.'));
    } catch {
      // A status that is not a DS (written by hand) publishes nothing.
    }
  }
  return ds.length > 0 ? { ds } : {};
}

/**
 * The child's A/AAAA record sets at its nameservers' names (only those inside the child need glue,
 * RFC 1034 §4.2.1). When two record sets claim the same name and type, the oldest valid one is used,
 * as in the child's own assembly.
 */
function glueFromChild(
  catalog: Catalog,
  childKey: ResourceKey,
  childOrigin: Name,
  nameServers: Name[],
): RRset[] {
  const inside = nameServers.filter((ns) => isInDomain(ns, childOrigin));
  if (inside.length === 0) return [];
  const childZone = catalog.zones.get(childKey)!;
  const childVerdict = catalog.zoneVerdict(childKey);
  if (!childVerdict?.accepted) return [];
  const defaultTtl = zoneDefaultTtl(childZone, childVerdict.zoneClass);
  const candidates: { rs: DNSRecordSet; fqdn: Name }[] = [];
  for (const rs of catalog.recordsOf(childKey)) {
    if (rs.spec.type !== 'A' && rs.spec.type !== 'AAAA') continue;
    const resolution = catalog.recordResolution(resourceKey(rs.metadata));
    if (resolution?.resolved && inside.some((ns) => nameEquals(ns, resolution.fqdn))) {
      candidates.push({ rs, fqdn: resolution.fqdn });
    }
  }
  candidates.sort((a, b) => compareByAge(a.rs, b.rs));
  const out: RRset[] = [];
  const taken = new Set<string>();
  for (const { rs, fqdn } of candidates) {
    const id = `${fqdn.toLowerCase()} ${rs.spec.type}`;
    if (taken.has(id)) continue;
    const parsed = parseRecordSetRecords(rs, childOrigin);
    if (!parsed.ok) continue;
    taken.add(id);
    out.push({
      owner: fqdn,
      type: rs.spec.type,
      ttl: rs.spec.ttl ?? defaultTtl,
      rdata: parsed.rdata,
      origin: { kind: 'glue', namespace: rs.metadata.namespace ?? '', name: rs.metadata.name },
    });
  }
  return out;
}
