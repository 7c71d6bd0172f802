/**
 * Zonekeeper as an ExternalDNS webhook provider: the HTTP protocol ExternalDNS's `webhook` provider
 * client speaks (`sigs.k8s.io/external-dns/provider/webhook`, media type
 * `application/external.dns.webhook+json;version=1`):
 *
 * - `GET /`: negotiation; answers the domain filter `{"include": [...]}` of the zones the namespace may
 *   write, with exactly that media type as Content-Type (the client refuses any other).
 * - `GET /records`: the endpoints this provider wrote into the namespace, as written.
 * - `POST /records`: a plan `{create, updateOld, updateNew, delete}`, answered with 204 — the client
 *   treats any other answer but a 5xx as fatal and exits, so 5xx is kept for what a retry can fix (no
 *   writer now, the namespace's rate, the store), and an endpoint Zonekeeper refuses (delegation,
 *   ownership, conflict, invalid) is dropped from the plan, the rest applied, and the refusal reported
 *   (log, metric, `refused()`, `onRefused` for Events).
 * - `POST /adjustendpoints`: the desired endpoints less those that would be refused, where that can be
 *   known before the write (type, shape, TTL and records, delegation, ownership), so the planner never
 *   plans them (ExternalDNS lets AdjustEndpoints remove endpoints; refusals are logged as one line per
 *   request, counted per code).
 *
 * A plan's endpoints are judged all before anything is written, so every bad one is refused in the
 * same answer and never costs a write request (the namespace's rate) of its own. Bodies are read and
 * parsed only once the request is admitted: POSTs are handled one at a time, at most
 * `MAX_WAITING_REQUESTS` wait (more answer 503 unread), a plan is not read while the namespace's write
 * rate is spent, and no body is larger than `maxBodyBytes`.
 *
 * Endpoints become record sets of one namespace through the record writer (ADR 0016) under one
 * credential, so delegations, quotas and ownership decide as for any tenant. The protocol
 * authenticates nobody: whoever reaches the listener writes as that credential — bind it to loopback
 * (a sidecar) or restrict who reaches it.
 */
import type http from 'node:http';
import type { DNSRecordSet } from '../../api/index.ts';
import type { Registry } from '../../metrics/registry.ts';
import { splitHostPort } from '../../util/host-port.ts';
import { createLimitedHttpServer, type HttpConnectionLimits } from '../../util/http-limits.ts';
import type { RecordWriter } from '../../writes/record-writer.ts';
import {
  DEFAULT_REQUEST_LIMITS,
  type RecordChange,
  WriteError,
  type WriteErrorCode,
} from '../../writes/write-request.ts';
import {
  type Endpoint,
  EndpointError,
  endpointFqdn,
  endpointType,
  endpointUpsert,
  parseEndpoint,
  recordSetEndpoint,
  rrsetKey,
} from './endpoints.ts';

export const MEDIA_TYPE = 'application/external.dns.webhook+json;version=1';
/** The credential (and written-by label value) of what the webhook writes. */
export const EXTERNALDNS_CREDENTIAL = 'externaldns-webhook';
/** Default listen address: where ExternalDNS's `--webhook-provider-url` points by default. */
export const DEFAULT_EXTERNALDNS_WEBHOOK = '127.0.0.1:8888';
/**
 * Bound of a request body: a plan of thousands of endpoints (ExternalDNS's first sync of a cluster)
 * fits; it is applied in requests of the writer's size.
 */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Refusals kept for `refused()` (the newest). */
const MAX_REFUSALS_KEPT = 200;
/**
 * POSTs waiting for the one in progress; more are answered 503 before their body is read. ExternalDNS
 * sends one request at a time (adjust, then apply), so only several controllers, or a flood, wait.
 */
export const MAX_WAITING_REQUESTS = 4;
/** Default of `bodyTimeoutMs`: a body of DEFAULT_MAX_BODY_BYTES over loopback takes far less. */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000;
/**
 * The listener's connection limits unless configured (`--externaldns-webhook-max-connections`,
 * `--externaldns-webhook-max-connections-per-client`, `--externaldns-webhook-headers-timeout`): one
 * ExternalDNS (a sidecar on loopback, where every client has the same address) needs a few.
 */
