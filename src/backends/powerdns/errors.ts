/**
 * PowerDNS failures → a stable code, a condition reason and a message that says what to fix.
 * `BackendUnreachable`: PowerDNS could not be asked (network, timeout, TLS, a 5xx); the change is kept
 * and retried with backoff. `BackendRejected`: PowerDNS answered and refused (API key, server id,
 * content); retried too, but someone has to fix something first.
 */
import { BackendError } from '../backend.ts';

export type PowerDnsErrorCode =
  | 'PDNS_UNREACHABLE'
  | 'PDNS_TIMEOUT'
  | 'PDNS_TLS'
  | 'PDNS_BAD_RESPONSE'
  | 'PDNS_SERVER_ERROR'
  | 'PDNS_UNAUTHORIZED'
  | 'PDNS_SERVER_NOT_FOUND'
  | 'PDNS_BAD_REQUEST'
  | 'PDNS_UNPROCESSABLE'
  | 'PDNS_HTTP'
  | 'PDNS_API_KEY'
  | 'PDNS_DNSSEC';

const UNREACHABLE: ReadonlySet<PowerDnsErrorCode> = new Set([
  'PDNS_UNREACHABLE',
  'PDNS_TIMEOUT',
  'PDNS_TLS',
  'PDNS_BAD_RESPONSE',
  'PDNS_SERVER_ERROR',
]);

export class PowerDnsError extends BackendError {
  override readonly code: PowerDnsErrorCode;
  /** The HTTP status, when PowerDNS answered. */
  readonly status: number | undefined;
  /** PowerDNS's own error text (the `error` field of its JSON), when it gave one. */
  readonly detail: string | undefined;

  constructor(
    code: PowerDnsErrorCode,
    message: string,
    options: { status?: number; detail?: string; cause?: unknown } = {},
  ) {
    super(UNREACHABLE.has(code) ? 'BackendUnreachable' : 'BackendRejected', message, {
      cause: options.cause,
    });
    this.name = 'PowerDnsError';
    this.code = code;
    this.status = options.status;
    this.detail = options.detail;
  }
}

/** PowerDNS's error text: the `error` field of its JSON body, else the body itself (shortened). */
export function errorDetail(body: string): string {
  try {
    const parsed = JSON.parse(body) as unknown;
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      typeof (parsed as { error?: unknown }).error === 'string'
    )
      return (parsed as { error: string }).error;
  } catch {
    // not JSON: PowerDNS answers some statuses with a plain reason phrase
  }
  const text = body.trim();
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}

/** A non-2xx answer the caller did not expect. `what` says what was asked ("PATCH zone example.com."). */
export function httpError(
  what: string,
  status: number,
  body: string,
  context: { url: string; serverId: string; requestBytes?: number },
): PowerDnsError {
  const detail = errorDetail(body);
  const said = detail === '' ? `${status}` : `${status} ${detail}`;
  const at = `PowerDNS at ${context.url}`;
  if (status === 401 || status === 403) {
    return new PowerDnsError(
      'PDNS_UNAUTHORIZED',
      `${at} refused the API key (${said}) for ${what}; make apiKeySecretRef hold the api-key of pdns.conf, and allow this address in webserver-allow-from`,
      { status, detail },
    );
  }
  if (status === 404) {
    return new PowerDnsError(
      'PDNS_SERVER_NOT_FOUND',
      `${at} has no API path for ${what} (${said}); check serverId (${JSON.stringify(context.serverId)}, usually "localhost") and that the url has no /api/v1 suffix`,
      { status, detail },
    );
  }
  if (status === 422) {
    return new PowerDnsError('PDNS_UNPROCESSABLE', `${at} rejected ${what}: ${detail}`, { status, detail });
  }
  if (status === 400) {
    const size =
      context.requestBytes !== undefined && context.requestBytes > 0
        ? `; the request was ${context.requestBytes} bytes, which may exceed webserver-max-bodysize (2 MB by default): raise it in pdns.conf`
        : '';
    return new PowerDnsError('PDNS_BAD_REQUEST', `${at} refused ${what} as a bad request (${said})${size}`, {
      status,
      detail,
    });
  }
  if (status >= 500) {
    return new PowerDnsError(
      'PDNS_SERVER_ERROR',
      `${at} failed on ${what} (${said}); see the PowerDNS log (its database backend may be down or full)`,
      { status, detail },
    );
  }
  return new PowerDnsError('PDNS_HTTP', `${at} answered ${what} with ${said}`, { status, detail });
}

