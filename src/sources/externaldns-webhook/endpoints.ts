/**
 * ExternalDNS endpoints (`sigs.k8s.io/external-dns/endpoint.Endpoint` as its webhook protocol carries
 * them in JSON) and record sets: an endpoint `{dnsName, targets, recordType, recordTTL}` is one RRset
 * — its absolute name, type, TTL and records in RFC 1035 presentation format — and its `setIdentifier`,
 * `labels` and `providerSpecific` are kept beside it in one annotation so that `GET /records` lists
 * back exactly what was written. Pure: no I/O.
 */

import { recordToTarget, targetsToRecords } from '../../api/frontdoors/externaldns/targets.ts';
import type { DNSRecordSet } from '../../api/index.ts';
import { isRecordTypeName, type RecordTypeName } from '../../dns/rrtype.ts';
import type { RecordChange } from '../../writes/write-request.ts';

/** Where an endpoint's own fields are kept on its record set (JSON of `EndpointExtras`). */
export const ENDPOINT_ANNOTATION = 'write.dns.zonekeeper.dev/externaldns-endpoint';

/** One endpoint as ExternalDNS sends and expects it (JSON field names of its Go struct). */
export interface Endpoint {
  dnsName: string;
  targets?: string[];
  recordType: string;
  setIdentifier?: string;
  recordTTL?: number;
  labels?: Record<string, string>;
  providerSpecific?: { name: string; value: string }[];
}

/** What the annotation keeps: the fields a record set has no place for, and the targets as written. */
interface EndpointExtras {
  targets: string[];
  setIdentifier?: string;
  labels?: Record<string, string>;
  providerSpecific?: { name: string; value: string }[];
}

/** Record types an endpoint may have here (ExternalDNS's managed types, and what this server serves). */
const TYPES = new Set<RecordTypeName>([
  'A',
  'AAAA',
  'CNAME',
  'TXT',
  'MX',
  'SRV',
  'NS',
  'PTR',
  'CAA',
  'NAPTR',
]);

/** An endpoint that cannot become a record set, and why. */
export class EndpointError extends Error {
  readonly code: 'INVALID_CHANGE';
  constructor(message: string) {
    super(message);
    this.code = 'INVALID_CHANGE';
  }
}

const LIMITS = { targets: 1000, labels: 64, providerSpecific: 64, field: 4096 } as const;

/** Checks the shape of one endpoint of a body (the JSON may hold anything). */
export function parseEndpoint(value: unknown, at: string): Endpoint {
  const bad = (message: string) => new EndpointError(`${at}: ${message}`);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw bad('expected an endpoint object with dnsName, recordType and targets');
  const v = value as Record<string, unknown>;
  const str = (field: string, max: number = LIMITS.field) => {
    const x = v[field];
    if (x === undefined || x === null) return undefined;
    if (typeof x !== 'string' || x.length > max)
      throw bad(`${field} must be a string of at most ${max} characters`);
    return x;
  };
  const dnsName = str('dnsName', 1024);
  if (!dnsName) throw bad('dnsName is required');
  const recordType = str('recordType', 16);
  if (!recordType) throw bad('recordType is required');
  const out: Endpoint = { dnsName, recordType };
  if (v.targets !== undefined && v.targets !== null) {
    if (
      !Array.isArray(v.targets) ||
      v.targets.length > LIMITS.targets ||
      v.targets.some((t) => typeof t !== 'string' || t.length > LIMITS.field)
    )
      throw bad(`targets must be a list of at most ${LIMITS.targets} strings`);
    out.targets = v.targets as string[];
  }
  const setIdentifier = str('setIdentifier', 253);
  if (setIdentifier) out.setIdentifier = setIdentifier;
  if (v.recordTTL !== undefined && v.recordTTL !== null) {
    if (typeof v.recordTTL !== 'number' || !Number.isInteger(v.recordTTL) || v.recordTTL < 0)
      throw bad('recordTTL must be a whole number of seconds');
    if (v.recordTTL > 0) out.recordTTL = v.recordTTL;
  }
  if (v.labels !== undefined && v.labels !== null) {
    const l = v.labels;
    if (
      typeof l !== 'object' ||
      Array.isArray(l) ||
      Object.keys(l).length > LIMITS.labels ||
      Object.entries(l).some(([k, x]) => k.length > 253 || typeof x !== 'string' || x.length > LIMITS.field)
    )
      throw bad(`labels must be a map of at most ${LIMITS.labels} strings`);
    if (Object.keys(l).length > 0) out.labels = l as Record<string, string>;
  }
  if (v.providerSpecific !== undefined && v.providerSpecific !== null) {
    const p = v.providerSpecific;
    if (
      !Array.isArray(p) ||
      p.length > LIMITS.providerSpecific ||
      p.some(
        (x) =>
          typeof x !== 'object' ||
          x === null ||
          typeof (x as { name?: unknown }).name !== 'string' ||
          ((x as { value?: unknown }).value !== undefined &&
            typeof (x as { value?: unknown }).value !== 'string'),
      )
    )
      throw bad(`providerSpecific must be a list of at most ${LIMITS.providerSpecific} {name, value}`);
    if (p.length > 0)
      out.providerSpecific = (p as { name: string; value?: string }[]).map((x) => ({
        name: x.name,
        value: x.value ?? '',
      }));
  }
  return out;
}

