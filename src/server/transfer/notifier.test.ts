import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { afterEach, describe, test } from 'node:test';
import { decodeMessage, encodeMessage, type Message, Opcode, Rcode } from '../../dns/message.ts';
import type { Rdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
import { keyring, parseTsigKey, signMessage, type TsigKey, verifyMessage } from '../../dns/tsig.ts';
import { Registry } from '../../metrics/registry.ts';
import type { ServedRRset } from '../zone-snapshot.ts';
import { Notifier } from './notifier.ts';

const KEY = parseTsigKey({
  name: 'transfer-key',
  algorithm: 'hmac-sha256',
  secret: Buffer.alloc(32, 3).toString('base64'),
});
const OTHER = parseTsigKey({
  name: 'transfer-key',
  algorithm: 'hmac-sha256',
  secret: Buffer.alloc(32, 4).toString('base64'),
});

function soa(serial: number, origin = 'example.com.'): ServedRRset {
  return {
    owner: origin,
    type: RRType.SOA,
    ttl: 3600,
    rdata: [
      {
        type: 'SOA',
        mname: 'ns1.example.com.',
        rname: 'hostmaster.example.com.',
        serial,
        refresh: 3600,
        retry: 600,
        expire: 1209600,
        minimum: 300,
      },
    ],
  };
}

interface Received {
  message: Message;
  /** The TSIG of the NOTIFY verified with the listener's key (when it has one). */
  verified?: boolean;
}

/**
 * A fake secondary on 127.0.0.1: records each NOTIFY and answers as `respond` says — the rcode to send
 * (signed when it has a key), 'drop' for no answer, or datagrams to send.
 */
async function listener(
  respond: (n: number, message: Message, requestMac?: Uint8Array) => number | 'drop' | Uint8Array[] = () =>
    Rcode.NOERROR,
  key?: TsigKey,
) {
  const socket = dgram.createSocket('udp4');
  const received: Received[] = [];
  socket.on('message', (msg, rinfo) => {
    let bytes: Uint8Array = new Uint8Array(msg);
    let requestMac: Uint8Array | undefined;
    let verified: boolean | undefined;
    if (key) {
      const v = verifyMessage(bytes, keyring([key]));
      verified = v.ok;
      if (v.ok) {
        bytes = v.stripped;
        requestMac = v.mac;
      }
    }
    const message = decodeMessage(bytes);
    received.push({ message, ...(verified !== undefined ? { verified } : {}) });
    const what = respond(received.length, message, requestMac);
    if (what === 'drop') return;
    if (Array.isArray(what)) {
      for (const bytes of what) socket.send(bytes, rinfo.port, rinfo.address);
      return;
    }
    let reply = encodeMessage({ ...message, qr: true, rcode: what, answers: [] });
    if (key && requestMac) reply = signMessage(reply, key, { requestMac }).bytes;
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  const port = socket.address().port;
  opened.push(socket);
  return { port, received, target: { host: '127.0.0.1', port } };
}

const opened: dgram.Socket[] = [];
afterEach(() => {
  for (const s of opened.splice(0)) s.close();
});

/** Attempts time out after `timeoutMs`: generous by default, as a loaded test machine may be slow to answer. */
function setup(retryDelaysMs = [20, 20, 20], timeoutMs = 1000) {
  const registry = new Registry();
  const logs: string[] = [];
  const notifier = new Notifier({
    registry,
    retryDelaysMs,
    timeoutMs,
    log: (level, message) => logs.push(`${level} ${message}`),
  });
  const count = (result: string) =>
    registry.snapshot().counters.zonekeeper_notify_total?.find(([l]) => l[0] === result)?.[1] ?? 0;
  return { notifier, count, logs };
}

async function settled(notifier: Notifier, timeoutMs = 3000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (notifier.pending > 0) {
    if (performance.now() > deadline) throw new Error(`${notifier.pending} deliveries still pending`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const serialOf = (m: Message) => (m.answers[0]!.data as Extract<Rdata, { type: 'SOA' }>).serial;

describe('Notifier (RFC 1996)', () => {
  test('a NOTIFY: opcode NOTIFY, AA, the SOA question, the new SOA in the answer section (§3.7)', async () => {
    const secondary = await listener();
    const { notifier, count } = setup();
    notifier.notify(soa(7), [secondary.target]);
    await settled(notifier);
    assert.equal(secondary.received.length, 1);
    const m = secondary.received[0]!.message;
    assert.equal(m.opcode, Opcode.NOTIFY);
    assert.ok(m.aa && !m.qr);
    assert.deepEqual(m.questions, [{ name: 'example.com.', type: RRType.SOA, class: 1 }]);
    assert.equal(serialOf(m), 7);
    assert.equal(count('ok'), 1);
  });

  test('retried until the secondary answers (§3.6), counted', async () => {
    const secondary = await listener((n) => (n < 3 ? 'drop' : Rcode.NOERROR));
    const { notifier, count } = setup([20, 20, 20], 200);
    notifier.notify(soa(7), [secondary.target]);
    await settled(notifier);
    assert.ok(secondary.received.length >= 3);
    assert.deepEqual([count('retry'), count('ok'), count('failed')], [secondary.received.length - 1, 1, 0]);
  });

  test('an error rcode is not an acknowledgement; after the last attempt it is logged with the rcode', async () => {
    const secondary = await listener(() => Rcode.REFUSED);
    const { notifier, count, logs } = setup([10, 10]);
    notifier.notify(soa(7), [secondary.target]);
    await settled(notifier);
    assert.equal(secondary.received.length, 3);
    assert.deepEqual([count('retry'), count('failed')], [2, 1]);
    assert.match(
      logs.join('\n'),
      /warn NOTIFY example\.com\. serial 7 to 127\.0\.0\.1:\d+ failed after 3 attempts: rcode REFUSED/,
    );
  });

  test('a newer serial supersedes the retries of an older one, target by target', async () => {
    const slow = await listener((_n, m) => (serialOf(m) === 1 ? 'drop' : Rcode.NOERROR));
    const fine = await listener();
    const { notifier, count } = setup([150, 150, 150], 200);
    notifier.notify(soa(1), [slow.target, fine.target]);
    await new Promise((r) => setTimeout(r, 50)); // serial 1's first attempt is still waiting
    notifier.notify(soa(2), [slow.target, fine.target]);
    await settled(notifier);
    assert.deepEqual(
      slow.received.map((r) => serialOf(r.message)),
      [1, 2],
      'no retry of serial 1 after 2',
    );
    assert.deepEqual(
      fine.received.map((r) => serialOf(r.message)),
      [1, 2],
    );
    assert.equal(count('ok'), 3);
  });

  test('the same serial again while it is being delivered is not sent twice', async () => {
    const secondary = await listener((n) => (n === 1 ? 'drop' : Rcode.NOERROR));
    const { notifier } = setup([20, 20, 20], 200);
    notifier.notify(soa(5), [secondary.target]);
    notifier.notify(soa(5), [secondary.target]);
    await settled(notifier);
    assert.equal(secondary.received.length, 2, 'one dropped attempt and its retry');
  });

  test('signed with the target key; the signed answer is verified (RFC 8945)', async () => {
    const secondary = await listener(() => Rcode.NOERROR, KEY);
    const { notifier, count } = setup();
    notifier.notify(soa(9), [{ ...secondary.target, key: KEY }]);
    await settled(notifier);
    assert.equal(secondary.received[0]?.verified, true);
    assert.equal(count('ok'), 1);
  });

  test('an answer that does not verify is no acknowledgement, and the reason is logged', async () => {
    // The secondary holds another secret: it cannot verify our NOTIFY and answers NOTAUTH with an
    // unsigned BADSIG, as Knot, NSD and BIND do.
    const secondary = await listener((_n, m) => {
      const { bytes } = signMessage(
        encodeMessage({ ...m, qr: true, rcode: Rcode.NOTAUTH, answers: [] }),
        OTHER,
      );
      return [bytes];
    }, OTHER);
    const { notifier, count, logs } = setup([10]);
    notifier.notify(soa(9), [{ ...secondary.target, key: KEY }]);
    await settled(notifier);
    assert.equal(secondary.received[0]?.verified, false);
    assert.deepEqual([count('ok'), count('failed')], [0, 1]);
    assert.match(logs.join('\n'), /rcode NOTAUTH, answer not verified/);
  });

  test('a stray datagram (another ID, unsigned) does not end the attempt; the real answer does', async () => {
    const secondary = await listener((_n, m, requestMac) => {
      const stray = encodeMessage({
        ...m,
        id: (m.id + 1) & 0xffff,
        qr: true,
        rcode: Rcode.REFUSED,
        answers: [],
      });
      const real = signMessage(encodeMessage({ ...m, qr: true, answers: [] }), KEY, {
        requestMac: requestMac!,
      });
      return [stray, real.bytes];
    }, KEY);
    const { notifier, count } = setup([10]);
    notifier.notify(soa(3), [{ ...secondary.target, key: KEY }]);
    await settled(notifier);
    assert.deepEqual([count('ok'), count('retry'), count('failed')], [1, 0, 0]);
    assert.equal(secondary.received.length, 1);
  });
});
