import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseRdata } from '../dns/rdata.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';
import {
  ownerDigest,
  ownerDigestBytes,
  rrsetDigest,
  zoneContentHash,
  zoneDigest,
  zoneDigestOfBytes,
} from './content-hash.ts';
import type { RRset } from './rrset.ts';
import type { SoaFields } from './soa.ts';

const ORIGIN = 'example.com.';
const soa: SoaFields = {
  ttl: 3600,
  mname: 'ns1.example.com.',
  rname: 'hostmaster.example.com.',
  refresh: 3600,
  retry: 600,
  expire: 604800,
  minimum: 300,
};

function rrset(owner: string, type: RecordTypeName, ttl: number, records: string[]): RRset {
  return {
    owner,
    type,
    ttl,
    rdata: records.map((r) => parseRdata(type, r, ORIGIN)),
    origin: { kind: 'recordSet', namespace: 'dns', name: owner },
  };
}

const zone: RRset[] = [
  rrset('www.example.com.', 'A', 300, ['192.0.2.1', '192.0.2.2']),
  rrset('Mail.example.com.', 'MX', 60, ['10 mx.example.net.']),
  rrset('example.com.', 'TXT', 300, ['hello']),
  rrset('www.example.com.', 'AAAA', 300, ['2001:db8::1']),
];

describe('content hash', () => {
  test('keeps its value for the same content (serials follow it)', () => {
    // Computed before owner digests were kept as octets in the zone model: a change of this value
    // changes every zone's serial on the first start of a new version.
    assert.equal(
      zoneContentHash(soa, zone),
      'c087ff2d0085f98079ca20f0561cf87c189b42baea2f43fb3a63644793cec712',
    );
  });

  test("an owner's key given to its digest is the one the digest would make (any letter case)", () => {
    const mail = zone.filter((r) => r.owner === 'Mail.example.com.');
    assert.equal(ownerDigest(mail, 'mail.example.com.'), ownerDigest(mail));
    assert.notEqual(ownerDigest(mail), ownerDigest(mail, 'Mail.example.com.'), 'the key is hashed as given');
  });

  test('owner digests as octets and as latin1 strings hash the zone alike', () => {
    const www = zone.filter((r) => r.owner === 'www.example.com.');
    const bytes = ownerDigestBytes(www);
    assert.equal(bytes.length, 32);
    assert.equal(ownerDigest(www), bytes.toString('latin1'));
    const digests = [ownerDigest(zone.slice(2, 3)), ownerDigest(zone.slice(1, 2)), ownerDigest(www)];
    const octets = Buffer.concat(digests.map((d) => Buffer.from(d, 'latin1')));
    assert.equal(zoneDigestOfBytes(soa, octets), zoneDigest(soa, digests));
    assert.equal(zoneDigest(soa, digests), zoneContentHash(soa, zone));
  });
  test('a name of one RRset hashed by its parts hashes what ownerDigest of that RRset does', () => {
    const steered: RRset = {
      ...rrset('lb.example.com.', 'A', 60, ['192.0.2.7', '192.0.2.8']),
      steering: {
        policy: 'Weighted',
        candidates: ['192.0.2.7', '192.0.2.8'],
        weights: [3, 1],
        whenAllDown: 'All',
      } as RRset['steering'],
    };
    const one = rrset('Mail.example.com.', 'MX', 60, ['10 mx.example.net.']);
    const lone = { ...rrset('lb.example.com.', 'A', 60, ['192.0.2.7']), steering: steered.steering };
    for (const [key, r] of [
      ['mail.example.com.', one],
      ['www.example.com.', zone[0]!],
      ['lb.example.com.', steered],
      ['lb.example.com.', lone],
      ['example.com.', rrset('example.com.', 'TXT', 300, ['b', 'a', 'a b', '"c" "d"'])],
    ] as const)
      assert.equal(rrsetDigest(key, r.ttl, r.type, r.rdata, r.steering), ownerDigest([r], key), key);
  });

  test('the zone hash of digests gathered after room for the SOA is the one of the digests alone', () => {
    const digests = [ownerDigest(zone.slice(2, 3)), ownerDigest(zone.slice(1, 2))];
    const octets = Buffer.concat(digests.map((d) => Buffer.from(d, 'latin1')));
    const rooms: number[] = [];
    const gathered = zoneDigestOfBytes(soa, (room) => {
      rooms.push(room);
      const out = new Uint8Array(room + octets.length);
      out.set(octets, room);
      return out;
    });
    assert.equal(gathered, zoneDigest(soa, digests));
    assert.equal(rooms.length, 1);
    assert.equal(rooms[0]! % 4, 0);
    // A SOA whose text is not a multiple of four octets long, and one with a name beyond ASCII.
    for (const other of [
      { ...soa, retry: 6000 },
      { ...soa, retry: 60 },
      { ...soa, rname: 'h\x0195\x0e9.example.com.' },
    ])
      assert.equal(
        zoneDigestOfBytes(other, (room) => {
          const out = new Uint8Array(room + octets.length);
          out.set(octets, room);
          return out;
        }),
        zoneDigest(other, digests),
      );
  });
});
