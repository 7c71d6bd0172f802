/**
 * The operator's durable serial state (ADR 0014): one ConfigMap per zone origin in the operator's
 * namespace, written before a backend is given a serial above what it records. Keyed by origin, not by
 * DNSZone (ADR 0005): a zone deleted and created again, or taken over by another DNSZone of the same
 * domain, continues above every serial used before. `zonekeeper server` replicas never read these
 * records — they serve only what DNSZone.status confirms (ADR 0009) — so a reserved serial is never
 * published by them.
 *
 * A write reserves a block of serials (`block`, default 10): the record holds the highest serial that
 * may have been used, so further changes within the block cost no API write. A new leader loads the
 * records and gives any content a serial above the recorded one; only a record saved exactly for one
 * serial (block 1, or released on a graceful shutdown) carries that content's hash, and then unchanged
 * content keeps its serial. Every write is conditional on the record's resourceVersion: a writer that
 * finds a newer record re-reads it, and a serial at or below it is refused (SerialTakenError), so two
 * operators can never both use one serial.
 */
import { createHash } from 'node:crypto';
import { type SerialStore, SerialTakenError, type ZoneSerialState } from '../../control/serial-store.ts';
import { type Name, nameKey } from '../../dns/name.ts';
import { serialAdd, serialGreater } from '../../zones/serial.ts';
import { type ConfigMapRecord, isStatus, type KubeApi } from './kube-api.ts';

/** Label of every serial record (the operator lists them by it). */
export const SERIAL_LABEL = 'dns.zonekeeper.dev/zone-serial';
export const SERIAL_RECORD_PREFIX = 'zonekeeper-serial-';
/** Serials reserved per write by default. */
export const DEFAULT_SERIAL_BLOCK = 10;
export const MAX_SERIAL_BLOCK = 1000;
const MAX_CONFLICT_RETRIES = 5;
/** Record writes in flight at once when releasing reservations on shutdown. */
const RELEASE_CONCURRENCY = 16;

/** The ConfigMap name of an origin's serial record: a digest, since names allow fewer characters than DNS. */
export function serialRecordName(origin: Name): string {
  return SERIAL_RECORD_PREFIX + createHash('sha256').update(nameKey(origin)).digest('hex').slice(0, 32);
}

export type SerialRecordApi = Pick<
  KubeApi,
  'listConfigMaps' | 'readConfigMap' | 'createConfigMap' | 'replaceConfigMap'
>;

export interface KubernetesSerialStoreOptions {
  api: SerialRecordApi;
  /** The operator's namespace. */
  namespace: string;
  /** Serials reserved per write (1 to 1000, default 10); 1 records each serial with its content hash. */
  block?: number;
  /** Recorded in each write (`writer`), to tell which replica reserved what. */
  identity?: string;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /** Called for every record write: ok, conflict (re-read and decided again), error, released. */
  onWrite?: (result: 'ok' | 'conflict' | 'error' | 'released') => void;
}

interface Entry {
  /** The origin (nameKey). */
  origin: string;
  name: string;
  resourceVersion?: string;
  /** What the record holds: the highest serial that may have been used; its hash when saved exactly. */
  recorded: ZoneSerialState;
  /** The first serial of the block this process reserved (the record is ours up to `recorded.serial`). */
  from?: number;
  /** The highest serial this process saved under the record, with its content hash. */
  last?: ZoneSerialState;
}

/** A serial record that cannot be read: the operator does not guess (a guess could reuse a serial). */
export class SerialRecordError extends Error {
  override readonly name = 'SerialRecordError';
}

export class KubernetesSerialStore implements SerialStore {
  private readonly options: KubernetesSerialStoreOptions;
  private readonly block: number;
  private entries = new Map<string, Entry>();
  /** Per origin: the tail of its saves, run one at a time. */
  private readonly queues = new Map<string, Promise<void>>();
  private closed = false;

  constructor(options: KubernetesSerialStoreOptions) {
    const block = options.block ?? DEFAULT_SERIAL_BLOCK;
    if (!Number.isInteger(block) || block < 1 || block > MAX_SERIAL_BLOCK)
      throw new RangeError(`serial block ${block}: give a whole number from 1 to ${MAX_SERIAL_BLOCK}`);
    this.options = options;
    this.block = block;
  }

