/**
 * The homelab DNS webhook protocol's messages: record types, the request and response bodies, the
 * error codes and the record paths. Pure.
 */

export const HOMELAB_RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'TXT', 'MX', 'SRV', 'NS'] as const;
export type HomelabRecordType = (typeof HOMELAB_RECORD_TYPES)[number];

/** Error codes a provider answers with (`error.code`). */
export const HOMELAB_ERROR_CODES = [
  'INVALID_RECORD',
  'INVALID_DOMAIN',
  'INVALID_VALUE',
  'RECORD_NOT_FOUND',
  'SERVER_ERROR',
  'AUTH_FAILED',
  'TIMESTAMP_STALE',
  'NONCE_REUSED',
  'RATE_LIMITED',
  'QUOTA_EXCEEDED',
] as const;
export type HomelabErrorCode = (typeof HOMELAB_ERROR_CODES)[number];

/**
 * Zonekeeper's additive extension: MX priority and SRV priority/weight/port travel in
 * `record.metadata`. Providers that do not know it ignore it.
 */
export interface HomelabRecordMetadata {
  priority?: number;
  weight?: number;
  port?: number;
}

/** `record` in `POST /records`. */
export interface HomelabRecord {
  type: HomelabRecordType;
  domain: string;
  subdomain: string;
  values: string[];
  ttl?: number;
  metadata?: HomelabRecordMetadata;
}

/** `record` in a response: the request's record with its `fqdn`. */
export interface HomelabRecordResponse extends HomelabRecord {
  fqdn: string;
}

export interface HomelabUpsertRequest {
  record: HomelabRecord;
  operation: 'upsert';
}

export interface HomelabErrorBody {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export interface HomelabResponse {
  success: boolean;
  record?: HomelabRecordResponse;
  message?: string;
  error?: HomelabErrorBody;
}

export interface HomelabHealthResponse {
  status: string;
  message?: string;
  timestamp?: string;
}

export const HEALTH_PATH = '/health';
export const RECORDS_PATH = '/records';

/**
 * The path of one record, formatted as the reference client does: not percent-escaped, so the apex is
 * `/records/MX/example.com/@`. This exact string is what is signed.
 */
export function recordPath(type: string, domain: string, subdomain: string): string {
  return `${RECORDS_PATH}/${type}/${domain}/${subdomain}`;
}

/** The FQDN of a record: the domain itself for `@`, else `subdomain.domain`. */
export function recordFqdn(domain: string, subdomain: string): string {
  return subdomain === '@' || subdomain === '' ? domain : `${subdomain}.${domain}`;
}
