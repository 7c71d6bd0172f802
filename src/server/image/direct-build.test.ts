import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  IMAGE_TEST_ZONES,
  imageRRset as rrset,
  IMAGE_TEST_SOA as SOA,
} from '../../../test/support/image-zones.ts';
import { prng } from '../../../test/support/prng.ts';
import type { Name } from '../../dns/name.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import { ZoneApplier } from '../zone-apply.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { type ServedZone, ZoneTable } from '../zone-table.ts';
import { ZoneImageBuilder } from './image-builder.ts';
import { ImageZone } from './image-zone.ts';
import type { ZoneImage } from './zone-image.ts';

/**
 * The DNS threads' pool builds a zone's base image straight from the programmed content
 * (`ZoneApplier.replaceWithImage`), where it built a `ZoneSnapshot` of it first and the image from
 * that: the two must write the same bytes for any content, duplicates of a name and type, letter case
 * and order of the content included.
 */

const TRANSFERS = { allowFrom: ['127.0.0.1'], requireTsig: false, keys: [], notify: [], journalSize: 7 };

/** The image's bytes, its id and its base's id (given per build) zeroed. */
function bytesOf(image: ZoneImage): Buffer {
  const b = new Uint8Array(image.buffer.slice(0));
  b.fill(0, 14 * 4, 16 * 4);
  return Buffer.from(b);
}

/** What the pool built before: the snapshot of the content, and the image of the snapshot. */
function viaSnapshot(origin: Name, rrsets: readonly RRsetData[]): ZoneImage {
  const snapshot = ZoneSnapshot.build(origin, SOA, 42, rrsets);
  return new ZoneImageBuilder({ shared: true }).merge(snapshot).image;
}

/** The direct build, through the applier as the pool's main thread runs it. */
function direct(origin: Name, rrsets: readonly RRsetData[]): ImageZone {
  const table = new ZoneTable<ServedZone>();
  const applier = new ZoneApplier(table, { images: new ZoneImageBuilder({ shared: true }) });
  assert.equal(applier.replaceWithImage(origin, SOA, 42, rrsets, TRANSFERS), true);
  const held = table.get(origin);
  assert.ok(held instanceof ImageZone);
  return held;
}

function assertSame(origin: Name, rrsets: readonly RRsetData[], what: string): void {
  const a = bytesOf(viaSnapshot(origin, rrsets));
  const b = bytesOf(direct(origin, rrsets).image);
  assert.ok(a.equals(b), `${what}: the direct build wrote other bytes than the snapshot's image`);
}

/**
 * Content as no zone model hands it but the applier takes: owners in any order and letter case,
 * several depths (empty non-terminals), wildcards, cuts with glue, escaped labels, and the same name
 * and type given again with other records or another spelling.
 */
function variedZone(seed: number): { origin: Name; rrsets: RRsetData[] } {
  const next = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const origin = pick(['example.org.', 'Example.ORG.']);
  const labels = ['a', 'B', 'www', 'Mail', '*', 'x\\.y', '\\000', 'sub', 'deep', 'c'];
  const owner = (): Name => {
    const depth = 1 + Math.floor(next() * 4);
    const parts: string[] = [];
    for (let i = 0; i < depth; i++) {
      let label = pick(labels);
      // A wildcard only as the leftmost label.
      if (label === '*' && i > 0) label = 'w';
      parts.push(label);
    }
    return `${parts.join('.')}.${origin}`;
  };
  const respell = (name: Name): Name =>
    [...name].map((c) => (next() < 0.5 ? c.toUpperCase() : c.toLowerCase())).join('');
  const out: RRsetData[] = [rrset(origin, 'NS', 3600, 'ns1.example.org.', 'ns2.example.org.')];
  const owners: Name[] = [];
  const count = 20 + Math.floor(next() * 60);
  for (let i = 0; i < count; i++) {
    const roll = next();
    // Often a name seen before, in another spelling: a second type there, or the same type again.
    const name = owners.length > 0 && roll < 0.35 ? respell(pick(owners)) : owner();
    owners.push(name);
    const kind = Math.floor(next() * 7);
    const n = 1 + Math.floor(next() * 3);
    switch (kind) {
      case 0:
        out.push(
          rrset(name, 'A', 300, ...Array.from({ length: n }, (_, k) => `192.0.2.${(i * 3 + k) % 250}`)),
        );
        break;
      case 1:
        out.push(
          rrset(name, 'AAAA', 60, ...Array.from({ length: n }, (_, k) => `2001:db8::${i.toString(16)}:${k}`)),
        );
        break;
      case 2:
        out.push(rrset(name, 'TXT', 120, ...Array.from({ length: n }, (_, k) => `"t${i} ${k}"`)));
        break;
      case 3:
        out.push(rrset(name, 'MX', 300, `10 mx${i}.Example.org.`));
        break;
      case 4:
        out.push(rrset(name, 'CNAME', 300, `target${i}.other.test.`));
        break;
      case 5:
        // A cut with glue below it.
        if (name.toLowerCase() !== origin.toLowerCase()) {
          out.push(rrset(name, 'NS', 86400, `ns.${name}`));
          out.push(rrset(`ns.${name}`, 'A', 86400, `192.0.2.${i % 250}`));
        }
        break;
      default:
        out.push(rrset(name, 'ALIAS', 300, `www${i}.other.test.`));
    }
  }
  // Shuffled: the content's order is not the image's.
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return { origin, rrsets: out };
}

