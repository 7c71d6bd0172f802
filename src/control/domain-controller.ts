/**
 * The Domain controller: proves that a namespace controls the domain it claims — through a parent
 * delegation to its own zone's name servers, a TXT record or an HTTP token — and keeps proving it.
 * Level-triggered: each run looks up every path, derives the conditions from what it found and the
 * claims of other namespaces, and writes status only when it changed. A Domain that is not verified
 * is tried again on the retry schedule (the time since Verified turned False picks the step, so a
 * restart continues where it was); a verified one is re-confirmed periodically, and a lost
 * verification turns Verified False (the store's event recorder reports it).
 *
 * The look-ups are the probe's (src/domains/probe.ts in the operator): this module does no I/O.
 */
import { randomUUID } from 'node:crypto';
import type { Condition, DNSZone, DNSZoneClass, Domain, DomainStatus } from '../api/index.ts';
import {
  DEFAULT_RETRY_SCHEDULE,
  DEFAULT_TXT_PREFIX,
  delegationCheck,
  domainApex,
  httpChallengeUrl,
  nameServerOverlap,
  olderClaim,
  type PathResult,
  type RetrySchedule,
  retryDelayMs,
  txtChallengeName,
  verificationConditions,
  zoneForDomain,
} from '../zones/domain-verification.ts';
import { expiryState, type Registration } from '../zones/registration.ts';
import { resourceKey } from '../zones/resource-key.ts';
import { domainText } from '../zones/zone-name-servers.ts';
import { jsonEqual, setConditions } from './conditions.ts';
import type { ResourceStore } from './resource-store.ts';
import { type ReconcileResult, WorkQueue } from './work-queue.ts';

/** The look-ups verification needs; each throws with a message saying what failed. */
export interface DomainProbe {
  /** The TXT values at a name (each record's strings joined); empty when there are none. */
  txt(name: string): Promise<string[]>;
  /** The name servers the domain's parent delegates it to (lowercase, no trailing dot). */
  delegation(domain: string): Promise<string[]>;
  /** Whether `url` answers 200 with `token` as its body (only within `domain`). */
  http(
    url: string,
    domain: string,
    token: string,
  ): Promise<{ passed: boolean; reason?: string; message: string; detail?: string }>;
}

/** Reads registration data (RDAP, WHOIS); a rate-limited server says how long to wait (`retryAfterMs`). */
export interface RegistrationSource {
  lookup(apex: string): Promise<Registration>;
}

export interface DomainControllerOptions {
  store: ResourceStore;
  probe: DomainProbe;
  /** Registration data of each Domain's apex in status.registration (none without it). */
  registration?: RegistrationSource;
  /** How often registration data is read again (default 24 h, with the schedule's jitter). */
  registrationRefreshMs?: number;
  /** RegistrationExpiring turns True this long before the registration expires (default 30 days). */
  expiryWarningMs?: number;
  /** Retries while not verified (default: every 5 s for 5 min, every minute up to 15 min, then every 5 min, ±25 %). */
  schedule?: RetrySchedule;
  /** How often a verified Domain is confirmed again (default 1 h, with the schedule's jitter). */
  reconfirmIntervalMs?: number;
  /** The port of the HTTP challenge URL (default 80; tests use another). */
  httpPort?: number;
  /**
   * Each path's check (delegation, TXT, HTTP) ends within this, whatever the probe does (default
   * 30 s): the worker slot is free again, the path reported `LookupFailed`/`RequestFailed`.
   */
  checkDeadlineMs?: number;
  now?: () => Date;
  random?: () => number;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

export const DEFAULT_RECONFIRM_INTERVAL_MS = 60 * 60_000;
export const DEFAULT_CHECK_DEADLINE_MS = 30_000;
/** Domains verified at once: a slow check of one must not hold the others up for longer than its deadline. */
const VERIFIER_SLOTS = 4;
export const DEFAULT_REGISTRATION_REFRESH_MS = 24 * 60 * 60_000;
export const DEFAULT_EXPIRY_WARNING_MS = 30 * 24 * 60 * 60_000;
/** After a failed registration look-up without a Retry-After. */
const REGISTRATION_RETRY_MS = 15 * 60_000;

interface DomainState {
  /** The generation and inputs last probed, and when the next probe is due. */
  probed: string;
  dueAt: number;
  /** When registration data is read next. */
  registrationAt?: number;
}

export class DomainController {
  private readonly options: DomainControllerOptions;
  private readonly queue: WorkQueue;
  private readonly state = new Map<string, DomainState>();
  private unsubscribe?: () => void;

