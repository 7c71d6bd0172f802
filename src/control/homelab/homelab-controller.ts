/**
 * The homelab DNS operator's controllers: each DNSRecord is pushed to the provider its DNSClass names
 * (`POST /records`), deleted from it behind the finalizer (`DELETE /records/{type}/{domain}/{subdomain}`),
 * and each DNSClass's provider is asked `GET /health` on a schedule. Level-triggered and idempotent:
 * every run compares the object with what was last pushed where, and writes status only when it
 * changed.
 *
 * Beyond the reference operator: a record whose type, domain or subdomain changes, or that moves to a
 * class with another server, is deleted where it was before it is pushed where it now goes (no
 * orphans); after the configured attempts a failing record keeps being retried at the max delay with
 * `Ready=False` saying so; a synced record is read back on a schedule (`GET /records/...`, when the
 * provider has it) and pushed again when it drifted.
 *
 * What was pushed where is kept in memory: a rename or class move made while Zonekeeper is not running
 * is pushed to its new place, but the old record is not known to delete.
 */

import { type ForeignObject, frontDoorId, keepTransitionTimes } from '../../api/frontdoors/front-door.ts';
import {
  type DNSClassSpec,
  type DNSClassStatus,
  type DNSRecordSpec,
  type DNSRecordStatus,
  dnsClassFrontDoor,
  dnsRecordFrontDoor,
  HOMELAB_FINALIZER,
} from '../../api/frontdoors/homelab/index.ts';
import type { Condition } from '../../api/meta.ts';
import { SecretError, type SecretResolver } from '../../api/secret-ref.ts';
import {
  type HomelabFailureReason,
  type HomelabProvider,
  type HomelabProviderConfig,
  HomelabProviderError,
  type HomelabProviderFactory,
  type HomelabRecord,
  recordFqdn,
} from '../../homelab-protocol/protocol.ts';
import { formatTimestamp } from '../../homelab-protocol/signature.ts';
import { jsonEqual } from '../conditions.ts';
import type { ForeignObjectStore } from '../resource-store.ts';
import { type ReconcileResult, WorkQueue } from '../work-queue.ts';
import {
  DEFAULT_TIMEOUT_SECONDS,
  desiredRecord,
  homelabSecretRef,
  providerIdentity,
  recordIdentity,
  sameContent,
} from './records.ts';
import { type HomelabSettings, retryDelay } from './settings.ts';

export const CLASS_DOOR = frontDoorId(dnsClassFrontDoor);
export const RECORD_DOOR = frontDoorId(dnsRecordFrontDoor);

type RecordObject = ForeignObject<DNSRecordSpec, DNSRecordStatus>;
type ClassObject = ForeignObject<DNSClassSpec, DNSClassStatus>;

export type RecordReason =
  | 'RecordCreated'
  | 'RecordUpdated'
  | 'DNSClassNotFound'
  | 'SecretNotFound'
  | 'InvalidConfiguration'
  | HomelabFailureReason;

export interface HomelabControllerOptions {
  store: ForeignObjectStore;
  providers: HomelabProviderFactory;
  secrets: SecretResolver;
  settings: HomelabSettings;
  now?: () => Date;
  /**
   * Folder mode: why the manifest of a DNSClass or DNSRecord is invalid while its last valid version is
   * kept (by door and key), or undefined when it is valid. Such an object keeps being pushed at its last
   * valid version, and its status says the manifest is invalid (`Ready=False`, `ValidationFailed`).
   */
  manifestProblem?: (door: string, key: string) => string | undefined;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

/** A provider and the configuration it was reached with. */
interface Target {
  className: string;
  config: HomelabProviderConfig;
}

interface RecordState {
  /** What was last accepted by a provider, and which. */
  pushed?: { record: HomelabRecord; target: Target };
  /** Failed attempts in a row, and when the next one is due. */
  attempts: number;
  retryAt: number;
  /** The generation and class version the failure was about (a change retries at once). */
  failedFor?: string;
  /** When the pushed record is next read back. */
  driftCheckAt: number;
  /** The status of the last push (Ready=True), shown again when the object's manifest is valid. */
  synced?: { status: Omit<DNSRecordStatus, 'conditions'>; ready: Omit<Condition, 'lastTransitionTime'> };
}

/** `status.error.code` of a DNSRecord whose manifest is invalid while its last valid version is pushed. */
export const MANIFEST_INVALID = 'MANIFEST_INVALID';

interface ClassState {
  checkedGeneration?: number;
  nextCheckAt: number;
}

class ConfigError extends Error {
  readonly reason: RecordReason;
  readonly code: string;
  constructor(reason: RecordReason, code: string, message: string) {
    super(message);
    this.reason = reason;
    this.code = code;
  }
}

export class HomelabController {
  private readonly options: HomelabControllerOptions;
  private readonly records = new Map<string, RecordState>();
  private readonly classes = new Map<string, ClassState>();
  private readonly recordQueue: WorkQueue;
  private readonly classQueue: WorkQueue;
  private unsubscribe?: () => void;

