import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DnsError } from './errors.ts';
import {
  decodeMessage,
  encodeMessage,
  encodeQuestion,
  encodeResourceRecord,
  HEADER_LENGTH,
  type Message,
  Opcode,
  Rcode,
} from './message.ts';
import { parseRdata } from './rdata.ts';
import { type RecordTypeName, RRClass, RRType } from './rrtype.ts';
import { WireError, WireWriter } from './wire.ts';

const ORIGIN = 'example.com.';

function rr(name: string, type: RecordTypeName, text: string, ttl = 300): Message['answers'][number] {
  return { name, type: RRType[type], class: RRClass.IN, ttl, data: parseRdata(type, text, ORIGIN) };
}

function baseMessage(): Message {
  return {
    id: 0xbeef,
    qr: true,
    opcode: Opcode.QUERY,
    aa: true,
    tc: false,
    rd: true,
    ra: false,
    ad: false,
    cd: false,
    rcode: Rcode.NOERROR,
    questions: [{ name: 'www.Example.com.', type: RRType.A, class: RRClass.IN }],
    answers: [],
    authority: [],
    additional: [],
  };
}

function fullMessage(): Message {
  const msg = baseMessage();
  msg.questions = [{ name: 'www.example.com.', type: RRType.A, class: RRClass.IN }];
  msg.answers = [
    rr('www.example.com.', 'CNAME', 'web'),
    rr('web.example.com.', 'A', '192.0.2.1'),
    rr('web.example.com.', 'AAAA', '2001:db8::1'),
    rr('example.com.', 'MX', '10 mail'),
    rr('example.com.', 'TXT', '"hello" "world"'),
    rr('_sip._udp.example.com.', 'SRV', '1 2 5060 sip'),
    rr('example.com.', 'CAA', '0 issue "ca.example"'),
    rr('example.com.', 'HTTPS', '1 . alpn=h2,h3 ipv4hint=192.0.2.1'),
    rr(
      '_443._tcp.example.com.',
      'TLSA',
      '3 1 1 d2abde240d7cd3ee6b4b28c54df034b97983a1d16e8a410e4561cb106618e971',
    ),
    rr('example.com.', 'SSHFP', '1 1 dd465c09cfa51fb45020cc83316fff21b9ec74ac'),
    rr('sub.example.com.', 'DS', '60485 5 1 2bb183af5f22588179a53b0a98631fad1a292118'),
    rr('example.com.', 'NAPTR', '100 10 "S" "SIP+D2U" "" _sip._udp'),
    rr('1.2.0.192.in-addr.arpa.', 'PTR', 'web'),
    rr('example.com.', 'ALIAS', 'lb.example.net.'),
    {
      name: 'example.com.',
      type: 99,
      class: RRClass.IN,
      ttl: 1,
      data: { type: 99, data: new Uint8Array([1, 2]) },
    },
  ];
  msg.authority = [
    rr('example.com.', 'NS', 'ns1'),
    rr('example.com.', 'SOA', 'ns1 hostmaster 1 7200 3600 1209600 300'),
  ];
  msg.additional = [rr('ns1.example.com.', 'A', '192.0.2.53')];
  return msg;
}

