/**
 * Differential tests of overlays (ADR 0020 §4): after each change, a base image with the overlay of
 * the names changed since it must answer with the same bytes as the `ZoneSnapshot` patched with the
 * same changes, and transfer the same records in the same order as a whole image of that content.
 * The changes add and remove names that create and end empty non-terminals, wildcards, delegations
 * (with glue and names below the cut), CNAMEs and apex RRsets, and move the SOA serial each time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bytes, header, ixfrRequest, questionBytes, wireName } from '../../../test/support/dns-fuzz.ts';
import {
  compareAnswers,
  IMAGE_TEST_SOA,
  IMAGE_TEST_ZONES,
  imageRRset,
  questionNames,
} from '../../../test/support/image-zones.ts';
import { prng } from '../../../test/support/prng.ts';
import type { Name } from '../../dns/name.ts';
import { printRdata } from '../../dns/rdata.ts';
import { RRClass, RRType } from '../../dns/rrtype.ts';
import type { RRsetData, RRsetKey } from '../../zones/rrset.ts';
import { TransferHandler } from '../transfer/transfer-handler.ts';
import { TransferPolicy } from '../transfer/transfer-policy.ts';
import { ZoneApplier } from '../zone-apply.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { type ServedZone, ZoneTable } from '../zone-table.ts';
import { ContentSource, ZoneImageBuilder } from './image-builder.ts';
import { ImageZone } from './image-zone.ts';
import { journalWire, readJournalWire } from './journal-wire.ts';
import { addChangedNames, buildOverlay, overlayLimit } from './overlay.ts';
import { ImageKind, NodeFlag, ZoneImage } from './zone-image.ts';

const ORIGIN = 'example.org.';
const [EXAMPLE, OTHER] = IMAGE_TEST_ZONES;

interface Change {
  upserts?: RRsetData[];
  deletes?: RRsetKey[];
}

const del = (owner: Name, type: RRsetKey['type']): RRsetKey => ({ owner, type });

/** Changes, in order, each checked on its own: what they do is in the comment above each. */
const SCRIPT: Change[] = [
  // A name three labels down: new.deep. and deep. become empty non-terminals.
  { upserts: [imageRRset('a.new.deep.example.org.', 'A', 60, '192.0.2.10')] },
  // The only name below c.: a.b.c., b.c. and c. stop existing (tombstones over the base's ENTs).
  { deletes: [del('deep.a.b.c.example.org.', 'TXT')] },
  // A wildcard under an empty non-terminal; sub.wild. goes, so the wildcard covers it now.
  {
    upserts: [
      imageRRset('*.new.deep.example.org.', 'A', 60, '192.0.2.11'),
      imageRRset('*.new.deep.example.org.', 'TXT', 60, '"wild"'),
    ],
    deletes: [del('sub.wild.example.org.', 'TXT')],
  },
  // A new delegation with glue, and a name below the cut (occluded).
  {
    upserts: [
      imageRRset('dele.example.org.', 'NS', 3600, 'ns.dele.example.org.', 'ns1.example.org.'),
      imageRRset('ns.dele.example.org.', 'A', 3600, '192.0.2.53'),
      imageRRset('x.y.dele.example.org.', 'TXT', 60, '"below the cut"'),
    ],
  },
  // The old delegation ends (its DS with it): its glue is ordinary data now.
  { deletes: [del('sub.example.org.', 'NS'), del('sub.example.org.', 'DS')] },
  // CNAMEs: one retargeted, one where an empty non-terminal was, one onto a wildcard.
  {
    upserts: [
      imageRRset('alias.example.org.', 'CNAME', 300, 'far.example.org.'),
      imageRRset('c.example.org.', 'CNAME', 300, 'www.example.org.'),
      imageRRset('towild.example.org.', 'CNAME', 300, 'q.new.deep.example.org.'),
    ],
  },
  // Apex RRsets change (MX replaced, a TXT removed, a new CAA).
  {
    upserts: [
      imageRRset('example.org.', 'MX', 600, '5 mx2.example.org.'),
      imageRRset('example.org.', 'CAA', 300, '0 issue "ca.example.net"'),
    ],
    deletes: [del('example.org.', 'TXT')],
  },
  // The deep name back (its ENTs again); the name under the wildcard's parent goes, the wildcard stays.
  {
    upserts: [imageRRset('deep.a.b.c.example.org.', 'TXT', 300, '"back"')],
    deletes: [del('a.new.deep.example.org.', 'A')],
  },
  // The wildcard goes: new.deep. and deep. stop existing; the CNAME onto it dangles.
  { deletes: [del('*.new.deep.example.org.', 'A'), del('*.new.deep.example.org.', 'TXT')] },
  // A name removed that never existed; an RRset added at an empty non-terminal (b.c. gets data).
  {
    upserts: [imageRRset('b.c.example.org.', 'AAAA', 60, '2001:db8::bc')],
    deletes: [del('never.example.org.', 'A')],
  },
  // A delegation made at a name that held data, and the data below it made a cut's glue.
  {
    upserts: [
      imageRRset('mx2.example.org.', 'NS', 3600, 'ns.mx2.example.org.'),
      imageRRset('ns.mx2.example.org.', 'AAAA', 3600, '2001:db8::99'),
    ],
  },
  // The apex's NS changes and a wildcard at the zone's top appears.
  {
    upserts: [
      imageRRset('example.org.', 'NS', 7200, 'ns1.example.org.'),
      imageRRset('*.example.org.', 'TXT', 60, '"top wildcard"'),
    ],
  },
];

