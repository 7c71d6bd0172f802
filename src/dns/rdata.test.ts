import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DnsError } from './errors.ts';
import { aaaaCodec, aCodec, plainAddress } from './rdata/address.ts';
import { RdataFields } from './rdata/fields.ts';
import {
  additionalTargets,
  decodeRdata,
  encodeRdata,
  parseRdata,
  printRdata,
  printUnknownRdata,
  type Rdata,
  rdataEquals,
  rdataIdentical,
  rdataKey,
} from './rdata.ts';
import { type RecordTypeName, RRType } from './rrtype.ts';
import { WireError, WireReader, WireWriter } from './wire.ts';

const ORIGIN = 'example.com.';

function encode(r: Rdata): Uint8Array {
  const w = new WireWriter();
  encodeRdata(r, w);
  return w.finish();
}

function decode(type: RecordTypeName, bytes: Uint8Array): Rdata {
  const r = new WireReader(bytes);
  const d = decodeRdata(RRType[type], r, bytes.length);
  assert.equal(r.offset, bytes.length);
  return d as Rdata;
}

/** parse -> print -> parse and encode -> decode round trips. */
function roundTrip(type: RecordTypeName, text: string, expectedPrint?: string): Rdata {
  const r = parseRdata(type, text, ORIGIN);
  const printed = printRdata(r);
  if (expectedPrint !== undefined) assert.equal(printed, expectedPrint);
  assert.deepEqual(parseRdata(type, printed, 'elsewhere.org.'), r, `print/parse of ${printed}`);
  assert.deepEqual(decode(type, encode(r)), r, `wire round trip of ${printed}`);
  assert.ok(rdataEquals(r, parseRdata(type, printed, ORIGIN)));
  // RFC 3597 generic form of the encoding parses to the same RDATA
  const wire = encode(r);
  const generic = printUnknownRdata({ type: RRType[type], data: wire });
  assert.deepEqual(parseRdata(type, generic, ORIGIN), r, generic);
  return r;
}

function rejects(type: RecordTypeName, text: string, ...fragments: string[]): void {
  assert.throws(
    () => parseRdata(type, text, ORIGIN),
    (e: unknown) => {
      assert.ok(e instanceof DnsError, `expected DnsError for ${type} ${text}`);
      assert.equal(e.code, 'BAD_RDATA', e.message);
      for (const f of fragments)
        assert.ok(e.message.includes(f), `message ${JSON.stringify(e.message)} lacks ${f}`);
      return true;
    },
    `${type} ${JSON.stringify(text)} should be rejected`,
  );
}

describe('A', () => {
  test('round trip', () => {
    roundTrip('A', '192.0.2.1', '192.0.2.1');
    roundTrip('A', ' 0.0.0.0 ', '0.0.0.0');
  });
  test('rejects', () => {
    rejects('A', '192.0.2', 'A address "192.0.2"', 'four decimal octets');
    rejects('A', '192.0.2.01', 'leading zeros');
    rejects('A', '192.0.2.256');
    rejects('A', '2001:db8::1', 'AAAA');
    rejects('A', '192.0.2.1 192.0.2.2', 'exactly 1');
    rejects('A', '', 'exactly 1');
  });
});

