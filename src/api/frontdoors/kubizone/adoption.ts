/**
 * kubizone's admission rules, pure: delegation patterns, the fully qualified names of Zones and
 * Records, and which Zone adopts a Record or a sub-zone. kubizone decides adoption among its own
 * objects; the translated DNSZones then carry native delegations for exactly what was adopted from
 * other namespaces, so the native catalog agrees (see docs/compat/kubizone.md).
 */
import type { ForeignObject } from '../front-door.ts';
import type { KubizoneDelegation, RecordSpec, ZoneSpec } from './schema.ts';

export type ZoneObject = ForeignObject<ZoneSpec, Record<string, unknown>>;
export type RecordObject = ForeignObject<RecordSpec, Record<string, unknown>>;

/** Lower-case labels of an absolute or relative name, without the root. */
function labels(name: string): string[] {
  const trimmed = name.toLowerCase().replace(/\.$/, '');
  return trimmed === '' ? [] : trimmed.split('.');
}

/** Whether one pattern segment matches one label: equal, or one `*` standing for any text (`dev*`). */
export function segmentMatches(pattern: string, label: string): boolean {
  if (pattern === label) return true;
  const star = pattern.indexOf('*');
  if (star < 0) return false;
  const head = pattern.slice(0, star);
  const tail = pattern.slice(star + 1);
  return label.length >= head.length + tail.length && label.startsWith(head) && label.endsWith(tail);
}

/**
 * Whether a delegation pattern (relative to the zone `origin`) matches the absolute name `fqdn`.
 * The origin is appended to the pattern and both are compared label by label from the right; a
 * pattern longer than the name never matches; a name longer than the pattern matches only when the
 * pattern's leftmost segment is `*`, which then stands for one or more labels. So `*` admits every
 * name below the apex (not the apex), `*.dev` every name below `dev`, `dev*` one label starting with `dev`.
 * `@` (Zonekeeper's addition: kubizone has no pattern for the apex) matches the apex alone.
 */
export function patternMatches(pattern: string, origin: string, fqdn: string): boolean {
  if (pattern === '@') return labels(fqdn).join('.') === labels(origin).join('.');
  const p = [...labels(pattern), ...labels(origin)];
  const d = labels(fqdn);
  if (d.length < p.length) return false;
  if (d.length > p.length && p[0] !== '*') return false;
  for (let i = 1; i <= p.length; i++) {
    const seg = p[p.length - i]!;
    if (i === p.length && seg === '*') return true;
    if (!segmentMatches(seg, d[d.length - i]!)) return false;
  }
  return true;
}

/** An empty `namespaces` admits every namespace. */
function namespaceAdmitted(d: KubizoneDelegation, namespace: string): boolean {
  const namespaces = d.namespaces ?? [];
  return namespaces.length === 0 || namespaces.includes(namespace);
}

/** Whether a zone's delegations admit a record (every record needs one, the zone's namespace too). */
export function admitsRecord(
  delegations: readonly KubizoneDelegation[],
  origin: string,
  namespace: string,
  fqdn: string,
  type: string,
): boolean {
  return delegations.some(
    (d) =>
      namespaceAdmitted(d, namespace) &&
      (d.records ?? []).some(
        (r) =>
          patternMatches(r.pattern, origin, fqdn) &&
          ((r.types ?? []).length === 0 ||
            (r.types ?? []).some((t) => t.toUpperCase() === type.toUpperCase())),
      ),
  );
}

/** Whether a zone's delegations admit a sub-zone. */
export function admitsZone(
  delegations: readonly KubizoneDelegation[],
  origin: string,
  namespace: string,
  fqdn: string,
): boolean {
  return delegations.some(
    (d) => namespaceAdmitted(d, namespace) && (d.zones ?? []).some((z) => patternMatches(z, origin, fqdn)),
  );
}