/** The endpoint's absolute owner name (ExternalDNS writes names without the trailing dot). */
export function endpointFqdn(e: Endpoint): string {
  return e.dnsName.endsWith('.') ? e.dnsName : `${e.dnsName}.`;
}

/** The endpoint's record type, when this server can hold it. */
export function endpointType(e: Endpoint): RecordTypeName {
  const type = e.recordType.toUpperCase();
  if (!isRecordTypeName(type) || !TYPES.has(type))
    throw new EndpointError(
      `${e.dnsName} ${e.recordType}: record type ${JSON.stringify(e.recordType)} is not served here; use one of ${[...TYPES].join(', ')}`,
    );
  return type;
}

/** ExternalDNS's key of an endpoint within a plan: name, type and set identifier. */
export function endpointKey(e: Endpoint): string {
  return `${endpointFqdn(e).toLowerCase()} ${e.recordType.toUpperCase()} ${e.setIdentifier ?? ''}`;
}

/** Name and type: one RRset, whatever the set identifier. */
export function rrsetKey(e: Endpoint): string {
  return rrsetKeyOf(endpointFqdn(e), e.recordType);
}

/** `rrsetKey` of the RRset of `type` at `fqdn` (an endpoint's name with its final dot, `endpointFqdn`). */
export function rrsetKeyOf(fqdn: string, type: string): string {
  return `${fqdn.toLowerCase()} ${type.toUpperCase()}`;
}

/** The record types this provider writes. */
export const ENDPOINT_TYPES: ReadonlySet<RecordTypeName> = TYPES;

/** The upsert of the endpoint's RRset, with its extras in the annotation. */
export function endpointUpsert(e: Endpoint): RecordChange {
  const type = endpointType(e);
  const targets = e.targets ?? [];
  if (targets.length === 0) throw new EndpointError(`${e.dnsName} ${type}: an endpoint to write has targets`);
  const extras: EndpointExtras = { targets };
  if (e.setIdentifier) extras.setIdentifier = e.setIdentifier;
  if (e.labels) extras.labels = e.labels;
  if (e.providerSpecific) extras.providerSpecific = e.providerSpecific;
  return {
    op: 'upsert',
    name: endpointFqdn(e),
    type,
    ...(e.recordTTL ? { ttl: e.recordTTL } : {}),
    records: targetsToRecords(type, targets),
    annotations: { [ENDPOINT_ANNOTATION]: JSON.stringify(extras) },
  };
}

/**
 * The endpoint a record set written by this front door lists as: the targets as written when the
 * records are still what they made (else read from the records), and the extras kept beside them.
 */
export function recordSetEndpoint(rs: DNSRecordSet): Endpoint | undefined {
  const type = rs.spec.type as RecordTypeName;
  const fqdn = rs.spec.name ?? '';
  if (!fqdn.endsWith('.')) return undefined;
  let extras: EndpointExtras | undefined;
  try {
    const raw = rs.metadata.annotations?.[ENDPOINT_ANNOTATION];
    extras = raw ? (JSON.parse(raw) as EndpointExtras) : undefined;
  } catch {
    extras = undefined;
  }
  let targets: string[];
  if (
    extras &&
    Array.isArray(extras.targets) &&
    JSON.stringify(safeRecords(type, extras.targets)) === JSON.stringify(rs.spec.records)
  )
    targets = extras.targets;
  else {
    try {
      targets = rs.spec.records.map((r) => recordToTarget(type, r));
    } catch {
      return undefined;
    }
  }
  return {
    dnsName: fqdn.slice(0, -1),
    targets,
    recordType: type,
    ...(extras?.setIdentifier ? { setIdentifier: extras.setIdentifier } : {}),
    ...(rs.spec.ttl !== undefined ? { recordTTL: rs.spec.ttl } : {}),
    ...(extras?.labels ? { labels: extras.labels } : {}),
    ...(extras?.providerSpecific ? { providerSpecific: extras.providerSpecific } : {}),
  };
}

function safeRecords(type: RecordTypeName, targets: string[]): string[] | undefined {
  try {
    return targetsToRecords(type, targets);
  } catch {
    return undefined;
  }
}

export { quoteText, recordToTarget, targetsToRecords } from '../../api/frontdoors/externaldns/targets.ts';
