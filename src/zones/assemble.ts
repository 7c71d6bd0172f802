import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../api/index.ts';
import { steeredTtl } from '../api/steering.ts';
import {
  compareCanonical,
  isInDomain,
  labelCount,
  type Name,
  nameEquals,
  nameKey,
  parseName,
} from '../dns/name.ts';
import type { Rdata } from '../dns/rdata.ts';
import { RRType } from '../dns/rrtype.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import { zoneContentHash } from './content-hash.ts';
import { ownerConflict } from './exclusivity.ts';
import { parseRecordSetRecords, steeringOf } from './record-parse.ts';
import { compareByAge, type ResourceKey, refOf, resourceKey } from './resource-key.ts';
import type { RRset } from './rrset.ts';
import { type SoaFields, soaFor, zoneDefaultTtl } from './soa.ts';
import { zoneNameServers } from './zone-name-servers.ts';

/** A managed child zone, as its parent must publish it: NS at the cut plus glue below it. */
export interface ChildDelegation {
  zone: ResourceKey;
  origin: Name;
  nameServers: Name[];
  ttl: number;
  /** A/AAAA RRsets of the child for its own nameservers that lie inside the child zone. */
  glue: RRset[];
  /**
   * The child's DS records when it is signed (from its status.dnssec.ds, RFC 4035 §2.4): published at
   * the cut so the chain of trust reaches the child without anyone copying them by hand.
   */
  ds?: Rdata[];
}

export interface AssemblyInput {
  zone: DNSZone;
  zoneClass: DNSZoneClass;
  origin: Name;
  /** Record sets the catalog resolved to this zone, with their absolute owner names. */
  records: { recordSet: DNSRecordSet; fqdn: Name }[];
  children: ChildDelegation[];
}

export type RecordVerdict =
  | { accepted: true; fqdn: Name }
  | { accepted: false; reason: 'Invalid' | 'Conflict'; message: string; fqdn: Name };

export interface AssembledZone {
  origin: Name;
  soa: SoaFields;
  nameServers: Name[];
  /** Every RRset but the SOA, in canonical order (owner, then type code). */
  rrsets: RRset[];
  hash: string;
  verdicts: ReadonlyMap<ResourceKey, RecordVerdict>;
  /** Record sets published in this zone. */
  acceptedCount: number;
  /** Things that serve but deserve a look, e.g. an in-zone nameserver without an address. */
  warnings: string[];
}

/** A zone cut inside a zone: the NS RRset at `owner`, its nameservers, and who publishes it. */
export interface Cut {
  owner: Name;
  hosts: Name[];
  by: string;
}

/**
 * Where a zone's cuts (shallowest first) leave an RRset of `type` at `fqdn`: undefined where it may be
 * published, else why not. At a cut only NS and DS exist; below it only glue (A/AAAA of the cut's
 * nameservers) is published; anything else is occluded and never served (RFC 1034 §4.2.1, RFC 2181
 * §6). The rule `assembleZone` judges record sets by, and the record writer's gate judges writes by.
 */
export function cutRefusal(
  fqdn: Name,
  type: string,
  cuts: readonly Cut[],
): { reason: 'Invalid' | 'Conflict'; message: string; cut: Cut } | undefined {
  const cut = cuts.find((c) => isInDomain(fqdn, c.owner));
  if (!cut) return undefined;
  const atCut = nameEquals(fqdn, cut.owner);
  if (atCut && type !== 'DS')
    return {
      reason: 'Conflict',
      message: `${fqdn} is a delegation point (NS from ${cut.by}); only NS and DS records exist there (RFC 1034 §4.2.1)`,
      cut,
    };
  const isGlue = !atCut && (type === 'A' || type === 'AAAA') && cut.hosts.some((h) => nameEquals(h, fqdn));
  if (!atCut && !isGlue)
    return {
      reason: 'Invalid',
      message: `${fqdn} is below the delegation ${cut.owner} (NS from ${cut.by}) and would never be served; publish it in the delegated zone`,
      cut,
    };
  return undefined;
}

