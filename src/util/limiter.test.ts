import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter } from './limiter.ts';

test('a limiter runs at most its limit at once, in the order tasks came, and passes on failures', async () => {
  const limiter = new Limiter(2);
  let inFlight = 0;
  let max = 0;
  const started: number[] = [];
  const tasks = Array.from({ length: 7 }, (_, i) =>
    limiter.run(async () => {
      started.push(i);
      inFlight++;
      max = Math.max(max, inFlight);
      await new Promise((r) => setTimeout(r, 2));
      inFlight--;
      if (i === 3) throw new Error('task 3 failed');
      return i;
    }),
  );
  const results = await Promise.allSettled(tasks);
  assert.equal(max, 2);
  assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6]);
  assert.equal(results[3]?.status, 'rejected');
  assert.deepEqual(
    results.filter((r) => r.status === 'fulfilled').map((r) => r.value),
    [0, 1, 2, 4, 5, 6],
  );
  assert.equal(limiter.active, 0);
});

test('an infinite limit runs every task at once; a limit below one is refused', async () => {
  const limiter = new Limiter(Number.POSITIVE_INFINITY);
  let inFlight = 0;
  let max = 0;
  await Promise.all(
    Array.from({ length: 50 }, () =>
      limiter.run(async () => {
        max = Math.max(max, ++inFlight);
        await new Promise((r) => setTimeout(r, 1));
        inFlight--;
      }),
    ),
  );
  assert.equal(max, 50);
  assert.throws(() => new Limiter(0), RangeError);
  assert.throws(() => new Limiter(Number.NaN), RangeError);
});
