import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { decodeMessage, encodeMessage, type Message, queryMessage } from '../dns/message.ts';
import { RRType } from '../dns/rrtype.ts';
import { QueryHandler } from './query-handler.ts';
import { MAX_CHAIN, ResponseCache } from './response-cache.ts';
import { ZoneSnapshot } from './zone-snapshot.ts';
import { ZoneTable } from './zone-table.ts';

const SOA = {
  ttl: 300,
  mname: 'ns1.example.com.',
  rname: 'h.example.com.',
  refresh: 1,
  retry: 1,
  expire: 1,
  minimum: 60,
};

function query(name: string, type: number, extra: Partial<Message> = {}): Uint8Array {
  return encodeMessage(queryMessage(name, type, { id: 4242, rd: true, ...extra }));
}

function setup() {
  const table = new ZoneTable();
  table.set(
    ZoneSnapshot.build('example.com.', SOA, 1, [
      { owner: 'www.example.com.', type: 'A', ttl: 300, rdata: [{ type: 'A', address: '192.0.2.1' }] },
    ]),
  );
  return { table, handler: new QueryHandler({ table }) };
}

describe('ResponseCache', () => {
  test("a hit carries the query's ID and the case of its question (0x20)", () => {
    const { handler } = setup();
    handler.handle(query('www.example.com.', RRType.A), 'udp');
    const q = query('wWw.ExAmPlE.cOm.', RRType.A, { id: 9 });
    const r = decodeMessage(handler.handle(q, 'udp') as Uint8Array);
    assert.equal(r.id, 9);
    assert.equal(r.questions[0]!.name, 'wWw.ExAmPlE.cOm.');
    assert.equal(r.answers[0]!.name, 'wWw.ExAmPlE.cOm.', 'the answer owner points at the question');
    assert.ok(r.rd);
  });

  test('any change to any zone makes cached responses stale', () => {
    const { table, handler } = setup();
    handler.handle(query('www.example.com.', RRType.A), 'udp');
    const zone = table.get('example.com.')!;
    zone.patch(
      {
        upserts: [
          { owner: 'www.example.com.', type: 'A', ttl: 300, rdata: [{ type: 'A', address: '192.0.2.9' }] },
        ],
        deletes: [],
      },
      2,
      SOA,
    );
    table.changed(zone);
    const r = decodeMessage(handler.handle(query('www.example.com.', RRType.A), 'udp') as Uint8Array);
    assert.deepEqual(r.answers[0]!.data, { type: 'A', address: '192.0.2.9' });
  });

  test('the key separates EDNS, DO, RD/CD and transport; odd shapes are not cached', () => {
    const cache = new ResponseCache();
    const keyOf = (q: Uint8Array, tcp: boolean) => (cache.read(q, tcp) === 0 ? undefined : cache.lastKey());
    const plain = keyOf(query('www.example.com.', 1), false)!;
    const edns = { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: false, options: [] };
    const withEdns = keyOf(query('www.example.com.', 1, { edns }), false)!;
    const withDo = keyOf(query('www.example.com.', 1, { edns: { ...edns, dnssecOk: true } }), false)!;
    const overTcp = keyOf(query('www.example.com.', 1), true)!;
    const noRd = keyOf(query('www.example.com.', 1, { rd: false }), false)!;
    const withCd = keyOf(query('www.example.com.', 1, { cd: true }), false)!;
    assert.equal(new Set([plain, withEdns, withDo, overTcp, noRd, withCd]).size, 6);
    assert.equal(keyOf(query('WWW.example.com.', 1), false)!, plain, 'case-insensitive');
    assert.equal(
      keyOf(
        query('www.example.com.', 1, { edns: { ...edns, options: [{ code: 10, data: new Uint8Array(8) }] } }),
        false,
      ),
      undefined,
      'EDNS options',
    );
    assert.equal(
      keyOf(query('www.example.com.', 1, { edns: { ...edns, version: 1 } }), false),
      undefined,
      'EDNS 1',
    );
    assert.equal(keyOf(query('www.example.com.', 1, { opcode: 4 }), false), undefined, 'NOTIFY');
    assert.equal(keyOf(new Uint8Array(11), false), undefined, 'short');
  });

  /** Stores a dummy response for `name` and says whether `probe` names are cached afterwards. */
  function store(cache: ResponseCache, name: string, version = 0): void {
    assert.ok(cache.read(query(name, 1), false));
    if (cache.get(version) < 0) cache.set(query(name, 1), version, 1);
  }
  function cached(cache: ResponseCache, name: string, version = 0): boolean {
    assert.ok(cache.read(query(name, 1), false));
    return cache.get(version) >= 0;
  }

  test('bounded: a full cache evicts, and entries that were hit get a second chance (CLOCK)', () => {
    const cache = new ResponseCache(3);
    for (const n of ['a.', 'b.', 'c.']) store(cache, n);
    assert.ok(cached(cache, 'a.'), 'a is hit once: it survives the next sweep');
    store(cache, 'd.');
    assert.equal(cache.size, 3);
    assert.ok(cached(cache, 'a.'));
    assert.equal(cached(cache, 'b.'), false, 'b was never hit: evicted first');
    // A stream of one-off names does not flush a popular entry.
    for (let i = 0; i < 100; i++) {
      store(cache, `once${i}.`);
      assert.ok(cached(cache, 'a.'), `a survives one-off name ${i}`);
    }
    assert.equal(cache.size, 3);
  });

  test('stale entries (older table version) are replaced in place and evicted before live ones', () => {
    const cache = new ResponseCache(2);
    store(cache, 'a.', 1);
    assert.ok(cached(cache, 'a.', 1));
    assert.equal(cached(cache, 'a.', 2), false, 'stale after a change');
    store(cache, 'a.', 2);
    assert.ok(cached(cache, 'a.', 2));
    assert.equal(cache.size, 1, 'replaced, not added');
  });

  test('entries whose hashes collide stay apart (keys are compared byte by byte)', () => {
    // Two names whose keys (RD set, no EDNS, UDP) share a 30-bit hash from the FNV offset basis as
    // seed, found by a birthday search.
    const cache = new ResponseCache(10, { seed: 0x811c9dc5 });
    const hashOf = (name: string) => {
      cache.read(query(name, 1), false);
      return (cache as unknown as { hash: number }).hash;
    };
    const pair = ['c83648.example.', 'c440512.example.'] as const;
    assert.equal(hashOf(pair[0]), hashOf(pair[1]), 'the pair collides');
    const [first, second] = pair;
    store(cache, first);
    assert.equal(cached(cache, second), false, 'same hash, other key: a miss');
    store(cache, second);
    for (const n of pair) {
      assert.ok(cache.read(query(n, 1), false));
      const answer = cache.answer(cache.get(0), query(n, 1), 12 + n.length + 1 + 4);
      assert.equal(decodeMessage(answer).questions[0]!.name, n);
    }
    // Evicting one of them keeps the other reachable.
    for (let i = 0; i < 20; i++) store(cache, `fill${i}.`);
    assert.equal(cache.size, 10);
  });

  test('hash chains are capped: colliding names cannot make lookups slow, they are just not cached', () => {
    // Regression: the key hash was unseeded FNV-1a and chains were unbounded, so 2^17 crafted names
    // with one hash (each REFUSED or NXDOMAIN answer is cached) made every lookup walk them all.
    // One bit of hash: every name lands in one of two chains.
    const cache = new ResponseCache(1000, { hashBits: 1 });
    const names = Array.from({ length: 100 }, (_, i) => `flood${i}.example.`);
    let refused = 0;
    for (const n of names) {
      assert.ok(cache.read(query(n, 1), false));
      if (cache.set(query(n, 1), 0, 1) !== 'kept') refused++;
    }
    assert.ok(cache.size <= 2 * MAX_CHAIN, `${cache.size} entries in two chains`);
    assert.equal(refused, 100 - cache.size, 'set() says which answers it did not keep');
    assert.equal(cache.chainFull, refused);
    const cachedNames = names.filter((n) => cached(cache, n));
    assert.equal(cachedNames.length, cache.size, 'what was stored is found');
  });

  test('every cache draws its own hash seed', () => {
    const hashOf = (cache: ResponseCache) => {
      cache.read(query('www.example.com.', 1), false);
      return (cache as unknown as { hash: number }).hash;
    };
    const seen = new Set(Array.from({ length: 4 }, () => hashOf(new ResponseCache(1))));
    assert.ok(seen.size > 1, 'four caches, one hash: the hash key is not random');
  });
});

