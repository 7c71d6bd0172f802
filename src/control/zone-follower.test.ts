import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { type DNSZone, effectiveDnssec, type Resource } from '../api/index.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { MemoryKeyStore } from '../backends/builtin/zone-signing.ts';
import { dnskeyRdata, generateDnssecKey, keyTag } from '../dns/dnssec/keys.ts';
import { printRdata } from '../dns/rdata.ts';
import { ZoneTable } from '../server/zone-table.ts';
import type { DnssecKeyStore } from '../zones/dnssec-key-set.ts';
import { Controller } from './controller.ts';
import { MemoryStore } from './memory-store.ts';
import { MemorySerialStore } from './serial-store.ts';
import { ZoneFollower } from './zone-follower.ts';

const now = () => new Date('2026-11-21T12:00:00Z');

function www(address: string) {
  return recordSet(
    'dns',
    'www',
    { zoneRef: { name: 'example-com' }, name: 'www', type: 'A', records: [address] },
    1,
  );
}

function seed(store: MemoryStore) {
  store.apply(zoneClass());
  store.apply(zone('dns', 'example-com', 'example.com'));
  store.apply(www('192.0.2.1'));
}

/** The operator's engine as `zonekeeper operator` runs it. */
function operator(store: MemoryStore) {
  return new Controller({
    store,
    backend: new BuiltinBackend(new ZoneTable()),
    serials: new MemorySerialStore(),
    now,
    hashOnChange: true,
  });
}

function follower(store: MemoryStore, unconfirmedAfterMs = 60_000) {
  const table = new ZoneTable();
  const f = new ZoneFollower({ store, backend: new BuiltinBackend(table), unconfirmedAfterMs });
  return { table, follower: f };
}

/** What a zone table serves for example.com: the serial and every RRset as text. */
function served(table: ZoneTable): { serial: number | undefined; records: string[] } {
  const z = table.get('example.com.');
  if (!z) return { serial: undefined, records: [] };
  const records = [...z.rrsets()].flatMap((r) =>
    r.rdata.map((d) => `${r.owner} ${r.ttl} ${r.type} ${printRdata(d)}`),
  );
  return { serial: z.serial, records: records.sort() };
}

function status(store: MemoryStore) {
  return (store.get('DNSZone', 'dns/example-com') as DNSZone).status;
}

