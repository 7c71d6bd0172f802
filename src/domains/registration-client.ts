/**
 * Registration data over the network: RDAP first (RFC 7480-7484, 9082/9083), its server found through
 * the IANA bootstrap registry (RFC 9224, fetched from a configurable URL and cached), WHOIS (RFC 3912)
 * as the fallback: IANA's WHOIS refers to the registry's server, which is then asked. Each server is
 * asked at most once per `minIntervalMs`; a 429 or 503 with Retry-After (RFC 9110 §10.2.3) stops
 * asking that server until then. Answers are cached per domain for `cacheTtlMs`.
 */
import net from 'node:net';
import {
  parseRdapDomain,
  parseWhois,
  type Registration,
  rdapBaseUrls,
  whoisReferral,
} from '../zones/registration.ts';
import { domainText } from '../zones/zone-name-servers.ts';

export const IANA_RDAP_BOOTSTRAP = 'https://data.iana.org/rdap/dns.json';
export const IANA_WHOIS = 'whois.iana.org:43';

export interface RegistrationClientOptions {
  /** The RDAP bootstrap file for DNS (default IANA's). */
  bootstrapUrl?: string;
  /** How long the bootstrap file is kept (default 24 h). */
  bootstrapTtlMs?: number;
  /** IANA's WHOIS server, host:port (default whois.iana.org:43). */
  whoisServer?: string;
  /** The port of the registry WHOIS servers IANA refers to (default 43). */
  whoisPort?: number;
  /** Per request (default 5 s). */
  timeoutMs?: number;
  /** Between two requests to one server, at least (default 1 s). */
  minIntervalMs?: number;
  /** How long an answer is reused for the same domain (default 1 h). */
  cacheTtlMs?: number;
  /** Bytes read at most from one answer (default 1 MiB). */
  maxBytes?: number;
  now?: () => number;
}

/** A server asked us to wait (Retry-After), or its rate limit has not passed yet. */
export class RateLimitedError extends Error {
  readonly retryAfterMs: number;
  constructor(server: string, retryAfterMs: number) {
    super(`${server} asks to wait ${Math.ceil(retryAfterMs / 1000)} s (Retry-After or its rate limit)`);
    this.retryAfterMs = retryAfterMs;
  }
}

