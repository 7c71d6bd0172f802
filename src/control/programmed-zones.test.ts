import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { CatalogFeed } from '../zones/catalog-feed.ts';
import { Holder } from '../zones/record-table.ts';
import { ProgrammedZones } from './programmed-zones.ts';

describe('the feed and what was programmed on the catalog table', () => {
  const www = () =>
    recordSet('dns', 'www', {
      zoneRef: { name: 'example-com' },
      name: 'www',
      type: 'A',
      records: ['192.0.2.1'],
    });

  test('a record set deleted and created again under its key is fed again, not skipped as seen', () => {
    const feed = new CatalogFeed();
    feed.load([zoneClass(), zone('dns', 'example-com', 'example.com')]);
    assert.ok(feed.upsert(www()));
    assert.equal(feed.upsert(www()), undefined, 'the same generation again: seen');
    feed.delete('DNSRecordSet', 'dns/www');
    assert.equal(feed.catalog.table.size, 0, 'nothing holds the slot');
    assert.ok(feed.upsert(www()), 'created again with generation 1: fed');
    assert.equal(feed.catalog.recordResolution('dns/www')?.resolved, true);
  });

  test('a deleting record set keeps its slot for the feed and the programmed zone until they let go', () => {
    const feed = new CatalogFeed();
    const programmed = new ProgrammedZones(feed.catalog);
    feed.load([zoneClass(), zone('dns', 'example-com', 'example.com'), www()]);
    const accepted = new Map([['dns/www', { accepted: true as const, fqdn: 'www.example.com.' }]]);
    // biome-ignore lint/suspicious/noExplicitAny: a verdict of the shape served() reads
    programmed.served('dns/example-com', accepted as any, ['dns/www']);
    assert.ok(programmed.serves('dns/www'));
    const w = www();
    feed.upsert({ ...w, metadata: { ...w.metadata, deletionTimestamp: '2026-01-02T00:00:00Z' } });
    assert.equal(feed.catalog.records.get('dns/www'), undefined, 'left the catalog');
    assert.ok(programmed.serves('dns/www'), 'still served: its finalizer is held');
    // Another record set takes a new slot meanwhile, not the one still held.
    feed.upsert(
      recordSet('dns', 'other', {
        zoneRef: { name: 'example-com' },
        name: 'o',
        type: 'A',
        records: ['192.0.2.2'],
      }),
    );
    assert.notEqual(feed.catalog.table.slotOf('dns/other'), feed.catalog.table.slotOf('dns/www'));
    assert.deepEqual(programmed.served('dns/example-com', new Map(), ['dns/www']), ['dns/www']);
    assert.ok(!programmed.serves('dns/www'));
    feed.delete('DNSRecordSet', 'dns/www');
    assert.equal(feed.catalog.table.slotOf('dns/www'), -1, 'freed once the last holder let go');
    assert.ok(programmed.serves('dns/other') === false);
  });

  test('every verdict of a first build, with slots right, stale, misplaced or missing, as served() notes them', () => {
    const rs = (name: string) =>
      recordSet('dns', name, { zoneRef: { name: 'example-com' }, name, type: 'A', records: ['192.0.2.1'] });
    const names = ['a', 'b', 'c', 'd', 'e'];
    const accepted = new Set(['a', 'c', 'd', 'e']);
    const verdicts = (each: (key: string, accepted: boolean) => void) => {
      for (const n of names) each(`dns/${n}`, accepted.has(n));
    };
    const run = (slotsOf: (table: CatalogFeed['catalog']['table']) => number[] | undefined) => {
      const feed = new CatalogFeed();
      const programmed = new ProgrammedZones(feed.catalog);
      feed.load([zoneClass(), zone('dns', 'example-com', 'example.com'), ...names.map(rs)]);
      const table = feed.catalog.table;
      // 'b' served by the zone before: rejected now, so released.
      programmed.served(
        'dns/example-com',
        new Map([['dns/b', { accepted: true as const, fqdn: 'b.example.com.' }]]),
        ['dns/b'],
      );
      const slots = slotsOf(table);
      const released = programmed.servedAll('dns/example-com', { eachVerdict: verdicts }, slots);
      return {
        released,
        serves: names.map((n) => programmed.serves(`dns/${n}`)),
        held: names.map((n) => table.held(table.slotOf(`dns/${n}`), Holder.programmed)),
      };
    };
    const expected = run(() => undefined);
    assert.deepEqual(expected.released, ['dns/b']);
    assert.deepEqual(expected.serves, [true, false, true, true, true]);
    const right = (table: CatalogFeed['catalog']['table']) => names.map((n) => table.slotOf(`dns/${n}`));
    assert.deepEqual(run(right), expected, 'the slots of the keys');
    assert.deepEqual(
      run((t) => right(t).reverse()),
      expected,
      'misplaced: each looked up',
    );
    assert.deepEqual(
      run((t) => right(t).slice(0, 2)),
      expected,
      'too few',
    );
    assert.deepEqual(
      run(() => [-1, 99, 1_000_000, 0, 3]),
      expected,
      'out of range, another key, none',
    );
    // The slot of another key (as after the key's slot was freed and taken again) is not the key's.
    assert.deepEqual(
      run((t) => {
        const slots = right(t);
        const other = t.hold('dns/x', Holder.status);
        slots[0] = other;
        return slots;
      }),
      expected,
      'a slot of another key',
    );
  });

  test('deleted record sets wait for their zone to be settled in this process, and only until then', () => {
    const feed = new CatalogFeed();
    const programmed = new ProgrammedZones(feed.catalog);
    assert.equal(programmed.holdsDeleted('dns/a', 'dns/example-com'), true);
    assert.equal(programmed.holdsDeleted('dns/b', 'dns/example-com'), true);
    assert.equal(programmed.holdsDeleted('dns/a', 'dns/example-com'), true, 'noted once');
    assert.deepEqual(programmed.settled('dns/other'), []);
    assert.deepEqual(programmed.settled('dns/example-com'), ['dns/a', 'dns/b']);
    assert.deepEqual(programmed.settled('dns/example-com'), [], 'handed back once');
    assert.equal(programmed.holdsDeleted('dns/c', 'dns/example-com'), false, 'settled: not held');
    programmed.forgetZone('dns/example-com');
    assert.equal(programmed.holdsDeleted('dns/c', 'dns/example-com'), true, 'a zone made again waits again');
  });
});
