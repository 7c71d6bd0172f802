import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DNSRecordSet, DNSZone, Kind } from '../../api/index.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import type { ResourceStore, StoreEvent } from '../../control/resource-store.ts';
import { Registry } from '../../metrics/registry.ts';
import { Holder, RecordTable } from '../../zones/record-table.ts';
import type { ManifestProblem, ManifestSource } from './manifest-source.ts';
import { registerSourceMetrics } from './resource-metrics.ts';

const zone = (name: string): DNSZone =>
  ({
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSZone',
    metadata: { name, namespace: 'default' },
    spec: { domainName: `${name}.example.`, className: 'c' },
  }) as DNSZone;
const recordSet = (name: string): DNSRecordSet =>
  ({
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSRecordSet',
    metadata: { name, namespace: 'default' },
    spec: { zoneRef: { name: 'a' }, name, type: 'A', records: ['192.0.2.1'] },
  }) as DNSRecordSet;
const ready = (status: 'True' | 'False') => ({
  conditions: [
    { type: 'Ready', status, reason: 'R', message: '', lastTransitionTime: new Date(0).toISOString() },
  ],
});

const gauge = (text: string, kind: string, r: string): number => {
  const m = new RegExp(`^zonekeeper_resources\\{kind="${kind}",ready="${r}"\\} (-?\\d+)$`, 'm').exec(text);
  assert.ok(m, `zonekeeper_resources{kind="${kind}",ready="${r}"} in\n${text}`);
  return Number(m[1]);
};

test('zonekeeper_resources counts objects by kind and Ready as store events come; kept objects count as not ready', async () => {
  const store = new MemoryStore();
  // Objects in the store before the metrics are registered are counted too.
  store.apply(zone('a'));
  const kept = new Map<string, ManifestProblem[]>();
  const source = {
    keptObjects: () => kept,
    problems: () => [],
    folderProblem: () => undefined,
  } as unknown as ManifestSource;
  const registry = new Registry();
  registerSourceMetrics(registry, store, source);

  store.apply(zone('b'));
  for (const name of ['r1', 'r2', 'r3']) store.apply(recordSet(name));
  let text = registry.render();
  assert.equal(gauge(text, 'DNSZone', 'unknown'), 2);
  assert.equal(gauge(text, 'DNSRecordSet', 'unknown'), 3);
  assert.equal(gauge(text, 'DNSZoneClass', 'unknown'), 0);

  await store.updateStatus('DNSZone', 'default/a', ready('True'));
  await store.updateStatus('DNSRecordSet', 'default/r1', ready('True'));
  await store.updateStatus('DNSRecordSet', 'default/r2', ready('False'));
  // An update that does not change readiness moves nothing.
  await store.updateStatus('DNSRecordSet', 'default/r1', ready('True'));
  store.remove('DNSRecordSet', 'default/r3');
  text = registry.render();
  assert.equal(gauge(text, 'DNSZone', 'true'), 1);
  assert.equal(gauge(text, 'DNSZone', 'unknown'), 1);
  assert.equal(gauge(text, 'DNSRecordSet', 'true'), 1);
  assert.equal(gauge(text, 'DNSRecordSet', 'false'), 1);
  assert.equal(gauge(text, 'DNSRecordSet', 'unknown'), 0);

  // A record set served at its last valid version shows as not ready, whatever its status says.
  kept.set('DNSRecordSet/default/r1', [{ file: 'f.yaml', code: 'X', message: 'bad' }]);
  text = registry.render();
  assert.equal(gauge(text, 'DNSRecordSet', 'true'), 0);
  assert.equal(gauge(text, 'DNSRecordSet', 'false'), 2);
  // The counts themselves are unchanged: once the manifest is valid again it counts as ready.
  kept.clear();
  assert.equal(gauge(registry.render(), 'DNSRecordSet', 'true'), 1);
});

test('zonekeeper_resources: objects without a Ready condition count as unknown from the store, kept ones as not ready', async () => {
  const store = new MemoryStore();
  const kept = new Map<string, ManifestProblem[]>();
  const source = {
    keptObjects: () => kept,
    problems: () => [],
    folderProblem: () => undefined,
  } as unknown as ManifestSource;
  const registry = new Registry();
  registerSourceMetrics(registry, store, source);
  for (const name of ['r1', 'r2', 'r3', 'r4']) store.apply(recordSet(name));
  await store.updateStatus('DNSRecordSet', 'default/r1', ready('True'));
  await store.updateStatus('DNSRecordSet', 'default/r2', ready('True'));
  // Ready again unknown (a status without the condition), then deleted while Ready.
  await store.updateStatus('DNSRecordSet', 'default/r2', { conditions: [] });
  await store.updateStatus('DNSRecordSet', 'default/r4', ready('False'));
  store.remove('DNSRecordSet', 'default/r1');
  let text = registry.render();
  assert.equal(gauge(text, 'DNSRecordSet', 'true'), 0);
  assert.equal(gauge(text, 'DNSRecordSet', 'false'), 1);
  assert.equal(gauge(text, 'DNSRecordSet', 'unknown'), 2);
  // A kept object without a Ready condition shows as not ready too; a kept one the store does not
  // hold, or of another kind's id, moves nothing.
  kept.set('DNSRecordSet/default/r3', []);
  kept.set('DNSRecordSet/default/gone', []);
  kept.set('Other/default/r2', []);
  text = registry.render();
  assert.equal(gauge(text, 'DNSRecordSet', 'unknown'), 1);
  assert.equal(gauge(text, 'DNSRecordSet', 'false'), 2);
  assert.equal(gauge(text, 'DNSRecordSet', 'true'), 0);
});

