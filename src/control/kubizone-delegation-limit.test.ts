/**
 * Hostile tenant, through kubizone's API: a Zone whose delegations admit another namespace's Records
 * gets a native delegation for each name it adopts from there, and a DNSZone holds at most
 * MAX_DELEGATIONS entries of at most MAX_DELEGATION_NAMES names. Before, the 65th Record of one
 * namespace (or one Record in each of 65 namespaces) made the translated DNSZone invalid and the
 * whole zone unserved, the Zone owner's own records included. Now the oldest names are admitted,
 * the newer ones past the limits are refused alone (`DelegationLimit`), and they are served once
 * older ones go.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { zoneClass } from '../../test/support/resources.ts';
import { translatedController } from '../../test/support/translated-controller.ts';
import { type ForeignObject, type FrontDoor, FrontDoors } from '../api/frontdoors/index.ts';
import { recordFrontDoor, STATUS_ENTRIES_BYTES, zoneFrontDoor } from '../api/frontdoors/kubizone/index.ts';
import { type DNSZone, MAX_DELEGATION_NAMES, MAX_DELEGATIONS } from '../api/index.ts';
import { MemoryStore } from './memory-store.ts';

const ZONE = 'Zone.kubi.zone';
const RECORD = 'Record.kubi.zone';

/** A store whose clock moves a second at each object, so each Record is younger than the one before. */
function world() {
  let clock = Date.parse('2026-11-21T12:00:00Z');
  const now = () => new Date(clock);
  const store = new MemoryStore(() => {
    clock += 1000;
    return new Date(clock);
  });
  store.apply(zoneClass());
  const doors = new FrontDoors([
    zoneFrontDoor as unknown as FrontDoor,
    recordFrontDoor as unknown as FrontDoor,
  ]);
  const { table, translated, controller } = translatedController(store, doors, now, { resyncMs: 0 });
  return { store, table, translated, controller };
}

function kubizone(kind: 'Zone' | 'Record', namespace: string, name: string, spec: object): ForeignObject {
  return { apiVersion: 'kubi.zone/v1alpha1', kind, metadata: { name, namespace }, spec } as ForeignObject;
}

/** Zone dns/big, big.test., admitting every record name (and with `zones`, sub-zones) of `namespaces`. */
function zoneObject(namespaces?: string[], zones?: string[]): ForeignObject {
  return kubizone('Zone', 'dns', 'big', {
    domainName: 'big.test.',
    delegations: [
      { ...(namespaces ? { namespaces } : {}), ...(zones ? { zones } : {}), records: [{ pattern: '*' }] },
    ],
  });
}

function recordObject(namespace: string, name: string, host: string, type = 'A'): ForeignObject {
  return kubizone('Record', namespace, name, {
    domainName: `${host}.big.test.`,
    type,
    rdata: type === 'A' ? '192.0.2.1' : 'x',
  });
}

function readyOf(
  store: MemoryStore,
  key: string,
  kind = RECORD,
): { reason?: string; message?: string } | undefined {
  const status = store.getForeign(kind, key)?.status as
    | { conditions?: { type: string; reason?: string; message?: string }[] }
    | undefined;
  return status?.conditions?.find((c) => c.type === 'Ready');
}

async function settle(controller: { idle(): Promise<void> }): Promise<void> {
  await controller.idle();
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
  await controller.idle();
}

