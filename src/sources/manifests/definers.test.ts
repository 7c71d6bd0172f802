import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Definers } from './definers.ts';

test('one file per object is held as that file; several as a set, in path order', () => {
  const d = new Definers();
  d.add('DNSZone/a/x', 'b.yaml');
  d.add('DNSZone/a/x', 'b.yaml');
  assert.deepEqual(d.files('DNSZone/a/x'), ['b.yaml']);
  assert.deepEqual([...d.duplicates()], []);
  d.add('DNSZone/a/x', 'a.yaml');
  d.add('DNSZone/a/x', 'c.yaml');
  assert.deepEqual(d.files('DNSZone/a/x'), ['a.yaml', 'b.yaml', 'c.yaml']);
  assert.deepEqual([...d.duplicates()], [['DNSZone/a/x', ['a.yaml', 'b.yaml', 'c.yaml']]]);
  assert.equal(d.remove('DNSZone/a/x', 'a.yaml'), true);
  assert.equal(d.remove('DNSZone/a/x', 'a.yaml'), false);
  assert.equal(d.remove('DNSZone/a/x', 'c.yaml'), true);
  assert.deepEqual(d.files('DNSZone/a/x'), ['b.yaml']);
  assert.deepEqual([...d.duplicates()], []);
  assert.equal(d.remove('DNSZone/a/x', 'other.yaml'), false);
  assert.equal(d.has('DNSZone/a/x'), true);
  assert.equal(d.remove('DNSZone/a/x', 'b.yaml'), true);
  assert.equal(d.has('DNSZone/a/x'), false);
  assert.equal(d.size, 0);
  assert.deepEqual(d.files('DNSZone/a/x'), []);
});

test('with the state store: the files of an object the state holds are kept in its entry, and go on with new versions', async () => {
  const { StateStore } = await import('./state-file.ts');
  const state = await StateStore.open(undefined);
  const d = new Definers(state);
  const id = 'DNSRecordSet/dns/x';
  const version = (address: string) => ({
    created: 't',
    file: 'b.yaml',
    resource: {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1' as const,
      kind: 'DNSRecordSet' as const,
      metadata: { name: 'x', namespace: 'dns' },
      spec: { name: 'x', type: 'A' as const, records: [address] },
    },
  });
  // Defined before the state holds it: kept apart, then moved into the entry.
  d.add(id, 'b.yaml');
  assert.equal(state.tagOf(id), undefined);
  state.putObject(id, version('192.0.2.1'));
  assert.deepEqual(d.files(id), ['b.yaml']);
  d.settle(id);
  assert.equal(state.tagOf(id), 'b.yaml');
  assert.equal(d.size, 1);
  // A new version keeps it; a second file makes a duplicate, kept in the entry too.
  state.putObject(id, version('192.0.2.2'));
  assert.equal(state.tagOf(id), 'b.yaml');
  d.add(id, 'a.yaml');
  assert.deepEqual(d.files(id), ['a.yaml', 'b.yaml']);
  assert.equal(d.first(id), 'a.yaml');
  assert.deepEqual([...d.duplicates()], [[id, ['a.yaml', 'b.yaml']]]);
  assert.equal(d.size, 1);
  assert.equal(d.remove(id, 'a.yaml'), true);
  assert.equal(state.tagOf(id), 'b.yaml');
  assert.deepEqual([...d.duplicates()], []);
  assert.equal(d.remove(id, 'b.yaml'), true);
  assert.equal(d.has(id), false);
  assert.equal(d.size, 0);
  // Deleted from the state and defined again: kept apart until the state holds it again.
  state.deleteObject(id);
  d.add(id, 'c.yaml');
  assert.equal(d.first(id), 'c.yaml');
  assert.equal(d.size, 1);
  state.putObject(id, version('192.0.2.3'));
  d.settle(id);
  assert.equal(state.tagOf(id), 'c.yaml');
  assert.deepEqual(d.files(id), ['c.yaml']);
});
