import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { type FrontDoors, frontDoorId, NO_FRONT_DOORS } from '../api/frontdoors/index.ts';
import { type DNSRecordSet, KINDS, type Kind, type Problem } from '../api/index.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { SigningThread } from '../backends/builtin/signing-thread.ts';
import { createHomelabClient } from '../backends/homelab-webhook/client.ts';
import { createBackendFactory } from '../backends/registry.ts';
import { invalidConditions, setConditions } from '../control/conditions.ts';
import { Controller } from '../control/controller.ts';
import { DomainController } from '../control/domain-controller.ts';
import { FrontDoorStore } from '../control/front-door-store.ts';
import { GatewayController, ROUTE_KINDS } from '../control/gateway-controller.ts';
import { HomelabController, RECORD_DOOR } from '../control/homelab/homelab-controller.ts';
import { homelabSettingsFromEnv } from '../control/homelab/settings.ts';
import { ZONEFILE_DOOR, ZoneFileController } from '../control/kubizone-zonefiles.ts';
import { domainProbe } from '../domains/probe.ts';
import { RegistrationClient } from '../domains/registration-client.ts';
import { Registry } from '../metrics/registry.ts';
import { HttpServer } from '../server/http-server.ts';
import { HealthChecker } from '../server/selection/steering/health-checker.ts';
import { HEALTH_DOWN, HealthView } from '../server/selection/steering/health-view.ts';
import { SteeringBinder } from '../server/selection/steering/steering-binder.ts';
import { ZoneTable } from '../server/zone-table.ts';
import {
  type ExternalDnsWebhookSettings,
  startExternalDnsWebhook,
  withExternalDnsCredential,
} from '../sources/externaldns-webhook/start.ts';
import type { ExternalDnsWebhook } from '../sources/externaldns-webhook/webhook.ts';
import { type HomelabApiSettings, withSingleCaller } from '../sources/homelab-api/callers.ts';
import { startHomelabApi } from '../sources/homelab-api/start.ts';
import { SecretKeyStore } from '../sources/kubernetes/dnssec-key-secrets.ts';
import { EventRecorder } from '../sources/kubernetes/events.ts';
import { KubernetesGatewaySource, kubernetesGatewayWriter } from '../sources/kubernetes/gateway-objects.ts';
import { KubeApi, type KubeJson, loadKubeConfig } from '../sources/kubernetes/kube-api.ts';
import { type InvalidObject, KubernetesStore } from '../sources/kubernetes/kubernetes-store.ts';
import { LeaderElector } from '../sources/kubernetes/leader-election.ts';
import { namespaceDeletionReporter } from '../sources/kubernetes/namespace-deletions.ts';
import { kubernetesSecrets } from '../sources/kubernetes/secrets.ts';
import { DEFAULT_SERIAL_BLOCK, KubernetesSerialStore } from '../sources/kubernetes/serial-records.ts';
import { parseClusterSource } from '../sources/multicluster/cluster-source.ts';
import { DownstreamApi } from '../sources/multicluster/downstream-api.ts';
import { FRONT_DOOR_MIRRORED_KINDS, NATIVE_MIRRORED_KINDS } from '../sources/multicluster/mapping.ts';
import { Replicator } from '../sources/multicluster/replicator.ts';
import { catalogGate } from '../sources/writes/catalog-gate.ts';
import { DEFAULT_WRITE_AUDIENCE, LEADER_ENDPOINT_ANNOTATION } from '../sources/writes/forwarding-writer.ts';
import { KubernetesWriteStore } from '../sources/writes/kubernetes-write-store.ts';
import { leaderWriteEndpoint } from '../sources/writes/leader-write-endpoint.ts';
import { updateKeySources, updatePolicyGuard } from '../sources/writes/update-keys.ts';
import type { HttpConnectionLimits } from '../util/http-limits.ts';
import { within } from '../util/within.ts';
import { CredentialTable, type WriteAccessConfig } from '../writes/credentials.ts';
import { type RecordWriter, WriteCoordinator } from '../writes/record-writer.ts';
import { withUpdateCredentials } from '../writes/update-credentials.ts';
import { FORWARD_PATH } from '../writes/write-protocol.ts';
import { resourceKey, splitKey } from '../zones/resource-key.ts';
import type { DomainSettings } from './domain-flags.ts';
import type { Log } from './logger.ts';
import { giveMemoryBackAfterFirstLoad } from './memory-after-load.ts';

