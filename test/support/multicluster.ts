/**
 * The set-up the multicluster suites share: three real API servers on one etcd (`down` downstream,
 * `alpha` and `beta` upstream), the upstreams given the shipped upstream RBAC
 * (deploy/multicluster/upstream-rbac.yaml) and a folder of their kubeconfigs, `zonekeeper operator
 * --upstream-clusters` started on that folder, and the processes' logs kept when KUBE_E2E_LOGS is set.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type KubePlane, type KubeUser, type PlaneCluster, startKubeClusters } from './kube.ts';
import { type KubeProcess, startOperatorProcess } from './zonekeeper-kube.ts';

const UPSTREAM_RBAC = path.join(import.meta.dirname, '../../deploy/multicluster/upstream-rbac.yaml');

export interface MulticlusterPlane {
  plane: KubePlane;
  down: PlaneCluster;
  alpha: PlaneCluster;
  beta: PlaneCluster;
}

/** Starts `down`, `alpha` and `beta` with `users` in each, and creates `systemNamespace` in `down`. */
export async function startMulticlusterPlane(
  users: KubeUser[],
  systemNamespace: string,
): Promise<MulticlusterPlane> {
  const plane = await startKubeClusters(['down', 'alpha', 'beta'], { users });
  const { down, alpha, beta } = plane.clusters as {
    down: PlaneCluster;
    alpha: PlaneCluster;
    beta: PlaneCluster;
  };
  try {
    await down.kubectlOk(['create', 'namespace', systemNamespace]);
  } catch (e) {
    await plane.stop();
    throw e;
  }
  return { plane, down, alpha, beta };
}

/**
 * Applies the upstream RBAC as shipped in each upstream (bound to the user `replicator`), creates
 * `namespace` there, and writes each upstream's kubeconfig for `replicator` as `<cluster>.yaml` into a
 * new folder, whose path is returned (the caller removes it).
 */
export async function prepareUpstreams(
  upstreams: PlaneCluster[],
  replicator: KubeUser,
  namespace: string,
): Promise<string> {
  for (const up of upstreams) {
    await up.kubectlOk(['apply', '-f', UPSTREAM_RBAC]);
    await up.kubectlOk(['create', 'namespace', namespace]);
  }
  const folder = await mkdtemp(path.join(tmpdir(), 'zonekeeper-upstreams-'));
  try {
    for (const up of upstreams)
      await writeFile(
        path.join(folder, `${up.name}.yaml`),
        await readFile(up.kubeconfigFor(replicator), 'utf8'),
      );
  } catch (e) {
    await rm(folder, { recursive: true, force: true });
    throw e;
  }
  return folder;
}

/**
 * `zonekeeper operator` in `down` as `user`, without leader election, reading the upstreams of `folder`
 * every 0.5 s with one retry, plus `extra` flags.
 */
export function startUpstreamOperator(
  down: PlaneCluster,
  user: KubeUser,
  namespace: string,
  folder: string,
  extra: string[] = [],
): Promise<KubeProcess> {
  return startOperatorProcess('operator', down.kubeconfigFor(user), namespace, [
    '--leader-elect=false',
    '--upstream-clusters',
    folder,
    '--upstream-poll-interval',
    '0.5',
    '--upstream-retry-max',
    '1',
    ...extra,
  ]);
}

/** With KUBE_E2E_LOGS set, writes each started process's log (and the plane's, if given) there. */
export async function keepE2eLogs(processes: (KubeProcess | undefined)[], plane?: KubePlane): Promise<void> {
  const dir = process.env.KUBE_E2E_LOGS;
  if (!dir) return;
  await mkdir(dir, { recursive: true });
  for (const p of processes) if (p) await writeFile(path.join(dir, `${p.name}.log`), p.log());
  if (plane) await writeFile(path.join(dir, 'control-plane.log'), plane.logs());
}
