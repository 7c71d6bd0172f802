import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * The ports tests choose from: below the kernel's ephemeral range, so that no outgoing connection of
 * any process (an API server dialling etcd, a resolver's query) can take a port between the moment it
 * is found free here and the moment the server under test binds it. Linux hands out both outgoing
 * source ports and `listen(0)` ports from `ip_local_port_range` (32768–60999 by default); a port found
 * by `listen(0)` was taken by such a connection in one CI run ("bind: address already in use").
 */
const RANGE = ((): [number, number] | undefined => {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (low >= 12_000) return [10_000, low - 1];
  } catch {
    // not Linux: fall back to the kernel's choice
  }
  return undefined;
})();

async function bindsTcp(port: number): Promise<number | undefined> {
  const server = net.createServer();
  const bound = await new Promise<number | undefined>((resolve) => {
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
  });
  if (bound !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  return bound;
}

async function bindsUdp(port: number): Promise<boolean> {
  const socket = dgram.createSocket('udp4');
  const free = await new Promise<boolean>((resolve) => {
    socket.once('error', () => resolve(false));
    socket.bind(port, '127.0.0.1', () => resolve(true));
  });
  if (free) await new Promise<void>((resolve) => socket.close(() => resolve()));
  return free;
}

/**
 * A loopback port free at the time of the call: for TCP, and for UDP too unless `udp` is false
 * (a DNS server needs both on one number; the two port spaces are separate, so both are checked).
 * Chosen at random below the ephemeral range where the kernel says where that is.
 */
export async function freePort(udp = true): Promise<number> {
  for (;;) {
    const wanted = RANGE ? RANGE[0] + Math.floor(Math.random() * (RANGE[1] - RANGE[0] + 1)) : 0;
    const port = await bindsTcp(wanted);
    if (port === undefined) continue;
    if (!udp || (await bindsUdp(port))) return port;
  }
}
