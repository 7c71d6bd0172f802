import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DNSRecordSet, DNSRecordSetStatus, Resource } from '../../api/index.ts';
import { FINALIZER } from '../../control/resource-store.ts';
import { type RecordTargets, StatusWriter } from '../../control/status-writer.ts';
import type { RecordVerdict } from '../../zones/assemble.ts';
import { KubeApiError, type KubeJson } from './kube-api.ts';
import { KubernetesStore, type KubernetesStoreOptions } from './kubernetes-store.ts';
import type { WatchHandle } from './reflector.ts';

/**
 * An API server of one DNSRecordSet that keeps resourceVersions as kube-apiserver does: every write
 * moves it, and a write carrying another one is refused with 409 Conflict.
 */
function oneObjectApi() {
  let object: KubeJson = {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSRecordSet',
    metadata: { name: 'www', namespace: 'dns', resourceVersion: '1', generation: 1, uid: 'u1' },
    spec: { zoneRef: { name: 'example-com' }, name: 'www', type: 'A', records: ['192.0.2.1'] },
  } as KubeJson;
  const counts = { writes: 0, conflicts: 0 };
  let gate: Promise<void> | undefined;
  const write = async (rv: unknown, change: (o: KubeJson) => KubeJson): Promise<KubeJson> => {
    await new Promise((r) => setTimeout(r, 5)); // in flight for a while, as over the network
    const held = gate;
    gate = undefined;
    if (held) await held;
    const current = (object.metadata as { resourceVersion: string }).resourceVersion;
    if (rv !== current) {
      counts.conflicts++;
      throw new KubeApiError(409, 'Conflict', 'the object has been modified');
    }
    counts.writes++;
    const next = change(structuredClone(object));
    (next.metadata as { resourceVersion: string }).resourceVersion = String(Number(current) + 1);
    object = next;
    return structuredClone(object);
  };
  const api: KubernetesStoreOptions['api'] = {
    listerWatcher: (kind) => ({
      list: async () => ({
        items: kind === 'DNSRecordSet' ? [structuredClone(object)] : [],
        resourceVersion: '1',
      }),
      watch: async (): Promise<WatchHandle> => ({ abort: () => {} }),
    }),
    get: async () => structuredClone(object),
    replaceStatus: (_kind, body) =>
      write((body.metadata as { resourceVersion?: string }).resourceVersion, (o) => ({
        ...o,
        status: body.status,
      })),
    mergePatch: (_kind, _ns, _name, patch) => {
      const metadata = (patch as { metadata: { resourceVersion?: string; finalizers?: string[] } }).metadata;
      return write(
        metadata.resourceVersion,
        (o) => ({ ...o, metadata: { ...o.metadata, finalizers: metadata.finalizers } }) as KubeJson,
      );
    },
  };
  return {
    api,
    counts,
    current: () => object,
    /** Another writer changes the object (the store's cache does not see it: no watch events here). */
    changeBehind: (change: (o: KubeJson) => KubeJson) => {
      const rv = Number((object.metadata as { resourceVersion: string }).resourceVersion);
      object = change(structuredClone(object));
      (object.metadata as { resourceVersion: string }).resourceVersion = String(rv + 1);
    },
    /** The next write waits (in flight) until the returned function is called. */
    hold: () => {
      let release = () => {};
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      return release;
    },
  };
}

test('a finalizer and a status written to one object at once: one after the other, no conflict', async () => {
  const { api, counts, current } = oneObjectApi();
  const store = new KubernetesStore({ api, reflector: { watchTimeoutSeconds: [300, 300] } });
  store.start();
  await store.synced();
  try {
    await Promise.all([
      store.addFinalizer('DNSRecordSet', 'dns/www', FINALIZER),
      store.updateStatus('DNSRecordSet', 'dns/www', { observedGeneration: 1, fqdn: 'www.example.com.' }),
    ]);
    assert.equal(counts.conflicts, 0, 'a write met a conflict (409) with the other');
    assert.equal(counts.writes, 2);
    const object = current() as { metadata: { finalizers?: string[] }; status?: { fqdn?: string } };
    assert.deepEqual(object.metadata.finalizers, [FINALIZER]);
    assert.equal(object.status?.fqdn, 'www.example.com.');
  } finally {
    await store.stop();
  }
});

