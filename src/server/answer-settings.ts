import { ZoneAliasResolver } from './alias-resolver.ts';
import { QueryHandler } from './query-handler.ts';
import type { RrlSettings } from './rrl.ts';
import type { ServerMetrics } from './server-metrics.ts';
import type { ServedZone, ZoneTable } from './zone-table.ts';

/** How DNS is answered: the same in `serve`, `server` and every DNS thread they start. */
export interface AnswerSettings {
  /** Answer for CHAOS `id.server.` and `hostname.bind.`; unset refuses them. */
  identity?: string;
  /** Answer for CHAOS `version.server.` and `version.bind.`; unset refuses them. */
  version?: string;
  /** `host:port` of a recursive resolver for ALIAS targets outside the zones served. */
  aliasResolver?: string;
  /** Responses kept for reuse per DNS process (default 100,000; 0 turns the cache off). */
  responseCache?: number;
  /** Response rate limiting on UDP: on with the defaults of rrl.ts unless `enabled: false`. */
  rrl?: RrlSettings;
  /** TCP connections one client (IPv4 address, IPv6 /64) may hold per DNS process or thread; 0: no limit. */
  maxTcpPerSource?: number;
}

/** Only the settings that are set (empty strings count as unset), e.g. for a worker's config. */
export function answerSettings(o: AnswerSettings): AnswerSettings {
  return {
    ...(o.identity ? { identity: o.identity } : {}),
    ...(o.version ? { version: o.version } : {}),
    ...(o.aliasResolver ? { aliasResolver: o.aliasResolver } : {}),
    ...(o.responseCache !== undefined ? { responseCache: o.responseCache } : {}),
    ...(o.rrl !== undefined ? { rrl: o.rrl } : {}),
    ...(o.maxTcpPerSource !== undefined ? { maxTcpPerSource: o.maxTcpPerSource } : {}),
  };
}

/** The query handler of one DNS process answering from `table`. */
export function createQueryHandler(
  table: ZoneTable<ServedZone>,
  metrics: ServerMetrics,
  o: AnswerSettings,
): QueryHandler {
  const s = answerSettings(o);
  return new QueryHandler({
    table,
    metrics,
    chaos: {
      ...(s.identity !== undefined ? { identity: s.identity } : {}),
      ...(s.version !== undefined ? { version: s.version } : {}),
    },
    ...(s.responseCache !== undefined ? { responseCache: s.responseCache } : {}),
    // On by default in every DNS process.
    rrl: s.rrl ?? {},
    aliasResolver: new ZoneAliasResolver({
      table,
      ...(s.aliasResolver !== undefined ? { upstream: s.aliasResolver } : {}),
    }),
  });
}