test('the image built straight from the content is byte for byte the image of its snapshot', () => {
  for (const zone of IMAGE_TEST_ZONES) assertSame(zone.origin, zone.rrsets, zone.origin);
  for (let seed = 1; seed <= 300; seed++) {
    const zone = variedZone(seed);
    assertSame(zone.origin, zone.rrsets, `seed ${seed}`);
  }
});

test('a second RRset of a name and type replaces the first, and the name is spelled as the kept one of its first type spells it', () => {
  const origin = 'example.org.';
  const rrsets = [
    rrset('WWW.example.org.', 'A', 60, '192.0.2.1', '192.0.2.2'),
    rrset('www.example.org.', 'TXT', 60, '"first txt"'),
    rrset('a.B.example.org.', 'A', 60, '192.0.2.9'),
    rrset('Www.example.org.', 'A', 300, '192.0.2.3'),
    rrset('www.example.org.', 'TXT', 60, '"second txt"'),
    rrset('A.b.example.org.', 'A', 60, '192.0.2.10'),
  ];
  assertSame(origin, rrsets, 'duplicates');
  const held = direct(origin, rrsets);
  const www = held.node('www.example.org.');
  assert.ok(www);
  assert.equal(www.owner, 'Www.example.org.');
  assert.deepEqual(
    www.rrsets.get(1)?.rdata.map((r) => (r.type === 'A' ? r.address : '')),
    ['192.0.2.3'],
  );
  assert.equal(www.rrsets.get(1)?.ttl, 300);
  assert.equal(held.node('a.b.example.org.')?.owner, 'A.b.example.org.');
  // The empty non-terminal between them is spelled by its first child, as the kept spelling has it.
  assertSame(
    origin,
    [rrset('x.Y.example.org.', 'A', 1, '192.0.2.1'), rrset('X.y.example.org.', 'A', 1, '192.0.2.2')],
    'ent',
  );
});

test('a zone built straight into an image starts a new journal sized by its transfers, like a snapshot would', () => {
  const held = direct(IMAGE_TEST_ZONES[0]!.origin, IMAGE_TEST_ZONES[0]!.rrsets);
  assert.equal(held.journal.length, 0);
  assert.equal(held.journal.enabled, true);
  assert.equal(held.serial, 42);
  assert.deepEqual(held.transfers?.resolved, TRANSFERS);
});

test('content with DNSSEC material, or an RRset no image can hold, is left to objects and nothing is served from it', () => {
  const origin = 'example.org.';
  const base = [rrset('www.example.org.', 'A', 60, '192.0.2.1')];
  // No programmed type is DNSSEC material today (the signer adds it to objects); a DNSKEY given
  // anyway (an empty RRset: no RDATA model is needed to carry it) keeps the zone on objects.
  const dnskey = { owner: origin, type: 'DNSKEY', ttl: 3600, rdata: [] } as unknown as RRsetData;
  const huge: RRsetData = {
    owner: 'big.example.org.',
    type: 'TXT',
    ttl: 60,
    rdata: [{ type: 'TXT', strings: Array.from({ length: 300 }, () => 'x'.repeat(255)) }],
  };
  for (const rrsets of [
    [...base, dnskey],
    [...base, huge],
  ]) {
    const table = new ZoneTable<ServedZone>();
    const images = new ZoneImageBuilder({ shared: true });
    const applier = new ZoneApplier(table, { images });
    applier.replace(origin, SOA, 1, base, TRANSFERS);
    const before = table.get(origin);
    assert.equal(applier.replaceWithImage(origin, SOA, 2, rrsets, TRANSFERS), false);
    assert.equal(table.get(origin), before);
    assert.equal(images.needsMerge(origin), false);
    // An applier with no image builder (the server's own thread) builds no image either.
    assert.equal(new ZoneApplier(table).replaceWithImage(origin, SOA, 3, base, TRANSFERS), false);
    assert.equal(table.get(origin), before);
  }
});
