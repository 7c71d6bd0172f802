/**
 * Domain verification per upstream cluster: three real API servers (two upstream, one downstream),
 * `zonekeeper operator --upstream-clusters` and `zonekeeper server` downstream as the chart's service
 * accounts, the upstreams reached with the shipped least-privilege RBAC, and BIND as the recursive
 * resolver (and the authority of a private root zone where the TXT challenges are published).
 *
 * A Domain created upstream is mirrored into its cluster's namespace and verified there; its token
 * and conditions come back upstream; once the token is published, the cluster's zone under a
 * requireVerifiedDomain class is served. The other cluster cannot use that verification: its zone
 * below the same domain stays unprogrammed, and its own Domain, even with its token published, is
 * refused for the older claim without the first cluster being named.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { mirrorNamespace } from '../src/sources/multicluster/mapping.ts';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type KubePlane, type KubeUser, type PlaneCluster, serviceAccountUser } from './support/kube.ts';
import {
  keepE2eLogs,
  prepareUpstreams,
  startMulticlusterPlane,
  startUpstreamOperator,
} from './support/multicluster.ts';
import { type RecursiveBind, startRecursiveBind } from './support/recursive-bind.ts';
import { type KubeProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const API = 'dns.zonekeeper.dev/v1alpha1';
const SYSTEM = 'zonekeeper-system';
const TEAM = 'team';
const REPLICATOR: KubeUser = { name: 'zonekeeper-replicator', groups: ['system:authenticated'] };
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');

const yamlDocs = (...docs: object[]) => docs.map((d) => `---\n${stringify(d)}`).join('');

const zone = (name: string, domainName: string) => ({
  apiVersion: API,
  kind: 'DNSZone',
  metadata: { name, namespace: TEAM },
  spec: { domainName, className: 'verified' },
});
const recordSet = (name: string, zoneName: string, address: string) => ({
  apiVersion: API,
  kind: 'DNSRecordSet',
  metadata: { name, namespace: TEAM },
  spec: { zoneRef: { name: zoneName }, name: 'www', type: 'A', records: [address] },
});
const domain = (name: string, domainName: string) => ({
  apiVersion: API,
  kind: 'Domain',
  metadata: { name, namespace: TEAM },
  spec: { domainName },
});

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
}
interface Obj {
  metadata: { generation?: number; finalizers?: string[]; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  status?: {
    observedGeneration?: number;
    conditions?: Condition[];
    verification?: { dnsRecord?: { name: string; type: string; content: string } };
    apex?: string;
  };
}

describe('multicluster: Domain verification per upstream cluster', { timeout: 900_000 }, () => {
  let plane: KubePlane;
  let down: PlaneCluster;
  let alpha: PlaneCluster;
  let beta: PlaneCluster;
  let folder: string;
  let bind: RecursiveBind;
  let operator: KubeProcess;
  let server: KubeProcess;

  const apply = (cluster: PlaneCluster, ...docs: object[]) =>
    cluster.kubectlOk(['apply', '-f', '-'], { input: yamlDocs(...docs) });
  const get = async (cluster: PlaneCluster, args: string[]): Promise<Obj | undefined> => {
    const r = await cluster.kubectl(['get', ...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Obj) : undefined;
  };
  const condition = (o: Obj | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);
  const until = async (
    cluster: PlaneCluster,
    args: string[],
    type: string,
    status: string,
    reason?: string,
  ) =>
    (
      await waitFor(
        async () => {
          const o = await get(cluster, args);
          const c = condition(o, type);
          return c && c.status === status && (reason === undefined || c.reason === reason) ? o : undefined;
        },
        90_000,
        200,
      )
    ).value;
  const answer = async (name: string) => {
    const r = await dig(server.dnsPort, name, 'A');
    return r.status === 'NOERROR' ? rdataOf(r, 'A').sort() : r.status;
  };
  const tokenOf = async (cluster: PlaneCluster) =>
    (
      await waitFor(
        async () =>
          (
            await get(cluster, ['domain', '-n', TEAM, 'example-test'])
          )?.status?.verification?.dnsRecord,
        90_000,
        200,
      )
    ).value;

  before(async () => {
    ({ plane, down, alpha, beta } = await startMulticlusterPlane([REPLICATOR, OPERATOR, SERVER], SYSTEM));
    const rendered = await renderChart(down.binDir, {
      namespace: SYSTEM,
      set: ['operator.upstreamClusters.enabled=true,operator.upstreamClusters.secretName=upstreams'],
    });
    const rbac = chartAccessDocs(rendered, { admission: true });
    await down.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
    await apply(down, {
      apiVersion: API,
      kind: 'DNSZoneClass',
      metadata: { name: 'verified' },
      spec: { backend: { builtin: {} }, nameServers: ['ns1.provider.test.'], requireVerifiedDomain: true },
    });
    folder = await prepareUpstreams([alpha, beta], REPLICATOR, TEAM);
    bind = await startRecursiveBind({ rootRecords: [] });
    server = await startServerProcess('server', down.kubeconfigFor(SERVER));
    operator = await startUpstreamOperator(down, OPERATOR, SYSTEM, folder, [
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
    ]);
  });

  after(async () => {
    await keepE2eLogs([operator, server]);
    await Promise.all([operator, server].filter(Boolean).map((p) => p.stop().catch(() => {})));
    await bind?.stop();
    await plane?.stop();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  test('a Domain is mirrored, its token and conditions come back, and verifying it serves the zone', async () => {
    await apply(alpha, domain('example-test', 'example.test'), zone('a-zone', 'a.example.test'));
    await apply(alpha, recordSet('www', 'a-zone', '192.0.2.1'));
    // The copy: in alpha's mirrored namespace, labelled with its origin, the spec as written.
    const { value: copy } = await waitFor(
      async () => get(down, ['domain', '-n', mirrorNamespace('alpha', TEAM), 'example-test']),
      90_000,
      200,
    );
    assert.equal(copy.metadata.labels?.['multicluster.zonekeeper.dev/cluster'], 'alpha');
    assert.equal(copy.metadata.labels?.['multicluster.zonekeeper.dev/namespace'], TEAM);
    assert.deepEqual(copy.spec, { domainName: 'example.test' });

    // Status back upstream: the token to publish and why it is not verified yet.
    const record = await tokenOf(alpha);
    assert.equal(record.name, '_zonekeeper-challenge.example.test');
    assert.equal(record.type, 'TXT');
    const downToken = (await get(down, ['domain', '-n', mirrorNamespace('alpha', TEAM), 'example-test']))
      ?.status?.verification?.dnsRecord?.content;
    assert.equal(record.content, downToken, 'the upstream shows the token the downstream copy checks');
    const notYet = await until(
      alpha,
      ['domain', '-n', TEAM, 'example-test'],
      'VerifiedDNS',
      'False',
      'RecordNotFound',
    );
    assert.equal(notYet.status?.apex, 'example.test');
    assert.equal(condition(notYet, 'Verified')?.status, 'False');
    assert.ok(notYet.metadata.finalizers?.includes('multicluster.zonekeeper.dev/finalizer'));
    await until(alpha, ['dnszone', '-n', TEAM, 'a-zone'], 'Programmed', 'False', 'DomainNotVerified');
    assert.equal(await answer('www.a.example.test'), 'REFUSED');

    // The token published in the domain's DNS: verified, the generation the upstream's.
    await bind.setRootRecords([`_zonekeeper-challenge.example.test. IN TXT "${record.content}"`]);
    const verified = await until(alpha, ['domain', '-n', TEAM, 'example-test'], 'Verified', 'True');
    assert.equal(verified.status?.observedGeneration, verified.metadata.generation);
    assert.equal(condition(verified, 'VerifiedDNS')?.status, 'True');
    await until(alpha, ['dnszone', '-n', TEAM, 'a-zone'], 'Ready', 'True');
    // Events follow the status upstream: the Domain's Verified Event, regarding the upstream Domain.
    await waitFor(
      async () => {
        const list = JSON.parse(
          await alpha.kubectlOk(['get', 'events.v1.events.k8s.io', '-n', TEAM, '-o', 'json']),
        ) as { items: { reason?: string; regarding?: { kind?: string; name?: string } }[] };
        return list.items.some(
          (e) =>
            e.reason === 'Verified' && e.regarding?.kind === 'Domain' && e.regarding.name === 'example-test',
        )
          ? true
          : undefined;
      },
      90_000,
      200,
    );
    await waitFor(async () => {
      const a = await answer('www.a.example.test');
      return Array.isArray(a) && a.includes('192.0.2.1') ? a : undefined;
    }, 90_000);
  });

  test('another cluster cannot use that Domain: its zone stays unprogrammed, its own Domain is refused', async () => {
    // beta's zone below the domain alpha verified, without a Domain of its own.
    await apply(beta, zone('b-zone', 'b.example.test'));
    await apply(beta, recordSet('www', 'b-zone', '192.0.2.66'));
    const waiting = await until(
      beta,
      ['dnszone', '-n', TEAM, 'b-zone'],
      'Programmed',
      'False',
      'DomainNotVerified',
    );
    assert.match(condition(waiting, 'Programmed')!.message, /namespace team\b/);
    assert.doesNotMatch(JSON.stringify(waiting.status), /alpha/);
    assert.equal(await answer('www.b.example.test'), 'REFUSED');

    // beta's own Domain for the same name, its token published too: refused for alpha's older
    // verified claim, which beta is not told the name of.
    await apply(beta, domain('example-test', 'example.test'));
    const alphaToken = (await tokenOf(alpha)).content;
    const betaToken = (await tokenOf(beta)).content;
    assert.notEqual(alphaToken, betaToken);
    await bind.setRootRecords(
      [alphaToken, betaToken].map((t) => `_zonekeeper-challenge.example.test. IN TXT "${t}"`),
    );
    await until(beta, ['domain', '-n', TEAM, 'example-test'], 'VerifiedDNS', 'True');
    const refused = await until(
      beta,
      ['domain', '-n', TEAM, 'example-test'],
      'Verified',
      'False',
      'ClaimedByOtherNamespace',
    );
    assert.match(condition(refused, 'Verified')!.message, /another cluster's object/);
    assert.doesNotMatch(JSON.stringify(refused.status), /alpha/);
    assert.equal(
      condition(await get(beta, ['dnszone', '-n', TEAM, 'b-zone']), 'Programmed')?.reason,
      'DomainNotVerified',
    );
    assert.equal(await answer('www.b.example.test'), 'REFUSED');
    // alpha's zone is still served.
    assert.deepEqual(await answer('www.a.example.test'), ['192.0.2.1']);

    // beta's unverified zone claimed nothing: alpha, whose Domain is verified, gets b.example.test
    // (and beta's zone is then refused for alpha's claim).
    await apply(alpha, zone('b-zone', 'b.example.test'), recordSet('b-www', 'b-zone', '192.0.2.11'));
    await waitFor(async () => {
      const a = await answer('www.b.example.test');
      return Array.isArray(a) && a.includes('192.0.2.11') ? a : undefined;
    }, 90_000);
    await until(beta, ['dnszone', '-n', TEAM, 'b-zone'], 'Accepted', 'False', 'ClaimedByAnotherCluster');
  });

  test('deleting an upstream Domain deletes its copy, then releases the upstream finalizer', async () => {
    await beta.kubectlOk(['delete', 'domain', '-n', TEAM, 'example-test', '--wait=false']);
    await waitFor(
      async () =>
        (await get(down, ['domain', '-n', mirrorNamespace('beta', TEAM), 'example-test'])) ? undefined : true,
      90_000,
      200,
    );
    await waitFor(
      async () => ((await get(beta, ['domain', '-n', TEAM, 'example-test'])) ? undefined : true),
      90_000,
      200,
    );
  });
});