describe('ZoneFollower (zonekeeper server) with the operator engine', () => {
  test('with hashOnChange, every new serial is written together with its content hash', async () => {
    const store = new MemoryStore(now);
    const writes: { serial?: number; hash?: string }[] = [];
    const update = store.updateStatus.bind(store);
    store.updateStatus = async (kind, key, s: NonNullable<Resource['status']>) => {
      if (kind === 'DNSZone') writes.push(s as { serial?: number; hash?: string });
      return update(kind, key, s);
    };
    seed(store);
    const c = operator(store);
    c.start();
    await c.idle();
    store.apply(www('192.0.2.2'));
    await c.idle();
    c.stop();
    const serials = [...new Set(writes.map((w) => w.serial))];
    assert.deepEqual(serials, [2026112100, 2026112101]);
    for (const w of writes)
      assert.match(w.hash ?? '', /^[0-9a-f]{64}$/, `serial ${w.serial} written without its hash`);
  });

  test('two replicas serve exactly the serial in status, with the same content', async () => {
    const store = new MemoryStore(now);
    seed(store);
    const c = operator(store);
    c.start();
    await c.idle();
    const a = follower(store);
    const b = follower(store);
    a.follower.start();
    b.follower.start();
    await Promise.all([a.follower.idle(), b.follower.idle()]);
    assert.equal(served(a.table).serial, status(store)?.serial);
    assert.deepEqual(served(a.table), served(b.table));
    assert.ok(served(a.table).records.includes('www.example.com. 300 A 192.0.2.1'));
    c.stop();
    a.follower.stop();
    b.follower.stop();
  });

  test('a change waits for the operator: the old version is served until status carries the new hash', async () => {
    const store = new MemoryStore(now);
    seed(store);
    const first = operator(store);
    first.start();
    await first.idle();
    first.stop(); // the operator is away
    const { table, follower: f } = follower(store);
    f.start();
    await f.idle();
    const before = served(table);
    assert.equal(before.serial, 2026112100);

    store.apply(www('192.0.2.9'));
    await f.idle();
    assert.deepEqual(served(table), before, 'unconfirmed content is not served at the old serial');

    const second = operator(store); // a new leader
    second.start();
    await second.idle();
    await f.idle();
    const after = served(table);
    assert.equal(after.serial, status(store)?.serial);
    assert.equal(after.serial, 2026112101);
    assert.ok(after.records.includes('www.example.com. 300 A 192.0.2.9'));
    assert.deepEqual(f.publishedState('dns/example-com'), { serial: 2026112101, confirmed: true });
    second.stop();
    f.stop();
  });

  test('a zone waiting for its first serial keeps no list of its changes; once served, changes go as before', async () => {
    const store = new MemoryStore(now);
    seed(store);
    const { table, follower: f } = follower(store);
    f.start();
    await f.idle();
    for (let i = 0; i < 20; i++)
      store.apply(
        recordSet(
          'dns',
          `h${i}`,
          { zoneRef: { name: 'example-com' }, name: `h${i}`, type: 'A', records: ['192.0.2.7'] },
          2 + i,
        ),
      );
    await f.idle();
    assert.equal(served(table).serial, undefined, 'no serial from the operator yet');
    const followed = () =>
      (f as unknown as { zones: Map<string, { full: boolean; pending: { size: number } }> }).zones.get(
        'dns/example-com',
      )!;
    assert.equal(followed().full, true);
    assert.equal(followed().pending.size, 0, 'the whole zone goes: no RRset kept as a change');
    const op = operator(store);
    op.start();
    await op.idle();
    await f.idle();
    assert.equal(served(table).serial, status(store)?.serial);
    const records = served(table).records;
    assert.ok(
      records.includes('www.example.com. 300 A 192.0.2.1') &&
        records.includes('h19.example.com. 300 A 192.0.2.7'),
    );
    assert.equal(records.filter((r) => / A /.test(r)).length, 21, 'www and 20 hosts');
    assert.equal(followed().full, false);
    store.apply(www('192.0.2.9'));
    await op.idle();
    await f.idle();
    assert.equal(served(table).serial, status(store)?.serial);
    assert.ok(served(table).records.includes('www.example.com. 300 A 192.0.2.9'));
    assert.equal(followed().pending.size, 0, 'published');
    op.stop();
    f.stop();
  });

  test('a replica that never served a zone serves unconfirmed content only after waiting; none without a serial', async () => {
    const store = new MemoryStore(now);
    seed(store);
    const c = operator(store);
    c.start();
    await c.idle();
    c.stop();
    store.apply(www('192.0.2.7')); // changed while the operator is away
    store.apply(zone('dns', 'other-com', 'other.com')); // never seen by an operator: no serial
    const { table, follower: f } = follower(store, 100);
    f.start();
    await f.idle();
    assert.equal(served(table).serial, undefined, 'waits for the operator first');
    await new Promise((r) => setTimeout(r, 150));
    await f.idle();
    assert.equal(served(table).serial, 2026112100);
    assert.ok(served(table).records.includes('www.example.com. 300 A 192.0.2.7'));
    assert.deepEqual(f.publishedState('dns/example-com'), { serial: 2026112100, confirmed: false });
    assert.equal(table.get('other.com.'), undefined);

    // The operator comes back: a new serial, confirmed.
    const back = operator(store);
    back.start();
    await back.idle();
    await f.idle();
    assert.deepEqual(f.publishedState('dns/example-com'), { serial: 2026112101, confirmed: true });
    assert.ok(table.get('other.com.'), 'served once the operator recorded its serial');
    back.stop();
    f.stop();
  });

  test('a replica started while the operator holds a change does not serve the held content at the old serial', async () => {
    let clock = Date.parse('2026-11-21T12:00:00Z');
    const at = () => new Date(clock);
    const store = new MemoryStore(at, { restoreDeleting: true });
    store.apply(zoneClass());
    store.apply(zone('dns', 'example-com', 'example.com'));
    const host = (i: number) =>
      recordSet(
        'dns',
        `h${i}`,
        { zoneRef: { name: 'example-com' }, name: `h${i}`, type: 'A', records: [`192.0.2.${i}`] },
        i,
      );
    for (let i = 1; i <= 20; i++) store.apply(host(i));
    const c = new Controller({
      store,
      backend: new BuiltinBackend(new ZoneTable(), undefined, { keepsServing: true }),
      serials: new MemorySerialStore(),
      now: at,
      hashOnChange: true,
      changeSafetyWindowMs: 10_000,
    });
    c.start();
    await c.idle();
    clock += 20_000;
    const serial = status(store)?.serial;
    // 15 of 21 RRsets deleted: held by the operator (their record sets wait with their finalizers).
    for (let i = 1; i <= 15; i++) store.remove('DNSRecordSet', `dns/h${i}`);
    await c.idle();
    const programmed = status(store)?.conditions?.find((x) => x.type === 'Programmed');
    assert.equal(programmed?.reason, 'ChangeHeld');
    // A replica that starts now (a rolling update, a scale-up): it cannot rebuild what was served.
    const { table, follower: f } = follower(store, 0);
    f.start();
    await f.idle();
    await new Promise((r) => setTimeout(r, 20));
    await f.idle();
    assert.equal(table.get('example.com.'), undefined, 'the held deletion is not served at the old serial');
    // Confirmed: the operator records the new content, and the replica serves it at its serial.
    const z = store.get('DNSZone', 'dns/example-com') as DNSZone;
    store.apply({
      ...z,
      metadata: {
        ...z.metadata,
        annotations: { 'dns.zonekeeper.dev/confirm-change': c.heldZones()[0]!.hash },
      },
    });
    await c.idle();
    await f.idle();
    const after = served(table);
    assert.ok(after.serial !== undefined && after.serial > serial!, JSON.stringify(after.serial));
    assert.equal(after.records.filter((r) => / A /.test(r)).length, 5);
    assert.deepEqual(f.publishedState('dns/example-com'), { serial: after.serial, confirmed: true });
    c.stop();
    f.stop();
  });

  test('zones of a class with another backend are not served here', async () => {
    const store = new MemoryStore(now);
    seed(store);
    const c = operator(store);
    c.start();
    await c.idle();
    c.stop();
    const { table, follower: f } = follower(store);
    f.start();
    await f.idle();
    assert.ok(table.get('example.com.'));
    const other = zoneClass();
    store.apply({
      ...other,
      spec: {
        ...other.spec,
        backend: { powerdns: { url: 'http://127.0.0.1:8081', apiKeySecretRef: { env: 'PDNS_API_KEY' } } },
      },
    } as typeof other);
    await f.idle();
    assert.equal(table.get('example.com.'), undefined);
    f.stop();
  });

  test('a zone being deleted is dropped at once, without waiting for the operator', async () => {
    const store = new MemoryStore(now);
    seed(store);
    const c = operator(store);
    c.start();
    await c.idle();
    c.stop();
    const { table, follower: f } = follower(store);
    f.start();
    await f.idle();
    assert.ok(table.get('example.com.'));
    store.remove('DNSZone', 'dns/example-com'); // held by the finalizer: deletionTimestamp set
    assert.ok(store.get('DNSZone', 'dns/example-com')?.metadata.deletionTimestamp);
    await f.idle();
    assert.equal(table.get('example.com.'), undefined);
    f.stop();
  });
});

