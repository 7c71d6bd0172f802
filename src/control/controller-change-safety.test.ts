/**
 * Change safety in the controller, with a MemoryStore and the built-in backend: a change over the
 * threshold is held (nothing reaches the backend, no serial is chosen, Programmed=False/ChangeHeld),
 * released by exactly its hash, measured against the content stable for the window.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { CONFIRM_CHANGE_ANNOTATION, type DNSZone, type Domain, type Resource } from '../api/index.ts';
import { BackendError, type ProgrammedZone } from '../backends/backend.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { Controller } from './controller.ts';
import { MemoryStore } from './memory-store.ts';
import type { ZoneSerialState } from './serial-store.ts';

const KEY = 'dns/example-com';

/** The built-in server, unreachable while `down` is set (nothing applied). */
class FlakyBackend extends BuiltinBackend {
  down = false;

  override async applyZone(zone: ProgrammedZone) {
    if (this.down) throw new BackendError('BackendUnreachable', 'down for the test');
    return super.applyZone(zone);
  }
}

function setUp(
  options: {
    windowMs?: number;
    zoneSpec?: Partial<DNSZone['spec']>;
    /** A store and saved serials from before (a restart); the zone is not applied again. */
    from?: { store: MemoryStore; saved: Map<string, ZoneSerialState> };
    /**
     * Whether the backend stands for one that keeps serving while the controller is down (PowerDNS,
     * `zonekeeper server` replicas; default) or for `zonekeeper serve`'s own server (false).
     */
    keepsServing?: boolean;
    /** Each serial saved with its content hash (the Kubernetes operator's setting). */
    hashOnChange?: boolean;
  } = {},
) {
  let clock = Date.parse('2026-11-21T12:00:00Z');
  const store = options.from?.store ?? new MemoryStore(undefined, { restoreDeleting: true });
  const table = new ZoneTable();
  const backend = new FlakyBackend(table, undefined, { keepsServing: options.keepsServing ?? true });
  const saved = options.from?.saved ?? new Map<string, ZoneSerialState>();
  const serials = {
    get: (origin: string) => saved.get(origin),
    set: async (origin: string, state: ZoneSerialState) => {
      saved.set(origin, state);
    },
    // As the state folder does (folder mode).
    keepsCounts: true,
  };
  const controller = new Controller({
    store,
    backend,
    serials,
    now: () => new Date(clock),
    changeSafetyWindowMs: options.windowMs ?? 10_000,
    ...(options.hashOnChange ? { hashOnChange: true } : {}),
  });
  if (!options.from) {
    store.apply(zoneClass());
    store.apply(zone('dns', 'example-com', 'example.com', options.zoneSpec ?? {}));
  }
  return {
    store,
    saved,
    table,
    backend,
    controller,
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

function host(store: MemoryStore, i: number, value = `192.0.2.${i}`): void {
  store.apply(
    recordSet(
      'dns',
      `h${i}`,
      { zoneRef: { name: 'example-com' }, name: `h${i}`, type: 'A', records: [value] },
      i,
    ),
  );
}

/** The object with the confirmation annotation set to `hash` (a DNSZone's, or any object's). */
function withConfirmation<T extends Resource>(object: T, hash: string): T {
  return { ...object, metadata: { ...object.metadata, annotations: { [CONFIRM_CHANGE_ANNOTATION]: hash } } };
}

/** from..to, both included. */
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** A new process's store in folder mode: the folder read again, objects without their statuses. */
function reread(hosts: Iterable<number>): MemoryStore {
  const store = new MemoryStore(undefined, { restoreDeleting: true });
  store.apply(zoneClass());
  store.apply(zone('dns', 'example-com', 'example.com'));
  for (const i of hosts) host(store, i);
  return store;
}

function programmed(store: MemoryStore) {
  return (store.get('DNSZone', KEY) as Resource).status?.conditions?.find((c) => c.type === 'Programmed');
}

function served(table: ZoneTable): string[] {
  const snapshot = table.get('example.com.');
  assert.ok(snapshot, 'the zone is served');
  const names: string[] = [];
  for (const rrset of snapshot.rrsets()) if (rrset.type === 'A') names.push(rrset.owner.split('.')[0]!);
  return names.sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
}

describe('controller: change safety', () => {
  test('over the threshold: held, serial and content kept; released by exactly its hash', async () => {
    const { store, table, controller } = setUp();
    for (let i = 1; i <= 11; i++) host(store, i);
    controller.start();
    await controller.idle();
    const serial = (store.get('DNSZone', KEY) as DNSZone).status?.serial;
    assert.equal(programmed(store)?.status, 'True');
    // 12 RRsets (apex NS + 11): 4 deleted and 0 changed is 33 %.
    for (const i of [1, 2, 3, 4]) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    const held = programmed(store);
    assert.equal(held?.reason, 'ChangeHeld');
    assert.match(held?.message ?? '', /would delete 4 and change 0 of the zone's 12 RRsets/);
    assert.equal((store.get('DNSZone', KEY) as DNSZone).status?.serial, serial);
    assert.equal(served(table).length, 11);
    assert.equal(controller.heldZones().length, 1);
    const hash = controller.heldZones()[0]!.hash;
    // A stale hash: nothing.
    const z = store.get('DNSZone', KEY) as DNSZone;
    store.apply(withConfirmation(z, 'ffffffffffffffffffffffffffffffff'));
    await controller.idle();
    assert.match(
      programmed(store)?.message ?? '',
      /"ffffffffffffffffffffffffffffffff" is for another change/,
    );
    assert.equal(served(table).length, 11);
    store.apply(withConfirmation(z, hash));
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True');
    assert.deepEqual(served(table), ['h5', 'h6', 'h7', 'h8', 'h9', 'h10', 'h11']);
    assert.equal(controller.heldZones().length, 0);
    controller.stop();
  });

  test('hostile tenant: an annotation on its own zone or on a record set does not release another zone', async () => {
    const { store, table, controller } = setUp();
    store.apply(zone('tenant', 'other-com', 'other.com'));
    for (let i = 1; i <= 11; i++) host(store, i);
    controller.start();
    await controller.idle();
    for (const i of [1, 2, 3, 4]) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    const hash = controller.heldZones()[0]!.hash;
    // The tenant copies the hash from the status onto what it can write: its own zone, and a record
    // set (in its namespace) published into the held zone.
    const own = store.get('DNSZone', 'tenant/other-com') as DNSZone;
    store.apply(withConfirmation(own, hash));
    const rs = recordSet('tenant', 'sneaky', {
      zoneRef: { name: 'example-com', namespace: 'dns' },
      name: 'x',
      type: 'A',
      records: ['192.0.2.99'],
    });
    store.apply(withConfirmation(rs, hash));
    await controller.idle();
    controller.recheckZone(KEY);
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld');
    assert.equal(served(table).length, 11);
    // Non-hashes are not shortcuts.
    const z = store.get('DNSZone', KEY) as DNSZone;
    for (const value of ['*', 'all', 'true', hash.slice(0, 8)]) {
      store.apply(withConfirmation(z, value));
      await controller.idle();
      assert.equal(programmed(store)?.reason, 'ChangeHeld', value);
    }
    controller.stop();
  });

  test('slices within the window add up; undoing the held slice releases the hold', async () => {
    const { store, table, controller, advance } = setUp();
    for (let i = 1; i <= 11; i++) host(store, i);
    controller.start();
    await controller.idle();
    advance(20_000);
    for (const i of [1, 2]) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', 'two of twelve apply');
    assert.equal(served(table).length, 9);
    advance(1_000);
    for (const i of [3, 4]) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    assert.match(programmed(store)?.message ?? '', /would delete 4 and change 0 of the zone's 12 RRsets/);
    assert.equal(served(table).length, 9);
    for (const i of [3, 4]) host(store, i);
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.equal(served(table).length, 9);
    // Stable for the window: the next two deletions are measured from the new baseline.
    advance(20_000);
    for (const i of [3, 4]) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True');
    assert.equal(served(table).length, 7);
    controller.stop();
  });

  test('a rebuild that changes nothing counted does not restart the stability window', async () => {
    const { store, table, controller, advance } = setUp();
    for (let i = 1; i <= 11; i++) host(store, i);
    controller.start();
    await controller.idle();
    advance(20_000);
    for (const i of [1, 2]) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', 'two of twelve apply');
    // New SOA timers: the model is rebuilt, its RRsets are the same.
    advance(5_000);
    const z = store.get('DNSZone', KEY) as DNSZone;
    store.apply({ ...z, spec: { ...z.spec, soa: { refresh: 1234 } } });
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True');
    // Quiet for the window since the deletion: the next two are measured from a new baseline.
    advance(6_000);
    for (const i of [3, 4]) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.equal(served(table).length, 7);
    controller.stop();
  });

  test('a rebuild after a quiet window is measured from the content served since, not from before', async () => {
    const { store, table, controller, advance } = setUp();
    for (let i = 1; i <= 20; i++) host(store, i);
    controller.start();
    await controller.idle();
    advance(20_000);
    // 6 of 21 RRsets get other addresses: under 30 %, served.
    for (let i = 1; i <= 6; i++) host(store, i, `198.51.100.${i}`);
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', 'six of twenty-one apply');
    // A minute later the class's name servers change: one RRset (the apex NS) changes now, and the
    // six served a minute ago are not part of this change.
    advance(60_000);
    store.apply(zoneClass('builtin', ['ns1.example.com.', 'ns3.example.com.']));
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.equal(controller.heldZones().length, 0);
    assert.equal(served(table).length, 20);
    controller.stop();
  });

  test('changes count like deletions; enabled: false opts out; small zones are never held', async () => {
    const a = setUp();
    for (let i = 1; i <= 11; i++) host(a.store, i);
    a.controller.start();
    await a.controller.idle();
    for (const i of [1, 2, 3, 4]) host(a.store, i, `198.51.100.${i}`);
    await a.controller.idle();
    assert.match(programmed(a.store)?.message ?? '', /would delete 0 and change 4 of the zone's 12 RRsets/);
    a.controller.stop();

    const b = setUp({ zoneSpec: { changeSafety: { enabled: false } } });
    for (let i = 1; i <= 11; i++) host(b.store, i);
    b.controller.start();
    await b.controller.idle();
    for (let i = 1; i <= 11; i++) b.store.remove('DNSRecordSet', `dns/h${i}`);
    await b.controller.idle();
    assert.equal(programmed(b.store)?.status, 'True');
    b.controller.stop();

    const c = setUp();
    for (let i = 1; i <= 8; i++) host(c.store, i);
    c.controller.start();
    await c.controller.idle();
    for (let i = 1; i <= 8; i++) c.store.remove('DNSRecordSet', `dns/h${i}`);
    await c.controller.idle();
    assert.equal(programmed(c.store)?.status, 'True', 'nine RRsets: below the minimum of ten');
    c.controller.stop();
  });

  // A zone model's first build lists no RRset changes (it is sent whole, and its content is the
  // baseline): the holds below are those of a first build followed by a different content.
  test('a large deletion after a first build the backend never took is held against that first content', async () => {
    const { store, table, backend, controller } = setUp();
    for (let i = 1; i <= 11; i++) host(store, i);
    backend.down = true;
    controller.start();
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'BackendUnreachable');
    for (const i of [1, 2, 3, 4]) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    const held = programmed(store);
    assert.equal(held?.reason, 'ChangeHeld');
    assert.match(held?.message ?? '', /would delete 4 and change 0 of the zone's 12 RRsets/);
    assert.equal(table.get('example.com.'), undefined, 'nothing served');
    // Undone: nothing is held any more, and the first content goes whole once the backend is back.
    for (const i of [1, 2, 3, 4]) host(store, i);
    backend.down = false;
    await controller.idle();
    controller.recheckZone(KEY);
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.equal(served(table).length, 11);
    controller.stop();
  });

  test('a deletion made while the controller was stopped is held after the restart, against the status count', async () => {
    const before = setUp();
    for (let i = 1; i <= 20; i++) host(before.store, i);
    before.controller.start();
    await before.controller.idle();
    assert.equal((before.store.get('DNSZone', KEY) as DNSZone).status?.rrsetCount, 21);
    before.controller.stop();
    // While stopped: 15 of the 21 RRsets deleted (71 %).
    for (let i = 1; i <= 15; i++) before.store.remove('DNSRecordSet', `dns/h${i}`);
    const serial = (before.store.get('DNSZone', KEY) as DNSZone).status?.serial;
    const after = setUp({ from: before });
    after.controller.start();
    await after.controller.idle();
    const held = programmed(after.store);
    assert.equal(held?.reason, 'ChangeHeld', JSON.stringify(held));
    assert.match(held?.message ?? '', /would delete 15 and change 0 of the zone's 21 RRsets/);
    assert.match(held?.message ?? '', /served before this start, by count/);
    assert.equal((after.store.get('DNSZone', KEY) as DNSZone).status?.serial, serial);
    assert.equal((after.store.get('DNSZone', KEY) as DNSZone).status?.rrsetCount, 21);
    assert.equal(after.table.get('example.com.'), undefined, 'nothing of the held content is served');
    // Another edit makes it another change: the hash copied before does nothing.
    const first = after.controller.heldZones()[0]!.hash;
    after.store.remove('DNSRecordSet', 'dns/h16');
    await after.controller.idle();
    const hash = after.controller.heldZones()[0]!.hash;
    assert.notEqual(hash, first);
    const z = after.store.get('DNSZone', KEY) as DNSZone;
    after.store.apply(withConfirmation(z, first));
    await after.controller.idle();
    assert.equal(programmed(after.store)?.reason, 'ChangeHeld');
    after.store.apply(withConfirmation(z, hash));
    await after.controller.idle();
    assert.equal(programmed(after.store)?.status, 'True', JSON.stringify(programmed(after.store)));
    assert.deepEqual(served(after.table), ['h17', 'h18', 'h19', 'h20']);
    assert.equal((after.store.get('DNSZone', KEY) as DNSZone).status?.rrsetCount, 5);
    after.controller.stop();
  });

  test('folder mode: with no status kept, the count saved with the serial is the baseline after a restart', async () => {
    const before = setUp();
    for (let i = 1; i <= 20; i++) host(before.store, i);
    before.controller.start();
    await before.controller.idle();
    before.controller.stop();
    assert.equal(before.saved.get('example.com.')?.rrsets, 21);
    // A new process reads the folder again: the objects, without their statuses.
    const store = reread(range(16, 20));
    const after = setUp({ from: { store, saved: before.saved } });
    after.controller.start();
    await after.controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld', JSON.stringify(programmed(store)));
    assert.match(programmed(store)?.message ?? '', /would delete 15 and change 0 of the zone's 21 RRsets/);
    assert.equal(after.saved.get('example.com.')?.rrsets, 21, 'a held change saves no serial');
    const hash = after.controller.heldZones()[0]!.hash;
    const z = store.get('DNSZone', KEY) as DNSZone;
    store.apply(withConfirmation(z, hash));
    await after.controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.equal(served(after.table).length, 5);
    assert.equal(after.saved.get('example.com.')?.rrsets, 6);
    after.controller.stop();
  });

  test('folder mode: a serial saved without its count (an older version) gets it at the next start', async () => {
    const before = setUp();
    for (let i = 1; i <= 20; i++) host(before.store, i);
    before.controller.start();
    await before.controller.idle();
    // A graceful stop saves the hash still pending after the first serve (as `serve` does).
    await before.controller.flush();
    before.controller.stop();
    const kept = before.saved.get('example.com.')!;
    // The state folder as a version that kept no count left it.
    before.saved.set('example.com.', { serial: kept.serial, ...(kept.hash ? { hash: kept.hash } : {}) });
    // The first start of this version, nothing changed: the serial is kept, and its count saved.
    const first = setUp({
      from: { store: reread(range(1, 20)), saved: before.saved },
    });
    first.controller.start();
    await first.controller.idle();
    first.controller.stop();
    assert.equal(before.saved.get('example.com.')?.serial, kept.serial);
    assert.equal(before.saved.get('example.com.')?.rrsets, 21);
    // The next restart after 15 of 21 were deleted while stopped: held.
    const store = reread([16, 17, 18, 19, 20]);
    const second = setUp({ from: { store, saved: before.saved } });
    second.controller.start();
    await second.controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld', JSON.stringify(programmed(store)));
    second.controller.stop();
  });

  test('a restart: a small deletion or additions while stopped apply; with nothing known, the first build is the baseline', async () => {
    const before = setUp();
    for (let i = 1; i <= 20; i++) host(before.store, i);
    before.controller.start();
    await before.controller.idle();
    before.controller.stop();
    // While stopped: 2 of 21 deleted (under the limit), 3 added.
    for (let i = 1; i <= 2; i++) before.store.remove('DNSRecordSet', `dns/h${i}`);
    for (let i = 21; i <= 23; i++) host(before.store, i);
    const after = setUp({ from: before });
    after.controller.start();
    await after.controller.idle();
    assert.equal(programmed(after.store)?.status, 'True', JSON.stringify(programmed(after.store)));
    assert.equal(served(after.table).length, 21);
    // Served, it is the baseline: a later deletion is measured RRset by RRset against it (5 of 22).
    for (let i = 3; i <= 9; i++) after.store.remove('DNSRecordSet', `dns/h${i}`);
    await after.controller.idle();
    assert.match(
      programmed(after.store)?.message ?? '',
      /would delete 7 and change 0 of the zone's 22 RRsets/,
    );
    after.controller.stop();

    // A first start: no status, nothing saved. The first content is the baseline, whatever its size.
    const store = reread(range(1, 5));
    const first = setUp({ from: { store, saved: new Map() } });
    first.controller.start();
    await first.controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.equal(served(first.table).length, 5);
    first.controller.stop();
  });

  test('a change held when the controller stopped stays held after the restart, even when it keeps the count; undone, it goes', async () => {
    // A zone's status (which says a change was held, and the hash of what is served) outlives the
    // process only in Kubernetes, where the operator saves each serial with its hash.
    const before = setUp({ hashOnChange: true });
    for (let i = 1; i <= 20; i++) host(before.store, i);
    before.controller.start();
    await before.controller.idle();
    before.advance(20_000);
    await before.controller.idle();
    const servedStatus = (before.store.get('DNSZone', KEY) as DNSZone).status;
    // 15 of 21 RRsets replaced by 15 others: held (the count stays 21).
    for (let i = 1; i <= 15; i++) before.store.remove('DNSRecordSet', `dns/h${i}`);
    for (let i = 101; i <= 115; i++) host(before.store, i);
    await before.controller.idle();
    assert.equal(programmed(before.store)?.reason, 'ChangeHeld');
    before.controller.stop();

    // The controller restarts (an upgrade, a failover): the held change is still held.
    const after = setUp({ from: before, hashOnChange: true });
    after.controller.start();
    await after.controller.idle();
    const held = programmed(after.store);
    assert.equal(held?.reason, 'ChangeHeld', JSON.stringify(held));
    assert.match(held?.message ?? '', /was held for confirmation when the controller stopped/);
    assert.equal((after.store.get('DNSZone', KEY) as DNSZone).status?.serial, servedStatus?.serial);
    assert.equal(after.table.get('example.com.'), undefined, 'nothing of the held content is served');
    const hash = after.controller.heldZones()[0]!.hash;
    after.controller.stop();

    // Another restart after the change was undone while stopped: the content is what was served.
    for (let i = 101; i <= 115; i++) before.store.remove('DNSRecordSet', `dns/h${i}`);
    for (let i = 1; i <= 15; i++) host(before.store, i);
    const undone = setUp({ from: before, hashOnChange: true });
    undone.controller.start();
    await undone.controller.idle();
    assert.equal(programmed(undone.store)?.status, 'True', JSON.stringify(programmed(undone.store)));
    assert.equal(served(undone.table).length, 20);
    assert.equal((undone.store.get('DNSZone', KEY) as DNSZone).status?.serial, servedStatus?.serial);
    undone.controller.stop();

    // The change made again while stopped, and confirmed with the hash a restarted controller gave.
    for (let i = 1; i <= 15; i++) before.store.remove('DNSRecordSet', `dns/h${i}`);
    for (let i = 101; i <= 115; i++) host(before.store, i);
    const z = before.store.get('DNSZone', KEY) as DNSZone;
    before.store.apply(withConfirmation(z, hash));
    const confirmed = setUp({ from: before, hashOnChange: true });
    confirmed.controller.start();
    await confirmed.controller.idle();
    assert.equal(programmed(confirmed.store)?.status, 'True', JSON.stringify(programmed(confirmed.store)));
    assert.equal(served(confirmed.table).length, 20);
    confirmed.controller.stop();
  });

  test('a restart of a process whose own server served the zone: the first content is served, not held', async () => {
    // `zonekeeper serve`'s built-in server holds nothing after a restart: holding the first content
    // would leave the zone unserved until confirmed, so it is the baseline (docs/change-safety.md).
    const before = setUp({ keepsServing: false });
    for (let i = 1; i <= 40; i++) host(before.store, i);
    before.controller.start();
    await before.controller.idle();
    before.controller.stop();
    for (let i = 1; i <= 30; i++) before.store.remove('DNSRecordSet', `dns/h${i}`);
    const after = setUp({ from: before, keepsServing: false });
    after.controller.start();
    await after.controller.idle();
    assert.equal(programmed(after.store)?.status, 'True', JSON.stringify(programmed(after.store)));
    assert.equal(served(after.table).length, 10);
    // Served, it is the baseline: a later large deletion is held as usual (8 of 11).
    for (let i = 31; i <= 38; i++) after.store.remove('DNSRecordSet', `dns/h${i}`);
    await after.controller.idle();
    assert.equal(programmed(after.store)?.reason, 'ChangeHeld', JSON.stringify(programmed(after.store)));
    assert.match(
      programmed(after.store)?.message ?? '',
      /would delete 8 and change 0 of the zone's 11 RRsets/,
    );
    after.controller.stop();
  });

  test("a model rebuilt for the zone's settings keeps the baseline: a deletion at the same time is held", async () => {
    const { store, table, controller } = setUp();
    for (let i = 1; i <= 20; i++) host(store, i);
    controller.start();
    await controller.idle();
    // The zone's default TTL and 7 of its 21 RRsets go at once: the model is built again, whole, and
    // measured against the content served before (the TTL alone is the settings' change: not counted).
    for (let i = 1; i <= 7; i++) store.remove('DNSRecordSet', `dns/h${i}`);
    const z = store.get('DNSZone', KEY) as DNSZone;
    store.apply({ ...z, spec: { ...z.spec, ttl: 600 } });
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld', JSON.stringify(programmed(store)));
    assert.match(programmed(store)?.message ?? '', /would delete 7 and change 0 of the zone's 21 RRsets/);
    assert.equal(served(table).length, 20);
    const hash = controller.heldZones()[0]!.hash;
    const now = store.get('DNSZone', KEY) as DNSZone;
    store.apply(withConfirmation(now, hash));
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.equal(served(table).length, 13);
    assert.equal(table.get('example.com.')?.rrsets().next().value?.ttl, 600);
    controller.stop();
  });

  test("a held deletion stays held across a rebuild for the class's name servers; its new hash applies it", async () => {
    const { store, table, controller } = setUp();
    for (let i = 1; i <= 20; i++) host(store, i);
    controller.start();
    await controller.idle();
    const serial = (store.get('DNSZone', KEY) as DNSZone).status?.serial;
    for (let i = 1; i <= 15; i++) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld');
    const first = controller.heldZones()[0]!.hash;
    // The class's name servers change: every zone of the class is built again.
    store.apply(zoneClass('builtin', ['ns1.example.com.', 'ns3.example.com.']));
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld', JSON.stringify(programmed(store)));
    assert.match(programmed(store)?.message ?? '', /would delete 15 and change 1 of the zone's 21 RRsets/);
    assert.equal(served(table).length, 20);
    assert.equal((store.get('DNSZone', KEY) as DNSZone).status?.serial, serial);
    assert.equal(controller.heldZones().length, 1);
    // The change now includes the apex NS: the hash copied before names another change.
    const hash = controller.heldZones()[0]!.hash;
    assert.notEqual(hash, first);
    const z = store.get('DNSZone', KEY) as DNSZone;
    store.apply(withConfirmation(z, first));
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld');
    assert.equal(served(table).length, 20);
    store.apply(withConfirmation(z, hash));
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.deepEqual(served(table), ['h16', 'h17', 'h18', 'h19', 'h20']);
    controller.stop();
  });

  test("a held deletion undone after the class's default TTL changed is released without a confirmation", async () => {
    const { store, table, controller } = setUp();
    for (let i = 1; i <= 20; i++) host(store, i);
    controller.start();
    await controller.idle();
    for (let i = 1; i <= 15; i++) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld');
    const hash = controller.heldZones()[0]!.hash;
    // The class's owner sets a new default TTL: the zone is rebuilt, the deletion stays held as it was.
    store.apply(zoneClass('builtin', undefined, { defaults: { ttl: 900 } }));
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld');
    assert.equal(controller.heldZones()[0]?.hash, hash, 'the same change, the same hash');
    assert.equal(served(table).length, 20);
    // The tenant restores its record sets: they come back at the new default, and nothing is held.
    for (let i = 1; i <= 15; i++) host(store, i);
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.equal(controller.heldZones().length, 0);
    assert.equal(served(table).length, 20);
    assert.equal(table.get('example.com.')?.rrsets().next().value?.ttl, 900);
    controller.stop();
  });

  test('a rebuild with no content change is not held', async () => {
    const { store, table, controller } = setUp();
    for (let i = 1; i <= 20; i++) host(store, i);
    controller.start();
    await controller.idle();
    store.apply(zoneClass('builtin', ['ns1.example.com.', 'ns3.example.com.']));
    const z = store.get('DNSZone', KEY) as DNSZone;
    store.apply({ ...z, spec: { ...z.spec, ttl: 600 } });
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.equal(served(table).length, 20);
    controller.stop();
  });

  test('a held deletion stays held across a Domain gate flap; confirmed, it is served', async () => {
    const { store, table, controller } = setUp();
    const verified = (status: 'True' | 'False') =>
      store.updateStatus('Domain', 'dns/example-com', {
        conditions: [
          {
            type: 'Verified',
            status,
            reason: status === 'True' ? 'Verified' : 'NotVerified',
            message: status,
            observedGeneration: 1,
            lastTransitionTime: '2026-11-21T12:00:00Z',
          },
        ],
      });
    store.apply({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'Domain',
      metadata: { name: 'example-com', namespace: 'dns', generation: 1 },
      spec: { domainName: 'example.com' },
    } as Domain);
    await verified('True');
    store.apply(zoneClass('builtin', undefined, { requireVerifiedDomain: true }));
    for (let i = 1; i <= 20; i++) host(store, i);
    controller.start();
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    for (let i = 1; i <= 15; i++) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld');
    const hash = controller.heldZones()[0]!.hash;
    // The Domain stops being verified (the zone leaves the backend), then is verified again.
    await verified('False');
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'DomainNotVerified');
    await verified('True');
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld', JSON.stringify(programmed(store)));
    assert.equal(controller.heldZones()[0]?.hash, hash);
    // Taken off the backend by the gate, the zone is not served again until its change is confirmed.
    assert.equal(table.get('example.com.'), undefined);
    const z = store.get('DNSZone', KEY) as DNSZone;
    store.apply(withConfirmation(z, hash));
    await controller.idle();
    assert.equal(programmed(store)?.status, 'True', JSON.stringify(programmed(store)));
    assert.deepEqual(served(table), ['h16', 'h17', 'h18', 'h19', 'h20']);
    controller.stop();
  });

  test('a held deletion stays held when the zone is refused for a while and accepted again', async () => {
    const { store, table, controller } = setUp();
    for (let i = 1; i <= 20; i++) host(store, i);
    controller.start();
    await controller.idle();
    for (let i = 1; i <= 15; i++) store.remove('DNSRecordSet', `dns/h${i}`);
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld');
    assert.equal(served(table).length, 20);
    // Refused (its class does not exist), then accepted again.
    const z = store.get('DNSZone', KEY) as DNSZone;
    store.apply({ ...z, spec: { ...z.spec, className: 'no-such-class' } });
    await controller.idle();
    const again = store.get('DNSZone', KEY) as DNSZone;
    store.apply({ ...again, spec: { ...again.spec, className: 'builtin' } });
    await controller.idle();
    assert.equal(programmed(store)?.reason, 'ChangeHeld', 'still held: the deletion was never confirmed');
    controller.stop();
  });
});
