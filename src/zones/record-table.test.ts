import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { Catalog } from './catalog.ts';
import { Holder, keyHash, RecordTable, SlotLists } from './record-table.ts';

describe('RecordTable', () => {
  test('a freed slot is reused, with every column cleared at it', () => {
    const table = new RecordTable();
    const names = table.column<string>();
    const numbers = table.int32Column();
    const a = table.hold('ns/a', Holder.catalog);
    const b = table.hold('ns/b', Holder.catalog);
    assert.notEqual(a, b);
    names.set(a, 'A');
    numbers.set(a, 7);
    table.release(a, Holder.catalog);
    assert.equal(table.slotOf('ns/a'), -1);
    assert.equal(table.size, 1);
    const c = table.hold('ns/c', Holder.feed);
    assert.equal(c, a, 'the freed slot is taken again');
    assert.equal(table.keyOf(c), 'ns/c');
    assert.equal(names.get(c), undefined, 'nothing of ns/a is left at the slot');
    assert.equal(numbers.get(c), -1);
    assert.equal(table.keyOf(b), 'ns/b');
  });

  for (const dense of [true, false]) {
    test(`a ${dense ? 'dense' : 'sparse'} column made after its table gave out many slots holds any of them, and slots given out later`, () => {
      const table = new RecordTable();
      const slots = Array.from({ length: 1000 }, (_, i) => table.hold(`ns/r${i}`, Holder.store));
      const names = table.column<string>(Holder.catalog, dense);
      const numbers = table.int32Column(Holder.catalog, dense);
      // Set out of order (the first write grows a dense column to the table's 1,000 slots at once).
      for (const slot of [...slots].reverse()) {
        names.set(slot, `v${slot}`);
        numbers.set(slot, slot * 2);
      }
      for (const slot of slots) {
        assert.equal(names.get(slot), `v${slot}`);
        assert.equal(numbers.get(slot), slot * 2);
      }
      names.clear(slots[10]!);
      assert.equal(names.get(slots[10]!), undefined);
      assert.equal(names.get(5000), undefined, 'beyond the column: nothing');
      assert.equal(numbers.get(5000), -1);
      // Slots taken one at a time after it: each readable, nothing there before it is set.
      for (let i = 1000; i < 1100; i++) {
        const slot = table.hold(`ns/r${i}`, Holder.store);
        assert.equal(names.get(slot), undefined);
        assert.equal(numbers.get(slot), -1);
        names.set(slot, `v${slot}`);
        numbers.set(slot, slot);
        assert.equal(names.get(slot), `v${slot}`);
        assert.equal(numbers.get(slot), slot);
      }
      assert.equal(names.get(slots[999]!), `v${slots[999]}`);
    });
  }

  test('one value in a sparse column does not make it as long as the table; a dense column is made at its size', () => {
    const table = new RecordTable();
    for (let i = 0; i < 100_000; i++) table.hold(`ns/r${i}`, Holder.store);
    const sparse = table.column<string>(Holder.programmed);
    const sparseNumbers = table.int32Column(Holder.status);
    sparse.set(5, 'x');
    sparseNumbers.set(5, 1);
    assert.ok(sparse.length <= 16, `sparse column: ${sparse.length} slots`);
    assert.ok(sparseNumbers.length <= 16, `sparse integer column: ${sparseNumbers.length} slots`);
    const dense = table.column<string>(Holder.catalog, true);
    dense.set(0, 'x');
    assert.equal(dense.length, 100_000, 'a dense column grows once, to the slots given out');
  });

  test('a slot stays while any holder holds it', () => {
    const table = new RecordTable();
    const column = table.column<string>();
    const slot = table.hold('ns/a', Holder.catalog);
    assert.equal(table.hold('ns/a', Holder.programmed), slot);
    column.set(slot, 'kept');
    table.release(slot, Holder.catalog);
    assert.equal(table.slotOf('ns/a'), slot);
    assert.equal(column.get(slot), 'kept');
    assert.ok(table.held(slot, Holder.programmed));
    assert.ok(!table.held(slot, Holder.catalog));
    table.release(slot, Holder.catalog); // a second release of a holder not holding it changes nothing
    assert.equal(table.slotOf('ns/a'), slot);
    table.release(slot, Holder.programmed);
    assert.equal(table.slotOf('ns/a'), -1);
    assert.equal(table.size, 0);
  });

  test("a holder's own columns are cleared where it lets go, while another holder keeps the slot", () => {
    const table = new RecordTable();
    const mine = table.column<string>(Holder.feed);
    const theirs = table.column<string>(Holder.programmed);
    const slot = table.hold('ns/a', Holder.feed);
    table.hold('ns/a', Holder.programmed);
    mine.set(slot, 'fed');
    theirs.set(slot, 'programmed');
    table.release(slot, Holder.feed);
    assert.equal(mine.get(slot), undefined, 'nothing left behind for the holder that let go');
    assert.equal(theirs.get(slot), 'programmed');
    // Held again by the feed: it starts from nothing.
    assert.equal(table.hold('ns/a', Holder.feed), slot);
    assert.equal(mine.get(slot), undefined);
  });

  test('holdSlot adds a holder to a held slot without its key, and refuses a slot nobody holds', () => {
    const table = new RecordTable();
    const a = table.hold('ns/a', Holder.feed);
    assert.equal(table.holdSlot(a, Holder.catalog), a);
    assert.ok(table.held(a, Holder.catalog));
    table.release(a, Holder.feed);
    assert.equal(table.slotOf('ns/a'), a);
    table.release(a, Holder.catalog);
    assert.equal(table.slotOf('ns/a'), -1);
    assert.throws(() => table.holdSlot(a, Holder.catalog), RangeError);
    assert.throws(() => table.holdSlot(99, Holder.catalog), RangeError);
  });

  test('a key not found and then taken gets a slot of its own, whatever was taken between', () => {
    const table = new RecordTable();
    assert.equal(table.slotOf('ns/a'), -1);
    const a = table.hold('ns/a', Holder.store);
    assert.equal(table.slotOf('ns/a'), a);
    // Not found, then another key taken: the first is looked up again when it is taken.
    assert.equal(table.slotOf('ns/b'), -1);
    const c = table.hold('ns/c', Holder.catalog);
    assert.equal(table.hold('ns/b', Holder.store), c + 1);
    assert.equal(table.hold('ns/b', Holder.catalog), c + 1);
    // Not found, taken by another path, then taken again: one slot, both holders.
    assert.equal(table.slotOf('ns/d'), -1);
    const d = table.hold('ns/d', Holder.store);
    assert.equal(table.hold('ns/d', Holder.catalog), d);
    assert.equal(table.held(d, Holder.store) && table.held(d, Holder.catalog), true);
    // Not found after a release: a new slot (the freed one), the key held once.
    table.release(a, Holder.store);
    assert.equal(table.slotOf('ns/a'), -1);
    assert.equal(table.hold('ns/a', Holder.feed), a);
    assert.equal(table.size, 4);
    assert.deepEqual(
      [...table.entries()].map(([key]) => key),
      ['ns/c', 'ns/b', 'ns/d', 'ns/a'],
    );
  });

  test('a column reserved for many slots is made once at that size and keeps its values; lists reserved keep theirs', () => {
    const table = new RecordTable();
    for (let i = 0; i < 1000; i++) table.hold(`ns/r${i}`, Holder.store);
    const names = table.column<string>(Holder.catalog);
    const numbers = table.int32Column(Holder.catalog);
    names.set(3, 'x');
    numbers.set(3, 7);
    names.reserve(1000);
    numbers.reserve(1000);
    assert.equal(names.length, 1000);
    assert.equal(numbers.length, 1000);
    assert.equal(names.get(3), 'x');
    assert.equal(numbers.get(3), 7);
    assert.equal(numbers.get(999), -1);
    names.reserve(10);
    assert.equal(names.length, 1000, 'never shrunk');
    const lists = new SlotLists(table);
    lists.move(5, 'z');
    lists.move(2, 'z');
    lists.reserve(1000);
    lists.move(999, 'z');
    lists.move(2, 'y');
    assert.deepEqual(lists.slots('z'), [5, 999]);
    assert.deepEqual(lists.slots('y'), [2]);
  });

  test('lists keep the order slots joined them, and an empty list is dropped', () => {
    const table = new RecordTable();
    const lists = new SlotLists(table);
    const [a, b, c] = ['ns/a', 'ns/b', 'ns/c'].map((k) => table.hold(k, Holder.catalog)) as [
      number,
      number,
      number,
    ];
    lists.move(a, 'z');
    lists.move(b, 'z');
    lists.move(c, 'z');
    lists.move(b, 'z'); // already there: keeps its place
    assert.deepEqual(lists.slots('z'), [a, b, c]);
    lists.move(b, 'y');
    assert.deepEqual(lists.slots('z'), [a, c]);
    lists.move(b, 'z');
    assert.deepEqual(lists.slots('z'), [a, c, b], 'back at the end, as a Set re-added');
    lists.move(a, undefined);
    lists.move(c, undefined);
    lists.move(b, undefined);
    assert.deepEqual(lists.slots('z'), []);
    assert.equal(lists.nameOf(a), undefined);
  });
});

