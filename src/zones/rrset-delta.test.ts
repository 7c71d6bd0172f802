import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RRset } from './rrset.ts';
import { PendingDelta } from './rrset-delta.ts';

const a = (owner: string, address: string): RRset => ({
  owner,
  type: 'A',
  ttl: 300,
  rdata: [{ type: 'A', address } as never],
  origin: { kind: 'apex' },
});

describe('PendingDelta', () => {
  test('merges changes per owner and type; the last change of an RRset wins', () => {
    const pending = new PendingDelta();
    assert.equal(pending.add({ upserts: [], deletes: [] }), false, 'an empty delta changes nothing');
    assert.equal(pending.add({ upserts: [a('www.example.com.', '192.0.2.1')], deletes: [] }), true);
    pending.add({ upserts: [a('WWW.example.com.', '192.0.2.2')], deletes: [] });
    pending.add({ upserts: [], deletes: [{ owner: 'old.example.com.', type: 'A' }] });
    assert.equal(pending.size, 2, 'owner names compare case-insensitively');
    const delta = pending.delta();
    assert.deepEqual(
      delta.upserts.map((r) => r.owner),
      ['WWW.example.com.'],
    );
    assert.deepEqual(delta.deletes, [{ owner: 'old.example.com.', type: 'A' }]);
    pending.add({
      upserts: [a('old.example.com.', '192.0.2.3')],
      deletes: [{ owner: 'www.example.com.', type: 'A' }],
    });
    assert.deepEqual(pending.delta().deletes, [{ owner: 'www.example.com.', type: 'A' }]);
    assert.deepEqual(
      pending.delta().upserts.map((r) => r.owner),
      ['old.example.com.'],
    );
    pending.clear();
    assert.equal(pending.size, 0);
  });
});
