/**
 * What a client that opens connections and sends nothing (or holds many) cannot do to an HTTP listener
 * held to its limits: take more than its share of connections, or keep one past the headers timeout.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import type net from 'node:net';
import { after, describe, test } from 'node:test';
import { attempt, heldConnection, silentConnection } from '../../test/support/http-clients.ts';
import {
  connectionsCheckingInterval,
  createLimitedHttpServer,
  DEFAULT_HTTP_CONNECTION_LIMITS,
} from './http-limits.ts';

describe('an HTTP listener held to its connection limits', () => {
  const sockets: net.Socket[] = [];
  const servers: http.Server[] = [];
  after(() => {
    for (const s of sockets) s.destroy();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });
  const start = async (limits: Partial<typeof DEFAULT_HTTP_CONNECTION_LIMITS>, refused?: string[]) => {
    const server = createLimitedHttpServer(
      { ...DEFAULT_HTTP_CONNECTION_LIMITS, keepAliveTimeoutMs: 60_000, ...limits },
      (_req, res) => res.end('ok\n'),
      (reason) => refused?.push(reason),
    );
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as net.AddressInfo).port;
  };

  test('one client address beyond its count is closed unanswered; another address is still served', {
    timeout: 10_000,
  }, async () => {
    const refused: string[] = [];
    const port = await start({ maxConnectionsPerClient: 2 }, refused);
    sockets.push(await heldConnection(port, '127.0.0.1'), await heldConnection(port, '127.0.0.1'));
    assert.equal(await attempt(port, '127.0.0.1'), 'closed');
    assert.equal(await attempt(port, '127.0.0.2'), 'answered');
    assert.deepEqual(refused, ['max-connections-per-client']);
    // A connection given back makes room again.
    sockets.pop()?.destroy();
    let outcome: string;
    do outcome = await attempt(port, '127.0.0.1');
    while (outcome === 'closed');
    assert.equal(outcome, 'answered');
  });

  test('beyond the listener’s count every address is closed unanswered', async () => {
    const refused: string[] = [];
    const port = await start({ maxConnections: 2 }, refused);
    sockets.push(await heldConnection(port, '127.0.0.3'), await heldConnection(port, '127.0.0.4'));
    assert.equal(await attempt(port, '127.0.0.5'), 'closed');
    assert.deepEqual(refused, ['max-connections']);
  });

  test('a connection that never sends its headers is closed after the headers timeout', {
    timeout: 10_000,
  }, async () => {
    const port = await start({ headersTimeoutMs: 100 });
    assert.match(await silentConnection(port), /^HTTP\/1\.1 408 /);
  });

  test('the timeouts are checked often enough to hold: a quarter of the headers timeout, at most 1 s', () => {
    assert.equal(connectionsCheckingInterval({ headersTimeoutMs: 100 }), 25);
    assert.equal(connectionsCheckingInterval({ headersTimeoutMs: 5_000 }), 1_000);
    assert.equal(connectionsCheckingInterval({ headersTimeoutMs: 1 }), 10);
  });
});