describe('the catalog on the record table', () => {
  function catalog(): Catalog {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('dns', 'example-com', 'example.com'));
    c.setZone(zone('dns', 'example-org', 'example.org'));
    return c;
  }
  const a = (name: string, zoneName = 'example-com') =>
    recordSet('dns', name, { zoneRef: { name: zoneName }, name, type: 'A', records: ['192.0.2.1'] });

  test('deleting and adding record sets again reuses slots and loses nothing', () => {
    const c = catalog();
    for (let i = 0; i < 20; i++) c.setRecord(a(`r${i}`));
    for (let i = 0; i < 20; i += 2) c.deleteRecord(`dns/r${i}`);
    assert.equal(c.table.size, 10);
    // New keys take the freed slots: each must come with its own zone and name, nothing of the old.
    for (let i = 0; i < 10; i++) c.setRecord(a(`n${i}`, 'example-org'));
    assert.equal(c.table.size, 20);
    assert.equal(c.records.size, 20);
    assert.deepEqual(
      c.zoneMembers('dns/example-com').map((m) => [m.key, m.current?.fqdn]),
      [1, 3, 5, 7, 9, 11, 13, 15, 17, 19].map((i) => [`dns/r${i}`, `r${i}.example.com.`]),
    );
    assert.deepEqual(
      c.zoneMembers('dns/example-org').map((m) => m.key),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => `dns/n${i}`),
    );
    for (let i = 0; i < 20; i += 2) {
      assert.equal(c.recordResolution(`dns/r${i}`), undefined);
      assert.equal(c.records.get(`dns/r${i}`), undefined);
    }
    // Deleting the zone's named record sets' zone re-resolves exactly the record sets naming it.
    const affected = c.deleteZone('dns/example-org');
    assert.deepEqual(
      [...affected.records].sort(),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => `dns/n${i}`),
    );
    assert.equal(c.recordResolution('dns/n0')?.resolved, false);
    assert.deepEqual(c.recordsOf('dns/example-org'), []);
  });

  test('a record set deleted and added again is a member again, at the end of its zone', () => {
    const c = catalog();
    c.setRecord(a('x'));
    c.setRecord(a('y'));
    c.deleteRecord('dns/x');
    c.setRecord(a('x'));
    assert.deepEqual(
      c.zoneMembers('dns/example-com').map((m) => m.key),
      ['dns/y', 'dns/x'],
    );
    assert.deepEqual(c.recordResolution('dns/x'), {
      resolved: true,
      zone: 'dns/example-com',
      fqdn: 'x.example.com.',
    });
  });

  test('a rename (delete under the old key, add under the new) moves everything to the new key', () => {
    const c = catalog();
    c.setRecord(a('old'));
    const renamed = a('new');
    c.deleteRecord('dns/old');
    c.setRecord(renamed);
    assert.equal(c.records.get('dns/old'), undefined);
    assert.equal(c.records.get('dns/new'), renamed);
    assert.deepEqual(
      c.zoneMembers('dns/example-com').map((m) => [m.key, m.current?.fqdn]),
      [['dns/new', 'new.example.com.']],
    );
    assert.deepEqual([...c.records.keys()], ['dns/new']);
  });

  test('a record set whose zoneRef changes leaves the old zone and its zoneRef index', () => {
    const c = catalog();
    c.setRecord(a('m'));
    c.setRecord(a('m', 'example-org'));
    assert.deepEqual(c.recordsOf('dns/example-com'), []);
    assert.equal(c.recordsOf('dns/example-org').length, 1);
    // Deleting the zone it named before re-resolves nothing of it.
    const affected = c.deleteZone('dns/example-com');
    assert.ok(!affected.records.has('dns/m'));
  });
});