  constructor(options: DomainControllerOptions) {
    this.options = options;
    this.queue = new WorkQueue((key) => this.reconcile(key), {
      concurrency: VERIFIER_SLOTS,
      maxDelayMs: 60_000,
    });
    this.queue.onResult = (key, error) => {
      if (error !== undefined)
        options.log?.('warn', `Domain ${key}: ${(error as Error).message}; retrying`, { key });
    };
  }

  start(): void {
    const { store } = this.options;
    this.unsubscribe = store.watch((event) => {
      const object = event.object;
      if (object.kind === 'Domain') {
        this.queue.add(event.key);
        // Claims of the same name in other namespaces are decided again.
        for (const d of this.domainsNamed(object.spec.domainName))
          if (resourceKey(d.metadata) !== event.key) this.queue.add(resourceKey(d.metadata));
      } else if (object.kind === 'DNSZone') {
        for (const d of this.domainsNamed(object.spec.domainName))
          if (d.metadata.namespace === object.metadata.namespace) this.queue.add(resourceKey(d.metadata));
      } else if (object.kind === 'DNSZoneClass') {
        for (const d of store.list('Domain')) this.queue.add(resourceKey(d.metadata));
      }
    });
    for (const d of store.list('Domain')) this.queue.add(resourceKey(d.metadata));
    this.queue.start();
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.shutdown();
  }

  idle(): Promise<void> {
    return this.queue.idle();
  }

  private now(): number {
    return (this.options.now?.() ?? new Date()).getTime();
  }

  private domainsNamed(name: string): Domain[] {
    const wanted = domainText(name);
    return (this.options.store.list('Domain') as Domain[]).filter(
      (d) => domainText(d.spec.domainName) === wanted,
    );
  }

  /**
   * What a probe depends on besides time: the Domain's generation, its zone and class, and the
   * claims of other namespaces. When it is unchanged and the next attempt is not due, nothing runs
   * (our own status write comes back as an event).
   */
  private inputsOf(domain: Domain, zones: DNSZone[], classes: Map<string, DNSZoneClass>): string {
    const zone = zoneForDomain(domain, zones);
    const zoneClass = zone ? classes.get(zone.spec.className) : undefined;
    const named = domain.spec.className ? classes.get(domain.spec.className) : undefined;
    const rivals = this.domainsNamed(domain.spec.domainName)
      .filter((d) => d.metadata.namespace !== domain.metadata.namespace)
      .map((d) => [
        resourceKey(d.metadata),
        d.status?.conditions?.find((c) => c.type === 'Verified')?.status,
      ]);
    return JSON.stringify([
      domain.metadata.generation,
      zone?.metadata.generation,
      zone?.metadata.uid,
      zoneClass?.metadata.generation,
      named?.metadata.generation,
      rivals,
    ]);
  }

