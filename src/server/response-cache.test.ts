import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeMessage, encodeMessage, type Message } from '../dns/message.ts';
import { RRType } from '../dns/rrtype.ts';
import { QueryHandler } from './query-handler.ts';
import { ResponseCache } from './response-cache.ts';
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
  return encodeMessage({
    id: 4242,
    qr: false,
    opcode: 0,
    aa: false,
    tc: false,
    rd: true,
    ra: false,
    ad: false,
    cd: false,
    rcode: 0,
    questions: [{ name, type, class: 1 }],
    answers: [],
    authority: [],
    additional: [],
    ...extra,
  });
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
    const plain = cache.keyOf(query('www.example.com.', 1), false)!.key;
    const edns = { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: false, options: [] };
    const withEdns = cache.keyOf(query('www.example.com.', 1, { edns }), false)!.key;
    const withDo = cache.keyOf(
      query('www.example.com.', 1, { edns: { ...edns, dnssecOk: true } }),
      false,
    )!.key;
    const overTcp = cache.keyOf(query('www.example.com.', 1), true)!.key;
    const noRd = cache.keyOf(query('www.example.com.', 1, { rd: false }), false)!.key;
    assert.equal(new Set([plain, withEdns, withDo, overTcp, noRd]).size, 5);
    assert.equal(cache.keyOf(query('WWW.example.com.', 1), false)!.key, plain, 'case-insensitive');
    assert.equal(
      cache.keyOf(
        query('www.example.com.', 1, { edns: { ...edns, options: [{ code: 10, data: new Uint8Array(8) }] } }),
        false,
      ),
      undefined,
      'EDNS options',
    );
    assert.equal(
      cache.keyOf(query('www.example.com.', 1, { edns: { ...edns, version: 1 } }), false),
      undefined,
      'EDNS version 1',
    );
    assert.equal(cache.keyOf(query('www.example.com.', 1, { opcode: 4 }), false), undefined, 'NOTIFY');
    assert.equal(cache.keyOf(new Uint8Array(11), false), undefined, 'short');
  });

  test('bounded: the oldest entries go first', () => {
    const cache = new ResponseCache(2);
    for (const k of ['a', 'b', 'c']) cache.set(k, new Uint8Array(12), 0, 1);
    assert.equal(cache.size, 2);
    assert.equal(cache.get('a', 0), undefined);
    assert.ok(cache.get('c', 0));
  });
});
