/**
 * The scale benchmark's command (`bench/scale.ts`) at a reduced size, as a smoke test: 50,000 record
 * sets in 500 zones served by `zonekeeper serve --workers 2` under a fixed V8 heap limit. It fails when
 * the server cannot load them within that limit (it runs out of heap and exits), when a zone does not
 * answer, or when a one-record change does not reach every DNS thread. The limit is explicit so the
 * result does not depend on the machine's memory. At this size the primary holds 219 MiB of heap once
 * loaded (`bench/scale.ts --heap`), the same command fails at a 224 MiB limit and loads at 256 MiB;
 * 384 MiB leaves room for a slower, busier machine (more documents in flight while loading), so a
 * change that makes the control plane or the data plane half again as large per record set fails here.
 * Timings are reported, never asserted.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { ScaleResults } from '../bench/scale.ts';
import { ROOT, removeAll, tempDir } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const HEAP_LIMIT_MIB = 384;

test('serve loads 50,000 record sets in 500 zones within a 384 MiB heap and answers from every DNS thread', async (t) => {
  const dir = await tempDir('scale-smoke');
  const out = path.join(dir, 'scale.json');
  try {
    const args = [
      path.join(ROOT, 'bench/scale.ts'),
      ...['--records', '50000', '--zones', '500', '--big-zone-records', '10000', '--per-file', '1000'],
      ...['--edits', '1', '--workers', '2', '--max-old-space-size', String(HEAP_LIMIT_MIB)],
      // Guards for a shared machine, not assertions: give up after 15 minutes or 3 GiB resident.
      ...['--start-timeout', '900', '--edit-timeout', '300', '--max-rss-gib', '3', '--out', out],
    ];
    let failure: string | undefined;
    await run(process.execPath, args, { cwd: ROOT, maxBuffer: 16 * 2 ** 20 }).catch((e: Error) => {
      failure = e.message;
    });
    const results = JSON.parse(await readFile(out, 'utf8')) as ScaleResults;
    t.diagnostic(
      `start ${JSON.stringify(results.start)}, memory ${JSON.stringify(results.memory?.perProcess)}, ` +
        `edit ${JSON.stringify(results.edits[0])}`,
    );
    assert.equal(results.error, undefined, `${results.error}\n${results.logTail ?? ''}`);
    assert.equal(failure, undefined);
    assert.equal(results.generated.recordSets, 50_000);
    assert.equal(results.options.maxOldSpaceSize, String(HEAP_LIMIT_MIB));
    // Every probe (the biggest zone, the first, a middle and the last small zone) answered correctly.
    assert.notEqual(results.start?.allProbesCorrectMs, null);
    // One process: its two DNS threads share the zone images (ADR 0020 step 4).
    assert.equal(results.memory?.processes, 1);
    // The edit was seen on every DNS thread.
    assert.notEqual(results.edits[0]?.allMs, null);
  } finally {
    await removeAll(dir);
  }
});
