/**
 * `takeChange`: a zone model's first build lists no RRset changes (its content goes to the backend
 * whole and is the first baseline of change safety), and what comes after is listed and measured as
 * before.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSZone, DNSZoneClass } from '../api/index.ts';
import { Catalog } from '../zones/catalog.ts';
import { planHold } from '../zones/change-safety.ts';
import { keptRecords } from '../zones/record-parse.ts';
import { takeChange, ZoneModels } from './zone-state.ts';

const KEY = 'dns/example-com';
const ORIGIN = 'example.com.';

function world(hosts: number) {
  const catalog = new Catalog();
  const theClass = zoneClass();
  const theZone = zone('dns', 'example-com', 'example.com');
  catalog.setClass(theClass);
  catalog.setZone(theZone);
  for (let i = 1; i <= hosts; i++) catalog.setRecord(host(i));
  const models = new ZoneModels();
  return { catalog, theClass, theZone, state: models.modelFor(KEY, theZone, theClass, ORIGIN), models };
}

function host(i: number, value = `192.0.2.${i}`, ttl?: number) {
  return recordSet('dns', `h${i}`, {
    zoneRef: { name: 'example-com' },
    name: `h${i}`,
    type: 'A',
    records: [value],
    ...(ttl !== undefined ? { ttl } : {}),
  });
}

/** The state served: what the backend confirmed (nothing pending, the whole zone sent). */
function served(state: ReturnType<typeof world>['state']) {
  state.pending.clear();
  state.full = false;
}

const measureOf = (state: ReturnType<typeof world>['state']) =>
  state.baseline!.measure(
    ORIGIN,
    (owner, type) => state.model.published(owner, type),
    state.model.defaultTtl,
  );

function side(theZone: DNSZone, theClass: DNSZoneClass, assembled: ReturnType<typeof world>['state']) {
  return { key: KEY, resource: theZone, zoneClass: theClass, zone: assembled.model.assembled() };
}

