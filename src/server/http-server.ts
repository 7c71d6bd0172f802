import type http from 'node:http';
import { splitHostPort } from '../util/host-port.ts';
import { createLimitedHttpServer, type HttpConnectionLimits } from '../util/http-limits.ts';

export interface HttpEndpoints {
  /** Liveness: the process is running its event loop. */
  healthy: () => boolean;
  /** Readiness: sources synced and the first reconcile pass done. */
  ready: () => { ready: boolean; message: string };
  metrics: () => string;
  /** JSON for `/api/v1/resources`. */
  resources: () => unknown;
  /** POST endpoints by path (the leader's write endpoint, ADR 0016); none by default. */
  post?: Record<string, PostRoute>;
}

/**
 * A POST endpoint: the body is read whole, up to `maxBodyBytes` (larger: 413 before the handler runs),
 * and only once `authorize` (when given) accepted the headers: an unauthenticated caller's body is
 * never buffered.
 */
export interface PostRoute {
  maxBodyBytes: number;
  /** A refusal from the headers alone, or undefined to read the body and call `handle`. */
  authorize?(headers: http.IncomingHttpHeaders): Promise<PostResponse | undefined>;
  handle(request: { headers: http.IncomingHttpHeaders; body: Buffer }): Promise<PostResponse>;
}

export interface PostResponse {
  status: number;
  headers?: Record<string, string>;
  /** JSON text. */
  body: string;
}

/**
 * The listener's connection limits unless configured (`--http-max-connections`,
 * `--http-max-connections-per-client`, `--http-headers-timeout`): health checks, scrapes and the servers'
 * forwarded writes need far fewer; a slow body does not hold a connection open.
 */
export const DEFAULT_HTTP_SERVER_LIMITS: HttpConnectionLimits = {
  maxConnections: 512,
  maxConnectionsPerClient: 64,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
};

/**
 * `/healthz`, `/readyz`, `/metrics` (Prometheus text) and `/api/v1/resources` (JSON), read-only; and
 * the POST endpoints given in `post`.
 */
export class HttpServer {
  private readonly server: http.Server;
  private readonly listen: string;

  constructor(listen: string, endpoints: HttpEndpoints, connectionLimits?: Partial<HttpConnectionLimits>) {
    this.listen = listen;
    this.server = createLimitedHttpServer(
      { ...DEFAULT_HTTP_SERVER_LIMITS, ...connectionLimits },
      (req, res) => {
        const url = new URL(req.url ?? '/', 'http://localhost');
        const route = endpoints.post?.[url.pathname];
        if (req.method === 'POST' && route) {
          servePost(req, res, route);
          return;
        }
        if (route || (req.method !== 'GET' && req.method !== 'HEAD')) {
          const allow = route ? 'POST' : 'GET, HEAD';
          res.writeHead(405, { allow, 'content-type': 'text/plain' }).end('method not allowed\n');
          return;
        }
        try {
          switch (url.pathname) {
            case '/healthz':
              send(
                res,
                endpoints.healthy() ? 200 : 503,
                'text/plain',
                endpoints.healthy() ? 'ok\n' : 'unhealthy\n',
              );
              return;
            case '/readyz': {
              const r = endpoints.ready();
              send(res, r.ready ? 200 : 503, 'text/plain', `${r.message}\n`);
              return;
            }
            case '/metrics':
              send(res, 200, 'text/plain; version=0.0.4; charset=utf-8', endpoints.metrics());
              return;
            case '/api/v1/resources':
              send(res, 200, 'application/json', `${JSON.stringify(endpoints.resources(), null, 2)}\n`);
              return;
            default:
              send(
                res,
                404,
                'text/plain',
                'not found; try /healthz, /readyz, /metrics or /api/v1/resources\n',
              );
          }
        } catch (e) {
          send(res, 500, 'text/plain', `internal error: ${(e as Error).message}\n`);
        }
      },
    );
  }

  address(): { host: string; port: number } {
    const a = this.server.address() as { address: string; port: number };
    return { host: a.address, port: a.port };
  }

  async start(): Promise<void> {
    const { host, port } = splitHostPort(this.listen, 8080);
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
}

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
}

function servePost(req: http.IncomingMessage, res: http.ServerResponse, route: PostRoute): void {
  const tooLarge = () =>
    send(
      res.setHeader('connection', 'close'),
      413,
      'application/json',
      `${JSON.stringify({ error: { code: 'REQUEST_TOO_LARGE', message: `the body is larger than ${route.maxBodyBytes} bytes` } })}\n`,
    );
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > route.maxBodyBytes) {
    tooLarge();
    req.resume();
    return;
  }
  req.on('error', () => res.destroy());
  if (!route.authorize) {
    readBody(req, res, route, tooLarge);
    return;
  }
  // The stream stays paused (no 'data' listener) until the headers are judged.
  route.authorize(req.headers).then(
    (refusal) => {
      if (!refusal) return readBody(req, res, route, tooLarge);
      res.setHeader('connection', 'close');
      respond(res, refusal);
      req.resume();
    },
    (e: unknown) => failed(res, e),
  );
}

function respond(res: http.ServerResponse, answer: PostResponse): void {
  res
    .writeHead(answer.status, {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      ...answer.headers,
    })
    .end(answer.body);
}

function failed(res: http.ServerResponse, e: unknown): void {
  send(
    res,
    500,
    'application/json',
    `${JSON.stringify({ error: { code: 'UNAVAILABLE', message: `internal error: ${(e as Error).message}` } })}\n`,
  );
}

function readBody(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  route: PostRoute,
  tooLarge: () => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (chunk: Buffer) => {
    if (over) return;
    size += chunk.length;
    if (size > route.maxBodyBytes) {
      over = true;
      tooLarge();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (over) return;
    route.handle({ headers: req.headers, body: Buffer.concat(chunks) }).then(
      (answer) => respond(res, answer),
      (e: unknown) => failed(res, e),
    );
  });
}