/** The order record sets are judged in: NS first (they define cuts; shallower, then older first), then the rest by age. */
function judgingOrder(a: { rs: DNSRecordSet; fqdn: Name }, b: { rs: DNSRecordSet; fqdn: Name }): number {
  const aNs = a.rs.spec.type === 'NS' ? 0 : 1;
  const bNs = b.rs.spec.type === 'NS' ? 0 : 1;
  if (aNs !== bNs) return aNs - bNs;
  if (aNs === 0) {
    const depth = labelCount(a.fqdn) - labelCount(b.fqdn);
    if (depth !== 0) return depth;
  }
  return compareByAge(a.rs, b.rs);
}

/**
 * The cuts NS record sets make above or at `fqdn` in a zone, as `assembleZone` accepts them: an NS
 * record set that parses, is not at the apex and is not itself at or below an earlier cut (in
 * `judgingOrder`). Only the NS record sets at `fqdn` or its ancestors can be the cut it lies under,
 * and only those are looked at. `children`: the cuts of managed child zones, which come first.
 */
export function cutsAbove(
  fqdn: Name,
  origin: Name,
  records: Iterable<{ recordSet: DNSRecordSet; fqdn: Name }>,
  children: readonly Cut[] = [],
): Cut[] {
  const candidates: { rs: DNSRecordSet; fqdn: Name; hosts: Name[] }[] = [];
  for (const { recordSet: rs, fqdn: at } of records) {
    if (rs.spec.type !== 'NS' || nameEquals(at, origin) || !isInDomain(fqdn, at)) continue;
    const result = parseRecordSetRecords(rs, origin);
    if (result.ok)
      candidates.push({ rs, fqdn: at, hosts: result.rdata.map((r) => (r as { host: Name }).host) });
  }
  candidates.sort(judgingOrder);
  const cuts = [...children];
  for (const c of candidates)
    if (!cutRefusal(c.fqdn, 'NS', cuts))
      cuts.push({ owner: c.fqdn, hosts: c.hosts, by: `DNSRecordSet ${resourceKey(c.rs.metadata)}` });
  return cuts;
}

/**
 * Computes the exact content of one zone: SOA and apex NS from the class and zone, NS and glue for
 * managed child zones, and the record sets that pass every rule. Deterministic: the same input gives
 * the same zone and hash whatever the order of `records`.
 */
