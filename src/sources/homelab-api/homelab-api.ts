/**
 * Zonekeeper as a provider of the homelab DNS webhook protocol (`dns.homelab.mortenolsen.pro`): an HTTP
 * front door on its own port answering `GET /health`, `POST /records`, and `GET` / `DELETE
 * /records/{type}/{domain}/{subdomain}`. Every request is verified as the protocol requires — timestamp
 * within ±5 minutes, HMAC-SHA256 or -SHA512 compared in constant time, nonce never seen within the
 * window — and belongs to the caller whose secret signed it; what it writes goes through the record
 * writer (ADR 0016) as record sets of that caller's namespace, so delegations, ownership and quotas
 * decide as for any tenant.
 */
import type http from 'node:http';
import type { DNSRecordSet } from '../../api/index.ts';
import { parseName } from '../../dns/name.ts';
import {
  HEALTH_PATH,
  type HomelabErrorCode,
  type HomelabRecordType,
  RECORDS_PATH,
} from '../../homelab-protocol/protocol.ts';
import {
  HEADER_NONCE,
  HEADER_SIGNATURE,
  HEADER_TIMESTAMP,
  type HmacAlgorithm,
  isFresh,
  parseTimestamp,
  signatureMatches,
} from '../../homelab-protocol/signature.ts';
import type { Registry } from '../../metrics/registry.ts';
import { splitHostPort } from '../../util/host-port.ts';
import {
  createLimitedHttpServer,
  DEFAULT_HTTP_CONNECTION_LIMITS,
  type HttpConnectionLimits,
} from '../../util/http-limits.ts';
import { type RecordWriter, writtenObjectName } from '../../writes/record-writer.ts';
import {
  WRITTEN_BY_LABEL,
  WriteError,
  type WriteErrorCode,
  type WriteResult,
} from '../../writes/write-request.ts';
import { resourceKey } from '../../zones/resource-key.ts';
import type { HomelabCaller } from './callers.ts';
import { DEFAULT_MAX_NONCES_PER_CALLER, NonceCache } from './nonce-cache.ts';
import {
  fromWriteError,
  HomelabError,
  parseType,
  parseUpsert,
  type RecordId,
  recordFromRecordSet,
  recordId,
} from './records.ts';

/** Bound of a request body: a record of the protocol is a few hundred bytes; 64 KiB leaves room. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
/**
 * The listener's connection limits unless configured (`--homelab-api-max-connections`,
 * `--homelab-api-max-connections-per-client`, `--homelab-api-headers-timeout`): the API may listen
 * beyond loopback, where anybody can open connections before any signature is checked.
 */
export const DEFAULT_HOMELAB_API_LIMITS: HttpConnectionLimits = DEFAULT_HTTP_CONNECTION_LIMITS;
/** Nonces are printable ASCII (a UUID, 64 hex digits); they become the writer's request id. */
const NONCE = /^[\x21-\x7e]{1,100}$/;

type LogFn = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

/** What callers hear while this process takes no writes; the log says why. */
const NO_WRITER_MESSAGE = 'records cannot be written here now (UNAVAILABLE)';

export interface HomelabApiOptions {
  /** HOST:PORT to listen on. */
  listen: string;
  /** The callers and their secrets, as last read. */
  callers: () => readonly HomelabCaller[];
  /**
   * The record writer: `serve`'s own, the operator leader's, a server replica's forwarding writer;
   * undefined while this process cannot take writes (an operator replica that does not lead).
   */
  writer: () => RecordWriter | undefined;
  /**
   * Why there is no writer, e.g. "this operator replica does not lead": logged, never answered (callers
   * get a generic 503 UNAVAILABLE that names no replica).
   */
  noWriter?: string;
  /** A DNSRecordSet by key in the live store (GET reads back what the caller wrote). */
  recordSet: (key: string) => DNSRecordSet | undefined;
  maxBodyBytes?: number;
  maxNoncesPerCaller?: number;
  /** Connections held, per client address, and how long headers and requests may take. */
  connectionLimits?: Partial<HttpConnectionLimits>;
  registry?: Registry;
  now?: () => number;
  log: LogFn;
}

interface Authenticated {
  caller: HomelabCaller;
  nonce: string;
}

interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export class HomelabApi {
  private readonly server: http.Server;
  private readonly options: HomelabApiOptions;
  private readonly nonces: NonceCache;
  private readonly now: () => number;
  private readonly requests: ((endpoint: string, code: string) => void) | undefined;
  private readonly refusedConnections: ((reason: string) => void) | undefined;

  constructor(options: HomelabApiOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.nonces = new NonceCache({
      maxPerCaller: options.maxNoncesPerCaller ?? DEFAULT_MAX_NONCES_PER_CALLER,
    });
    if (options.registry) {
      const counter = options.registry.counter(
        'zonekeeper_homelab_api_requests_total',
        'Requests to the homelab DNS API, by endpoint (health, upsert, get, delete, other) and answer code (ok or the error code).',
        ['endpoint', 'code'],
      );
      this.requests = (endpoint, code) => counter.labels(endpoint, code).inc();
      const gauge = options.registry.gauge(
        'zonekeeper_homelab_api_nonces',
        'Nonces the homelab DNS API remembers to refuse replays (bounded per caller by --homelab-api-max-nonces).',
      );
      gauge.collect = () => gauge.set(this.nonces.size);
      const refused = options.registry.counter(
        'zonekeeper_homelab_api_connections_refused_total',
        'Connections the homelab DNS API closed as they arrived, by limit (max-connections, max-connections-per-client).',
        ['reason'],
      );
      this.refusedConnections = (reason) => refused.labels(reason).inc();
    }
    this.server = createLimitedHttpServer(
      { ...DEFAULT_HOMELAB_API_LIMITS, ...options.connectionLimits },
      (req, res) => this.handle(req, res),
      (reason) => this.refusedConnections?.(reason),
    );
  }

  address(): { host: string; port: number } {
    const a = this.server.address() as { address: string; port: number };
    return { host: a.address, port: a.port };
  }

  async start(): Promise<void> {
    const { host, port } = splitHostPort(this.options.listen, 7100);
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Nonces held (for tests and the metric). */
  get nonceCount(): number {
    return this.nonces.size;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const maxBody = this.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const send = (endpoint: string, answer: Answer) => {
      const body = answer.body as { error?: { code?: string } };
      this.requests?.(endpoint, body?.error?.code ?? 'ok');
      if (!res.headersSent)
        res
          .writeHead(answer.status, {
            'content-type': 'application/json',
            'cache-control': 'no-store',
            ...answer.headers,
          })
          .end(`${JSON.stringify(answer.body)}\n`);
    };
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBody) {
      res.setHeader('connection', 'close');
      send('other', tooLarge(maxBody));
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > maxBody) {
        over = true;
        res.setHeader('connection', 'close');
        send('other', tooLarge(maxBody));
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      if (over) return;
      const body = size > 0 ? Buffer.concat(chunks).toString('utf8') : undefined;
      let endpoint = 'other';
      this.route(req, body, (e) => {
        endpoint = e;
      }).then(
        (answer) => send(endpoint, answer),
        (e: unknown) => send(endpoint, errorAnswer(e)),
      );
    });
  }

  private async route(
    req: http.IncomingMessage,
    body: string | undefined,
    setEndpoint: (endpoint: string) => void,
  ): Promise<Answer> {
    const method = req.method ?? 'GET';
    const raw = (req.url ?? '/').split('?')[0]!;
    let segments: string[];
    try {
      segments = raw.split('/').map((s) => decodeURIComponent(s));
    } catch {
      throw new HomelabError(400, 'INVALID_RECORD', 'the path is not valid percent-encoding');
    }
    // What the client signed: the path as it formatted it, unescaped.
    const path = segments.join('/');
    if (path === HEALTH_PATH) {
      setEndpoint('health');
      if (method !== 'GET') return methodNotAllowed('GET');
      return this.health(req, method, path, body);
    }
    if (path === RECORDS_PATH) {
      setEndpoint('upsert');
      if (method !== 'POST') return methodNotAllowed('POST');
      const auth = this.authenticate(req, method, path, body);
      return this.upsert(auth, body);
    }
    const parts = segments.slice(1);
    if (parts.length === 4 && `/${parts[0]}` === RECORDS_PATH) {
      setEndpoint(method === 'DELETE' ? 'delete' : method === 'GET' ? 'get' : 'other');
      if (method !== 'GET' && method !== 'DELETE') return methodNotAllowed('GET, DELETE');
      const auth = this.authenticate(req, method, path, body);
      const id = recordId(parseType(parts[1]), parts[2], parts[3]);
      return method === 'GET' ? this.read(auth.caller, id) : this.remove(auth, id);
    }
    return {
      status: 404,
      body: failure(
        'NOT_FOUND',
        'not found; the homelab DNS API answers GET /health, POST /records and GET or DELETE /records/{type}/{domain}/{subdomain}',
      ),
    };
  }

  /**
   * Verifies the request as the protocol requires and returns its caller: a fresh timestamp, a
   * signature that one caller's secret makes (compared in constant time), then a nonce not seen within
   * the window — recorded only once the signature verified, so nobody without a secret fills the cache.
   */
  private authenticate(
    req: http.IncomingMessage,
    method: string,
    path: string,
    body: string | undefined,
  ): Authenticated {
    const header = (name: string) => {
      const v = req.headers[name.toLowerCase()];
      return typeof v === 'string' ? v : undefined;
    };
    const timestamp = header(HEADER_TIMESTAMP);
    const nonce = header(HEADER_NONCE);
    const signature = header(HEADER_SIGNATURE);
    const fail = (message: string, code: HomelabErrorCode = 'AUTH_FAILED') =>
      new HomelabError(401, code, message);
    if (timestamp === undefined || nonce === undefined || signature === undefined)
      throw fail(
        `the request is not signed: send ${HEADER_TIMESTAMP}, ${HEADER_NONCE} and ${HEADER_SIGNATURE} (HMAC-SHA256 or -SHA512 with the shared secret)`,
      );
    const at = parseTimestamp(timestamp);
    if (at === undefined)
      throw fail(
        `${HEADER_TIMESTAMP} ${JSON.stringify(timestamp.slice(0, 40))} is not an RFC 3339 timestamp`,
      );
    const nowMs = this.now();
    if (!isFresh(timestamp, nowMs))
      throw fail(
        `${HEADER_TIMESTAMP} ${timestamp} is more than 5 minutes from this server's clock (${new Date(nowMs).toISOString()}); check the clocks and sign each request when it is sent`,
        'TIMESTAMP_STALE',
      );
    if (!NONCE.test(nonce))
      throw fail(`${HEADER_NONCE} must be 1-100 printable ASCII characters (a UUID v4, or random hex)`);
    const algorithm: HmacAlgorithm | undefined =
      signature.length === 64 ? 'SHA256' : signature.length === 128 ? 'SHA512' : undefined;
    if (algorithm === undefined || !/^[0-9a-fA-F]+$/.test(signature))
      throw fail(`${HEADER_SIGNATURE} must be the hex HMAC-SHA256 (64 digits) or HMAC-SHA512 (128 digits)`);
    const signed = { method, path, timestamp, nonce, body };
    // Every caller's secret is tried (no early exit): the time taken does not depend on which matched.
    let caller: HomelabCaller | undefined;
    for (const c of this.options.callers()) {
      if (signatureMatches(c.secret, algorithm, signed, signature) && !caller) caller = c;
    }
    if (!caller)
      throw fail(
        'the signature does not verify with any configured secret: check the shared secret, the algorithm, and that method, path, timestamp, nonce and body are signed exactly as sent',
      );
    const verdict = this.nonces.check(caller.credential, nonce, at, nowMs);
    if (!verdict.ok && verdict.reason === 'reused')
      throw fail(
        `${HEADER_NONCE} ${nonce} was already used within the last 5 minutes: a replayed request is refused; send a fresh nonce with each request`,
        'NONCE_REUSED',
      );
    if (!verdict.ok)
      throw new HomelabError(
        429,
        'RATE_LIMITED',
        `caller ${caller.credential} sent more signed requests within 5 minutes than this server remembers nonces for; retry later`,
        verdict.retryAfterSeconds,
      );
    return { caller, nonce };
  }

  private health(req: http.IncomingMessage, method: string, path: string, body: string | undefined): Answer {
    // Unsigned health checks (probes) are answered; a signed one must verify.
    const signed = [HEADER_TIMESTAMP, HEADER_NONCE, HEADER_SIGNATURE].some(
      (h) => req.headers[h.toLowerCase()] !== undefined,
    );
    if (signed) this.authenticate(req, method, path, body);
    const timestamp = new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    // Unauthenticated callers learn that writes are unavailable, not which replica this is or why.
    if (!this.options.writer())
      return {
        status: 503,
        body: { status: 'unhealthy', message: NO_WRITER_MESSAGE, timestamp },
      };
    return { status: 200, body: { status: 'healthy', message: 'DNS server is operational', timestamp } };
  }

  private writer(): RecordWriter {
    const w = this.options.writer();
    if (!w) {
      if (this.options.noWriter)
        this.options.log('info', 'homelab API write refused', { reason: this.options.noWriter });
      throw new HomelabError(503, 'UNAVAILABLE', `${NO_WRITER_MESSAGE}; retry`, 2);
    }
    return w;
  }

  private async upsert(auth: Authenticated, body: string | undefined): Promise<Answer> {
    let parsed: unknown;
    try {
      parsed = body === undefined ? undefined : JSON.parse(body);
    } catch (e) {
      throw new HomelabError(400, 'INVALID_RECORD', `the body is not JSON (${(e as Error).message})`);
    }
    const upsert = parseUpsert(parsed);
    const result = await this.apply(auth, upsert.id, upsert.change);
    const outcome = result.changes[0]?.outcome;
    return {
      status: 200,
      body: {
        success: true,
        record: upsert.record,
        message:
          outcome === 'created'
            ? 'Record created successfully'
            : outcome === 'updated'
              ? 'Record updated successfully'
              : 'Record unchanged',
      },
    };
  }

  /**
   * One change through the record writer. The nonce is the request id: a request replayed after a
   * restart (the nonce cache is in memory) meets the writer's durable replay memory instead of being
   * applied again.
   */
  private async apply(
    { caller, nonce }: Authenticated,
    id: RecordId,
    change: Parameters<RecordWriter['apply']>[1]['changes'][number],
  ): Promise<WriteResult> {
    try {
      const result = await this.writer().apply(caller.credential, {
        id: `homelab-${nonce}`,
        changes: [change],
      });
      this.options.log('info', 'homelab API write', {
        caller: caller.credential,
        namespace: result.namespace,
        op: change.op,
        name: id.fqdn,
        type: id.type,
        outcome: result.changes[0]?.outcome ?? 'none',
      });
      return result;
    } catch (e) {
      if (!(e instanceof HomelabError) && !(e instanceof WriteError))
        this.options.log('warn', 'homelab API write failed', {
          caller: caller.credential,
          error: e instanceof Error ? e.message : String(e),
        });
      throw e instanceof HomelabError ? e : fromWriteError(e);
    }
  }

  private read(caller: HomelabCaller, id: RecordId): Answer {
    const object = this.ownRecordSet(caller, id);
    if (!object)
      return {
        status: 404,
        body: failure('RECORD_NOT_FOUND', `Record does not exist: ${id.type} ${id.fqdn.slice(0, -1)}`),
      };
    return { status: 200, body: { success: true, record: recordFromRecordSet(id, object.spec) } };
  }

  private async remove(auth: Authenticated, id: RecordId): Promise<Answer> {
    const result = await this.apply(auth, id, { op: 'delete', name: id.fqdn, type: id.type });
    return {
      status: 200,
      body: {
        success: true,
        message:
          result.changes[0]?.outcome === 'deleted'
            ? 'Record deleted successfully'
            : 'Record does not exist; nothing to delete',
      },
    };
  }

  /** The record set this caller wrote for the record, if any (another's is not its to read). */
  private ownRecordSet(caller: HomelabCaller, id: RecordId): DNSRecordSet | undefined {
    const name = writtenObjectName(parseName(id.fqdn), id.type as HomelabRecordType);
    const key = resourceKey({ name, namespace: caller.namespace });
    // Read-your-writes: what the writer holds answers before the live view has caught up with it.
    const held = this.options.writer()?.held?.(key);
    const object = held === null ? undefined : (held ?? this.options.recordSet(key));
    if (!object || object.metadata.labels?.[WRITTEN_BY_LABEL] !== caller.credential) return undefined;
    return object;
  }
}

function failure(code: string, message: string): { success: false; error: Record<string, unknown> } {
  return { success: false, error: { code, message, details: {} } };
}

function tooLarge(maxBody: number): Answer {
  return {
    status: 413,
    body: failure(
      'REQUEST_TOO_LARGE' satisfies WriteErrorCode,
      `the body is larger than ${maxBody} bytes; a record of this API is far smaller`,
    ),
  };
}

function methodNotAllowed(allow: string): Answer {
  return {
    status: 405,
    headers: { allow },
    body: failure('METHOD_NOT_ALLOWED', `method not allowed; use ${allow}`),
  };
}

function errorAnswer(e: unknown): Answer {
  const err = e instanceof HomelabError ? e : fromWriteError(e);
  return {
    status: err.status,
    ...(err.retryAfterSeconds !== undefined
      ? { headers: { 'retry-after': String(Math.max(1, Math.ceil(err.retryAfterSeconds))) } }
      : {}),
    body: failure(err.code, err.message),
  };
}
