// The Helm chart rendered by the helm binary of the kube test support, and the part of it that grants
// access (namespaces, service accounts, RBAC, optionally admission policies): suites against a real
// kube-apiserver apply that part so the processes run with exactly what the chart grants, no workloads.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const CHART = path.join(import.meta.dirname, '../../deploy/helm/zonekeeper');

/** `helm template zonekeeper <chart> --namespace <namespace> [--set ...] --kube-version 1.33.13`. */
export async function renderChart(
  binDir: string,
  { namespace, set = [] }: { namespace: string; set?: string[] },
): Promise<string> {
  const args = ['template', 'zonekeeper', CHART, '--namespace', namespace];
  for (const s of set) args.push('--set', s);
  args.push('--kube-version', '1.33.13');
  const { stdout } = await promisify(execFile)(path.join(binDir, 'helm'), args, {
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

// Namespace stays in: the chart renders the DNSSEC key namespace, and Roles live in it.
const ACCESS_KINDS = [
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
];
const ADMISSION_KINDS = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];

/**
 * The rendered documents whose top-level kind grants access (plus the admission policies and their
 * bindings when `admission`), joined for `kubectl apply --server-side -f -`.
 */
export function chartAccessDocs(rendered: string, { admission }: { admission: boolean }): string {
  const kinds = new Set(admission ? [...ACCESS_KINDS, ...ADMISSION_KINDS] : ACCESS_KINDS);
  return rendered
    .split(/^---$/m)
    .filter((d) => kinds.has(/^kind: (\S+)\s*$/m.exec(d)?.[1] ?? ''))
    .join('\n---\n');
}
