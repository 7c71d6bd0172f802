/** Golden wire vectors: hand-computed RDATA/message bytes and the RFC 9460 Appendix D test vectors. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeMessage, encodeMessage, type Message } from './message.ts';
import { decodeRdata, encodeRdata, parseRdata, printRdata, type Rdata } from './rdata.ts';
import { type RecordTypeName, RRClass, RRType } from './rrtype.ts';
import { WireReader, WireWriter } from './wire.ts';

function hex(text: string): Uint8Array {
  const clean = text.replace(/;[^\n]*/g, '').replace(/\s+/g, '');
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(clean.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function ascii(s: string): string {
  return [...s].map((c) => c.charCodeAt(0).toString(16).padStart(2, '0')).join(' ');
}

function encode(r: Rdata): Uint8Array {
  const w = new WireWriter();
  encodeRdata(r, w);
  return w.finish();
}

/** Presentation -> wire equals `expected`, and wire -> RDATA -> presentation is stable. */
function golden(type: RecordTypeName, text: string, expected: string, origin = 'example.com.'): void {
  const rdata = parseRdata(type, text, origin);
  const bytes = encode(rdata);
  assert.deepEqual([...bytes], [...hex(expected)], `${type} ${text}`);
  const decoded = decodeRdata(RRType[type], new WireReader(bytes), bytes.length) as Rdata;
  assert.deepEqual(decoded, rdata);
  assert.deepEqual(parseRdata(type, printRdata(decoded), '.'), rdata);
}

describe('hand-computed RDATA vectors', () => {
  test('A', () => golden('A', '192.0.2.1', 'c0 00 02 01'));
  test('AAAA', () => golden('AAAA', '2001:db8::1', '20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01'));
  test('TXT multi-string', () => golden('TXT', '"a b" "c" ""', '03 61 20 62 01 63 00'));
  test('TXT 300-octet string is split 255 + 45', () => {
    const x = '78 '.repeat(255);
    golden('TXT', 'x'.repeat(300), `ff ${x} 2d ${'78 '.repeat(45)}`);
  });
  test('SRV target is never compressed', () => {
    golden(
      'SRV',
      '10 5 5060 sip',
      `00 0a 00 05 13 c4 03 ${ascii('sip')} 07 ${ascii('example')} 03 ${ascii('com')} 00`,
    );
    const w = new WireWriter();
    w.name('example.com.', false);
    encodeRdata(parseRdata('SRV', '0 0 1 example.com.', '.'), w);
    assert.deepEqual(
      [...w.finish().subarray(13 + 6)],
      [...hex(`07 ${ascii('example')} 03 ${ascii('com')} 00`)],
    );
  });
  test('CAA', () =>
    golden('CAA', '0 issue "letsencrypt.org"', `00 05 ${ascii('issue')} ${ascii('letsencrypt.org')}`));
  test('SOA compresses rname against mname', () =>
    golden(
      'SOA',
      'ns1 hostmaster 2024010101 7200 3600 1209600 300',
      `03 ${ascii('ns1')} 07 ${ascii('example')} 03 ${ascii('com')} 00
       0a ${ascii('hostmaster')} c0 04        ; pointer to "example.com." at offset 4
       78 a3 f1 75  00 00 1c 20  00 00 0e 10  00 12 75 00  00 00 01 2c`,
    ));
});

describe('MX compression inside a message', () => {
  const bytes = hex(`
    12 34 84 00 00 01 00 01 00 00 00 00                 ; header: QR AA, 1 question, 1 answer
    07 65 78 61 6d 70 6c 65 03 63 6f 6d 00 00 0f 00 01  ; example.com. MX IN (name at offset 12)
    c0 0c 00 0f 00 01 00 00 0e 10 00 09                 ; owner -> 12, MX IN 3600, RDLENGTH 9
    00 0a 04 6d 61 69 6c c0 0c                          ; 10 mail + pointer -> example.com.
  `);
  const msg: Message = {
    id: 0x1234,
    qr: true,
    opcode: 0,
    aa: true,
    tc: false,
    rd: false,
    ra: false,
    ad: false,
    cd: false,
    rcode: 0,
    questions: [{ name: 'example.com.', type: RRType.MX, class: RRClass.IN }],
    answers: [
      {
        name: 'example.com.',
        type: RRType.MX,
        class: RRClass.IN,
        ttl: 3600,
        data: { type: 'MX', preference: 10, exchange: 'mail.example.com.' },
      },
    ],
    authority: [],
    additional: [],
  };
  test('encode', () => assert.deepEqual([...encodeMessage(msg)], [...bytes]));
  test('decode', () => assert.deepEqual(decodeMessage(bytes), msg));
});

// RFC 9460 Appendix D. Owner names are irrelevant to the RDATA; the origin is set so that names are absolute.
describe('RFC 9460 Appendix D test vectors', () => {
  const fooCom = `03 66 6f 6f 07 65 78 61 6d 70 6c 65 03 63 6f 6d 00`;
  const fooOrg = `03 66 6f 6f 07 65 78 61 6d 70 6c 65 03 6f 72 67 00`;
  test('D.1 AliasMode (Figure 2)', () => golden('HTTPS', '0 foo.example.com.', `00 00 ${fooCom}`));
  test('D.2 Figure 3: use the owner name', () => golden('SVCB', '1 .', '00 01 00'));
  test('D.2 Figure 4: port', () =>
    golden('SVCB', '16 foo.example.com. port=53', `00 10 ${fooCom} 00 03 00 02 00 35`));
  test('D.2 Figure 5: unregistered key, unquoted value', () =>
    golden('SVCB', '1 foo.example.com. key667=hello', `00 01 ${fooCom} 02 9b 00 05 68 65 6c 6c 6f`));
  test('D.2 Figure 6: quoted value with decimal escape', () =>
    golden(
      'SVCB',
      '1 foo.example.com. key667="hello\\210qoo"',
      `00 01 ${fooCom} 02 9b 00 09 68 65 6c 6c 6f d2 71 6f 6f`,
    ));
  test('D.2 Figure 7: two quoted IPv6 hints', () =>
    golden(
      'SVCB',
      '1 foo.example.com. ipv6hint="2001:db8::1,2001:db8::53:1"',
      `00 01 ${fooCom} 00 06 00 20
       20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01
       20 01 0d b8 00 00 00 00 00 00 00 00 00 53 00 01`,
    ));
  test('D.2 Figure 8: IPv6 hint in IPv4-embedded form', () =>
    golden(
      'SVCB',
      '1 example.com. ipv6hint="2001:db8:122:344::192.0.2.33"',
      `00 01 07 65 78 61 6d 70 6c 65 03 63 6f 6d 00 00 06 00 10
       20 01 0d b8 01 22 03 44 00 00 00 00 c0 00 02 21`,
    ));
  test('D.2 Figure 9: mandatory, alpn, ipv4hint (keys given unsorted)', () =>
    golden(
      'SVCB',
      '16 foo.example.org. alpn=h2,h3-19 mandatory=ipv4hint,alpn ipv4hint=192.0.2.1',
      `00 10 ${fooOrg}
       00 00 00 04 00 01 00 04            ; mandatory = alpn, ipv4hint
       00 01 00 09 02 68 32 05 68 33 2d 31 39 ; alpn = h2, h3-19
       00 04 00 04 c0 00 02 01            ; ipv4hint`,
    ));
  const figure10 = `00 10 ${fooOrg} 00 01 00 0c 08 66 5c 6f 6f 2c 62 61 72 02 68 32`;
  test('D.2 Figure 10: escaped alpn, quoted form', () =>
    golden('SVCB', '16 foo.example.org. alpn="f\\\\\\\\oo\\\\,bar,h2"', figure10));
  test('D.2 Figure 10: escaped alpn, unquoted decimal-escape form', () =>
    golden('SVCB', '16 foo.example.org. alpn=f\\\\\\092oo\\092,bar,h2', figure10));
});
