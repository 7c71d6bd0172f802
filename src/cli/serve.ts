import { type FrontDoors, frontDoorId, NO_FRONT_DOORS } from '../api/frontdoors/index.ts';
import { KINDS } from '../api/index.ts';
import type { Backend } from '../backends/backend.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { WorkerPoolBackend } from '../backends/builtin/worker-pool-backend.ts';
import { createBackendFactory } from '../backends/registry.ts';
import { Controller } from '../control/controller.ts';
import { FrontDoorStore } from '../control/front-door-store.ts';
import { MemoryStore } from '../control/memory-store.ts';
import { fileAndEnvSecrets } from '../control/secrets.ts';
import type { Name } from '../dns/name.ts';
import { Registry } from '../metrics/registry.ts';
import { type AnswerSettings, answerSettings, createQueryHandler } from '../server/answer-settings.ts';
import { DnsServer } from '../server/dns-server.ts';
import { HttpServer } from '../server/http-server.ts';
import { ServerMetrics } from '../server/server-metrics.ts';
import { Notifier } from '../server/transfer/notifier.ts';
import { probeSoaSerials } from '../server/transfer/soa-probe.ts';
import { TransferHandler } from '../server/transfer/transfer-handler.ts';
import { TransferPolicy } from '../server/transfer/transfer-policy.ts';
import { UpdateHandler } from '../server/update/update-handler.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { WorkerManifestParser } from '../sources/manifests/manifest-parser.ts';
import { formatProblem, ManifestSource, refusalText } from '../sources/manifests/manifest-source.ts';
import { registerSourceMetrics } from '../sources/manifests/resource-metrics.ts';
import { StateStore } from '../sources/manifests/state-file.ts';
import { rememberAcceptance, restoreAcceptance } from '../sources/manifests/zone-acceptance.ts';
import { catalogGate } from '../sources/writes/catalog-gate.ts';
import { FolderWriteStore } from '../sources/writes/folder-write-store.ts';
import { updateKeySources } from '../sources/writes/update-keys.ts';
import { CredentialTable, type WriteAccessConfig } from '../writes/credentials.ts';
import { type RecordWriter, WriteCoordinator } from '../writes/record-writer.ts';
import { withUpdateCredentials } from '../writes/update-credentials.ts';
import type { ResolvedTransfers } from '../zones/transfers.ts';
import type { Log } from './logger.ts';

export interface ServeOptions extends AnswerSettings {
  manifests: string;
  dns: string;
  http: string;
  stateDir?: string;
  /** Per-file size limit of the manifests (default DEFAULT_MAX_MANIFEST_BYTES, 16 MiB). */
  maxManifestBytes?: number;
  /** DNS processes sharing the port (SO_REUSEPORT): 1 serves from this process alone. */
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
  /** Front doors whose kinds the manifests may hold (registered ones and those of `frontDoorModules`). */
  frontDoors?: FrontDoors;
  /** The modules of `--front-door`: the manifest parse worker loads them too. */
  frontDoorModules?: readonly string[];
  log: Log;
}

/** Default of `--secondary-probe-timeout`. */
export const DEFAULT_SECONDARY_PROBE_TIMEOUT_MS = 2000;

export interface ServeHandle {
  dns: { host: string; port: number };
  http: { host: string; port: number };
  controller: Controller;
  source: ManifestSource;
  /** Record sets written through APIs: persisted in --state-dir/api-writes, served like manifests. */
  writer: RecordWriter;
  stop(): Promise<void>;
}

/**
 * `zonekeeper serve`: the manifests folder as source, all in one process; zones of builtin classes are
 * served by the built-in server, those of powerdns classes programmed into PowerDNS.
 */
