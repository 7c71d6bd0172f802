import { type FrontDoors, NO_FRONT_DOORS } from '../api/frontdoors/index.ts';
import { type DNSRecordSet, KINDS } from '../api/index.ts';
import type { Backend } from '../backends/backend.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { SigningThread } from '../backends/builtin/signing-thread.ts';
import { WorkerPoolBackend } from '../backends/builtin/worker-pool-backend.ts';
import { refusedNow } from '../control/conditions.ts';
import { FrontDoorStore } from '../control/front-door-store.ts';
import { ZoneFollower } from '../control/zone-follower.ts';
import { Registry } from '../metrics/registry.ts';
import { type AnswerSettings, answerSettings, createQueryHandler } from '../server/answer-settings.ts';
import { DnsServer } from '../server/dns-server.ts';
import { HttpServer } from '../server/http-server.ts';
import { HealthChecker } from '../server/selection/steering/health-checker.ts';
import { processHealth } from '../server/selection/steering/health-view.ts';
import { SteeringBinder } from '../server/selection/steering/steering-binder.ts';
import { ServerMetrics } from '../server/server-metrics.ts';
import { UpdateHandler } from '../server/update/update-handler.ts';
import { type ServedZone, ZoneTable } from '../server/zone-table.ts';
import {
  type ExternalDnsWebhookSettings,
  startExternalDnsWebhook,
} from '../sources/externaldns-webhook/start.ts';
import { type HomelabApiSettings, withSingleCaller } from '../sources/homelab-api/callers.ts';
import { startHomelabApi } from '../sources/homelab-api/start.ts';
import { SecretKeyStore } from '../sources/kubernetes/dnssec-key-secrets.ts';
import { KubeApi, loadKubeConfig } from '../sources/kubernetes/kube-api.ts';
import { KubernetesStore } from '../sources/kubernetes/kubernetes-store.ts';
import { kubernetesSecrets } from '../sources/kubernetes/secrets.ts';
import { ForwardingWriter, fileToken, leaseLeader } from '../sources/writes/forwarding-writer.ts';
import type { HttpConnectionLimits } from '../util/http-limits.ts';
import type { WriteAccessConfig } from '../writes/credentials.ts';
import type { RecordWriter } from '../writes/record-writer.ts';
import type { Log } from './logger.ts';
import { giveMemoryBackAfterFirstLoad } from './memory-after-load.ts';

export interface ServerOptions extends AnswerSettings {
  kubeconfig?: string;
  context?: string;
  dns: string;
  http: string;
  /** The HTTP listener's connection limits (`--http-max-connections` and the like). */
  httpConnectionLimits?: Partial<HttpConnectionLimits>;
  workers?: number;
  /** See ZoneFollower: how long a zone never served here waits for the operator's confirmation. */
  unconfirmedAfterMs?: number;
  /** Front doors whose kinds are read too (the operator's). */
  frontDoors?: FrontDoors;
  /** The operator's namespace and Lease: where writes are forwarded to (default zonekeeper-system, zonekeeper-operator). */
  operatorNamespace?: string;
  leaseName?: string;
  /** Where the operator keeps the DNSSEC key Secrets (default: `operatorNamespace`; docs/dnssec.md). */
  dnssecKeyNamespace?: string;
  /** How long one forwarded write may take (default 10 s). */
  writeTimeoutMs?: number;
  /**
   * The token presented to the operator's leader on the forwarding hop (`--write-token-file`): a
   * projected service-account token with the hop's audience, re-read before each use. Without it
   * writes here answer UNAVAILABLE; the replica's own API-server token never crosses the hop.
   */
  writeTokenFile?: string;
  /**
   * The homelab DNS API (`--homelab-api`): callers verified here with their secrets, their writes
   * forwarded to the operator's leader, which applies them with its own credential table.
   */
  homelabApi?: HomelabApiSettings;
  /** The callers of the homelab DNS API (webhook-hmac credentials); namespaces and quotas are the leader's. */
  writeAccess?: WriteAccessConfig;
  /**
   * The ExternalDNS webhook provider (`--externaldns-webhook-namespace`): lists from this replica's
   * cache, forwards plans to the operator's leader, which must run with the same namespace (it defines
   * the credential there).
   */
  externalDnsWebhook?: ExternalDnsWebhookSettings;
  /** Networks health probes may reach although PROBE_DENIED_NETWORKS holds them (`--health-probe-allow`). */
  healthProbeAllow?: readonly string[];
  /** Probe targets one namespace's record sets may hold (`--health-probe-namespace-limit`). */
  healthProbeNamespaceLimit?: number;
  /** Certificate authorities (PEM) HTTPS health probes trust besides the system's (`--health-probe-ca`). */
  healthProbeCa?: readonly string[];
  log: Log;
}

