/**
 * The set of upstream clusters, read again every poll interval so that clusters can be added and
 * removed at run time:
 * - a folder: one kubeconfig per file, the file name (without .yaml, .yml, .kubeconfig or .conf) is the
 *   cluster's name; hidden files and folders (Kubernetes' `..data` of mounted Secrets) are skipped;
 * - `secrets:<label-selector>`: Secrets of the operator's namespace matching the selector, the Secret's
 *   name is the cluster's name and its `kubeconfig` key the kubeconfig.
 * Names that are not DNS-1123 labels are reported and skipped.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { DownstreamApi } from './downstream-api.ts';
import { clusterNameProblem } from './mapping.ts';

export interface ClusterSet {
  /** cluster name → kubeconfig (YAML). */
  clusters: Map<string, string>;
  /** Entries skipped, with the reason. */
  skipped: { entry: string; reason: string }[];
}

export interface ClusterSource {
  describe: string;
  read(): Promise<ClusterSet>;
}

const EXTENSIONS = ['.yaml', '.yml', '.kubeconfig', '.conf'];

export function folderSource(folder: string): ClusterSource {
  return {
    describe: `folder ${folder}`,
    async read() {
      const clusters = new Map<string, string>();
      const skipped: ClusterSet['skipped'] = [];
      for (const entry of (await readdir(folder)).sort()) {
        if (entry.startsWith('.')) continue;
        const file = path.join(folder, entry);
        const info = await stat(file).catch(() => undefined);
        if (!info?.isFile()) continue;
        const ext = EXTENSIONS.find((e) => entry.endsWith(e));
        const name = ext ? entry.slice(0, -ext.length) : entry;
        const problem = clusterNameProblem(name);
        if (problem) {
          skipped.push({ entry, reason: problem });
          continue;
        }
        if (clusters.has(name)) {
          skipped.push({ entry, reason: `another file already names cluster ${name}` });
          continue;
        }
        clusters.set(name, await readFile(file, 'utf8'));
      }
      return { clusters, skipped };
    },
  };
}

export function secretSource(api: DownstreamApi, namespace: string, labelSelector: string): ClusterSource {
  return {
    describe: `Secrets in ${namespace} matching ${labelSelector}`,
    async read() {
      const clusters = new Map<string, string>();
      const skipped: ClusterSet['skipped'] = [];
      for (const [name, kubeconfig] of await api.secretsByLabel(namespace, labelSelector, 'kubeconfig')) {
        const problem = clusterNameProblem(name);
        if (problem) skipped.push({ entry: `Secret ${name}`, reason: problem });
        else clusters.set(name, kubeconfig);
      }
      return { clusters, skipped };
    },
  };
}

/** `--upstream-clusters SOURCE`: `secrets:<selector>` or a folder. */
export function parseClusterSource(spec: string, api: () => DownstreamApi, namespace: string): ClusterSource {
  if (spec.startsWith('secrets:')) {
    const selector = spec.slice('secrets:'.length).trim();
    if (selector === '')
      throw new Error('--upstream-clusters secrets:<label-selector>: the selector is empty');
    return secretSource(api(), namespace, selector);
  }
  return folderSource(spec);
}
