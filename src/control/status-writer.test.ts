import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DNSRecordSet } from '../api/index.ts';
import type { RecordVerdict } from '../zones/assemble.ts';
import { MemoryStore } from './memory-store.ts';
import { StatusWriter } from './status-writer.ts';

const recordSet = (name: string, address: string): DNSRecordSet => ({
  apiVersion: 'dns.zonekeeper.dev/v1alpha1',
  kind: 'DNSRecordSet',
  metadata: { name, namespace: 'team' },
  spec: { zoneRef: { name: 'zone' }, name, type: 'A', records: [address] },
});

const served = { backend: 'builtin', programmed: true, programmedMessage: 'pending' };

test('StatusWriter writes a record set again when only its generation or fqdn changed', async () => {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  const writer = new StatusWriter(store, () => new Date('2026-01-01T00:00:00Z'), 4);
  store.apply(recordSet('www', '192.0.2.1'));
  const get = () => store.get('DNSRecordSet', 'team/www') as DNSRecordSet;
  const verdicts = new Map<string, RecordVerdict>([['team/www', { accepted: true, fqdn: 'www.example.' }]]);
  await writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  assert.equal(get().status?.observedGeneration, 1);
  assert.equal(get().status?.fqdn, 'www.example.');

  store.apply(recordSet('www', '192.0.2.2'));
  assert.equal(get().metadata.generation, 2);
  await writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  assert.equal(get().status?.observedGeneration, 2);

  verdicts.set('team/www', { accepted: true, fqdn: 'www.example.org.' });
  await writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  assert.equal(get().status?.fqdn, 'www.example.org.');
  assert.equal(
    get().status?.conditions?.find((c) => c.type === 'Ready')?.message,
    'served in zone team/zone',
  );

  // Nothing changed: nothing written.
  const before = get();
  await writer.zoneRecords('team/zone', verdicts, ['team/www'], served);
  assert.equal(get(), before);
});

test('StatusWriter shares equal conditions and condition lists between record sets; each status has its fqdn', async () => {
  const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
  const writer = new StatusWriter(store, () => new Date('2026-01-01T00:00:00Z'), 4);
  store.apply(recordSet('a', '192.0.2.1'));
  store.apply(recordSet('b', '192.0.2.2'));
  const verdicts = new Map<string, RecordVerdict>([
    ['team/a', { accepted: true, fqdn: 'a.example.' }],
    ['team/b', { accepted: true, fqdn: 'b.example.' }],
  ]);
  await writer.zoneRecords('team/zone', verdicts, ['team/a', 'team/b'], served);
  const conditions = (name: string) =>
    (store.get('DNSRecordSet', `team/${name}`) as DNSRecordSet).status?.conditions ?? [];
  const of = (name: string, type: string) => conditions(name).find((c) => c.type === type);
  assert.equal(of('a', 'Accepted'), of('b', 'Accepted'));
  assert.equal(of('a', 'Programmed'), of('b', 'Programmed'));
  assert.equal(of('a', 'Ready')?.message, 'served in zone team/zone');
  assert.equal(of('a', 'Ready'), of('b', 'Ready'));
  assert.equal(conditions('a'), conditions('b'), 'one list for the zone, not one per record set');
  const status = (name: string) => (store.get('DNSRecordSet', `team/${name}`) as DNSRecordSet).status;
  assert.equal(status('a')?.fqdn, 'a.example.');
  assert.equal(status('b')?.fqdn, 'b.example.');
  // A record set that changes gets a list of its own; the others keep theirs.
  const changed = new Map(verdicts);
  changed.set('team/b', {
    accepted: false,
    fqdn: 'b.example.',
    reason: 'Conflict',
    message: 'held by team/c',
  });
  await writer.zoneRecords('team/zone', changed, ['team/a', 'team/b'], served);
  assert.equal(of('b', 'Accepted')?.status, 'False');
  assert.equal(of('a', 'Accepted')?.status, 'True', 'the shared list was not changed in place');
  assert.notEqual(conditions('a'), conditions('b'));
});
