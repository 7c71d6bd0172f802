/**
 * The HTTP client of the homelab DNS webhook protocol: `GET /health`, `POST /records` (upsert),
 * `GET` and `DELETE /records/{type}/{domain}/{subdomain}`, each request signed with HMAC when a secret
 * is configured (headers X-DNS-Timestamp, X-DNS-Nonce — a UUID v4 — and X-DNS-Signature). The path is
 * sent and signed exactly as formatted, without percent-escaping, as the reference client does.
 */
import { randomUUID } from 'node:crypto';
import {
  HEALTH_PATH,
  type HomelabHealth,
  type HomelabProvider,
  type HomelabProviderConfig,
  HomelabProviderError,
  type HomelabRecord,
  type HomelabRecordResponse,
  type HomelabResponse,
  RECORDS_PATH,
  recordPath,
} from '../../homelab-protocol/protocol.ts';
import {
  formatTimestamp,
  HEADER_NONCE,
  HEADER_SIGNATURE,
  HEADER_TIMESTAMP,
  sign,
} from '../../homelab-protocol/signature.ts';

/** At most this much of a provider's answer is read. */
const MAX_RESPONSE_BYTES = 1 << 20;

interface Answer {
  status: number;
  text: string;
  json: HomelabResponse | undefined;
}

export class HomelabClient implements HomelabProvider {
  private readonly base: string;
  private readonly config: HomelabProviderConfig;

  constructor(config: HomelabProviderConfig) {
    this.config = config;
    this.base = config.server.replace(/\/+$/, '');
  }

  /** The headers of a request, signed when there is a secret. Exposed for tests. */
  headers(method: string, path: string, body: string | undefined, now = new Date()): Record<string, string> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (this.config.secret !== undefined && this.config.secret !== '') {
      const timestamp = formatTimestamp(now);
      const nonce = randomUUID();
      headers[HEADER_TIMESTAMP] = timestamp;
      headers[HEADER_NONCE] = nonce;
      headers[HEADER_SIGNATURE] = sign(this.config.secret, this.config.algorithm, {
        method,
        path,
        timestamp,
        nonce,
        body,
      });
    }
    return headers;
  }

  private async request(method: string, path: string, body?: string): Promise<Answer> {
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}`, {
        method,
        headers: this.headers(method, path, body),
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(this.config.timeoutMs),
        redirect: 'manual',
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code;
      const what =
        (e as Error).name === 'TimeoutError'
          ? `no answer within ${this.config.timeoutMs} ms`
          : (cause ?? (e as Error).message);
      throw new HomelabProviderError(
        'ServerUnreachable',
        'SERVER_UNREACHABLE',
        `${method} ${this.base}${path}: ${what}; check that the provider runs and that spec.server is right`,
      );
    }
    let text = '';
    try {
      text = await response.text();
    } catch (e) {
      throw new HomelabProviderError(
        'ServerUnreachable',
        'SERVER_UNREACHABLE',
        `${method} ${this.base}${path}: the answer broke off (${(e as Error).message})`,
      );
    }
    if (text.length > MAX_RESPONSE_BYTES) text = text.slice(0, MAX_RESPONSE_BYTES);
    let json: HomelabResponse | undefined;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === 'object') json = parsed as HomelabResponse;
    } catch {
      json = undefined;
    }
    return { status: response.status, text, json };
  }

  private failure(method: string, path: string, answer: Answer): HomelabProviderError {
    const code = typeof answer.json?.error?.code === 'string' ? answer.json.error.code : undefined;
    const message =
      typeof answer.json?.error?.message === 'string' ? answer.json.error.message : answer.text.slice(0, 200);
    const what = `${method} ${path}: HTTP ${answer.status}${code ? ` ${code}` : ''}: ${message}`;
    if (answer.status === 401)
      return new HomelabProviderError(
        'AuthenticationFailed',
        code ?? 'AUTH_FAILED',
        `${what}; check that hmacAuth holds the provider's secret and algorithm, and the clocks agree within 5 minutes`,
        401,
      );
    if (answer.status === 400)
      return new HomelabProviderError('ValidationFailed', code ?? 'INVALID_RECORD', what, 400);
    return new HomelabProviderError('ServerError', code ?? 'SERVER_ERROR', what, answer.status);
  }

  async health(): Promise<HomelabHealth> {
    let answer: Answer;
    try {
      answer = await this.request('GET', HEALTH_PATH);
    } catch (e) {
      return { healthy: false, reason: 'ServerUnreachable', message: (e as Error).message };
    }
    const body = answer.json as { status?: unknown; message?: unknown } | undefined;
    const said = typeof body?.message === 'string' ? body.message : answer.text.slice(0, 200);
    if (answer.status === 200) return { healthy: true, message: said || 'healthy' };
    return { healthy: false, reason: 'ServerError', message: `GET /health: HTTP ${answer.status}: ${said}` };
  }

  async upsert(record: HomelabRecord): Promise<HomelabRecordResponse | undefined> {
    // Field order as the reference client marshals it; `metadata` (Zonekeeper's addition) last.
    const wire: HomelabRecord = {
      type: record.type,
      domain: record.domain,
      subdomain: record.subdomain,
      values: record.values,
      ...(record.ttl !== undefined ? { ttl: record.ttl } : {}),
      ...(record.metadata !== undefined && Object.keys(record.metadata).length > 0
        ? { metadata: record.metadata }
        : {}),
    };
    const body = JSON.stringify({ record: wire, operation: 'upsert' });
    const answer = await this.request('POST', RECORDS_PATH, body);
    if (answer.status !== 200 || answer.json?.success !== true)
      throw this.failure('POST', RECORDS_PATH, answer);
    return answer.json.record;
  }

  async get(
    type: string,
    domain: string,
    subdomain: string,
  ): Promise<HomelabRecordResponse | undefined | 'unsupported'> {
    const path = recordPath(type, domain, subdomain);
    const answer = await this.request('GET', path);
    if (answer.status === 200 && answer.json?.success === true) return answer.json.record;
    if (answer.status === 404 && answer.json?.error?.code === 'RECORD_NOT_FOUND') return undefined;
    // A provider without the optional GET answers 404 without the protocol's body, or 405/501.
    if (answer.status === 404 || answer.status === 405 || answer.status === 501) return 'unsupported';
    throw this.failure('GET', path, answer);
  }

  async delete(type: string, domain: string, subdomain: string): Promise<void> {
    const path = recordPath(type, domain, subdomain);
    const answer = await this.request('DELETE', path);
    if (answer.status === 404) return; // not there: deleted (idempotent)
    if (answer.status !== 200 || answer.json?.success === false) throw this.failure('DELETE', path, answer);
  }
}

export function createHomelabClient(config: HomelabProviderConfig): HomelabProvider {
  return new HomelabClient(config);
}
