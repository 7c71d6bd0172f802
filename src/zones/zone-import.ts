/**
 * Turns the records of a parsed zone file into the resources that publish the same zone: one DNSZone
 * (TTL and SOA timers from the file) and one DNSRecordSet per RRset. Pure: the caller parses the file
 * (src/dns/zone-file-parser.ts) and prints the result (`zoneImportYaml`).
 *
 * What Zonekeeper generates itself is not imported but reported as a note: the SOA serial and MNAME,
 * and the apex NS (both from the DNSZoneClass). Content a Zonekeeper zone cannot hold (data below a
 * delegation, a CNAME at the apex, ...) is skipped with a warning; content the file should not have had
 * in the first place (a CNAME beside other data) is an error.
 */
import { createHash } from 'node:crypto';
import { stringify } from 'yaml';
import type { DNSRecordSet, DNSZone } from '../api/index.ts';
import { API_VERSION, MAX_TTL, validateResource } from '../api/index.ts';
import { MAILBOX_PATTERN } from '../api/meta.ts';
import {
  asciiLower,
  compareCanonical,
  isInDomain,
  labelCount,
  type Name,
  nameEquals,
  nameKey,
  nameLabels,
  parseName,
  relativeName,
} from '../dns/name.ts';
import { printRdata, type Rdata, rdataEquals } from '../dns/rdata.ts';
import { type RecordTypeName, RRType } from '../dns/rrtype.ts';
import type { ZoneFileRecord, ZoneFileSeverity } from '../dns/zone-file-parser.ts';
import { serialGreater } from './serial.ts';

export interface ZoneImportOptions {
  /** The zone apex (absolute or not; a trailing dot is added). */
  zone: string;
  namespace: string;
  /** DNSZoneClass of the zone. Default `builtin`. */
  className?: string;
  /** DNSZone resource name. Default: derived from the zone (`example.com.` → `example-com`). */
  name?: string;
  /**
   * Prefix of every DNSRecordSet name, so that several zones can be imported into one namespace without
   * clashing. Default: the DNSZone name and a dash (`example-com-www-a`); `''` for none (`www-a`).
   */
  prefix?: string;
  /** The class's nameServers when known: the SOA MNAME and apex NS of the file are compared with them. */
  classNameServers?: readonly string[];
  /**
   * Zones below this one that Zonekeeper serves as DNSZones of their own: the parent publishes their NS
   * and glue itself, so the file's NS and glue for them are left out (with a note).
   */
  managedChildZones?: readonly string[];
  /** For the serial note (a file serial ahead of today's date serial). Default: the current time. */
  now?: Date;
}

export interface ZoneImportProblem {
  /** Where the record is, when the problem is about one. */
  file?: string;
  line?: number;
  severity: ZoneFileSeverity;
  /** Stable UPPER_SNAKE identifier. */
  code: string;
  message: string;
  /** Content left out of the resources. */
  skipped?: boolean;
}

export interface ZoneImportResult {
  zone: DNSZone;
  recordSets: DNSRecordSet[];
  problems: ZoneImportProblem[];
}

interface Rrset {
  owner: Name;
  type: RecordTypeName;
  ttl: number;
  rdata: Rdata[];
  /** The record each rdata came from. */
  sources: ZoneFileRecord[];
}

const DEFAULT_CLASS = 'builtin';
/** Kubernetes object names are DNS-1123 subdomains of at most 253 characters; shorter reads better. */
const MAX_RESOURCE_NAME = 63;

/** `example.com.` → `example-com`: a DNS-1123-safe resource name for a zone. */
export function zoneResourceName(origin: Name): string {
  const absolute = parseName(origin.endsWith('.') ? origin : `${origin}.`);
  const base = sanitize(nameLabels(absolute).join('-'));
  return base.length > 0 && base.length <= MAX_RESOURCE_NAME ? base : withHash(base, nameKey(absolute), 6);
}