describe('ZoneFollower: the update policy of RFC 2136 UPDATE', () => {
  const classWithKeys = () =>
    zoneClass('builtin', ['ns1.example.com.'], {
      transfers: {
        tsigKeys: [
          {
            name: 'dyn',
            algorithm: 'hmac-sha256',
            secretRef: { name: 'keys', key: 'dyn' },
            usage: ['update'],
          },
          {
            name: 'other',
            algorithm: 'hmac-sha256',
            secretRef: { name: 'keys', key: 'other' },
            usage: ['update'],
          },
          { name: 'xfr', algorithm: 'hmac-sha256', secretRef: { name: 'keys', key: 'xfr' } },
        ],
      },
    });
  const policy = (...keys: string[]) => ({
    updatePolicy: keys.map((key) => ({ key, names: ['*.dyn'], types: ['A' as const] })),
  });

  test('the served zone carries the policy and only its update keys; a policy-only change reaches it', async () => {
    const store = new MemoryStore(now);
    const read: string[] = [];
    const secrets = async (ref: { key?: string }) => {
      read.push(ref.key!);
      return Buffer.from(`secret-of-${ref.key}`).toString('base64');
    };
    store.apply(classWithKeys());
    store.apply(zone('dns', 'example-com', 'example.com', policy('dyn')));
    store.apply(www('192.0.2.1'));
    const c = new Controller({
      store,
      backend: new BuiltinBackend(new ZoneTable()),
      serials: new MemorySerialStore(),
      now,
      hashOnChange: true,
      secrets,
    });
    c.start();
    await c.idle();
    read.length = 0;
    const table = new ZoneTable();
    const f = new ZoneFollower({ store, backend: new BuiltinBackend(table), secrets });
    f.start();
    await f.idle();
    const served = () => table.get('example.com.')!.transfers;
    assert.deepEqual(
      served()?.update?.rules.map((r) => r.key),
      ['dyn'],
    );
    assert.deepEqual(served()?.update?.namespace, 'dns');
    // Only the key the policy names was read: no transfer key, no unnamed update key.
    assert.deepEqual(read, ['dyn']);
    assert.ok(served()?.updateKeys('dyn.'));
    assert.equal(served()?.updateKeys('other.'), undefined);
    const serial = table.get('example.com.')!.serial;
    // The policy changes, the content does not.
    store.apply({ ...zone('dns', 'example-com', 'example.com', policy('other')), status: status(store) });
    await c.idle();
    await f.idle();
    assert.deepEqual(
      served()?.update?.rules.map((r) => r.key),
      ['other'],
    );
    assert.ok(served()?.updateKeys('other.'));
    assert.equal(served()?.updateKeys('dyn.'), undefined);
    assert.equal(table.get('example.com.')!.serial, serial);
    // The policy removed: the zone takes no UPDATE.
    store.apply({ ...zone('dns', 'example-com', 'example.com'), status: status(store) });
    await c.idle();
    await f.idle();
    assert.equal(served()?.update, undefined);
    f.stop();
    c.stop();
  });
});

