import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { decodeMessage, encodeMessage, type Message, type ResourceRecord } from '../../dns/message.ts';
import { parseTsigKey, readTsig, type TsigKey, TsigStreamSigner } from '../../dns/tsig.ts';
import { axfr } from './axfr-client.ts';

const ZONE = 'axfr.test.';
const KEY = parseTsigKey({
  name: 'k',
  algorithm: 'hmac-sha256',
  secret: Buffer.alloc(32, 1).toString('base64'),
});
/** The same key name with another secret: what a man in the middle without the secret could sign with. */
const FORGED = parseTsigKey({
  name: 'k',
  algorithm: 'hmac-sha256',
  secret: Buffer.alloc(32, 2).toString('base64'),
});

const SOA: ResourceRecord = {
  name: ZONE,
  type: 6,
  class: 1,
  ttl: 300,
  data: {
    type: 'SOA',
    mname: `ns.${ZONE}`,
    rname: `h.${ZONE}`,
    serial: 5,
    refresh: 1,
    retry: 1,
    expire: 1,
    minimum: 1,
  },
};
const A = (i: number): ResourceRecord => ({
  name: `a${i}.${ZONE}`,
  type: 1,
  class: 1,
  ttl: 300,
  data: { type: 'A', address: `192.0.2.${i}` },
});

/** A primary on loopback answering AXFR in `messages` messages, signed with `signWith` (or unsigned). */
function primary(messages: ResourceRecord[][], signWith: () => TsigKey | undefined) {
  return net.createServer((socket) => {
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 2 || buffered.length < 2 + buffered.readUInt16BE(0)) return;
      const request = new Uint8Array(buffered.subarray(2, 2 + buffered.readUInt16BE(0)));
      const query = decodeMessage(readTsig(request)?.stripped ?? request);
      const key = signWith();
      const signer = key ? new TsigStreamSigner(key, readTsig(request)?.record.mac) : undefined;
      messages.forEach((answers, i) => {
        const reply: Message = { ...query, qr: true, aa: true, answers, additional: [] };
        let bytes = encodeMessage(reply);
        if (signer) bytes = signer.sign(bytes, i === messages.length - 1);
        const framed = Buffer.alloc(2 + bytes.length);
        framed.writeUInt16BE(bytes.length, 0);
        framed.set(bytes, 2);
        socket.write(framed);
      });
    });
    socket.on('error', () => {});
  });
}

describe('axfr client', () => {
  let signWith: TsigKey | undefined;
  const server = primary([[SOA, A(1)], [A(2), A(3)], [SOA]], () => signWith);
  let port = 0;
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const read = (key?: TsigKey, maxRecords = 100) =>
    axfr({ host: '127.0.0.1', port, zone: ZONE, ...(key ? { key } : {}), timeoutMs: 5000, maxRecords });

  test('reads every message up to the closing SOA, verifying each signed one', async () => {
    signWith = KEY;
    const result = await read(KEY);
    assert.deepEqual(
      result.records.map((r) => r.name),
      [ZONE, `a1.${ZONE}`, `a2.${ZONE}`, `a3.${ZONE}`],
    );
    assert.equal(result.messages, 3);
    assert.equal(result.verified, true);
  });

  test('a response signed with another secret is refused (RFC 8945 §5.3.1)', async () => {
    signWith = FORGED;
    await assert.rejects(read(KEY), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'AXFR_TSIG');
      assert.match(e.message, /message 1 of the response failed TSIG verification \(BADSIG/);
      return true;
    });
  });

  test('an unsigned response to a signed request is refused', async () => {
    signWith = undefined;
    await assert.rejects(read(KEY), (e: Error & { code?: string }) => e.code === 'AXFR_TSIG');
  });

  test('more records than the limit are refused', async () => {
    signWith = undefined;
    await assert.rejects(read(undefined, 2), (e: Error & { code?: string }) => e.code === 'AXFR_TOO_LARGE');
  });
});
