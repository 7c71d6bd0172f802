import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet } from '../../test/support/resources.ts';
import {
  cachedOrigins,
  keepParsed,
  MAX_CACHED_ORIGINS,
  parseRecordSetRecords,
  parseUncached,
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

  test('values parsed elsewhere are kept for a type without names, as literals of the spec type', () => {
    const a = recordSet('dns', 'a', { zoneRef: { name: 'z' }, name: 'x', type: 'A', records: ['192.0.2.1'] });
    // As a structured-clone copy from a parse thread arrives.
    const parsed = parseUncached(a, '.');
    assert.ok(parsed.ok);
    const copy = structuredClone(parsed.rdata);
    assert.ok(keepParsed(a, 'example.com.', copy));
    const got = parseRecordSetRecords(a, 'example.com.');
    assert.ok(got.ok);
    assert.deepEqual(got.rdata, [{ type: 'A', address: '192.0.2.1' }]);
    assert.notEqual(got.rdata, copy, 'made again, not the copy');
    assert.equal(got.rdata[0]!.type, a.spec.type);
    const txt = recordSet('dns', 't', {
      zoneRef: { name: 'z' },
      name: 'x',
      type: 'TXT',
      records: ['"a" "b"'],
    });
    const t = parseUncached(txt, '.');
    assert.ok(t.ok && keepParsed(txt, 'example.com.', structuredClone(t.rdata)));
    assert.deepEqual(parseRecordSetRecords(txt, 'example.com.'), {
      ok: true,
      rdata: [{ type: 'TXT', strings: ['a', 'b'] }],
    });
    // A type whose values hold names depends on the zone: refused, parsed here against the origin.
    const m = parseUncached(mx, '.');
    assert.ok(m.ok);
    assert.equal(keepParsed(mx, 'example.org.', m.rdata), false);
    const own = parseRecordSetRecords(mx, 'example.org.');
    assert.ok(own.ok);
    assert.equal((own.rdata[0] as { exchange: string }).exchange, 'mail.example.org.');
    // Values that do not match the record set (another count or type) are refused too.
    const two = recordSet('dns', 'two', {
      zoneRef: { name: 'z' },
      name: 'x',
      type: 'A',
      records: ['192.0.2.1', '192.0.2.2'],
    });
    assert.equal(keepParsed(two, 'example.com.', copy), false);
    assert.equal(
      keepParsed(two, 'example.com.', [
        { type: 'AAAA', address: '::1' },
        { type: 'AAAA', address: '::2' },
      ]),
      false,
    );
  });

  test('one record or several: the same results and messages', () => {
    const one = (text: string) =>
      parseUncached(
        recordSet('dns', 'x', { zoneRef: { name: 'z' }, name: 'x', type: 'A', records: [text] }),
        '.',
      );
    const bad = one('192.0.2.300');
    assert.ok(!bad.ok);
    assert.equal(bad.index, 0);
    assert.match(bad.message, /^spec\.records\[0\] "192\.0\.2\.300": /);
    const second = parseUncached(
      recordSet('dns', 'x', {
        zoneRef: { name: 'z' },
        name: 'x',
        type: 'A',
        records: ['192.0.2.300', '192.0.2.1'],
      }),
      '.',
    );
    assert.ok(!second.ok);
    assert.equal(second.message, bad.message, 'the first record fails alike alone or with others');
    assert.deepEqual(one('192.0.2.1'), { ok: true, rdata: [{ type: 'A', address: '192.0.2.1' }] });
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
    for (let i = 0; i <= MAX_CACHED_ORIGINS; i++) parseRecordSetRecords(a, `z${i}.test.`);
    assert.ok(cachedOrigins() <= MAX_CACHED_ORIGINS);
    assert.ok(cachedOrigins() >= 1);
    const parsed = parseRecordSetRecords(a, 'z0.test.');
    assert.ok(parsed.ok && parsed.rdata.length === 1);
  });
});
