/**
 * The Kubernetes API calls Zonekeeper makes, on the official client (@kubernetes/client-node): list and
 * watch the three kinds, write status through the /status subresource, patch finalizers, create
 * events.k8s.io/v1 Events, read and write coordination.k8s.io/v1 Leases, read a Secret by
 * reference, review a caller's token (TokenReview), and keep the zone serial records (ConfigMaps in the operator's namespace). Errors become `KubeApiError` with the HTTP status and the Status reason.
 */

import {
  ApiException,
  AuthenticationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type EventsV1Event,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1Lease,
  V1MicroTime,
} from '@kubernetes/client-node';
import { GROUP, KIND_DEFINITIONS, type Kind, VERSION } from '../../api/index.ts';
import { shareConnections } from './connections.ts';
import {
  DEFAULT_INACTIVITY_MS,
  type KubeObject,
  type ListerWatcher,
  type ListResult,
  type WatchHandle,
} from './reflector.ts';
import { WatchThread } from './watch-thread.ts';

export { shareConnections } from './connections.ts';

export class KubeApiError extends Error {
  /** HTTP status (409 conflict, 404 not found, 403 forbidden, 410 gone, 422 invalid, ...). */
  readonly status: number;
  readonly reason: string | undefined;

  constructor(status: number, reason: string | undefined, message: string) {
    super(message);
    this.name = 'KubeApiError';
    this.status = status;
    this.reason = reason;
  }
}

/** Normalizes a client error into a KubeApiError (the Status message, not the client's dump). */
export function toKubeError(error: unknown): unknown {
  if (error instanceof KubeApiError) return error;
  if (error instanceof ApiException) {
    let body: unknown = error.body;
    if (typeof body === 'string') {
      try {
        body = JSON.parse(body);
      } catch {
        // plain text
      }
    }
    const status = body as { message?: string; reason?: string } | undefined;
    const message =
      typeof status === 'object' && status?.message
        ? status.message
        : typeof body === 'string' && body !== ''
          ? body
          : `HTTP ${error.code}`;
    return new KubeApiError(error.code, typeof status === 'object' ? status?.reason : undefined, message);
  }
  return error;
}

async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw toKubeError(e);
  }
}

export function isStatus(error: unknown, status: number): boolean {
  return error instanceof KubeApiError && error.status === status;
}

/**
 * Loads the client configuration: an explicit kubeconfig file, else $KUBECONFIG or ~/.kube/config,
 * else the in-cluster service account.
 */
export function loadKubeConfig(kubeconfig?: string, context?: string): KubeConfig {
  const config = new KubeConfig();
  if (kubeconfig) config.loadFromFile(kubeconfig);
  else if (process.env.KUBERNETES_SERVICE_HOST && !process.env.KUBECONFIG) config.loadFromCluster();
  else config.loadFromDefault();
  if (context) config.setCurrentContext(context);
  if (!config.getCurrentCluster())
    throw new Error('no Kubernetes cluster configured (kubeconfig or in-cluster)');
  return shareConnections(config);
}

/** A JSON object as the API server returns it. */
export type KubeJson = KubeObject & Record<string, unknown>;

export interface LeaseRecord {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
  resourceVersion?: string;
  /** The Lease's annotations (the leader's write endpoint, ADR 0016). */
  annotations?: Record<string, string>;
}

/** A Secret's name, metadata and data (decoded to text). */
export interface SecretRecord {
  name: string;
  resourceVersion?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  data: Record<string, string>;
}

/** A ConfigMap as the zone serial records use it: name, version, labels and string data. */
export interface ConfigMapRecord {
  name: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  /** Who owns it (the garbage collector deletes it with its owner). */
  ownerReferences?: {
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    controller?: boolean;
    blockOwnerDeletion?: boolean;
  }[];
  data: Record<string, string>;
}

