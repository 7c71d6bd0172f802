/**
 * List and watch on an upstream API server, read with byte limits. An upstream API server is not
 * trusted: one that ignores `limit` could answer a list with a single page of any size, and a watch
 * line (one event) can be as long as it likes; the official client reads either whole into memory.
 * Here every response is read as a stream and abandoned (the connection closed) once it passes its
 * byte limit, so what one upstream can make this process hold is bounded whatever it sends:
 * - a list page: at most `maxResponseBytes`; a page over it is asked for again with half the limit
 *   (an honest server with large objects), down to one object, after which the list stops there;
 * - a whole list: at most `maxBytes` over all its pages, at most `maxObjects` objects (items past
 *   the limit a page brings are not kept, whatever the server was asked for), and at most
 *   `maxListPages` pages (more fails the list: pages without items that always continue);
 * - a watch event: at most `maxResponseBytes` (one line of the stream).
 * Authentication and TLS are the kubeconfig's (KubeConfig.applyToHTTPSOptions).
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError } from '../kubernetes/kube-api.ts';
import type { KubeObject, ListerWatcher, WatchEvent, WatchHandle } from '../kubernetes/reflector.ts';

/** REST coordinates of a listed kind. */
export interface Coordinates {
  group: string;
  version: string;
  plural: string;
}

export interface ByteLimits {
  /** Objects kept from one list. */
  maxObjects: number;
  /** Bytes of one response (a list page) or of one watch event. */
  maxResponseBytes: number;
  /** Bytes of one list over all its pages. */
  maxBytes: number;
}

/** A response (or watch event) longer than its limit; code UPSTREAM_RESPONSE_TOO_LARGE. */
export class ResponseTooLargeError extends Error {
  readonly code = 'UPSTREAM_RESPONSE_TOO_LARGE';
  constructor(what: string, limit: number) {
    super(
      `UPSTREAM_RESPONSE_TOO_LARGE: ${what} is over ${limit} bytes; it was not read (raise the limit if the upstream is trusted to send that much)`,
    );
    this.name = 'ResponseTooLargeError';
  }
}

/** Times one list starts again from its first page after an expired continue token (HTTP 410). */
export const MAX_LIST_RESTARTS = 3;

/** The fewest pages one list may take, whatever its object cap and page size. */
export const MIN_LIST_PAGES = 64;

/**
 * Pages one list (one start of it) may take: twice what `maxObjects` objects need at `pageSize` (a
 * server may send fewer than asked), at least MIN_LIST_PAGES. Without it, pages with no items and a
 * `continue` token would be bounded only by the byte budget (about a million tiny pages).
 */
export function maxListPages(maxObjects: number, pageSize: number): number {
  const perPage = Math.max(1, Math.min(pageSize, maxObjects));
  return Math.max(MIN_LIST_PAGES, 2 * Math.ceil(maxObjects / perPage));
}

/** A list that took more pages than maxListPages allows; code UPSTREAM_LIST_TOO_MANY_PAGES. */
export class ListTooManyPagesError extends Error {
  readonly code = 'UPSTREAM_LIST_TOO_MANY_PAGES';
  constructor(what: string, pages: number, items: number) {
    super(
      `UPSTREAM_LIST_TOO_MANY_PAGES: the ${what} still continued after ${pages} pages with ${items} objects; the upstream is not paginating as the API does (it is listed again, with backoff)`,
    );
    this.name = 'ListTooManyPagesError';
  }
}

/** Why a bounded list stopped before the end: too many objects, or too many bytes. */
export type ListLimit = 'objects' | 'bytes';

export interface BoundedListResult {
  items: KubeObject[];
  /** The list's snapshot (its first page's), from which a watch continues. */
  resourceVersion: string;
  /** Objects not read, as far as is known (at least 1 when the list stopped early). */
  left: number;
  /** Which limit stopped the list, if one did. */
  limited?: ListLimit;
}

interface Opened {
  response: IncomingMessage;
  abort: () => void;
}

async function open(config: KubeConfig, pathAndQuery: string, signal?: AbortSignal): Promise<Opened> {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error('the upstream kubeconfig names no cluster');
  const url = new URL(`${cluster.server.replace(/\/+$/, '')}${pathAndQuery}`);
  const options: https.RequestOptions = { method: 'GET', headers: { Accept: 'application/json' } };
  await config.applyToHTTPSOptions(options);
  const client = url.protocol === 'http:' ? http : https;
  return new Promise((resolve, reject) => {
    const request = client.request(url, { ...options, ...(signal ? { signal } : {}) }, (response) =>
      resolve({ response, abort: () => request.destroy() }),
    );
    request.on('error', reject);
    request.end();
  });
}

