/**
 * The Kubernetes source against a real kube-apiserver + etcd (test/support/kube.ts): the reflector's
 * list/watch and its relist after 410 Gone, the store's conditional status and finalizer writes
 * (conflict → refetch → retry), Events, and Lease-based leader election.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import type { DNSZone } from '../src/api/index.ts';
import { FINALIZER, type StoreEvent } from '../src/control/resource-store.ts';
import { Registry } from '../src/metrics/registry.ts';
import { KubeApi, loadKubeConfig } from '../src/sources/kubernetes/kube-api.ts';
import { KubernetesStore } from '../src/sources/kubernetes/kubernetes-store.ts';
import { LeaderElector } from '../src/sources/kubernetes/leader-election.ts';
import { type KubeObject, Reflector } from '../src/sources/kubernetes/reflector.ts';
import { type KubeCluster, serviceAccountUser, startKube } from './support/kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const API = 'dns.zonekeeper.dev/v1alpha1';
const READER = serviceAccountUser('zonekeeper-system', 'reader');

function zoneYaml(name: string, domainName: string, labels: Record<string, string> = {}): string {
  return stringify({
    apiVersion: API,
    kind: 'DNSZone',
    metadata: { name, namespace: 'src', labels },
    spec: { domainName, className: 'builtin' },
  });
}

describe('Kubernetes source on a real API server', { timeout: 300_000 }, () => {
  let kube: KubeCluster;
  let api: KubeApi;

  before(async () => {
    kube = await startKube({ users: [READER] });
    await kube.kubectlOk(['create', 'namespace', 'src']);
    await kube.kubectlOk(['create', 'namespace', 'zonekeeper-system']);
    api = new KubeApi(loadKubeConfig(kube.adminKubeconfig));
  });
  after(async () => {
    await kube?.stop();
  });

  test('the store lists, follows the watch, and writes status conditionally: a conflict is refetched and retried', async (t) => {
    await kube.kubectlOk(['apply', '-f', '-'], { input: zoneYaml('a', 'a.example') });
    const registry = new Registry();
    const store = new KubernetesStore({ api, registry });
    const events: string[] = [];
    store.watch((e: StoreEvent) => events.push(`${e.type} ${e.kind} ${e.key}`));
    store.start();
    t.after(() => store.stop());
    await store.synced();
    assert.equal((store.get('DNSZone', 'src/a') as DNSZone | undefined)?.spec.domainName, 'a.example');
    assert.ok(events.includes('upsert DNSZone src/a'));

    await kube.kubectlOk(['apply', '-f', '-'], { input: zoneYaml('b', 'b.example') });
    await waitFor(async () => (store.get('DNSZone', 'src/b') ? true : undefined));

    // Someone else changes the object after a store cached it (this one stops watching, so its cache
    // stays behind): its write carries a stale resourceVersion, gets 409, reads again and retries.
    const staleRegistry = new Registry();
    const stale = new KubernetesStore({ api, registry: staleRegistry });
    stale.start();
    await stale.synced();
    await stale.stop();
    const cached = stale.get('DNSZone', 'src/a')!;
    await kube.kubectlOk(['label', 'dnszone', '-n', 'src', 'a', 'touched=yes']);
    await stale.updateStatus('DNSZone', 'src/a', { serial: 42, hash: 'h', conditions: [] });
    const live = JSON.parse(await kube.kubectlOk(['get', 'dnszone', '-n', 'src', 'a', '-o', 'json']));
    assert.equal(live.status.serial, 42);
    assert.equal(live.metadata.labels.touched, 'yes', 'the status write did not undo the label change');
    assert.notEqual(cached.metadata.resourceVersion, live.metadata.resourceVersion);
    assert.match(
      staleRegistry.render(),
      /zonekeeper_kube_writes_total\{kind="DNSZone",what="status",result="conflict"\} 1/,
    );
    // The live store sees the change through its watch.
    await waitFor(async () =>
      (store.get('DNSZone', 'src/a') as DNSZone).status?.serial === 42 ? true : undefined,
    );

    // Written through: the writer's store shows its write at once.
    await store.updateStatus('DNSZone', 'src/a', { serial: 43, hash: 'h', conditions: [] });
    assert.equal((store.get('DNSZone', 'src/a') as DNSZone).status?.serial, 43);
    assert.match(
      registry.render(),
      /zonekeeper_kube_writes_total\{kind="DNSZone",what="status",result="ok"\} 1/,
    );

    // Finalizers: added with a merge patch; an object being deleted goes once the last one is removed.
    await store.addFinalizer('DNSZone', 'src/b', FINALIZER);
    await kube.kubectlOk(['delete', 'dnszone', '-n', 'src', 'b', '--wait=false']);
    await waitFor(async () => (store.get('DNSZone', 'src/b')?.metadata.deletionTimestamp ? true : undefined));
    assert.deepEqual(store.get('DNSZone', 'src/b')?.metadata.finalizers, [FINALIZER]);
    await store.removeFinalizer('DNSZone', 'src/b', FINALIZER);
    assert.equal(store.get('DNSZone', 'src/b'), undefined);
    assert.equal((await kube.kubectl(['get', 'dnszone', '-n', 'src', 'b'])).code, 1);
    assert.ok(events.includes('delete DNSZone src/b'));
    // A status write on an object that is gone is a no-op.
    await store.updateStatus('DNSZone', 'src/b', { conditions: [] });
  });

  test('a read-only identity cannot write status (the API server refuses with 403)', async (t) => {
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: `${stringify({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'zk-reader' },
        rules: [
          {
            apiGroups: ['dns.zonekeeper.dev'],
            resources: ['dnszones', 'dnszoneclasses', 'dnsrecordsets', 'domains'],
            verbs: ['get', 'list', 'watch'],
          },
        ],
      })}---\n${stringify({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'zk-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'zk-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'zonekeeper-system' }],
      })}`,
    });
    const reader = new KubernetesStore({ api: new KubeApi(loadKubeConfig(kube.kubeconfigFor(READER))) });
    reader.start();
    t.after(() => reader.stop());
    await reader.synced();
    assert.ok(reader.get('DNSZone', 'src/a'));
    await assert.rejects(
      reader.updateStatus('DNSZone', 'src/a', { conditions: [] }),
      (e: Error & { status?: number }) => {
        assert.equal(e.status, 403);
        return true;
      },
    );
  });

  test('a watch from a version that is gone (410) makes the reflector list again', async (t) => {
    const lw = api.listerWatcher('DNSZone');
    let lists = 0;
    const metrics: string[] = [];
    const replaced: string[][] = [];
    const reflector = new Reflector({
      name: 'dnszones',
      listerWatcher: {
        // The first list claims a version long compacted out of the watch cache.
        list: async () => {
          const result = await lw.list();
          return lists++ === 0 ? { ...result, resourceVersion: '1' } : result;
        },
        watch: lw.watch,
      },
      onReplace: (items: KubeObject[]) => replaced.push(items.map((i) => i.metadata?.name ?? '').sort()),
      onEvent: () => {},
      onMetric: (what) => metrics.push(what),
      backoff: { initialMs: 10 },
    });
    reflector.start();
    t.after(() => reflector.stop());
    await waitFor(async () => (replaced.length >= 2 ? true : undefined));
    await reflector.stop();
    assert.ok(metrics.includes('relist_gone'), metrics.join());
    const names = (await kube.kubectlOk(['get', 'dnszones', '-n', 'src', '-o', 'name'])).trim().split('\n');
    assert.deepEqual(replaced[1], names.map((n) => n.split('/').pop()).sort());
    assert.notEqual(reflector.lastResourceVersion, '1');
  });

  test('events.k8s.io Events are created with microsecond times', async () => {
    await api.createEvent(
      'src',
      {
        regarding: { kind: 'DNSZone', name: 'a', namespace: 'src' },
        type: 'Warning',
        reason: 'Conflict',
        action: 'ProgramZone',
        note: 'n',
      },
      'dns.zonekeeper.dev/operator',
      'test',
      new Date(),
    );
    const out = JSON.parse(await kube.kubectlOk(['get', 'events.events.k8s.io', '-n', 'src', '-o', 'json']));
    const e = out.items.find((i: { reason: string }) => i.reason === 'Conflict');
    assert.match(e.eventTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.equal(e.reportingController, 'dns.zonekeeper.dev/operator');
  });

  test('leader election on a Lease: one leader; a graceful stop hands over at once; conditional writes', async (t) => {
    const started: string[] = [];
    const make = (identity: string) =>
      new LeaderElector({
        api,
        namespace: 'zonekeeper-system',
        name: 'election-test',
        identity,
        leaseDurationMs: 4000,
        renewDeadlineMs: 3000,
        retryPeriodMs: 500,
        onStartedLeading: () => started.push(identity),
        onStoppedLeading: () => started.push(`${identity} lost`),
      });
    const a = make('a');
    const b = make('b');
    t.after(() => Promise.all([a.stop(), b.stop()]));
    a.start();
    await waitFor(async () => (a.isLeader ? true : undefined));
    b.start();
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(b.isLeader, false, 'the lease is held and renewed');
    assert.equal(b.leader, 'a');
    const handover = performance.now();
    await a.stop(); // releases
    await waitFor(async () => (b.isLeader ? true : undefined), 5000);
    assert.ok(performance.now() - handover < 1500, 'a released lease is taken at the next retry');
    const lease = JSON.parse(
      await kube.kubectlOk(['get', 'lease', '-n', 'zonekeeper-system', 'election-test', '-o', 'json']),
    );
    assert.equal(lease.spec.holderIdentity, 'b');
    assert.equal(lease.spec.leaseTransitions, 1);
    assert.equal(lease.spec.leaseDurationSeconds, 4);
    await b.stop();
    assert.deepEqual(started, ['a', 'b']);
  });
});
