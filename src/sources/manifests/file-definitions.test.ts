import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FileDefinitions } from './file-definitions.ts';

interface Def {
  resource: string;
  document?: number;
}

const entries = (d: FileDefinitions<Def>) => [...d];

test('FileDefinitions: packed, the same answers as a Map in the same order; values change in place, a new id unpacks', () => {
  const d = new FileDefinitions<Def>();
  const m = new Map<string, Def | number>();
  // Set in document order, not sorted order: iteration keeps the order they were set in.
  const ids = Array.from({ length: 40 }, (_, i) => `DNSRecordSet/ns/r${(i * 7) % 40}`);
  ids.forEach((id, i) => {
    const value = i % 5 === 0 ? { resource: id, document: i } : i;
    d.set(id, value);
    m.set(id, value);
  });
  assert.equal(d.packed, false);
  d.pack();
  assert.equal(d.packed, true);
  assert.deepEqual(entries(d), [...m]);
  assert.deepEqual([...d.keys()], [...m.keys()]);
  assert.equal(d.size, 40);
  // Walked, not looked up in: no sorted index yet.
  assert.equal(d.indexed, false);
  for (const id of ids) {
    assert.equal(d.has(id), true);
    assert.equal(d.get(id), m.get(id));
  }
  assert.equal(d.indexed, true);
  for (const id of ['', 'DNSRecordSet/ns/r', 'DNSRecordSet/ns/r40', 'DNSZone/ns/r1', 'zzz']) {
    assert.equal(d.has(id), false);
    assert.equal(d.get(id), undefined);
  }
  // An object becomes a number (applied) and a number an object (another file's version held):
  // both in place, still packed; a value that is no 32-bit integer is kept as it is.
  d.set(ids[0]!, -1);
  d.set(ids[1]!, { resource: 'kept', document: 1 });
  d.set(ids[2]!, 2 ** 40);
  d.set(ids[3]!, -0);
  assert.equal(d.packed, true);
  assert.equal(d.get(ids[0]!), -1);
  assert.deepEqual(d.get(ids[1]!), { resource: 'kept', document: 1 });
  assert.equal(d.get(ids[2]!), 2 ** 40);
  assert.ok(Object.is(d.get(ids[3]!), -0));
  // A new id: a Map again, in the same order, the new one last; packed again later.
  d.set('DNSRecordSet/ns/new', 7);
  assert.equal(d.packed, false);
  assert.deepEqual([...d.keys()], [...ids, 'DNSRecordSet/ns/new']);
  assert.equal(d.get(ids[2]!), 2 ** 40);
  d.pack();
  assert.equal(d.packed, true);
  assert.equal(d.get('DNSRecordSet/ns/new'), 7);
  assert.equal(d.size, 41);
});

test('FileDefinitions: a small file stays a Map; a walk over a packed one that unpacks meanwhile sees its own ids', () => {
  const small = new FileDefinitions<Def>();
  for (let i = 0; i < FileDefinitions.packMin - 1; i++) small.set(`K/${i}`, i);
  small.pack();
  assert.equal(small.packed, false);

  const d = new FileDefinitions<Def>();
  for (let i = 0; i < 50; i++) d.set(`K/${i}`, i);
  d.pack();
  const seen: [string, Def | number][] = [];
  for (const [id, value] of d) {
    if (id === 'K/10') d.set('K/new', 99);
    seen.push([id, value]);
  }
  assert.equal(seen.length, 50);
  assert.deepEqual(
    seen.map(([, v]) => v),
    Array.from({ length: 50 }, (_, i) => i),
  );
  assert.equal(d.get('K/new'), 99);
});

test('FileDefinitions: randomized against a Map (sets, packs, lookups of present and absent ids)', () => {
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let round = 0; round < 30; round++) {
    const d = new FileDefinitions<Def>();
    const m = new Map<string, Def | number>();
    const pool = Array.from(
      { length: 10 + random(120) },
      (_, i) => `DNSRecordSet/n${random(3)}/x${i}-${random(1000)}`,
    );
    for (let step = 0; step < 400; step++) {
      const id = pool[random(pool.length)]!;
      const op = random(10);
      if (op < 4) {
        const value = random(3) === 0 ? { resource: id, document: step } : random(2) === 0 ? step : -1;
        d.set(id, value);
        m.set(id, value);
      } else if (op < 5) d.pack();
      else {
        assert.equal(d.has(id), m.has(id));
        assert.equal(d.get(id), m.get(id));
      }
      if (step % 50 === 0) {
        assert.deepEqual(entries(d), [...m]);
        assert.equal(d.size, m.size);
      }
    }
    d.pack();
    assert.deepEqual(entries(d), [...m]);
    for (const id of pool) assert.equal(d.get(id), m.get(id));
  }
});