describe('A and AAAA: the address as written', () => {
  // V8's gc function (the flag is set for contexts made while it is on).
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  setFlagsFromString('--no-expose-gc');
  const heap = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };

  test('an address already canonical is kept as the text it was parsed from, not a copy beside it', () => {
    // Regression: every parsed address was a new string equal to the record's text, about 32 bytes
    // per A record kept twice for as long as its zone serves it (docs/benchmarks.md, seventh round).
    const n = 20_000;
    // The least of three measurements: a collection's floating garbage can land in one of them.
    const perRecord = (type: 'A' | 'AAAA', texts: string[]): [number, Rdata[]] => {
      let least = Number.POSITIVE_INFINITY;
      let parsed: Rdata[] = [];
      for (let attempt = 0; attempt < 3; attempt++) {
        parsed = new Array(n);
        const before = heap();
        for (let i = 0; i < n; i++) parsed[i] = parseRdata(type, texts[i]!, '.');
        least = Math.min(least, (heap() - before) / n);
      }
      return [least, parsed];
    };
    const [a, parsedA] = perRecord(
      'A',
      Array.from({ length: n }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`),
    );
    const [aaaa, parsedAaaa] = perRecord(
      'AAAA',
      Array.from({ length: n }, (_, i) => `2001:db8::${i.toString(16)}`),
    );
    // An object of two fields is 40 bytes; a second copy of the address added 32 (A) and about 88
    // (AAAA) per record.
    assert.ok(a < 60, `${a.toFixed(1)} bytes per parsed A record`);
    assert.ok(aaaa < 70, `${aaaa.toFixed(1)} bytes per parsed AAAA record`);
    const parsed = [...parsedA, ...parsedAaaa];
    assert.deepEqual(parsed[1], { type: 'A', address: '10.0.0.1' });
    assert.deepEqual(parsed[n + 255], { type: 'AAAA', address: '2001:db8::ff' });
    // Not canonical as written: the canonical form, as before.
    assert.deepEqual(parseRdata('AAAA', '2001:DB8::1', '.'), { type: 'AAAA', address: '2001:db8::1' });
    assert.deepEqual(parseRdata('A', ' 192.0.2.1', '.'), { type: 'A', address: '192.0.2.1' });
  });
});

describe('AAAA', () => {
  test('round trip normalises to RFC 5952', () => {
    roundTrip('AAAA', '2001:DB8:0000::0001', '2001:db8::1');
    roundTrip('AAAA', '::ffff:192.0.2.1', '::ffff:192.0.2.1');
  });
  test('rejects', () => {
    rejects('AAAA', '192.0.2.1', 'A record');
    rejects('AAAA', '2001:db8::1::2', 'IPv6');
    rejects('AAAA', 'fe80::1%eth0');
  });
});

describe('single-name types', () => {
  test('CNAME/ALIAS/NS/PTR round trip with origin resolution', () => {
    assert.deepEqual(roundTrip('CNAME', 'www', 'www.example.com.'), {
      type: 'CNAME',
      target: 'www.example.com.',
    });
    assert.deepEqual(roundTrip('ALIAS', '@'), { type: 'ALIAS', target: 'example.com.' });
    assert.deepEqual(roundTrip('NS', 'ns1.example.net.'), { type: 'NS', host: 'ns1.example.net.' });
    assert.deepEqual(roundTrip('PTR', 'host.example.com.'), { type: 'PTR', target: 'host.example.com.' });
  });
  test('rejects', () => {
    rejects('CNAME', 'a b', 'exactly 1');
    rejects('CNAME', '', 'exactly 1');
    rejects('NS', 'a..b.', 'NS host "a..b."', 'empty label');
    rejects('PTR', '"host.example.com."', 'must not be quoted');
  });
});

describe('MX', () => {
  test('round trip', () => {
    assert.deepEqual(roundTrip('MX', '10 mail', '10 mail.example.com.'), {
      type: 'MX',
      preference: 10,
      exchange: 'mail.example.com.',
    });
    roundTrip('MX', '0 .', '0 .'); // RFC 7505 null MX
  });
  test('rejects', () => {
    rejects('MX', 'mail.example.com.', 'needs exactly 2', '<preference');
    rejects('MX', '70000 mail.example.com.', 'MX preference "70000"', '0 to 65535');
    rejects('MX', '-1 mail.example.com.', 'preference');
    rejects('MX', 'ten mail.example.com.', 'preference');
    rejects('MX', '10 mail example', 'needs exactly 2');
    rejects('MX', `10 ${'a'.repeat(64)}.example.com.`, 'MX exchange', '63');
  });
});

describe('TXT', () => {
  test('unquoted text is one verbatim string', () => {
    const r = roundTrip(
      'TXT',
      'v=spf1 include:_spf.example.com ~all',
      '"v=spf1 include:_spf.example.com ~all"',
    );
    assert.deepEqual(r, { type: 'TXT', strings: ['v=spf1 include:_spf.example.com ~all'] });
    assert.deepEqual(parseRdata('TXT', 'back\\slash ok', ORIGIN), {
      type: 'TXT',
      strings: ['back\\slash ok'],
    });
    assert.deepEqual(parseRdata('TXT', '', ORIGIN), { type: 'TXT', strings: [''] });
  });
  test('long unquoted text is split into 255-octet strings', () => {
    const long = 'x'.repeat(600);
    const r = parseRdata('TXT', long, ORIGIN);
    assert.deepEqual(r, { type: 'TXT', strings: ['x'.repeat(255), 'x'.repeat(255), 'x'.repeat(90)] });
    roundTrip('TXT', long);
  });
  test('quoted strings', () => {
    const r = roundTrip('TXT', '"a b" "c\\"d" "\\255"', '"a b" "c\\"d" "\\255"');
    assert.deepEqual(r, { type: 'TXT', strings: ['a b', 'c"d', '\xff'] });
    assert.deepEqual(parseRdata('TXT', '""', ORIGIN), { type: 'TXT', strings: [''] });
    assert.equal(
      (parseRdata('TXT', `"${'y'.repeat(300)}"`, ORIGIN) as { strings: string[] }).strings.length,
      2,
    );
  });
  test('non-ASCII is UTF-8', () => {
    const r = roundTrip('TXT', 'café', '"caf\\195\\169"');
    assert.deepEqual(r, { type: 'TXT', strings: ['caf\xc3\xa9'] });
    assert.deepEqual(parseRdata('TXT', '"ü"', ORIGIN), { type: 'TXT', strings: ['\xc3\xbc'] });
  });
  test('rejects', () => {
    rejects('TXT', '"a" b', 'every string must be quoted');
    rejects('TXT', '"abc', 'unterminated');
    rejects('TXT', '"a"b', 'separate strings');
    rejects('TXT', '"\\999"', 'above 255');
  });
});

describe('SRV', () => {
  test('round trip', () => {
    assert.deepEqual(roundTrip('SRV', '10 5 5060 sip', '10 5 5060 sip.example.com.'), {
      type: 'SRV',
      priority: 10,
      weight: 5,
      port: 5060,
      target: 'sip.example.com.',
    });
    roundTrip('SRV', '0 0 0 .', '0 0 0 .');
  });
  test('rejects', () => {
    rejects('SRV', '10 5 sip.example.com.', 'needs exactly 4');
    rejects('SRV', '10 5 65536 sip.example.com.', 'SRV port "65536"');
    rejects('SRV', '10 x 5060 sip.example.com.', 'SRV weight "x"');
  });
});

describe('CAA', () => {
  test('round trip', () => {
    assert.deepEqual(roundTrip('CAA', '0 issue "letsencrypt.org"', '0 issue "letsencrypt.org"'), {
      type: 'CAA',
      flags: 0,
      tag: 'issue',
      value: 'letsencrypt.org',
    });
    roundTrip('CAA', '128 iodef "mailto:security@example.com"');
    roundTrip('CAA', '0 issue ";"');
    roundTrip('CAA', '0 issuewild letsencrypt.org', '0 issuewild "letsencrypt.org"');
    roundTrip('CAA', `0 tbs "${'v'.repeat(400)}"`); // values are not limited to 255 octets
  });
  test('rejects', () => {
    rejects('CAA', '0 issue', 'needs exactly 3');
    rejects('CAA', '256 issue "x"', 'CAA flags "256"', '0 to 255');
    rejects('CAA', '0 is-sue "x"', 'CAA tag "is-sue"', 'letters and digits');
    rejects('CAA', '0 "issue" "x"', 'CAA tag');
    rejects('CAA', '0 issue "a" "b"', 'needs exactly 3');
  });
});

describe('SOA', () => {
  test('round trip with TTL units', () => {
    assert.deepEqual(roundTrip('SOA', 'ns1 hostmaster 2024010101 1h 15m 2w 5m'), {
      type: 'SOA',
      mname: 'ns1.example.com.',
      rname: 'hostmaster.example.com.',
      serial: 2024010101,
      refresh: 3600,
      retry: 900,
      expire: 1209600,
      minimum: 300,
    });
    roundTrip('SOA', 'ns1.example.net. host\\.master.example.net. 4294967295 0 0 0 0');
  });
  test('rejects', () => {
    rejects('SOA', 'ns1 hostmaster 1 2 3 4', 'needs exactly 7');
    rejects('SOA', 'ns1 hostmaster@example.com 1 2 3 4 5', 'rname', '"hostmaster.example.com."');
    rejects('SOA', 'ns1 john.doe@example.com. 1 2 3 4 5', 'rname', '"john\\.doe.example.com."');
    rejects('SOA', 'ns1 hostmaster 4294967296 2 3 4 5', 'SOA serial');
    rejects('SOA', 'ns1 hostmaster 1 1x 3 4 5', 'SOA refresh "1x"');
  });
});

describe('TLSA', () => {
  const sha256 = 'd2abde240d7cd3ee6b4b28c54df034b97983a1d16e8a410e4561cb106618e971';
  test('round trip with chunked hex', () => {
    assert.deepEqual(
      roundTrip('TLSA', `3 1 1 ${sha256.slice(0, 32).toUpperCase()} ${sha256.slice(32)}`, `3 1 1 ${sha256}`),
      {
        type: 'TLSA',
        usage: 3,
        selector: 1,
        matchingType: 1,
        data: sha256,
      },
    );
    roundTrip('TLSA', '3 0 0 30820122');
  });
  test('rejects', () => {
    rejects('TLSA', '3 1 1', 'needs at least 4');
    rejects('TLSA', '3 1 1 abc', 'even number');
    rejects('TLSA', '3 1 1 zz', 'hexadecimal');
    rejects('TLSA', '3 1 1 abcd', '32 octets');
    rejects('TLSA', `300 1 1 ${sha256}`, 'TLSA usage "300"');
  });
});

describe('SSHFP', () => {
  test('round trip', () => {
    roundTrip('SSHFP', '4 2 123456789abcdef67890123456789abcdef67890123456789abcdef123456789');
    roundTrip('SSHFP', '1 1 dd465c09cfa51fb45020cc83316fff21b9ec74ac');
  });
  test('rejects', () => {
    rejects('SSHFP', '1 1', 'needs at least 3');
    rejects('SSHFP', '1 1 abcd', 'SHA-1', '20 octets');
  });
});

describe('DS', () => {
  test('round trip', () => {
    roundTrip(
      'DS',
      '60485 5 1 2BB183AF5F22588179A53B0A 98631FAD1A292118',
      '60485 5 1 2bb183af5f22588179a53b0a98631fad1a292118',
    );
    roundTrip('DS', '12345 13 99 00');
  });
  test('rejects', () => {
    rejects('DS', '70000 5 1 2bb183af5f22588179a53b0a98631fad1a292118', 'DS key tag');
    rejects('DS', '60485 5 2 2bb183af5f22588179a53b0a98631fad1a292118', 'SHA-256', '32 octets');
    rejects('DS', '60485 5 1', 'needs at least 4');
  });
});

describe('NAPTR', () => {
  test('round trip', () => {
    assert.deepEqual(
      roundTrip(
        'NAPTR',
        '100 10 "S" "SIP+D2U" "" _sip._udp',
        '100 10 "S" "SIP+D2U" "" _sip._udp.example.com.',
      ),
      {
        type: 'NAPTR',
        order: 100,
        preference: 10,
        flags: 'S',
        services: 'SIP+D2U',
        regexp: '',
        replacement: '_sip._udp.example.com.',
      },
    );
    roundTrip('NAPTR', '100 10 "u" "E2U+sip" "!^.*$!sip:info@example.com!" .');
    roundTrip('NAPTR', '100 10 u E2U+sip "!^(\\\\+1.*)$!sip:\\\\1@example.com!" .');
  });
  test('rejects', () => {
    rejects('NAPTR', '100 10 "S" "SIP+D2U" ""', 'needs exactly 6');
    rejects('NAPTR', `100 10 "S" "${'s'.repeat(256)}" "" .`, 'NAPTR services', '255 octets');
  });
});

describe('SVCB / HTTPS', () => {
  test('round trips', () => {
    roundTrip('HTTPS', '0 foo.example.com.', '0 foo.example.com.');
    roundTrip('HTTPS', '1 .', '1 .');
    roundTrip('SVCB', '16 foo.example.com. port=53');
    roundTrip('SVCB', '1 foo.example.com. key667=hello', '1 foo.example.com. key667="hello"');
    roundTrip(
      'SVCB',
      '1 foo.example.com. key667="hello\\210qoo"',
      '1 foo.example.com. key667="hello\\210qoo"',
    );
    roundTrip(
      'SVCB',
      '1 foo.example.com. ipv6hint="2001:db8::1,2001:db8::53:1"',
      '1 foo.example.com. ipv6hint=2001:db8::1,2001:db8::53:1',
    );
    roundTrip(
      'SVCB',
      '16 foo.example.org. alpn=h2,h3-19 mandatory=ipv4hint,alpn ipv4hint=192.0.2.1',
      '16 foo.example.org. mandatory=alpn,ipv4hint alpn="h2,h3-19" ipv4hint=192.0.2.1',
    );
    roundTrip(
      'SVCB',
      '16 foo.example.org. alpn="f\\\\\\\\oo\\\\,bar,h2"',
      '16 foo.example.org. alpn="f\\\\\\\\oo\\\\,bar,h2"',
    );
    roundTrip(
      'HTTPS',
      '1 svc alpn=h3 no-default-alpn ech=AEX+DQBB ohttp dohpath="/dns-query{?dns}" key65000 key9=x',
      '1 svc.example.com. alpn="h3" no-default-alpn ech=AEX+DQBB dohpath="/dns-query{?dns}" ohttp key9="x" key65000',
    );
  });

  test('both alpn spellings from RFC 9460 Figure 10 agree', () => {
    const a = parseRdata('SVCB', '16 foo.example.org. alpn="f\\\\\\\\oo\\\\,bar,h2"', ORIGIN);
    const b = parseRdata('SVCB', '16 foo.example.org. alpn=f\\\\\\092oo\\092,bar,h2', ORIGIN);
    assert.deepEqual(a, b);
  });

  test('rejects (RFC 9460 Appendix D.3 failure cases and more)', () => {
    rejects('SVCB', '1 foo.example.com. key123=abc key123=def', 'more than once');
    rejects('SVCB', '1 foo.example.com. mandatory', 'mandatory requires a value');
    rejects('SVCB', '1 foo.example.com. alpn', 'alpn requires a value');
    rejects('SVCB', '1 foo.example.com. port', 'port requires a value');
    rejects('SVCB', '1 foo.example.com. ipv4hint', 'ipv4hint requires a value');
    rejects('SVCB', '1 foo.example.com. ipv6hint', 'ipv6hint requires a value');
    rejects('SVCB', '1 foo.example.com. no-default-alpn=abc', 'takes no value');
    rejects('SVCB', '1 foo.example.com. mandatory=key123', 'key123, which is not present');
    rejects('SVCB', '1 foo.example.com. mandatory=mandatory', 'must not list the key "mandatory"');
    rejects('SVCB', '1 foo.example.com. mandatory=key123,key123 key123=abc', 'twice');
    rejects('SVCB', '0 foo.example.com. alpn=h2', 'AliasMode');
    rejects('SVCB', '1 foo.example.com. port=65536', 'port "65536"');
    rejects('SVCB', '1 foo.example.com. port=abc', 'port "abc"');
    rejects('SVCB', '1 foo.example.com. ipv4hint=1.2.3', 'ipv4hint "1.2.3"');
    rejects('SVCB', '1 foo.example.com. ipv6hint=1.2.3.4', 'ipv6hint "1.2.3.4"');
    rejects('SVCB', '1 foo.example.com. alpn=h2,,h3', 'empty item');
    rejects('SVCB', '1 foo.example.com. ech=!!', 'base64');
    rejects('SVCB', '1 foo.example.com. color=blue', 'unknown SvcParamKey');
    rejects('SVCB', '1 foo.example.com. key0123=x', 'unknown SvcParamKey');
    rejects('SVCB', '1 foo.example.com. key65535', 'reserved');
    rejects('SVCB', '1 foo.example.com. no-default-alpn', 'requires an alpn');
    rejects('SVCB', '1 foo.example.com. dohpath=/q', 'dns');
    rejects('SVCB', '1', 'needs at least 2');
    rejects('HTTPS', '70000 .', 'HTTPS priority');
  });
});

describe('generic RFC 3597 form', () => {
  test('parses for known types', () => {
    assert.deepEqual(parseRdata('A', '\\# 4 C0000201', ORIGIN), { type: 'A', address: '192.0.2.1' });
    assert.deepEqual(parseRdata('TXT', '\\# 3 02 6869', ORIGIN), { type: 'TXT', strings: ['hi'] });
  });
  test('rejects mismatches', () => {
    rejects('A', '\\# 5 C0000201', 'length says 5');
    rejects('A', '\\# 3 C00002', 'does not decode as A');
  });
});

describe('helpers', () => {
  test('additionalTargets', () => {
    const p = (t: RecordTypeName, s: string): Rdata => parseRdata(t, s, ORIGIN);
    assert.deepEqual(additionalTargets(p('NS', 'ns1')), ['ns1.example.com.']);
    assert.deepEqual(additionalTargets(p('MX', '10 mx')), ['mx.example.com.']);
    assert.deepEqual(additionalTargets(p('MX', '0 .')), []);
    assert.deepEqual(additionalTargets(p('SRV', '1 1 1 t')), ['t.example.com.']);
    assert.deepEqual(additionalTargets(p('SRV', '0 0 0 .')), []);
    assert.deepEqual(additionalTargets(p('HTTPS', '1 . alpn=h2')), []);
    assert.deepEqual(additionalTargets(p('SVCB', '0 svc')), ['svc.example.com.']);
    assert.deepEqual(additionalTargets(p('CNAME', 'x')), []);
  });

  test('rdataEquals compares names case-insensitively and everything else exactly', () => {
    const p = (t: RecordTypeName, s: string): Rdata => parseRdata(t, s, ORIGIN);
    assert.ok(rdataEquals(p('MX', '10 MAIL.example.com.'), p('MX', '10 mail.EXAMPLE.com.')));
    assert.ok(!rdataEquals(p('MX', '10 mail'), p('MX', '20 mail')));
    assert.ok(!rdataEquals(p('TXT', '"A"'), p('TXT', '"a"')));
    assert.ok(!rdataEquals(p('CNAME', 'a'), p('ALIAS', 'a')));
    assert.ok(rdataEquals(p('HTTPS', '1 . alpn=h2 port=1'), p('HTTPS', '1 . port=1 alpn=h2')));
    assert.ok(!rdataEquals(p('HTTPS', '1 . alpn=h2'), p('HTTPS', '1 . alpn=h3')));
  });

  test('rdataIdentical keeps the case of names: identical exactly when printed alike', () => {
    const p = (t: RecordTypeName, s: string): Rdata => parseRdata(t, s, ORIGIN);
    const pairs: [Rdata, Rdata][] = [
      [p('MX', '10 MAIL.example.com.'), p('MX', '10 mail.example.com.')],
      [p('MX', '10 mail'), p('MX', '10 mail')],
      [p('TXT', '"a" "b"'), p('TXT', '"ab"')],
      [p('TXT', '"a" "b"'), p('TXT', '"a" "b"')],
      [p('SRV', '1 2 3 Svc.example.com.'), p('SRV', '1 2 3 svc.example.com.')],
      [p('HTTPS', '1 . alpn=h2 port=1'), p('HTTPS', '1 . port=1 alpn=h2')],
      [p('HTTPS', '1 . alpn=h2'), p('HTTPS', '1 . alpn=h3')],
      [p('CAA', '0 issue "ca.example"'), p('CAA', '0 issue "ca.example"')],
    ];
    // Of one type (as in an RRset): a CNAME and an ALIAS print alike but are not identical.
    assert.ok(!rdataIdentical(p('CNAME', 'a'), p('ALIAS', 'a')));
    for (const [a, b] of pairs)
      assert.equal(
        rdataIdentical(a, b),
        printRdata(a) === printRdata(b),
        `${printRdata(a)} / ${printRdata(b)}`,
      );
    assert.ok(rdataEquals(pairs[0]![0], pairs[0]![1]) && !rdataIdentical(pairs[0]![0], pairs[0]![1]));
  });
});

describe('decodeRdata strictness', () => {
  const cases: [string, number, number[]][] = [
    ['A too short', RRType.A, [1, 2, 3]],
    ['A too long', RRType.A, [1, 2, 3, 4, 5]],
    ['AAAA short', RRType.AAAA, [0, 0, 0, 0]],
    ['MX missing exchange', RRType.MX, [0, 10]],
    ['TXT empty', RRType.TXT, []],
    ['TXT string overruns', RRType.TXT, [5, 0x61]],
    ['CAA empty tag', RRType.CAA, [0, 0]],
    ['CAA bad tag', RRType.CAA, [0, 1, 0x2d]],
    ['SOA short', RRType.SOA, [0, 0, 0, 0, 0, 1]],
    ['SVCB keys out of order', RRType.SVCB, [0, 1, 0, 0, 3, 0, 2, 0, 53, 0, 1, 0, 3, 2, 0x68, 0x32]],
    ['SVCB bad port length', RRType.SVCB, [0, 1, 0, 0, 3, 0, 1, 53]],
    ['SVCB param overruns', RRType.SVCB, [0, 1, 0, 0, 3, 0, 9, 0, 53]],
    ['SRV trailing', RRType.SRV, [0, 0, 0, 0, 0, 0, 0, 9]],
  ];
  for (const [label, type, bytes] of cases) {
    test(label, () => {
      // follow the RDATA with extra octets so that overruns cannot hide at the buffer end
      const buf = new Uint8Array([...bytes, 0xff, 0xff, 0xff]);
      assert.throws(
        () => decodeRdata(type, new WireReader(buf), bytes.length),
        (e: unknown) => e instanceof WireError,
      );
    });
  }

  test('unknown types are kept opaque', () => {
    const r = new WireReader(new Uint8Array([9, 8, 7, 6]));
    assert.deepEqual(decodeRdata(99, r, 3), { type: 99, data: new Uint8Array([9, 8, 7]) });
    assert.equal(r.offset, 3);
    assert.equal(printUnknownRdata({ type: 99, data: new Uint8Array([0xab, 1]) }), '\\# 2 ab01');
  });

  test('wire RDATA the strict parser rejects prints in generic form and still round-trips', () => {
    const cases: [RecordTypeName, number[], string][] = [
      ['TLSA', [3, 1, 1, 0xab, 0xcd], '\\# 5 030101abcd'],
      ['DS', [0, 1, 8, 2], '\\# 4 00010802'],
      ['HTTPS', [0, 0, 0, 0, 3, 0, 2, 0, 53], '\\# 9 000000000300020035'],
      ['TXT', [0], '"" '.trim()],
    ];
    for (const [type, bytes, printed] of cases) {
      const r = decodeRdata(RRType[type], new WireReader(new Uint8Array(bytes)), bytes.length) as Rdata;
      assert.equal(printRdata(r), printed);
      assert.deepEqual(parseRdata(type, printRdata(r), ORIGIN), r);
    }
  });

  test('RDLENGTH beyond the buffer is TRUNCATED', () => {
    assert.throws(
      () => decodeRdata(RRType.A, new WireReader(new Uint8Array([1, 2, 3])), 4),
      (e: unknown) => e instanceof WireError && e.code === 'TRUNCATED',
    );
  });
});

test('an A or AAAA value that is an address alone parses, without fields or tokens, to what the codec gives', () => {
  const viaCodec = (type: 'A' | 'AAAA', text: string): Rdata | string => {
    try {
      return type === 'A'
        ? aCodec.parse(new RdataFields(type, aCodec.syntax, text), ORIGIN, 'A')
        : aaaaCodec.parse(new RdataFields(type, aaaaCodec.syntax, text), ORIGIN, 'AAAA');
    } catch (e) {
      return (e as Error).message;
    }
  };
  const check = (type: 'A' | 'AAAA', text: string) => {
    const expected = viaCodec(type, text);
    const plain = plainAddress(type, text);
    if (plain !== undefined) {
      // The same value, its fields in the same order, and the text itself kept when canonical.
      assert.equal(JSON.stringify(plain), JSON.stringify(expected), `${type} ${JSON.stringify(text)}`);
      if (typeof expected !== 'string' && 'address' in expected && expected.address === text)
        assert.equal(plain.address, text);
    }
    let parsed: Rdata | string;
    try {
      parsed = parseRdata(type, text, ORIGIN);
    } catch (e) {
      parsed = (e as Error).message;
    }
    assert.equal(JSON.stringify(parsed), JSON.stringify(expected), `${type} ${JSON.stringify(text)}`);
  };
  const texts = [
    '192.0.2.1',
    '0.0.0.0',
    '255.255.255.255',
    '256.1.1.1',
    '01.2.3.4',
    '1.2.3',
    '1.2.3.4.5',
    ' 192.0.2.1',
    '192.0.2.1 ',
    '"192.0.2.1"',
    '\\049.2.3.4',
    '(1.2.3.4)',
    '1.2.3.4;',
    '',
    '::',
    '::1',
    '2001:db8::1',
    '2001:DB8::1',
    '2001:0db8:0:0:0:0:0:1',
    '2001:db8:0:0:1:0:0:1',
    '::ffff:192.0.2.1',
    '1:2:3:4:5:6:7:8',
    '1::2::3',
    ' ::1',
    '::1 ',
  ];
  for (const text of texts) for (const type of ['A', 'AAAA'] as const) check(type, text);
  // Random text over the characters of addresses and of presentation syntax.
  const alphabet = '0123456789.:abcdefABCDEF \\"();';
  let seed = 7;
  const next = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed;
  };
  for (let i = 0; i < 3000; i++) {
    let text = '';
    const length = next() % 20;
    for (let k = 0; k < length; k++) text += alphabet[next() % (i % 3 === 0 ? alphabet.length : 12)];
    for (const type of ['A', 'AAAA'] as const) check(type, text);
  }
  for (let i = 0; i < 500; i++) {
    const octets = [next() % 256, next() % 256, next() % 256, next() % 256];
    check('A', octets.join('.'));
    const groups = Array.from({ length: 8 }, () => (next() % 4 === 0 ? 0 : next() % 65536).toString(16));
    check('AAAA', groups.join(':'));
  }
});

test('rdataKey: equal keys exactly when rdataEquals holds', () => {
  const samples: [RecordTypeName, string][] = [
    ['A', '192.0.2.1'],
    ['A', '192.0.2.2'],
    ['AAAA', '2001:db8::1'],
    ['AAAA', '2001:DB8:0::1'],
    ['MX', '10 mail.example.com.'],
    ['MX', '10 MAIL.Example.COM.'],
    ['MX', '20 mail.example.com.'],
    ['TXT', '"a"'],
    ['TXT', '"A"'],
    ['TXT', '"a" "b"'],
    ['TXT', '"ab"'],
    ['CNAME', 'Www.example.com.'],
    ['CNAME', 'www.example.com.'],
    ['SRV', '0 5 443 target.example.com.'],
    ['SRV', '0 5 443 TARGET.example.com.'],
    ['CAA', '0 issue "letsencrypt.org"'],
    ['CAA', '0 issue "LetsEncrypt.org"'],
  ];
  const parsed = samples.map(([type, text]) => parseRdata(type, text, 'example.com.'));
  for (const a of parsed)
    for (const b of parsed)
      assert.equal(
        rdataKey(a) === rdataKey(b),
        rdataEquals(a, b),
        `${JSON.stringify(a)} ${JSON.stringify(b)}`,
      );
});
