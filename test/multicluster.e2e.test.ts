/**
 * Many clusters, one DNS: three real API servers on one etcd (two upstream, one downstream, each its
 * own --etcd-prefix), `zonekeeper operator --upstream-clusters` and `zonekeeper server` in the
 * downstream as processes, the upstreams reached with least-privilege RBAC, answers checked with dig.
 */
import assert from 'node:assert/strict';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { parseClusterSource } from '../src/sources/multicluster/cluster-source.ts';
import { DownstreamApi } from '../src/sources/multicluster/downstream-api.ts';
import { mirrorNamespace } from '../src/sources/multicluster/mapping.ts';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type KubePlane, type KubeUser, type PlaneCluster, serviceAccountUser } from './support/kube.ts';
import {
  keepE2eLogs,
  prepareUpstreams,
  startMulticlusterPlane,
  startUpstreamOperator,
} from './support/multicluster.ts';
import { type KubeProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const API = 'dns.zonekeeper.dev/v1alpha1';
const SYSTEM = 'zonekeeper-system';
const TEAM = 'team';
const REPLICATOR: KubeUser = { name: 'zonekeeper-replicator', groups: ['system:authenticated'] };
/** Downstream: the chart's service accounts, with the chart's RBAC and admission policy. */
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const yamlDocs = (...docs: object[]) => docs.map((d) => `---\n${stringify(d)}`).join('');

function zone(name: string, domainName: string, namespace = TEAM, extra: object = {}) {
  return {
    apiVersion: API,
    kind: 'DNSZone',
    metadata: { name, namespace },
    spec: { domainName, className: 'builtin', ...extra },
  };
}

function recordSet(
  name: string,
  zoneName: string,
  owner: string,
  address: string,
  namespace = TEAM,
  extra: object = {},
) {
  return {
    apiVersion: API,
    kind: 'DNSRecordSet',
    metadata: { name, namespace },
    spec: { zoneRef: { name: zoneName }, name: owner, type: 'A', records: [address] },
    ...extra,
  };
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
}

describe('multicluster: two upstream clusters replicated into one serving cluster', {
  timeout: 900_000,
}, () => {
  let plane: KubePlane;
  let down: PlaneCluster;
  let alpha: PlaneCluster;
  let beta: PlaneCluster;
  let folder: string;
  let operator: KubeProcess;
  let server: KubeProcess;

  const apply = (cluster: PlaneCluster, ...docs: object[]) =>
    cluster.kubectlOk(['apply', '-f', '-'], { input: yamlDocs(...docs) });
  const getJson = async (cluster: PlaneCluster, args: string[]) =>
    JSON.parse(await cluster.kubectlOk(['get', ...args, '-o', 'json'])) as {
      metadata: { generation?: number; finalizers?: string[]; labels?: Record<string, string> };
      status?: { observedGeneration?: number; serial?: number; conditions?: Condition[]; zone?: object };
      items?: { metadata: { name: string; namespace?: string; labels?: Record<string, string> } }[];
    };
  const condition = (o: { status?: { conditions?: Condition[] } }, type: string) =>
    o.status?.conditions?.find((c) => c.type === type);
  const addresses = async (name: string) => rdataOf(await dig(server.dnsPort, name, 'A'), 'A').sort();
  const answersWith = (name: string, expected: string[], timeoutMs = 60_000) =>
    waitFor(
      async () => {
        const got = await addresses(name);
        return JSON.stringify(got) === JSON.stringify(expected) ? got : undefined;
      },
      timeoutMs,
      100,
    );
  const refused = (name: string, timeoutMs = 60_000) =>
    waitFor(
      async () => {
        const r = await dig(server.dnsPort, name, 'A');
        return r.status === 'REFUSED' ? r : undefined;
      },
      timeoutMs,
      100,
    );

  before(async () => {
    ({ plane, down, alpha, beta } = await startMulticlusterPlane([REPLICATOR, OPERATOR, SERVER], SYSTEM));
    // The chart's RBAC and admission policy with upstream clusters (and API writes, whose policy must
    // let the copies through) enabled: the operator and the server run as its service accounts.
    const rendered = await renderChart(down.binDir, {
      namespace: SYSTEM,
      set: [
        'operator.upstreamClusters.enabled=true,operator.upstreamClusters.secretName=upstreams,operator.apiWrites.enabled=true',
      ],
    });
    const rbac = chartAccessDocs(rendered, { admission: true });
    await down.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
    await apply(down, {
      apiVersion: API,
      kind: 'DNSZoneClass',
      metadata: { name: 'builtin' },
      spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.', 'ns2.example.net.'] },
    });
    // The upstream RBAC as shipped (deploy/multicluster/upstream-rbac.yaml), for the user REPLICATOR.
    folder = await prepareUpstreams([alpha, beta], REPLICATOR, TEAM);
    operator = await startUpstreamOperator(down, OPERATOR, SYSTEM, folder, [
      '--upstream-removal-grace',
      '3',
      '--upstream-resync-interval',
      '600',
      '--upstream-max-objects',
      '40',
    ]);
    server = await startServerProcess('server', down.kubeconfigFor(SERVER));
  });

  after(async () => {
    await keepE2eLogs([operator, server], plane);
    await Promise.all([operator, server].filter(Boolean).map((p) => p.stop().catch(() => {})));
    await plane?.stop();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  test('records created in both upstreams are answered by the downstream server', async () => {
    await apply(alpha, zone('a-zone', 'a.example'), recordSet('www', 'a-zone', 'www', '192.0.2.1'));
    await apply(beta, zone('b-zone', 'b.example'), recordSet('www', 'b-zone', 'www', '192.0.2.2'));
    await answersWith('www.a.example.', ['192.0.2.1']);
    await answersWith('www.b.example.', ['192.0.2.2']);
    // The copies live in namespaces derived from cluster and namespace, labelled with their origin.
    const copy = await getJson(down, ['dnszone', '-n', mirrorNamespace('alpha', TEAM), 'a-zone']);
    assert.equal(copy.metadata.labels?.['multicluster.zonekeeper.dev/cluster'], 'alpha');
    assert.equal(copy.metadata.labels?.['multicluster.zonekeeper.dev/namespace'], TEAM);
  });

  test('status round trip: Ready with the upstream generation, the zone named in its own namespace', async () => {
    await apply(alpha, zone('a-zone', 'a.example', TEAM, { ttl: 600 })); // a second generation
    const { value: z } = await waitFor(
      async () => {
        const o = await getJson(alpha, ['dnszone', '-n', TEAM, 'a-zone']);
        return condition(o, 'Ready')?.status === 'True' &&
          o.status?.observedGeneration === o.metadata.generation
          ? o
          : undefined;
      },
      60_000,
      200,
    );
    assert.equal(z.metadata.generation, 2);
    assert.ok(z.status?.serial, 'the serial comes back upstream');
    assert.ok(z.metadata.finalizers?.includes('multicluster.zonekeeper.dev/finalizer'));
    const { value: rs } = await waitFor(
      async () => {
        const o = await getJson(alpha, ['dnsrecordset', '-n', TEAM, 'www']);
        return condition(o, 'Ready')?.status === 'True' ? o : undefined;
      },
      60_000,
      200,
    );
    assert.deepEqual(rs.status?.zone, { namespace: TEAM, name: 'a-zone' });
    // Events follow the status upstream: the zone became Ready.
    await waitFor(
      async () => {
        const events = JSON.parse(
          await alpha.kubectlOk(['get', 'events.events.k8s.io', '-n', TEAM, '-o', 'json']),
        ) as { items: { reason?: string; regarding?: { name?: string } }[] };
        return events.items.some((e) => e.reason === 'Ready' && e.regarding?.name === 'a-zone')
          ? true
          : undefined;
      },
      60_000,
      200,
    );
  });

  test('an upstream object Zonekeeper refuses (beyond the CRD schema) gets its Invalid status upstream', async () => {
    await apply(alpha, recordSet('bad', 'a-zone', 'bad', 'not-an-address'));
    const { value: bad } = await waitFor(
      async () => {
        const o = await getJson(alpha, ['dnsrecordset', '-n', TEAM, 'bad']);
        return condition(o, 'Accepted')?.reason === 'Invalid' ? o : undefined;
      },
      60_000,
      200,
    );
    assert.equal(condition(bad, 'Accepted')?.status, 'False');
    assert.equal(bad.status?.observedGeneration, bad.metadata.generation);
    assert.deepEqual(await addresses('www.a.example.'), ['192.0.2.1']);
    await alpha.kubectlOk(['delete', 'dnsrecordset', '-n', TEAM, 'bad']);
  });

  test("a zone refused downstream claims nothing: another cluster's accepted zone of the domain is served", async () => {
    // alpha's zone of squat.example names a class the downstream does not have: Accepted=False there.
    await apply(alpha, zone('squat', 'squat.example', TEAM, { className: 'no-such-class' }));
    await waitFor(
      async () => {
        const o = await getJson(alpha, ['dnszone', '-n', TEAM, 'squat']);
        return condition(o, 'Accepted')?.reason === 'ClassNotFound' ? o : undefined;
      },
      60_000,
      200,
    );
    // beta's zone of the same domain, accepted downstream: it holds the domain and is served.
    await apply(beta, zone('squat', 'squat.example'), recordSet('squat-www', 'squat', 'www', '192.0.2.30'));
    await answersWith('www.squat.example.', ['192.0.2.30']);
    const { value: lost } = await waitFor(
      async () => {
        const o = await getJson(alpha, ['dnszone', '-n', TEAM, 'squat']);
        return condition(o, 'Accepted')?.reason === 'ClaimedByAnotherCluster' ? o : undefined;
      },
      60_000,
      200,
    );
    assert.equal(condition(lost, 'Accepted')?.status, 'False');
    assert.equal(
      condition(await getJson(beta, ['dnszone', '-n', TEAM, 'squat']), 'Accepted')?.status,
      'True',
    );
    await alpha.kubectlOk(['delete', 'dnszone', '-n', TEAM, 'squat', '--wait=false']);
  });

  test('a domain claimed in both upstreams is served for the first observed claim; the loser is told upstream', async () => {
    await apply(
      alpha,
      zone('shared', 'shared.example'),
      recordSet('shared-www', 'shared', 'www', '192.0.2.10'),
    );
    await answersWith('www.shared.example.', ['192.0.2.10']);
    await apply(
      beta,
      zone('shared', 'shared.example'),
      recordSet('shared-www', 'shared', 'www', '192.0.2.20'),
    );
    const { value: lost } = await waitFor(
      async () => {
        const o = await getJson(beta, ['dnszone', '-n', TEAM, 'shared']);
        return condition(o, 'Accepted')?.reason === 'ClaimedByAnotherCluster' ? o : undefined;
      },
      60_000,
      200,
    );
    assert.equal(condition(lost, 'Accepted')?.status, 'False');
    assert.doesNotMatch(
      condition(lost, 'Accepted')!.message,
      /alpha/,
      "the other cluster's name is not told",
    );
    assert.deepEqual(await addresses('www.shared.example.'), ['192.0.2.10']);
    // The loser's zone has no copy downstream.
    const copies = await down.kubectl(['get', 'dnszone', '-n', mirrorNamespace('beta', TEAM), 'shared']);
    assert.notEqual(copies.code, 0);
    // The claims are recorded durably in the operator's namespace.
    const claims = await getJson(down, [
      'configmap',
      '-n',
      SYSTEM,
      '-l',
      'multicluster.zonekeeper.dev/claim',
    ]);
    assert.ok((claims.items ?? []).length >= 3);
    // The owner lets go: the next claim owns the domain, and its records are served.
    await alpha.kubectlOk(['delete', 'dnszone', '-n', TEAM, 'shared', '--wait=false']);
    await answersWith('www.shared.example.', ['192.0.2.20']);
    await waitFor(
      async () =>
        (await alpha.kubectl(['get', 'dnszone', '-n', TEAM, 'shared'])).code !== 0 ? true : undefined,
      60_000,
      200,
    );
  });

  test('hostile upstream: names, namespaces and labels of another cluster reach nothing of it', async () => {
    // beta makes a namespace named like alpha's mirrored namespace and publishes into alpha's zone from it.
    const lookalike = mirrorNamespace('alpha', TEAM);
    await beta.kubectlOk(['create', 'namespace', lookalike]);
    await apply(
      beta,
      recordSet('evil', 'a-zone', 'evil', '198.51.100.1', lookalike),
      // A zone reference to alpha's namespace name, and forged origin labels.
      {
        ...recordSet('evil2', 'a-zone', 'evil2', '198.51.100.2'),
        metadata: {
          name: 'evil2',
          namespace: TEAM,
          labels: {
            'multicluster.zonekeeper.dev/cluster': 'alpha',
            'multicluster.zonekeeper.dev/namespace': TEAM,
          },
        },
      },
      {
        apiVersion: API,
        kind: 'DNSRecordSet',
        metadata: { name: 'evil3', namespace: TEAM },
        spec: { name: 'evil3.a.example.', type: 'A', records: ['198.51.100.3'] },
      },
    );
    // A legitimate change in beta is served, so the hostile ones have been through the replicator.
    await apply(beta, recordSet('marker', 'b-zone', 'marker', '192.0.2.99'));
    await answersWith('marker.b.example.', ['192.0.2.99']);
    for (const name of ['evil', 'evil2', 'evil3'])
      assert.deepEqual(await addresses(`${name}.a.example.`), []);
    const evil2 = await getJson(down, ['dnsrecordset', '-n', mirrorNamespace('beta', TEAM), 'evil2']);
    assert.equal(evil2.metadata.labels?.['multicluster.zonekeeper.dev/cluster'], 'beta');
    const evil = await getJson(down, ['dnsrecordset', '-n', mirrorNamespace('beta', lookalike), 'evil']);
    assert.equal(evil.metadata.labels?.['multicluster.zonekeeper.dev/namespace'], lookalike);
    // Delegations by pattern admit namespaces of the zone's own cluster only, including one made after the zone.
    await apply(
      alpha,
      zone('a-zone', 'a.example', TEAM, {
        ttl: 600,
        delegations: [{ namespacePatterns: ['shoot--*'], types: ['A'] }],
      }),
    );
    for (const up of [alpha, beta]) await up.kubectlOk(['create', 'namespace', 'shoot--x']);
    await apply(beta, {
      ...recordSet('shoot', 'a-zone', 'shoot', '198.51.100.9', 'shoot--x'),
      spec: {
        zoneRef: { name: 'a-zone', namespace: TEAM },
        name: 'shoot',
        type: 'A',
        records: ['198.51.100.9'],
      },
    });
    await apply(alpha, {
      ...recordSet('shoot', 'a-zone', 'shoot', '192.0.2.60', 'shoot--x'),
      spec: {
        zoneRef: { name: 'a-zone', namespace: TEAM },
        name: 'shoot',
        type: 'A',
        records: ['192.0.2.60'],
      },
    });
    await answersWith('shoot.a.example.', ['192.0.2.60']);
    // A downstream namespace with a mirrored name that is not the mirror (no origin labels) is never written into.
    const squatted = mirrorNamespace('beta', 'squat');
    await down.kubectlOk(['create', 'namespace', squatted]);
    await beta.kubectlOk(['create', 'namespace', 'squat']);
    await apply(beta, zone('squat-zone', 'squat.example', 'squat'));
    const { value: taken } = await waitFor(
      async () => {
        const o = await getJson(beta, ['dnszone', '-n', 'squat', 'squat-zone']);
        return condition(o, 'Accepted')?.reason === 'NamespaceTaken' ? o : undefined;
      },
      60_000,
      200,
    );
    assert.equal(condition(taken, 'Ready')?.status, 'False');
    assert.notEqual((await down.kubectl(['get', 'dnszone', '-n', squatted, 'squat-zone'])).code, 0);
    // An object made downstream by someone else is never changed or deleted through an upstream
    // object of the same name, even one that is created and deleted again.
    await apply(down, recordSet('local', 'local-zone', 'local', '203.0.113.1', squatted));
    await apply(beta, recordSet('local', 'squat-zone', 'local', '198.51.100.50', 'squat'));
    await waitFor(
      async () => {
        const o = await getJson(beta, ['dnsrecordset', '-n', 'squat', 'local']);
        return condition(o, 'Accepted')?.reason === 'NamespaceTaken' ? true : undefined;
      },
      60_000,
      200,
    );
    await beta.kubectlOk(['delete', 'dnsrecordset', '-n', 'squat', 'local']); // waits for the finalizer
    const local = await getJson(down, ['dnsrecordset', '-n', squatted, 'local']);
    assert.deepEqual((local as { spec?: { records?: string[] } }).spec?.records, ['203.0.113.1']);
    // Two namespaces alike in their first 50 characters (what the readable part keeps) land apart.
    const long = 'n'.repeat(55);
    for (const [suffix, address] of [
      ['1', '192.0.2.51'],
      ['2', '192.0.2.52'],
    ] as const) {
      await beta.kubectlOk(['create', 'namespace', `${long}${suffix}`]);
      await apply(
        beta,
        zone('long', `long${suffix}.example`, `${long}${suffix}`),
        recordSet('www', 'long', 'www', address, `${long}${suffix}`),
      );
    }
    await answersWith('www.long1.example.', ['192.0.2.51']);
    await answersWith('www.long2.example.', ['192.0.2.52']);
    assert.notEqual(mirrorNamespace('beta', `${long}1`), mirrorNamespace('beta', `${long}2`));
    // Nothing of beta's landed in alpha's mirrored namespace.
    const inAlpha = await getJson(down, ['dnsrecordset', '-n', mirrorNamespace('alpha', TEAM)]);
    assert.ok(
      (inAlpha.items ?? []).every(
        (o) => o.metadata.labels?.['multicluster.zonekeeper.dev/cluster'] === 'alpha',
      ),
    );
  });

  test('an upstream stopped and restarted does not affect the other: its answers stay, the other keeps changing', async () => {
    await alpha.stopApiServer();
    try {
      await apply(beta, recordSet('while-down', 'b-zone', 'while', '192.0.2.30'));
      await answersWith('while.b.example.', ['192.0.2.30']);
      assert.deepEqual(
        await addresses('www.a.example.'),
        ['192.0.2.1'],
        "the stopped cluster's records stay",
      );
    } finally {
      await alpha.startApiServer();
    }
    await apply(alpha, recordSet('after', 'a-zone', 'after', '192.0.2.31'));
    await answersWith('after.a.example.', ['192.0.2.31']);
  });

  test('an upstream frozen (SIGSTOP: requests hang) stalls only its own objects', async () => {
    process.kill(alpha.apiServerPid, 'SIGSTOP');
    try {
      await apply(beta, recordSet('while-frozen', 'b-zone', 'frozen', '192.0.2.40'));
      await answersWith('frozen.b.example.', ['192.0.2.40']);
      assert.deepEqual(await addresses('www.a.example.'), ['192.0.2.1']);
    } finally {
      process.kill(alpha.apiServerPid, 'SIGCONT');
    }
    await apply(alpha, recordSet('thawed', 'a-zone', 'thawed', '192.0.2.41'));
    await answersWith('thawed.a.example.', ['192.0.2.41']);
  });

  test('a cluster that leaves the set and comes back within the grace period keeps its zones', async () => {
    const metric = async (pattern: RegExp) =>
      pattern.test(await (await fetch(`${operator.httpUrl}/metrics`)).text()) ? true : undefined;
    const kubeconfig = await readFile(path.join(folder, 'alpha.yaml'), 'utf8');
    await rm(path.join(folder, 'alpha.yaml'));
    await waitFor(() => metric(/zonekeeper_upstream_removals_pending 1\n/), 30_000, 50);
    await writeFile(path.join(folder, 'alpha.yaml'), kubeconfig);
    await waitFor(() => metric(/zonekeeper_upstream_synced\{cluster="alpha"\} 1/), 30_000, 100);
    // Past the 3 s grace period (a wait, not a measurement): nothing was removed.
    await new Promise((r) => setTimeout(r, 4000));
    assert.deepEqual(await addresses('www.a.example.'), ['192.0.2.1']);
    assert.ok(await metric(/zonekeeper_upstream_removals_pending 0\n/));
  });

  test('an upstream removed from the set: its zones are gone after the grace period, the other stays', async () => {
    await rm(path.join(folder, 'beta.yaml'));
    await refused('www.b.example.');
    assert.deepEqual(await addresses('www.a.example.'), ['192.0.2.1']);
    // Its upstream objects are let go: the finalizer is released (beta is still reachable).
    await waitFor(
      async () => {
        const z = await getJson(beta, ['dnszone', '-n', TEAM, 'b-zone']);
        return z.metadata.finalizers?.includes('multicluster.zonekeeper.dev/finalizer') ? undefined : true;
      },
      60_000,
      200,
    );
    // Its claim is released and its namespaces are on their way out.
    const claims = await getJson(down, [
      'configmap',
      '-n',
      SYSTEM,
      '-l',
      'multicluster.zonekeeper.dev/claim',
    ]);
    assert.ok(claims.items);
    const metrics = await (await fetch(`${operator.httpUrl}/metrics`)).text();
    assert.match(metrics, /zonekeeper_upstream_synced\{cluster="alpha"\} 1/);
    assert.doesNotMatch(metrics, /zonekeeper_upstream_synced\{cluster="beta"\}/);
  });

  test('a cluster added at run time is mirrored (the removed one, back with its objects)', async () => {
    // This control plane has no namespace controller: finish the deletion of beta's emptied namespaces
    // as kube-controller-manager would, so that they can be made again.
    await waitFor(
      async () => {
        const list = JSON.parse(
          await down.kubectlOk([
            'get',
            'namespaces',
            '-l',
            'multicluster.zonekeeper.dev/cluster=beta',
            '-o',
            'json',
          ]),
        ) as { items: { metadata: { name: string; deletionTimestamp?: string } }[] };
        if (list.items.length === 0) return true;
        for (const ns of list.items.filter((n) => n.metadata.deletionTimestamp))
          await down.kubectlOk(
            ['replace', '--raw', `/api/v1/namespaces/${ns.metadata.name}/finalize`, '-f', '-'],
            {
              input: JSON.stringify({
                apiVersion: 'v1',
                kind: 'Namespace',
                metadata: { name: ns.metadata.name },
                spec: { finalizers: [] },
              }),
            },
          );
        return undefined;
      },
      60_000,
      500,
    );
    await writeFile(path.join(folder, 'beta.yaml'), await readFile(beta.kubeconfigFor(REPLICATOR), 'utf8'));
    await answersWith('www.b.example.', ['192.0.2.2']);
    // Its claim is new: shared.example is beta's again (alpha deleted its zone).
    await answersWith('www.shared.example.', ['192.0.2.20']);
  });

  test('secrets:<selector> reads kubeconfigs from Secrets of the operator namespace', async () => {
    const kubeconfig = await readFile(alpha.kubeconfigFor(REPLICATOR), 'utf8');
    await down.kubectlOk([
      'create',
      'secret',
      'generic',
      'alpha',
      '-n',
      SYSTEM,
      `--from-literal=kubeconfig=${kubeconfig}`,
    ]);
    await down.kubectlOk(['label', 'secret', 'alpha', '-n', SYSTEM, 'zonekeeper.dev/upstream=true']);
    await down.kubectlOk([
      'create',
      'secret',
      'generic',
      'unlabelled',
      '-n',
      SYSTEM,
      '--from-literal=kubeconfig=x',
    ]);
    const config = new KubeConfig();
    config.loadFromFile(down.adminKubeconfig);
    const source = parseClusterSource(
      'secrets:zonekeeper.dev/upstream=true',
      () => new DownstreamApi(config),
      SYSTEM,
    );
    const set = await source.read();
    assert.deepEqual([...set.clusters.keys()], ['alpha']);
    assert.equal(set.clusters.get('alpha'), kubeconfig);
  });

  test('memory per cluster is bounded: objects over --upstream-max-objects are counted, not kept', async () => {
    await alpha.kubectlOk(['create', 'namespace', 'bulk']);
    await apply(
      alpha,
      ...Array.from({ length: 45 }, (_, i) => recordSet(`bulk-${i}`, 'none', `b${i}`, '192.0.2.200', 'bulk')),
    );
    const { value: metrics } = await waitFor(
      async () => {
        const text = await (await fetch(`${operator.httpUrl}/metrics`)).text();
        return /zonekeeper_upstream_objects_dropped\{cluster="alpha",kind="DNSRecordSet"\} [1-9]/.test(text)
          ? text
          : undefined;
      },
      60_000,
      200,
    );
    assert.match(metrics, /zonekeeper_upstream_objects\{cluster="alpha",kind="DNSRecordSet"\} 40\n/);
    // What was kept before is still served.
    assert.deepEqual(await addresses('www.a.example.'), ['192.0.2.1']);
  });
});