export interface OperatorOptions {
  kubeconfig?: string;
  context?: string;
  /** The operator's namespace: its Lease, and Events about cluster-scoped objects. */
  namespace: string;
  /** Where the DNSSEC key Secrets of signed builtin zones are kept (default: `namespace`; docs/dnssec.md). */
  dnssecKeyNamespace?: string;
  http: string;
  /** The HTTP listener's connection limits (`--http-max-connections` and the like). */
  httpConnectionLimits?: Partial<HttpConnectionLimits>;
  leaderElect: boolean;
  leaseName?: string;
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /**
   * The graceful-shutdown budget: every step of `stop()` (finishing reconciles, releasing the lease,
   * stopping the watches and the HTTP server) waits at most what is left of it (default 20 s, below
   * the chart's terminationGracePeriodSeconds of 30 s).
   */
  shutdownTimeoutMs?: number;
  /**
   * Serials reserved per write of a zone's serial record (default 10): a change within the block
   * costs no extra API write; after a crash the next leader continues above the block (ADR 0014).
   */
  serialBlock?: number;
  /**
   * Record sets written through APIs (ADR 0016): with it, the leader writes labelled DNSRecordSets
   * (after finishing the write journal) and takes writes forwarded by `zonekeeper server` replicas.
   */
  writeAccess?: WriteAccessConfig;
  /** Kubernetes user names that may forward writes (the server replicas' service accounts). */
  writeForwarders?: string[];
  /**
   * The audience a forwarder's token must be bound to (default `zonekeeper-writes`): TokenReview
   * asks the API server for it, so the replicas' normal service-account tokens are refused.
   */
  writeAudience?: string;
  /** This replica's HTTP port as other pods reach it (default http://$POD_IP:<port>). */
  advertiseUrl?: string;
  /** Change safety: how long content must stay unchanged to become the baseline (default 10 s). */
  changeSafetyWindowMs?: number;
  /**
   * The homelab DNS API (`--homelab-api`): answered by every replica, written by the leader (a replica
   * that does not lead answers 503 UNAVAILABLE). Its one caller joins `writeAccess`.
   */
  homelabApi?: HomelabApiSettings;
  /**
   * The ExternalDNS webhook provider (`--externaldns-webhook-namespace`): every replica lists and
   * negotiates, the leader writes (a replica that does not lead answers a plan with 503).
   */
  externalDnsWebhook?: ExternalDnsWebhookSettings;
  /** Networks health probes may reach although PROBE_DENIED_NETWORKS holds them (`--health-probe-allow`). */
  healthProbeAllow?: readonly string[];
  /** Probe targets one namespace's record sets may hold (`--health-probe-namespace-limit`). */
  healthProbeNamespaceLimit?: number;
  /** Certificate authorities (PEM) HTTPS health probes trust besides the system's (`--health-probe-ca`). */
  healthProbeCa?: readonly string[];
  log: Log;
  /** What to do when leadership is lost (the CLI exits; tests may do otherwise). */
  onLostLeadership?: () => void;
  /** Front doors whose kinds are read too (registered ones and those of `--front-door`). */
  frontDoors?: FrontDoors;
  /**
   * `--upstream-clusters`: the leader mirrors DNSZones and DNSRecordSets of these clusters into this
   * one and writes their status back (docs/multicluster.md).
   */
  upstreamClusters?: UpstreamClustersOptions;
  /** Domain verification: resolver, HTTP client, schedules (default: the system resolver, Datum's schedule). */
  domains?: DomainSettings;
  /**
   * Gateway API hostnames → DNSRecordSets (docs/domains.md, "Gateway API"): off unless set. The Gateway
   * API CRDs must be installed. `targetDomain`: where Gateways' DNS addresses live.
   */
  gatewayDns?: { targetDomain?: string };
}

export interface UpstreamClustersOptions {
  /** A folder of kubeconfig files, or `secrets:<label-selector>` in the operator's namespace. */
  source: string;
  pollIntervalMs?: number;
  removalGraceMs?: number;
  resyncIntervalMs?: number;
  retryMaxMs?: number;
  maxObjectsPerCluster?: number;
  maxBytesPerCluster?: number;
  maxResponseBytes?: number;
}