function isBelow(fqdn: string, origin: string): boolean {
  const d = labels(fqdn);
  const o = labels(origin);
  if (d.length < o.length) return false;
  return o.every((label, i) => d[d.length - o.length + i] === label);
}

function absolute(name: string): string {
  return `${name.toLowerCase().replace(/\.$/, '')}.`;
}

/**
 * A list of Zones indexed once (per list: the translating store hands out the same list until a Zone's
 * spec changes): live Zones by namespace and name, and by fqdn, so that finding a Record's or a Zone's
 * parent walks the labels of its name instead of every Zone.
 */
export interface ZoneIndex {
  /** `namespace/name` → the live Zone. */
  byKey: Map<string, ZoneObject>;
  /** fqdn → the live Zones with it, the served one first, then by age (`claimOrder`). */
  byFqdn: Map<string, ZoneObject[]>;
  /** The fqdn of each live Zone that has one. */
  fqdnOf: Map<ZoneObject, string>;
}

const indexes = new WeakMap<readonly ZoneObject[], ZoneIndex>();

/** The index of a list of Zones, made once per list. */
export function zoneIndex(zones: readonly ZoneObject[]): ZoneIndex {
  const known = indexes.get(zones);
  if (known) return known;
  const byKey = new Map<string, ZoneObject>();
  for (const z of zones) if (!z.metadata.deletionTimestamp) byKey.set(key(z), z);
  const fqdnOf = new Map<ZoneObject, string>();
  const byFqdn = new Map<string, ZoneObject[]>();
  for (const z of byKey.values()) {
    const fqdn = fqdnThrough(z, byKey);
    if (fqdn === undefined) continue;
    fqdnOf.set(z, fqdn);
    const list = byFqdn.get(fqdn) ?? [];
    list.push(z);
    byFqdn.set(fqdn, list);
  }
  for (const [fqdn, list] of byFqdn) list.sort((a, b) => claimOrder(a, b, fqdn));
  const index = { byKey, byFqdn, fqdnOf };
  indexes.set(zones, index);
  return index;
}

/**
 * Of several Zones with one fqdn, the one that takes its Records first: the one whose status says it is
 * taken there (`Accepted=True`, or before that condition `Ready=True` `Served`; its `status.fqdn` that
 * fqdn), then the oldest, then by
 * namespace/name. Another namespace's Zone renamed onto a served domain, or named to sort first, does
 * not take the Records of the Zone that serves it (the catalog keeps the served zone too).
 */
function claimOrder(a: ZoneObject, b: ZoneObject, fqdn: string): number {
  const served = (z: ZoneObject) => {
    const status = z.status as { fqdn?: unknown; conditions?: unknown } | undefined;
    return takenCondition(status?.conditions)?.status === 'True' &&
      typeof status?.fqdn === 'string' &&
      absolute(status.fqdn) === fqdn
      ? 0
      : 1;
  };
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  return served(a) - served(b) || (ta < tb ? -1 : ta > tb ? 1 : 0) || (key(a) < key(b) ? -1 : 1);
}

/**
 * The condition of a Zone's status that says whether Zonekeeper took it for its `status.fqdn`:
 * `Accepted` (which a held change leaves True), or, in a status written before that condition,
 * `Ready` with reason `Served`. Read by `claimOrder` and by the door's `nativeStatus` alike.
 */
export function takenCondition<C extends { type?: unknown; status?: unknown; reason?: unknown }>(
  conditions: readonly C[] | unknown,
): C | undefined {
  if (!Array.isArray(conditions)) return undefined;
  const list = conditions as readonly C[];
  return (
    list.find((c) => c.type === 'Accepted') ?? list.find((c) => c.type === 'Ready' && c.reason === 'Served')
  );
}

function findZone(
  index: ZoneIndex,
  ref: { name: string; namespace?: string | undefined },
  namespace: string,
): ZoneObject | undefined {
  return index.byKey.get(`${ref.namespace ?? namespace}/${ref.name}`);
}

