/**
 * The one path for record sets written through APIs (ADR 0016). Front doors authenticate their caller,
 * map it to a credential and call `RecordWriter.apply`; the writer checks the request against the
 * credential's namespace (bounds, rate, replays, ownership, delegations, quota), then hands one batch to
 * a `WriteStore` that makes it durable all or none and publishes it as DNSRecordSets, which then take
 * the path of every other record set (catalog, zone model, backend, status).
 *
 * No I/O here: the store and the gate are ports; the clock is injected.
 */
import { createHash } from 'node:crypto';
import type { DNSRecordSet } from '../api/index.ts';
import { API_VERSION } from '../api/meta.ts';
import { validateResource } from '../api/resource.ts';
import { recordIdentity } from '../dns/dnssec/canonical.ts';
import { asciiLower, type Name, nameKey, parseName } from '../dns/name.ts';
import { parseRdata } from '../dns/rdata.ts';
import { isRecordTypeName, RECORD_TYPES, type RecordTypeName } from '../dns/rrtype.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import { parseRecordSetRecords } from '../zones/record-parse.ts';
import { type ResourceKey, resourceKey } from '../zones/resource-key.ts';
import type { WriteCredential } from './credentials.ts';
import { RateLimiter } from './rate-limit.ts';
import {
  type ChangeOutcome,
  DEFAULT_REQUEST_LIMITS,
  type NamespaceQuota,
  type RecordChange,
  type RequestLimits,
  type RRsetContent,
  WRITE_ANNOTATION_PREFIX,
  WRITTEN_BY_LABEL,
  WriteError,
  type WriteRequest,
  type WriteResult,
} from './write-request.ts';

/** What a front door calls. */
export interface RecordWriter {
  /**
   * Applies every change of `request` for the credential named `credential`, or none. Resolves once the
   * changes are durable and handed to the controller (serving follows as for any DNSRecordSet); rejects
   * with a `WriteError`.
   */
  apply(credential: string, request: WriteRequest): Promise<WriteResult>;
  /**
   * What this writer holds at `key`, for reading back one's own writes before the live view has
   * caught up: the record set, `null` when it deleted it, `undefined` when it knows nothing (then the
   * live view answers). Absent on writers that forward (they hold nothing).
   */
  held?(key: ResourceKey): DNSRecordSet | null | undefined;
  /**
   * Seconds until the credential's namespace may send a write request (0: now), without taking its
   * rate: a front door asks before it reads a large body. Absent on writers that forward.
   */
  rateWait?(credential: string): number;
  /**
   * Takes one request from the credential's rate for a request refused before `apply` (an RFC 2136
   * UPDATE whose prerequisites failed, or that changes nothing): every authenticated request costs
   * the same. Absent on writers that forward.
   */
  charge?(credential: string): void;
}

/** A record set written through an API, with when it was first written (oldest wins conflicts). */
export interface WrittenRecordSet {
  resource: DNSRecordSet;
  created: string;
}

/**
 * A request id remembered for replays, in a compact form: a replay carries the same changes (the
 * digest says so), so its answer is made again from them and the outcomes, not kept whole.
 */
export interface RememberedRequest {
  credential: string;
  id: string;
  /** SHA-256 of the request's changes. */
  digest: string;
  /** When it was applied (ISO 8601). */
  at: string;
  /** The namespace it wrote to. */
  namespace: string;
  /** The outcome of each change in order, as `encodeOutcomes` writes them (`c2n498`). */
  outcomes: string;
}

/** One letter per outcome in `RememberedRequest.outcomes`. */
const OUTCOME_LETTERS: Record<ChangeOutcome, string> = {
  created: 'c',
  updated: 'u',
  unchanged: 'n',
  deleted: 'd',
  absent: 'a',
};
const LETTER_OUTCOMES = new Map(
  Object.entries(OUTCOME_LETTERS).map(([outcome, letter]) => [letter, outcome as ChangeOutcome]),
);

/**
 * The outcomes of a request's changes, run-length coded: a letter per run (c created, u updated,
 * n unchanged, d deleted, a absent), followed by its length when more than one (`c2n498`).
 */
export function encodeOutcomes(outcomes: readonly ChangeOutcome[]): string {
  let out = '';
  for (let i = 0; i < outcomes.length; ) {
    let j = i + 1;
    while (j < outcomes.length && outcomes[j] === outcomes[i]) j++;
    out += OUTCOME_LETTERS[outcomes[i]!] + (j - i > 1 ? String(j - i) : '');
    i = j;
  }
  return out;
}

