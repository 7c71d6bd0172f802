/**
 * Probes the records of steered record sets (HTTP, HTTPS, TCP) and writes each target's state into a
 * `HealthView`. Probes run on timers in the process that programs the zones, never inside a query's
 * handling, at most `concurrency` at a time; a state changes only after `failureThreshold` failures or
 * `successThreshold` successes in a row (hysteresis), and each change is logged once and reported to
 * `onTransition`. Targets are shared: record sets probing the same address the same way share a slot.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import type { ResolvedHealthCheck } from '../../../api/steering.ts';
import { embeddedIPv4 as embeddedIPv4Bytes } from '../../../dns/ip.ts';
import type { Registry } from '../../../metrics/registry.ts';
import { type ClientNetwork, networkWithin, parseNetwork } from '../policy.ts';
import { HEALTH_DOWN, HEALTH_UNKNOWN, HEALTH_UP, type HealthState, type HealthView } from './health-view.ts';

/**
 * Addresses never probed unless the operator allow-lists them (`--health-probe-allow`): the server's
 * own host (loopback 127.0.0.0/8 and ::1, "this network" 0.0.0.0/8 and :: which a socket connects to
 * the local host by), link-local (169.254.169.254, the metadata service of most clouds, lives there),
 * Alibaba Cloud's metadata service (100.100.100.200, in the shared address space), Azure's host
 * address (168.63.129.16) and AWS's IPv6 metadata. Private networks (10/8, 172.16/12, 192.168/16,
 * fc00::/7) stay allowed: internal services behind published names live there (docs/steering.md).
 */
export const PROBE_DENIED_NETWORKS = [
  '127.0.0.0/8',
  '::1/128',
  '0.0.0.0/8',
  '::/128',
  '169.254.0.0/16',
  'fe80::/10',
  '100.100.100.200/32',
  '168.63.129.16/32',
  'fd00:ec2::254/128',
] as const;

/**
 * Default of `--health-probe-namespace-limit`: probe targets one namespace's record sets may hold
 * (distinct address and check), out of the process's HEALTH_SLOTS (65,536) shared by every namespace.
 */
export const DEFAULT_NAMESPACE_TARGET_LIMIT = 1024;

/** The most of a response body read for stringMatch. */
const BODY_LIMIT = 64 * 1024;

export interface ProbeTarget extends ResolvedHealthCheck {
  /** The record's address (A or AAAA). */
  address: string;
}

export interface TargetStatus {
  state: 'Unknown' | 'Up' | 'Down';
  /** When the state last changed (ISO 8601), undefined while Unknown. */
  since?: string;
  lastError?: string;
}

/** Why a record set's probes were not started: its namespace's limit, or the process's slots. */
export interface ProbeRefusal {
  reason: 'NamespaceLimit' | 'Capacity';
  message: string;
}

export interface HealthTransition {
  slot: number;
  target: ProbeTarget;
  state: HealthState;
  error?: string;
}

export interface HealthCheckerOptions {
  view: HealthView;
  /** Probes in flight at once (default 16). */
  concurrency?: number;
  /**
   * Probe targets the record sets of one namespace may hold at once (default
   * DEFAULT_NAMESPACE_TARGET_LIMIT): one tenant cannot take every slot of the process.
   */
  namespaceLimit?: number;
  /** Networks (CIDR, or single addresses) that may be probed although PROBE_DENIED_NETWORKS holds them. */
  allow?: readonly string[];
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  registry?: Registry;
  /** Certificate authorities (PEM) trusted by HTTPS probes besides the system's. */
  ca?: readonly string[];
  /** Called once per state change (after the view is written). */
  onTransition?: (t: HealthTransition) => void;
  /**
   * Called for every write to the view (a slot taken, freed or changing state), so that DNS worker
   * processes, which hold views of their own until they are threads, write the same.
   */
  onViewWrite?: (slot: number, state: HealthState) => void;
}

interface Target {
  key: string;
  slot: number;
  target: ProbeTarget;
  refs: number;
  state: HealthState;
  since?: string;
  lastError?: string;
  failures: number;
  successes: number;
  timer?: NodeJS.Timeout;
  running: boolean;
}

/** The identity of a probe: two record sets with equal ones share its slot and its probes. */
export function targetKey(t: ProbeTarget): string {
  return JSON.stringify([
    t.protocol,
    t.address,
    t.port,
    t.path,
    t.host,
    t.expectStatus,
    t.stringMatch ?? null,
    t.intervalSeconds,
    t.timeoutSeconds,
    t.failureThreshold,
    t.successThreshold,
  ]);
}

