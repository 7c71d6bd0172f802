/**
 * kubizone's `kubi.zone/v1alpha1` `Zone` and `Record` as front doors. kubizone decides adoption among
 * its own objects (`adoption.ts`: every record needs a delegation, empty `namespaces` admits every
 * namespace, patterns with `*`), so both doors read the other kind (`reads`). A Zone becomes a DNSZone
 * of the default zone class whose native delegations admit exactly what it adopted from other
 * namespaces (the oldest names, within a DNSZone's limits); a Record becomes one record of an RRset
 * (Records of one namespace with the same name and type merge) with an explicit zoneRef to the
 * adopting Zone's DNSZone.
 */
import { RECORD_TYPES } from '../../../dns/rrtype.ts';
import { getOrInsert } from '../../../util/get-or-insert.ts';
import { pushAll } from '../../../util/push-all.ts';
import type { DNSRecordSetStatus } from '../../dnsrecordset.ts';
import { type DNSZoneStatus, MAX_DELEGATION_NAMES, MAX_DELEGATIONS } from '../../dnszone.ts';
import { AGE_COLUMN } from '../../kind.ts';
import { type Condition, NAME_PATTERN_PATTERN } from '../../meta.ts';
import type { Problem } from '../../schema.ts';
import {
  type ForeignEvent,
  type ForeignObject,
  type FrontDoor,
  keepTransitionTimes,
  type OutputStatus,
  type RelatedChange,
  servedCondition,
  type TranslateContext,
} from '../front-door.ts';
import {
  type Adoption,
  adoptRecord,
  parentLabel,
  placeZone,
  type RecordObject,
  recordFqdn,
  relativeTo,
  takenCondition,
  type ZoneObject,
  type ZonePlacement,
  zoneFqdn,
  zoneIndex,
} from './adoption.ts';
import {
  type RecordSpec,
  type RecordStatus,
  recordSpecSchema,
  recordStatusSchema,
  ZONE_DEFAULTS,
  type ZoneSpec,
  type ZoneStatus,
  zoneSpecSchema,
  zoneStatusSchema,
} from './schema.ts';
import { zoneFileFrontDoor } from './zonefile.ts';

export * from './adoption.ts';
export * from './schema.ts';
export * from './zonefile.ts';

export const KUBIZONE_GROUP = 'kubi.zone';
export const KUBIZONE_VERSION = 'v1alpha1';
export const KUBIZONE_FINALIZER = 'kubi.zone/zonekeeper';
export const PARENT_ZONE_LABEL = 'kubi.zone/parent-zone';

function ns(o: ForeignObject): string {
  return o.metadata.namespace ?? 'default';
}

function sameObject(a: ForeignObject, b: ForeignObject): boolean {
  return a.metadata.name === b.metadata.name && ns(a) === ns(b);
}

function zonesOf(context: TranslateContext | undefined): ZoneObject[] {
  return (context?.related('Zone') ?? []) as ZoneObject[];
}

function recordsOf(context: TranslateContext | undefined): RecordObject[] {
  return (context?.related('Record') ?? []) as RecordObject[];
}

/**
 * Adoption and placement, remembered per list of Zones (the store hands out the same list until a
 * Zone's spec changes) and per object, so a change computes the adoption of what it touched only.
 */
const adoptions = new WeakMap<readonly ZoneObject[], WeakMap<RecordObject, Adoption>>();
const placements = new WeakMap<readonly ZoneObject[], WeakMap<ZoneObject, ZonePlacement>>();

function adoptionOf(record: RecordObject, zones: readonly ZoneObject[]): Adoption {
  const byRecord = getOrInsert(adoptions, zones, () => new WeakMap<RecordObject, Adoption>());
  return getOrInsert(byRecord, record, () => adoptRecord(record, zones));
}

function placementOf(zone: ZoneObject, zones: readonly ZoneObject[]): ZonePlacement {
  const byZone = getOrInsert(placements, zones, () => new WeakMap<ZoneObject, ZonePlacement>());
  return getOrInsert(byZone, zone, () => placeZone(zone, zones));
}

function live(o: ForeignObject): boolean {
  return !o.metadata.deletionTimestamp;
}

function keyOf(o: ForeignObject): string {
  return `${ns(o)}/${o.metadata.name}`;
}

/**
 * The Records each Zone adopted (`namespace/name` of the Zone → Records, deleting ones too), and
 * among them those of other namespaces than the Zone's (`foreign`, what its delegations hold).
 */
interface Adopted {
  all: Map<string, RecordObject[]>;
  foreign: Map<string, RecordObject[]>;
}
const adoptedIndexes = new WeakMap<readonly ZoneObject[], WeakMap<readonly RecordObject[], Adopted>>();

/**
 * Records by adopting Zone, made once per pair of lists (one remembered adoption per Record). A burst
 * of Records makes a list per turn, each indexed whole: the adoptions' map is looked up once per list,
 * not once per Record.
 */