/** Every question name the zone ever had, and the names around them. */
function namesOf(contents: RRsetData[][]): string[] {
  return questionNames(
    contents.map((rrsets) => ({ origin: ORIGIN, rrsets })),
    [
      'q.new.deep.example.org.',
      'deep.example.org.',
      'c.example.org.',
      'b.c.example.org.',
      'zzz.example.org.',
    ],
  );
}

/** Lines of a transfer, in the order sent. */
function transferLines(zone: ServedZone): string[] {
  return [...zone.transferRRsets()].flatMap((s) =>
    s.rdata.map((r) => `${s.owner.toLowerCase()} ${s.ttl} ${s.type} ${printRdata(r)}`),
  );
}

/**
 * Applies `changes` one by one to a snapshot and, as a DNS worker receives them, overlays over the
 * first base; after each, compares the overlaid zone with the snapshot (answers) and a whole image
 * of the same content (transfer order, counts).
 */
async function checkChanges(
  initial: readonly RRsetData[],
  changes: readonly Change[],
  names: (seen: RRsetData[][]) => string[],
  types?: readonly number[],
): Promise<number> {
  const snapshot = ZoneSnapshot.build(ORIGIN, IMAGE_TEST_SOA, 1, initial);
  const other = ZoneSnapshot.build(OTHER!.origin, IMAGE_TEST_SOA, 1, OTHER!.rrsets);
  const expected = new ZoneTable<ServedZone>();
  expected.set(snapshot);
  expected.set(other);
  const worker = new ZoneTable<ServedZone>();
  const applier = new ZoneApplier(worker);
  const base = ZoneImage.build(ORIGIN, IMAGE_TEST_SOA, 1, snapshot.rrsets());
  applier.replaceImage(base.buffer.slice(0) as ArrayBuffer, undefined);
  applier.replaceImage(
    ZoneImage.build(OTHER!.origin, IMAGE_TEST_SOA, 1, OTHER!.rrsets).buffer as ArrayBuffer,
    undefined,
  );
  // The worker's base is a copy (as over IPC): overlays name it by id, which the copy keeps.
  const changed = new Map<string, Name>();
  const seen: RRsetData[][] = [[...initial]];
  let compared = 0;
  for (const [i, change] of changes.entries()) {
    const serial = i + 2;
    const patch = { upserts: change.upserts ?? [], deletes: change.deletes ?? [] };
    snapshot.patch(patch, serial, IMAGE_TEST_SOA);
    addChangedNames(
      changed,
      [...patch.upserts, ...patch.deletes].map((r) => r.owner),
      ORIGIN,
    );
    const overlay = buildOverlay(snapshot, base, changed);
    assert.equal(overlay.kind, ImageKind.Overlay);
    // Built from the zone's content alone (the DNS thread pool's main thread holds no objects): the
    // same bytes as from the patched ZoneSnapshot, but for the image's own id (header word 15).
    const content = [...snapshot.rrsets()];
    const fromContent = buildOverlay(
      new ContentSource(ORIGIN, IMAGE_TEST_SOA, serial, () => content),
      base,
      changed,
    );
    const bytes = (image: ZoneImage) => new Uint8Array(image.buffer.slice(0)).fill(0, 60, 64);
    assert.notEqual(fromContent.id, overlay.id);
    assert.deepEqual(bytes(fromContent), bytes(overlay), `built from the content, change ${i}`);
    assert.ok(applier.applyOverlay(overlay.buffer.slice(0) as ArrayBuffer, undefined), `change ${i}`);
    const served = worker.get(ORIGIN)!;
    assert.ok(served instanceof ImageZone && served.overlay !== undefined);
    seen.push([...snapshot.rrsets()]);
    const whole = new ImageZone(ZoneImage.build(ORIGIN, IMAGE_TEST_SOA, serial, snapshot.rrsets()));
    assert.equal(served.serial, serial);
    assert.equal(served.soa.rdata[0]?.type === 'SOA' && served.soa.rdata[0].serial, serial);
    assert.equal(served.recordCount, snapshot.recordCount, `records after change ${i}`);
    assert.equal(served.cutCount, snapshot.cutCount, `cuts after change ${i}`);
    assert.deepEqual(transferLines(served), transferLines(whole), `transfer after change ${i}`);
    compared += await compareAnswers(expected, worker, names(seen), types);
  }
  return compared;
}

