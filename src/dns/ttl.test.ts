import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DnsError } from './errors.ts';
import { MAX_TTL, parseTtl } from './ttl.ts';

test('plain and unit TTLs', () => {
  assert.equal(parseTtl('300'), 300);
  assert.equal(parseTtl('0'), 0);
  assert.equal(parseTtl('1h30m'), 5400);
  assert.equal(parseTtl('1W'), 604800);
  assert.equal(parseTtl('2d'), 172800);
  assert.equal(parseTtl('1m30'), 90);
  assert.equal(parseTtl('1h1M1s'), 3661);
  assert.equal(parseTtl(String(MAX_TTL)), MAX_TTL);
});

test('junk and out-of-range TTLs fail with BAD_TTL', () => {
  for (const bad of ['', 'h', '1x', '-1', '1.5', ' 300', String(MAX_TTL + 1), '99999999999', '3551w']) {
    assert.throws(
      () => parseTtl(bad),
      (e: unknown) => e instanceof DnsError && e.code === 'BAD_TTL' && e.message.includes('1h30m'),
      bad,
    );
  }
});
