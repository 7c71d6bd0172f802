import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet } from '../../test/support/resources.ts';
import type { DNSRecordSet } from '../api/index.ts';
import { MemoryStore } from './memory-store.ts';
import type { StoreEvent } from './resource-store.ts';

const rs = (records: string[]) =>
  recordSet('dns', 'www', { zoneRef: { name: 'z' }, name: 'www', type: 'A', records });

describe('MemoryStore', () => {
  test('generation moves only with the spec; status and creation time are kept', async () => {
    const store = new MemoryStore(() => new Date('2026-01-01T00:00:00Z'));
    const events: StoreEvent[] = [];
    store.watch((e) => events.push(e));
    store.apply(rs(['192.0.2.1']));
    await store.updateStatus('DNSRecordSet', 'dns/www', { fqdn: 'www.z.' });
    store.apply(rs(['192.0.2.1']));
    assert.equal(events.length, 2, 'unchanged apply emits nothing');
    store.apply(rs(['192.0.2.2']));
    const obj = store.get('DNSRecordSet', 'dns/www')!;
    assert.equal(obj.metadata.generation, 2);
    assert.deepEqual(obj.status, { fqdn: 'www.z.' });
    assert.equal(obj.metadata.creationTimestamp, '2026-01-01T00:00:00.000Z');
  });

  test('finalizers hold deletion until removed', async () => {
    const store = new MemoryStore();
    const events: StoreEvent[] = [];
    store.watch((e) => events.push(e));
    store.apply(rs(['192.0.2.1']));
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    store.remove('DNSRecordSet', 'dns/www');
    const deleting = store.get('DNSRecordSet', 'dns/www')!;
    assert.ok(deleting.metadata.deletionTimestamp);
    store.apply(rs(['192.0.2.9']));
    assert.deepEqual(
      (store.get('DNSRecordSet', 'dns/www') as DNSRecordSet).spec.records,
      ['192.0.2.1'],
      'no updates while deleting',
    );
    await store.removeFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    assert.equal(store.get('DNSRecordSet', 'dns/www'), undefined);
    assert.equal(events.at(-1)?.type, 'delete');
  });

  test('restoreDeleting: an object being deleted that is applied again comes back (folder mode)', async () => {
    const store = new MemoryStore(undefined, { restoreDeleting: true });
    store.apply(rs(['192.0.2.1']));
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'x/f');
    store.remove('DNSRecordSet', 'dns/www');
    assert.ok(store.get('DNSRecordSet', 'dns/www')!.metadata.deletionTimestamp);
    store.apply(rs(['192.0.2.1']));
    const back = store.get('DNSRecordSet', 'dns/www')!;
    assert.equal(back.metadata.deletionTimestamp, undefined);
    assert.deepEqual(back.metadata.finalizers, ['x/f']);
  });

  test('objects share a one-finalizer list; removing it from one leaves the others their own', async () => {
    const store = new MemoryStore();
    const other = recordSet('dns', 'mail', {
      zoneRef: { name: 'z' },
      name: 'mail',
      type: 'A',
      records: ['192.0.2.9'],
    });
    store.apply(rs(['192.0.2.1']));
    store.apply(other);
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'zonekeeper.dev/f');
    await store.addFinalizer('DNSRecordSet', 'dns/mail', 'zonekeeper.dev/f');
    const www = () => store.get('DNSRecordSet', 'dns/www')!.metadata;
    const mail = () => store.get('DNSRecordSet', 'dns/mail')!.metadata;
    assert.equal(www().finalizers, mail().finalizers, 'one list for both');
    await store.addFinalizer('DNSRecordSet', 'dns/www', 'zonekeeper.dev/g');
    await store.removeFinalizer('DNSRecordSet', 'dns/mail', 'zonekeeper.dev/f');
    assert.deepEqual(www().finalizers, ['zonekeeper.dev/f', 'zonekeeper.dev/g']);
    assert.deepEqual(mail().finalizers, []);
    // The metadata keeps exactly its fields (none added as undefined).
    assert.deepEqual(Object.keys(www()).sort(), [
      'creationTimestamp',
      'finalizers',
      'generation',
      'name',
      'namespace',
      'resourceVersion',
      'uid',
    ]);
  });

  test('without finalizers deletion is immediate', () => {
    const store = new MemoryStore();
    store.apply(rs(['192.0.2.1']));
    store.remove('DNSRecordSet', 'dns/www');
    assert.equal(store.list('DNSRecordSet').length, 0);
  });
});
