import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Log } from './logger.ts';
import { COMPACTION_ENV, giveMemoryBackAfterFirstLoad } from './memory-after-load.ts';

function recordingLog(): { lines: string[]; log: Log } {
  const lines: string[] = [];
  return {
    lines,
    log: (level, message, fields) => void lines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`),
  };
}

describe('giveMemoryBackAfterFirstLoad', () => {
  test('compacts once `after` resolved and logs the figures', async () => {
    const { lines, log } = recordingLog();
    let resolveAfter!: () => void;
    const after = new Promise<void>((resolve) => {
      resolveAfter = resolve;
    });
    const done = giveMemoryBackAfterFirstLoad(after, log, { env: {} });
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(lines, [], 'nothing before `after` resolves');
    resolveAfter();
    await done;
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /^info gave memory back after the first load \{"compacted":true,/);
  });

  test("not where the compaction's copy could pass the memory still available (a container limit)", async () => {
    const { lines, log } = recordingLog();
    const MiB = 2 ** 20;
    await giveMemoryBackAfterFirstLoad(Promise.resolve(), log, {
      env: {},
      room: () => ({ needed: 900 * MiB, available: 1000 * MiB }),
    });
    assert.equal(lines.length, 1);
    assert.match(
      lines[0]!,
      /^warn not giving memory back after the first load: no room .*"neededMiB":900,"availableMiB":1000/,
    );
  });

  test('not where the old generation is larger than the caller allows (a pause too long for it)', async () => {
    const { lines, log } = recordingLog();
    const MiB = 2 ** 20;
    const room = () => ({ needed: 300 * MiB, available: 10_000 * MiB });
    await giveMemoryBackAfterFirstLoad(Promise.resolve(), log, { env: {}, room, maxLiveBytes: 256 * MiB });
    assert.equal(lines.length, 1);
    assert.match(
      lines[0]!,
      /^info not giving memory back after the first load: the pause would be too long here .*"liveMiB":300,"maxLiveMiB":256/,
    );
  });

  test(`${COMPACTION_ENV}=off turns it off`, async () => {
    const { lines, log } = recordingLog();
    await giveMemoryBackAfterFirstLoad(Promise.resolve(), log, { env: { [COMPACTION_ENV]: 'off' } });
    assert.deepEqual(lines, []);
  });
});
