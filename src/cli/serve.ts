import { type FrontDoors, frontDoorId, NO_FRONT_DOORS } from '../api/frontdoors/index.ts';
import { CONFIRM_CHANGE_ANNOTATION, type DNSRecordSet, type DNSZone, KINDS } from '../api/index.ts';
import type { Backend } from '../backends/backend.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { SigningThread } from '../backends/builtin/signing-thread.ts';
import { WorkerPoolBackend } from '../backends/builtin/worker-pool-backend.ts';
import { MemoryKeyStore } from '../backends/builtin/zone-signing.ts';
import { createHomelabClient } from '../backends/homelab-webhook/client.ts';
import { createBackendFactory } from '../backends/registry.ts';
import { refusedNow } from '../control/conditions.ts';
import { CHANGE_SAFETY_WINDOW_MS, Controller } from '../control/controller.ts';
import { FrontDoorStore } from '../control/front-door-store.ts';
import { HomelabController, RECORD_DOOR } from '../control/homelab/homelab-controller.ts';
import { homelabSettingsFromEnv } from '../control/homelab/settings.ts';
import { MemoryStore } from '../control/memory-store.ts';
import { fileAndEnvSecrets } from '../control/secrets.ts';
import { generateDnssecKey } from '../dns/dnssec/keys.ts';
import type { Name } from '../dns/name.ts';
import { Registry } from '../metrics/registry.ts';
import { type AnswerSettings, answerSettings, createQueryHandler } from '../server/answer-settings.ts';
import { DnsServer } from '../server/dns-server.ts';
import { HttpServer } from '../server/http-server.ts';
import { HealthChecker } from '../server/selection/steering/health-checker.ts';
import { processHealth } from '../server/selection/steering/health-view.ts';
import { SteeringBinder } from '../server/selection/steering/steering-binder.ts';
import { ServerMetrics } from '../server/server-metrics.ts';
import { Notifier } from '../server/transfer/notifier.ts';
import { probeSoaSerials } from '../server/transfer/soa-probe.ts';
import { TransferHandler } from '../server/transfer/transfer-handler.ts';
import { TransferPolicy } from '../server/transfer/transfer-policy.ts';
import { UpdateHandler } from '../server/update/update-handler.ts';
import { type ServedZone, ZoneTable } from '../server/zone-table.ts';
import {
  type ExternalDnsWebhookSettings,
  startExternalDnsWebhook,
  withExternalDnsCredential,
} from '../sources/externaldns-webhook/start.ts';
import type { ExternalDnsWebhook } from '../sources/externaldns-webhook/webhook.ts';
import { type HomelabApiSettings, withSingleCaller } from '../sources/homelab-api/callers.ts';
import { startHomelabApi } from '../sources/homelab-api/start.ts';
import { ConfirmationFiles } from '../sources/manifests/confirmations.ts';
import { FolderKeyStore } from '../sources/manifests/dnssec-key-files.ts';
import { FolderHold } from '../sources/manifests/folder-hold.ts';
import { ManifestParserPool, startParseThreads } from '../sources/manifests/manifest-parser.ts';
import { formatProblem, ManifestSource, refusalText } from '../sources/manifests/manifest-source.ts';
import { registerSourceMetrics } from '../sources/manifests/resource-metrics.ts';
import { StateStore } from '../sources/manifests/state-file.ts';
import { rememberAcceptance, restoreAcceptance } from '../sources/manifests/zone-acceptance.ts';
import { catalogGate } from '../sources/writes/catalog-gate.ts';
import { FolderWriteStore } from '../sources/writes/folder-write-store.ts';
import { updateKeySources } from '../sources/writes/update-keys.ts';
import { compileCacheOutcome, flushCompileCache } from '../util/compile-cache.ts';
import type { HttpConnectionLimits } from '../util/http-limits.ts';
import { growHeapDuringLoad } from '../util/load-heap-growth.ts';
import { parseSemiSpace } from '../util/parse-young-generation.ts';
import { CredentialTable, type WriteAccessConfig } from '../writes/credentials.ts';
import { type RecordWriter, WriteCoordinator } from '../writes/record-writer.ts';
import { withUpdateCredentials } from '../writes/update-credentials.ts';
import { RecordTable } from '../zones/record-table.ts';
import type { ResolvedTransfers } from '../zones/transfers.ts';
import type { Log } from './logger.ts';
import { giveMemoryBackAfterFirstLoad } from './memory-after-load.ts';

