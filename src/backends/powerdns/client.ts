/**
 * A small client for the PowerDNS Authoritative HTTP API (https://doc.powerdns.com/authoritative/http-api/):
 * JSON over HTTP(S) with the `X-API-Key` header, a time limit per request and TLS options (a CA file,
 * a server name, or no verification for tests). Built on node:http/node:https, which take a CA and
 * `rejectUnauthorized` per agent without extra dependencies. The API key is never logged or put in a
 * message.
 */
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { apiKeyError, badResponse, httpError, PowerDnsError, transportError } from './errors.ts';

export interface PowerDnsClientOptions {
  /** Base URL of the PowerDNS webserver, e.g. `http://127.0.0.1:8081` (without `/api/v1`). */
  url: string;
  /** `server_id` in the API paths; PowerDNS Authoritative always calls itself `localhost`. */
  serverId: string;
  /** Reads the API key; called again once when PowerDNS answers 401 (the key may have rotated). */
  apiKey: () => Promise<string>;
  timeoutMs: number;
  /** For https URLs: a CA file to trust (read on first use), the name to verify, or no verification. */
  tls?: { caFile?: string; insecureSkipVerify?: boolean; serverName?: string };
  /** Reads `tls.caFile`; default: the file system. */
  readFile?: (path: string) => Promise<string>;
}

export interface ApiResponse {
  status: number;
  body: string;
}

/** A zone as GET /servers/{id}/zones/{zone} returns it (the fields Zonekeeper reads). */
export interface ZoneInfo {
  id: string;
  name: string;
  kind: string;
  serial?: number;
  soa_edit_api?: string;
  soa_edit?: string;
  rrsets?: { name: string; type: string; ttl: number; records: { content: string; disabled?: boolean }[] }[];
}

/**
 * The zone id PowerDNS uses in URLs (its `apiZoneNameToId`): the name with every character other than
 * letters, digits, `.` and `-` written as `=XX`; the root is `=2E`.
 */
