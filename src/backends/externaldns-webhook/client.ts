/**
 * The HTTP client side of ExternalDNS's webhook protocol, as its own webhook client speaks it:
 * `GET /` (negotiation: the answer's Content-Type must be the protocol's media type, the body the
 * provider's domain filter), `GET /records`, `POST /adjustendpoints` and `POST /records` (answered
 * 204). Every request has a time limit covering the whole answer; answers are read up to a size limit
 * and then cut off (never buffered whole); redirects are not followed.
 */
import { BackendError } from '../backend.ts';
import {
  type Changes,
  type DomainFilterJson,
  type Endpoint,
  parseDomainFilter,
  parseEndpoints,
  WEBHOOK_MEDIA_TYPE,
} from './endpoints.ts';

export interface WebhookClientOptions {
  url: string;
  timeoutMs: number;
  /** Largest answer read; default 32 MiB (a record list of about 100 000 endpoints). */
  maxResponseBytes?: number;
}

/** A failure of one request: `retryable` for 5xx answers and broken connections. */
export class WebhookError extends BackendError {
  readonly retryable: boolean;
  constructor(
    reason: 'BackendUnreachable' | 'BackendRejected',
    code: string,
    message: string,
    retryable: boolean,
  ) {
    super(reason, message, { code });
    this.retryable = retryable;
  }
}

const DEFAULT_MAX_RESPONSE_BYTES = 32 << 20;

export class WebhookClient {
  private readonly base: string;
  private readonly options: WebhookClientOptions;

  constructor(options: WebhookClientOptions) {
    this.options = options;
    this.base = options.url.replace(/\/+$/, '');
  }

  private async request(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; contentType: string; text: string }> {
    const where = `${method} ${this.base}${path || '/'}`;
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    let response: Response;
    try {
      response = await fetch(`${this.base}${path || '/'}`, {
        method,
        headers: {
          Accept: WEBHOOK_MEDIA_TYPE,
          ...(body !== undefined ? { 'Content-Type': WEBHOOK_MEDIA_TYPE } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal,
        redirect: 'manual',
      });
    } catch (e) {
      throw this.broken(where, e);
    }
    const limit = this.options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const chunks: Uint8Array[] = [];
    let size = 0;
    try {
      if (response.body) {
        const reader = response.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          size += value.byteLength;
          if (size > limit) {
            await reader.cancel().catch(() => {});
            throw new WebhookError(
              'BackendRejected',
              'RESPONSE_TOO_LARGE',
              `${where}: the answer is larger than ${limit} bytes; Zonekeeper stops reading there (is this the provider's URL?)`,
              false,
            );
          }
          chunks.push(value);
        }
      }
    } catch (e) {
      if (e instanceof WebhookError) throw e;
      throw this.broken(where, e);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const status = response.status;
    if (status >= 500)
      throw new WebhookError(
        'BackendUnreachable',
        'PROVIDER_ERROR',
        `${where}: HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}; the provider failed, Zonekeeper retries`,
        true,
      );
    return { status, contentType: response.headers.get('content-type') ?? '', text };
  }

  private broken(where: string, e: unknown): WebhookError {
    const err = e as Error & { cause?: { code?: string } };
    const timedOut = err.name === 'TimeoutError' || err.name === 'AbortError';
    const what = timedOut
      ? `no whole answer within ${this.options.timeoutMs} ms`
      : (err.cause?.code ?? err.message);
    return new WebhookError(
      'BackendUnreachable',
      timedOut ? 'PROVIDER_TIMEOUT' : 'PROVIDER_UNREACHABLE',
      `${where}: ${what}; check that the provider runs and that url is right (timeoutSeconds sets the limit)`,
      !timedOut,
    );
  }

  private json(where: string, text: string): unknown {
    try {
      return JSON.parse(text);
    } catch {
      throw invalid(where, `the answer is not JSON (${JSON.stringify(text.slice(0, 80))})`);
    }
  }

  private refused(where: string, status: number, text: string): WebhookError {
    return new WebhookError(
      'BackendRejected',
      'PROVIDER_REFUSED',
      `${where}: HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`,
      false,
    );
  }

  /** `GET /`: the provider's domain filter; the answer must carry the protocol's media type. */
  async negotiate(): Promise<DomainFilterJson> {
    const where = `GET ${this.base}/`;
    const answer = await this.request('GET', '');
    if (answer.status !== 200) throw this.refused(where, answer.status, answer.text);
    const type = answer.contentType.replace(/\s+/g, '').toLowerCase();
    if (type !== WEBHOOK_MEDIA_TYPE)
      throw new WebhookError(
        'BackendRejected',
        'NEGOTIATION_FAILED',
        `${where}: the answer's Content-Type is ${JSON.stringify(answer.contentType)}, not ${WEBHOOK_MEDIA_TYPE}; the URL does not name an ExternalDNS webhook provider of protocol version 1`,
        false,
      );
    try {
      return parseDomainFilter(this.json(where, answer.text));
    } catch (e) {
      if (e instanceof WebhookError) throw e;
      throw invalid(where, (e as Error).message);
    }
  }

  /** `GET /records`: every endpoint the provider holds. */
  async records(): Promise<Endpoint[]> {
    const where = `GET ${this.base}/records`;
    const answer = await this.request('GET', '/records');
    if (answer.status !== 200) throw this.refused(where, answer.status, answer.text);
    try {
      return parseEndpoints(this.json(where, answer.text));
    } catch (e) {
      if (e instanceof WebhookError) throw e;
      throw invalid(where, (e as Error).message);
    }
  }

  /**
   * `POST /adjustendpoints`: the endpoints as the provider would hold them; an endpoint it cannot
   * hold is left out of the answer. A provider without the endpoint (404, 405, 501) adjusts nothing.
   */
  async adjust(endpoints: Endpoint[]): Promise<Endpoint[]> {
    if (endpoints.length === 0) return [];
    const where = `POST ${this.base}/adjustendpoints`;
    const answer = await this.request('POST', '/adjustendpoints', endpoints);
    if (answer.status === 404 || answer.status === 405 || answer.status === 501) return endpoints;
    if (answer.status !== 200) throw this.refused(where, answer.status, answer.text);
    const body = this.json(where, answer.text);
    if (body === null) return [];
    try {
      return parseEndpoints(body);
    } catch (e) {
      throw invalid(where, (e as Error).message);
    }
  }

  /** `POST /records`: one batch of changes, applied whole (204) or not at all. */
  async apply(changes: Changes): Promise<void> {
    const where = `POST ${this.base}/records`;
    const answer = await this.request('POST', '/records', changes);
    if (answer.status === 204 || answer.status === 200) return;
    throw this.refused(where, answer.status, answer.text);
  }
}

function invalid(where: string, what: string): WebhookError {
  return new WebhookError(
    'BackendRejected',
    'PROVIDER_INVALID_ANSWER',
    `${where}: ${what}; the provider does not speak ExternalDNS's webhook protocol as expected`,
    false,
  );
}