describe('takeChange', () => {
  test('a first build lists nothing pending; its content is new and is the baseline', () => {
    const { catalog, state } = world(11);
    const taken = takeChange(state, catalog, KEY, undefined, 1_000);
    assert.deepEqual(taken, { fresh: true, changed: true, verdictsChanged: true });
    assert.equal(state.pending.size, 0, 'no RRset of the first build is kept as a change');
    assert.equal(state.full, true, 'the backend gets the whole zone');
    assert.equal(state.lastChangeAt, 1_000);
    assert.equal(state.model.rrsetCount, 12);
    assert.equal(state.baseline?.total, 12);
    assert.equal(state.baseline?.changedSinceBaseline, false);
    // Nothing changed since: still nothing pending, nothing to measure.
    const again = takeChange(state, catalog, KEY, new Set(), 2_000);
    assert.deepEqual(again, { fresh: false, changed: false, verdictsChanged: false });
    assert.equal(state.pending.size, 0);
    assert.equal(state.lastChangeAt, 1_000);
  });

  test('an empty zone: its first build changes nothing', () => {
    const { catalog, state } = world(0);
    const taken = takeChange(state, catalog, KEY, undefined, 1_000);
    assert.deepEqual(taken, { fresh: true, changed: false, verdictsChanged: false });
    assert.equal(state.lastChangeAt, 0);
    assert.equal(state.baseline?.total, 1, 'the apex NS');
  });

  test('a change after the first build is listed and measured against the first content, as a plan measures it', () => {
    const { catalog, theZone, theClass, state } = world(11);
    takeChange(state, catalog, KEY, undefined, 1_000);
    const first = side(theZone, theClass, state);
    const dirty = new Set<string>();
    for (const i of [1, 2, 3, 5]) {
      catalog.deleteRecord(`dns/h${i}`);
      dirty.add(`dns/h${i}`);
    }
    catalog.setRecord(host(4, '198.51.100.4'));
    dirty.add('dns/h4');
    catalog.setRecord(host(12));
    dirty.add('dns/h12');
    const taken = takeChange(state, catalog, KEY, dirty, 2_000);
    assert.deepEqual(taken, { fresh: false, changed: true, verdictsChanged: true });
    assert.equal(state.pending.size, 6);
    const { upserts, deletes } = state.pending.delta();
    assert.deepEqual(upserts.map((r) => r.owner).sort(), ['h12.example.com.', 'h4.example.com.']);
    assert.deepEqual(deletes.map((d) => d.owner).sort(), [
      'h1.example.com.',
      'h2.example.com.',
      'h3.example.com.',
      'h5.example.com.',
    ]);
    assert.equal(state.lastChangeAt, 2_000);
    const measured = measureOf(state);
    assert.deepEqual(measured.counts, { total: 12, deleted: 4, updated: 1, added: 1 });
    // The plan (`zonekeeper plan`) measures the same change from the two contents, whole (and holds
    // it: 4 of 12 deleted is over 30 %).
    const plan = planHold(first, side(theZone, theClass, state));
    assert.equal(plan?.held, true);
    assert.equal(plan?.hash, measured.hash);
    assert.deepEqual(plan?.counts, measured.counts);
  });

  test('a model built again (the zone changed its settings) lists nothing and keeps the baseline, as a plan measures it', () => {
    const { catalog, theClass, theZone, state, models } = world(11);
    takeChange(state, catalog, KEY, undefined, 1_000);
    const first = side(theZone, theClass, state);
    state.pending.clear();
    state.full = false;
    for (const i of [1, 2, 3, 4]) catalog.deleteRecord(`dns/h${i}`);
    const changed: DNSZone = { ...theZone, spec: { ...theZone.spec, ttl: 600 } };
    catalog.setZone(changed);
    const rebuilt = models.modelFor(KEY, changed, theClass, ORIGIN);
    assert.notEqual(rebuilt, state);
    const taken = takeChange(rebuilt, catalog, KEY, new Set(['dns/h1']), 3_000);
    assert.deepEqual(taken, { fresh: true, changed: true, verdictsChanged: true });
    assert.equal(rebuilt.pending.size, 0);
    assert.equal(rebuilt.full, true);
    // The baseline of the model it replaces goes on: the 4 deletions are measured against it (the
    // new TTL alone is the settings' change, not counted), as `zonekeeper plan` measures them.
    assert.equal(rebuilt.baseline, state.baseline);
    assert.equal(rebuilt.rebuiltFrom, undefined);
    const measured = measureOf(rebuilt);
    assert.deepEqual(measured.counts, { total: 12, deleted: 4, updated: 0, added: 0 });
    const plan = planHold(first, side(changed, theClass, rebuilt));
    assert.equal(plan?.held, true);
    assert.equal(plan?.hash, measured.hash);
    assert.deepEqual(plan?.counts, measured.counts);
  });

  test('a held deletion undone after the class default TTL changed is no change: the TTL that follows the default is not counted', () => {
    const { catalog, theClass, theZone, state, models } = world(11);
    takeChange(state, catalog, KEY, undefined, 1_000);
    const first = side(theZone, theClass, state);
    served(state);
    const dirty = new Set<string>();
    for (const i of [1, 2, 3, 4]) {
      catalog.deleteRecord(`dns/h${i}`);
      dirty.add(`dns/h${i}`);
    }
    takeChange(state, catalog, KEY, dirty, 2_000);
    const held = measureOf(state);
    assert.deepEqual(held.counts, { total: 12, deleted: 4, updated: 0, added: 0 });
    // The class's owner changes its default TTL while the deletion is held: the model is rebuilt.
    const longer = zoneClass(undefined, undefined, { defaults: { ttl: 600 } });
    catalog.setClass(longer);
    const rebuilt = models.modelFor(KEY, theZone, longer, ORIGIN);
    takeChange(rebuilt, catalog, KEY, new Set(), 3_000);
    assert.deepEqual(measureOf(rebuilt).counts, held.counts, 'the deletion alone, the new TTL not counted');
    assert.equal(measureOf(rebuilt).hash, held.hash, 'the same change: a confirmation of it still applies');
    // The tenant restores the record sets: they come back at the class's new default TTL.
    for (const i of [1, 2, 3, 4]) catalog.setRecord(host(i));
    takeChange(rebuilt, catalog, KEY, dirty, 4_000);
    assert.equal(rebuilt.model.published('h1.example.com.', 'A')?.ttl, 600);
    assert.deepEqual(measureOf(rebuilt).counts, { total: 12, deleted: 0, updated: 0, added: 0 });
    assert.equal(planHold(first, side(theZone, longer, rebuilt)), undefined, 'nor would a plan hold it');
  });

  test('a TTL set on the record sets themselves still counts, across a rebuild for the default TTL', () => {
    const { catalog, theClass, theZone, state, models } = world(11);
    // h1..h4 carry a TTL of their own, equal to the default at first.
    for (const i of [1, 2, 3, 4]) catalog.setRecord(host(i, undefined, 300));
    takeChange(state, catalog, KEY, undefined, 1_000);
    const first = side(theZone, theClass, state);
    served(state);
    const longer = zoneClass(undefined, undefined, { defaults: { ttl: 600 } });
    catalog.setClass(longer);
    const rebuilt = models.modelFor(KEY, theZone, longer, ORIGIN);
    takeChange(rebuilt, catalog, KEY, new Set(), 2_000);
    // Their own TTL stays: nothing changed for them; the others follow the default, not counted.
    assert.equal(rebuilt.model.published('h1.example.com.', 'A')?.ttl, 300);
    assert.equal(rebuilt.model.published('h5.example.com.', 'A')?.ttl, 600);
    assert.deepEqual(measureOf(rebuilt).counts, { total: 12, deleted: 0, updated: 0, added: 0 });
    // The tenant gives 4 of them another TTL of their own: 4 of 12 changed, over 30 %.
    const dirty = new Set<string>();
    for (const i of [1, 2, 3, 4]) {
      catalog.setRecord(host(i, undefined, 60));
      dirty.add(`dns/h${i}`);
    }
    takeChange(rebuilt, catalog, KEY, dirty, 3_000);
    const measured = measureOf(rebuilt);
    assert.deepEqual(measured.counts, { total: 12, deleted: 0, updated: 4, added: 0 });
    const plan = planHold(first, side(theZone, longer, rebuilt));
    assert.equal(plan?.held, true);
    assert.equal(plan?.hash, measured.hash);
  });

  test('a rebuild moves lastChangeAt only when it changes what change safety counts', () => {
    const { catalog, theClass, theZone, state, models } = world(11);
    takeChange(state, catalog, KEY, undefined, 1_000);
    served(state);
    // SOA fields and a new default TTL: the model is rebuilt, nothing counted changed.
    const soa: DNSZone = { ...theZone, spec: { ...theZone.spec, soa: { refresh: 1234 }, ttl: 900 } };
    catalog.setZone(soa);
    const rebuilt = models.modelFor(KEY, soa, theClass, ORIGIN);
    takeChange(rebuilt, catalog, KEY, new Set(), 20_000);
    assert.equal(rebuilt.lastChangeAt, 1_000, 'the stability window goes on from the last real change');
    assert.equal(rebuilt.baseline?.changedSinceBaseline, false);
    served(rebuilt);
    // Again, with a class of other name servers: the apex NS changes, and that is a change.
    const other = zoneClass(undefined, ['ns1.example.com.', 'ns3.example.com.']);
    catalog.setClass(other);
    const again = models.modelFor(KEY, soa, other, ORIGIN);
    takeChange(again, catalog, KEY, new Set(), 30_000);
    assert.equal(again.lastChangeAt, 30_000);
    assert.equal(again.baseline?.changedSinceBaseline, true);
    // A change noted before the rebuild keeps its time when the rebuild adds nothing.
    served(again);
    catalog.setRecord(host(1, '198.51.100.1'));
    takeChange(again, catalog, KEY, new Set(['dns/h1']), 40_000);
    assert.equal(again.lastChangeAt, 40_000);
    const ttl: DNSZone = { ...soa, spec: { ...soa.spec, ttl: 1200 } };
    catalog.setZone(ttl);
    const third = models.modelFor(KEY, ttl, other, ORIGIN);
    takeChange(third, catalog, KEY, new Set(), 45_000);
    assert.equal(third.lastChangeAt, 40_000);
  });

  test('a TTL of its own equal to the warm standby minimum counts on a record set that is not steered', () => {
    const { catalog, theZone, state } = world(0);
    const short = { ...theZone, spec: { ...theZone.spec, ttl: 60 } };
    catalog.setZone(short);
    for (let i = 1; i <= 11; i++) catalog.setRecord(host(i));
    const models = new ZoneModels();
    const model = models.modelFor(KEY, short, zoneClass(), ORIGIN);
    takeChange(model, catalog, KEY, undefined, 1_000);
    served(model);
    assert.equal(model.model.published('h1.example.com.', 'A')?.ttl, 60);
    const dirty = new Set<string>();
    for (const i of [1, 2, 3, 4]) {
      catalog.setRecord(host(i, undefined, 300));
      dirty.add(`dns/h${i}`);
    }
    takeChange(model, catalog, KEY, dirty, 2_000);
    assert.deepEqual(measureOf(model).counts, { total: 12, deleted: 0, updated: 4, added: 0 });
    assert.equal(state.fresh, true, 'the first state is not used');
  });

  test("modelFor keeps the zone's model while its settings stay, and builds one after a dropped model (prior) carrying its baseline", () => {
    const { catalog, theClass, theZone, state, models } = world(3);
    takeChange(state, catalog, KEY, undefined, 1_000);
    served(state);
    assert.equal(models.modelFor(KEY, theZone, theClass, ORIGIN), state, 'the same settings: the same model');
    const other = new ZoneModels().modelFor(KEY, theZone, theClass, ORIGIN);
    assert.equal(
      models.modelFor(KEY, theZone, theClass, ORIGIN, other),
      state,
      'a prior state given beside a current model with the same settings is not used',
    );
    // The zone moved to another backend: its model was dropped, and the next is built after it.
    models.delete(KEY);
    const moved = models.modelFor(KEY, theZone, theClass, ORIGIN, state);
    assert.notEqual(moved, state, 'a prior state with the same settings is not taken over');
    assert.equal(moved.fresh, true);
    assert.equal(moved.rebuiltFrom?.baseline, state.baseline);
    assert.equal(moved.rebuiltFrom?.model, state.model);
    assert.equal(models.get(KEY), moved);
    assert.equal(models.modelFor(KEY, theZone, theClass, ORIGIN), moved);
    // No model and no prior: a new one with nothing carried.
    models.delete(KEY);
    const fresh = models.modelFor(KEY, theZone, theClass, ORIGIN);
    assert.notEqual(fresh, moved);
    assert.equal(fresh.rebuiltFrom, undefined);
  });

  test('a first build leaves its values out of the parse cache; a model built again takes them from the one it replaces', () => {
    const { catalog, theClass, theZone, state, models } = world(3);
    takeChange(state, catalog, KEY, undefined, 1_000);
    const values = (model: typeof state.model) =>
      [1, 2, 3].map((i) => model.published(`h${i}.example.com.`, 'A')?.rdata);
    const first = values(state.model);
    assert.deepEqual(first[0], [{ type: 'A', address: '192.0.2.1' }]);
    // Not cached: a parse of the same record set now is a parse of its own.
    const h2 = catalog.zoneMembers(KEY).find((m) => m.key === 'dns/h2')!.current!.recordSet;
    const again = keptRecords(h2, ORIGIN, false);
    assert.deepEqual(again, first[1]);
    assert.notEqual(again, first[1]);
    // The zone's settings change, one record set too: the model built again holds the very values
    // of the two unchanged record sets (not parsed again), and a value of its own for the third.
    catalog.setRecord(host(3, '192.0.2.33'));
    const changed: DNSZone = { ...theZone, spec: { ...theZone.spec, ttl: 600 } };
    catalog.setZone(changed);
    const rebuilt = models.modelFor(KEY, changed, theClass, ORIGIN);
    takeChange(rebuilt, catalog, KEY, new Set(['dns/h3']), 2_000);
    const after = values(rebuilt.model);
    assert.equal(after[0], first[0]);
    assert.equal(after[1], first[1]);
    assert.deepEqual(after[2], [{ type: 'A', address: '192.0.2.33' }]);
    // Built again before its first update: it takes them from the model the one replaced held.
    const twice: DNSZone = { ...theZone, spec: { ...theZone.spec, ttl: 900 } };
    catalog.setZone(twice);
    const third = models.modelFor(KEY, twice, theClass, ORIGIN);
    const fourth = models.modelFor(KEY, { ...twice, spec: { ...twice.spec, ttl: 901 } }, theClass, ORIGIN);
    assert.notEqual(third, fourth);
    catalog.setZone({ ...twice, spec: { ...twice.spec, ttl: 901 } });
    takeChange(fourth, catalog, KEY, undefined, 3_000);
    assert.deepEqual(values(fourth.model), after);
    assert.equal(values(fourth.model)[0], first[0]);
  });
});
