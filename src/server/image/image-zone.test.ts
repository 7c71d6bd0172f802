/**
 * Differential tests of answering from zone images (ADR 0020 step 3): the same questions asked of a
 * `QueryHandler` over `ZoneSnapshot`s and of one over `ImageZone`s built from the same content must
 * get the same response bytes, over the image test zones and over the zones of the Knot differential
 * suite (test/support/differential-zones.ts). The query fuzz suite does the same over its own zone
 * (query.fuzz.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { manifests } from '../../../test/support/differential-zones.ts';
import { ixfrRequest } from '../../../test/support/dns-fuzz.ts';
import {
  compareAnswers,
  IMAGE_TEST_SOA,
  IMAGE_TEST_ZONES,
  questionNames,
} from '../../../test/support/image-zones.ts';
import { type Resource, validateResource } from '../../api/index.ts';
import type { Name } from '../../dns/name.ts';
import { printRdata } from '../../dns/rdata.ts';
import { computeZones } from '../../zones/compute-zones.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import type { SoaFields } from '../../zones/soa.ts';
import { TransferHandler } from '../transfer/transfer-handler.ts';
import { TransferPolicy } from '../transfer/transfer-policy.ts';
import { ZoneApplier } from '../zone-apply.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { type ServedZone, ZoneTable } from '../zone-table.ts';
import { DECODED_NODE_LIMIT, decodedNodeCount, ImageZone } from './image-zone.ts';
import { ZoneImage } from './zone-image.ts';

interface ZoneContent {
  origin: Name;
  soa: SoaFields;
  rrsets: readonly RRsetData[];
}

const SERIAL = 2026112601;

function tables(zones: readonly ZoneContent[]): { snapshots: ZoneTable; images: ZoneTable<ServedZone> } {
  const snapshots = new ZoneTable();
  const images = new ZoneTable<ServedZone>();
  const applier = new ZoneApplier(images);
  for (const { origin, soa, rrsets } of zones) {
    snapshots.set(ZoneSnapshot.build(origin, soa, SERIAL, rrsets));
    // As a DNS worker receives it: a plain ArrayBuffer, read back by ZoneImage.from.
    const built = ZoneImage.build(origin, soa, SERIAL, rrsets);
    applier.replaceImage(built.buffer.slice(0) as ArrayBuffer, undefined);
  }
  return { snapshots, images };
}

async function compare(zones: readonly ZoneContent[], extra: readonly string[] = []): Promise<number> {
  const { snapshots, images } = tables(zones);
  return compareAnswers(snapshots, images, questionNames(zones, extra));
}

test('zone images answer the image test zones with the same bytes as ZoneSnapshots', async () => {
  const zones = IMAGE_TEST_ZONES.map((z) => ({ ...z, soa: IMAGE_TEST_SOA }));
  const compared = await compare(zones, [
    'WWW.EXAMPLE.ORG.',
    'anything.wild.example.org.',
    'example.com.',
    '.',
  ]);
  assert.ok(compared > 10_000, `${compared} questions`);
});

test('zone images answer the Knot differential zones with the same bytes as ZoneSnapshots', async () => {
  const resources: Resource[] = [];
  for (const doc of manifests()) {
    const result = validateResource(doc);
    assert.ok(result.ok, JSON.stringify(result));
    resources.push(result.resource);
  }
  const zones = computeZones(resources).map(({ zone }) => zone);
  assert.equal(zones.length, 5);
  const compared = await compare(zones, ['www.outside.test.', 'com.', '.']);
  assert.ok(compared > 20_000, `${compared} questions`);
});

test('an image zone transfers the same records as the ZoneSnapshot of the same content', () => {
  const { snapshots, images } = tables(IMAGE_TEST_ZONES.map((z) => ({ ...z, soa: IMAGE_TEST_SOA })));
  const lines = (zone: ServedZone) =>
    [...zone.transferRRsets()]
      .flatMap((s) => s.rdata.map((r) => `${s.owner.toLowerCase()} ${s.ttl} ${s.type} ${printRdata(r)}`))
      .sort();
  for (const snapshot of snapshots.all()) {
    const image = images.get(snapshot.origin)!;
    assert.ok(image instanceof ImageZone);
    assert.deepEqual(lines(image), lines(snapshot));
    assert.equal(image.recordCount, snapshot.recordCount);
    assert.equal(image.serial, snapshot.serial);
  }
});

test('decoded nodes stay within their bound however many names are asked for, and go with their zone', () => {
  const origin = 'many.example.';
  const rrsets: RRsetData[] = Array.from({ length: DECODED_NODE_LIMIT + 500 }, (_, i) => ({
    owner: `h${i}.${origin}`,
    type: 'A',
    ttl: 60,
    rdata: [{ type: 'A', address: `10.0.${i >> 8}.${i & 255}` }],
  }));
  const { images } = tables([{ origin, soa: IMAGE_TEST_SOA, rrsets }]);
  const zone = images.get(origin)!;
  for (let i = 0; i < rrsets.length; i++) {
    assert.ok(zone.node(`h${i}.${origin}`), `h${i}`);
    assert.ok(decodedNodeCount() <= DECODED_NODE_LIMIT, `${decodedNodeCount()} after ${i + 1}`);
  }
  // Names that do not exist are never kept.
  const before = decodedNodeCount();
  for (let i = 0; i < 1000; i++) assert.equal(zone.node(`missing${i}.${origin}`), undefined);
  assert.equal(decodedNodeCount(), before);
  images.delete(origin);
  assert.ok(decodedNodeCount() < before, 'a zone no longer served lets go of what it decoded');
});

test('IXFR from image zones: the journal sent with each image answers as the primary does', () => {
  const resolved = { allowFrom: ['127.0.0.0/8'], requireTsig: false, keys: [], notify: [], journalSize: 8 };
  const origin = 'example.org.';
  const [first] = IMAGE_TEST_ZONES;
  const primary = new ZoneTable();
  const snapshot = ZoneSnapshot.build(origin, IMAGE_TEST_SOA, 1, first!.rrsets, new TransferPolicy(resolved));
  primary.set(snapshot);
  const worker = new ZoneTable<ServedZone>();
  const applier = new ZoneApplier(worker);
  const send = (changes: ReturnType<typeof snapshot.journal.all>) => {
    const image = ZoneImage.build(origin, IMAGE_TEST_SOA, snapshot.serial, snapshot.rrsets());
    applier.replaceImage(image.buffer as ArrayBuffer, resolved, [...changes]);
  };
  send([]);
  for (let serial = 2; serial <= 4; serial++) {
    const from = snapshot.serial;
    snapshot.patch(
      {
        upserts: [
          {
            owner: `new${serial}.${origin}`,
            type: 'A',
            ttl: 60,
            rdata: [{ type: 'A', address: `192.0.2.${serial}` }],
          },
        ],
        deletes: serial === 3 ? [{ owner: `www.${origin}`, type: 'AAAA' }] : [],
      },
      serial,
      IMAGE_TEST_SOA,
    );
    send(snapshot.journal.since(from)!);
  }
  assert.equal(worker.get(origin)!.journal.length, 3);
  const ixfr = (clientSerial: number) => ixfrRequest(origin, clientSerial);
  for (const clientSerial of [1, 2, 3, 4]) {
    const expected = new TransferHandler(primary).handle(ixfr(clientSerial), '127.0.0.1', true);
    const actual = new TransferHandler(worker).handle(ixfr(clientSerial), '127.0.0.1', true);
    assert.deepEqual(actual, expected, `IXFR from ${clientSerial}`);
  }
  // A worker given the whole journal at once (a new worker) answers the same.
  const fresh = new ZoneTable<ServedZone>();
  const image = ZoneImage.build(origin, IMAGE_TEST_SOA, snapshot.serial, snapshot.rrsets());
  new ZoneApplier(fresh).replaceImage(image.buffer as ArrayBuffer, resolved, [...snapshot.journal.all()]);
  assert.deepEqual(
    new TransferHandler(fresh).handle(ixfr(1), '127.0.0.1', true),
    new TransferHandler(primary).handle(ixfr(1), '127.0.0.1', true),
  );
});
