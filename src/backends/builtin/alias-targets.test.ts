import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ZoneTable } from '../../server/zone-table.ts';
import type { RRset } from '../../zones/rrset.ts';
import type { ProgrammedZone } from '../backend.ts';
import { BuiltinBackend } from './builtin-backend.ts';

const SOA = {
  ttl: 300,
  mname: 'ns1.example.org.',
  rname: 'h.example.org.',
  refresh: 1,
  retry: 1,
  expire: 1,
  minimum: 60,
};

function alias(owner: string, target: string, name = owner.split('.')[0]!): RRset {
  return {
    owner,
    type: 'ALIAS',
    ttl: 300,
    rdata: [{ type: 'ALIAS', target }],
    origin: { kind: 'recordSet', namespace: 'dns', name },
  };
}

function zone(key: string, origin: string, serial: number, rrsets: RRset[], delta?: ProgrammedZone['delta']) {
  return { key, origin, soa: SOA, serial, rrsets: () => rrsets, ...(delta ? { delta } : {}) };
}

test('the built-in backend reports ALIAS record sets whose target is outside the zones it serves, and rechecks them as zones come and go', async () => {
  const rechecked: string[] = [];
  const backend = new BuiltinBackend(new ZoneTable(), undefined, {
    aliasCheck: { recheck: (key) => rechecked.push(key) },
  });
  const org = [
    alias('example.org.', 'edge.cdn.example.net.', 'apex'),
    alias('app.example.org.', 'www.example.org.'),
  ];
  const first = await backend.applyZone(zone('dns/org', 'example.org.', 1, org));
  assert.deepEqual(
    first?.problems?.map((p) => [p.owner, p.reason, p.origin]),
    [['example.org.', 'AliasTargetUnresolvable', { kind: 'recordSet', namespace: 'dns', name: 'apex' }]],
  );
  // The target's zone appears: the ALIAS zone is handed back for a recheck, which finds nothing wrong.
  await backend.applyZone(zone('dns/cdn', 'cdn.example.net.', 1, []));
  assert.deepEqual(rechecked, ['dns/org']);
  assert.equal(await backend.applyZone(zone('dns/org', 'example.org.', 1, org)), undefined);
  // A zone above the target that is not served does not matter; a patch moving the ALIAS does.
  const moved = await backend.applyZone(
    zone('dns/org', 'example.org.', 2, [], {
      fromSerial: 1,
      upserts: [alias('example.org.', 'lb.example.com.', 'apex')],
      deletes: [],
    }),
  );
  assert.match(moved?.problems?.[0]?.message ?? '', /lb\.example\.com\..*--alias-resolver/);
  const removed = await backend.applyZone(
    zone('dns/org', 'example.org.', 3, [], {
      fromSerial: 2,
      upserts: [],
      deletes: [{ owner: 'example.org.', type: 'ALIAS' }],
    }),
  );
  assert.equal(removed, undefined, 'the ALIAS was deleted');
  // Pointing back at cdn.example.net and then deleting that zone: rechecked, and reported again.
  await backend.applyZone(
    zone('dns/org', 'example.org.', 4, [], {
      fromSerial: 3,
      upserts: [alias('example.org.', 'edge.cdn.example.net.', 'apex')],
      deletes: [],
    }),
  );
  rechecked.length = 0;
  await backend.deleteZone('cdn.example.net.');
  assert.deepEqual(rechecked, ['dns/org']);
  assert.equal((await backend.applyZone(zone('dns/org', 'example.org.', 4, [])))?.problems?.length, 1);
});

test('without the check (the operator’s stand-in table), nothing is reported', async () => {
  const backend = new BuiltinBackend(new ZoneTable());
  const result = await backend.applyZone(
    zone('dns/org', 'example.org.', 1, [alias('example.org.', 'x.example.net.')]),
  );
  assert.equal(result, undefined);
});
