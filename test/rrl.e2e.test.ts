/**
 * Response rate limiting against the real `zonekeeper serve` on loopback: one source floods the server
 * over UDP (as a spoofed-source reflection attack would), while other sources keep getting every answer.
 * Loopback is exempt from RRL by default (it cannot be forged from the network), so these servers run
 * with `--rrl-exempt none`; the clients bind distinct loopback addresses to be distinct networks.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeMessage, type Message } from '../src/dns/message.ts';
import { RRType } from '../src/dns/rrtype.ts';
import { buildQuery } from './support/dns-client.ts';
import {
  copyExamples,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
} from './support/zonekeeper-process.ts';

const RATE = 20;

/** A UDP client bound to one loopback address, matching replies to queries by ID. */
class Client {
  private readonly socket: dgram.Socket;
  private readonly waiting = new Map<number, (m: Message) => void>();
  /** Replies that nobody waits for (the flood's), counted. */
  readonly replies = { full: 0, truncated: 0, other: 0 };
  private nextId = 1;

  private constructor(socket: dgram.Socket) {
    this.socket = socket;
    socket.on('message', (bytes) => {
      const m = decodeMessage(bytes);
      const waiter = this.waiting.get(m.id);
      if (waiter) {
        this.waiting.delete(m.id);
        waiter(m);
        return;
      }
      if (m.tc && m.answers.length === 0) this.replies.truncated++;
      else if (m.answers.length > 0) this.replies.full++;
      else this.replies.other++;
    });
  }

  static async bind(address: string): Promise<Client> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, address, () => resolve());
    });
    return new Client(socket);
  }

  private id(): number {
    this.nextId = (this.nextId + 1) & 0xffff || 1;
    return this.nextId;
  }

  /** Sends without waiting (the flood); replies are counted in `replies`. */
  send(port: number, name: string): void {
    this.socket.send(buildQuery({ id: this.id(), name, type: RRType.A }), port, '127.0.0.1');
  }

  /** Asks and waits for the reply (undefined after 2 s). */
  ask(port: number, name: string): Promise<Message | undefined> {
    const id = this.id();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(undefined);
      }, 2000);
      this.waiting.set(id, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      this.socket.send(buildQuery({ id, name, type: RRType.A }), port, '127.0.0.1');
    });
  }

  close(): void {
    this.socket.close();
  }
}

/** One query over TCP from `local`, its answer. */
function askTcp(port: number, local: string, name: string): Promise<Message> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress: local });
    let data = Buffer.alloc(0);
    socket.on('connect', () => {
      const q = buildQuery({ id: 99, name, type: RRType.A });
      socket.write(Buffer.concat([Buffer.from([q.length >> 8, q.length & 0xff]), q]));
    });
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      if (data.length >= 2 && data.length >= 2 + data.readUInt16BE(0)) {
        socket.destroy();
        resolve(decodeMessage(data.subarray(2, 2 + data.readUInt16BE(0))));
      }
    });
    socket.on('error', reject);
  });
}

async function metric(serve: ServeProcess, name: string, kind: string): Promise<number> {
  const text = await (await fetch(`${serve.httpUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{kind="${kind}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('response rate limiting: a flood from one source, answers for the others', () => {
  let manifests: string;
  let state: string;
  let serve: ServeProcess;

  before(async () => {
    manifests = await copyExamples();
    state = await tempDir('state');
    serve = await startServe(manifests, state, ['--rrl-exempt', 'none', '--rrl-rate', String(RATE)]);
  });

  after(async () => {
    await serve?.stop();
    await removeAll(...[manifests, state].filter((d) => d !== undefined));
  });

  test('the flooding network gets at most its rate (the rest dropped or slipped as TC); other clients get every answer', async () => {
    // Regression: the server answered any volume of queries from one source: a reflector for
    // spoofed-source amplification.
    const flood = await Client.bind('127.0.0.2');
    const neighbour = await Client.bind('127.0.0.3'); // the flood's /24, other questions
    const stranger = await Client.bind('127.1.0.3'); // another /24, the flood's question
    const port = serve.dnsPort;
    let sent = 0;
    let flooding = true;
    const started = performance.now();
    const floodLoop = (async () => {
      while (flooding) {
        for (let i = 0; i < 50; i++) flood.send(port, 'www.example.com.');
        sent += 50;
        await sleep(5);
      }
    })();
    const missed: string[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        const [a, b] = await Promise.all([
          neighbour.ask(port, 'mail.example.com.'),
          stranger.ask(port, 'www.example.com.'),
        ]);
        if (!a || a.tc || a.answers.length !== 1) missed.push(`127.0.0.3 query ${i}: ${JSON.stringify(a)}`);
        if (!b || b.tc || b.answers.length !== 2) missed.push(`127.1.0.3 query ${i}: ${JSON.stringify(b)}`);
        await sleep(100); // 10 a second: under the rate
      }
      // TCP is never limited, even from the flooding address.
      const overTcp = await askTcp(port, '127.0.0.2', 'www.example.com.');
      assert.equal(overTcp.answers.length, 2, 'TCP from the flooding address is answered');
    } finally {
      flooding = false;
      await floodLoop;
    }
    const seconds = (performance.now() - started) / 1000;
    await sleep(300); // the last replies
    flood.close();
    neighbour.close();
    stranger.close();
    assert.deepEqual(missed, [], 'every query of the other clients was answered in full');
    const { full, truncated } = flood.replies;
    assert.ok(sent > 10 * RATE * seconds, `the flood sent ${sent} queries in ${seconds.toFixed(1)} s`);
    // A full bucket at the start, then the rate: never more.
    assert.ok(
      full <= RATE * (seconds + 1),
      `the flood got ${full} full answers for ${sent} queries in ${seconds.toFixed(1)} s`,
    );
    assert.ok(truncated > 0, 'some responses over the rate were slipped (TC) so real clients can retry');
    const dropped = await metric(serve, 'zonekeeper_dns_rrl_dropped_total', 'answer');
    const slipped = await metric(serve, 'zonekeeper_dns_rrl_slipped_total', 'answer');
    assert.ok(slipped >= truncated, `slipped ${slipped} >= ${truncated} TC received`);
    assert.ok(
      dropped > 0 && Math.abs(dropped - slipped) <= 1,
      `dropped ${dropped}, slipped ${slipped} (slip 2)`,
    );
    assert.ok(dropped + slipped + full <= sent);
  });

  test('a flood of random names below a wildcard (unsigned) gets at most the wildcard’s rate', async () => {
    // Regression: each random name below an unsigned wildcard found a bucket of its own, so such a
    // flood got every answer (the response bytes do not say the answer came from a wildcard).
    const flood = await Client.bind('127.3.0.2');
    const port = serve.dnsPort;
    const started = performance.now();
    let sent = 0;
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 50; i++) flood.send(port, `r${round}-${i}.wild.example.com.`);
      sent += 50;
      await sleep(10);
    }
    const seconds = (performance.now() - started) / 1000;
    await sleep(300);
    flood.close();
    const { full } = flood.replies;
    assert.ok(
      full <= RATE * (seconds + 1),
      `the flood got ${full} full answers for ${sent} random names below *.wild in ${seconds.toFixed(1)} s`,
    );
    assert.ok(full > 0, 'the first answers within the rate were sent');
  });
});
