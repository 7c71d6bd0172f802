/**
 * An object deleted and created again under the same name, on a real kube-apiserver: the operator's
 * cache must take the new object at once. When the watch's DELETED event for the old object arrived
 * before the answer to the operator's own last write (the finalizer it removed), that write's
 * tombstone used to hide every event for the name for a minute, so a zone created again was neither
 * reconciled nor served (the server waited for a hash the operator never recorded).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { dig, rdataOf } from './support/dig.ts';
import { type KubeCluster, startKube } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const API = 'dns.zonekeeper.dev/v1alpha1';
const docs = (...d: object[]) => d.map((x) => `---\n${stringify(x)}`).join('');
const ZONE = {
  apiVersion: API,
  kind: 'DNSZone',
  metadata: { name: 'z', namespace: 't' },
  spec: { domainName: 'recreate.example', className: 'builtin' },
};
const RECORDS = {
  apiVersion: API,
  kind: 'DNSRecordSet',
  metadata: { name: 'www', namespace: 't' },
  spec: { zoneRef: { name: 'z' }, name: 'www', type: 'A', records: ['192.0.2.1'] },
};

describe('Kubernetes: a zone deleted and created again under the same name', { timeout: 300_000 }, () => {
  let kube: KubeCluster;
  let operator: KubeProcess;
  let server: KubeProcess;
  before(async () => {
    kube = await startKube();
    await kube.kubectlOk(['create', 'namespace', 'zs']);
    await kube.kubectlOk(['create', 'namespace', 't']);
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(
        {
          apiVersion: API,
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.'] },
        },
        ZONE,
        RECORDS,
      ),
    });
    operator = await startOperatorProcess('operator', kube.adminKubeconfig, 'zs', ['--leader-elect=false']);
    server = await startServerProcess('server', kube.adminKubeconfig);
  });
  after(async () => {
    await Promise.all([operator, server].filter(Boolean).map((p) => p.stop()));
    await kube?.stop();
  });

  const answers = async () => rdataOf(await dig(server.dnsPort, 'www.recreate.example.', 'A'), 'A');

  test('the new zone is reconciled and served, several times over', async () => {
    await waitFor(async () => ((await answers()).length > 0 ? true : undefined), 30_000, 50);
    for (let round = 0; round < 3; round++) {
      await kube.kubectlOk(['delete', '-f', '-'], { input: docs(ZONE, RECORDS) });
      await waitFor(async () => ((await answers()).length === 0 ? true : undefined), 30_000, 50);
      // The record set first, then the zone, as copies of a cluster added again arrive.
      await kube.kubectlOk(['apply', '-f', '-'], { input: docs(RECORDS) });
      await kube.kubectlOk(['apply', '-f', '-'], { input: docs(ZONE) });
      const uid = (
        await kube.kubectlOk(['get', 'dnszone', '-n', 't', 'z', '-o', 'jsonpath={.metadata.uid}'])
      ).trim();
      // Well below the minute the stale tombstone hid the name for.
      const { value: zone } = await waitFor(
        async () => {
          const z = JSON.parse(await kube.kubectlOk(['get', 'dnszone', '-n', 't', 'z', '-o', 'json'])) as {
            metadata: { uid: string };
            status?: { hash?: string; conditions?: { type: string; status: string }[] };
          };
          return z.metadata.uid === uid &&
            z.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
            ? z
            : undefined;
        },
        40_000,
        100,
      );
      assert.ok(zone.status?.hash);
      assert.deepEqual(await answers(), ['192.0.2.1']);
    }
  });
});
