import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EffectiveDnssec } from '../../api/dnssec.ts';
import { generateDnssecKey } from '../../dns/dnssec/keys.ts';
import { parseRdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
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

  test('keys: Split: a ZSK rollover step is recorded after the serial served, for the next serial; a replica signs alike', async () => {
    const split: EffectiveDnssec = { ...SETTINGS, keys: 'Split', zskLifetimeSeconds: 100 };
    const keys = new MemoryKeyStore(generateDnssecKey);
    const leader = new BuiltinBackend(new ZoneTable(), undefined, { dnssecKeys: keys });
    const at = (serial: number, signedAt: number): ProgrammedZone => ({
      ...programmed(serial, split),
      signedAt,
    });
    const T0 = 1_900_000_000;
    const first = await leader.applyZone(at(1, T0));
    assert.equal(first?.dnssec?.rollover?.kind, 'ZSK');
    assert.equal(first?.dnssec?.rollover?.phase, 'Active');
    assert.equal(first?.revisitAt, T0 + 1 + 100, 'looked at again when the ZSK lifetime is over');
    assert.equal(first?.keyEventAt, undefined);
    assert.equal(first?.dnssec?.cds, 'Published');
    // The lifetime passed: the new ZSK is recorded as published one second after this serial's time.
    const second = await leader.applyZone(at(2, T0 + 200));
    assert.equal(second?.dnssec?.rollover?.phase, 'Publish');
    assert.equal(second?.keyEventAt, T0 + 201);
    const zsks = second!.dnssec!.keys!.filter((k) => k.role === 'ZSK');
    assert.deepEqual(
      zsks.map((k) => [k.active, k.published]),
      [
        [true, true],
        [false, false],
      ],
      'serial 2 is signed without the key prepared for later',
    );
    const dnskeys = (table: ZoneTable) =>
      table.get(ORIGIN)!.dnssec!.data.records.filter((r) => r.type === RRType.DNSKEY).length;
    const served = (leader as unknown as { table: ZoneTable }).table;
    assert.equal(dnskeys(served), 2);
    // The next serial, at or after the event, publishes it; only the old ZSK signs.
    const third = await leader.applyZone(at(3, T0 + 201));
    assert.equal(dnskeys(served), 3);
    assert.deepEqual(
      third!.dnssec!.keys!.filter((k) => k.role === 'ZSK').map((k) => [k.active, k.published]),
      [
        [true, true],
        [false, true],
      ],
    );
    // A replica (keys read, never stepped) signs serial 3 to the same records and steps nothing.
    const replicaTable = new ZoneTable();
    const replica = new BuiltinBackend(replicaTable, undefined, {
      dnssecKeys: { keysFor: (origin, settings) => keys.keysFor(origin, settings) },
    });
    const followed = await replica.applyZone({
      ...at(3, T0 + 201),
      keyTags: third!.dnssec!.keys!.filter((k) => k.active || k.published).map((k) => k.keyTag),
    });
    assert.equal(followed?.dnssec?.rollover, undefined);
    const bytes = (table: ZoneTable) =>
      table
        .get(ORIGIN)!
        .dnssec!.data.records.map((r) => `${r.owner} ${r.type} ${Buffer.from(r.rdata).toString('hex')}`);
    assert.deepEqual(bytes(replicaTable), bytes(served));
  });

  test('the parent served here is seen: an algorithm rollover waits in DsChange until the parent holds the new DS', async () => {
    const table = new ZoneTable();
    const backend = new BuiltinBackend(table, undefined, {
      dnssecKeys: new MemoryKeyStore(generateDnssecKey),
    });
    const T0 = 1_900_000_000;
    // An unsigned parent zone delegating the child, holding no DS for it.
    const cut = {
      owner: ORIGIN,
      type: 'NS',
      ttl: 300,
      rdata: [parseRdata('NS', 'ns1.signed.test.', 'test.')],
      origin: { kind: 'apex' },
    } as RRset;
    await backend.applyZone({ ...programmed(1), key: 'dns/parent', origin: 'test.', rrsets: () => [cut] });
    const at = (serial: number, signedAt: number, dnssec: EffectiveDnssec): ProgrammedZone => ({
      ...programmed(serial, dnssec),
      signedAt,
    });
    await backend.applyZone(at(1, T0, SETTINGS));
    const ed = { ...SETTINGS, algorithm: 'ED25519' as const };
    let serial = 2;
    let signedAt = T0;
    let result: Awaited<ReturnType<BuiltinBackend['applyZone']>>;
    // Each step: a new serial at its key event, else a look at the due time.
    for (let i = 0; i < 12; i++) {
      result = await backend.applyZone(at(serial, signedAt, ed));
      if (result?.dnssec?.rollover?.phase === 'DsChange') break;
      signedAt = Math.max(result?.keyEventAt ?? 0, result?.revisitAt ?? 0, signedAt + 1);
      serial++;
    }
    assert.equal(result!.dnssec!.rollover!.phase, 'DsChange');
    assert.equal(result!.dnssec!.rollover!.reason, 'ParentDsPending', 'the parent is seen, without the DS');
    assert.match(result!.dnssec!.rollover!.message!, /waits for the parent to publish the DS/);
  });
  test('signing turned off (RFC 8078 §4): delete CDS/CDNSKEY, waits for the parent seen, re-enabling keeps the keys', async () => {
    const table = new ZoneTable();
    const store = new MemoryKeyStore(generateDnssecKey);
    const backend = new BuiltinBackend(table, undefined, { dnssecKeys: store });
    const signed = await backend.applyZone(programmed(1, SETTINGS));
    const ds = signed!.dnssec!.ds!;
    const tags = signed!.dnssec!.keys!.map((k) => k.keyTag);
    // The parent, served here, holds the child's DS (with its NS at the cut).
    const parent = (withDs: boolean): ProgrammedZone => ({
      ...programmed(withDs ? 1 : 2),
      key: 'dns/parent',
      origin: 'test.',
      rrsets: () =>
        [
          {
            owner: ORIGIN,
            type: 'NS',
            ttl: 300,
            rdata: [parseRdata('NS', 'ns1.signed.test.', 'test.')],
            origin: { kind: 'apex' },
          },
          ...(withDs
            ? [
                {
                  owner: ORIGIN,
                  type: 'DS',
                  ttl: 120,
                  rdata: ds.map((d) => parseRdata('DS', d, 'test.')),
                  origin: { kind: 'apex' },
                },
              ]
            : []),
        ] as RRset[],
    });
    await backend.applyZone(parent(true));
    // Turned off, and a writer records the parent's DS as gone: the DS the parent is seen with wins.
    const off: EffectiveDnssec = { ...SETTINGS, disable: true, parentDs: { ds: [], ttl: 5 } };
    const r = await backend.applyZone(programmed(2, off));
    assert.ok(table.get(ORIGIN)!.dnssec, 'still signed');
    const apex = (type: number) =>
      table
        .get(ORIGIN)!
        .dnssec!.data.records.filter((x) => x.type === type)
        .map((x) => [...x.rdata].join(','));
    assert.deepEqual(apex(RRType.CDS), ['0,0,0,0,0']);
    assert.deepEqual(apex(RRType.CDNSKEY), ['0,0,3,0,0']);
    assert.deepEqual(r!.dnssec!.ds, [], 'the parent is to hold no DS');
    assert.equal(r!.dnssec!.cds, 'Published');
    assert.equal(r!.dnssec!.rollover!.kind, 'Disable');
    assert.equal(r!.dnssec!.rollover!.phase, 'Disabling');
    assert.equal(r!.dnssec!.rollover!.reason, 'ParentDsNotRemoved');
    assert.match(r!.dnssec!.rollover!.message!, new RegExp(ds[0]!.split(' ')[0]!));
    assert.equal(await backend.signingTurnedOff(ORIGIN), true);
    // Turned on again: normal CDS, the same keys, no state of the turning off left.
    const on = await backend.applyZone(programmed(3, SETTINGS));
    assert.deepEqual(
      on!.dnssec!.keys!.map((k) => k.keyTag),
      tags,
    );
    assert.deepEqual(on!.dnssec!.ds, ds);
    assert.notDeepEqual(apex(RRType.CDS), ['0,0,0,0,0']);
    assert.equal(on!.dnssec!.rollover?.kind, undefined);
    assert.equal((await store.update(ORIGIN, () => undefined)).disable, undefined);
    assert.equal(await backend.signingTurnedOff(ORIGIN), false);
    // Off again, the parent seen without the DS: DsPropagate for the DS TTL seen (120 s) + refresh.
    await backend.applyZone(programmed(4, off));
    await backend.applyZone(parent(false));
    const waiting = await backend.applyZone(programmed(5, off));
    assert.equal(waiting!.dnssec!.rollover!.phase, 'DsPropagate');
    const since = Date.parse(waiting!.dnssec!.rollover!.since);
    assert.equal(Date.parse(waiting!.dnssec!.rollover!.nextStep!) - since, (120 + 3600) * 1000);
    assert.ok(table.get(ORIGIN)!.dnssec, 'still signed while a cache may hold the DS');
    // Unsigned recorded (as the step records it once the wait is over): the unsigned serial is served,
    // and only then are the keys removed.
    await store.update(ORIGIN, (held) => ({ ...held, disable: 'Unsigned 1' }));
    assert.equal(await backend.signingTurnedOff(ORIGIN), false);
    assert.ok((await store.update(ORIGIN, () => undefined)).keys.length > 0);
    await backend.applyZone(programmed(6));
    assert.equal(table.get(ORIGIN)!.dnssec, undefined);
    assert.deepEqual((await store.update(ORIGIN, () => undefined)).keys, []);
  });

  test('a served zone that does not delegate the child is not its parent: turning off waits for the parent recorded', async () => {
    // Served here: test. (another tenant's, say). The child b.a.test. is turned off; a.test. is
    // delegated elsewhere (an NS cut in test.), or test. holds nothing for the child at all. Neither
    // is the parent: seeing it "without a DS" would serve the child unsigned while the real parent
    // still holds the DS (bogus).
    const child = 'b.a.test.';
    const zone = (serial: number, dnssec?: EffectiveDnssec): ProgrammedZone => ({
      ...programmed(serial, dnssec),
      key: 'dns/child',
      origin: child,
      rrsets: () =>
        [
          {
            owner: child,
            type: 'NS',
            ttl: 300,
            rdata: [parseRdata('NS', 'ns1.signed.test.', child)],
            origin: { kind: 'apex' },
          },
        ] as RRset[],
    });
    const ns = (owner: string) =>
      ({
        owner,
        type: 'NS',
        ttl: 300,
        rdata: [parseRdata('NS', 'ns.elsewhere.example.', 'test.')],
        origin: { kind: 'apex' },
      }) as RRset;
    const cases: [string, RRset[]][] = [
      ['no delegation of the child', []],
      ['the child below another cut', [ns('a.test.')]],
      ['the child delegated, but below another cut', [ns('a.test.'), ns(child)]],
    ];
    for (const [what, rrsets] of cases) {
      const table = new ZoneTable();
      const backend = new BuiltinBackend(table, undefined, {
        dnssecKeys: new MemoryKeyStore(generateDnssecKey),
      });
      await backend.applyZone({ ...programmed(1), key: 'dns/other', origin: 'test.', rrsets: () => rrsets });
      await backend.applyZone(zone(1, SETTINGS));
      const off = await backend.applyZone(zone(2, { ...SETTINGS, disable: true }));
      assert.equal(off!.dnssec!.rollover!.phase, 'Disabling', what);
      assert.equal(off!.dnssec!.rollover!.reason, 'ParentDsNotRemoved', what);
      assert.match(off!.dnssec!.rollover!.message!, /dns\.zonekeeper\.dev\/parent-ds/, what);
      assert.equal(off!.dnssec!.rollover!.nextStep, undefined, `${what}: no look at a parent seen`);
      assert.ok(table.get(child)!.dnssec, `${what}: still signed`);
    }
  });
});