/** The outcomes `encodeOutcomes` wrote, or undefined when `text` is not such a list. */
export function decodeOutcomes(text: string): ChangeOutcome[] | undefined {
  const out: ChangeOutcome[] = [];
  for (const m of text.matchAll(/([a-z])(\d*)|(.)/g)) {
    const outcome = m[1] !== undefined ? LETTER_OUTCOMES.get(m[1]) : undefined;
    const n = m[2] ? Number(m[2]) : 1;
    if (outcome === undefined || !Number.isSafeInteger(n) || n < 1 || out.length + n > 100_000)
      return undefined;
    for (let i = 0; i < n; i++) out.push(outcome);
  }
  return out;
}

/**
 * A remembered request as loaded: the compact form, or one written before it (with the whole
 * `result`), made compact. Undefined when neither.
 */
export function compactRemembered(loaded: unknown): RememberedRequest | undefined {
  const r = loaded as Partial<RememberedRequest> & { result?: WriteResult };
  if (typeof r?.credential !== 'string' || typeof r.id !== 'string' || typeof r.digest !== 'string')
    return undefined;
  if (typeof r.at !== 'string') return undefined;
  if (typeof r.outcomes === 'string' && typeof r.namespace === 'string')
    return {
      credential: r.credential,
      id: r.id,
      digest: r.digest,
      at: r.at,
      namespace: r.namespace,
      outcomes: r.outcomes,
    };
  if (r.result && Array.isArray(r.result.changes) && typeof r.result.namespace === 'string')
    return {
      credential: r.credential,
      id: r.id,
      digest: r.digest,
      at: r.at,
      namespace: r.result.namespace,
      outcomes: encodeOutcomes(r.result.changes.map((c) => c.outcome)),
    };
  return undefined;
}

/** What a remembered request takes, about: its JSON. */
export function rememberedBytes(r: RememberedRequest): number {
  return (
    r.credential.length +
    r.id.length +
    r.digest.length +
    r.at.length +
    r.namespace.length +
    r.outcomes.length +
    90
  );
}

/** The changes of one request, made durable all or none. */
export interface WriteBatch {
  put: WrittenRecordSet[];
  delete: ResourceKey[];
  remember?: RememberedRequest;
  /** Remembered requests whose window has passed. */
  forget: { credential: string; id: string }[];
}

/** Persistence and publication of API-written record sets: the state dir, or DNSRecordSet objects. */
export interface WriteStore {
  /**
   * Everything written so far and the remembered requests. A batch left in doubt by a failed commit or
   * a crash is completed first (rolled forward), so what is returned is whole requests only.
   */
  load(): Promise<{ recordSets: WrittenRecordSet[]; remembered: RememberedRequest[] }>;
  /**
   * Makes the batch durable and visible, all or none. A rejection leaves it in doubt: it is either
   * dropped or completed by the next `load`, never left half applied.
   */
  commit(batch: WriteBatch): Promise<void>;
}

/** What the rest of the system says about a name, asked before a write. */
export interface WriteGate {
  /**
   * Whether the zone that would adopt `fqdn` publishes `type` from `namespace` (the catalog's rules:
   * delegations, the DS at a cut, no NS or CNAME above a child zone), with that zone's origin.
   */
  admit(
    namespace: string,
    fqdn: Name,
    type: RecordTypeName,
  ):
    | { ok: true; origin: Name }
    | {
        ok: false;
        /** What the caller is told: names no object of another namespace. */
        message: string;
        /** The whole reason, objects named, for the log only. */
        detail?: string;
      };
  /** The object at `key` in the live store, if any, with its written-by label. */
  existing(key: ResourceKey): { writtenBy: string | undefined } | undefined;
  /**
   * Another object that defines `type` at `fqdn` in the zone that would adopt it (a manifest's or a
   * tenant's DNSRecordSet under another object name, or the zone itself for its SOA and apex NS): a
   * description of it, or undefined. Asked for changes marked `exclusive` (RFC 2136 UPDATE).
   */
  otherOwner?(namespace: string, fqdn: Name, type: RecordTypeName, own: ResourceKey): string | undefined;
  /**
   * What `fqdn` holds that an RRset of `type`, written as the object `key`, cannot coexist with and
   * would lose to (CNAME and ALIAS exclusivity, RFC 1034 §3.6.2; the older record set wins), judged by
   * the zone's own rule (`ZoneModel.writeConflict`), or undefined. `pending`: the writer's record sets
   * at the name the zone may not have taken yet, by key (null: deleted). Asked for upserts `admit`
   * admitted, so a caller learns nothing of names it may not write.
   */
  exclusivity?(
    namespace: string,
    fqdn: Name,
    type: RecordTypeName,
    key: ResourceKey,
    pending: PendingAtName,
  ): { message: string; detail: string } | undefined;
}

/** The writer's record sets at one name, by key: present (creation time, undefined if not written yet) or deleted. */
export type PendingAtName = ReadonlyMap<
  ResourceKey,
  { type: RecordTypeName; created: string | undefined } | null
>;

