/**
 * The HTTP challenge: `GET http://<domain>/.well-known/zonekeeper-challenge/<token>` must answer 200
 * with the token as its body. The host is resolved through the configured resolver and only
 * addresses the guard allows are connected to (never private, loopback, link-local or cloud metadata
 * addresses unless allow-listed); the body is read up to a cap; redirects are followed only within
 * the domain and only to port 80, 443 or the port of the challenge URL.
 *
 * The whole check — every hop, look-up and byte — has one deadline, so a server that trickles its
 * answer cannot hold a verification slot. What the status says is the Domain's tenant's to read: a
 * failed connection is reported by a stable code only (never the socket's error, the addresses tried
 * or whether a port refused or stayed silent), so the challenge is no port scanner. The details go to
 * the operator's log (`detail`).
 */
import http from 'node:http';
import { challengeAddressAllowed, type Network } from '../zones/domain-verification.ts';
import { domainText } from '../zones/zone-name-servers.ts';

export interface HttpChallengeOptions {
  /** Resolves a host to addresses (the verification resolver). */
  addresses: (host: string) => Promise<string[]>;
  /** Networks the challenge may reach although they are blocked by default (e.g. 127.0.0.1/32 in tests). */
  allow?: readonly Network[];
  /** Per request, connection to last byte (default 5 s). */
  timeoutMs?: number;
  /** The whole check, every redirect included (default 10 s). */
  deadlineMs?: number;
  /** Bytes of body read at most (default 4096); a longer body fails the challenge. */
  maxBodyBytes?: number;
  /** Redirects followed at most, each within the domain (default 3). */
  maxRedirects?: number;
}

export const DEFAULT_HTTP_DEADLINE_MS = 10_000;
/** Ports a redirect may name (besides the challenge URL's own). */
const REDIRECT_PORTS = new Set([80, 443]);

export type HttpChallengeResult =
  | { passed: true; message: string }
  | {
      passed: false;
      reason: string;
      message: string;
      /** For the operator's log only, never the status: what the connection did. */
      detail?: string;
    };

/** Runs the challenge at `url` for `domain`, expecting `token` as the body, within the deadline. */
export async function httpChallenge(
  url: string,
  domain: string,
  token: string,
  options: HttpChallengeOptions,
): Promise<HttpChallengeResult> {
  const deadlineMs = options.deadlineMs ?? DEFAULT_HTTP_DEADLINE_MS;
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<HttpChallengeResult>((resolve) => {
    timer = setTimeout(() => {
      abort.abort();
      resolve({
        passed: false,
        reason: 'RequestFailed',
        message: `GET ${url}: no complete answer within ${deadlineMs} ms (HTTP_DEADLINE_EXCEEDED); answer the token at once`,
        detail: `deadline of ${deadlineMs} ms passed`,
      });
    }, deadlineMs);
  });
  try {
    return await Promise.race([challenge(url, domain, token, options, abort.signal), expired]);
  } finally {
    clearTimeout(timer);
    // Whatever is still open (a look-up that will time out by itself, a socket) is let go now.
    abort.abort();
  }
}

