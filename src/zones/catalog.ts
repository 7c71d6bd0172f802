import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../api/index.ts';
import { DnsError } from '../dns/errors.ts';
import {
  isInDomain,
  isWildcardName,
  labelCount,
  type Name,
  nameKey,
  parentName,
  parseName,
  relativeName,
} from '../dns/name.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import { zoneAdmits } from './delegation.ts';
import { publicSuffixSection } from './public-suffix.ts';
import { compareByAge, type ResourceKey, resourceKey } from './resource-key.ts';

/** Whether a DNSZone is served, and if not, why. */
export type ZoneVerdict =
  | { accepted: true; origin: Name; zoneClass: DNSZoneClass; parent?: ResourceKey }
  | {
      accepted: false;
      reason: 'Invalid' | 'ClassNotFound' | 'PublicSuffix' | 'Conflict' | 'NotDelegated' | 'ZoneShadowed';
      message: string;
      origin?: Name;
    };

/** Which zone a record set belongs to, or why it belongs to none. */
export type RecordResolution =
  | { resolved: true; zone: ResourceKey; fqdn: Name }
  | {
      resolved: false;
      reason: 'Invalid' | 'ZoneNotFound' | 'OutOfZone' | 'NotDelegated';
      message: string;
      zone?: ResourceKey;
      fqdn?: Name;
    };

/** A record set as a zone sees it: present with its absolute name, or gone (undefined). */
export interface ZoneMember {
  key: ResourceKey;
  current: { recordSet: DNSRecordSet; fqdn: Name } | undefined;
}

/** The keys a change touched; the engine enqueues exactly these. */
export interface Affected {
  zones: Set<ResourceKey>;
  records: Set<ResourceKey>;
  /** Per zone: the record sets that joined, left or changed in it (for incremental zone updates). */
  recordsByZone: Map<ResourceKey, Set<ResourceKey>>;
}

function noneAffected(): Affected {
  return { zones: new Set(), records: new Set(), recordsByZone: new Map() };
}

/** Adds everything in `from` to `into`. */
export function mergeAffected(into: Affected, from: Affected): Affected {
  for (const z of from.zones) into.zones.add(z);
  for (const r of from.records) into.records.add(r);
  for (const [zone, keys] of from.recordsByZone) {
    const set = getOrInsert(into.recordsByZone, zone, () => new Set());
    for (const k of keys) set.add(k);
  }
  return into;
}

const UNRESOLVED = '';

/**
 * The in-memory index of every class, zone and record set, and the rules that relate them: which
 * zone is accepted for a domain (oldest wins; a child zone of a managed parent in another namespace
 * needs the parent's delegation), and which accepted zone adopts each record set. Pure and
 * synchronous; every mutation returns the keys whose outcome may have changed.
 */
export class Catalog {
  readonly classes = new Map<string, DNSZoneClass>();
  readonly zones = new Map<ResourceKey, DNSZone>();
  readonly records = new Map<ResourceKey, DNSRecordSet>();

  private verdicts = new Map<ResourceKey, ZoneVerdict>();
  /** accepted zone per domain (nameKey of the origin) */
  private byDomain = new Map<string, ResourceKey>();
  private children = new Map<ResourceKey, Set<ResourceKey>>();
  private resolutions = new Map<ResourceKey, RecordResolution>();
  /** record keys per resolved zone key; UNRESOLVED holds the ones without a zone */
  private membership = new Map<ResourceKey, Set<ResourceKey>>();
  /** record keys per zone key named in their spec.zoneRef */
  private readonly byZoneRef = new Map<ResourceKey, Set<ResourceKey>>();
  /** Zones that exist but never reached the catalog (their manifest fails validation): key → why. */
  private readonly refusedElsewhere = new Map<ResourceKey, string>();

  zoneVerdict(key: ResourceKey): ZoneVerdict | undefined {
    return this.verdicts.get(key);
  }

  recordResolution(key: ResourceKey): RecordResolution | undefined {
    return this.resolutions.get(key);
  }

  /** Record sets resolved to this zone (the candidates its assembly decides about). */
  recordsOf(zone: ResourceKey): DNSRecordSet[] {
    const keys = this.membership.get(zone);
    if (!keys) return [];
    const out: DNSRecordSet[] = [];
    for (const key of keys) {
      const rs = this.records.get(key);
      if (rs) out.push(rs);
    }
    return out;
  }

