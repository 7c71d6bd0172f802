import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IMAGE_TEST_SOA, IMAGE_TEST_ZONES } from '../../../test/support/image-zones.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import { ZoneSnapshot } from '../../server/zone-snapshot.ts';
import { servedFromImage } from './worker-pool-backend.ts';

test('DNS workers get a zone as a zone image unless it carries DNSSEC material (ADR 0020 step 3)', () => {
  const [zone] = IMAGE_TEST_ZONES;
  const origin = zone!.origin;
  assert.equal(servedFromImage(ZoneSnapshot.build(origin, IMAGE_TEST_SOA, 1, zone!.rrsets)), true);
  // DS at a cut is the parent's ordinary data, not signing material.
  assert.ok(zone!.rrsets.some((r) => r.type === 'DS'));
  // The zone model has no DNSSEC record types yet: the material is placed as signing would place it.
  for (const type of ['DNSKEY', 'RRSIG', 'NSEC', 'NSEC3', 'NSEC3PARAM', 'CDS', 'CDNSKEY']) {
    const owner = type === 'NSEC' || type === 'RRSIG' ? `www.${origin}` : origin;
    const rrsets = [...zone!.rrsets, { owner, type: type as RecordTypeName, ttl: 300, rdata: [] }];
    assert.equal(servedFromImage(ZoneSnapshot.build(origin, IMAGE_TEST_SOA, 1, rrsets)), false, type);
  }
});
