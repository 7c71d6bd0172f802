/** `zonekeeper operator`'s flags for Domain verification (docs/domains.md). */
import { readFileSync } from 'node:fs';
import type { DomainProbeSettings } from '../domains/probe.ts';
import type { RegistrationClientOptions } from '../domains/registration-client.ts';
import {
  DEFAULT_RETRY_SCHEDULE,
  parseDuration,
  parseNetwork,
  parseRetrySchedule,
  type RetrySchedule,
} from '../zones/domain-verification.ts';

export const DOMAIN_FLAGS = {
  'domain-resolver': { type: 'string' },
  'domain-lookup-timeout': { type: 'string', default: '2s' },
  'domain-delegation-port': { type: 'string', default: '53' },
  'domain-http-port': { type: 'string', default: '80' },
  'domain-http-timeout': { type: 'string', default: '5s' },
  'domain-http-deadline': { type: 'string', default: '10s' },
  'domain-http-allow': { type: 'string' },
  'domain-retry-schedule': { type: 'string' },
  'domain-reconfirm-interval': { type: 'string', default: '1h' },
  'domain-registration': { type: 'string', default: 'false' },
  'domain-rdap-bootstrap': { type: 'string' },
  'domain-whois-server': { type: 'string' },
  'domain-whois-port': { type: 'string', default: '43' },
  'domain-registration-refresh': { type: 'string', default: '24h' },
  'domain-registration-interval': { type: 'string', default: '1s' },
  'domain-expiry-warning': { type: 'string', default: '720h' },
  'gateway-dns': { type: 'string', default: 'false' },
  'gateway-target-domain': { type: 'string' },
} as const;

export interface DomainSettings {
  probe: DomainProbeSettings;
  /** Registration data (RDAP, WHOIS): off unless --domain-registration=true. */
  registration?: RegistrationClientOptions & { refreshMs: number; expiryWarningMs: number };
  schedule: RetrySchedule;
  reconfirmIntervalMs: number;
  httpPort: number;
}

export class DomainFlagError extends Error {}

/** The first `nameserver` of /etc/resolv.conf (the pod's cluster DNS), else 127.0.0.1. */
function systemResolver(): string {
  try {
    const m = /^\s*nameserver\s+(\S+)/m.exec(readFileSync('/etc/resolv.conf', 'utf8'));
    if (m) return m[1]!.includes(':') ? `[${m[1]}]:53` : `${m[1]}:53`;
  } catch {
    // no resolv.conf
  }
  return '127.0.0.1:53';
}

function duration(flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0)
    throw new DomainFlagError(`--${flag}: give a duration such as 500ms, 5s, 1m or 1h`);
  return ms;
}

function port(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new DomainFlagError(`--${flag}: give a port from 1 to 65535`);
  return n;
}

export function domainSettings(
  values: {
    [K in keyof typeof DOMAIN_FLAGS]?: string | undefined;
  },
): DomainSettings {
  const allow = (values['domain-http-allow'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((text) => {
      const n = parseNetwork(text);
      if (!n)
        throw new DomainFlagError(
          `--domain-http-allow: ${JSON.stringify(text)} is not an address or network`,
        );
      return n;
    });
  let schedule = DEFAULT_RETRY_SCHEDULE;
  if (values['domain-retry-schedule'] !== undefined) {
    try {
      schedule = parseRetrySchedule(values['domain-retry-schedule']);
    } catch (e) {
      throw new DomainFlagError(`--domain-retry-schedule: ${(e as Error).message}`);
    }
  }
  const registrationOn = values['domain-registration'] ?? 'false';
  if (registrationOn !== 'true' && registrationOn !== 'false')
    throw new DomainFlagError('--domain-registration: give true or false');
  const whois = values['domain-whois-server'];
  if (whois !== undefined && !/^[A-Za-z0-9.-]+:[0-9]{1,5}$/.test(whois))
    throw new DomainFlagError('--domain-whois-server: give host:port, e.g. whois.iana.org:43');
  const bootstrap = values['domain-rdap-bootstrap'];
  if (bootstrap !== undefined && !/^https?:\/\/\S+$/.test(bootstrap))
    throw new DomainFlagError('--domain-rdap-bootstrap: give an http(s) URL');
  const registration =
    registrationOn === 'true'
      ? {
          ...(bootstrap !== undefined ? { bootstrapUrl: bootstrap } : {}),
          ...(whois !== undefined ? { whoisServer: whois } : {}),
          whoisPort: port('domain-whois-port', values['domain-whois-port'] ?? '43'),
          minIntervalMs: duration(
            'domain-registration-interval',
            values['domain-registration-interval'] ?? '1s',
          ),
          timeoutMs: duration('domain-http-timeout', values['domain-http-timeout'] ?? '5s'),
          refreshMs: duration('domain-registration-refresh', values['domain-registration-refresh'] ?? '24h'),
          expiryWarningMs: duration('domain-expiry-warning', values['domain-expiry-warning'] ?? '720h'),
        }
      : undefined;
  return {
    ...(registration ? { registration } : {}),
    probe: {
      resolver: values['domain-resolver'] ?? systemResolver(),
      timeoutMs: duration('domain-lookup-timeout', values['domain-lookup-timeout'] ?? '2s'),
      delegationPort: port('domain-delegation-port', values['domain-delegation-port'] ?? '53'),
      httpTimeoutMs: duration('domain-http-timeout', values['domain-http-timeout'] ?? '5s'),
      httpDeadlineMs: duration('domain-http-deadline', values['domain-http-deadline'] ?? '10s'),
      ...(allow.length > 0 ? { httpAllow: allow } : {}),
    },
    schedule,
    reconfirmIntervalMs: duration('domain-reconfirm-interval', values['domain-reconfirm-interval'] ?? '1h'),
    httpPort: port('domain-http-port', values['domain-http-port'] ?? '80'),
  };
}

/** `--gateway-dns=true [--gateway-target-domain gw.example.net]`: Gateway API hostnames → DNSRecordSets. */
export function gatewayDnsSettings(values: {
  'gateway-dns'?: string | undefined;
  'gateway-target-domain'?: string | undefined;
}): { targetDomain?: string } | undefined {
  const on = values['gateway-dns'] ?? 'false';
  if (on !== 'true' && on !== 'false') throw new DomainFlagError('--gateway-dns: give true or false');
  const target = values['gateway-target-domain'];
  if (
    target !== undefined &&
    !/^([A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?\.)+[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?\.?$/.test(target)
  )
    throw new DomainFlagError('--gateway-target-domain: give a domain name such as gw.example.net');
  if (on === 'false') {
    if (target !== undefined)
      throw new DomainFlagError('--gateway-target-domain goes with --gateway-dns=true');
    return undefined;
  }
  return target !== undefined ? { targetDomain: target } : {};
}
