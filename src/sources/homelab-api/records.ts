/**
 * Zonekeeper as a provider of the homelab DNS webhook protocol: the translation between the protocol's
 * records (`{type, domain, subdomain, values, ttl, metadata}`) and the record writer's RRset changes,
 * and between the writer's refusals and the protocol's HTTP answers. No I/O.
 *
 * The owner name of a record is `subdomain.domain` (the domain itself for `@`). Which zone holds it is
 * decided as for every DNSRecordSet: the deepest served zone containing the name, if it delegates the
 * name to the caller's namespace (ADR 0003) — `domain` need not be a zone's origin.
 */

import { bytesFromBinary, utf8Binary } from '../../dns/octets.ts';
import { escapeQuotedText, MAX_CHARACTER_STRING } from '../../dns/presentation.ts';
import { parseRdata } from '../../dns/rdata.ts';
import {
  HOMELAB_RECORD_TYPES,
  type HomelabErrorCode,
  type HomelabRecordMetadata,
  type HomelabRecordResponse,
  type HomelabRecordType,
  recordFqdn,
} from '../../homelab-protocol/protocol.ts';
import type { RecordChange, WriteErrorCode } from '../../writes/write-request.ts';
import { WriteError } from '../../writes/write-request.ts';

/** TTL of a record that gives none: the protocol's default (a DNSClass without `defaultTTL`). */
export const DEFAULT_HOMELAB_TTL = 300;
/** MX preference when `metadata.priority` is absent (the reference client never sends it). */
export const DEFAULT_MX_PRIORITY = 10;
/** SRV priority and weight when absent; the port has no default (an SRV without one is refused). */
export const DEFAULT_SRV_PRIORITY = 0;
export const DEFAULT_SRV_WEIGHT = 0;
/** Values of one record, at most (the writer's own bound is 5,000 records per request). */
export const MAX_VALUES = 1000;
/** Characters of one value, at most (a TXT value of 4,000 octets is 16 character-strings). */
export const MAX_VALUE_LENGTH = 4000;

/** A refusal in the protocol's terms: the HTTP status and `error.code`. */
export class HomelabError extends Error {
  readonly status: number;
  readonly code: HomelabErrorCode | WriteErrorCode;
  readonly retryAfterSeconds?: number;

