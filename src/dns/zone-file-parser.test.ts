import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { printRdata } from './rdata.ts';
import {
  formatZoneFileProblem,
  type IncludeReader,
  parseZoneFile,
  type ZoneFileParseOptions,
  type ZoneFileProblem,
} from './zone-file-parser.ts';

const ORIGIN = 'example.com.';

function parse(text: string, options: ZoneFileParseOptions = {}) {
  return parseZoneFile(text, { origin: ORIGIN, file: 'db.example', ...options });
}

/** `owner ttl type rdata` of every record. */
function lines(text: string, options: ZoneFileParseOptions = {}): string[] {
  const r = parse(text, options);
  return r.records.map((x) => `${x.owner} ${x.ttl} ${x.type} ${printRdata(x.rdata)}`);
}

function only(problems: ZoneFileProblem[], code: string): ZoneFileProblem {
  const found = problems.filter((p) => p.code === code);
  assert.equal(found.length, 1, `one ${code} expected in ${JSON.stringify(problems, null, 1)}`);
  return found[0]!;
}

function includes(files: Record<string, string>): IncludeReader {
  return (path) => {
    const text = files[path];
    if (text === undefined) throw new Error(`ENOENT: no such file ${path}`);
    return text;
  };
}

describe('parseZoneFile: records', () => {
  test('owner, TTL, class and type; relative names; @', () => {
    const r = parse('$TTL 3600\n@ IN NS ns1\nwww 60 IN A 192.0.2.1\nmail.example.com. IN 120 MX 10 @\n');
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.records.map(
        (x) => `${x.owner} ${x.ttl} ${x.class} ${x.type} ${printRdata(x.rdata)} ${x.file}:${x.line}`,
      ),
      [
        'example.com. 3600 IN NS ns1.example.com. db.example:2',
        'www.example.com. 60 IN A 192.0.2.1 db.example:3',
        'mail.example.com. 120 IN MX 10 example.com. db.example:4',
      ],
    );
    assert.equal(r.origin, ORIGIN);
  });

  test('a blank owner repeats the previous owner; TTL and class are optional and in either order', () => {
    assert.deepEqual(
      lines('$TTL 300\nwww A 192.0.2.1\n  IN AAAA 2001:db8::1\n\t60 TXT "x"\n IN 30 A 192.0.2.2\n'),
      [
        'www.example.com. 300 A 192.0.2.1',
        'www.example.com. 300 AAAA 2001:db8::1',
        'www.example.com. 60 TXT "x"',
        'www.example.com. 30 A 192.0.2.2',
      ],
    );
  });

  test('a blank owner with no previous owner is an error at its line', () => {
    const r = parse('$TTL 300\n  A 192.0.2.1\n');
    const p = only(r.problems, 'NO_OWNER');
    assert.equal(p.line, 2);
    assert.equal(p.column, 3);
    assert.equal(r.records.length, 0);
  });

  test('escapes in owner names; wildcard owners', () => {
    assert.deepEqual(lines('$TTL 1\na\\.b A 192.0.2.1\n\\065bc A 192.0.2.2\n*.wild A 192.0.2.3\n'), [
      'a\\.b.example.com. 1 A 192.0.2.1',
      'Abc.example.com. 1 A 192.0.2.2',
      '*.wild.example.com. 1 A 192.0.2.3',
    ]);
  });

  test('an owner that is not a valid name is reported and its blank-owner lines are skipped quietly', () => {
    const r = parse('$TTL 1\na..b A 192.0.2.1\n  AAAA 2001:db8::1\nc A 192.0.2.3\n');
    assert.equal(only(r.problems, 'BAD_OWNER').line, 2);
    assert.equal(r.problems.length, 1);
    assert.deepEqual(
      r.records.map((x) => x.owner),
      ['c.example.com.'],
    );
  });

  test('CRLF line endings and a byte-order mark', () => {
    assert.deepEqual(lines('\ufeff$TTL 5\r\nwww A 192.0.2.1\r\n  TXT "a" ; c\r\n'), [
      'www.example.com. 5 A 192.0.2.1',
      'www.example.com. 5 TXT "a"',
    ]);
  });
});