describe('ResponseCache store', () => {
  /** A response of `length` octets whose body names what it answers (key and serial). */
  function response(length: number, tag: number): Buffer {
    const r = Buffer.alloc(length);
    r[3] = 0;
    for (let i = 4; i < length; i++) r[i] = (tag * 31 + i) & 0xff;
    return r;
  }

  test('every hit is exactly the last answer stored for its key, across wraps, growth and eviction', () => {
    // A model check: random answers of 12 octets to 20 KB (so that bytes, not entries, bound the
    // store most of the time), replaced by larger and smaller ones, with table changes in between.
    let seed = 12345;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const cache = new ResponseCache(50);
    const stored = new Map<string, { tag: number; length: number; version: number }>();
    let version = 1;
    let tag = 0;
    let hits = 0;
    for (let step = 0; step < 20_000; step++) {
      if (rand(500) === 0) version++;
      const name = `n${rand(rand(10) === 0 ? 400 : 40)}.example.`;
      const q = query(name, 1);
      const questionEnd = 12 + name.length + 1 + 4;
      assert.ok(cache.read(q, false));
      const slot = cache.get(version);
      const expected = stored.get(name);
      if (slot >= 0) {
        hits++;
        assert.ok(
          expected && expected.version === version,
          `step ${step}: a hit for ${name} never stored now`,
        );
        const got = Buffer.from(cache.answer(slot, q, questionEnd));
        const want = response(expected.length, expected.tag);
        for (const i of [0, 1]) want[i] = q[i]!;
        for (let i = 12; i < questionEnd; i++) want[i] = q[i]!;
        assert.ok(got.equals(want), `step ${step}: ${name} answered with other bytes`);
        continue;
      }
      const length = rand(3) === 0 ? 1000 + rand(19_000) : 12 + rand(300);
      tag++;
      assert.equal(cache.set(response(length, tag), version, 1), 'kept');
      stored.set(name, { tag, length, version });
      assert.ok(cache.size <= 50);
    }
    assert.ok(hits > 5000, `${hits} hits`);
  });

  test('a popular answer survives a flood of one-off answers when bytes bound the store', () => {
    const cache = new ResponseCache(1000);
    const storeBytes = cache.storeBytes;
    const popular = query('popular.example.', 1);
    assert.ok(cache.read(popular, false));
    cache.set(response(100, 1), 0, 1);
    let flooded = 0;
    for (let i = 0; flooded < storeBytes * 3; i++) {
      assert.ok(cache.read(query(`once${i}.example.`, 1), false));
      if (cache.get(0) < 0) cache.set(response(3000, i), 0, 1);
      flooded += 3000;
      assert.ok(cache.read(popular, false));
      assert.ok(cache.get(0) >= 0, `evicted after ${i} one-off answers`);
    }
  });

  test('any single response, up to 64 KiB over TCP, fits even the smallest store', () => {
    const cache = new ResponseCache(1);
    assert.ok(cache.storeBytes >= 4 * 65535);
    for (const name of ['big1.example.', 'big2.example.', 'big1.example.']) {
      assert.ok(cache.read(query(name, 1), true));
      if (cache.get(0) < 0) assert.equal(cache.set(response(65535, 1), 0, 1), 'kept');
    }
    assert.equal(cache.size, 1);
  });
});