test('updateStatusWith plans on the status the write before it left, and again on the fresh object after a conflict', async () => {
  const { api, counts, current, changeBehind } = oneObjectApi();
  const store = new KubernetesStore({ api, reflector: { watchTimeoutSeconds: [300, 300] } });
  store.start();
  await store.synced();
  try {
    const seen: (Resource['status'] | undefined)[] = [];
    const withTargets = (status: Resource['status'] | undefined) => {
      seen.push(structuredClone(status));
      return { ...(status as DNSRecordSetStatus), targets: [{ address: '192.0.2.1', state: 'Up' as const }] };
    };
    // Asked for while a status write is in flight: planned on what that write left.
    const first = store.updateStatus('DNSRecordSet', 'dns/www', {
      observedGeneration: 1,
      fqdn: 'a.example.',
    });
    const written = await store.updateStatusWith('DNSRecordSet', 'dns/www', withTargets);
    await first;
    assert.deepEqual(seen, [{ observedGeneration: 1, fqdn: 'a.example.' }]);
    assert.equal(counts.conflicts, 0);
    assert.deepEqual(written, (current() as { status: unknown }).status);
    assert.equal((written as DNSRecordSetStatus).fqdn, 'a.example.');

    // Another writer moved the object: the write meets a conflict and is planned again on the object
    // read afresh, keeping that writer's status.
    const replanned: DNSRecordSetStatus[] = [];
    changeBehind((o) => ({ ...o, status: { observedGeneration: 1, fqdn: 'b.example.' } }) as KubeJson);
    const again = await store.updateStatusWith('DNSRecordSet', 'dns/www', (status) => {
      const s = status as DNSRecordSetStatus;
      replanned.push(structuredClone(s));
      return { ...s, targets: [{ address: '192.0.2.1', state: 'Down' as const }] };
    });
    assert.equal(counts.conflicts, 1);
    assert.equal(replanned.length, 2, 'planned twice');
    assert.equal(replanned[0]?.fqdn, 'a.example.', 'first on the cached object');
    assert.equal(replanned[1]?.fqdn, 'b.example.', 'the second plan saw the fresh object');
    const status = (current() as { status: DNSRecordSetStatus }).status;
    assert.equal(status.fqdn, 'b.example.');
    assert.equal(status.targets?.[0]?.state, 'Down');
    assert.deepEqual(again, status);
    assert.deepEqual((store.get('DNSRecordSet', 'dns/www') as DNSRecordSet).status, status);

    // Nothing to change: nothing sent.
    const writes = counts.writes;
    assert.equal(await store.updateStatusWith('DNSRecordSet', 'dns/www', (s) => s), undefined);
    assert.equal(await store.updateStatusWith('DNSRecordSet', 'dns/www', () => undefined), undefined);
    assert.equal(await store.updateStatusWith('DNSRecordSet', 'dns/gone', withTargets), undefined);
    assert.equal(counts.writes, writes);
  } finally {
    await store.stop();
  }
});

test('status writer over the Kubernetes store: a targets write asked for while the zone writes new conditions keeps them', async () => {
  const { api, current, hold } = oneObjectApi();
  const store = new KubernetesStore({ api, reflector: { watchTimeoutSeconds: [300, 300] } });
  store.start();
  await store.synced();
  try {
    const now = () => new Date('2026-01-01T00:00:00Z');
    let targets: RecordTargets = [{ address: '192.0.2.1', state: 'Unknown' }];
    const writer = new StatusWriter(store, now, 4, () => targets);
    const verdicts = new Map<string, RecordVerdict>([
      ['dns/www', { accepted: true, fqdn: 'www.example.com.' }],
    ]);
    const programmed = () =>
      (current() as { status?: DNSRecordSetStatus }).status?.conditions?.find((c) => c.type === 'Programmed')
        ?.status;
    await writer.zoneRecords('dns/example-com', verdicts, ['dns/www'], {
      backend: 'builtin',
      programmed: false,
      programmedMessage: 'pending',
    });
    assert.equal(programmed(), 'False');
    // The backend serves the change: the zone's write of Programmed=True waits for its answer...
    const release = hold();
    const serving = { backend: 'builtin', programmed: true, programmedMessage: 'ok' };
    const zone = writer.zoneRecords('dns/example-com', verdicts, ['dns/www'], serving);
    await new Promise((resolve) => setImmediate(resolve));
    // ...when the target comes up.
    targets = [{ address: '192.0.2.1', state: 'Up', lastTransitionTime: '2026-01-01T00:00:01Z' }];
    const up = writer.targetsChanged('dns/www');
    release();
    await zone;
    await up;
    assert.equal(programmed(), 'True', 'the targets write put the old conditions back');
    assert.equal((current() as { status?: DNSRecordSetStatus }).status?.targets?.[0]?.state, 'Up');
    // The zone visited again: nothing to write, nothing undone.
    const rv = (current().metadata as { resourceVersion: string }).resourceVersion;
    await writer.zoneRecords('dns/example-com', verdicts, ['dns/www'], serving);
    assert.equal((current().metadata as { resourceVersion: string }).resourceVersion, rv);
  } finally {
    await store.stop();
  }
});
