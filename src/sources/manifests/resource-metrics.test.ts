import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DNSRecordSet, DNSZone } from '../../api/index.ts';
import { MemoryStore } from '../../control/memory-store.ts';
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

test('zonekeeper_resources with the record sets in a record table (serve): the same counts, a slot held only while Ready is known', async () => {
  const table = new RecordTable();
  const store = new MemoryStore(undefined, { recordSets: table });
  const kept = new Map<string, ManifestProblem[]>();
  const source = {
    keptObjects: () => kept,
    problems: () => [],
    folderProblem: () => undefined,
  } as unknown as ManifestSource;
  store.apply(recordSet('r0'));
  await store.updateStatus('DNSRecordSet', 'default/r0', ready('True'));
  const registry = new Registry();
  // A record set Ready before the metrics were registered is counted too.
  registerSourceMetrics(registry, store, source, table);
  for (const name of ['r1', 'r2', 'r3', 'r4']) store.apply(recordSet(name));
  await store.updateStatus('DNSRecordSet', 'default/r1', ready('True'));
  await store.updateStatus('DNSRecordSet', 'default/r2', ready('True'));
  await store.updateStatus('DNSRecordSet', 'default/r1', ready('True'));
  await store.updateStatus('DNSRecordSet', 'default/r2', { conditions: [] });
  await store.updateStatus('DNSRecordSet', 'default/r4', ready('False'));
  let text = registry.render();
  assert.equal(gauge(text, 'DNSRecordSet', 'true'), 2);
  assert.equal(gauge(text, 'DNSRecordSet', 'false'), 1);
  assert.equal(gauge(text, 'DNSRecordSet', 'unknown'), 2);
  const heldByMetrics = (key: string) => table.held(table.slotOf(key), Holder.metrics);
  assert.equal(heldByMetrics('default/r1'), true);
  assert.equal(heldByMetrics('default/r2'), false, 'let go once Ready is unknown again');
  // Deleted while Ready: counted out, and its slot freed (nothing else holds it here).
  store.remove('DNSRecordSet', 'default/r1');
  assert.equal(table.slotOf('default/r1'), -1);
  text = registry.render();
  assert.equal(gauge(text, 'DNSRecordSet', 'true'), 1);
  assert.equal(gauge(text, 'DNSRecordSet', 'unknown'), 2);
  // The same name again: unknown until its status says Ready (the slot reused starts empty).
  store.apply(recordSet('r1'));
  text = registry.render();
  assert.equal(gauge(text, 'DNSRecordSet', 'true'), 1);
  assert.equal(gauge(text, 'DNSRecordSet', 'unknown'), 3);
  await store.updateStatus('DNSRecordSet', 'default/r1', ready('False'));
  text = registry.render();
  assert.equal(gauge(text, 'DNSRecordSet', 'false'), 2);
  // Kept objects show as not ready, whatever was counted for them.
  kept.set('DNSRecordSet/default/r0', []);
  kept.set('DNSRecordSet/default/r3', []);
  text = registry.render();
  assert.equal(gauge(text, 'DNSRecordSet', 'true'), 0);
  assert.equal(gauge(text, 'DNSRecordSet', 'false'), 4);
  assert.equal(gauge(text, 'DNSRecordSet', 'unknown'), 1);
});