  /** Every record set resolved to the zone, with its absolute name (a zone model's full input). */
  zoneMembers(zone: ResourceKey): ZoneMember[] {
    const out: ZoneMember[] = [];
    for (const rs of this.recordsOf(zone)) {
      const key = resourceKey(rs.metadata);
      const resolution = this.resolutions.get(key);
      if (resolution?.resolved) out.push({ key, current: { recordSet: rs, fqdn: resolution.fqdn } });
    }
    return out;
  }

  /** The given record sets as they stand now for the zone: resolved to it, or gone from it. */
  membersNow(zone: ResourceKey, keys: Iterable<ResourceKey>): ZoneMember[] {
    return [...keys].map((key) => {
      const rs = this.records.get(key);
      const resolution = this.resolutions.get(key);
      return {
        key,
        current:
          rs && resolution?.resolved && resolution.zone === zone
            ? { recordSet: rs, fqdn: resolution.fqdn }
            : undefined,
      };
    });
  }

  /** Accepted zones whose nearest accepted ancestor is this zone. */
  childZonesOf(zone: ResourceKey): DNSZone[] {
    return [...(this.children.get(zone) ?? [])].flatMap((k) => this.zones.get(k) ?? []);
  }

  /** The accepted zone serving exactly this domain, if any. */
  zoneForDomain(origin: Name): ResourceKey | undefined {
    return this.byDomain.get(nameKey(origin));
  }

  acceptedZones(): ResourceKey[] {
    return [...this.byDomain.values()];
  }

  setClass(zoneClass: DNSZoneClass): Affected {
    this.classes.set(zoneClass.metadata.name, zoneClass);
    return this.classChanged(zoneClass.metadata.name);
  }

  deleteClass(name: string): Affected {
    this.classes.delete(name);
    return this.classChanged(name);
  }

  setZone(zone: DNSZone): Affected {
    const key = resourceKey(zone.metadata);
    const before = this.zones.get(key);
    this.zones.set(key, zone);
    const affected = this.recomputeZones();
    affected.zones.add(key);
    if (
      before &&
      JSON.stringify(before.spec.delegations ?? []) !== JSON.stringify(zone.spec.delegations ?? [])
    ) {
      // Delegations gate the record sets of other namespaces: those it held may no longer be admitted.
      const keys = [...(this.membership.get(key) ?? []), ...(this.byZoneRef.get(key) ?? [])];
      mergeAffected(affected, this.reresolve(keys));
    }
    return affected;
  }

  deleteZone(key: ResourceKey): Affected {
    this.zones.delete(key);
    const affected = this.recomputeZones();
    affected.zones.add(key);
    return affected;
  }

  /**
   * Loads many objects at once (start-up, resync): zone verdicts are computed once for the whole set
   * instead of once per zone, and every record is resolved once.
   */
  load(classes: Iterable<DNSZoneClass>, zones: Iterable<DNSZone>, records: Iterable<DNSRecordSet>): Affected {
    for (const c of classes) this.classes.set(c.metadata.name, c);
    for (const z of zones) this.zones.set(resourceKey(z.metadata), z);
    const keys: ResourceKey[] = [];
    for (const rs of records) {
      const key = resourceKey(rs.metadata);
      this.indexZoneRef(key, this.records.get(key), rs);
      this.records.set(key, rs);
      keys.push(key);
    }
    const affected = mergeAffected(this.recomputeZones(false), this.reresolve(keys));
    for (const z of this.zones.keys()) affected.zones.add(z);
    return affected;
  }

  setRecord(rs: DNSRecordSet): Affected {
    const key = resourceKey(rs.metadata);
    this.indexZoneRef(key, this.records.get(key), rs);
    this.records.set(key, rs);
    return this.reresolve([key]);
  }

  private indexZoneRef(
    key: ResourceKey,
    before: DNSRecordSet | undefined,
    after: DNSRecordSet | undefined,
  ): void {
    const refOf = (rs: DNSRecordSet | undefined) =>
      rs?.spec.zoneRef
        ? resourceKey({
            name: rs.spec.zoneRef.name,
            namespace: rs.spec.zoneRef.namespace ?? rs.metadata.namespace,
          })
        : undefined;
    const from = refOf(before);
    const to = refOf(after);
    if (from === to) return;
    if (from !== undefined) this.byZoneRef.get(from)?.delete(key);
    if (to !== undefined) getOrInsert(this.byZoneRef, to, () => new Set()).add(key);
  }

