/**
 * The benchmark zone: a deterministic mix of A, AAAA, CNAME, MX, TXT, SRV and wildcard record sets,
 * written as Zonekeeper manifests (one DNSZoneClass, DNSZones and multi-document files of
 * DNSRecordSets) and, through the project's own catalog, assembler and zone-file printer, as the
 * identical RFC 1035 zone file for Knot and PowerDNS.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../../src/api/index.ts';
import { API_VERSION } from '../../src/api/index.ts';
import type { RecordTypeName } from '../../src/dns/rrtype.ts';
import { type AssembledZone, assembleZone } from '../../src/zones/assemble.ts';
import { Catalog } from '../../src/zones/catalog.ts';
import { resourceKey } from '../../src/zones/resource-key.ts';
import { printZoneFile } from '../../src/zones/zone-file.ts';
import { zoneAssemblyInput } from '../../src/zones/zone-inputs.ts';

export const CLASS_NAME = 'bench';
export const TTL = 300;

/** One generated RRset (each DNSRecordSet holds exactly one record, so record sets = records). */
export interface GenRecord {
  /** Relative owner name (`h12`, `*.w95`, `_sip._tcp.s90`). */
  name: string;
  type: Extract<RecordTypeName, 'A' | 'AAAA' | 'CNAME' | 'MX' | 'TXT' | 'SRV'>;
  rdata: string;
}

export interface GenZone {
  /** DNSZone metadata.name and namespace. */
  key: { name: string; namespace: string };
  /** Absolute origin with trailing dot, e.g. `bench.example.`. */
  origin: string;
  records: GenRecord[];
}

/**
 * The record at index `i` of a zone. Indexes come in blocks of 100 whose shares are fixed, so every
 * prefix of the sequence has the same mix and every reference points to an earlier record:
 *
 * | slot in block | record set                                  | share |
 * | ---           | ---                                         | ---   |
 * | 0-54          | `h<i>` A                                    | 55 %  |
 * | 55-69         | `h<i-55>` AAAA (dual-stack h names 0-14)    | 15 %  |
 * | 70-79         | `c<i>` CNAME → `h<i-50>` (an A-only name)   | 10 %  |
 * | 80-84         | `m<i>` MX `10 h<i-50>`                      | 5 %   |
 * | 85-89         | `t<i>` TXT SPF-like text                    | 5 %   |
 * | 90-94         | `_sip._tcp.s<i>` SRV `10 5 5060 h<i-50>`    | 5 %   |
 * | 95-99         | `*.w<i>` A (wildcard)                       | 5 %   |
 */
export function recordAt(i: number, zoneSalt = 0): GenRecord {
  const slot = i % 100;
  const base = i - slot;
  const v4 = (n: number) => {
    const x = (n + zoneSalt * 7919) % 16_777_216;
    return `10.${(x >> 16) & 255}.${(x >> 8) & 255}.${x & 255}`;
  };
  const v6 = (n: number) => `2001:db8:${(zoneSalt % 65536).toString(16)}::${(n % 65536).toString(16)}`;
  if (slot < 55) return { name: `h${i}`, type: 'A', rdata: v4(i) };
  if (slot < 70) return { name: `h${base + slot - 55}`, type: 'AAAA', rdata: v6(i) };
  if (slot < 80) return { name: `c${i}`, type: 'CNAME', rdata: `h${i - 50}` };
  if (slot < 85) return { name: `m${i}`, type: 'MX', rdata: `10 h${i - 50}` };
  if (slot < 90) return { name: `t${i}`, type: 'TXT', rdata: `"v=spf1 ip4:${v4(i)} -all"` };
  if (slot < 95) return { name: `_sip._tcp.s${i}`, type: 'SRV', rdata: `10 5 5060 h${i - 50}` };
  return { name: `*.w${i}`, type: 'A', rdata: v4(i) };
}

/** Addresses of `ns1` and `ns2` for a zone whose class names them as its (in-zone) nameservers. */
export function nameServerRecords(): GenRecord[] {
  return [
    { name: 'ns1', type: 'A', rdata: '192.0.2.53' },
    { name: 'ns2', type: 'A', rdata: '192.0.2.54' },
  ];
}

/**
 * A zone of `count` generated record sets (plus the A records of `ns1`/`ns2` when `withNameServers`,
 * for zones whose class names in-zone nameservers).
 */
export function generateZone(
  origin: string,
  key: GenZone['key'],
  count: number,
  options: { salt?: number; withNameServers?: boolean } = {},
): GenZone {
  const records = options.withNameServers ? nameServerRecords() : [];
  for (let i = 0; i < count; i++) records.push(recordAt(i, options.salt ?? 0));
  return { key, origin, records };
}

