/**
 * kubizone's ZoneFile on a real control plane: `zonekeeper operator` with the chart's default RBAC
 * renders a Zone into the ConfigMap the ZoneFile owns; the zone file is parsed back by BIND's
 * `named-checkzone` and carries the serial `zonekeeper server` answers; it follows a Record change. A
 * ConfigMap that exists without the ZoneFile's ownerReference is left untouched (byte for byte, same
 * resourceVersion), and a Zone of another namespace is not rendered.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { soaSerial } from './support/dig.ts';
import { type KubeCluster, serviceAccountUser, startKube } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { removeAll, tempDir, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const SYSTEM = 'zonekeeper-system';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');

interface ConfigMapJson {
  metadata: {
    resourceVersion: string;
    ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
  };
  data?: Record<string, string>;
}

interface ZoneFileJson {
  metadata: { uid: string };
  status?: {
    hash?: Record<string, string>;
    serial?: Record<string, number>;
    conditions?: {
      type: string;
      status: string;
      reason: string;
      message: string;
      observedGeneration?: number;
    }[];
  };
}

const yaml = (...objects: unknown[]) => objects.map((o) => `---\n${stringify(o)}`).join('');

function record(namespace: string, name: string, domainName: string, type: string, rdata: string) {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Record',
    metadata: { name, namespace },
    spec: { domainName, type, rdata },
  };
}

function zoneFile(namespace: string, name: string, zoneRefs: unknown[], configMapName?: string) {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'ZoneFile',
    metadata: { name, namespace },
    spec: { zoneRefs, ...(configMapName ? { configMapName } : {}) },
  };
}

describe('kubizone ZoneFile on a real API server', { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  let operator: KubeProcess | undefined;
  let server: KubeProcess | undefined;
  let dir: string;

  const json = async <T>(args: string[]): Promise<T | undefined> => {
    const r = await kube.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as T) : undefined;
  };
  const configMap = (ns: string, name: string) => json<ConfigMapJson>(['get', 'configmap', '-n', ns, name]);
  const zoneFileOf = (ns: string, name: string) =>
    json<ZoneFileJson>(['get', 'zonefile.kubi.zone', '-n', ns, name]);
  const ready = async (ns: string, name: string) =>
    (await zoneFileOf(ns, name))?.status?.conditions?.find((c) => c.type === 'Ready');
  const until = <T>(probe: () => Promise<T | undefined>) => waitFor(probe, 30_000, 100);
  const servedSerial = async () => Number(await soaSerial(server!.dnsPort, 'example.org'));
  /** named-checkzone's verdict on a zone file: its exit code and what it printed. */
  const checkzone = async (origin: string, text: string) => {
    const file = path.join(dir, `${origin}zone`);
    await writeFile(file, text);
    return run('named-checkzone', [origin, file]).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
    );
  };

  before(async () => {
    dir = await tempDir('kubizone-zonefile');
    kube = await startKube({ users: [OPERATOR, SERVER] });
    for (const ns of [SYSTEM, 'dns', 'tenant']) await kube.kubectlOk(['create', 'namespace', ns]);
    // The chart's RBAC with its defaults.
    const rendered = await renderChart(kube.binDir, { namespace: SYSTEM });
    const rbac = chartAccessDocs(rendered, { admission: false });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: yaml(
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.', 'ns2.example.net.'] },
        },
        {
          apiVersion: 'kubi.zone/v1alpha1',
          kind: 'Zone',
          metadata: { name: 'example-org', namespace: 'dns' },
          spec: {
            domainName: 'example.org.',
            delegations: [{ namespaces: ['dns'], records: [{ pattern: '*' }] }],
          },
        },
        record('dns', 'www-1', 'www.example.org.', 'A', '192.0.2.1'),
        record('dns', 'www-2', 'www.example.org.', 'A', '192.0.2.2'),
        record('dns', 'txt', 'info.example.org.', 'TXT', '"hello world"'),
        // A tenant's own ConfigMap, and a ZoneFile that names it.
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'app-config', namespace: 'dns' },
          data: { 'settings.yaml': 'keep: me\n' },
        },
        zoneFile('dns', 'zones', [{ name: 'example-org' }]),
        zoneFile('dns', 'steal', [{ name: 'example-org' }], 'app-config'),
        // A tenant of another namespace asks for the zone.
        zoneFile('tenant', 'peek', [{ name: 'example-org', namespace: 'dns' }]),
      ),
    });
    operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM);
    server = await startServerProcess('server', kube.kubeconfigFor(SERVER));
  });

  after(async () => {
    await Promise.all([operator?.stop(), server?.stop()].map((p) => p?.catch(() => {})));
    if (process.env.KUBE_E2E_LOGS) {
      const { mkdir } = await import('node:fs/promises');
      await mkdir(process.env.KUBE_E2E_LOGS, { recursive: true });
      for (const p of [operator, server])
        if (p) await writeFile(path.join(process.env.KUBE_E2E_LOGS, `${p.name}.log`), p.log());
    }
    await kube?.stop();
    await removeAll(dir);
  });

  test('the zone as served, in a ConfigMap the ZoneFile owns, parsed back by named-checkzone', async () => {
    const { value: cm } = await until(async () => {
      const c = await configMap('dns', 'zones');
      return c?.data?.['example.org.']?.includes('192.0.2.2') ? c : undefined;
    });
    const zf = (await zoneFileOf('dns', 'zones'))!;
    assert.deepEqual(
      cm.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.controller]),
      [['ZoneFile', 'zones', zf.metadata.uid, true]],
    );
    const text = cm.data!['example.org.']!;
    const check = await checkzone('example.org.', text);
    assert.equal(check.code, 0, check.out);
    const serial = Number(/IN\tSOA\t\S+ \S+ (\d+) /.exec(text)?.[1]);
    assert.match(check.out, new RegExp(`loaded serial ${serial}`));
    await until(async () => ((await servedSerial()) === serial ? true : undefined));
    assert.match(text, /^info\.example\.org\.\t360\tIN\tTXT\t"hello world"$/m);
    await until(async () => {
      const s = (await zoneFileOf('dns', 'zones'))?.status;
      return s?.serial?.['example.org.'] === serial && s.conditions?.[0]?.status === 'True'
        ? true
        : undefined;
    });
  });

  test('a Record change: the zone file follows with the serial served', async () => {
    await kube.kubectlOk([
      'patch',
      'record.kubi.zone',
      '-n',
      'dns',
      'www-2',
      '--type=merge',
      '-p',
      '{"spec":{"rdata":"192.0.2.22"}}',
    ]);
    const { value: cm } = await until(async () => {
      const c = await configMap('dns', 'zones');
      return c?.data?.['example.org.']?.includes('192.0.2.22') ? c : undefined;
    });
    const text = cm.data!['example.org.']!;
    assert.doesNotMatch(text, /192\.0\.2\.2$/m);
    const check = await checkzone('example.org.', text);
    assert.equal(check.code, 0, check.out);
    const serial = Number(/IN\tSOA\t\S+ \S+ (\d+) /.exec(text)?.[1]);
    await until(async () => ((await servedSerial()) === serial ? true : undefined));
    await until(async () =>
      (await zoneFileOf('dns', 'zones'))?.status?.serial?.['example.org.'] === serial ? true : undefined,
    );
  });

  test('hostile: a ConfigMap without the ownerReference is untouched; another namespace is not rendered', async () => {
    await until(async () =>
      (await ready('dns', 'steal'))?.reason === 'ConfigMapNotOwned' ? true : undefined,
    );
    const cm = (await configMap('dns', 'app-config'))!;
    assert.deepEqual(cm.data, { 'settings.yaml': 'keep: me\n' });
    assert.equal(cm.metadata.ownerReferences, undefined);
    // Reconciled again (a spec change): still not written.
    const version = cm.metadata.resourceVersion;
    await kube.kubectlOk([
      'patch',
      'zonefile.kubi.zone',
      '-n',
      'dns',
      'steal',
      '--type=merge',
      '-p',
      '{"spec":{"zoneRefs":[{"name":"example-org"},{"name":"none"}]}}',
    ]);
    await until(async () => ((await ready('dns', 'steal'))?.observedGeneration === 2 ? true : undefined));
    assert.equal((await ready('dns', 'steal'))?.reason, 'ConfigMapNotOwned');
    assert.equal((await configMap('dns', 'app-config'))!.metadata.resourceVersion, version);

    const { value: peek } = await until(async () => {
      const r = await ready('tenant', 'peek');
      return r?.reason === 'ZoneRefOutsideNamespace' ? r : undefined;
    });
    assert.match(peek.message, /own namespace \(tenant\)/);
    assert.deepEqual((await configMap('tenant', 'peek'))?.data ?? {}, {});
  });
});
