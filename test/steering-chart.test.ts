/**
 * The Helm chart's `healthProbes` values: `--health-probe-allow` per network and `--health-probe-ca`
 * per key of a mounted ConfigMap, on the operator and the server pods alike (both run health probes
 * of steered record sets), beside the chart's other volumes; nothing of it with the default values.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { ROOT } from './support/zonekeeper-process.ts';

const run = promisify(execFile);

interface Workload {
  kind: string;
  metadata: { name: string };
  spec: {
    template: {
      spec: {
        containers: {
          args: string[];
          volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
        }[];
        volumes?: { name: string; configMap?: { name: string } }[];
      };
    };
  };
}

async function render(...set: string[]): Promise<Workload[]> {
  const { stdout: bin } = await run('bash', [path.join(ROOT, 'scripts/ensure-k8s-binaries.sh')], {
    cwd: ROOT,
  });
  const args = ['template', 'zk', path.join(ROOT, 'deploy/helm/zonekeeper'), '--namespace', 'zk'];
  for (const s of set) args.push('--set', s);
  const { stdout } = await run(path.join(bin.trim(), 'helm'), [...args, '--kube-version', '1.33.13']);
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Workload | null)
    .filter((o): o is Workload => o !== null && (o.kind === 'Deployment' || o.kind === 'DaemonSet'));
}

const probeArgs = (w: Workload) =>
  w.spec.template.spec.containers[0]!.args.filter((a) => a.startsWith('--health-probe'));

describe('Helm chart: health probe values', { timeout: 120_000 }, () => {
  test('default values: no probe flags, no CA volume', async () => {
    const workloads = await render();
    assert.equal(workloads.length, 2);
    for (const w of workloads) {
      assert.deepEqual(probeArgs(w), [], w.metadata.name);
      assert.ok(!w.spec.template.spec.volumes?.some((v) => v.name === 'health-probe-ca'), w.metadata.name);
    }
  });

  test('allow and ca: flags, mount and volume on the operator and the servers, beside the other volumes', async () => {
    const workloads = await render(
      'healthProbes.allow={169.254.10.0/24,fd00:ec2::254/128}',
      'healthProbes.ca.configMap=probe-ca',
      'healthProbes.ca.keys={ca.crt,other.pem}',
      'operator.apiWrites.enabled=true',
      'server.kind=DaemonSet',
    );
    assert.deepEqual(workloads.map((w) => w.kind).sort(), ['DaemonSet', 'Deployment']);
    for (const w of workloads) {
      assert.deepEqual(probeArgs(w), [
        '--health-probe-allow=169.254.10.0/24',
        '--health-probe-allow=fd00:ec2::254/128',
        '--health-probe-ca=/etc/zonekeeper/health-probe-ca/ca.crt',
        '--health-probe-ca=/etc/zonekeeper/health-probe-ca/other.pem',
      ]);
      const pod = w.spec.template.spec;
      assert.deepEqual(
        pod.containers[0]!.volumeMounts?.find((m) => m.name === 'health-probe-ca'),
        { name: 'health-probe-ca', mountPath: '/etc/zonekeeper/health-probe-ca', readOnly: true },
      );
      assert.deepEqual(pod.volumes?.find((v) => v.name === 'health-probe-ca')?.configMap, {
        name: 'probe-ca',
      });
      // The API-writes volumes stay (write-access on the operator, write-token on the servers).
      assert.equal(pod.volumes?.length, 2, `${w.metadata.name}: ${JSON.stringify(pod.volumes)}`);
    }
    // The processes take these flags (usage text of the CLI that parses them).
    const usage = await readFile(path.join(ROOT, 'src/cli/cli.ts'), 'utf8');
    for (const flag of ["'health-probe-allow'", "'health-probe-ca'"]) assert.ok(usage.includes(flag), flag);
  });

  test('namespaceLimit: one flag on the operator and the servers; absent by default', async () => {
    for (const w of await render('healthProbes.namespaceLimit=200'))
      assert.deepEqual(probeArgs(w), ['--health-probe-namespace-limit=200']);
    for (const w of await render()) assert.deepEqual(probeArgs(w), []);
    const usage = await readFile(path.join(ROOT, 'src/cli/cli.ts'), 'utf8');
    assert.ok(usage.includes("'health-probe-namespace-limit'"));
  });

  test('allow without ca: flags only, no CA volume', async () => {
    for (const w of await render('healthProbes.allow={169.254.169.254/32}')) {
      assert.deepEqual(probeArgs(w), ['--health-probe-allow=169.254.169.254/32']);
      assert.ok(!w.spec.template.spec.volumes?.some((v) => v.name === 'health-probe-ca'));
    }
  });
});
