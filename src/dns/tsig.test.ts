import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { DnsError } from './errors.ts';
import { decodeMessage, encodeMessage, queryMessage, Rcode } from './message.ts';
import { RRType } from './rrtype.ts';
import {
  keyring,
  parseTsigKey,
  readTsig,
  signMessage,
  type TsigFailure,
  TsigStreamSigner,
  TsigStreamVerifier,
  tsigErrorResponse,
  verifyMessage,
} from './tsig.ts';

const SECRET = 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTAxMjM0NTY3ODk=';
const KEY = parseTsigKey({ name: 'Transfer.Key', algorithm: 'hmac-sha256', secret: SECRET });
const KEYS = keyring([KEY]);
const NOW = 1_700_000_000;

function query(id = 0x1234, name = 'example.com.', type: number = RRType.SOA): Uint8Array {
  return encodeMessage(queryMessage(name, type, { id }));
}

function response(id: number, answers: number): Uint8Array {
  return encodeMessage({
    ...queryMessage('example.com.', RRType.AXFR, { id, qr: true, aa: true }),
    answers: Array.from({ length: answers }, (_, i) => ({
      name: `h${i}.example.com.`,
      type: RRType.A,
      class: 1,
      ttl: 300,
      data: { type: 'A' as const, address: `192.0.2.${i % 250}` },
    })),
    authority: [],
    additional: [],
  });
}

function failure(r: ReturnType<typeof verifyMessage>): TsigFailure {
  assert.equal(r.ok, false, 'expected a failure');
  return r as TsigFailure;
}

/** An independent RFC 8945 §4.3 digest of a request, written out field by field. */
function referenceMac(message: Uint8Array, time: number, fudge: number): Buffer {
  const name = (labels: string[]) =>
    Buffer.concat([
      ...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])),
      Buffer.from([0]),
    ]);
  const vars = Buffer.alloc(16);
  vars.writeUInt16BE(255, 0); // CLASS ANY
  vars.writeUInt32BE(0, 2); // TTL
  const timeAndRest = Buffer.alloc(12);
  timeAndRest.writeUIntBE(time, 0, 6);
  timeAndRest.writeUInt16BE(fudge, 6);
  timeAndRest.writeUInt16BE(0, 8); // error
  timeAndRest.writeUInt16BE(0, 10); // other len
  return createHmac('sha256', Buffer.from(SECRET, 'base64'))
    .update(message)
    .update(name(['transfer', 'key']))
    .update(vars.subarray(0, 6))
    .update(name(['hmac-sha256']))
    .update(timeAndRest)
    .digest();
}

describe('parseTsigKey', () => {
  test('canonical name; algorithm in either form; base64 secret', () => {
    assert.equal(KEY.name, 'transfer.key.');
    assert.equal(KEY.algorithm, 'hmac-sha256');
    assert.equal(Buffer.from(KEY.secret).toString('base64'), SECRET);
    assert.equal(
      parseTsigKey({ name: 'k.', algorithm: 'HMAC-SHA512.', secret: SECRET }).algorithm,
      'hmac-sha512',
    );
    assert.equal(parseTsigKey({ name: 'k', algorithm: 'hmac-sha384', secret: SECRET }).name, 'k.');
  });

  test('weak and unknown algorithms are refused with a clear error', () => {
    for (const algorithm of [
      'hmac-sha1',
      'hmac-md5',
      'HMAC-MD5.SIG-ALG.REG.INT',
      'hmac-sha224',
      'gss-tsig',
    ]) {
      assert.throws(
        () => parseTsigKey({ name: 'k', algorithm, secret: SECRET }),
        (e: unknown) =>
          e instanceof DnsError && e.code === 'TSIG_UNSUPPORTED_ALGORITHM' && /hmac-sha256/.test(e.message),
        algorithm,
      );
    }
    assert.throws(() => parseTsigKey({ name: 'k', algorithm: 'hmac-sha1', secret: SECRET }), /RFC 8945 §6/);
  });

  test('bad secrets and names', () => {
    assert.throws(() => parseTsigKey({ name: 'k', algorithm: 'hmac-sha256', secret: 'not base64!' }), {
      code: 'TSIG_BAD_SECRET',
    });
    assert.throws(() => parseTsigKey({ name: 'k', algorithm: 'hmac-sha256', secret: '' }), {
      code: 'TSIG_BAD_SECRET',
    });
    assert.throws(() => parseTsigKey({ name: 'a..b', algorithm: 'hmac-sha256', secret: SECRET }), {
      code: 'TSIG_BAD_KEY_NAME',
    });
  });
});

