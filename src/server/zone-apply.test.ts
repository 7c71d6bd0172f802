import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printRdata } from '../dns/rdata.ts';
import type { RRsetData } from '../zones/rrset.ts';
import { ZoneImageBuilder } from './image/image-builder.ts';
import { ImageZone } from './image/image-zone.ts';
import { ZoneImage } from './image/zone-image.ts';
import type { JournalEntry } from './transfer/journal.ts';
import { ZoneApplier } from './zone-apply.ts';
import type { ZonePatch } from './zone-snapshot.ts';
import { ZoneSnapshot } from './zone-snapshot.ts';
import { type ServedZone, ZoneTable } from './zone-table.ts';

const ORIGIN = 'patch.test.';
const SOA = {
  ttl: 300,
  mname: 'ns1.patch.test.',
  rname: 'h.patch.test.',
  refresh: 1,
  retry: 1,
  expire: 1,
  minimum: 60,
};
const TRANSFERS = { allowFrom: ['127.0.0.1'], requireTsig: false, keys: [], notify: [], journalSize: 10 };
const a = (owner: string, ...addresses: string[]): RRsetData => ({
  owner: `${owner}.${ORIGIN}`,
  type: 'A',
  ttl: 300,
  rdata: addresses.map((address) => ({ type: 'A' as const, address })),
});
const txt = (owner: string, text: string): RRsetData => ({
  owner: `${owner}.${ORIGIN}`,
  type: 'TXT',
  ttl: 60,
  rdata: [{ type: 'TXT', strings: [text] }],
});

/**
 * A zone's content before a patch, the patch, and the content after it, made anew for each test: a
 * changed record set, a deleted one, a new one, one deleted and upserted again, one unchanged.
 */
function patchCase(): { base: RRsetData[]; patch: ZonePatch; after: RRsetData[] } {
  return {
    base: [
      a('www', '192.0.2.1', '192.0.2.2'),
      a('api', '192.0.2.3'),
      txt('note', 'old'),
      a('gone', '192.0.2.9'),
    ],
    patch: {
      upserts: [a('www', '192.0.2.2', '192.0.2.4'), a('new', '198.51.100.1'), txt('note', 'new')],
      deletes: [
        { owner: `gone.${ORIGIN}`, type: 'A' },
        { owner: `note.${ORIGIN}`, type: 'TXT' },
      ],
    },
    after: [
      a('www', '192.0.2.2', '192.0.2.4'),
      a('api', '192.0.2.3'),
      txt('note', 'new'),
      a('new', '198.51.100.1'),
    ],
  };
}

/** A journal entry as text, record by record, in a stable order. */
function printed(entry: JournalEntry | undefined): { removed: string[]; added: string[] } {
  const lines = (rrsets: JournalEntry['removed']) =>
    rrsets.flatMap((r) => r.rdata.map((d) => `${r.owner} ${r.ttl} ${r.type} ${printRdata(d)}`)).sort();
  return { removed: lines(entry?.removed ?? []), added: lines(entry?.added ?? []) };
}

/** What a zone serves by transfer, as text in a stable order. */
const zoneText = (z: ServedZone) =>
  printed({ from: 0, to: 0, removed: [], added: [...z.transferRRsets()] }).added.join('\n');

