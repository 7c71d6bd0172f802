import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { readConfirmations, writeConfirmation } from './confirmations.ts';

test('a confirmation takes the whole 32-digit change hash; a shorter one is refused with what to copy', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-confirm-'));
  try {
    const hash = '0123456789abcdef0123456789abcdef';
    await writeConfirmation(dir, 'dns/example-com', hash);
    assert.equal((await readConfirmations(dir)).get('dns/example-com'), hash);
    // 64 bits would let a writer prepare two changes with one hash (about 2^32 tries): not taken.
    await assert.rejects(
      writeConfirmation(dir, 'dns/example-com', '0123456789abcdef'),
      /is not a change hash; copy the 32 hex digits/,
    );
    assert.equal((await readConfirmations(dir)).get('dns/example-com'), hash);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