async function challenge(
  url: string,
  domain: string,
  token: string,
  options: HttpChallengeOptions,
  signal: AbortSignal,
): Promise<HttpChallengeResult> {
  const maxRedirects = options.maxRedirects ?? 3;
  let current = new URL(url);
  const ownPort = portOf(current);
  for (let hop = 0; ; hop++) {
    if (current.protocol !== 'http:')
      return { passed: false, reason: 'RedirectRefused', message: `${current.href}: only http is followed` };
    const host = domainText(current.hostname);
    if (host !== domainText(domain) && !host.endsWith(`.${domainText(domain)}`))
      return {
        passed: false,
        reason: 'RedirectRefused',
        message: `${url} redirects off ${domainText(domain)} (to ${current.href}); serve the token on the domain itself`,
      };
    const port = portOf(current);
    if (hop > 0 && port !== ownPort && !REDIRECT_PORTS.has(port))
      return {
        passed: false,
        reason: 'RedirectRefused',
        message: `${url} redirects to port ${port} (${current.href}); redirects are followed to ports 80 and 443 only`,
      };
    let addresses: string[];
    try {
      addresses = await options.addresses(host);
    } catch (e) {
      return {
        passed: false,
        reason: 'ResolveFailed',
        message: `${host}: the address look-up failed`,
        detail: (e as Error).message,
      };
    }
    if (signal.aborted) return { passed: false, reason: 'RequestFailed', message: `GET ${url}: aborted` };
    if (addresses.length === 0)
      return { passed: false, reason: 'ResolveFailed', message: `${host} has no A or AAAA records` };
    const allowed = addresses.filter((a) => challengeAddressAllowed(a, options.allow));
    if (allowed.length === 0)
      return {
        passed: false,
        reason: 'AddressNotAllowed',
        message: `${host} resolves only to addresses the HTTP challenge does not reach (private, shared, loopback, link-local, metadata or multicast); publish a public address`,
        detail: `addresses: ${addresses.join(', ')}`,
      };
    let response: Response;
    try {
      response = await get(current, allowed[0]!, options, signal);
    } catch (e) {
      return {
        passed: false,
        reason: 'RequestFailed',
        message: `GET ${current.href}: no complete answer (HTTP_REQUEST_FAILED)`,
        detail: `${allowed[0]}: ${(e as Error).message}`,
      };
    }
    if (response.status >= 300 && response.status < 400 && response.location !== undefined) {
      if (hop >= maxRedirects)
        return {
          passed: false,
          reason: 'RedirectRefused',
          message: `${url}: more than ${maxRedirects} redirects`,
        };
      try {
        current = new URL(response.location, current);
      } catch {
        return { passed: false, reason: 'RedirectRefused', message: `${url}: a redirect names no valid URL` };
      }
      continue;
    }
    if (response.status !== 200)
      return {
        passed: false,
        reason: 'WrongStatus',
        message: `GET ${current.href} answered ${response.status}, not 200`,
      };
    if (response.tooLarge)
      return {
        passed: false,
        reason: 'ResponseTooLarge',
        message: `GET ${current.href}: the body is longer than ${options.maxBodyBytes ?? 4096} bytes; answer only the token`,
      };
    if (response.body.trim() !== token)
      return {
        passed: false,
        reason: 'WrongToken',
        message: `GET ${current.href} answered 200 but not the token of status.verification.httpToken.body`,
      };
    return { passed: true, message: `GET ${current.href} answered the token` };
  }
}

interface Response {
  status: number;
  location: string | undefined;
  body: string;
  tooLarge: boolean;
}

/** The URL's port, 80 when it names none (only http URLs are followed). */
function portOf(url: URL): number {
  return url.port === '' ? 80 : Number(url.port);
}

function get(
  url: URL,
  address: string,
  options: HttpChallengeOptions,
  signal: AbortSignal,
): Promise<Response> {
  const cap = options.maxBodyBytes ?? 4096;
  const timeoutMs = options.timeoutMs ?? 5000;
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: address,
        port: portOf(url),
        signal,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: { host: url.host, 'user-agent': 'zonekeeper-domain-verification', accept: 'text/plain' },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let tooLarge = false;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > cap) {
            tooLarge = true;
            res.destroy();
            finish();
            return;
          }
          chunks.push(chunk);
        });
        const finish = () => {
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            location: typeof res.headers.location === 'string' ? res.headers.location : undefined,
            body: tooLarge ? '' : Buffer.concat(chunks).toString('utf8'),
            tooLarge,
          });
        };
        res.on('end', finish);
        res.on('error', (e) => (tooLarge ? finish() : reject(e)));
        // The body's end is what counts: closed before it (the timer, an abort) is a failure.
        res.on('close', () => reject(new Error('the answer was cut short')));
      },
    );
    // One limit for the whole request, connection to last byte: an idle-socket timeout would let a
    // server that sends a byte now and then hold it for hours.
    const timer = setTimeout(
      () => request.destroy(new Error(`no complete answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    request.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    request.on('close', () => clearTimeout(timer));
    request.end();
  });
}
