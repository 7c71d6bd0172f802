import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonEqual } from './conditions.ts';

/** `jsonEqual` as it was written first (keys filtered, `every`): the reference the new one must match. */
function reference(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => reference(v, b[i]));
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const ka = Object.keys(x).filter((k) => x[k] !== undefined);
  const kb = Object.keys(y).filter((k) => y[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => reference(x[k], y[k]));
}

/** A small deterministic generator (no Math.random: failures reproduce). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function value(r: () => number, depth: number): unknown {
  const pick = Math.floor(r() * (depth > 2 ? 6 : 9));
  switch (pick) {
    case 0:
      return undefined;
    case 1:
      return null;
    case 2:
      return Math.floor(r() * 3);
    case 3:
      return ['a', 'b', ''][Math.floor(r() * 3)];
    case 4:
      return r() < 0.5;
    case 5:
      return Number.NaN;
    case 6:
    case 7: {
      const o: Record<string, unknown> = {};
      const n = Math.floor(r() * 4);
      for (let i = 0; i < n; i++)
        o[['k', 'l', 'm', 'constructor'][Math.floor(r() * 4)]!] = value(r, depth + 1);
      return o;
    }
    default: {
      const n = Math.floor(r() * 3);
      const list: unknown[] = [];
      for (let i = 0; i < n; i++) list.push(value(r, depth + 1));
      // Now and then a hole.
      if (r() < 0.2) list.length += 1;
      return list;
    }
  }
}

/** A copy with some changes (or none), so that equal pairs are common. */
function variant(v: unknown, r: () => number): unknown {
  if (r() < 0.1) return value(r, 2);
  if (Array.isArray(v)) return v.map((x) => variant(x, r));
  if (typeof v === 'object' && v !== null) {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) o[k] = variant(x, r);
    if (r() < 0.1) o.extra = r() < 0.5 ? undefined : 1;
    return o;
  }
  return v;
}

test('jsonEqual gives what the first version gave, on 20,000 generated pairs of JSON-like values', () => {
  const r = rng(15);
  let equal = 0;
  for (let i = 0; i < 20_000; i++) {
    const a = value(r, 0);
    const b = r() < 0.7 ? variant(a, r) : value(r, 0);
    const want = reference(a, b);
    assert.equal(jsonEqual(a, b), want, JSON.stringify([a, b]));
    assert.equal(jsonEqual(b, a), reference(b, a), JSON.stringify([b, a]));
    if (want) equal++;
  }
  assert.ok(equal > 2_000, `enough equal pairs (${equal})`);
});

test('jsonEqual: undefined fields are absent, holes on the left are skipped, arrays are not objects', () => {
  assert.ok(jsonEqual({ a: 1, b: undefined }, { a: 1 }));
  assert.ok(!jsonEqual({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(!jsonEqual({ a: 1, b: 2 }, { a: 1, c: 2 }));
  assert.ok(!jsonEqual([1], { 0: 1 }));
  // biome-ignore lint/suspicious/noSparseArray: a hole on purpose
  assert.ok(jsonEqual([1, , 3], [1, 2, 3]));
  assert.ok(!jsonEqual([1, 2], [1, 2, 3]));
  assert.ok(jsonEqual({ records: ['192.0.2.1'], ttl: 60 }, { ttl: 60, records: ['192.0.2.1'] }));
});