describe('encode/decode round trip', () => {
  test('all record types', () => {
    const msg = fullMessage();
    assert.deepEqual(decodeMessage(encodeMessage(msg)), msg);
  });

  test('compression is case-insensitive: a pointer takes the case of its target', () => {
    const msg = baseMessage();
    msg.answers = [rr('www.example.com.', 'A', '192.0.2.1')];
    const decoded = decodeMessage(encodeMessage(msg));
    assert.equal(decoded.answers[0]!.name, 'www.Example.com.');
  });

  test('header flags and opcode', () => {
    const msg = baseMessage();
    Object.assign(msg, {
      qr: false,
      opcode: Opcode.UPDATE,
      aa: false,
      tc: true,
      rd: false,
      ra: true,
      ad: true,
      cd: true,
      rcode: Rcode.NOTZONE,
    });
    const bytes = encodeMessage(msg);
    assert.equal(bytes[2], 0x2a); // opcode 5 << 3 | TC
    assert.equal(bytes[3], 0x80 | 0x20 | 0x10 | 10); // RA AD CD rcode 10
    assert.deepEqual(decodeMessage(bytes), msg);
  });

  test('names are compressed', () => {
    const msg = fullMessage();
    const size = encodeMessage(msg).length;
    let uncompressed = 0;
    for (const r of [...msg.answers, ...msg.authority, ...msg.additional]) uncompressed += r.name.length + 1;
    assert.ok(size < 700, `message is ${size} octets`);
    assert.ok(uncompressed > 0);
  });

  test('EDNS with DO bit, options and extended rcode BADVERS', () => {
    const msg = baseMessage();
    msg.rcode = Rcode.BADVERS;
    msg.edns = {
      udpSize: 1232,
      extendedRcode: 1,
      version: 0,
      dnssecOk: true,
      options: [
        { code: 10, data: new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]) },
        { code: 12, data: new Uint8Array(0) },
      ],
    };
    const bytes = encodeMessage(msg);
    assert.equal(bytes[3]! & 0xf, 0); // BADVERS = 16: low 4 bits are 0 in the header
    // OPT is last: owner 0, type 41, class 1232, TTL = ext rcode 1, version 0, DO
    const opt = bytes.length - (11 + 12 + 4);
    assert.deepEqual([...bytes.subarray(opt, opt + 11)], [0, 0, 41, 0x04, 0xd0, 1, 0, 0x80, 0, 0, 16]);
    const decoded = decodeMessage(bytes);
    assert.deepEqual(decoded, msg);
    assert.equal(decoded.rcode, 16);
    assert.equal(decoded.additional.length, 0);
  });

  test('EDNS placed after other additional records', () => {
    const msg = fullMessage();
    msg.edns = { udpSize: 4096, extendedRcode: 0, version: 0, dnssecOk: false, options: [] };
    const bytes = encodeMessage(msg);
    assert.deepEqual([...bytes.subarray(bytes.length - 11)], [0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0]);
    assert.deepEqual(decodeMessage(bytes), msg);
  });

  test('extended rcode without EDNS is refused', () => {
    const msg = baseMessage();
    msg.rcode = Rcode.BADVERS;
    assert.throws(
      () => encodeMessage(msg),
      (e: unknown) => e instanceof DnsError && e.code === 'RCODE_NEEDS_EDNS',
    );
  });

  test('UPDATE-style empty RDATA with class ANY/NONE decodes as opaque', () => {
    const msg = baseMessage();
    msg.opcode = Opcode.UPDATE;
    msg.questions = [{ name: 'example.com.', type: RRType.SOA, class: RRClass.IN }];
    msg.authority = [
      {
        name: 'a.example.com.',
        type: RRType.A,
        class: RRClass.ANY,
        ttl: 0,
        data: { type: RRType.A, data: new Uint8Array(0) },
      },
      {
        name: 'a.example.com.',
        type: RRType.A,
        class: RRClass.NONE,
        ttl: 0,
        data: parseRdata('A', '192.0.2.9', ORIGIN),
      },
    ];
    assert.deepEqual(decodeMessage(encodeMessage(msg)), msg);
  });

  test('lower-level encoders', () => {
    const w = new WireWriter();
    w.bytes(new Uint8Array(HEADER_LENGTH));
    encodeQuestion(w, { name: 'example.com.', type: RRType.A, class: RRClass.IN });
    encodeResourceRecord(w, rr('example.com.', 'A', '192.0.2.1'));
    assert.equal(w.length, HEADER_LENGTH + 17 + 2 + 10 + 4);
  });
});