const TLS_CODES = /^(CERT_|UNABLE_TO_|SELF_SIGNED|DEPTH_ZERO|ERR_TLS|ERR_SSL|HOSTNAME_MISMATCH|ERR_OSSL)/;

/** A failure before any answer: connection, DNS, TLS or timeout. */
export function transportError(
  what: string,
  error: unknown,
  context: { url: string; timeoutMs: number },
): PowerDnsError {
  if (error instanceof PowerDnsError) return error;
  const e = error as NodeJS.ErrnoException;
  const code = typeof e?.code === 'string' ? e.code : '';
  const text = e instanceof Error ? e.message : String(error);
  const at = `PowerDNS at ${context.url}`;
  if (code === 'ETIMEDOUT' || code === 'PDNS_TIMEOUT' || e?.name === 'TimeoutError') {
    return new PowerDnsError(
      'PDNS_TIMEOUT',
      `${at} did not answer ${what} within ${context.timeoutMs / 1000} s; check that it is up and not overloaded (timeoutSeconds raises the limit)`,
      { cause: error },
    );
  }
  if (TLS_CODES.test(code) || /certificate|tls|ssl/i.test(text)) {
    return new PowerDnsError(
      'PDNS_TLS',
      `TLS with ${at} failed (${code || text}); set tls.caFile to the CA that signed its certificate, tls.serverName to the name in it, or use http://`,
      { cause: error },
    );
  }
  return new PowerDnsError(
    'PDNS_UNREACHABLE',
    `cannot reach ${at} for ${what} (${code || text}); check that pdns_server runs with api=yes and webserver=yes and listens there (webserver-address, webserver-port)`,
    { cause: error },
  );
}

/** An answer that is not the API's JSON: the url points at something else. */
export function badResponse(what: string, status: number, body: string, url: string): PowerDnsError {
  return new PowerDnsError(
    'PDNS_BAD_RESPONSE',
    `PowerDNS at ${url} answered ${what} with ${status} and a body that is not the API's JSON (${JSON.stringify(errorDetail(body).slice(0, 80))}); check that the url points at the PowerDNS webserver`,
    { status },
  );
}

/** The API key could not be read. */
export function apiKeyError(error: unknown): PowerDnsError {
  return new PowerDnsError(
    'PDNS_API_KEY',
    `cannot read the PowerDNS API key: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}

/**
 * A 422 that names one record ("Record www.example.com./A '1.2.3.400': ..." or "RRset www.example.com.
 * IN CNAME: ..."): the owner, type and, for records, the content and what PowerDNS would store instead.
 */
export function recordFromError(
  detail: string,
): { owner: string; type: string; content?: string; parsedAs?: string; reason: string } | undefined {
  const record = /^Record (\S+)\/([A-Z0-9]+) '(.*)': (.*)$/s.exec(detail);
  if (record) {
    const reason = record[4]!;
    const parsed = /^Not in expected format \(parsed as '(.*)'\)$/s.exec(reason);
    return {
      owner: record[1]!,
      type: record[2]!,
      content: record[3]!,
      ...(parsed ? { parsedAs: parsed[1]! } : {}),
      reason,
    };
  }
  const rrset = /^RRset (\S+) IN ([A-Z0-9]+): (.*)$/s.exec(detail);
  if (rrset) return { owner: rrset[1]!, type: rrset[2]!, reason: rrset[3]! };
  return undefined;
}