export function assembleZone(input: AssemblyInput): AssembledZone {
  const { zone, zoneClass, origin } = input;
  const soa = soaFor(zone, zoneClass, origin);
  const defaultTtl = zoneDefaultTtl(zone, zoneClass);
  const nameServers = zoneNameServers(zone, zoneClass).map((ns) => parseName(ns));
  const rrsets: RRset[] = [
    {
      owner: origin,
      type: 'NS',
      ttl: defaultTtl,
      rdata: nameServers.map((host) => ({ type: 'NS', host })),
      origin: { kind: 'apex' },
    },
  ];
  const verdicts = new Map<ResourceKey, RecordVerdict>();
  const warnings: string[] = [];

  // Published RRsets by owner, for conflict checks: owner key -> type -> who published it.
  const byOwner = new Map<string, Map<string, string>>();
  const publish = (rrset: RRset, by: string) => {
    rrsets.push(rrset);
    const k = nameKey(rrset.owner);
    const types = getOrInsert(byOwner, k, () => new Map());
    types.set(rrset.type, by);
  };
  byOwner.set(
    nameKey(origin),
    new Map([
      ['SOA', 'the zone'],
      ['NS', `DNSZoneClass ${zoneClass.metadata.name}`],
    ]),
  );

  const cuts: Cut[] = [];
  for (const child of [...input.children].sort((a, b) => compareCanonical(a.origin, b.origin))) {
    const by = `DNSZone ${child.zone}`;
    publish(
      {
        owner: child.origin,
        type: 'NS',
        ttl: child.ttl,
        rdata: child.nameServers.map((host) => ({ type: 'NS', host })),
        origin: { kind: 'childZone', ...refOf(child.zone) },
      },
      by,
    );
    if (child.ds && child.ds.length > 0)
      publish(
        {
          owner: child.origin,
          type: 'DS',
          ttl: child.ttl,
          rdata: child.ds,
          origin: { kind: 'childZone', ...refOf(child.zone) },
        },
        by,
      );
    cuts.push({ owner: child.origin, hosts: child.nameServers, by });
    for (const glue of child.glue) publish(glue, by);
  }

  // Parse first; then NS record sets (they define cuts; shallower and older first), then the rest by age.
  const parsed: { rs: DNSRecordSet; key: ResourceKey; fqdn: Name; rdata: Rdata[] }[] = [];
  for (const { recordSet: rs, fqdn } of input.records) {
    const key = resourceKey(rs.metadata);
    const invalid = (message: string) =>
      verdicts.set(key, { accepted: false, reason: 'Invalid', message, fqdn });
    const result = parseRecordSetRecords(rs, origin);
    if (!result.ok) {
      invalid(result.message);
      continue;
    }
    const atApex = nameEquals(fqdn, origin);
    const type = rs.spec.type;
    if (type === 'SOA') {
      invalid('the SOA is generated from the DNSZone and its class; set spec.soa on the DNSZone instead');
    } else if (atApex && type === 'NS') {
      invalid(
        `apex NS records come from DNSZoneClass ${zoneClass.metadata.name} spec.nameServers (or spec.zoneNameServers); change them there`,
      );
    } else if (atApex && type === 'CNAME') {
      invalid(
        'a CNAME cannot be at the zone apex, where the SOA and NS must exist (RFC 1034 §3.6.2); use ALIAS',
      );
    } else if (atApex && type === 'DS') {
      invalid('a DS record belongs in the parent zone, at the delegation point (RFC 4035 §2.4)');
    } else {
      parsed.push({ rs, key, fqdn, rdata: result.rdata });
    }
  }
  parsed.sort(judgingOrder);

  let acceptedCount = 0;
  for (const { rs, key, fqdn, rdata } of parsed) {
    const type = rs.spec.type;
    const reject = (reason: 'Invalid' | 'Conflict', message: string) =>
      verdicts.set(key, { accepted: false, reason, message, fqdn });
    const refused = cutRefusal(fqdn, type, cuts);
    if (refused) {
      reject(refused.reason, refused.message);
      continue;
    }
    const here = byOwner.get(nameKey(fqdn));
    const conflict = here && ownerConflict(fqdn, type, here);
    if (conflict) {
      reject('Conflict', conflict.message);
      continue;
    }
    const by = `DNSRecordSet ${key}`;
    const steering = steeringOf(rs, fqdn, rdata, zoneClass.spec.topology, zoneClass.spec.geoip);
    publish(
      {
        owner: fqdn,
        type,
        ttl: steeredTtl(rs.spec, rs.spec.ttl ?? defaultTtl),
        rdata,
        origin: { kind: 'recordSet', ...refOf(key) },
        ...(steering ? { steering } : {}),
      },
      by,
    );
    if (type === 'NS') cuts.push({ owner: fqdn, hosts: rdata.map((r) => (r as { host: Name }).host), by });
    verdicts.set(key, { accepted: true, fqdn });
    acceptedCount++;
  }

  for (const ns of nameServers) {
    if (isInDomain(ns, origin) && !cuts.some((c) => isInDomain(ns, c.owner)) && !hasAddress(byOwner, ns)) {
      warnings.push(`nameserver ${ns} is inside the zone but has no A or AAAA record`);
    }
  }
  for (const cut of cuts) {
    for (const host of cut.hosts) {
      if (isInDomain(host, cut.owner) && !hasAddress(byOwner, host)) {
        warnings.push(
          `delegation ${cut.owner} names nameserver ${host} below the cut but no glue A/AAAA exists`,
        );
      }
    }
  }

  rrsets.sort(
    (a, b) =>
      compareCanonical(a.owner, b.owner) ||
      RRType[a.type as keyof typeof RRType] - RRType[b.type as keyof typeof RRType],
  );
  return {
    origin,
    soa,
    nameServers,
    rrsets,
    hash: zoneContentHash(soa, rrsets),
    verdicts,
    acceptedCount,
    warnings,
  };
}

function hasAddress(byOwner: Map<string, Map<string, string>>, name: Name): boolean {
  const types = byOwner.get(nameKey(name));
  return types !== undefined && (types.has('A') || types.has('AAAA'));
}