/** The body of a response, abandoned past `limit` bytes. */
function readCapped(opened: Opened, limit: number, what: string): Promise<Buffer> {
  const { response, abort } = opened;
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    abort();
    return Promise.reject(new ResponseTooLargeError(what, limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    response.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length > limit) {
        abort();
        response.destroy();
        reject(new ResponseTooLargeError(what, limit));
        return;
      }
      chunks.push(chunk);
    });
    response.on('end', () => resolve(Buffer.concat(chunks)));
    response.on('error', reject);
    response.on('close', () => {
      if (!response.complete) reject(new Error(`${what}: the connection closed before the response ended`));
    });
  });
}

/** A non-2xx response as a KubeApiError (its Status message, read with a small limit). */
async function statusError(opened: Opened, what: string): Promise<KubeApiError> {
  const code = opened.response.statusCode ?? 0;
  let message = `${what}: HTTP ${code}`;
  let reason: string | undefined;
  try {
    const body = JSON.parse((await readCapped(opened, 64 * 1024, what)).toString('utf8')) as {
      message?: unknown;
      reason?: unknown;
    };
    if (typeof body.message === 'string') message = body.message;
    if (typeof body.reason === 'string') reason = body.reason;
  } catch {
    opened.abort();
  }
  const error = new KubeApiError(code, reason, message) as KubeApiError & { statusCode: number };
  error.statusCode = code;
  return error;
}

function listPath(c: Coordinates): string {
  return c.group === '' ? `/api/${c.version}/${c.plural}` : `/apis/${c.group}/${c.version}/${c.plural}`;
}

interface Page {
  items?: unknown;
  metadata?: { resourceVersion?: unknown; continue?: unknown; remainingItemCount?: unknown };
}

/**
 * A list of one kind across all namespaces within `limits` (see the module comment). The rest is not
 * read; `left` and `limited` say so.
 */
export async function boundedList(
  config: KubeConfig,
  coordinates: Coordinates,
  limits: ByteLimits,
): Promise<BoundedListResult> {
  const what = `list of ${coordinates.plural}`;
  let restarts = 0;
  for (;;) {
    const items: KubeObject[] = [];
    let next: string | undefined;
    let resourceVersion = '';
    let left = 0;
    let bytes = 0;
    let limited: ListLimit | undefined;
    let pageSize = 500;
    let pages = 0;
    try {
      for (;;) {
        const room = limits.maxObjects - items.length;
        // Every request counts (pages asked for again, smaller, too); the cap follows the page size.
        const cap = maxListPages(limits.maxObjects, pageSize);
        if (pages >= cap) throw new ListTooManyPagesError(what, pages, items.length);
        pages++;
        const query = new URLSearchParams({ limit: String(Math.max(1, Math.min(pageSize, room))) });
        if (next) query.set('continue', next);
        const opened = await open(config, `${listPath(coordinates)}?${query}`);
        const status = opened.response.statusCode ?? 0;
        if (status < 200 || status > 299) throw await statusError(opened, what);
        const budget = Math.min(limits.maxResponseBytes, limits.maxBytes - bytes);
        let body: Buffer;
        try {
          body = await readCapped(opened, budget, `a page of the ${what}`);
        } catch (e) {
          if (!(e instanceof ResponseTooLargeError)) throw e;
          // A page over the limit: smaller pages (large objects), until one object is too much.
          if (budget === limits.maxResponseBytes && pageSize > 1) {
            pageSize = Math.max(1, Math.floor(Math.min(pageSize, room) / 2));
            continue;
          }
          limited = 'bytes';
          left = Math.max(1, left);
          break;
        }
        bytes += body.length;
        const page = JSON.parse(body.toString('utf8')) as Page;
        const got = Array.isArray(page.items) ? (page.items as KubeObject[]) : [];
        // A server that ignores `limit` gets no more objects kept than were asked for.
        const kept = got.slice(0, room);
        for (const item of kept) items.push(item);
        if (!resourceVersion && typeof page.metadata?.resourceVersion === 'string')
          resourceVersion = page.metadata.resourceVersion;
        next =
          typeof page.metadata?.continue === 'string' && page.metadata.continue !== ''
            ? page.metadata.continue
            : undefined;
        const remaining =
          typeof page.metadata?.remainingItemCount === 'number' ? page.metadata.remainingItemCount : 1;
        left = got.length - kept.length + (next ? Math.max(1, remaining) : 0);
        if (left > 0 && items.length >= limits.maxObjects) limited = 'objects';
        if (!next || items.length >= limits.maxObjects) break;
      }
    } catch (e) {
      // The continue token expired: the list starts again, a few times. An upstream that answers
      // every continuation 410 would otherwise have every first page read and parsed again forever;
      // past MAX_LIST_RESTARTS the error goes to the reflector, which backs off.
      if ((e as { status?: number }).status === 410 && next && restarts++ < MAX_LIST_RESTARTS) continue;
      throw e;
    }
    return { items, resourceVersion, left, ...(limited ? { limited } : {}) };
  }
}

