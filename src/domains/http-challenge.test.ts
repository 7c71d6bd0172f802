/**
 * The HTTP challenge against stand-in web servers on loopback (allow-listed explicitly, as loopback
 * is blocked by default): the deadline of the whole check against a server that trickles its answer,
 * the ports a redirect may name, private networks never reached, and status messages that say nothing
 * about the connection beyond a stable code.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { parseNetwork } from '../zones/domain-verification.ts';
import { type HttpChallengeOptions, httpChallenge } from './http-challenge.ts';

const LOOPBACK = [parseNetwork('127.0.0.1/32')!];
const TOKEN = '0f6c2b1e-3d4a-4c5b-9e8f-7a6b5c4d3e2f';

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

const close = (server: http.Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

const onLoopback: HttpChallengeOptions = { addresses: async () => ['127.0.0.1'], allow: LOOPBACK };

describe('HTTP challenge', { timeout: 30_000 }, () => {
  /** Sends headers and then a byte now and then, never ending; counts the connections still open. */
  let trickle: { server: http.Server; port: number };
  let open = 0;
  let token: { server: http.Server; port: number };
  let redirect: { server: http.Server; port: number };
  let silent: { server: http.Server; port: number };

  before(async () => {
    trickle = await listen((_req, res) => {
      open++;
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('x'), 20);
      res.on('close', () => {
        clearInterval(timer);
        open--;
      });
    });
    token = await listen((_req, res) => res.writeHead(200).end(TOKEN));
    redirect = await listen((req, res) => {
      const to = new URL(req.url!, 'http://x').searchParams.get('to')!;
      res.writeHead(302, { location: to }).end();
    });
    silent = await listen(() => {
      // accepts and never answers
    });
  });
  after(async () => {
    for (const s of [trickle, token, redirect, silent]) if (s) await close(s.server);
  });

  test('a server that trickles its answer is cut off at the deadline of the whole check, and its connection closed', async () => {
    const result = await httpChallenge(`http://web.test:${trickle.port}/t`, 'web.test', TOKEN, {
      ...onLoopback,
      timeoutMs: 60_000, // far beyond the test: only the deadline of the whole check ends it
      deadlineMs: 300,
    });
    assert.equal(result.passed, false);
    assert.equal(!result.passed && result.reason, 'RequestFailed');
    assert.match(result.message, /HTTP_DEADLINE_EXCEEDED/);
    // The slot is free and so is the socket: the server sees the connection go.
    for (let i = 0; open > 0 && i < 200; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(open, 0, 'the connection was closed');
  });

  test('the per-request limit counts from connection to last byte, not per idle socket', async () => {
    const result = await httpChallenge(`http://web.test:${trickle.port}/t`, 'web.test', TOKEN, {
      ...onLoopback,
      timeoutMs: 300,
      deadlineMs: 60_000,
    });
    assert.equal(!result.passed && result.reason, 'RequestFailed');
    assert.match(result.message, /HTTP_REQUEST_FAILED/);
  });

  test('a redirect within the domain is followed to port 80, 443 or the challenge port only', async () => {
    const via = (to: string) =>
      httpChallenge(
        `http://web.test:${redirect.port}/r?to=${encodeURIComponent(to)}`,
        'web.test',
        TOKEN,
        onLoopback,
      );
    // Another port under the domain (the token is served there): refused, never connected to.
    const other = await via(`http://www.web.test:${token.port}/token`);
    assert.equal(other.passed, false);
    assert.equal(!other.passed && other.reason, 'RedirectRefused');
    assert.match(other.message, /ports 80 and 443 only/);
    // The challenge URL's own port is followed (the redirect server answers the redirect again here).
    const same = await via(
      `http://www.web.test:${redirect.port}/r?to=${encodeURIComponent('http://web.test:8080/')}`,
    );
    assert.equal(!same.passed && same.reason, 'RedirectRefused', 'the second hop names port 8080');
  });

  test('private and shared networks are never reached unless allow-listed; the status names no address', async () => {
    for (const address of ['10.0.0.1', '172.16.5.4', '192.168.1.1', '100.64.0.1', 'fd00::1', '127.0.0.1']) {
      const result = await httpChallenge(`http://web.test:${token.port}/t`, 'web.test', TOKEN, {
        addresses: async () => [address],
      });
      assert.equal(!result.passed && result.reason, 'AddressNotAllowed', address);
      assert.ok(!result.message.includes(address), `${address} not in ${result.message}`);
    }
    const allowed = await httpChallenge(`http://web.test:${token.port}/t`, 'web.test', TOKEN, onLoopback);
    assert.equal(allowed.passed, true, 'loopback allow-listed (as the tests do)');
  });

  test('a refused and a silent port read the same in the status (no port-scan oracle); details only in `detail`', async () => {
    const refusedPort = await (async () => {
      const s = await listen(() => {});
      const port = s.port;
      await close(s.server);
      return port;
    })();
    const options = { ...onLoopback, timeoutMs: 300, deadlineMs: 60_000 };
    const refused = await httpChallenge(`http://web.test:${refusedPort}/t`, 'web.test', TOKEN, options);
    const quiet = await httpChallenge(`http://web.test:${silent.port}/t`, 'web.test', TOKEN, options);
    assert.ok(!refused.passed && !quiet.passed);
    assert.equal(refused.reason, 'RequestFailed');
    assert.equal(quiet.reason, 'RequestFailed');
    const strip = (m: string, port: number) => m.replace(String(port), 'PORT');
    assert.equal(strip(refused.message, refusedPort), strip(quiet.message, silent.port));
    assert.doesNotMatch(refused.message, /ECONNREFUSED|127\.0\.0\.1/);
    assert.match(refused.detail ?? '', /ECONNREFUSED/, 'the operator log gets the cause');
  });
});