export const DEFAULT_EXTERNALDNS_WEBHOOK_LIMITS: HttpConnectionLimits = {
  maxConnections: 64,
  maxConnectionsPerClient: 64,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
};
/**
 * Endpoints judged between two turns of the event loop (default of `yieldEvery`): a body of 40,000
 * endpoints takes about a second to judge, and DNS answers on the same thread must not wait for it.
 */
export const DEFAULT_YIELD_EVERY = 256;
/** Refused endpoints named in a request's one log line (the rest are counted). */
const LOGGED_EXAMPLES = 5;
/** The writer's bounds, with room for the annotation and JSON around each change. */
const CHUNK_BYTES = DEFAULT_REQUEST_LIMITS.maxBytes / 2;

type LogFn = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

/** An endpoint Zonekeeper did not write, and why. */
export interface Refusal {
  at: string;
  dnsName: string;
  recordType: string;
  setIdentifier?: string;
  /** A `WriteErrorCode` (NOT_DELEGATED, NOT_OWNER, NAME_CONFLICT, INVALID_CHANGE, DUPLICATE_CHANGE, QUOTA_EXCEEDED). */
  code: string;
  message: string;
  /** Where it was refused: filtered from the desired endpoints, or dropped from a plan. */
  stage: 'adjustendpoints' | 'records';
}

export interface ExternalDnsWebhookOptions {
  listen: string;
  /** The namespace the endpoints are written into. */
  namespace: string;
  /** The writer; undefined while this process takes no writes (an operator replica that does not lead). */
  writer: () => RecordWriter | undefined;
  /** The record sets of the namespace (the written-by label is checked here). */
  recordSets: () => readonly DNSRecordSet[];
  /** The domains the namespace may write; undefined until the zones are loaded (negotiation answers 503). */
  domains: () => string[] | undefined;
  /**
   * Why an upsert of `fqdn`/`type` would be refused now (delegation, ownership), or undefined: asked by
   * `/adjustendpoints`, so the planner does not plan what the write would refuse.
   */
  precheck?: (
    fqdn: string,
    type: Endpoint['recordType'],
    /** The upsert the endpoint makes, when it has records: its TTL and records are judged too. */
    upsert?: Extract<RecordChange, { op: 'upsert' }>,
    /**
     * RRsets this provider wrote that the plan deletes (or the desired endpoints leave out): the
     * upsert is judged as if they were gone, so a name's change of type (CNAME to A) is not refused
     * for the record it replaces.
     */
    going?: ReadonlySet<string>,
  ) => { code: WriteErrorCode; message: string } | undefined;
  onRefused?: (refusal: Refusal) => void;
  maxBodyBytes?: number;
  /**
   * Time a POST's body may take to arrive once its turn has come (default DEFAULT_BODY_TIMEOUT_MS):
   * POSTs are handled one at a time, so a client trickling its body would hold every other up.
   */
  bodyTimeoutMs?: number;
  /** Connections held, per client address, and how long headers and requests may take. */
  connectionLimits?: Partial<HttpConnectionLimits>;
  /** Endpoints judged between two turns of the event loop (default DEFAULT_YIELD_EVERY). */
  yieldEvery?: number;
  registry?: Registry;
  log: LogFn;
}

interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

class HttpFailure extends Error {
  readonly status: number;
  readonly retryAfter: number | undefined;
  constructor(status: number, message: string, retryAfter?: number) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

export class ExternalDnsWebhook {
  private readonly server: http.Server;
  private readonly options: ExternalDnsWebhookOptions;
  private readonly refusals: Refusal[] = [];
  private readonly requests: ((endpoint: string, status: number) => void) | undefined;
  private readonly refusedCounter: ((code: string, stage: string) => void) | undefined;
  private readonly refusedConnections: ((reason: string) => void) | undefined;
  /** POSTs (plans, adjustments) are handled one at a time, in the order they arrive. */
  private queue: Promise<unknown> = Promise.resolve();
  /** POSTs admitted and not answered yet (the one in progress and those waiting). */
  private admitted = 0;
  /** The refusals of the request in progress, logged as one line when it is answered. */
  private batch: Refusal[] | undefined;