/** A small deterministic generator (mulberry32): the same sequence of operations on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  };
}

/** `count` keys whose hashes under `seed` agree in the bits of `mask` (so their buckets do). */
function colliding(seed: number, mask: number, count: number, prefix = 'ns/c'): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const key = `${prefix}${i}`;
    if ((keyHash(key, seed) & mask) === 0) out.push(key);
  }
  return out;
}

/**
 * What a `RecordTable` should do, kept with a `Map` (the table's index before it had its own): a
 * key's slot and holders in the order keys were first taken, freed slots reused last freed first.
 */
class ModelTable {
  readonly slots = new Map<string, number>();
  readonly holders = new Map<number, number>();
  private readonly free: number[] = [];
  private next = 0;

  slotOf(key: string): number {
    return this.slots.get(key) ?? -1;
  }

  hold(key: string, holder: number): number {
    let slot = this.slots.get(key);
    if (slot === undefined) {
      slot = this.free.pop() ?? this.next++;
      this.slots.set(key, slot);
    }
    this.holders.set(slot, (this.holders.get(slot) ?? 0) | holder);
    return slot;
  }

  release(slot: number, holder: number): void {
    const held = this.holders.get(slot) ?? 0;
    if ((held & holder) === 0) return;
    const left = held & ~holder;
    if (left !== 0) {
      this.holders.set(slot, left);
      return;
    }
    this.holders.delete(slot);
    for (const [key, s] of this.slots) if (s === slot) this.slots.delete(key);
    this.free.push(slot);
  }
}

