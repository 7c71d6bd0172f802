import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyedList } from './keyed-list.ts';

interface Item {
  key: string;
  n: number;
}

/** A small deterministic generator (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('KeyedList', () => {
  test('finds, replaces in place, deletes and iterates in the order a Map does', () => {
    const list = new KeyedList<Item>();
    list.set({ key: 'a', n: 1 });
    list.set({ key: 'b', n: 2 });
    list.set({ key: 'c', n: 3 });
    list.set({ key: 'a', n: 4 }); // in place, as Map.set of a present key
    assert.deepEqual(
      [...list.values()].map((v) => `${v.key}${v.n}`),
      ['a4', 'b2', 'c3'],
    );
    assert.equal(list.delete('b'), true);
    assert.equal(list.delete('b'), false);
    list.set({ key: 'b', n: 5 }); // back at the end, as after Map.delete
    assert.deepEqual(
      [...list].map(([k, v]) => `${k}${v.n}`),
      ['a4', 'c3', 'b5'],
    );
    assert.equal(list.get('c')?.n, 3);
    assert.equal(list.get('z'), undefined);
    assert.equal(list.has('a'), true);
    assert.equal(list.size, 3);
    list.check();
  });

  test('stays equal to a Map through 200,000 random sets and deletes over 5,000 keys (3 seeds), reusing its room', () => {
    for (const seed of [1, 2, 3]) {
      const r = prng(seed);
      const list = new KeyedList<Item>();
      const map = new Map<string, Item>();
      // Phases that grow the set, shrink it to a few keys (compactions, a smaller index) and grow it again.
      for (let step = 0; step < 200_000; step++) {
        const phase = Math.floor(step / 25_000) % 2;
        const key = `ns-${Math.floor(r() * 5000)}/name`;
        if (r() < (phase === 0 ? 0.7 : 0.2)) {
          const item = { key, n: step };
          list.set(item);
          map.set(key, item);
        } else assert.equal(list.delete(key), map.delete(key));
        if (step % 997 === 0) {
          list.check();
          assert.equal(list.size, map.size);
          assert.deepEqual([...list.values()], [...map.values()], `seed ${seed} step ${step}`);
          for (let i = 0; i < 50; i++) {
            const probe = `ns-${Math.floor(r() * 6000)}/name`;
            assert.equal(list.get(probe), map.get(probe));
          }
        }
      }
      list.check();
      assert.deepEqual([...list.entries()], [...map.entries()]);
      for (const key of [...map.keys()]) {
        list.delete(key);
        map.delete(key);
      }
      assert.equal(list.size, 0);
      assert.deepEqual([...list.values()], []);
      list.check();
    }
  });

  test('keys that are not ASCII, empty, or long are kept apart', () => {
    const list = new KeyedList<Item>();
    const keys = ['', 'ä/ö', 'dns/ü', 'x'.repeat(300), 'x'.repeat(301), 'dns/\u{1F600}'];
    keys.forEach((key, n) => {
      list.set({ key, n });
    });
    keys.forEach((key, n) => {
      assert.equal(list.get(key)?.n, n);
    });
    list.check();
  });
});
