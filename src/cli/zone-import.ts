import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { validateResource } from '../api/index.ts';
import { PowerDnsClient } from '../backends/powerdns/client.ts';
import { parsePowerDnsContent } from '../backends/powerdns/content.ts';
import { type Name, parseName } from '../dns/name.ts';
import { recordTypeOfCode } from '../dns/rdata.ts';
import { className as classNameOf, isRecordTypeName, typeName } from '../dns/rrtype.ts';
import { parseTsigKey, type TsigKey } from '../dns/tsig.ts';
import { formatZoneFileProblem, parseZoneFile, type ZoneFileRecord } from '../dns/zone-file-parser.ts';
import { axfr } from '../server/transfer/axfr-client.ts';
import { readManifests } from '../sources/manifests/load-manifests.ts';
import { splitHostPort } from '../util/host-port.ts';
import { importZone, type ZoneImportProblem, zoneImportYaml } from '../zones/zone-import.ts';

/** Default time limit of a live import (AXFR or PowerDNS API), and the default record limit. */
export const DEFAULT_IMPORT_TIMEOUT_MS = 30_000;
export const DEFAULT_IMPORT_MAX_RECORDS = 1_000_000;

/** Where the zone is read from: a zone file, a primary by AXFR, or PowerDNS's HTTP API. */
export type ZoneImportSource =
  | { file: string }
  | { axfr: string; tsigKey?: string }
  | { powerdns: string; apiKeyFile: string; serverId?: string };

export interface ZoneImportCliOptions {
  source: ZoneImportSource;
  zone: string;
  namespace: string;
  className?: string;
  /** DNSZone resource name. */
  name?: string;
  /** DNSRecordSet name prefix; default `<zone resource name>-`. */
  prefix?: string;
  /** Any skipped record is an error. */
  strict?: boolean;
  /** A manifests folder or file holding the DNSZoneClass, to compare SOA MNAME and apex NS with. */
  manifests?: string;
  /** Live sources: the time limit of the whole read (default 30 s). */
  timeoutMs?: number;
  /** Live sources: more records than this are refused (default 1,000,000). */
  maxRecords?: number;
  now?: Date;
}

/** The records read from a source, with what could not be read, and how to name the source. */
interface ReadZone {
  records: ZoneFileRecord[];
  problems: ZoneImportProblem[];
  /** Names the source in the YAML header and in problems. */
  label: string;
  /** Problems name a record's position in the source (`record N`), not a file line. */
  live: boolean;
}

/**
 * `zonekeeper zone import`: a zone file becomes a DNSZone and DNSRecordSets (YAML on `out`); problems
 * go to `err`, one per line with file and line. Exit 1 (and no YAML) when there are errors, or with
 * `strict` when any record was skipped.
 */
export async function runZoneImport(
  options: ZoneImportCliOptions,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  let origin: string;
  try {
    origin = parseName(options.zone.endsWith('.') ? options.zone : `${options.zone}.`);
  } catch (e) {
    err.write(`error: --zone ${JSON.stringify(options.zone)}: ${(e as Error).message}\n`);
    return 1;
  }
  let read: ReadZone;
  try {
    read = await readSource(options, origin);
  } catch (e) {
    err.write(`error: ${(e as Error).message}\n`);
    return 1;
  }

  const className = options.className ?? 'builtin';
  let classNameServers: string[] | undefined;
  let managedChildZones: string[] = [];
  if (options.manifests !== undefined) {
    const known = await readKnown(options.manifests, className);
    classNameServers = known.nameServers;
    managedChildZones = known.zones;
    if (classNameServers === undefined) {
      err.write(
        `warning: no valid DNSZoneClass ${className} in ${options.manifests}; the SOA MNAME and apex NS are not compared\n`,
      );
    }
  }
  const result = importZone(read.records, {
    zone: origin,
    namespace: options.namespace,
    className,
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.prefix !== undefined ? { prefix: options.prefix } : {}),
    ...(classNameServers ? { classNameServers } : {}),
    managedChildZones,
    ...(options.now ? { now: options.now } : {}),
  });

  const problems: ZoneImportProblem[] = [...read.problems, ...result.problems].map((p) =>
    options.strict && p.skipped && p.severity !== 'error' ? { ...p, severity: 'error' } : p,
  );
  problems.sort((a, b) =>
    a.file === b.file ? (a.line ?? 0) - (b.line ?? 0) : a.file === undefined ? 1 : -1,
  );
  for (const p of problems) err.write(`${formatImportProblem(p, read.live)}\n`);
  const count = (s: string) => problems.filter((p) => p.severity === s).length;
  const errors = count('error');
  const skipped = problems.filter((p) => p.skipped).length;
  err.write(
    `${read.records.length} record(s) read from ${read.label}; 1 DNSZone and ${result.recordSets.length} DNSRecordSet(s); ` +
      `${errors} error(s), ${count('warning')} warning(s), ${count('note')} note(s); ${skipped} skipped\n`,
  );
  if (errors > 0) {
    err.write(
      'no YAML written: fix the errors above' +
        (options.strict ? ' (--strict: skipped content is an error)' : '') +
        '\n',
    );
    return 1;
  }
  out.write(
    zoneImportYaml(result, [
      `${origin} imported by \`zonekeeper zone import\` from ${read.label}`,
      `into namespace ${options.namespace}, DNSZoneClass ${className}.`,
      'Not imported (generated by Zonekeeper): the SOA serial and MNAME, and the apex NS records.',
    ]),
  );
  return 0;
}