// ---------------------------------------------------------------------------------------------------
// Manifests

const q = (s: string) => JSON.stringify(s);

export function classManifest(nameServers: string[]): string {
  return [
    `apiVersion: ${API_VERSION}`,
    'kind: DNSZoneClass',
    `metadata: { name: ${CLASS_NAME} }`,
    'spec:',
    '  backend: { builtin: {} }',
    `  nameServers: [${nameServers.map(q).join(', ')}]`,
    `  defaults: { ttl: ${TTL}, soa: { rname: "hostmaster@zonekeeper.test" } }`,
    '',
  ].join('\n');
}

/** `dnssec`: the zone signed by the built-in server (`spec.dnssec.enabled`, the default algorithm and keys). */
export function zoneManifest(zone: GenZone, dnssec = false): string {
  return [
    `apiVersion: ${API_VERSION}`,
    'kind: DNSZone',
    `metadata: { name: ${zone.key.name}, namespace: ${zone.key.namespace} }`,
    `spec: { domainName: ${q(zone.origin)}, className: ${CLASS_NAME}${dnssec ? ', dnssec: { enabled: true }' : ''} }`,
    '',
  ].join('\n');
}

/** metadata.name of record `index` of a zone: a DNS-1123 name unique within the namespace. */
export function recordSetName(zone: GenZone, index: number): string {
  return `${zone.key.name}-r${index}`;
}

export function recordManifest(zone: GenZone, index: number, rec: GenRecord): string {
  return (
    `apiVersion: ${API_VERSION}\nkind: DNSRecordSet\n` +
    `metadata: { name: ${recordSetName(zone, index)}, namespace: ${zone.key.namespace} }\n` +
    `spec: { zoneRef: { name: ${zone.key.name} }, name: ${q(rec.name)}, type: ${rec.type}, records: [${q(rec.rdata)}] }\n`
  );
}

/** Writes the zone's DNSZone and record sets as multi-document files of at most `perFile` documents. */
export function writeZoneManifests(dir: string, zone: GenZone, perFile = 5000, dnssec = false): string[] {
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  const head = path.join(dir, `${zone.key.name}-00-zone.yaml`);
  writeFileSync(head, zoneManifest(zone, dnssec));
  files.push(head);
  for (let start = 0, n = 0; start < zone.records.length; start += perFile, n++) {
    const docs: string[] = [];
    const end = Math.min(start + perFile, zone.records.length);
    for (let i = start; i < end; i++) docs.push(recordManifest(zone, i, zone.records[i]!));
    const file = path.join(dir, chunkFileName(zone, n));
    writeFileSync(file, docs.join('---\n'));
    files.push(file);
  }
  return files;
}

export function chunkFileName(zone: GenZone, chunk: number): string {
  return `${zone.key.name}-${String(chunk + 1).padStart(3, '0')}-records.yaml`;
}

// ---------------------------------------------------------------------------------------------------
// Zone file through the project's own code

function stamp(n: number): string {
  return new Date(Date.UTC(2026, 0, 1) + n).toISOString();
}

function toResources(zone: GenZone, nameServers: string[]) {
  const zoneClass: DNSZoneClass = {
    apiVersion: API_VERSION,
    kind: 'DNSZoneClass',
    metadata: { name: CLASS_NAME, generation: 1, creationTimestamp: stamp(0) },
    spec: {
      backend: { builtin: {} },
      nameServers,
      defaults: { ttl: TTL, soa: { rname: 'hostmaster@zonekeeper.test' } },
    },
  };
  const dnsZone: DNSZone = {
    apiVersion: API_VERSION,
    kind: 'DNSZone',
    metadata: { ...zone.key, generation: 1, creationTimestamp: stamp(1) },
    spec: { domainName: zone.origin, className: CLASS_NAME },
  };
  const recordSets: DNSRecordSet[] = zone.records.map((rec, i) => ({
    apiVersion: API_VERSION,
    kind: 'DNSRecordSet',
    metadata: {
      name: recordSetName(zone, i),
      namespace: zone.key.namespace,
      generation: 1,
      creationTimestamp: stamp(2 + i),
    },
    spec: { zoneRef: { name: zone.key.name }, name: rec.name, type: rec.type, records: [rec.rdata] },
  }));
  return { zoneClass, dnsZone, recordSets };
}

/**
 * Assembles the zone exactly as Zonekeeper does (Catalog → zoneAssemblyInput → assembleZone) and
 * checks that every record set was accepted.
 */
