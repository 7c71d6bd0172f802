import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_LOAD_HEAP_GROWTH_PERCENT,
  growHeapDuringLoad,
  LOAD_HEAP_GROWTH_ENV,
} from './load-heap-growth.ts';

const GIB = 2 ** 30;

function recorder(
  env: NodeJS.ProcessEnv = {},
  extra: { execArgv?: string[]; heapLimit?: number; available?: number } = {},
) {
  const flags: string[] = [];
  const growth = growHeapDuringLoad({
    env,
    execArgv: extra.execArgv ?? [],
    setFlags: (f) => flags.push(f),
    heapLimit: () => extra.heapLimit ?? 4 * GIB,
    availableMemory: () => extra.available ?? 16 * GIB,
  });
  return { growth, flags };
}

describe('growHeapDuringLoad', () => {
  it('sets the growing percent for the load and V8 its own factor again once, at restore', () => {
    const { growth, flags } = recorder();
    assert.equal(growth.percent, DEFAULT_LOAD_HEAP_GROWTH_PERCENT);
    assert.deepEqual(flags, [`--heap-growing-percent=${DEFAULT_LOAD_HEAP_GROWTH_PERCENT}`]);
    growth.restore();
    growth.restore();
    assert.deepEqual(flags, [
      `--heap-growing-percent=${DEFAULT_LOAD_HEAP_GROWTH_PERCENT}`,
      '--heap-growing-percent=0',
    ]);
  });

  it('takes another percent from the environment, and off or 0 there leaves V8 its own', () => {
    assert.deepEqual(recorder({ [LOAD_HEAP_GROWTH_ENV]: '700' }).flags, ['--heap-growing-percent=700']);
    for (const off of ['off', 'OFF', '0']) {
      const { growth, flags } = recorder({ [LOAD_HEAP_GROWTH_ENV]: off });
      growth.restore();
      assert.deepEqual(flags, []);
      assert.equal(growth.skipped, 'off');
    }
    const invalid = recorder({ [LOAD_HEAP_GROWTH_ENV]: '-5' });
    assert.deepEqual(invalid.flags, []);
    assert.equal(invalid.growth.skipped, 'invalid');
  });

  it("leaves the flag to Node's command line or NODE_OPTIONS when either names it", () => {
    for (const r of [
      recorder({}, { execArgv: ['--heap-growing-percent=50'] }),
      recorder({ NODE_OPTIONS: '--max-old-space-size=4096 --heap-growing-percent=50' }),
    ]) {
      r.growth.restore();
      assert.deepEqual(r.flags, []);
      assert.equal(r.growth.skipped, 'node-flag');
    }
  });

  it("is not set where the process may take less memory than V8's heap limit", () => {
    const { growth, flags } = recorder({}, { heapLimit: 4 * GIB, available: 2 * GIB });
    growth.restore();
    assert.deepEqual(flags, []);
    assert.equal(growth.skipped, 'memory');
  });
});