function adoptedBy(zones: readonly ZoneObject[], records: readonly RecordObject[]): Adopted {
  const byRecords = getOrInsert(adoptedIndexes, zones, () => new WeakMap<readonly RecordObject[], Adopted>());
  return getOrInsert(byRecords, records, () => {
    const byRecord = getOrInsert(adoptions, zones, () => new WeakMap<RecordObject, Adoption>());
    const all = new Map<string, RecordObject[]>();
    const foreign = new Map<string, RecordObject[]>();
    let lastZone: ZoneObject | undefined;
    let lastAll: RecordObject[] = [];
    let lastForeign: RecordObject[] | undefined;
    for (const r of records) {
      let a = byRecord.get(r);
      if (a === undefined) {
        a = adoptRecord(r, zones);
        byRecord.set(r, a);
      }
      if (!a.ok) continue;
      // Records of one Zone mostly come together: its lists are looked up once per run.
      if (a.zone !== lastZone) {
        lastZone = a.zone;
        lastAll = getOrInsert(all, keyOf(a.zone), () => []);
        lastForeign = foreign.get(keyOf(a.zone));
      }
      lastAll.push(r);
      if (ns(r) !== ns(a.zone)) {
        lastForeign ??= getOrInsert(foreign, keyOf(a.zone), () => []);
        lastForeign.push(r);
      }
    }
    return { all, foreign };
  });
}

/** The Zones placed directly below each Zone (`namespace/name` of the parent → sub-zones). */
const subZoneIndexes = new WeakMap<readonly ZoneObject[], Map<string, ZoneObject[]>>();

function subZonesOf(zones: readonly ZoneObject[]): Map<string, ZoneObject[]> {
  return getOrInsert(subZoneIndexes, zones, () => {
    const index = new Map<string, ZoneObject[]>();
    for (const z of zones) {
      if (!live(z)) continue;
      const p = placementOf(z, zones);
      if (p.ok && p.parent) getOrInsert(index, keyOf(p.parent.zone), () => []).push(z);
    }
    return index;
  });
}

/** Whether `fqdn` is `origin` or below it. */
function atOrBelow(fqdn: string, origin: string): boolean {
  return fqdn === origin || origin === '.' || fqdn.endsWith(`.${origin}`);
}

/** The fqdns a changed Zone had and has (before against the Zones as they are: only it changed). */
function changedOrigins(change: RelatedChange, zones: readonly ZoneObject[]): string[] {
  const out: string[] = [];
  for (const z of [change.before, change.after] as (ZoneObject | undefined)[]) {
    const fqdn = z ? zoneFqdn(z, zones) : undefined;
    if (fqdn !== undefined && !out.includes(fqdn)) out.push(fqdn);
  }
  return out;
}

/**
 * Whether a Zone is the changed one or reaches it through zoneRef (its fqdn follows the changed
 * one's). Each zoneRef is compared before it is looked up: a deleted Zone is no longer among
 * `zones`, and the Zones that referred to it lose their fqdn.
 */
function refersTo(zone: ZoneObject, changed: string, zones: readonly ZoneObject[]): boolean {
  if (keyOf(zone) === changed) return true;
  const byKey = zoneIndex(zones).byKey;
  let z: ZoneObject | undefined = zone;
  for (let depth = 0; z && depth <= 16; depth++) {
    const ref: ZoneObject['spec']['zoneRef'] = z.spec.zoneRef;
    if (!ref || z.spec.domainName.endsWith('.')) return false;
    const key = `${ref.namespace ?? ns(z)}/${ref.name}`;
    if (key === changed) return true;
    z = byKey.get(key);
  }
  return false;
}

/** A name of the zone a namespace's objects want, of one type: `namespace\u0000type\u0000relative`. */
function wantKey(from: string, type: string, relative: string): string {
  return `${from}\u0000${type}\u0000${relative}`;
}

const NAME_PATTERN = new RegExp(NAME_PATTERN_PATTERN);

/** `NameGroups.place`'s verdict on a name. */
type Placed = 'placed' | 'full' | 'unsayable';

/**
 * Names a zone delegates natively to other namespaces, by namespace and type, within a DNSZone's
 * limits: at most MAX_DELEGATIONS entries of one namespace and type, each of at most
 * MAX_DELEGATION_NAMES names.
 */
class NameGroups {
  readonly groups = new Map<string, string[]>();
  private entries = 0;
  /** What `place` said of each name of the zone a namespace wants for a type. */
  private readonly placed = new Map<string, Placed>();

  copy(): NameGroups {
    const out = new NameGroups();
    for (const [k, names] of this.groups) out.groups.set(k, [...names]);
    out.entries = this.entries;
    for (const [k, v] of this.placed) out.placed.set(k, v);
    return out;
  }