export function importZone(records: readonly ZoneFileRecord[], options: ZoneImportOptions): ZoneImportResult {
  const problems: ZoneImportProblem[] = [];
  const origin = parseName(options.zone.endsWith('.') ? options.zone : `${options.zone}.`);
  const className = options.className ?? DEFAULT_CLASS;
  const zoneName = options.name ?? zoneResourceName(origin);
  const prefix = options.prefix ?? `${zoneName}-`;
  const at = (r: ZoneFileRecord) => ({ file: r.file, line: r.line });
  const say = (
    where: { file?: string; line?: number } | undefined,
    severity: ZoneFileSeverity,
    code: string,
    message: string,
    skipped = false,
  ) => problems.push({ ...where, severity, code, message, ...(skipped ? { skipped: true } : {}) });

  // RRsets by owner and type, in file order of their first record.
  const rrsets = new Map<string, Rrset>();
  for (const r of records) {
    if (!isInDomain(r.owner, origin)) {
      say(at(r), 'warning', 'OUT_OF_ZONE', `${r.owner} ${r.type} is outside zone ${origin}; skipped`, true);
      continue;
    }
    const key = `${nameKey(r.owner)} ${r.type}`;
    let set = rrsets.get(key);
    if (!set) {
      set = { owner: r.owner, type: r.type, ttl: r.ttl, rdata: [], sources: [] };
      rrsets.set(key, set);
    }
    if (set.rdata.some((x) => rdataEquals(x, r.rdata))) {
      // RFC 2181 §5: an RRset holds each record once; servers drop the repeat.
      say(
        at(r),
        'note',
        'DUPLICATE_RECORD',
        `${r.owner} ${r.type} ${printRdata(r.rdata)} repeats a record above; dropped`,
      );
      continue;
    }
    if (r.ttl !== set.ttl) {
      // RFC 2181 §5.2: the TTLs of an RRset must match; the lowest applies.
      const ttl = Math.min(r.ttl, set.ttl);
      say(
        at(r),
        'warning',
        'TTL_MISMATCH',
        `${r.owner} ${r.type} has TTL ${r.ttl} but the RRset has ${set.ttl}; an RRset has one TTL (RFC 2181 §5.2), using ${ttl}`,
      );
      set.ttl = ttl;
    }
    set.rdata.push(r.rdata);
    set.sources.push(r);
  }

  if (records.length > 0 && rrsets.size === 0) {
    say(
      { file: records[0]!.file },
      'error',
      'ZONE_MISMATCH',
      `none of the ${records.length} records is in zone ${origin} (the first is ${records[0]!.owner}); check --zone`,
    );
  }

  // The apex SOA becomes the DNSZone; the apex NS come from the class.
  const apexKey = (type: RecordTypeName) => `${nameKey(origin)} ${type}`;
  const soaSet = rrsets.get(apexKey('SOA'));
  const nsSet = rrsets.get(apexKey('NS'));
  rrsets.delete(apexKey('SOA'));
  rrsets.delete(apexKey('NS'));
  const soa = soaSet?.rdata[0]?.type === 'SOA' ? soaSet.rdata[0] : undefined;
  if (soaSet && soaSet.rdata.length > 1) {
    say(
      at(soaSet.sources[1]!),
      'error',
      'MULTIPLE_SOA',
      `zone ${origin} has ${soaSet.rdata.length} SOA records; a zone has exactly one (RFC 1035 §5.2), remove the others`,
      true,
    );
  }
  if (!soa) {
    say(
      records[0] ? { file: records[0].file } : undefined,
      'warning',
      'NO_SOA',
      `the file has no SOA record at ${origin}; the zone TTL and SOA timers come from the class defaults`,
    );
  }

  const nameServers = options.classNameServers?.map((n) => parseName(n));
  const spec: DNSZone['spec'] = { domainName: asciiLower(origin.slice(0, -1)), className };
  const allSets = [...rrsets.values()];
  const zoneTtl = soaSet ? soaSet.ttl : mostCommonTtl(allSets);
  if (zoneTtl !== undefined) spec.ttl = clampTtl(zoneTtl, soaSet?.sources[0], 'the zone TTL', say);
  if (soa && soaSet) {
    const where = at(soaSet.sources[0]!);
    const overrides: NonNullable<DNSZone['spec']['soa']> = {};
    if (new RegExp(MAILBOX_PATTERN).test(soa.rname)) overrides.rname = soa.rname;
    else {
      say(
        where,
        'warning',
        'SOA_RNAME_NOT_IMPORTED',
        `the SOA RNAME ${soa.rname} cannot be written as spec.soa.rname (letters, digits, "-", "_" and "\\." only); the class default applies, set it by hand`,
      );
    }
    for (const field of ['refresh', 'retry', 'expire', 'minimum'] as const) {
      const value = soa[field];
      if (value >= 1 && value <= MAX_TTL) overrides[field] = value;
      else {
        say(
          where,
          'warning',
          'SOA_TIMER_NOT_IMPORTED',
          `the SOA ${field.toUpperCase()} ${value} is outside 1..${MAX_TTL}, which spec.soa.${field} accepts; the class default applies`,
        );
      }
    }
    spec.soa = overrides;
    const dateFloor = serialFloor(options.now ?? new Date());
    say(
      where,
      serialGreater(soa.serial, dateFloor) ? 'warning' : 'note',
      'SOA_SERIAL_NOT_IMPORTED',
      serialGreater(soa.serial, dateFloor)
        ? `the SOA serial ${soa.serial} is ahead of the date serial ${dateFloor} Zonekeeper starts from; secondaries holding ${soa.serial} will not transfer until the served serial passes it (RFC 1982), so raise it in the --state-dir first (append a serial line to its log with serve stopped; see docs/api.md, the state folder)`
        : `the SOA serial ${soa.serial} is not imported: Zonekeeper manages serials (YYYYMMDDnn, never decreasing)`,
    );
    const mnameNote = `the SOA MNAME ${soa.mname} is not imported: Zonekeeper uses the first nameServer of DNSZoneClass ${className}`;
    if (nameServers === undefined)
      say(where, 'note', 'SOA_MNAME_FROM_CLASS', `${mnameNote}; check that it is ${soa.mname}`);
    else if (!nameEquals(nameServers[0]!, soa.mname)) {
      say(
        where,
        'note',
        'SOA_MNAME_DIFFERS',
        `${mnameNote}, which is ${nameServers[0]} (the file has ${soa.mname})`,
      );
    }
  }
  if (nsSet) {
    const where = at(nsSet.sources[0]!);
    const hosts = nsSet.rdata.map((r) => (r as { host: Name }).host);
    const base = `the apex NS records (${hosts.join(', ')}) are not imported: Zonekeeper publishes the nameServers of DNSZoneClass ${className}`;
    if (nameServers === undefined)
      say(where, 'note', 'APEX_NS_FROM_CLASS', `${base}; check that it lists the same`);
    else if (!sameNames(hosts, nameServers)) {
      say(where, 'note', 'APEX_NS_DIFFERS', `${base}, which are ${nameServers.join(', ')}`);
    }
    if (spec.ttl !== undefined && nsSet.ttl !== spec.ttl) {
      say(
        where,
        'note',
        'APEX_NS_TTL',
        `the apex NS TTL ${nsSet.ttl} is not kept: Zonekeeper serves the apex NS with the zone TTL ${spec.ttl}`,
      );
    }
  } else {
    say(
      undefined,
      'note',
      'NO_APEX_NS',
      `the file has no NS records at ${origin}; the class's nameServers are published`,
    );
  }

  // Zone cuts (RFC 1034 §4.2.1): below them only glue is served. Shallower cuts first, so that an NS
  // below another cut is itself recognised as occluded.
  const byOwner = new Map<string, Rrset[]>();
  for (const set of allSets) {
    const list = byOwner.get(nameKey(set.owner));
    if (list) list.push(set);
    else byOwner.set(nameKey(set.owner), [set]);
  }
  const childZones = (options.managedChildZones ?? [])
    .map((z) => parseName(z.endsWith('.') ? z : `${z}.`))
    .filter((z) => isInDomain(z, origin) && !nameEquals(z, origin));
  const cuts: Rrset[] = [];
  const kept: Rrset[] = [];
  const skip = (set: Rrset, severity: ZoneFileSeverity, code: string, message: string) =>
    say(at(set.sources[0]!), severity, code, `${set.owner} ${set.type}: ${message}; skipped`, true);
  const ordered = [...allSets].sort(
    (a, b) =>
      labelCount(a.owner) - labelCount(b.owner) || (a.type === 'NS' ? 0 : 1) - (b.type === 'NS' ? 0 : 1),
  );
  for (const set of ordered) {
    const child = childZones.find((z) => isInDomain(set.owner, z));
    if (child && !(set.type === 'DS' && nameEquals(set.owner, child))) {
      const atChild = nameEquals(set.owner, child);
      if (atChild && set.type === 'NS') {
        say(
          at(set.sources[0]!),
          'note',
          'MANAGED_CHILD_ZONE',
          `${set.owner} NS is left out: ${child} is a DNSZone of its own, and the parent publishes its NS and glue itself`,
        );
      } else if (!atChild && (set.type === 'A' || set.type === 'AAAA')) {
        say(
          at(set.sources[0]!),
          'note',
          'MANAGED_CHILD_ZONE',
          `${set.owner} ${set.type} is left out: it is in the child zone ${child}, which publishes it (the parent adds glue from it)`,
        );
      } else {
        skip(
          set,
          'warning',
          'OCCLUDED',
          `it is in the child zone ${child}, a DNSZone of its own; publish it there`,
        );
      }
      continue;
    }
    const cut = cuts.find((c) => isInDomain(set.owner, c.owner));
    if (cut) {
      const atCut = nameEquals(set.owner, cut.owner);
      const hosts = cut.rdata.map((r) => (r as { host: Name }).host);
      const glue =
        !atCut && (set.type === 'A' || set.type === 'AAAA') && hosts.some((h) => nameEquals(h, set.owner));
      if (atCut && set.type !== 'DS') {
        skip(
          set,
          'warning',
          'AT_DELEGATION',
          `${cut.owner} is a delegation point, where only NS and DS are served (RFC 1034 §4.2.1)`,
        );
        continue;
      }
      if (!atCut && !glue) {
        skip(
          set,
          'warning',
          'OCCLUDED',
          `it is below the delegation ${cut.owner} and not glue for it, so it is never served (RFC 1034 §4.3.2)`,
        );
        continue;
      }
    }
    const atApex = nameEquals(set.owner, origin);
    if (set.type === 'SOA') {
      skip(set, 'error', 'SOA_NOT_AT_APEX', `an SOA belongs at the zone apex ${origin} only`);
      continue;
    }
    if (atApex && set.type === 'CNAME') {
      skip(
        set,
        'warning',
        'CNAME_AT_APEX',
        'a CNAME cannot be at the apex (RFC 1034 §3.6.2); publish an ALIAS instead',
      );
      continue;
    }
    if (atApex && set.type === 'DS') {
      skip(
        set,
        'warning',
        'DS_AT_APEX',
        "a DS record belongs in the parent zone (RFC 4035 §2.4), not at the zone's own apex",
      );
      continue;
    }
    const others = (byOwner.get(nameKey(set.owner)) ?? []).filter((o) => o !== set).map((o) => o.type);
    if (set.type === 'CNAME' && (others.length > 0 || atApex)) {
      skip(
        set,
        'error',
        'CNAME_AND_OTHER_DATA',
        `a CNAME owner has no other data (RFC 1034 §3.6.2), but ${set.owner} also has ${others.join(', ')}; keep one`,
      );
      continue;
    }
    if (set.type === 'ALIAS' && others.some((t) => t === 'A' || t === 'AAAA')) {
      skip(
        set,
        'error',
        'ALIAS_AND_ADDRESS',
        'ALIAS answers A and AAAA queries itself and cannot share its owner with A or AAAA; keep one',
      );
      continue;
    }
    if ((set.type === 'CNAME' || set.type === 'ALIAS') && set.rdata.length > 1) {
      skip(
        set,
        'error',
        'SINGLE_RECORD',
        `a ${set.type} RRset has exactly one record, this one has ${set.rdata.length}`,
      );
      continue;
    }
    if (set.type === 'NS' && !atApex) {
      cuts.push(set);
      say(
        at(set.sources[0]!),
        'note',
        'DELEGATION',
        `${set.owner} NS is imported as a delegation record set; if ${set.owner} is served by Zonekeeper as a DNSZone, delete it: the parent publishes a managed child zone's NS itself`,
      );
    }
    kept.push(set);
  }

  // Stable order: canonical owner order, then type code, as the zone is printed.
  kept.sort((a, b) => compareCanonical(a.owner, b.owner) || RRType[a.type] - RRType[b.type]);
  const names = recordSetNames(kept, prefix, origin);
  const recordSets: DNSRecordSet[] = kept.map((set, i) => {
    const rsSpec: DNSRecordSet['spec'] = {
      zoneRef: { name: zoneName },
      name: relativeName(set.owner, origin),
      type: set.type,
      ...(spec.ttl === undefined || set.ttl !== spec.ttl
        ? { ttl: clampTtl(set.ttl, set.sources[0], `the TTL of ${set.owner} ${set.type}`, say) }
        : {}),
      records: set.rdata.map(printRdata),
    };
    return {
      apiVersion: API_VERSION,
      kind: 'DNSRecordSet',
      metadata: { name: names[i]!, namespace: options.namespace },
      spec: rsSpec,
    };
  });
  const zone: DNSZone = {
    apiVersion: API_VERSION,
    kind: 'DNSZone',
    metadata: { name: zoneName, namespace: options.namespace },
    spec,
  };

  // The resources must be what `serve` accepts: check each with the same validation.
  for (const r of [zone, ...recordSets]) {
    const result = validateResource(r);
    if (result.ok) continue;
    for (const p of result.problems) {
      say(
        undefined,
        'error',
        'RESOURCE_INVALID',
        `${r.kind} ${r.metadata.name}: ${p.path ? `${p.path}: ` : ''}${p.message}`,
      );
    }
  }
  // File order: by file (as first seen in the records), then line; zone-wide problems last.
  const fileOrder = new Map<string, number>();
  for (const r of records) if (!fileOrder.has(r.file)) fileOrder.set(r.file, fileOrder.size);
  const rank = (p: ZoneImportProblem) =>
    p.line === undefined ? [Number.MAX_SAFE_INTEGER, 0] : [fileOrder.get(p.file ?? '') ?? 0, p.line];
  problems.sort((a, b) => {
    const [fa, la] = rank(a);
    const [fb, lb] = rank(b);
    return fa! - fb! || la! - lb!;
  });
  return { zone, recordSets, problems };
}

