import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { PowerDnsClient, zoneId } from './client.ts';
import type { PowerDnsError } from './errors.ts';

const run = promisify(execFile);

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

async function serve(handler: Handler, tls?: { key: string; cert: string }) {
  const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => handler(req, res, body));
  };
  const server = tls ? https.createServer(tls, listener) : http.createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('PowerDnsClient', () => {
  test('sends the API key as X-API-Key and JSON bodies; 2xx and expected statuses come back', async () => {
    const seen: { method?: string; url?: string; key?: string; type?: string; body: string }[] = [];
    const server = await serve((req, res, body) => {
      seen.push({
        method: req.method,
        url: req.url,
        key: req.headers['x-api-key'] as string,
        type: req.headers['content-type'] as string,
        body,
      });
      if (req.url?.includes('missing')) {
        res.writeHead(404).end('Not Found');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"id":"localhost","version":"4.7.3"}');
    });
    const client = new PowerDnsClient({
      url: `${server.url}/`,
      serverId: 'localhost',
      apiKey: async () => 's3cret',
      timeoutMs: 2000,
    });
    try {
      const info = await client.json<{ version: string }>('GET', client.serverPath(), 'GET server');
      assert.equal(info.version, '4.7.3');
      await client.request('PATCH', client.zonePath('_tcp.example.com.'), 'PATCH', { body: { rrsets: [] } });
      const missing = await client.request('GET', client.zonePath('missing.example.'), 'GET', {
        expect: [404],
      });
      assert.equal(missing.status, 404);
      await assert.rejects(
        client.request('GET', client.zonePath('missing.example.'), 'GET zone missing.example.'),
        {
          code: 'PDNS_SERVER_NOT_FOUND',
        },
      );
      assert.equal(seen[0]!.url, '/api/v1/servers/localhost');
      assert.equal(seen[0]!.key, 's3cret');
      assert.equal(seen[1]!.url, '/api/v1/servers/localhost/zones/%3D5Ftcp.example.com.');
      assert.equal(seen[1]!.type, 'application/json');
      assert.equal(seen[1]!.body, '{"rrsets":[]}');
    } finally {
      client.close();
      await server.close();
    }
  });

  test('a 401 reads the key again once (rotation); a key that cannot be read is reported without the key', async () => {
    let calls = 0;
    const server = await serve((req, res) => {
      calls++;
      if (req.headers['x-api-key'] !== 'new-key') res.writeHead(401).end('Unauthorized');
      else res.writeHead(200).end('{}');
    });
    let key = 'old-key';
    const client = new PowerDnsClient({
      url: server.url,
      serverId: 'localhost',
      apiKey: async () => key,
      timeoutMs: 2000,
    });
    try {
      await client.request('GET', client.serverPath(), 'GET server').catch(() => {});
      key = 'new-key';
      await client.request('GET', client.serverPath(), 'GET server');
      assert.equal(calls, 4, 'old key twice (second read still old), then old key once more and the new key');
      const failing = new PowerDnsClient({
        url: server.url,
        serverId: 'localhost',
        apiKey: async () => {
          throw new Error('secret file /run/key: ENOENT');
        },
        timeoutMs: 2000,
      });
      await assert.rejects(failing.request('GET', failing.serverPath(), 'GET server'), (e: PowerDnsError) => {
        assert.equal(e.code, 'PDNS_API_KEY');
        assert.equal(e.reason, 'BackendRejected');
        assert.match(e.message, /cannot read the PowerDNS API key: secret file \/run\/key: ENOENT/);
        return true;
      });
      const wrong = new PowerDnsClient({
        url: server.url,
        serverId: 'localhost',
        apiKey: async () => 'wrong',
        timeoutMs: 2000,
      });
      await assert.rejects(wrong.request('GET', wrong.serverPath(), 'GET server'), (e: PowerDnsError) => {
        assert.equal(e.code, 'PDNS_UNAUTHORIZED');
        assert.doesNotMatch(e.message, /wrong/, 'the key never appears in messages');
        return true;
      });
    } finally {
      client.close();
      await server.close();
    }
  });

  test('a server that does not answer in time → PDNS_TIMEOUT; nobody listening → PDNS_UNREACHABLE', async () => {
    const server = await serve(() => {
      /* never answers */
    });
    const slow = new PowerDnsClient({
      url: server.url,
      serverId: 'localhost',
      apiKey: async () => 'k',
      timeoutMs: 150,
    });
    const started = performance.now();
    await assert.rejects(slow.request('GET', slow.serverPath(), 'GET server'), { code: 'PDNS_TIMEOUT' });
    assert.ok(performance.now() - started < 2000);
    slow.close();
    await server.close();
    const gone = new PowerDnsClient({
      url: server.url,
      serverId: 'localhost',
      apiKey: async () => 'k',
      timeoutMs: 2000,
    });
    await assert.rejects(gone.request('GET', gone.serverPath(), 'GET server'), {
      code: 'PDNS_UNREACHABLE',
      reason: 'BackendUnreachable',
    });
  });

  test('writes go one at a time (SQLite deadlocks on two); reads go in parallel', async () => {
    let inFlight = 0;
    let most = { PATCH: 0, GET: 0 };
    // GETs are answered once two are in flight (a client that sends them one at a time waits for
    // the fallback timer and is caught by the count), so the check does not depend on how fast
    // this machine runs; PATCHes are held a while, long enough for a second one to arrive if the
    // client sent it.
    const heldGets: (() => void)[] = [];
    const releaseGets = () => {
      for (const release of heldGets.splice(0)) release();
    };
    const server = await serve((req, res) => {
      inFlight++;
      const method = req.method as 'PATCH' | 'GET';
      most = { ...most, [method]: Math.max(most[method], inFlight) };
      const answer = () => {
        inFlight--;
        res.writeHead(method === 'GET' ? 200 : 204).end(method === 'GET' ? '{}' : '');
      };
      if (method === 'GET') {
        heldGets.push(answer);
        if (heldGets.length === 2) releaseGets();
        else setTimeout(releaseGets, 1000);
        return;
      }
      setTimeout(answer, 40);
    });
    const client = new PowerDnsClient({
      url: server.url,
      serverId: 'localhost',
      apiKey: async () => 'k',
      timeoutMs: 5000,
    });
    try {
      const patch = () => client.request('PATCH', client.zonePath('a.'), 'PATCH', { body: { rrsets: [] } });
      await Promise.all([patch(), patch(), patch()]);
      assert.equal(most.PATCH, 1);
      await Promise.all([
        client.request('GET', client.serverPath(), 'GET'),
        client.request('GET', client.serverPath(), 'GET'),
      ]);
      assert.equal(most.GET, 2);
      // A failed write does not block the next one.
      await server.close();
      await assert.rejects(patch(), { code: 'PDNS_UNREACHABLE' });
      await assert.rejects(patch(), { code: 'PDNS_UNREACHABLE' });
    } finally {
      client.close();
      // A failed assertion above must not leave the server listening: the file would never end.
      await server.close();
    }
  });

  test('the zone id is PowerDNS apiZoneNameToId', () => {
    assert.equal(zoneId('example.com.'), 'example.com.');
    assert.equal(zoneId('_acme._tcp.example.com.'), '=5Facme.=5Ftcp.example.com.');
    assert.equal(zoneId('.'), '=2E');
  });
});

