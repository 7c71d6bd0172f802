/**
 * API requests reuse connections: against a real kube-apiserver, the client Zonekeeper builds on
 * (`KubeApi`, @kubernetes/client-node) must not open a new TCP + TLS connection for every request.
 * The client makes a new connection pool for each request unless told otherwise; an operator starting
 * on 100,000 record sets writes a finalizer and a status for each, so a handshake per write was most
 * of its start-up CPU and hundreds of MiB of resident memory (docs/benchmarks.md, "Kubernetes,
 * 100,000 record sets"). Connections are counted with undici's `undici:client:connected` diagnostics
 * channel: counts, no timings.
 */
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeApi, loadKubeConfig } from '../src/sources/kubernetes/kube-api.ts';
import { type KubeCluster, startKube } from './support/kube.ts';

describe('Kubernetes API connections', { timeout: 300_000 }, () => {
  let kube: KubeCluster;
  let connections = 0;
  const connected = () => {
    connections++;
  };

  before(async () => {
    kube = await startKube();
    await kube.kubectlOk(['create', 'namespace', 'team']);
    diagnostics.subscribe('undici:client:connected', connected);
  });
  after(async () => {
    diagnostics.unsubscribe('undici:client:connected', connected);
    await kube?.stop();
  });

  test('sequential reads and status writes share one connection', async () => {
    const api = new KubeApi(loadKubeConfig(kube.adminKubeconfig));
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata:
  name: builtin
spec:
  backend:
    builtin: {}
  nameServers: [ns1.example.com.]
`,
    });
    connections = 0;
    for (let i = 0; i < 20; i++) {
      const current = await api.get('DNSZoneClass', undefined, 'builtin');
      assert.ok(current);
      await api.replaceStatus('DNSZoneClass', { ...current, status: { zones: i } });
    }
    const last = (await api.get('DNSZoneClass', undefined, 'builtin')) as { status?: { zones?: number } };
    assert.equal(last.status?.zones, 19);
    // 41 requests; one connection (two if the server closed an idle one in between).
    assert.ok(connections <= 2, `${connections} connections for 41 requests`);
  });

  test('parallel requests open at most one connection each, and the next burst reuses them', async () => {
    const api = new KubeApi(loadKubeConfig(kube.adminKubeconfig));
    connections = 0;
    const burst = () =>
      Promise.all(Array.from({ length: 16 }, (_, i) => api.get('DNSZone', 'team', `absent-${i}`)));
    await burst();
    const first = connections;
    assert.ok(first <= 16, `${first} connections for 16 parallel requests`);
    await burst();
    await burst();
    assert.ok(connections - first <= 2, `${connections - first} new connections for 32 more requests`);
  });

  test('a changed certificate authority gets a new connection pool (the file is read again)', async () => {
    // The kubeconfig names the CA by file, as in a pod (the service account's ca.crt): when the file
    // changes, later requests use the new one, as they did with a pool per request.
    const kubeconfig = path.join(kube.dir, 'kubeconfig-ca-rotation');
    const caFile = path.join(kube.dir, 'ca-copy.crt');
    await writeFile(caFile, await readFile(path.join(kube.dir, 'pki', 'ca.crt')));
    const admin = await readFile(kube.adminKubeconfig, 'utf8');
    await writeFile(
      kubeconfig,
      admin.replace(/certificate-authority: .*/, `certificate-authority: ${caFile}`),
    );
    const api = new KubeApi(loadKubeConfig(kubeconfig));
    assert.equal(await api.get('DNSZone', 'team', 'absent'), undefined);
    // A CA that did not sign the API server's certificate: the next request must fail verification.
    await writeFile(
      caFile,
      (await readFile(path.join(kube.dir, 'pki', 'apiserver.crt'), 'utf8')).replace(/\n$/, '\n'),
    );
    await assert.rejects(api.get('DNSZone', 'team', 'absent'));
  });
});
