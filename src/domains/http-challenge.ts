/**
 * The HTTP challenge: `GET http://<domain>/.well-known/zonekeeper-challenge/<token>` must answer 200
 * with the token as its body. The host is resolved through the configured resolver and only
 * addresses the guard allows are connected to (never link-local or cloud metadata addresses unless
 * allow-listed); the body is read up to a cap; redirects are followed only within the domain.
 */
import http from 'node:http';
import { challengeAddressAllowed, type Network } from '../zones/domain-verification.ts';
import { domainText } from '../zones/zone-name-servers.ts';

export interface HttpChallengeOptions {
  /** Resolves a host to addresses (the verification resolver). */
  addresses: (host: string) => Promise<string[]>;
  /** Networks the challenge may reach although they are blocked by default (e.g. 127.0.0.1/32 in tests). */
  allow?: readonly Network[];
  /** Per request (default 5 s). */
  timeoutMs?: number;
  /** Bytes of body read at most (default 4096); a longer body fails the challenge. */
  maxBodyBytes?: number;
  /** Redirects followed at most, each within the domain (default 3). */
  maxRedirects?: number;
}

export type HttpChallengeResult =
  | { passed: true; message: string }
  | { passed: false; reason: string; message: string };

/** Runs the challenge at `url` for `domain`, expecting `token` as the body. */
export async function httpChallenge(
  url: string,
  domain: string,
  token: string,
  options: HttpChallengeOptions,
): Promise<HttpChallengeResult> {
  const maxRedirects = options.maxRedirects ?? 3;
  let current = new URL(url);
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
    let addresses: string[];
    try {
      addresses = await options.addresses(host);
    } catch (e) {
      return { passed: false, reason: 'ResolveFailed', message: `${host}: ${(e as Error).message}` };
    }
    if (addresses.length === 0)
      return { passed: false, reason: 'ResolveFailed', message: `${host} has no A or AAAA records` };
    const allowed = addresses.filter((a) => challengeAddressAllowed(a, options.allow));
    if (allowed.length === 0)
      return {
        passed: false,
        reason: 'AddressNotAllowed',
        message: `${host} resolves only to addresses the HTTP challenge does not reach (${addresses.join(', ')}: loopback, link-local, metadata or multicast)`,
      };
    let response: Response;
    try {
      response = await get(current, allowed[0]!, options);
    } catch (e) {
      return {
        passed: false,
        reason: 'RequestFailed',
        message: `GET ${current.href}: ${(e as Error).message}`,
      };
    }
    if (response.status >= 300 && response.status < 400 && response.location !== undefined) {
      if (hop >= maxRedirects)
        return {
          passed: false,
          reason: 'RedirectRefused',
          message: `${url}: more than ${maxRedirects} redirects`,
        };
      current = new URL(response.location, current);
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

function get(url: URL, address: string, options: HttpChallengeOptions): Promise<Response> {
  const cap = options.maxBodyBytes ?? 4096;
  const timeoutMs = options.timeoutMs ?? 5000;
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: address,
        port: url.port === '' ? 80 : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: { host: url.host, 'user-agent': 'zonekeeper-domain-verification', accept: 'text/plain' },
        timeout: timeoutMs,
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
        const finish = () =>
          resolve({
            status: res.statusCode ?? 0,
            location: typeof res.headers.location === 'string' ? res.headers.location : undefined,
            body: tooLarge ? '' : Buffer.concat(chunks).toString('utf8'),
            tooLarge,
          });
        res.on('end', finish);
        res.on('error', (e) => (tooLarge ? finish() : reject(e)));
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end();
  });
}