describe('PowerDnsClient over TLS', () => {
  let dir: string;
  let tls: { key: string; cert: string; ca: string } | undefined;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-pdns-tls-'));
    try {
      // A throwaway CA and a certificate for 127.0.0.1 signed by it.
      const f = (name: string) => path.join(dir, name);
      await run('openssl', [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        f('ca.key'),
        '-out',
        f('ca.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=zonekeeper test CA',
      ]);
      await run('openssl', [
        'req',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        f('server.key'),
        '-out',
        f('server.csr'),
        '-subj',
        '/CN=pdns.test',
      ]);
      await writeFile(f('ext.cnf'), 'subjectAltName=DNS:pdns.test,IP:127.0.0.1\n');
      await run('openssl', [
        'x509',
        '-req',
        '-in',
        f('server.csr'),
        '-CA',
        f('ca.pem'),
        '-CAkey',
        f('ca.key'),
        '-CAcreateserial',
        '-out',
        f('server.pem'),
        '-days',
        '1',
        '-extfile',
        f('ext.cnf'),
      ]);
      tls = {
        key: await readFile(f('server.key'), 'utf8'),
        cert: await readFile(f('server.pem'), 'utf8'),
        ca: f('ca.pem'),
      };
    } catch {
      tls = undefined;
    }
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('trusts the CA of tls.caFile; refuses an unknown CA with PDNS_TLS; insecureSkipVerify skips the check', async (t) => {
    if (!tls) {
      t.skip('openssl is not available to make a test certificate');
      return;
    }
    const server = await serve((_req, res) => res.writeHead(200).end('{"version":"tls"}'), tls);
    const make = (options: { caFile?: string; insecureSkipVerify?: boolean; serverName?: string }) =>
      new PowerDnsClient({
        url: server.url,
        serverId: 'localhost',
        apiKey: async () => 'k',
        timeoutMs: 2000,
        tls: options,
      });
    const clients: PowerDnsClient[] = [];
    try {
      const trusted = make({ caFile: tls.ca });
      clients.push(trusted);
      assert.equal(
        (await trusted.json<{ version: string }>('GET', trusted.serverPath(), 'GET server')).version,
        'tls',
      );
      const named = make({ caFile: tls.ca, serverName: 'pdns.test' });
      clients.push(named);
      assert.equal(
        (await named.json<{ version: string }>('GET', named.serverPath(), 'GET server')).version,
        'tls',
      );
      const untrusted = make({});
      clients.push(untrusted);
      await assert.rejects(
        untrusted.request('GET', untrusted.serverPath(), 'GET server'),
        (e: PowerDnsError) => {
          assert.equal(e.code, 'PDNS_TLS');
          assert.match(e.message, /set tls\.caFile/);
          return true;
        },
      );
      const skip = make({ insecureSkipVerify: true });
      clients.push(skip);
      assert.equal(
        (await skip.json<{ version: string }>('GET', skip.serverPath(), 'GET server')).version,
        'tls',
      );
      const missing = make({ caFile: path.join(dir, 'nope.pem') });
      clients.push(missing);
      await assert.rejects(
        missing.request('GET', missing.serverPath(), 'GET server'),
        /cannot read tls\.caFile/,
      );
    } finally {
      for (const c of clients) c.close();
      await server.close();
    }
  });
});