export function zoneId(name: string): string {
  if (name === '.') return '=2E';
  let id = '';
  for (const ch of name) {
    if (/[A-Za-z0-9.-]/.test(ch)) id += ch;
    else id += `=${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return id;
}

export class PowerDnsClient {
  readonly url: string;
  readonly serverId: string;
  private readonly options: PowerDnsClientOptions;
  private agent: Promise<http.Agent> | undefined;
  private key: Promise<string> | undefined;
  /** The write in progress (writes are sent one at a time). */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(options: PowerDnsClientOptions) {
    this.options = options;
    this.url = options.url.replace(/\/+$/, '');
    this.serverId = options.serverId;
  }

  /** Closes idle connections. */
  close(): void {
    void this.agent?.then((a) => a.destroy()).catch(() => {});
    this.agent = undefined;
  }

  /** The connection pool, with the CA file read for https (again after a failed read). */
  private connections(): Promise<http.Agent> {
    if (this.agent !== undefined) return this.agent;
    const tls = this.options.tls;
    const making = (async (): Promise<http.Agent> => {
      if (!this.url.startsWith('https:')) return new http.Agent({ keepAlive: true, maxSockets: 4 });
      let ca: string | undefined;
      if (tls?.caFile !== undefined) {
        try {
          ca = await (this.options.readFile ?? ((p: string) => readFile(p, 'utf8')))(tls.caFile);
        } catch (e) {
          throw new PowerDnsError(
            'PDNS_TLS',
            `cannot read tls.caFile ${tls.caFile} for PowerDNS at ${this.url}: ${(e as Error).message}`,
            { cause: e },
          );
        }
      }
      return new https.Agent({
        keepAlive: true,
        maxSockets: 4,
        ...(ca !== undefined ? { ca } : {}),
        ...(tls?.serverName !== undefined ? { servername: tls.serverName } : {}),
        rejectUnauthorized: tls?.insecureSkipVerify !== true,
      });
    })();
    this.agent = making;
    making.catch(() => {
      if (this.agent === making) this.agent = undefined;
    });
    return making;
  }

  /** `/api/v1/servers/{serverId}` + path. */
  serverPath(path = ''): string {
    return `/api/v1/servers/${encodeURIComponent(this.serverId)}${path}`;
  }

  zonePath(zoneName: string, rest = ''): string {
    return this.serverPath(`/zones/${encodeURIComponent(zoneId(zoneName))}${rest}`);
  }

  /**
   * One request. Statuses in `expect` (besides 2xx) come back as they are; any other status throws a
   * PowerDnsError saying what to fix. `what` names the request in messages.
   */
  request(
    method: string,
    path: string,
    what: string,
    options: { body?: unknown; expect?: readonly number[] } = {},
  ): Promise<ApiResponse> {
    if (method === 'GET') return this.exchange(method, path, what, options);
    // Writes one at a time: two PowerDNS write transactions at once deadlock on SQLite ("database is
    // locked", a 500), and LMDB takes one writer at a time anyway. Reads go in parallel.
    const turn = this.writes.then(() => this.exchange(method, path, what, options));
    this.writes = turn.catch(() => {});
    return turn;
  }

  private async exchange(
    method: string,
    path: string,
    what: string,
    options: { body?: unknown; expect?: readonly number[] },
  ): Promise<ApiResponse> {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const agent = await this.connections();
    let response = await this.send(method, path, what, payload, await this.apiKey(false), agent);
    if (response.status === 401) {
      // The key may have rotated since it was read: read it again, once.
      response = await this.send(method, path, what, payload, await this.apiKey(true), agent);
    }
    const ok = (response.status >= 200 && response.status < 300) || options.expect?.includes(response.status);
    if (!ok) {
      throw httpError(what, response.status, response.body, {
        url: this.url,
        serverId: this.serverId,
        ...(payload !== undefined ? { requestBytes: Buffer.byteLength(payload) } : {}),
      });
    }
    return response;
  }

  /** A request whose 2xx answer is JSON. */
  async json<T>(method: string, path: string, what: string, body?: unknown): Promise<T> {
    const response = await this.request(method, path, what, body === undefined ? {} : { body });
    return this.parse<T>(response, what);
  }

  parse<T>(response: ApiResponse, what: string): T {
    try {
      return JSON.parse(response.body) as T;
    } catch {
      throw badResponse(what, response.status, response.body, this.url);
    }
  }

  private apiKey(refresh: boolean): Promise<string> {
    if (refresh || this.key === undefined) {
      const reading = this.options.apiKey().catch((e: unknown) => {
        throw apiKeyError(e);
      });
      this.key = reading;
      // A failed read is not kept: the next request reads again.
      reading.catch(() => {
        if (this.key === reading) this.key = undefined;
      });
    }
    return this.key;
  }

  private send(
    method: string,
    path: string,
    what: string,
    payload: string | undefined,
    key: string,
    agent: http.Agent,
  ): Promise<ApiResponse> {
    const target = new URL(this.url + path);
    const secure = target.protocol === 'https:';
    const timeoutMs = this.options.timeoutMs;
    return new Promise<ApiResponse>((resolve, reject) => {
      const headers: http.OutgoingHttpHeaders = { 'X-API-Key': key, Accept: 'application/json' };
      if (payload !== undefined) {
        headers['Content-Type'] = 'application/json';
        headers['Content-Length'] = Buffer.byteLength(payload);
      }
      const request = (secure ? https : http).request(target, { method, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', (e) => {
          clearTimeout(timer);
          reject(transportError(what, e, { url: this.url, timeoutMs }));
        });
      });
      // One limit for the whole exchange: connect, send, and read the answer.
      const timer = setTimeout(() => {
        const e = new Error(`no answer within ${timeoutMs} ms`) as NodeJS.ErrnoException;
        e.code = 'PDNS_TIMEOUT';
        request.destroy(e);
      }, timeoutMs);
      request.on('error', (e) => {
        clearTimeout(timer);
        reject(e instanceof PowerDnsError ? e : transportError(what, e, { url: this.url, timeoutMs }));
      });
      if (payload !== undefined) request.write(payload);
      request.end();
    });
  }
}
