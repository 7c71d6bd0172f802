import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet } from '../../test/support/resources.ts';
import type { DNSRecordSet } from '../api/index.ts';
import {
  cachedOrigins,
  MAX_CACHED_ORIGINS,
  parseRecordSetRecords,
  valuesValidAnywhere,
} from './record-parse.ts';

const mx = recordSet('dns', 'mx', { zoneRef: { name: 'z' }, name: '@', type: 'MX', records: ['10 mail'] });

describe('record parse cache', () => {
  test('a spec parsed against an origin is parsed once; another origin resolves its own names', () => {
    const first = parseRecordSetRecords(mx, 'example.com.');
    const again = parseRecordSetRecords(mx, 'example.com.');
    assert.ok(first.ok && again.ok);
    assert.equal(again.rdata, first.rdata, 'the same parsed records, not a second parse');
    const other = parseRecordSetRecords(mx, 'example.net.');
    assert.ok(other.ok);
    assert.notEqual(other.rdata, first.rdata);
    assert.deepEqual(
      [first.rdata[0], other.rdata[0]].map((r) => (r as { exchange: string }).exchange),
      ['mail.example.com.', 'mail.example.net.'],
    );
    // Both stay cached: back to the first origin, the first result.
    const back = parseRecordSetRecords(mx, 'example.com.');
    assert.ok(back.ok);
    assert.equal(back.rdata, first.rdata);
    // A new spec object is parsed again.
    const copy = parseRecordSetRecords({ ...mx, spec: { ...mx.spec } }, 'example.com.');
    assert.ok(copy.ok);
    assert.notEqual(copy.rdata, first.rdata);
    assert.deepEqual(copy.rdata, first.rdata);
  });

  test('a failure is reported alike from the cache', () => {
    const bad = recordSet('dns', 'bad', {
      zoneRef: { name: 'z' },
      name: 'x',
      type: 'A',
      records: ['192.0.2.1', '192.0.2.1'],
    });
    const first = parseRecordSetRecords(bad, 'example.com.');
    const again = parseRecordSetRecords(bad, 'example.com.');
    assert.equal(first.ok, false);
    assert.deepEqual(again, first);
    assert.ok(!again.ok && again.index === 1 && again.message.startsWith('spec.records[1]'));
  });

  test('the origins kept are bounded', () => {
    const a = recordSet('dns', 'a', {
      zoneRef: { name: 'z' },
      name: 'www',
      type: 'A',
      records: ['192.0.2.1'],
    });
    for (let i = 0; i < MAX_CACHED_ORIGINS; i++) parseRecordSetRecords(a, `z${i}.test.`);
    const newest = parseRecordSetRecords(a, `z${MAX_CACHED_ORIGINS - 1}.test.`);
    // One origin more drops the oldest only, not every origin's parses.
    parseRecordSetRecords(a, 'one-more.test.');
    assert.equal(cachedOrigins(), MAX_CACHED_ORIGINS);
    const again = parseRecordSetRecords(a, `z${MAX_CACHED_ORIGINS - 1}.test.`);
    assert.ok(newest.ok && again.ok);
    assert.equal(again.rdata, newest.rdata, 'the newest origin is still cached');
    const parsed = parseRecordSetRecords(a, 'z0.test.');
    assert.ok(parsed.ok && parsed.rdata.length === 1);
  });
});

describe("values valid anywhere (the parse threads' verdict)", () => {
  const cases: [string, string[], boolean][] = [
    ['A', ['192.0.2.1'], true],
    ['A', ['192.0.2.1', '192.0.2.2'], true],
    ['A', ['192.0.2.1', '192.0.2.1'], false],
    ['A', ['192.0.2.531'], false],
    ['A', ['2001:db8::1'], false],
    ['A', ['\\# 4 c0000201'], true],
    ['AAAA', ['2001:db8::1', '2001:DB8::1'], false],
    ['AAAA', ['2001:db8::1'], true],
    ['TXT', ['"v=spf1 -all"'], true],
    ['TXT', ['"unterminated'], false],
    ['CAA', ['0 issue "ca.example.net"'], true],
    ['SSHFP', ['1 1 0123456789abcdef0123456789abcdef01234567'], true],
    ['A', [], false],
    // Types whose values hold names: valid or not depends on the zone's origin, so no verdict.
    ['CNAME', ['www.example.com.'], false],
    ['MX', ['10 mail'], false],
    ['SRV', ['10 5 5060 sip'], false],
    ['NS', ['ns1.example.com.'], false],
  ];
  for (const [type, records, expected] of cases) {
    test(`${type} ${JSON.stringify(records)}: ${expected}`, () => {
      assert.equal(valuesValidAnywhere(type, records), expected);
      if (!expected) return;
      // True means the parse accepts them in every zone, with the same records whatever the origin.
      const spec = { zoneRef: { name: 'z' }, name: 'x', type, records } as DNSRecordSet['spec'];
      const results = [
        '.',
        'example.com.',
        `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}.`,
      ].map((origin) => parseRecordSetRecords(recordSet('dns', 'x', { ...spec }), origin));
      for (const r of results) assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual(results[1], results[0]);
      assert.deepEqual(results[2], results[0]);
    });
  }
  test('values that are not strings get no verdict', () => {
    assert.equal(valuesValidAnywhere('A', [1 as unknown as string]), false);
  });
});

describe('which values are the same record (RFC 2181 §5)', () => {
  const parse = (type: DNSRecordSet['spec']['type'], records: string[]) =>
    parseRecordSetRecords(
      recordSet('dns', `dup-${type}-${records.join('|')}`, {
        zoneRef: { name: 'z' },
        name: 'h',
        type,
        records,
      }),
      'example.com.',
    );

  test('text that differs only in case is two records: TXT, CAA values', () => {
    const txt = parse('TXT', ['"ABC"', '"abc"']);
    assert.ok(txt.ok, txt.ok ? '' : txt.message);
    assert.equal(txt.rdata.length, 2);
    const caa = parse('CAA', ['0 issue "CA.example"', '0 issue "ca.example"']);
    assert.ok(caa.ok, caa.ok ? '' : caa.message);
    assert.equal(caa.rdata.length, 2);
    assert.equal(valuesValidAnywhere('TXT', ['"ABC"', '"abc"']), true);
  });

  test('names that differ only in case, and hex in either case, are one record', () => {
    for (const [type, a, b] of [
      ['MX', '10 mail', '10 MAIL'],
      ['CNAME', 'Target.example.net.', 'target.EXAMPLE.net.'],
      ['SRV', '0 5 443 Host', '0 5 443 host'],
      ['HTTPS', '1 Svc.example.net.', '1 svc.example.net.'],
      [
        'SSHFP',
        '1 1 ABCDEF0123456789ABCDEF0123456789ABCDEF01',
        '1 1 abcdef0123456789abcdef0123456789abcdef01',
      ],
      ['TXT', '"same"', 'same'],
    ] as const) {
      const r = parse(type, [a, b]);
      assert.equal(r.ok, false, `${type} ${a} / ${b}`);
      assert.match(r.ok ? '' : r.message, /repeats spec\.records\[0\]/);
    }
  });
});