/** Who may write: credentials by name, and each namespace's quota. */
export interface CredentialLookup {
  get(name: string): WriteCredential | undefined;
  quota(namespace: string): NamespaceQuota;
}

export interface WriteCoordinatorOptions {
  store: WriteStore;
  gate: WriteGate;
  credentials: CredentialLookup;
  limits?: Partial<RequestLimits>;
  /**
   * How long a request id is remembered (default 15 minutes: longer than the freshness windows of the
   * front doors — an HMAC timestamp's ±5 minutes, a TSIG fudge of 300 s — so a replay inside them
   * meets its id).
   */
  replayWindowMs?: number;
  /** Request ids remembered per credential at most (default 10,000); the oldest go first. */
  maxRemembered?: number;
  /**
   * Bytes of remembered requests per credential at most (default 4 MiB, `rememberedBytes`); the
   * oldest go first.
   */
  maxRememberedBytes?: number;
  now?: () => number;
  /** Where a store's error text goes: callers get the stable code and what to do, not the text. */
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
}

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
/** Default of `maxRememberedBytes`: thousands of requests of a few hundred changes each. */
export const DEFAULT_MAX_REMEMBERED_BYTES = 4 * 1024 * 1024;
/** Deleted objects remembered until the live view catches up (ADR 0016), at most this many. */
const MAX_DELETED_BEHIND = 4096;

/**
 * The object name of an API-written RRset: readable, and unique per (name, type) by a digest, so one
 * credential's upsert of a name and type always meets the object it wrote before, and a second
 * credential of the namespace meets the first one's object (NOT_OWNER) instead of a second RRset.
 */
export function writtenObjectName(fqdn: Name, type: RecordTypeName): string {
  const key = nameKey(fqdn);
  const digest = createHash('sha256').update(`${key} ${type}`).digest('hex').slice(0, 10);
  const readable = asciiLower(key)
    .replace(/\\./g, '-')
    .replace(/\*/g, 'wildcard')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `${readable ? `${readable}-` : ''}${type.toLowerCase()}-${digest}`;
}

