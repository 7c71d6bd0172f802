/**
 * The record writer's cluster store against a real kube-apiserver: DNSRecordSets labelled
 * dns.zonekeeper.dev/written-by, written by the operator's service account under the chart's RBAC and
 * ValidatingAdmissionPolicy; a request cut off half way (the API server refuses its second object) is
 * completed from the write journal, never left half; and what a tenant and the operator must not do.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { DNSZone, DNSZoneClass } from '../src/api/index.ts';
import { KubeApi, loadKubeConfig } from '../src/sources/kubernetes/kube-api.ts';
import { KubernetesStore } from '../src/sources/kubernetes/kubernetes-store.ts';
import { catalogGate } from '../src/sources/writes/catalog-gate.ts';
import { KubernetesWriteStore, WRITE_JOURNAL } from '../src/sources/writes/kubernetes-write-store.ts';
import { CredentialTable } from '../src/writes/credentials.ts';
import { WriteCoordinator, writtenObjectName } from '../src/writes/record-writer.ts';
import { WRITTEN_BY_LABEL, WriteError } from '../src/writes/write-request.ts';
import { Catalog } from '../src/zones/catalog.ts';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { type KubeCluster, type KubeUser, serviceAccountUser, startKube } from './support/kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const TENANT: KubeUser = { name: 'alice', groups: ['system:authenticated'] };
const BLOCK = 'test-block-second-object';

const json = (...items: object[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });

describe('API writes in a cluster', () => {
  let kube: KubeCluster;
  let store: KubernetesStore;

  before(async () => {
    kube = await startKube({ users: [OPERATOR, TENANT] });
    for (const ns of [SYSTEM, 'team-a', 'team-b']) await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, {
      namespace: SYSTEM,
      set: ['operator.apiWrites.enabled=true'],
    });
    // Only RBAC and admission: no workloads run here.
    const docs = chartAccessDocs(rendered, { admission: true });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: docs });
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: json(
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'records', namespace: 'team-a' },
          rules: [{ apiGroups: ['dns.zonekeeper.dev'], resources: ['dnsrecordsets'], verbs: ['*'] }],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'alice-records', namespace: 'team-a' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'records' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
        },
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.'] },
        },
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZone',
          metadata: { name: 'example', namespace: SYSTEM },
          spec: {
            domainName: 'example.com',
            className: 'builtin',
            delegations: [{ namespaces: ['team-a'], names: ['*.a'] }],
          },
        },
      ),
    });
    store = new KubernetesStore({ api: new KubeApi(loadKubeConfig(kube.kubeconfigFor(OPERATOR))) });
    store.start();
    await waitFor(async () => (store.list('DNSZone').length === 1 ? true : undefined), 30_000);
  });

  after(async () => {
    await store?.stop();
    await kube?.stop();
  });

  function writer(): { coordinator: WriteCoordinator; writes: KubernetesWriteStore } {
    const catalog = new Catalog();
    catalog.load(store.list('DNSZoneClass') as DNSZoneClass[], store.list('DNSZone') as DNSZone[], []);
    const writes = new KubernetesWriteStore(loadKubeConfig(kube.kubeconfigFor(OPERATOR)), SYSTEM);
    const coordinator = new WriteCoordinator({
      store: writes,
      gate: catalogGate(catalog, store),
      credentials: new CredentialTable({
        credentials: [
          { name: 'key-a', kind: 'api-key', namespace: 'team-a', secretRef: { name: 'keys', key: 'a' } },
          { name: 'key-c', kind: 'api-key', namespace: 'team-a', secretRef: { name: 'keys', key: 'c' } },
        ],
      }),
    });
    return { coordinator, writes };
  }

  const labelled = async () =>
    JSON.parse(await kube.kubectlOk(['get', 'dnsrecordsets', '-A', '-l', WRITTEN_BY_LABEL, '-o', 'json']))
      .items.map(
        (o: {
          metadata: { namespace: string; labels: Record<string, string> };
          spec: { name: string; records: string[] };
        }) =>
          `${o.metadata.namespace} ${o.metadata.labels[WRITTEN_BY_LABEL]} ${o.spec.name} ${o.spec.records.join(',')}`,
      )
      .sort();

  test('the operator can create and delete DNSRecordSets only with apiWrites on, and only labelled ones', async () => {
    const can = async (user: KubeUser, ...args: string[]) =>
      (
        await kube.kubectl(['auth', 'can-i', ...args], { kubeconfig: kube.kubeconfigFor(user) })
      ).stdout.trim();
    assert.equal(await can(OPERATOR, 'create', 'dnsrecordsets.dns.zonekeeper.dev', '-n', 'team-a'), 'yes');
    assert.equal(await can(OPERATOR, 'delete', 'dnsrecordsets.dns.zonekeeper.dev', '-n', 'team-a'), 'yes');
    assert.equal(await can(OPERATOR, 'create', 'dnszones.dns.zonekeeper.dev', '-n', 'team-a'), 'no');
    const unlabelled = json({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSRecordSet',
      metadata: { name: 'tenant-own', namespace: 'team-a' },
      spec: { name: 'own.a.example.com.', type: 'A', records: ['192.0.2.1'] },
    });
    // The policy compiles asynchronously: wait until it refuses.
    await waitFor(async () => {
      const r = await kube.kubectl(['create', '--dry-run=server', '-f', '-'], {
        input: unlabelled,
        kubeconfig: kube.kubeconfigFor(OPERATOR),
      });
      return r.code !== 0 ? r : undefined;
    }, 30_000).then(({ value }) => assert.match(value.stderr, /only DNSRecordSets labelled/));
    // The tenant's own record set: the operator cannot delete it.
    await kube.kubectlOk(['create', '-f', '-'], {
      input: unlabelled,
      kubeconfig: kube.kubeconfigFor(TENANT),
    });
    const del = await kube.kubectl(['delete', 'dnsrecordset', '-n', 'team-a', 'tenant-own'], {
      kubeconfig: kube.kubeconfigFor(OPERATOR),
    });
    assert.notEqual(del.code, 0);
    assert.match(del.stderr, /only DNSRecordSets labelled/);
    // A tenant cannot pass its record set off as API-written, nor label one later.
    const forged = await kube.kubectl(['create', '-f', '-'], {
      input: json({
        apiVersion: 'dns.zonekeeper.dev/v1alpha1',
        kind: 'DNSRecordSet',
        metadata: { name: 'forged', namespace: 'team-a', labels: { [WRITTEN_BY_LABEL]: 'key-a' } },
        spec: { name: 'forged.a.example.com.', type: 'A', records: ['192.0.2.1'] },
      }),
      kubeconfig: kube.kubeconfigFor(TENANT),
    });
    assert.notEqual(forged.code, 0);
    assert.match(forged.stderr, /written-by is set by Zonekeeper/);
    const relabel = await kube.kubectl(
      ['label', 'dnsrecordset', '-n', 'team-a', 'tenant-own', `${WRITTEN_BY_LABEL}=key-a`],
      {
        kubeconfig: kube.kubeconfigFor(TENANT),
      },
    );
    assert.notEqual(relabel.code, 0);
  });

  test('a request becomes labelled DNSRecordSets; the writer refuses a tenant object and outside delegations', async () => {
    const { coordinator } = writer();
    await coordinator.start();
    const result = await coordinator.apply('key-a', {
      id: 'r1',
      changes: [
        { op: 'upsert', name: 'www.a.example.com.', type: 'A', records: ['192.0.2.1'] },
        { op: 'upsert', name: 'api.a.example.com.', type: 'A', records: ['192.0.2.2'] },
      ],
    });
    assert.deepEqual(
      result.changes.map((c) => c.outcome),
      ['created', 'created'],
    );
    assert.deepEqual(await labelled(), [
      'team-a key-a api.a.example.com. 192.0.2.2',
      'team-a key-a www.a.example.com. 192.0.2.1',
    ]);
    await assert.rejects(
      coordinator.apply('key-a', {
        changes: [{ op: 'upsert', name: 'www.example.com.', type: 'A', records: ['192.0.2.9'] }],
      }),
      (e: unknown) => e instanceof WriteError && e.code === 'NOT_DELEGATED',
    );
    // A tenant object at the name the writer would use.
    const name = writtenObjectName('t.a.example.com.', 'A');
    await kube.kubectlOk(['create', '-f', '-'], {
      input: json({
        apiVersion: 'dns.zonekeeper.dev/v1alpha1',
        kind: 'DNSRecordSet',
        metadata: { name, namespace: 'team-a' },
        spec: { name: 't.a.example.com.', type: 'A', records: ['198.51.100.1'] },
      }),
      kubeconfig: kube.kubeconfigFor(TENANT),
    });
    await waitFor(async () => (store.get('DNSRecordSet', `team-a/${name}`) ? true : undefined));
    await assert.rejects(
      coordinator.apply('key-a', { changes: [{ op: 'delete', name: 't.a.example.com.', type: 'A' }] }),
      (e: unknown) => e instanceof WriteError && e.code === 'NOT_OWNER',
    );
    // A new leader remembers the request id (the journal).
    const next = writer().coordinator;
    await next.start();
    const replay = await next.apply('key-a', {
      id: 'r1',
      changes: [
        { op: 'upsert', name: 'www.a.example.com.', type: 'A', records: ['192.0.2.1'] },
        { op: 'upsert', name: 'api.a.example.com.', type: 'A', records: ['192.0.2.2'] },
      ],
    });
    assert.equal(replay.replayed, true);
  });

  test('a request cut off after its first object is completed from the journal, never left half', async () => {
    // The API server refuses the request's second object (as a leader dying there would leave it).
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: json(
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingAdmissionPolicy',
          metadata: { name: BLOCK },
          spec: {
            failurePolicy: 'Fail',
            matchConstraints: {
              resourceRules: [
                {
                  apiGroups: ['dns.zonekeeper.dev'],
                  apiVersions: ['*'],
                  operations: ['CREATE'],
                  resources: ['dnsrecordsets'],
                },
              ],
            },
            validations: [
              { expression: "object.spec.name != 'second.a.example.com.'", message: 'blocked by the test' },
            ],
          },
        },
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingAdmissionPolicyBinding',
          metadata: { name: BLOCK },
          spec: { policyName: BLOCK, validationActions: ['Deny'] },
        },
      ),
    });
    const probe = json({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSRecordSet',
      metadata: { name: 'probe', namespace: 'team-b' },
      spec: { name: 'second.a.example.com.', type: 'A', records: ['192.0.2.1'] },
    });
    await waitFor(async () => {
      const r = await kube.kubectl(['create', '--dry-run=server', '-f', '-'], { input: probe });
      return r.code !== 0 ? true : undefined;
    }, 30_000);

    const { coordinator } = writer();
    await coordinator.start();
    const request = {
      id: 'half',
      changes: [
        { op: 'upsert' as const, name: 'first.a.example.com.', type: 'A' as const, records: ['192.0.2.10'] },
        { op: 'upsert' as const, name: 'second.a.example.com.', type: 'A' as const, records: ['192.0.2.11'] },
      ],
    };
    await assert.rejects(
      coordinator.apply('key-a', request),
      (e: unknown) => e instanceof WriteError && e.code === 'UNAVAILABLE',
    );
    const journal = JSON.parse(
      await kube.kubectlOk(['get', 'configmap', '-n', SYSTEM, WRITE_JOURNAL, '-o', 'json']),
    );
    assert.ok(journal.data.pending, 'the request waits in the journal');

    await kube.kubectlOk(['delete', 'validatingadmissionpolicybinding', BLOCK]);
    await kube.kubectlOk(['delete', 'validatingadmissionpolicy', BLOCK]);
    await waitFor(async () => {
      const r = await kube.kubectl(['create', '--dry-run=server', '-f', '-'], { input: probe });
      return r.code === 0 ? true : undefined;
    }, 30_000);
    // A new leader (or the next request) completes it; the retry with the same id learns the outcome.
    const next = writer().coordinator;
    await next.start();
    const all = await labelled();
    assert.ok(all.includes('team-a key-a first.a.example.com. 192.0.2.10'), all.join('\n'));
    assert.ok(all.includes('team-a key-a second.a.example.com. 192.0.2.11'), all.join('\n'));
    const after = JSON.parse(
      await kube.kubectlOk(['get', 'configmap', '-n', SYSTEM, WRITE_JOURNAL, '-o', 'json']),
    );
    assert.equal(after.data.pending, undefined);
    assert.equal((await next.apply('key-a', request)).replayed, true);
  });

  const tenantObject = (name: string, fqdn: string) =>
    json({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSRecordSet',
      metadata: { name, namespace: 'team-a' },
      spec: { name: fqdn, type: 'A', records: ['198.51.100.66'] },
    });
  const unlabelledIsLive = (name: string) =>
    waitFor(async () => {
      const o = store.get('DNSRecordSet', `team-a/${name}`);
      return o && o.metadata.labels?.[WRITTEN_BY_LABEL] === undefined ? true : undefined;
    });

  test('a tenant that swaps its written object for its own gets NOT_OWNER and stops nobody else', async () => {
    const { coordinator } = writer();
    await coordinator.start();
    const upsert = (fqdn: string, address: string) => ({
      changes: [{ op: 'upsert' as const, name: fqdn, type: 'A' as const, records: [address] }],
    });
    await coordinator.apply('key-a', upsert('swap.a.example.com.', '192.0.2.20'));
    const name = writtenObjectName('swap.a.example.com.', 'A');
    await waitFor(async () => (store.get('DNSRecordSet', `team-a/${name}`) ? true : undefined));
    // The tenant deletes the labelled object (its namespace, its right) and creates its own at the name.
    await kube.kubectlOk(['delete', 'dnsrecordset', '-n', 'team-a', name], {
      kubeconfig: kube.kubeconfigFor(TENANT),
    });
    await kube.kubectlOk(['create', '-f', '-'], {
      input: tenantObject(name, 'swap.a.example.com.'),
      kubeconfig: kube.kubeconfigFor(TENANT),
    });
    await unlabelledIsLive(name);
    for (const change of [
      upsert('swap.a.example.com.', '192.0.2.21'),
      { changes: [{ op: 'delete' as const, name: 'swap.a.example.com.', type: 'A' as const }] },
    ])
      await assert.rejects(
        coordinator.apply('key-a', change),
        (e: unknown) => e instanceof WriteError && e.code === 'NOT_OWNER',
      );
    // Nothing waits in the journal, and other credentials still write.
    const journal = JSON.parse(
      await kube.kubectlOk(['get', 'configmap', '-n', SYSTEM, WRITE_JOURNAL, '-o', 'json']),
    );
    assert.equal(journal.data.pending, undefined);
    const other = await coordinator.apply('key-c', upsert('other.a.example.com.', '192.0.2.30'));
    assert.deepEqual(
      other.changes.map((c) => c.outcome),
      ['created'],
    );
    const next = writer().coordinator;
    await next.start();
    await next.apply('key-c', upsert('other2.a.example.com.', '192.0.2.31'));
    // The tenant's object is as the tenant wrote it.
    const live = JSON.parse(
      await kube.kubectlOk(['get', 'dnsrecordset', '-n', 'team-a', name, '-o', 'json']),
    );
    assert.deepEqual(live.spec.records, ['198.51.100.66']);
    assert.equal(live.metadata.labels?.[WRITTEN_BY_LABEL], undefined);
  });

  test('a journalled request blocked by a tenant object is skipped when rolled forward, not retried forever', async () => {
    const { coordinator, writes } = writer();
    await coordinator.start();
    await coordinator.apply('key-a', {
      changes: [
        { op: 'upsert', name: 'j1.a.example.com.', type: 'A', records: ['192.0.2.40'] },
        { op: 'upsert', name: 'j2.a.example.com.', type: 'A', records: ['192.0.2.41'] },
      ],
    });
    const [j1, j2] = ['j1', 'j2'].map((n) => writtenObjectName(`${n}.a.example.com.`, 'A')) as [
      string,
      string,
    ];
    // Both swapped for the tenant's own objects, behind the writer's back.
    for (const [name, fqdn] of [
      [j1, 'j1.a.example.com.'],
      [j2, 'j2.a.example.com.'],
    ] as const) {
      await kube.kubectlOk(['delete', 'dnsrecordset', '-n', 'team-a', name], {
        kubeconfig: kube.kubeconfigFor(TENANT),
      });
      await kube.kubectlOk(['create', '-f', '-'], {
        input: tenantObject(name, fqdn),
        kubeconfig: kube.kubeconfigFor(TENANT),
      });
    }
    // A batch journalled before the writer could see that (as a live view behind the API server's): the
    // update of one meets a 409 and a foreign label, the delete of the other a 403 from admission.
    const batch = {
      put: [
        {
          resource: {
            apiVersion: 'dns.zonekeeper.dev/v1alpha1',
            kind: 'DNSRecordSet' as const,
            metadata: { name: j1, namespace: 'team-a', labels: { [WRITTEN_BY_LABEL]: 'key-a' } },
            spec: { name: 'j1.a.example.com.', type: 'A' as const, records: ['192.0.2.42'] },
          },
          created: new Date().toISOString(),
        },
      ],
      delete: [`team-a/${j2}`],
      forget: [],
    };
    await assert.rejects(writes.commit(batch));
    const pending = JSON.parse(
      await kube.kubectlOk(['get', 'configmap', '-n', SYSTEM, WRITE_JOURNAL, '-o', 'json']),
    );
    assert.ok(pending.data.pending, 'the batch waits in the journal');
    // A new leader rolls it forward past the tenant's objects and accepts writes.
    const next = writer();
    await next.coordinator.start();
    assert.deepEqual(next.writes.lastSkipped.sort(), [`team-a/${j1}`, `team-a/${j2}`].sort());
    const cleared = JSON.parse(
      await kube.kubectlOk(['get', 'configmap', '-n', SYSTEM, WRITE_JOURNAL, '-o', 'json']),
    );
    assert.equal(cleared.data.pending, undefined);
    await next.coordinator.apply('key-c', {
      changes: [{ op: 'upsert', name: 'after.a.example.com.', type: 'A', records: ['192.0.2.43'] }],
    });
    for (const name of [j1, j2]) {
      const live = JSON.parse(
        await kube.kubectlOk(['get', 'dnsrecordset', '-n', 'team-a', name, '-o', 'json']),
      );
      assert.deepEqual(live.spec.records, ['198.51.100.66']);
    }
  });

  test('a written object its tenant deleted is created again by the same content', async () => {
    const { coordinator } = writer();
    await coordinator.start();
    const request = {
      changes: [
        { op: 'upsert' as const, name: 'again.a.example.com.', type: 'A' as const, records: ['192.0.2.50'] },
      ],
    };
    await coordinator.apply('key-a', request);
    const name = writtenObjectName('again.a.example.com.', 'A');
    await waitFor(async () => (store.get('DNSRecordSet', `team-a/${name}`) ? true : undefined));
    assert.deepEqual(
      (await coordinator.apply('key-a', request)).changes.map((c) => c.outcome),
      ['unchanged'],
    );
    await kube.kubectlOk(['delete', 'dnsrecordset', '-n', 'team-a', name], {
      kubeconfig: kube.kubeconfigFor(TENANT),
    });
    await waitFor(async () => (store.get('DNSRecordSet', `team-a/${name}`) ? undefined : true));
    assert.deepEqual(
      (await coordinator.apply('key-a', request)).changes.map((c) => c.outcome),
      ['created'],
    );
    assert.ok((await labelled()).includes('team-a key-a again.a.example.com. 192.0.2.50'));
  });
});