/** Retry-After as seconds or an HTTP date (RFC 9110 §10.2.3), in ms from `now`. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export class RegistrationClient {
  private readonly o: RegistrationClientOptions;
  private bootstrap?: { at: number; data: Promise<unknown> };
  private readonly nextAllowed = new Map<string, number>();
  private readonly cache = new Map<string, { at: number; value: Registration }>();

  constructor(options: RegistrationClientOptions = {}) {
    this.o = options;
  }

  private now(): number {
    return this.o.now?.() ?? Date.now();
  }

  /** The registration of a registrable domain: RDAP, else WHOIS; throws with what each said. */
  async lookup(domain: string): Promise<Registration> {
    const name = domainText(domain);
    const cached = this.cache.get(name);
    if (cached && this.now() - cached.at < (this.o.cacheTtlMs ?? 3_600_000)) return cached.value;
    let value: Registration;
    try {
      value = await this.rdap(name);
    } catch (rdapError) {
      if (rdapError instanceof RateLimitedError) throw rdapError;
      try {
        value = await this.whois(name);
      } catch (whoisError) {
        throw new Error(`RDAP: ${(rdapError as Error).message}; WHOIS: ${(whoisError as Error).message}`);
      }
    }
    this.cache.set(name, { at: this.now(), value });
    return value;
  }

  /** Waits for a server's turn (slots are reserved in order); throws when it asked to wait longer than a request's timeout. */
  private async turn(server: string): Promise<void> {
    const now = this.now();
    const slot = Math.max(now, this.nextAllowed.get(server) ?? 0);
    const wait = slot - now;
    if (wait > (this.o.timeoutMs ?? 5000)) throw new RateLimitedError(server, wait);
    this.nextAllowed.set(server, slot + (this.o.minIntervalMs ?? 1000));
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }

  private async get(
    url: string,
    accept: string,
  ): Promise<{ status: number; body: string; retryAfter: string | null }> {
    const host = new URL(url).host;
    await this.turn(host);
    const response = await fetch(url, {
      headers: { accept },
      redirect: 'follow',
      signal: AbortSignal.timeout(this.o.timeoutMs ?? 5000),
    });
    const max = this.o.maxBytes ?? 1 << 20;
    const length = Number(response.headers.get('content-length') ?? '0');
    if (length > max) throw new Error(`${url}: the answer is larger than ${max} bytes`);
    const body = await response.text();
    if (body.length > max) throw new Error(`${url}: the answer is larger than ${max} bytes`);
    return { status: response.status, body, retryAfter: response.headers.get('retry-after') };
  }

  private async rdap(domain: string): Promise<Registration> {
    const bootstrapUrl = this.o.bootstrapUrl ?? IANA_RDAP_BOOTSTRAP;
    if (!this.bootstrap || this.now() - this.bootstrap.at > (this.o.bootstrapTtlMs ?? 86_400_000)) {
      // One fetch for every look-up waiting on it; a failed one is not kept.
      const data = this.get(bootstrapUrl, 'application/json').then((r) => {
        if (r.status !== 200) throw new Error(`bootstrap ${bootstrapUrl} answered ${r.status}`);
        return JSON.parse(r.body) as unknown;
      });
      const entry = { at: this.now(), data };
      this.bootstrap = entry;
      data.catch(() => {
        if (this.bootstrap === entry) this.bootstrap = undefined;
      });
    }
    const bases = rdapBaseUrls(await this.bootstrap.data, domain);
    if (bases.length === 0) throw new Error(`the bootstrap registry has no RDAP server for ${domain}`);
    const base = bases[0]!;
    const url = `${base.endsWith('/') ? base : `${base}/`}domain/${domain}`;
    const r = await this.get(url, 'application/rdap+json');
    if (r.status === 429 || r.status === 503) {
      const wait = retryAfterMs(r.retryAfter, this.now()) ?? 60_000;
      const host = new URL(url).host;
      this.nextAllowed.set(host, this.now() + wait);
      throw new RateLimitedError(host, wait);
    }
    if (r.status === 404) throw new Error(`${url}: 404, the registry does not know ${domain}`);
    if (r.status !== 200) throw new Error(`${url} answered ${r.status}`);
    return parseRdapDomain(JSON.parse(r.body) as unknown, base);
  }

  private async whois(domain: string): Promise<Registration> {
    const iana = this.o.whoisServer ?? IANA_WHOIS;
    const tld = domain.split('.').at(-1)!;
    const referral = whoisReferral(await this.whoisQuery(iana, tld));
    if (!referral) throw new Error(`${iana} refers to no WHOIS server for .${tld}`);
    const server = `${referral}:${this.o.whoisPort ?? 43}`;
    return parseWhois(await this.whoisQuery(server, domain), referral);
  }

  /** RFC 3912: the query and CRLF over TCP; the answer is everything until the server closes. */
  private async whoisQuery(server: string, query: string): Promise<string> {
    const colon = server.lastIndexOf(':');
    const host = server.slice(0, colon);
    const port = Number(server.slice(colon + 1));
    await this.turn(server);
    const max = this.o.maxBytes ?? 1 << 20;
    const timeoutMs = this.o.timeoutMs ?? 5000;
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port });
      const chunks: Buffer[] = [];
      let size = 0;
      socket.setTimeout(timeoutMs, () =>
        socket.destroy(new Error(`${server}: no answer within ${timeoutMs} ms`)),
      );
      socket.on('connect', () => socket.write(`${query}\r\n`));
      socket.on('data', (d: Buffer) => {
        size += d.length;
        if (size > max) socket.destroy(new Error(`${server}: the answer is larger than ${max} bytes`));
        else chunks.push(d);
      });
      socket.on('error', reject);
      socket.on('close', (hadError) => {
        if (!hadError) resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
  }
}
