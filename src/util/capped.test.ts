import assert from 'node:assert/strict';
import { test } from 'node:test';
import { capped } from './capped.ts';

test('capped keeps a short list as it is and cuts a long one, counting what it left out', () => {
  const short = [1, 2];
  assert.equal(
    capped(short, 2, () => 0),
    short,
  );
  assert.deepEqual(
    capped([1, 2, 3, 4, 5], 2, (left) => -left),
    [1, 2, -3],
  );
});
