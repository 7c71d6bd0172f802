import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { CatalogFeed, ZoneChanges } from './catalog-feed.ts';
import { Holder } from './record-table.ts';

const www = () =>
  recordSet('dns', 'www', {
    zoneRef: { name: 'example-com' },
    name: 'www',
    type: 'A',
    records: ['192.0.2.1'],
  });

describe('CatalogFeed', () => {
  test('loads every kind in one judgement and reports the zones and record sets affected', () => {
    const feed = new CatalogFeed();
    // Listed out of order: the kinds are dispatched, not taken by position.
    const affected = feed.load([www(), zone('dns', 'example-com', 'example.com'), zoneClass()]);
    assert.ok(feed.catalog.zoneVerdict('dns/example-com')?.accepted);
    assert.ok(affected.zones.has('dns/example-com'));
    assert.deepEqual([...(affected.recordsByZone.get('dns/example-com') ?? [])], ['dns/www']);
  });

  test('a first look with zonesOnly resolves the same, keeps the keys given and lists only the zones', () => {
    const objects = () => [
      www(),
      recordSet('dns', 'mail', {
        zoneRef: { name: 'example-com' },
        name: 'mail',
        type: 'A',
        records: ['192.0.2.2'],
      }),
      recordSet('dns', 'lost', { name: 'x.example.org.', type: 'A', records: ['192.0.2.3'] }),
      zone('dns', 'example-com', 'example.com'),
      zoneClass(),
    ];
    const full = new CatalogFeed();
    const all = full.load(objects());
    const lean = new CatalogFeed();
    const list = objects();
    const keys = list.map((o) =>
      o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name,
    );
    const affected = lean.load(list, { keys, zonesOnly: true });
    assert.deepEqual([...affected.zones], [...all.zones]);
    assert.equal(affected.records.size, 0);
    assert.equal(affected.recordsByZone.size, 0);
    for (const key of ['dns/www', 'dns/mail', 'dns/lost'])
      assert.deepEqual(lean.catalog.recordResolution(key), full.catalog.recordResolution(key));
    assert.deepEqual(
      lean.catalog.zoneMembers('dns/example-com'),
      full.catalog.zoneMembers('dns/example-com'),
    );
    // The key strings given are the ones kept.
    assert.equal(
      [...lean.catalog.records.keys()].find((k) => k === 'dns/www'),
      keys[0],
    );
    // Afterwards it follows changes as a full load does.
    const changed = { ...www(), metadata: { ...www().metadata, generation: 2 } };
    assert.ok(lean.upsert(changed)?.recordsByZone.get('dns/example-com')?.has('dns/www'));
    assert.equal(lean.upsert(changed), undefined);
  });

  test('a first look takes the slots given where they hold the key, and looks the key up where not', () => {
    const mail = recordSet('dns', 'mail', {
      zoneRef: { name: 'example-com' },
      name: 'mail',
      type: 'A',
      records: ['192.0.2.2'],
    });
    const feed = new CatalogFeed();
    const table = feed.catalog.table;
    // Slots another holder (a store) holds: `www`'s given right, `mail`'s given as `www`'s.
    const wwwSlot = table.hold('dns/www', Holder.store);
    const mailSlot = table.hold('dns/mail', Holder.store);
    const objects = [zoneClass(), zone('dns', 'example-com', 'example.com'), www(), mail];
    feed.load(objects, {
      keys: ['builtin', 'dns/example-com', 'dns/www', 'dns/mail'],
      slots: [-1, -1, wwwSlot, wwwSlot],
      zonesOnly: true,
    });
    assert.equal(table.size, 2);
    for (const [key, slot] of [
      ['dns/www', wwwSlot],
      ['dns/mail', mailSlot],
    ] as const) {
      assert.equal(table.slotOf(key), slot);
      assert.ok(table.held(slot, Holder.feed) && table.held(slot, Holder.catalog), key);
      assert.equal(feed.catalog.recordResolution(key)?.resolved, true, key);
    }
  });

  test('leaves out objects being deleted', () => {
    const feed = new CatalogFeed();
    const deleting = { ...www(), metadata: { ...www().metadata, deletionTimestamp: '2026-01-02T00:00:00Z' } };
    feed.load([zoneClass(), zone('dns', 'example-com', 'example.com'), deleting]);
    assert.equal(feed.catalog.recordResolution('dns/www'), undefined);
  });

  test('skips status-only changes; a new generation or a started deletion goes through', () => {
    const feed = new CatalogFeed();
    feed.load([zoneClass(), zone('dns', 'example-com', 'example.com')]);
    assert.ok(feed.upsert(www()), 'a new record set');
    assert.equal(feed.upsert({ ...www(), status: { observedGeneration: 1, conditions: [] } }), undefined);
    const changed = { ...www(), metadata: { ...www().metadata, generation: 2 } };
    assert.ok(feed.upsert(changed)?.recordsByZone.get('dns/example-com')?.has('dns/www'));
    const deleting = {
      ...changed,
      metadata: { ...changed.metadata, deletionTimestamp: '2026-01-02T00:00:00Z' },
    };
    assert.ok(feed.upsert(deleting));
    assert.equal(feed.catalog.recordResolution('dns/www'), undefined, 'a deleting object leaves the catalog');
  });

  test('a status-only change of a record set with the same spec object replaces the version held', () => {
    const feed = new CatalogFeed();
    feed.load([zoneClass(), zone('dns', 'example-com', 'example.com')]);
    const first = www();
    feed.upsert(first);
    // As the store makes a status write: a new object and metadata, the same spec object.
    const written = {
      ...first,
      metadata: { ...first.metadata },
      status: { observedGeneration: 1, conditions: [] },
    };
    assert.equal(feed.upsert(written), undefined, 'nothing the catalog decides changed');
    assert.equal(feed.catalog.records.get('dns/www'), written, 'the old version is not kept alive');
    // An equal spec in another object (a watch event parsed anew) goes through setRecord only on a
    // new generation: the version held stays.
    const reparsed = { ...written, spec: { ...written.spec } };
    assert.equal(feed.upsert(reparsed), undefined);
    assert.equal(feed.catalog.records.get('dns/www'), written);
  });

  test('a delete removes the object and forgets it, so the same object coming back is fed again', () => {
    const feed = new CatalogFeed();
    feed.load([zoneClass(), zone('dns', 'example-com', 'example.com'), www()]);
    assert.ok(feed.delete('DNSRecordSet', 'dns/www').recordsByZone.get('dns/example-com')?.has('dns/www'));
    assert.ok(feed.upsert(www()), 'fed again after the delete');
    assert.ok(feed.catalog.recordResolution('dns/www')?.resolved);
    feed.delete('DNSZone', 'dns/example-com');
    assert.equal(feed.catalog.zoneVerdict('dns/example-com'), undefined);
  });

  test('a record set whose slot another holder keeps across its delete is fed again when it comes back', () => {
    const feed = new CatalogFeed();
    feed.load([zoneClass(), zone('dns', 'example-com', 'example.com'), www()]);
    const table = feed.catalog.table;
    // What a backend programmed keeps the slot after the store's delete.
    const slot = table.hold('dns/www', Holder.programmed);
    feed.delete('DNSRecordSet', 'dns/www');
    assert.equal(table.slotOf('dns/www'), slot, 'the slot is still assigned');
    const back = feed.upsert(www());
    assert.ok(back?.recordsByZone.get('dns/example-com')?.has('dns/www'), 'the same generation is fed again');
    assert.ok(feed.catalog.recordResolution('dns/www')?.resolved);
    assert.equal(feed.upsert(www()), undefined, 'and then skipped as before');
  });

  test('status-only changes of a record set being deleted change nothing and bring nothing back', () => {
    const feed = new CatalogFeed();
    feed.load([zoneClass(), zone('dns', 'example-com', 'example.com'), www()]);
    const deleting = {
      ...www(),
      metadata: { ...www().metadata, deletionTimestamp: '2026-01-02T00:00:00Z', finalizers: ['a', 'b'] },
    };
    assert.ok(feed.upsert(deleting));
    const lessFinalizers = { ...deleting, metadata: { ...deleting.metadata, finalizers: ['a'] } };
    assert.equal(feed.upsert(lessFinalizers), undefined);
    assert.equal(feed.catalog.recordResolution('dns/www'), undefined);
    assert.equal(feed.catalog.records.get('dns/www'), undefined);
  });
});

describe('ZoneChanges', () => {
  test('collects record sets per zone until taken; touch marks a visit without record sets', () => {
    const changes = new ZoneChanges();
    assert.equal(changes.take('dns/a'), undefined, 'nothing noted: the consumer looks at everything');
    changes.note({
      zones: new Set(),
      records: new Set(),
      recordsByZone: new Map([['dns/a', new Set(['dns/x'])]]),
    });
    changes.note({
      zones: new Set(),
      records: new Set(),
      recordsByZone: new Map([['dns/a', new Set(['dns/y'])]]),
    });
    assert.deepEqual([...(changes.take('dns/a') ?? [])], ['dns/x', 'dns/y']);
    assert.equal(changes.take('dns/a'), undefined);
    changes.touch('dns/b');
    assert.equal(changes.take('dns/b')?.size, 0);
    changes.touch('dns/c');
    changes.forget('dns/c');
    assert.equal(changes.take('dns/c'), undefined);
  });
});