describe('parseZoneFile: parentheses, comments, quotes and escapes', () => {
  test('parentheses join lines; comments inside them are dropped', () => {
    const r = parse(
      [
        '$TTL 1h',
        '@ IN SOA ns1 hostmaster ( ; the SOA',
        '        2024010101 ; serial',
        '        2h         ; refresh',
        '        1h 1w',
        '        5m )',
        'www A 192.0.2.1 ; comment ( not a parenthesis',
      ].join('\n'),
    );
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.records.map((x) => `${x.line} ${x.type} ${printRdata(x.rdata)}`),
      ['2 SOA ns1.example.com. hostmaster.example.com. 2024010101 7200 3600 604800 300', '7 A 192.0.2.1'],
    );
  });

  test('hex split across lines in parentheses (DS), and a multi-line TXT', () => {
    assert.deepEqual(
      lines(
        '$TTL 1\nsub DS 60485 13 2 (\n d4b7d520e7bb5f0f67674a0cceb1e3e0\n 614b93c4f9e99b8383f6a1e4469da50a )\nt TXT ( "a"\n "b" )\n',
      ),
      [
        'sub.example.com. 1 DS 60485 13 2 d4b7d520e7bb5f0f67674a0cceb1e3e0614b93c4f9e99b8383f6a1e4469da50a',
        't.example.com. 1 TXT "a" "b"',
      ],
    );
  });

  test('; and parentheses inside quotes are text; escaped quotes and semicolons', () => {
    assert.deepEqual(lines('$TTL 1\nt TXT "a ; (b)" "say \\"hi\\"" c\\;d\n'), [
      't.example.com. 1 TXT "a ; (b)" "say \\"hi\\"" "c;d"',
    ]);
  });

  test('unquoted TXT words are separate character-strings (RFC 1035 §5.1)', () => {
    const r = parse('$TTL 1\nt TXT v=spf1 mx -all\n');
    assert.deepEqual(r.records[0]?.rdata, { type: 'TXT', strings: ['v=spf1', 'mx', '-all'] });
  });

  test('decimal escapes in TXT', () => {
    const r = parse('$TTL 1\nt TXT "\\065\\255" \\000\n');
    assert.deepEqual(r.records[0]?.rdata, { type: 'TXT', strings: ['A\xff', '\x00'] });
  });

  test('SVCB key="value" with spaces and a semicolon inside the quotes', () => {
    const r = parse('$TTL 1\n_dns SVCB 1 www alpn="h2,h3" dohpath="/q{?dns}" ; c\n');
    assert.deepEqual(r.problems, []);
    assert.equal(printRdata(r.records[0]!.rdata), '1 www.example.com. alpn="h2,h3" dohpath="/q{?dns}"');
  });

  test('nested parentheses are an error at the inner one', () => {
    const r = parse('$TTL 1\n@ SOA ns1 h ( 1 ( 2 ) 3 4 5 )\nwww A 192.0.2.1\n');
    const p = only(r.problems, 'NESTED_PARENTHESES');
    assert.deepEqual([p.line, p.column], [2, 17]);
  });

  test('a ")" without "(" is an error', () => {
    const r = parse('$TTL 1\nwww A 192.0.2.1 )\nok A 192.0.2.2\n');
    assert.equal(only(r.problems, 'UNBALANCED_PARENTHESIS').line, 2);
    assert.deepEqual(
      r.records.map((x) => x.owner),
      ['ok.example.com.'],
    );
  });

  test('an unclosed "(" is reported at the line that opened it', () => {
    const r = parse('$TTL 1\nwww A 192.0.2.1\n@ SOA ns1 h ( 1 2\n 3 4 5\nmail A 192.0.2.3\n');
    const p = only(r.problems, 'UNCLOSED_PARENTHESIS');
    assert.deepEqual([p.line, p.column, p.severity], [3, 13, 'error']);
    assert.deepEqual(
      r.records.map((x) => x.owner),
      ['www.example.com.'],
    );
  });

  test('an unterminated quote is reported where the string starts, and the next line still parses', () => {
    const r = parse('$TTL 1\nt TXT "abc\nu A 192.0.2.1\n');
    const p = only(r.problems, 'UNTERMINATED_QUOTE');
    assert.deepEqual([p.line, p.column], [2, 7]);
    assert.deepEqual(
      r.records.map((x) => x.owner),
      ['u.example.com.'],
    );
  });

  test('a quote in the middle of a word, and text glued to a closing quote', () => {
    const r = parse('$TTL 1\nt TXT ab"c"\nu TXT "a"b\n');
    const bad = r.problems.filter((p) => p.code === 'BAD_QUOTE');
    assert.deepEqual(
      bad.map((p) => [p.line, p.column]),
      [
        [2, 9],
        [3, 10],
      ],
    );
    assert.equal(r.records.length, 0);
  });

  test('a backslash at the end of a line is an error', () => {
    const r = parse('$TTL 1\nt TXT abc\\\nu A 192.0.2.1\n');
    assert.equal(only(r.problems, 'BAD_ESCAPE').line, 2);
    assert.equal(r.records.length, 1);
  });
});

