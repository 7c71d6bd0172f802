import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { afterEach, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from '../metrics/registry.ts';
import { DnsServer, type DnsServerOptions, MAX_UPDATES_PER_CONNECTION } from './dns-server.ts';
import type { QueryHandler } from './query-handler.ts';
import { ServerMetrics } from './server-metrics.ts';
import { TransferHandler } from './transfer/transfer-handler.ts';
import { TransferPolicy } from './transfer/transfer-policy.ts';
import { ZoneSnapshot } from './zone-snapshot.ts';
import { ZoneTable } from './zone-table.ts';

/** A query for www.example.com A with the given ID. */
function query(id: number): Buffer {
  const q = Buffer.from('00000100000100000000000003777777076578616d706c6503636f6d0000010001', 'hex');
  q.writeUInt16BE(id, 0);
  return q;
}

function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(2 + message.length);
  out.writeUInt16BE(message.length, 0);
  out.set(message, 2);
  return out;
}

/** Echoes the request with QR set, after `delayMs` when given (as an ALIAS lookup would). */
function echoHandler(options: { delayMs?: number; size?: number } = {}) {
  const calls: Uint8Array[] = [];
  const reply = (buf: Uint8Array) => {
    const out = new Uint8Array(Math.max(options.size ?? 0, buf.length));
    out.set(buf);
    out[2] = out[2]! | 0x80;
    return out;
  };
  const handler = {
    handle(buf: Uint8Array) {
      calls.push(Uint8Array.from(buf));
      if (options.delayMs === undefined) return reply(buf);
      return sleep(options.delayMs).then(() => reply(buf));
    },
  } as unknown as QueryHandler;
  return { handler, calls };
}

const started: DnsServer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.stop()));
});