  constructor(options: HomelabControllerOptions) {
    this.options = options;
    this.recordQueue = new WorkQueue((key) => this.reconcileRecord(key), { concurrency: 4 });
    this.classQueue = new WorkQueue((key) => this.reconcileClass(key), { concurrency: 2 });
    const logFailure = (what: string) => (key: string, error: unknown) => {
      if (error !== undefined)
        this.options.log?.('warn', `${what} ${key}: ${(error as Error).message}; retrying`, { key });
    };
    this.recordQueue.onResult = logFailure('DNSRecord');
    this.classQueue.onResult = logFailure('DNSClass');
  }

  start(): void {
    const { store } = this.options;
    this.unsubscribe = store.watchForeign((event) => {
      if (event.door === RECORD_DOOR) {
        this.recordQueue.add(event.key);
        // Records of the same name and type decide again who owns it at the provider.
        const id = recordIdentity(event.object.spec as DNSRecordSpec);
        for (const r of store.listForeign(RECORD_DOOR) as RecordObject[])
          if (keyOf(r) !== event.key && recordIdentity(r.spec) === id) {
            const st = this.records.get(keyOf(r));
            if (st) st.retryAt = 0;
            this.recordQueue.add(keyOf(r));
          }
      } else if (event.door === CLASS_DOOR) {
        this.classQueue.add(event.key);
        // A class made, changed or gone: its records are decided again at once.
        this.recordsOfClass(event.key, event.type === 'delete' ? undefined : event.object);
      }
    });
    for (const c of store.listForeign(CLASS_DOOR)) this.classQueue.add(c.metadata.name);
    for (const r of store.listForeign(RECORD_DOOR)) this.recordQueue.add(keyOf(r));
    this.recordQueue.start();
    this.classQueue.start();
  }

  stop(): void {
    this.unsubscribe?.();
    this.recordQueue.shutdown();
    this.classQueue.shutdown();
  }

  /** Looks at an object again at once (its manifest became invalid or valid again). */
  recheck(door: string, key: string): void {
    if (door === RECORD_DOOR) {
      const st = this.records.get(key);
      if (st) st.retryAt = 0;
      this.recordQueue.add(key);
    } else if (door === CLASS_DOOR) {
      const st = this.classes.get(key);
      if (st) st.nextCheckAt = 0;
      this.classQueue.add(key);
    }
  }

