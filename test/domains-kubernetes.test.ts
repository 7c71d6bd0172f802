/**
 * Zone squatting on a real control plane: a DNSZoneClass with requireVerifiedDomain, `zonekeeper
 * operator` verifying Domains through BIND as the resolver (and as the domain's DNS before it moves
 * to Zonekeeper: the TXT challenge is published there), and `zonekeeper server` answering. Both run as their service accounts with
 * the Helm chart's RBAC; the tenants are users with a namespace's edit rights on the Zonekeeper kinds.
 *
 * A squatter's zone, created first, is Accepted but not served; the namespace that proves control
 * of the domain (a TXT record in its current DNS) gets it served, and the squatter's zone stays
 * unprogrammed; the squatter's Domain is refused for the older claim even once its own token is
 * published; a tenant cannot write a Domain's status; when the proof goes, the zone stops answering.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type KubeCluster, type KubeUser, serviceAccountUser, startKube } from './support/kube.ts';
import { type RecursiveBind, startRecursiveBind } from './support/recursive-bind.ts';
import { type RdapStandIn, rdapDomain, startRdapStandIn } from './support/registration-stand-ins.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
const API = 'dns.zonekeeper.dev/v1alpha1';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const SQUATTER: KubeUser = { name: 'squatter', groups: ['system:authenticated'] };
const OWNER: KubeUser = { name: 'owner', groups: ['system:authenticated'] };

function docs(...objects: object[]): string {
  return objects.map((o) => `---\n${stringify(o)}`).join('');
}

const zone = (namespace: string, domainName: string, className: string) => ({
  apiVersion: API,
  kind: 'DNSZone',
  metadata: { name: domainName.replace(/[._]/g, '-').replace(/^-+/, ''), namespace },
  spec: { domainName, className },
});
const recordSet = (namespace: string, zoneName: string, name: string, type: string, records: string[]) => ({
  apiVersion: API,
  kind: 'DNSRecordSet',
  metadata: { name: `${name === '@' ? 'apex' : name}-${type.toLowerCase()}`, namespace },
  spec: { zoneRef: { name: zoneName }, name, type, records },
});
const domain = (namespace: string, domainName: string) => ({
  apiVersion: API,
  kind: 'Domain',
  metadata: { name: domainName.replace(/\./g, '-'), namespace },
  spec: { domainName },
});

interface Conditioned {
  metadata: { generation: number };
  status?: {
    verification?: { dnsRecord?: { name: string; content: string } };
    conditions?: {
      type: string;
      status: string;
      reason: string;
      message: string;
      observedGeneration?: number;
    }[];
  };
}

describe('zone squatting on a real API server', { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  let bind: RecursiveBind | undefined;
  let rdap: RdapStandIn | undefined;
  let operator: KubeProcess | undefined;
  let server: KubeProcess | undefined;

  const get = async (kind: string, ns: string, name: string): Promise<Conditioned | undefined> => {
    const r = await kube.kubectl(['get', kind, '-n', ns, name, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Conditioned) : undefined;
  };
  const condition = async (kind: string, ns: string, name: string, type: string) =>
    (await get(kind, ns, name))?.status?.conditions?.find((c) => c.type === type);
  const until = async (
    kind: string,
    ns: string,
    name: string,
    type: string,
    status: string,
    reason?: string,
  ) =>
    (
      await waitFor(
        async () => {
          const c = await condition(kind, ns, name, type);
          return c && c.status === status && (reason === undefined || c.reason === reason) ? c : undefined;
        },
        60_000,
        200,
      )
    ).value;
  const answer = async (name: string) => {
    const r = await dig(server!.dnsPort, name, 'A');
    return r.status === 'NOERROR' ? rdataOf(r, 'A') : r.status;
  };
  const events = async (namespace: string) =>
    (
      JSON.parse(await kube.kubectlOk(['get', 'events.events.k8s.io', '-n', namespace, '-o', 'json'])) as {
        items: { reason: string; type: string; note: string; regarding: { kind: string; name: string } }[];
      }
    ).items;
  /**
   * The domain's DNS as it is before it moves to Zonekeeper (BIND's root zone here, the stand-in for
   * the internet) publishes the TXT challenge tokens.
   */
  const publishTokens = (tokens: string[]) =>
    bind!.setRootRecords(tokens.map((t) => `_zonekeeper-challenge.example.test. IN TXT "${t}"`));

  before(async () => {
    kube = await startKube({ users: [OPERATOR, SERVER, SQUATTER, OWNER] });
    for (const ns of [SYSTEM, 'squatter', 'owner']) await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, { namespace: SYSTEM });
    const rbac = chartAccessDocs(rendered, { admission: false });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
    // Tenants: everything on the Zonekeeper kinds in their namespace, nothing on status.
    for (const [ns, user] of [
      ['squatter', SQUATTER],
      ['owner', OWNER],
    ] as const) {
      await kube.kubectlOk(['apply', '-f', '-'], {
        input: docs(
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'Role',
            metadata: { name: 'dns-editor', namespace: ns },
            rules: [
              {
                apiGroups: ['dns.zonekeeper.dev'],
                resources: ['domains', 'dnszones', 'dnsrecordsets'],
                verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
              },
            ],
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'RoleBinding',
            metadata: { name: 'dns-editor', namespace: ns },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'dns-editor' },
            subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user.name }],
          },
        ),
      });
    }
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: docs({
        apiVersion: API,
        kind: 'DNSZoneClass',
        metadata: { name: 'provider' },
        spec: {
          backend: { builtin: {} },
          nameServers: ['ns1.provider.test.'],
          requireVerifiedDomain: true,
        },
      }),
    });
    server = await startServerProcess('server', kube.kubeconfigFor(SERVER));
    bind = await startRecursiveBind({ rootRecords: [] });
    // The registry's RDAP server, a stand-in on loopback, with its bootstrap file.
    rdap = await startRdapStandIn(['test']);
    rdap.domains.set(
      'example.test',
      rdapDomain('example.test', {
        registrar: 'Stand-in Registrar, Inc.',
        expires: '2030-03-04T05:06:07Z',
        abuse: 'abuse@registrar.test',
      }),
    );
    operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM, [
      '--domain-resolver',
      `127.0.0.1:${bind.port}`,
      '--domain-delegation-port',
      String(bind.port),
      '--domain-lookup-timeout',
      '1s',
      '--domain-retry-schedule',
      '200ms/5s,500ms',
      '--domain-reconfirm-interval',
      '500ms',
      '--domain-http-timeout',
      '500ms',
      '--domain-registration=true',
      '--domain-rdap-bootstrap',
      rdap.bootstrapUrl,
      '--domain-whois-server',
      '127.0.0.1:1',
      '--domain-registration-interval',
      '10ms',
    ]);
  });

  after(async () => {
    await Promise.all([operator?.stop(), server?.stop()].map((p) => p?.catch(() => {})));
    if (process.env.KUBE_E2E_LOGS) {
      const { mkdir, writeFile } = await import('node:fs/promises');
      await mkdir(process.env.KUBE_E2E_LOGS, { recursive: true });
      for (const p of [operator, server])
        if (p) await writeFile(path.join(process.env.KUBE_E2E_LOGS, `${p.name}.log`), p.log());
    }
    await bind?.stop();
    await rdap?.close();
    await kube?.stop();
  });

  test('a squatter that claims first gets nothing served; the namespace that proves control does', async () => {
    const squatterConfig = kube.kubeconfigFor(SQUATTER);
    await kube.kubectlOk(['apply', '-f', '-'], {
      kubeconfig: squatterConfig,
      input: docs(
        zone('squatter', 'example.test', 'provider'),
        recordSet('squatter', 'example-test', 'www', 'A', ['198.51.100.66']),
        domain('squatter', 'example.test'),
      ),
    });
    const waiting = await until(
      'dnszone',
      'squatter',
      'example-test',
      'Programmed',
      'False',
      'DomainNotVerified',
    );
    assert.match(waiting.message, /not verified/);
    assert.equal((await condition('dnszone', 'squatter', 'example-test', 'Accepted'))?.status, 'True');
    await until('domain', 'squatter', 'example-test', 'VerifiedDNS', 'False', 'RecordNotFound');
    assert.equal(await answer('www.example.test'), 'REFUSED', 'not served');

    // Created a second later: the squatter's zone is the older one.
    await new Promise((r) => setTimeout(r, 1100));
    await kube.kubectlOk(['apply', '-f', '-'], {
      kubeconfig: kube.kubeconfigFor(OWNER),
      input: docs(
        zone('owner', 'example.test', 'provider'),
        recordSet('owner', 'example-test', 'www', 'A', ['192.0.2.1']),
        domain('owner', 'example.test'),
      ),
    });
    const ownerDomain = await waitFor(async () => {
      const d = await get('domain', 'owner', 'example-test');
      return d?.status?.verification?.dnsRecord ? d : undefined;
    }, 60_000);
    const record = ownerDomain.value.status!.verification!.dnsRecord!;
    assert.equal(record.name, '_zonekeeper-challenge.example.test');
    // Whoever controls the domain's DNS today publishes the owner's token.
    await publishTokens([record.content]);
    await until('domain', 'owner', 'example-test', 'Verified', 'True');
    await until('dnszone', 'owner', 'example-test', 'Ready', 'True');
    await waitFor(async () => {
      const a = await answer('www.example.test');
      return Array.isArray(a) && a.includes('192.0.2.1') ? a : undefined;
    }, 60_000);

    // The squatter's older zone does not keep the domain: it is not served.
    const conflict = await until('dnszone', 'squatter', 'example-test', 'Accepted', 'False', 'Conflict');
    assert.match(conflict.message, /already served by DNSZone owner\/example-test/);
    assert.deepEqual(await answer('www.example.test'), ['192.0.2.1']);
    const kinds = (await events('owner')).filter((e) => e.regarding.name === 'example-test');
    assert.ok(kinds.some((e) => e.reason === 'Verified' && e.regarding.kind === 'Domain'));
  });

  test("the squatter's Domain is refused while the owner's holds, even with its own token published", async () => {
    const squatterToken = (await get('domain', 'squatter', 'example-test'))!.status!.verification!.dnsRecord!
      .content;
    const ownerToken = (await get('domain', 'owner', 'example-test'))!.status!.verification!.dnsRecord!
      .content;
    await publishTokens([ownerToken, squatterToken]);
    await until('domain', 'squatter', 'example-test', 'VerifiedDNS', 'True');
    const refused = await until(
      'domain',
      'squatter',
      'example-test',
      'Verified',
      'False',
      'ClaimedByOtherNamespace',
    );
    assert.match(refused.message, /namespace owner/);
    assert.deepEqual(await answer('www.example.test'), ['192.0.2.1']);
    await waitFor(
      async () =>
        (await events('squatter')).some(
          (e) => e.reason === 'ClaimedByOtherNamespace' && e.regarding.kind === 'Domain',
        )
          ? true
          : undefined,
      30_000,
      200,
    );
  });

  test('registration data of the apex is in status.registration (RDAP stand-in)', async () => {
    const { value: registration } = await waitFor(
      async () =>
        (
          (await get('domain', 'owner', 'example-test'))?.status as {
            registration?: { registrar?: string; expires?: string; source?: string };
          }
        )?.registration,
      60_000,
      200,
    );
    assert.equal(registration.source, 'RDAP');
    assert.equal(registration.registrar, 'Stand-in Registrar, Inc.');
    assert.equal(registration.expires, '2030-03-04T05:06:07Z');
    assert.equal(
      (await condition('domain', 'owner', 'example-test', 'RegistrationExpiring'))?.status,
      'False',
    );
  });

  test('a tenant cannot write its Domain status', async () => {
    const r = await kube.kubectl(
      [
        'patch',
        'domain',
        '-n',
        'squatter',
        'example-test',
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({
          status: {
            conditions: [
              {
                type: 'Verified',
                status: 'True',
                reason: 'Verified',
                message: 'trust me',
                lastTransitionTime: new Date().toISOString(),
              },
            ],
          },
        }),
      ],
      { kubeconfig: kube.kubeconfigFor(SQUATTER) },
    );
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /forbidden/i);
  });

  test('when the proof goes, verification is lost (Event) and the zone stops answering', async () => {
    await publishTokens([]);
    const lost = await until('domain', 'owner', 'example-test', 'Verified', 'False', 'NotVerified');
    assert.match(lost.message, /is not published/);
    // Both zones wait now; the older (the squatter's) holds the domain again, and neither is served.
    await until('dnszone', 'owner', 'example-test', 'Ready', 'False');
    await waitFor(async () => ((await answer('www.example.test')) === 'REFUSED' ? true : undefined), 60_000);
    await waitFor(
      async () =>
        (await events('owner')).some((e) => e.reason === 'VerificationLost' && e.regarding.kind === 'Domain')
          ? true
          : undefined,
      30_000,
      200,
    );
  });
});