describe('signMessage / verifyMessage', () => {
  test('the MAC is the RFC 8945 §4.3 digest; the TSIG RR is appended and ARCOUNT incremented', () => {
    const q = query();
    const { bytes, mac } = signMessage(q, KEY, { time: NOW, fudge: 300 });
    assert.deepEqual(Buffer.from(mac), referenceMac(q, NOW, 300));
    assert.deepEqual(bytes.subarray(0, 10), q.subarray(0, 10));
    assert.equal((bytes[10]! << 8) | bytes[11]!, 1);
    assert.deepEqual(bytes.subarray(12, q.length), q.subarray(12));
    const decoded = decodeMessage(bytes);
    const rr = decoded.additional[0]!;
    assert.deepEqual([rr.name, rr.type, rr.class, rr.ttl], ['transfer.key.', 250, 255, 0]);
    const found = readTsig(bytes)!;
    assert.deepEqual(
      {
        ...found.record,
        mac: Buffer.from(found.record.mac).toString('hex'),
        otherData: found.record.otherData.length,
      },
      {
        keyName: 'transfer.key.',
        algorithm: 'hmac-sha256.',
        timeSigned: NOW,
        fudge: 300,
        mac: Buffer.from(mac).toString('hex'),
        originalId: 0x1234,
        error: 0,
        otherData: 0,
      },
    );
    assert.deepEqual(found.stripped, q);
  });

  test('round trip with every algorithm; stripped is the message as it was', () => {
    for (const algorithm of ['hmac-sha256', 'hmac-sha384', 'hmac-sha512']) {
      const key = parseTsigKey({ name: 'k', algorithm, secret: SECRET });
      const q = query();
      const signed = signMessage(q, key, { time: NOW });
      assert.equal(signed.mac.length, { 'hmac-sha256': 32, 'hmac-sha384': 48, 'hmac-sha512': 64 }[algorithm]);
      const r = verifyMessage(signed.bytes, keyring([key]), { now: NOW + 10 });
      assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual(r.stripped, q);
      assert.deepEqual(r.mac, signed.mac);
      assert.equal(r.key, key);
    }
  });

  test('a response covers the request MAC (§4.3.1); a changed ID still verifies (original ID, §4.3.2)', () => {
    const request = signMessage(query(), KEY, { time: NOW });
    const reply = signMessage(response(0x1234, 3), KEY, { time: NOW, requestMac: request.mac });
    assert.ok(verifyMessage(reply.bytes, KEYS, { now: NOW, requestMac: request.mac }).ok);
    assert.equal(failure(verifyMessage(reply.bytes, KEYS, { now: NOW })).error, 'BADSIG');
    const otherMac = request.mac.slice();
    otherMac[0]! ^= 1;
    assert.equal(
      failure(verifyMessage(reply.bytes, KEYS, { now: NOW, requestMac: otherMac })).error,
      'BADSIG',
    );
    const forwarded = reply.bytes.slice();
    forwarded[0] = 0xab; // a forwarder may change the ID
    assert.ok(verifyMessage(forwarded, KEYS, { now: NOW, requestMac: request.mac }).ok);
  });

  test('check order (§5.2): unknown key → BADKEY, altered → BADSIG, even when also out of time', () => {
    const signed = signMessage(query(), KEY, { time: NOW }).bytes;
    const unknown = failure(verifyMessage(signed, keyring([]), { now: NOW }));
    assert.deepEqual([unknown.error, unknown.rcode], ['BADKEY', 9]);
    const otherAlgorithm = parseTsigKey({ name: 'transfer.key', algorithm: 'hmac-sha512', secret: SECRET });
    assert.equal(failure(verifyMessage(signed, keyring([otherAlgorithm]), { now: NOW })).error, 'BADKEY');
    const otherSecret = parseTsigKey({ name: 'transfer.key', algorithm: 'hmac-sha256', secret: 'AAAA' });
    assert.equal(failure(verifyMessage(signed, keyring([otherSecret]), { now: NOW })).error, 'BADSIG');
    const altered = signed.slice();
    altered[13]! ^= 0x20; // a letter of the question name changes case
    const bad = failure(verifyMessage(altered, KEYS, { now: NOW + 10_000 }));
    assert.deepEqual([bad.error, bad.rcode], ['BADSIG', 9]);
    assert.equal(bad.mac, undefined);
  });

  test('time (§5.2.3): within the fudge is fine, outside is BADTIME with the MAC kept for the reply', () => {
    const signed = signMessage(query(), KEY, { time: NOW, fudge: 30 });
    assert.ok(verifyMessage(signed.bytes, KEYS, { now: NOW + 30 }).ok);
    assert.ok(verifyMessage(signed.bytes, KEYS, { now: NOW - 30 }).ok);
    const late = failure(verifyMessage(signed.bytes, KEYS, { now: NOW + 31 }));
    assert.deepEqual([late.error, late.rcode], ['BADTIME', 9]);
    assert.deepEqual(late.mac, signed.mac);
  });

  test('MAC truncation (§5.2.2.1): half the hash (at least 10 octets) is accepted, less is FORMERR', () => {
    const q = query();
    const full = signMessage(q, KEY, { time: NOW });
    const truncate = (size: number) => {
      const found = readTsig(full.bytes)!;
      const rr = full.bytes.subarray(found.start);
      // owner (14) type class ttl (8) rdlength (2) algorithm (13) time fudge (8) size (2) mac...
      const macAt = 14 + 10 + 13 + 8;
      const out = new Uint8Array(found.start + rr.length - (32 - size));
      out.set(full.bytes.subarray(0, found.start));
      const head = rr.slice(0, macAt + 2);
      head[macAt] = 0;
      head[macAt + 1] = size;
      const rdlength = (head[22]! << 8) + head[23]! - (32 - size);
      head[22] = rdlength >> 8;
      head[23] = rdlength & 0xff;
      out.set(head, found.start);
      out.set(rr.subarray(macAt + 2, macAt + 2 + size), found.start + head.length);
      out.set(rr.subarray(macAt + 2 + 32), found.start + head.length + size);
      return out;
    };
    assert.ok(verifyMessage(truncate(16), KEYS, { now: NOW }).ok);
    assert.ok(verifyMessage(truncate(20), KEYS, { now: NOW }).ok);
    assert.equal(failure(verifyMessage(truncate(15), KEYS, { now: NOW })).error, 'FORMERR');
    assert.equal(failure(verifyMessage(truncate(8), KEYS, { now: NOW })).error, 'FORMERR');
    const policy = failure(verifyMessage(truncate(16), KEYS, { now: NOW, minMacSize: 32 }));
    assert.equal(policy.error, 'BADTRUNC');
    const badTruncated = truncate(16);
    badTruncated[badTruncated.length - 7]! ^= 1; // inside the MAC
    assert.equal(failure(verifyMessage(badTruncated, KEYS, { now: NOW })).error, 'BADSIG');
  });

  test('format (§5.1): no TSIG, a TSIG not last, two TSIGs, garbage', () => {
    assert.equal(failure(verifyMessage(query(), KEYS)).error, 'UNSIGNED');
    const signed = signMessage(query(), KEY, { time: NOW }).bytes;
    const twice = signMessage(signed, KEY, { time: NOW }).bytes;
    const f = failure(verifyMessage(twice, KEYS, { now: NOW }));
    assert.deepEqual([f.error, f.rcode], ['FORMERR', 1]);
    assert.match(f.message, /must be the last additional record/);
    assert.equal(failure(verifyMessage(signed.subarray(0, signed.length - 3), KEYS)).error, 'FORMERR');
    assert.equal(failure(verifyMessage(new Uint8Array(5), KEYS)).error, 'FORMERR');
  });
});