  /** Resolves when nothing is queued or running (retries and checks may be scheduled). For tests. */
  async idle(): Promise<void> {
    await Promise.all([this.recordQueue.idle(), this.classQueue.idle()]);
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  private recordsOfClass(className: string, _cls: ForeignObject | undefined): void {
    for (const r of this.options.store.listForeign(RECORD_DOOR) as RecordObject[]) {
      const key = keyOf(r);
      const pushedHere = this.records.get(key)?.pushed?.target.className === className;
      if (r.spec.dnsClassRef.name === className || pushedHere) {
        const st = this.records.get(key);
        if (st) st.retryAt = 0;
        this.recordQueue.add(key);
      }
    }
  }

  // Classes ---------------------------------------------------------------------------------------

  private async reconcileClass(name: string): Promise<ReconcileResult> {
    const cls = this.options.store.getForeign(CLASS_DOOR, name) as ClassObject | undefined;
    if (!cls || cls.metadata.deletionTimestamp) {
      this.classes.delete(name);
      return undefined;
    }
    const st = this.classes.get(name) ?? { nextCheckAt: 0 };
    this.classes.set(name, st);
    const now = this.now();
    const generation = cls.metadata.generation ?? 0;
    const interval = this.options.settings.healthCheckIntervalMs;
    if (st.checkedGeneration === generation && now.getTime() < st.nextCheckAt)
      return { requeueAfterMs: st.nextCheckAt - now.getTime() };
    const at = formatTimestamp(now);
    let ready: Omit<Condition, 'lastTransitionTime'>;
    let health: NonNullable<DNSClassStatus['health']>;
    try {
      const target = await this.targetOf(cls);
      const result = await this.options.providers(target.config).health();
      health = { status: result.healthy ? 'Healthy' : 'Unhealthy', lastCheck: at, message: result.message };
      ready = result.healthy
        ? {
            type: 'Ready',
            status: 'True',
            reason: 'ServerHealthy',
            message: `GET /health: ${result.message}`,
          }
        : { type: 'Ready', status: 'False', reason: result.reason ?? 'ServerError', message: result.message };
    } catch (e) {
      const reason = e instanceof ConfigError ? e.reason : 'ServerError';
      health = { status: 'Unknown', lastCheck: at, message: (e as Error).message };
      ready = { type: 'Ready', status: 'False', reason, message: (e as Error).message };
    }
    const problem = this.options.manifestProblem?.(CLASS_DOOR, name);
    if (problem !== undefined)
      ready = {
        type: 'Ready',
        status: 'False',
        reason: 'ValidationFailed',
        message: `the manifest is invalid, so the last valid version (generation ${generation}) is still used: ${problem}`,
      };
    const status: DNSClassStatus = {
      conditions: keepTransitionTimes(cls.status?.conditions, [
        { ...ready, observedGeneration: generation, lastTransitionTime: at },
      ]),
      lastHealthCheck: at,
      health,
      observedGeneration: generation,
    };
    await this.writeStatus(CLASS_DOOR, name, cls.status, status);
    st.checkedGeneration = generation;
    st.nextCheckAt = now.getTime() + interval;
    return { requeueAfterMs: interval };
  }

  /** The provider of a class, its secret read. */
  private async targetOf(cls: ClassObject): Promise<Target> {
    const spec = cls.spec;
    let secret: string | undefined;
    const auth = spec.hmacAuth;
    if (auth?.secret !== undefined) secret = auth.secret;
    else if (auth?.secretRef) {
      const ref = homelabSecretRef(auth.secretRef);
      if ('error' in ref) throw new ConfigError('InvalidConfiguration', 'INVALID_CONFIGURATION', ref.error);
      try {
        secret = await this.options.secrets(ref);
      } catch (e) {
        const code = e instanceof SecretError ? e.code : 'SECRET_NOT_FOUND';
        throw new ConfigError(
          'SecretNotFound',
          code,
          `DNSClass ${cls.metadata.name}: hmacAuth secret: ${(e as Error).message}`,
        );
      }
      if (secret === '')
        throw new ConfigError(
          'SecretNotFound',
          'SECRET_EMPTY',
          `DNSClass ${cls.metadata.name}: the hmacAuth secret is empty`,
        );
    }
    return {
      className: cls.metadata.name,
      config: {
        server: providerIdentity(spec.server),
        timeoutMs: (spec.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000,
        secret,
        algorithm: auth?.algorithm ?? 'SHA256',
      },
    };
  }

  // Records ---------------------------------------------------------------------------------------

  private async reconcileRecord(key: string): Promise<ReconcileResult> {
    const { store } = this.options;
    const obj = store.getForeign(RECORD_DOOR, key) as RecordObject | undefined;
    if (!obj) {
      this.records.delete(key);
      return undefined;
    }
    const st = this.records.get(key) ?? { attempts: 0, retryAt: 0, driftCheckAt: 0 };
    this.records.set(key, st);
    const now = this.now().getTime();
    const cls = store.getForeign(CLASS_DOOR, obj.spec.dnsClassRef.name) as ClassObject | undefined;
    const version = `${obj.metadata.generation ?? 0}/${obj.metadata.deletionTimestamp ? 'deleting' : ''}/${cls?.metadata.generation ?? 'none'}`;
    // Our own status write comes back as an event: a failed record waits for its retry unless it changed.
    if (st.failedFor === version && now < st.retryAt)
      return Number.isFinite(st.retryAt) ? { requeueAfterMs: st.retryAt - now } : undefined;

    if (obj.metadata.deletionTimestamp) return this.finalize(key, obj, cls, st, version);
    if (!(obj.metadata.finalizers ?? []).includes(HOMELAB_FINALIZER))
      await store.addForeignFinalizer(RECORD_DOOR, key, HOMELAB_FINALIZER);

    if (!cls) {
      // A record moved away from its old class is removed there even before its new class exists.
      if (st.pushed && st.pushed.target.className !== obj.spec.dnsClassRef.name) {
        const removed = await this.removePushed(key, obj, st, version);
        if (removed) return removed;
      }
      return this.failed(
        key,
        obj,
        st,
        version,
        new ConfigError(
          'DNSClassNotFound',
          'DNS_CLASS_NOT_FOUND',
          `DNSClass ${obj.spec.dnsClassRef.name} does not exist; create it or fix spec.dnsClassRef.name`,
        ),
        false,
      );
    }
    let target: Target;
    try {
      target = await this.targetOf(cls);
    } catch (e) {
      return this.failed(key, obj, st, version, e, true);
    }
    const want = desiredRecord(obj.spec, cls.spec);
    // Hostile tenant: a record another DNSRecord holds (or, none holding it, an older one owns) at
    // this provider is not taken over, neither by upserting nor, later, by deleting it.
    const { owner, holds } = this.ownerAt(target.config.server, want) ?? {};
    if (owner !== undefined && owner !== key) {
      if (st.pushed) {
        const removed = await this.removePushed(key, obj, st, version);
        if (removed) return removed;
      }
      return this.failed(
        key,
        obj,
        st,
        version,
        new ConfigError(
          'InvalidConfiguration',
          'RECORD_CONFLICT',
          `${want.type} ${recordFqdn(want.domain, want.subdomain)} at ${target.config.server} belongs to DNSRecord ${owner}, ${holds ? 'which holds it there' : 'which is older'}; delete one of them or change its name`,
        ),
        false,
      );
    }
    // Renamed (type, domain, subdomain) or moved to another provider: delete where it was first.
    if (
      st.pushed &&
      (recordIdentity(st.pushed.record) !== recordIdentity(want) ||
        st.pushed.target.config.server !== target.config.server)
    ) {
      const removed = await this.removePushed(key, obj, st, version);
      if (removed) return removed;
    }
    const provider = this.options.providers(target.config);
    const generation = obj.metadata.generation ?? 0;
    // Synced: Ready=True, or Ready=False only because the manifest is invalid (its last valid version
    // is what was pushed).
    const readyNow =
      obj.status?.observedGeneration === generation &&
      (obj.status.error?.code === MANIFEST_INVALID ||
        obj.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    if (st.pushed && jsonEqual(want, st.pushed.record) && readyNow && st.synced) {
      await this.writeStatus(RECORD_DOOR, key, obj.status, this.syncedStatus(key, obj, st.synced));
      if (now < st.driftCheckAt) return { requeueAfterMs: st.driftCheckAt - now };
      // Read back: repair drift when the provider has GET /records/...
      try {
        const have = await provider.get(want.type, want.domain, want.subdomain);
        st.driftCheckAt = now + this.options.settings.driftCheckIntervalMs;
        if (have === 'unsupported' || (have !== undefined && sameContent(want, have)))
          return { requeueAfterMs: this.options.settings.driftCheckIntervalMs };
        this.options.log?.('warn', `DNSRecord ${key}: the provider's record drifted; pushing it again`, {
          provider: target.config.server,
        });
      } catch (e) {
        return this.failed(key, obj, st, version, e, true);
      }
    }
    try {
      await provider.upsert(want);
    } catch (e) {
      return this.failed(key, obj, st, version, e, true);
    }
    const first = obj.status?.lastSyncTime === undefined;
    st.pushed = { record: want, target };
    st.attempts = 0;
    st.retryAt = 0;
    delete st.failedFor;
    st.driftCheckAt = now + this.options.settings.driftCheckIntervalMs;
    const at = formatTimestamp(this.now());
    const reason: RecordReason = first ? 'RecordCreated' : 'RecordUpdated';
    const fqdn = recordFqdn(want.domain, want.subdomain);
    st.synced = {
      status: {
        state: first ? 'Created' : 'Updated',
        lastSyncTime: at,
        fqdn,
        observedGeneration: generation,
      },
      ready: {
        type: 'Ready',
        status: 'True',
        reason,
        message: `${want.type} ${fqdn} is at ${target.config.server} (DNSClass ${target.className})`,
        observedGeneration: generation,
      },
    };
    await this.writeStatus(RECORD_DOOR, key, obj.status, this.syncedStatus(key, obj, st.synced));
    return { requeueAfterMs: this.options.settings.driftCheckIntervalMs };
  }

  /**
   * The status of a record whose last push succeeded: Ready=True, or — its manifest invalid, its last
   * valid version still pushed — Ready=False with `ValidationFailed` and `error` saying what to fix.
   */
  private syncedStatus(
    key: string,
    obj: RecordObject,
    synced: NonNullable<RecordState['synced']>,
  ): DNSRecordStatus {
    const at = formatTimestamp(this.now());
    const problem = this.options.manifestProblem?.(RECORD_DOOR, key);
    if (problem === undefined)
      return {
        ...synced.status,
        conditions: keepTransitionTimes(obj.status?.conditions, [
          { ...synced.ready, lastTransitionTime: at },
        ]),
      };
    const generation = obj.metadata.generation ?? 0;
    const message = `the manifest is invalid, so the last valid version (generation ${generation}) is still pushed: ${problem}`;
    const previous = obj.status?.error;
    return {
      ...synced.status,
      conditions: keepTransitionTimes(obj.status?.conditions, [
        {
          type: 'Ready',
          status: 'False',
          reason: 'ValidationFailed',
          message,
          observedGeneration: generation,
          lastTransitionTime: at,
        },
      ]),
      error: {
        code: MANIFEST_INVALID,
        message,
        timestamp:
          previous?.code === MANIFEST_INVALID && previous.message === message ? previous.timestamp : at,
      },
    };
  }

  /**
   * Which DNSRecord owns a record (type, domain, subdomain) at a provider: the oldest live one naming it
   * through a class with that server (creation time, then namespace/name).
   */
  private ownerAt(server: string, record: HomelabRecord): { owner: string; holds: boolean } | undefined {
    const id = recordIdentity(record);
    let best: RecordObject | undefined;
    let holder: RecordObject | undefined;
    for (const r of this.options.store.listForeign(RECORD_DOOR) as RecordObject[]) {
      if (r.metadata.deletionTimestamp || recordIdentity(r.spec) !== id) continue;
      const cls = this.options.store.getForeign(CLASS_DOOR, r.spec.dnsClassRef.name) as
        | ClassObject
        | undefined;
      if (!cls || providerIdentity(cls.spec.server) !== server) continue;
      if (this.holds(r, id, server) && (!holder || olderThan(r, holder))) holder = r;
      if (!best || olderThan(r, best)) best = r;
    }
    if (holder) return { owner: keyOf(holder), holds: true };
    return best ? { owner: keyOf(best), holds: false } : undefined;
  }

  /**
   * Whether `r` holds the provider record `id` at `server` now: this process pushed it for `r`, or
   * (before this process pushed anything for it: after a restart) its status says a record at the
   * name it has now was pushed (Ready=True, `status.fqdn` that name: an edit of its values while
   * Zonekeeper was down keeps it the holder; a rename does not). The holder keeps the record against
   * older DNSRecords: an old one renamed onto it claims it afresh, and takes nothing.
   */
  private holds(r: RecordObject, id: string, server: string): boolean {
    const pushed = this.records.get(keyOf(r))?.pushed;
    if (pushed) return recordIdentity(pushed.record) === id && pushed.target.config.server === server;
    const status = r.status;
    return (
      status?.fqdn !== undefined &&
      status.fqdn.toLowerCase() === recordFqdn(r.spec.domain, r.spec.subdomain).toLowerCase() &&
      status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true
    );
  }

  /** Deletes what was pushed before (another name or provider); a failure result, or undefined when done. */
  private async removePushed(
    key: string,
    obj: RecordObject,
    st: RecordState,
    version: string,
  ): Promise<ReconcileResult | undefined> {
    const old = st.pushed!;
    try {
      await this.options
        .providers(old.target.config)
        .delete(old.record.type, old.record.domain, old.record.subdomain);
    } catch (e) {
      const what = `the old record ${old.record.type} ${recordFqdn(old.record.domain, old.record.subdomain)} at ${old.target.config.server} could not be deleted`;
      const err =
        e instanceof HomelabProviderError
          ? new HomelabProviderError(e.reason, e.code, `${what}: ${e.message}`, e.status)
          : new Error(`${what}: ${(e as Error).message}`);
      return this.failed(key, obj, st, version, err, true);
    }
    this.options.log?.('info', `DNSRecord ${key}: deleted the old record at its previous place`, {
      record: recordIdentity(old.record),
      provider: old.target.config.server,
    });
    delete st.pushed;
    return undefined;
  }

  private async finalize(
    key: string,
    obj: RecordObject,
    cls: ClassObject | undefined,
    st: RecordState,
    version: string,
  ): Promise<ReconcileResult> {
    const { store } = this.options;
    if (!(obj.metadata.finalizers ?? []).includes(HOMELAB_FINALIZER)) return undefined;
    const targets: { record: HomelabRecord; provider: HomelabProvider }[] = [];
    if (st.pushed)
      targets.push({ record: st.pushed.record, provider: this.options.providers(st.pushed.target.config) });
    if (cls) {
      try {
        const target = await this.targetOf(cls);
        const want = desiredRecord(obj.spec, cls.spec);
        const samePlace =
          st.pushed &&
          recordIdentity(st.pushed.record) === recordIdentity(want) &&
          st.pushed.target.config.server === target.config.server;
        const owner = this.ownerAt(target.config.server, want)?.owner;
        if (!samePlace && (owner === undefined || owner === key))
          targets.push({ record: want, provider: this.options.providers(target.config) });
      } catch (e) {
        if (targets.length === 0) return this.failed(key, obj, st, version, e, true);
      }
    }
    if (targets.length === 0)
      this.options.log?.(
        'warn',
        `DNSRecord ${key}: DNSClass ${obj.spec.dnsClassRef.name} is gone; nothing known to delete`,
        {},
      );
    try {
      for (const t of targets) await t.provider.delete(t.record.type, t.record.domain, t.record.subdomain);
    } catch (e) {
      return this.failed(key, obj, st, version, e, true);
    }
    await store.removeForeignFinalizer(RECORD_DOOR, key, HOMELAB_FINALIZER);
    this.records.delete(key);
    return undefined;
  }

  /** Records a failure in the status and schedules the retry: `min(base * 2^attempt, max)`, then the max. */
  private async failed(
    key: string,
    obj: RecordObject,
    st: RecordState,
    version: string,
    error: unknown,
    retry: boolean,
  ): Promise<ReconcileResult> {
    const settings = this.options.settings;
    if (st.failedFor !== version) st.attempts = 0;
    const attempt = st.attempts;
    st.attempts++;
    st.failedFor = version;
    const reason: RecordReason =
      error instanceof ConfigError || error instanceof HomelabProviderError ? error.reason : 'ServerError';
    const code =
      error instanceof ConfigError || error instanceof HomelabProviderError ? error.code : 'SERVER_ERROR';
    const base = (error as Error).message;
    const exhausted = st.attempts >= settings.retryMaxAttempts;
    const delay = exhausted ? settings.retryMaxDelayMs : retryDelay(settings, attempt);
    const message = !retry
      ? base
      : exhausted
        ? `${base}; ${settings.retryMaxAttempts} attempts failed, still retrying every ${seconds(settings.retryMaxDelayMs)}`
        : `${base}; retrying with backoff`;
    const now = this.now();
    const at = formatTimestamp(now);
    const generation = obj.metadata.generation ?? 0;
    const previous = obj.status?.error;
    const sameError = previous?.code === code && previous.message === message;
    const status: DNSRecordStatus = {
      ...(obj.status ?? {}),
      conditions: keepTransitionTimes(obj.status?.conditions, [
        {
          type: 'Ready',
          status: 'False',
          reason,
          message,
          observedGeneration: generation,
          lastTransitionTime: at,
        },
      ]),
      state: obj.metadata.deletionTimestamp ? 'Error' : reason === 'DNSClassNotFound' ? 'Pending' : 'Error',
      fqdn: recordFqdn(obj.spec.domain, obj.spec.subdomain),
      observedGeneration: generation,
      error: { code, message, timestamp: sameError ? previous.timestamp : at },
    };
    await this.writeStatus(RECORD_DOOR, key, obj.status, status);
    if (!retry) {
      st.retryAt = Number.POSITIVE_INFINITY;
      return undefined;
    }
    st.retryAt = now.getTime() + delay;
    return { requeueAfterMs: delay };
  }

  private async writeStatus(door: string, key: string, before: unknown, after: object): Promise<void> {
    if (jsonEqual(before ?? {}, after)) return;
    await this.options.store.updateForeignStatus(door, key, after as Record<string, unknown>);
  }
}

function keyOf(o: ForeignObject): string {
  return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
}

function olderThan(a: ForeignObject, b: ForeignObject): boolean {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb;
  return keyOf(a) < keyOf(b);
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