  private async reconcile(key: string): Promise<ReconcileResult> {
    const { store } = this.options;
    const domain = store.get('Domain', key) as Domain | undefined;
    if (!domain || domain.metadata.deletionTimestamp) {
      this.state.delete(key);
      return undefined;
    }
    const zones = store.list('DNSZone') as DNSZone[];
    const classes = new Map((store.list('DNSZoneClass') as DNSZoneClass[]).map((c) => [c.metadata.name, c]));
    const inputs = this.inputsOf(domain, zones, classes);
    const now = this.now();
    const st = this.state.get(key);
    if (st && st.probed === inputs && now < st.dueAt) return { requeueAfterMs: st.dueAt - now };

    const generation = domain.metadata.generation;
    const apex = domainApex(domain.spec.domainName);
    if ('error' in apex) {
      const conditions: Omit<Condition, 'lastTransitionTime'>[] = [
        'VerifiedDNSZone',
        'VerifiedDNS',
        'VerifiedHTTP',
        'Verified',
      ].map((type) => ({
        type,
        status: 'False',
        reason: 'PublicSuffix',
        message: apex.error,
        observedGeneration: generation,
      }));
      await this.write(domain, {
        observedGeneration: generation,
        conditions: setConditions(domain.status?.conditions, conditions, new Date(now)),
      });
      this.state.set(key, { probed: inputs, dueAt: Number.POSITIVE_INFINITY });
      return undefined;
    }

    const token =
      domain.status?.verification?.httpToken?.body ??
      domain.status?.verification?.dnsRecord?.content ??
      randomUUID();
    const prefix = this.txtPrefix(domain, zones, classes);
    const txtName = txtChallengeName(domain.spec.domainName, prefix);
    const url = httpChallengeUrl(domain.spec.domainName, token, this.options.httpPort);
    const check = delegationCheck(domain, zones, classes);

    let delegated: string[] | undefined;
    const deadlineMs = this.options.checkDeadlineMs ?? DEFAULT_CHECK_DEADLINE_MS;
    const [dnsZone, dns, http] = await Promise.all([
      within(deadlineMs, 'LookupFailed', 'delegation', async (): Promise<PathResult> => {
        if (check.kind === 'noZone') return { passed: false, reason: 'NoZone', message: check.message };
        if (check.kind === 'sharedNameServers')
          return { passed: false, reason: 'SharedNameServers', message: check.message };
        try {
          delegated = await this.options.probe.delegation(domain.spec.domainName);
        } catch (e) {
          return { passed: false, reason: 'LookupFailed', message: `delegation: ${(e as Error).message}` };
        }
        const overlap = nameServerOverlap(delegated, check.nameServers);
        return overlap.length > 0
          ? {
              passed: true,
              reason: 'Delegated',
              message: `the parent delegates ${domainText(domain.spec.domainName)} to ${overlap.join(', ')}, name servers of DNSZone ${check.zone.metadata.name}`,
            }
          : {
              passed: false,
              reason: 'NotDelegated',
              message: `the parent delegates ${domainText(domain.spec.domainName)} to ${delegated.length > 0 ? delegated.join(', ') : 'no name servers'}, not to those of DNSZone ${check.zone.metadata.name} (${check.nameServers.join(', ')})`,
            };
      }),
      within(deadlineMs, 'LookupFailed', `TXT ${txtName}`, async (): Promise<PathResult> => {
        try {
          const values = await this.options.probe.txt(txtName);
          return values.includes(token)
            ? { passed: true, reason: 'RecordFound', message: `TXT ${txtName} holds the token` }
            : {
                passed: false,
                reason: 'RecordNotFound',
                message: `TXT ${txtName} ${values.length > 0 ? 'does not hold the token' : 'is not published'}; publish the value of status.verification.dnsRecord.content there`,
              };
        } catch (e) {
          return {
            passed: false,
            reason: 'LookupFailed',
            message: `TXT ${txtName}: ${(e as Error).message}`,
          };
        }
      }),
      within(deadlineMs, 'RequestFailed', `GET ${url}`, async (): Promise<PathResult> => {
        try {
          const r = await this.options.probe.http(url, domain.spec.domainName, token);
          if (!r.passed && r.detail !== undefined)
            this.options.log?.('info', `Domain ${key}: HTTP challenge ${url}: ${r.reason}`, {
              detail: r.detail,
            });
          return r.passed
            ? { passed: true, reason: 'TokenServed', message: r.message }
            : { passed: false, reason: r.reason ?? 'TokenNotServed', message: r.message };
        } catch (e) {
          // The error's text is the operator's to read, not the tenant's (it can describe the network).
          this.options.log?.('info', `Domain ${key}: HTTP challenge ${url} failed`, {
            detail: (e as Error).message,
          });
          return {
            passed: false,
            reason: 'RequestFailed',
            message: `GET ${url}: the request failed (HTTP_REQUEST_FAILED)`,
          };
        }
      }),
    ]);
    // Registration data, when due: daily, or at the time a rate-limited server asked for.
    const random = this.options.random ?? Math.random;
    const schedule = this.options.schedule ?? DEFAULT_RETRY_SCHEDULE;
    let registration = domain.status?.registration;
    let registrationAt = st?.registrationAt;
    const refreshMs = this.options.registrationRefreshMs ?? DEFAULT_REGISTRATION_REFRESH_MS;
    if (this.options.registration) {
      const due =
        registrationAt ??
        (registration ? Date.parse(registration.refreshed) + refreshMs : Number.NEGATIVE_INFINITY);
      if (now >= due) {
        try {
          const r = await this.options.registration.lookup(apex.apex);
          registration = { ...registrationStatus(r), refreshed: new Date(now).toISOString() };
          registrationAt = now + Math.round(refreshMs * (1 + schedule.jitter * (2 * random() - 1)));
        } catch (e) {
          const wait = (e as { retryAfterMs?: number }).retryAfterMs ?? REGISTRATION_RETRY_MS;
          registrationAt = now + wait;
          this.options.log?.(
            'warn',
            `Domain ${key}: registration data of ${apex.apex}: ${(e as Error).message}`,
            {
              retryInMs: wait,
            },
          );
        }
      } else registrationAt = due;
    }
    // Others' claims as they are now (the probes took time).
    const fresh = (store.get('Domain', key) as Domain | undefined) ?? domain;
    const claimedBy = olderClaim(fresh, store.list('Domain') as Domain[]);
    const next = verificationConditions(
      { dnsZone, dns, http, ...(claimedBy ? { claimedBy } : {}) },
      generation,
    );
    if (this.options.registration) {
      const expiry = expiryState(
        registration ? fromStatus(registration) : undefined,
        now,
        this.options.expiryWarningMs ?? DEFAULT_EXPIRY_WARNING_MS,
      );
      next.push({
        type: 'RegistrationExpiring',
        status: expiry.state === 'unknown' ? 'Unknown' : expiry.state === 'ok' ? 'False' : 'True',
        reason:
          expiry.state === 'unknown'
            ? 'NoExpiryDate'
            : expiry.state === 'ok'
              ? 'NotExpiring'
              : expiry.state === 'expired'
                ? 'Expired'
                : 'ExpiresSoon',
        message: expiry.message,
        observedGeneration: generation,
      });
    }
    const conditions = setConditions(fresh.status?.conditions, next, new Date(now));
    const status: DomainStatus = {
      observedGeneration: generation,
      apex: apex.apex,
      verification: {
        dnsRecord: { name: txtName, type: 'TXT', content: token },
        httpToken: { url, body: token },
        ...(delegated !== undefined ? { delegatedNameServers: delegated.slice(0, 32) } : {}),
      },
      ...(registration ? { registration } : {}),
      conditions,
    };
    await this.write(fresh, status);

    const verified = next.find((c) => c.type === 'Verified')?.status === 'True';
    let delay: number;
    if (verified) {
      const every = this.options.reconfirmIntervalMs ?? DEFAULT_RECONFIRM_INTERVAL_MS;
      delay = Math.max(1, Math.round(every * (1 + schedule.jitter * (2 * random() - 1))));
    } else {
      const since = conditions.find((c) => c.type === 'Verified')?.lastTransitionTime;
      const elapsed = since ? Math.max(0, now - Date.parse(since)) : 0;
      delay = retryDelayMs(schedule, elapsed, random());
    }
    if (registrationAt !== undefined) delay = Math.max(1, Math.min(delay, registrationAt - now));
    this.state.set(key, {
      probed: this.inputsOf(fresh, zones, classes),
      dueAt: now + delay,
      ...(registrationAt !== undefined ? { registrationAt } : {}),
    });
    return { requeueAfterMs: delay };
  }