test('a patch to a zone held as an image journals what the same patch to its objects journals (ADR 0020 step 4)', () => {
  const { base, patch, after } = patchCase();

  const objects = new ZoneTable<ServedZone>();
  new ZoneApplier(objects).replace(ORIGIN, SOA, 1, base, TRANSFERS);
  assert.ok(new ZoneApplier(objects).patch(ORIGIN, SOA, 2, 1, patch, TRANSFERS));
  const reference = (objects.get(ORIGIN) as ZoneSnapshot).journal.since(1)?.[0];

  const images = new ZoneTable<ServedZone>();
  const builder = new ZoneImageBuilder({ shared: true });
  const applier = new ZoneApplier(images, { images: builder });
  applier.replace(ORIGIN, SOA, 1, base, TRANSFERS);
  const snapshot = images.get(ORIGIN) as ZoneSnapshot;
  const first = builder.merge(snapshot);
  images.set(new ImageZone(first.image, snapshot.transfers, snapshot.journal));
  // Not patched in place: an image is immutable.
  assert.equal(applier.patch(ORIGIN, SOA, 2, 1, patch, TRANSFERS), false);
  assert.equal(
    applier.patchImage(ORIGIN, SOA, 2, 0, patch, () => after, TRANSFERS),
    false,
    'not at the base serial',
  );
  assert.equal(
    new ZoneApplier(images).patchImage(ORIGIN, SOA, 2, 1, patch, () => after, TRANSFERS),
    false,
    'no image builder',
  );
  assert.ok(applier.patchImage(ORIGIN, SOA, 2, 1, patch, () => after, TRANSFERS));
  const held = images.get(ORIGIN);
  assert.ok(held instanceof ImageZone);
  assert.equal(held.serial, 2);
  // An overlay of the changed names over the same base (ADR 0020 step 5), shared with the threads.
  assert.equal(held.image, first.image);
  assert.ok(held.overlay !== undefined && held.overlay.buffer instanceof SharedArrayBuffer);
  const entry = held.journal.since(1)?.[0];
  assert.deepEqual(printed(entry), printed(reference));
  assert.ok(printed(entry).removed.length > 0 && printed(entry).added.length > 0);
  assert.equal(zoneText(held), zoneText(objects.get(ORIGIN)!));

  // A name added below a name that does not exist makes it an empty non-terminal; removing it ends it.
  const deep = a('x.y', '203.0.113.1');
  assert.ok(
    applier.patchImage(
      ORIGIN,
      SOA,
      3,
      2,
      { upserts: [deep], deletes: [] },
      () => [...after, deep],
      TRANSFERS,
    ),
  );
  const three = images.get(ORIGIN) as ImageZone;
  assert.equal(three.isEmptyNonTerminal(`y.${ORIGIN}`), true);
  assert.equal(three.node(`x.y.${ORIGIN}`)?.rrsets.size, 1);
  assert.ok(
    applier.patchImage(
      ORIGIN,
      SOA,
      4,
      3,
      { upserts: [], deletes: [{ owner: `x.y.${ORIGIN}`, type: 'A' }] },
      () => after,
      TRANSFERS,
    ),
  );
  const four = images.get(ORIGIN) as ImageZone;
  assert.equal(four.isEmptyNonTerminal(`y.${ORIGIN}`), false);
  assert.equal(four.node(`x.y.${ORIGIN}`), undefined);
  assert.equal(zoneText(four), zoneText(objects.get(ORIGIN)!));
  assert.equal(four.journal.since(1)?.length, 3);
});

test('a zone held as an image is made into objects from the content after a patch, reading only the patched RRsets from the image', () => {
  const { base, patch, after } = patchCase();
  const table = new ZoneTable<ServedZone>();
  const applier = new ZoneApplier(table);
  table.set(new ImageZone(ZoneImage.build(ORIGIN, SOA, 1, base, { shared: true }), undefined));
  applier.unpackBefore(ORIGIN, patch, after);
  const before = table.get(ORIGIN);
  assert.ok(before instanceof ZoneSnapshot);
  assert.equal(before.serial, 1);
  // The objects are the zone before the patch, as the image held it.
  assert.equal(zoneText(before), zoneText(ZoneSnapshot.build(ORIGIN, SOA, 1, base)));
  assert.ok(applier.patch(ORIGIN, SOA, 2, 1, patch, undefined));
  assert.equal(zoneText(table.get(ORIGIN)!), zoneText(ZoneSnapshot.build(ORIGIN, SOA, 2, after)));
});

test('an image that cannot be served (its overlay over another base) leaves the served zone and its journal as they were', () => {
  const { base, patch, after } = patchCase();
  /** A table serving the zone as an image at serial 1, and its builder. */
  const served = () => {
    const table = new ZoneTable<ServedZone>();
    const builder = new ZoneImageBuilder({ shared: true });
    const applier = new ZoneApplier(table, { images: builder });
    applier.replace(ORIGIN, SOA, 1, base, TRANSFERS);
    const snapshot = table.get(ORIGIN) as ZoneSnapshot;
    table.set(new ImageZone(builder.merge(snapshot).image, snapshot.transfers, snapshot.journal));
    return { table, applier };
  };
  const here = served();
  const before = here.table.get(ORIGIN) as ImageZone;
  // Serial 2 as an overlay over another base than the one served here (another builder's).
  const elsewhere = served();
  assert.ok(elsewhere.applier.patchImage(ORIGIN, SOA, 2, 1, patch, () => after, TRANSFERS));
  const other = elsewhere.table.get(ORIGIN) as ImageZone;
  const changes = other.journal.since(1)!;
  assert.equal(changes.length, 1);
  assert.throws(
    () => here.applier.replaceImage(before.image.buffer, TRANSFERS, changes, other.overlay!.buffer),
    /not one over this base/,
  );
  assert.equal(here.table.get(ORIGIN), before, 'the zone served is unchanged');
  assert.equal(before.serial, 1);
  // Nothing appended: its journal (empty at serial 1) does not end at serial 2, which it does not serve.
  assert.equal(before.journal.length, 0, 'the journal is as it was');
});