test('a base with overlays answers as the patched ZoneSnapshot through ENTs, wildcards, cuts, CNAMEs and apex changes', async () => {
  const compared = await checkChanges(EXAMPLE!.rrsets, SCRIPT, namesOf);
  assert.ok(compared > 100_000, `${compared} questions`);
});

test('random changes over a zone of nested names: overlays answer as the patched ZoneSnapshot', async () => {
  // A deterministic generator (no timing, no Math.random): the same changes each run.
  const next = prng(0x2026_1126);
  const random = (n: number) => Math.floor(next() * n);
  const labels = ['a', 'b', '*', 'c'];
  const pool: Name[] = [];
  for (const x of labels) {
    pool.push(`${x}.r.example.org.`);
    for (const y of labels) {
      if (y === '*') continue;
      pool.push(`${x}.${y}.r.example.org.`);
      pool.push(`${x}.${y}.s.${y}.r.example.org.`);
    }
  }
  const rrsetAt = (owner: Name, k: number): RRsetData => {
    switch (k) {
      case 0:
        return imageRRset(owner, 'A', 60, `192.0.2.${random(250)}`);
      case 1:
        return imageRRset(owner, 'TXT', 60, `"${random(1000)}"`);
      case 2:
        return imageRRset(owner, 'NS', 60, `ns.${owner}`);
      case 3:
        return imageRRset(owner, 'CNAME', 60, pool[random(pool.length)]!);
      default:
        return imageRRset(owner, 'MX', 60, `10 ${pool[random(pool.length)]!}`);
    }
  };
  const TYPES = ['A', 'TXT', 'NS', 'CNAME', 'MX'] as const;
  const initial = [...EXAMPLE!.rrsets, ...pool.filter((_, i) => i % 3 === 0).map((o) => rrsetAt(o, 0))];
  const changes: Change[] = [];
  for (let c = 0; c < 40; c++) {
    const upserts: RRsetData[] = [];
    const deletes: RRsetKey[] = [];
    for (let k = 1 + random(3); k > 0; k--) {
      const owner = pool[random(pool.length)]!;
      const type = random(TYPES.length);
      if (random(2) === 0) upserts.push(rrsetAt(owner, type));
      else deletes.push(del(owner, TYPES[type]!));
    }
    changes.push({ upserts, deletes });
  }
  const names = () => [
    ...pool,
    ...pool.map((o) => `q.${o.replace('*.', 'w.')}`),
    'r.example.org.',
    's.a.r.example.org.',
    'b.r.example.org.',
    'example.org.',
  ];
  const compared = await checkChanges(initial, changes, names, [
    RRType.A,
    RRType.TXT,
    RRType.NS,
    RRType.CNAME,
    RRType.MX,
    RRType.ANY,
  ]);
  assert.ok(compared > 50_000, `${compared} questions`);
});