describe('strict decoding', () => {
  const header = (qd: number, an: number, ns: number, ar: number): number[] => [
    0,
    1,
    0,
    0,
    0,
    qd,
    0,
    an,
    0,
    ns,
    0,
    ar,
  ];
  const opt = (owner: number[] = [0]): number[] => [...owner, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0];
  const cases: [string, number[], string][] = [
    ['short header', [0, 1, 0], 'TRUNCATED'],
    ['missing question', header(1, 0, 0, 0), 'TRUNCATED'],
    ['trailing data', [...header(0, 0, 0, 0), 0], 'TRAILING_DATA'],
    ['two OPT records', [...header(0, 0, 0, 2), ...opt(), ...opt()], 'MULTIPLE_OPT'],
    ['OPT with non-root owner', [...header(0, 0, 0, 1), ...opt([1, 0x61, 0])], 'BAD_OPT_OWNER'],
    ['OPT in answer section', [...header(0, 1, 0, 0), ...opt()], 'MISPLACED_OPT'],
    [
      'OPT option overrun',
      [...header(0, 0, 0, 1), 0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 6, 0, 10, 0, 9, 1, 2],
      'BAD_OPT',
    ],
    ['RDATA beyond message', [...header(0, 1, 0, 0), 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 1, 2], 'TRUNCATED'],
    ['A with RDLENGTH 3', [...header(0, 1, 0, 0), 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 3, 1, 2, 3], 'BAD_RDATA'],
    ['question name forward pointer', [...header(1, 0, 0, 0), 0xc0, 14, 0, 0, 1, 0, 1], 'BAD_POINTER'],
    ['question name self pointer', [...header(1, 0, 0, 0), 0xc0, 12, 0, 1, 0, 1], 'BAD_POINTER'],
    ['reserved label type', [...header(1, 0, 0, 0), 0x40, 0, 1, 0, 1], 'BAD_LABEL_TYPE'],
  ];
  for (const [label, bytes, code] of cases) {
    test(label, () => {
      assert.throws(
        () => decodeMessage(new Uint8Array(bytes)),
        (e: unknown) => e instanceof WireError && e.code === code,
      );
    });
  }

  test('TTL with the top bit set reads as 0 (RFC 2181 §8)', () => {
    const bytes = [0, 1, 0x80, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0x80, 0, 0, 1, 0, 4, 192, 0, 2, 1];
    assert.equal(decodeMessage(new Uint8Array(bytes)).answers[0]!.ttl, 0);
  });
});

describe('robustness', () => {
  test('2,000 random and mutated buffers only return or throw DnsError', () => {
    // Deterministic xorshift PRNG so failures are reproducible.
    let seed = 0x9e3779b9;
    const rand = (n: number): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    const valid = encodeMessage({
      ...fullMessage(),
      edns: {
        udpSize: 1232,
        extendedRcode: 0,
        version: 0,
        dnssecOk: true,
        options: [{ code: 10, data: new Uint8Array(8) }],
      },
    });
    let decoded = 0;
    for (let i = 0; i < 2000; i++) {
      let buf: Uint8Array;
      if (i % 4 === 0) {
        buf = new Uint8Array(rand(64));
        for (let j = 0; j < buf.length; j++) buf[j] = rand(256);
        if (buf.length >= 12) buf[5] = rand(3); // small question counts reach the name decoder
      } else {
        buf = valid.slice(0, i % 4 === 1 ? rand(valid.length + 1) : valid.length);
        const flips = 1 + rand(6);
        for (let f = 0; f < flips && buf.length > 0; f++) {
          const at = rand(buf.length);
          buf[at] = rand(3) === 0 ? 0xc0 | rand(4) : rand(256);
        }
      }
      try {
        const msg = decodeMessage(buf);
        decoded++;
        // whatever decodes must re-encode and decode to the same message (names modulo case)
        const again = decodeMessage(encodeMessage(msg));
        assert.equal(again.answers.length, msg.answers.length);
        assert.equal(again.rcode, msg.rcode);
        assert.deepEqual(
          again.questions.map((q) => q.name.toLowerCase()),
          msg.questions.map((q) => q.name.toLowerCase()),
        );
      } catch (e) {
        if (!(e instanceof DnsError))
          throw new Error(`non-DnsError on buffer ${Buffer.from(buf).toString('hex')}`, { cause: e });
      }
    }
    assert.ok(decoded > 0, 'some mutations should still decode');
  });
});
