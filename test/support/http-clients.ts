/**
 * Raw HTTP clients for the connection-limit tests of the HTTP listeners (the HTTP API, the homelab
 * DNS API, the ExternalDNS webhook), each from a loopback address of its choosing.
 */
import net from 'node:net';

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
