/**
 * Raw HTTP clients for the connection-limit tests of the HTTP listeners (the HTTP API, the homelab
 * DNS API, the ExternalDNS webhook), each from a loopback address of its choosing.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, test } from 'node:test';

/** A kept-alive connection from `localAddress` that had an answer, so the listener holds it. */
export function heldConnection(port: number, localAddress: string, path = '/'): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`),
    );
    socket.once('data', () => resolve(socket));
    socket.once('error', reject);
    socket.once('close', () =>
      reject(new Error(`the connection from ${localAddress} was closed unanswered`)),
    );
  });
}

/** What a request from `localAddress` gets: an answer, or the connection closed with nothing said. */
export function attempt(port: number, localAddress: string, path = '/'): Promise<'answered' | 'closed'> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
    );
    let answered = false;
    socket.on('data', () => {
      answered = true;
    });
    socket.on('error', () => {});
    socket.once('close', () => resolve(answered ? 'answered' : 'closed'));
  });
}

/** What the listener sent once it closed a connection that sent nothing (from `localAddress`). */
export function silentConnection(port: number, localAddress?: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    socket.on('error', () => {});
    socket.once('close', () => resolve(text));
  });
}

/**
 * The tests every limited HTTP listener passes (src/util/http-limits.ts), for a listener built with
 * `maxConnectionsPerClient: 2` and a headers timeout of about 100 ms: a third connection from one
 * address is closed while another address is served, and a connection that sends nothing gets 408.
 */
export function connectionLimitTests(
  listener: { start(): Promise<unknown>; stop(): Promise<unknown>; address(): { port: number } },
  path: string,
): void {
  const sockets: net.Socket[] = [];
  const started = listener.start();
  after(async () => {
    for (const s of sockets) s.destroy();
    await listener.stop();
  });

  test('connections from one address beyond the configured count are closed; another address is served', {
    timeout: 10_000,
  }, async () => {
    await started;
    const { port } = listener.address();
    sockets.push(
      await heldConnection(port, '127.0.0.1', path),
      await heldConnection(port, '127.0.0.1', path),
    );
    assert.equal(await attempt(port, '127.0.0.1', path), 'closed');
    assert.equal(await attempt(port, '127.0.0.2', path), 'answered');
  });

  test('a connection that never sends its headers is closed after the configured headers timeout', {
    timeout: 10_000,
  }, async () => {
    await started;
    assert.match(await silentConnection(listener.address().port, '127.0.0.3'), /^HTTP\/1\.1 408 /);
  });
}