describe('parseZoneFile: directives', () => {
  test('$ORIGIN: absolute, and relative to the current origin', () => {
    assert.deepEqual(lines('$TTL 1\n$ORIGIN sub\nwww A 192.0.2.1\n$ORIGIN other.test.\n@ A 192.0.2.2\n'), [
      'www.sub.example.com. 1 A 192.0.2.1',
      'other.test. 1 A 192.0.2.2',
    ]);
  });

  test('without an initial origin the first $ORIGIN is the origin; relative names before it are errors', () => {
    const r = parseZoneFile('$TTL 1\nwww A 192.0.2.1\n$ORIGIN example.org.\nwww A 192.0.2.2\n');
    assert.equal(r.origin, 'example.org.');
    assert.equal(only(r.problems, 'BAD_OWNER').line, 2);
    assert.deepEqual(
      r.records.map((x) => x.owner),
      ['www.example.org.'],
    );
    const rdata = parseZoneFile('$TTL 1\nwww.example.org. CNAME other\n');
    assert.match(only(rdata.problems, 'RELATIVE_NAME_WITHOUT_ORIGIN').message, /add \$ORIGIN/);
  });

  test('directive names are case-insensitive; a bad $ORIGIN or $TTL is reported', () => {
    const r = parse('$ttl 1h\n$origin a..b.\n$TTL forever\nwww A 192.0.2.1\n');
    assert.equal(only(r.problems, 'BAD_ORIGIN').line, 2);
    assert.equal(only(r.problems, 'BAD_TTL').line, 3);
    assert.deepEqual(lines('$ttl 1h\nwww A 192.0.2.1\n'), ['www.example.com. 3600 A 192.0.2.1']);
  });

  test('directives take a fixed number of arguments; a comment is fine', () => {
    const r = parse('$TTL 1 2\n$ORIGIN\n$TTL 5 ; five seconds\nwww A 192.0.2.1\n');
    assert.equal(r.problems.filter((p) => p.code === 'BAD_DIRECTIVE').length, 2);
    assert.equal(r.records[0]?.ttl, 5);
  });

  test('$GENERATE is reported as unsupported and skipped; unknown directives are errors', () => {
    const r = parse('$TTL 1\n$GENERATE 1-10 host$ A 192.0.2.$\n$FOO bar\nwww A 192.0.2.1\n');
    const gen = only(r.problems, 'UNSUPPORTED_DIRECTIVE');
    assert.deepEqual([gen.line, gen.severity, gen.skipped], [2, 'warning', true]);
    assert.match(gen.message, /\$GENERATE is not supported/);
    const unknown = only(r.problems, 'UNKNOWN_DIRECTIVE');
    assert.deepEqual([unknown.line, unknown.severity], [3, 'error']);
    assert.equal(r.records.length, 1);
  });

  test('$INCLUDE with an origin: the included file has that origin, the includer keeps its own', () => {
    const r = parse(
      '$TTL 1\nwww A 192.0.2.1\n$INCLUDE sub.inc sub\n  AAAA 2001:db8::1\nafter A 192.0.2.9\n',
      {
        include: includes({ 'sub.inc': 'host A 192.0.2.2\n$ORIGIN elsewhere.test.\nx A 192.0.2.3\n' }),
      },
    );
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.records.map((x) => `${x.file}:${x.line} ${x.owner} ${x.type}`),
      [
        'db.example:2 www.example.com. A',
        'sub.inc:1 host.sub.example.com. A',
        'sub.inc:3 x.elsewhere.test. A',
        // The owner reverts to the one before the $INCLUDE.
        'db.example:4 www.example.com. AAAA',
        'db.example:5 after.example.com. A',
      ],
    );
  });

  test('$INCLUDE: nested files, $TTL carries on, a quoted file name', () => {
    const r = parse('$INCLUDE "a file"\nwww A 192.0.2.1\n', {
      include: includes({ 'a file': '$TTL 7\n$INCLUDE b\n', b: 'b A 192.0.2.2\n' }),
    });
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.records.map((x) => `${x.file} ${x.owner} ${x.ttl}`),
      ['b b.example.com. 7', 'db.example www.example.com. 7'],
    );
  });

  test('$INCLUDE cycles are detected and reported with the chain', () => {
    const r = parse('$TTL 1\n$INCLUDE a\nwww A 192.0.2.1\n', {
      include: includes({ a: 'a A 192.0.2.2\n$INCLUDE b\n', b: '$INCLUDE a\n' }),
    });
    const p = only(r.problems, 'INCLUDE_CYCLE');
    assert.deepEqual([p.file, p.line, p.column], ['b', 1, 10]);
    assert.match(p.message, /db\.example → a → b → a/);
    assert.equal(r.records.length, 2);
    const self = parse('$INCLUDE db.example\n', { include: includes({ 'db.example': '' }) });
    only(self.problems, 'INCLUDE_CYCLE');
  });

  test('the $INCLUDE depth is limited', () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 20; i++) files[`f${i}`] = `$INCLUDE f${i + 1}\n`;
    const r = parse('$INCLUDE f0\n', { include: includes(files), maxIncludeDepth: 5 });
    const p = only(r.problems, 'INCLUDE_TOO_DEEP');
    assert.equal(p.file, 'f4');
  });

  test('$INCLUDE errors: unreadable file, no reader', () => {
    const missing = parse('$INCLUDE nope\n', { include: includes({}) });
    assert.match(only(missing.problems, 'INCLUDE_UNREADABLE').message, /ENOENT/);
    const noReader = parse('$INCLUDE nope\n');
    only(noReader.problems, 'INCLUDE_UNAVAILABLE');
  });

  test('the include reader may resolve names; cycles compare resolved names', () => {
    const seen: [string, string][] = [];
    const reader: IncludeReader = (path, from) => {
      seen.push([path, from]);
      return { file: `/zones/${path.replace(/^\.\//, '')}`, text: path === 'x' ? '$INCLUDE ./x\n' : '' };
    };
    const r = parse('$INCLUDE x\n', { include: reader, file: '/zones/main' });
    assert.deepEqual(seen, [
      ['x', '/zones/main'],
      ['./x', '/zones/x'],
    ]);
    only(r.problems, 'INCLUDE_CYCLE');
  });
});