  constructor(options: ExternalDnsWebhookOptions) {
    this.options = options;
    if (options.registry) {
      const counter = options.registry.counter(
        'zonekeeper_externaldns_webhook_requests_total',
        'Requests to the ExternalDNS webhook provider, by endpoint (negotiate, records, applychanges, adjustendpoints, other) and HTTP status.',
        ['endpoint', 'status'],
      );
      this.requests = (endpoint, status) => counter.labels(endpoint, String(status)).inc();
      const refused = options.registry.counter(
        'zonekeeper_externaldns_webhook_refused_endpoints_total',
        'Endpoints the ExternalDNS webhook provider did not write, by code and stage (adjustendpoints: filtered from the desired endpoints; records: dropped from a plan answered 204).',
        ['code', 'stage'],
      );
      this.refusedCounter = (code, stage) => refused.labels(code, stage).inc();
      const connections = options.registry.counter(
        'zonekeeper_externaldns_webhook_connections_refused_total',
        'Connections the ExternalDNS webhook provider closed as they arrived, by limit (max-connections, max-connections-per-client).',
        ['reason'],
      );
      this.refusedConnections = (reason) => connections.labels(reason).inc();
    }
    this.server = createLimitedHttpServer(
      { ...DEFAULT_EXTERNALDNS_WEBHOOK_LIMITS, ...options.connectionLimits },
      (req, res) => this.handle(req, res),
      (reason) => this.refusedConnections?.(reason),
    );
  }

  address(): { host: string; port: number } {
    const a = this.server.address() as { address: string; port: number };
    return { host: a.address, port: a.port };
  }