export interface OperatorHandle {
  http: { host: string; port: number };
  store: KubernetesStore;
  isLeader: () => boolean;
  /** Where the homelab DNS API listens (with --homelab-api). */
  homelabApi?: { host: string; port: number };
  /** Where the ExternalDNS webhook provider listens (with --externaldns-webhook-namespace). */
  externalDnsWebhook?: { host: string; port: number };
  controller: () => Controller | undefined;
  /** The record writer while this replica leads and takes API writes (see writeAccess). */
  writer: () => RecordWriter | undefined;
  /** Graceful shutdown within the budget; lists the steps that did not finish in time. */
  stop(): Promise<ShutdownResult>;
}

export interface ShutdownResult {
  /** Steps cut short by the budget (e.g. `release the lease`); empty when everything finished. */
  unfinished: string[];
}

/** Default graceful-shutdown budget of `zonekeeper operator`. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 20_000;
/** How long in-flight reconciles may take to finish on shutdown, at most (within the budget). */
const RECONCILE_DRAIN_MS = 5000;
/** Retry delays while the serial records cannot be read at the start of leadership. */
const SERIAL_LOAD_RETRY_MS = [500, 10_000] as const;
/** A leader compacts its heap after the first load only below this old generation (see its use). */
const LEADER_MAX_COMPACTION_BYTES = 256 * 2 ** 20;

/** The namespace a pod runs in (in-cluster), for the default of --namespace. */
export function podNamespace(): string | undefined {
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  try {
    return (
      readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || undefined
    );
  } catch {
    return undefined;
  }
}

/**
 * `zonekeeper operator`: the reconcile engine of `serve`, fed by the Kubernetes API. Every replica
 * keeps a warm cache; the one holding the Lease runs the controllers: it assigns serials (reserved
 * durably in a serial record per origin before any backend serves them, ADR 0014) and content hashes
 * (DNSZone.status), writes conditions through /status, holds deletions with the finalizer until
 * the backend is clean, and records Events. The built-in backend here is an in-process zone table: the
 * DNS data plane is `zonekeeper server`, which serves exactly the serials recorded in status.
 */
