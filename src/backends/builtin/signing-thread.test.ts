import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { EffectiveDnssec } from '../../api/dnssec.ts';
import { generateDnssecKey } from '../../dns/dnssec/keys.ts';
import { parseRdata } from '../../dns/rdata.ts';
import { generateZoneKeys } from '../../zones/dnssec-key-set.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import { SigningThread } from './signing-thread.ts';
import { packRecords, signForServing, unpackRecords } from './zone-signing.ts';

const ORIGIN = 'thread.test.';
const SETTINGS: EffectiveDnssec = {
  algorithm: 'ED25519',
  denial: 'NSEC3',
  keys: 'CSK',
  zskLifetimeSeconds: 0,
  kskLifetimeSeconds: 0,
};
const SOA = {
  ttl: 300,
  mname: `ns1.${ORIGIN}`,
  rname: `h.${ORIGIN}`,
  refresh: 3600,
  retry: 600,
  expire: 1209600,
  minimum: 60,
};
const KEYS = generateZoneKeys(SETTINGS, (algorithm, flags) => generateDnssecKey(algorithm, flags));
const host = (name: string, address: string): RRsetData => ({
  owner: `${name}.${ORIGIN}`,
  type: 'A',
  ttl: 300,
  rdata: [parseRdata('A', address, ORIGIN)],
});
const BASE: RRsetData[] = [
  { owner: ORIGIN, type: 'NS', ttl: 300, rdata: [parseRdata('NS', `ns1.${ORIGIN}`, ORIGIN)] },
  host('ns1', '192.0.2.53'),
  host('www', '192.0.2.1'),
  host('old.ent', '192.0.2.2'),
];

const thread = new SigningThread();
after(() => thread.close());

/** The signing thread's answer for the content at the serial (and the change to it, when given). */
const inThread = (
  serial: number,
  rrsets: RRsetData[],
  signedAt: number,
  delta?: Parameters<SigningThread['sign']>[4],
) => thread.sign({ origin: ORIGIN, soa: SOA, serial, rrsets }, SETTINGS, KEYS, signedAt, delta);

/** What signing the whole content at the serial gives, in this thread. */
const whole = (serial: number, rrsets: RRsetData[], signedAt: number) =>
  signForServing({ origin: ORIGIN, soa: SOA, serial, rrsets }, SETTINGS, KEYS, signedAt).records;

test('the signing thread signs a change sent alone to the same bytes as the whole zone', async () => {
  const signedAt = 1_800_000_000;
  const one = await inThread(1, BASE, signedAt);
  assert.deepEqual(one.records, whole(1, BASE, signedAt));
  // Serial 2: www changed, old.ent removed (its ENT goes), new added; only the change is needed.
  const two = [BASE[0]!, BASE[1]!, host('www', '192.0.2.9'), host('new', '192.0.2.3')];
  const delta = {
    fromSerial: 1,
    upserts: [two[2]!, two[3]!],
    deletes: [{ owner: `old.ent.${ORIGIN}`, type: 'A' as const }],
  };
  const signed = await inThread(2, two, signedAt + 60, delta);
  assert.deepEqual(signed.records, whole(2, two, signedAt + 60));
  // A change from a serial the thread does not hold: the whole content goes instead.
  const three = [...two, host('more', '192.0.2.4')];
  const stale = { fromSerial: 1, upserts: [three[4]!], deletes: [] };
  const again = await inThread(3, three, signedAt + 120, stale);
  assert.deepEqual(again.records, whole(3, three, signedAt + 120));
  // Forgotten: the next change cannot be applied to anything, so the whole content goes.
  thread.forget(ORIGIN);
  const four = [...three, host('last', '192.0.2.5')];
  const fresh = await inThread(4, four, signedAt + 180, { fromSerial: 3, upserts: [four[5]!], deletes: [] });
  assert.deepEqual(fresh.records, whole(4, four, signedAt + 180));
});

test('the signer records packed for the hand-over come back the same', () => {
  const records = whole(1, BASE, 1_800_000_000);
  assert.deepEqual(unpackRecords(packRecords(records)), records);
  assert.deepEqual(unpackRecords(packRecords([])), []);
});
