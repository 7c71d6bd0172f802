/**
 * Datum Cloud's DNS API (`dns.networking.miloapis.com/v1alpha1`) as front doors: `DNSZoneClass`,
 * `DNSZone` and `DNSRecordSet`. The kind names are Zonekeeper's own in another group; stores key them
 * by `Kind.group` and their native outputs are named `<plural>.<group>:<name>`, so nothing takes one
 * for the other.
 *
 * - A Datum `DNSZoneClass` maps onto nothing native: it describes zones (name servers, default TTL)
 *   and its zones are served by Zonekeeper's default DNSZoneClass (`src/zones/default-class.ts`). Its
 *   status says which Zonekeeper class that is and whether the name servers it lists are the ones
 *   served.
 * - A Datum `DNSZone` becomes a DNSZone of that default class, with the Datum class's
 *   `defaults.defaultTTL` as the zone TTL (the default of every record that sets none).
 * - A Datum `DNSRecordSet` becomes one native DNSRecordSet per owner name (entries with the same owner
 *   are one RRset), with absolute names: relative owners and single-label targets are relative to the
 *   zone the record set names (`names.ts`); owners outside that zone are refused, never published.
 *   The native catalog places them (the deepest served zone containing the name, with its
 *   delegations), so a record set can publish nothing a DNSRecordSet of its namespace could not.
 *
 * Pure: no I/O. See docs/compat/datum.md.
 */
import type { RecordTypeName } from '../../../dns/rrtype.ts';
import type { DNSRecordSetSpec, DNSRecordSetStatus } from '../../dnsrecordset.ts';
import type { DNSZoneSpec, DNSZoneStatus } from '../../dnszone.ts';
import { AGE_COLUMN, type PrinterColumn } from '../../kind.ts';
import { type Condition, MAX_TTL } from '../../meta.ts';
import type { Problem } from '../../schema.ts';
import {
  type ForeignObject,
  type FrontDoor,
  keepTransitionTimes,
  type OutputStatus,
  servedCondition,
  type TranslateContext,
} from '../front-door.ts';
import { isInside, originOf, qualifyOwner, qualifyTarget } from './names.ts';
import {
  type DatumRecordSetSpec,
  type DatumRecordSetStatus,
  type DatumZoneClassSpec,
  type DatumZoneClassStatus,
  type DatumZoneSpec,
  type DatumZoneStatus,
  datumRecordSetSpecSchema,
  datumRecordSetStatusSchema,
  datumZoneClassSpecSchema,
  datumZoneClassStatusSchema,
  datumZoneSpecSchema,
  datumZoneStatusSchema,
  type RecordEntry,
} from './schema.ts';

export * from './names.ts';
export * from './schema.ts';

export const DATUM_GROUP = 'dns.networking.miloapis.com';
export const DATUM_VERSION = 'v1alpha1';
export const DATUM_ZONE_FINALIZER = 'dns.networking.miloapis.com/finalize-dnszone';
export const DATUM_RECORDSET_FINALIZER = 'dns.networking.miloapis.com/finalize-dnsrecordset';

export type DatumClassObject = ForeignObject<DatumZoneClassSpec, DatumZoneClassStatus>;
export type DatumZoneObject = ForeignObject<DatumZoneSpec, DatumZoneStatus>;
export type DatumRecordSetObject = ForeignObject<DatumRecordSetSpec, DatumRecordSetStatus>;

const ACCEPTED_COLUMN: PrinterColumn = {
  name: 'Accepted',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Accepted")].status',
};
const PROGRAMMED_COLUMN: PrinterColumn = {
  name: 'Programmed',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Programmed")].status',
};

function ns(o: ForeignObject): string {
  return o.metadata.namespace ?? 'default';
}

function live(o: ForeignObject): boolean {
  return !o.metadata.deletionTimestamp;
}