export async function startOperator(options: OperatorOptions): Promise<OperatorHandle> {
  const { log } = options;
  // The one caller of --homelab-api-secret-file joins the write credentials.
  const writeAccess = withExternalDnsCredential(
    withSingleCaller(options.writeAccess, options.homelabApi?.caller),
    options.externalDnsWebhook,
  );
  const identity = options.identity ?? process.env.POD_NAME ?? `${hostname()}-${process.pid}`;
  const api = new KubeApi(loadKubeConfig(options.kubeconfig, options.context));
  const registry = new Registry();
  const events = new EventRecorder({
    api,
    instance: identity,
    // The API server files events about cluster-scoped objects under "default".
    clusterNamespace: 'default',
    registry,
    log,
  });
  const frontDoors = options.frontDoors ?? NO_FRONT_DOORS;
  const store = new KubernetesStore({ api, log, registry, events, frontDoors });
  // The built-in backend here is an in-process table (the data plane is `zonekeeper server`); other
  // backends (PowerDNS) are programmed by the operator itself, with secrets read by reference.
  const table = new ZoneTable();
  const secrets = kubernetesSecrets(api, options.namespace);
  let controller: Controller | undefined;
  // Steered record sets of builtin classes: the leader probes their records too, for what status and
  // Events show (each `zonekeeper server` replica probes on its own to answer; ADR 0022).
  const checker = new HealthChecker({
    view: new HealthView(),
    registry,
    ...(options.healthProbeAllow ? { allow: options.healthProbeAllow } : {}),
    ...(options.healthProbeNamespaceLimit !== undefined
      ? { namespaceLimit: options.healthProbeNamespaceLimit }
      : {}),
    ...(options.healthProbeCa ? { ca: options.healthProbeCa } : {}),
    log: (level, message) => log(level, message),
    onTransition: ({ slot, target, state, error }) => {
      for (const key of steering.recordsProbing(slot)) {
        controller?.targetsChanged(key).catch((e: unknown) => {
          log('warn', `could not write the health of DNSRecordSet ${key}: ${(e as Error).message}`);
        });
        const rs = store.get('DNSRecordSet', key);
        if (!rs) continue;
        const down = state === HEALTH_DOWN;
        events.record({
          regarding: {
            kind: 'DNSRecordSet',
            name: rs.metadata.name,
            ...(rs.metadata.namespace ? { namespace: rs.metadata.namespace } : {}),
            ...(rs.metadata.uid ? { uid: rs.metadata.uid } : {}),
          },
          type: down ? 'Warning' : 'Normal',
          reason: down ? 'TargetDown' : 'TargetUp',
          action: 'HealthCheck',
          note: `${target.protocol} ${target.address}:${target.port} is ${down ? `down: ${error ?? 'probe failed'}` : 'up'}`,
        });
      }
    },
  });
  const steering = new SteeringBinder(checker);
  // The leader signs the zones of builtin classes too (for status.dnssec), off its main thread.
  const signingThread = new SigningThread();
  const backends = createBackendFactory({
    builtin: new BuiltinBackend(table, undefined, {
      // The zones are served by the `zonekeeper server` replicas, which keep serving while the
      // operator restarts (change safety holds what changed meanwhile, ADR 0018).
      keepsServing: true,
      steering,
      // Signed zones (ADR 0021): the leader stores each zone's keys in a Secret in its namespace
      // before it records a signed serial; the server replicas read them there.
      dnssecKeys: new SecretKeyStore({
        api,
        namespace: options.dnssecKeyNamespace ?? options.namespace,
        create: true,
        log: (level, message) => log(level, message),
      }),
      signingThread,
      // Record sets whose health checks were refused get their status again once they are started.
      recheck: (zone) => controller?.recheckZone(zone),
    }),
    secrets,
    log,
    // PowerDNS's LUA health checks: the same networks as the built-in server's probes.
    probePermitted: (address) => checker.permitted(address),
  });
  // The homelab DNS operator's kinds, pushed to their providers: run by the leader only.
  const homelabSettings = homelabSettingsFromEnv();
  let homelab: HomelabController | undefined;
  let zoneFiles: ZoneFileController | undefined;
  // The multicluster replicator (--upstream-clusters): run by the leader only.
  const upstream = options.upstreamClusters;
  const downstreamApi = upstream ? new DownstreamApi(api.config) : undefined;
  const clusterSource = upstream
    ? parseClusterSource(upstream.source, () => downstreamApi!, options.namespace)
    : undefined;
  let replicator: Replicator | undefined;
  // Domain verification (docs/domains.md): run by the leader only.
  let domainController: DomainController | undefined;
  // Gateway API hostnames → DNSRecordSets: run by the leader only, once the Gateway API kinds are read.
  let gatewaySource: KubernetesGatewaySource | undefined;
  let gatewayController: GatewayController | undefined;
  const stopGateways = () => {
    gatewayController?.stop();
    gatewayController = undefined;
    void gatewaySource?.stop();
    gatewaySource = undefined;
  };
  let serials: KubernetesSerialStore | undefined;
  let leading = !options.leaderElect;
  let stopping = false;
  /** The first leadership term gave back the memory of its first load (once per process). */
  let memoryGivenBack = false;
  /** Leadership terms started: a term that ended while its serial records were loading starts nothing. */
  let term = 0;
  const serialBlock = options.serialBlock ?? DEFAULT_SERIAL_BLOCK;
  const serialWrites = registry.counter(
    'zonekeeper_serial_record_writes_total',
    'Writes of zone serial records (ConfigMaps in the operator namespace), by result: ok, conflict (re-read and decided again), error, released (lowered to the serial last used on shutdown).',
    ['result'],
  );
  const serialRecords = registry.gauge(
    'zonekeeper_serial_records',
    'Zone origins with a serial record, as the leader knows them.',
  );
  serialRecords.collect = () => serialRecords.set(serials?.size ?? 0);

  const leaderGauge = registry.gauge('zonekeeper_leader', 'Whether this operator replica holds the lease.');
  leaderGauge.collect = () => leaderGauge.set(controller ? 1 : 0);
  // API writes (ADR 0016): only the leader writes, and only once it has finished the write journal.
  let writer: WriteCoordinator | undefined;
  // What replicas forward goes through the leader's check of update policies (RFC 2136 UPDATE).
  let forwarded: RecordWriter | undefined;
  const writeEndpoint = writeAccess
    ? leaderWriteEndpoint({
        review: (token) => api.reviewToken(token, options.writeAudience ?? DEFAULT_WRITE_AUDIENCE),
        forwarders: new Set(options.writeForwarders ?? []),
        writer: () =>
          forwarded ??
          (leading
            ? {
                refuse: 'NOT_LEADER',
                message: `${identity} leads but is finishing the write journal; retry`,
                retryAfterSeconds: 1,
              }
            : {
                refuse: 'NOT_LEADER',
                message: `${identity} does not lead; retry (the Lease names the leader)`,
                retryAfterSeconds: 2,
              }),
        log,
      })
    : undefined;
  store.onInvalid = (invalid, raw) => {
    if (controller) void writeInvalidStatus(api, invalid, raw, log);
    replicator?.notifyInvalid(invalid.kind, invalid.key);
  };
  // Objects of front-door kinds that fail their door's rules get status in the door's own shape.
  let translated: FrontDoorStore | undefined;
  store.onInvalidForeign = (invalid) => {
    if (controller) void translated?.refreshStatus(invalid.door, invalid.key);
  };

  let externalDnsWebhookRef: ExternalDnsWebhook | undefined;
  const http = new HttpServer(
    options.http,
    {
      healthy: () => true,
      ready: () =>
        store.hasSynced
          ? {
              ready: true,
              message: controller
                ? 'leading'
                : leading
                  ? 'leading; reading the zone serial records first'
                  : 'standby (cache synced)',
            }
          : { ready: false, message: 'syncing the cache' },
      metrics: () => registry.render(),
      ...(writeEndpoint ? { post: { [FORWARD_PATH]: writeEndpoint } } : {}),
      resources: () => ({
        leader: controller !== undefined,
        items: [
          ...KINDS.flatMap((kind) => store.list(kind)),
          ...frontDoors.all.flatMap((door) => store.listForeign(frontDoorId(door))),
        ],
        problems: [...store.invalidObjects(), ...store.invalidForeignObjects()],
        ...(externalDnsWebhookRef ? { externalDnsRefused: externalDnsWebhookRef.refused() } : {}),
      }),
    },
    options.httpConnectionLimits,
  );
  // Zones removed by a namespace deletion: an Event each in the operator's namespace.
  store.watch(
    namespaceDeletionReporter({
      api,
      events,
      namespace: options.namespace,
      leading: () => controller !== undefined,
      log,
    }),
  );
  await http.start();
  // The homelab DNS API: writes go to this replica's writer while it leads.
  const homelabApi = options.homelabApi
    ? await startHomelabApi({
        settings: options.homelabApi,
        credentials: writeAccess?.credentials ?? [],
        secrets,
        writer: () => writer,
        noWriter: `operator replica ${identity} does not lead (or is finishing the write journal); send requests to the leader or to zonekeeper server`,
        recordSet: (key) => store.get('DNSRecordSet', key) as DNSRecordSet | undefined,
        registry,
        log,
      })
    : undefined;
  // The ExternalDNS webhook provider: lists from this replica's cache, writes through the leader's writer.
  const externalDnsWebhook = options.externalDnsWebhook
    ? await startExternalDnsWebhook({
        settings: options.externalDnsWebhook,
        writer: () => writer,
        // The leader's translating store once it leads (zones of front doors give domains too).
        store: {
          list: (kind) => (translated ?? store).list(kind),
          get: (kind, key) => (translated ?? store).get(kind, key),
        },
        gate: () =>
          controller
            ? catalogGate(controller.catalog, store, (key) => controller?.zoneModel(key))
            : undefined,
        loaded: () => store.hasSynced,
        onRefused: (r) => {
          // The leader reports (it applied the plan); an Event in the namespace the endpoint was for.
          if (!controller) return;
          const ns = options.externalDnsWebhook!.namespace;
          events.record(
            {
              // The namespace itself, filed in it (an Event must be in its object's namespace).
              regarding: { apiVersion: 'v1', kind: 'Namespace', name: ns, namespace: ns },
              type: 'Warning',
              reason: 'ExternalDNSEndpointRefused',
              action: 'Write',
              note: `ExternalDNS endpoint ${r.dnsName} ${r.recordType} not written (${r.code}): ${r.message}`.slice(
                0,
                1024,
              ),
            },
            ns,
          );
        },
        registry,
        log,
      })
    : undefined;
  externalDnsWebhookRef = externalDnsWebhook;
  store.start();
  await store.synced();
  log('info', 'cache synced', Object.fromEntries(KINDS.map((k) => [k, store.list(k).length])));

  /**
   * Starts the controllers once the serial records are read: until then no serial is chosen, since
   * one at or below a serial the previous leader may have served could carry other content.
   */
  const lead = () => {
    if (stopping || controller) return;
    leading = true;
    const myTerm = ++term;
    const current = () => !stopping && leading && term === myTerm;
    const records = new KubernetesSerialStore({
      api,
      namespace: options.namespace,
      block: serialBlock,
      identity,
      log,
      onWrite: (result) => serialWrites.labels(result).inc(),
    });
    void (async () => {
      for (
        let delay: number = SERIAL_LOAD_RETRY_MS[0];
        ;
        delay = Math.min(delay * 2, SERIAL_LOAD_RETRY_MS[1])
      ) {
        try {
          await records.load();
          break;
        } catch (e) {
          if (!current()) return;
          log(
            'error',
            'cannot read the zone serial records; zones are not reconciled until they can be read',
            {
              error: e instanceof Error ? e.message : String(e),
              retryInMs: delay,
            },
          );
          await new Promise((r) => setTimeout(r, delay).unref());
          if (!current()) return;
        }
      }
      if (!current()) return;
      serials = records;
      log('info', 'zone serial records read', { records: records.size, block: serialBlock });
      // Objects of front-door kinds reach the controller as the DNSZones and DNSRecordSets they map to.
      translated =
        frontDoors.size > 0
          ? new FrontDoorStore({
              base: store,
              doors: frontDoors,
              log,
              problems: (door, key) => store.foreignProblems(door, key),
              // A turn takes the watch's events that queued: what reads them is translated once a turn.
              coalesce: true,
            })
          : undefined;
      controller = new Controller({
        store: translated ?? store,
        backend: backends,
        serials: records,
        registry,
        log,
        hashOnChange: true,
        // Every status or finalizer write is an API round trip: keep several in flight.
        writeConcurrency: 16,
        secrets,
        recordTargets: (key) => steering.recordTargets(key),
        ...(options.changeSafetyWindowMs !== undefined
          ? { changeSafetyWindowMs: options.changeSafetyWindowMs }
          : {}),
      });
      controller.start();
      // The operator answers no DNS: once its first leadership has reconciled everything, the heap the
      // first load left goes back once (a later term does not do it again). With leader election, not
      // where the pause could outlast the lease's renewal (a 256 MiB old generation pauses for about
      // a second, or three on a loaded machine; the renew deadline is 10 s).
      if (!memoryGivenBack) {
        memoryGivenBack = true;
        void giveMemoryBackAfterFirstLoad(
          controller.idle(),
          log,
          options.leaderElect ? { maxLiveBytes: LEADER_MAX_COMPACTION_BYTES } : {},
        );
      }
      domainController = new DomainController({
        store,
        probe: domainProbe(options.domains?.probe),
        ...(options.domains
          ? {
              schedule: options.domains.schedule,
              reconfirmIntervalMs: options.domains.reconfirmIntervalMs,
              httpPort: options.domains.httpPort,
            }
          : {}),
        ...(options.domains?.registration
          ? {
              registration: new RegistrationClient(options.domains.registration),
              registrationRefreshMs: options.domains.registration.refreshMs,
              expiryWarningMs: options.domains.registration.expiryWarningMs,
            }
          : {}),
        log,
      });
      domainController.start();
      if (options.gatewayDns) {
        const source = new KubernetesGatewaySource(api, ['GatewayClass', 'Gateway', ...ROUTE_KINDS], log);
        gatewaySource = source;
        source.start();
        void source.synced().then(() => {
          if (!current() || gatewaySource !== source) return;
          gatewayController = new GatewayController({
            store,
            source,
            writer: kubernetesGatewayWriter(api, events),
            ...(options.gatewayDns?.targetDomain ? { targetDomain: options.gatewayDns.targetDomain } : {}),
            log,
          });
          gatewayController.start();
        });
      }
      if (frontDoors.get(RECORD_DOOR)) {
        homelab = new HomelabController({
          store,
          providers: createHomelabClient,
          secrets,
          settings: homelabSettings,
          log,
        });
        homelab.start();
      }
      // kubizone's ZoneFiles: the zones as served, printed into ConfigMaps the ZoneFiles own.
      if (frontDoors.get(ZONEFILE_DOOR)) {
        zoneFiles = new ZoneFileController({
          store,
          native: translated ?? store,
          catalog: controller.catalog,
          configMaps: {
            read: (namespace, name) => api.readConfigMap(namespace, name),
            create: async (namespace, cm) => void (await api.createConfigMap(namespace, cm)),
            replace: async (namespace, cm) => void (await api.replaceConfigMap(namespace, cm)),
          },
          log,
        });
        zoneFiles.start();
      }
      if (writeAccess) void startWriter(controller, writeAccess, current);
      if (upstream && clusterSource && downstreamApi) {
        const { source: _spec, ...settings } = upstream;
        replicator = new Replicator({
          ...settings,
          // Zonekeeper's kinds, and the front-door kinds this installation serves.
          kinds: [
            ...NATIVE_MIRRORED_KINDS,
            ...FRONT_DOOR_MIRRORED_KINDS.filter((id) => frontDoors.get(id) !== undefined),
          ],
          source: clusterSource,
          store,
          api: downstreamApi,
          namespace: options.namespace,
          registry,
          log,
          identity,
        });
        void replicator.start();
      }
      // Objects that were invalid before this replica led: report them in status now.
      for (const invalid of store.invalidObjects()) {
        const { namespace, name } = splitKey(invalid.key);
        void api.get(invalid.kind, namespace, name).then((raw) => {
          if (raw) void writeInvalidStatus(api, invalid, raw, log);
        });
      }
      // The same for front-door objects: invalid ones, and those whose translation the native rules refuse.
      for (const invalid of store.invalidForeignObjects())
        void translated?.refreshStatus(invalid.door, invalid.key);
      for (const t of translated?.translationProblems() ?? [])
        for (const o of t.objects)
          void translated?.refreshStatus(frontDoorId(t.door), resourceKey(o.metadata));
    })();
  };

  /** Finishes what the journal holds (a request a previous leader left half done), then accepts writes. */
  const startWriter = async (c: Controller, access: WriteAccessConfig, current: () => boolean) => {
    const coordinator = new WriteCoordinator({
      store: new KubernetesWriteStore(api.config, options.namespace, log),
      gate: catalogGate(c.catalog, store, (key) => c.zoneModel(key)),
      // The configured credentials and the TSIG keys of the zones' update policies (RFC 2136 UPDATE).
      credentials: withUpdateCredentials(new CredentialTable(access), updateKeySources(store)),
      log: (level, message, fields) => log(level, message, fields),
    });
    for (
      let delay: number = SERIAL_LOAD_RETRY_MS[0];
      current();
      delay = Math.min(delay * 2, SERIAL_LOAD_RETRY_MS[1])
    ) {
      try {
        await coordinator.start();
        if (!current()) return;
        writer = coordinator;
        forwarded = updatePolicyGuard(coordinator, store, c.catalog);
        log('info', 'accepting API writes', { credentials: access.credentials.length });
        return;
      } catch (e) {
        log('error', 'cannot read the write journal; API writes are refused until it can be read', {
          error: e instanceof Error ? e.message : String(e),
          retryInMs: delay,
        });
        await new Promise((r) => setTimeout(r, delay).unref());
      }
    }
  };
  const advertise =
    options.advertiseUrl ??
    (process.env.POD_IP
      ? `http://${process.env.POD_IP.includes(':') ? `[${process.env.POD_IP}]` : process.env.POD_IP}:${http.address().port}`
      : `http://${['0.0.0.0', '::'].includes(http.address().host) ? hostname() : http.address().host}:${http.address().port}`);

  let elector: LeaderElector | undefined;
  if (options.leaderElect) {
    elector = new LeaderElector({
      api,
      namespace: options.namespace,
      name: options.leaseName ?? 'zonekeeper-operator',
      identity,
      ...(writeAccess ? { annotations: { [LEADER_ENDPOINT_ANNOTATION]: advertise } } : {}),
      ...(options.leaseDurationMs ? { leaseDurationMs: options.leaseDurationMs } : {}),
      ...(options.renewDeadlineMs ? { renewDeadlineMs: options.renewDeadlineMs } : {}),
      ...(options.retryPeriodMs ? { retryPeriodMs: options.retryPeriodMs } : {}),
      log,
      onStartedLeading: lead,
      onStoppedLeading: () => {
        leading = false;
        writer = undefined;
        forwarded = undefined;
        controller?.stop();
        controller = undefined;
        homelab?.stop();
        homelab = undefined;
        zoneFiles?.stop();
        zoneFiles = undefined;
        void replicator?.stop();
        replicator = undefined;
        domainController?.stop();
        domainController = undefined;
        stopGateways();
        // Another replica may lead now: this one must not write serial records any more.
        serials = undefined;
        (options.onLostLeadership ?? (() => process.exit(1)))();
      },
      onNewLeader: (holder) => {
        if (holder !== identity) log('info', 'leader election: another replica leads', { leader: holder });
      },
    });
    elector.start();
  } else {
    lead();
  }
  log('info', 'operator started', {
    http: `${http.address().host}:${http.address().port}`,
    identity,
    leaderElection: options.leaderElect
      ? `${options.namespace}/${options.leaseName ?? 'zonekeeper-operator'}`
      : 'off',
    ...(writeAccess ? { writeEndpoint: `${advertise}${FORWARD_PATH}` } : {}),
    ...(homelabApi
      ? { homelabApi: `${homelabApi.api.address().host}:${homelabApi.api.address().port}` }
      : {}),
    ...(externalDnsWebhook
      ? {
          externalDnsWebhook: `${externalDnsWebhook.address().host}:${externalDnsWebhook.address().port}`,
        }
      : {}),
  });

  return {
    http: http.address(),
    store,
    isLeader: () => leading && controller !== undefined,
    ...(homelabApi ? { homelabApi: homelabApi.api.address() } : {}),
    ...(externalDnsWebhook ? { externalDnsWebhook: externalDnsWebhook.address() } : {}),
    controller: () => controller,
    writer: () => writer,
    async stop() {
      stopping = true;
      checker.stop();
      writer = undefined;
      forwarded = undefined;
      const budget = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
      const deadline = performance.now() + budget;
      const left = () => deadline - performance.now();
      const unfinished: string[] = [];
      const step = async (name: string, work: Promise<unknown>, limitMs = left()) => {
        if (!(await within(work, Math.min(limitMs, left())))) unfinished.push(name);
      };
      const c = controller;
      if (c) {
        // Let in-flight work finish (bounded), so status matches what was programmed.
        await step('finish the reconciles in flight', c.idle(), RECONCILE_DRAIN_MS);
        await step('save the content hashes', c.flush());
        c.stop();
      }
      controller = undefined;
      homelab?.stop();
      homelab = undefined;
      zoneFiles?.stop();
      zoneFiles = undefined;
      if (replicator) await step('stop the upstream clusters', replicator.stop());
      replicator = undefined;
      domainController?.stop();
      domainController = undefined;
      stopGateways();
      // While the lease is still held: lower the serial reservations to the serials last used, so the
      // next leader keeps the serials of unchanged zones and continues right above them.
      if (serials) await step('release the serial reservations', serials.release());
      serials = undefined;
      // Releases the lease: a standby takes over at once (or once it expires, if the API server is gone).
      if (elector && !(await elector.stop(Math.max(0, left())))) unfinished.push('leave the leader election');
      backends.close();
      await step('stop the signing thread', signingThread.close());
      if (homelabApi) await step('stop the homelab DNS API', homelabApi.stop());
      if (externalDnsWebhook) await step('stop the ExternalDNS webhook provider', externalDnsWebhook.stop());
      await step('stop the watches', store.stop());
      await step('stop the HTTP server', http.stop());
      if (unfinished.length > 0)
        log('warn', 'shutdown: not everything finished within the budget', {
          budgetMs: budget,
          unfinished: unfinished.join('; '),
        });
      return { unfinished };
    },
  };
}