/** The most frequent TTL (ties: the lowest), for a zone without an SOA. */
function mostCommonTtl(sets: readonly Rrset[]): number | undefined {
  const counts = new Map<number, number>();
  for (const s of sets) counts.set(s.ttl, (counts.get(s.ttl) ?? 0) + 1);
  let best: number | undefined;
  for (const [ttl, n] of counts) {
    const bestCount = best === undefined ? 0 : counts.get(best)!;
    if (n > bestCount || (n === bestCount && best !== undefined && ttl < best)) best = ttl;
  }
  return best;
}

function clampTtl(
  ttl: number,
  source: ZoneFileRecord | undefined,
  what: string,
  say: (w: { file?: string; line?: number } | undefined, s: ZoneFileSeverity, c: string, m: string) => void,
): number {
  if (ttl >= 1) return ttl;
  say(
    source ? { file: source.file, line: source.line } : undefined,
    'warning',
    'TTL_RAISED',
    `${what} is 0, but Zonekeeper TTLs are at least 1 second; using 1`,
  );
  return 1;
}

function sameNames(a: readonly Name[], b: readonly Name[]): boolean {
  const x = new Set(a.map(nameKey));
  const y = new Set(b.map(nameKey));
  return x.size === y.size && [...x].every((k) => y.has(k));
}