describe("RecordTable's key index", () => {
  const holders = [Holder.catalog, Holder.feed, Holder.store, Holder.state];

  for (const [name, seed, pool] of [
    [
      'keys of every kind',
      7,
      () => Array.from({ length: 300 }, (_, i) => (i % 7 === 0 ? `k${i}` : `ns-${i % 5}/r-${i}`)),
    ],
    [
      'keys whose buckets collide while the index is small',
      11,
      () => [...colliding(11, 0xff, 150), 'ns/a', 'ns/b', '', 'é/ü', '\u{1f600}/x'],
    ],
  ] as const) {
    test(`holds, looks up and releases as a Map would (${name}), entries in the order keys were first taken`, () => {
      const next = random(seed);
      const keys = pool();
      const table = new RecordTable(seed);
      const model = new ModelTable();
      const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
      for (let op = 0; op < 20_000; op++) {
        const key = pick(keys);
        const r = next();
        if (r < 0.3) {
          assert.equal(table.slotOf(key), model.slotOf(key), `slotOf ${key}`);
        } else if (r < 0.55) {
          // As a new record set is taken: looked up (a miss, remembered), then held.
          table.slotOf(key);
          const holder = pick(holders);
          assert.equal(table.hold(key, holder), model.hold(key, holder), `hold ${key}`);
        } else if (r < 0.6) {
          // A miss remembered, then another key released (the index changed), then held.
          table.slotOf(key);
          const other = model.slotOf(pick(keys));
          if (other >= 0) {
            table.release(other, Holder.catalog);
            model.release(other, Holder.catalog);
          }
          assert.equal(
            table.hold(key, Holder.feed),
            model.hold(key, Holder.feed),
            `hold ${key} after a release`,
          );
        } else {
          // Releases as often as holds (more in the second half): the index empties and fills again.
          const slot = model.slotOf(key);
          if (slot < 0) continue;
          const holder = op > 10_000 && next() < 0.5 ? (model.holders.get(slot) ?? 0) : pick(holders);
          for (const h of holders) if ((holder & h) !== 0) table.release(slot, h);
          for (const h of holders) if ((holder & h) !== 0) model.release(slot, h);
        }
        assert.equal(table.size, model.slots.size);
        if (op % 500 === 0) {
          assert.deepEqual([...table.entries()], [...model.slots], `entries after ${op} operations`);
          for (const [k, slot] of model.slots) {
            assert.equal(table.keyOf(slot), k);
            for (const h of holders)
              assert.equal(table.held(slot, h), ((model.holders.get(slot) ?? 0) & h) !== 0);
          }
        }
      }
      assert.deepEqual([...table.entries()], [...model.slots]);
    });
  }

  test('entries read as they go, as a Map iterator does, while keys are taken and freed (and the order compacted)', () => {
    const next = random(3);
    const table = new RecordTable(3);
    const model = new ModelTable();
    const key = () => `ns/r${Math.floor(next() * 400)}`;
    for (let i = 0; i < 300; i++) {
      const k = key();
      assert.equal(table.hold(k, Holder.state), model.hold(k, Holder.state));
    }
    for (let pass = 0; pass < 20; pass++) {
      const mine = table.entries();
      const theirs = model.slots.entries();
      for (let step = 0; step < 2_000; step++) {
        const a = mine.next();
        const b = theirs.next();
        assert.deepEqual(a, b, `pass ${pass}, step ${step}`);
        if (a.done) break;
        // Mostly releases in even passes (the order is compacted under the iterator), holds in odd ones.
        const release = next() < (pass % 2 === 0 ? 0.8 : 0.3);
        for (let n = 0; n < 3; n++) {
          const k = key();
          const slot = model.slotOf(k);
          if (release && slot >= 0) {
            table.release(slot, Holder.state);
            model.release(slot, Holder.state);
          } else if (!release) assert.equal(table.hold(k, Holder.state), model.hold(k, Holder.state));
        }
      }
      assert.deepEqual([...table.entries()], [...model.slots]);
    }
  });

  test('the state log lets go of every slot while it walks them: all are freed', () => {
    const table = new RecordTable();
    for (let i = 0; i < 1000; i++) table.hold(`ns/r${i}`, Holder.state);
    table.hold('ns/r5', Holder.catalog);
    for (const [, slot] of table.entries()) table.release(slot, Holder.state);
    assert.equal(table.size, 1);
    assert.deepEqual(
      [...table.entries()].map(([k]) => k),
      ['ns/r5'],
    );
    assert.equal(table.hold('ns/new', Holder.state), 999, 'the last freed slot is taken first');
  });

  test('keys chosen to collide under the index seed make it take a new seed: probes stay short, every key found', () => {
    const seed = 12345;
    const hostile = colliding(seed, 0xfff, 400);
    const table = new RecordTable(seed);
    const slots = hostile.map((k) => table.hold(k, Holder.store));
    assert.ok(table.longestRun() < 40, `longest run of buckets ${table.longestRun()}`);
    for (const [i, k] of hostile.entries()) assert.equal(table.slotOf(k), slots[i]);
    assert.deepEqual(
      [...table.entries()].map(([k]) => k),
      hostile,
    );
    for (const slot of slots.slice(0, 200)) table.release(slot, Holder.store);
    for (const [i, k] of hostile.entries()) assert.equal(table.slotOf(k), i < 200 ? -1 : slots[i]);
  });

  test('keys that collide under every seed it takes: a new seed at most once per half the buckets, so never a rehash per insertion', () => {
    const seed = 12345;
    const hostile = colliding(seed, 0xfff, 600);
    // A peak of 8,192 keys first: the index keeps its 16,384 buckets when they are let go.
    const table = new RecordTable(seed, () => seed);
    const peak = Array.from({ length: 8192 }, (_, i) => table.hold(`ns/peak-${i}`, Holder.store));
    for (const slot of peak) table.release(slot, Holder.store);
    const slots = hostile.map((k) => table.hold(k, Holder.store));
    // Every insertion after the 128th probes a long run; the bound lets one new seed through.
    assert.equal(table.reseedCount, 1);
    for (const [i, k] of hostile.entries()) assert.equal(table.slotOf(k), slots[i]);
  });

  test('keys differing only in the top bits of their UTF-16 units do not collide under every seed', () => {
    // Two units packed in 32 bits a step would give all of these one hash under any seed.
    const keys: string[] = [];
    for (let m = 0; m < 256; m++) {
      let key = 'ns/x';
      for (let bit = 0; bit < 8; bit++) key += (m >> bit) & 1 ? 'a\u8041b\u8043' : 'a\u0041b\u0042';
      keys.push(key);
    }
    for (const s of [1, 2, 3]) {
      const hashes = new Set(keys.map((k) => keyHash(k, s)));
      assert.ok(hashes.size > 250, `${hashes.size} hashes of 256 keys under seed ${s}`);
    }
  });

  test('entries(): an iterator that said done stays done when a key is taken later, as a Map iterator does', () => {
    const table = new RecordTable();
    const map = new Map<string, number>();
    table.hold('ns/a', Holder.store);
    map.set('ns/a', 0);
    const it = table.entries();
    const mapIt = map.entries();
    assert.deepEqual(it.next(), { value: ['ns/a', 0], done: false });
    mapIt.next();
    assert.equal(it.next().done, true);
    assert.equal(mapIt.next().done, true);
    table.hold('ns/b', Holder.store);
    map.set('ns/b', 1);
    assert.deepEqual(it.next(), mapIt.next());
    assert.equal(it.next().done, true);
  });

  test('a key missed, another inserted, then the first held: each at its own slot, found again', () => {
    const table = new RecordTable(7);
    assert.equal(table.slotOf('ns/first'), -1);
    const second = table.hold('ns/second', Holder.store);
    const first = table.hold('ns/first', Holder.store);
    assert.notEqual(first, second);
    assert.equal(table.slotOf('ns/first'), first);
    assert.equal(table.slotOf('ns/second'), second);
    // A miss, a release, then the missed key's hold: the remembered bucket is not trusted.
    assert.equal(table.slotOf('ns/third'), -1);
    table.release(second, Holder.store);
    const third = table.hold('ns/third', Holder.store);
    assert.equal(table.slotOf('ns/third'), third);
    assert.equal(table.slotOf('ns/first'), first);
    assert.equal(table.slotOf('ns/second'), -1);
    assert.equal(table.size, 2);
  });

  test('a key hashes alike under one seed and differently under others, whatever its characters', () => {
    for (const key of ['', 'a', 'ns/name-1', 'é/ü', '\u{1f600}', 'x'.repeat(300)]) {
      assert.equal(keyHash(key, 1), keyHash(key, 1));
      assert.equal(keyHash(key, 1) | 0, keyHash(key, 1));
    }
    assert.notEqual(keyHash('ns/a', 1), keyHash('ns/a', 2));
    assert.notEqual(keyHash('ns/ab', 1), keyHash('ns/ba', 1));
    // Under another seed the keys chosen to collide spread over the buckets as any keys do.
    const hostile = colliding(12345, 0xfff, 200);
    const buckets = new Set(hostile.map((k) => keyHash(k, 54321) & 0xfff));
    assert.ok(buckets.size > 180, `${buckets.size} buckets of 200 keys`);
  });
});