test('an overlay names its base: another base (or none) refuses it, and a tombstone hides the base', () => {
  const snapshot = ZoneSnapshot.build(ORIGIN, IMAGE_TEST_SOA, 1, EXAMPLE!.rrsets);
  const base = ZoneImage.build(ORIGIN, IMAGE_TEST_SOA, 1, snapshot.rrsets());
  const other = ZoneImage.build(ORIGIN, IMAGE_TEST_SOA, 1, snapshot.rrsets());
  assert.notEqual(base.id, other.id);
  snapshot.patch(
    { upserts: [], deletes: [del('www.example.org.', 'A'), del('www.example.org.', 'AAAA')] },
    2,
    IMAGE_TEST_SOA,
  );
  const changed = new Map<string, Name>();
  addChangedNames(changed, ['www.example.org.'], ORIGIN);
  assert.deepEqual([...changed.keys()].sort(), ['example.org.', 'www.example.org.']);
  const overlay = buildOverlay(snapshot, base, changed);
  assert.equal(overlay.baseId, base.id);
  const www = overlay.find('www.example.org.');
  assert.ok(www >= 0 && overlay.flags(www) & NodeFlag.Tombstone);
  assert.throws(() => new ImageZone(other, undefined, undefined, overlay), /not one over this base/);
  assert.throws(() => new ImageZone(overlay), /not a base image/);
  assert.throws(
    () =>
      base
        .overlay(IMAGE_TEST_SOA, 3, [], { emptyNonTerminals: [], tombstones: [] })
        .overlay(IMAGE_TEST_SOA, 3, [], { emptyNonTerminals: [], tombstones: [] }),
    /over a base image/,
  );
  const zone = new ImageZone(base, undefined, undefined, overlay);
  assert.equal(zone.node('www.example.org.'), undefined);
  assert.equal(zone.isEmptyNonTerminal('www.example.org.'), false);
  assert.equal(zone.recordCount, snapshot.recordCount);
  // A worker holding another base refuses the overlay (and asks for the whole zone).
  const table = new ZoneTable<ServedZone>();
  const applier = new ZoneApplier(table);
  assert.equal(applier.applyOverlay(overlay.buffer as ArrayBuffer, undefined), false);
  applier.replaceImage(other.buffer as ArrayBuffer, undefined);
  assert.equal(applier.applyOverlay(overlay.buffer as ArrayBuffer, undefined), false);
  assert.equal(table.get(ORIGIN)!.serial, 1);
  applier.replaceImage(base.buffer as ArrayBuffer, undefined, [], overlay.buffer as ArrayBuffer);
  assert.equal(table.get(ORIGIN)!.serial, 2);
});

test('the builder sends overlays until one passes its share of the base, then merges into a new base', () => {
  const origin = 'big.example.';
  const rrsets: RRsetData[] = Array.from({ length: 2000 }, (_, i) => ({
    owner: `h${i}.${origin}`,
    type: 'A',
    ttl: 60,
    rdata: [{ type: 'A', address: `10.0.${i >> 8}.${i & 255}` }],
  }));
  const snapshot = ZoneSnapshot.build(origin, IMAGE_TEST_SOA, 1, rrsets);
  const builder = new ZoneImageBuilder();
  const first = builder.current(snapshot);
  assert.equal(first.overlay, undefined);
  assert.equal(builder.current(snapshot), first, 'built once per serial');
  const limit = overlayLimit(first.image.nodeCount);
  assert.equal(limit, 126); // 2,002 names (the apex and the SOA's) / 16
  let serial = 1;
  const edit = (owner: Name) => {
    const from = serial++;
    snapshot.patch(
      { upserts: [{ owner, type: 'TXT', ttl: 60, rdata: [{ type: 'TXT', strings: ['x'] }] }], deletes: [] },
      serial,
      IMAGE_TEST_SOA,
    );
    return builder.change(snapshot, from, [owner]);
  };
  for (let i = 0; i < limit - 1; i++) {
    const overlay = edit(`h${i}.${origin}`);
    assert.ok(overlay && overlay.baseId === first.image.id);
    assert.equal(overlay.nodeCount, i + 2);
    assert.equal(builder.needsMerge(origin), false);
  }
  assert.ok(edit(`h${limit}.${origin}`));
  assert.equal(builder.needsMerge(origin), true);
  const merged = builder.merge(snapshot);
  assert.notEqual(merged.image.id, first.image.id);
  assert.equal(merged.serial, serial);
  assert.equal(merged.overlay, undefined);
  assert.equal(builder.needsMerge(origin), false);
  assert.equal(edit(`h1.${origin}`)?.baseId, merged.image.id);
  // A change from a serial the builder does not hold, or too large alone, goes whole.
  assert.equal(builder.change(snapshot, 12345, [`h2.${origin}`]), undefined);
  const bulk = Array.from({ length: limit + 1 }, (_, i) => `n${i}.${origin}`);
  assert.equal(builder.change(snapshot, serial, bulk), undefined);
});