/**
 * Status for an object the API server accepted but Zonekeeper cannot use (its rules are stricter than
 * the schema in places): Accepted=False, reason Invalid, with every problem. Best effort.
 */
async function writeInvalidStatus(
  api: KubeApi,
  invalid: InvalidObject,
  raw: KubeJson,
  log: Log,
): Promise<void> {
  const metadata = raw.metadata as {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    generation?: number;
  };
  const message = invalid.problems.map((p: Problem) => `${p.path}: ${p.message}`).join('; ');
  const conditions = setConditions(
    undefined,
    invalidConditions(message.slice(0, 32_000), metadata.generation),
    new Date(),
  );
  try {
    await api.replaceStatus(invalid.kind as Kind, {
      apiVersion: String(raw.apiVersion),
      kind: invalid.kind,
      metadata: {
        name: metadata.name,
        ...(metadata.namespace ? { namespace: metadata.namespace } : {}),
        ...(metadata.resourceVersion ? { resourceVersion: metadata.resourceVersion } : {}),
      },
      status: {
        ...(metadata.generation !== undefined ? { observedGeneration: metadata.generation } : {}),
        conditions,
      },
    });
  } catch (e) {
    log('warn', `could not write the status of invalid ${invalid.kind} ${invalid.key}`, {
      error: e instanceof Error ? e.message : String(e),
    });
  }
}