  async start(): Promise<void> {
    const { host, port } = splitHostPort(this.options.listen, 8888);
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

  /** POSTs admitted and not answered yet: the one in progress and those waiting. */
  get pending(): number {
    return this.admitted;
  }

  /** The newest endpoints refused, oldest first. */
  refused(): readonly Refusal[] {
    return this.refusals;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const maxBody = this.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const path = (req.url ?? '/').split('?')[0]!;
    const method = req.method ?? 'GET';
    const endpoint =
      path === '/'
        ? 'negotiate'
        : path === '/records'
          ? method === 'POST'
            ? 'applychanges'
            : 'records'
          : path === '/adjustendpoints'
            ? 'adjustendpoints'
            : 'other';
    const send = (answer: Answer) => {
      this.requests?.(endpoint, answer.status);
      if (res.headersSent) return;
      if (answer.status === 204) {
        res.writeHead(204, answer.headers).end();
        return;
      }
      const json = answer.status < 300;
      res
        .writeHead(answer.status, {
          'content-type': json ? MEDIA_TYPE : 'text/plain; charset=utf-8',
          'cache-control': 'no-store',
          ...answer.headers,
        })
        .end(json ? `${JSON.stringify(answer.body)}\n` : `${String(answer.body ?? '')}\n`);
    };
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBody) {
      res.setHeader('connection', 'close');
      send(tooLarge(maxBody));
      req.resume();
      return;
    }
    const fail = (e: unknown) => {
      if (e instanceof HttpFailure)
        send({
          status: e.status,
          body: e.message,
          ...(e.retryAfter !== undefined ? { headers: { 'retry-after': String(e.retryAfter) } } : {}),
        });
      else {
        this.options.log('error', 'ExternalDNS webhook: request failed', {
          error: e instanceof Error ? e.message : String(e),
        });
        send({ status: 500, body: 'internal error; retry' });
      }
    };
    if (method !== 'POST') {
      // Nothing to read: GETs list or negotiate at once, other methods are refused.
      req.resume();
      this.route(method, path, () => Promise.resolve('')).then(send, fail);
      return;
    }
    // A POST is admitted before its body is read: one at a time, a few waiting, the rest refused.
    if (this.admitted > MAX_WAITING_REQUESTS) {
      res.setHeader('connection', 'close');
      send({
        status: 503,
        body: `more than ${MAX_WAITING_REQUESTS} requests are waiting for this provider (BUSY); retry`,
        headers: { 'retry-after': '2' },
      });
      req.resume();
      return;
    }
    this.admitted++;
    let over = false;
    let broken = false;
    let late = false;
    // Listened to at once: a client that goes away while its request waits is no crash.
    req.on('error', () => {
      broken = true;
      res.destroy();
    });
    const body = (): Promise<string> =>
      new Promise((resolve, reject) => {
        if (broken) {
          reject(new HttpFailure(400, 'the request was not received whole'));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        const bodyTimeoutMs = this.options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
        const timer = setTimeout(() => {
          if (req.complete) return;
          late = true;
          over = true;
          res.setHeader('connection', 'close');
          reject(
            new HttpFailure(
              408,
              `the request body did not arrive within ${bodyTimeoutMs} ms (BODY_TIMEOUT); send it at once`,
            ),
          );
        }, bodyTimeoutMs);
        req.once('close', () => clearTimeout(timer));
        req.on('data', (chunk: Buffer) => {
          if (over) return;
          size += chunk.length;
          if (size > maxBody) {
            over = true;
            res.setHeader('connection', 'close');
            reject(new HttpFailure(413, tooLarge(maxBody).body as string));
            return;
          }
          chunks.push(chunk);
        });
        req.on('error', () => reject(new HttpFailure(400, 'the request was not received whole')));
        req.on('end', () => {
          clearTimeout(timer);
          if (!over) resolve(Buffer.concat(chunks).toString('utf8'));
        });
      });
    this.serialized(async () => {
      this.batch = [];
      try {
        return await this.route(method, path, body);
      } finally {
        const batch = this.batch;
        this.batch = undefined;
        this.logRefusals(batch, endpoint);
      }
    })
      .then(send, fail)
      .finally(() => {
        this.admitted--;
        // A body that did not arrive in time: the connection goes once the answer is out.
        if (late) {
          if (res.writableFinished) req.socket.destroy();
          else res.once('finish', () => req.socket.destroy());
        }
        // What was not read (an answer before the body) is drained, so the connection can close.
        else if (!req.complete) req.resume();
      });
  }

  private async route(method: string, path: string, body: () => Promise<string>): Promise<Answer> {
    if (path === '/') {
      if (method !== 'GET') return methodNotAllowed('GET');
      const domains = this.options.domains();
      if (!domains) throw new HttpFailure(503, 'the zones are not loaded yet; retry', 2);
      return { status: 200, body: domainFilter(domains) };
    }
    if (path === '/records') {
      if (method === 'GET') return { status: 200, body: this.list() };
      if (method === 'POST') {
        // Not read while the namespace may not write: the plan would be refused whole anyway.
        const wait = this.options.writer()?.rateWait?.(EXTERNALDNS_CREDENTIAL) ?? 0;
        if (wait > 0)
          throw new HttpFailure(
            503,
            `namespace ${this.options.namespace} has used its write rate (RATE_LIMITED); retry after ${Number.isFinite(wait) ? `${wait} s` : 'a quota change'}`,
            Number.isFinite(wait) ? Math.max(1, Math.ceil(wait)) : 60,
          );
        return this.apply(parseJson(await body()));
      }
      return methodNotAllowed('GET, POST');
    }
    if (path === '/adjustendpoints') {
      if (method !== 'POST') return methodNotAllowed('POST');
      return { status: 200, body: await this.adjust(parseJson(await body())) };
    }
    return {
      status: 404,
      body: 'not found; the ExternalDNS webhook provider answers GET /, GET and POST /records, POST /adjustendpoints (health: /healthz on the --http port)',
    };
  }

  private serialized<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => {});
    return run;
  }

  /** What this provider wrote into the namespace, as endpoints, in a stable order. */
  private list(): Endpoint[] {
    const out: Endpoint[] = [];
    for (const rs of this.options.recordSets()) {
      if (rs.metadata.namespace !== this.options.namespace) continue;
      if (rs.metadata.labels?.['dns.zonekeeper.dev/written-by'] !== EXTERNALDNS_CREDENTIAL) continue;
      const e = recordSetEndpoint(rs);
      if (e) out.push(e);
    }
    return out.sort((a, b) =>
      a.dnsName === b.dnsName ? a.recordType.localeCompare(b.recordType) : a.dnsName < b.dnsName ? -1 : 1,
    );
  }

