/**
 * One connection pool for every API client of a configuration (`shareConnections`), in a module of its
 * own so that the watch thread (`watch-worker.ts`) uses it without loading the API's schemas.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { KubeConfig, RequestContext } from '@kubernetes/client-node';

const SHARED = Symbol('zonekeeper.sharedConnections');

/** How long a request to the API server is waited for (a list page, a status write, a Lease). */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Makes every API client built from `config` share one connection pool. @kubernetes/client-node
 * builds a new undici Agent for every request (applySecurityAuthentication), so each request opened
 * its own TCP and TLS connection: an operator starting on 100,000 record sets made 200,000 TLS
 * handshakes (a finalizer and a status each), most of its start-up CPU, and its resident memory grew
 * by hundreds of MiB (docs/benchmarks.md, "Kubernetes, 100,000 record sets"). The pool is kept as
 * long as what it was built from is the same: the server, the TLS settings and the bytes of the CA,
 * client certificate and key (their files are looked at on every request, so a rotated file gets a
 * new pool and the old one is closed once its requests are done). Tokens are headers, set per
 * request, and are not part of it.
 *
 * Every request made through the clients (not a watch: those run on the watch thread, or behind a
 * proxy with the client's own inactivity limit) is also given up after `requestTimeoutMs` (default
 * REQUEST_TIMEOUT_MS), as client-go's clients are: a connection that died without a reset would
 * otherwise hold a reconcile (and its work queue's slot) for undici's 300 s. The first call for a
 * configuration decides; later calls return it as it is.
 */
export function shareConnections(config: KubeConfig, requestTimeoutMs = REQUEST_TIMEOUT_MS): KubeConfig {
  const marked = config as KubeConfig & { [SHARED]?: true };
  if (marked[SHARED]) return config;
  marked[SHARED] = true;
  const apply = config.applySecurityAuthentication.bind(config);
  let shared:
    | { key: string; dispatcher: NonNullable<ReturnType<RequestContext['getDispatcher']>> }
    | undefined;
  config.applySecurityAuthentication = async (context: RequestContext) => {
    await apply(context);
    if (context.getSignal() === undefined) context.setSignal(AbortSignal.timeout(requestTimeoutMs));
    const own = context.getDispatcher();
    if (!own) return; // plain HTTP without TLS settings: the global dispatcher, already shared
    const key = connectionKey(config);
    if (shared?.key === key) {
      context.setDispatcher(shared.dispatcher);
      return;
    }
    const old = shared;
    shared = { key, dispatcher: own };
    // Closes once the requests in flight on it are done; an unused one closes at once.
    if (old) void old.dispatcher.close().catch(() => {});
  };
  return config;
}

/**
 * What a connection pool of the current context is built from (not the token). The files named are
 * read again only when one of them changed (another inode, size, modification or change time; and
 * while it changed in the last 2 s): a key made per request read and hashed them each time, a tenth
 * of the operator's CPU in a burst of status writes (docs/benchmarks.md, "Kubernetes: a kubizone
 * Zone and a burst of Records").
 */
export function connectionKey(config: KubeConfig): string {
  const cluster = config.getCurrentCluster();
  const user = config.getCurrentUser();
  const files = [cluster?.caFile, user?.certFile, user?.keyFile];
  const settings = JSON.stringify([
    cluster?.server,
    cluster?.skipTLSVerify,
    cluster?.tlsServerName,
    cluster?.proxyUrl,
    cluster?.caData,
    user?.certData,
    user?.keyData,
    files,
  ]);
  const stamp = `${settings}\u0000${files.map(fileStamp).join('\u0000')}`;
  const known = keys.get(config);
  if (known?.stamp === stamp) return known.key;
  const bytes = (file: string | undefined, data: string | undefined) => {
    if (data) return data;
    if (!file) return '';
    try {
      return readFileSync(file).toString('base64');
    } catch {
      return `unreadable:${file}`;
    }
  };
  const material = JSON.stringify([
    cluster?.server,
    cluster?.skipTLSVerify,
    cluster?.tlsServerName,
    cluster?.proxyUrl,
    bytes(cluster?.caFile, cluster?.caData),
    bytes(user?.certFile, user?.certData),
    bytes(user?.keyFile, user?.keyData),
  ]);
  const key = createHash('sha256').update(material).digest('base64');
  // A file changed in the last seconds may change again within the file system's clock tick and keep
  // its stamp (git's "racily clean" files): its key is made again on the next request.
  if (!files.some(recent)) keys.set(config, { stamp, key });
  else keys.delete(config);
  return key;
}

/** Modified or changed within the last 2 s (file systems stamp with a clock of a few milliseconds). */
function recent(file: string | undefined): boolean {
  if (!file) return false;
  try {
    const s = statSync(file);
    return Date.now() - Math.max(s.mtimeMs, s.ctimeMs) < 2000;
  } catch {
    return false;
  }
}

/** The last key made per configuration, with the settings and file stamps it was made from. */
const keys = new WeakMap<KubeConfig, { stamp: string; key: string }>();

/** A file's identity and version as `stat` gives it ('' with no file, `-` when it cannot be read). */
function fileStamp(file: string | undefined): string {
  if (!file) return '';
  try {
    const s = statSync(file, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch {
    return '-';
  }
}