export interface ServeOptions extends AnswerSettings {
  manifests: string;
  dns: string;
  http: string;
  /** The HTTP listener's connection limits (`--http-max-connections` and the like). */
  httpConnectionLimits?: Partial<HttpConnectionLimits>;
  stateDir?: string;
  /** Per-file size limit of the manifests (default DEFAULT_MAX_MANIFEST_BYTES, 16 MiB). */
  maxManifestBytes?: number;
  /** DNS threads sharing the port (SO_REUSEPORT): 1 serves from the main thread alone. */
  workers?: number;
  /**
   * How long a zone with nothing stored waits for its secondaries' SOA serials before its first serial
   * (default 2000 ms; 0: do not ask).
   */
  secondaryProbeTimeoutMs?: number;
  /**
   * Who may write record sets through an API, and each credential's namespace and quota. The front
   * doors that authenticate callers come later; until then `ServeHandle.writer` is the in-process entry.
   */
  writeAccess?: WriteAccessConfig;
  /**
   * The homelab DNS API (`--homelab-api`): its callers are the webhook-hmac credentials of
   * `writeAccess` and the one caller of `--homelab-api-secret-file` / `--homelab-api-namespace`.
   */
  homelabApi?: HomelabApiSettings;
  /** The ExternalDNS webhook provider (`--externaldns-webhook-namespace`, docs/externaldns.md). */
  externalDnsWebhook?: ExternalDnsWebhookSettings;
  /** Front doors whose kinds the manifests may hold (registered ones and those of `frontDoorModules`). */
  frontDoors?: FrontDoors;
  /** The modules of `--front-door`: the manifest parse worker loads them too. */
  frontDoorModules?: readonly string[];
  /**
   * Change safety: how long content must stay unchanged to become the baseline that changes are
   * measured against (default 10 s; ADR 0018), for the zones and for the folder.
   */
  changeSafetyWindowMs?: number;
  /** How often `--state-dir`/confirmations is checked for `zonekeeper confirm` (default 1 s). */
  confirmationPollMs?: number;
  /** Networks health probes may reach although PROBE_DENIED_NETWORKS holds them (`--health-probe-allow`). */
  healthProbeAllow?: readonly string[];
  /** Probe targets one namespace's record sets may hold (`--health-probe-namespace-limit`). */
  healthProbeNamespaceLimit?: number;
  /** Certificate authorities (PEM) HTTPS health probes trust besides the system's (`--health-probe-ca`). */
  healthProbeCa?: readonly string[];
  log: Log;
}

/** Default of `--secondary-probe-timeout`. */
export const DEFAULT_SECONDARY_PROBE_TIMEOUT_MS = 2000;

/** Zone reconciles `serve` keeps in flight at once (the controller's default is 8). */
export const SERVE_ZONE_CONCURRENCY = 32;

export interface ServeHandle {
  dns: { host: string; port: number };
  http: { host: string; port: number };
  controller: Controller;
  source: ManifestSource;
  /** Record sets written through APIs: persisted in --state-dir/api-writes, served like manifests. */
  writer: RecordWriter;
  /** Where the homelab DNS API listens (with --homelab-api). */
  homelabApi?: { host: string; port: number };
  /** The ExternalDNS webhook provider (with --externaldns-webhook-namespace). */
  externalDnsWebhook?: ExternalDnsWebhook;
  stop(): Promise<void>;
}

/**
 * `zonekeeper serve`: the manifests folder as source, all in one process; zones of builtin classes are
 * served by the built-in server, those of powerdns classes programmed into PowerDNS.
 */