function formatImportProblem(p: ZoneImportProblem, live: boolean): string {
  if (live && p.file !== undefined && p.line !== undefined)
    return `${p.file}, record ${p.line}: ${p.severity}: ${p.message} [${p.code}]`;
  if (p.file !== undefined && p.line !== undefined) {
    return formatZoneFileProblem({ ...p, file: p.file, line: p.line });
  }
  return `${p.file ?? 'zone'}: ${p.severity}: ${p.message} [${p.code}]`;
}

/** From existing manifests: the class's nameServers, and the domains of every DNSZone (child zones). */
async function readKnown(
  manifests: string,
  className: string,
): Promise<{ nameServers: string[] | undefined; zones: string[] }> {
  const read = await readManifests([manifests]);
  let nameServers: string[] | undefined;
  const zones: string[] = [];
  for (const doc of read.documents) {
    const result = validateResource(doc.value);
    if (!result.ok) continue;
    const r = result.resource;
    if (r.kind === 'DNSZoneClass' && r.metadata.name === className) nameServers ??= r.spec.nameServers;
    if (r.kind === 'DNSZone') zones.push(r.spec.domainName);
  }
  return { nameServers, zones };
}

async function readSource(options: ZoneImportCliOptions, origin: Name): Promise<ReadZone> {
  const source = options.source;
  const timeoutMs = options.timeoutMs ?? DEFAULT_IMPORT_TIMEOUT_MS;
  const maxRecords = options.maxRecords ?? DEFAULT_IMPORT_MAX_RECORDS;
  if ('file' in source) {
    let text: string;
    try {
      text = await readFile(source.file, 'utf8');
    } catch (e) {
      throw new Error(`${source.file}: cannot read: ${(e as Error).message}`);
    }
    // $INCLUDE paths are relative to the folder of the file that includes them.
    const parsed = parseZoneFile(text, {
      file: source.file,
      origin,
      include: (p, from) => {
        const file = path.isAbsolute(p) ? path.normalize(p) : path.join(path.dirname(from), p);
        return { file, text: readFileSync(file, 'utf8') };
      },
    });
    return {
      records: parsed.records,
      problems: parsed.problems,
      label: path.basename(source.file),
      live: false,
    };
  }
  if ('axfr' in source) return readAxfr(source, origin, timeoutMs, maxRecords);
  return readPowerDns(source, origin, timeoutMs, maxRecords);
}

/** `--tsig-key NAME:ALG:SECRET_FILE`: the secret (base64) read from the file. */
export async function readTsigKeyOption(text: string): Promise<TsigKey> {
  const first = text.indexOf(':');
  const second = text.indexOf(':', first + 1);
  if (first <= 0 || second <= first + 1 || second === text.length - 1)
    throw new Error(
      `--tsig-key ${JSON.stringify(text)}: give NAME:ALGORITHM:SECRET_FILE, e.g. transfer-key:hmac-sha256:/etc/zonekeeper/transfer.key`,
    );
  const file = text.slice(second + 1);
  let secret: string;
  try {
    secret = (await readFile(file, 'utf8')).trim();
  } catch (e) {
    throw new Error(`--tsig-key: cannot read the secret file ${file}: ${(e as Error).message}`);
  }
  try {
    return parseTsigKey({ name: text.slice(0, first), algorithm: text.slice(first + 1, second), secret });
  } catch (e) {
    throw new Error(`--tsig-key: ${(e as Error).message}`);
  }
}