/**
 * A ListerWatcher on `coordinates` whose list is `boundedList` and whose watch reads events line by
 * line, each at most `limits.maxResponseBytes` (a longer one ends the watch with
 * ResponseTooLargeError; the reflector then lists again).
 */
export function boundedListerWatcher(
  config: KubeConfig,
  coordinates: Coordinates,
  limits: () => ByteLimits,
  onList: (result: BoundedListResult) => void,
): ListerWatcher {
  return {
    list: async () => {
      const result = await boundedList(config, coordinates, limits());
      onList(result);
      return { items: result.items, resourceVersion: result.resourceVersion };
    },
    watch: (resourceVersion, timeoutSeconds, onEvent, onDone) =>
      boundedWatch(
        config,
        coordinates,
        limits().maxResponseBytes,
        resourceVersion,
        timeoutSeconds,
        onEvent,
        onDone,
      ),
  };
}

export async function boundedWatch(
  config: KubeConfig,
  coordinates: Coordinates,
  maxEventBytes: number,
  resourceVersion: string,
  timeoutSeconds: number,
  onEvent: (event: WatchEvent) => void,
  onDone: (error?: unknown) => void,
): Promise<WatchHandle> {
  const controller = new AbortController();
  const query = new URLSearchParams({
    watch: 'true',
    allowWatchBookmarks: 'true',
    resourceVersion,
    timeoutSeconds: String(timeoutSeconds),
  });
  const what = `watch of ${coordinates.plural}`;
  const opened = await open(config, `${listPath(coordinates)}?${query}`, controller.signal);
  let done = false;
  const finish = (error?: unknown) => {
    if (done) return;
    done = true;
    opened.abort();
    onDone(error);
  };
  const status = opened.response.statusCode ?? 0;
  if (status < 200 || status > 299) {
    const error = await statusError(opened, what);
    queueMicrotask(() => finish(error));
    return { abort: () => finish() };
  }
  const { response } = opened;
  let pending: Buffer[] = [];
  let pendingLength = 0;
  const line = (bytes: Buffer) => {
    const text = bytes.toString('utf8').trim();
    if (text === '') return;
    let event: WatchEvent;
    try {
      event = JSON.parse(text) as WatchEvent;
    } catch (e) {
      finish(new Error(`${what}: an event is not JSON (${(e as Error).message})`));
      return;
    }
    onEvent(event);
  };
  response.on('data', (chunk: Buffer) => {
    if (done) return;
    let start = 0;
    for (let i = chunk.indexOf(10); i !== -1 && !done; i = chunk.indexOf(10, start)) {
      const part = chunk.subarray(start, i);
      if (pendingLength + part.length > maxEventBytes) {
        finish(new ResponseTooLargeError(`an event of the ${what}`, maxEventBytes));
        return;
      }
      line(pending.length > 0 ? Buffer.concat([...pending, part]) : part);
      pending = [];
      pendingLength = 0;
      start = i + 1;
    }
    if (done) return;
    const rest = chunk.subarray(start);
    pendingLength += rest.length;
    if (pendingLength > maxEventBytes) {
      finish(new ResponseTooLargeError(`an event of the ${what}`, maxEventBytes));
      return;
    }
    if (rest.length > 0) pending.push(Buffer.from(rest));
  });
  response.on('end', () => finish());
  response.on('error', (e) => finish(e));
  response.on('close', () => finish(response.complete ? undefined : new Error(`${what}: connection closed`)));
  return {
    abort: () => {
      controller.abort();
      finish();
    },
  };
}
