import { KINDS } from '../api/index.ts';
import { BuiltinBackend } from '../backends/builtin/builtin-backend.ts';
import { Controller } from '../control/controller.ts';
import { MemoryStore } from '../control/memory-store.ts';
import { Registry } from '../metrics/registry.ts';
import { ZoneAliasResolver } from '../server/alias-resolver.ts';
import { DnsServer } from '../server/dns-server.ts';
import { HttpServer } from '../server/http-server.ts';
import { QueryHandler } from '../server/query-handler.ts';
import { ServerMetrics } from '../server/server-metrics.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { ManifestSource } from '../sources/manifests/manifest-source.ts';
import { StateFile } from '../sources/manifests/state-file.ts';
import type { Log } from './logger.ts';

export interface ServeOptions {
  manifests: string;
  dns: string;
  http: string;
  stateDir?: string;
  /** `host:port` of a recursive resolver for ALIAS targets outside the zones served. */
  aliasResolver?: string;
  identity?: string;
  version?: string;
  log: Log;
}

export interface ServeHandle {
  dns: { host: string; port: number };
  http: { host: string; port: number };
  controller: Controller;
  source: ManifestSource;
  stop(): Promise<void>;
}

/** `zonekeeper serve`: the manifests folder as source, the built-in server as backend, all in one process. */
export async function startServe(options: ServeOptions): Promise<ServeHandle> {
  const { log } = options;
  const registry = new Registry();
  const table = new ZoneTable();
  const metrics = new ServerMetrics(registry, table);
  const state = new StateFile(options.stateDir);
  await state.load();
  if (!state.persistent)
    log('warn', 'no --state-dir: serials start again from the date serial after a restart');
  const store = new MemoryStore();
  const controller = new Controller({
    store,
    backend: new BuiltinBackend(table),
    serials: state,
    registry,
    log,
  });
  const source = new ManifestSource({
    dir: options.manifests,
    store,
    state,
    log: (level, message) => log(level, message),
  });
  const problemsGauge = registry.gauge(
    'zonekeeper_manifest_problems',
    'Problems found in the manifests folder at the last reload.',
  );
  source.onReload = (problems) => problemsGauge.set(problems.length);

  const handler = new QueryHandler({
    table,
    metrics,
    chaos: { identity: options.identity, version: options.version },
    aliasResolver: new ZoneAliasResolver({
      table,
      ...(options.aliasResolver ? { upstream: options.aliasResolver } : {}),
    }),
  });
  const dns = new DnsServer({ listen: options.dns, handler, metrics });
  let ready = false;
  const http = new HttpServer(options.http, {
    healthy: () => true,
    ready: () => (ready ? { ready: true, message: 'ready' } : { ready: false, message: 'loading manifests' }),
    metrics: () => registry.render(),
    resources: () => ({
      items: KINDS.flatMap((kind) => store.list(kind)),
      problems: source.problems(),
    }),
  });

  await source.start();
  controller.start();
  await dns.start();
  await http.start();
  await controller.idle();
  ready = true;
  log('info', 'serving', {
    dns: `${dns.address().host}:${dns.address().port}`,
    http: `${http.address().host}:${http.address().port}`,
    zones: table.size,
    problems: source.problems().length,
  });
  return {
    dns: dns.address(),
    http: http.address(),
    controller,
    source,
    async stop() {
      source.stop();
      await controller.idle();
      await controller.flush();
      controller.stop();
      await Promise.all([dns.stop(), http.stop()]);
      await state.save();
    },
  };
}