async function readAxfr(
  source: { axfr: string; tsigKey?: string },
  origin: Name,
  timeoutMs: number,
  maxRecords: number,
): Promise<ReadZone> {
  const { host, port } = splitHostPort(source.axfr, 53);
  if (host === '' || !Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`--axfr ${JSON.stringify(source.axfr)}: give HOST:PORT, e.g. 192.0.2.1:53`);
  const key = source.tsigKey !== undefined ? await readTsigKeyOption(source.tsigKey) : undefined;
  const result = await axfr({ host, port, zone: origin, ...(key ? { key } : {}), timeoutMs, maxRecords });
  const label = `AXFR from ${source.axfr}${key ? ` (TSIG ${key.name})` : ''}`;
  const records: ZoneFileRecord[] = [];
  const problems: ZoneImportProblem[] = [];
  result.records.forEach((rr, i) => {
    const at = { file: label, line: i + 1 };
    const type = recordTypeOfCode(rr.type);
    if (rr.class !== 1) {
      problems.push({
        ...at,
        severity: 'warning',
        code: 'UNSUPPORTED_CLASS',
        message: `${rr.name} ${typeName(rr.type)} in class ${classNameOf(rr.class)}; only IN is served; skipped`,
        skipped: true,
      });
      return;
    }
    if (type === undefined || typeof rr.data.type !== 'string') {
      problems.push({
        ...at,
        severity: 'warning',
        code: 'UNSUPPORTED_TYPE',
        message: `${rr.name} ${typeName(rr.type)}: a type Zonekeeper does not serve; skipped`,
        skipped: true,
      });
      return;
    }
    records.push({ owner: rr.name, ttl: rr.ttl, class: 'IN', type, rdata: rr.data, ...at });
  });
  return { records, problems, label, live: true };
}

async function readPowerDns(
  source: { powerdns: string; apiKeyFile: string; serverId?: string },
  origin: Name,
  timeoutMs: number,
  maxRecords: number,
): Promise<ReadZone> {
  let url: URL;
  try {
    url = new URL(source.powerdns);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http or https');
  } catch (e) {
    throw new Error(
      `--powerdns ${JSON.stringify(source.powerdns)}: give the URL of its webserver, e.g. http://127.0.0.1:8081 (${(e as Error).message})`,
    );
  }
  const client = new PowerDnsClient({
    url: source.powerdns,
    serverId: source.serverId ?? 'localhost',
    timeoutMs,
    apiKey: async () => {
      try {
        return (await readFile(source.apiKeyFile, 'utf8')).trim();
      } catch (e) {
        throw new Error(`cannot read --api-key-file ${source.apiKeyFile}: ${(e as Error).message}`);
      }
    },
  });
  const label = `PowerDNS ${client.url} (server ${client.serverId})`;
  interface Zone {
    name: string;
    rrsets?: {
      name: string;
      type: string;
      ttl: number;
      records: { content: string; disabled?: boolean }[];
    }[];
  }
  let zone: Zone;
  try {
    const response = await client.request('GET', client.zonePath(origin), `reading zone ${origin}`, {
      expect: [404, 422],
    });
    if (response.status === 404 || response.status === 422)
      throw new Error(`${label} has no zone ${origin} (HTTP ${response.status})`);
    zone = client.parse<Zone>(response, `reading zone ${origin}`);
  } finally {
    client.close();
  }
  const records: ZoneFileRecord[] = [];
  const problems: ZoneImportProblem[] = [];
  let n = 0;
  const total = (zone.rrsets ?? []).reduce((sum, r) => sum + (r.records?.length ?? 0), 0);
  if (total > maxRecords)
    throw new Error(
      `${label}: zone ${origin} has ${total} records, more than ${maxRecords}; refused (raise --max-records if it really is that large)`,
    );
  // PowerDNS lists RRsets in its own order; they are read in canonical order of name, then type.
  const rrsets = [...(zone.rrsets ?? [])].sort((a, b) =>
    a.name === b.name ? (a.type < b.type ? -1 : 1) : a.name < b.name ? -1 : 1,
  );
  for (const rrset of rrsets) {
    let owner: Name;
    try {
      owner = parseName(rrset.name);
    } catch (e) {
      problems.push({
        file: label,
        line: ++n,
        severity: 'warning',
        code: 'BAD_OWNER',
        message: `${rrset.name}: ${(e as Error).message}; skipped`,
        skipped: true,
      });
      continue;
    }
    for (const record of rrset.records ?? []) {
      const at = { file: label, line: ++n };
      const what = `${owner} ${rrset.type} ${record.content}`;
      if (record.disabled) {
        problems.push({
          ...at,
          severity: 'warning',
          code: 'DISABLED_RECORD',
          message: `${what} is disabled in PowerDNS (not served); skipped`,
          skipped: true,
        });
        continue;
      }
      if (!isRecordTypeName(rrset.type)) {
        problems.push({
          ...at,
          severity: 'warning',
          code: 'UNSUPPORTED_TYPE',
          message: `${what}: a type Zonekeeper does not serve; skipped`,
          skipped: true,
        });
        continue;
      }
      const rdata = parsePowerDnsContent(rrset.type, record.content, origin);
      if (rdata === undefined) {
        problems.push({
          ...at,
          severity: 'warning',
          code: 'UNREADABLE_CONTENT',
          message: `${what}: the content does not parse as ${rrset.type} (RFC 1035 §5.1 presentation format); skipped`,
          skipped: true,
        });
        continue;
      }
      records.push({ owner, ttl: rrset.ttl, class: 'IN', type: rrset.type, rdata, ...at });
    }
  }
  return { records, problems, label, live: true };
}