  /**
   * Resolves at the event loop's next turn once `yieldEvery` endpoints were judged since the last:
   * judging a large body is many short steps, with DNS answers and timers between them.
   */
  private turn(judged: number): Promise<void> | undefined {
    const every = Math.max(1, this.options.yieldEvery ?? DEFAULT_YIELD_EVERY);
    if (judged === 0 || judged % every !== 0) return undefined;
    return new Promise((resolve) => setImmediate(resolve));
  }

  /** The desired endpoints less those whose write would be refused (each refusal reported). */
  private async adjust(body: unknown): Promise<unknown[]> {
    if (!Array.isArray(body) && body !== null)
      throw new HttpFailure(400, 'the body is a JSON list of endpoints');
    const desired: { e: Endpoint; raw: unknown }[] = [];
    for (const [i, raw] of (body ?? []).entries()) {
      await this.turn(i);
      try {
        desired.push({ e: parseEndpoint(raw, `endpoints[${i}]`), raw });
      } catch (err) {
        const r = raw as Partial<Endpoint> | null;
        this.refuse(
          {
            dnsName: typeof r?.dnsName === 'string' ? r.dnsName : '',
            recordType: typeof r?.recordType === 'string' ? r.recordType : '',
          },
          'INVALID_CHANGE',
          (err as Error).message,
          'adjustendpoints',
        );
      }
    }
    // What this provider holds and the desired endpoints leave out: the plan will delete it.
    const wanted = new Set(desired.map(({ e }) => rrsetKey(e)));
    const going = new Set(
      this.list()
        .map((e) => rrsetKey(e))
        .filter((k) => !wanted.has(k)),
    );
    const out: unknown[] = [];
    const taken = new Map<string, Endpoint>();
    for (const [i, { e, raw }] of desired.entries()) {
      await this.turn(i);
      const why = this.whyRefused(e, taken, going);
      if (why) {
        this.refuse(e, why.code, why.message, 'adjustendpoints');
        continue;
      }
      taken.set(rrsetKey(e), e);
      out.push(raw);
    }
    return out;
  }

  /** Why the write of `e` would be refused, as far as it can be known before writing. */
  private whyRefused(
    e: Endpoint,
    taken: Map<string, Endpoint>,
    going: ReadonlySet<string>,
  ): { code: WriteErrorCode; message: string } | undefined {
    let type: string;
    let upsert: Extract<RecordChange, { op: 'upsert' }> | undefined;
    try {
      type = endpointType(e);
      if (e.targets?.length) upsert = endpointUpsert(e) as Extract<RecordChange, { op: 'upsert' }>;
      else endpointUpsert({ ...e, targets: ['-'] });
    } catch (err) {
      return { code: 'INVALID_CHANGE', message: (err as Error).message };
    }
    const other = taken.get(rrsetKey(e));
    if (other)
      return {
        code: 'DUPLICATE_CHANGE',
        message: `${e.dnsName} ${type}: the endpoint with set identifier ${JSON.stringify(other.setIdentifier ?? '')} already defines this RRset; here one RRset is one endpoint (weighted or routed sets are not supported)`,
      };
    return this.options.precheck?.(endpointFqdn(e), type, upsert, going);
  }

  private refuse(
    e: Pick<Endpoint, 'dnsName' | 'recordType' | 'setIdentifier'>,
    code: string,
    message: string,
    stage: Refusal['stage'],
  ): void {
    const refusal: Refusal = {
      at: new Date().toISOString(),
      dnsName: e.dnsName,
      recordType: e.recordType,
      ...(e.setIdentifier ? { setIdentifier: e.setIdentifier } : {}),
      code,
      message,
      stage,
    };
    this.refusals.push(refusal);
    if (this.refusals.length > MAX_REFUSALS_KEPT)
      this.refusals.splice(0, this.refusals.length - MAX_REFUSALS_KEPT);
    this.refusedCounter?.(code, stage);
    if (this.batch) this.batch.push(refusal);
    else
      this.options.log('warn', 'ExternalDNS webhook: endpoint not written', {
        namespace: this.options.namespace,
        dnsName: e.dnsName,
        recordType: e.recordType,
        code,
        stage,
        message,
      });
    this.options.onRefused?.(refusal);
  }