  /**
   * Notes that a DNSZone exists but was refused before the catalog could see it (its manifest fails
   * validation, so it is never set here), or with `undefined` that this is over. Record sets naming it
   * in spec.zoneRef then say that it is refused and why, instead of that it does not exist.
   */
  setZoneRefused(key: ResourceKey, why: string | undefined): Affected {
    if (why === undefined ? !this.refusedElsewhere.has(key) : this.refusedElsewhere.get(key) === why) {
      return noneAffected();
    }
    if (why === undefined) this.refusedElsewhere.delete(key);
    else this.refusedElsewhere.set(key, why);
    return this.reresolve(this.byZoneRef.get(key) ?? []);
  }

  deleteRecord(key: ResourceKey): Affected {
    const before = this.resolutions.get(key);
    this.indexZoneRef(key, this.records.get(key), undefined);
    this.records.delete(key);
    this.resolutions.delete(key);
    const zone = before?.resolved ? before.zone : UNRESOLVED;
    this.membership.get(zone)?.delete(key);
    const affected = noneAffected();
    affected.records.add(key);
    if (before?.resolved) {
      affected.zones.add(before.zone);
      affected.recordsByZone.set(before.zone, new Set([key]));
    }
    return affected;
  }

  private classChanged(name: string): Affected {
    const affected = this.recomputeZones();
    for (const [key, zone] of this.zones) if (zone.spec.className === name) affected.zones.add(key);
    return affected;
  }

  /**
   * Recomputes every zone verdict (cheap: a map walk per zone) and re-resolves the records whose zone
   * could have changed: those in zones that appeared, disappeared or changed verdict, those in the
   * parent zones of such zones, and those without a zone.
   */
  private recomputeZones(resolveRecords = true): Affected {
    const previous = this.verdicts;
    const previousDomains = this.byDomain;
    this.verdicts = new Map();
    this.byDomain = new Map();
    this.children = new Map();

    const candidates: { key: ResourceKey; zone: DNSZone; origin: Name }[] = [];
    for (const [key, zone] of this.zones) {
      try {
        candidates.push({ key, zone, origin: parseName(absolute(zone.spec.domainName)) });
      } catch (e) {
        this.verdicts.set(key, {
          accepted: false,
          reason: 'Invalid',
          message: `spec.domainName ${JSON.stringify(zone.spec.domainName)}: ${errorText(e)}`,
        });
      }
    }
    // Oldest first (ADR 0013): each zone is judged against the zones older than it, so a newer zone
    // never changes whether an older one is served. Equal creation times put the parent first.
    candidates.sort(
      (a, b) =>
        compareTimestamps(a.zone, b.zone) ||
        labelCount(a.origin) - labelCount(b.origin) ||
        compareByAge(a.zone, b.zone),
    );
    const candidateDomains = new Set(candidates.map((c) => nameKey(c.origin)));
    /** Accepted zones (all older than the one being judged) below each candidate domain, oldest first. */
    const below = new Map<string, { key: ResourceKey; zone: DNSZone; origin: Name }[]>();
    for (const candidate of candidates) {
      const { key, zone, origin } = candidate;
      const domain = nameKey(origin);
      const refusal = this.refusal(candidate, below.get(domain) ?? []);
      if (refusal) {
        this.verdicts.set(key, refusal);
        continue;
      }
      // The parent is set once every zone is judged: a newer zone may come between.
      this.verdicts.set(key, { accepted: true, origin, zoneClass: this.classes.get(zone.spec.className)! });
      this.byDomain.set(domain, key);
      for (let name = origin; name !== '.'; ) {
        name = parentName(name);
        const k = nameKey(name);
        if (candidateDomains.has(k)) getOrInsert(below, k, () => []).push(candidate);
      }
    }
    // The nearest accepted ancestor publishes a zone's NS and glue.
    for (const key of this.byDomain.values()) {
      const verdict = this.verdicts.get(key) as Extract<ZoneVerdict, { accepted: true }>;
      const parent = this.deepestZoneAbove(verdict.origin);
      if (parent === undefined) continue;
      this.verdicts.set(key, { ...verdict, parent });
      getOrInsert(this.children, parent, () => new Set()).add(key);
    }

    const affected = noneAffected();
    const touched = new Set<ResourceKey>();
    for (const key of new Set([...previous.keys(), ...this.verdicts.keys()])) {
      if (!sameVerdict(previous.get(key), this.verdicts.get(key))) touched.add(key);
    }
    for (const key of touched) {
      affected.zones.add(key);
      const now = this.verdicts.get(key);
      const before = previous.get(key);
      for (const v of [now, before]) {
        if (v?.accepted && v.parent !== undefined) affected.zones.add(v.parent);
      }
    }
    // Domains that appeared or disappeared move records between a zone and its ancestors.
    const recordZones = new Set<ResourceKey>([UNRESOLVED]);
    for (const [domain, key] of this.byDomain) {
      if (previousDomains.get(domain) !== key) {
        recordZones.add(key);
        const p = this.verdicts.get(key);
        if (p?.accepted && p.parent !== undefined) recordZones.add(p.parent);
      }
    }
    for (const [domain, key] of previousDomains) {
      if (this.byDomain.get(domain) !== key) {
        recordZones.add(key);
        const p = previous.get(key);
        if (p?.accepted && p.parent !== undefined) recordZones.add(p.parent);
        // its records fall back to the nearest remaining ancestor, found by re-resolving them
      }
    }
    if (!resolveRecords) return affected;
    const toResolve: ResourceKey[] = [];
    for (const zone of recordZones) for (const r of this.membership.get(zone) ?? []) toResolve.push(r);
    // Records that name a touched zone explicitly.
    for (const zone of touched) for (const r of this.byZoneRef.get(zone) ?? []) toResolve.push(r);
    return mergeAffected(affected, this.reresolve(toResolve));
  }