function fqdnThrough(zone: ZoneObject, byKey: Map<string, ZoneObject>, depth = 0): string | undefined {
  const name = zone.spec.domainName;
  if (name.endsWith('.')) return absolute(name);
  if (!zone.spec.zoneRef || depth > 16) return undefined;
  const ref = zone.spec.zoneRef;
  const parent = byKey.get(`${ref.namespace ?? zone.metadata.namespace ?? 'default'}/${ref.name}`);
  if (!parent) return undefined;
  const parentFqdn = fqdnThrough(parent, byKey, depth + 1);
  return parentFqdn === undefined ? undefined : absolute(`${name}.${parentFqdn}`);
}

/**
 * A Zone's fully qualified name: its FQDN, or its partial name under its zoneRef parent's (`zone` may
 * be a newer version than the one in `zones`).
 */
export function zoneFqdn(zone: ZoneObject, zones: readonly ZoneObject[]): string | undefined {
  return fqdnThrough(zone, zoneIndex(zones).byKey);
}

/** The live Zones with the longest fqdn that `fqdn` is at or below (`strict`: below only), else none. */
function longestAbove(
  index: ZoneIndex,
  fqdn: string,
  strict: boolean,
): { zones: ZoneObject[]; origin: string } | undefined {
  const d = labels(fqdn);
  for (let i = strict ? 1 : 0; i <= d.length; i++) {
    const origin = i === d.length ? '.' : `${d.slice(i).join('.')}.`;
    const zones = index.byFqdn.get(origin);
    if (zones && zones.length > 0) return { zones, origin };
  }
  return undefined;
}

/** A Record's fully qualified name: its FQDN, or its relative name under its zoneRef zone's. */
export function recordFqdn(record: RecordObject, zones: readonly ZoneObject[]): string | undefined {
  const name = record.spec.domainName;
  if (name.endsWith('.')) return absolute(name);
  if (!record.spec.zoneRef) return undefined;
  const index = zoneIndex(zones);
  const zone = findZone(index, record.spec.zoneRef, record.metadata.namespace ?? 'default');
  const origin = zone ? index.fqdnOf.get(zone) : undefined;
  return origin === undefined ? undefined : name === '@' ? origin : absolute(`${name}.${origin}`);
}

export type Adoption =
  | { ok: true; zone: ZoneObject; origin: string; fqdn: string }
  | { ok: false; fqdn?: string; reason: string; message: string };

function key(o: ForeignObject): string {
  return `${o.metadata.namespace ?? 'default'}/${o.metadata.name}`;
}

/**
 * The Zone that adopts a Record. With `zoneRef`: that zone, if its delegations admit the record.
 * Without: the zone with the longest FQDN containing the name; if that zone refuses the record it is
 * not passed on to a shorter one (the shorter zone's data below the cut would never be answered).
 */
