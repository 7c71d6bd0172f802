import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { CatalogFeed } from '../zones/catalog-feed.ts';
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