export function assemble(zone: GenZone, nameServers: string[]): AssembledZone {
  const { zoneClass, dnsZone, recordSets } = toResources(zone, nameServers);
  const catalog = new Catalog();
  catalog.setClass(zoneClass);
  catalog.setZone(dnsZone);
  for (const rs of recordSets) catalog.setRecord(rs);
  const input = zoneAssemblyInput(catalog, resourceKey(dnsZone.metadata));
  if (!input) throw new Error(`zone ${zone.origin} was not accepted by the catalog`);
  const assembled = assembleZone(input);
  if (assembled.acceptedCount !== recordSets.length) {
    const rejected = [...assembled.verdicts.values()].filter((v) => !v.accepted).slice(0, 5);
    throw new Error(
      `only ${assembled.acceptedCount} of ${recordSets.length} record sets accepted: ${JSON.stringify(rejected)}`,
    );
  }
  return assembled;
}

/**
 * The benchmarks' one-zone set-up: `records` generated record sets and the zone's name servers
 * (`ns1`, `ns2` under the origin) in `origin`, assembled as Zonekeeper does.
 */
export function assembledBenchZone(records: number, origin = 'bench.example.'): AssembledZone {
  return assemble(
    generateZone(origin, { name: 'bench', namespace: 'bench' }, records, { withNameServers: true }),
    [`ns1.${origin}`, `ns2.${origin}`],
  );
}

/** The zone file for Knot and PowerDNS (ALIAS never occurs in the generated zone). */
export function zoneFileText(assembled: AssembledZone, serial: number): string {
  return printZoneFile(assembled, serial, 'generated by bench/ from the same resources as the manifests');
}

/**
 * A folder of `zones` zones of records/zones record sets each (`z<N>.scale.example.`, namespace
 * `scale`) and their class, in files of at most `perFile` documents; returns how many record-set
 * files it wrote.
 */
export function writeScaleFolder(dir: string, records: number, zones: number, perFile: number): number {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, '00-class.yaml'), classManifest(['ns1.scale.example.', 'ns2.scale.example.']));
  const per = Math.max(1, Math.floor(records / zones));
  let file = 0;
  let docs: string[] = [];
  const flush = () => {
    if (docs.length === 0) return;
    writeFileSync(path.join(dir, `f${String(file++).padStart(5, '0')}.yaml`), docs.join('---\n'));
    docs = [];
  };
  for (let z = 0; z < zones; z++) {
    const zone = generateZone(`z${z}.scale.example.`, { name: `z${z}`, namespace: 'scale' }, per, {
      salt: z + 1,
    });
    docs.push(zoneManifest(zone));
    zone.records.forEach((r, i) => {
      docs.push(recordManifest(zone, i, r));
      if (docs.length >= perFile) flush();
    });
  }
  flush();
  return file;
}

/**
 * The class, `zones` zones (`z00001`…, namespace `scale`) and `records` record sets spread over
 * them, as objects (what a store holds after reading such a folder); `generation` set on zones and
 * record sets when given.
 */
export function scaleObjects(
  records: number,
  zones: number,
  generation?: number,
): (DNSZoneClass | DNSZone | DNSRecordSet)[] {
  const gen = generation !== undefined ? { generation } : {};
  const objects: (DNSZoneClass | DNSZone | DNSRecordSet)[] = [
    {
      apiVersion: API_VERSION,
      kind: 'DNSZoneClass',
      metadata: { name: CLASS_NAME },
      spec: {
        backend: { builtin: {} },
        nameServers: ['ns1.scale.example.', 'ns2.scale.example.'],
        defaults: { ttl: TTL, soa: { rname: 'hostmaster@zonekeeper.test' } },
      },
    },
  ];
  for (let z = 0; z < zones; z++) {
    const count = Math.floor(records / zones) + (z < records % zones ? 1 : 0);
    const name = `z${String(z + 1).padStart(5, '0')}`;
    const zone = generateZone(`${name}.scale.example.`, { name, namespace: 'scale' }, count, { salt: z + 1 });
    objects.push({
      apiVersion: API_VERSION,
      kind: 'DNSZone',
      metadata: { name, namespace: 'scale', ...gen },
      spec: { domainName: zone.origin, className: CLASS_NAME },
    });
    zone.records.forEach((rec, i) => {
      objects.push({
        apiVersion: API_VERSION,
        kind: 'DNSRecordSet',
        metadata: { name: recordSetName(zone, i), namespace: 'scale', ...gen },
        spec: { zoneRef: { name }, name: rec.name, type: rec.type, records: [rec.rdata] },
      });
    });
  }
  return objects;
}
