/**
 * The calls the replicator makes that `KubeApi` does not: create, replace and delete the mirrored
 * kinds (Zonekeeper's and the front doors'), and namespaces and ConfigMaps by label, on the official client. Errors become
 * `KubeApiError` (HTTP status and reason) like KubeApi's.
 */
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { isStatus, type KubeJson, shareConnections, toKubeError } from '../kubernetes/kube-api.ts';
import { MIRRORED_KIND_INFO, type MirroredKind } from './mapping.ts';

async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw toKubeError(e);
  }
}

export interface NamespaceRecord {
  name: string;
  labels: Record<string, string>;
  terminating: boolean;
}

export interface ConfigMapObject {
  name: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  data: Record<string, string>;
}

export class DownstreamApi {
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;

  constructor(config: KubeConfig) {
    shareConnections(config);
    this.custom = config.makeApiClient(CustomObjectsApi);
    this.core = config.makeApiClient(CoreV1Api);
  }

  private coords(kind: MirroredKind) {
    const { group, version, plural } = MIRRORED_KIND_INFO[kind];
    return { group, version, plural };
  }

  async get(kind: MirroredKind, namespace: string, name: string): Promise<KubeJson | undefined> {
    try {
      return (await call(() =>
        this.custom.getNamespacedCustomObject({ ...this.coords(kind), namespace, name }),
      )) as KubeJson;
    } catch (e) {
      if (isStatus(e, 404)) return undefined;
      throw e;
    }
  }

  async create(kind: MirroredKind, namespace: string, body: object): Promise<KubeJson> {
    return (await call(() =>
      this.custom.createNamespacedCustomObject({ ...this.coords(kind), namespace, body }),
    )) as KubeJson;
  }

  /** PUT, conditional on the body's metadata.resourceVersion (409 when it moved on). */
  async replace(kind: MirroredKind, namespace: string, name: string, body: object): Promise<KubeJson> {
    return (await call(() =>
      this.custom.replaceNamespacedCustomObject({ ...this.coords(kind), namespace, name, body }),
    )) as KubeJson;
  }

  /** Deletes (foreground deletion is not needed: finalizers hold the object); 404 is success. */
  async delete(kind: MirroredKind, namespace: string, name: string, uid?: string): Promise<void> {
    try {
      await call(() =>
        this.custom.deleteNamespacedCustomObject({
          ...this.coords(kind),
          namespace,
          name,
          ...(uid ? { body: { preconditions: { uid } } } : {}),
        }),
      );
    } catch (e) {
      if (!isStatus(e, 404)) throw e;
    }
  }

  async readNamespace(name: string): Promise<NamespaceRecord | undefined> {
    try {
      const ns = await call(() => this.core.readNamespace({ name }));
      return {
        name,
        labels: ns.metadata?.labels ?? {},
        terminating: Boolean(ns.metadata?.deletionTimestamp) || ns.status?.phase === 'Terminating',
      };
    } catch (e) {
      if (isStatus(e, 404)) return undefined;
      throw e;
    }
  }

  async createNamespace(name: string, labels: Record<string, string>): Promise<void> {
    await call(() =>
      this.core.createNamespace({
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } },
      }),
    );
  }

  async listNamespaces(labelSelector: string): Promise<NamespaceRecord[]> {
    const list = await call(() => this.core.listNamespace({ labelSelector }));
    return list.items.map((ns) => ({
      name: ns.metadata?.name ?? '',
      labels: ns.metadata?.labels ?? {},
      terminating: Boolean(ns.metadata?.deletionTimestamp) || ns.status?.phase === 'Terminating',
    }));
  }

  async deleteNamespace(name: string): Promise<void> {
    try {
      await call(() => this.core.deleteNamespace({ name }));
    } catch (e) {
      if (!isStatus(e, 404)) throw e;
    }
  }

  async listConfigMaps(namespace: string, labelSelector: string): Promise<ConfigMapObject[]> {
    const list = await call(() => this.core.listNamespacedConfigMap({ namespace, labelSelector }));
    return list.items.map(configMapObject);
  }

  async readConfigMap(namespace: string, name: string): Promise<ConfigMapObject | undefined> {
    try {
      return configMapObject(await call(() => this.core.readNamespacedConfigMap({ namespace, name })));
    } catch (e) {
      if (isStatus(e, 404)) return undefined;
      throw e;
    }
  }

  /** Creates the ConfigMap (409 when it exists) or, with a resourceVersion, replaces it (409 when it moved on). */
  async writeConfigMap(namespace: string, record: ConfigMapObject): Promise<ConfigMapObject> {
    const body: V1ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: record.name,
        namespace,
        ...(record.labels ? { labels: record.labels } : {}),
        ...(record.resourceVersion ? { resourceVersion: record.resourceVersion } : {}),
      },
      data: record.data,
    };
    return configMapObject(
      await call(() =>
        record.resourceVersion
          ? this.core.replaceNamespacedConfigMap({ namespace, name: record.name, body })
          : this.core.createNamespacedConfigMap({ namespace, body }),
      ),
    );
  }

  /** Deletes, conditional on the resourceVersion (409 when it moved on); 404 is success. */
  async deleteConfigMap(namespace: string, name: string, resourceVersion?: string): Promise<void> {
    try {
      await call(() =>
        this.core.deleteNamespacedConfigMap({
          namespace,
          name,
          ...(resourceVersion ? { body: { preconditions: { resourceVersion } } } : {}),
        }),
      );
    } catch (e) {
      if (!isStatus(e, 404)) throw e;
    }
  }

  /** Secrets of `namespace` matching the selector: name → the decoded `key` (absent when missing). */
  async secretsByLabel(namespace: string, labelSelector: string, key: string): Promise<Map<string, string>> {
    const list = await call(() => this.core.listNamespacedSecret({ namespace, labelSelector }));
    const out = new Map<string, string>();
    for (const s of list.items) {
      const value = s.data?.[key];
      if (s.metadata?.name && value !== undefined)
        out.set(s.metadata.name, Buffer.from(value, 'base64').toString('utf8'));
    }
    return out;
  }
}

function configMapObject(c: V1ConfigMap): ConfigMapObject {
  return {
    name: c.metadata?.name ?? '',
    ...(c.metadata?.resourceVersion ? { resourceVersion: c.metadata.resourceVersion } : {}),
    ...(c.metadata?.labels ? { labels: c.metadata.labels } : {}),
    data: c.data ?? {},
  };
}
