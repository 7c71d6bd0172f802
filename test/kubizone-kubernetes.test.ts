/**
 * kubizone's `kubi.zone/v1alpha1` front door on a real control plane: its generated CRDs installed in
 * kube-apiserver, kubizone's own cross-namespace example applied unchanged, `zonekeeper operator` and
 * `zonekeeper server` running as their service accounts with the chart's default RBAC (the registered
 * door's group granted without any value). Records created, merged, changed and deleted (the door's
 * finalizer held until the change is served), a refused Record's status, a Zone deleted; every answer
 * from `zonekeeper server` by dig.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { dig, rdataOf } from './support/dig.ts';
import { type KubeCluster, serviceAccountUser, startKube } from './support/kube.ts';
import { prepareKubizone } from './support/kubizone-cluster.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { ROOT, waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const EXAMPLE = path.join(ROOT, 'test/support/kubizone-upstream/cross-namespace-delegation.yaml');

function record(namespace: string, name: string, domainName: string, rdata: string) {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Record',
    metadata: { name, namespace },
    spec: { domainName, type: 'A', rdata },
  };
}

interface Json {
  metadata: { finalizers?: string[]; deletionTimestamp?: string; labels?: Record<string, string> };
  status?: {
    fqdn?: string;
    serial?: number;
    entries?: { fqdn: string; type: string; rdata: string }[];
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

describe('kubizone front door on a real API server', { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  let operator: KubeProcess | undefined;
  let server: KubeProcess | undefined;

  const get = async (kind: string, ns: string, name: string): Promise<Json | undefined> => {
    const r = await kube.kubectl(['get', `${kind}.kubi.zone`, '-n', ns, name, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const answers = async (name: string) =>
    rdataOf(await dig(server!.dnsPort, name, 'A'), 'A')
      .sort()
      .join(',');
  const until = <T>(probe: () => Promise<T | undefined>) => waitFor(probe, 20_000, 100);

  before(async () => {
    kube = await startKube({ users: [OPERATOR, SERVER] });
    await prepareKubizone(kube, SYSTEM, ['development', 'production']);
    // kubizone's example, unchanged.
    await kube.kubectlOk(['apply', '-f', EXAMPLE]);
    operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM);
    server = await startServerProcess('server', kube.kubeconfigFor(SERVER));
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
  });

  test('the example: *.dev from development is served; *.prod from development is refused', async () => {
    await until(async () => ((await answers('www.dev.example.org')) === '192.168.0.2' ? true : undefined));
    const { value: rec } = await until(async () => {
      const r = await get('record', 'development', 'www-dev-example-org');
      return r?.status?.conditions?.[0]?.status === 'True' ? r : undefined;
    });
    assert.equal(rec.status?.fqdn, 'www.dev.example.org.');
    assert.deepEqual(rec.metadata.finalizers, ['kubi.zone/zonekeeper']);
    // kubizone's parent-zone label, set by a merge patch of the operator.
    await until(async () => {
      const r = await get('record', 'development', 'www-dev-example-org');
      return r?.metadata.labels?.['kubi.zone/parent-zone'] === 'example-org.default' ? true : undefined;
    });
    const prod = await get('record', 'development', 'www-prod-example-org');
    assert.equal(prod?.metadata.labels?.['kubi.zone/parent-zone'], undefined);
    const { value: refused } = await until(async () => {
      const r = await get('record', 'development', 'www-prod-example-org');
      return r?.status?.conditions?.[0]?.reason === 'NotDelegated' ? r : undefined;
    });
    assert.equal(refused.status?.conditions?.[0]?.status, 'False');
    // The refusal and the adoption as events.k8s.io Events on the Records (kubizone only logs them).
    const { value: events } = await until(async () => {
      const out = await kube.kubectlOk(['get', 'events.events.k8s.io', '-n', 'development', '-o', 'json']);
      const items = JSON.parse(out).items as { regarding: { name: string }; reason: string; type: string }[];
      const of = (name: string) =>
        items.filter((e) => e.regarding.name === name).map((e) => `${e.type}/${e.reason}`);
      const prod = of('www-prod-example-org');
      const dev = of('www-dev-example-org');
      return prod.length > 0 && dev.length > 0 ? { prod, dev } : undefined;
    });
    assert.deepEqual(events.prod, ['Warning/NotDelegated']);
    assert.deepEqual(events.dev, ['Normal/Served']);
    assert.equal((await dig(server!.dnsPort, 'www.prod.example.org', 'A')).status, 'NXDOMAIN');
    const { value: zone } = await until(async () => {
      const z = await get('zone', 'default', 'example-org');
      return z?.status?.entries?.some((e) => e.fqdn === 'www.dev.example.org.') ? z : undefined;
    });
    assert.equal(zone.status?.fqdn, 'example.org.');
    assert.equal(zone.status?.entries?.[0]?.type, 'SOA');
    const soa = rdataOf(await dig(server!.dnsPort, 'example.org', 'SOA'), 'SOA')[0]!.split(/\s+/);
    await until(async () => {
      const z = await get('zone', 'default', 'example-org');
      return z?.status?.serial === Number(soa[2]) ? true : undefined;
    });
  });

  test('Records of one name and type merge; one changed, one deleted (gone once served without it)', async () => {
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: [
        record('development', 'www-dev-2', 'www.dev.example.org.', '192.168.0.3'),
        record('development', 'www-dev-3', 'www.dev.example.org.', '192.168.0.4'),
      ]
        .map((o) => `---\n${stringify(o)}`)
        .join(''),
    });
    await until(async () =>
      (await answers('www.dev.example.org')) === '192.168.0.2,192.168.0.3,192.168.0.4' ? true : undefined,
    );
    await kube.kubectlOk([
      'patch',
      'record.kubi.zone',
      '-n',
      'development',
      'www-dev-3',
      '--type=merge',
      '-p',
      '{"spec":{"rdata":"192.168.0.5"}}',
    ]);
    await until(async () =>
      (await answers('www.dev.example.org')) === '192.168.0.2,192.168.0.3,192.168.0.5' ? true : undefined,
    );
    await kube.kubectlOk(['delete', 'record.kubi.zone', '-n', 'development', 'www-dev-2', '--wait=false']);
    await until(async () =>
      (await answers('www.dev.example.org')) === '192.168.0.2,192.168.0.5' ? true : undefined,
    );
    await until(async () =>
      (await get('record', 'development', 'www-dev-2')) === undefined ? true : undefined,
    );
  });

  test('a hostile Record in production outside *.prod is refused; a Zone deleted stops being served', async () => {
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: `---\n${stringify(record('production', 'grab', 'www.dev.example.org.', '203.0.113.66'))}`,
    });
    await until(async () => {
      const r = await get('record', 'production', 'grab');
      return r?.status?.conditions?.[0]?.reason === 'NotDelegated' ? true : undefined;
    });
    assert.ok(!(await answers('www.dev.example.org')).includes('203.0.113.66'));
    await kube.kubectlOk(['delete', 'zone.kubi.zone', 'example-org', '--wait=false']);
    await until(async () =>
      (await dig(server!.dnsPort, 'example.org', 'SOA')).status !== 'NOERROR' ? true : undefined,
    );
    await until(async () => ((await get('zone', 'default', 'example-org')) === undefined ? true : undefined));
  });
});
