/**
 * Gateway API hostnames → DNS on a real control plane: the Gateway API CRDs of the Go module
 * sigs.k8s.io/gateway-api (config/crd/standard, fetched by scripts/ensure-gateway-api-crds.sh),
 * `zonekeeper operator --gateway-dns=true --gateway-target-domain gw.test` as its service account
 * with the chart's RBAC (gatewayDns enabled), `zonekeeper server` answering. The Domain of the route's
 * namespace is verified by a TXT record in BIND (the domain's current DNS, and the resolver).
 *
 * A Gateway and an HTTPRoute go from no records to CNAME (subdomain) and ALIAS (apex) answers to the
 * Gateway's DNS address, whose A record comes from the Gateway's status.addresses; a hostname a
 * hand-made record set holds is a conflict (annotation, Event) and is never overwritten; deleting the
 * route takes its records away (NXDOMAIN).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type KubeCluster, serviceAccountUser, startKube } from './support/kube.ts';
import { type RecursiveBind, startRecursiveBind } from './support/recursive-bind.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { ROOT, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const SYSTEM = 'zonekeeper-system';
const API = 'dns.zonekeeper.dev/v1alpha1';
const GW = 'gateway.networking.k8s.io/v1';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');

function docs(...objects: object[]): string {
  return objects.map((o) => `---\n${stringify(o)}`).join('');
}

/** A DNSZone of the builtin class. */
function builtinZone(namespace: string, name: string, domainName: string): object {
  return {
    apiVersion: API,
    kind: 'DNSZone',
    metadata: { name, namespace },
    spec: { domainName, className: 'builtin' },
  };
}

/** A Domain claiming `domainName` for `namespace`. */
function domain(namespace: string, name: string, domainName: string): object {
  return { apiVersion: API, kind: 'Domain', metadata: { name, namespace }, spec: { domainName } };
}

interface Json {
  metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  spec?: { name: string; type: string; records: string[] };
  status?: { verification?: { dnsRecord?: { content: string } } };
}

