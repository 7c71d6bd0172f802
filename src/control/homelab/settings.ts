/**
 * The homelab controller's timings, read from the environment variables the homelab DNS operator
 * documents (durations in Go's form: "10m", "5s", "1m30s", "250ms").
 */

export interface HomelabSettings {
  /** `DNS_CLASS_HEALTH_CHECK_INTERVAL`, default 10m. */
  healthCheckIntervalMs: number;
  /** `DNS_RECORD_RETRY_BASE_DELAY`, default 5s. */
  retryBaseDelayMs: number;
  /** `DNS_RECORD_RETRY_MAX_DELAY`, default 60s. */
  retryMaxDelayMs: number;
  /** `DNS_RECORD_RETRY_MAX_ATTEMPTS`, default 5: after that, retries continue at the max delay. */
  retryMaxAttempts: number;
  /** `DNS_RECORD_DRIFT_CHECK_INTERVAL` (Zonekeeper's), default 10m: how often a synced record is read back. */
  driftCheckIntervalMs: number;
}

export const DEFAULT_HOMELAB_SETTINGS: HomelabSettings = {
  healthCheckIntervalMs: 10 * 60_000,
  retryBaseDelayMs: 5_000,
  retryMaxDelayMs: 60_000,
  retryMaxAttempts: 5,
  driftCheckIntervalMs: 10 * 60_000,
};

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** A Go duration string ("1h2m3.5s", "250ms") in milliseconds, or undefined when it is not one. */
export function parseGoDuration(text: string): number | undefined {
  const t = text.trim();
  if (t === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(t); m; m = re.exec(t)) {
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    matched = re.lastIndex;
  }
  return matched === t.length && matched > 0 ? total : undefined;
}

/** The settings from environment variables; a value that does not parse is an error naming the variable. */
export function homelabSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): HomelabSettings {
  const duration = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const ms = parseGoDuration(raw);
    if (ms === undefined || ms <= 0)
      throw new Error(
        `${name}=${JSON.stringify(raw)} is not a positive duration; write e.g. "10m", "5s" or "250ms"`,
      );
    return ms;
  };
  const attemptsRaw = env.DNS_RECORD_RETRY_MAX_ATTEMPTS;
  let attempts = DEFAULT_HOMELAB_SETTINGS.retryMaxAttempts;
  if (attemptsRaw !== undefined && attemptsRaw !== '') {
    if (!/^\d+$/.test(attemptsRaw.trim()) || Number(attemptsRaw) < 1)
      throw new Error(
        `DNS_RECORD_RETRY_MAX_ATTEMPTS=${JSON.stringify(attemptsRaw)} is not a positive integer`,
      );
    attempts = Number(attemptsRaw);
  }
  return {
    healthCheckIntervalMs: duration(
      'DNS_CLASS_HEALTH_CHECK_INTERVAL',
      DEFAULT_HOMELAB_SETTINGS.healthCheckIntervalMs,
    ),
    retryBaseDelayMs: duration('DNS_RECORD_RETRY_BASE_DELAY', DEFAULT_HOMELAB_SETTINGS.retryBaseDelayMs),
    retryMaxDelayMs: duration('DNS_RECORD_RETRY_MAX_DELAY', DEFAULT_HOMELAB_SETTINGS.retryMaxDelayMs),
    retryMaxAttempts: attempts,
    driftCheckIntervalMs: duration(
      'DNS_RECORD_DRIFT_CHECK_INTERVAL',
      DEFAULT_HOMELAB_SETTINGS.driftCheckIntervalMs,
    ),
  };
}

/** `min(base * 2^attempt, max)`, attempt counted from 0. */
export function retryDelay(settings: HomelabSettings, attempt: number): number {
  return Math.min(settings.retryBaseDelayMs * 2 ** Math.min(attempt, 40), settings.retryMaxDelayMs);
}