export class HealthChecker {
  private readonly view: HealthView;
  private readonly concurrency: number;
  private readonly denied: ClientNetwork[];
  private readonly allowed: ClientNetwork[];
  private readonly options: HealthCheckerOptions;
  private readonly ca: string[] | undefined;
  private readonly byKey = new Map<string, Target>();
  private readonly bySlot = new Map<number, Target>();
  private readonly freeSlots: number[] = [];
  private nextSlot = 0;
  private readonly queue: Target[] = [];
  private inFlight = 0;
  private stopped = false;
  private readonly namespaceLimit: number;
  /** Per namespace: the targets its record sets hold (by key), with how many holds each. */
  private readonly byNamespace = new Map<string, Map<string, number>>();
  private readonly checks?: ReturnType<Registry['counter']>;
  private readonly refusals?: ReturnType<Registry['counter']>;
  private readonly targetsGauge?: ReturnType<Registry['gauge']>;

  constructor(options: HealthCheckerOptions) {
    this.options = options;
    this.view = options.view;
    this.concurrency = Math.max(1, options.concurrency ?? 16);
    this.namespaceLimit = Math.max(0, options.namespaceLimit ?? DEFAULT_NAMESPACE_TARGET_LIMIT);
    this.ca = options.ca && options.ca.length > 0 ? [...tls.rootCertificates, ...options.ca] : undefined;
    this.denied = PROBE_DENIED_NETWORKS.map((n) => parseNetwork(n)!);
    this.allowed = (options.allow ?? []).map((n) => {
      const parsed = parseNetwork(n.includes('/') ? n : `${n}/${net.isIPv6(n) ? 128 : 32}`);
      if (!parsed)
        throw new Error(
          `health probe allow-list entry ${JSON.stringify(n)} is not an address or CIDR network`,
        );
      return parsed;
    });
    if (options.registry) {
      this.checks = options.registry.counter(
        'zonekeeper_health_checks_total',
        'Health probes of steered records, by result (up, down: the probe failed).',
        ['result'],
      );
      this.refusals = options.registry.counter(
        'zonekeeper_health_probe_refusals_total',
        "Record sets whose health checks were not started, by reason (namespace-limit: the namespace's --health-probe-namespace-limit; capacity: every probe slot of the process is taken), counted per attempt.",
        ['reason'],
      );
      this.targetsGauge = options.registry.gauge(
        'zonekeeper_health_targets',
        'Probe targets of steered records by state (unknown, up, down).',
        ['state'],
      );
      this.updateGauge();
    }
  }

  /**
   * Starts probing every target (or shares the probes of equal ones) for a record set of `namespace`,
   * and returns their slots in the view; or, taking nothing, why not: the namespace would hold more
   * targets than its limit, or the process has no slot left for them. All or none, so a record set is
   * either probed whole or reported, and a refusal leaves nothing behind.
   */
  acquireAll(targets: readonly ProbeTarget[], namespace = ''): number[] | ProbeRefusal {
    const keys = targets.map((t) => targetKey(t));
    const held = this.byNamespace.get(namespace);
    const fresh = new Set(keys.filter((k) => !held?.has(k)));
    const total = (held?.size ?? 0) + fresh.size;
    if (fresh.size > 0 && total > this.namespaceLimit) {
      this.refusals?.labels('namespace-limit').inc();
      return {
        reason: 'NamespaceLimit',
        message: `namespace ${JSON.stringify(namespace)} would have ${total} health probe targets, more than its limit of ${this.namespaceLimit} (--health-probe-namespace-limit); health-check fewer records or ask the operator for a higher limit`,
      };
    }
    const unseen = new Set(keys.filter((k) => !this.byKey.has(k))).size;
    const free = this.freeSlots.length + Math.max(0, this.view.capacity - this.nextSlot);
    if (unseen > free) {
      this.refusals?.labels('capacity').inc();
      return {
        reason: 'Capacity',
        message: `every one of the ${this.view.capacity} health probe slots of this server is taken; retried when record sets elsewhere release theirs`,
      };
    }
    return targets.map((t) => this.acquire(t, namespace));
  }

  /** Starts probing a target (or shares the probes of an equal one) and returns its slot in the view. */
  acquire(target: ProbeTarget, namespace = ''): number {
    const key = targetKey(target);
    const existing = this.byKey.get(key);
    if (existing) {
      existing.refs++;
      this.hold(namespace, key);
      return existing.slot;
    }
    // Checked before a slot is taken: a refusal takes nothing (nextSlot stays below capacity).
    if (this.freeSlots.length === 0 && this.nextSlot >= this.view.capacity)
      throw new Error(`more than ${this.view.capacity} health probe targets`);
    const slot = this.freeSlots.pop() ?? this.nextSlot++;
    this.hold(namespace, key);
    this.write(slot, HEALTH_UNKNOWN);
    const t: Target = {
      key,
      slot,
      target,
      refs: 1,
      state: HEALTH_UNKNOWN,
      failures: 0,
      successes: 0,
      running: false,
    };
    this.byKey.set(key, t);
    this.bySlot.set(slot, t);
    this.updateGauge();
    if (!this.stopped) this.enqueue(t);
    return slot;
  }

