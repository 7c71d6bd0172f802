import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EffectiveDnssec } from '../../api/dnssec.ts';
import { generateDnssecKey } from '../../dns/dnssec/keys.ts';
import { parseRdata } from '../../dns/rdata.ts';
import { ZoneTable } from '../../server/zone-table.ts';
import type { DnssecKeyStore } from '../../zones/dnssec-key-set.ts';
import type { RRset } from '../../zones/rrset.ts';
import { BackendError, type ProgrammedZone } from '../backend.ts';
import { BuiltinBackend } from './builtin-backend.ts';
import { MemoryKeyStore } from './zone-signing.ts';

const ORIGIN = 'signed.test.';
const SETTINGS: EffectiveDnssec = {
  algorithm: 'ECDSAP256SHA256',
  denial: 'NSEC',
  keys: 'CSK',
  zskLifetimeSeconds: 0,
  kskLifetimeSeconds: 0,
};
const RRSETS: RRset[] = [
  {
    owner: ORIGIN,
    type: 'NS',
    ttl: 300,
    rdata: [parseRdata('NS', 'ns1.signed.test.', ORIGIN)],
    origin: { kind: 'apex' },
  },
  {
    owner: `www.${ORIGIN}`,
    type: 'A',
    ttl: 300,
    rdata: [parseRdata('A', '192.0.2.1', ORIGIN)],
    origin: { kind: 'apex' },
  },
] as RRset[];

function programmed(serial: number, dnssec?: EffectiveDnssec): ProgrammedZone {
  return {
    key: 'dns/signed',
    origin: ORIGIN,
    soa: {
      ttl: 300,
      mname: 'ns1.signed.test.',
      rname: 'h.signed.test.',
      refresh: 3600,
      retry: 600,
      expire: 1209600,
      minimum: 60,
    },
    serial,
    rrsets: () => RRSETS,
    ...(dnssec ? { dnssec, signedAt: 1_800_000_000 } : {}),
  };
}

describe('the built-in backend signs with a key store', () => {
  test('signs the zone, serves its DNSSEC material and reports the keys and the DS', async () => {
    const table = new ZoneTable();
    const backend = new BuiltinBackend(table, undefined, {
      dnssecKeys: new MemoryKeyStore(generateDnssecKey),
    });
    assert.equal(backend.capabilities.dnssec, true);
    const result = await backend.applyZone(programmed(1, SETTINGS));
    assert.ok(table.get(ORIGIN)!.dnssec);
    assert.equal(result?.dnssec?.keys?.[0]?.role, 'CSK');
    assert.match(result!.dnssec!.ds![0]!, /^\d+ 13 2 [0-9A-F]{64}$/i);
    // Turned off: the next serial is served unsigned.
    await backend.applyZone(programmed(2));
    assert.equal(table.get(ORIGIN)!.dnssec, undefined);
  });

  test('without a key store it does not sign and says so in its capabilities', () => {
    assert.equal(new BuiltinBackend(new ZoneTable()).capabilities.dnssec, false);
  });

  test('keys that cannot be read fail the apply with a stable code; the previous serial stays served', async () => {
    const table = new ZoneTable();
    let broken = false;
    const store: DnssecKeyStore = {
      keysFor: async (origin, settings) => {
        if (broken) throw new Error('DNSSEC_KEY_LENGTH: cut file');
        return new MemoryKeyStore(generateDnssecKey).keysFor(origin, settings);
      },
    };
    const backend = new BuiltinBackend(table, undefined, { dnssecKeys: store });
    await backend.applyZone(programmed(1, SETTINGS));
    broken = true;
    await assert.rejects(backend.applyZone(programmed(2, SETTINGS)), (e: unknown) => {
      assert.ok(e instanceof BackendError);
      assert.equal(e.reason, 'BackendRejected');
      assert.equal(e.code, 'DNSSEC_KEYS');
      assert.match(e.message, /state directory/);
      return true;
    });
    assert.equal(table.get(ORIGIN)!.serial, 1);
  });
});