  /**
   * Why a zone is refused, judged against the zones older than it (those accepted so far), or
   * undefined when it is accepted. `older` lists the accepted zones below it, oldest first.
   */
  private refusal(
    candidate: { key: ResourceKey; zone: DNSZone; origin: Name },
    older: readonly { key: ResourceKey; zone: DNSZone; origin: Name }[],
  ): ZoneVerdict | undefined {
    const { zone, origin } = candidate;
    const holder = this.byDomain.get(nameKey(origin));
    if (holder !== undefined) {
      return {
        accepted: false,
        reason: 'Conflict',
        origin,
        message: `${origin} is already served by DNSZone ${holder}, which is older; delete one of the two`,
      };
    }
    if (!this.classes.has(zone.spec.className)) {
      return {
        accepted: false,
        reason: 'ClassNotFound',
        origin,
        message: `DNSZoneClass ${JSON.stringify(zone.spec.className)} does not exist; create it or fix spec.className`,
      };
    }
    const zoneClass = this.classes.get(zone.spec.className)!;
    const section = zoneClass.spec.allowPublicSuffixZones === true ? undefined : publicSuffixSection(origin);
    if (section !== undefined) {
      return {
        accepted: false,
        reason: 'PublicSuffix',
        origin,
        message:
          `${origin} is a public suffix (${section} section of the Public Suffix List): unrelated parties register ` +
          `names below it, so it is not served; create the zone for your own domain below it instead, or, if this ` +
          `installation really operates the suffix, set allowPublicSuffixZones: true on DNSZoneClass ${zoneClass.metadata.name}`,
      };
    }
    const namespace = zone.metadata.namespace ?? '';
    // ADR 0003: below an older zone of another namespace, that zone's delegation is needed.
    const parent = this.deepestZoneAbove(origin);
    if (parent !== undefined) {
      const parentZone = this.zones.get(parent)!;
      const parentOrigin = (this.verdicts.get(parent) as { origin: Name }).origin;
      const relative = relativeName(origin, parentOrigin);
      const parentNamespace = parentZone.metadata.namespace ?? '';
      if (!zoneAdmits(parentNamespace, parentZone.spec.delegations, namespace, relative, 'NS')) {
        return {
          accepted: false,
          reason: 'NotDelegated',
          origin,
          message:
            `${origin} is inside zone ${parentOrigin} (DNSZone ${parent}), which does not delegate ${relative} ` +
            `to namespace ${namespace}; its owners can add a delegation {namespaces: [${namespace}], names: [${relative}], types: [NS]}`,
        };
      }
    }
    // ADR 0013: above an older zone of another namespace, this zone must delegate to it.
    const shadowed = older.filter((c) => {
      const childNamespace = c.zone.metadata.namespace ?? '';
      if (childNamespace === namespace) return false;
      return !zoneAdmits(
        namespace,
        zone.spec.delegations,
        childNamespace,
        relativeName(c.origin, origin),
        'NS',
      );
    });
    const first = shadowed[0];
    if (first !== undefined) {
      const childNamespace = first.zone.metadata.namespace ?? '';
      const relative = relativeName(first.origin, origin);
      const more =
        shadowed.length > 1
          ? ` (and ${shadowed.length - 1} more older zone${shadowed.length > 2 ? 's' : ''} of other namespaces below it: ` +
            `${shadowed
              .slice(1, 4)
              .map((c) => `DNSZone ${c.key}`)
              .join(', ')}${shadowed.length > 4 ? ', ...' : ''})`
          : '';
      return {
        accepted: false,
        reason: 'ZoneShadowed',
        origin,
        message:
          `${origin} would take over ${first.origin}, served by the older DNSZone ${first.key} of namespace ${childNamespace}${more}; ` +
          `to serve ${origin} above it, add a delegation {namespaces: [${childNamespace}], names: [${relative}], types: [NS]} ` +
          'to spec.delegations',
      };
    }
    return undefined;
  }

