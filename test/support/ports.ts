import dgram from 'node:dgram';
import net from 'node:net';

/**
 * A loopback port free at the time of the call: for TCP, and for UDP too unless `udp` is false
 * (a DNS server needs both on one number; the two port spaces are separate, so both are checked).
 */
export async function freePort(udp = true): Promise<number> {
  for (;;) {
    const server = net.createServer();
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
    let free = true;
    if (udp) {
      const socket = dgram.createSocket('udp4');
      free = await new Promise<boolean>((resolve) => {
        socket.once('error', () => resolve(false));
        socket.bind(port, '127.0.0.1', () => resolve(true));
      });
      if (free) await new Promise<void>((resolve) => socket.close(() => resolve()));
    }
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if (free) return port;
  }
}
