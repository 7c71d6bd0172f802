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
  test('a queue after another takes a key only once the other has none waiting, and still drains', async () => {
    const order: string[] = [];
    const first = new WorkQueue(
      async (key) => {
        order.push(key);
        await new Promise((r) => setTimeout(r, 2));
        // A key added while the first queue runs goes before the second queue's keys too.
        if (key === 'z1') first.add('z9');
        return undefined;
      },
      { concurrency: 2 },
    );
    const second = new WorkQueue(
      async (key) => {
        order.push(key);
        return undefined;
      },
      { concurrency: 2, after: first },
    );
    for (const key of ['r1', 'r2', 'r3']) second.add(key);
    for (const key of ['z1', 'z2', 'z3', 'z4']) first.add(key);
    second.start();
    first.start();
    await Promise.all([first.idle(), second.idle()]);
    const lastZoneTaken = Math.max(...['z1', 'z2', 'z3', 'z4', 'z9'].map((k) => order.indexOf(k)));
    const firstRecord = Math.min(...['r1', 'r2', 'r3'].map((k) => order.indexOf(k)));
    // Taken after the last zone key was taken (the last zones may still be running meanwhile).
    assert.ok(firstRecord > lastZoneTaken, order.join());
    assert.equal(order.length, 8, order.join());
    assert.deepEqual(order.filter((k) => k.startsWith('r')).sort(), ['r1', 'r2', 'r3']);
    // Later keys of the second queue run while the first is empty.
    second.add('r4');
    await second.idle();
    assert.equal(order.at(-1), 'r4');
    first.shutdown();
    second.shutdown();
  });

  test('reconciles that settle without I/O let the event loop turn while keys are waiting', async () => {
    // Each reconcile resolves in microtasks only (as writes to the memory store do) and takes at
    // least a millisecond: a hundred of them are five slices.
    const keys = Array.from({ length: 100 }, (_, i) => `k${i}`);
    const done: string[] = [];
    const q = new WorkQueue(
      async (key) => {
        const until = performance.now() + 1;
        while (performance.now() < until) {}
        done.push(key);
        return undefined;
      },
      { concurrency: 2 },
    );
    for (const key of keys) q.add(key);
    let doneAtTurn: number | undefined;
    setImmediate(() => {
      doneAtTurn = done.length;
    });
    q.start();
    await q.idle();
    assert.deepEqual(done, keys);
    assert.ok(doneAtTurn !== undefined && doneAtTurn < keys.length, `turned after ${doneAtTurn} of 100`);
    q.shutdown();
  });

  test('a queue after another is not held by keys the other will never take (shut down)', async () => {
    const first = new WorkQueue(async () => undefined);
    const seen: string[] = [];
    const second = new WorkQueue(
      async (key) => {
        seen.push(key);
        return undefined;
      },
      { after: first },
    );
    first.add('z');
    first.shutdown();
    second.add('r');
    second.start();
    await second.idle();
    assert.deepEqual(seen, ['r']);
    second.shutdown();
  });

  test('a queue waiting behind another goes on when that one shuts down', { timeout: 10_000 }, async () => {
    const first = new WorkQueue(async () => undefined);
    const seen: string[] = [];
    const second = new WorkQueue(
      async (key) => {
        seen.push(key);
        return undefined;
      },
      { after: first },
    );
    first.add('z'); // never taken: the first queue is not started
    second.add('r');
    second.start();
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(seen, [], 'waits while the first has a key waiting');
    first.shutdown();
    await second.idle();
    assert.deepEqual(seen, ['r']);
    second.shutdown();
  });

  test('a slice whose reset was lost to mocked timers does not stop later queues', async (t) => {
    const busy = (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until) {}
    };
    // Earlier tests' slices reset first, so that this one's reset is the mocked one.
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.enable({ apis: ['setImmediate'] });
    const first = new WorkQueue(async () => {
      busy(1);
      return undefined;
    });
    first.add('a');
    first.start();
    await new Promise((resolve) => process.nextTick(resolve));
    await Promise.resolve();
    first.shutdown();
    t.mock.timers.reset(); // drops the slice's reset
    await new Promise((resolve) => setTimeout(resolve, 30)); // past the slice
    let ran = 0;
    const later = new WorkQueue(async () => {
      ran++;
      return undefined;
    });
    for (let i = 0; i < 5; i++) later.add(`k${i}`);
    later.start();
    const outcome = await Promise.race([
      later.idle().then(() => 'idle'),
      new Promise((resolve) => setTimeout(() => resolve('stuck'), 2000)),
    ]);
    later.shutdown();
    assert.equal(outcome, 'idle', `ran ${ran} of 5`);
  });

  test('keys added new go in order and stay deduplicated against later adds, before and while they run', async () => {
    const seen: string[] = [];
    const q = new WorkQueue(async (key) => {
      seen.push(key);
      // While the queue runs: a key already waiting is not queued again, one that ran is.
      if (key === 'k1') {
        q.add('k3');
        q.add('k0');
        q.addAfter('k4', 0);
      }
      return undefined;
    });
    q.addNew(['k0', 'k1', 'k2', 'k3', 'k4']);
    q.add('k2'); // waiting: nothing more
    q.add('x'); // new: after them
    q.start();
    await q.idle();
    await new Promise((r) => setTimeout(r, 20));
    await q.idle();
    assert.deepEqual(seen, ['k0', 'k1', 'k2', 'k3', 'k4', 'x', 'k0']);
    q.shutdown();
  });

  test('keys added new to a queue that is not empty are added one by one', async () => {
    const seen: string[] = [];
    const q = new WorkQueue(async (key) => {
      seen.push(key);
      return undefined;
    });
    q.add('b');
    q.addNew(['a', 'b', 'c']);
    q.add('c');
    q.start();
    await q.idle();
    assert.deepEqual(seen, ['b', 'a', 'c']);
    q.shutdown();
  });

  test('keys added new wake waiting workers and are deduplicated after the queue moves its head', async () => {
    const seen: string[] = [];
    const keys = Array.from({ length: 3000 }, (_, i) => `k${i}`);
    let again = false;
    const q = new WorkQueue(
      async (key) => {
        seen.push(key);
        // Past the point where the queue drops the keys it took (its head moves to 0), every later
        // key is still known as waiting.
        if (key === 'k2000' && !again) {
          again = true;
          for (const k of keys) q.add(k);
        }
        return undefined;
      },
      { concurrency: 3 },
    );
    q.start();
    await q.idle();
    q.addNew(keys);
    await q.idle();
    // Each key once, then again those that had run or were running when they were added (k2000 and
    // the keys before it, and any another worker was running then), each once more.
    assert.deepEqual(seen.slice(0, 3000), keys);
    const rerun = seen.slice(3000);
    assert.equal(new Set(rerun).size, rerun.length);
    assert.ok(rerun.length >= 2001 && rerun.length <= 2003, `${rerun.length} ran again`);
    assert.ok(keys.slice(0, 2001).every((k) => rerun.includes(k)));
    q.shutdown();
  });
});
