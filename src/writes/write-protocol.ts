/**
 * The hop from a `zonekeeper server` replica to the operator's leader (ADR 0016), as RFC 2136 §6
 * forwards an UPDATE from a secondary to the primary: the replica's front door has authenticated its
 * caller and names the credential; the leader applies the request with its own credential table,
 * quotas and ownership rules, and answers the writer's result or its `WriteError` as JSON.
 *
 * `POST /v1/writes`, `Authorization: Bearer <the replica's Kubernetes token>`, body
 * `{"credential": "...", "request": {"id": "...", "changes": [...]}}`. Pure: the shapes, the checks of
 * a body and the mapping of error codes onto HTTP statuses.
 */
import {
  type RecordChange,
  WriteError,
  type WriteErrorCode,
  type WriteRequest,
  type WriteResult,
} from './write-request.ts';

export const FORWARD_PATH = '/v1/writes';
/**
 * Bound of a forwarded body: a request's 256 KiB of names and record text (DEFAULT_REQUEST_LIMITS),
 * with room for JSON quoting and the field names of up to 500 changes.
 */
export const MAX_FORWARD_BODY_BYTES = 1024 * 1024;
/** Bound of the leader's answer, read by the replica. */
export const MAX_FORWARD_RESPONSE_BYTES = 2 * 1024 * 1024;

/** What the replica sends. */
export interface ForwardedWrite {
  credential: string;
  request: WriteRequest;
}

/** The leader's answer: the result, or the error. */
export type ForwardAnswer = { result: WriteResult } | { error: ForwardError };

export interface ForwardError {
  code: WriteErrorCode | HopErrorCode;
  message: string;
  change?: number;
  retryAfterSeconds?: number;
}

/** Refusals of the hop itself (not of the request): the replica is not let in. */
export type HopErrorCode = 'UNAUTHENTICATED' | 'FORBIDDEN' | 'NOT_LEADER' | 'BAD_REQUEST';

const WRITE_ERROR_CODES: readonly WriteErrorCode[] = [
  'UNKNOWN_CREDENTIAL',
  'REQUEST_TOO_LARGE',
  'INVALID_CHANGE',
  'DUPLICATE_CHANGE',
  'NOT_DELEGATED',
  'NOT_OWNER',
  'NAME_CONFLICT',
  'QUOTA_EXCEEDED',
  'RATE_LIMITED',
  'REPLAYED',
  'PRECONDITION_FAILED',
  'UNAVAILABLE',
];

export function isWriteErrorCode(code: unknown): code is WriteErrorCode {
  return typeof code === 'string' && (WRITE_ERROR_CODES as readonly string[]).includes(code);
}

/** The HTTP status the leader answers a code with (the replica reads the code, not the status). */
export function forwardStatus(code: WriteErrorCode | HopErrorCode): number {
  switch (code) {
    case 'BAD_REQUEST':
    case 'INVALID_CHANGE':
    case 'DUPLICATE_CHANGE':
      return 400;
    case 'UNAUTHENTICATED':
      return 401;
    case 'FORBIDDEN':
    case 'UNKNOWN_CREDENTIAL':
    case 'NOT_DELEGATED':
    case 'NOT_OWNER':
    case 'NAME_CONFLICT':
    case 'QUOTA_EXCEEDED':
      return 403;
    case 'REPLAYED':
    case 'PRECONDITION_FAILED':
      return 409;
    case 'REQUEST_TOO_LARGE':
      return 413;
    case 'RATE_LIMITED':
      return 429;
    case 'NOT_LEADER':
    case 'UNAVAILABLE':
      return 503;
  }
}

/** The answer for an error thrown by the writer (anything but a WriteError is UNAVAILABLE). */
export function errorAnswer(e: unknown): { error: ForwardError } {
  if (e instanceof WriteError)
    return {
      error: {
        code: e.code,
        message: e.message,
        ...(e.change !== undefined ? { change: e.change } : {}),
        ...(e.retryAfterSeconds !== undefined ? { retryAfterSeconds: e.retryAfterSeconds } : {}),
      },
    };
  return {
    error: {
      code: 'UNAVAILABLE',
      message: `the leader could not apply the request (${e instanceof Error ? e.message : String(e)}); retry with the same request id`,
    },
  };
}

/**
 * Checks a forwarded body: exactly `credential` and `request`, the request exactly `id` and `changes`.
 * Unknown fields are refused, so nothing else (another credential's name, a namespace) can ride along
 * the hop; the changes themselves are checked by the writer.
 */
export function parseForwardedWrite(
  body: unknown,
): { ok: true; value: ForwardedWrite } | { ok: false; message: string } {
  if (!isObject(body)) return { ok: false, message: 'expected a JSON object with credential and request' };
  for (const field of Object.keys(body))
    if (field !== 'credential' && field !== 'request')
      return {
        ok: false,
        message: `unknown field ${JSON.stringify(field)}; a forwarded write has credential and request`,
      };
  const { credential, request } = body;
  if (typeof credential !== 'string' || credential.length === 0 || credential.length > 253)
    return { ok: false, message: 'credential must be the name of a write credential' };
  if (!isObject(request)) return { ok: false, message: 'request must be an object with changes' };
  for (const field of Object.keys(request))
    if (field !== 'id' && field !== 'changes')
      return { ok: false, message: `unknown field request.${field}; a request has id and changes` };
  if (request.id !== undefined && typeof request.id !== 'string')
    return { ok: false, message: 'request.id must be a string' };
  if (!Array.isArray(request.changes)) return { ok: false, message: 'request.changes must be a list' };
  return {
    ok: true,
    value: {
      credential,
      request: {
        ...(request.id !== undefined ? { id: request.id as string } : {}),
        changes: request.changes as RecordChange[],
      },
    },
  };
}

/** The writer's error or result from the leader's answer; anything unexpected is UNAVAILABLE. */
export function readForwardAnswer(status: number, body: unknown): WriteResult {
  if (status === 200 && isObject(body) && isObject(body.result)) {
    const r = body.result;
    if (typeof r.namespace === 'string' && typeof r.replayed === 'boolean' && Array.isArray(r.changes))
      return r as unknown as WriteResult;
  }
  const error = isObject(body) && isObject(body.error) ? body.error : undefined;
  const message = typeof error?.message === 'string' ? error.message : `HTTP status ${status}`;
  const retryAfterSeconds =
    typeof error?.retryAfterSeconds === 'number' && Number.isFinite(error.retryAfterSeconds)
      ? error.retryAfterSeconds
      : undefined;
  const change = typeof error?.change === 'number' ? error.change : undefined;
  const extra = {
    ...(change !== undefined ? { change } : {}),
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
  };
  if (isWriteErrorCode(error?.code)) return throwError(new WriteError(error.code, message, extra));
  if (error?.code === 'BAD_REQUEST') return throwError(new WriteError('INVALID_CHANGE', message, extra));
  // The hop refused this replica: a deployment problem, reported as the writer being unavailable.
  const code = typeof error?.code === 'string' ? error.code : undefined;
  const hint =
    code === 'UNAUTHENTICATED' || code === 'FORBIDDEN'
      ? " (the leader does not accept this replica as a forwarder: check its service account and the operator's --write-forwarders)"
      : '';
  return throwError(
    new WriteError(
      'UNAVAILABLE',
      `the operator's leader refused the forwarded write: ${code ?? 'no code'}: ${message}${hint}`,
      extra,
    ),
  );
}

function throwError(e: WriteError): never {
  throw e;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