describe('tsigErrorResponse (§5.3.2)', () => {
  test('BADKEY and BADSIG: NOTAUTH with an unsigned TSIG carrying the error', () => {
    const request = signMessage(query(0x4242), KEY, { time: NOW }).bytes;
    const f = failure(verifyMessage(request, keyring([]), { now: NOW }));
    const reply = tsigErrorResponse(request, f)!;
    const m = decodeMessage(reply);
    assert.deepEqual(
      [m.id, m.qr, m.rcode, m.questions[0]?.name],
      [0x4242, true, Rcode.NOTAUTH, 'example.com.'],
    );
    const t = readTsig(reply)!.record;
    assert.deepEqual([t.error, t.mac.length, t.keyName], [17, 0, 'transfer.key.']);
    // The requester sees the error as reported by the server.
    const seen = failure(verifyMessage(reply, KEYS, { now: NOW, requestMac: readTsig(request)!.record.mac }));
    assert.deepEqual([seen.error, seen.reportedByPeer], ['BADKEY', true]);

    const altered = request.slice();
    altered[14]! ^= 1; // a letter of the question name
    const badsig = tsigErrorResponse(altered, failure(verifyMessage(altered, KEYS, { now: NOW })))!;
    assert.deepEqual([readTsig(badsig)!.record.error, readTsig(badsig)!.record.mac.length], [16, 0]);
  });

  test('BADTIME: signed with the key over the request MAC, the request time, the server time in Other Data', () => {
    const request = signMessage(query(), KEY, { time: NOW });
    const f = failure(verifyMessage(request.bytes, KEYS, { now: NOW + 1000 }));
    const reply = tsigErrorResponse(request.bytes, f, { now: NOW + 1000 })!;
    const t = readTsig(reply)!.record;
    assert.deepEqual([t.error, t.timeSigned, t.otherData.length], [18, NOW, 6]);
    assert.equal(Buffer.from(t.otherData).readUIntBE(0, 6), NOW + 1000);
    // The client, whose clock says NOW, can authenticate it.
    const seen = failure(verifyMessage(reply, KEYS, { now: NOW, requestMac: request.mac }));
    assert.deepEqual([seen.error, seen.reportedByPeer], ['BADTIME', true]);
    assert.equal(decodeMessage(reply).rcode, Rcode.NOTAUTH);
  });

  test('FORMERR: no TSIG in the reply; an unsigned request needs no error', () => {
    const request = signMessage(query(), KEY, { time: NOW }).bytes;
    const twice = signMessage(request, KEY, { time: NOW }).bytes;
    const reply = tsigErrorResponse(twice, failure(verifyMessage(twice, KEYS)))!;
    const m = decodeMessage(reply);
    assert.deepEqual([m.rcode, m.additional.length], [Rcode.FORMERR, 0]);
    assert.equal(tsigErrorResponse(query(), failure(verifyMessage(query(), KEYS))), undefined);
  });
});

