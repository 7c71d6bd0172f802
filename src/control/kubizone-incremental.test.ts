/**
 * The translating store follows kubizone objects change by change (each change re-translates only
 * the objects the doors' `affected` names). Whatever the order of the changes, inside a batch (a
 * folder reload) or not, what it holds afterwards must be what a store filled with the end state at
 * once translates: a Zone or Record left out of `affected` would keep a stale DNSZone or DNSRecordSet
 * until something else wrote its status.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { prng } from '../../test/support/prng.ts';
import { zoneClass } from '../../test/support/resources.ts';
import { type ForeignObject, type FrontDoor, FrontDoors } from '../api/frontdoors/index.ts';
import { recordFrontDoor, zoneFrontDoor } from '../api/frontdoors/kubizone/index.ts';
import type { DNSZone } from '../api/index.ts';
import { FrontDoorStore } from './front-door-store.ts';
import { MemoryStore } from './memory-store.ts';

const ZONE = 'Zone.kubi.zone';
const RECORD = 'Record.kubi.zone';
const NAMESPACES = ['dns', 'web', 'app'];
const now = () => new Date('2026-11-21T12:00:00Z');

type World = Map<string, { kind: string; object: ForeignObject }>;

const doors = () =>
  new FrontDoors([zoneFrontDoor as unknown as FrontDoor, recordFrontDoor as unknown as FrontDoor]);

function kubizone(kind: 'Zone' | 'Record', namespace: string, name: string, spec: object): ForeignObject {
  return { apiVersion: 'kubi.zone/v1alpha1', kind, metadata: { name, namespace }, spec } as ForeignObject;
}

/** Zones (some partial, by zoneRef, chains and dangling refs included) and Records over a few names. */
function world(random: () => number): World {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const names = ['a', 'b', 'c', 'd', 'e', 'f'];
  const out: World = new Map();
  for (const name of names) {
    if (random() < 0.25) continue;
    const namespace = pick(NAMESPACES);
    const spec: Record<string, unknown> =
      random() < 0.4
        ? { domainName: pick(['p', 'q', 's']), zoneRef: { name: pick(names), namespace: pick(NAMESPACES) } }
        : { domainName: pick(['t.test.', 'x.t.test.', 'y.t.test.', 'p.x.t.test.', 'q.t.test.']) };
    spec.delegations = [
      {
        ...(random() < 0.5 ? { namespaces: [pick(NAMESPACES)] } : {}),
        zones: ['*'],
        records: [{ pattern: pick(['*', 'h*', 'w']) }],
      },
    ];
    out.set(`${ZONE}/${namespace}/${name}`, { kind: ZONE, object: kubizone('Zone', namespace, name, spec) });
  }
  for (let i = 0; i < 10; i++) {
    if (random() < 0.2) continue;
    const namespace = pick(NAMESPACES);
    const spec =
      random() < 0.3
        ? {
            domainName: pick(['h', 'w', 'h.p']),
            zoneRef: { name: pick(names), namespace: pick(NAMESPACES) },
            type: 'A',
            rdata: '192.0.2.1',
          }
        : {
            domainName: pick([
              'h.t.test.',
              'w.x.t.test.',
              'h.p.x.t.test.',
              'h.y.t.test.',
              'w.q.t.test.',
              'h.s.t.test.',
              'w.p.t.test.',
            ]),
            type: 'A',
            rdata: pick(['192.0.2.1', '192.0.2.2']),
          };
    out.set(`${RECORD}/${namespace}/r${i}`, {
      kind: RECORD,
      object: kubizone('Record', namespace, `r${i}`, spec),
    });
  }
  return out;
}

function storeOf(objects: Iterable<{ kind: string; object: ForeignObject }>): {
  base: MemoryStore;
  translated: FrontDoorStore;
} {
  const base = new MemoryStore(now);
  base.apply(zoneClass());
  for (const { kind, object } of objects) base.applyForeign(kind, structuredClone(object));
  return { base, translated: new FrontDoorStore({ base, doors: doors(), now }) };
}