/** The date serial YYYYMMDD00 (UTC) that a new zone starts from. */
function serialFloor(now: Date): number {
  return now.getUTCFullYear() * 1_000_000 + (now.getUTCMonth() + 1) * 10_000 + now.getUTCDate() * 100;
}

/**
 * Deterministic, DNS-1123-safe, unique names: `<prefix><owner>-<type>` with the owner relative to the
 * zone (`apex` for `@`, `star` for `*`, labels joined by `-`, other characters dropped). Names that
 * collide or run over 63 characters get a short hash of owner and type instead of their tail.
 */
function recordSetNames(sets: readonly Rrset[], prefix: string, origin: Name): string[] {
  const zoneLabels = labelCount(origin);
  const bases = sets.map((s) => {
    const labels = nameLabels(s.owner);
    const relative = labels.slice(0, labels.length - zoneLabels).map((l) => (l === '*' ? 'star' : l));
    return sanitize(
      `${prefix}${relative.length === 0 ? 'apex' : relative.join('-')}-${s.type.toLowerCase()}`,
    );
  });
  const counts = new Map<string, number>();
  for (const b of bases) counts.set(b, (counts.get(b) ?? 0) + 1);
  const names = bases.map((b, i) => {
    const s = sets[i]!;
    if (counts.get(b) === 1 && b.length <= MAX_RESOURCE_NAME && b.length > 0) return b;
    return withHash(b, `${nameKey(s.owner)} ${s.type}`, 6);
  });
  // A hash prefix can in theory still collide; lengthen it until every name is unique.
  const seen = new Set<string>();
  return names.map((n, i) => {
    let name = n;
    for (let len = 10; seen.has(name); len += 4) {
      name = withHash(bases[i]!, `${nameKey(sets[i]!.owner)} ${sets[i]!.type}`, len);
    }
    seen.add(name);
    return name;
  });
}

function sanitize(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '');
}

function withHash(base: string, input: string, length: number): string {
  const hash = createHash('sha256').update(input).digest('hex').slice(0, length);
  const head = base.slice(0, MAX_RESOURCE_NAME - length - 1).replace(/-+$/, '');
  return head.length > 0 ? `${head}-${hash}` : `rr-${hash}`;
}

/**
 * Multi-document YAML of the result: the DNSZone, then the record sets in canonical order, after a
 * header comment. Plain `yaml` output, long strings unfolded.
 */
export function zoneImportYaml(result: ZoneImportResult, header: readonly string[]): string {
  const docs = [result.zone, ...result.recordSets].map((r) => stringify(r, { lineWidth: 0 }));
  const comment = header.map((l) => (l === '' ? '#' : `# ${l}`)).join('\n');
  return `${comment}\n${docs.join('---\n')}`;
}
