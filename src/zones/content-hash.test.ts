import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseRdata } from '../dns/rdata.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';
import {
  ownerDigest,
  ownerDigestBytes,
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
});
