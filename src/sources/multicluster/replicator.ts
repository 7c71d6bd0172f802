/**
 * The replicator of `zonekeeper operator --upstream-clusters`: DNSZones, DNSRecordSets and Domains of
 * every upstream cluster (and the front-door kinds of mapping.ts: ExternalDNS's DNSEndpoint, Datum's
 * DNSZone and DNSRecordSet, Gardener's DNSRecord, the homelab operator's DNSRecord, kubizone's Zone
 * and Record, each optional per upstream) mirrored into the
 * operator's own (downstream) cluster, where the controller serves them like any other; status back
 * upstream when the downstream status changes.
 *
 * Per upstream cluster: a reflector per kind (list + watch, backoff, relist on 410), a cache bounded
 * by `maxObjectsPerCluster`, and its own work queue with per-key backoff, so an upstream that is down
 * or slow stalls nobody else. One reconcile per upstream object, level-triggered:
 * - gone or being deleted upstream → delete the downstream copy; once it is gone (the controller held
 *   it with its finalizer until the backend no longer served it) take the upstream finalizer off;
 * - otherwise hold the upstream finalizer, claim the zone's domain (claims.ts: the first observed claim
 *   wins; a loser gets Accepted=False ClaimedByAnotherCluster upstream and no copy), make sure the
 *   mirrored namespace is ours (labels naming this origin; else NamespaceTaken), create or update the
 *   copy (mapping.ts), and write the copy's status upstream when it differs from what is there.
 * Downstream events of copies enqueue their upstream object; a periodic resync enqueues everything.
 * Clusters are read from the source every poll interval: a new one is started, a changed kubeconfig
 * restarts it, a removed one is stopped at once and its copies deleted after the removal grace
 * period (it may come back before), with its claims released.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { ForeignObject } from '../../api/frontdoors/front-door.ts';
import { gardenerTypes } from '../../api/frontdoors/gardener/index.ts';
import type { Kind, Resource } from '../../api/index.ts';
import { jsonEqual } from '../../control/conditions.ts';
import type { ForeignEvent, StoreEvent } from '../../control/resource-store.ts';
import type { WorkQueue as WorkQueueType } from '../../control/work-queue.ts';
import { WorkQueue } from '../../control/work-queue.ts';
import type { Registry } from '../../metrics/registry.ts';
import { resourceKey, splitKey } from '../../zones/resource-key.ts';
import { EventRecorder, eventFor } from '../kubernetes/events.ts';
import { type ApiResource, isStatus, KubeApi, KubeApiError, type KubeJson } from '../kubernetes/kube-api.ts';
import { describeError, type KubeObject, type ListerWatcher, Reflector } from '../kubernetes/reflector.ts';
import { ClaimStore } from './claim-store.ts';
import { copyDomain, ownerOf, zoneCopyVerdict } from './claims.ts';
import type { ClusterSource } from './cluster-source.ts';
import type { DownstreamApi } from './downstream-api.ts';
import {
  CLAIMED_ELSEWHERE,
  CLUSTER_LABEL,
  type Condition,
  claimDomain,
  DATUM_ZONE,
  isMirroredKind,
  KUBIZONE_ZONE,
  kubizoneZoneFqdn,
  MIRRORED_KIND_INFO,
  type MirroredKind,
  mirrorable,
  mirrorNamespace,
  mirrorOf,
  mirrorUpToDate,
  NAMESPACE_TAKEN,
  NATIVE_MIRRORED_KINDS,
  NO_FQDN,
  namespaceLabels,
  type Origin,
  originOf,
  refusedStatus,
  UPSTREAM_FINALIZER,
  type UpstreamObject,
  upstreamStatus,
} from './mapping.ts';
import { type ByteLimits, boundedList, boundedListerWatcher, type Coordinates } from './upstream-http.ts';

type Log = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

/** What the replicator reads of the downstream cache (the operator's KubernetesStore). */
export interface DownstreamStore {
  list(kind: Kind): Resource[];
  get(kind: Kind, key: string): Resource | undefined;
  watch(handler: (event: StoreEvent) => void): () => void;
  /** Front-door objects (by the door's store id), for mirrored front-door kinds. */
  listForeign?(door: string): ForeignObject[];
  getForeign?(door: string, key: string): ForeignObject | undefined;
  watchForeign?(handler: (event: ForeignEvent) => void): () => void;
}

export interface ReplicatorOptions {
  source: ClusterSource;
  store: DownstreamStore;
  api: DownstreamApi;
  /** The operator's namespace: the claim records. */
  namespace: string;
  registry: Registry;
  log: Log;
  identity: string;
  /** How often the source is read again (default 10 s). */
  pollIntervalMs?: number;
  /** How long a cluster's copies stay after it left the set (default 10 minutes). */
  removalGraceMs?: number;
  /** How often every object is reconciled again (default 5 minutes). */
  resyncIntervalMs?: number;
  /** Objects kept per cluster and kind; more are not mirrored (default 20,000). */
  maxObjectsPerCluster?: number;
  /** Bytes of objects kept per cluster, all kinds together; more are not mirrored (default 128 MiB). */
  maxBytesPerCluster?: number;
  /** Bytes of one upstream response (a list page) or watch event; longer ones are not read (default 16 MiB). */
  maxResponseBytes?: number;
  /** Longest wait between retries of an upstream's list/watch (default 30 s). */
  retryMaxMs?: number;
  /** Reconciles in flight per cluster (default 4). */
  concurrency?: number;
  /**
   * The kinds mirrored (default Zonekeeper's own three). Front-door kinds are mirrored only when the
   * downstream serves them (their front door registered, their CRDs installed downstream).
   */
  kinds?: readonly MirroredKind[];
  /** How often a front-door kind whose CRD an upstream lacks is listed again (default 10 s). */
  absentRecheckMs?: number;
}

export { zoneCopyVerdict };

const ROOT_MARK = '|';

function coordinatesOf(kind: MirroredKind): Coordinates {
  const { group, version, plural } = MIRRORED_KIND_INFO[kind];
  return { group, version, plural };
}

/** How KubeApi names a kind upstream: a native kind by name, a front door's by its coordinates. */
function upstreamResource(kind: MirroredKind): Kind | ApiResource {
  const info = MIRRORED_KIND_INFO[kind];
  return info.frontDoor
    ? { group: info.group, version: info.version, plural: info.plural, kind: info.kind }
    : (kind as Kind);
}

/**
 * For a front-door kind, a list the upstream forbids (its role predates the kind) counts as the kind
 * being absent there: no objects, listed again later, instead of keeping the whole cluster unsynced.
 */
function absentWhenForbidden(kind: MirroredKind, lw: ListerWatcher): ListerWatcher {
  if (!MIRRORED_KIND_INFO[kind].frontDoor) return lw;
  return {
    ...lw,
    list: () =>
      lw.list().catch((e: unknown) => {
        if (!isStatus(e, 403)) throw e;
        throw new KubeApiError(
          404,
          'Forbidden',
          `${(e as Error).message} (the upstream role does not grant this kind: treated as absent, see deploy/multicluster/upstream-rbac.yaml)`,
        );
      }),
  };
}