/** The REST coordinates of a kind: a native one, or a front door's. */
export interface ApiResource {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

function coordinates(kind: Kind | ApiResource): { group: string; version: string; plural: string } {
  if (typeof kind !== 'string') return { group: kind.group, version: kind.version, plural: kind.plural };
  return { group: GROUP, version: VERSION, plural: KIND_DEFINITIONS[kind].plural };
}

export interface EventInput {
  regarding: {
    kind: string;
    /** Default: Zonekeeper's own API version. */
    apiVersion?: string;
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
  };
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
}

export class KubeApi {
  readonly config: KubeConfig;
  private readonly custom: CustomObjectsApi;
  private readonly coordination: CoordinationV1Api;
  private readonly events: EventsV1Api;
  private readonly core: CoreV1Api;
  /** Page size of lists: large kinds come in pages, so a 10,000-object list is not one response. */
  listPageSize = 500;

  constructor(config: KubeConfig) {
    this.config = shareConnections(config);
    this.custom = config.makeApiClient(CustomObjectsApi);
    this.coordination = config.makeApiClient(CoordinationV1Api);
    this.events = config.makeApiClient(EventsV1Api);
    this.core = config.makeApiClient(CoreV1Api);
    this.watches = new WatchThread(this.config);
  }

  /** Reads this configuration's watches (started with the first one). */
  private readonly watches: WatchThread;

