/** The domain controller's look-ups, made real: DNS through the configured resolver, HTTP with the address guard. */
import type { Network } from '../zones/domain-verification.ts';
import { DnsLookup, type DnsLookupOptions } from './dns-lookup.ts';
import { httpChallenge } from './http-challenge.ts';

export interface DomainProbeSettings extends DnsLookupOptions {
  /**
   * Networks verification may reach although blocked by default (private, loopback, link-local,
   * metadata): the HTTP challenge and the parent zone's servers asked for a delegation.
   */
  httpAllow?: readonly Network[];
  /** Per HTTP request (default 5 s). */
  httpTimeoutMs?: number;
  /** The whole HTTP challenge, redirects included (default 10 s). */
  httpDeadlineMs?: number;
  /** Body bytes read at most (default 4096). */
  httpMaxBodyBytes?: number;
}

/** A DomainProbe (src/control/domain-controller.ts) over a real resolver and HTTP. */
export function domainProbe(settings: DomainProbeSettings = {}) {
  const dns = new DnsLookup({ ...settings, ...(settings.httpAllow ? { allow: settings.httpAllow } : {}) });
  return {
    async txt(name: string): Promise<string[]> {
      const r = await dns.txt(name);
      return r.kind === 'found' ? r.values : [];
    },
    delegation: (domain: string) => dns.delegation(domain),
    http: (url: string, domain: string, token: string) =>
      httpChallenge(url, domain, token, {
        addresses: (host) => dns.addresses(host),
        ...(settings.httpAllow ? { allow: settings.httpAllow } : {}),
        ...(settings.httpTimeoutMs !== undefined ? { timeoutMs: settings.httpTimeoutMs } : {}),
        ...(settings.httpDeadlineMs !== undefined ? { deadlineMs: settings.httpDeadlineMs } : {}),
        ...(settings.httpMaxBodyBytes !== undefined ? { maxBodyBytes: settings.httpMaxBodyBytes } : {}),
      }),
  };
}