  /**
   * Stops sharing a slot; the last holder stops its probes and frees it. True when that freed room:
   * the slot itself, or a target of the namespace's count.
   */
  release(slot: number, namespace = ''): boolean {
    const t = this.bySlot.get(slot);
    if (!t) return false;
    const unheld = this.unhold(namespace, t.key);
    if (--t.refs > 0) return unheld;
    clearTimeout(t.timer);
    this.byKey.delete(t.key);
    this.bySlot.delete(slot);
    this.write(slot, HEALTH_UNKNOWN);
    this.freeSlots.push(slot);
    this.updateGauge();
    return true;
  }

  /** Targets probed now (slots in use). */
  get targetCount(): number {
    return this.bySlot.size;
  }

  /** Targets the record sets of `namespace` hold now. */
  namespaceTargets(namespace: string): number {
    return this.byNamespace.get(namespace)?.size ?? 0;
  }

  private hold(namespace: string, key: string): void {
    const held = this.byNamespace.get(namespace) ?? new Map<string, number>();
    this.byNamespace.set(namespace, held);
    held.set(key, (held.get(key) ?? 0) + 1);
  }

  /** True when the namespace no longer holds the target at all. */
  private unhold(namespace: string, key: string): boolean {
    const held = this.byNamespace.get(namespace);
    const n = held?.get(key);
    if (!held || n === undefined) return false;
    if (n > 1) {
      held.set(key, n - 1);
      return false;
    }
    held.delete(key);
    if (held.size === 0) this.byNamespace.delete(namespace);
    return true;
  }

  status(slot: number): TargetStatus | undefined {
    const t = this.bySlot.get(slot);
    if (!t) return undefined;
    return {
      state: t.state === HEALTH_UP ? 'Up' : t.state === HEALTH_DOWN ? 'Down' : 'Unknown',
      ...(t.since ? { since: t.since } : {}),
      ...(t.lastError ? { lastError: t.lastError } : {}),
    };
  }

  /** The slots in use are below this (for a snapshot of the view). */
  get slotCount(): number {
    return this.nextSlot;
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.bySlot.values()) clearTimeout(t.timer);
    this.queue.length = 0;
  }

  private enqueue(t: Target): void {
    if (this.stopped || !this.bySlot.has(t.slot) || this.bySlot.get(t.slot) !== t) return;
    this.queue.push(t);
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < this.concurrency && this.queue.length > 0) {
      const t = this.queue.shift()!;
      if (this.bySlot.get(t.slot) !== t || t.running) continue;
      this.inFlight++;
      t.running = true;
      const started = Date.now();
      void this.probe(t.target).then((error) => {
        this.inFlight--;
        t.running = false;
        this.record(t, error);
        if (!this.stopped && this.bySlot.get(t.slot) === t) {
          const wait = Math.max(0, t.target.intervalSeconds * 1000 - (Date.now() - started));
          t.timer = setTimeout(() => this.enqueue(t), wait);
          t.timer.unref();
        }
        this.pump();
      });
    }
  }

  private record(t: Target, error: string | undefined): void {
    this.checks?.labels(error === undefined ? 'up' : 'down').inc();
    if (error === undefined) {
      t.failures = 0;
      t.successes++;
      if (t.state !== HEALTH_UP && t.successes >= t.target.successThreshold) this.transition(t, HEALTH_UP);
    } else {
      t.lastError = error;
      t.successes = 0;
      t.failures++;
      if (t.state !== HEALTH_DOWN && t.failures >= t.target.failureThreshold) this.transition(t, HEALTH_DOWN);
    }
  }

  private transition(t: Target, state: HealthState): void {
    const before = t.state;
    t.state = state;
    t.since = new Date().toISOString();
    this.write(t.slot, state);
    this.updateGauge();
    const what = `${t.target.protocol} ${t.target.address}:${t.target.port}${t.target.protocol === 'TCP' ? '' : ` ${t.target.host}${t.target.path}`}`;
    if (state === HEALTH_DOWN) this.options.log?.('warn', `health: ${what} is down (${t.lastError})`);
    else if (before === HEALTH_DOWN) this.options.log?.('info', `health: ${what} is up again`);
    else this.options.log?.('info', `health: ${what} is up`);
    this.options.onTransition?.({
      slot: t.slot,
      target: t.target,
      state,
      ...(state === HEALTH_DOWN && t.lastError ? { error: t.lastError } : {}),
    });
  }

  private write(slot: number, state: HealthState): void {
    this.view.set(slot, state);
    this.options.onViewWrite?.(slot, state);
  }

  private updateGauge(): void {
    if (!this.targetsGauge) return;
    const counts = { unknown: 0, up: 0, down: 0 };
    for (const t of this.bySlot.values())
      counts[t.state === HEALTH_UP ? 'up' : t.state === HEALTH_DOWN ? 'down' : 'unknown']++;
    for (const [state, n] of Object.entries(counts)) this.targetsGauge.set(n, state);
  }

  /**
   * Whether the address may be probed: not in PROBE_DENIED_NETWORKS, unless allow-listed. An IPv6 address
   * that carries an IPv4 address (IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96, NAT64 64:ff9b::/96,
   * 6to4 2002::/16) is judged as that IPv4 address too: the socket reaches it, so ::ffff:169.254.169.254
   * is the metadata service.
   */
  permitted(address: string): boolean {
    const forms = [address];
    const embedded = embeddedIPv4(address);
    if (embedded !== undefined) forms.push(embedded);
    for (const form of forms) {
      const parsed = parseNetwork(`${form}/${net.isIPv6(form) ? 128 : 32}`);
      if (!parsed) return false;
      if (this.allowed.some((n) => networkWithin(parsed, n))) continue;
      if (this.denied.some((n) => networkWithin(parsed, n))) return false;
    }
    return true;
  }

  /** One probe: undefined when up, else why it failed. */
  private async probe(t: ProbeTarget): Promise<string | undefined> {
    if (!this.permitted(t.address)) {
      return `${t.address} is a loopback, link-local or cloud metadata address; probes reach it only when the operator allow-lists its network (--health-probe-allow)`;
    }
    try {
      return t.protocol === 'TCP' ? await probeTcp(t) : await probeHttp(t, this.ca);
    } catch (e) {
      return (e as Error).message;
    }
  }
}