/** A downstream object as the replicator reads it, native or of a front door. */
type DownObject = Resource | ForeignObject;

/** The size an object is counted with against the byte limit (its JSON). */
function sizeOf(o: UpstreamObject): number {
  return Buffer.byteLength(JSON.stringify(o));
}

function itemKey(kind: MirroredKind, key: string): string {
  return `${kind}${ROOT_MARK}${key}`;
}

function splitItem(item: string): { kind: MirroredKind; key: string } {
  const i = item.indexOf(ROOT_MARK);
  return { kind: item.slice(0, i) as MirroredKind, key: item.slice(i + 1) };
}

/** Only what the replicator reads is kept of an upstream object (no managedFields). */
function trim(o: KubeObject): UpstreamObject {
  const raw = o as KubeJson;
  const m = (raw.metadata ?? {}) as UpstreamObject['metadata'] & { managedFields?: unknown };
  const { managedFields: _drop, ...metadata } = m;
  return {
    ...(raw.apiVersion ? { apiVersion: String(raw.apiVersion) } : {}),
    ...(raw.kind ? { kind: String(raw.kind) } : {}),
    metadata,
    ...(raw.spec ? { spec: raw.spec as Record<string, unknown> } : {}),
    ...(raw.status ? { status: raw.status as Record<string, unknown> } : {}),
  };
}

class UpstreamCluster {
  readonly name: string;
  readonly kubeconfig: string;
  readonly api: KubeApi;
  readonly queue: WorkQueueType;
  readonly events: EventRecorder;
  readonly kinds: readonly MirroredKind[];
  readonly cache: Map<MirroredKind, Map<string, UpstreamObject>>;
  readonly synced = new Set<MirroredKind>();
  readonly watchUp = new Map<MirroredKind, boolean>();
  /** Objects of each kind not kept (over a limit): not mirrored, not reconciled. */
  readonly dropped = new Map<MirroredKind, number>();
  /** Which limit each kind is held at, if one (objects or bytes). */
  readonly limited = new Map<MirroredKind, 'objects' | 'bytes'>();
  /** The size of each kept object (bytes of its JSON) and their sum over all kinds. */
  private readonly sizes: Map<MirroredKind, Map<string, number>>;
  bytes = 0;
  /** What the last list of each kind left unread, and why. */
  private readonly unlisted = new Map<MirroredKind, { left: number; limited?: 'objects' | 'bytes' }>();
  /** When each queued item first became due (for the lag metric). */
  readonly dueSince = new Map<string, number>();
  /** The domain each zone key had when last seen (to release claims after the zone is gone). */
  readonly domains = new Map<string, string>();
  /** Upstream namespaces seen holding objects (a new one may match a delegation's pattern). */
  private readonly knownNamespaces = new Set<string>();
  private readonly reflectors: Reflector[] = [];

  constructor(
    name: string,
    kubeconfig: string,
    owner: Replicator,
    options: {
      maxObjects: number;
      maxBytes: number;
      maxResponseBytes: number;
      retryMaxMs: number;
      concurrency: number;
      identity: string;
      kinds: readonly MirroredKind[];
      absentRecheckMs: number;
    },
  ) {
    this.name = name;
    this.kinds = options.kinds;
    this.cache = new Map(options.kinds.map((k) => [k, new Map()]));
    this.sizes = new Map(options.kinds.map((k) => [k, new Map()]));
    this.kubeconfig = kubeconfig;
    const config = new KubeConfig();
    config.loadFromString(kubeconfig);
    this.api = new KubeApi(config);
    this.queue = new WorkQueue((item) => owner.reconcile(this, item), {
      concurrency: options.concurrency,
      baseDelayMs: 200,
      maxDelayMs: options.retryMaxMs,
    });
    this.queue.onResult = (item, error) => owner.onResult(this, item, error);
    this.events = new EventRecorder({
      api: this.api,
      instance: options.identity,
      controller: 'dns.zonekeeper.dev/multicluster',
      clusterNamespace: 'default',
      rate: 5,
      burst: 50,
    });
    for (const kind of options.kinds) {
      const cache = this.cache.get(kind)!;
      const sizes = this.sizes.get(kind)!;
      const forget = (key: string): void => {
        this.bytes -= sizes.get(key) ?? 0;
        sizes.delete(key);
        cache.delete(key);
      };
      const drop = (why: 'objects' | 'bytes'): void => {
        this.dropped.set(kind, (this.dropped.get(kind) ?? 0) + 1);
        if (!this.limited.has(kind)) this.limited.set(kind, why);
      };
      // Kept only within the limits (count per kind, bytes per cluster); what is not kept is neither
      // mirrored nor reconciled, so it costs no memory and no call downstream.
      const admit = (key: string, object: UpstreamObject): boolean => {
        const size = sizeOf(object);
        const had = sizes.get(key);
        if (had === undefined && cache.size >= options.maxObjects) {
          drop('objects');
          return false;
        }
        if (this.bytes - (had ?? 0) + size > options.maxBytes) {
          // A kept object grown past the budget is let go: its copy stays as it was last mirrored.
          if (had !== undefined) forget(key);
          drop('bytes');
          return false;
        }
        cache.set(key, object);
        sizes.set(key, size);
        this.bytes += size - (had ?? 0);
        return true;
      };
      // Objects not to be mirrored (another extension's Gardener records) are not kept, unless they still
      // carry the replicator's finalizer, which the reconcile then takes off.
      const ignored = (o: UpstreamObject): boolean =>
        !mirrorable(kind, o, gardenerTypes()) && !o.metadata.finalizers?.includes(UPSTREAM_FINALIZER);
      const limits = (): ByteLimits => ({
        maxObjects: options.maxObjects,
        maxResponseBytes: options.maxResponseBytes,
        // A list may use what the other kinds of the cluster leave of the budget.
        maxBytes: Math.max(0, options.maxBytes - (this.bytes - this.bytesOf(kind))),
      });
      this.reflectors.push(
        new Reflector({
          name: `upstream ${name} ${kind}`,
          // At most the limits are read: a cluster with more (or an API server sending more) does not
          // make this process hold it.
          listerWatcher: absentWhenForbidden(
            kind,
            boundedListerWatcher(config, coordinatesOf(kind), limits, (r) =>
              this.unlisted.set(kind, { left: r.left, ...(r.limited ? { limited: r.limited } : {}) }),
            ),
          ),
          backoff: { initialMs: 250, maxMs: options.retryMaxMs },
          // A front-door kind whose CRD this upstream lacks holds no objects: listed again now and
          // then, not retried as an error.
          ...(MIRRORED_KIND_INFO[kind].frontDoor
            ? { absentIsEmpty: { recheckMs: options.absentRecheckMs } }
            : {}),
          log: (level, message, fields) => owner.log(level, message, { cluster: name, ...fields }),
          onMetric: (what) => {
            if (what === 'watch_error' || what === 'watchdog') this.watchUp.set(kind, false);
            if (what === 'bookmark') this.watchUp.set(kind, true);
          },
          onReplace: (items) => {
            this.watchUp.set(kind, true);
            const before = new Set(cache.keys());
            for (const key of [...cache.keys()]) forget(key);
            const unlisted = this.unlisted.get(kind);
            this.dropped.set(kind, unlisted?.left ?? 0);
            this.limited.delete(kind);
            if (unlisted?.limited) this.limited.set(kind, unlisted.limited);
            for (const item of items) {
              const o = trim(item);
              const key = resourceKey(o.metadata);
              if (ignored(o) || !admit(key, o)) continue;
              before.delete(key);
              this.enqueue(kind, key);
            }
            // Objects kept before and not listed now are gone, unless the list stopped at a limit:
            // then they may only be unread, and their copies are left as they are.
            if (!this.limited.has(kind)) for (const key of before) this.enqueue(kind, key);
            if (this.limited.has(kind))
              owner.log(
                'warn',
                'multicluster: upstream cluster holds more than is kept; the rest is not mirrored (UPSTREAM_LIMIT_REACHED)',
                {
                  cluster: name,
                  kind,
                  limit: this.limited.get(kind),
                  kept: cache.size,
                  keptBytes: this.bytes,
                  dropped: this.dropped.get(kind),
                },
              );
            this.synced.add(kind);
            for (const o of cache.values())
              if (o.metadata.namespace) this.knownNamespaces.add(o.metadata.namespace);
            // Copies of objects this cluster no longer has are reconciled (and deleted) too.
            owner.enqueueOrphans(this, kind);
          },
          onEvent: (type, item) => {
            this.watchUp.set(kind, true);
            const o = trim(item);
            const key = resourceKey(o.metadata);
            if (type === 'DELETED') {
              // Gone upstream: its copy (if it has one) is deleted, kept or not.
              const kept = cache.has(key);
              forget(key);
              if (kept || owner.hasCopy(this, kind, key)) this.enqueue(kind, key);
              return;
            }
            if (ignored(o)) {
              // Not ours to mirror (any more): its copy, if it has one, is deleted.
              const kept = cache.has(key);
              forget(key);
              if (kept || owner.hasCopy(this, kind, key)) this.enqueue(kind, key);
              return;
            }
            const wasLimited = this.limited.get(kind);
            if (!admit(key, o)) {
              if (!wasLimited)
                owner.log(
                  'warn',
                  'multicluster: upstream cluster holds more than is kept; the rest is not mirrored (UPSTREAM_LIMIT_REACHED)',
                  {
                    cluster: name,
                    kind,
                    limit: this.limited.get(kind),
                    kept: cache.size,
                    keptBytes: this.bytes,
                  },
                );
              return;
            }
            this.noteNamespace(o.metadata.namespace);
            this.enqueue(kind, key);
          },
        }),
      );
    }
  }