describe('kubizone: other namespaces cannot make a Zone unserved by their number of Records', () => {
  test('one namespace: the oldest names are admitted, the newest past the limit refused alone', async () => {
    const limit = MAX_DELEGATIONS * MAX_DELEGATION_NAMES;
    const { store, table, translated, controller } = world();
    // In one batch, as a folder's reload applies them: a Zone adopting thousands of Records is
    // translated once (outside a batch it would be after each).
    translated.batch(() => {
      store.applyForeign(ZONE, zoneObject(['dns', 'web']));
      store.applyForeign(RECORD, recordObject('dns', 'own', 'own'));
      for (let i = 0; i < limit + 3; i++) store.applyForeign(RECORD, recordObject('web', `r${i}`, `h${i}`));
    });
    const [dnsZone] = translated.list('DNSZone') as DNSZone[];
    assert.ok(dnsZone, 'the Zone is still translated');
    assert.deepEqual(translated.translationProblems(), []);
    const delegations = dnsZone.spec.delegations ?? [];
    assert.equal(delegations.length, MAX_DELEGATIONS);
    const names = new Set(delegations.flatMap((d) => d.names ?? []));
    assert.equal(names.size, limit);
    assert.ok(names.has('h0') && names.has(`h${limit - 1}`) && !names.has(`h${limit}`));
    controller.start();
    await settle(controller);
    const zone = table.get('big.test.');
    assert.ok(zone?.nodes.get('own.big.test.'), "the Zone owner's own record is served");
    assert.ok(zone?.nodes.get(`h${limit - 1}.big.test.`));
    assert.equal(zone?.nodes.get(`h${limit}.big.test.`), undefined);
    assert.equal(readyOf(store, `web/r${limit - 1}`)?.reason, 'Served');
    const refused = readyOf(store, `web/r${limit}`);
    assert.equal(refused?.reason, 'DelegationLimit');
    assert.match(refused?.message ?? '', /^Record: Zone dns\/big adopts it, but .* the oldest are served/);
    // An older Record goes: the oldest waiting one takes its place.
    store.removeForeign(RECORD, 'web/r0');
    await settle(controller);
    assert.ok(table.get('big.test.')?.nodes.get(`h${limit}.big.test.`));
    assert.equal(table.get('big.test.')?.nodes.get(`h${limit + 1}.big.test.`), undefined);
    assert.equal(readyOf(store, `web/r${limit}`)?.reason, 'Served');
    controller.stop();
    translated.close();
  });

  test('every namespace admitted: one Record in each of more namespaces than a zone has entries', async () => {
    const { store, table, translated, controller } = world();
    store.applyForeign(ZONE, zoneObject());
    for (let i = 0; i <= MAX_DELEGATIONS; i++)
      store.applyForeign(RECORD, recordObject(`team-${i}`, 'www', `w${i}`));
    assert.deepEqual(translated.translationProblems(), []);
    controller.start();
    await settle(controller);
    assert.ok(table.get('big.test.')?.nodes.get(`w${MAX_DELEGATIONS - 1}.big.test.`));
    assert.equal(table.get('big.test.')?.nodes.get(`w${MAX_DELEGATIONS}.big.test.`), undefined);
    assert.equal(readyOf(store, `team-${MAX_DELEGATIONS}/www`)?.reason, 'DelegationLimit');
    controller.stop();
    translated.close();
  });

  test('sub-zones of other namespaces come before Records: an older one never shadows its parent', async () => {
    // Records older than everything, waiting for a Zone, then a sub-zone served alone, then its
    // parent: had the Records taken every place, the sub-zone's DNSZone (older, served) would make
    // the parent's the one refused (ZoneShadowed), the owner's records with it.
    const { store, table, translated, controller } = world();
    translated.batch(() => {
      for (let i = 0; i < MAX_DELEGATIONS * MAX_DELEGATION_NAMES; i++)
        store.applyForeign(RECORD, recordObject('evil', `r${i}`, `h${i}`));
      store.applyForeign(ZONE, kubizone('Zone', 'team', 'sub', { domainName: 'sub.big.test.' }));
    });
    controller.start();
    await settle(controller);
    assert.ok(table.get('sub.big.test.'));
    store.applyForeign(ZONE, zoneObject(undefined, ['*']));
    store.applyForeign(
      RECORD,
      kubizone('Record', 'dns', 'own', { domainName: 'own.big.test.', type: 'A', rdata: '192.0.2.1' }),
    );
    await settle(controller);
    assert.ok(table.get('big.test.')?.nodes.get('own.big.test.'), "the owner's records are served");
    assert.ok(table.get('sub.big.test.'), 'and the sub-zone, delegated');
    assert.equal(readyOf(store, 'dns/big', ZONE)?.reason, 'Served');
    // The youngest Record made room.
    assert.equal(
      readyOf(store, `evil/r${MAX_DELEGATIONS * MAX_DELEGATION_NAMES - 1}`)?.reason,
      'DelegationLimit',
    );
    assert.equal(readyOf(store, 'evil/r0')?.reason, 'Served');
    controller.stop();
    translated.close();
  });

  test('a sub-zone past the limit is not served, so it cannot shadow its parent; it is once an older one goes', async () => {
    const { store, table, translated, controller } = world();
    store.applyForeign(ZONE, zoneObject(undefined, ['*']));
    for (let i = 0; i <= MAX_DELEGATIONS; i++)
      store.applyForeign(ZONE, kubizone('Zone', `team-${i}`, 'sub', { domainName: `s${i}.big.test.` }));
    controller.start();
    await settle(controller);
    assert.equal(readyOf(store, 'dns/big', ZONE)?.reason, 'Served');
    assert.ok(table.get(`s${MAX_DELEGATIONS - 1}.big.test.`));
    assert.equal(table.get(`s${MAX_DELEGATIONS}.big.test.`), undefined);
    const waiting = readyOf(store, `team-${MAX_DELEGATIONS}/sub`, ZONE);
    assert.equal(waiting?.reason, 'DelegationLimit');
    assert.match(waiting?.message ?? '', /^Zone: Zone dns\/big delegates it, but .* older sub-zones/);
    store.removeForeign(ZONE, 'team-0/sub');
    await settle(controller);
    assert.ok(table.get(`s${MAX_DELEGATIONS}.big.test.`));
    assert.equal(readyOf(store, `team-${MAX_DELEGATIONS}/sub`, ZONE)?.reason, 'Served');
    assert.equal(readyOf(store, 'dns/big', ZONE)?.reason, 'Served');
    controller.stop();
    translated.close();
  });

  test('a Record whose name or type no native delegation can say is refused alone', async () => {
    for (const [host, type] of [
      ['bad!', 'A'],
      ['a*b', 'A'],
      ['-x', 'A'],
      ['\\046x', 'A'],
      ['ok', 'FOO'],
      ['ok', 'SOA'],
    ] as const) {
      const { store, table, translated, controller } = world();
      store.applyForeign(ZONE, zoneObject());
      store.applyForeign(
        RECORD,
        kubizone('Record', 'dns', 'own', { domainName: 'own.big.test.', type: 'A', rdata: '192.0.2.1' }),
      );
      store.applyForeign(RECORD, recordObject('team', 'fine', 'fine'));
      store.applyForeign(RECORD, recordObject('evil', 'x', host, type));
      controller.start();
      await settle(controller);
      const what = `${host} ${type}`;
      assert.deepEqual(
        translated.translationProblems().filter((t) => t.door.kind === 'Zone'),
        [],
        what,
      );
      assert.equal(readyOf(store, 'dns/big', ZONE)?.reason, 'Served', what);
      assert.ok(table.get('big.test.')?.nodes.get('own.big.test.'), what);
      assert.ok(table.get('big.test.')?.nodes.get('fine.big.test.'), what);
      assert.notEqual(readyOf(store, 'evil/x')?.reason, 'Served', what);
      assert.notEqual(readyOf(store, 'evil/x')?.reason, 'DelegationLimit', what);
      controller.stop();
      translated.close();
    }
  });

  test('a Zone whose status entries would not fit in one object lists the first, and Ready says so', async () => {
    const { store, translated, controller } = world();
    translated.batch(() => {
      store.applyForeign(ZONE, zoneObject(['dns']));
      for (let i = 0; i < 300; i++)
        store.applyForeign(
          RECORD,
          kubizone('Record', 'dns', `t${i}`, {
            domainName: `t${i}.big.test.`,
            type: 'TXT',
            rdata: `"${'x'.repeat(2000)}"`,
          }),
        );
    });
    controller.start();
    await settle(controller);
    const status = store.getForeign(ZONE, 'dns/big')?.status as {
      entries?: unknown[];
      conditions?: { type: string; status: string; message?: string }[];
    };
    const listed = status.entries?.length ?? 0;
    assert.ok(listed > 100 && listed < 301, `${listed} entries`);
    assert.ok(JSON.stringify(status.entries).length <= STATUS_ENTRIES_BYTES);
    const readyCondition = status.conditions?.find((c) => c.type === 'Ready');
    assert.equal(readyCondition?.status, 'True');
    assert.match(
      readyCondition?.message ?? '',
      new RegExp(`status\\.entries lists the first ${listed} of 301 entries`),
    );
    controller.stop();
    translated.close();
  });

  test('a sub-zone of another namespace being deleted goes the way every deleted zone goes', async () => {
    // Regression: once it was being deleted its parent no longer counted it, so it was "past the
    // limit" and translated to nothing: its DNSZone went at once, with no deleting phase, and its
    // finalizer was released before the controller had taken the zone off the backend.
    const { store, table, translated, controller } = world();
    store.applyForeign(ZONE, zoneObject(undefined, ['*']));
    store.applyForeign(ZONE, kubizone('Zone', 'team', 'sub', { domainName: 'sub.big.test.' }));
    controller.start();
    await settle(controller);
    assert.ok(table.get('sub.big.test.'));
    assert.ok(store.getForeign(ZONE, 'team/sub')?.metadata.finalizers?.length);
    const seen: string[] = [];
    translated.watch((e) => {
      if (e.kind === 'DNSZone' && e.key.startsWith('team/'))
        seen.push(`${e.type}${e.object.metadata.deletionTimestamp ? ' deleting' : ''}`);
    });
    store.removeForeign(ZONE, 'team/sub');
    await settle(controller);
    assert.equal(seen[0], 'upsert deleting');
    assert.equal(seen.at(-1), 'delete deleting');
    assert.equal(table.get('sub.big.test.'), undefined);
    assert.equal(store.getForeign(ZONE, 'team/sub'), undefined);
    controller.stop();
    translated.close();
  });

  test('a Record refused for another reason keeps its reason (a name below a sub-zone of another namespace)', async () => {
    const { store, translated, controller } = world();
    store.applyForeign(ZONE, zoneObject(undefined, ['*']));
    store.applyForeign(ZONE, kubizone('Zone', 'team', 'sub', { domainName: 'sub.big.test.' }));
    store.applyForeign(
      RECORD,
      kubizone('Record', 'dns', 'hidden', {
        domainName: 'www.sub',
        zoneRef: { name: 'big' },
        type: 'A',
        rdata: '192.0.2.1',
      }),
    );
    controller.start();
    await settle(controller);
    const hidden = readyOf(store, 'dns/hidden');
    assert.equal(hidden?.reason, 'NotDelegated');
    assert.match(hidden?.message ?? '', /sub\.big\.test\. .*does not delegate www A to namespace dns/);
    controller.stop();
    translated.close();
  });
});
