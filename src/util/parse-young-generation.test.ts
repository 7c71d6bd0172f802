import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import {
  DEFAULT_PARSE_SEMI_SPACE_MB,
  PARSE_SEMI_SPACE_ENV,
  parseSemiSpace,
  withParseSemiSpace,
} from './parse-young-generation.ts';

describe('parseSemiSpace', () => {
  it('is the default without a setting, another size from the environment, none for off or 0', () => {
    assert.deepEqual(parseSemiSpace({ env: {}, execArgv: [] }), { mb: DEFAULT_PARSE_SEMI_SPACE_MB });
    assert.deepEqual(parseSemiSpace({ env: { [PARSE_SEMI_SPACE_ENV]: '' }, execArgv: [] }), {
      mb: DEFAULT_PARSE_SEMI_SPACE_MB,
    });
    assert.deepEqual(parseSemiSpace({ env: { [PARSE_SEMI_SPACE_ENV]: ' 16 ' }, execArgv: [] }), { mb: 16 });
    for (const off of ['off', 'OFF', '0']) {
      assert.deepEqual(parseSemiSpace({ env: { [PARSE_SEMI_SPACE_ENV]: off }, execArgv: [] }), {
        mb: undefined,
        skipped: 'off',
      });
    }
    for (const invalid of ['-5', '1.5', '64MiB', '0x10']) {
      assert.deepEqual(parseSemiSpace({ env: { [PARSE_SEMI_SPACE_ENV]: invalid }, execArgv: [] }), {
        mb: undefined,
        skipped: 'invalid',
      });
    }
  });

  it("leaves the size to Node's command line or NODE_OPTIONS when either names it", () => {
    const nodeFlag = { mb: undefined, skipped: 'node-flag' };
    const env = { [PARSE_SEMI_SPACE_ENV]: '32' };
    assert.deepEqual(parseSemiSpace({ env, execArgv: ['--min-semi-space-size=8'] }), nodeFlag);
    assert.deepEqual(
      parseSemiSpace({ env, execArgv: ['--max-old-space-size=4096', '--min_semi_space_size=8'] }),
      nodeFlag,
    );
    assert.deepEqual(
      parseSemiSpace({
        env: { ...env, NODE_OPTIONS: '--enable-source-maps --min-semi-space-size=8' },
        execArgv: [],
      }),
      nodeFlag,
    );
    // Other semi-space flags do not count.
    assert.deepEqual(parseSemiSpace({ env, execArgv: ['--max-semi-space-size=8'] }), { mb: 32 });
  });
});

/** A stand-in for a Worker: the events the module waits for. */
class FakeWorker extends EventEmitter {}

describe('withParseSemiSpace', () => {
  it("sets the size before the thread is made and V8's own once it is online", () => {
    const flags: string[] = [];
    const options = { env: {}, execArgv: [], setFlags: (f: string) => flags.push(f) };
    let setWhenMade: string[] = [];
    const worker = withParseSemiSpace(() => {
      setWhenMade = [...flags];
      return new FakeWorker();
    }, options);
    assert.deepEqual(setWhenMade, [`--min-semi-space-size=${DEFAULT_PARSE_SEMI_SPACE_MB}`]);
    assert.deepEqual(flags, setWhenMade);
    worker.emit('online');
    worker.emit('exit');
    assert.deepEqual(flags, [
      `--min-semi-space-size=${DEFAULT_PARSE_SEMI_SPACE_MB}`,
      '--min-semi-space-size=0',
    ]);
  });

  it('keeps the size while any thread made with it is not online yet', () => {
    const flags: string[] = [];
    const options = {
      env: { [PARSE_SEMI_SPACE_ENV]: '32' },
      execArgv: [],
      setFlags: (f: string) => flags.push(f),
    };
    const first = withParseSemiSpace(() => new FakeWorker(), options);
    const second = withParseSemiSpace(() => new FakeWorker(), options);
    first.emit('online');
    assert.deepEqual(flags, ['--min-semi-space-size=32', '--min-semi-space-size=32']);
    // A thread that fails before it is online counts as started.
    second.emit('error', new Error('no'));
    second.emit('exit');
    assert.deepEqual(flags, [
      '--min-semi-space-size=32',
      '--min-semi-space-size=32',
      '--min-semi-space-size=0',
    ]);
    // A thread made afterwards sets it again.
    const third = withParseSemiSpace(() => new FakeWorker(), options);
    third.emit('exit');
    assert.deepEqual(flags.slice(3), ['--min-semi-space-size=32', '--min-semi-space-size=0']);
  });

  it("restores V8's own when making the thread throws, and sets nothing when off or named by Node", () => {
    const flags: string[] = [];
    const setFlags = (f: string) => flags.push(f);
    assert.throws(
      () =>
        withParseSemiSpace(
          () => {
            throw new Error('no thread');
          },
          { env: {}, execArgv: [], setFlags },
        ),
      /no thread/,
    );
    assert.deepEqual(flags, [
      `--min-semi-space-size=${DEFAULT_PARSE_SEMI_SPACE_MB}`,
      '--min-semi-space-size=0',
    ]);
    flags.length = 0;
    withParseSemiSpace(() => new FakeWorker(), {
      env: { [PARSE_SEMI_SPACE_ENV]: 'off' },
      execArgv: [],
      setFlags,
    });
    withParseSemiSpace(() => new FakeWorker(), { env: {}, execArgv: ['--min-semi-space-size=2'], setFlags });
    assert.deepEqual(flags, []);
  });

  it("starts a real thread's young generation at the size, and the next thread made without it at V8's own", async () => {
    // The new space a thread's isolate has before it allocates much (two semi-spaces at most).
    const code = `
      const { parentPort } = require('node:worker_threads');
      const v8 = require('node:v8');
      const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
      parentPort.postMessage(space.space_size / 2 ** 20);`;
    const newSpaceMiB = (worker: Worker) =>
      new Promise<number>((resolve, reject) => {
        worker.once('message', (mb: number) => {
          void worker.terminate();
          resolve(mb);
        });
        worker.once('error', reject);
      });
    const withIt = await newSpaceMiB(
      withParseSemiSpace(() => new Worker(code, { eval: true }), { env: {}, execArgv: [] }),
    );
    const after = await newSpaceMiB(new Worker(code, { eval: true }));
    const off = await newSpaceMiB(
      withParseSemiSpace(() => new Worker(code, { eval: true }), {
        env: { [PARSE_SEMI_SPACE_ENV]: 'off' },
        execArgv: [],
      }),
    );
    assert.ok(withIt >= DEFAULT_PARSE_SEMI_SPACE_MB, `new space with the size: ${withIt} MiB`);
    assert.ok(after < 16, `new space of a thread made after: ${after} MiB`);
    assert.ok(off < 16, `new space with it off: ${off} MiB`);
    // A thread's own cap bounds it (the DNS threads' 8 MiB).
    const capped = await newSpaceMiB(
      withParseSemiSpace(
        () => new Worker(code, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 8 } }),
        {
          env: {},
          execArgv: [],
        },
      ),
    );
    assert.ok(capped <= 8, `new space under a cap of 8 MiB: ${capped} MiB`);
  });
});