/** The IPv4 address an IPv6 address carries in one of the forms a socket reaches it by, if any. */
export function embeddedIPv4(address: string): string | undefined {
  if (!net.isIPv6(address)) return undefined;
  const octets = parseNetwork(`${address}/128`)?.address;
  return octets && embeddedIPv4Bytes(octets)?.join('.');
}

function probeTcp(t: ProbeTarget): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: t.address, port: t.port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(`no connection within ${t.timeoutSeconds} s`);
    }, t.timeoutSeconds * 1000);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (e) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(`connect: ${(e as NodeJS.ErrnoException).code ?? e.message}`);
    });
  });
}

function probeHttp(t: ProbeTarget, ca: string[] | undefined): Promise<string | undefined> {
  const secure = t.protocol === 'HTTPS';
  const defaultPort = secure ? 443 : 80;
  return new Promise((resolve) => {
    let settled = false;
    const done = (error: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(error);
    };
    const options: https.RequestOptions = {
      host: t.address,
      port: t.port,
      path: t.path,
      method: 'GET',
      agent: false,
      headers: {
        host: t.port === defaultPort ? t.host : `${t.host}:${t.port}`,
        'user-agent': 'zonekeeper-health/1',
        connection: 'close',
      },
      ...(secure ? { servername: t.host, ...(ca ? { ca } : {}) } : {}),
    };
    // Redirects are never followed: the status is judged as answered by the target itself.
    const req = (secure ? https : http).request(options, (res) => {
      const status = res.statusCode ?? 0;
      const expected =
        t.expectStatus.length > 0 ? t.expectStatus.includes(status) : status >= 200 && status < 300;
      if (!expected) {
        done(
          `HTTP status ${status}, expected ${t.expectStatus.length > 0 ? t.expectStatus.join(' or ') : '2xx'}`,
        );
        return;
      }
      if (t.stringMatch === undefined) {
        done(undefined);
        return;
      }
      const needle = t.stringMatch;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
        if (body.includes(needle)) done(undefined);
        else if (body.length >= BODY_LIMIT)
          done(`the first 64 KiB of the body do not contain ${JSON.stringify(needle)}`);
      });
      res.on('end', () =>
        done(body.includes(needle) ? undefined : `the body does not contain ${JSON.stringify(needle)}`),
      );
      res.on('error', (e) => done(`response: ${e.message}`));
    });
    const timer = setTimeout(() => done(`no answer within ${t.timeoutSeconds} s`), t.timeoutSeconds * 1000);
    req.on('error', (e) =>
      done(`${secure ? 'HTTPS' : 'HTTP'}: ${(e as NodeJS.ErrnoException).code ?? e.message}`),
    );
    req.end();
  });
}