export interface ServerHandle {
  dns: { host: string; port: number };
  http: { host: string; port: number };
  follower: ZoneFollower;
  store: KubernetesStore;
  table: ZoneTable<ServedZone>;
  /**
   * Records written through APIs: forwarded to the operator's leader (ADR 0016), which applies them
   * with its credential table and quotas. The front doors of this replica call it.
   */
  writer: RecordWriter;
  /** Where the homelab DNS API listens (with --homelab-api). */
  homelabApi?: { host: string; port: number };
  /** Where the ExternalDNS webhook provider listens (with --externaldns-webhook-namespace). */
  externalDnsWebhook?: { host: string; port: number };
  stop(): Promise<void>;
}

/**
 * `zonekeeper server`: the DNS data plane alone. Watches DNSZoneClasses, DNSZones and DNSRecordSets
 * read-only (get/list/watch is all its RBAC allows), computes each zone as the operator does and
 * serves it at the serial the operator recorded in DNSZone.status (the rule is in ZoneFollower), so
 * every replica answers identically. Run as many replicas as wanted.
 */
export async function startServer(options: ServerOptions): Promise<ServerHandle> {
  const { log } = options;
  const homelabCredentials = withSingleCaller(options.writeAccess, options.homelabApi?.caller);
  const api = new KubeApi(loadKubeConfig(options.kubeconfig, options.context));
  const registry = new Registry();
  // Zones as objects, or (with DNS threads) as the zone images the threads share (ADR 0020).
  const table = new ZoneTable<ServedZone>();
  const metrics = new ServerMetrics(registry, table);
  const frontDoors = options.frontDoors ?? NO_FRONT_DOORS;
  const store = new KubernetesStore({ api, log, registry, frontDoors });
  const workers = Math.max(1, options.workers ?? 1);
  let pool: WorkerPoolBackend | undefined;
  // With DNS threads this thread answers only until they listen (its socket reserves the port for
  // them): no response cache here.
  const handler = createQueryHandler(
    table,
    metrics,
    workers > 1 ? { ...options, responseCache: 0 } : options,
  );
  // Writes (RFC 2136 UPDATE included) go to the operator's leader, as RFC 2136 §6 forwards to the primary.
  const writer = new ForwardingWriter({
    leader: leaseLeader(
      api,
      options.operatorNamespace ?? 'zonekeeper-system',
      options.leaseName ?? 'zonekeeper-operator',
    ),
    token: options.writeTokenFile ? fileToken(options.writeTokenFile) : async () => undefined,
    ...(options.writeTimeoutMs !== undefined ? { timeoutMs: options.writeTimeoutMs } : {}),
    log,
  });
  const updates = new UpdateHandler(table, {
    writer: () => writer,
    rejected: (key) => refusedNow(store.get('DNSRecordSet', key) as DNSRecordSet | undefined),
    registry,
    log: (level, message, fields) => log(level, message, fields),
  });
  const dns = new DnsServer({
    listen: options.dns,
    handler,
    metrics,
    reusePort: workers > 1,
    updates,
    ...(options.maxTcpPerSource !== undefined ? { maxTcpPerSource: options.maxTcpPerSource } : {}),
  });
  let ready = false;
  const http = new HttpServer(
    options.http,
    {
      healthy: () => true,
      ready: () =>
        ready
          ? { ready: true, message: 'serving' }
          : { ready: false, message: store.hasSynced ? 'publishing zones' : 'syncing the cache' },
      metrics: () => registry.render(),
      resources: () => ({
        items: KINDS.flatMap((kind) => store.list(kind)),
        problems: store.invalidObjects(),
      }),
    },
    options.httpConnectionLimits,
  );

  await dns.start();
  // Steered record sets: each replica probes their records itself (ADR 0022), off the answering path.
  const checker = new HealthChecker({
    view: processHealth,
    registry,
    ...(options.healthProbeAllow ? { allow: options.healthProbeAllow } : {}),
    ...(options.healthProbeNamespaceLimit !== undefined
      ? { namespaceLimit: options.healthProbeNamespaceLimit }
      : {}),
    ...(options.healthProbeCa ? { ca: options.healthProbeCa } : {}),
    log: (level, message) => log(level, message),
    onViewWrite: (slot, state) => pool?.sendHealth([[slot, state]]),
  });
  const steering = new SteeringBinder(checker);
  const operatorNamespace = options.operatorNamespace ?? 'zonekeeper-system';
  // Signed zones (ADR 0021): the keys the operator's leader stored in its namespace (read only here),
  // signed on a thread of their own at the signing time the operator recorded with the serial.
  const signingThread = new SigningThread();
  const dnssecKeys = new SecretKeyStore({
    api,
    namespace: options.dnssecKeyNamespace ?? operatorNamespace,
    create: false,
    log: (level, message) => log(level, message),
  });
  let backend: Backend = new BuiltinBackend(table, undefined, { steering, dnssecKeys, signingThread });
  if (workers > 1) {
    pool = WorkerPoolBackend.forListener(table, dns.address(), {
      workers,
      registry,
      log: (level, message) => log(level, message),
      ...answerSettings(options),
      updates,
      steering,
      dnssecKeys,
      signingThread,
    });
    backend = pool;
    await pool.start();
    // The DNS threads answer from now on; this thread's sockets only reserved the port for them.
    await dns.stop();
  }
  await http.start();
  store.start();
  await store.synced();
  const follower = new ZoneFollower({
    // Objects of front-door kinds as the record sets they map to (read only: the operator writes).
    store:
      frontDoors.size > 0
        ? // A turn takes the watch's events that queued: what reads them is translated once a turn.
          new FrontDoorStore({ base: store, doors: frontDoors, readOnly: true, log, coalesce: true })
        : store,
    backend,
    registry,
    log,
    // The update keys of zones with an updatePolicy (RFC 2136 UPDATE): a GET of each named Secret
    // (the chart grants exactly those, server.updateKeySecrets) or a mounted file (secretRef.file).
    secrets: kubernetesSecrets(api, operatorNamespace),
    ...(options.unconfirmedAfterMs !== undefined ? { unconfirmedAfterMs: options.unconfirmedAfterMs } : {}),
  });
  follower.start();
  await follower.idle();
  const homelab = options.homelabApi
    ? await startHomelabApi({
        settings: options.homelabApi,
        credentials: homelabCredentials?.credentials ?? [],
        secrets: kubernetesSecrets(api, operatorNamespace),
        writer: () => writer,
        recordSet: (key) => store.get('DNSRecordSet', key) as DNSRecordSet | undefined,
        registry,
        log,
      })
    : undefined;
  // The ExternalDNS webhook provider: plans forwarded to the leader, which judges delegations.
  const externalDnsWebhook = options.externalDnsWebhook
    ? await startExternalDnsWebhook({
        settings: options.externalDnsWebhook,
        writer: () => writer,
        store,
        gate: () => undefined,
        loaded: () => store.hasSynced,
        registry,
        log,
      })
    : undefined;
  ready = true;
  // Every zone was published once: with DNS threads, the heap the first load left goes back once.
  if (pool) void giveMemoryBackAfterFirstLoad(Promise.resolve(), log);
  log('info', 'serving', {
    dns: `${dns.address().host}:${dns.address().port}`,
    http: `${http.address().host}:${http.address().port}`,
    workers,
    zones: table.size,
    ...(homelab ? { homelabApi: `${homelab.api.address().host}:${homelab.api.address().port}` } : {}),
    ...(externalDnsWebhook
      ? {
          externalDnsWebhook: `${externalDnsWebhook.address().host}:${externalDnsWebhook.address().port}`,
        }
      : {}),
  });
  return {
    dns: dns.address(),
    http: http.address(),
    follower,
    store,
    table,
    writer,
    ...(homelab ? { homelabApi: homelab.api.address() } : {}),
    ...(externalDnsWebhook ? { externalDnsWebhook: externalDnsWebhook.address() } : {}),
    async stop() {
      ready = false;
      updates.stop();
      await homelab?.stop();
      await externalDnsWebhook?.stop();
      follower.stop();
      await store.stop();
      checker.stop();
      await Promise.all([dns.stop(), http.stop(), pool?.stop(), signingThread.close()]);
    },
  };
}
