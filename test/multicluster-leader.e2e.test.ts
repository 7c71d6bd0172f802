/**
 * `operator --upstream-clusters` with two replicas and leader election, on three kube-apiservers (one
 * etcd): only the leader replicates; when it is killed the standby takes over, reads the recorded
 * domain claims and keeps the first-observed owner, and goes on replicating.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { dig, rdataOf } from './support/dig.ts';
import { type KubePlane, type PlaneCluster, startKubeClusters } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const API = 'dns.zonekeeper.dev/v1alpha1';
const SYSTEM = 'zonekeeper-system';
const yamlDocs = (...docs: object[]) => docs.map((d) => `---\n${stringify(d)}`).join('');
const zone = (name: string, domainName: string) => ({
  apiVersion: API,
  kind: 'DNSZone',
  metadata: { name, namespace: 'team' },
  spec: { domainName, className: 'builtin' },
});
const recordSet = (name: string, zoneName: string, address: string) => ({
  apiVersion: API,
  kind: 'DNSRecordSet',
  metadata: { name, namespace: 'team' },
  spec: { zoneRef: { name: zoneName }, name: 'www', type: 'A', records: [address] },
});

describe('multicluster: leader election', { timeout: 600_000 }, () => {
  let plane: KubePlane;
  let down: PlaneCluster;
  let alpha: PlaneCluster;
  let beta: PlaneCluster;
  let folder: string;
  const operators = new Map<string, KubeProcess>();
  let server: KubeProcess;
  const apply = (c: PlaneCluster, ...docs: object[]) =>
    c.kubectlOk(['apply', '-f', '-'], { input: yamlDocs(...docs) });
  const answer = async (name: string) => rdataOf(await dig(server.dnsPort, name, 'A'), 'A');
  const answersWith = (name: string, address: string) =>
    waitFor(async () => ((await answer(name)).includes(address) ? true : undefined), 90_000, 100);
  const holder = async () =>
    (
      await down.kubectl([
        'get',
        'lease',
        '-n',
        SYSTEM,
        'zonekeeper-operator',
        '-o',
        'jsonpath={.spec.holderIdentity}',
      ])
    ).stdout.trim();
  const claims = async () =>
    JSON.parse(
      await down.kubectlOk([
        'get',
        'configmap',
        '-n',
        SYSTEM,
        '-l',
        'multicluster.zonekeeper.dev/claim',
        '-o',
        'json',
      ]),
    ) as { items: { data: { domain: string; claimants: string } }[] };

  before(async () => {
    plane = await startKubeClusters(['down', 'alpha', 'beta']);
    ({ down, alpha, beta } = plane.clusters as {
      down: PlaneCluster;
      alpha: PlaneCluster;
      beta: PlaneCluster;
    });
    await down.kubectlOk(['create', 'namespace', SYSTEM]);
    await apply(down, {
      apiVersion: API,
      kind: 'DNSZoneClass',
      metadata: { name: 'builtin' },
      spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.'] },
    });
    folder = await mkdtemp(path.join(tmpdir(), 'zonekeeper-upstreams-'));
    for (const up of [alpha, beta]) {
      await up.kubectlOk(['create', 'namespace', 'team']);
      await writeFile(path.join(folder, `${up.name}.yaml`), await readFile(up.adminKubeconfig, 'utf8'));
    }
    for (const name of ['op-1', 'op-2'])
      operators.set(
        name,
        await startOperatorProcess(name, down.adminKubeconfig, SYSTEM, [
          '--upstream-clusters',
          folder,
          '--upstream-poll-interval',
          '0.5',
          '--upstream-retry-max',
          '1',
        ]),
      );
    server = await startServerProcess('server', down.adminKubeconfig);
  });

  after(async () => {
    await Promise.all([...operators.values(), server].filter(Boolean).map((p) => p.stop().catch(() => {})));
    await plane?.stop();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  test('the standby takes over the replication and keeps the first-observed claims', async () => {
    await apply(alpha, zone('shared', 'shared.example'), recordSet('www', 'shared', '192.0.2.1'));
    await answersWith('www.shared.example.', '192.0.2.1');
    await apply(beta, zone('shared', 'shared.example'), recordSet('www', 'shared', '192.0.2.2'));
    const lost = async () => {
      const o = JSON.parse(
        await beta.kubectlOk(['get', 'dnszone', '-n', 'team', 'shared', '-o', 'json']),
      ) as {
        status?: { conditions?: { type: string; reason: string }[] };
      };
      return o.status?.conditions?.find((c) => c.type === 'Accepted')?.reason === 'ClaimedByAnotherCluster'
        ? true
        : undefined;
    };
    await waitFor(lost, 60_000, 200);
    const before = (await claims()).items.find((c) => c.data.domain === 'shared.example')!.data.claimants;

    const leader = await holder();
    const standby = [...operators.keys()].find((n) => n !== leader)!;
    assert.ok(operators.has(leader), `a replica leads (${leader})`);
    // Only the leader replicates: the standby logged no replication.
    assert.doesNotMatch(operators.get(standby)!.log(), /multicluster: replicating/);
    await operators.get(leader)!.kill();
    await waitFor(async () => ((await holder()) === standby ? true : undefined), 90_000, 200);
    await waitFor(
      async () => (/multicluster: replicating/.test(operators.get(standby)!.log()) ? true : undefined),
      60_000,
      100,
    );
    // The new leader replicates: a change in beta is answered.
    await apply(beta, zone('b-zone', 'b.example'), recordSet('b-www', 'b-zone', '192.0.2.3'));
    await answersWith('www.b.example.', '192.0.2.3');
    // And keeps the recorded claims: alpha still owns shared.example, beta is still told.
    assert.deepEqual(await answer('www.shared.example.'), ['192.0.2.1']);
    assert.ok(await lost());
    const after = (await claims()).items.find((c) => c.data.domain === 'shared.example')!.data.claimants;
    assert.equal(after, before, 'the first-observed times are the ones recorded before');
  });
});
