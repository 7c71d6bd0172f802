import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import {
  DEFAULT_LOAD_HEAP_GROWTH_PERCENT,
  growHeapDuringLoad,
  LOAD_HEAP_GROWTH_ENV,
} from './load-heap-growth.ts';
import { DEFAULT_PARSE_SEMI_SPACE_MB, PARSE_SEMI_SPACE_ENV } from './parse-young-generation.ts';

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

  it("leaves the flag to Node's command line when it names it", () => {
    for (const r of [
      recorder({}, { execArgv: ['--heap-growing-percent=50'] }),
      recorder({}, { execArgv: ['--max-old-space-size=4096', '--heap_growing_percent=50'] }),
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

  it("is what `serve` runs its first load with, from the program's entry point, and can be overridden", async () => {
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
    // The `serving` log line says what was set; the process is stopped once it is written.
    const servingWith = async (
      env: NodeJS.ProcessEnv,
      nodeFlags: string[] = [],
    ): Promise<{ growth?: string; semiSpace?: string } | undefined> => {
      const state = mkdtempSync(path.join(tmpdir(), 'zk-load-growth-'));
      try {
        const child = spawn(
          process.execPath,
          [
            ...nodeFlags,
            path.join(root, 'bin/zonekeeper.js'),
            'serve',
            '--manifests',
            path.join(root, 'examples'),
            '--dns',
            '127.0.0.1:0',
            '--http',
            '127.0.0.1:0',
            '--state-dir',
            state,
            '--workers',
            '1',
          ],
          {
            env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1', ...env },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let out = '';
        let found: { growth?: string; semiSpace?: string } | undefined;
        const take = (chunk: Buffer) => {
          out += chunk.toString();
          const line = found === undefined ? out.split('\n').find((l) => l.includes(' serving ')) : undefined;
          if (line) {
            found = {
              growth: /loadHeapGrowth="?([^"\s]+)/.exec(line)?.[1],
              semiSpace: /parseSemiSpaceMb="?([^"\s]+)/.exec(line)?.[1],
            };
            child.kill('SIGTERM');
          }
        };
        child.stdout.on('data', take);
        child.stderr.on('data', take);
        // Its state folder is removed once it has stopped.
        await new Promise((resolve) => child.on('exit', resolve));
        return found;
      } finally {
        rmSync(state, { recursive: true, force: true });
      }
    };
    const [byDefaultLine, offLine, otherLine, nodeFlagLine] = await Promise.all([
      servingWith({ [LOAD_HEAP_GROWTH_ENV]: '', [PARSE_SEMI_SPACE_ENV]: '' }),
      servingWith({ [LOAD_HEAP_GROWTH_ENV]: 'off', [PARSE_SEMI_SPACE_ENV]: 'off' }),
      servingWith({ [LOAD_HEAP_GROWTH_ENV]: '700', [PARSE_SEMI_SPACE_ENV]: '16' }),
      servingWith({ [LOAD_HEAP_GROWTH_ENV]: '700', [PARSE_SEMI_SPACE_ENV]: '16' }, [
        '--heap-growing-percent=50',
        '--min-semi-space-size=2',
      ]),
    ]);
    // The parse threads' young generation at their start (parse-young-generation.ts), in the same line.
    assert.equal(byDefaultLine?.semiSpace, String(DEFAULT_PARSE_SEMI_SPACE_MB));
    assert.equal(offLine?.semiSpace, 'off');
    assert.equal(otherLine?.semiSpace, '16');
    assert.equal(nodeFlagLine?.semiSpace, 'node-flag');
    const [byDefault, off, other, nodeFlag] = [byDefaultLine, offLine, otherLine, nodeFlagLine].map(
      (l) => l?.growth,
    );
    // On a machine with less memory free than V8's heap limit the setting is left out ('memory');
    // with a clear margin either way the answer is certain.
    const limit = v8.getHeapStatistics().heap_size_limit;
    const free = process.availableMemory();
    const allowed = (set: string) =>
      free >= 2 * limit ? [set] : free < limit / 2 ? ['memory'] : [set, 'memory'];
    assert.ok(allowed(String(DEFAULT_LOAD_HEAP_GROWTH_PERCENT)).includes(byDefault ?? ''), byDefault);
    assert.equal(off, 'off');
    assert.ok(allowed('700').includes(other ?? ''), other);
    assert.equal(nodeFlag, 'node-flag');
  });
});
