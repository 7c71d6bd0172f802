/**
 * The homelab DNS webhook protocol's request signature (`dns.homelab.mortenolsen.pro`), shared by the
 * client that pushes records to a provider and by Zonekeeper's own provider endpoint. Pure: it uses
 * `node:crypto` for HMAC and constant-time comparison, and does no I/O.
 *
 * The string signed is the method, the path exactly as the client formats it (unescaped, e.g.
 * `/records/MX/example.com/@`), the timestamp (RFC 3339, UTC, whole seconds), the nonce and, only when
 * the request has a body, the body, joined by "\n": no trailing newline, no empty fifth line without a
 * body. The MAC is HMAC (RFC 2104) with SHA-256 or SHA-512 keyed by the secret's bytes, sent as
 * lowercase hex.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const HEADER_TIMESTAMP = 'X-DNS-Timestamp';
export const HEADER_NONCE = 'X-DNS-Nonce';
export const HEADER_SIGNATURE = 'X-DNS-Signature';

export type HmacAlgorithm = 'SHA256' | 'SHA512';
export const HMAC_ALGORITHMS: readonly HmacAlgorithm[] = ['SHA256', 'SHA512'];
export const DEFAULT_HMAC_ALGORITHM: HmacAlgorithm = 'SHA256';

/** How far a request's timestamp may be from the verifier's clock, either way: ±5 minutes. */
export const FRESHNESS_WINDOW_MS = 5 * 60 * 1000;

export interface SignedRequest {
  method: string;
  /** The path as sent, unescaped: `/health`, `/records`, `/records/A/example.com/www`. */
  path: string;
  timestamp: string;
  nonce: string;
  /** The exact body bytes as a string; absent (not empty) when the request has no body. */
  body?: string | undefined;
}

/** The string that is signed: method, path, timestamp, nonce[, body] joined by "\n". */
export function signingString(request: SignedRequest): string {
  const parts = [request.method, request.path, request.timestamp, request.nonce];
  if (request.body !== undefined) parts.push(request.body);
  return parts.join('\n');
}

const NODE_HASH: Record<HmacAlgorithm, string> = { SHA256: 'sha256', SHA512: 'sha512' };

/** The signature (lowercase hex) of a request under a secret. */
export function sign(secret: string | Uint8Array, algorithm: HmacAlgorithm, request: SignedRequest): string {
  return createHmac(NODE_HASH[algorithm], secret).update(signingString(request), 'utf8').digest('hex');
}

/** Whether `signature` (hex, any case) is the request's signature; compared in constant time. */
export function signatureMatches(
  secret: string | Uint8Array,
  algorithm: HmacAlgorithm,
  request: SignedRequest,
  signature: string,
): boolean {
  const expected = Buffer.from(sign(secret, algorithm, request), 'hex');
  if (!/^[0-9a-fA-F]*$/.test(signature) || signature.length !== expected.length * 2) return false;
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

/** RFC 3339 in UTC with whole seconds, as the reference client formats it: `2025-12-30T10:00:00Z`. */
export function formatTimestamp(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** A request timestamp's instant in ms, or undefined when it is not RFC 3339 (RFC 3339 §5.6). */
export function parseTimestamp(timestamp: string): number | undefined {
  if (!RFC3339.test(timestamp)) return undefined;
  const ms = Date.parse(timestamp);
  return Number.isNaN(ms) ? undefined : ms;
}

/** Whether a timestamp lies within ±5 minutes of `nowMs`. */
export function isFresh(timestamp: string, nowMs: number): boolean {
  const at = parseTimestamp(timestamp);
  return at !== undefined && Math.abs(nowMs - at) <= FRESHNESS_WINDOW_MS;
}