describe('Gateway API hostnames on a real API server', { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  let bind: RecursiveBind | undefined;
  let operator: KubeProcess | undefined;
  let server: KubeProcess | undefined;

  /** A JSON patch to the Gateway gw in team-a. */
  const patchGw = (ops: object[]) =>
    kube.kubectlOk(['patch', 'gateway', '-n', 'team-a', 'gw', '--type=json', '-p', JSON.stringify(ops)]);
  const list = async (kind: string, ns: string): Promise<Json[]> =>
    (JSON.parse(await kube.kubectlOk(['get', kind, '-n', ns, '-o', 'json'])) as { items: Json[] }).items;
  const get = async (kind: string, ns: string, name: string): Promise<Json | undefined> => {
    const r = await kube.kubectl(['get', kind, '-n', ns, name, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const ask = (name: string, type = 'A') => dig(server!.dnsPort, name, type);
  /** The gateway implementation's part: the route accepted by its parent Gateway (status.parents). */
  const accept = (
    kind: string,
    ns: string,
    name: string,
    parentRef: { name: string; namespace?: string },
    controllerName = 'example.com/gateway-controller',
  ) =>
    kube.kubectlOk([
      'patch',
      kind,
      '-n',
      ns,
      name,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({
        status: {
          parents: [
            {
              parentRef,
              controllerName,
              conditions: [
                {
                  type: 'Accepted',
                  status: 'True',
                  reason: 'Accepted',
                  message: 'accepted',
                  lastTransitionTime: new Date().toISOString(),
                  observedGeneration: 1,
                },
              ],
            },
          ],
        },
      }),
    ]);
  const events = async (ns: string) =>
    (
      JSON.parse(await kube.kubectlOk(['get', 'events.events.k8s.io', '-n', ns, '-o', 'json'])) as {
        items: { reason: string; note?: string; regarding: { kind: string; name: string } }[];
      }
    ).items;
  /** The TXT records the domains' current DNS (BIND) publishes, by Domain. */
  const tokens = new Map<string, string>();
  const publishTokens = () =>
    bind!.setRootRecords(
      [...tokens].map(([domain, token]) => `_zonekeeper-challenge.${domain}. IN TXT "${token}"`),
    );

  before(async () => {
    kube = await startKube({ users: [OPERATOR, SERVER] });
    const { stdout } = await run('bash', [path.join(ROOT, 'scripts/ensure-gateway-api-crds.sh')]);
    const crdDir = stdout.trim();
    for (const f of readdirSync(crdDir).filter(
      (f) => f.startsWith('gateway.networking.k8s.io_') && !f.includes('vap'),
    ))
      await kube.kubectlOk(['apply', '--server-side', '-f', path.join(crdDir, f)]);
    await kube.kubectlOk([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/gateways.gateway.networking.k8s.io',
      'crd/httproutes.gateway.networking.k8s.io',
      'crd/grpcroutes.gateway.networking.k8s.io',
      'crd/tlsroutes.gateway.networking.k8s.io',
      'crd/gatewayclasses.gateway.networking.k8s.io',
    ]);
    // The class of the Gateways here: only status.parents entries of its controller attach routes.
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs({
        apiVersion: GW,
        kind: 'GatewayClass',
        metadata: { name: 'example' },
        spec: { controllerName: 'example.com/gateway-controller' },
      }),
    });
    for (const ns of [SYSTEM, 'team-a', 'platform']) await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, {
      namespace: SYSTEM,
      set: [
        'operator.gatewayDns.enabled=true',
        // With API writes on, the chart's admission policy must let the Gateway record sets through.
        'operator.apiWrites.enabled=true',
      ],
    });
    const rbac = chartAccessDocs(rendered, { admission: true });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(
        {
          apiVersion: API,
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: { backend: { builtin: {} }, nameServers: ['ns1.provider.test.'] },
        },
        builtinZone('team-a', 'example-test', 'example.test'),
        builtinZone('platform', 'gw-test', 'gw.test'),
        // Made by hand: the gateway controller must never overwrite it.
        {
          apiVersion: API,
          kind: 'DNSRecordSet',
          metadata: { name: 'shop', namespace: 'team-a' },
          spec: { zoneRef: { name: 'example-test' }, name: 'shop', type: 'A', records: ['198.51.100.1'] },
        },
        domain('team-a', 'example-test', 'example.test'),
      ),
    });
    // The admission policy is in force: the operator may not create a record set without a manager label.
    await waitFor(
      async () => {
        const r = await kube.kubectl(['create', '-f', '-'], {
          kubeconfig: kube.kubeconfigFor(OPERATOR),
          input: docs({
            apiVersion: API,
            kind: 'DNSRecordSet',
            metadata: { name: 'unlabelled', namespace: 'team-a' },
            spec: { zoneRef: { name: 'example-test' }, name: 'x', type: 'A', records: ['192.0.2.99'] },
          }),
        });
        if (r.code === 0) await kube.kubectlOk(['delete', 'dnsrecordset', '-n', 'team-a', 'unlabelled']);
        return r.code !== 0 && /zonekeeper-gateway-dns/.test(r.stderr) ? true : undefined;
      },
      30_000,
      500,
    );
    server = await startServerProcess('server', kube.kubeconfigFor(SERVER));
    bind = await startRecursiveBind({ rootRecords: [] });
    operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM, [
      '--domain-resolver',
      `127.0.0.1:${bind.port}`,
      '--domain-delegation-port',
      String(bind.port),
      '--domain-retry-schedule',
      '200ms/5s,500ms',
      '--domain-http-timeout',
      '500ms',
      '--gateway-dns=true',
      '--gateway-target-domain',
      'gw.test',
    ]);
    // The domain's current DNS publishes the token: the Domain is verified.
    const token = await waitFor(
      async () => (await get('domain', 'team-a', 'example-test'))?.status?.verification?.dnsRecord?.content,
      60_000,
    );
    tokens.set('example.test', token.value);
    await publishTokens();
    // Both zones are served before the tests start.
    for (const zone of ['example.test', 'gw.test'])
      await waitFor(
        async () => ((await ask(zone, 'SOA')).status === 'NOERROR' ? true : undefined),
        60_000,
        200,
      );
  });

  after(async () => {
    await Promise.all([operator?.stop(), server?.stop()].map((p) => p?.catch(() => {})));
    if (process.env.KUBE_E2E_LOGS) {
      const { mkdir, writeFile } = await import('node:fs/promises');
      await mkdir(process.env.KUBE_E2E_LOGS, { recursive: true });
      for (const p of [operator, server])
        if (p) await writeFile(path.join(process.env.KUBE_E2E_LOGS, `gateway-${p.name}.log`), p.log());
    }
    await bind?.stop();
    await kube?.stop();
  });

  test('a Gateway and an HTTPRoute: from no records to CNAME and ALIAS answers to the Gateway address', async () => {
    assert.equal((await ask('api.example.test')).status, 'NXDOMAIN');
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(
        {
          apiVersion: GW,
          kind: 'Gateway',
          metadata: { name: 'gw', namespace: 'team-a' },
          spec: {
            gatewayClassName: 'example',
            listeners: [
              { name: 'http', port: 80, protocol: 'HTTP' },
              { name: 'apps', port: 80, protocol: 'HTTP', hostname: '*.apps.example.test' },
            ],
          },
        },
        {
          apiVersion: GW,
          kind: 'HTTPRoute',
          metadata: { name: 'web', namespace: 'team-a' },
          spec: {
            parentRefs: [{ name: 'gw' }],
            hostnames: ['api.example.test', 'example.test', 'shop.example.test'],
          },
        },
        {
          apiVersion: GW,
          kind: 'TLSRoute',
          metadata: { name: 'tls', namespace: 'team-a' },
          spec: {
            parentRefs: [{ name: 'gw' }],
            hostnames: ['tls.example.test'],
            rules: [{ backendRefs: [{ name: 'backend', port: 443 }] }],
          },
        },
      ),
    });
    // The gateway implementation's part: the routes accepted, the Gateway's address.
    await accept('httproute', 'team-a', 'web', { name: 'gw' });
    await accept('tlsroute', 'team-a', 'tls', { name: 'gw' });
    await kube.kubectlOk([
      'patch',
      'gateway',
      '-n',
      'team-a',
      'gw',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { addresses: [{ type: 'IPAddress', value: '192.0.2.10' }] } }),
    ]);
    const { value: address } = await waitFor(
      async () =>
        (await get('gateway', 'team-a', 'gw'))?.metadata.annotations?.['dns.zonekeeper.dev/gateway-address'],
      60_000,
      200,
    );
    assert.match(address, /^[a-z]+-[a-z]+-[0-9a-f]{6}\.gw\.test$/);
    // Subdomain: CNAME to the address, which has the Gateway's A record.
    const { value: sub } = await waitFor(
      async () => {
        const r = await ask('api.example.test');
        return rdataOf(r, 'CNAME').length > 0 && rdataOf(r, 'A').length > 0 ? r : undefined;
      },
      60_000,
      200,
    );
    assert.deepEqual(rdataOf(sub, 'CNAME'), [`${address}.`]);
    assert.deepEqual(rdataOf(sub, 'A'), ['192.0.2.10']);
    // Apex: ALIAS, answered as the address's A record.
    await waitFor(
      async () => (rdataOf(await ask('example.test'), 'A').includes('192.0.2.10') ? true : undefined),
      60_000,
      200,
    );
    const managed = async () =>
      (await list('dnsrecordsets', 'team-a')).filter(
        (s) => s.metadata.labels?.['app.kubernetes.io/managed-by'] === 'zonekeeper-gateway-dns',
      );
    // The TLSRoute's hostname too.
    const { value: ours } = await waitFor(
      async () => {
        const found = await managed();
        return found.length === 4 ? found : undefined;
      },
      60_000,
      200,
    );
    assert.deepEqual(ours.map((s) => `${s.spec?.name} ${s.spec?.type}`).sort(), [
      '*.apps CNAME',
      '@ ALIAS',
      'api CNAME',
      'tls CNAME',
    ]);
    // The listener's wildcard hostname: a wildcard record set.
    assert.deepEqual(rdataOf(await ask('anything.apps.example.test'), 'CNAME'), [`${address}.`]);
    for (const s of ours) assert.match(s.metadata.name, /^gw-[0-9a-f]{8}$/);
  });

  test("a route's hostname is published only once its Gateway accepted it and a listener admits its namespace", async () => {
    const managed = async (ns: string, name: string) =>
      (await list('dnsrecordsets', ns)).filter(
        (s) =>
          s.metadata.labels?.['app.kubernetes.io/managed-by'] === 'zonekeeper-gateway-dns' &&
          s.spec?.name === name,
      );
    // Not (yet) accepted by the Gateway: nothing, while the accepted route's hostnames are there.
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs({
        apiVersion: GW,
        kind: 'HTTPRoute',
        metadata: { name: 'pending', namespace: 'team-a' },
        spec: { parentRefs: [{ name: 'gw' }], hostnames: ['pending.example.test'] },
      }),
    });
    // A route in another namespace with a verified Domain of its own, accepted (its status says so),
    // through listeners that admit only the Gateway's namespace (allowedRoutes default Same).
    await kube.kubectlOk(['create', 'namespace', 'team-b']);
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs(
        builtinZone('team-b', 'other-test', 'other.test'),
        domain('team-b', 'other-test', 'other.test'),
        {
          apiVersion: GW,
          kind: 'HTTPRoute',
          metadata: { name: 'foreign', namespace: 'team-b' },
          spec: { parentRefs: [{ name: 'gw', namespace: 'team-a' }], hostnames: ['www.other.test'] },
        },
      ),
    });
    await accept('httproute', 'team-b', 'foreign', { name: 'gw', namespace: 'team-a' });
    const token = await waitFor(
      async () => (await get('domain', 'team-b', 'other-test'))?.status?.verification?.dnsRecord?.content,
      60_000,
    );
    tokens.set('other.test', token.value);
    await publishTokens();
    await waitFor(
      async () =>
        (await kube.kubectlOk(['get', 'domain', '-n', 'team-b', 'other-test', '-o', 'json'])).includes(
          '"reason": "Verified"',
        )
          ? true
          : undefined,
      60_000,
      200,
    );
    await waitFor(
      async () => ((await ask('other.test', 'SOA')).status === 'NOERROR' ? true : undefined),
      60_000,
      200,
    );
    // Another gateway implementation marks the pending route accepted: that does not attach it.
    await accept('httproute', 'team-a', 'pending', { name: 'gw' }, 'other.example/gateway-controller');
    // A route made now, accepted, shows the controller has looked at everything since (it plans the
    // whole picture in every run): neither of the other two routes got a record set.
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs({
        apiVersion: GW,
        kind: 'HTTPRoute',
        metadata: { name: 'canary', namespace: 'team-a' },
        spec: { parentRefs: [{ name: 'gw' }], hostnames: ['canary.example.test'] },
      }),
    });
    await accept('httproute', 'team-a', 'canary', { name: 'gw' });
    await waitFor(
      async () => ((await managed('team-a', 'canary')).length === 1 ? true : undefined),
      60_000,
      200,
    );
    await kube.kubectlOk(['delete', 'httproute', '-n', 'team-a', 'canary']);
    assert.deepEqual(await managed('team-a', 'pending'), []);
    assert.deepEqual(await managed('team-b', 'www'), []);
    assert.equal((await ask('pending.example.test')).status, 'NXDOMAIN');
    assert.equal((await ask('www.other.test')).status, 'NXDOMAIN');
    // Accepted: published.
    await accept('httproute', 'team-a', 'pending', { name: 'gw' });
    await waitFor(
      async () => (rdataOf(await ask('pending.example.test'), 'CNAME').length > 0 ? true : undefined),
      60_000,
      200,
    );
    // The Gateway's listener admits all namespaces: the foreign route's hostname is published too.
    await patchGw([
      { op: 'add', path: '/spec/listeners/0/allowedRoutes', value: { namespaces: { from: 'All' } } },
    ]);
    await waitFor(
      async () => (rdataOf(await ask('www.other.test'), 'CNAME').length > 0 ? true : undefined),
      60_000,
      200,
    );
    await kube.kubectlOk(['delete', 'httproute', '-n', 'team-a', 'pending']);
    await kube.kubectlOk(['delete', 'httproute', '-n', 'team-b', 'foreign']);
    await waitFor(
      async () => ((await ask('pending.example.test')).status === 'NXDOMAIN' ? true : undefined),
      60_000,
      200,
    );
  });

  test('two Gateways claiming one hostname: the oldest publishes, the other is told why, and it stays so', async () => {
    const gw = (await get('gateway', 'team-a', 'gw'))!;
    const address = gw.metadata.annotations!['dns.zonekeeper.dev/gateway-address']!;
    // A second, newer Gateway with a listener hostname the first one gets as well.
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs({
        apiVersion: GW,
        kind: 'Gateway',
        metadata: { name: 'gw2', namespace: 'team-a' },
        spec: {
          gatewayClassName: 'example',
          listeners: [{ name: 'http', port: 80, protocol: 'HTTP', hostname: 'clash.example.test' }],
        },
      }),
    });
    await kube.kubectlOk([
      'patch',
      'gateway',
      '-n',
      'team-a',
      'gw2',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { addresses: [{ type: 'IPAddress', value: '192.0.2.20' }] } }),
    ]);
    const addListener = (hostname: string) =>
      patchGw([
        {
          op: 'add',
          path: '/spec/listeners/-',
          value: { name: 'clash', port: 8080, protocol: 'HTTP', hostname },
        },
      ]);
    await addListener('clash.example.test');
    const { value: conflict } = await waitFor(
      async () =>
        (await get('gateway', 'team-a', 'gw2'))?.metadata.annotations?.['dns.zonekeeper.dev/dns-conflicts'],
      60_000,
      200,
    );
    assert.match(
      conflict,
      /clash\.example\.test is published for Gateway team-a\/gw, which is older than Gateway team-a\/gw2/,
    );
    // The older Gateway's answer, every time it is asked (a flapping pair would come and go).
    for (let i = 0; i < 10; i++) {
      assert.deepEqual(rdataOf(await ask('clash.example.test'), 'CNAME'), [`${address}.`]);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const clashSets = (await list('dnsrecordsets', 'team-a')).filter(
      (s) =>
        s.metadata.labels?.['app.kubernetes.io/managed-by'] === 'zonekeeper-gateway-dns' &&
        s.spec?.name === 'clash',
    );
    assert.deepEqual(
      clashSets.map((s) => s.metadata.labels?.['dns.zonekeeper.dev/gateway-owner']),
      ['Gateway.team-a.gw'],
    );
    await waitFor(
      async () =>
        (await events('team-a')).some((e) => e.reason === 'DNSConflict' && e.regarding.name === 'gw2')
          ? true
          : undefined,
      30_000,
      200,
    );
    // Gone again: the next tests count the record sets of gw.
    await kube.kubectlOk(['delete', 'gateway', '-n', 'team-a', 'gw2']);
    await patchGw([{ op: 'remove', path: '/spec/listeners/2' }]);
    await waitFor(
      async () => ((await ask('clash.example.test')).status === 'NXDOMAIN' ? true : undefined),
      60_000,
      200,
    );
  });

  test('a hostname a hand-made record set holds is a conflict: reported, never overwritten', async () => {
    const { value: conflict } = await waitFor(
      async () =>
        (await get('httproute', 'team-a', 'web'))?.metadata.annotations?.['dns.zonekeeper.dev/dns-conflicts'],
      60_000,
      200,
    );
    assert.match(conflict, /shop\.example\.test is already published by DNSRecordSet team-a\/shop/);
    assert.deepEqual(rdataOf(await ask('shop.example.test'), 'A'), ['198.51.100.1']);
    assert.deepEqual((await get('dnsrecordset', 'team-a', 'shop'))?.spec?.records, ['198.51.100.1']);
    await waitFor(
      async () => {
        const events = JSON.parse(
          await kube.kubectlOk(['get', 'events.events.k8s.io', '-n', 'team-a', '-o', 'json']),
        ) as {
          items: { reason: string; regarding: { kind: string; name: string } }[];
        };
        return events.items.some((e) => e.reason === 'DNSConflict' && e.regarding.kind === 'HTTPRoute')
          ? true
          : undefined;
      },
      30_000,
      200,
    );
  });

  test('deleting the route takes its records away: NXDOMAIN', async () => {
    await kube.kubectlOk(['delete', 'httproute', '-n', 'team-a', 'web']);
    await waitFor(
      async () => ((await ask('api.example.test')).status === 'NXDOMAIN' ? true : undefined),
      60_000,
      200,
    );
    const left = (await list('dnsrecordsets', 'team-a')).filter(
      (s) => s.metadata.labels?.['app.kubernetes.io/managed-by'] === 'zonekeeper-gateway-dns',
    );
    // What the Gateway's own listener and the TLSRoute ask for stays.
    assert.deepEqual(
      left.map((s) => [s.spec?.name, s.metadata.labels?.['dns.zonekeeper.dev/gateway-owner']]).sort(),
      [
        ['*.apps', 'Gateway.team-a.gw'],
        ['tls', 'TLSRoute.team-a.tls'],
      ],
    );
    // The hand-made record set stays.
    assert.deepEqual(rdataOf(await ask('shop.example.test'), 'A'), ['198.51.100.1']);
  });

  test("deleting the Gateway takes its listener's records and its address away", async () => {
    const address = (await get('gateway', 'team-a', 'gw'))!.metadata.annotations![
      'dns.zonekeeper.dev/gateway-address'
    ]!;
    assert.deepEqual(rdataOf(await ask(address), 'A'), ['192.0.2.10']);
    await kube.kubectlOk(['delete', 'gateway', '-n', 'team-a', 'gw']);
    await waitFor(async () => ((await ask(address)).status === 'NXDOMAIN' ? true : undefined), 60_000, 200);
    await waitFor(
      async () => ((await ask('x.apps.example.test')).status === 'NXDOMAIN' ? true : undefined),
      60_000,
      200,
    );
    assert.deepEqual(
      (await list('dnsrecordsets', 'platform')).filter(
        (s) => s.metadata.labels?.['app.kubernetes.io/managed-by'] === 'zonekeeper-gateway-dns',
      ),
      [],
    );
  });
});