/** SHA-256 of a request's changes, in a fixed field order (a replay is the same changes, not the same bytes). */
export function requestDigest(changes: readonly RecordChange[]): string {
  const canonical = changes.map((c) =>
    c.op === 'upsert'
      ? [
          'upsert',
          c.name,
          c.type,
          c.ttl ?? null,
          c.records,
          // Only when present: digests of requests without annotations stay what they were.
          ...(c.annotations !== undefined ? [sortedEntries(c.annotations)] : []),
        ]
      : ['delete', c.name, c.type],
  );
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

export class WriteCoordinator implements RecordWriter {
  private readonly options: WriteCoordinatorOptions;
  private readonly limits: RequestLimits;
  private readonly now: () => number;
  private readonly rate = new RateLimiter();
  private readonly owned = new Map<ResourceKey, WrittenRecordSet>();
  /** The keys of `owned` by owner name (`nameKey`), of every namespace: what the writer holds at a name. */
  private readonly ownedByName = new Map<string, Set<ResourceKey>>();
  private readonly counts = new Map<string, number>();
  /** Per credential, by id, oldest first. */
  private readonly remembered = new Map<string, Map<string, RememberedRequest>>();
  /** Per credential, the bytes of what `remembered` holds for it (`rememberedBytes`). */
  private readonly rememberedSize = new Map<string, number>();
  private queue: Promise<unknown> = Promise.resolve();
  /** A commit failed: what is held may differ from the store until it is loaded again. */
  private stale = true;
  /**
   * Objects this writer deleted, by the credential that did, until the live view stops showing them
   * (bounded): a request retried after its first attempt was applied finds them still there.
   */
  private readonly deleted = new Map<ResourceKey, string>();

  constructor(options: WriteCoordinatorOptions) {
    this.options = options;
    this.limits = { ...DEFAULT_REQUEST_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
  }

  /** Loads what was written before (and completes a request left in doubt). */
  async start(): Promise<void> {
    await this.serialized(() => this.reload());
  }

  /** The record sets held for `namespace` (for quotas and tests). */
  countOf(namespace: string): number {
    return this.counts.get(namespace) ?? 0;
  }

  rateWait(credential: string): number {
    const cred = this.options.credentials.get(credential);
    if (!cred) return 0; // apply answers UNKNOWN_CREDENTIAL
    const quota = this.options.credentials.quota(cred.namespace);
    return this.rate.peek(cred.namespace, quota.requestsPerSecond, quota.burst, this.now());
  }

  charge(credential: string): void {
    const cred = this.options.credentials.get(credential);
    if (!cred) return;
    const quota = this.options.credentials.quota(cred.namespace);
    this.rate.take(cred.namespace, quota.requestsPerSecond, quota.burst, this.now());
  }

  apply(credential: string, request: WriteRequest): Promise<WriteResult> {
    // Cheap refusals first, outside the queue: an unknown credential or a flood never waits in line.
    const cred = this.options.credentials.get(credential);
    if (!cred)
      return Promise.reject(
        new WriteError(
          'UNKNOWN_CREDENTIAL',
          `credential ${JSON.stringify(credential)} is not configured; add it to the write credentials`,
        ),
      );
    const quota = this.options.credentials.quota(cred.namespace);
    const wait = this.rate.take(cred.namespace, quota.requestsPerSecond, quota.burst, this.now());
    if (wait > 0)
      return Promise.reject(
        new WriteError(
          'RATE_LIMITED',
          `namespace ${cred.namespace} may send ${quota.requestsPerSecond} write request(s) per second (burst ${quota.burst}); ` +
            `retry after ${Number.isFinite(wait) ? wait : 'a quota change'}${Number.isFinite(wait) ? ' s' : ''}, or batch changes into fewer requests`,
          Number.isFinite(wait) ? { retryAfterSeconds: wait } : {},
        ),
      );
    let changes: NormalizedChange[];
    try {
      changes = this.checkShape(request);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.serialized(() => this.applyNow(cred.name, cred.namespace, request, changes));
  }

  private serialized<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => {});
    return run;
  }

  private async reload(): Promise<void> {
    let loaded: Awaited<ReturnType<WriteStore['load']>>;
    try {
      loaded = await this.options.store.load();
    } catch (e) {
      this.options.log?.('warn', 'the store of API-written record sets cannot be read', {
        error: (e as Error).message,
      });
      throw new WriteError(
        'UNAVAILABLE',
        'the store of API-written record sets cannot be read now; retry later with the same request id',
      );
    }
    this.owned.clear();
    this.ownedByName.clear();
    this.counts.clear();
    this.remembered.clear();
    this.rememberedSize.clear();
    for (const w of loaded.recordSets) this.hold(w);
    for (const raw of loaded.remembered) {
      const r = compactRemembered(raw);
      if (r) this.rememberRequest(r);
    }
    this.stale = false;
  }

  private rememberRequest(r: RememberedRequest): void {
    const byId = getOrInsert(this.remembered, r.credential, () => new Map());
    const before = byId.get(r.id);
    if (before) this.forgetRequest(r.credential, r.id);
    byId.set(r.id, r);
    this.rememberedSize.set(r.credential, (this.rememberedSize.get(r.credential) ?? 0) + rememberedBytes(r));
  }

  private forgetRequest(credential: string, id: string): void {
    const byId = this.remembered.get(credential);
    const r = byId?.get(id);
    if (!byId || !r) return;
    byId.delete(id);
    const size = (this.rememberedSize.get(credential) ?? 0) - rememberedBytes(r);
    if (byId.size === 0) {
      this.remembered.delete(credential);
      this.rememberedSize.delete(credential);
    } else this.rememberedSize.set(credential, size);
  }

  /** Bytes of remembered requests held for `credential` (for tests). */
  rememberedBytesOf(credential: string): number {
    return this.rememberedSize.get(credential) ?? 0;
  }

  private hold(w: WrittenRecordSet): void {
    const key = resourceKey(w.resource.metadata);
    const before = this.owned.get(key);
    if (!before) {
      const ns = w.resource.metadata.namespace ?? '';
      this.counts.set(ns, (this.counts.get(ns) ?? 0) + 1);
    } else this.unindexName(key, before);
    this.owned.set(key, w);
    getOrInsert(this.ownedByName, nameKey(w.resource.spec.name), () => new Set()).add(key);
  }

  private unindexName(key: ResourceKey, w: WrittenRecordSet): void {
    const name = nameKey(w.resource.spec.name);
    const keys = this.ownedByName.get(name);
    keys?.delete(key);
    if (keys?.size === 0) this.ownedByName.delete(name);
  }

  held(key: ResourceKey): DNSRecordSet | null | undefined {
    if (this.stale) return undefined;
    const mine = this.owned.get(key);
    if (mine) return mine.resource;
    return this.deleted.has(key) ? null : undefined;
  }

  /** Whether the live object at `key` is one this credential deleted through this writer. */
  private deletedBehind(key: ResourceKey, credential: string, writtenBy: string | undefined): boolean {
    return this.deleted.get(key) === credential && writtenBy === credential;
  }

  private release(key: ResourceKey): void {
    const w = this.owned.get(key);
    if (!w) return;
    this.owned.delete(key);
    this.unindexName(key, w);
    const ns = w.resource.metadata.namespace ?? '';
    const left = (this.counts.get(ns) ?? 1) - 1;
    if (left > 0) this.counts.set(ns, left);
    else this.counts.delete(ns);
  }

  /** Bounds and types, before anything is held: the request may come straight from a parsed body. */
  private checkShape(request: WriteRequest): NormalizedChange[] {
    const { limits } = this;
    if (typeof request !== 'object' || request === null || !Array.isArray(request.changes))
      throw new WriteError('INVALID_CHANGE', 'a write request has a list of changes');
    if (request.changes.length === 0) throw new WriteError('INVALID_CHANGE', 'the request has no changes');
    if (request.changes.length > limits.maxChanges)
      throw new WriteError(
        'REQUEST_TOO_LARGE',
        `the request has ${request.changes.length} changes, more than ${limits.maxChanges}; split it into several requests`,
      );
    if (request.id !== undefined && (typeof request.id !== 'string' || !REQUEST_ID.test(request.id)))
      throw new WriteError('INVALID_CHANGE', 'the request id must be 1-128 printable ASCII characters');
    let bytes = 0;
    let records = 0;
    const out: NormalizedChange[] = [];
    for (const [i, c] of request.changes.entries()) {
      const bad = (message: string) =>
        new WriteError('INVALID_CHANGE', `changes[${i}]: ${message}`, { change: i });
      if (typeof c !== 'object' || c === null) throw bad('expected a change with op, name and type');
      if (c.op !== 'upsert' && c.op !== 'delete') throw bad('op must be "upsert" or "delete"');
      if (c.exclusive !== undefined && typeof c.exclusive !== 'boolean') throw bad('exclusive is a boolean');
      if (c.expect !== undefined && c.expect !== 'absent') {
        const e = c.expect as unknown;
        if (
          typeof e !== 'object' ||
          e === null ||
          typeof (e as RRsetContent).ttl !== 'number' ||
          !Array.isArray((e as RRsetContent).records) ||
          (e as RRsetContent).records.some((r) => typeof r !== 'string')
        )
          throw bad('expect is "absent" or an RRset content {ttl, records}');
        records += (e as RRsetContent).records.length;
        for (const r of (e as RRsetContent).records) bytes += Buffer.byteLength(r);
      }
      if (typeof c.name !== 'string' || c.name.length > 1024)
        throw bad('name must be an absolute domain name');
      if (typeof c.type !== 'string' || !isRecordTypeName(c.type))
        throw bad(`type ${JSON.stringify(c.type)} is not a supported record type`);
      bytes += c.name.length + c.type.length;
      let fqdn: Name;
      try {
        fqdn = parseName(c.name);
      } catch (e) {
        throw bad(
          `name ${JSON.stringify(c.name)}: ${(e as Error).message}; write the absolute name with a trailing dot`,
        );
      }
      if (c.op === 'upsert') {
        if (!Array.isArray(c.records) || c.records.length === 0)
          throw bad('an upsert has a non-empty list of records');
        records += c.records.length;
        if (records > limits.maxRecords)
          throw new WriteError(
            'REQUEST_TOO_LARGE',
            `the request has more than ${limits.maxRecords} records; split it into several requests`,
            { change: i },
          );
        for (const r of c.records) {
          if (typeof r !== 'string') throw bad('records are strings in presentation format');
          bytes += Buffer.byteLength(r);
        }
        if (c.ttl !== undefined && (typeof c.ttl !== 'number' || !Number.isInteger(c.ttl)))
          throw bad('ttl must be an integer number of seconds');
        if (c.annotations !== undefined) {
          const a = c.annotations as unknown;
          if (typeof a !== 'object' || a === null || Array.isArray(a))
            throw bad('annotations is a map of strings');
          for (const [k, v] of Object.entries(a)) {
            if (!k.startsWith(WRITE_ANNOTATION_PREFIX) || !/^[a-z0-9./-]{1,253}$/.test(k))
              throw bad(
                `annotation ${JSON.stringify(k.slice(0, 80))}: only keys under ${WRITE_ANNOTATION_PREFIX} are written`,
              );
            if (typeof v !== 'string') throw bad(`annotation ${k} is a string`);
            bytes += k.length + Buffer.byteLength(v);
          }
        }
      }
      if (bytes > limits.maxBytes)
        throw new WriteError(
          'REQUEST_TOO_LARGE',
          `the request is larger than ${limits.maxBytes} bytes; split it into several requests`,
          { change: i },
        );
      out.push({ change: c, fqdn, index: i });
    }
    return out;
  }

  private async applyNow(
    credential: string,
    namespace: string,
    request: WriteRequest,
    changes: NormalizedChange[],
  ): Promise<WriteResult> {
    if (this.stale) await this.reload();
    const nowMs = this.now();
    const digest = request.id !== undefined ? requestDigest(request.changes) : undefined;
    if (request.id !== undefined) {
      const seen = this.remembered.get(credential)?.get(request.id);
      if (seen && nowMs - Date.parse(seen.at) <= this.replayWindow) {
        if (seen.digest === digest) return replayedResult(seen, changes);
        throw new WriteError(
          'REPLAYED',
          `request id ${JSON.stringify(request.id)} was used at ${seen.at} for other changes; give each request its own id`,
        );
      }
    }
    // What this request writes and deletes, by key: with what the writer holds, the record sets at a
    // name that the zone may not have taken yet (asked when judging CNAME and ALIAS exclusivity).
    const inRequest = new Map<ResourceKey, { type: RecordTypeName; created: string | undefined } | null>();
    for (const { change, fqdn } of changes) {
      const key = resourceKey({ name: writtenObjectName(fqdn, change.type), namespace });
      inRequest.set(
        key,
        change.op === 'delete' ? null : { type: change.type, created: this.owned.get(key)?.created },
      );
    }
    const seen = new Map<string, number>();
    const put: WrittenRecordSet[] = [];
    const remove: ResourceKey[] = [];
    const outcomes: WriteResult['changes'] = [];
    let created = 0;
    let deleted = 0;
    for (const { change, fqdn, index } of changes) {
      const fail = (
        code: 'NOT_OWNER' | 'NOT_DELEGATED' | 'NAME_CONFLICT' | 'INVALID_CHANGE' | 'DUPLICATE_CHANGE',
        message: string,
      ) =>
        new WriteError(code, `changes[${index}] ${change.name} ${change.type}: ${message}`, {
          change: index,
        });
      const dup = `${nameKey(fqdn)} ${change.type}`;
      const first = seen.get(dup);
      if (first !== undefined)
        throw fail(
          'DUPLICATE_CHANGE',
          `changes[${first}] already changes this name and type; one change per RRset and request`,
        );
      seen.set(dup, index);
      const name = writtenObjectName(fqdn, change.type);
      const key = resourceKey({ name, namespace });
      let mine = this.owned.get(key);
      // The live object decides, not only what the writer wrote: a tenant may delete the writer's object
      // and create its own at the same name. Only the operator sets the written-by label, so an
      // unlabelled object there is the tenant's: the writer's copy is gone, and nothing is journalled
      // for it (the write would fail at the API server and hold up every later request).
      const live = this.options.gate.existing(key);
      if (live === undefined) this.deleted.delete(key);
      if (mine && live && live.writtenBy === undefined) {
        this.release(key);
        // Read the store again before the next request, in case the live view was behind.
        this.stale = true;
        mine = undefined;
      }
      const writtenBy = mine?.resource.metadata.labels?.[WRITTEN_BY_LABEL];
      if (mine && writtenBy !== credential)
        throw fail(
          'NOT_OWNER',
          `credential ${writtenBy} wrote this record set; only it can change or delete it`,
        );
      // The live view may be behind this writer: an object it deleted moments ago (and nothing else)
      // still shows there. Deleting it again is then 'absent', and writing it creates it again.
      const gone = !mine && live !== undefined && this.deletedBehind(key, credential, live.writtenBy);
      if (!mine && live && !gone)
        throw fail(
          'NOT_OWNER',
          `DNSRecordSet ${key} exists and was not written through this API${live.writtenBy ? ` (written-by ${live.writtenBy})` : ''}; change it where it is defined`,
        );
      if (change.exclusive === true) {
        // RFC 2136 UPDATE: an RRset another object defines is refused, not stored beside it.
        const other = this.options.gate.otherOwner?.(namespace, fqdn, change.type, key);
        if (other) throw fail('NOT_OWNER', `${other} defines this RRset; change it where it is defined`);
      }
      // Compare-and-set, inside the queue: what this writer holds is what the leader applied last.
      if (change.expect !== undefined && !sameContent(change.expect, mine?.resource.spec, fqdn, change.type))
        throw new WriteError(
          'PRECONDITION_FAILED',
          `changes[${index}] ${change.name} ${change.type}: the RRset changed since the request was made ` +
            `(expected ${describeContent(change.expect)}, holds ${mine ? describeContent(mine.resource.spec) : 'none'}); nothing was applied: read it again and decide anew`,
          { change: index },
        );
      if (change.op === 'delete') {
        if (mine) {
          remove.push(key);
          deleted++;
        }
        outcomes.push({ name: fqdn, type: change.type, object: key, outcome: mine ? 'deleted' : 'absent' });
        continue;
      }
      /** A refusal of the gate: the caller reads `message`; the whole reason (`detail`) goes to the log. */
      const refuse = (code: 'NOT_DELEGATED' | 'NAME_CONFLICT', why: { message: string; detail?: string }) => {
        if (why.detail !== undefined && why.detail !== why.message)
          this.options.log?.('info', `API write refused (${code})`, {
            credential,
            name: fqdn,
            type: change.type,
            reason: why.detail,
          });
        return fail(code, why.message);
      };
      const admitted = this.options.gate.admit(namespace, fqdn, change.type);
      if (!admitted.ok) throw refuse('NOT_DELEGATED', admitted);
      const checked = checkUpsertContent(change, fqdn, namespace, credential, admitted.origin);
      if (!checked.ok) throw fail('INVALID_CHANGE', checked.message);
      // RFC 1034 §3.6.2: an RRset that the name's older CNAME or ALIAS (or, for a CNAME, older data)
      // rules out would be stored and never served: refused now, with what to do.
      const clash = this.options.gate.exclusivity?.(
        namespace,
        fqdn,
        change.type,
        key,
        this.pendingAt(fqdn, namespace, inRequest),
      );
      if (clash) throw refuse('NAME_CONFLICT', clash);
      const resource = checked.resource;
      let outcome: ChangeOutcome;
      if (!mine) {
        outcome = 'created';
        created++;
      } else if (
        JSON.stringify(mine.resource.spec) !== JSON.stringify(resource.spec) ||
        JSON.stringify(mine.resource.metadata.annotations ?? {}) !==
          JSON.stringify(resource.metadata.annotations ?? {})
      )
        outcome = 'updated';
      // Deleted by the namespace's tenant since (their right): the same content creates it again.
      else outcome = live ? 'unchanged' : 'created';
      if (outcome !== 'unchanged')
        put.push({ resource, created: mine?.created ?? new Date(nowMs).toISOString() });
      outcomes.push({ name: fqdn, type: change.type, object: key, outcome });
    }
    const quota = this.options.credentials.quota(namespace);
    const before = this.countOf(namespace);
    const after = before + created - deleted;
    if (after > quota.maxRecordSets && after > before)
      throw new WriteError(
        'QUOTA_EXCEEDED',
        `namespace ${namespace} would hold ${after} API-written record sets, more than its quota of ${quota.maxRecordSets}; ` +
          'delete record sets it no longer needs, or ask for a larger quota',
      );
    const result: WriteResult = { namespace, replayed: false, changes: outcomes };
    const remember: RememberedRequest | undefined =
      request.id !== undefined && digest !== undefined
        ? {
            credential,
            id: request.id,
            digest,
            at: new Date(nowMs).toISOString(),
            namespace,
            outcomes: encodeOutcomes(outcomes.map((o) => o.outcome)),
          }
        : undefined;
    const forget = this.expired(nowMs, remember);
    if (put.length === 0 && remove.length === 0 && !remember && forget.length === 0) return result;
    const batch: WriteBatch = { put, delete: remove, forget, ...(remember ? { remember } : {}) };
    try {
      await this.options.store.commit(batch);
    } catch (e) {
      this.stale = true;
      this.options.log?.('warn', 'an API write could not be made durable', { error: (e as Error).message });
      throw new WriteError(
        'UNAVAILABLE',
        'the request could not be made durable now; it is applied whole or not at all: retry with the same request id to learn which',
      );
    }
    for (const w of put) {
      this.hold(w);
      this.deleted.delete(resourceKey(w.resource.metadata));
    }
    for (const key of remove) {
      this.release(key);
      this.deleted.set(key, credential);
      if (this.deleted.size > MAX_DELETED_BEHIND) this.deleted.delete(this.deleted.keys().next().value!);
    }
    for (const f of forget) this.forgetRequest(f.credential, f.id);
    if (remember) this.rememberRequest(remember);
    return result;
  }

  /**
   * The record sets at `fqdn` that the zone may not have taken yet, by key: what this writer holds
   * there (of every namespace, `ownedByName`), what it deleted there for `namespace` (its objects are
   * named by name and type, `writtenObjectName`, so each is looked up), and over both the request's
   * own changes (`request`).
   */
  private pendingAt(
    fqdn: Name,
    namespace: string,
    request: ReadonlyMap<ResourceKey, { type: RecordTypeName; created: string | undefined } | null>,
  ): PendingAtName {
    const out = new Map<ResourceKey, { type: RecordTypeName; created: string | undefined } | null>();
    for (const key of this.ownedByName.get(nameKey(fqdn)) ?? []) {
      const w = this.owned.get(key)!;
      out.set(key, { type: w.resource.spec.type, created: w.created });
    }
    for (const type of RECORD_TYPES) {
      const key = resourceKey({ name: writtenObjectName(fqdn, type), namespace });
      const mine = request.get(key);
      if (mine !== undefined) out.set(key, mine);
      else if (!out.has(key) && this.deleted.has(key)) out.set(key, null);
    }
    return out;
  }

  private get replayWindow(): number {
    return this.options.replayWindowMs ?? 15 * 60_000;
  }

  /**
   * Remembered ids past the window, and beyond the per-credential caps of count and bytes with
   * `adding` remembered too (oldest first).
   */
  private expired(
    nowMs: number,
    adding: RememberedRequest | undefined,
  ): { credential: string; id: string }[] {
    const cap = this.options.maxRemembered ?? 10_000;
    const maxBytes = this.options.maxRememberedBytes ?? DEFAULT_MAX_REMEMBERED_BYTES;
    const out: { credential: string; id: string }[] = [];
    for (const [credential, byId] of this.remembered) {
      const mine = adding?.credential === credential;
      let over = byId.size - cap + (mine ? 1 : 0);
      let bytes = (this.rememberedSize.get(credential) ?? 0) + (mine ? rememberedBytes(adding) : 0);
      for (const [id, r] of byId) {
        if (over > 0 || bytes > maxBytes || nowMs - Date.parse(r.at) > this.replayWindow) {
          out.push({ credential, id });
          over--;
          bytes -= rememberedBytes(r);
        } else break;
      }
    }
    return out;
  }
}

/** Whether the held RRset (`spec`, undefined when none) has the content `expect`; records compared as sets of RDATA. */
/**
 * Whether an upsert's content makes a valid record set (name, TTL within bounds, records parsed in
 * the zone of `origin`), as the writer judges it: front doors ask before they write (ExternalDNS's
 * `/adjustendpoints`), so what would be refused is refused at once and never costs a write request.
 */
export function checkUpsertContent(
  change: Extract<RecordChange, { op: 'upsert' }>,
  fqdn: Name,
  namespace: string,
  credential: string,
  origin: Name,
): { ok: true; resource: DNSRecordSet } | { ok: false; message: string } {
  const validated = validateResource({
    apiVersion: API_VERSION,
    kind: 'DNSRecordSet',
    metadata: {
      name: writtenObjectName(fqdn, change.type),
      namespace,
      labels: { [WRITTEN_BY_LABEL]: credential },
      ...(change.annotations !== undefined && Object.keys(change.annotations).length > 0
        ? { annotations: Object.fromEntries(sortedEntries(change.annotations)) }
        : {}),
    },
    spec: {
      name: fqdn,
      type: change.type,
      ...(change.ttl !== undefined ? { ttl: change.ttl } : {}),
      records: change.records,
    },
  });
  if (!validated.ok)
    return {
      ok: false,
      message: validated.problems.map((p) => `${p.path.replace(/^spec\./, '')}: ${p.message}`).join('; '),
    };
  const resource = validated.resource as DNSRecordSet;
  const parsed = parseRecordSetRecords(resource, origin);
  if (!parsed.ok) return { ok: false, message: parsed.message.replace(/^spec\./, '') };
  return { ok: true, resource };
}

function sameContent(
  expect: RRsetContent | 'absent',
  spec: { ttl?: number; records: string[] } | undefined,
  fqdn: Name,
  type: RecordTypeName,
): boolean {
  if (expect === 'absent' || spec === undefined) return expect === 'absent' && spec === undefined;
  // A record set written without a TTL takes its zone's default, which the writer does not know.
  if (spec.ttl !== undefined && spec.ttl !== expect.ttl) return false;
  const held = new Set(spec.records.map((r) => canonicalRecord(type, r, fqdn)));
  const wanted = new Set(expect.records.map((r) => canonicalRecord(type, r, fqdn)));
  return held.size === wanted.size && [...wanted].every((r) => held.has(r));
}

/**
 * A record as records compare (`recordIdentity`: names without regard to case, text as written), or
 * the text as given when it does not parse (the prefixes keep the two apart).
 */
function canonicalRecord(type: RecordTypeName, text: string, origin: Name): string {
  try {
    return `=${recordIdentity(parseRdata(type, text, origin))}`;
  } catch {
    return `?${text}`;
  }
}

function sortedEntries(map: Record<string, string>): [string, string][] {
  return Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function describeContent(c: RRsetContent | 'absent' | { ttl?: number; records: string[] }): string {
  if (c === 'absent') return 'none';
  return `TTL ${c.ttl ?? 'default'} ${JSON.stringify(c.records)}`;
}

interface NormalizedChange {
  change: RecordChange;
  fqdn: Name;
  index: number;
}

/**
 * The answer to a replay of `seen`, made again from the request's changes (the same, as the digest
 * says) and the outcomes remembered: what the first answer said, marked replayed.
 */
function replayedResult(
  seen: RememberedRequest,
  changes: readonly { change: RecordChange; fqdn: Name }[],
): WriteResult {
  const outcomes = decodeOutcomes(seen.outcomes);
  if (!outcomes || outcomes.length !== changes.length)
    throw new WriteError(
      'REPLAYED',
      `request id ${JSON.stringify(seen.id)} was applied at ${seen.at} and its outcome is no longer known; give each request its own id`,
    );
  return {
    namespace: seen.namespace,
    replayed: true,
    changes: changes.map(({ change, fqdn }, i) => ({
      name: fqdn,
      type: change.type,
      object: resourceKey({ name: writtenObjectName(fqdn, change.type), namespace: seen.namespace }),
      outcome: outcomes[i]!,
    })),
  };
}