  constructor(
    status: number,
    code: HomelabErrorCode | WriteErrorCode,
    message: string,
    retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'HomelabError';
    this.status = status;
    this.code = code;
    if (retryAfterSeconds !== undefined) this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** A record identified by type, domain and subdomain, with its absolute owner name. */
export interface RecordId {
  type: HomelabRecordType;
  /** The domain as given, without a trailing dot. */
  domain: string;
  subdomain: string;
  /** `subdomain.domain.` (absolute, trailing dot). */
  fqdn: string;
}

/** A checked `POST /records` body: the change for the writer and the record to answer with. */
export interface ParsedUpsert {
  id: RecordId;
  change: RecordChange & { op: 'upsert' };
  record: HomelabRecordResponse;
}

/** One label: letters, digits, "_" and inner "-" (underscore labels for `_acme-challenge`, `_sip._tcp`). */
const LABEL = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;

function invalidRecord(message: string): HomelabError {
  return new HomelabError(400, 'INVALID_RECORD', message);
}
function invalidDomain(message: string): HomelabError {
  return new HomelabError(400, 'INVALID_DOMAIN', message);
}
function invalidValue(message: string): HomelabError {
  return new HomelabError(400, 'INVALID_VALUE', message);
}

function checkLabels(text: string, what: string, wildcard: boolean): void {
  const labels = text.split('.');
  for (const [i, label] of labels.entries()) {
    if (wildcard && i === 0 && label === '*') continue;
    if (!LABEL.test(label))
      throw invalidDomain(
        `${what} ${JSON.stringify(text)}: label ${JSON.stringify(label)} is not 1-63 letters, digits, "_" or inner "-"`,
      );
  }
}

/** The record type of a request or path: one of the seven the protocol knows. */
export function parseType(type: unknown): HomelabRecordType {
  if (typeof type !== 'string' || !(HOMELAB_RECORD_TYPES as readonly string[]).includes(type))
    throw invalidRecord(
      `type ${JSON.stringify(type)} is not supported; use one of ${HOMELAB_RECORD_TYPES.join(', ')}`,
    );
  return type as HomelabRecordType;
}

/**
 * Checks `domain` (a domain name, trailing dot optional) and `subdomain` (`@` for the domain itself,
 * or one or more labels, `*` allowed leftmost) and returns the record's identity.
 */
export function recordId(type: HomelabRecordType, domain: unknown, subdomain: unknown): RecordId {
  if (typeof domain !== 'string' || domain.length === 0)
    throw invalidDomain('domain is required: a domain name such as example.com');
  if (typeof subdomain !== 'string' || subdomain.length === 0)
    throw invalidDomain('subdomain is required: a label such as www, or "@" for the domain itself');
  const bare = domain.endsWith('.') ? domain.slice(0, -1) : domain;
  if (bare.length === 0 || bare.length > 253)
    throw invalidDomain(`domain ${JSON.stringify(domain)} is not a domain name (1-253 characters)`);
  checkLabels(bare, 'domain', false);
  if (subdomain !== '@') checkLabels(subdomain, 'subdomain', true);
  const fqdn = recordFqdn(bare, subdomain);
  if (fqdn.length > 253)
    throw invalidDomain(`${fqdn} is longer than a domain name may be (253 characters, RFC 1035 §2.3.4)`);
  return { type, domain: bare, subdomain, fqdn: `${fqdn}.` };
}

/** A name value (CNAME, NS, MX and SRV targets): absolute, trailing dot optional in the request. */
function nameValue(value: string, index: number, type: string): string {
  if (value === '.' && (type === 'MX' || type === 'SRV')) return '.';
  const bare = value.endsWith('.') ? value.slice(0, -1) : value;
  if (bare.length === 0 || bare.length > 253)
    throw invalidValue(`values[${index}] ${JSON.stringify(value)} is not a domain name`);
  for (const label of bare.split('.'))
    if (!LABEL.test(label))
      throw invalidValue(
        `values[${index}] ${JSON.stringify(value)}: label ${JSON.stringify(label)} is not 1-63 letters, digits, "_" or inner "-"`,
      );
  return `${bare}.`;
}

/** A TXT value as one record: its UTF-8 octets in quoted character-strings of at most 255 octets. */
export function txtPresentation(value: string): string {
  const octets = utf8Binary(value);
  if (octets.length === 0) return '""';
  const parts: string[] = [];
  for (let i = 0; i < octets.length; i += MAX_CHARACTER_STRING)
    parts.push(`"${escapeQuotedText(octets.slice(i, i + MAX_CHARACTER_STRING))}"`);
  return parts.join(' ');
}

function metadataNumber(
  metadata: Record<string, unknown> | undefined,
  field: 'priority' | 'weight' | 'port',
  fallback: number | undefined,
  type: string,
): number {
  const v = metadata?.[field];
  if (v === undefined || v === null) {
    if (fallback === undefined)
      throw invalidRecord(`${type} needs metadata.${field} (0-65535); the record's values are target names`);
    return fallback;
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 65535)
    throw invalidValue(`metadata.${field} must be a whole number from 0 to 65535`);
  return v;
}

/**
 * Checks a `POST /records` body and turns it into one upsert of the whole RRset. Metadata defaults:
 * MX priority 10; SRV priority 0 and weight 0, the port required.
 */
export function parseUpsert(body: unknown): ParsedUpsert {
  if (!isObject(body)) throw invalidRecord('expected a JSON object {"record": {...}, "operation": "upsert"}');
  if (body.operation !== undefined && body.operation !== 'upsert')
    throw invalidRecord(
      `operation ${JSON.stringify(body.operation)} is not supported; POST /records upserts, DELETE /records/{type}/{domain}/{subdomain} deletes`,
    );
  const r = body.record;
  if (!isObject(r)) throw invalidRecord('record is required: {type, domain, subdomain, values, ttl}');
  const type = parseType(r.type);
  const id = recordId(type, r.domain, r.subdomain);
  if (!Array.isArray(r.values) || r.values.length === 0)
    throw invalidValue('values must be a non-empty list of strings');
  if (r.values.length > MAX_VALUES) throw invalidValue(`a record holds at most ${MAX_VALUES} values`);
  const values: string[] = [];
  for (const [i, v] of r.values.entries()) {
    if (typeof v !== 'string') throw invalidValue(`values[${i}] must be a string`);
    if (v.length > MAX_VALUE_LENGTH)
      throw invalidValue(`values[${i}] is longer than ${MAX_VALUE_LENGTH} characters`);
    values.push(v);
  }
  let ttl = DEFAULT_HOMELAB_TTL;
  if (r.ttl !== undefined && r.ttl !== null) {
    if (typeof r.ttl !== 'number' || !Number.isInteger(r.ttl) || r.ttl < 0 || r.ttl > 2_147_483_647)
      throw invalidRecord('ttl must be a whole number of seconds from 0 to 2147483647');
    ttl = r.ttl;
  }
  if (r.metadata !== undefined && r.metadata !== null && !isObject(r.metadata))
    throw invalidRecord('metadata must be an object {priority, weight, port}');
  const metadata = isObject(r.metadata) ? r.metadata : undefined;
  let records: string[];
  const meta: HomelabRecordMetadata = {};
  switch (type) {
    case 'A':
    case 'AAAA':
      records = values.map((v, i) => {
        try {
          parseRdata(type, v, '.');
        } catch (e) {
          throw invalidValue(
            `values[${i}] ${JSON.stringify(v)} is not an ${type === 'A' ? 'IPv4' : 'IPv6'} address (${(e as Error).message})`,
          );
        }
        if (/\s/.test(v)) throw invalidValue(`values[${i}] ${JSON.stringify(v)} holds whitespace`);
        return v;
      });
      break;
    case 'CNAME':
      if (values.length !== 1)
        throw invalidValue(`a CNAME has exactly one value (RFC 1034 §3.6.2), not ${values.length}`);
      records = [nameValue(values[0]!, 0, type)];
      break;
    case 'NS':
      records = values.map((v, i) => nameValue(v, i, type));
      break;
    case 'MX': {
      const priority = metadataNumber(metadata, 'priority', DEFAULT_MX_PRIORITY, type);
      meta.priority = priority;
      records = values.map((v, i) => `${priority} ${nameValue(v, i, type)}`);
      break;
    }
    case 'SRV': {
      const priority = metadataNumber(metadata, 'priority', DEFAULT_SRV_PRIORITY, type);
      const weight = metadataNumber(metadata, 'weight', DEFAULT_SRV_WEIGHT, type);
      const port = metadataNumber(metadata, 'port', undefined, type);
      Object.assign(meta, { priority, weight, port });
      records = values.map((v, i) => `${priority} ${weight} ${port} ${nameValue(v, i, type)}`);
      break;
    }
    case 'TXT':
      records = values.map(txtPresentation);
      break;
  }
  const seen = new Map<string, number>();
  for (const [i, rec] of records.entries()) {
    const key = type === 'TXT' ? rec : rec.toLowerCase();
    const first = seen.get(key);
    if (first !== undefined)
      throw invalidValue(`values[${i}] repeats values[${first}]; a record set holds each value once`);
    seen.set(key, i);
  }
  return {
    id,
    change: { op: 'upsert', name: id.fqdn, type, ttl, records },
    record: {
      type,
      domain: id.domain,
      subdomain: id.subdomain,
      fqdn: id.fqdn.slice(0, -1),
      values,
      ttl,
      ...(Object.keys(meta).length > 0 ? { metadata: meta } : {}),
    },
  };
}

/**
 * A stored record set as the protocol's record: names without the trailing dot, TXT strings joined and
 * decoded as UTF-8, MX and SRV numbers in `metadata` (those of the first record).
 */
export function recordFromRecordSet(
  id: RecordId,
  spec: { ttl?: number | undefined; records: readonly string[] },
): HomelabRecordResponse {
  const values: string[] = [];
  const meta: HomelabRecordMetadata = {};
  const bare = (name: string) => (name.length > 1 && name.endsWith('.') ? name.slice(0, -1) : name);
  for (const text of spec.records) {
    const rdata = parseRdata(id.type, text, id.fqdn);
    switch (rdata.type) {
      case 'A':
      case 'AAAA':
        // As written (an IPv6 address keeps the caller's spelling), so a client comparing sees no drift.
        values.push(text);
        break;
      case 'CNAME':
        values.push(bare(rdata.target));
        break;
      case 'NS':
        values.push(bare(rdata.host));
        break;
      case 'MX':
        if (meta.priority === undefined) meta.priority = rdata.preference;
        values.push(bare(rdata.exchange));
        break;
      case 'SRV':
        if (meta.priority === undefined)
          Object.assign(meta, { priority: rdata.priority, weight: rdata.weight, port: rdata.port });
        values.push(bare(rdata.target));
        break;
      case 'TXT':
        values.push(Buffer.from(bytesFromBinary(rdata.strings.join(''))).toString('utf8'));
        break;
      default:
        values.push(text);
    }
  }
  return {
    type: id.type,
    domain: id.domain,
    subdomain: id.subdomain,
    fqdn: id.fqdn.slice(0, -1),
    values,
    ttl: spec.ttl ?? DEFAULT_HOMELAB_TTL,
    ...(Object.keys(meta).length > 0 ? { metadata: meta } : {}),
  };
}

/** The record writer's refusal in the protocol's terms: the writer's stable code, a fitting status. */
export function fromWriteError(e: unknown): HomelabError {
  if (!(e instanceof WriteError))
    // Store or Kubernetes error text stays in the server's log (the front door logs it).
    return new HomelabError(
      500,
      'SERVER_ERROR',
      "the record could not be written (SERVER_ERROR); retry, and if it persists the server's logs say why",
    );
  switch (e.code) {
    case 'INVALID_CHANGE':
    case 'DUPLICATE_CHANGE':
      return new HomelabError(400, 'INVALID_RECORD', e.message);
    case 'NOT_DELEGATED':
    case 'NOT_OWNER':
    case 'NAME_CONFLICT':
    case 'QUOTA_EXCEEDED':
    case 'UNKNOWN_CREDENTIAL':
      return new HomelabError(403, e.code, e.message);
    case 'REPLAYED':
    case 'PRECONDITION_FAILED':
      return new HomelabError(409, e.code, e.message);
    case 'REQUEST_TOO_LARGE':
      return new HomelabError(413, e.code, e.message);
    case 'RATE_LIMITED':
      return new HomelabError(429, e.code, e.message, e.retryAfterSeconds);
    case 'UNAVAILABLE':
      return new HomelabError(503, e.code, e.message, e.retryAfterSeconds);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