  /**
   * Admits `relative` for `from` and `type` if it fits (`placed`), else says why not: no room left
   * (`full`), or a name a native delegation cannot say (`unsayable`: a wildcard in the middle,
   * characters outside a DNS label, a type Zonekeeper does not serve), never admitted, since one
   * Record could otherwise make the whole DNSZone invalid.
   */
  place(from: string, type: string, relative: string): Placed {
    const key = wantKey(from, type, relative);
    const known = this.placed.get(key);
    if (known !== undefined) return known;
    let verdict: Placed = 'placed';
    if (!NAME_PATTERN.test(relative) || relative.length > 253 || !isRecordType(type)) verdict = 'unsayable';
    else {
      const k = `${from}\u0000${type}`;
      const names = this.groups.get(k) ?? [];
      if (names.length % MAX_DELEGATION_NAMES === 0) {
        if (this.entries === MAX_DELEGATIONS) verdict = 'full';
        else this.entries++;
      }
      if (verdict === 'placed') {
        names.push(relative);
        this.groups.set(k, names);
      }
    }
    this.placed.set(key, verdict);
    return verdict;
  }

  delegations(): { namespaces: string[]; names: string[]; types: string[] }[] {
    const out: { namespaces: string[]; names: string[]; types: string[] }[] = [];
    for (const [k, names] of [...this.groups].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const [from, type] = k.split('\u0000') as [string, string];
      const sorted = [...names].sort();
      for (let i = 0; i < sorted.length; i += MAX_DELEGATION_NAMES)
        out.push({ namespaces: [from], names: sorted.slice(i, i + MAX_DELEGATION_NAMES), types: [type] });
    }
    return out;
  }
}

function isRecordType(type: string): boolean {
  return (RECORD_TYPES as readonly string[]).includes(type);
}

/**
 * Oldest first (creation time, then `namespace/name`): who keeps a place when there are too few. The
 * order of `compareByAge`, the conflict rule of src/zones, which src/api sits below.
 */