  /** The accepted zone whose origin is the nearest strict ancestor of `origin`. */
  private deepestZoneAbove(origin: Name): ResourceKey | undefined {
    let name = origin;
    while (name !== '.') {
      name = parentName(name);
      const key = this.byDomain.get(nameKey(name));
      if (key !== undefined) return key;
    }
    return undefined;
  }

  /** The accepted zone whose origin is `name` or its nearest ancestor. */
  private deepestZoneAtOrAbove(name: Name): ResourceKey | undefined {
    const here = this.byDomain.get(nameKey(name));
    return here ?? (name === '.' ? undefined : this.deepestZoneAbove(name));
  }

  private reresolve(keys: Iterable<ResourceKey>): Affected {
    const affected = noneAffected();
    for (const key of keys) {
      const rs = this.records.get(key);
      if (!rs) continue;
      const before = this.resolutions.get(key);
      const after = this.resolve(rs);
      this.resolutions.set(key, after);
      const fromZone = before?.resolved ? before.zone : UNRESOLVED;
      const toZone = after.resolved ? after.zone : UNRESOLVED;
      if (before === undefined || fromZone !== toZone) {
        this.membership.get(fromZone)?.delete(key);
        const set = getOrInsert(this.membership, toZone, () => new Set());
        set.add(key);
      }
      affected.records.add(key);
      for (const zone of [fromZone, toZone]) {
        if (zone === UNRESOLVED) continue;
        affected.zones.add(zone);
        getOrInsert(affected.recordsByZone, zone, () => new Set()).add(key);
        // A/AAAA in a child zone may be glue its parent publishes.
        const v = this.verdicts.get(zone);
        if ((rs.spec.type === 'A' || rs.spec.type === 'AAAA') && v?.accepted && v.parent !== undefined) {
          affected.zones.add(v.parent);
        }
      }
    }
    return affected;
  }

