import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet } from '../../test/support/resources.ts';
import { cachedOrigins, MAX_CACHED_ORIGINS, parseRecordSetRecords } from './record-parse.ts';

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
    for (let i = 0; i <= MAX_CACHED_ORIGINS; i++) parseRecordSetRecords(a, `z${i}.test.`);
    assert.ok(cachedOrigins() <= MAX_CACHED_ORIGINS);
    assert.ok(cachedOrigins() >= 1);
    const parsed = parseRecordSetRecords(a, 'z0.test.');
    assert.ok(parsed.ok && parsed.rdata.length === 1);
  });
});