  /** The TXT prefix: of the class the Domain names, else of its zone's class, else the default. */
  private txtPrefix(domain: Domain, zones: DNSZone[], classes: Map<string, DNSZoneClass>): string {
    const className = domain.spec.className ?? zoneForDomain(domain, zones)?.spec.className;
    const zoneClass = className ? classes.get(className) : undefined;
    return zoneClass?.spec.domainVerification?.txtRecordPrefix ?? DEFAULT_TXT_PREFIX;
  }

  private async write(domain: Domain, status: DomainStatus): Promise<void> {
    if (jsonEqual(domain.status ?? {}, status)) return;
    await this.options.store.updateStatus('Domain', resourceKey(domain.metadata), status);
  }
}

type RegistrationStatus = NonNullable<DomainStatus['registration']>;

/** Registration data as status.registration holds it (without the time it was read). */
function registrationStatus(r: Registration): Omit<RegistrationStatus, 'refreshed'> {
  const cut = (s: string | undefined, n: number) => (s === undefined ? undefined : s.slice(0, n));
  const out: Omit<RegistrationStatus, 'refreshed'> = { source: r.source, server: r.server.slice(0, 2048) };
  const set = <K extends keyof typeof out>(k: K, v: (typeof out)[K] | undefined) => {
    if (v !== undefined) out[k] = v;
  };
  set('registrar', cut(r.registrar, 1024));
  set('registry', cut(r.registry, 1024));
  set('created', cut(r.created, 64));
  set('updated', cut(r.updated, 64));
  set('expires', cut(r.expires, 64));
  set(
    'statuses',
    r.statuses?.slice(0, 32).map((s) => s.slice(0, 256)),
  );
  set('dnssecSigned', r.dnssecSigned);
  set(
    'nameservers',
    r.nameservers?.slice(0, 32).map((s) => s.slice(0, 253)),
  );
  set('abuseEmail', cut(r.abuseEmail, 1024));
  set('abusePhone', cut(r.abusePhone, 256));
  return out;
}

function fromStatus(s: RegistrationStatus): Registration {
  const { refreshed: _refreshed, ...rest } = s;
  return rest;
}

/**
 * Runs one path's check with a deadline: when it passes, the path fails with `reason` and the check
 * is left to end by its own time limits (it no longer holds a verifier slot).
 */
async function within(
  deadlineMs: number,
  reason: string,
  what: string,
  check: () => Promise<PathResult>,
): Promise<PathResult> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<PathResult>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          passed: false,
          reason,
          message: `${what}: no result within ${deadlineMs} ms (CHECK_DEADLINE_EXCEEDED)`,
        }),
      deadlineMs,
    );
  });
  try {
    return await Promise.race([check(), expired]);
  } finally {
    clearTimeout(timer);
  }
}
