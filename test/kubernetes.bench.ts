/**
 * kubectl apply → answer on a real API server, for 1, 100 and 10,000 record sets (docs/benchmarks.md,
 * "Kubernetes"). Not part of `npm test` (the 10,000 case takes minutes):
 *
 *   npx node test/kubernetes.bench.ts [SIZES]      # default 1,100,10000
 *
 * One kube-apiserver + etcd (test/support/kube.ts), one `zonekeeper operator` and one
 * `zonekeeper server`. For each size, a fresh zone; its record sets are written to one file and applied
 * with `kubectl apply --server-side -f FILE` (one request per object). Measured from the start of that
 * command: when kubectl returns, when the last record set created answers from the server, and when
 * every record set is served (the server's zonekeeper_records_served metric reaches the total, and a
 * sample of names answers).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { type DigResult, dig as digOnce } from './support/dig.ts';
import { startKube } from './support/kube.ts';
import { startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';

/** dig, with a timed-out query counted as no answer (the server is busy loading). */
async function dig(port: number, name: string, type: string): Promise<DigResult> {
  try {
    return await digOnce(port, name, type);
  } catch {
    timeouts++;
    return { status: 'TIMEOUT', flags: [], answer: [], authority: [], additional: [], raw: '' };
  }
}
let timeouts = 0;

const sizes = (process.argv[2] ?? '1,100,10000').split(',').map(Number);
const API = 'dns.zonekeeper.dev/v1alpha1';

async function recordsServed(httpUrl: string): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  return Number(/^zonekeeper_records_served (\d+)$/m.exec(text)?.[1] ?? 0);
}

const dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-kbench-'));
const kube = await startKube();
const started = { operator: 0, server: 0 };
try {
  await kube.kubectlOk(['create', 'namespace', 'zonekeeper-system']);
  await kube.kubectlOk(['create', 'namespace', 'bench']);
  let t = performance.now();
  const operator = await startOperatorProcess('bench-operator', kube.adminKubeconfig, 'zonekeeper-system');
  started.operator = performance.now() - t;
  t = performance.now();
  const server = await startServerProcess('bench-server', kube.adminKubeconfig);
  started.server = performance.now() - t;
  await kube.kubectlOk(['apply', '-f', '-'], {
    input: stringify({
      apiVersion: API,
      kind: 'DNSZoneClass',
      metadata: { name: 'builtin' },
      spec: { backend: { builtin: {} }, nameServers: ['ns1.bench.example.'] },
    }),
  });
  const rows: string[] = [];
  for (const n of sizes) {
    const zone = `z${n}.bench.example`;
    const zoneName = `z${n}`;
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: stringify({
        apiVersion: API,
        kind: 'DNSZone',
        metadata: { name: zoneName, namespace: 'bench' },
        spec: { domainName: zone, className: 'builtin' },
      }),
    });
    for (;;) {
      if ((await dig(server.dnsPort, zone, 'SOA')).status === 'NOERROR') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const base = await recordsServed(server.httpUrl);
    const docs = Array.from({ length: n }, (_, i) =>
      stringify({
        apiVersion: API,
        kind: 'DNSRecordSet',
        metadata: { name: `${zoneName}-h${i}`, namespace: 'bench' },
        spec: {
          zoneRef: { name: zoneName },
          name: `h${i}`,
          type: 'A',
          records: [`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`],
        },
      }),
    );
    const file = path.join(dir, `${zoneName}.yaml`);
    await writeFile(file, docs.map((d) => `---\n${d}`).join(''));
    const t0 = performance.now();
    await kube.kubectlOk(['apply', '--server-side', '-f', file], { timeoutMs: 1_800_000 });
    const kubectlMs = performance.now() - t0;
    let lastMs = 0;
    for (;;) {
      const r = await dig(server.dnsPort, `h${n - 1}.${zone}`, 'A');
      if (r.answer.length > 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    lastMs = performance.now() - t0;
    for (;;) {
      if ((await recordsServed(server.httpUrl)) - base >= n) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const allMs = performance.now() - t0;
    const sample = Array.from({ length: Math.min(n, 20) }, (_, k) => Math.floor((k * n) / Math.min(n, 20)));
    for (const i of sample) {
      const r = await dig(server.dnsPort, `h${i}.${zone}`, 'A');
      if (r.answer.length === 0) throw new Error(`h${i}.${zone} not served`);
    }
    if (timeouts > 0) console.log(`(${timeouts} queries timed out while loading)`);
    timeouts = 0;
    const row = `| ${n.toLocaleString('en')} | ${(kubectlMs / 1000).toFixed(2)} s | ${(lastMs / 1000).toFixed(2)} s | ${(allMs / 1000).toFixed(2)} s | ${((allMs - kubectlMs) / 1000).toFixed(2)} s |`;
    console.log(row);
    rows.push(row);
  }
  console.log(
    `\noperator start ${Math.round(started.operator)} ms, server start ${Math.round(started.server)} ms`,
  );
  console.log(
    '| record sets | kubectl apply returns | last one answers | all served | after kubectl returned |',
  );
  console.log('| ---: | ---: | ---: | ---: | ---: |');
  for (const row of rows) console.log(row);
  const m = await (await fetch(`${operator.httpUrl}/metrics`)).text();
  console.log(
    m
      .split('\n')
      .filter((l) => /^zonekeeper_kube_writes_total|^zonekeeper_reconcile_total/.test(l))
      .join('\n'),
  );
  await operator.stop();
  await server.stop();
} finally {
  await kube.stop();
  await rm(dir, { recursive: true, force: true });
}
