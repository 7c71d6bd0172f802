/**
 * Gardener's DNSRecord on a real control plane: the CRD `zonekeeper crds` generates installed in
 * kube-apiserver, the upstream example applied unchanged (an aws-route53 record: left alone), and
 * `zonekeeper operator` + `zonekeeper server` (as their service accounts, with the chart's RBAC)
 * publishing `type: zonekeeper` records from shoot namespaces admitted by a namespace pattern:
 * create, change, delete behind the finalizer, the operation annotations (migrate -> restore with
 * dig answering throughout), and a lookalike namespace refused.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type KubeCluster, serviceAccountUser, startKube } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { CLI, ROOT, removeAll, tempDir, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const SYSTEM = 'zonekeeper-system';
const API = 'dns.zonekeeper.dev/v1alpha1';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const UPSTREAM = path.join(ROOT, 'test/support/gardener-upstream/dnsrecord-example.yaml');
const FINALIZER = 'extensions.gardener.cloud/zonekeeper-dnsrecord';
const SHOOT = 'shoot--foo--bar';
const NAME = 'api.bar.foo.my-fancy-domain.com';

function docs(...objects: object[]): string {
  return objects.map((o) => `---\n${stringify(o)}`).join('');
}
function dnsRecord(namespace: string, name: string, fqdn: string, values: string[], type = 'zonekeeper') {
  return {
    apiVersion: 'extensions.gardener.cloud/v1alpha1',
    kind: 'DNSRecord',
    metadata: { name, namespace },
    spec: { type, secretRef: { name: 'creds', namespace }, name: fqdn, recordType: 'A', values },
  };
}

interface RecordJson {
  metadata: {
    generation: number;
    finalizers?: string[];
    annotations?: Record<string, string>;
  };
  status?: {
    observedGeneration?: number;
    zone?: string;
    lastOperation?: { type: string; state: string; progress: number; description: string };
    lastError?: { description: string; codes?: string[] };
  };
}

describe('Gardener DNSRecord on a real API server', { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  let crdDir: string;
  let operator: KubeProcess | undefined;
  let server: KubeProcess | undefined;

  const get = async (ns: string, name: string): Promise<RecordJson | undefined> => {
    const r = await kube.kubectl([
      'get',
      'dnsrecords.extensions.gardener.cloud',
      '-n',
      ns,
      name,
      '-o',
      'json',
    ]);
    return r.code === 0 ? (JSON.parse(r.stdout) as RecordJson) : undefined;
  };
  const answers = async (name: string) => rdataOf(await dig(server!.dnsPort, name, 'A'), 'A').sort();
  const until = <T>(f: () => Promise<T | undefined>) => waitFor(f, 60_000, 100);

  before(async () => {
    kube = await startKube({ users: [OPERATOR, SERVER] });
    crdDir = await tempDir('gardener-crds');
    await run(process.execPath, [CLI, 'crds', '--out', crdDir]);
    await kube.kubectlOk(['apply', '--server-side', '-f', crdDir]);
    await kube.kubectlOk([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/dnsrecords.extensions.gardener.cloud',
      'crd/dnszones.dns.zonekeeper.dev',
    ]);
    for (const ns of [SYSTEM, 'dns', SHOOT, 'xshoot--foo--bar'])
      await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, { namespace: SYSTEM });
    const rbac = chartAccessDocs(rendered, { admission: false });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
    // The upstream example, unchanged (its Secret and its aws-route53 DNSRecord in "default").
    await kube.kubectlOk(['apply', '-f', UPSTREAM]);
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(
        {
          apiVersion: API,
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: {
            backend: { builtin: {} },
            nameServers: ['ns1.my-fancy-domain.com.', 'ns2.my-fancy-domain.com.'],
          },
        },
        {
          apiVersion: API,
          kind: 'DNSZone',
          metadata: { name: 'fancy', namespace: 'dns' },
          spec: {
            domainName: 'my-fancy-domain.com',
            className: 'builtin',
            delegations: [{ namespacePatterns: ['shoot--*'] }],
          },
        },
        dnsRecord(SHOOT, 'external', NAME, ['192.0.2.1']),
        // Hostile: a lookalike of a shoot namespace.
        dnsRecord('xshoot--foo--bar', 'grab', 'www.my-fancy-domain.com', ['198.51.100.1']),
      ),
    });
    operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM, []);
    server = await startServerProcess('server', kube.kubeconfigFor(SERVER), []);
  });

  after(async () => {
    await Promise.all([operator?.stop(), server?.stop()].map((p) => p?.catch(() => {})));
    if (process.env.KUBE_E2E_LOGS) {
      const { mkdir, writeFile } = await import('node:fs/promises');
      await mkdir(process.env.KUBE_E2E_LOGS, { recursive: true });
      for (const p of [operator, server])
        if (p) await writeFile(path.join(process.env.KUBE_E2E_LOGS, `${p.name}.log`), p.log());
    }
    await kube?.stop();
    if (crdDir) await removeAll(crdDir);
  });

  test('created: served, finalizer, status per the contract with the autodetected zone', async () => {
    await until(async () => ((await answers(NAME)).join() === '192.0.2.1' ? true : undefined));
    const { value } = await until(async () => {
      const r = await get(SHOOT, 'external');
      return r?.status?.lastOperation?.state === 'Succeeded' ? r : undefined;
    });
    assert.deepEqual(value.metadata.finalizers, [FINALIZER]);
    assert.equal(value.status?.lastOperation?.type, 'Create');
    assert.equal(value.status?.zone, 'dns/fancy');
    assert.equal(value.status?.observedGeneration, 1);
  });

  test('other provider types are left strictly alone (the upstream example)', async () => {
    const example = await get('default', 'dnsrecord-external');
    assert.ok(example);
    assert.equal(example.status, undefined);
    assert.equal(example.metadata.finalizers, undefined);
    // Its name is the shoot record's too: only the zonekeeper record's address is served.
    assert.ok(!(await answers(NAME)).includes('1.2.3.4'));
  });

  test('hostile tenant: a lookalike namespace is not admitted by shoot--*', async () => {
    const { value } = await until(async () => {
      const r = await get('xshoot--foo--bar', 'grab');
      return r?.status?.lastOperation?.state === 'Error' ? r : undefined;
    });
    assert.deepEqual(value.status?.lastError?.codes, ['ERR_CONFIGURATION_PROBLEM']);
    assert.equal((await dig(server!.dnsPort, 'www.my-fancy-domain.com', 'A')).status, 'NXDOMAIN');
  });

  test('changed: a Reconcile of generation 2; the reconcile annotation is removed', async () => {
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(dnsRecord(SHOOT, 'external', NAME, ['192.0.2.2'])),
    });
    await until(async () => ((await answers(NAME)).join() === '192.0.2.2' ? true : undefined));
    await until(async () => {
      const r = await get(SHOOT, 'external');
      return r?.status?.lastOperation?.type === 'Reconcile' &&
        r.status.lastOperation.state === 'Succeeded' &&
        r.status.observedGeneration === 2
        ? r
        : undefined;
    });
    await kube.kubectlOk([
      'annotate',
      '-n',
      SHOOT,
      'dnsrecords.extensions.gardener.cloud',
      'external',
      'gardener.cloud/operation=reconcile',
    ]);
    await until(async () => {
      const r = await get(SHOOT, 'external');
      return r && r.metadata.annotations?.['gardener.cloud/operation'] === undefined ? true : undefined;
    });
  });

  test('migrate -> restore: the finalizer goes and comes back, dig answers throughout', async () => {
    let stop = false;
    const outages: string[] = [];
    const watcher = (async () => {
      while (!stop) {
        const a = await answers(NAME);
        if (a.join() !== '192.0.2.2') outages.push(a.join() || 'none');
      }
    })();
    await kube.kubectlOk([
      'annotate',
      '-n',
      SHOOT,
      'dnsrecords.extensions.gardener.cloud',
      'external',
      'gardener.cloud/operation=migrate',
    ]);
    await until(async () => {
      const r = await get(SHOOT, 'external');
      return r?.status?.lastOperation?.type === 'Migrate' &&
        r.status.lastOperation.state === 'Succeeded' &&
        !r.metadata.finalizers?.length &&
        r.metadata.annotations?.['gardener.cloud/operation'] === undefined
        ? true
        : undefined;
    });
    await kube.kubectlOk([
      'annotate',
      '-n',
      SHOOT,
      'dnsrecords.extensions.gardener.cloud',
      'external',
      'gardener.cloud/operation=restore',
    ]);
    const { value } = await until(async () => {
      const r = await get(SHOOT, 'external');
      return r?.status?.lastOperation?.type === 'Restore' &&
        r.status.lastOperation.state === 'Succeeded' &&
        r.metadata.annotations?.['gardener.cloud/operation'] === undefined
        ? r
        : undefined;
    });
    stop = true;
    await watcher;
    assert.deepEqual(value.metadata.finalizers, [FINALIZER]);
    assert.deepEqual(outages, [], 'dig answered throughout');
  });

  test('deleted: held by the finalizer until withdrawn, then gone', async () => {
    await kube.kubectlOk([
      'delete',
      '-n',
      SHOOT,
      'dnsrecords.extensions.gardener.cloud',
      'external',
      '--wait=false',
    ]);
    await until(async () => ((await get(SHOOT, 'external')) === undefined ? true : undefined));
    assert.equal((await dig(server!.dnsPort, NAME, 'A')).status, 'NXDOMAIN');
  });
});
