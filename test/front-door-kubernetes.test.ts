/**
 * A front door on a real control plane: the test-only `example.test/v1 Hostname` kind's CRD, generated
 * by `zonekeeper crds --front-door`, installed in kube-apiserver; `zonekeeper operator` and
 * `zonekeeper server` read Hostnames beside the native kinds, publish them (merged per namespace and
 * hostname), write their status in the Hostname shape and hold and release their finalizer. No
 * DNSRecordSet object is ever created: the translation lives in the processes. Both run as their
 * service accounts with the Helm chart's RBAC, rendered with `frontDoors` naming example.test: no
 * cluster-admin. Objects the door's admission refuses get status in its shape and an Event.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type KubeCluster, type KubeUser, serviceAccountUser, startKube } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { CLI, ROOT, removeAll, tempDir, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const DOOR = path.join(ROOT, 'test/support/hostname-front-door.ts');
const SYSTEM = 'zonekeeper-system';
const API = 'dns.zonekeeper.dev/v1alpha1';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');

function docs(...objects: object[]): string {
  return objects.map((o) => `---\n${stringify(o)}`).join('');
}
function hostname(namespace: string, name: string, host: string, addresses: string[]) {
  return {
    apiVersion: 'example.test/v1',
    kind: 'Hostname',
    metadata: { name, namespace },
    spec: { hostname: host, addresses },
  };
}

interface HostnameJson {
  metadata: { generation: number; finalizers?: string[]; deletionTimestamp?: string };
  status?: {
    observedGeneration?: number;
    fqdn?: string;
    mergedWith?: string[];
    conditions?: {
      type: string;
      status: string;
      reason: string;
      message: string;
      observedGeneration?: number;
    }[];
  };
}

describe('front door on a real API server', { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  let crdDir: string;
  let operator: KubeProcess | undefined;
  let server: KubeProcess | undefined;

  const get = async (ns: string, name: string): Promise<HostnameJson | undefined> => {
    const r = await kube.kubectl(['get', 'hostname.example.test', '-n', ns, name, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as HostnameJson) : undefined;
  };
  const published = async (ns: string, name: string) =>
    (await get(ns, name))?.status?.conditions?.find((c) => c.type === 'Published');

  before(async () => {
    kube = await startKube({ users: [OPERATOR, SERVER] });
    crdDir = await tempDir('frontdoor-crds');
    await run(process.execPath, [CLI, 'crds', '--out', crdDir, '--front-door', DOOR]);
    await kube.kubectlOk(['apply', '--server-side', '-f', path.join(crdDir, 'example.test_hostnames.yaml')]);
    await kube.kubectlOk([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/hostnames.example.test',
    ]);
    for (const ns of [SYSTEM, 'dns', 'team-b']) await kube.kubectlOk(['create', 'namespace', ns]);
    // The chart's RBAC (and service accounts) only, with the door's group granted: no workloads here.
    const rendered = await renderChart(kube.binDir, {
      namespace: SYSTEM,
      set: ['frontDoors[0].apiGroup=example.test', 'frontDoors[0].resources={hostnames}'],
    });
    const rbac = chartAccessDocs(rendered, { admission: false });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(
        {
          apiVersion: API,
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.', 'ns2.example.com.'] },
        },
        {
          apiVersion: API,
          kind: 'DNSZone',
          metadata: { name: 'example-com', namespace: 'dns' },
          spec: {
            domainName: 'example.com',
            className: 'builtin',
            delegations: [{ namespaces: ['team-b'], names: ['*.apps'] }],
          },
        },
        hostname('dns', 'www-a', 'www.example.com', ['192.0.2.1']),
        hostname('team-b', 'grab', 'mail.example.com', ['198.51.100.1']),
        hostname('team-b', 'join', 'www.example.com', ['198.51.100.2']),
        // Passes the CRD's schema, fails the door's admission (A records only): invalid before the
        // operator starts.
        hostname('dns', 'bad', 'bad.example.com', ['2001:db8::1']),
      ),
    });
    // Created a second later: www-a stays the oldest of the merged RRset.
    await new Promise((r) => setTimeout(r, 1100));
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(hostname('dns', 'www-b', 'www.example.com', ['192.0.2.2'])),
    });
    operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM, [
      '--front-door',
      DOOR,
    ]);
    server = await startServerProcess('server', kube.kubeconfigFor(SERVER), ['--front-door', DOOR]);
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

  test('objects are reconciled: merged RRset served by zonekeeper server, status in the Hostname shape', async () => {
    await waitFor(
      async () => {
        const r = await dig(server!.dnsPort, 'www.example.com', 'A');
        const a = rdataOf(r, 'A').sort();
        return a.join(',') === '192.0.2.1,192.0.2.2' ? true : undefined;
      },
      60_000,
      100,
    );
    const { value: www } = await waitFor(
      async () => {
        const h = await get('dns', 'www-a');
        return h?.status?.conditions?.[0]?.status === 'True' ? h : undefined;
      },
      30_000,
      100,
    );
    assert.deepEqual(www.metadata.finalizers, ['example.test/hostname']);
    assert.equal(www.status?.fqdn, 'www.example.com.');
    assert.equal(www.status?.observedGeneration, 1);
    assert.deepEqual(www.status?.mergedWith, ['dns/www-a', 'dns/www-b']);
    assert.deepEqual(
      www.status?.conditions?.map((c) => [c.type, c.status, c.reason, c.observedGeneration]),
      [['Published', 'True', 'Published', 1]],
    );
    // Nothing native was written to the cluster for them.
    const native = await kube.kubectlOk(['get', 'dnsrecordsets', '-A', '-o', 'name']);
    assert.equal(native.trim(), '');
  });

  test('hostile tenant: outside its delegation, and into another namespace RRset, it is refused', async () => {
    const { value: grab } = await waitFor(
      async () => {
        const c = await published('team-b', 'grab');
        return c?.status === 'False' ? c : undefined;
      },
      30_000,
      100,
    );
    assert.equal(grab.reason, 'NotDelegated');
    const join = await published('team-b', 'join');
    assert.equal(join?.status, 'False');
    assert.equal(join?.reason, 'NotDelegated');
    assert.equal((await dig(server!.dnsPort, 'mail.example.com', 'A')).status, 'NXDOMAIN');
    assert.ok(!rdataOf(await dig(server!.dnsPort, 'www.example.com', 'A'), 'A').includes('198.51.100.2'));
    // The refusal is an Event about the Hostname itself.
    const { value: events } = await waitFor(
      async () => {
        const out = await kube.kubectlOk(['get', 'events.events.k8s.io', '-n', 'team-b', '-o', 'json']);
        const items = (
          JSON.parse(out) as {
            items: { reason: string; regarding: { kind: string; apiVersion: string; name: string } }[];
          }
        ).items;
        return items.some((e) => e.regarding.name === 'grab') ? items : undefined;
      },
      30_000,
      200,
    );
    const event = events.find((e) => e.regarding.name === 'grab')!;
    assert.equal(event.regarding.kind, 'Hostname');
    assert.equal(event.regarding.apiVersion, 'example.test/v1');
    assert.equal(event.reason, 'NotDelegated');
  });

  test('the chart grants the door group what each needs, and no more', async () => {
    const can = async (user: KubeUser, ...args: string[]) =>
      (
        await kube.kubectl(['auth', 'can-i', ...args], { kubeconfig: kube.kubeconfigFor(user) })
      ).stdout.trim();
    for (const [user, args, want] of [
      [OPERATOR, ['watch', 'hostnames.example.test', '-A'], 'yes'],
      [OPERATOR, ['update', 'hostnames.example.test', '--subresource=status', '-n', 'team-b'], 'yes'],
      [OPERATOR, ['patch', 'hostnames.example.test', '-n', 'team-b'], 'yes'],
      [OPERATOR, ['create', 'hostnames.example.test', '-n', 'team-b'], 'no'],
      [OPERATOR, ['delete', 'hostnames.example.test', '-n', 'team-b'], 'no'],
      [OPERATOR, ['create', 'dnsrecordsets.dns.zonekeeper.dev', '-n', 'dns'], 'no'],
      [OPERATOR, ['list', 'widgets.other.test', '-A'], 'no'],
      [SERVER, ['watch', 'hostnames.example.test', '-A'], 'yes'],
      [SERVER, ['update', 'hostnames.example.test', '--subresource=status', '-n', 'dns'], 'no'],
      [SERVER, ['patch', 'hostnames.example.test', '-n', 'dns'], 'no'],
    ] as const)
      assert.equal(await can(user, ...args), want, `${user.name} can-i ${args.join(' ')}`);
  });

  test('an object the door admission refuses gets status in its shape, on its newest generation, and an Event', async () => {
    const rejected = (ns: string, name: string, generation: number) =>
      waitFor(
        async () => {
          const h = await get(ns, name);
          const c = h?.status?.conditions?.find((x) => x.type === 'Published');
          return h?.metadata.generation === generation && c?.reason === 'Rejected' ? { h, c } : undefined;
        },
        30_000,
        100,
      );
    // Invalid before the operator led: reported once it leads.
    const { value: bad } = await rejected('dns', 'bad', 1);
    assert.equal(bad.c.status, 'False');
    assert.equal(bad.c.observedGeneration, 1);
    assert.match(bad.c.message, /2001:db8::1.*is not an IPv4 address/);
    assert.deepEqual(bad.h.metadata.finalizers ?? [], []);
    // A served object made invalid: its last valid version stays served, the status says why.
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(hostname('dns', 'api', 'api.example.com', ['192.0.2.10'])),
    });
    await waitFor(
      async () => ((await published('dns', 'api'))?.status === 'True' ? true : undefined),
      30_000,
      100,
    );
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(hostname('dns', 'api', 'api.example.com', ['192.0.2.10', '192.0.2.10'])),
    });
    const { value: api } = await rejected('dns', 'api', 2);
    assert.equal(api.c.observedGeneration, 2);
    assert.match(api.c.message, /listed twice/);
    assert.deepEqual(rdataOf(await dig(server!.dnsPort, 'api.example.com', 'A'), 'A'), ['192.0.2.10']);
    // Valid again: published at the new generation.
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(hostname('dns', 'api', 'api.example.com', ['192.0.2.11'])),
    });
    await waitFor(
      async () => {
        const h = await get('dns', 'api');
        const c = h?.status?.conditions?.[0];
        return c?.status === 'True' && c.observedGeneration === 3 ? true : undefined;
      },
      30_000,
      100,
    );
    // Each refusal is a Warning Event about the Hostname.
    const { value: events } = await waitFor(
      async () => {
        const out = await kube.kubectlOk(['get', 'events.events.k8s.io', '-n', 'dns', '-o', 'json']);
        const items = (
          JSON.parse(out) as {
            items: { type: string; reason: string; regarding: { kind: string; name: string } }[];
          }
        ).items.filter((e) => e.reason === 'Rejected');
        return ['api', 'bad'].every((n) => items.some((e) => e.regarding.name === n)) ? items : undefined;
      },
      30_000,
      200,
    );
    for (const e of events) {
      assert.equal(e.type, 'Warning');
      assert.equal(e.regarding.kind, 'Hostname');
    }
  });

  test('a change moves observedGeneration; a delete holds the finalizer until served without it', async () => {
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(hostname('dns', 'www-b', 'www.example.com', ['192.0.2.3'])),
    });
    await waitFor(
      async () => {
        const h = await get('dns', 'www-b');
        const c = h?.status?.conditions?.[0];
        return h?.metadata.generation === 2 && c?.status === 'True' && c.observedGeneration === 2
          ? true
          : undefined;
      },
      30_000,
      100,
    );
    assert.deepEqual(rdataOf(await dig(server!.dnsPort, 'www.example.com', 'A'), 'A').sort(), [
      '192.0.2.1',
      '192.0.2.3',
    ]);
    // kubectl delete waits until the object is gone: the operator removes the finalizer.
    await kube.kubectlOk(['delete', 'hostname.example.test', '-n', 'dns', 'www-a', '--timeout=60s']);
    assert.equal(await get('dns', 'www-a'), undefined);
    await waitFor(
      async () => {
        const a = rdataOf(await dig(server!.dnsPort, 'www.example.com', 'A'), 'A');
        return a.join(',') === '192.0.2.3' ? true : undefined;
      },
      30_000,
      100,
    );
    // The last one goes: the RRset goes with it.
    await kube.kubectlOk(['delete', 'hostname.example.test', '-n', 'dns', 'www-b', '--timeout=60s']);
    await waitFor(
      async () => {
        const r = await dig(server!.dnsPort, 'www.example.com', 'A');
        return r.status === 'NXDOMAIN' ? true : undefined;
      },
      30_000,
      100,
    );
  });
});