  private bytesOf(kind: MirroredKind): number {
    let sum = 0;
    for (const size of this.sizes.get(kind)!.values()) sum += size;
    return sum;
  }

  /**
   * Puts what a write returned into the cache, unless the watch has moved the object on (or deleted
   * it) since the version the write was made against: then the watch's version is at least as new.
   */
  remember(kind: MirroredKind, before: UpstreamObject, written: KubeJson): void {
    const cache = this.cache.get(kind)!;
    const key = resourceKey(before.metadata);
    if (cache.get(key)?.metadata.resourceVersion === before.metadata.resourceVersion) {
      const o = trim(written);
      const sizes = this.sizes.get(kind)!;
      const size = sizeOf(o);
      this.bytes += size - (sizes.get(key) ?? 0);
      sizes.set(key, size);
      cache.set(key, o);
    }
  }

  /**
   * A namespace seen for the first time: zones whose delegations name namespaces by pattern are
   * mapped again, since the pattern may now match one more namespace.
   */
  private noteNamespace(namespace: string | undefined): void {
    if (!namespace || this.knownNamespaces.has(namespace)) return;
    this.knownNamespaces.add(namespace);
    for (const [key, zone] of this.cache.get('DNSZone') ?? []) {
      const delegations = zone.spec?.delegations as { namespacePatterns?: string[] }[] | undefined;
      if (delegations?.some((d) => d.namespacePatterns?.some((p) => namespace.startsWith(p.slice(0, -1)))))
        this.enqueue('DNSZone', key);
    }
    // kubizone Zones whose delegations admit every namespace: their copies list the cluster's namespaces.
    for (const [key, zone] of this.cache.get(KUBIZONE_ZONE) ?? []) {
      const delegations = zone.spec?.delegations as { namespaces?: string[] }[] | undefined;
      if (delegations?.some((d) => (d.namespaces ?? []).length === 0)) this.enqueue(KUBIZONE_ZONE, key);
    }
  }

  enqueue(kind: MirroredKind, key: string): void {
    const item = itemKey(kind, key);
    if (!this.dueSince.has(item)) this.dueSince.set(item, performance.now());
    this.queue.add(item);
  }

  get hasSynced(): boolean {
    return this.kinds.every((k) => this.synced.has(k));
  }

  /** Upstream namespaces holding objects (for delegation patterns). */
  namespaces(): Set<string> {
    const out = new Set<string>();
    for (const cache of this.cache.values())
      for (const o of cache.values()) if (o.metadata.namespace) out.add(o.metadata.namespace);
    return out;
  }

  start(): void {
    this.queue.start();
    for (const r of this.reflectors) r.start();
  }

  async stop(): Promise<void> {
    this.queue.shutdown();
    await Promise.all(this.reflectors.map((r) => r.stop()));
  }
}

export class Replicator {
  readonly log: Log;
  private readonly options: ReplicatorOptions;
  private readonly clusters = new Map<string, UpstreamCluster>();
  private readonly removals = new Map<string, { deadline: number; timer: NodeJS.Timeout }>();
  private readonly claims: ClaimStore;
  /** Downstream namespaces known to be mirrored ones, with their origin. */
  private readonly origins = new Map<string, Origin>();
  /** Namespaces checked (or created) with our labels. */
  private readonly namespacesReady = new Set<string>();
  private pollTimer?: NodeJS.Timeout;
  private resyncTimer?: NodeJS.Timeout;
  private unwatch?: () => void;
  private stopped = false;
  private polling?: Promise<void>;
  private readonly metrics: ReturnType<typeof createMetrics>;
  readonly kinds: readonly MirroredKind[];

  constructor(options: ReplicatorOptions) {
    this.options = options;
    this.kinds = options.kinds ?? NATIVE_MIRRORED_KINDS;
    this.log = options.log;
    this.claims = new ClaimStore(options.api, options.namespace);
    // One set of metrics per registry: a replica that leads again starts another replicator.
    let shared = METRICS.get(options.registry);
    if (!shared) {
      const holder = { current: this as Replicator };
      shared = { holder, metrics: createMetrics(options.registry, () => holder.current) };
      METRICS.set(options.registry, shared);
    }
    shared.holder.current = this;
    this.metrics = shared.metrics;
  }

