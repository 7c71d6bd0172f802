import path from 'node:path';
import { stringify } from 'yaml';
import { chartAccessDocs, renderChart } from './chart.ts';
import type { KubeCluster } from './kube.ts';
import { ROOT } from './zonekeeper-process.ts';

/**
 * A real API server made ready for kubizone's API served by Zonekeeper: kubizone's Zone and Record
 * CRDs established, the namespaces created, the chart's RBAC with its defaults (the registered
 * kubi.zone door needs no frontDoors value) for Zonekeeper in `system`, and a default DNSZoneClass
 * `builtin`.
 */
export async function prepareKubizone(
  kube: KubeCluster,
  system: string,
  namespaces: readonly string[],
): Promise<void> {
  for (const crd of ['kubi.zone_zones.yaml', 'kubi.zone_records.yaml'])
    await kube.kubectlOk(['apply', '--server-side', '-f', path.join(ROOT, 'deploy/crds', crd)]);
  for (const crd of ['zones.kubi.zone', 'records.kubi.zone'])
    await kube.kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', `crd/${crd}`]);
  for (const ns of [system, ...namespaces]) await kube.kubectlOk(['create', 'namespace', ns]);
  const rendered = await renderChart(kube.binDir, { namespace: system });
  await kube.kubectlOk(['apply', '--server-side', '-f', '-'], {
    input: chartAccessDocs(rendered, { admission: false }),
  });
  await kube.kubectlOk(['apply', '-f', '-'], {
    input: `---\n${stringify({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSZoneClass',
      metadata: { name: 'builtin' },
      spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.', 'ns2.example.net.'] },
    })}`,
  });
}
