/**
 * Datum's DNS API (`dns.networking.miloapis.com/v1alpha1`) on a real control plane: the generated CRDs
 * installed in kube-apiserver beside Zonekeeper's own kinds of the same names, Datum's example
 * manifests applied unchanged, `zonekeeper operator` and `zonekeeper server` running as their service
 * accounts with the chart's default RBAC. Each kind created, changed and deleted (finalizers), the
 * selectable fields, a conflict with a Zonekeeper DNSRecordSet in the same zone (the oldest wins, the
 * loser says so in Datum's status shape), hostile record sets refused; every answer by dig.
 * Resource names are always fully qualified: `dnszones` alone would be ambiguous.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type KubeCluster, serviceAccountUser, startKube } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { ROOT, waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const UPSTREAM = path.join(ROOT, 'test/support/datum-upstream');
const G = 'dns.networking.miloapis.com';
const ZK = 'dns.zonekeeper.dev';
const API = `${G}/v1alpha1`;

interface Cond {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
}
interface Json {
  metadata: { name: string; generation?: number; finalizers?: string[] };
  status?: {
    nameservers?: string[];
    recordCount?: number;
    conditions?: Cond[];
    recordSets?: { name: string; conditions?: Cond[] }[];
  };
}

function recordSet(namespace: string, name: string, zoneName: string, records: Record<string, unknown>[]) {
  return {
    apiVersion: API,
    kind: 'DNSRecordSet',
    metadata: { name, namespace },
    spec: { dnsZoneRef: { name: zoneName }, recordType: 'A', records },
  };
}

const yaml = (...objects: object[]) => objects.map((o) => `---\n${stringify(o)}`).join('');

describe("Datum's DNS API on a real API server", { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  let operator: KubeProcess | undefined;
  let server: KubeProcess | undefined;

  const get = async (resource: string, ns: string | undefined, name: string): Promise<Json | undefined> => {
    const r = await kube.kubectl(['get', `${resource}.${G}`, ...(ns ? ['-n', ns] : []), name, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const cond = (o: Json | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);
  const answers = async (name: string, type = 'A') =>
    rdataOf(await dig(server!.dnsPort, name, type), type)
      .sort()
      .join(',');
  const until = <T>(probe: () => Promise<T | undefined>) => waitFor(probe, 30_000, 100);

  before(async () => {
    kube = await startKube({ users: [OPERATOR, SERVER] });
    for (const ns of [SYSTEM, 'tenant']) await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, { namespace: SYSTEM });
    const rbac = chartAccessDocs(rendered, { admission: false });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
    // Zonekeeper's own class (the only one, so the default), with name servers outside example.com.
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: yaml({
        apiVersion: `${ZK}/v1alpha1`,
        kind: 'DNSZoneClass',
        metadata: { name: 'builtin' },
        spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.', 'ns2.example.net.'] },
      }),
    });
    // The operator and the server start before Datum's CRDs exist (the chart does not install them):
    // the kinds hold nothing until they are applied, then are read.
    operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM);
    server = await startServerProcess('server', kube.kubeconfigFor(SERVER));
    for (const plural of ['dnszoneclasses', 'dnszones', 'dnsrecordsets'])
      await kube.kubectlOk([
        'apply',
        '--server-side',
        '-f',
        path.join(ROOT, `deploy/crds/${G}_${plural}.yaml`),
      ]);
    for (const plural of ['dnszoneclasses', 'dnszones', 'dnsrecordsets'])
      await kube.kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', `crd/${plural}.${G}`]);
    // Datum's examples, unchanged, into namespace default.
    for (const file of [
      'dns_v1alpha1_dnszoneclass.yaml',
      'dns_v1alpha1_dnszone.yaml',
      'dns_v1alpha1_dnsrecordset.yaml',
    ])
      await kube.kubectlOk(['apply', '-f', path.join(UPSTREAM, file)]);
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

  test("Datum's examples: served with the class's default TTL; statuses, finalizers and selectable fields", async () => {
    // The processes list Datum's kinds again a while after their CRDs appear: a longer bound here.
    await waitFor(
      async () => ((await answers('www.example.com')) === '10.0.0.1' ? true : undefined),
      120_000,
      200,
    );
    const a = await dig(server!.dnsPort, 'www.example.com', 'A');
    assert.match(a.answer[0]!, /^www\.example\.com\. 300 IN A 10\.0\.0\.1$/);
    const { value: zone } = await until(async () => {
      const z = await get('dnszones', 'default', 'example-com');
      return cond(z, 'Programmed')?.status === 'True' && z?.status?.recordCount === 1 ? z : undefined;
    });
    assert.equal(cond(zone, 'Accepted')?.reason, 'Accepted');
    assert.deepEqual(zone.status?.nameservers, ['ns1.example.net', 'ns2.example.net']);
    assert.deepEqual(zone.metadata.finalizers, [`${G}/finalize-dnszone`]);
    // The apex NS served are those of the Zonekeeper class; the Datum class says its own list differs.
    assert.equal(await answers('example.com', 'NS'), 'ns1.example.net.,ns2.example.net.');
    const { value: cls } = await until(async () => {
      const c = await get('dnszoneclasses', undefined, 'powerdns-static');
      return cond(c, 'Programmed') ? c : undefined;
    });
    assert.equal(cond(cls, 'Accepted')?.status, 'True');
    assert.match(cond(cls, 'Accepted')!.message, /DNSZoneClass builtin \(dns\.zonekeeper\.dev\)/);
    assert.equal(cond(cls, 'Programmed')?.reason, 'NameServersDiffer');
    assert.equal(cls.metadata.finalizers, undefined);
    const { value: rs } = await until(async () => {
      const r = await get('dnsrecordsets', 'default', 'www-example-com');
      return cond(r, 'Programmed')?.status === 'True' ? r : undefined;
    });
    assert.deepEqual(rs.metadata.finalizers, [`${G}/finalize-dnsrecordset`]);
    assert.equal(cond(rs, 'Accepted')?.observedGeneration, 1);
    assert.deepEqual(
      rs.status?.recordSets?.map((r) => [
        r.name,
        r.conditions?.map((c) => `${c.type}=${c.status}`).join(','),
      ]),
      [['www', 'Accepted=True,Programmed=True']],
    );
    // Datum's selectable fields, and its printer columns, on the fully qualified resources.
    const byDomain = await kube.kubectlOk([
      'get',
      `dnszones.${G}`,
      '-A',
      '--field-selector',
      'spec.domainName=example.com',
      '-o',
      'name',
    ]);
    assert.equal(byDomain.trim(), `dnszone.${G}/example-com`);
    const byZone = await kube.kubectlOk([
      'get',
      `dnsrecordsets.${G}`,
      '--field-selector',
      'spec.dnsZoneRef.name=example-com,spec.recordType=A',
      '-o',
      'name',
    ]);
    assert.equal(byZone.trim(), `dnsrecordset.${G}/www-example-com`);
    const none = await kube.kubectlOk([
      'get',
      `dnsrecordsets.${G}`,
      '--field-selector',
      'spec.recordType=TXT',
      '-o',
      'name',
    ]);
    assert.equal(none.trim(), '');
    const table = await kube.kubectlOk(['get', `dnszones.${G}`, 'example-com']);
    assert.match(table, /NAME\s+ACCEPTED\s+PROGRAMMED\s+RECORDS/);
    // Zonekeeper's own kinds of the same names are apart: no Zonekeeper DNSZone was written.
    const native = await kube.kubectlOk(['get', `dnszones.${ZK}`, '-A', '-o', 'name']);
    assert.equal(native.trim(), '');
  });

  test('a record set changed: the new value is served and the status follows the generation', async () => {
    await kube.kubectlOk([
      'patch',
      `dnsrecordsets.${G}`,
      'www-example-com',
      '--type=merge',
      '-p',
      JSON.stringify({
        spec: {
          records: [
            { name: 'www', a: { content: '10.0.0.2' } },
            { name: 'www', a: { content: '10.0.0.3' } },
            { name: 'www.example.com', a: { content: '10.0.0.4' } },
          ],
        },
      }),
    ]);
    await until(async () =>
      (await answers('www.example.com')) === '10.0.0.2,10.0.0.3,10.0.0.4' ? true : undefined,
    );
    // No ttl on the entries now: the class's defaultTTL.
    assert.match((await dig(server!.dnsPort, 'www.example.com', 'A')).answer[0]!, / 300 IN A /);
    await until(async () => {
      const r = await get('dnsrecordsets', 'default', 'www-example-com');
      const p = cond(r, 'Programmed');
      return p?.status === 'True' && p.observedGeneration === 2 ? true : undefined;
    });
    // The class's default TTL changed: records without their own follow.
    await kube.kubectlOk([
      'patch',
      `dnszoneclasses.${G}`,
      'powerdns-static',
      '--type=merge',
      '-p',
      '{"spec":{"defaults":{"defaultTTL":120}}}',
    ]);
    await until(async () =>
      / 120 IN A /.test((await dig(server!.dnsPort, 'www.example.com', 'A')).answer[0] ?? '')
        ? true
        : undefined,
    );
  });

  test('a Zonekeeper DNSRecordSet and a Datum one on one name: the older wins, the loser says Conflict', async () => {
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: yaml({
        apiVersion: `${ZK}/v1alpha1`,
        kind: 'DNSRecordSet',
        metadata: { name: 'api', namespace: 'default' },
        spec: { name: 'api.example.com.', type: 'A', records: ['192.0.2.1'] },
      }),
    });
    await until(async () => ((await answers('api.example.com')) === '192.0.2.1' ? true : undefined));
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: yaml(
        recordSet('default', 'api-late', 'example-com', [{ name: 'api', a: { content: '192.0.2.99' } }]),
      ),
    });
    const { value: loser } = await until(async () => {
      const r = await get('dnsrecordsets', 'default', 'api-late');
      return cond(r, 'Accepted')?.reason === 'Conflict' ? r : undefined;
    });
    assert.equal(cond(loser, 'Accepted')?.status, 'False');
    assert.equal(cond(loser, 'Programmed')?.status, 'False');
    assert.match(cond(loser, 'Accepted')!.message, /api\.example\.com\./);
    assert.equal(loser.status?.recordSets?.[0]?.name, 'api');
    assert.equal(loser.status?.recordSets?.[0]?.conditions?.[0]?.reason, 'Conflict');
    assert.equal(await answers('api.example.com'), '192.0.2.1');
    // The winner goes: the Datum record set takes the name.
    await kube.kubectlOk(['delete', `dnsrecordsets.${ZK}`, 'api', '--wait=false']);
    await until(async () => ((await answers('api.example.com')) === '192.0.2.99' ? true : undefined));
    await until(async () => {
      const r = await get('dnsrecordsets', 'default', 'api-late');
      return cond(r, 'Programmed')?.status === 'True' ? true : undefined;
    });
  });

  test('hostile record sets: outside their zone, a zone claiming a served domain, a zone of another namespace', async () => {
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: yaml(
        // From the zone's own namespace, a name outside the zone.
        recordSet('default', 'escape', 'example-com', [
          { name: 'ok', a: { content: '192.0.2.10' } },
          { name: 'www.victim.test.', a: { content: '203.0.113.66' } },
        ]),
        // Another namespace claims example.com with its own Datum zone, and publishes into it.
        {
          apiVersion: API,
          kind: 'DNSZone',
          metadata: { name: 'grab', namespace: 'tenant' },
          spec: { domainName: 'example.com' },
        },
        recordSet('tenant', 'grab-www', 'grab', [{ name: 'www', a: { content: '203.0.113.66' } }]),
        // dnsZoneRef is local: the zone example-com of namespace default is not reached from tenant.
        recordSet('tenant', 'reach', 'example-com', [{ name: 'mail', a: { content: '203.0.113.66' } }]),
      ),
    });
    const { value: escaped } = await until(async () => {
      const r = await get('dnsrecordsets', 'default', 'escape');
      return cond(r, 'Accepted')?.reason === 'InvalidDNSRecordSet' ? r : undefined;
    });
    assert.deepEqual(
      escaped.status?.recordSets?.map((r) => [r.name, r.conditions?.[0]?.status]),
      [
        ['ok', 'False'],
        ['www.victim.test.', 'False'],
      ],
    );
    await until(async () => {
      const z = await get('dnszones', 'tenant', 'grab');
      return cond(z, 'Accepted')?.reason === 'DNSZoneInUse' ? true : undefined;
    });
    await until(async () => {
      const r = await get('dnsrecordsets', 'tenant', 'grab-www');
      return cond(r, 'Accepted')?.reason === 'NotOwner' ? true : undefined;
    });
    const { value: reach } = await until(async () => {
      const r = await get('dnsrecordsets', 'tenant', 'reach');
      return cond(r, 'Accepted')?.reason === 'Pending' ? r : undefined;
    });
    assert.match(cond(reach, 'Accepted')!.message, /in namespace tenant: it does not exist/);
    assert.ok(!(await answers('www.example.com')).includes('203.0.113.66'));
    assert.equal(await answers('mail.example.com'), '');
    // One owner outside the zone refuses the whole record set.
    assert.equal(await answers('ok.example.com'), '');
    assert.equal((await dig(server!.dnsPort, 'www.victim.test', 'A')).status, 'REFUSED');
  });

  test('deleted: a record set goes once served without it; the zone goes, its record sets wait', async () => {
    await kube.kubectlOk(['delete', `dnsrecordsets.${G}`, 'api-late', '--wait=false']);
    await until(async () =>
      (await dig(server!.dnsPort, 'api.example.com', 'A')).status === 'NXDOMAIN' ? true : undefined,
    );
    await until(async () =>
      (await get('dnsrecordsets', 'default', 'api-late')) === undefined ? true : undefined,
    );
    // The tenant's zone for the same domain goes first (it would take example.com over, being the only one).
    await kube.kubectlOk(['delete', `dnszones.${G}`, '-n', 'tenant', 'grab', '--wait=false']);
    await until(async () => ((await get('dnszones', 'tenant', 'grab')) === undefined ? true : undefined));
    await kube.kubectlOk(['delete', `dnszones.${G}`, 'example-com', '--wait=false']);
    await until(async () =>
      (await get('dnszones', 'default', 'example-com')) === undefined ? true : undefined,
    );
    await until(async () =>
      (await dig(server!.dnsPort, 'example.com', 'SOA')).status !== 'NOERROR' ? true : undefined,
    );
    const { value: orphan } = await until(async () => {
      const r = await get('dnsrecordsets', 'default', 'www-example-com');
      return cond(r, 'Accepted')?.reason === 'Pending' ? r : undefined;
    });
    assert.match(cond(orphan, 'Accepted')!.message, /DNSZone example-com .* it does not exist/);
    // Nothing of it is served: deleting it is not held.
    await kube.kubectlOk(['delete', `dnsrecordsets.${G}`, 'www-example-com', '--wait=false']);
    await until(async () =>
      (await get('dnsrecordsets', 'default', 'www-example-com')) === undefined ? true : undefined,
    );
    await kube.kubectlOk(['delete', `dnszoneclasses.${G}`, 'powerdns-static']);
  });
});