test('zonekeeper_resources with record sets in the record-set table: the same counts as a map through deletes, re-adds, finalizers and slots reused', async () => {
  // A table-backed store (as serve's) and a map-backed one get the same changes; their gauges must
  // agree after every step. Another holder keeps some slots past a delete (what a backend
  // programmed), so a record set is deleted and applied again under the same slot, and freed slots
  // go to other record sets.
  const table = new RecordTable();
  const withTable = new MemoryStore(undefined, { restoreDeleting: true, recordSets: table });
  const withMap = new MemoryStore(undefined, { restoreDeleting: true });
  const source = {
    keptObjects: () => new Map(),
    problems: () => [],
    folderProblem: () => undefined,
  } as unknown as ManifestSource;
  const tableRegistry = new Registry();
  const mapRegistry = new Registry();
  registerSourceMetrics(tableRegistry, withTable, source, table);
  registerSourceMetrics(mapRegistry, withMap, source);
  let seed = 19;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const names = Array.from({ length: 12 }, (_, i) => `r${i}`);
  const held = new Map<string, number>();
  const both = async (step: (store: MemoryStore) => unknown) => {
    await step(withTable);
    await step(withMap);
  };
  const statuses = [ready('True'), ready('False'), { conditions: [] }];
  for (let i = 0; i < 3000; i++) {
    const name = names[random(names.length)]!;
    const key = `default/${name}`;
    const op = random(7);
    if (op === 0) await both((s) => s.apply(recordSet(name)));
    else if (op === 1) await both((s) => s.remove('DNSRecordSet', key));
    else if (op === 2) {
      const status = statuses[random(statuses.length)]!;
      await both((s) => s.updateStatus('DNSRecordSet', key, status));
    } else if (op === 3) await both((s) => s.addFinalizer('DNSRecordSet', key, 'f'));
    else if (op === 4) await both((s) => s.removeFinalizer('DNSRecordSet', key, 'f'));
    else if (op === 5 && !held.has(key)) held.set(key, table.hold(key, Holder.programmed));
    else if (op === 6 && held.has(key)) {
      table.release(held.get(key)!, Holder.programmed);
      held.delete(key);
    }
    const a = tableRegistry.render();
    const b = mapRegistry.render();
    for (const r of ['true', 'false', 'unknown'])
      assert.equal(gauge(a, 'DNSRecordSet', r), gauge(b, 'DNSRecordSet', r), `step ${i}, ready=${r}`);
  }
  // Every count was exercised, and the record sets kept in the table hold no map entry.
  const text = tableRegistry.render();
  assert.equal(
    gauge(text, 'DNSRecordSet', 'true') +
      gauge(text, 'DNSRecordSet', 'false') +
      gauge(text, 'DNSRecordSet', 'unknown'),
    withTable.count('DNSRecordSet'),
  );
});

test('zonekeeper_resources: a delete event carrying a Ready status never delivered before takes nothing from a count', () => {
  // What a store whose watch coalesces events, or an informer's final-state-unknown delete, sends.
  const objects = new Map<string, DNSZone>();
  let handler: (e: StoreEvent) => void = () => {};
  const store = {
    list: (kind: Kind) => [...objects.values()].filter((o) => o.kind === kind),
    get: (_kind: Kind, key: string) => objects.get(key),
    count: (kind: Kind) => [...objects.values()].filter((o) => o.kind === kind).length,
    watch: (h: (e: StoreEvent) => void) => {
      handler = h;
      return () => {};
    },
  } as unknown as ResourceStore & Pick<MemoryStore, 'count'>;
  const source = {
    keptObjects: () => new Map(),
    problems: () => [],
    folderProblem: () => undefined,
  } as unknown as ManifestSource;
  const registry = new Registry();
  registerSourceMetrics(registry, store, source);
  const zone = {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSZone',
    metadata: { name: 'z', namespace: 'dns' },
    spec: { domainName: 'example.com', className: 'builtin' },
  } as unknown as DNSZone;
  objects.set('dns/z', zone);
  handler({ type: 'upsert', kind: 'DNSZone', key: 'dns/z', object: zone });
  objects.delete('dns/z');
  const final = {
    ...zone,
    status: {
      conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '' }],
    },
  } as DNSZone;
  handler({ type: 'delete', kind: 'DNSZone', key: 'dns/z', object: final });
  const text = registry.render();
  assert.match(text, /zonekeeper_resources\{kind="DNSZone",ready="true"\} 0\n/);
  assert.match(text, /zonekeeper_resources\{kind="DNSZone",ready="unknown"\} 0\n/);
});