describe('ZoneFollower: signed zones (ADR 0021)', () => {
  /** Keys shared as the key Secret shares them; a replica whose read fails until `readable`. */
  function keyStores() {
    const shared = new MemoryKeyStore(generateDnssecKey);
    let readable = false;
    const replica: DnssecKeyStore = {
      keysFor: async (origin, settings) => {
        if (!readable) throw new Error('no DNSSEC keys in Secret zonekeeper-system/x yet');
        return shared.keysFor(origin, settings);
      },
    };
    return { shared, replica, open: () => (readable = true) };
  }
  const signedSeed = (store: MemoryStore) => {
    store.apply(zoneClass());
    store.apply(zone('dns', 'example-com', 'example.com', { dnssec: { enabled: true } }));
    store.apply(www('192.0.2.1'));
  };

  test('the operator records signedAt and signing with the serial; replicas sign alike at it', async () => {
    const store = new MemoryStore(now);
    signedSeed(store);
    const keys = keyStores();
    keys.open();
    const c = new Controller({
      store,
      backend: new BuiltinBackend(new ZoneTable(), undefined, { dnssecKeys: keys.shared }),
      serials: new MemorySerialStore(),
      now,
      hashOnChange: true,
    });
    c.start();
    await c.idle();
    const s = status(store);
    assert.equal(s?.signedAt, Math.floor(now().getTime() / 1000));
    assert.equal(s?.signing, 'ECDSAP256SHA256/NSEC/CSK');
    assert.equal(s?.dnssec?.keys?.length, 1);
    const tables = [new ZoneTable(), new ZoneTable()];
    for (const table of tables) {
      const f = new ZoneFollower({
        store,
        backend: new BuiltinBackend(table, undefined, { dnssecKeys: keys.replica }),
      });
      f.start();
      await f.idle();
      f.stop();
    }
    const signatures = tables.map((t) => {
      const d = t.get('example.com.')?.dnssec;
      assert.ok(d, 'served signed');
      // Every RRSIG, NSEC and DNSKEY byte, with the serial.
      return `${t.get('example.com.')!.serial} ${JSON.stringify(d, (_k, v) =>
        v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v instanceof Map ? [...v] : v,
      )}`;
    });
    assert.equal(signatures[0], signatures[1]);
    c.stop();
  });

  test('a replica serves no signed serial unsigned: without signedAt it waits, without keys, or with others than recorded, it serves nothing', async () => {
    const store = new MemoryStore(now);
    signedSeed(store);
    const keys = keyStores();
    // The operator recorded a serial but (an older operator) no signing time: nothing is served.
    const z = store.get('DNSZone', 'dns/example-com') as DNSZone;
    store.apply(z);
    const table = new ZoneTable();
    const f = new ZoneFollower({
      store,
      backend: new BuiltinBackend(table, undefined, { dnssecKeys: keys.replica }),
      unconfirmedAfterMs: 0,
    });
    await store.updateStatus('DNSZone', 'dns/example-com', { serial: 2026112100 });
    f.start();
    await f.idle();
    assert.equal(table.get('example.com.'), undefined, 'a signed zone served without a signing time');
    // A signing time, but the keys cannot be read yet: still nothing (never unsigned content).
    await store.updateStatus('DNSZone', 'dns/example-com', {
      serial: 2026112100,
      signedAt: 1_800_000_000,
      signing: 'ECDSAP256SHA256/NSEC/CSK',
    });
    await f.idle();
    assert.equal(table.get('example.com.'), undefined, 'served without its keys');
    // Keys readable, but not the ones the operator recorded for the serial: still nothing.
    keys.open();
    await store.updateStatus('DNSZone', 'dns/example-com', {
      serial: 2026112100,
      signedAt: 1_800_000_000,
      signing: 'ECDSAP256SHA256/NSEC/CSK',
      dnssec: { keys: [{ keyTag: 1, algorithm: 13, role: 'CSK', active: true }] },
    });
    await f.idle();
    assert.equal(table.get('example.com.'), undefined, 'signed with other keys than recorded');
    const tag = (
      await keys.shared.keysFor('example.com.', effectiveDnssec(undefined, { enabled: true })!)
    ).map(({ key }) => keyTag(dnskeyRdata(key)))[0]!;
    // The recorded keys: served signed.
    await store.updateStatus('DNSZone', 'dns/example-com', {
      serial: 2026112100,
      signedAt: 1_800_000_000,
      signing: 'ECDSAP256SHA256/NSEC/CSK',
      dnssec: { keys: [{ keyTag: tag, algorithm: 13, role: 'CSK', active: true }] },
    });
    await f.idle();
    f.stop();
    const served = table.get('example.com.');
    assert.equal(served?.serial, 2026112100);
    assert.ok(served?.dnssec, 'served unsigned');
  });

  test('keys made again at a recorded serial (a key Secret deleted, a new leader): a new serial, never new keys at the old one', async () => {
    const store = new MemoryStore(now);
    signedSeed(store);
    const serials = new MemorySerialStore();
    const leader = (keys: DnssecKeyStore) =>
      new Controller({
        store,
        backend: new BuiltinBackend(new ZoneTable(), undefined, { dnssecKeys: keys }),
        serials,
        now,
        hashOnChange: true,
      });
    const first = leader(new MemoryKeyStore(generateDnssecKey));
    first.start();
    await first.idle();
    first.stop();
    const before = status(store)!;
    // The next leader finds no keys and makes new ones.
    const second = leader(new MemoryKeyStore(generateDnssecKey));
    second.start();
    // The new keys are found at the apply; the zone is visited again (a requeue) for a new serial.
    for (let i = 0; i < 200 && status(store)?.serial === before.serial; i++) {
      await second.idle();
      await new Promise((r) => setTimeout(r, 10));
    }
    await second.idle();
    second.stop();
    const after = status(store)!;
    assert.notDeepEqual(after.dnssec?.keys, before.dnssec?.keys);
    assert.notEqual(after.serial, before.serial, 'new keys recorded at the serial signed with the old ones');
    // Unchanged keys keep the serial (a restart).
    const keys = new MemoryKeyStore(generateDnssecKey);
    const third = leader(keys);
    third.start();
    await third.idle();
    third.stop();
    const fourth = leader(keys);
    fourth.start();
    await fourth.idle();
    fourth.stop();
    const a = status(store)!;
    const fifth = leader(keys);
    fifth.start();
    await fifth.idle();
    fifth.stop();
    assert.equal(status(store)!.serial, a.serial);
  });
});