/** What the store translates, in a stable order. */
function translations(store: FrontDoorStore): string[] {
  const out: string[] = [];
  for (const kind of ['DNSZone', 'DNSRecordSet'] as const)
    for (const o of store.list(kind))
      out.push(JSON.stringify([kind, o.metadata.namespace, o.metadata.name, o.spec]));
  return out.sort();
}

/** From `before` to `after`: removals and applies, shuffled. */
function changes(base: MemoryStore, before: World, after: World, random: () => number): (() => void)[] {
  const ops: (() => void)[] = [];
  for (const [id, { kind }] of before)
    if (!after.has(id)) ops.push(() => base.removeForeign(kind, id.slice(kind.length + 1)));
  for (const { kind, object } of after.values())
    ops.push(() => base.applyForeign(kind, structuredClone(object)));
  for (let j = ops.length - 1; j > 0; j--) {
    const k = Math.floor(random() * (j + 1));
    [ops[j], ops[k]] = [ops[k]!, ops[j]!];
  }
  return ops;
}

describe('kubizone: the translating store followed change by change equals a fresh one', () => {
  test('a partial Zone and a Record whose zoneRef chain reaches a deleted Zone lose their translation', () => {
    const delegations = [{ zones: ['*'], records: [{ pattern: '*' }] }];
    const parent = kubizone('Zone', 'dns', 'parent', { domainName: 'example.test.', delegations });
    const child = kubizone('Zone', 'dns', 'child', {
      domainName: 'shop',
      zoneRef: { name: 'parent' },
      delegations,
    });
    const grandchild = kubizone('Zone', 'dns', 'grandchild', {
      domainName: 'eu',
      zoneRef: { name: 'child' },
      delegations,
    });
    const record = kubizone('Record', 'dns', 'www', {
      domainName: 'www',
      zoneRef: { name: 'grandchild' },
      type: 'A',
      rdata: '192.0.2.1',
    });
    const { base, translated } = storeOf([
      { kind: ZONE, object: parent },
      { kind: ZONE, object: child },
      { kind: ZONE, object: grandchild },
      { kind: RECORD, object: record },
    ]);
    const domains = () => translated.list('DNSZone').map((z) => (z as DNSZone).spec.domainName);
    assert.deepEqual(domains().sort(), ['eu.shop.example.test', 'example.test', 'shop.example.test']);
    base.removeForeign(ZONE, 'dns/parent');
    // The Zones below it by zoneRef have no fqdn any more; nor has the Record below them.
    assert.deepEqual(domains(), []);
    assert.deepEqual(translated.list('DNSRecordSet'), []);
    const fresh = storeOf([
      { kind: ZONE, object: child },
      { kind: ZONE, object: grandchild },
      { kind: RECORD, object: record },
    ]);
    assert.deepEqual(translations(translated), translations(fresh.translated));
    translated.close();
    fresh.translated.close();
  });

  for (const batched of [false, true]) {
    test(`300 random changes of Zones and Records${batched ? ', in one batch' : ''}, in random orders`, () => {
      const random = prng(batched ? 2026 : 1128);
      for (let run = 0; run < 300; run++) {
        const before = world(random);
        const after = world(random);
        const live = storeOf(before.values());
        const ops = changes(live.base, before, after, random);
        const applyAll = () => {
          for (const op of ops) op();
        };
        if (batched) live.translated.batch(applyAll);
        else applyAll();
        const fresh = storeOf(after.values());
        assert.deepEqual(
          translations(live.translated),
          translations(fresh.translated),
          `run ${run}: from ${JSON.stringify([...before.keys()])} to ${JSON.stringify([...after.keys()])}`,
        );
        live.translated.close();
        fresh.translated.close();
      }
    });
  }
});
