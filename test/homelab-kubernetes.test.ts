/**
 * The homelab DNS operator's kinds on a real control plane: the CRDs `zonekeeper crds` generates
 * installed in kube-apiserver, the homelab operator's own example manifests applied unchanged, CEL
 * admission refusing what the API refuses, and `zonekeeper operator` (as its service account, with
 * the chart's RBAC) pushing the record to the independent Python provider with the HMAC secret read
 * from a Kubernetes Secret, and deleting it there behind the finalizer.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { type PythonProvider, startPythonProvider } from './support/homelab-provider.ts';
import { type KubeCluster, serviceAccountUser, startKube } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess } from './support/zonekeeper-kube.ts';
import { ROOT, waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const UPSTREAM = path.join(ROOT, 'test/support/homelab-upstream');

interface Obj {
  metadata: { finalizers?: string[]; generation: number };
  status?: {
    state?: string;
    fqdn?: string;
    observedGeneration?: number;
    health?: { status: string };
    conditions?: {
      type: string;
      status: string;
      reason: string;
      message: string;
      observedGeneration?: number;
    }[];
  };
}

describe('homelab kinds on a real API server', { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  let provider: PythonProvider;
  let operator: KubeProcess | undefined;

  const get = async (what: string, ns?: string): Promise<Obj | undefined> => {
    const r = await kube.kubectl(['get', what, ...(ns ? ['-n', ns] : []), '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Obj) : undefined;
  };
  const ready = (o: Obj | undefined) => o?.status?.conditions?.find((c) => c.type === 'Ready');

  before(async () => {
    provider = await startPythonProvider({ secret: 'shared-secret-in-a-kubernetes-secret' });
    kube = await startKube({ users: [OPERATOR] });
    for (const ns of [SYSTEM, 'dns-system', 'production']) await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, {
      namespace: SYSTEM,
      set: ['operator.secretAccess.enabled=true'],
    });
    const rbac = chartAccessDocs(rendered, { admission: false });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
  });

  after(async () => {
    await operator?.stop().catch(() => {});
    await kube?.stop();
    await provider?.stop();
  });

  test('the upstream example manifests apply unchanged', async () => {
    for (const file of ['dnsclass.yaml', 'dnsrecord.yaml'])
      await kube.kubectlOk(['apply', '-f', path.join(UPSTREAM, file)]);
    const text = await readFile(path.join(UPSTREAM, 'dnsrecord.yaml'), 'utf8');
    assert.match(
      text,
      /# Optional: Record-specific metadata/,
      'the file is the upstream example, comments and all',
    );
    assert.ok(await get('dnsrecord.dns.homelab.mortenolsen.pro/web-app', 'production'));
    assert.ok(await get('dnsclass.dns.homelab.mortenolsen.pro/cloudflare'));
  });

  test('admission (CEL) refuses each type rule, the URL, the subdomain and hmacAuth', async () => {
    const record = (name: string, spec: string) => `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSRecord
metadata: { name: ${name}, namespace: production }
spec: { domain: example.com, dnsClassRef: { name: cloudflare }, ${spec} }
`;
    const cases: [string, RegExp][] = [
      [
        record('a6', 'type: A, subdomain: www, values: ["2001:db8::1"]'),
        /A record values must be IPv4 addresses/,
      ],
      [
        record('aaaa4', 'type: AAAA, subdomain: www, values: ["192.0.2.1"]'),
        /AAAA record values must be IPv6 addresses/,
      ],
      [
        record('cname2', 'type: CNAME, subdomain: www, values: [a.example.com, b.example.com]'),
        /exactly one value/,
      ],
      [record('cnameip', 'type: CNAME, subdomain: www, values: ["not a name"]'), /must be domain names/],
      [record('mx', 'type: MX, subdomain: "@", values: [mail.example.com]'), /needs metadata.priority/],
      [
        record(
          'srv',
          'type: SRV, subdomain: _sip._tcp, values: [sip.example.com], metadata: { priority: 1, weight: 1 }',
        ),
        /needs metadata.priority, metadata.weight and metadata.port/,
      ],
      [record('ns', 'type: NS, subdomain: sub, values: ["192.0.2.1 x"]'), /must be domain names/],
      [record('sub', 'type: TXT, subdomain: "a b", values: [x]'), /spec.subdomain/],
      [record('ptr', 'type: PTR, subdomain: x, values: [x.example.com]'), /spec.type/],
      [record('empty', 'type: TXT, subdomain: x, values: []'), /spec.values/],
      [
        `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSClass
metadata: { name: bad-url }
spec: { server: "ftp://dns.example.com" }
`,
        /spec.server/,
      ],
      [
        `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSClass
metadata: { name: both }
spec: { server: "http://dns.example.com", hmacAuth: { secret: a, secretRef: { name: b, key: c } } }
`,
        /exactly one of secretRef or secret/,
      ],
      [
        `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSClass
metadata: { name: md5 }
spec: { server: "http://dns.example.com", hmacAuth: { secret: a, algorithm: MD5 } }
`,
        /algorithm/,
      ],
    ];
    for (const [yaml, message] of cases) {
      const r = await kube.kubectl(['apply', '-f', '-'], { input: yaml });
      assert.notEqual(r.code, 0, `accepted:\n${yaml}`);
      assert.match(r.stderr, message, yaml);
    }
    // Every type with valid values passes.
    const ok = [
      record('ok-aaaa', 'type: AAAA, subdomain: v6, values: ["2001:db8::1"]'),
      record('ok-txt', 'type: TXT, subdomain: note, values: ["v=spf1 -all", "hello world"]'),
      record('ok-ns', 'type: NS, subdomain: sub, values: [ns1.example.net]'),
      record(
        'ok-srv',
        'type: SRV, subdomain: _sip._tcp, values: [sip.example.com], metadata: { priority: 1, weight: 2, port: 5060 }',
      ),
    ];
    await kube.kubectlOk(['apply', '--dry-run=server', '-f', '-'], { input: ok.join('---\n') });
  });

  test('the operator pushes the record with the secret from a Kubernetes Secret; Ready, printer columns', async () => {
    await kube.kubectlOk([
      'create',
      'secret',
      'generic',
      'cloudflare-dns-secret',
      '-n',
      'dns-system',
      '--from-literal=hmac-secret=shared-secret-in-a-kubernetes-secret',
    ]);
    // The upstream server name is not resolvable here (and nothing leaves loopback): point it at the provider.
    await kube.kubectlOk([
      'patch',
      'dnsclass.dns.homelab.mortenolsen.pro',
      'cloudflare',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { server: provider.url } }),
    ]);
    operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM);
    const { value: record } = await waitFor(
      async () => {
        const o = await get('dnsrecord.dns.homelab.mortenolsen.pro/web-app', 'production');
        return ready(o)?.status === 'True' ? o : undefined;
      },
      60_000,
      100,
    );
    assert.equal(record.status?.state, 'Created');
    assert.equal(record.status?.fqdn, 'www.example.com');
    assert.equal(record.status?.observedGeneration, record.metadata.generation);
    assert.equal(ready(record)?.reason, 'RecordCreated');
    assert.deepEqual(record.metadata.finalizers, ['dns.homelab.mortenolsen.pro/finalizer']);
    const held = (await provider.records()).find((r) => r.fqdn === 'www.example.com');
    assert.deepEqual(held?.values, ['192.168.1.100', '192.168.1.101']);
    assert.equal(held?.ttl, 600);
    const { value: cls } = await waitFor(
      async () => {
        const o = await get('dnsclass.dns.homelab.mortenolsen.pro/cloudflare');
        return ready(o)?.reason === 'ServerHealthy' ? o : undefined;
      },
      30_000,
      100,
    );
    assert.equal(cls.status?.health?.status, 'Healthy');
    const table = await kube.kubectlOk(['get', 'dnsrecords.dns.homelab.mortenolsen.pro', '-n', 'production']);
    assert.match(table, /TYPE\s+FQDN\s+CLASS\s+STATE\s+READY/);
    assert.match(table, /web-app\s+A\s+www\.example\.com\s+cloudflare\s+Created\s+True/);
  });

  test('deleting the object deletes the record at the provider, then the finalizer goes', async () => {
    await kube.kubectlOk([
      'delete',
      'dnsrecord.dns.homelab.mortenolsen.pro',
      'web-app',
      '-n',
      'production',
      '--wait=false',
    ]);
    await waitFor(
      async () =>
        (await get('dnsrecord.dns.homelab.mortenolsen.pro/web-app', 'production')) ? undefined : true,
      30_000,
      100,
    );
    assert.equal((await provider.records()).length, 0);
    assert.equal((await provider.log()).authFailures, 0);
  });
});
