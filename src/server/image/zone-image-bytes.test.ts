import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { imageRRset as rrset, IMAGE_TEST_SOA as SOA } from '../../../test/support/image-zones.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import { ZoneImage } from './zone-image.ts';

/**
 * Pins the bytes of format 1: images of fixed zones must come out byte for byte as they did when
 * these digests were taken, whatever the builder's implementation. A reader in another thread (or a
 * later build of the same process) reads them by the layout alone; a change of these bytes is a new
 * format (`IMAGE_FORMAT`), never a refactoring.
 */

const ORIGIN = 'Example.ORG.';

/** Every shape the builder meets: letter case in owners and ancestors, escapes, empty non-terminals at several depths, cuts, wildcards, several types per name. */
function fixedZone(): RRsetData[] {
  const out: RRsetData[] = [
    rrset('example.org.', 'NS', 3600, 'ns1.example.org.', 'ns2.example.org.'),
    rrset('example.org.', 'MX', 300, '10 mail.example.org.', '20 MX2.Other.test.'),
    rrset('example.org.', 'TXT', 300, '"v=spf1 -all"', '"second"'),
    rrset('ns1.example.org.', 'A', 300, '192.0.2.53'),
    rrset('ns2.example.org.', 'AAAA', 300, '2001:db8::53'),
    rrset('WWW.example.org.', 'A', 60, '192.0.2.1', '192.0.2.2'),
    rrset('www.example.org.', 'AAAA', 60, '2001:db8::1'),
    rrset('alias.example.org.', 'CNAME', 300, 'WWW.example.org.'),
    rrset('*.wild.example.org.', 'A', 300, '192.0.2.99'),
    rrset('*.example.org.', 'TXT', 300, '"apex wildcard"'),
    rrset('Deep.A.b.C.example.org.', 'TXT', 300, '"deep"'),
    rrset('other.a.B.c.example.org.', 'A', 300, '192.0.2.7'),
    rrset('_sip._tcp.example.org.', 'SRV', 300, '10 5 5060 www.example.org.'),
    rrset('sub.example.org.', 'NS', 86400, 'ns.sub.example.org.', 'ns.elsewhere.test.'),
    rrset('ns.sub.example.org.', 'A', 86400, '192.0.2.77'),
    rrset(
      'sub.example.org.',
      'DS',
      3600,
      '12345 13 2 2BB183AF5F22588179A53B0A98631FAD1A292118D1B5AA8B2B52E1CE1A1A1A1A',
    ),
    rrset('caa.example.org.', 'CAA', 300, '0 issue "letsencrypt.org"'),
    rrset('dot\\.in\\.label.example.org.', 'A', 300, '192.0.2.8'),
    rrset('\\000.x\\255.example.org.', 'A', 300, '192.0.2.9'),
    rrset('a.example.org.', 'TXT', 300, '"a"'),
    rrset('z.example.org.', 'A', 300, '192.0.2.10'),
    rrset('Z.a.example.org.', 'A', 300, '192.0.2.11'),
    rrset('yljkjljk.a.example.org.', 'A', 300, '192.0.2.12'),
    rrset('*.z.example.org.', 'A', 300, '192.0.2.13'),
    rrset('mail.example.org.', 'A', 300, '192.0.2.25'),
    rrset('mail.example.org.', 'HTTPS', 300, '1 . alpn=h2'),
    rrset('ptr.example.org.', 'PTR', 300, 'www.example.org.'),
  ];
  for (let i = 0; i < 300; i++) {
    out.push(rrset(`h${i}.Hosts.example.org.`, 'A', 300, `10.0.${i >> 8}.${i & 255}`));
    if (i % 7 === 0) out.push(rrset(`h${i}.hosts.example.org.`, 'AAAA', 300, `2001:db8::${i.toString(16)}`));
    if (i % 11 === 0)
      out.push(rrset(`c${i}.q${i % 5}.example.org.`, 'CNAME', 300, `h${i}.hosts.example.org.`));
  }
  return out;
}

/** SHA-256 of the image's bytes with its id and its base's id (numbers given per process) set to 0. */
function digest(image: ZoneImage): string {
  const copy = new Uint8Array(image.buffer.slice(0));
  copy.fill(0, 14 * 4, 16 * 4);
  return createHash('sha256').update(copy).digest('hex');
}

test('a base image of a fixed zone has the bytes of format 1', () => {
  const image = ZoneImage.build(ORIGIN, SOA, 2026112601, fixedZone());
  assert.equal(image.byteLength, 23704);
  assert.equal(digest(image), '3751a281372cbe1f2a45d6fe0db485cdaf623e0db775b9ca6c9e70a864126b91');
  // The same in a SharedArrayBuffer.
  assert.equal(
    digest(ZoneImage.build(ORIGIN, SOA, 2026112601, fixedZone(), { shared: true })),
    digest(image),
  );
});

test('an overlay of a fixed zone has the bytes of format 1', () => {
  const base = ZoneImage.build(ORIGIN, SOA, 1, fixedZone());
  const overlay = base.overlay(
    SOA,
    2,
    [
      rrset('www.example.org.', 'A', 60, '192.0.2.3'),
      rrset('new.Deeper.x.example.org.', 'TXT', 60, '"new"'),
      rrset('h3.hosts.example.org.', 'MX', 60, '10 mail.example.org.'),
    ],
    {
      emptyNonTerminals: ['Deeper.x.example.org.', 'x.example.org.', 'hosts.example.org.'],
      tombstones: ['alias.example.org.', 'gone.Deep.example.org.', 'www.example.org.'],
    },
  );
  assert.equal(overlay.byteLength, 572);
  assert.equal(digest(overlay), '24130a487d9ae32aab6c837d48cfc68c8f544ab22cb2da624c45b8e24028821e');
});