describe('parseZoneFile: TTL defaults', () => {
  test('$TTL applies to records without a TTL (RFC 2308 §4), even after an explicit TTL', () => {
    assert.deepEqual(lines('$TTL 100\na 5 A 192.0.2.1\nb A 192.0.2.2\n'), [
      'a.example.com. 5 A 192.0.2.1',
      'b.example.com. 100 A 192.0.2.2',
    ]);
  });

  test('without $TTL the last explicit TTL applies, with one warning (RFC 1035 §5.1)', () => {
    const r = parse('a 5 A 192.0.2.1\nb A 192.0.2.2\nc A 192.0.2.3\n');
    assert.deepEqual(
      r.records.map((x) => x.ttl),
      [5, 5, 5],
    );
    const p = only(r.problems, 'TTL_FROM_PREVIOUS');
    assert.deepEqual([p.line, p.severity], [2, 'warning']);
  });

  test('without $TTL or any TTL, the SOA MINIMUM applies, with a warning', () => {
    const r = parse('@ SOA ns1 h 1 2 3 4 600\nwww A 192.0.2.1\n');
    assert.deepEqual(
      r.records.map((x) => x.ttl),
      [600, 600],
    );
    assert.equal(only(r.problems, 'TTL_FROM_SOA_MINIMUM').line, 1);
  });

  test('a record with no TTL known at all is an error', () => {
    const r = parse('www A 192.0.2.1\n');
    const p = only(r.problems, 'NO_TTL');
    assert.equal(p.severity, 'error');
    assert.match(p.message, /\$TTL/);
  });

  test('bad TTLs are reported', () => {
    const r = parse('www 1x A 192.0.2.1\nw2 99999999999 A 192.0.2.1\n');
    assert.equal(r.problems.filter((p) => p.code === 'BAD_TTL').length, 2);
  });
});

