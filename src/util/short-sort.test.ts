import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SHORT_SORT_MAX, shortSort } from './short-sort.ts';

describe('shortSort', () => {
  it('orders lists as Array.prototype.sort does, ties kept in their order (stable)', () => {
    let seed = 7;
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    // Items compared by a key with many ties; the index tells ties apart.
    const byKey = (a: { key: number }, b: { key: number }) => a.key - b.key;
    for (let n = 0; n <= SHORT_SORT_MAX + 4; n++) {
      for (let round = 0; round < 200; round++) {
        const list = Array.from({ length: n }, (_, index) => ({ key: Math.floor(random() * 4), index }));
        const expected = list.slice().sort(byKey);
        const got = list.slice();
        assert.equal(shortSort(got, byKey), got);
        assert.deepEqual(got, expected);
      }
    }
  });

  it('orders strings by code units as sort() does', () => {
    const list = ['b', 'a\u0000', 'B', 'a', '\u00e9', 'ab', 'a b'];
    const want = list.slice().sort();
    assert.deepEqual(
      shortSort(list, (a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      want,
    );
  });
});
