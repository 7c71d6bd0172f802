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
import { recordFrontDoor, zoneFrontDoor } from '../api/frontdoors/kubizone/index.ts';
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

function zoneObject(namespaces?: string[]): ForeignObject {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Zone',
    metadata: { name: 'big', namespace: 'dns' },
    spec: {
      domainName: 'big.test.',
      delegations: [{ ...(namespaces ? { namespaces } : {}), records: [{ pattern: '*' }] }],
    },
  } as ForeignObject;
}

function recordObject(namespace: string, name: string, host: string): ForeignObject {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Record',
    metadata: { name, namespace },
    spec: { domainName: `${host}.big.test.`, type: 'A', rdata: '192.0.2.1' },
  } as ForeignObject;
}

function readyOf(store: MemoryStore, key: string): { reason?: string; message?: string } | undefined {
  const status = store.getForeign(RECORD, key)?.status as
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
});