  /**
   * List and watch of one kind across all namespaces. Watches are read on the watch thread
   * (watch-thread.ts), so that the API server never finds them slow to take their events. The client
   * ends a watch on which no byte arrived for 30 s by default; that is raised to `inactivityMs` (the
   * reflector's own watchdog, longer than the longest watch timeout asked), so a quiet kind's watch
   * ends by its timeout.
   */
  listerWatcher(kind: Kind | ApiResource, inactivityMs = DEFAULT_INACTIVITY_MS): ListerWatcher {
    const { group, version, plural } = coordinates(kind);
    // Started now, it has loaded by the time the list is done and the first watch begins (a watch that
    // begins late begins with a backlog of events to catch up on).
    this.watches.prepare();
    return {
      list: () => this.listAll(group, version, plural),
      watch: (resourceVersion, timeoutSeconds, onEvent, onDone): Promise<WatchHandle> =>
        this.watches.watch(
          `/apis/${group}/${version}/${plural}`,
          { resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
          inactivityMs + 5000,
          onEvent,
          (error) => onDone(error ?? undefined),
        ),
    };
  }

  /** Stops the watch thread (the watches on it end); for processes that are done with the API. */
  close(): Promise<void> {
    return this.watches.close();
  }

  private async listAll(group: string, version: string, plural: string): Promise<ListResult> {
    for (;;) {
      const items: KubeObject[] = [];
      let next: string | undefined;
      let resourceVersion = '';
      try {
        do {
          const page = (await call(() =>
            this.custom.listClusterCustomObject({
              group,
              version,
              plural,
              limit: this.listPageSize,
              ...(next ? { _continue: next } : {}),
            }),
          )) as { items?: KubeObject[]; metadata?: { resourceVersion?: string; continue?: string } };
          for (const item of page.items ?? []) items.push(item);
          resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
          next = page.metadata?.continue || undefined;
        } while (next);
      } catch (e) {
        // The continue token expired during a long list: start over, as client-go's pager does.
        if (isStatus(e, 410) && next) continue;
        throw e;
      }
      return { items, resourceVersion };
    }
  }

  async get(
    kind: Kind | ApiResource,
    namespace: string | undefined,
    name: string,
  ): Promise<KubeJson | undefined> {
    const { group, version, plural } = coordinates(kind);
    try {
      return (await call(() =>
        namespace
          ? this.custom.getNamespacedCustomObject({ group, version, namespace, plural, name })
          : this.custom.getClusterCustomObject({ group, version, plural, name }),
      )) as KubeJson;
    } catch (e) {
      if (isStatus(e, 404)) return undefined;
      throw e;
    }
  }

  /** PUT on the /status subresource; `object.metadata.resourceVersion` makes it conditional (409). */
  async replaceStatus(kind: Kind | ApiResource, object: KubeJson): Promise<KubeJson> {
    const { group, version, plural } = coordinates(kind);
    const { name, namespace } = object.metadata as { name: string; namespace?: string };
    return (await call(() =>
      namespace
        ? this.custom.replaceNamespacedCustomObjectStatus({
            group,
            version,
            namespace,
            plural,
            name,
            body: object,
          })
        : this.custom.replaceClusterCustomObjectStatus({
            group,
            version,
            plural,
            name,
            body: object,
          }),
    )) as KubeJson;
  }

  /** A JSON merge patch (RFC 7386) of the object itself; put metadata.resourceVersion in it for a precondition. */
  async mergePatch(
    kind: Kind | ApiResource,
    namespace: string | undefined,
    name: string,
    patch: object,
  ): Promise<KubeJson> {
    const { group, version, plural } = coordinates(kind);
    const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    return (await call(() =>
      namespace
        ? this.custom.patchNamespacedCustomObject(
            { group, version, namespace, plural, name, body: patch },
            options,
          )
        : this.custom.patchClusterCustomObject({ group, version, plural, name, body: patch }, options),
    )) as KubeJson;
  }

  /** Creates a namespaced object (Gateway DNS record sets). */
  async createObject(kind: Kind | ApiResource, namespace: string, body: object): Promise<KubeJson> {
    const { group, version, plural } = coordinates(kind);
    return (await call(() =>
      this.custom.createNamespacedCustomObject({ group, version, namespace, plural, body }),
    )) as KubeJson;
  }

  /** Replaces a namespaced object; `metadata.resourceVersion` in `body` makes it conditional (409). */
  async replaceObject(
    kind: Kind | ApiResource,
    namespace: string,
    name: string,
    body: object,
  ): Promise<KubeJson> {
    const { group, version, plural } = coordinates(kind);
    return (await call(() =>
      this.custom.replaceNamespacedCustomObject({ group, version, namespace, plural, name, body }),
    )) as KubeJson;
  }

  /** Deletes a namespaced object; one that is gone already is fine. */
  async deleteObject(kind: Kind | ApiResource, namespace: string, name: string): Promise<void> {
    const { group, version, plural } = coordinates(kind);
    try {
      await call(() => this.custom.deleteNamespacedCustomObject({ group, version, namespace, plural, name }));
    } catch (e) {
      if (!isStatus(e, 404)) throw e;
    }
  }

  async createEvent(
    namespace: string,
    event: EventInput,
    controller: string,
    instance: string,
    now: Date,
  ): Promise<void> {
    const { regarding } = event;
    const eventTime = new V1MicroTime(now.getTime());
    const body: EventsV1Event = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: {
        // client-go's naming: the object name and a unique, time-ordered suffix.
        name: `${regarding.name}.${(now.getTime() * 1000 + Math.floor(Math.random() * 1000)).toString(16)}`,
        namespace,
      },
      eventTime,
      reportingController: controller,
      reportingInstance: instance,
      action: event.action,
      reason: event.reason,
      note: event.note.length > 1024 ? `${event.note.slice(0, 1021)}...` : event.note,
      type: event.type,
      regarding: {
        apiVersion: regarding.apiVersion ?? `${GROUP}/${VERSION}`,
        kind: regarding.kind,
        name: regarding.name,
        ...(regarding.namespace ? { namespace: regarding.namespace } : {}),
        ...(regarding.uid ? { uid: regarding.uid } : {}),
        ...(regarding.resourceVersion ? { resourceVersion: regarding.resourceVersion } : {}),
      },
    };
    await call(() => this.events.createNamespacedEvent({ namespace, body }));
  }

  async readLease(namespace: string, name: string): Promise<LeaseRecord | undefined> {
    try {
      return leaseRecord(await call(() => this.coordination.readNamespacedLease({ namespace, name })));
    } catch (e) {
      if (isStatus(e, 404)) return undefined;
      throw e;
    }
  }