describe('multi-message responses (§5.3.1)', () => {
  const request = signMessage(query(1, 'example.com.', RRType.AXFR), KEY, { time: NOW });
  const messages = Array.from({ length: 250 }, (_, i) => response(1, 1 + (i % 5)));
  const clock = () => NOW;

  function stream(every: number): Uint8Array[] {
    const signer = new TsigStreamSigner(KEY, request.mac, { every, now: clock });
    return messages.map((m, i) => signer.sign(m, i === messages.length - 1));
  }

  function verifyAll(sent: Uint8Array[]) {
    const verifier = new TsigStreamVerifier(KEYS, request.mac, { now: clock });
    const results = sent.map((m) => verifier.verify(m));
    return { results, end: verifier.end() };
  }

  test('every message signed (the RFC 8945 default): each verifies, chained to the previous MAC', () => {
    const sent = stream(1);
    assert.ok(sent.every((m) => readTsig(m) !== undefined));
    const { results, end } = verifyAll(sent);
    assert.ok(results.every((r) => r.ok && r.signed));
    assert.ok(end.ok);
    for (const [i, r] of results.entries())
      assert.deepEqual((r as { stripped: Uint8Array }).stripped, messages[i]);
    // The second message alone, with the first's MAC, verifies as timers-only (and not as a full TSIG).
    const firstMac = readTsig(sent[0]!)!.record.mac;
    assert.ok(verifyMessage(sent[1]!, KEYS, { now: NOW, previousMac: firstMac }).ok);
    assert.equal(failure(verifyMessage(sent[1]!, KEYS, { now: NOW, requestMac: firstMac })).error, 'BADSIG');
    // timersOnly + requestMac is the same as previousMac.
    const again = signMessage(messages[1]!, KEY, { time: NOW, timersOnly: true, requestMac: firstMac });
    assert.deepEqual(again.bytes, sent[1]);
  });

  test('every 100th message signed: unsigned ones are covered by the next MAC', () => {
    const sent = stream(100);
    const signedAt = sent.flatMap((m, i) => (readTsig(m) ? [i] : []));
    assert.deepEqual(signedAt, [0, 100, 200, 249]);
    const { results, end } = verifyAll(sent);
    assert.ok(
      results.every((r) => r.ok),
      JSON.stringify(results.find((r) => !r.ok)),
    );
    assert.ok(end.ok);
  });

  test('an altered unsigned message is caught at the next signed one; reordering is caught', () => {
    const sent = stream(100);
    const altered = sent.map((m) => m.slice());
    altered[50]![14]! ^= 1; // a letter of the question name
    const { results } = verifyAll(altered);
    assert.ok(results.slice(0, 100).every((r) => r.ok));
    assert.equal((results[100] as TsigFailure).error, 'BADSIG');
    // After a failure the stream stays broken.
    assert.equal((results[101] as TsigFailure).error, 'BADSIG');

    const everySigned = stream(1);
    const swapped = [everySigned[0]!, everySigned[2]!, everySigned[1]!, ...everySigned.slice(3)];
    assert.equal((verifyAll(swapped).results[1] as TsigFailure).error, 'BADSIG');
  });

  test('the first and the last message must be signed; at most 99 unsigned in a row', () => {
    const sent = stream(1);
    const firstUnsigned = [messages[0]!, ...sent.slice(1)];
    assert.match((verifyAll(firstUnsigned).results[0] as TsigFailure).message, /first message/);
    const lastUnsigned = [...sent.slice(0, -1), messages.at(-1)!];
    const end = verifyAll(lastUnsigned).end;
    assert.ok(!end.ok);
    assert.match((end as TsigFailure).message, /last message/);
    const gap = [sent[0]!, ...messages.slice(1, 101), ...sent.slice(101)];
    const { results } = verifyAll(gap);
    assert.ok(results.slice(0, 100).every((r) => r.ok));
    assert.match((results[100] as TsigFailure).message, /more than 99/);
  });

  test('a stream signer takes 1 to 100 messages per signature', () => {
    assert.throws(() => new TsigStreamSigner(KEY, request.mac, { every: 101 }), {
      code: 'TSIG_BAD_INTERVAL',
    });
    assert.throws(() => new TsigStreamSigner(KEY, request.mac, { every: 0 }), { code: 'TSIG_BAD_INTERVAL' });
  });
});

