import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RememberedRequest } from '../../writes/record-writer.ts';
import { trimRemembered } from './kubernetes-write-store.ts';

const remembered = (credential: string, id: string): RememberedRequest => ({
  credential,
  id,
  digest: 'd'.repeat(64),
  at: '2025-12-30T10:00:00.000Z',
  namespace: 'team-a',
  outcomes: '',
});

describe('the write journal’s remembered request ids', () => {
  test('one credential’s flood of request ids does not push out another’s', () => {
    const quiet = [remembered('key-b', 'b1'), remembered('key-b', 'b2')];
    const flood = Array.from({ length: 2000 }, (_, i) => remembered('key-a', `a${i}`));
    const max = 64 * 1024;
    const kept = trimRemembered([...quiet, ...flood], max);
    assert.ok(JSON.stringify(kept).length <= max);
    assert.deepEqual(
      kept.filter((r) => r.credential === 'key-b').map((r) => r.id),
      ['b1', 'b2'],
    );
    // The flooder keeps its newest, up to its share.
    const own = kept.filter((r) => r.credential === 'key-a');
    assert.ok(own.length > 100);
    assert.equal(own.at(-1)?.id, 'a1999');
  });

  test('under the bound nothing is dropped', () => {
    const all = [remembered('key-a', 'a1'), remembered('key-b', 'b1')];
    assert.deepEqual(trimRemembered(all, 64 * 1024), all);
  });
});