  /** Creates (no resourceVersion) or replaces (conditional on resourceVersion) the lease. */
  async writeLease(namespace: string, name: string, record: LeaseRecord): Promise<LeaseRecord> {
    const body: V1Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name,
        namespace,
        ...(record.resourceVersion ? { resourceVersion: record.resourceVersion } : {}),
        ...(record.annotations ? { annotations: record.annotations } : {}),
      },
      spec: {
        ...(record.holderIdentity !== undefined ? { holderIdentity: record.holderIdentity } : {}),
        ...(record.leaseDurationSeconds !== undefined
          ? { leaseDurationSeconds: record.leaseDurationSeconds }
          : {}),
        ...(record.acquireTime ? { acquireTime: new V1MicroTime(record.acquireTime) } : {}),
        ...(record.renewTime ? { renewTime: new V1MicroTime(record.renewTime) } : {}),
        ...(record.leaseTransitions !== undefined ? { leaseTransitions: record.leaseTransitions } : {}),
      },
    };
    const written = await call(() =>
      record.resourceVersion
        ? this.coordination.replaceNamespacedLease({ namespace, name, body })
        : this.coordination.createNamespacedLease({ namespace, body }),
    );
    return leaseRecord(written);
  }

  /** Every ConfigMap of `namespace` matching `labelSelector`, in pages. */
  async listConfigMaps(namespace: string, labelSelector: string): Promise<ConfigMapRecord[]> {
    for (;;) {
      const out: ConfigMapRecord[] = [];
      let next: string | undefined;
      try {
        do {
          const page = await call(() =>
            this.core.listNamespacedConfigMap({
              namespace,
              labelSelector,
              limit: this.listPageSize,
              ...(next ? { _continue: next } : {}),
            }),
          );
          for (const item of page.items) out.push(configMapRecord(item));
          next = page.metadata?._continue || undefined;
        } while (next);
      } catch (e) {
        if (isStatus(e, 410) && next) continue; // the continue token expired: start over
        throw e;
      }
      return out;
    }
  }

  async readConfigMap(namespace: string, name: string): Promise<ConfigMapRecord | undefined> {
    try {
      return configMapRecord(await call(() => this.core.readNamespacedConfigMap({ namespace, name })));
    } catch (e) {
      if (isStatus(e, 404)) return undefined;
      throw e;
    }
  }

  /** Creates the ConfigMap (409 AlreadyExists if it exists). */
  async createConfigMap(namespace: string, record: ConfigMapRecord): Promise<ConfigMapRecord> {
    const body = configMapBody(namespace, record);
    return configMapRecord(await call(() => this.core.createNamespacedConfigMap({ namespace, body })));
  }

  /** Replaces the ConfigMap, conditional on `record.resourceVersion` (409 when it moved on). */
  async replaceConfigMap(namespace: string, record: ConfigMapRecord): Promise<ConfigMapRecord> {
    const body = configMapBody(namespace, record);
    return configMapRecord(
      await call(() => this.core.replaceNamespacedConfigMap({ namespace, name: record.name, body })),
    );
  }

  /**
   * Whether a namespace is being deleted: `terminating` once its deletion started (deletionTimestamp,
   * phase Terminating), `gone` when it no longer exists. Needs `get` on namespaces.
   */
  async namespaceState(name: string): Promise<'active' | 'terminating' | 'gone'> {
    try {
      const ns = await call(() => this.core.readNamespace({ name }));
      return ns.metadata?.deletionTimestamp || ns.status?.phase === 'Terminating' ? 'terminating' : 'active';
    } catch (e) {
      if (isStatus(e, 404)) return 'gone';
      throw e;
    }
  }

  /** One key of a Secret, decoded (Secrets are read by reference only, never listed or watched). */
  async readSecretKey(namespace: string, name: string, key: string): Promise<string | undefined> {
    const secret = await call(() => this.core.readNamespacedSecret({ namespace, name }));
    const value = secret.data?.[key];
    return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
  }

  /** A whole Secret (the DNSSEC key Secrets in the operator's namespace, read by name); undefined when absent. */
  async readSecret(namespace: string, name: string): Promise<SecretRecord | undefined> {
    try {
      const secret = await call(() => this.core.readNamespacedSecret({ namespace, name }));
      return {
        name,
        labels: secret.metadata?.labels ?? {},
        annotations: secret.metadata?.annotations ?? {},
        data: Object.fromEntries(
          Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
        ),
        ...(secret.metadata?.resourceVersion ? { resourceVersion: secret.metadata.resourceVersion } : {}),
      };
    } catch (e) {
      if (isStatus(e, 404)) return undefined;
      throw e;
    }
  }

  /** Creates a Secret (409 when it exists: create-only); with `resourceVersion`, replaces it conditionally. */
  async writeSecret(namespace: string, record: SecretRecord): Promise<void> {
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: record.name,
        namespace,
        labels: record.labels,
        annotations: record.annotations,
        ...(record.resourceVersion ? { resourceVersion: record.resourceVersion } : {}),
      },
      data: Object.fromEntries(
        Object.entries(record.data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]),
      ),
    };
    if (record.resourceVersion)
      await call(() => this.core.replaceNamespacedSecret({ namespace, name: record.name, body }));
    else await call(() => this.core.createNamespacedSecret({ namespace, body }));
  }

  /**
   * Who a bearer token belongs to, by a TokenReview (the API server's own authenticators: service
   * account tokens, static tokens, OIDC...); undefined when it does not authenticate. With `audience`
   * the review asks for that audience (`spec.audiences`) and the token counts only when the API
   * server confirms it in `status.audiences`: a token minted for another audience (the API server's
   * own, which every pod's normal service-account token carries) does not authenticate here.
   */
  async reviewToken(
    token: string,
    audience?: string,
  ): Promise<{ username: string; groups: string[] } | undefined> {
    const review = await call(() =>
      this.config.makeApiClient(AuthenticationV1Api).createTokenReview({
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, ...(audience !== undefined ? { audiences: [audience] } : {}) },
        },
      }),
    );
    const status = review.status;
    if (!status?.authenticated || !status.user?.username) return undefined;
    if (audience !== undefined && !(status.audiences ?? []).includes(audience)) return undefined;
    return { username: status.user.username, groups: status.user.groups ?? [] };
  }
}