  /** Reads every serial record; rejects (naming the record) when one cannot be used. */
  async load(): Promise<void> {
    const { namespace } = this.options;
    const records = await this.options.api.listConfigMaps(namespace, SERIAL_LABEL).catch((e: unknown) => {
      throw this.explain(e, 'list', undefined);
    });
    const entries = new Map<string, Entry>();
    for (const record of records) {
      const { id, state } = parseRecord(record, namespace);
      entries.set(id, {
        origin: id,
        name: record.name,
        ...(record.resourceVersion ? { resourceVersion: record.resourceVersion } : {}),
        recorded: state,
      });
    }
    this.entries = entries;
    this.closed = false;
  }

  /** How many origins have a record. */
  get size(): number {
    return this.entries.size;
  }

  get(origin: Name): ZoneSerialState | undefined {
    const entry = this.entries.get(nameKey(origin));
    if (!entry) return undefined;
    return { ...(entry.last ?? entry.recorded) };
  }

  set(origin: Name, state: ZoneSerialState): Promise<void> {
    const id = nameKey(origin);
    const before = this.queues.get(id) ?? Promise.resolve();
    const run = before.then(() => this.save(id, origin, state));
    const tail = run.then(
      () => {},
      () => {},
    );
    this.queues.set(id, tail);
    void tail.then(() => {
      if (this.queues.get(id) === tail) this.queues.delete(id);
    });
    return run;
  }

