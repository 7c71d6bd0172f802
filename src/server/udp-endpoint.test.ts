import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { UdpEndpoint, type UdpPath } from './udp-endpoint.ts';

async function bound(type: 'udp4' | 'udp6', host: string): Promise<dgram.Socket> {
  const socket = dgram.createSocket(type);
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, host, () => resolve());
  });
  return socket;
}

async function hasIPv6Loopback(): Promise<boolean> {
  try {
    const s = await bound('udp6', '::1');
    s.close();
    return true;
  } catch {
    return false;
  }
}

/** An echo server on `path`: answers every datagram with its bytes reversed. */
async function echo(type: 'udp4' | 'udp6', host: string, path: UdpPath) {
  const socket = await bound(type, host);
  const errors: Error[] = [];
  const endpoint: UdpEndpoint = new UdpEndpoint(
    socket,
    (msg, address, port) => endpoint.send(Buffer.from(msg).reverse(), port, address),
    (e) => errors.push(e),
    path,
  );
  return { socket, endpoint, errors, port: socket.address().port };
}

async function roundTrip(type: 'udp4' | 'udp6', host: string, port: number, payloads: Buffer[]) {
  const client = await bound(type, host);
  try {
    const got: Buffer[] = [];
    const all = new Promise<void>((resolve) =>
      client.on('message', (m) => {
        got.push(m);
        if (got.length === payloads.length) resolve();
      }),
    );
    for (const p of payloads) client.send(p, port, host);
    await all;
    return got;
  } finally {
    client.close();
  }
}

describe('UdpEndpoint', () => {
  test('on the pinned Node the handle path is available (a Node upgrade that removes it shows here)', async () => {
    const socket = await bound('udp4', '127.0.0.1');
    try {
      assert.equal(
        new UdpEndpoint(
          socket,
          () => {},
          () => {},
        ).path,
        'handle',
      );
    } finally {
      socket.close();
    }
  });

  for (const path of ['handle', 'dgram'] as const) {
    test(`${path} path: datagrams in, answers out, over IPv4 and IPv6, many in a burst`, async (t) => {
      const families: ['udp4' | 'udp6', string][] = [['udp4', '127.0.0.1']];
      if (await hasIPv6Loopback()) families.push(['udp6', '::1']);
      else t.diagnostic('no IPv6 loopback here: IPv4 only');
      for (const [type, host] of families) {
        const server = await echo(type, host, path);
        try {
          assert.equal(server.endpoint.path, path);
          const payloads = Array.from({ length: 100 }, (_, i) => Buffer.from(`query-${i}-${'x'.repeat(i)}`));
          const got = await roundTrip(type, host, server.port, payloads);
          const want = payloads.map((p) => Buffer.from(p).reverse().toString()).sort();
          assert.deepEqual(got.map((g) => g.toString()).sort(), want);
          assert.deepEqual(server.errors, []);
        } finally {
          server.socket.close();
        }
      }
    });

    test(`${path} path: a send on a closed socket is reported, not thrown`, async () => {
      const server = await echo('udp4', '127.0.0.1', path);
      server.socket.close();
      assert.equal(server.endpoint.send(Buffer.from('x'), 9, '127.0.0.1'), false);
    });
  }

  test('handle path: sends that libuv queues (no immediate send) complete, and their requests are not reused', async () => {
    // Node's --test-udp-no-try-send makes every send take the queued path that a full socket buffer
    // takes in production; an echo server in such a process must still answer every datagram.
    const child = `
      import dgram from 'node:dgram';
      import { UdpEndpoint } from ${JSON.stringify(new URL('./udp-endpoint.ts', import.meta.url).href)};
      const server = dgram.createSocket('udp4');
      await new Promise((r) => server.bind(0, '127.0.0.1', r));
      const endpoint = new UdpEndpoint(server, (m, a, p) => endpoint.send(Buffer.from(m).reverse(), p, a), () => {});
      const client = dgram.createSocket('udp4');
      await new Promise((r) => client.bind(0, '127.0.0.1', r));
      // Windows of 50 in flight: a burst of hundreds overflows the sockets' default buffers.
      let got = 0;
      let waiting = () => {};
      client.on('message', () => { got++; waiting(); });
      for (let w = 0; w < 10; w++) {
        const want = (w + 1) * 50;
        const done = new Promise((r) => { waiting = () => got >= want && r(); });
        for (let i = 0; i < 50; i++) client.send(Buffer.from('q' + w + '-' + i), server.address().port, '127.0.0.1');
        await Promise.race([done, new Promise((r) => setTimeout(r, 2000))]);
      }
      console.log(endpoint.path, got);
      process.exit(0);
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--test-udp-no-try-send', '--input-type=module', '-e', child],
      { timeout: 20_000 },
    );
    assert.equal(stdout.trim(), 'handle 500');
  });

  test('ZONEKEEPER_UDP_PATH=dgram selects the public API', async () => {
    const socket = await bound('udp4', '127.0.0.1');
    const saved = process.env.ZONEKEEPER_UDP_PATH;
    process.env.ZONEKEEPER_UDP_PATH = 'dgram';
    try {
      assert.equal(
        new UdpEndpoint(
          socket,
          () => {},
          () => {},
        ).path,
        'dgram',
      );
    } finally {
      if (saved === undefined) delete process.env.ZONEKEEPER_UDP_PATH;
      else process.env.ZONEKEEPER_UDP_PATH = saved;
      socket.close();
    }
  });
});