function byAge(a: ForeignObject, b: ForeignObject): number {
  const x = a.metadata.creationTimestamp ?? '';
  const y = b.metadata.creationTimestamp ?? '';
  if (x !== y) return x < y ? -1 : 1;
  const ka = keyOf(a);
  const kb = keyOf(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** What a Zone's sub-zones of other namespaces take of its native delegations (`subZoneNames`). */
interface SubZoneNames {
  names: NameGroups;
  /** `namespace/name` of the sub-zones admitted: the others are not served (`DelegationLimit`). */
  admitted: Set<string>;
}

const subZoneNameIndexes = new WeakMap<readonly ZoneObject[], Map<string, SubZoneNames>>();

/**
 * The NS names a Zone delegates to its live sub-zones of other namespaces, oldest sub-zone first.
 * Sub-zones come before Records: a sub-zone past the limits is not translated at all, since a
 * served zone below the parent that the parent does not delegate would make the parent's own DNSZone
 * the one refused (`ZoneShadowed`), and with it every record of the owner. Made from the Zones alone,
 * so a sub-zone's own translation can ask whether it fits.
 */
function subZoneNames(zone: ZoneObject, zones: readonly ZoneObject[]): SubZoneNames {
  const byParent = getOrInsert(subZoneNameIndexes, zones, () => new Map<string, SubZoneNames>());
  return getOrInsert(byParent, keyOf(zone), () => {
    const names = new NameGroups();
    const admitted = new Set<string>();
    const placed = placementOf(zone, zones);
    if (placed.ok) {
      const subZones = (subZonesOf(zones).get(keyOf(zone)) ?? []).filter(
        (z) => ns(z) !== ns(zone) && live(z),
      );
      for (const z of subZones.sort(byAge)) {
        const p = placementOf(z, zones);
        if (!p.ok || !p.parent || !sameObject(p.parent.zone, zone)) continue;
        if (names.place(ns(z), 'NS', relativeTo(p.fqdn, placed.fqdn)) === 'placed') admitted.add(keyOf(z));
      }
    }
    return { names, admitted };
  });
}

/** A Zone's native delegations to other namespaces, and the Records adopted past the limits. */
interface ForeignNames {
  delegations: { namespaces: string[]; names: string[]; types: string[] }[];
  /** `wantKey` of each name a Record of another namespace wants that did not fit. */
  overLimit: Set<string>;
}

const foreignNameIndexes = new WeakMap<
  readonly ZoneObject[],
  WeakMap<readonly RecordObject[], Map<string, ForeignNames>>
>();

/**
 * The native delegations of a Zone's DNSZone: exactly the names it adopted from other namespaces,
 * by namespace and type, its sub-zones' first, then its Records' oldest first, while they fit in a
 * DNSZone. Other namespaces' objects could otherwise make this zone's DNSZone invalid, and the whole
 * zone unserved; a newer Record past the limits is refused alone, as the native catalog refuses a
 * record set no delegation admits, and is served once older ones go.
 */
function foreignNames(
  zone: ZoneObject,
  zones: readonly ZoneObject[],
  records: readonly RecordObject[],
): ForeignNames {
  const byRecords = getOrInsert(
    foreignNameIndexes,
    zones,
    () => new WeakMap<readonly RecordObject[], Map<string, ForeignNames>>(),
  );
  const byZone = getOrInsert(byRecords, records, () => new Map<string, ForeignNames>());
  return getOrInsert(byZone, keyOf(zone), () => {
    const names = subZoneNames(zone, zones).names.copy();
    const overLimit = new Set<string>();
    const placed = placementOf(zone, zones);
    if (placed.ok) {
      const adopted = [...(adoptedBy(zones, records).foreign.get(keyOf(zone)) ?? [])];
      for (const r of adopted.sort(byAge)) {
        const a = adoptionOf(r, zones);
        if (!a.ok || !sameObject(a.zone, zone)) continue;
        const type = r.spec.type.toUpperCase();
        const relative = relativeTo(a.fqdn, placed.fqdn);
        if (names.place(ns(r), type, relative) === 'full') overLimit.add(wantKey(ns(r), type, relative));
      }
    }
    return { delegations: names.delegations(), overLimit };
  });
}

/**
 * A sub-zone of another namespace that its parent's DNSZone has no room to delegate to. Never one
 * being deleted: it keeps its translation through its deletion (the parent stops delegating to it
 * then), so that its DNSZone goes the way every deleted zone goes, its finalizer held until the
 * backend is clean.
 */
function pastLimit(zone: ZoneObject, zones: readonly ZoneObject[]): ZoneObject | undefined {
  if (!live(zone)) return undefined;
  const placed = placementOf(zone, zones);
  if (!placed.ok || !placed.parent || ns(placed.parent.zone) === ns(zone)) return undefined;
  return subZoneNames(placed.parent.zone, zones).admitted.has(keyOf(zone)) ? undefined : placed.parent.zone;
}

const LIMIT_TEXT = `the most names one zone takes from other namespaces (${MAX_DELEGATIONS} lists of one namespace and type, of ${MAX_DELEGATION_NAMES} names each)`;

function refOf(o: ForeignObject): { namespace?: string | undefined; name: string } {
  return { namespace: o.metadata.namespace, name: o.metadata.name };
}

/** The Ready condition in kubizone's objects (kubizone has none; Zonekeeper adds it). */
function ready(
  generation: number | undefined,
  problems: readonly Problem[] | undefined,
  output: OutputStatus | undefined,
  refusal: { reason: string; message: string } | undefined,
  now: string,
): Condition {
  const native = output?.status as DNSZoneStatus | DNSRecordSetStatus | undefined;
  const find = (type: string) => native?.conditions?.find((c) => c.type === type);
  const gen = generation !== undefined ? { observedGeneration: generation } : {};
  if (problems && problems.length > 0)
    return {
      type: 'Ready',
      status: 'False',
      reason: 'Rejected',
      message: problems.map((p) => `${p.path}: ${p.message}`).join('; '),
      ...gen,
      lastTransitionTime: now,
    };
  if (!output)
    return {
      type: 'Ready',
      status: 'False',
      reason: refusal?.reason ?? 'Pending',
      message: refusal?.message ?? 'not reconciled yet',
      ...gen,
      lastTransitionTime: now,
    };
  const r = find('Ready');
  const accepted = find('Accepted');
  const observed = r?.observedGeneration !== undefined ? { observedGeneration: r.observedGeneration } : {};
  if (r?.status === 'True')
    return {
      type: 'Ready',
      status: 'True',
      reason: 'Served',
      message: r.message,
      ...observed,
      lastTransitionTime: now,
    };
  if (accepted?.status === 'False')
    return {
      type: 'Ready',
      status: 'False',
      reason: accepted.reason,
      message: accepted.message,
      ...observed,
      lastTransitionTime: now,
    };
  return {
    type: 'Ready',
    status: 'False',
    reason: r?.reason ?? 'Pending',
    message: r?.message ?? 'waiting for the server',
    ...observed,
    lastTransitionTime: now,
  };
}

/** Reasons of a kubizone refusal: the object is not adopted (kubizone only logs these). */
const REFUSALS = new Set(['NotDelegated', 'NoZone', 'NoFqdn', 'OutOfZone']);

/**
 * An Event when `Ready` changes its status or reason: Warning when the object is refused (not adopted,
 * rejected, losing a conflict), Normal when it becomes served. Quiet for `Pending`. kubizone files no
 * Events (it logs adoption refusals); these put the same news in `kubectl describe`.
 */
function readyEvent(
  kind: 'Zone' | 'Record',
  before: { conditions?: readonly Condition[] | undefined } | undefined,
  after: { conditions?: readonly Condition[] | undefined },
): ForeignEvent | undefined {
  const was = before?.conditions?.find((c) => c.type === 'Ready');
  const now = after.conditions?.find((c) => c.type === 'Ready');
  if (!now || (was?.status === now.status && was?.reason === now.reason)) return undefined;
  if (now.status === 'True')
    return {
      type: 'Normal',
      reason: 'Served',
      action: 'Serve',
      note: `${kind} served: ${now.message ?? ''}`.trim(),
    };
  if (now.reason === 'Pending') return undefined;
  return {
    type: 'Warning',
    reason: now.reason,
    action: REFUSALS.has(now.reason) ? 'Adopt' : 'Serve',
    note: now.message ?? now.reason,
  };
}

function recordTtl(record: RecordObject, zone: ZoneObject): number {
  return record.spec.ttl ?? zone.spec.ttl ?? ZONE_DEFAULTS.ttl;
}

/**
 * The JSON text a Zone's `status.entries` may take. The API server keeps an object in one etcd value
 * (1.5 MiB by default): a Zone adopting some 20,000 Records had a status no write could carry, so
 * it kept the one written last (an older serial) for good. Half a MiB leaves room for the rest of
 * the object.
 */
export const STATUS_ENTRIES_BYTES = 512 * 1024;

/** The first of `entries` (the SOA first, then in their order) whose JSON fits in `bytes` as stored. */
export function entriesWithin<T>(entries: T[], bytes: number): T[] {
  let used = 2;
  for (let i = 0; i < entries.length; i++) {
    used += storedJsonBytes(JSON.stringify(entries[i])) + 1;
    if (used > bytes) return entries.slice(0, i);
  }
  return entries;
}

/**
 * The bytes the API server stores for a JSON text: UTF-8, with `<`, `>`, `&`, U+2028 and U+2029
 * escaped as `\u003c` and so on (Go's encoding/json). Its length in characters undercounts: a list
 * of 512 Ki characters of `<` is 3 MB stored.
 */
export function storedJsonBytes(json: string): number {
  let escaped = 0;
  // `<`, `>` and `&` are one byte in UTF-8 and six escaped; U+2028 and U+2029 three and six.
  for (const [c] of json.matchAll(/[<>&\u2028\u2029]/g)) escaped += c < '\u0080' ? 5 : 3;
  return Buffer.byteLength(json) + escaped;
}

/** Entries of a zone: SOA first, then the adopted Records, then NS and glue of adopted sub-zones. */
export function zoneEntries(
  zone: ZoneObject,
  origin: string,
  zones: readonly ZoneObject[],
  records: readonly RecordObject[],
  native: DNSZoneStatus | undefined,
): NonNullable<ZoneStatus['entries']> {
  const spec = zone.spec;
  const serial = native?.serial ?? 0;
  const mname = native?.nameservers?.[0] ?? origin;
  const soa = {
    fqdn: origin,
    type: 'SOA',
    class: 'IN',
    ttl: spec.ttl ?? ZONE_DEFAULTS.ttl,
    rdata: `${mname} hostmaster.${origin} ${serial} ${spec.refresh ?? ZONE_DEFAULTS.refresh} ${spec.retry ?? ZONE_DEFAULTS.retry} ${spec.expire ?? ZONE_DEFAULTS.expire} ${spec.negativeResponseCache ?? ZONE_DEFAULTS.negativeResponseCache}`,
  };
  const entries: NonNullable<ZoneStatus['entries']> = [];
  const index = adoptedBy(zones, records).all;
  const entriesOf = (z: ZoneObject) =>
    (index.get(keyOf(z)) ?? [])
      .filter(live)
      .map((r) => ({ r, a: adoptionOf(r, zones) }))
      .filter((x) => x.a.ok && sameObject(x.a.zone, z))
      .map(({ r, a }) => ({
        fqdn: (a as { fqdn: string }).fqdn,
        type: r.spec.type.toUpperCase(),
        class: 'IN',
        ttl: recordTtl(r, z),
        rdata: r.spec.rdata,
      }));
  pushAll(entries, entriesOf(zone));
  for (const sub of subZonesOf(zones).get(keyOf(zone)) ?? []) {
    if (sameObject(sub, zone)) continue;
    const placed = placementOf(sub, zones);
    if (!placed.ok || !placed.parent || !sameObject(placed.parent.zone, zone)) continue;
    const subEntries = entriesOf(sub);
    const ns = subEntries.filter((e) => e.type === 'NS' && e.fqdn === placed.fqdn);
    const targets = new Set(ns.map((e) => `${e.rdata.toLowerCase().replace(/\.$/, '')}.`));
    pushAll(entries, ns);
    pushAll(
      entries,
      subEntries.filter((e) => (e.type === 'A' || e.type === 'AAAA') && targets.has(e.fqdn)),
    );
  }
  entries.sort((a, b) =>
    a.fqdn === b.fqdn
      ? a.type === b.type
        ? a.rdata < b.rdata
          ? -1
          : 1
        : a.type < b.type
          ? -1
          : 1
      : a.fqdn < b.fqdn
        ? -1
        : 1,
  );
  return [soa, ...entries];
}

export const zoneFrontDoor: FrontDoor<ZoneSpec, ZoneStatus> = {
  group: KUBIZONE_GROUP,
  version: KUBIZONE_VERSION,
  kind: 'Zone',
  plural: 'zones',
  singular: 'zone',
  listKind: 'ZoneList',
  shortNames: [],
  scope: 'Namespaced',
  description: 'kubizone Zone: a DNS zone and who may insert records and sub-zones into it.',
  spec: zoneSpecSchema,
  status: zoneStatusSchema,
  printerColumns: [
    { name: 'domain name', type: 'string', jsonPath: '.spec.domainName' },
    { name: 'fqdn', type: 'string', jsonPath: '.status.fqdn' },
    { name: 'hash', type: 'string', jsonPath: '.status.hash' },
    { name: 'serial', type: 'string', jsonPath: '.status.serial' },
    { name: 'parent', type: 'string', jsonPath: '.metadata.labels.kubi\\.zone/parent-zone' },
    AGE_COLUMN,
  ],
  finalizer: KUBIZONE_FINALIZER,
  merge: 'none',
  reads: {
    kinds: ['Zone', 'Record'],
    defaultClass: true,
    /**
     * A Record changes the Zone that adopted it before and the one that adopts it now (their
     * delegations). A Zone changes the Zones at or below its old and new fqdn (their parent) and
     * those it is below (their adopted records and sub-zones), and the Zones that follow it by zoneRef.
     */
    affected(change, context) {
      const zones = zonesOf(context);
      if (change.kind === 'Record') {
        const out: ZoneObject[] = [];
        for (const r of [change.before, change.after] as (RecordObject | undefined)[]) {
          const a = r ? adoptionOf(r, zones) : undefined;
          if (a?.ok) out.push(a.zone);
        }
        return out.map(refOf);
      }
      const origins = changedOrigins(change, zones);
      const changed = keyOf((change.after ?? change.before)!);
      const index = zoneIndex(zones);
      // Sub-zones of other namespaces share their parent's room (`subZoneNames`): where they may
      // fill it, a change of one may let a sibling in or push it out.
      const siblings = new Set<string>();
      for (const z of [change.before, change.after] as (ZoneObject | undefined)[]) {
        const p = z ? placementOf(z, zones) : undefined;
        if (!p?.ok || !p.parent) continue;
        const below = (subZonesOf(zones).get(keyOf(p.parent.zone)) ?? []).filter(
          (s) => ns(s) !== ns(p.parent!.zone),
        );
        if (below.length + 1 > MAX_DELEGATIONS) for (const s of below) siblings.add(keyOf(s));
      }
      return zones
        .filter((z) => {
          const fqdn = index.fqdnOf.get(z);
          return (
            siblings.has(keyOf(z)) ||
            refersTo(z, changed, zones) ||
            (fqdn !== undefined && origins.some((o) => atOrBelow(fqdn, o) || atOrBelow(o, fqdn)))
          );
        })
        .map(refOf);
    },
  },
  admit(object) {
    const problems: Problem[] = [];
    const { domainName, zoneRef } = object.spec;
    if (domainName.endsWith('.') && zoneRef)
      problems.push({
        path: 'spec.zoneRef',
        code: 'ZoneRefWithFqdn',
        message:
          'Zone: a fully qualified spec.domainName (ending in ".") cannot have a spec.zoneRef; remove one',
      });
    if (!domainName.endsWith('.') && !zoneRef)
      problems.push({
        path: 'spec.domainName',
        code: 'PartialWithoutZoneRef',
        message: `Zone: ${JSON.stringify(domainName)} is partial; end it with "." or set spec.zoneRef to the parent Zone`,
      });
    return problems;
  },
  translate(object, context) {
    const zones = zonesOf(context);
    const placed = placementOf(object, zones);
    if (!placed.ok) return [];
    // A sub-zone its parent has no room to delegate to is not served (`subZoneNames`).
    if (pastLimit(object, zones)) return [];
    const zoneClass = context.defaultClass();
    if (!zoneClass.ok) return [];
    const origin = placed.fqdn;
    // Native delegations for exactly what this zone adopted from other namespaces.
    const { delegations } = foreignNames(object, zones, recordsOf(context));
    const spec = object.spec;
    return [
      {
        kind: 'DNSZone',
        key: '',
        spec: {
          domainName: origin.replace(/\.$/, ''),
          className: zoneClass.zoneClass.metadata.name,
          ttl: spec.ttl ?? ZONE_DEFAULTS.ttl,
          soa: {
            refresh: spec.refresh ?? ZONE_DEFAULTS.refresh,
            retry: spec.retry ?? ZONE_DEFAULTS.retry,
            expire: spec.expire ?? ZONE_DEFAULTS.expire,
            minimum: spec.negativeResponseCache ?? ZONE_DEFAULTS.negativeResponseCache,
          },
          ...(delegations.length > 0 ? { delegations } : {}),
        },
      },
    ] as ReturnType<FrontDoor['translate']>;
  },
  labels({ object, context }) {
    const placed = placementOf(object, zonesOf(context));
    return { [PARENT_ZONE_LABEL]: placed.ok && placed.parent ? parentLabel(placed.parent.zone) : undefined };
  },
  nativeStatus(object, _key, domain) {
    const { serial, hash, fqdn, conditions } = object.status ?? {};
    // Accepted for the domain it has now (a sub-zone's from its parent's): `Accepted`, which a hold of
    // its content (ChangeHeld) or a failed step leaves True; before that condition was written,
    // `Ready=True` (`Served`).
    const accepted = servedCondition(takenCondition(conditions), fqdn, domain);
    if (serial === undefined && !accepted) return undefined;
    return {
      ...(serial !== undefined ? { serial, ...(hash ? { hash } : {}) } : {}),
      ...(accepted ? { conditions: [accepted] } : {}),
    };
  },
  event: (before, after) => readyEvent('Zone', before, after),
  project({ object, outputs, problems, now, context }): ZoneStatus {
    const zones = zonesOf(context);
    const output = outputs[0];
    const native = output?.status as DNSZoneStatus | undefined;
    const fqdn = zoneFqdn(object, zones);
    let refusal: { reason: string; message: string } | undefined;
    if (!output) {
      const placed = placementOf(object, zones);
      const cls = context?.defaultClass();
      const parent = placed.ok ? pastLimit(object, zones) : undefined;
      refusal = !placed.ok
        ? placed
        : parent
          ? {
              reason: 'DelegationLimit',
              message: `Zone: Zone ${keyOf(parent)} delegates it, but it already delegates ${LIMIT_TEXT} to older sub-zones; the oldest are served, and this one is served once older ones go. Fewer sub-zones from other namespaces make room`,
            }
          : cls && !cls.ok
            ? {
                reason: cls.code === 'NO_DEFAULT_CLASS' ? 'NoDefaultClass' : 'SeveralDefaultClasses',
                message: cls.message,
              }
            : undefined;
    }
    let condition = ready(object.metadata.generation, problems, output, refusal, now);
    const all = fqdn && output ? zoneEntries(object, fqdn, zones, recordsOf(context), native) : undefined;
    const entries = all ? entriesWithin(all, STATUS_ENTRIES_BYTES) : undefined;
    if (all && entries && entries.length < all.length)
      condition = {
        ...condition,
        message: `${condition.message ?? ''}; status.entries lists the first ${entries.length} of ${all.length} entries: the whole list would not fit in one object of the API server`,
      };
    // Whether Zonekeeper took the zone for its domain (the DNSZone's Accepted), apart from whether
    // its content is served now: read back after a restart (`nativeStatus`), it keeps the zone the
    // incumbent of its domain through a held change or a failed step.
    const nativeAccepted = native?.conditions?.find((c) => c.type === 'Accepted');
    const accepted: Condition | undefined =
      output && nativeAccepted
        ? {
            type: 'Accepted',
            status: nativeAccepted.status,
            reason: nativeAccepted.reason,
            message: nativeAccepted.message,
            ...(object.metadata.generation !== undefined
              ? { observedGeneration: object.metadata.generation }
              : {}),
            lastTransitionTime: now,
          }
        : undefined;
    return {
      ...(fqdn ? { fqdn } : {}),
      ...(native?.hash ? { hash: native.hash } : {}),
      ...(native?.serial !== undefined ? { serial: native.serial } : {}),
      ...(entries ? { entries } : {}),
      conditions: keepTransitionTimes(
        object.status?.conditions as Condition[] | undefined,
        accepted ? [condition, accepted] : [condition],
      ),
    };
  },
};

export const recordFrontDoor: FrontDoor<RecordSpec, RecordStatus> = {
  group: KUBIZONE_GROUP,
  version: KUBIZONE_VERSION,
  kind: 'Record',
  plural: 'records',
  singular: 'record',
  listKind: 'RecordList',
  shortNames: [],
  scope: 'Namespaced',
  description: 'kubizone Record: one resource record; Records with the same name and type are one RRset.',
  spec: recordSpecSchema,
  status: recordStatusSchema,
  printerColumns: [
    { name: 'domain name', type: 'string', jsonPath: '.spec.domainName' },
    { name: 'class', type: 'string', jsonPath: '.spec.class' },
    { name: 'type', type: 'string', jsonPath: '.spec.type' },
    { name: 'data', type: 'string', jsonPath: '.spec.rdata' },
    { name: 'fqdn', type: 'string', jsonPath: '.status.fqdn' },
    { name: 'parent', type: 'string', jsonPath: '.metadata.labels.kubi\\.zone/parent-zone' },
    AGE_COLUMN,
  ],
  finalizer: KUBIZONE_FINALIZER,
  merge: 'byKey',
  reads: {
    kinds: ['Zone'],
    /**
     * A Zone changes the Records at or below its old and new fqdn (their adopting Zone) and those
     * whose zoneRef reaches it (their fqdn).
     */
    affected(change, context) {
      const zones = zonesOf(context);
      const origins = changedOrigins(change, zones);
      const changed = keyOf((change.after ?? change.before)!);
      const index = zoneIndex(zones);
      return recordsOf(context)
        .filter((r) => {
          const ref = r.spec.zoneRef;
          if (ref && !r.spec.domainName.endsWith('.')) {
            const key = `${ref.namespace ?? ns(r)}/${ref.name}`;
            if (key === changed) return true;
            const target = index.byKey.get(key);
            if (target && refersTo(target, changed, zones)) return true;
          }
          const fqdn = recordFqdn(r, zones);
          return fqdn !== undefined && origins.some((o) => atOrBelow(fqdn, o));
        })
        .map(refOf);
    },
  },
  admit(object) {
    const problems: Problem[] = [];
    const { domainName, zoneRef, type } = object.spec;
    const cls = object.spec.class ?? 'IN';
    if (cls.toUpperCase() !== 'IN')
      problems.push({
        path: 'spec.class',
        code: 'ClassNotSupported',
        message: `Record: class ${cls} is not served; Zonekeeper serves class IN only`,
      });
    if (!(RECORD_TYPES as readonly string[]).includes(type.toUpperCase()) || type.toUpperCase() === 'SOA')
      problems.push({
        path: 'spec.type',
        code: 'TypeNotSupported',
        message: `Record: type ${type} is not one Zonekeeper serves from a Record (${RECORD_TYPES.filter((t) => t !== 'SOA').join(', ')})`,
      });
    if (domainName.endsWith('.') && zoneRef)
      problems.push({
        path: 'spec.zoneRef',
        code: 'ZoneRefWithFqdn',
        message:
          'Record: a fully qualified spec.domainName (ending in ".") cannot have a spec.zoneRef; remove one',
      });
    if (!domainName.endsWith('.') && !zoneRef)
      problems.push({
        path: 'spec.domainName',
        code: 'PartialWithoutZoneRef',
        message: `Record: ${JSON.stringify(domainName)} is relative; end it with "." or set spec.zoneRef`,
      });
    return problems;
  },
  translate(object, context) {
    const zones = zonesOf(context);
    const adopted = adoptionOf(object, zones);
    if (!adopted.ok) return [];
    const type = object.spec.type.toUpperCase();
    return [
      {
        kind: 'DNSRecordSet',
        key: `${type}:${adopted.fqdn}`,
        spec: {
          // No zoneRef: the native catalog adopts it into the deepest zone containing the name, the
          // adopting Zone's DNSZone (a native zoneRef cannot name a translated zone).
          name: adopted.fqdn,
          type,
          ttl: recordTtl(object, adopted.zone),
          records: [object.spec.rdata],
        },
      },
    ] as ReturnType<FrontDoor['translate']>;
  },
  labels({ object, context }) {
    const adopted = adoptionOf(object, zonesOf(context));
    return { [PARENT_ZONE_LABEL]: adopted.ok ? parentLabel(adopted.zone) : undefined };
  },
  event: (before, after) => readyEvent('Record', before, after),
  project({ object, outputs, problems, now, context }): RecordStatus {
    const zones = zonesOf(context);
    const fqdn = recordFqdn(object, zones);
    const output = outputs[0];
    let refusal: { reason: string; message: string } | undefined;
    if (!output) {
      const a = adoptionOf(object, zones);
      if (!a.ok) refusal = a;
    }
    let condition = ready(object.metadata.generation, problems, output, refusal, now);
    if (output && condition.reason === 'NotDelegated') {
      // Adopted by kubizone's rules, but its name is past what the Zone's DNSZone takes from other
      // namespaces (`foreignNames`): that, not the native message about a delegation to add.
      const a = adoptionOf(object, zones);
      const placed = a.ok ? placementOf(a.zone, zones) : undefined;
      if (
        a.ok &&
        placed?.ok &&
        foreignNames(a.zone, zones, recordsOf(context)).overLimit.has(
          wantKey(ns(object), object.spec.type.toUpperCase(), relativeTo(a.fqdn, placed.fqdn)),
        )
      )
        condition = {
          ...condition,
          reason: 'DelegationLimit',
          message: `Record: Zone ${keyOf(a.zone)} adopts it, but it already serves ${LIMIT_TEXT}; the oldest are served, and this one is served once older ones go. Fewer names from other namespaces, or a sub-zone, make room`,
        };
    }
    return {
      ...(fqdn ? { fqdn } : {}),
      conditions: keepTransitionTimes(object.status?.conditions as Condition[] | undefined, [condition]),
    };
  },
};

export const KUBIZONE_FRONT_DOORS: readonly FrontDoor[] = [
  zoneFrontDoor as unknown as FrontDoor,
  recordFrontDoor as unknown as FrontDoor,
  zoneFileFrontDoor as unknown as FrontDoor,
];
