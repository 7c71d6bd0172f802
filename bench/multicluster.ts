/**
 * Change in an upstream cluster → answer from the downstream `zonekeeper server`, and → status back
 * on the upstream object (docs/benchmarks.md, "Multicluster"). Not part of `npm test`:
 *
 *   npx node bench/multicluster.ts [CHANGES]      # default 50
 *
 * Three kube-apiservers on one etcd (test/support/kube.ts `startKubeClusters`: the downstream and two
 * upstreams), `zonekeeper operator --upstream-clusters` and `zonekeeper server` in the downstream. One
 * DNSZone and one DNSRecordSet in upstream `alpha`; each change is a merge patch of the record set's
 * address (one API request, made in-process, so no kubectl start-up is measured). Measured from just
 * before the request: when the server answers the new address (UDP queries every 5 ms), and when the
 * upstream record set's status says Ready for the new generation (GET every 10 ms). Upstream `beta`
 * holds a zone too, so the replicator watches two clusters. Writes bench/results/multicluster-<time>.json.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { buildQuery, exchange } from '../test/support/dns-client.ts';
import { startKubeClusters } from '../test/support/kube.ts';
import { startOperatorProcess, startServerProcess } from '../test/support/zonekeeper-kube.ts';

const changes = Number(process.argv[2] ?? 50);
const API = 'dns.zonekeeper.dev/v1alpha1';
const SYSTEM = 'zonekeeper-system';
const yamlDocs = (...docs: object[]) => docs.map((d) => `---\n${stringify(d)}`).join('');

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function summary(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: sorted.length,
    min: sorted[0]!,
    median: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.at(-1)!,
  };
}

async function answers(port: number, name: string, address: string): Promise<boolean> {
  const reply = await exchange(port, buildQuery({ name, type: 1 }), { timeoutMs: 500 });
  const raw = reply.raw;
  if (!raw || !reply.message || reply.message.rcode !== 0) return false;
  const octets = address.split('.').map(Number);
  for (let i = raw.length - 4; i >= 12; i--) if (octets.every((o, j) => raw[i + j] === o)) return true;
  return false;
}

const plane = await startKubeClusters(['down', 'alpha', 'beta']);
const folder = await mkdtemp(path.join(tmpdir(), 'zonekeeper-bench-upstreams-'));
const processes: { stop(): Promise<void> }[] = [];
try {
  const { down, alpha, beta } = plane.clusters as Record<string, (typeof plane.clusters)[string]>;
  await down!.kubectlOk(['create', 'namespace', SYSTEM]);
  await down!.kubectlOk(['apply', '-f', '-'], {
    input: yamlDocs({
      apiVersion: API,
      kind: 'DNSZoneClass',
      metadata: { name: 'builtin' },
      spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.'] },
    }),
  });
  for (const [up, domain] of [
    [alpha!, 'bench.example'],
    [beta!, 'other.example'],
  ] as const) {
    await up.kubectlOk(['create', 'namespace', 'team']);
    await up.kubectlOk(['apply', '-f', '-'], {
      input: yamlDocs(
        {
          apiVersion: API,
          kind: 'DNSZone',
          metadata: { name: 'z', namespace: 'team' },
          spec: { domainName: domain, className: 'builtin' },
        },
        {
          apiVersion: API,
          kind: 'DNSRecordSet',
          metadata: { name: 'r', namespace: 'team' },
          spec: { zoneRef: { name: 'z' }, name: 'r', type: 'A', records: ['10.0.0.1'] },
        },
      ),
    });
    await writeFile(path.join(folder, `${up.name}.yaml`), await readFile(up.adminKubeconfig, 'utf8'));
  }
  const operator = await startOperatorProcess('operator', down!.adminKubeconfig, SYSTEM, [
    '--leader-elect=false',
    '--upstream-clusters',
    folder,
  ]);
  processes.push(operator);
  const server = await startServerProcess('server', down!.adminKubeconfig);
  processes.push(server);
  const deadline = Date.now() + 120_000;
  while (!(await answers(server.dnsPort, 'r.bench.example', '10.0.0.1'))) {
    if (Date.now() > deadline) throw new Error(`not served within 120 s:\n${operator.log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }

  const config = new KubeConfig();
  config.loadFromFile(alpha!.adminKubeconfig);
  const custom = config.makeApiClient(CustomObjectsApi);
  const coords = {
    group: 'dns.zonekeeper.dev',
    version: 'v1alpha1',
    namespace: 'team',
    plural: 'dnsrecordsets',
    name: 'r',
  };
  const toAnswer: number[] = [];
  const toStatus: number[] = [];
  for (let i = 0; i < changes; i++) {
    const address = `10.1.${Math.floor(i / 250)}.${(i % 250) + 2}`;
    const started = performance.now();
    const written = (await custom.patchNamespacedCustomObject(
      { ...coords, body: { spec: { records: [address] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as { metadata: { generation: number } };
    const generation = written.metadata.generation;
    const answered = (async () => {
      while (!(await answers(server.dnsPort, 'r.bench.example', address)))
        await new Promise((r) => setTimeout(r, 5));
      return performance.now() - started;
    })();
    const statusBack = (async () => {
      for (;;) {
        const o = (await custom.getNamespacedCustomObject(coords)) as {
          status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
        };
        if (
          o.status?.observedGeneration === generation &&
          o.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
        )
          return performance.now() - started;
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    toAnswer.push(await answered);
    toStatus.push(await statusBack);
    // Let the previous change settle (status writes) before the next.
    await new Promise((r) => setTimeout(r, 200));
  }
  const result = {
    when: new Date().toISOString(),
    changes,
    msToAnswer: summary(toAnswer),
    msToStatusUpstream: summary(toStatus),
  };
  console.log(JSON.stringify(result, null, 2));
  const out = path.join(
    import.meta.dirname,
    'results',
    `multicluster-${result.when.replace(/[:.]/g, '-')}.json`,
  );
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify({ ...result, raw: { toAnswer, toStatus } }, null, 2)}\n`);
} finally {
  await Promise.all(processes.map((p) => p.stop().catch(() => {})));
  await plane.stop();
  await rm(folder, { recursive: true, force: true });
}
