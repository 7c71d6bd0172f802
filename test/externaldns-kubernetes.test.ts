/**
 * ExternalDNS and Zonekeeper on a real control plane (kube-apiserver + etcd), with the chart's RBAC and
 * admission (operator.apiWrites): `zonekeeper operator --externaldns-webhook-namespace team-a` as the
 * webhook provider, `zonekeeper server` answering DNS.
 *
 * - ExternalDNS's webhook client, TXT registry and planner (test/gotools/externaldns-webhook) create,
 *   update and delete through the operator; the endpoints become labelled DNSRecordSets of team-a; a
 *   second owner ID leaves them alone; an endpoint outside the delegation is refused with an Event.
 * - ExternalDNS's own control loop (test/gotools/externaldns-controller: its flags, `source` packages,
 *   registry and planner) publishes a LoadBalancer Service (status patched here), an Ingress and a
 *   DNSEndpoint through the webhook.
 * - The DNSEndpoint front door: Zonekeeper reads `externaldns.k8s.io/v1alpha1` DNSEndpoints itself,
 *   serves their endpoints as record sets of their namespace and writes status.observedGeneration.
 *
 * Every answer comes from `zonekeeper server` by dig.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import { goProgram } from './support/go-programs.ts';
import {
  type KubeCluster,
  serviceAccountToken,
  serviceAccountUser,
  startKube,
  writeTokenFile,
} from './support/kube.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { ROOT, waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const WRITTEN_BY = 'dns.zonekeeper.dev/written-by';

interface Endpoint {
  dnsName: string;
  targets: string[];
  recordType: string;
  recordTTL?: number;
}
interface Pass {
  create: Endpoint[] | null;
  updateNew: Endpoint[] | null;
  delete: Endpoint[] | null;
  error?: string;
}

const yaml = (...docs: unknown[]) => docs.map((d) => `---\n${JSON.stringify(d)}\n`).join('');

describe('ExternalDNS with zonekeeper operator and server on a real API server', { timeout: 900_000 }, () => {
  let kube: KubeCluster;
  let operator: KubeProcess | undefined;
  let server: KubeProcess | undefined;
  let webhookUrl: string;
  let serverWebhookUrl: string;
  let webhookBin: string;

  const answers = async (name: string, type = 'A') =>
    rdataOf(await dig(server!.dnsPort, name, type), type)
      .sort()
      .join(',');
  const until = <T>(probe: () => Promise<T | undefined>) => waitFor(probe, 30_000, 100);
  const served = (name: string, want: string, type = 'A') =>
    until(async () => ((await answers(name, type)) === want ? true : undefined)).catch(async () =>
      assert.equal(await answers(name, type), want, `${name} ${type}`),
    );

  const externalDns = (bin: string, args: string[], input?: string) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn(bin, args);
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('close', (code) =>
        code === 0
          ? resolve(out)
          : reject(
              new Error(
                `${path.basename(bin)} exited ${code}:\n${err}\noperator:\n${operator?.log().slice(-4000)}`,
              ),
            ),
      );
      child.stdin.end(input ?? '');
    });
  const webhookPass = async (owner: string, desired: Endpoint[], url = webhookUrl) =>
    (
      JSON.parse(await externalDns(webhookBin, ['-url', url, '-owner', owner], JSON.stringify(desired))) as {
        passes: Pass[];
      }
    ).passes[0]!;

  before(async () => {
    [webhookBin] = await Promise.all([goProgram('externaldns-webhook'), goProgram('externaldns-controller')]);
    kube = await startKube({ users: [OPERATOR, SERVER] });
    await kube.kubectlOk([
      'apply',
      '--server-side',
      '-f',
      path.join(ROOT, 'deploy/crds/externaldns.k8s.io_dnsendpoints.yaml'),
    ]);
    await kube.kubectlOk([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/dnsendpoints.externaldns.k8s.io',
    ]);
    for (const ns of [SYSTEM, 'platform', 'team-a', 'team-b'])
      await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, {
      namespace: SYSTEM,
      set: ['operator.apiWrites.enabled=true'],
    });
    const docs = chartAccessDocs(rendered, { admission: true });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: docs });
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: yaml(
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.'] },
        },
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZone',
          metadata: { name: 'example-com', namespace: 'platform' },
          spec: {
            domainName: 'example.com',
            className: 'builtin',
            delegations: [
              { namespaces: ['team-a'], names: ['*.apps'], types: ['A', 'AAAA', 'CNAME', 'TXT'] },
            ],
          },
        },
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSRecordSet',
          metadata: { name: 'manifest', namespace: 'platform' },
          spec: {
            zoneRef: { name: 'example-com' },
            name: 'manifest.apps',
            type: 'A',
            records: ['192.0.2.99'],
          },
        },
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZone',
          metadata: { name: 'team-b-example-org', namespace: 'team-b' },
          spec: { domainName: 'team-b.example.org', className: 'builtin' },
        },
      ),
    });
    operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM, [
      '--externaldns-webhook-namespace',
      'team-a',
      '--externaldns-webhook',
      '127.0.0.1:0',
      // zonekeeper server replicas forward the plans their webhook takes (ADR 0016).
      '--write-forwarders',
      SERVER.name,
    ]);
    const m = /externalDnsWebhook="(127\.0\.0\.1:\d+)"/.exec(operator.log());
    assert.ok(m, operator.log());
    webhookUrl = `http://${m[1]}`;
    const hopToken = await serviceAccountToken(kube, SYSTEM, 'zonekeeper-server', {
      audience: 'zonekeeper-writes',
    });
    server = await startServerProcess('server', kube.kubeconfigFor(SERVER), [
      '--operator-namespace',
      SYSTEM,
      '--write-token-file',
      await writeTokenFile(kube, 'write-token', hopToken),
      '--externaldns-webhook-namespace',
      'team-a',
      '--externaldns-webhook',
      '127.0.0.1:0',
    ]);
    const s = /externalDnsWebhook="(127\.0\.0\.1:\d+)"/.exec(server.log());
    assert.ok(s, server.log());
    serverWebhookUrl = `http://${s[1]}`;
    await served('manifest.apps.example.com', '192.0.2.99');
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

  test('webhook: creates, updates and deletes through the operator leader; labelled DNSRecordSets of team-a', async () => {
    // The operator negotiates once it leads and its cache is synced.
    await until(async () => ((await fetch(`${webhookUrl}/`)).status === 200 ? true : undefined));
    let pass = await webhookPass('alpha', [
      { dnsName: 'web.apps.example.com', recordType: 'A', targets: ['192.0.2.10'] },
      { dnsName: 'api.apps.example.com', recordType: 'CNAME', targets: ['web.apps.example.com'] },
    ]);
    assert.equal(pass.error, undefined);
    await served('web.apps.example.com', '192.0.2.10');
    await served('api.apps.example.com', 'web.apps.example.com.', 'CNAME');
    assert.match(await answers('a-web.apps.example.com', 'TXT'), /external-dns\/owner=alpha/);
    const objects = JSON.parse(
      await kube.kubectlOk([
        'get',
        'dnsrecordsets',
        '-n',
        'team-a',
        '-l',
        `${WRITTEN_BY}=externaldns-webhook`,
        '-o',
        'json',
      ]),
    ) as { items: unknown[] };
    assert.equal(objects.items.length, 4); // two endpoints and their registry TXT records
    pass = await webhookPass('alpha', [
      { dnsName: 'web.apps.example.com', recordType: 'A', targets: ['192.0.2.11'] },
    ]);
    assert.equal(pass.error, undefined);
    await served('web.apps.example.com', '192.0.2.11');
    await until(async () =>
      (await dig(server!.dnsPort, 'api.apps.example.com', 'CNAME')).status === 'NXDOMAIN' ? true : undefined,
    );
  });

  test("webhook: a second owner ID leaves the first's records alone", async () => {
    const pass = await webhookPass('beta', [
      { dnsName: 'web.apps.example.com', recordType: 'A', targets: ['203.0.113.66'] },
      { dnsName: 'beta.apps.example.com', recordType: 'A', targets: ['203.0.113.1'] },
    ]);
    assert.equal(pass.error, undefined);
    assert.ok(!(pass.updateNew ?? []).length && !(pass.delete ?? []).length, JSON.stringify(pass));
    await served('beta.apps.example.com', '203.0.113.1');
    assert.equal(await answers('web.apps.example.com'), '192.0.2.11');
  });

  test('webhook: an endpoint outside the delegation is refused, not written, and an Event says why', async () => {
    const res = await fetch(`${webhookUrl}/records`, {
      method: 'POST',
      headers: { 'content-type': 'application/external.dns.webhook+json;version=1' },
      body: JSON.stringify({
        create: [
          { dnsName: 'www.team-b.example.org', recordType: 'A', targets: ['192.0.2.66'] },
          { dnsName: 'fine.apps.example.com', recordType: 'A', targets: ['192.0.2.5'] },
        ],
      }),
    });
    assert.equal(res.status, 204);
    await served('fine.apps.example.com', '192.0.2.5');
    assert.equal((await dig(server!.dnsPort, 'www.team-b.example.org', 'A')).status, 'NXDOMAIN');
    await until(async () => {
      const events = await kube.kubectlOk(['get', 'events.events.k8s.io', '-n', 'team-a', '-o', 'json']);
      return /ExternalDNSEndpointRefused/.test(events) && /www\.team-b\.example\.org/.test(events)
        ? true
        : undefined;
    });
    // Nothing was written into team-b.
    const teamB = JSON.parse(
      await kube.kubectlOk(['get', 'dnsrecordsets', '-n', 'team-b', '-o', 'json']),
    ) as {
      items: unknown[];
    };
    assert.equal(teamB.items.length, 0);
  });

  test('webhook on zonekeeper server: plans forwarded to the leader; a refused endpoint dropped, the rest written', async () => {
    const pass = await webhookPass(
      'gamma',
      [{ dnsName: 'replica.apps.example.com', recordType: 'A', targets: ['192.0.2.50'] }],
      serverWebhookUrl,
    );
    assert.equal(pass.error, undefined);
    await served('replica.apps.example.com', '192.0.2.50');
    assert.match(await answers('a-replica.apps.example.com', 'TXT'), /external-dns\/owner=gamma/);
    // The replica cannot judge delegations; the leader refuses and the replica drops that endpoint.
    const res = await fetch(`${serverWebhookUrl}/records`, {
      method: 'POST',
      headers: { 'content-type': 'application/external.dns.webhook+json;version=1' },
      body: JSON.stringify({
        create: [
          { dnsName: 'www2.team-b.example.org', recordType: 'A', targets: ['192.0.2.66'] },
          { dnsName: 'fine2.apps.example.com', recordType: 'A', targets: ['192.0.2.6'] },
        ],
      }),
    });
    assert.equal(res.status, 204);
    await served('fine2.apps.example.com', '192.0.2.6');
    assert.equal((await dig(server!.dnsPort, 'www2.team-b.example.org', 'A')).status, 'NXDOMAIN');
    const metrics = await (await fetch(`${server!.httpUrl}/metrics`)).text();
    assert.match(
      metrics,
      /zonekeeper_externaldns_webhook_refused_endpoints_total\{code="NOT_DELEGATED",stage="records"\} 1/,
    );
  });

  test('DNSEndpoint front door: endpoints served as record sets of the namespace, observedGeneration written', async () => {
    const endpoint = (targets: string[]) => ({
      apiVersion: 'externaldns.k8s.io/v1alpha1',
      kind: 'DNSEndpoint',
      metadata: { name: 'infra', namespace: 'team-a' },
      spec: {
        endpoints: [
          { dnsName: 'infra.apps.example.com', recordType: 'A', targets, recordTTL: 120 },
          { dnsName: 'infra.apps.example.com', recordType: 'TXT', targets: ['managed by a DNSEndpoint'] },
          // outside team-a's delegation: not served
          { dnsName: 'stray.example.com', recordType: 'A', targets: ['192.0.2.77'] },
        ],
      },
    });
    await kube.kubectlOk(['apply', '-f', '-'], { input: yaml(endpoint(['192.0.2.20'])) });
    await served('infra.apps.example.com', '192.0.2.20');
    await served('infra.apps.example.com', '"managed by a DNSEndpoint"', 'TXT');
    assert.equal((await dig(server!.dnsPort, 'stray.example.com', 'A')).status, 'NXDOMAIN');
    const generation = async () => {
      const o = JSON.parse(
        await kube.kubectlOk(['get', 'dnsendpoint', '-n', 'team-a', 'infra', '-o', 'json']),
      ) as {
        metadata: { generation: number; finalizers?: string[] };
        status?: { observedGeneration?: number };
      };
      return o;
    };
    await until(async () => {
      const o = await generation();
      return o.status?.observedGeneration === o.metadata.generation ? true : undefined;
    });
    assert.equal((await generation()).metadata.finalizers, undefined);
    await kube.kubectlOk(['apply', '-f', '-'], { input: yaml(endpoint(['192.0.2.21'])) });
    await served('infra.apps.example.com', '192.0.2.21');
    await until(async () => {
      const o = await generation();
      return o.metadata.generation === 2 && o.status?.observedGeneration === 2 ? true : undefined;
    });
    await kube.kubectlOk(['delete', 'dnsendpoint', '-n', 'team-a', 'infra']);
    await until(async () =>
      (await dig(server!.dnsPort, 'infra.apps.example.com', 'A')).status === 'NXDOMAIN' ? true : undefined,
    );
  });

  test("ExternalDNS's own control loop: a LoadBalancer Service, an Ingress and a DNSEndpoint through the webhook", async () => {
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: yaml(
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: {
            name: 'shop',
            namespace: 'team-a',
            annotations: { 'external-dns.kubernetes.io/hostname': 'shop.apps.example.com' },
          },
          spec: { type: 'LoadBalancer', ports: [{ port: 80 }], selector: { app: 'shop' } },
        },
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'Ingress',
          metadata: { name: 'blog', namespace: 'team-a' },
          spec: {
            rules: [
              {
                host: 'blog.apps.example.com',
                http: {
                  paths: [
                    {
                      path: '/',
                      pathType: 'Prefix',
                      backend: { service: { name: 'shop', port: { number: 80 } } },
                    },
                  ],
                },
              },
            ],
          },
        },
        {
          apiVersion: 'externaldns.k8s.io/v1alpha1',
          kind: 'DNSEndpoint',
          metadata: { name: 'edns', namespace: 'team-a' },
          spec: {
            endpoints: [{ dnsName: 'crd.apps.example.com', recordType: 'A', targets: ['192.0.2.40'] }],
          },
        },
      ),
    });
    // No cloud here: the test is the load balancer controller and the ingress controller.
    await kube.kubectlOk([
      'patch',
      'service',
      '-n',
      'team-a',
      'shop',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { loadBalancer: { ingress: [{ ip: '192.0.2.30' }] } } }),
    ]);
    await kube.kubectlOk([
      'patch',
      'ingress',
      '-n',
      'team-a',
      'blog',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { loadBalancer: { ingress: [{ ip: '192.0.2.31' }] } } }),
    ]);
    const controller = await goProgram('externaldns-controller');
    const loop = async () =>
      JSON.parse(
        await externalDns(controller, [
          `--kubeconfig=${kube.adminKubeconfig}`,
          '--source=service',
          '--source=ingress',
          '--source=crd',
          '--crd-source-apiversion=externaldns.k8s.io/v1alpha1',
          '--crd-source-kind=DNSEndpoint',
          '--namespace=team-a',
          '--provider=webhook',
          `--webhook-provider-url=${webhookUrl}`,
          '--registry=txt',
          '--txt-owner-id=loop',
          '--policy=sync',
        ]),
      ) as {
        desired: Endpoint[];
        changes: { create?: Endpoint[]; updateNew?: Endpoint[]; delete?: Endpoint[] };
      };
    const first = await loop();
    // The Service and the Ingress; the DNSEndpoint is served by Zonekeeper's own door already, so the
    // webhook filters it (another object defines that RRset) and ExternalDNS does not plan it.
    assert.equal((first.changes.create ?? []).length, 2, JSON.stringify(first));
    await served('shop.apps.example.com', '192.0.2.30');
    await served('blog.apps.example.com', '192.0.2.31');
    // Zonekeeper's own door serves the DNSEndpoint too; ExternalDNS's copy is the webhook's record set.
    await served('crd.apps.example.com', '192.0.2.40');
    assert.match(await answers('a-shop.apps.example.com', 'TXT'), /external-dns\/owner=loop/);
    // A second pass of the loop: nothing to change (what the webhook lists back is what was written).
    const second = await loop();
    const count = (c: typeof second.changes) =>
      (c.create?.length ?? 0) + (c.updateNew?.length ?? 0) + (c.delete?.length ?? 0);
    assert.equal(count(second.changes), 0, JSON.stringify(second.changes));
    // The Service's address changes: the loop updates it.
    await kube.kubectlOk([
      'patch',
      'service',
      '-n',
      'team-a',
      'shop',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { loadBalancer: { ingress: [{ ip: '192.0.2.32' }] } } }),
    ]);
    await loop();
    await served('shop.apps.example.com', '192.0.2.32');
  });
});