function host(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

// Which zone, which class ---------------------------------------------------------------------------

type Refusal = { reason: string; message: string };
type Resolved<T> = ({ ok: true } & T) | ({ ok: false } & Refusal);

/** The Datum class a zone names (`undefined` when it names none), or why it cannot be used. */
export function datumClassOf(
  zone: DatumZoneObject,
  context: TranslateContext,
): Resolved<{ datumClass?: DatumClassObject }> {
  const name = zone.spec.dnsZoneClassName;
  if (!name) return { ok: true };
  const found = (context.related('DNSZoneClass') as DatumClassObject[]).find(
    (c) => c.metadata.name === name && live(c),
  );
  if (!found)
    return {
      ok: false,
      reason: 'DNSZoneClassNotFound',
      message: `DNSZoneClass ${name} (${DATUM_GROUP}) does not exist; create it or correct spec.dnsZoneClassName`,
    };
  return { ok: true, datumClass: found };
}

/** What a Datum zone is served as: its Zonekeeper class and Datum class, or why it is not served. */
export function servingOf(
  zone: DatumZoneObject,
  context: TranslateContext,
): Resolved<{ className: string; datumClass?: DatumClassObject }> {
  const datum = datumClassOf(zone, context);
  if (!datum.ok) return datum;
  const cls = context.defaultClass();
  if (!cls.ok)
    return {
      ok: false,
      reason: cls.code === 'NO_DEFAULT_CLASS' ? 'NoDefaultClass' : 'SeveralDefaultClasses',
      message: cls.message,
    };
  return {
    ok: true,
    className: cls.zoneClass.metadata.name,
    ...(datum.datumClass ? { datumClass: datum.datumClass } : {}),
  };
}

/** The live Datum zone a record set names (same namespace), served, with its origin. */
export function zoneOfRecordSet(
  rs: DatumRecordSetObject,
  context: TranslateContext,
): Resolved<{ zone: DatumZoneObject; origin: string }> {
  const name = rs.spec.dnsZoneRef.name;
  const zone = (context.related('DNSZone') as DatumZoneObject[]).find(
    (z) => z.metadata.name === name && ns(z) === ns(rs),
  );
  if (!zone || !live(zone))
    return {
      ok: false,
      reason: 'Pending',
      message: `waiting for DNSZone ${name} (${DATUM_GROUP}) in namespace ${ns(rs)}: ${zone ? 'it is being deleted' : 'it does not exist'}`,
    };
  const serving = servingOf(zone, context);
  if (!serving.ok)
    return { ok: false, reason: 'Pending', message: `DNSZone ${name} is not served: ${serving.message}` };
  return { ok: true, zone, origin: originOf(zone.spec.domainName) };
}

// Record values ------------------------------------------------------------------------------------

const TYPE_FIELDS = [
  'a',
  'aaaa',
  'cname',
  'ns',
  'txt',
  'soa',
  'caa',
  'mx',
  'srv',
  'tlsa',
  'https',
  'svcb',
  'ptr',
] as const;

function quoteText(text: string): string {
  // RFC 1035 §3.3.14: one or more character-strings of up to 255 octets each, split between characters.
  const encoder = new TextEncoder();
  const chunks: string[] = [];
  let current = '';
  let size = 0;
  for (const ch of text) {
    const n = encoder.encode(ch).length;
    if (size + n > 255) {
      chunks.push(current);
      current = '';
      size = 0;
    }
    current += ch;
    size += n;
  }
  chunks.push(current);
  return chunks.map((c) => `"${c.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(' ');
}

function paramValue(v: string): string {
  return /^[A-Za-z0-9,._:/+=-]*$/.test(v) && v !== ''
    ? v
    : `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** One entry's value in presentation format (RFC 1035 §5.1), targets made absolute against `origin`. */
export function presentation(type: string, entry: RecordEntry, origin: string): string | undefined {
  switch (type) {
    case 'A':
      return entry.a?.content;
    case 'AAAA':
      return entry.aaaa?.content;
    case 'CNAME':
      return entry.cname && qualifyTarget(entry.cname.content, origin);
    case 'NS':
      return entry.ns && qualifyTarget(entry.ns.content, origin);
    case 'PTR':
      return entry.ptr && qualifyTarget(entry.ptr.content, origin);
    case 'TXT':
      return entry.txt && quoteText(entry.txt.content);
    case 'MX':
      return entry.mx && `${entry.mx.preference} ${qualifyTarget(entry.mx.exchange, origin)}`;
    case 'SRV':
      return (
        entry.srv &&
        `${entry.srv.priority} ${entry.srv.weight} ${entry.srv.port} ${qualifyTarget(entry.srv.target, origin)}`
      );
    case 'CAA':
      return entry.caa && `${entry.caa.flag} ${entry.caa.tag} ${quoteText(entry.caa.value)}`;
    case 'TLSA':
      return (
        entry.tlsa &&
        `${entry.tlsa.usage} ${entry.tlsa.selector} ${entry.tlsa.matchingType} ${entry.tlsa.certData}`
      );
    case 'HTTPS':
    case 'SVCB': {
      const b = type === 'HTTPS' ? entry.https : entry.svcb;
      if (!b) return undefined;
      const target = b.target === '.' || b.target === '' ? '.' : qualifyTarget(b.target, origin);
      const params = Object.entries(b.params ?? {})
        .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
        .map(([k, v]) => (v === '' ? k : `${k}=${paramValue(v)}`));
      return [String(b.priority), target, ...params].join(' ');
    }
    default:
      return undefined;
  }
}

/** Entries grouped by absolute owner name, in order of first appearance. */
export interface OwnerGroup {
  /** The owner name as first written. */
  written: string;
  fqdn: string;
  inside: boolean;
  entries: RecordEntry[];
}

export function ownerGroups(spec: DatumRecordSetSpec, origin: string): OwnerGroup[] {
  const groups = new Map<string, OwnerGroup>();
  for (const entry of spec.records) {
    const fqdn = qualifyOwner(entry.name, origin);
    let g = groups.get(fqdn);
    if (!g) {
      g = { written: entry.name, fqdn, inside: isInside(fqdn, origin), entries: [] };
      groups.set(fqdn, g);
    }
    g.entries.push(entry);
  }
  return [...groups.values()];
}

function outsideMessage(g: OwnerGroup, origin: string): string {
  return `${g.written} is ${g.fqdn}, outside the zone ${origin}; a record set publishes only inside the DNSZone it names (use a relative name, "@" for the apex)`;
}

// Admission ------------------------------------------------------------------------------------------

function admitRecordSet(object: DatumRecordSetObject): Problem[] {
  const problems: Problem[] = [];
  const { recordType, records } = object.spec;
  if (recordType === 'SOA')
    problems.push({
      path: 'spec.recordType',
      code: 'SOANotServed',
      message: "DNSRecordSet: Zonekeeper writes each zone's SOA record itself; remove the SOA record set",
    });
  const field = recordType.toLowerCase();
  const ttls = new Map<string, number | undefined>();
  records.forEach((entry, i) => {
    const set = TYPE_FIELDS.filter((f) => (entry as Record<string, unknown>)[f] !== undefined);
    if (set.length !== 1 || set[0] !== field)
      problems.push({
        path: `spec.records[${i}]`,
        code: 'TypeFieldMismatch',
        message:
          set.length === 0
            ? `DNSRecordSet: the entry has no value; set records[${i}].${field} (recordType ${recordType})`
            : `DNSRecordSet: exactly one type-specific field, ${field} (recordType ${recordType}), must be set; found ${set.join(', ')}`,
      });
    if (entry.ttl !== undefined && (entry.ttl < 1 || entry.ttl > MAX_TTL))
      problems.push({
        path: `spec.records[${i}].ttl`,
        code: 'TTLOutOfRange',
        message: `DNSRecordSet: ttl ${entry.ttl} is out of range; use 1-${MAX_TTL} seconds`,
      });
    // RFC 2181 §5.2: the records of one RRset have one TTL.
    const owner = entry.name.toLowerCase();
    if (entry.ttl !== undefined) {
      const before = ttls.get(owner);
      if (before !== undefined && before !== entry.ttl)
        problems.push({
          path: `spec.records[${i}].ttl`,
          code: 'TTLsDiffer',
          message: `DNSRecordSet: entries for ${entry.name} set ttl ${before} and ${entry.ttl}; one RRset has one TTL (RFC 2181 §5.2)`,
        });
      else ttls.set(owner, entry.ttl);
    }
  });
  return problems;
}

// Conditions ---------------------------------------------------------------------------------------

function cond(
  type: 'Accepted' | 'Programmed',
  status: 'True' | 'False' | 'Unknown',
  reason: string,
  message: string,
  generation: number | undefined,
  now: string,
): Condition {
  return {
    type,
    status,
    reason,
    message,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    lastTransitionTime: now,
  };
}

/** A native reason in Datum's words where Datum has one. */
function datumReason(kind: 'DNSZone' | 'DNSRecordSet', reason: string | undefined): string {
  if (!reason) return 'Pending';
  if (kind === 'DNSZone' && (reason === 'Conflict' || reason === 'ZoneShadowed')) return 'DNSZoneInUse';
  if (kind === 'DNSRecordSet' && reason === 'NotDelegated') return 'NotOwner';
  if (reason === 'Invalid' || reason === 'ValidationFailed' || reason === 'OutOfZone')
    return kind === 'DNSRecordSet' ? 'InvalidDNSRecordSet' : 'Invalid';
  return reason;
}

/**
 * Accepted and Programmed from one native output. Pending while the native status has not seen the
 * object's current generation: nothing reports Programmed while a change is pending.
 */
function fromOutput(
  kind: 'DNSZone' | 'DNSRecordSet',
  output: OutputStatus | undefined,
  generation: number | undefined,
  now: string,
): { accepted: Condition; programmed: Condition } {
  const native = output?.status as DNSZoneStatus | DNSRecordSetStatus | undefined;
  const current =
    native?.observedGeneration !== undefined &&
    (generation === undefined || native.observedGeneration >= generation);
  if (!native || !current)
    return {
      accepted: cond('Accepted', 'Unknown', 'Pending', 'waiting for Zonekeeper', generation, now),
      programmed: cond('Programmed', 'Unknown', 'Pending', 'waiting for Zonekeeper', generation, now),
    };
  const find = (type: string) => native.conditions?.find((c) => c.type === type);
  const a = find('Accepted');
  const p = find('Programmed');
  const accepted =
    a?.status === 'True'
      ? cond('Accepted', 'True', 'Accepted', a.message || 'accepted', generation, now)
      : cond(
          'Accepted',
          a?.status === 'False' ? 'False' : 'Unknown',
          datumReason(kind, a?.reason),
          a?.message ?? 'waiting for Zonekeeper',
          generation,
          now,
        );
  const programmed =
    a?.status === 'True' && p?.status === 'True'
      ? cond('Programmed', 'True', 'Programmed', p.message || 'served', generation, now)
      : cond(
          'Programmed',
          a?.status === 'False' || p?.status === 'False' ? 'False' : 'Unknown',
          a?.status === 'False' ? 'Pending' : datumReason(kind, p?.reason),
          a?.status === 'False' ? 'not programmed: not accepted' : (p?.message ?? 'waiting for the servers'),
          generation,
          now,
        );
  return { accepted, programmed };
}

function refused(refusal: Refusal, generation: number | undefined, now: string): Condition[] {
  return [
    cond('Accepted', 'False', refusal.reason, refusal.message, generation, now),
    cond('Programmed', 'False', 'Pending', `not programmed: ${refusal.message}`, generation, now),
  ];
}

function problemText(problems: readonly Problem[]): string {
  return problems.map((p) => `${p.path}: ${p.message}`).join('; ');
}

// Doors ---------------------------------------------------------------------------------------------

export const datumZoneClassFrontDoor: FrontDoor<DatumZoneClassSpec, DatumZoneClassStatus> = {
  group: DATUM_GROUP,
  version: DATUM_VERSION,
  kind: 'DNSZoneClass',
  plural: 'dnszoneclasses',
  singular: 'dnszoneclass',
  listKind: 'DNSZoneClassList',
  shortNames: [],
  scope: 'Cluster',
  description:
    "Datum DNSZoneClass: name servers and defaults of a kind of zone. Its zones are served by Zonekeeper's default DNSZoneClass (dns.zonekeeper.dev).",
  spec: datumZoneClassSpecSchema,
  status: datumZoneClassStatusSchema,
  printerColumns: [ACCEPTED_COLUMN, PROGRAMMED_COLUMN, AGE_COLUMN],
  // No finalizer is ever put on a class: it maps onto nothing native.
  finalizer: `${DATUM_GROUP}/finalize-dnszoneclass`,
  merge: 'none',
  reads: { defaultClass: true },
  admit(object) {
    const { mode, static: fixed } = object.spec.nameServerPolicy;
    if (mode === 'Static' && (!fixed || fixed.servers.length === 0))
      return [
        {
          path: 'spec.nameServerPolicy.static.servers',
          code: 'StaticServersMissing',
          message: 'DNSZoneClass: mode Static needs static.servers, the name servers of its zones',
        },
      ];
    return [];
  },
  translate: () => [],
  project({ object, problems, now, context }): DatumZoneClassStatus {
    const generation = object.metadata.generation;
    let conditions: Condition[];
    const cls = context?.defaultClass();
    if (problems && problems.length > 0)
      conditions = refused({ reason: 'Invalid', message: problemText(problems) }, generation, now);
    else if (!cls?.ok)
      conditions = refused(
        cls && !cls.ok
          ? {
              reason: cls.code === 'NO_DEFAULT_CLASS' ? 'NoDefaultClass' : 'SeveralDefaultClasses',
              message: cls.message,
            }
          : { reason: 'Pending', message: 'waiting for Zonekeeper' },
        generation,
        now,
      );
    else {
      const name = cls.zoneClass.metadata.name;
      const served = [...cls.zoneClass.spec.nameServers].map(host).sort();
      const listed = [...(object.spec.nameServerPolicy.static?.servers ?? [])].map(host).sort();
      const same = served.length === listed.length && served.every((s, i) => s === listed[i]);
      conditions = [
        cond(
          'Accepted',
          'True',
          'Accepted',
          `zones of this class are served by DNSZoneClass ${name} (dns.zonekeeper.dev)`,
          generation,
          now,
        ),
        same
          ? cond(
              'Programmed',
              'True',
              'Programmed',
              `the name servers ${served.join(', ')} are the ones served`,
              generation,
              now,
            )
          : cond(
              'Programmed',
              'False',
              'NameServersDiffer',
              `zones of this class are served with the name servers of DNSZoneClass ${name} (dns.zonekeeper.dev) spec.nameServers: ${served.join(', ') || 'none'}, not ${listed.join(', ') || 'none'}; make the two lists the same`,
              generation,
              now,
            ),
      ];
    }
    return {
      conditions: keepTransitionTimes(object.status?.conditions as Condition[] | undefined, conditions),
    };
  },
};

export const datumZoneFrontDoor: FrontDoor<DatumZoneSpec, DatumZoneStatus> = {
  group: DATUM_GROUP,
  version: DATUM_VERSION,
  kind: 'DNSZone',
  plural: 'dnszones',
  singular: 'dnszone',
  listKind: 'DNSZoneList',
  shortNames: [],
  scope: 'Namespaced',
  description: 'Datum DNSZone: a hosted zone, served by Zonekeeper.',
  spec: datumZoneSpecSchema,
  status: datumZoneStatusSchema,
  printerColumns: [
    ACCEPTED_COLUMN,
    PROGRAMMED_COLUMN,
    { name: 'Records', type: 'integer', jsonPath: '.status.recordCount' },
  ],
  selectableFields: [{ jsonPath: '.spec.domainName' }, { jsonPath: '.status.domainRef.name' }],
  finalizer: DATUM_ZONE_FINALIZER,
  merge: 'none',
  reads: { kinds: ['DNSZoneClass'], defaultClass: true },
  translate(object, context) {
    const serving = servingOf(object, context);
    if (!serving.ok) return [];
    const ttl = serving.datumClass?.spec.defaults?.defaultTTL;
    const spec: DNSZoneSpec = {
      domainName: object.spec.domainName,
      className: serving.className,
      ...(ttl !== undefined ? { ttl } : {}),
    };
    return [{ kind: 'DNSZone', key: '', spec }];
  },
  nativeStatus(object, _key, domain) {
    const { serial, hash, conditions } = object.status ?? {};
    // Datum's spec.domainName cannot change: the Accepted condition is for the domain it names.
    const accepted = servedCondition(
      conditions?.find((c) => c.type === 'Accepted'),
      object.spec.domainName,
      domain,
    );
    if (serial === undefined && !accepted) return undefined;
    return {
      ...(serial !== undefined ? { serial, ...(hash ? { hash } : {}) } : {}),
      ...(accepted ? { conditions: [accepted] } : {}),
    };
  },
  project({ object, outputs, problems, now, context }): DatumZoneStatus {
    const generation = object.metadata.generation;
    const output = outputs[0];
    const native = output?.status as DNSZoneStatus | undefined;
    let conditions: Condition[];
    if (problems && problems.length > 0)
      conditions = refused({ reason: 'Invalid', message: problemText(problems) }, generation, now);
    else if (!output) {
      const serving = context ? servingOf(object, context) : undefined;
      conditions = refused(
        serving && !serving.ok ? serving : { reason: 'Pending', message: 'waiting for Zonekeeper' },
        generation,
        now,
      );
    } else {
      const { accepted, programmed } = fromOutput('DNSZone', output, generation, now);
      conditions = [accepted, programmed];
    }
    const accepted = conditions[0]?.status === 'True';
    const domainRef = object.status?.domainRef;
    return {
      ...(accepted && native?.nameservers?.length ? { nameservers: native.nameservers.map(host) } : {}),
      ...(accepted && native?.recordCount !== undefined ? { recordCount: native.recordCount } : {}),
      ...(accepted && native?.serial !== undefined ? { serial: native.serial } : {}),
      ...(accepted && native?.hash ? { hash: native.hash } : {}),
      conditions: keepTransitionTimes(object.status?.conditions as Condition[] | undefined, conditions),
      ...(domainRef ? { domainRef } : {}),
    };
  },
};

export const datumRecordSetFrontDoor: FrontDoor<DatumRecordSetSpec, DatumRecordSetStatus> = {
  group: DATUM_GROUP,
  version: DATUM_VERSION,
  kind: 'DNSRecordSet',
  plural: 'dnsrecordsets',
  singular: 'dnsrecordset',
  listKind: 'DNSRecordSetList',
  shortNames: [],
  scope: 'Namespaced',
  description: 'Datum DNSRecordSet: records of one type in one DNSZone, served by Zonekeeper.',
  spec: datumRecordSetSpecSchema,
  status: datumRecordSetStatusSchema,
  printerColumns: [ACCEPTED_COLUMN, PROGRAMMED_COLUMN],
  selectableFields: [{ jsonPath: '.spec.dnsZoneRef.name' }, { jsonPath: '.spec.recordType' }],
  finalizer: DATUM_RECORDSET_FINALIZER,
  merge: 'none',
  reads: { kinds: ['DNSZone', 'DNSZoneClass'], defaultClass: true },
  admit: (object) => admitRecordSet(object),
  translate(object, context) {
    const zone = zoneOfRecordSet(object, context);
    if (!zone.ok) return [];
    const type = object.spec.recordType as RecordTypeName;
    const groups = ownerGroups(object.spec, zone.origin);
    // An owner outside the zone refuses the whole record set, as an invalid one (nothing half-applied).
    if (groups.some((g) => !g.inside)) return [];
    const out: ReturnType<FrontDoor['translate']> = [];
    for (const g of groups) {
      const records = g.entries
        .map((e) => presentation(type, e, zone.origin))
        .filter((r): r is string => r !== undefined);
      const ttl = g.entries.find((e) => e.ttl !== undefined)?.ttl;
      // No zoneRef (a native zoneRef cannot name a translated zone): the catalog adopts the absolute
      // name into the deepest served zone containing it, with that zone's delegations.
      const spec: DNSRecordSetSpec = { name: g.fqdn, type, records, ...(ttl !== undefined ? { ttl } : {}) };
      out.push({ kind: 'DNSRecordSet', key: g.fqdn, spec });
    }
    return out;
  },
  project({ object, outputs, problems, now, context }): DatumRecordSetStatus {
    const generation = object.metadata.generation;
    const previous = object.status;
    const keep = (before: readonly Condition[] | undefined, next: Condition[]) =>
      keepTransitionTimes(before as Condition[] | undefined, next);
    if (problems && problems.length > 0)
      return {
        conditions: keep(
          previous?.conditions as Condition[] | undefined,
          refused({ reason: 'InvalidDNSRecordSet', message: problemText(problems) }, generation, now),
        ),
      };
    const zone = context ? zoneOfRecordSet(object, context) : undefined;
    if (!zone?.ok)
      return {
        conditions: keep(
          previous?.conditions as Condition[] | undefined,
          refused(
            zone && !zone.ok ? zone : { reason: 'Pending', message: 'waiting for Zonekeeper' },
            generation,
            now,
          ),
        ),
      };
    const perName: { name: string; conditions: Condition[] }[] = [];
    const groups = ownerGroups(object.spec, zone.origin);
    const outside = groups.find((g) => !g.inside);
    for (const g of groups) {
      let conditions: Condition[];
      if (!g.inside)
        conditions = refused(
          { reason: 'InvalidDNSRecordSet', message: outsideMessage(g, zone.origin) },
          generation,
          now,
        );
      else if (outside)
        conditions = refused(
          {
            reason: 'InvalidDNSRecordSet',
            message: `${g.fqdn}: not published: the record set is refused, ${outsideMessage(outside, zone.origin)}`,
          },
          generation,
          now,
        );
      else {
        const { accepted, programmed } = fromOutput(
          'DNSRecordSet',
          outputs.find((o) => o.key === g.fqdn),
          generation,
          now,
        );
        const where = (msg: string) => `${g.fqdn}: ${msg}`;
        conditions = [
          { ...accepted, message: where(accepted.message) },
          { ...programmed, message: where(programmed.message) },
        ];
      }
      const before = previous?.recordSets?.find((r) => r.name === g.written)?.conditions;
      perName.push({ name: g.written, conditions: keep(before as Condition[] | undefined, conditions) });
    }
    // Over all names: True when every name is; else the first name that is not, in its words.
    const overall = (type: 'Accepted' | 'Programmed'): Condition => {
      const all = perName.map((r) => r.conditions.find((c) => c.type === type)!);
      const bad = all.find((c) => c.status === 'False') ?? all.find((c) => c.status !== 'True');
      if (!bad)
        return cond(
          type,
          'True',
          type,
          type === 'Accepted'
            ? `${all.length} owner name${all.length === 1 ? '' : 's'} accepted`
            : `${all.length} owner name${all.length === 1 ? '' : 's'} served`,
          generation,
          now,
        );
      return cond(type, bad.status, bad.reason, bad.message, generation, now);
    };
    return {
      conditions: keep(previous?.conditions as Condition[] | undefined, [
        overall('Accepted'),
        overall('Programmed'),
      ]),
      recordSets: perName,
    };
  },
};

// biome-ignore lint/suspicious/noExplicitAny: a registry holds doors of different spec types
export const DATUM_FRONT_DOORS: readonly FrontDoor<any, any>[] = [
  datumZoneClassFrontDoor,
  datumZoneFrontDoor,
  datumRecordSetFrontDoor,
];