test('IXFR from a worker fed overlays: the journal sent with each overlay, in wire form, answers as the primary does', () => {
  const resolved = { allowFrom: ['127.0.0.0/8'], requireTsig: false, keys: [], notify: [], journalSize: 8 };
  const primary = new ZoneTable();
  const snapshot = ZoneSnapshot.build(
    ORIGIN,
    IMAGE_TEST_SOA,
    1,
    EXAMPLE!.rrsets,
    new TransferPolicy(resolved),
  );
  primary.set(snapshot);
  const worker = new ZoneTable<ServedZone>();
  const applier = new ZoneApplier(worker);
  const builder = new ZoneImageBuilder();
  applier.replaceImage(builder.current(snapshot).image.buffer as ArrayBuffer, resolved);
  for (let serial = 2; serial <= 4; serial++) {
    const from = snapshot.serial;
    const patch = {
      upserts: [
        imageRRset(`new${serial}.deep.example.org.`, 'A', 60, `192.0.2.${serial}`),
        imageRRset('example.org.', 'MX', 300 + serial, `${serial} mx2.example.org.`),
        imageRRset('_sip._tcp.example.org.', 'SRV', 300, `10 ${serial} 5060 www.example.org.`),
        imageRRset('caa.example.org.', 'CAA', 300, `0 issue "ca${serial}.example.net"`),
      ],
      deletes: serial === 3 ? [del('www.example.org.', 'AAAA'), del('alias.example.org.', 'CNAME')] : [],
    };
    snapshot.patch(patch, serial, IMAGE_TEST_SOA);
    const overlay = builder.change(
      snapshot,
      from,
      [...patch.upserts, ...patch.deletes].map((r) => r.owner),
    );
    assert.ok(overlay);
    // The journal entries as a worker receives them: in wire form, encoded once (journal-wire.ts).
    const changes = snapshot.journal.since(from)!.map((e) => readJournalWire(journalWire(e).slice(0)));
    assert.ok(applier.applyOverlay(overlay.buffer as ArrayBuffer, resolved, changes));
  }
  assert.equal(worker.get(ORIGIN)!.journal.length, 3);
  const ixfr = (clientSerial: number) => ixfrRequest(ORIGIN, clientSerial);
  for (const clientSerial of [1, 2, 3, 4]) {
    assert.deepEqual(
      new TransferHandler(worker).handle(ixfr(clientSerial), '127.0.0.1', true),
      new TransferHandler(primary).handle(ixfr(clientSerial), '127.0.0.1', true),
      `IXFR from ${clientSerial}`,
    );
  }
  // AXFR too: the base and the overlay merged, in canonical order, as the whole zone.
  const axfr = bytes(header({ id: 8, qd: 1 }), questionBytes(wireName(ORIGIN), RRType.AXFR, RRClass.IN));
  const whole = new ZoneTable<ServedZone>();
  new ZoneApplier(whole).replaceImage(
    ZoneImage.build(ORIGIN, IMAGE_TEST_SOA, snapshot.serial, snapshot.rrsets()).buffer as ArrayBuffer,
    resolved,
  );
  assert.deepEqual(
    new TransferHandler(worker).handle(axfr, '127.0.0.1', true),
    new TransferHandler(whole).handle(axfr, '127.0.0.1', true),
  );
});
