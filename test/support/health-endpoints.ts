/**
 * Real endpoints for health-check tests: HTTP, HTTPS (a test CA and a certificate for a host name) and
 * TCP listeners on loopback addresses, each switched up and down by the test.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

export interface Endpoint {
  address: string;
  port: number;
  /** up: answers (HTTP 200 "ok"); down: HTTP 503 for HTTP(S), connections refused for TCP. */
  setUp(up: boolean): Promise<void>;
  close(): Promise<void>;
}

/** An HTTP or HTTPS endpoint answering GET with 200 "ok" while up and 503 while down. */
export async function httpEndpoint(
  address: string,
  options: { tls?: { key: string; cert: string }; port?: number } = {},
): Promise<Endpoint & { hosts: string[] }> {
  let up = true;
  const hosts: string[] = [];
  const handler: http.RequestListener = (req, res) => {
    hosts.push(req.headers.host ?? '');
    if (req.url === '/redirect') {
      res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
      return;
    }
    res.writeHead(up ? 200 : 503, { 'content-type': 'text/plain' }).end(up ? 'ok' : 'down');
  };
  const server = options.tls ? https.createServer(options.tls, handler) : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, address, resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    address,
    port,
    hosts,
    async setUp(value) {
      up = value;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A TCP endpoint: listening while up, closed (connections refused) while down. */
export async function tcpEndpoint(address: string, port = 0): Promise<Endpoint> {
  let server: net.Server | undefined;
  const sockets = new Set<net.Socket>();
  const listen = async (p: number) => {
    server = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.end();
    });
    await new Promise<void>((resolve) => server!.listen(p, address, resolve));
    return (server.address() as net.AddressInfo).port;
  };
  const bound = await listen(port);
  const endpoint: Endpoint = {
    address,
    port: bound,
    async setUp(up) {
      if (up && !server) await listen(bound);
      if (!up && server) {
        for (const s of sockets) s.destroy();
        const s = server;
        server = undefined;
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    },
    async close() {
      await endpoint.setUp(false);
    },
  };
  return endpoint;
}

/** A test CA and a certificate for `host` signed by it (PEM); `caFile` is for NODE_EXTRA_CA_CERTS. */
export async function testCertificate(
  host: string,
): Promise<{ key: string; cert: string; ca: string; caFile: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-health-tls-'));
  const openssl = (args: string[]) => execFileP('openssl', args, { cwd: dir });
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '1',
    '-subj',
    '/CN=zonekeeper test CA',
  ]);
  await openssl([
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'host.key',
    '-out',
    'host.csr',
    '-subj',
    `/CN=${host}`,
  ]);
  const ext = path.join(dir, 'ext.cnf');
  await import('node:fs/promises').then((fs) => fs.writeFile(ext, `subjectAltName=DNS:${host}\n`));
  await openssl([
    'x509',
    '-req',
    '-in',
    'host.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'host.crt',
    '-days',
    '1',
    '-extfile',
    ext,
  ]);
  const read = (f: string) => readFile(path.join(dir, f), 'utf8');
  return {
    key: await read('host.key'),
    cert: await read('host.crt'),
    ca: await read('ca.crt'),
    caFile: path.join(dir, 'ca.crt'),
  };
}