describe('TSIG on Node Buffers', () => {
  test("reading and verifying never change the caller's bytes (Buffer.slice is a view)", async () => {
    const key = parseTsigKey({
      name: 'k',
      algorithm: 'hmac-sha256',
      secret: Buffer.from('0123456789abcdef0123456789abcdef').toString('base64'),
    });
    const signed = Buffer.from(signMessage(query(7, 'example.com.', RRType.AXFR), key).bytes);
    const before = Buffer.from(signed);
    assert.ok(readTsig(signed));
    assert.equal(verifyMessage(signed, keyring([key])).ok, true);
    assert.deepEqual(signed, before);
    assert.equal(verifyMessage(signed, keyring([key])).ok, true, 'verifies again');
  });
});

test("maxFudge: the verifier accepts the sender's fudge up to its own (RFC 8945 §5.2.3)", () => {
  const k = parseTsigKey({
    name: 'cap-key',
    algorithm: 'hmac-sha256',
    secret: Buffer.alloc(32, 7).toString('base64'),
  });
  const ring = keyring([k]);
  const signed = signMessage(query(), k, { time: 1_000_000, fudge: 7200 }).bytes;
  assert.ok(verifyMessage(signed, ring, { now: 1_000_000 + 3600 }).ok, "the sender's fudge alone");
  const capped = verifyMessage(signed, ring, { now: 1_000_000 + 3600, maxFudge: 300 });
  assert.ok(!capped.ok);
  assert.equal(capped.error, 'BADTIME');
  assert.match(capped.message, /accepts at most 300/);
  assert.ok(verifyMessage(signed, ring, { now: 1_000_000 + 300, maxFudge: 300 }).ok);
  // A smaller fudge than the cap stays the sender's.
  const tight = signMessage(query(), k, { time: 1_000_000, fudge: 10 }).bytes;
  assert.ok(!verifyMessage(tight, ring, { now: 1_000_000 + 11, maxFudge: 300 }).ok);
});