export async function startServe(options: ServeOptions): Promise<ServeHandle> {
  const { log } = options;
  const registry = new Registry();
  const table = new ZoneTable();
  const metrics = new ServerMetrics(registry, table);
  const state = await StateStore.open(options.stateDir, { log: (level, message) => log(level, message) });
  // Without stored serials a zone starts at the date serial, or above the serial its secondaries
  // (NOTIFY targets) answer: lower than what was served before, secondaries would ignore it.
  if (!state.persistent)
    log(
      'warn',
      'no --state-dir: serials start again from the date serial after a restart (above what secondaries answer, for zones with NOTIFY targets)',
    );
  else if (Object.keys(state.snapshot().serials).length === 0)
    log(
      'warn',
      `the state in ${options.stateDir} is empty (new or lost): serials start at the date serial, or above the serial each zone's secondaries (NOTIFY targets) answer`,
    );
  const probeTimeoutMs = options.secondaryProbeTimeoutMs ?? DEFAULT_SECONDARY_PROBE_TIMEOUT_MS;
  const store = new MemoryStore();
  const workers = Math.max(1, options.workers ?? 1);
  const notifier = new Notifier({ registry, log: (level, message) => log(level, message) });
  let pool: WorkerPoolBackend | undefined;
  // Without --alias-resolver, an ALIAS whose target is outside the zones served cannot be answered:
  // the built-in backend reports its record set (not Ready) and has zones rechecked as others come and go.
  const aliasCheck = options.aliasResolver
    ? undefined
    : { recheck: (zone: string) => controller.recheckZone(zone) };
  const backend = (): Backend => {
    if (workers === 1) return new BuiltinBackend(table, notifier, aliasCheck ? { aliasCheck } : {});
    pool = WorkerPoolBackend.forListener(
      table,
      dns.address(),
      {
        workers: workers - 1,
        registry,
        log: (level, message) => log(level, message),
        ...answerSettings(options),
        ...(aliasCheck ? { aliasCheck } : {}),
        updates,
      },
      notifier,
    );
    return pool;
  };
  // YAML is parsed on a worker thread: never on a thread that answers DNS.
  const parser = new WorkerManifestParser(options.frontDoorModules);
  const frontDoors = options.frontDoors ?? NO_FRONT_DOORS;
  const source = new ManifestSource({
    dir: options.manifests,
    store,
    state,
    parser,
    frontDoors,
    ...(options.maxManifestBytes !== undefined ? { maxFileBytes: options.maxManifestBytes } : {}),
    log: (level, message) => log(level, message),
  });
  registerSourceMetrics(registry, store, source);

  const handler = createQueryHandler(table, metrics, options);
  const transfers = new TransferHandler(table, { registry });
  // RFC 2136 UPDATE (zones' updatePolicy) goes through the record writer, once it runs.
  let writer: WriteCoordinator | undefined;
  const updates = new UpdateHandler(table, {
    writer: () => writer,
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
  });
  let ready = false;
  const http = new HttpServer(options.http, {
    healthy: () => true,
    ready: () => {
      if (!ready) return { ready: false, message: 'loading manifests' };
      const folder = source.folderProblem();
      if (folder) return { ready: false, message: folder.message };
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
    }),
  });

  // Bind first (with several workers they join the port the primary got), then load and program.
  await dns.start();
  const zoneBackend = backend();
  await pool?.start();
  // builtin classes: this process's server; powerdns classes: their PowerDNS (API keys from files or
  // environment variables here; a Kubernetes Secret reference is reported as needing a cluster).
  const secrets = fileAndEnvSecrets();
  const backends = createBackendFactory({ builtin: zoneBackend, secrets, log });
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
    backend: backends,
    serials: state,
    registry,
    log,
    secrets,
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
  await source.start();
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
    gate: catalogGate(controller.catalog, store),
    // The configured credentials, and those of the zones' update policies (TSIG keys of UPDATE).
    credentials: withUpdateCredentials(
      new CredentialTable(options.writeAccess ?? { credentials: [] }),
      updateKeySources(store),
    ),
  });
  await coordinator.start();
  writer = coordinator;
  controller.start();
  await http.start();
  await controller.idle();
  ready = true;
  log('info', 'serving', {
    dns: `${dns.address().host}:${dns.address().port}`,
    http: `${http.address().host}:${http.address().port}`,
    workers,
    zones: table.size,
    problems: source.problems().length,
  });
  return {
    dns: dns.address(),
    http: http.address(),
    controller,
    source,
    writer: coordinator,
    async stop() {
      source.stop();
      await controller.idle();
      await controller.flush();
      controller.stop();
      forgetAcceptance();
      backends.close();
      await Promise.all([dns.stop(), http.stop(), pool?.stop(), parser.close()]);
      await Promise.all([state.close(), writes.close()]);
    },
  };
}
