import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pushAll } from './push-all.ts';

test('pushAll appends in order and returns the target', () => {
  const target = [1];
  assert.equal(pushAll(target, [2, 3]), target);
  assert.deepEqual(target, [1, 2, 3]);
  assert.deepEqual(pushAll([0], new Set([4, 5])), [0, 4, 5]);
});

test('pushAll takes a list too long to spread as arguments', () => {
  const items = Array.from({ length: 2_000_000 }, (_, i) => i);
  // The spread form throws here: the guarded failure, shown once so that the test means something.
  assert.throws(() => [].push(...(items as never[])), RangeError);
  const target: number[] = [];
  pushAll(target, items);
  assert.equal(target.length, 2_000_000);
  assert.equal(target[1_999_999], 1_999_999);
});
