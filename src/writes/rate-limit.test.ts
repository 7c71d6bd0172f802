import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateLimiter } from './rate-limit.ts';

test('peek tells whether a token is there without taking it', () => {
  const r = new RateLimiter();
  assert.equal(r.peek('ns', 1, 2, 0), 0, 'a namespace never seen has its burst');
  assert.equal(r.take('ns', 1, 2, 0), 0);
  assert.equal(r.peek('ns', 1, 2, 0), 0);
  assert.equal(r.peek('ns', 1, 2, 0), 0, 'peeking takes nothing');
  assert.equal(r.take('ns', 1, 2, 0), 0);
  assert.equal(r.peek('ns', 1, 2, 0), 1, 'spent: one second until the next token');
  assert.equal(r.peek('ns', 1, 2, 1000), 0, 'refilled');
  assert.equal(r.peek('other', 1, 2, 0), 0, 'per namespace');
  assert.equal(r.peek('none', 0, 0, 0), Number.POSITIVE_INFINITY, 'a quota of no requests');
});
