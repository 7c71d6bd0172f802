import http from 'node:http';
import { splitHostPort } from '../util/host-port.ts';

export interface HttpEndpoints {
  /** Liveness: the process is running its event loop. */
  healthy: () => boolean;
  /** Readiness: sources synced and the first reconcile pass done. */
  ready: () => { ready: boolean; message: string };
  metrics: () => string;
  /** JSON for `/api/v1/resources`. */
  resources: () => unknown;
}

/** `/healthz`, `/readyz`, `/metrics` (Prometheus text) and `/api/v1/resources` (JSON), read-only. */
export class HttpServer {
  private readonly server: http.Server;
  private readonly listen: string;

  constructor(listen: string, endpoints: HttpEndpoints) {
    this.listen = listen;
    this.server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
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
            send(res, 404, 'text/plain', 'not found; try /healthz, /readyz, /metrics or /api/v1/resources\n');
        }
      } catch (e) {
        send(res, 500, 'text/plain', `internal error: ${(e as Error).message}\n`);
      }
    });
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