  /**
   * On a graceful shutdown (after the last reconcile): no more saves, and each record this process
   * reserved ahead is lowered to the serial it last used, with that content's hash, so the next leader
   * keeps the serial of unchanged content and continues right above it. Records another writer moved
   * on are left alone.
   */
  async release(): Promise<void> {
    this.closed = true;
    await Promise.all(this.queues.values());
    const pending = [...this.entries.values()].filter(
      (e) =>
        e.from !== undefined &&
        e.last !== undefined &&
        (e.last.serial !== e.recorded.serial || e.last.hash !== e.recorded.hash),
    );
    const next = async (): Promise<void> => {
      for (let entry = pending.shift(); entry; entry = pending.shift()) {
        const last = entry.last!;
        const origin = entry.origin;
        try {
          const written = await this.options.api.replaceConfigMap(
            this.options.namespace,
            this.record(entry.name, origin, last, entry.resourceVersion),
          );
          entry.recorded = { ...last };
          if (written.resourceVersion) entry.resourceVersion = written.resourceVersion;
          this.options.onWrite?.('released');
        } catch (e) {
          this.options.onWrite?.(isStatus(e, 409) ? 'conflict' : 'error');
          this.options.log?.('warn', `zone ${origin}: its serial reservation was not released`, {
            record: `${this.options.namespace}/${entry.name}`,
            error: e instanceof Error ? e.message : String(e),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: RELEASE_CONCURRENCY }, next));
  }

  /** Whether `state` may be used without a write: inside the block this process reserved, or recorded exactly. */
  private covers(entry: Entry, state: ZoneSerialState): boolean {
    const r = entry.recorded;
    if (state.serial === r.serial && r.hash !== undefined && state.hash === r.hash) return true;
    if (entry.from === undefined) return false;
    return !serialGreater(entry.from, state.serial) && !serialGreater(state.serial, r.serial);
  }

  private use(entry: Entry, state: ZoneSerialState): void {
    if (!entry.last || !serialGreater(entry.last.serial, state.serial)) entry.last = { ...state };
  }

  private async save(id: string, origin: Name, state: ZoneSerialState): Promise<void> {
    if (this.closed) throw new Error('the operator is shutting down: no new serials');
    let entry = this.entries.get(id);
    if (entry && this.covers(entry, state)) {
      this.use(entry, state);
      return;
    }
    // At or below the record and not in a block of ours: it may be in use already (and a write would
    // lower the record).
    if (entry && !serialGreater(state.serial, entry.recorded.serial))
      throw new SerialTakenError(
        `serial ${state.serial} of ${id} is at or below serial ${entry.recorded.serial} recorded in ConfigMap ` +
          `${this.options.namespace}/${entry.name}; a serial above it is chosen`,
      );
    const recorded: ZoneSerialState =
      this.block === 1
        ? { serial: state.serial, ...(state.hash !== undefined ? { hash: state.hash } : {}) }
        : { serial: serialAdd(state.serial, this.block - 1) };
    const name = entry?.name ?? serialRecordName(origin);
    const { api, namespace } = this.options;
    for (let attempt = 0; ; attempt++) {
      const body = this.record(name, id, recorded, entry?.resourceVersion);
      try {
        const written = entry?.resourceVersion
          ? await api.replaceConfigMap(namespace, body)
          : await api.createConfigMap(namespace, body);
        const fresh: Entry = {
          origin: id,
          name,
          ...(written.resourceVersion ? { resourceVersion: written.resourceVersion } : {}),
          recorded,
          from: state.serial,
        };
        this.use(fresh, state);
        this.entries.set(id, fresh);
        this.options.onWrite?.('ok');
        return;
      } catch (e) {
        // 409: someone else created or changed the record; 404: it was deleted. Read it and decide again.
        if (!(isStatus(e, 409) || isStatus(e, 404)) || attempt >= MAX_CONFLICT_RETRIES) {
          this.options.onWrite?.('error');
          throw this.explain(e, 'write', name, id);
        }
        this.options.onWrite?.('conflict');
      }
      const current = await api.readConfigMap(namespace, name).catch((e: unknown) => {
        throw this.explain(e, 'read', name, id);
      });
      if (!current) {
        entry = undefined; // deleted: create it again
        this.entries.delete(id);
        continue;
      }
      const parsed = parseRecord(current, namespace);
      if (parsed.id !== id)
        throw new SerialRecordError(
          `ConfigMap ${namespace}/${name} holds the serial of ${parsed.id}, not ${id}; delete it`,
        );
      entry = {
        origin: id,
        name,
        ...(current.resourceVersion ? { resourceVersion: current.resourceVersion } : {}),
        recorded: parsed.state,
      };
      this.entries.set(id, entry);
      if (this.covers(entry, state)) {
        this.use(entry, state);
        return;
      }
      if (!serialGreater(state.serial, parsed.state.serial)) {
        this.options.log?.('warn', `zone ${id}: serial ${state.serial} was taken by another operator`, {
          recorded: parsed.state.serial,
          writer: current.data.writer,
        });
        throw new SerialTakenError(
          `serial ${state.serial} of ${id} is at or below serial ${parsed.state.serial} recorded by another ` +
            `operator${current.data.writer ? ` (${current.data.writer})` : ''} in ConfigMap ${namespace}/${name}; ` +
            'a serial above it is chosen',
        );
      }
    }
  }

  private record(
    name: string,
    origin: string,
    state: ZoneSerialState,
    resourceVersion?: string,
  ): ConfigMapRecord {
    return {
      name,
      ...(resourceVersion ? { resourceVersion } : {}),
      labels: { [SERIAL_LABEL]: 'true', 'app.kubernetes.io/managed-by': 'zonekeeper' },
      data: {
        origin,
        serial: String(state.serial),
        ...(state.hash !== undefined ? { hash: state.hash } : {}),
        ...(this.options.identity ? { writer: this.options.identity } : {}),
      },
    };
  }

  private explain(e: unknown, what: 'list' | 'read' | 'write', name?: string, origin?: string): Error {
    const { namespace } = this.options;
    const target = name
      ? `ConfigMap ${namespace}/${name}`
      : `the serial ConfigMaps in namespace ${namespace}`;
    const of = origin ? ` (the serial of ${origin})` : '';
    if (isStatus(e, 403))
      return new Error(
        `the operator may not ${what} ${target}${of}: grant it get, list, create and update on configmaps in ` +
          `namespace ${namespace} (the chart's operator Role does)`,
        { cause: e },
      );
    const message = e instanceof Error ? e.message : String(e);
    return new Error(`could not ${what} ${target}${of}: ${message}`, { cause: e });
  }
}

/** The origin (nameKey) and serial state of a record; throws SerialRecordError naming what is wrong. */
function parseRecord(record: ConfigMapRecord, namespace: string): { id: string; state: ZoneSerialState } {
  const where = `ConfigMap ${namespace}/${record.name}`;
  const { origin, serial, hash } = record.data;
  const fix = 'fix it, or delete it to let the zone continue above the serial in its DNSZone status';
  if (!origin) throw new SerialRecordError(`${where} has no origin; ${fix}`);
  if (serialRecordName(origin) !== record.name)
    throw new SerialRecordError(`${where} does not belong to origin ${JSON.stringify(origin)}; ${fix}`);
  const n = /^\d{1,10}$/.test(serial ?? '') ? Number(serial) : Number.NaN;
  if (!(n >= 0 && n <= 0xffffffff))
    throw new SerialRecordError(
      `${where}: serial ${JSON.stringify(serial ?? '')} is not a serial number; ${fix}`,
    );
  return {
    id: nameKey(origin),
    state: { serial: n, ...(hash ? { hash } : {}) },
  };
}