  /**
   * One line for the refusals of a request, however many: counts per code and the first few
   * endpoints with why (a list of thousands refused each sync must not flood the log).
   */
  private logRefusals(batch: readonly Refusal[] | undefined, endpoint: string): void {
    if (!batch || batch.length === 0) return;
    const codes: Record<string, number> = {};
    for (const r of batch) codes[r.code] = (codes[r.code] ?? 0) + 1;
    this.options.log('warn', `ExternalDNS webhook: ${batch.length} endpoint(s) not written`, {
      namespace: this.options.namespace,
      request: endpoint,
      codes,
      examples: batch
        .slice(0, LOGGED_EXAMPLES)
        .map((r) => `${r.dnsName} ${r.recordType} (${r.code}): ${r.message}`.slice(0, 300)),
      ...(batch.length > LOGGED_EXAMPLES ? { more: batch.length - LOGGED_EXAMPLES } : {}),
    });
  }

  /** Applies a plan: every endpoint that can be written is, the others are refused; 204 unless retryable. */
  private async apply(body: unknown): Promise<Answer> {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new HttpFailure(400, 'the body is a JSON plan {create, updateOld, updateNew, delete}');
    const plan = body as Record<string, unknown>;
    const list = (field: string): Endpoint[] => {
      const v = plan[field];
      if (v === undefined || v === null) return [];
      if (!Array.isArray(v)) throw new HttpFailure(400, `${field} is a list of endpoints`);
      const out: Endpoint[] = [];
      for (const [i, raw] of v.entries()) {
        try {
          out.push(parseEndpoint(raw, `${field}[${i}]`));
        } catch (err) {
          const r = raw as Partial<Endpoint> | null;
          this.refuse(
            {
              dnsName: typeof r?.dnsName === 'string' ? r.dnsName : '',
              recordType: typeof r?.recordType === 'string' ? r.recordType : '',
            },
            'INVALID_CHANGE',
            (err as Error).message,
            'records',
          );
        }
      }
      return out;
    };
    const upserts = [...list('create'), ...list('updateNew')];
    const deletes = list('delete');
    list('updateOld'); // checked, not needed: each upsert states the whole RRset.
    const upserting = new Set(upserts.map((e) => rrsetKey(e)));
    // RRsets the plan deletes and does not state again: gone before its upserts are judged.
    const going = new Set(deletes.map((e) => rrsetKey(e)).filter((k) => !upserting.has(k)));
    const pending: { change: RecordChange; endpoint: Endpoint; create: boolean }[] = [];
    const upserted = new Map<string, Endpoint>();
    const held = new Set(this.list().map((e) => rrsetKey(e)));
    for (const [i, e] of upserts.entries()) {
      await this.turn(i);
      const other = upserted.get(rrsetKey(e));
      if (other) {
        this.refuse(
          e,
          'DUPLICATE_CHANGE',
          `${e.dnsName} ${e.recordType}: the endpoint with set identifier ${JSON.stringify(other.setIdentifier ?? '')} already defines this RRset in this plan; here one RRset is one endpoint`,
          'records',
        );
        continue;
      }
      let change: Extract<RecordChange, { op: 'upsert' }>;
      try {
        change = endpointUpsert(e) as Extract<RecordChange, { op: 'upsert' }>;
      } catch (err) {
        this.refuse(e, 'INVALID_CHANGE', (err as Error).message, 'records');
        continue;
      }
      // Judged here, every one, before any write: what the writer would refuse (TTL, records,
      // delegation, ownership) is refused in this answer, never one write request at a time.
      const why = this.options.precheck?.(change.name, change.type, change, going);
      if (why) {
        this.refuse(e, why.code, why.message, 'records');
        continue;
      }
      pending.push({ change: { ...change, exclusive: true }, endpoint: e, create: !held.has(rrsetKey(e)) });
      upserted.set(rrsetKey(e), e);
    }
    // The deletes go first: a name whose type changes (CNAME to A) has its old RRset deleted in the
    // same writer request as the new one is written, or in an earlier one (the writer remembers).
    const removals: typeof pending = [];
    for (const e of deletes) {
      // Replaced in the same plan (a set identifier changed): the upsert states the RRset.
      if (upserted.has(rrsetKey(e))) continue;
      let type: ReturnType<typeof endpointType>;
      try {
        type = endpointType(e);
      } catch {
        continue; // never written here: nothing to delete
      }
      upserted.set(rrsetKey(e), e);
      removals.push({ change: { op: 'delete', name: endpointFqdn(e), type }, endpoint: e, create: false });
    }
    for (const chunk of chunks([...removals, ...pending])) await this.applyChunk(chunk);
    return { status: 204 };
  }

