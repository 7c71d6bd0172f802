import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { computeZones } from './compute-zones.ts';
import { pairZones, planChanges, planZone } from './zone-plan.ts';

const NOW = new Date(Date.UTC(2026, 2, 4, 12));
const A = (records: string[], ttl?: number) =>
  recordSet('dns', 'www', {
    zoneRef: { name: 'example-com' },
    name: 'www',
    type: 'A',
    records,
    ...(ttl ? { ttl } : {}),
  });
const computed = (...extra: Parameters<typeof computeZones>[0]) =>
  computeZones([
    zoneClass('builtin', ['ns1.example.com.']),
    zone('dns', 'example-com', 'example.com'),
    ...extra,
  ]);

describe('planZone', () => {
  const [before] = computed(A(['192.0.2.1']));
  test('unchanged content keeps the serial it is served at, whatever the known hash', () => {
    const [after] = computed(A(['192.0.2.1']));
    const plan = planZone(
      {
        origin: after!.origin,
        before: { key: before!.key, zone: before!.zone, serial: 2026010105 },
        after: { key: after!.key, zone: after!.zone },
        known: { serial: 2026010105 },
      },
      NOW,
    );
    assert.equal(plan.action, 'unchanged');
    assert.deepEqual(plan.serial, { before: 2026010105, after: 2026010105 });
    assert.equal(planChanges([plan]), false);
  });

  test('a changed RRset gets the next serial; the SOA serial is not a change', () => {
    const [after] = computed(A(['192.0.2.2', '192.0.2.1'], 600));
    const plan = planZone(
      {
        origin: after!.origin,
        before: { key: before!.key, zone: before!.zone, serial: 2026040100 },
        after: { key: after!.key, zone: after!.zone },
        known: { serial: 2026040100, hash: before!.zone.hash },
      },
      NOW,
    );
    assert.equal(plan.action, 'update');
    assert.deepEqual(plan.serial, { before: 2026040100, after: 2026040101 });
    assert.deepEqual(
      plan.change.map((c) => [c.owner, c.type, c.before.ttl, c.after.ttl, c.after.records]),
      [['www.example.com.', 'A', 300, 600, ['192.0.2.1', '192.0.2.2']]],
    );
    assert.deepEqual(plan.add, []);
    assert.deepEqual(plan.delete, []);
    assert.deepEqual(plan.rrsetCount, { before: 3, after: 3 });
  });

  test('created and deleted zones', () => {
    const [after] = computed(A(['192.0.2.1']));
    const created = planZone(
      { origin: after!.origin, after: { key: after!.key, zone: after!.zone }, known: undefined },
      NOW,
    );
    assert.equal(created.action, 'create');
    assert.deepEqual(created.serial, { before: undefined, after: 2026030400 });
    assert.deepEqual(
      created.add.map((r) => `${r.owner} ${r.type}`),
      ['example.com. NS', 'example.com. SOA', 'www.example.com. A'],
    );
    const deleted = planZone(
      {
        origin: before!.origin,
        before: { key: before!.key, zone: before!.zone, serial: 7 },
        known: { serial: 7 },
      },
      NOW,
    );
    assert.equal(deleted.action, 'delete');
    assert.deepEqual(deleted.serial, { before: 7, after: undefined });
    assert.equal(deleted.delete.length, 3);
  });
});

describe('pairZones', () => {
  test('pairs by origin, case-insensitively, in canonical order', () => {
    const pairs = pairZones(
      [{ origin: 'b.example.' }, { origin: 'A.example.' }],
      [{ origin: 'a.example.' }, { origin: 'c.example.' }],
    );
    assert.deepEqual(
      pairs.map((p) => [p.origin, p.before?.origin, p.after?.origin]),
      [
        ['A.example.', 'A.example.', 'a.example.'],
        ['b.example.', 'b.example.', undefined],
        ['c.example.', undefined, 'c.example.'],
      ],
    );
  });
});