export function adoptRecord(record: RecordObject, zones: readonly ZoneObject[]): Adoption {
  adoptRecord.calls++;
  const index = zoneIndex(zones);
  const namespace = record.metadata.namespace ?? 'default';
  const fqdn = recordFqdn(record, zones);
  if (fqdn === undefined)
    return {
      ok: false,
      reason: 'NoFqdn',
      message: record.spec.zoneRef
        ? `spec.zoneRef: Zone ${record.spec.zoneRef.namespace ?? namespace}/${record.spec.zoneRef.name} does not exist or has no fqdn yet`
        : 'spec.domainName is not fully qualified (end it with ".") and spec.zoneRef is not set',
    };
  let zone: ZoneObject | undefined;
  let origin: string | undefined;
  if (record.spec.zoneRef) {
    zone = findZone(index, record.spec.zoneRef, namespace);
    origin = zone ? index.fqdnOf.get(zone) : undefined;
  } else {
    // The longest fqdn the name is at or below; of several Zones with it, the first in `claimOrder`.
    const found = longestAbove(index, fqdn, false);
    zone = found?.zones[0];
    origin = found?.origin;
    if (zone === undefined || origin === undefined)
      return { ok: false, fqdn, reason: 'NoZone', message: `no Zone contains ${fqdn}` };
  }
  if (zone === undefined || origin === undefined)
    return {
      ok: false,
      fqdn,
      reason: 'NoZone',
      message: `spec.zoneRef: the Zone does not exist or has no fqdn yet`,
    };
  if (!isBelow(fqdn, origin))
    return {
      ok: false,
      fqdn,
      reason: 'OutOfZone',
      message: `${fqdn} is outside Zone ${key(zone)} (${origin})`,
    };
  if (!admitsRecord(zone.spec.delegations ?? [], origin, namespace, fqdn, record.spec.type))
    return {
      ok: false,
      fqdn,
      reason: 'NotDelegated',
      message: `Zone ${key(zone)} (${origin}) has no delegation admitting ${record.spec.type} ${fqdn} from namespace ${namespace}; its owners can add {namespaces: [${namespace}], records: [{pattern: ...}]} to spec.delegations`,
    };
  return { ok: true, zone, origin, fqdn };
}
/** How many adoptions were computed (for tests that bound the work a change costs). */
adoptRecord.calls = 0;

export type ZonePlacement =
  | { ok: true; fqdn: string; parent?: { zone: ZoneObject; origin: string } }
  | { ok: false; fqdn?: string; reason: string; message: string };

/**
 * A Zone's fqdn and its parent Zone (zoneRef, else the longest Zone above it). A sub-zone needs a
 * `zones` delegation of its parent, as a record needs a `records` one.
 */
export function placeZone(zone: ZoneObject, zones: readonly ZoneObject[]): ZonePlacement {
  const namespace = zone.metadata.namespace ?? 'default';
  const index = zoneIndex(zones);
  const fqdn = fqdnThrough(zone, index.byKey);
  if (fqdn === undefined)
    return {
      ok: false,
      reason: 'NoFqdn',
      message: zone.spec.zoneRef
        ? `spec.zoneRef: Zone ${zone.spec.zoneRef.namespace ?? namespace}/${zone.spec.zoneRef.name} does not exist or has no fqdn yet`
        : 'spec.domainName is not fully qualified (end it with ".") and spec.zoneRef is not set',
    };
  let parent: ZoneObject | undefined;
  let origin: string | undefined;
  if (zone.spec.zoneRef) {
    parent = findZone(index, zone.spec.zoneRef, namespace);
    origin = parent ? index.fqdnOf.get(parent) : undefined;
  } else {
    // The longest fqdn strictly above; of several Zones with it, the first by namespace/name.
    const found = longestAbove(index, fqdn, true);
    parent = found?.zones.find((z) => key(z) !== key(zone));
    origin = parent ? found?.origin : undefined;
  }
  if (parent === undefined || origin === undefined) return { ok: true, fqdn };
  if (!admitsZone(parent.spec.delegations ?? [], origin, namespace, fqdn))
    return {
      ok: false,
      fqdn,
      reason: 'NotDelegated',
      message: `Zone ${key(parent)} (${origin}) has no delegation admitting sub-zone ${fqdn} from namespace ${namespace}; its owners can add {namespaces: [${namespace}], zones: [...]} to spec.delegations`,
    };
  return { ok: true, fqdn, parent: { zone: parent, origin } };
}

/** `name.namespace`, the value of the `kubi.zone/parent-zone` label. */
export function parentLabel(zone: ForeignObject): string {
  return `${zone.metadata.name}.${zone.metadata.namespace ?? 'default'}`;
}

/** Relative name of `fqdn` in `origin` (`@` for the apex). */
export function relativeTo(fqdn: string, origin: string): string {
  const d = labels(fqdn);
  const o = labels(origin);
  return d.length === o.length ? '@' : d.slice(0, d.length - o.length).join('.');
}