export async function startServe(options: ServeOptions): Promise<ServeHandle> {
  const { log } = options;
  // The one caller of --homelab-api-secret-file joins the write credentials (checked before anything starts).
  const writeAccess = withExternalDnsCredential(
    withSingleCaller(options.writeAccess, options.homelabApi?.caller),
    options.externalDnsWebhook,
  );
  const registry = new Registry();
  // Zones as objects, or (with DNS threads) as the zone images the threads share (ADR 0020).
  const table = new ZoneTable<ServedZone>();
  const metrics = new ServerMetrics(registry, table);
  // The store keeps record sets in the table the controller's catalog keys them by (one slot each),
  // and the state log its entries of record sets (a map of every record set fewer).
  const recordTable = new RecordTable();
  const state = await StateStore.open(options.stateDir, {
    log: (level, message) => log(level, message),
    recordTable,
  });
  // Without stored serials a zone starts at the date serial, or above the serial its secondaries
  // (NOTIFY targets) answer: lower than what was served before, secondaries would ignore it.
  if (!state.persistent)
    log(
      'warn',
      'no --state-dir: serials start again from the date serial after a restart (above what secondaries answer, for zones with NOTIFY targets)',
    );
  else if (state.serialCount === 0)
    log(
      'warn',
      `the state in ${options.stateDir} is empty (new or lost): serials start at the date serial, or above the serial each zone's secondaries (NOTIFY targets) answer`,
    );
  // The state log's snapshots wait until every zone is programmed: no answer waits for them. On a
  // first start the objects are not written before then either (the release writes them as the
  // first snapshot, ADR 0015). Serials are still durable before they are served.
  const releaseCompaction = state.holdCompaction();
  const probeTimeoutMs = options.secondaryProbeTimeoutMs ?? DEFAULT_SECONDARY_PROBE_TIMEOUT_MS;
  // A manifest restored while its object waits on a finalizer (a held deletion) brings it back.
  const store = new MemoryStore(undefined, { restoreDeleting: true, recordSets: recordTable });
  const workers = Math.max(1, options.workers ?? 1);
  const notifier = new Notifier({ registry, log: (level, message) => log(level, message) });
  let pool: WorkerPoolBackend | undefined;
  // Without --alias-resolver, an ALIAS whose target is outside the zones served cannot be answered:
  // the built-in backend reports its record set (not Ready) and has zones rechecked as others come and go.
  const aliasCheck = options.aliasResolver
    ? undefined
    : { recheck: (zone: string) => controller.recheckZone(zone) };
  // Steered record sets: probed here, off the answering path; DNS workers get each state change.
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
    // Each transition shows in the status of the record sets probing that target.
    onTransition: ({ slot }) => {
      for (const key of steering.recordsProbing(slot))
        controller.targetsChanged(key).catch((e: unknown) => {
          log('warn', `could not write the health of DNSRecordSet ${key}: ${(e as Error).message}`);
        });
    },
  });
  const steering = new SteeringBinder(checker);
  // Record sets whose health checks were refused get their status again once they are started.
  const recheck = (zone: string) => controller.recheckZone(zone);
  // Zones are signed on a thread of their own, never on the one answering DNS.
  const signingThread = new SigningThread();
  // DNSSEC keys of the zones the built-in server signs: in --state-dir/dnssec (mode 0600), or in memory.
  const dnssecKeys =
    options.stateDir !== undefined && state.persistent
      ? new FolderKeyStore(options.stateDir, (level, message) => log(level, message))
      : new MemoryKeyStore(generateDnssecKey);
  if (!state.persistent)
    log(
      'warn',
      'no --state-dir: DNSSEC keys of signed zones are kept in memory and replaced at every restart',
    );
  const backend = (): Backend => {
    if (workers === 1)
      return new BuiltinBackend(table, notifier, {
        ...(aliasCheck ? { aliasCheck } : {}),
        steering,
        recheck,
        dnssecKeys,
        signingThread,
      });
    pool = WorkerPoolBackend.forListener(
      table,
      dns.address(),
      {
        workers,
        registry,
        log: (level, message) => log(level, message),
        ...answerSettings(options),
        ...(aliasCheck ? { aliasCheck } : {}),
        updates,
        steering,
        recheck,
        dnssecKeys,
        signingThread,
      },
      notifier,
    );
    return pool;
  };
  // YAML is parsed on worker threads, never on a thread that answers DNS: one per CPU while the folder
  // is loaded at start-up, one afterwards (an edit parses one file).
  const parser = new ManifestParserPool(startParseThreads(), options.frontDoorModules);
  const frontDoors = options.frontDoors ?? NO_FRONT_DOORS;
  // Held changes are confirmed by `zonekeeper confirm` (files in --state-dir) or by the annotation in
  // the zone's manifest.
  const confirmationFiles = new ConfirmationFiles(options.stateDir, options.confirmationPollMs);
  const confirmations = (key: string): string[] => {
    const annotation = (store.get('DNSZone', key) as DNSZone | undefined)?.metadata.annotations?.[
      CONFIRM_CHANGE_ANNOTATION
    ]?.trim();
    return [...confirmationFiles.get(key), ...(annotation ? [annotation] : [])];
  };
  const confirmHint = (key: string, hash: string): string =>
    options.stateDir !== undefined
      ? `with \`zonekeeper confirm --state-dir ${options.stateDir} ${key} ${hash}\` (or the annotation ${CONFIRM_CHANGE_ANNOTATION}: "${hash}" in the zone's manifest)`
      : `with the annotation ${CONFIRM_CHANGE_ANNOTATION}: "${hash}" in the zone's manifest (or \`zonekeeper confirm\` with a --state-dir)`;
  const windowMs = options.changeSafetyWindowMs ?? CHANGE_SAFETY_WINDOW_MS;
  const source = new ManifestSource({
    folderHold: new FolderHold({ windowMs, confirmations, confirmHint }),
    dir: options.manifests,
    store,
    state,
    parser,
    frontDoors,
    ...(options.maxManifestBytes !== undefined ? { maxFileBytes: options.maxManifestBytes } : {}),
    log: (level, message) => log(level, message),
    // Front-door objects that read others (a kubizone Zone its Records) are translated once a reload.
    batch: (run) => (translated ? translated.batch(run) : run()),
  });
  registerSourceMetrics(registry, store, source, recordTable);

  // With DNS threads this thread answers only until they listen (its socket reserves the port for
  // them): no response cache here.
  const handler = createQueryHandler(
    table,
    metrics,
    workers > 1 ? { ...options, responseCache: 0 } : options,
  );
  const transfers = new TransferHandler(table, { registry });
  // RFC 2136 UPDATE (zones' updatePolicy) goes through the record writer, once it runs.
  let writer: WriteCoordinator | undefined;
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
    transfers,
    updates,
    ...(options.maxTcpPerSource !== undefined ? { maxTcpPerSource: options.maxTcpPerSource } : {}),
  });
  let ready = false;
  let externalDnsWebhook: ExternalDnsWebhook | undefined;
  const http = new HttpServer(
    options.http,
    {
      healthy: () => true,
      ready: () => {
        if (!ready) return { ready: false, message: 'loading manifests' };
        const folder = source.folderProblem();
        if (folder) return { ready: false, message: folder.message };
        const failure = source.reloadFailure();
        if (failure) return { ready: false, message: `${failure}; retrying` };
        // A zone whose latest change is not saved or served yet (retried with backoff) is not ready.
        const failing = controller.pendingZones();
        if (failing.length > 0)
          return {
            ready: false,
            message: failing.map((z) => `zone ${z.key} is not ready (${z.reason}): ${z.message}`).join('\n'),
          };
        return { ready: true, message: 'ready' };
      },
      metrics: () => registry.render(),
      resources: () => ({
        // Objects kept at their last valid version show Accepted=False with the manifest's problem.
        items: [
          ...KINDS.flatMap((kind) => store.list(kind).map((object) => source.present(object))),
          ...frontDoors.all.flatMap((door) => store.listForeign(frontDoorId(door))),
        ],
        problems: source.problems(),
        // Endpoints the ExternalDNS webhook provider did not write (the newest), and why.
        ...(externalDnsWebhook ? { externalDnsRefused: externalDnsWebhook.refused() } : {}),
      }),
    },
    options.httpConnectionLimits,
  );

  // Bind first (with several workers the DNS threads join the port this thread got, and it closes its
  // own sockets once they listen: it answers no DNS), then load and program.
  await dns.start();
  const zoneBackend = backend();
  await pool?.start();
  if (pool) await dns.stop();
  // builtin classes: this process's server; powerdns classes: their PowerDNS (API keys from files or
  // environment variables here; a Kubernetes Secret reference is reported as needing a cluster).
  const secrets = fileAndEnvSecrets();
  const backends = createBackendFactory({
    builtin: zoneBackend,
    secrets,
    log,
    // PowerDNS's LUA health checks: the same networks as the built-in server's probes.
    probePermitted: (address) => checker.permitted(address),
  });
  // Objects of front-door kinds reach the controller as the DNSZones and DNSRecordSets they map to.
  const translated =
    frontDoors.size > 0
      ? new FrontDoorStore({
          base: store,
          doors: frontDoors,
          log: (level, message, fields) => log(level, message, fields),
          // A manifest made invalid: the last valid version is served, and its status says why.
          problems: (door, key) =>
            source
              .keptObjects()
              .get(`${door}/${key}`)
              ?.map((p) => ({ path: p.path ?? '', code: p.code, message: formatProblem(p) })),
        })
      : undefined;
  const controller = new Controller({
    store: translated ?? store,
    recordTable,
    changeSafetyWindowMs: windowMs,
    confirmations: (key) => confirmationFiles.get(key),
    confirmHint,
    backend: backends,
    serials: state,
    registry,
    log,
    secrets,
    recordTargets: (key) => steering.recordTargets(key),
    // The store is in memory and a serial's durable write is a local fsync of a few milliseconds, which
    // at start-up is longer than a small zone's build: 32 zones in flight keep this thread busy while
    // some wait for it. Servers of their own (PowerDNS, RFC 2136, webhooks) still get 8 at once.
    zoneConcurrency: SERVE_ZONE_CONCURRENCY,
    ...(probeTimeoutMs > 0
      ? {
          secondarySerials: (origin: Name, transfers: ResolvedTransfers) =>
            probeSoaSerials(origin, new TransferPolicy(transfers).notify, probeTimeoutMs),
        }
      : {}),
  });
  // Zones whose manifest never validated: record sets naming them are told it is refused and why.
  let refusedZones = new Set<string>();
  // Front-door objects kept at their last valid version, and why: their status says so at once.
  let keptForeign = new Map<string, string>();
  // The homelab controller (made below) is told when one of its objects' manifests turns (in)valid.
  let homelabRef: HomelabController | undefined;
  const reloaded = source.onReload; // the metrics' listener
  source.onReload = (problems) => {
    reloaded?.(problems);
    if (translated) {
      const now = new Map<string, string>();
      for (const [id, why] of source.keptObjects())
        if (frontDoors.get(id.slice(0, id.indexOf('/')))) now.set(id, why.map(formatProblem).join('\n'));
      for (const id of new Set([...keptForeign.keys(), ...now.keys()])) {
        if (keptForeign.get(id) === now.get(id)) continue;
        const slash = id.indexOf('/');
        void translated.refreshStatus(id.slice(0, slash), id.slice(slash + 1));
        homelabRef?.recheck(id.slice(0, slash), id.slice(slash + 1));
      }
      keptForeign = now;
    }
    const now = new Set<string>();
    for (const [id, why] of source.refusedObjects()) {
      if (!id.startsWith('DNSZone/')) continue;
      const key = id.slice('DNSZone/'.length);
      now.add(key);
      controller.setZoneRefused(key, refusalText(why));
    }
    for (const key of refusedZones) if (!now.has(key)) controller.setZoneRefused(key, undefined);
    refusedZones = now;
  };
  // Zones whose removal the folder's change safety holds keep serving, Programmed=False/ChangeHeld.
  let folderHeld = new Set<string>();
  source.onHolds = (holds) => {
    for (const [key, hold] of holds) controller.setZoneHeld(key, { hash: hold.hash, message: hold.message });
    for (const key of folderHeld) if (!holds.has(key)) controller.setZoneHeld(key, undefined);
    folderHeld = new Set(holds.keys());
  };
  // Fewer full collections while the first load builds the heap; V8's own growth once every zone was
  // programmed (docs/benchmarks.md, "Seventeenth round: full collections during the first load").
  const loadGrowth = growHeapDuringLoad();
  await source.start();
  parser.shrink(1);
  // Which zones were served before a restart decides which keep their domain (ADR 0013): their
  // Accepted conditions come back from the state before the controller judges any zone, and are
  // remembered from here on.
  await restoreAcceptance(store, state);
  const forgetAcceptance = rememberAcceptance(store, state);
  // API-written record sets join the store before the controller's first look, so a restart judges
  // them with their creation times, as manifests.
  const writes = await FolderWriteStore.open(options.stateDir, store, (level, message) =>
    log(level, message),
  );
  const coordinator = new WriteCoordinator({
    store: writes,
    gate: catalogGate(controller.catalog, store, (key) => controller.zoneModel(key)),
    // The configured credentials, and those of the zones' update policies (TSIG keys of UPDATE).
    credentials: withUpdateCredentials(
      new CredentialTable(writeAccess ?? { credentials: [] }),
      updateKeySources(store),
    ),
    log: (level, message, fields) => log(level, message, fields),
  });
  await coordinator.start();
  writer = coordinator;
  controller.start();
  // A confirmation written by `zonekeeper confirm`: the folder's holds and the zone are looked at again.
  await confirmationFiles.start((keys) => {
    void source.reload();
    for (const key of keys) controller.recheckZone(key);
  });
  // The homelab DNS operator's kinds: each DNSRecord pushed to its DNSClass's provider.
  const homelab = frontDoors.get(RECORD_DOOR)
    ? new HomelabController({
        store,
        providers: createHomelabClient,
        secrets,
        settings: homelabSettingsFromEnv(),
        // A manifest made invalid: its last valid version is still pushed, and its status says why.
        manifestProblem: (door, key) =>
          source.keptObjects().get(`${door}/${key}`)?.map(formatProblem).join('; '),
        log,
      })
    : undefined;
  homelabRef = homelab;
  homelab?.start();
  await http.start();
  // The homelab DNS API: its callers' writes take the same writer as every API write.
  const homelabApi = options.homelabApi
    ? await startHomelabApi({
        settings: options.homelabApi,
        credentials: writeAccess?.credentials ?? [],
        secrets,
        writer: () => writer,
        recordSet: (key) => store.get('DNSRecordSet', key) as DNSRecordSet | undefined,
        registry,
        log,
      })
    : undefined;
  // The ExternalDNS webhook provider: its endpoints take the same writer as every API write.
  const gate = catalogGate(controller.catalog, store, (key) => controller.zoneModel(key));
  externalDnsWebhook = options.externalDnsWebhook
    ? await startExternalDnsWebhook({
        settings: options.externalDnsWebhook,
        writer: () => writer,
        // With the front doors' translations: zones of other APIs (kubizone, Gardener) give domains too.
        store: translated ?? store,
        gate: () => gate,
        loaded: () => true,
        registry,
        log,
      })
    : undefined;
  await controller.idle();
  loadGrowth.restore();
  releaseCompaction();
  ready = true;
  // The modules this thread loaded go to the compile cache now, not only at exit (docs/adr/0030).
  flushCompileCache();
  // Once every zone was programmed once, the heap the first load left behind goes back to the system:
  // one compacting collection (README, docs/benchmarks.md "Sixth round"), after the state's first
  // snapshot, which the release above lets start. Only with DNS threads: then this thread answers no
  // DNS, and the collection's pause is the control plane's alone.
  if (pool) void giveMemoryBackAfterFirstLoad(state.compactionsSettled(), log);
  const semiSpace = parseSemiSpace();
  log('info', 'serving', {
    dns: `${dns.address().host}:${dns.address().port}`,
    http: `${http.address().host}:${http.address().port}`,
    workers,
    zones: table.size,
    problems: source.problems().length,
    compileCache: compileCacheSummary(),
    loadHeapGrowth: loadGrowth.percent ?? loadGrowth.skipped,
    parseSemiSpaceMb: semiSpace.mb ?? semiSpace.skipped,
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
    dns: dns.address(),
    http: http.address(),
    controller,
    source,
    writer: coordinator,
    ...(homelabApi ? { homelabApi: homelabApi.api.address() } : {}),
    ...(externalDnsWebhook ? { externalDnsWebhook } : {}),
    async stop() {
      // UPDATEs waiting for a write are answered now: none holds the shutdown up.
      updates.stop();
      confirmationFiles.stop();
      await homelabApi?.stop();
      await externalDnsWebhook?.stop();
      source.stop();
      await controller.idle();
      await controller.flush();
      controller.stop();
      homelab?.stop();
      forgetAcceptance();
      backends.close();
      checker.stop();
      await Promise.all([dns.stop(), http.stop(), pool?.stop(), parser.close(), signingThread.close()]);
      if (dnssecKeys instanceof FolderKeyStore) dnssecKeys.close();
      await Promise.all([state.close(), writes.close()]);
    },
  };
}

/** The compile cache's state for the `serving` line: its folder, or why there is none. */
function compileCacheSummary(): string {
  const outcome = compileCacheOutcome();
  if (outcome === undefined) return 'not asked (serve started without src/cli/main.ts)';
  if (outcome.status === 'enabled' || outcome.status === 'already-enabled') return outcome.directory;
  return outcome.status === 'disabled' ? 'off (NODE_DISABLE_COMPILE_CACHE)' : `off (${outcome.reason})`;
}