  /**
   * One writer request; a change the writer refuses is dropped (reported) and the rest tried again,
   * so one refused endpoint never holds up the others. Retryable failures answer 5xx.
   */
  private async applyChunk(
    chunk: { change: RecordChange; endpoint: Endpoint; create: boolean }[],
  ): Promise<void> {
    let left = chunk;
    let quotaTried = false;
    while (left.length > 0) {
      const writer = this.options.writer();
      if (!writer) throw new HttpFailure(503, 'records cannot be written here now (UNAVAILABLE); retry', 2);
      try {
        await writer.apply(EXTERNALDNS_CREDENTIAL, { changes: left.map((p) => p.change) });
        return;
      } catch (e) {
        if (!(e instanceof WriteError)) throw e;
        switch (e.code) {
          case 'NOT_OWNER':
          case 'NOT_DELEGATED':
          case 'NAME_CONFLICT':
          case 'INVALID_CHANGE':
          case 'DUPLICATE_CHANGE':
          case 'REQUEST_TOO_LARGE':
            if (e.change !== undefined && left[e.change]) {
              this.refuse(left[e.change]!.endpoint, e.code, e.message, 'records');
              left = left.filter((_, i) => i !== e.change);
              continue;
            }
            for (const p of left) this.refuse(p.endpoint, e.code, e.message, 'records');
            return;
          case 'QUOTA_EXCEEDED': {
            // Over the namespace's quota: what would add record sets is refused; deletes and updates go on.
            const creates = quotaTried
              ? left.filter((p) => p.change.op === 'upsert')
              : left.filter((p) => p.create);
            if (creates.length === 0) {
              for (const p of left) this.refuse(p.endpoint, e.code, e.message, 'records');
              return;
            }
            for (const p of creates) this.refuse(p.endpoint, e.code, e.message, 'records');
            left = left.filter((p) => !creates.includes(p));
            quotaTried = true;
            continue;
          }
          case 'RATE_LIMITED':
            throw new HttpFailure(
              503,
              `${e.message} (RATE_LIMITED)`,
              Math.max(1, Math.ceil(e.retryAfterSeconds ?? 1)),
            );
          default:
            // UNAVAILABLE (the store, no leader): applied whole or not at all; ExternalDNS plans again.
            throw new HttpFailure(
              503,
              `${e.message} (${e.code})`,
              Math.max(1, Math.ceil(e.retryAfterSeconds ?? 2)),
            );
        }
      }
    }
  }
}

/** The plan's changes in requests within the writer's bounds (deletes last: a delete never frees a name early). */
function chunks<T extends { change: RecordChange }>(pending: T[]): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const p of pending) {
    const size = JSON.stringify(p.change).length;
    if (
      current.length > 0 &&
      (current.length >= DEFAULT_REQUEST_LIMITS.maxChanges || bytes + size > CHUNK_BYTES)
    ) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(p);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * ExternalDNS's domain filter (`endpoint.DomainFilter` in JSON): the domains, without the trailing
 * dot. None: a regular expression no name matches — an empty include list would match every name.
 */
export function domainFilter(domains: readonly string[]): { include?: string[]; regexInclude?: string } {
  const names = [
    ...new Set(domains.map((d) => d.replace(/\.$/, '').toLowerCase()).filter((d) => d !== '')),
  ].sort();
  return names.length > 0 ? { include: names } : { regexInclude: '^$' };
}

function parseJson(body: string): unknown {
  if (body.trim() === '') return undefined;
  try {
    return JSON.parse(body);
  } catch (e) {
    throw new HttpFailure(400, `the body is not JSON (${(e as Error).message})`);
  }
}

function tooLarge(maxBody: number): Answer {
  return {
    status: 413,
    body: `the body is larger than ${maxBody} bytes (REQUEST_TOO_LARGE); a plan this large is not taken`,
  };
}

function methodNotAllowed(allow: string): Answer {
  return { status: 405, headers: { allow }, body: `method not allowed; use ${allow}` };
}

export { EndpointError };
