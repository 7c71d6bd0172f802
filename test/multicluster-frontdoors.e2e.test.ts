/**
 * Front-door kinds across clusters: ExternalDNS's DNSEndpoint, Datum's DNSZone and DNSRecordSet,
 * Gardener's DNSRecord, kubizone's Zone and Record and the homelab operator's DNSRecord written in
 * upstream clusters, mirrored by `zonekeeper operator --upstream-clusters` into the
 * serving cluster and answered by `zonekeeper server` there. Three real API servers on one etcd
 * (alpha and beta upstream, down downstream), the upstreams reached with the shipped upstream role,
 * the downstream processes as the chart's service accounts.
 *
 * beta has no Datum CRDs at first: the kinds hold nothing there (no error storm, its other kinds are
 * mirrored); once they are installed they are read, and a Datum zone of beta for a domain alpha
 * holds is refused in Datum's status shape.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { mirrorClassName, mirrorNamespace } from '../src/sources/multicluster/mapping.ts';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type KubePlane, type KubeUser, type PlaneCluster, serviceAccountUser } from './support/kube.ts';
import {
  keepE2eLogs,
  prepareUpstreams,
  startMulticlusterPlane,
  startUpstreamOperator,
} from './support/multicluster.ts';
import { type KubeProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const ZK = 'dns.zonekeeper.dev/v1alpha1';
const DATUM = 'dns.networking.miloapis.com';
const SYSTEM = 'zonekeeper-system';
const TEAM = 'team';
const REPLICATOR: KubeUser = { name: 'zonekeeper-replicator', groups: ['system:authenticated'] };
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const ROOT = path.join(import.meta.dirname, '..');

const yamlDocs = (...docs: object[]) => docs.map((d) => `---\n${stringify(d)}`).join('');

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
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

const datumZone = (name: string, domainName: string) => ({
  apiVersion: `${DATUM}/v1alpha1`,
  kind: 'DNSZone',
  metadata: { name, namespace: TEAM },
  spec: { domainName },
});
const datumRecordSet = (name: string, zoneName: string, owner: string, address: string) => ({
  apiVersion: `${DATUM}/v1alpha1`,
  kind: 'DNSRecordSet',
  metadata: { name, namespace: TEAM },
  spec: {
    dnsZoneRef: { name: zoneName },
    recordType: 'A',
    records: [{ name: owner, a: { content: address } }],
  },
});

describe('multicluster: front-door kinds (DNSEndpoint, Datum, Gardener, kubizone, homelab) from upstream clusters', {
  timeout: 900_000,
}, () => {
  let plane: KubePlane;
  let down: PlaneCluster;
  let alpha: PlaneCluster;
  let beta: PlaneCluster;
  let folder: string;
  let operator: KubeProcess;
  let server: KubeProcess;

  const apply = (cluster: PlaneCluster, ...docs: object[]) =>
    cluster.kubectlOk(['apply', '-f', '-'], { input: yamlDocs(...docs) });
  const get = async (cluster: PlaneCluster, args: string[]): Promise<Obj | undefined> => {
    const r = await cluster.kubectl(['get', ...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Obj) : undefined;
  };
  const condition = (o: Obj | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);
  const answersWith = (name: string, expected: string[]) =>
    waitFor(
      async () => {
        const got = rdataOf(await dig(server.dnsPort, name, 'A'), 'A').sort();
        return JSON.stringify(got) === JSON.stringify(expected) ? got : undefined;
      },
      90_000,
      100,
    );
  const installDatumCrds = async (cluster: PlaneCluster) => {
    for (const plural of ['dnszoneclasses', 'dnszones', 'dnsrecordsets'])
      await cluster.kubectlOk([
        'apply',
        '--server-side',
        '-f',
        path.join(ROOT, `deploy/crds/${DATUM}_${plural}.yaml`),
      ]);
    await cluster.kubectlOk([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      `crd/dnszones.${DATUM}`,
      `crd/dnsrecordsets.${DATUM}`,
    ]);
  };

  before(async () => {
    ({ plane, down, alpha, beta } = await startMulticlusterPlane([REPLICATOR, OPERATOR, SERVER], SYSTEM));
    const rendered = await renderChart(down.binDir, {
      namespace: SYSTEM,
      set: ['operator.upstreamClusters.enabled=true,operator.upstreamClusters.secretName=upstreams'],
    });
    const rbac = chartAccessDocs(rendered, { admission: false });
    await down.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
    await apply(down, {
      apiVersion: ZK,
      kind: 'DNSZoneClass',
      metadata: { name: 'builtin' },
      spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.', 'ns2.example.net.'] },
    });
    // Downstream serves Datum's kinds; alpha has their CRDs, beta not (yet).
    await installDatumCrds(down);
    await installDatumCrds(alpha);
    folder = await prepareUpstreams([alpha, beta], REPLICATOR, TEAM);
    operator = await startUpstreamOperator(down, OPERATOR, SYSTEM, folder);
    server = await startServerProcess('server', down.kubeconfigFor(SERVER));
  });

  after(async () => {
    await keepE2eLogs([operator, server]);
    await Promise.all([operator, server].filter(Boolean).map((p) => p.stop().catch(() => {})));
    await plane?.stop();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  test('an upstream DNSEndpoint is mirrored and answered; its observedGeneration comes back', async () => {
    await apply(alpha, {
      apiVersion: ZK,
      kind: 'DNSZone',
      metadata: { name: 'a-zone', namespace: TEAM },
      spec: { domainName: 'a.example', className: 'builtin' },
    });
    const endpoint = (address: string) => ({
      apiVersion: 'externaldns.k8s.io/v1alpha1',
      kind: 'DNSEndpoint',
      metadata: { name: 'web', namespace: TEAM },
      spec: { endpoints: [{ dnsName: 'web.a.example', recordType: 'A', targets: [address] }] },
    });
    await apply(alpha, endpoint('192.0.2.1'));
    await answersWith('web.a.example.', ['192.0.2.1']);
    const copy = await get(down, [
      'dnsendpoints.externaldns.k8s.io',
      '-n',
      mirrorNamespace('alpha', TEAM),
      'web',
    ]);
    assert.equal(copy?.metadata.labels?.['multicluster.zonekeeper.dev/cluster'], 'alpha');
    await apply(alpha, endpoint('192.0.2.2'));
    await answersWith('web.a.example.', ['192.0.2.2']);
    const { value: up } = await waitFor(
      async () => {
        const o = await get(alpha, ['dnsendpoints.externaldns.k8s.io', '-n', TEAM, 'web']);
        return o?.metadata.generation === 2 && o.status?.observedGeneration === 2 ? o : undefined;
      },
      90_000,
      200,
    );
    assert.ok(up.metadata.finalizers?.includes('multicluster.zonekeeper.dev/finalizer'));
    assert.deepEqual(
      Object.keys(up.status ?? {}),
      ['observedGeneration'],
      "the status keeps DNSEndpoint's shape",
    );
  });

  test('Datum zones and record sets upstream are answered; their status comes back in Datum’s shape', async () => {
    await apply(alpha, datumZone('d-zone', 'd.example'));
    await apply(alpha, datumRecordSet('d-www', 'd-zone', 'www', '192.0.2.10'));
    await answersWith('www.d.example.', ['192.0.2.10']);
    const { value: zone } = await waitFor(
      async () => {
        const o = await get(alpha, [`dnszones.${DATUM}`, '-n', TEAM, 'd-zone']);
        const c = condition(o, 'Accepted');
        return c?.status === 'True' && c.observedGeneration === o?.metadata.generation ? o : undefined;
      },
      90_000,
      200,
    );
    assert.equal(zone.status?.observedGeneration, undefined, 'Datum zones have no status.observedGeneration');
    assert.ok(zone.metadata.finalizers?.includes('multicluster.zonekeeper.dev/finalizer'));
    await waitFor(
      async () => {
        const o = await get(alpha, [`dnsrecordsets.${DATUM}`, '-n', TEAM, 'd-www']);
        return condition(o, 'Programmed')?.status === 'True' ? o : undefined;
      },
      90_000,
      200,
    );
  });

  test('an upstream without the Datum CRDs: nothing of them, no error storm, its other kinds mirrored', async () => {
    await apply(beta, {
      apiVersion: ZK,
      kind: 'DNSZone',
      metadata: { name: 'b-zone', namespace: TEAM },
      spec: { domainName: 'b.example', className: 'builtin' },
    });
    await apply(beta, {
      apiVersion: 'externaldns.k8s.io/v1alpha1',
      kind: 'DNSEndpoint',
      metadata: { name: 'web', namespace: TEAM },
      spec: { endpoints: [{ dnsName: 'web.b.example', recordType: 'A', targets: ['192.0.2.20'] }] },
    });
    await answersWith('web.b.example.', ['192.0.2.20']);
    const log = operator.log();
    assert.match(log, /upstream beta DNSZone\.dns\.networking\.miloapis\.com: not installed/);
    assert.doesNotMatch(log, /upstream beta DNS\w+\.dns\.networking\.miloapis\.com: list\/watch failed/);
  });

  test('Datum CRDs installed later are read; a Datum zone of a domain another cluster holds is refused, in Datum’s shape', async () => {
    await installDatumCrds(beta);
    await apply(beta, datumZone('d-zone', 'd.example'));
    await apply(beta, datumRecordSet('d-www', 'd-zone', 'www', '192.0.2.66'));
    const { value: lost } = await waitFor(
      async () => {
        const o = await get(beta, [`dnszones.${DATUM}`, '-n', TEAM, 'd-zone']);
        return condition(o, 'Accepted')?.reason === 'ClaimedByAnotherCluster' ? o : undefined;
      },
      90_000,
      200,
    );
    assert.equal(condition(lost, 'Accepted')?.status, 'False');
    assert.doesNotMatch(condition(lost, 'Accepted')!.message, /alpha/);
    assert.equal(condition(lost, 'Ready'), undefined, 'Datum zones have no Ready condition');
    assert.deepEqual(
      rdataOf(await dig(server.dnsPort, 'www.d.example.', 'A'), 'A'),
      ['192.0.2.10'],
      "alpha's zone is still the one served",
    );
  });

  test("hostile upstream: a DNSEndpoint or Datum record set of one cluster reaches nothing of another's zones", async () => {
    // beta publishes names inside alpha's zones: a DNSEndpoint for a.example, a Datum record set naming
    // the zone d-zone (which in beta's namespace is beta's own refused zone, not alpha's).
    await apply(beta, {
      apiVersion: 'externaldns.k8s.io/v1alpha1',
      kind: 'DNSEndpoint',
      metadata: { name: 'evil', namespace: TEAM },
      spec: { endpoints: [{ dnsName: 'evil.a.example', recordType: 'A', targets: ['198.51.100.1'] }] },
    });
    await apply(beta, datumRecordSet('d-evil', 'd-zone', 'evil', '198.51.100.2'));
    // Both are mirrored into beta's own namespace (the copies exist), and judged there.
    await waitFor(
      async () =>
        (await get(down, ['dnsendpoints.externaldns.k8s.io', '-n', mirrorNamespace('beta', TEAM), 'evil']))
          ? true
          : undefined,
      90_000,
      200,
    );
    await waitFor(
      async () => {
        const o = await get(beta, ['dnsendpoints.externaldns.k8s.io', '-n', TEAM, 'evil']);
        return o?.status?.observedGeneration === o?.metadata.generation ? o : undefined;
      },
      90_000,
      200,
    );
    // alpha's zone of a.example answers for its own names only; d.example keeps alpha's record.
    await answersWith('web.a.example.', ['192.0.2.2']);
    assert.deepEqual(rdataOf(await dig(server.dnsPort, 'evil.a.example.', 'A'), 'A'), []);
    assert.deepEqual(rdataOf(await dig(server.dnsPort, 'evil.d.example.', 'A'), 'A'), []);
    assert.deepEqual(rdataOf(await dig(server.dnsPort, 'www.d.example.', 'A'), 'A'), ['192.0.2.10']);
    await beta.kubectlOk(['delete', 'dnsendpoints.externaldns.k8s.io', '-n', TEAM, 'evil', '--wait=false']);
  });

  test('Gardener DNSRecords of the zonekeeper type are mirrored and answered; other types are not touched; no cross-cluster zone', async () => {
    const GARDENER = 'dnsrecords.extensions.gardener.cloud';
    const record = (name: string, dnsName: string, address: string, extra: object = {}) => ({
      apiVersion: 'extensions.gardener.cloud/v1alpha1',
      kind: 'DNSRecord',
      metadata: { name, namespace: TEAM },
      spec: {
        type: 'zonekeeper',
        secretRef: { name: 'unused', namespace: TEAM },
        name: dnsName,
        recordType: 'A',
        values: [address],
        ...extra,
      },
    });
    await apply(
      alpha,
      record('g-www', 'g.a.example', '192.0.2.40', { zone: `${TEAM}/a-zone` }),
      // Another extension's record: left alone.
      record('other', 'other.a.example', '192.0.2.41', { type: 'aws-route53' }),
    );
    await answersWith('g.a.example.', ['192.0.2.40']);
    const { value: up } = await waitFor(
      async () => {
        const o = (await get(alpha, [GARDENER, '-n', TEAM, 'g-www'])) as
          | (Obj & { status?: { zone?: string } })
          | undefined;
        return o?.status?.observedGeneration === o?.metadata.generation && o?.status?.zone ? o : undefined;
      },
      90_000,
      200,
    );
    assert.equal(up.status?.zone, `${TEAM}/a-zone`, 'the zone named in the upstream namespace');
    assert.ok(up.metadata.finalizers?.includes('multicluster.zonekeeper.dev/finalizer'));
    const copy = await get(down, [GARDENER, '-n', mirrorNamespace('alpha', TEAM), 'g-www']);
    assert.equal(
      (copy?.spec as { zone?: string } | undefined)?.zone,
      `${mirrorNamespace('alpha', TEAM)}/a-zone`,
    );
    assert.equal(
      (copy?.spec as { secretRef?: { namespace?: string } } | undefined)?.secretRef?.namespace,
      mirrorNamespace('alpha', TEAM),
    );
    const other = await get(alpha, [GARDENER, '-n', TEAM, 'other']);
    assert.equal(other?.metadata.finalizers, undefined, "another extension's record gets no finalizer");
    assert.equal(await get(down, [GARDENER, '-n', mirrorNamespace('alpha', TEAM), 'other']), undefined);
    assert.deepEqual(rdataOf(await dig(server.dnsPort, 'other.a.example.', 'A'), 'A'), []);

    // beta names alpha's zone as "team/a-zone" (its own namespace team: no such zone there), and lets
    // a second record find its zone itself: neither is published in alpha's zone.
    await apply(
      beta,
      record('g-evil', 'evil-g.a.example', '198.51.100.3', { zone: `${TEAM}/a-zone` }),
      record('g-auto', 'auto-g.a.example', '198.51.100.4'),
    );
    for (const name of ['g-evil', 'g-auto'])
      await waitFor(
        async () => {
          const o = await get(beta, [GARDENER, '-n', TEAM, name]);
          return o?.status?.observedGeneration === o?.metadata.generation ? o : undefined;
        },
        90_000,
        200,
      );
    for (const name of ['g-evil', 'g-auto']) {
      const o = (await get(beta, [GARDENER, '-n', TEAM, name])) as Obj & { status?: { zone?: string } };
      assert.equal(o.status?.zone, undefined, `${name}: no zone of another cluster`);
      assert.doesNotMatch(JSON.stringify(o.status ?? {}), /alpha/);
    }
    assert.deepEqual(rdataOf(await dig(server.dnsPort, 'evil-g.a.example.', 'A'), 'A'), []);
    assert.deepEqual(rdataOf(await dig(server.dnsPort, 'auto-g.a.example.', 'A'), 'A'), []);
    await answersWith('g.a.example.', ['192.0.2.40']);
  });

  test('kubizone Zones and Records are mirrored and answered; an empty delegation namespace list admits the same cluster only', async () => {
    const KZ = 'kubi.zone/v1alpha1';
    const zone = (domainName: string, extra: object = {}) => ({
      apiVersion: KZ,
      kind: 'Zone',
      metadata: { name: 'k-zone', namespace: TEAM },
      spec: {
        domainName,
        delegations: [{ namespaces: [], records: [{ pattern: '*' }], zones: ['sub'] }],
        ...extra,
      },
    });
    const record = (name: string, namespace: string, spec: object) => ({
      apiVersion: KZ,
      kind: 'Record',
      metadata: { name, namespace },
      spec: { type: 'A', ...spec },
    });
    const ready = (o: Obj | undefined) => condition(o, 'Ready');
    // alpha: a Zone admitting every namespace, then a Record in a namespace it has not seen yet, and
    // one by zoneRef in the Zone's own namespace.
    await apply(alpha, zone('k.example.'));
    await alpha.kubectlOk(['create', 'namespace', 'web']);
    await apply(
      alpha,
      record('www', 'web', { domainName: 'www.k.example.', rdata: '192.0.2.50' }),
      record('api', TEAM, { domainName: 'api', zoneRef: { name: 'k-zone' }, rdata: '192.0.2.51' }),
    );
    await answersWith('www.k.example.', ['192.0.2.50']);
    await answersWith('api.k.example.', ['192.0.2.51']);
    const copy = await get(down, ['zones.kubi.zone', '-n', mirrorNamespace('alpha', TEAM), 'k-zone']);
    const listed = ((copy?.spec?.delegations ?? []) as { namespaces: string[] }[])[0]?.namespaces ?? [];
    assert.ok(
      listed.includes(mirrorNamespace('alpha', 'web')) && listed.includes(mirrorNamespace('alpha', TEAM)),
    );
    assert.ok(
      listed.every((ns) => ns.startsWith('alpha--')),
      'only alpha’s namespaces are listed',
    );
    const { value: up } = await waitFor(
      async () => {
        const o = (await get(alpha, ['zones.kubi.zone', '-n', TEAM, 'k-zone'])) as
          | (Obj & { status?: { fqdn?: string; serial?: number } })
          | undefined;
        const r = ready(o);
        return r?.status === 'True' && r.observedGeneration === o?.metadata.generation ? o : undefined;
      },
      90_000,
      200,
    );
    assert.equal(up.status?.fqdn, 'k.example.');
    assert.ok(up.metadata.finalizers?.includes('multicluster.zonekeeper.dev/finalizer'));
    const { value: www } = await waitFor(
      async () => {
        const o = (await get(alpha, ['records.kubi.zone', '-n', 'web', 'www'])) as
          | (Obj & { status?: { fqdn?: string } })
          | undefined;
        return ready(o)?.status === 'True' ? o : undefined;
      },
      90_000,
      200,
    );
    assert.equal(www.status?.fqdn, 'www.k.example.');

    // beta: Records with names in alpha's zone, from a namespace of the same name and by zoneRef to
    // "team/k-zone" (beta's own team namespace, where alpha's Zone is not); a Zone of alpha's domain.
    await beta.kubectlOk(['create', 'namespace', 'web']);
    await apply(
      beta,
      record('evil', 'web', { domainName: 'evil.k.example.', rdata: '198.51.100.5' }),
      record('evil-ref', 'web', {
        domainName: 'evil2',
        zoneRef: { name: 'k-zone', namespace: TEAM },
        rdata: '198.51.100.6',
      }),
    );
    for (const name of ['evil', 'evil-ref']) {
      const { value: o } = await waitFor(
        async () => {
          const r = await get(beta, ['records.kubi.zone', '-n', 'web', name]);
          return ready(r)?.status === 'False' ? r : undefined;
        },
        90_000,
        200,
      );
      assert.doesNotMatch(JSON.stringify(o.status ?? {}), /alpha/, `${name}: no name of alpha's`);
    }
    assert.deepEqual(rdataOf(await dig(server.dnsPort, 'evil.k.example.', 'A'), 'A'), []);
    assert.deepEqual(rdataOf(await dig(server.dnsPort, 'evil2.k.example.', 'A'), 'A'), []);
    await apply(beta, zone('k.example.'));
    const { value: lost } = await waitFor(
      async () => {
        const o = await get(beta, ['zones.kubi.zone', '-n', TEAM, 'k-zone']);
        return ready(o)?.reason === 'ClaimedByAnotherCluster' ? o : undefined;
      },
      90_000,
      200,
    );
    assert.equal(ready(lost)?.status, 'False');
    assert.equal(
      await get(down, ['zones.kubi.zone', '-n', mirrorNamespace('beta', TEAM), 'k-zone']),
      undefined,
    );
    // Still alpha's records only.
    await answersWith('www.k.example.', ['192.0.2.50']);
    assert.deepEqual(rdataOf(await dig(server.dnsPort, 'evil.k.example.', 'A'), 'A'), []);

    // A partial Zone under alpha's Zone (zoneRef): mirrored, its domain claimed through its parent,
    // answered; beta's fully qualified Zone of that domain loses the claim.
    await apply(
      alpha,
      {
        apiVersion: KZ,
        kind: 'Zone',
        metadata: { name: 'k-sub', namespace: TEAM },
        spec: {
          domainName: 'sub',
          zoneRef: { name: 'k-zone' },
          delegations: [{ records: [{ pattern: '*' }] }],
        },
      },
      record('sub-www', TEAM, { domainName: 'www', zoneRef: { name: 'k-sub' }, rdata: '192.0.2.52' }),
    );
    await answersWith('www.sub.k.example.', ['192.0.2.52']);
    await waitFor(
      async () => {
        const o = (await get(alpha, ['zones.kubi.zone', '-n', TEAM, 'k-sub'])) as
          | (Obj & { status?: { fqdn?: string } })
          | undefined;
        return ready(o)?.status === 'True' && o?.status?.fqdn === 'sub.k.example.' ? o : undefined;
      },
      90_000,
      200,
    );
    await apply(beta, { ...zone('sub.k.example.'), metadata: { name: 'k-sub', namespace: TEAM } });
    await waitFor(
      async () => {
        const o = await get(beta, ['zones.kubi.zone', '-n', TEAM, 'k-sub']);
        return ready(o)?.reason === 'ClaimedByAnotherCluster' ? o : undefined;
      },
      90_000,
      200,
    );
    await answersWith('www.sub.k.example.', ['192.0.2.52']);

    // A partial Zone whose parent is not in its cluster: refused, saying so, and not mirrored.
    await apply(alpha, {
      apiVersion: KZ,
      kind: 'Zone',
      metadata: { name: 'k-orphan', namespace: TEAM },
      spec: { domainName: 'orphan', zoneRef: { name: 'no-such-zone' }, delegations: [] },
    });
    const { value: orphan } = await waitFor(
      async () => {
        const o = await get(alpha, ['zones.kubi.zone', '-n', TEAM, 'k-orphan']);
        return ready(o)?.reason === 'NoFqdn' ? o : undefined;
      },
      90_000,
      200,
    );
    assert.match(ready(orphan)!.message, /no-such-zone/);
    assert.equal(
      await get(down, ['zones.kubi.zone', '-n', mirrorNamespace('alpha', TEAM), 'k-orphan']),
      undefined,
    );
  });

  test("hostile upstream: a homelab DNSRecord reaches only its own cluster's DNSClasses", async () => {
    const HL = 'dnsrecords.dns.homelab.mortenolsen.pro';
    // The serving cluster's administrators made a class for alpha only (its provider is unreachable:
    // what matters is which class each record is pushed through).
    await apply(down, {
      apiVersion: 'dns.homelab.mortenolsen.pro/v1alpha1',
      kind: 'DNSClass',
      metadata: { name: mirrorClassName('alpha', 'zk') },
      spec: { server: 'http://127.0.0.1:9' },
    });
    const record = (name: string) => ({
      apiVersion: 'dns.homelab.mortenolsen.pro/v1alpha1',
      kind: 'DNSRecord',
      metadata: { name, namespace: TEAM },
      spec: {
        type: 'A',
        domain: 'k.example',
        subdomain: name,
        dnsClassRef: { name: 'zk' },
        values: ['192.0.2.60'],
      },
    });
    await apply(alpha, record('h-own'));
    await apply(beta, record('h-evil'));
    const settled = (cluster: PlaneCluster, name: string) =>
      waitFor(
        async () => {
          const o = (await get(cluster, [HL, '-n', TEAM, name])) as
            | (Obj & { status?: { error?: { code?: string; message?: string }; state?: string } })
            | undefined;
          return o?.status?.observedGeneration === o?.metadata.generation && o?.status?.error ? o : undefined;
        },
        90_000,
        200,
      );
    const { value: own } = await settled(alpha, 'h-own');
    assert.notEqual(own.status?.error?.code, 'DNS_CLASS_NOT_FOUND', 'alpha’s record reaches alpha’s class');
    const { value: evil } = await settled(beta, 'h-evil');
    assert.equal(evil.status?.error?.code, 'DNS_CLASS_NOT_FOUND');
    assert.equal(condition(evil, 'Ready')?.reason, 'DNSClassNotFound');
    assert.match(evil.status?.error?.message ?? '', new RegExp(mirrorClassName('beta', 'zk')));
    assert.doesNotMatch(JSON.stringify(evil.status), /alpha/);
    const copy = await get(down, [HL, '-n', mirrorNamespace('beta', TEAM), 'h-evil']);
    assert.deepEqual(copy?.spec?.dnsClassRef, { name: mirrorClassName('beta', 'zk') });
    for (const [cluster, name] of [
      [alpha, 'h-own'],
      [beta, 'h-evil'],
    ] as const)
      await cluster.kubectlOk(['delete', HL, '-n', TEAM, name, '--wait=false']);
  });

  test('deleting an upstream DNSEndpoint removes its answers, then releases the upstream object', async () => {
    await alpha.kubectlOk(['delete', 'dnsendpoints.externaldns.k8s.io', '-n', TEAM, 'web', '--wait=false']);
    await waitFor(
      async () =>
        (await dig(server.dnsPort, 'web.a.example.', 'A')).status === 'NXDOMAIN' ? true : undefined,
      90_000,
      200,
    );
    await waitFor(
      async () =>
        (await get(alpha, ['dnsendpoints.externaldns.k8s.io', '-n', TEAM, 'web'])) ? undefined : true,
      90_000,
      200,
    );
  });
});