  /** Reads the claims, then the source, and keeps both going until stop(). */
  async start(): Promise<void> {
    for (let delay = 500; !this.stopped; delay = Math.min(delay * 2, 10_000)) {
      try {
        await this.claims.load();
        break;
      } catch (e) {
        this.log(
          'error',
          'multicluster: cannot read the domain claims; nothing is mirrored until they can be read',
          {
            error: describeError(e),
            retryInMs: delay,
          },
        );
        await new Promise((r) => setTimeout(r, delay).unref());
      }
    }
    if (this.stopped) return;
    const unwatchNative = this.options.store.watch((event) =>
      this.onDownstream(event.kind, event.object.metadata),
    );
    const unwatchForeign = this.options.store.watchForeign?.((event) =>
      this.onDownstream(event.door, event.object.metadata),
    );
    this.unwatch = () => {
      unwatchNative();
      unwatchForeign?.();
    };
    await this.poll();
    // Copies of clusters that are not in the set (they left while no replicator ran): start their grace.
    for (const kind of this.kinds)
      for (const o of this.downList(kind)) {
        const origin = originOf(o.metadata.namespace, o.metadata.labels);
        if (origin && !this.clusters.has(origin.cluster)) this.scheduleRemoval(origin.cluster);
      }
    const schedulePoll = () => {
      this.pollTimer = setTimeout(async () => {
        await this.poll();
        if (!this.stopped) schedulePoll();
      }, this.options.pollIntervalMs ?? 10_000);
      this.pollTimer.unref();
    };
    schedulePoll();
    this.resyncTimer = setInterval(() => this.resync(), this.options.resyncIntervalMs ?? 300_000);
    this.resyncTimer.unref();
    this.log('info', 'multicluster: replicating', {
      source: this.options.source.describe,
      clusters: [...this.clusters.keys()].join(',') || '(none)',
      claims: this.claims.size,
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.pollTimer);
    clearInterval(this.resyncTimer);
    this.unwatch?.();
    for (const r of this.removals.values()) clearTimeout(r.timer);
    this.removals.clear();
    await this.polling;
    await Promise.all([...this.clusters.values()].map((c) => c.stop()));
    this.clusters.clear();
  }

  /** The clusters, for metrics and tests. */
  get clusterList(): readonly UpstreamCluster[] {
    return [...this.clusters.values()];
  }

  get pendingRemovals(): readonly string[] {
    return [...this.removals.keys()];
  }

  private poll(): Promise<void> {
    this.polling = (async () => {
      let set: Awaited<ReturnType<ClusterSource['read']>>;
      try {
        set = await this.options.source.read();
      } catch (e) {
        // A source that cannot be read changes nothing: no cluster is removed for it.
        this.log('error', 'multicluster: cannot read the upstream clusters; keeping the current set', {
          source: this.options.source.describe,
          error: describeError(e),
        });
        return;
      }
      for (const s of set.skipped)
        this.log('warn', 'multicluster: upstream cluster entry skipped', {
          entry: s.entry,
          reason: s.reason,
        });
      for (const [name, kubeconfig] of set.clusters) {
        if (this.stopped) return;
        const current = this.clusters.get(name);
        if (current && current.kubeconfig === kubeconfig) continue;
        if (current) {
          this.log('info', 'multicluster: kubeconfig changed; reconnecting', { cluster: name });
          await current.stop();
          this.clusters.delete(name);
        }
        const removal = this.removals.get(name);
        if (removal) {
          clearTimeout(removal.timer);
          this.removals.delete(name);
          this.log('info', 'multicluster: cluster is back within its removal grace period; nothing removed', {
            cluster: name,
          });
        }
        let cluster: UpstreamCluster;
        try {
          cluster = new UpstreamCluster(name, kubeconfig, this, {
            maxObjects: this.options.maxObjectsPerCluster ?? 20_000,
            maxBytes: this.options.maxBytesPerCluster ?? 128 * 1024 * 1024,
            maxResponseBytes: this.options.maxResponseBytes ?? 16 * 1024 * 1024,
            retryMaxMs: this.options.retryMaxMs ?? 30_000,
            concurrency: this.options.concurrency ?? 4,
            identity: this.options.identity,
            kinds: this.kinds,
            absentRecheckMs: this.options.absentRecheckMs ?? 10_000,
          });
        } catch (e) {
          this.log('error', 'multicluster: kubeconfig cannot be used; cluster skipped', {
            cluster: name,
            error: describeError(e),
          });
          continue;
        }
        this.clusters.set(name, cluster);
        cluster.start();
        if (current === undefined) this.log('info', 'multicluster: cluster added', { cluster: name });
      }
      for (const [name, cluster] of this.clusters) {
        if (set.clusters.has(name)) continue;
        this.clusters.delete(name);
        await cluster.stop();
        this.scheduleRemoval(name, cluster.kubeconfig);
      }
    })();
    return this.polling;
  }

  /**
   * Removes a cluster's copies once the grace period has passed. With the kubeconfig it was last
   * reached with, the upstream finalizers are then released too, as far as the upstream still
   * answers and lets the replicator in (one attempt: a cluster whose access was revoked keeps them,
   * see docs/multicluster.md).
   */
  private scheduleRemoval(cluster: string, kubeconfig?: string): void {
    if (this.removals.has(cluster) || this.stopped) return;
    const grace = this.options.removalGraceMs ?? 600_000;
    this.log('info', 'multicluster: cluster left the set; its records are removed after the grace period', {
      cluster,
      graceSeconds: grace / 1000,
    });
    const run = async (): Promise<void> => {
      if (this.stopped || this.clusters.has(cluster)) return;
      let remaining = 0;
      try {
        remaining = await this.removeCopies(cluster);
      } catch (e) {
        this.log('warn', 'multicluster: removing a cluster’s copies failed; retrying', {
          cluster,
          error: describeError(e),
        });
        remaining = 1;
      }
      if (remaining > 0) {
        const entry = this.removals.get(cluster);
        if (entry) entry.timer = setTimeout(() => void run(), 1000).unref();
        return;
      }
      this.removals.delete(cluster);
      this.log('info', 'multicluster: cluster removed; its copies, namespaces and claims are gone', {
        cluster,
      });
      if (kubeconfig) await this.releaseUpstreamFinalizers(cluster, kubeconfig);
    };
    const timer = setTimeout(() => void run(), grace).unref();
    this.removals.set(cluster, { deadline: Date.now() + grace, timer });
  }

  private async releaseUpstreamFinalizers(cluster: string, kubeconfig: string): Promise<void> {
    let released = 0;
    try {
      const config = new KubeConfig();
      config.loadFromString(kubeconfig);
      const api = new KubeApi(config);
      for (const kind of this.kinds) {
        // Read within the same limits as the reflectors: the cluster is no more trusted on its way out.
        const { items, left } = await boundedList(config, coordinatesOf(kind), {
          maxObjects: this.options.maxObjectsPerCluster ?? 20_000,
          maxResponseBytes: this.options.maxResponseBytes ?? 16 * 1024 * 1024,
          maxBytes: this.options.maxBytesPerCluster ?? 128 * 1024 * 1024,
        }).catch((e: unknown) => {
          // A front-door kind the cluster does not have: nothing to release.
          if (MIRRORED_KIND_INFO[kind].frontDoor && isStatus(e, 404)) return { items: [], left: 0 };
          throw e;
        });
        if (left > 0)
          this.log(
            'warn',
            'multicluster: the removed cluster holds more than is read; remove the rest of its finalizers there by hand',
            {
              cluster,
              kind,
              unread: left,
            },
          );
        for (const item of items) {
          const o = trim(item);
          if (!o.metadata.finalizers?.includes(UPSTREAM_FINALIZER)) continue;
          if (this.stopped || this.clusters.has(cluster)) return; // it came back: it holds them again
          await api.mergePatch(upstreamResource(kind), o.metadata.namespace, o.metadata.name, {
            metadata: {
              finalizers: o.metadata.finalizers.filter((f) => f !== UPSTREAM_FINALIZER),
              resourceVersion: o.metadata.resourceVersion,
            },
          });
          released++;
        }
      }
      this.log('info', 'multicluster: upstream finalizers of the removed cluster released', {
        cluster,
        released,
      });
    } catch (e) {
      this.log(
        'warn',
        'multicluster: could not release the removed cluster’s upstream finalizers; remove them there by hand',
        {
          cluster,
          released,
          error: describeError(e),
        },
      );
    }
  }

  /** Deletes a removed cluster's copies; once none is left, its namespaces and claims. Returns what is left. */
  private async removeCopies(cluster: string): Promise<number> {
    let remaining = 0;
    for (const kind of this.kinds)
      for (const o of this.downList(kind)) {
        const origin = originOf(o.metadata.namespace, o.metadata.labels);
        if (origin?.cluster !== cluster) continue;
        remaining++;
        if (!o.metadata.deletionTimestamp)
          await this.options.api.delete(kind, o.metadata.namespace!, o.metadata.name, o.metadata.uid);
      }
    if (remaining > 0) return remaining;
    for (const ns of await this.options.api.listNamespaces(`${CLUSTER_LABEL}=${cluster}`)) {
      if (!originOf(ns.name, ns.labels)) continue;
      if (!ns.terminating) await this.options.api.deleteNamespace(ns.name);
      this.namespacesReady.delete(ns.name);
    }
    for (const domain of this.claims.domainsOf(cluster)) await this.releaseClaim(domain, cluster);
    return 0;
  }

  private resync(): void {
    for (const c of this.clusters.values()) {
      if (!c.hasSynced) continue;
      for (const [kind, cache] of c.cache) for (const key of cache.keys()) c.enqueue(kind, key);
      for (const kind of c.kinds) this.enqueueOrphans(c, kind);
      // Claims of domains this cluster holds no zone for any more (a zone deleted while no one watched).
      for (const domain of this.claims.domainsOf(c.name))
        void this.releaseIfUnused(c, domain).catch(() => {});
    }
  }

  /** Enqueues the upstream key of every downstream copy of `cluster` of `kind` (the reconcile decides). */
  enqueueOrphans(c: UpstreamCluster, kind: MirroredKind): void {
    // Over a limit, a copy without a kept object may be of one not read: it is left as it is.
    if (c.limited.has(kind)) return;
    const cache = c.cache.get(kind)!;
    for (const o of this.downList(kind)) {
      const origin = originOf(o.metadata.namespace, o.metadata.labels);
      if (origin?.cluster !== c.name) continue;
      this.origins.set(o.metadata.namespace!, origin);
      const key = `${origin.namespace}/${o.metadata.name}`;
      if (!cache.has(key)) c.enqueue(kind, key);
    }
  }

  private onDownstream(
    kind: string,
    metadata: { name: string; namespace?: string | undefined; labels?: Record<string, string> | undefined },
  ): void {
    if (!isMirroredKind(kind) || !this.kinds.includes(kind)) return;
    const origin = originOf(metadata.namespace, metadata.labels);
    if (!origin) return;
    this.origins.set(metadata.namespace!, origin);
    const c = this.clusters.get(origin.cluster);
    const key = `${origin.namespace}/${metadata.name}`;
    // A copy of an object not kept (the cluster is over a limit) is left alone.
    if (c && (c.cache.get(kind)!.has(key) || !c.limited.has(kind))) c.enqueue(kind, key);
  }

  /** The downstream copies of a kind (native, or a front door's), as the operator's cache holds them. */
  private downList(kind: MirroredKind): DownObject[] {
    if (!MIRRORED_KIND_INFO[kind].frontDoor) return this.options.store.list(kind as Kind);
    return this.options.store.listForeign?.(kind) ?? [];
  }

  private downGet(kind: MirroredKind, key: string): DownObject | undefined {
    if (!MIRRORED_KIND_INFO[kind].frontDoor) return this.options.store.get(kind as Kind, key);
    return this.options.store.getForeign?.(kind, key);
  }

  /** Whether `cluster` has a downstream copy of the upstream object `key` (in the local cache). */
  hasCopy(c: UpstreamCluster, kind: MirroredKind, key: string): boolean {
    const { namespace = 'default', name } = splitKey(key);
    const found = this.downGet(kind, `${mirrorNamespace(c.name, namespace)}/${name}`);
    const origin = found ? originOf(found.metadata.namespace, found.metadata.labels) : undefined;
    return origin?.cluster === c.name && origin.namespace === namespace;
  }

  private originOfNamespace = (ns: string): Origin | undefined => this.origins.get(ns);

  onResult(c: UpstreamCluster, item: string, error: unknown): void {
    if (error === undefined) {
      const since = c.dueSince.get(item);
      c.dueSince.delete(item);
      if (since !== undefined) this.metrics.lag.labels(c.name).observe((performance.now() - since) / 1000);
      this.metrics.reconciles.labels(c.name, 'ok').inc();
      return;
    }
    this.metrics.reconciles.labels(c.name, 'error').inc();
    const { kind, key } = splitItem(item);
    this.log(
      isStatus(error, 409) ? 'info' : 'warn',
      'multicluster: reconcile failed; retrying with backoff',
      {
        cluster: c.name,
        kind,
        key,
        error: describeError(error),
      },
    );
  }

  /** One upstream object of one cluster (see the module comment). */
  async reconcile(c: UpstreamCluster, item: string): Promise<{ requeueAfterMs?: number } | undefined> {
    if (!c.hasSynced) return { requeueAfterMs: 500 };
    const { kind, key } = splitItem(item);
    const { namespace = 'default', name } = splitKey(key);
    const downNs = mirrorNamespace(c.name, namespace);
    this.origins.set(downNs, { cluster: c.name, namespace });
    const up = c.cache.get(kind)!.get(key);
    // Only a copy of this very origin is ever deleted or changed: a downstream object of that name
    // without it (made there by someone else) is left alone.
    const ours = (labels: Record<string, string> | undefined): boolean => {
      const origin = originOf(downNs, labels);
      return origin?.cluster === c.name && origin.namespace === namespace;
    };
    const found = this.downGet(kind, `${downNs}/${name}`);
    const foreign = found !== undefined && !ours(found.metadata.labels);
    const down = foreign ? undefined : found;
    const { api } = this.options;

    if (!up || up.metadata.deletionTimestamp || !mirrorable(kind, up, gardenerTypes())) {
      if (down) {
        if (!down.metadata.deletionTimestamp) await api.delete(kind, downNs, name, down.metadata.uid);
        // The controller holds the copy until the backend is clean; its deletion enqueues this again.
        return { requeueAfterMs: 5000 };
      }
      // The cache may lag behind a copy just created: ask the API server.
      const raw = foreign ? undefined : await api.get(kind, downNs, name);
      if (raw && ours((raw.metadata as { labels?: Record<string, string> }).labels)) {
        const m = raw.metadata as { deletionTimestamp?: string; uid?: string };
        if (!m.deletionTimestamp) await api.delete(kind, downNs, name, m.uid);
        return { requeueAfterMs: 2000 };
      }
      if (up?.metadata.finalizers?.includes(UPSTREAM_FINALIZER)) await this.setFinalizer(c, kind, up, false);
      if (MIRRORED_KIND_INFO[kind].zone) {
        const domain = (up ? this.zoneDomainOf(c, kind, up) : undefined) ?? c.domains.get(item);
        if (!up) c.domains.delete(item);
        if (domain) await this.releaseIfUnused(c, domain);
      }
      return undefined;
    }

    if (!up.metadata.finalizers?.includes(UPSTREAM_FINALIZER)) {
      await this.setFinalizer(c, kind, up, true);
      return undefined; // the watch brings the object with the finalizer, and this again
    }

    // A zone's domain: claimed for this cluster only once its copy is accepted downstream (below);
    // a domain another cluster holds that way refuses the zone here, and no copy is made.
    let domain: string | undefined;
    if (MIRRORED_KIND_INFO[kind].zone) {
      domain = this.zoneDomainOf(c, kind, up);
      const previous = c.domains.get(item);
      if (domain === undefined) {
        // A kubizone Zone under a parent (spec.zoneRef) of its cluster that has no fqdn (yet): its
        // domain is unknown, so nothing can be claimed; not mirrored until the parent has one.
        c.domains.delete(item);
        if (down && !down.metadata.deletionTimestamp) await api.delete(kind, downNs, name, down.metadata.uid);
        if (previous) await this.releaseIfUnused(c, previous);
        const ref = up.spec?.zoneRef as { name?: string; namespace?: string } | undefined;
        await this.writeRefused(
          c,
          kind,
          up,
          NO_FQDN,
          `spec.zoneRef: Zone ${ref?.namespace ?? namespace}/${ref?.name ?? ''} does not exist in this cluster or has no fqdn yet; this Zone's domain is not known, so it is not mirrored`,
        );
        return { requeueAfterMs: this.options.absentRecheckMs ?? 10_000 };
      }
      c.domains.set(item, domain);
      if (previous !== domain && kind === KUBIZONE_ZONE) this.enqueueKubizoneChildren(c, key);
      if (previous && previous !== domain) await this.releaseIfUnused(c, previous);
      const owner = ownerOf(this.claims.get(domain));
      if (owner && owner.cluster !== c.name) {
        if (down && !down.metadata.deletionTimestamp) await api.delete(kind, downNs, name, down.metadata.uid);
        await this.writeRefused(
          c,
          kind,
          up,
          CLAIMED_ELSEWHERE,
          `${domain} is claimed by another upstream cluster, whose zone of it was accepted first (its claim observed at ${owner.observed}); it is served from there. Remove one of the two DNSZones.`,
        );
        return undefined;
      }
    }
    const refuse = async (reason: string, message: string): Promise<undefined> => {
      await this.writeRefused(c, kind, up, reason, message);
      if (domain) await this.dropClaimUnlessAccepted(c, domain);
      return undefined;
    };

    if (!(await this.ensureNamespace(downNs, { cluster: c.name, namespace })))
      return refuse(
        NAMESPACE_TAKEN,
        `the downstream namespace ${downNs} exists and is not this namespace's mirror; ask the operator's administrators`,
      );

    if (foreign)
      return refuse(
        NAMESPACE_TAKEN,
        `the downstream object ${downNs}/${name} is not this object's copy; ask the operator's administrators`,
      );
    const { object: desired, problems } = mirrorOf(kind, up, { cluster: c.name, namespaces: c.namespaces() });
    if (problems.length > 0)
      this.log('warn', 'multicluster: object mirrored with changes', {
        cluster: c.name,
        kind,
        key,
        problems: problems.join('; '),
      });
    let current: { metadata: Record<string, unknown>; spec?: unknown; status?: unknown } | undefined = down as
      | { metadata: Record<string, unknown>; spec?: unknown; status?: unknown }
      | undefined;
    if (!current) {
      try {
        await api.create(kind, downNs, desired);
        return undefined; // the downstream watch brings the copy back
      } catch (e) {
        if (isStatus(e, 422) || isStatus(e, 400)) return refuse('Invalid', (e as KubeApiError).message);
        // The namespace was deleted behind the replicator's back: check (and make) it again next time.
        if (isStatus(e, 404)) this.namespacesReady.delete(downNs);
        // A front-door kind whose CRD the serving cluster lacks: said upstream, looked at again later.
        if (isStatus(e, 404) && MIRRORED_KIND_INFO[kind].frontDoor && (await api.readNamespace(downNs))) {
          await refuse(
            'KindNotServed',
            `the serving cluster does not serve ${MIRRORED_KIND_INFO[kind].plural}.${MIRRORED_KIND_INFO[kind].group} (its CRD is not installed there); ask its administrators`,
          );
          return { requeueAfterMs: this.options.absentRecheckMs ?? 10_000 };
        }
        if (!isStatus(e, 409)) throw e;
        // It exists (the cache lags, or Zonekeeper's rules refused it so the cache leaves it out).
        current = (await api.get(kind, downNs, name)) as typeof current;
        if (!current) return { requeueAfterMs: 500 };
      }
    }
    // A copy the downstream cache leaves out (Zonekeeper's rules refuse it): its status changes bring
    // no event here, so it is looked at again until it has the status to send upstream.
    const uncached = down === undefined;
    const meta = current.metadata as {
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      finalizers?: string[];
      resourceVersion?: string;
      uid?: string;
      deletionTimestamp?: string;
    };
    if (meta.deletionTimestamp) return { requeueAfterMs: 2000 }; // an old copy on its way out
    if (!ours(meta.labels))
      // Not a copy of ours (created in the mirrored namespace by someone else): leave it alone.
      return refuse(NAMESPACE_TAKEN, `the downstream object ${downNs}/${name} is not this object's copy`);
    if (!mirrorUpToDate(desired, current as Parameters<typeof mirrorUpToDate>[1])) {
      const keptAnnotations = Object.fromEntries(
        Object.entries(meta.annotations ?? {}).filter(
          ([k]) => !k.startsWith('multicluster.zonekeeper.dev/') && k !== 'dns.zonekeeper.dev/confirm-change',
        ),
      );
      try {
        await api.replace(kind, downNs, name, {
          apiVersion: desired.apiVersion,
          kind: desired.kind,
          metadata: {
            name,
            namespace: downNs,
            resourceVersion: meta.resourceVersion,
            labels: { ...(meta.labels ?? {}), ...desired.metadata.labels },
            annotations: { ...keptAnnotations, ...desired.metadata.annotations },
            ...(meta.finalizers ? { finalizers: meta.finalizers } : {}),
          },
          spec: desired.spec,
        });
      } catch (e) {
        if (isStatus(e, 422) || isStatus(e, 400)) return refuse('Invalid', (e as KubeApiError).message);
        throw e;
      }
      return undefined; // the new status comes with the next downstream event
    }
    const status = upstreamStatus(
      kind,
      current as Parameters<typeof upstreamStatus>[1],
      c.name,
      this.originOfNamespace,
    );
    // Datum's status.domainRef is written upstream by Datum's domain controller: kept as it is there.
    if (status && kind === DATUM_ZONE) {
      if (up.status?.domainRef !== undefined) status.domainRef = up.status.domainRef;
      else delete status.domainRef;
    }
    // Whether the status says anything new (lastTransitionTime included: a transition is a change).
    if (status && !jsonEqual(status, up.status ?? {})) await this.writeStatus(c, kind, up, status);
    if (domain) {
      const copy = current as { metadata: { generation?: number }; status?: unknown };
      const verdict = zoneCopyVerdict(copy);
      if (verdict === 'accepted' && this.claims.owner(domain) !== c.name) {
        const owner = ownerOf(await this.claims.claim(domain, c.name));
        // Another cluster's zone was accepted first: this one is refused on the next pass.
        if (owner?.cluster !== c.name) return { requeueAfterMs: 100 };
        this.log('info', 'multicluster: domain claimed', { domain, cluster: c.name });
        this.enqueueZonesOf(domain, c.name);
      } else if (verdict === 'refused') await this.dropClaimUnlessAccepted(c, domain);
    }
    if (uncached && !status) return { requeueAfterMs: 1000 };
    return undefined;
  }

  /**
   * Takes `c`'s claim off `domain` unless another copy of `c`'s zones of that domain is accepted: a
   * claim counts only for an accepted zone, so a zone refused downstream (invalid, unverified, in
   * conflict) holds no domain against other clusters.
   */
  private async dropClaimUnlessAccepted(c: UpstreamCluster, domain: string): Promise<void> {
    if (!this.claims.get(domain)?.claimants.some((x) => x.cluster === c.name)) return;
    for (const [kind, o] of this.zoneCopies()) {
      const origin = originOf(o.metadata.namespace, o.metadata.labels);
      if (origin?.cluster !== c.name) continue;
      if (copyDomain(kind, o) !== domain) continue;
      if (
        zoneCopyVerdict(o as unknown as { metadata: { generation?: number }; status?: unknown }) ===
        'accepted'
      )
        return;
    }
    await this.releaseClaim(domain, c.name);
  }

  /** Enqueues every other cluster's zones of `domain` (their claim may have changed). */
  private enqueueZonesOf(domain: string, except?: string): void {
    for (const other of this.clusters.values()) {
      if (other.name === except) continue;
      for (const kind of other.kinds) {
        if (!MIRRORED_KIND_INFO[kind].zone) continue;
        for (const [key, o] of other.cache.get(kind)!)
          if (this.zoneDomainOf(other, kind, o) === domain) other.enqueue(kind, key);
      }
    }
  }

  /**
   * The domain an upstream zone object claims: its domainName; a kubizone Zone's fqdn through its
   * parents in the same cluster (undefined while one is missing).
   */
  private zoneDomainOf(c: UpstreamCluster, kind: MirroredKind, o: UpstreamObject): string | undefined {
    if (kind !== KUBIZONE_ZONE) return claimDomain(String(o.spec?.domainName ?? ''));
    const zones = c.cache.get(KUBIZONE_ZONE);
    const fqdn = kubizoneZoneFqdn(o, (key) => zones?.get(key));
    return fqdn === undefined ? undefined : claimDomain(fqdn);
  }

  /** The kubizone Zones of `c` whose spec.zoneRef names the Zone `key` (their domain follows it). */
  private enqueueKubizoneChildren(c: UpstreamCluster, key: string): void {
    for (const [childKey, o] of c.cache.get(KUBIZONE_ZONE) ?? []) {
      const ref = o.spec?.zoneRef as { name?: string; namespace?: string } | undefined;
      if (ref?.name && `${ref.namespace ?? o.metadata.namespace ?? 'default'}/${ref.name}` === key)
        c.enqueue(KUBIZONE_ZONE, childKey);
    }
  }

  /** The downstream copies of every zone kind mirrored, with their kind. */
  private zoneCopies(): [MirroredKind, DownObject][] {
    return this.kinds
      .filter((k) => MIRRORED_KIND_INFO[k].zone)
      .flatMap((k) => this.downList(k).map((o): [MirroredKind, DownObject] => [k, o]));
  }

  /**
   * A downstream object Zonekeeper's rules refuse (the cache leaves it out and sends no events for
   * it): if it is a copy, its upstream object is reconciled, so the Invalid status reaches it.
   */
  notifyInvalid(kind: Kind, key: string): void {
    if (!isMirroredKind(kind)) return;
    const { namespace, name } = splitKey(key);
    const origin = namespace ? this.origins.get(namespace) : undefined;
    if (origin) this.clusters.get(origin.cluster)?.enqueue(kind, `${origin.namespace}/${name}`);
  }

  private async ensureNamespace(ns: string, origin: Origin): Promise<boolean> {
    if (this.namespacesReady.has(ns)) return true;
    const existing = await this.options.api.readNamespace(ns);
    if (existing) {
      const o = originOf(ns, existing.labels);
      if (!o || o.cluster !== origin.cluster || o.namespace !== origin.namespace) return false;
      if (existing.terminating) throw new Error(`namespace ${ns} is being deleted; waiting`);
      this.namespacesReady.add(ns);
      return true;
    }
    try {
      await this.options.api.createNamespace(ns, namespaceLabels(origin));
    } catch (e) {
      if (!isStatus(e, 409)) throw e;
      return this.ensureNamespace(ns, origin);
    }
    this.namespacesReady.add(ns);
    return true;
  }

  private async setFinalizer(
    c: UpstreamCluster,
    kind: MirroredKind,
    up: UpstreamObject,
    held: boolean,
  ): Promise<void> {
    const finalizers = (up.metadata.finalizers ?? []).filter((f) => f !== UPSTREAM_FINALIZER);
    if (held) finalizers.push(UPSTREAM_FINALIZER);
    try {
      const written = await c.api.mergePatch(
        upstreamResource(kind),
        up.metadata.namespace,
        up.metadata.name,
        {
          metadata: { finalizers, resourceVersion: up.metadata.resourceVersion },
        },
      );
      c.remember(kind, up, written);
    } catch (e) {
      if (isStatus(e, 404)) return;
      throw e;
    }
  }

  private async writeRefused(
    c: UpstreamCluster,
    kind: MirroredKind,
    up: UpstreamObject,
    reason: string,
    message: string,
  ): Promise<void> {
    const info = MIRRORED_KIND_INFO[kind];
    if (info.refusal === 'none') {
      // A status shape without conditions (DNSEndpoint's): the refusal is an Event on the object.
      c.events.record({
        regarding: {
          kind: info.kind,
          apiVersion: `${info.group}/${info.version}`,
          name: up.metadata.name,
          ...(up.metadata.namespace ? { namespace: up.metadata.namespace } : {}),
          ...(up.metadata.uid ? { uid: up.metadata.uid } : {}),
        },
        type: 'Warning',
        reason,
        action: 'Mirror',
        note: message,
      });
      return;
    }
    const previous = (up.status?.conditions as Condition[] | undefined) ?? undefined;
    const status = refusedStatus(
      reason,
      message,
      up.metadata.generation,
      previous,
      new Date(),
      info.refusal,
      up.status,
    );
    if (!jsonEqual(status, up.status ?? {})) await this.writeStatus(c, kind, up, status);
  }

  private async writeStatus(
    c: UpstreamCluster,
    kind: MirroredKind,
    up: UpstreamObject,
    status: Record<string, unknown>,
  ): Promise<void> {
    try {
      const info = MIRRORED_KIND_INFO[kind];
      const written = await c.api.replaceStatus(upstreamResource(kind), {
        apiVersion: up.apiVersion ?? `${info.group}/${info.version}`,
        kind: info.kind,
        metadata: {
          name: up.metadata.name,
          ...(up.metadata.namespace ? { namespace: up.metadata.namespace } : {}),
          ...(up.metadata.resourceVersion ? { resourceVersion: up.metadata.resourceVersion } : {}),
        },
        status,
      });
      c.remember(kind, up, written);
      this.metrics.statusWrites.labels(c.name).inc();
      if (!info.frontDoor)
        c.events.statusChanged(up as unknown as Resource, { ...up, status } as unknown as Resource);
      else {
        // Events regard the front door's own kind and API version.
        const event = eventFor(
          { ...up, kind: info.kind } as unknown as Resource,
          { ...up, kind: info.kind, status } as unknown as Resource,
        );
        if (event)
          c.events.record({
            ...event,
            regarding: { ...event.regarding, kind: info.kind, apiVersion: `${info.group}/${info.version}` },
          });
      }
    } catch (e) {
      if (isStatus(e, 404)) return;
      throw e;
    }
  }

  /** Releases `cluster`'s claim on `domain` when it holds no zone of that domain, upstream or down. */
  private async releaseIfUnused(c: UpstreamCluster, domain: string): Promise<void> {
    if (!c.hasSynced || !this.claims.get(domain)?.claimants.some((x) => x.cluster === c.name)) return;
    for (const kind of c.kinds) {
      if (!MIRRORED_KIND_INFO[kind].zone) continue;
      for (const o of c.cache.get(kind)!.values()) if (this.zoneDomainOf(c, kind, o) === domain) return;
    }
    for (const [kind, o] of this.zoneCopies()) {
      const origin = originOf(o.metadata.namespace, o.metadata.labels);
      if (origin?.cluster === c.name && copyDomain(kind, o) === domain) return;
    }
    await this.releaseClaim(domain, c.name);
  }

  private async releaseClaim(domain: string, cluster: string): Promise<void> {
    const before = this.claims.owner(domain);
    await this.claims.release(domain, cluster);
    const after = this.claims.owner(domain);
    this.log('info', 'multicluster: claim released', { domain, cluster, owner: after ?? '(none)' });
    if (after === before) return;
    // Another cluster (or none) owns the domain now: zones of the domain are reconciled (and mirrored).
    this.enqueueZonesOf(domain);
  }
}

const METRICS = new WeakMap<
  Registry,
  { holder: { current: Replicator }; metrics: ReturnType<typeof createMetrics> }
>();

function createMetrics(registry: Registry, currentReplicator: () => Replicator) {
  const watchUp = registry.gauge(
    'zonekeeper_upstream_watch_up',
    'Whether the list/watch of a kind in an upstream cluster works (1) or fails and is retried (0).',
    ['cluster', 'kind'],
  );
  const synced = registry.gauge(
    'zonekeeper_upstream_synced',
    'Whether every kind of an upstream cluster has been listed at least once since it was added.',
    ['cluster'],
  );
  const objects = registry.gauge(
    'zonekeeper_upstream_objects',
    'Objects kept per upstream cluster and kind.',
    ['cluster', 'kind'],
  );
  const dropped = registry.gauge(
    'zonekeeper_upstream_objects_dropped',
    'Objects of an upstream cluster not kept (and not mirrored) because the cluster holds more than the limit per kind.',
    ['cluster', 'kind'],
  );
  const limitReached = registry.gauge(
    'zonekeeper_upstream_limit_reached',
    'Whether a kind of an upstream cluster is held at a limit (objects per kind, or bytes per cluster or per response): what is over it is not mirrored.',
    ['cluster', 'kind', 'limit'],
  );
  const bytes = registry.gauge(
    'zonekeeper_upstream_bytes',
    'Bytes of objects kept per upstream cluster (their JSON), against --upstream-max-bytes.',
    ['cluster'],
  );
  const queue = registry.gauge(
    'zonekeeper_upstream_queue_depth',
    'Objects waiting to be reconciled, per upstream cluster.',
    ['cluster'],
  );
  const removals = registry.gauge(
    'zonekeeper_upstream_removals_pending',
    'Clusters that left the set and whose copies are removed once their grace period ends.',
  );
  watchUp.collect = () => {
    const replicator = currentReplicator();
    watchUp.reset();
    synced.reset();
    objects.reset();
    dropped.reset();
    limitReached.reset();
    bytes.reset();
    queue.reset();
    for (const c of replicator.clusterList) {
      synced.set(c.hasSynced ? 1 : 0, c.name);
      queue.set(c.queue.length, c.name);
      bytes.set(c.bytes, c.name);
      for (const kind of c.kinds) {
        watchUp.set(c.watchUp.get(kind) ? 1 : 0, c.name, kind);
        objects.set(c.cache.get(kind)!.size, c.name, kind);
        dropped.set(c.dropped.get(kind) ?? 0, c.name, kind);
        const limit = c.limited.get(kind);
        if (limit) limitReached.set(1, c.name, kind, limit);
      }
    }
    removals.set(replicator.pendingRemovals.length);
  };
  return {
    lag: registry.histogram(
      'zonekeeper_upstream_lag_seconds',
      'From a change noticed (upstream or in its downstream copy) to its reconcile done, per upstream cluster.',
      [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      ['cluster'],
    ),
    reconciles: registry.counter(
      'zonekeeper_upstream_reconciles_total',
      'Reconciles of upstream objects by cluster and result.',
      ['cluster', 'result'],
    ),
    statusWrites: registry.counter(
      'zonekeeper_upstream_status_writes_total',
      'Status writes to upstream objects (only when the status changed), per cluster.',
      ['cluster'],
    ),
  };
}
