import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FINALIZER } from '../../control/resource-store.ts';
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
  const write = async (rv: unknown, change: (o: KubeJson) => KubeJson): Promise<KubeJson> => {
    await new Promise((r) => setTimeout(r, 5)); // in flight for a while, as over the network
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
  return { api, counts, current: () => object };
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
