import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { imageRRset as rrset, IMAGE_TEST_SOA as SOA } from '../../../test/support/image-zones.ts';
import { compareCanonical, nameKey } from '../../dns/name.ts';
import { encodeRdata, parseRdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
import { WireWriter } from '../../dns/wire.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { IMAGE_MAGIC, NodeFlag, ZoneImage } from './zone-image.ts';

const ORIGIN = 'Example.ORG.';
/** A zone with every shape the answer path meets: a delegation with glue, wildcards, empty non-terminals, names below names, letter case. */
function zone(extra = 0): RRsetData[] {
  const out: RRsetData[] = [
    rrset('example.org.', 'NS', 3600, 'ns1.example.org.', 'ns2.example.org.'),
    rrset('example.org.', 'MX', 300, '10 mail.example.org.'),
    rrset('example.org.', 'TXT', 300, '"v=spf1 -all"'),
    rrset('ns1.example.org.', 'A', 300, '192.0.2.53'),
    rrset('ns2.example.org.', 'AAAA', 300, '2001:db8::53'),
    rrset('WWW.example.org.', 'A', 60, '192.0.2.1', '192.0.2.2'),
    rrset('www.example.org.', 'AAAA', 60, '2001:db8::1'),
    rrset('alias.example.org.', 'CNAME', 300, 'www.example.org.'),
    rrset('*.wild.example.org.', 'A', 300, '192.0.2.99'),
    rrset('deep.a.b.c.example.org.', 'TXT', 300, '"deep"'),
    rrset('_sip._tcp.example.org.', 'SRV', 300, '10 5 5060 www.example.org.'),
    rrset('sub.example.org.', 'NS', 86400, 'ns.sub.example.org.'),
    rrset('ns.sub.example.org.', 'A', 86400, '192.0.2.77'),
    rrset(
      'sub.example.org.',
      'DS',
      3600,
      '12345 13 2 2BB183AF5F22588179A53B0A98631FAD1A292118D1B5AA8B2B52E1CE1A1A1A1A',
    ),
    rrset('caa.example.org.', 'CAA', 300, '0 issue "letsencrypt.org"'),
  ];
  for (let i = 0; i < extra; i++)
    out.push(rrset(`h${i}.hosts.example.org.`, 'A', 300, `10.0.${i >> 8}.${i & 255}`));
  return out;
}

function wireOf(rdata: RRsetData['rdata'][number]): Uint8Array {
  const w = new WireWriter(64);
  w.compression = false;
  encodeRdata(rdata, w);
  return w.finish();
}

describe('ZoneImage', () => {
  const rrsets = zone(500);
  const image = ZoneImage.build(ORIGIN, SOA, 2026112601, rrsets);
  const snapshot = ZoneSnapshot.build(ORIGIN, SOA, 2026112601, rrsets);

  test('holds every name and RRset the snapshot holds, with the same TTLs and wire RDATA', () => {
    assert.equal(image.nodeCount, snapshot.nodes.size + snapshot.emptyNonTerminals.size);
    for (const node of snapshot.nodes.values()) {
      const n = image.find(node.owner);
      assert.ok(n >= 0, `${node.owner} found`);
      assert.equal(image.rrsetRange(n).count, node.rrsets.size, node.owner);
      assert.equal((image.flags(n) & NodeFlag.Cut) !== 0, node.cut, `${node.owner} cut`);
      for (const [type, served] of node.rrsets) {
        const r = image.rrsetOf(n, type);
        assert.ok(r >= 0, `${node.owner} ${type}`);
        assert.equal(image.rrsetType(r), type);
        assert.equal(image.ttl(r), served.ttl);
        assert.deepEqual(image.rdata(r), served.rdata.map(wireOf), `${node.owner} ${type} RDATA`);
      }
      assert.equal(image.rrsetOf(n, 13 /* HINFO */), -1);
    }
    for (const key of snapshot.emptyNonTerminals) {
      const n = image.find(key);
      assert.ok(n >= 0, `${key} found`);
      assert.equal(image.flags(n) & NodeFlag.EmptyNonTerminal, NodeFlag.EmptyNonTerminal);
      assert.equal(image.rrsetRange(n).count, 0);
    }
  });

  test('the apex carries the SOA at the serial; labels below the origin keep the case they were written in', () => {
    const apex = image.find('example.org.');
    assert.equal(image.flags(apex) & NodeFlag.Apex, NodeFlag.Apex);
    const soa = image.rrsetOf(apex, RRType.SOA);
    assert.equal(image.ttl(soa), 3600);
    const serial = image.rdata(soa)[0]!;
    // SOA RDATA: MNAME, RNAME, then SERIAL as the first of five 32-bit fields (RFC 1035 §3.3.13).
    assert.equal(
      new DataView(serial.buffer, serial.byteOffset + serial.length - 20).getUint32(0),
      2026112601,
    );
    assert.equal(image.serial, 2026112601);
    // Labels below the origin keep their case; the origin's part is the zone's origin as written.
    assert.equal(image.ownerName(image.find('www.example.org.')), 'WWW.Example.ORG.');
    assert.equal(image.origin, 'Example.ORG.');
  });

  test('looks names up in any letter case, and finds nothing outside the zone or not in it', () => {
    assert.equal(image.find('wWw.EXAMPLE.org.'), image.find('www.example.org.'));
    assert.equal(image.find('H7.Hosts.Example.Org.'), image.find('h7.hosts.example.org.'));
    assert.ok(image.find('h499.hosts.example.org.') >= 0);
    for (const absent of [
      'h500.hosts.example.org.',
      'nope.example.org.',
      'example.com.',
      'org.',
      'x.wild.example.org.',
    ]) {
      assert.equal(image.find(absent), -1, absent);
    }
    // A name that ends with the origin's octets but not at a label boundary is not in the zone.
    assert.equal(image.find('notexample.org.'), -1);
    const wildcard = image.find('*.wild.example.org.');
    assert.equal(image.flags(wildcard) & NodeFlag.Wildcard, NodeFlag.Wildcard);
  });

  test('nodes are in RFC 4034 §6.1 canonical order (the example of §6.1)', () => {
    // RFC 4034 §6.1's example, in its order; the image is built from it shuffled.
    const ordered = [
      'example.',
      'a.example.',
      'yljkjljk.a.example.',
      'Z.a.example.',
      'zABC.a.EXAMPLE.',
      'z.example.',
      '\\001.z.example.',
      '*.z.example.',
      '\\200.z.example.',
    ];
    const shuffled = [
      ordered[4]!,
      ordered[8]!,
      ordered[2]!,
      ordered[6]!,
      ordered[1]!,
      ordered[7]!,
      ordered[3]!,
      ordered[5]!,
    ];
    const img = ZoneImage.build(
      'example.',
      { ...SOA, mname: 'ns.example.', rname: 'h.example.' },
      1,
      shuffled.map((owner) => rrset(owner, 'TXT', 60, '"x"')),
    );
    const names = Array.from({ length: img.nodeCount }, (_, i) => img.ownerName(i));
    // The origin's part of each name is the zone's origin as written ('example.').
    assert.deepEqual(
      names,
      ordered.map((name) => name.replace(/EXAMPLE\.$/, 'example.')),
    );
    // And on the larger zone: every node sorts after the one before it.
    for (let i = 1; i < image.nodeCount; i++) {
      assert.ok(compareCanonical(image.ownerName(i - 1), image.ownerName(i)) < 0, image.ownerName(i));
    }
  });

  test('the same bytes whatever order the content comes in: in canonical order (names kept as made, empty non-terminals merged in), reversed, partly ordered, shuffled', () => {
    const withoutId = (image: ZoneImage) => new Uint8Array(image.buffer).fill(0, 60, 64);
    // Each name spelled one way (a name spelled two ways is spelled as its first RRset read spells it).
    const list = zone(40).map((r) => ({ ...r, owner: r.owner.replace(/^WWW\./, 'www.') }));
    const canonical = ZoneSnapshot.build(ORIGIN, SOA, 1, list);
    // The snapshot's RRsets in canonical order, as a zone model gives them at a first program.
    const ordered: RRsetData[] = [...canonical.rrsets()].filter((r) => r.type !== 'SOA');
    const expected = withoutId(ZoneImage.build(ORIGIN, SOA, 1, list));
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const orders: [string, RRsetData[]][] = [
      ['canonical', ordered],
      ['reversed', [...ordered].reverse()],
      ['last first', [ordered.at(-1)!, ...ordered.slice(0, -1)]],
      ['first last', [...ordered.slice(1), ordered[0]!]],
      ['two halves', [...ordered.slice(ordered.length >> 1), ...ordered.slice(0, ordered.length >> 1)]],
      ['swapped pair', [ordered[1]!, ordered[0]!, ...ordered.slice(2)]],
    ];
    for (let i = 0; i < 20; i++) orders.push([`shuffled ${i}`, [...ordered].sort(() => random() - 0.5)]);
    for (const [how, content] of orders) {
      const image = ZoneImage.build(ORIGIN, SOA, 1, content);
      assert.deepEqual(withoutId(image), expected, how);
      for (let n = 1; n < image.nodeCount; n++)
        assert.ok(compareCanonical(image.ownerName(n - 1), image.ownerName(n)) < 0, `${how}: ${n}`);
    }
  });

  test('is read back from a SharedArrayBuffer as another thread would receive it, and refuses other bytes', () => {
    const shared = ZoneImage.build(ORIGIN, SOA, 7, rrsets, { shared: true });
    assert.ok(shared.buffer instanceof SharedArrayBuffer);
    const copy = ZoneImage.from(shared.buffer);
    assert.equal(copy.origin, ORIGIN);
    assert.equal(copy.serial, 7);
    const n = copy.find('alias.example.org.');
    assert.deepEqual(copy.rdata(copy.rrsetOf(n, RRType.CNAME)), [
      wireOf(parseRdata('CNAME', 'www.example.org.', '')),
    ]);
    assert.equal(nameKey(copy.ownerName(n)), 'alias.example.org.');
    const other = new ArrayBuffer(shared.byteLength);
    assert.throws(() => ZoneImage.from(other), /magic/);
    const words = new Uint32Array(other);
    words.set(new Uint32Array(shared.buffer));
    words[1] = 99;
    assert.throws(() => ZoneImage.from(other), /format 99/);
    assert.equal(new Uint32Array(shared.buffer)[0], IMAGE_MAGIC);
  });

  test('refuses an image whose header or indexes point outside their sections', () => {
    const good = ZoneImage.build(ORIGIN, SOA, 7, rrsets);
    assert.equal(ZoneImage.from(good.buffer.slice(0)).nodeCount, good.nodeCount);
    const damaged = (change: (words: Uint32Array) => void): ArrayBuffer => {
      const copy = good.buffer.slice(0) as ArrayBuffer;
      change(new Uint32Array(copy));
      return copy;
    };
    const nodesAt = 16;
    const hashAt = new Uint32Array(good.buffer)[8]! >>> 2;
    const slots = new Uint32Array(good.buffer)[5]!;
    const cases: [string, (w: Uint32Array) => void][] = [
      // No hash slots: every lookup below the apex would probe forever.
      ['no hash slots', (w) => (w[5] = 0)],
      ['a full hash table', (w) => w.fill(1, hashAt, hashAt + slots)],
      ['a hash entry naming no node', (w) => (w[hashAt + (w.subarray(hashAt).indexOf(0) ?? 0)] = 0xffff)],
      ['a node name past the buffer', (w) => (w[nodesAt] = 0x7fffffff)],
      ['a node with more RRsets than the image', (w) => (w[nodesAt + 3] = 0xffffffff)],
      ['RRsets counted past the sections', (w) => (w[4] = w[4]! + 1000)],
    ];
    for (const [what, change] of cases)
      assert.throws(() => ZoneImage.from(damaged(change)), /zone image/, what);
  });

  test('RDATA is stored without compression pointers, even where the message encoder compresses', () => {
    const apex = image.find('example.org.');
    const soa = image.rdata(image.rrsetOf(apex, RRType.SOA))[0]!;
    // MNAME and RNAME share "example.org."; uncompressed, both are written in full.
    assert.equal(soa.length, 'ns1.example.org.'.length + 1 + 'hostmaster.example.org.'.length + 1 + 20);
    assert.ok(!soa.some((b, i) => i < soa.length - 20 && (b & 0xc0) === 0xc0));
  });

  test('every RRset of format 1 has no signatures yet', () => {
    for (let r = 0; r < image.rrsetCount; r++) assert.equal(image.signaturesAt(r), 0);
  });

  test('refuses a record whose RDATA exceeds 65535 octets instead of cutting its 16-bit length', () => {
    // 40,000 two-byte characters: within the schema's 65,535 characters, 80,314 octets on the wire.
    const big = rrset('big.example.org.', 'TXT', 60, 'é'.repeat(40_000), '"after"');
    assert.throws(() => ZoneImage.build(ORIGIN, SOA, 1, [big]), /exceeds 65535/);
    // At the limit itself the image holds it, and the record after it is read back whole.
    const text = 'a'.repeat(65_535 - 256); // 256 character-strings: 65,535 octets
    const edge = rrset('edge.example.org.', 'TXT', 60, text, '"after"');
    const built = ZoneImage.build(ORIGIN, SOA, 1, [edge]);
    const wire = built.rdata(built.rrsetOf(built.find('edge.example.org.'), RRType.TXT));
    assert.deepEqual(
      wire.map((w) => w.length),
      [65_535, 6],
    );
    // The writer shared by builds is left usable after a refusal.
    // (Bytes compared but the last header word, the id each build gets.)
    const withoutId = (image: ZoneImage) => new Uint8Array(image.buffer).fill(0, 60, 64);
    const before = withoutId(ZoneImage.build(ORIGIN, SOA, 1, zone()));
    assert.throws(() => ZoneImage.build(ORIGIN, SOA, 1, [big]), /exceeds 65535/);
    assert.deepEqual(withoutId(ZoneImage.build(ORIGIN, SOA, 1, zone())), before);
  });

  test('a build reuses the name set of the one before with nothing of it left: same bytes from a generator, after overlays, refusals and a nested build', () => {
    const withoutId = (image: ZoneImage) => new Uint8Array(image.buffer).fill(0, 60, 64);
    const small = zone();
    const before = withoutId(ZoneImage.build(ORIGIN, SOA, 1, small));
    function* read(list: RRsetData[]): Generator<RRsetData> {
      yield* list;
    }
    // Content of unknown length, more names than a kept set starts with.
    assert.deepEqual(withoutId(ZoneImage.build(ORIGIN, SOA, 1, read(small))), before);
    const base = ZoneImage.build(ORIGIN, SOA, 1, read(zone(300)));
    // An overlay marks names as tombstones; the next build's nodes are none.
    base.overlay(SOA, 2, [rrset('www.example.org.', 'A', 60, '192.0.2.9')], {
      emptyNonTerminals: ['c.example.org.'],
      tombstones: ['deep.a.b.c.example.org.', 'alias.example.org.', 'caa.example.org.'],
    });
    assert.deepEqual(withoutId(ZoneImage.build(ORIGIN, SOA, 1, read(small))), before);
    const big = rrset('big.example.org.', 'TXT', 60, 'é'.repeat(40_000));
    assert.throws(() => ZoneImage.build(ORIGIN, SOA, 1, read([...zone(50), big])), /exceeds 65535/);
    assert.deepEqual(withoutId(ZoneImage.build(ORIGIN, SOA, 1, read(small))), before);
    // A build started while another reads its content (nothing does today) has a set of its own.
    let nested: Uint8Array | undefined;
    function* reading(list: RRsetData[]): Generator<RRsetData> {
      for (const r of list) {
        nested ??= withoutId(ZoneImage.build(ORIGIN, SOA, 1, read(small)));
        yield r;
      }
    }
    const outer = ZoneImage.build(
      'other.example.',
      SOA,
      1,
      reading([rrset('a.other.example.', 'A', 60, '192.0.2.1')]),
    );
    assert.deepEqual(nested, before);
    assert.equal(outer.find('a.other.example.'), outer.find('A.Other.Example.'));
    assert.equal(outer.nodeCount, 2);
    assert.deepEqual(withoutId(ZoneImage.build(ORIGIN, SOA, 1, read(small))), before);
  });
});