async function serve(options: Omit<DnsServerOptions, 'listen' | 'metrics'>) {
  const registry = new Registry();
  const server = new DnsServer({
    listen: '127.0.0.1:0',
    metrics: new ServerMetrics(registry, new ZoneTable()),
    ...options,
  });
  await server.start();
  started.push(server);
  const dropped = (reason: string) => {
    const m = new RegExp(`^zonekeeper_dns_dropped_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(
      registry.render(),
    );
    return m ? Number(m[1]) : 0;
  };
  return { server, port: server.address().port, dropped };
}

interface Client {
  socket: net.Socket;
  received: () => Buffer;
  closed: Promise<void>;
}

function connect(port: number, localAddress?: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({
      port,
      host: '127.0.0.1',
      noDelay: true,
      ...(localAddress ? { localAddress } : {}),
    });
    let data = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
    });
    socket.on('error', () => {});
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.once('connect', () => resolve({ socket, received: () => data, closed }));
    socket.once('error', reject);
  });
}

/** Resolves with how long `p` took, or rejects after `ms`. */
async function within(p: Promise<unknown>, ms: number, what: string): Promise<number> {
  const t0 = performance.now();
  const timeout = sleep(ms).then(() => {
    throw new Error(`${what}: not within ${ms} ms`);
  });
  await Promise.race([p, timeout]);
  return performance.now() - t0;
}

describe('DnsServer start', () => {
  test('with port 0, a UDP port whose number is taken on TCP is given up for another pair', async (t) => {
    // Regression: UDP picked a free port, then TCP listened on the same number, which a TCP socket may
    // already hold: start() failed with EADDRINUSE (and `serve --dns 127.0.0.1:0` with it).
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as net.AddressInfo).port;
    const bind = dgram.Socket.prototype.bind;
    let first = true;
    t.mock.method(dgram.Socket.prototype, 'bind', function (this: dgram.Socket, ...args: unknown[]) {
      if (first) {
        first = false;
        args[0] = { ...(args[0] as dgram.BindOptions), port: taken }; // as if the kernel had picked it
      }
      return (bind as (...a: unknown[]) => dgram.Socket).apply(this, args);
    });
    try {
      const { server, port } = await serve({ handler: echoHandler().handler });
      assert.equal(first, false, 'the first bind landed on the taken port');
      assert.notEqual(port, taken);
      assert.equal(server.address().port, port);
      const client = await connect(port);
      client.socket.end(frame(query(9)));
      await within(client.closed, 2000, 'answered over TCP on the same port');
      assert.equal(client.received().readUInt16BE(2), 9);
    } finally {
      blocker.close();
    }
  });
});

describe('DnsServer over UDP', () => {
  test('a datagram from source port 0 is dropped and counted, and the server keeps serving (RFC 768)', async () => {
    // Regression: dgram's send() throws on port 0, and it was called from the message handler, so one
    // spoofed datagram with source port 0 killed the process.
    const { handler, calls } = echoHandler();
    const { server, port, dropped } = await serve({ handler });
    // The kernel never delivers port 0 on loopback, so the datagram is handed to the receive path.
    const onUdp = (server as unknown as { onUdp(m: Buffer, a: string, p: number): void }).onUdp.bind(server);
    onUdp(query(1), '127.0.0.1', 0);
    assert.equal(calls.length, 0, 'not even parsed');
    assert.equal(dropped('udp_source_port_zero'), 1);

    const client = dgram.createSocket('udp4');
    try {
      const reply = new Promise<Buffer>((resolve) => client.once('message', resolve));
      client.send(query(2), port, '127.0.0.1');
      assert.equal((await reply).readUInt16BE(0), 2);
    } finally {
      client.close();
    }
  });

  test('an answer that completes after stop() is counted, not thrown', async () => {
    const { handler, calls } = echoHandler({ delayMs: 100 });
    const { server, port, dropped } = await serve({ handler });
    const rejections: unknown[] = [];
    const onRejection = (e: unknown) => rejections.push(e);
    process.on('unhandledRejection', onRejection);
    const client = dgram.createSocket('udp4');
    try {
      client.send(query(3), port, '127.0.0.1');
      while (calls.length === 0) await sleep(5);
      await server.stop();
      await sleep(200);
      assert.deepEqual(rejections, []);
      assert.equal(dropped('udp_send_error'), 1);
    } finally {
      process.off('unhandledRejection', onRejection);
      client.close();
    }
  });
});

describe('DnsServer over TCP', () => {
  test('a client that half-closes after its query still gets a pending answer (RFC 7766 §6.2.3)', async () => {
    // Regression: the server ended its side as soon as the client's FIN arrived, so an answer still
    // being computed (an ALIAS lookup) was lost.
    const { handler } = echoHandler({ delayMs: 50 });
    const { port } = await serve({ handler });
    const client = await connect(port);
    client.socket.end(frame(query(4)));
    await within(client.closed, 2000, 'the server closes once it has answered');
    const got = client.received();
    assert.equal(got.length, 2 + 33);
    assert.equal(got.readUInt16BE(2), 4);
  });

  test('a half-closed connection with nothing pending is closed at once', async () => {
    const { handler } = echoHandler();
    const { port } = await serve({ handler });
    const client = await connect(port);
    client.socket.end(Buffer.from([0x01])); // half a length prefix, then FIN
    await within(client.closed, 1000, 'closed after the FIN');
  });

  test('a zero-length frame closes the connection and is counted', async () => {
    const { handler, calls } = echoHandler();
    const { port, dropped } = await serve({ handler });
    const client = await connect(port);
    client.socket.write(Buffer.concat([Buffer.from([0, 0]), frame(query(5))]));
    await within(client.closed, 1000, 'closed');
    assert.equal(calls.length, 0);
    assert.equal(dropped('tcp_zero_length'), 1);
  });

  test('at maxTcpConnections the connection idle the longest makes room; with none idle the new one is closed (RFC 7766 §6.2.2, §6.2.3)', async () => {
    // Waits for ever on query ID 99: a connection that asked it has a query pending.
    const { handler: echo, calls } = echoHandler();
    const handler = {
      handle: (buf: Uint8Array) => {
        const answer = echo.handle(buf, 'tcp'); // recorded in `calls`
        return buf[0] === 0 && buf[1] === 99 ? new Promise<null>(() => {}) : answer;
      },
    } as unknown as QueryHandler;
    const asked = (id: number) => calls.filter((c) => c[0] === 0 && c[1] === id).length;
    const { port, dropped } = await serve({ handler, maxTcpConnections: 2 });
    const a = await connect(port);
    await sleep(20);
    const b = await connect(port);
    b.socket.write(frame(query(6)));
    while (asked(6) < 1) await sleep(10); // both accepted, b asked after a connected
    const c = await connect(port);
    await within(a.closed, 5000, 'the connection idle the longest (a) is closed');
    assert.equal(dropped('tcp_idle_evicted'), 1);
    for (const client of [b, c]) client.socket.write(frame(query(7)));
    await within(
      (async () => {
        while (b.received().length === 0 || c.received().length === 0) await sleep(10);
      })(),
      5000,
      'b and c are served',
    );
    // Both busy (a query pending each): a fourth connection is closed, nothing evicted.
    for (const client of [b, c]) client.socket.write(frame(query(99)));
    while (asked(99) < 2) await sleep(10);
    const d = await connect(port);
    await within(d.closed, 5000, 'the fourth connection is closed');
    assert.equal(dropped('tcp_connection_limit'), 1);
    assert.equal(dropped('tcp_idle_evicted'), 1);
    for (const client of [b, c, d]) client.socket.destroy();
  });

  test('one client address may hold maxTcpPerSource connections; more are closed and counted, other addresses are served (RFC 7766 §6.2.2)', async () => {
    const { handler } = echoHandler();
    const { server, port, dropped } = await serve({ handler, maxTcpPerSource: 3 });
    const held = [await connect(port), await connect(port), await connect(port)];
    while (server.tcpBacklog().connections < 3) await sleep(10);
    const extra = await connect(port);
    await within(extra.closed, 2000, 'the fourth connection from 127.0.0.1 is closed');
    assert.equal(dropped('tcp_source_limit'), 1);
    const other = await connect(port, '127.0.0.2');
    other.socket.write(frame(query(8)));
    for (const client of held) client.socket.write(frame(query(9)));
    while (other.received().length < 35 || held.some((c) => c.received().length < 35)) await sleep(10);
    assert.equal(other.socket.destroyed, false, 'another address is served');
    // A closed connection gives its slot back.
    held[0]!.socket.destroy();
    while (server.tcpBacklog().connections > 3) await sleep(10);
    const again = await connect(port);
    again.socket.write(frame(query(10)));
    while (again.received().length < 35) await sleep(10);
    assert.equal(dropped('tcp_source_limit'), 1);
    for (const client of [...held, other, again]) client.socket.destroy();
  });

  test('while three quarters of maxTcpConnections are open, idle connections close after tcpBusyIdleTimeoutMs (RFC 7766 §6.2.3)', async () => {
    const { handler } = echoHandler();
    const { server, port } = await serve({
      handler,
      maxTcpConnections: 8,
      tcpIdleTimeoutMs: 60_000,
      tcpBusyIdleTimeoutMs: 100,
    });
    const few = [await connect(port), await connect(port)];
    for (const client of few) client.socket.write(frame(query(11)));
    await sleep(300);
    assert.ok(
      few.every((c) => !c.socket.destroyed && c.received().length === 35),
      'with 2 of 8 open, the idle timeout is tcpIdleTimeoutMs',
    );
    const more = [await connect(port), await connect(port), await connect(port), await connect(port)];
    while (server.tcpBacklog().connections < 6) await sleep(10);
    for (const client of [...few, ...more]) client.socket.write(frame(query(12)));
    await within(
      Promise.all([...few, ...more].map((c) => c.closed)),
      5000,
      'with 6 of 8 open, every idle connection is closed',
    );
  });

  test('idle connections close after tcpIdleTimeoutMs; partial frames do not keep them open, queries do', async () => {
    const { handler } = echoHandler();
    const { port } = await serve({ handler, tcpIdleTimeoutMs: 300 });
    const silent = await connect(port);
    const dripping = await connect(port);
    const busy = await connect(port);
    // A frame declaring 256 octets, one octet every 50 ms: never complete, so never a reset of the clock.
    dripping.socket.write(Buffer.from([0x01, 0x00]));
    const drip = setInterval(() => dripping.socket.write(Buffer.from([0x41])), 50);
    const query150 = setInterval(() => busy.socket.write(frame(query(7))), 150);
    try {
      const silentMs = await within(silent.closed, 1500, 'the silent connection closes');
      const drippingMs = await within(dripping.closed, 1500, 'the dripping connection closes');
      assert.ok(silentMs < 800 && drippingMs < 800, `${silentMs} ms, ${drippingMs} ms`);
      await sleep(400);
      assert.equal(busy.socket.destroyed, false, 'a connection with a query every 150 ms stays open');
    } finally {
      clearInterval(drip);
      clearInterval(query150);
      busy.socket.destroy();
    }
  });

  test('a client that never reads is cut off, and its remaining queries are not handled', async () => {
    // Regression: after the write backlog passed 1 MiB the socket was destroyed, but the rest of the
    // received chunk was still parsed and answered into the void.
    const { handler, calls } = echoHandler({ size: 60_000 });
    const { port } = await serve({ handler });
    const client = await connect(port);
    client.socket.pause(); // never read
    const frames = Buffer.concat(Array.from({ length: 1000 }, (_, i) => frame(query(i))));
    client.socket.write(frames);
    let seen = -1;
    while (calls.length !== seen) {
      seen = calls.length;
      await sleep(200);
    }
    assert.ok(
      calls.length < 1000,
      `${calls.length} of 1000 queries handled after the connection was dropped`,
    );
    client.socket.resume(); // a paused client only notices the close once it reads
    await within(client.closed, 5000, 'the server gave up on the connection');
  });
});

describe('DnsServer UPDATE', () => {
  test('one TCP connection may have only MAX_UPDATES_PER_CONNECTION UPDATEs unanswered; it is read no further until one is answered', {
    timeout: 30_000,
  }, async () => {
    const held: (() => void)[] = [];
    const updates = {
      handle: (request: Uint8Array) =>
        new Promise<Uint8Array | null>((resolve) =>
          held.push(() => {
            const out = Uint8Array.from(request);
            out[2] = out[2]! | 0x80;
            resolve(out);
          }),
        ),
    };
    const { handler } = echoHandler();
    const { port, dropped } = await serve({ handler, tcpIdleTimeoutMs: 10_000, updates });
    const client = await connect(port);
    const extra = 4;
    const total = MAX_UPDATES_PER_CONNECTION + extra;
    for (let id = 1; id <= total; id++) {
      const update = query(id);
      update[2] = 0x28; // opcode UPDATE
      client.socket.write(frame(update));
    }
    // The first MAX_UPDATES_PER_CONNECTION reach the handler; the rest wait unread (nothing refused).
    while (held.length < MAX_UPDATES_PER_CONNECTION) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(
      held.length,
      MAX_UPDATES_PER_CONNECTION,
      'no more UPDATEs taken while the connection is at its limit',
    );
    assert.equal(client.received().length, 0, 'nothing answered yet, nothing refused');
    assert.equal(dropped('tcp_update_limit'), 1, 'the pause is counted');
    // Answering them lets the rest in, in order; every UPDATE gets its own answer.
    const answered = new Set<number>();
    while (answered.size < total) {
      for (const release of held.splice(0)) release();
      await new Promise((resolve) => setTimeout(resolve, 10));
      const bytes = client.received();
      for (let at = 0; at + 2 <= bytes.length; ) {
        const length = bytes.readUInt16BE(at);
        if (at + 2 + length > bytes.length) break;
        answered.add(bytes.readUInt16BE(at + 2));
        at += 2 + length;
      }
    }
    assert.deepEqual(
      [...answered].sort((a, b) => a - b),
      Array.from({ length: total }, (_, i) => i + 1),
    );
    client.socket.destroy();
  });
});

/** A zone transfer request (AXFR) for example.com. */
function axfr(id: number): Buffer {
  const q = Buffer.from('000000000001000000000000076578616d706c6503636f6d0000fc0001', 'hex');
  q.writeUInt16BE(id, 0);
  return q;
}

/** example.com with `records` A records, transfers allowed from `allowFrom`, no TSIG required. */
function transferSetup(allowFrom: string[], records = 10) {
  const table = new ZoneTable();
  const policy = new TransferPolicy({ allowFrom, requireTsig: false, keys: [], notify: [], journalSize: 10 });
  const rrsets = Array.from({ length: records }, (_, i) => ({
    owner: `host-${i}.example.com.`,
    type: 'A' as const,
    ttl: 300,
    rdata: [{ type: 'A' as const, address: `192.0.2.${i % 250}` }],
  }));
  const soa = {
    ttl: 3600,
    mname: 'ns1.example.com.',
    rname: 'h.example.com.',
    refresh: 3600,
    retry: 600,
    expire: 1209600,
    minimum: 300,
  };
  table.set(ZoneSnapshot.build('example.com.', soa, 1, rrsets, policy));
  const registry = new Registry();
  const transfers = new TransferHandler(table, { registry });
  const handled = (result: string) =>
    registry
      .snapshot()
      .counters.zonekeeper_transfers_total?.filter(([l]) => l[1] === result)
      .reduce((n, [, v]) => n + v, 0) ?? 0;
  return { transfers, handled };
}

/** Waits until `value()` stops changing between two looks `everyMs` apart; returns it. */
async function settled(value: () => number, everyMs = 200): Promise<number> {
  let seen = Number.NaN;
  for (;;) {
    const now = value();
    if (now === seen) return now;
    seen = now;
    await sleep(everyMs);
  }
}

/** The DNS messages in a TCP byte stream. */
function frames(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at + 2 <= bytes.length; ) {
    const length = bytes.readUInt16BE(at);
    if (at + 2 + length > bytes.length) break;
    out.push(bytes.subarray(at + 2, at + 2 + length));
    at += 2 + length;
  }
  return out;
}

describe('DnsServer zone transfers over TCP', () => {
  test('refused transfer requests pipelined by a client that never reads: cut off within the pending-answers cap', async () => {
    // Regression: every refused AXFR was answered, outside the pending-write cap, while reading went
    // on: a client that never read grew the server's heap until it died.
    for (const allowFrom of [['192.0.2.0/24'], []]) {
      const { transfers, handled } = transferSetup(allowFrom);
      const { handler } = echoHandler();
      const { server, port } = await serve({ handler, transfers, tcpIdleTimeoutMs: 60_000 });
      const client = await connect(port);
      client.socket.pause(); // never read
      // More answers than the kernel's socket buffers hold (megabytes on loopback): the rest would
      // wait in the heap.
      const count = 400_000;
      const one = frame(axfr(7));
      client.socket.write(Buffer.concat(Array.from({ length: count }, () => one)));
      let most = 0;
      const watch = setInterval(() => {
        most = Math.max(most, server.tcpBacklog().pendingWriteBytes);
      }, 5);
      await within(client.closed, 60_000, 'the server closes the connection');
      clearInterval(watch);
      const answered = handled('refused') + handled('notauth');
      assert.ok(answered > 0 && answered < count, `${answered} of ${count} refusals answered`);
      assert.ok(most < 4096 * 64, `${most} bytes waited in the heap at most`);
      // The server's side closes too (its close event may come a moment after the client's).
      while (server.tcpBacklog().connections > 0) await sleep(10);
    }
  });

  test('a refused transfer request does not end the connection: a query after it is answered', async () => {
    const { transfers, handled } = transferSetup(['192.0.2.0/24']);
    const { handler, calls } = echoHandler();
    const { port } = await serve({ handler, transfers });
    const client = await connect(port);
    client.socket.write(Buffer.concat([frame(axfr(1)), frame(query(2))]));
    while (frames(client.received()).length < 2) await sleep(20);
    const [refused, answer] = frames(client.received());
    assert.equal(refused![3]! & 0xf, 5, 'REFUSED');
    assert.equal(answer!.readUInt16BE(0), 2);
    assert.equal(handled('refused'), 1);
    assert.equal(calls.length, 1);
    client.socket.destroy();
  });

  test('an accepted transfer is written as the client reads it; one that stalls is closed by the stall timeout', {
    timeout: 60_000,
  }, async () => {
    // Regression: each pipelined transfer was written at once, the connection read on, and the idle
    // clock stopped until the socket drained, which a client that does not read never lets happen.
    const { transfers, handled } = transferSetup(['127.0.0.0/8'], 12_000);
    const { handler } = echoHandler();
    const { server, port } = await serve({
      handler,
      transfers,
      tcpIdleTimeoutMs: 60_000,
      transferStallTimeoutMs: 300,
    });
    const client = await connect(port);
    client.socket.pause(); // never read
    client.socket.write(Buffer.concat(Array.from({ length: 100 }, (_, i) => frame(axfr(i)))));
    const started = await settled(() => handled('ok'), 100);
    assert.ok(started < 100, `${started} of 100 transfers started for a client that reads nothing`);
    // The stall clock runs while the transfer makes no progress: the connection is closed.
    while (server.tcpBacklog().connections > 0) await sleep(50);
    assert.equal(handled('ok'), started, 'no transfer started after the first stalled');
    client.socket.destroy();
  });

  test('a secondary that reads slowly gets every transfer: the idle timeout does not cut a transfer short', {
    timeout: 60_000,
  }, async () => {
    // Regression: while a transfer waited for the kernel to take more, the idle clock ran, and a
    // secondary reading a large zone slowly was cut off mid-transfer.
    const records = 12_000;
    const transfersAsked = 40;
    const { transfers, handled } = transferSetup(['127.0.0.0/8'], records);
    const { handler } = echoHandler();
    const { port } = await serve({ handler, transfers, tcpIdleTimeoutMs: 100 });
    // Counts the answers' records as they come, keeping only a partial frame.
    const socket = net.connect({ port, host: '127.0.0.1' });
    await new Promise((resolve) => socket.once('connect', resolve));
    let rest: Buffer = Buffer.alloc(0);
    let answered = 0;
    let closed = false;
    socket.on('close', () => {
      closed = true;
    });
    socket.on('data', (chunk: Buffer) => {
      rest = rest.length === 0 ? chunk : Buffer.concat([rest, chunk]);
      while (rest.length >= 2 && rest.length >= 2 + rest.readUInt16BE(0)) {
        answered += rest.readUInt16BE(2 + 6);
        rest = rest.subarray(2 + rest.readUInt16BE(0));
      }
    });
    socket.pause();
    socket.write(Buffer.concat(Array.from({ length: transfersAsked }, (_, i) => frame(axfr(i)))));
    // Reads nothing for ten idle timeouts, then in slices with pauses longer than the idle timeout.
    await sleep(1000);
    while (!closed && answered < transfersAsked * (records + 2)) {
      socket.resume();
      await sleep(5);
      socket.pause();
      await sleep(150);
    }
    // Cut off mid-transfer, it would stop short (an idle close once all was taken is fine).
    assert.equal(answered, transfersAsked * (records + 2), 'every record of every transfer');
    assert.equal(handled('ok'), transfersAsked);
    socket.destroy();
  });

  test('pipelined transfers and a query are all answered to a client that reads', async () => {
    const records = 5000;
    const { transfers } = transferSetup(['127.0.0.0/8'], records);
    const { handler } = echoHandler();
    const { port } = await serve({ handler, transfers });
    const client = await connect(port);
    client.socket.write(Buffer.concat([frame(axfr(1)), frame(axfr(2)), frame(query(3))]));
    const ids = () => frames(client.received()).map((m) => m.readUInt16BE(0));
    while (!ids().includes(3)) await sleep(20);
    const messages = frames(client.received());
    const answers = (id: number) =>
      messages.filter((m) => m.readUInt16BE(0) === id).reduce((n, m) => n + m.readUInt16BE(6), 0);
    assert.equal(answers(1), records + 2, 'the SOA, every record, the SOA');
    assert.equal(answers(2), records + 2);
    client.socket.destroy();
  });
});
