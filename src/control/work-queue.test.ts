import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WorkQueue } from './work-queue.ts';

describe('WorkQueue', () => {
  test('deduplicates keys that are waiting', async () => {
    const seen: string[] = [];
    const q = new WorkQueue(async (key) => {
      seen.push(key);
      return undefined;
    });
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    q.start();
    await q.idle();
    assert.deepEqual(seen, ['a', 'b']);
    q.shutdown();
  });

  test('a key added while it is processed runs once more afterwards, never concurrently', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const q = new WorkQueue(
      async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        runs++;
        if (runs === 1) {
          q.add('k');
          q.add('k');
        }
        await new Promise((r) => setTimeout(r, 5));
        running--;
        return undefined;
      },
      { concurrency: 4 },
    );
    q.add('k');
    q.start();
    await new Promise((r) => setTimeout(r, 50));
    await q.idle();
    assert.equal(runs, 2);
    assert.equal(maxRunning, 1);
    q.shutdown();
  });

  test('failures back off exponentially per key, success forgets', async () => {
    const times: number[] = [];
    let fails = 3;
    const q = new WorkQueue(
      async () => {
        times.push(performance.now());
        if (fails-- > 0) throw new Error('backend down');
        return undefined;
      },
      { baseDelayMs: 10, maxDelayMs: 1000 },
    );
    const errors: unknown[] = [];
    q.onResult = (_key, error) => error && errors.push(error);
    q.add('k');
    q.start();
    while (times.length < 4) await new Promise((r) => setTimeout(r, 5));
    await q.idle();
    assert.equal(errors.length, 3);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    // 10, 20, 40 ms nominal: each gap at least the nominal backoff (timers never fire early).
    assert.ok(gaps[0]! >= 9 && gaps[1]! >= 19 && gaps[2]! >= 39, `gaps ${gaps.join(', ')}`);
    assert.equal(q.backoffFor('k'), 10, 'success reset the failure count');
    q.shutdown();
  });

  test('requeueAfter schedules another run; shutdown cancels it', async () => {
    let runs = 0;
    const q = new WorkQueue(async () => {
      runs++;
      return runs < 3 ? { requeueAfterMs: 5 } : undefined;
    });
    q.add('k');
    q.start();
    while (runs < 3) await new Promise((r) => setTimeout(r, 5));
    q.shutdown();
    assert.equal(runs, 3);
  });
});