describe('parseZoneFile: types and classes', () => {
  test('RFC 3597: TYPEnnn, CLASSnnn and \\# generic RDATA for known types', () => {
    assert.deepEqual(
      lines(
        '$TTL 1\na CLASS1 TYPE1 \\# 4 c0000201\nb IN A \\# 4 C0000202\nc TYPE1 192.0.2.3\nt TXT \\# 4 03616263\n',
      ),
      [
        'a.example.com. 1 A 192.0.2.1',
        'b.example.com. 1 A 192.0.2.2',
        'c.example.com. 1 A 192.0.2.3',
        't.example.com. 1 TXT "abc"',
      ],
    );
  });

  test('ALIAS as the mnemonic and as TYPE65401 (the printer’s generic form)', () => {
    const r = parse(
      '$TTL 1\n@ ALIAS www\nx TYPE65401 \\# 17 03777777076578616d706c6503636f6d00 ; ALIAS www.example.com.\n',
    );
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.records.map((x) => x.rdata),
      [
        { type: 'ALIAS', target: 'www.example.com.' },
        { type: 'ALIAS', target: 'www.example.com.' },
      ],
    );
  });

  test('types Zonekeeper does not model are skipped with a precise warning', () => {
    const r = parse(
      [
        '$TTL 1',
        'www HINFO "PC" "Linux"',
        '@ DNSKEY 257 3 13 AAAA',
        '@ RRSIG SOA 13 2 300 20300101000000 20200101000000 1 example.com. AAAA',
        'x TYPE999 \\# 0',
        'y SPF "v=spf1 -all"',
        'www A 192.0.2.1',
      ].join('\n'),
    );
    assert.equal(r.records.length, 1);
    const skipped = r.problems.filter((p) => p.code === 'UNSUPPORTED_TYPE');
    assert.deepEqual(
      skipped.map((p) => [p.line, p.column, p.severity, p.skipped]),
      [
        [2, 5, 'warning', true],
        [3, 3, 'warning', true],
        [4, 3, 'warning', true],
        [5, 3, 'warning', true],
        [6, 3, 'warning', true],
      ],
    );
    assert.equal(
      formatZoneFileProblem(skipped[1]!),
      'db.example:3:3: warning: type DNSKEY is not supported by Zonekeeper (DNSSEC is not managed yet); the record is skipped [UNSUPPORTED_TYPE]',
    );
    assert.match(skipped[0]!.message, /^type HINFO is not supported by Zonekeeper; the record is skipped$/);
    assert.match(skipped[3]!.message, /type TYPE999/);
    assert.match(skipped[4]!.message, /publish the policy as TXT/);
  });

  test('meta types and unknown words in the type position are errors', () => {
    const r = parse('$TTL 1\na AXFR x\nb FOO 1\nc ANY 1\nd 300\n');
    assert.deepEqual(
      r.problems.map((p) => [p.line, p.code]),
      [
        [2, 'META_TYPE'],
        [3, 'UNKNOWN_TYPE'],
        [4, 'META_TYPE'],
        [5, 'NO_TYPE'],
      ],
    );
  });

  test('a class other than IN is an error and does not become the default class', () => {
    const r = parse('$TTL 1\na CH A 192.0.2.1\nb HS TXT "x"\nc CLASS4 A 192.0.2.3\nd A 192.0.2.4\n');
    assert.deepEqual(
      r.problems.map((p) => [p.line, p.code]),
      [
        [2, 'UNSUPPORTED_CLASS'],
        [3, 'UNSUPPORTED_CLASS'],
        [4, 'UNSUPPORTED_CLASS'],
      ],
    );
    assert.deepEqual(
      r.records.map((x) => x.owner),
      ['d.example.com.'],
    );
  });

  test('bad RDATA is an error at the first RDATA field, with parseRdata’s explanation', () => {
    const r = parse('$TTL 1\nwww  A  192.0.2.300\nmx MX ten mail\n');
    assert.deepEqual(
      r.problems.map((p) => [p.line, p.column, p.code]),
      [
        [2, 9, 'BAD_RDATA'],
        [3, 7, 'BAD_RDATA'],
      ],
    );
    assert.match(r.problems[1]!.message, /MX preference "ten" is not valid/);
  });

  test('every supported type parses from typical BIND syntax', () => {
    const text = [
      '$ORIGIN example.com.',
      '$TTL 300',
      '@ IN SOA ns1.example.com. hostmaster.example.com. ( 2024010101 3600 600 1209600 300 )',
      '  IN NS ns1',
      '  IN MX 10 mail',
      '  IN CAA 0 issue "letsencrypt.org"',
      '  IN HTTPS 1 . alpn=h2,h3',
      'www IN CNAME @',
      '_sip._tcp IN SRV 10 60 5060 sip',
      'sip IN NAPTR 100 10 "S" "SIP+D2T" "" _sip._tcp',
      '_443._tcp IN TLSA 3 1 1 0c72ac70b745ac19998811b131d662c9ac69dbdbe7cb23e5b514b56664c5d3d6',
      'host IN SSHFP 4 2 123456789abcdef67890123456789abcdef67890123456789abcdef123456789',
      'sub IN DS 60485 13 2 d4b7d520e7bb5f0f67674a0cceb1e3e0614b93c4f9e99b8383f6a1e4469da50a',
      '_dns IN SVCB 1 www port=8443',
      '10 IN PTR www',
      'v6 IN AAAA 2001:DB8::1',
    ].join('\n');
    const r = parseZoneFile(text, { file: 'x' });
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.records.map((x) => x.type),
      [
        'SOA',
        'NS',
        'MX',
        'CAA',
        'HTTPS',
        'CNAME',
        'SRV',
        'NAPTR',
        'TLSA',
        'SSHFP',
        'DS',
        'SVCB',
        'PTR',
        'AAAA',
      ],
    );
    assert.equal(r.origin, 'example.com.');
  });
});
