import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Worker } from 'node:worker_threads';
import { MemoryReleaseOnce, releaseMemory, v8GcFunction } from './memory-release.ts';

type Call = { type?: string; execution?: string; flavor?: string } | undefined;

/** A collector that records how it was called and does nothing. */
function recordingGc(): { calls: Call[]; gc: (options?: Call) => void } {
  const calls: Call[] = [];
  return { calls, gc: (options) => void calls.push(options) };
}

describe('releaseMemory', () => {
  test('gets V8 collector without leaving gc on any global', async () => {
    const gc = v8GcFunction();
    assert.equal(typeof gc, 'function');
    assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined');
    // The flag is cleared again: a context made afterwards has no gc either.
    assert.equal(vm.runInNewContext('typeof gc'), 'undefined');
    assert.equal(v8GcFunction(), gc, 'taken once');
  });

  test('moves what lives off the pages that garbage left in the old generation', async () => {
    const gc = v8GcFunction()!;
    const oldSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!;
    // Objects promoted to the old generation, of which three quarters then die: their pages stay
    // committed, each a quarter used, after an ordinary collection.
    let all: { a: number; b: string }[] | undefined = [];
    for (let i = 0; i < 400_000; i++) all.push({ a: i, b: `x${i}` });
    gc();
    gc();
    const kept = all.filter((_, i) => i % 4 === 0);
    all = undefined;
    gc();
    const before = oldSpace();
    const MiB = 2 ** 20;
    assert.ok(
      before.space_size - before.space_used_size > 8 * MiB,
      'fragmented after an ordinary collection',
    );
    const result = await releaseMemory();
    assert.ok(result, 'runs on the main thread');
    assert.equal(result.compacted, true);
    const after = oldSpace();
    assert.ok(
      after.space_size - after.space_used_size < (before.space_size - before.space_used_size) / 2,
      `old space: ${before.space_used_size}/${before.space_size} before, ${after.space_used_size}/${after.space_size} after`,
    );
    assert.ok(result.heapUsedAfter <= result.heapCommittedAfter);
    assert.equal(result.heapCommittedAfter, v8.getHeapStatistics().total_heap_size);
    // Nothing live was lost.
    assert.equal(kept.length, 100_000);
    assert.equal(kept[99_999]?.b, 'x399996');
  });

  test('memory-reducing collections until one gives back too little, at most maxRounds', async () => {
    const { calls, gc } = recordingGc();
    const result = await releaseMemory({ gc, compactAll: false });
    // A collector that frees nothing: the first round gives back nothing, so it stops there.
    assert.equal(result?.rounds, 1);
    assert.deepEqual(calls, [{ type: 'major', execution: 'sync', flavor: 'last-resort' }]);

    const few = recordingGc();
    const bounded = await releaseMemory({
      gc: few.gc,
      compactAll: false,
      minGainBytes: Number.NEGATIVE_INFINITY,
      maxRounds: 3,
    });
    assert.equal(bounded?.rounds, 3);
    assert.equal(few.calls.length, 3);
  });

  test('by default one compacting collection and nothing else', async () => {
    const order: string[] = [];
    const result = await releaseMemory({
      gc: (options) => void order.push(`gc ${options?.flavor}`),
      between: async () => void order.push('between'),
    });
    assert.equal(result?.rounds, 0);
    assert.equal(result?.compacted, true);
    assert.deepEqual(order, ['gc regular']);
  });

  test('memory-reducing collections before and after the compacting one, other work between', async () => {
    const order: string[] = [];
    const result = await releaseMemory({
      gc: (options) => void order.push(`gc ${options?.flavor}`),
      between: async () => void order.push('between'),
      reduceFirst: true,
      reduceAfter: true,
    });
    // A collector that frees nothing: one memory-reducing collection after the compacting one.
    assert.equal(result?.rounds, 2);
    assert.deepEqual(order, ['gc last-resort', 'between', 'gc regular', 'between', 'gc last-resort']);
    const after: string[] = [];
    await releaseMemory({ gc: (options) => void after.push(`gc ${options?.flavor}`), reduceAfter: true });
    assert.deepEqual(after, ['gc regular', 'gc last-resort']);
  });

  test('never on another thread (DNS threads answer there)', async () => {
    const url = new URL('./memory-release.ts', import.meta.url).href;
    const worker = new Worker(
      `import(${JSON.stringify(url)}).then(async (m) => {
        let called = 0;
        const result = await m.releaseMemory({ gc: () => { called++; } });
        const once = await new m.MemoryReleaseOnce({ gc: () => { called++; } }).release();
        require('node:worker_threads').parentPort.postMessage({ result: result ?? null, once: once ?? null, called });
      });`,
      { eval: true },
    );
    const message = await new Promise<{ result: unknown; once: unknown; called: number }>(
      (resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      },
    );
    await worker.terminate();
    assert.deepEqual(message, { result: null, once: null, called: 0 });
  });
});

describe('MemoryReleaseOnce', () => {
  test('collects the first time only', async () => {
    const { calls, gc } = recordingGc();
    const once = new MemoryReleaseOnce({ gc, compactAll: false });
    assert.equal(once.started, false);
    const first = once.release();
    assert.equal(once.started, true);
    const second = once.release();
    assert.equal(second, first, 'a later call gets the first call’s result');
    assert.ok(await first);
    await once.release();
    assert.equal(calls.length, 1);
  });
});