describe('ResponseCache memory', () => {
  /** The heap and off-heap bytes in use after a full garbage collection. */
  function used(): number {
    const gc = runInNewContext('gc') as () => void;
    gc();
    gc();
    const m = process.memoryUsage();
    return m.heapUsed + m.external;
  }
  setFlagsFromString('--expose-gc');

  test('stays within its byte budget however many distinct answers pass through it', () => {
    // Regression: every entry was an object with a buffer of its own (~650 bytes of heap and off-heap
    // memory per entry, ~1.5 KB of RSS), so a full 100,000-entry cache took ~150 MB instead of the
    // ~25 MB documented, and the long fuzz run failed its RSS bound.
    const entries = 20_000;
    const cache = new ResponseCache(entries);
    const response = Buffer.alloc(120, 7);
    const fill = (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const q = query(`n${i}.x${i % 97}.example.com.`, 1);
        assert.ok(cache.read(q, false));
        if (cache.get(0) < 0) cache.set(response, 0, 1);
      }
    };
    fill(0, 1000); // warm up: code, scratch space, the first entries
    const before = used();
    fill(1000, entries * 3);
    const grown = used() - before;
    assert.ok(cache.size > entries / 2, `${cache.size} entries kept`);
    assert.ok(
      grown < entries * 48,
      `grew by ${(grown / 1024 / 1024).toFixed(1)} MB (${Math.round(grown / entries)} bytes per entry)`,
    );
  });
});