function configMapBody(namespace: string, record: ConfigMapRecord): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: record.name,
      namespace,
      ...(record.labels ? { labels: record.labels } : {}),
      ...(record.ownerReferences ? { ownerReferences: record.ownerReferences } : {}),
      ...(record.resourceVersion ? { resourceVersion: record.resourceVersion } : {}),
    },
    data: record.data,
  };
}

function configMapRecord(object: V1ConfigMap): ConfigMapRecord {
  return {
    name: object.metadata?.name ?? '',
    ...(object.metadata?.resourceVersion ? { resourceVersion: object.metadata.resourceVersion } : {}),
    ...(object.metadata?.labels ? { labels: object.metadata.labels } : {}),
    ...(object.metadata?.ownerReferences
      ? {
          ownerReferences: object.metadata.ownerReferences.map((r) => ({
            apiVersion: r.apiVersion,
            kind: r.kind,
            name: r.name,
            uid: r.uid,
            ...(r.controller !== undefined ? { controller: r.controller } : {}),
            ...(r.blockOwnerDeletion !== undefined ? { blockOwnerDeletion: r.blockOwnerDeletion } : {}),
          })),
        }
      : {}),
    data: object.data ?? {},
  };
}

function leaseRecord(lease: V1Lease): LeaseRecord {
  const spec = lease.spec ?? {};
  const time = (t: unknown) => (t instanceof Date ? t.toISOString() : typeof t === 'string' ? t : undefined);
  const acquireTime = time(spec.acquireTime);
  const renewTime = time(spec.renewTime);
  return {
    ...(spec.holderIdentity !== undefined && spec.holderIdentity !== null
      ? { holderIdentity: spec.holderIdentity }
      : {}),
    ...(spec.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: spec.leaseDurationSeconds } : {}),
    ...(acquireTime ? { acquireTime } : {}),
    ...(renewTime ? { renewTime } : {}),
    ...(spec.leaseTransitions !== undefined ? { leaseTransitions: spec.leaseTransitions } : {}),
    ...(lease.metadata?.resourceVersion ? { resourceVersion: lease.metadata.resourceVersion } : {}),
    ...(lease.metadata?.annotations ? { annotations: lease.metadata.annotations } : {}),
  };
}