  /** Adoption: explicit zoneRef, else the deepest accepted zone containing the name (see ADR 0003). */
  resolve(rs: DNSRecordSet): RecordResolution {
    const namespace = rs.metadata.namespace ?? '';
    const { name, type, zoneRef } = rs.spec;
    let zoneKey: ResourceKey | undefined;
    let fqdn: Name;
    if (zoneRef) {
      zoneKey = resourceKey({ name: zoneRef.name, namespace: zoneRef.namespace ?? namespace });
      const verdict = this.verdicts.get(zoneKey);
      if (!verdict) {
        const why = this.refusedElsewhere.get(zoneKey);
        return {
          resolved: false,
          reason: 'ZoneNotFound',
          message:
            why === undefined
              ? `DNSZone ${zoneKey} (spec.zoneRef) does not exist`
              : `DNSZone ${zoneKey} (spec.zoneRef) is refused: ${why}`,
        };
      }
      if (!verdict.accepted) {
        return {
          resolved: false,
          reason: 'ZoneNotFound',
          zone: zoneKey,
          message: `DNSZone ${zoneKey} (spec.zoneRef) is refused (${verdict.reason}): ${verdict.message}`,
        };
      }
      try {
        fqdn = parseName(name, verdict.origin);
      } catch (e) {
        return { resolved: false, reason: 'Invalid', zone: zoneKey, message: `spec.name: ${errorText(e)}` };
      }
      if (!isInDomain(fqdn, verdict.origin)) {
        return {
          resolved: false,
          reason: 'OutOfZone',
          zone: zoneKey,
          fqdn,
          message: `${fqdn} is outside zone ${verdict.origin} (DNSZone ${zoneKey}); use a name inside the zone or another zoneRef`,
        };
      }
      const deepest = this.deepestZoneAtOrAbove(fqdn);
      if (deepest !== undefined && deepest !== zoneKey) {
        const child = this.verdicts.get(deepest) as { origin: Name };
        const dsAtCut = type === 'DS' && nameKey(child.origin) === nameKey(fqdn);
        if (!dsAtCut) {
          return {
            resolved: false,
            reason: 'OutOfZone',
            zone: zoneKey,
            fqdn,
            message: `${fqdn} is at or below the zone cut ${child.origin} of DNSZone ${deepest}; publish it in that zone`,
          };
        }
      }
    } else {
      try {
        fqdn = parseName(name);
      } catch (e) {
        // A name is absolute only when it ends in an unescaped dot: "www\\." is one relative label.
        if (e instanceof DnsError && e.code === 'RELATIVE_NAME_WITHOUT_ORIGIN') {
          return {
            resolved: false,
            reason: 'Invalid',
            message: `spec.name ${JSON.stringify(name)} is relative but spec.zoneRef is not set; set spec.zoneRef or write the absolute name with a trailing dot`,
          };
        }
        return { resolved: false, reason: 'Invalid', message: `spec.name: ${errorText(e)}` };
      }
      zoneKey = this.deepestZoneAtOrAbove(fqdn);
      // RFC 4035 §2.4: a DS RRset lives on the parent side of the zone cut.
      if (zoneKey !== undefined && type === 'DS') {
        const v = this.verdicts.get(zoneKey) as { origin: Name; parent?: ResourceKey };
        if (nameKey(v.origin) === nameKey(fqdn)) zoneKey = v.parent;
      }
      if (zoneKey === undefined) {
        return {
          resolved: false,
          reason: 'ZoneNotFound',
          fqdn,
          message: `no served DNSZone contains ${fqdn}; create the zone or fix spec.name`,
        };
      }
    }
    // RFC 4592 §4.2: an NS RRset at a wildcard name delegates nothing and its meaning is undefined.
    // The schema refuses "*" and "*.x" as written; this catches every spelling of the star ("\\*", "\\042").
    if (type === 'NS' && isWildcardName(fqdn)) {
      return {
        resolved: false,
        reason: 'Invalid',
        zone: zoneKey,
        fqdn,
        message: `an NS record set cannot have a wildcard owner name (${fqdn}): a wildcard does not delegate (RFC 4592 §4.2); publish NS records at each name to delegate`,
      };
    }
    const verdict = this.verdicts.get(zoneKey) as { origin: Name };
    const zone = this.zones.get(zoneKey)!;
    const relative = relativeName(fqdn, verdict.origin);
    const zoneNamespace = zone.metadata.namespace ?? '';
    if (!zoneAdmits(zoneNamespace, zone.spec.delegations, namespace, relative, type)) {
      return {
        resolved: false,
        reason: 'NotDelegated',
        zone: zoneKey,
        fqdn,
        message:
          `zone ${verdict.origin} (DNSZone ${zoneKey}) does not delegate ${relative} ${type} to namespace ${namespace}; ` +
          `its owners can add a delegation {namespaces: [${namespace}], names: [${relative}], types: [${type}]}`,
      };
    }
    return { resolved: true, zone: zoneKey, fqdn };
  }
}

/** Creation time only (compareByAge without its name tiebreak). */
function compareTimestamps(a: DNSZone, b: DNSZone): number {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}

function absolute(domain: string): string {
  return domain.endsWith('.') ? domain : `${domain}.`;
}

function errorText(e: unknown): string {
  return e instanceof DnsError || e instanceof Error ? e.message : String(e);
}

function sameVerdict(a: ZoneVerdict | undefined, b: ZoneVerdict | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.accepted !== b.accepted) return false;
  if (a.accepted && b.accepted) {
    return a.origin === b.origin && a.parent === b.parent && a.zoneClass === b.zoneClass;
  }
  return !a.accepted && !b.accepted && a.reason === b.reason && a.message === b.message;
}