test('FileDefinitions: `served` gives what a `set` of each id and `pack` give, in one walk; `entries` walks like the iterator', () => {
  const served = (def: Def | number) => (typeof def === 'number' ? def : (def.document ?? -1));
  for (const n of [40, 10]) {
    const ids = Array.from({ length: n }, (_, i) => `DNSRecordSet/ns/r${(i * 7) % n}`);
    const one = new FileDefinitions<Def>();
    const each = new FileDefinitions<Def>();
    ids.forEach((id, i) => {
      // Documents, one unknown, one not a 32-bit integer (kept aside when packed).
      const value = i === 3 ? { resource: id } : i === 4 ? 2 ** 40 : { resource: id, document: i + 1 };
      one.set(id, value);
      each.set(id, value);
    });
    assert.deepEqual([...one.entries()], [...one]);
    one.served(served);
    for (const [id, value] of [...each]) each.set(id, served(value));
    each.pack();
    assert.equal(one.packed, n >= FileDefinitions.packMin);
    assert.equal(one.packed, each.packed);
    assert.deepEqual([...one], [...each]);
    assert.deepEqual([...one.entries()], [...each]);
    for (const id of ids) assert.equal(one.get(id), each.get(id));
    assert.equal(one.get(ids[3]!), -1);
    assert.equal(one.get(ids[4]!), 2 ** 40);
    assert.equal(one.has('DNSRecordSet/ns/absent'), false);
  }
});

test('FileDefinitions.listed: the same answers as a `set` of each id in turn, before and after `served`, `pack`, a `set` of a present or a new id', () => {
  const served = (def: Def | number) => (typeof def === 'number' ? def : (def.document ?? -1));
  let seed = 11;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let round = 0; round < 40; round++) {
    const n = random(3) === 0 ? random(FileDefinitions.packMin) : FileDefinitions.packMin + random(200);
    const ids = [
      ...new Set(Array.from({ length: n }, (_, i) => `DNSRecordSet/n${random(3)}/x${i}-${random(1000)}`)),
    ];
    // Definitions, one unknown document, numbers (one not a 32-bit integer).
    const values = ids.map((id, i): Def | number =>
      i % 17 === 3
        ? { resource: id }
        : i % 23 === 5
          ? 2 ** 40
          : i % 19 === 7
            ? i
            : { resource: id, document: i + 1 },
    );
    const d = FileDefinitions.listed([...ids], [...values]);
    const m = new FileDefinitions<Def>();
    for (let i = 0; i < ids.length; i++) m.set(ids[i]!, values[i]!);
    const same = () => {
      assert.equal(d.size, m.size);
      assert.deepEqual([...d], [...m]);
      assert.deepEqual([...d.entries()], [...m]);
      assert.deepEqual([...d.keys()], [...m.keys()]);
      const walked: [string, Def | number][] = [];
      d.forEach((value, id) => {
        walked.push([id, value]);
      });
      assert.deepEqual(walked, [...m]);
      for (const id of ids) {
        assert.equal(d.has(id), true);
        assert.equal(d.get(id), m.get(id));
      }
      for (const absent of ['DNSRecordSet/n0/absent', 'A', 'zzz']) {
        assert.equal(d.has(absent), false);
        assert.equal(d.get(absent), undefined);
      }
    };
    assert.equal(d.listedNow, n >= FileDefinitions.packMin);
    assert.equal(d.packed, false);
    same();
    const op = random(4);
    if (op === 0 && n > 0) {
      // A present id set again stays listed; then served, as `apply` makes them.
      const id = ids[random(n)]!;
      d.set(id, 99);
      m.set(id, 99);
      assert.equal(d.listedNow, n >= FileDefinitions.packMin);
      same();
      d.served(served);
      m.served(served);
    } else if (op === 1) {
      // A new id: a Map again, in the same order, the new one last.
      d.set('DNSRecordSet/new/one', 7);
      m.set('DNSRecordSet/new/one', 7);
      ids.push('DNSRecordSet/new/one');
      assert.equal(d.listedNow, false);
      assert.equal(d.packed, false);
    } else if (op === 2) {
      d.pack();
      m.pack();
    } else {
      d.served(served);
      m.served(served);
    }
    assert.equal(d.listedNow, false);
    assert.equal(d.packed, m.packed);
    same();
  }
});
