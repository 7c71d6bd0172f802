import { Worker } from 'node:worker_threads';
import type { Name } from '../../dns/name.ts';
import type { Registry } from '../../metrics/registry.ts';
import { type AnswerSettings, answerSettings } from '../../server/answer-settings.ts';
import { ContentSource, ZoneImageBuilder } from '../../server/image/image-builder.ts';
import { ImageZone } from '../../server/image/image-zone.ts';
import { journalWire } from '../../server/image/journal-wire.ts';
import { SelectionError } from '../../server/selection/policy.ts';
import type { SelectionBinding, SelectionSink } from '../../server/selection/selection-table.ts';
import { processHealth } from '../../server/selection/steering/health-view.ts';
import type { SteeringBinder } from '../../server/selection/steering/steering-binder.ts';
import type { Notifier } from '../../server/transfer/notifier.ts';
import type { UpdateResponder } from '../../server/update/update-handler.ts';
import type { DnsWorkerConfig, FromWorker, ToWorker } from '../../server/worker-protocol.ts';
import {
  DNSSEC_TYPES,
  imageCannotHold,
  isDnssecType,
  rrsetData,
  ZoneApplier,
} from '../../server/zone-apply.ts';
import { ZoneSnapshot } from '../../server/zone-snapshot.ts';
import type { ServedZone, ZoneTable } from '../../server/zone-table.ts';
import type { SoaFields } from '../../zones/soa.ts';
import {
  type ApplyResult,
  type Backend,
  type BackendCapabilities,
  BackendError,
  type ProgrammedZone,
} from '../backend.ts';
import { BuiltinBackend, type BuiltinBackendOptions } from './builtin-backend.ts';

/** The file DNS threads run (src/server/dns-worker-main.ts). */
const DNS_WORKER_ENTRY = new URL('../../server/dns-worker-main.ts', import.meta.url);

/**
 * The young generation of every DNS thread, in MiB (`resourceLimits.maxYoungGenerationSizeMb`; in
 * Node 24 the new space committed never exceeds it). Without a cap a thread's new space grows to
 * 32 MiB while answering and stays committed (resident) while it idles; answers allocate little
 * that survives a scavenge, so a smaller nursery costs no measurable CPU per answer
 * (docs/benchmarks.md, "the DNS threads' young generation").
 */
export const DNS_YOUNG_GENERATION_MB = 8;
/** Overrides DNS_YOUNG_GENERATION_MB (MiB; 0 leaves V8's default). */
export const DNS_YOUNG_GENERATION_ENV = 'ZONEKEEPER_DNS_YOUNG_MB';

/** The young-generation cap of DNS threads: the option, else the environment, else the default (0: none). */
export function dnsYoungGenerationMb(option?: number, env: NodeJS.ProcessEnv = process.env): number {
  if (option !== undefined) return option;
  const text = env[DNS_YOUNG_GENERATION_ENV];
  if (text === undefined || text === '') return DNS_YOUNG_GENERATION_MB;
  const mb = Number(text);
  if (!Number.isInteger(mb) || mb < 0)
    throw Object.assign(
      new Error(
        `${DNS_YOUNG_GENERATION_ENV}=${JSON.stringify(text)}: give a whole number of MiB (0: V8's default)`,
      ),
      { code: 'DNS_YOUNG_MB_INVALID' },
    );
  return mb;
}

export interface WorkerPoolOptions {
  /** DNS threads (the main thread answers no DNS once they run). */
  workers: number;
  /** The module DNS threads run (tests that register their own selection policies give theirs). */
  entry?: URL;
  config: DnsWorkerConfig;
  registry?: Registry;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** How long applyZone waits for every worker to confirm a serial. */
  ackTimeoutMs?: number;
  /** ALIAS record sets the DNS threads cannot answer (see BuiltinBackendOptions). */
  aliasCheck?: BuiltinBackendOptions['aliasCheck'];
  /** Answers the RFC 2136 UPDATEs workers forward (the main thread's handler); without it they go unanswered. */
  updates?: UpdateResponder;
  /** Steered RRsets become bindings in every DNS thread (see BuiltinBackendOptions.steering). */
  steering?: SteeringBinder;
  /** Zones to reconcile again (see BuiltinBackendOptions.recheck). */
  recheck?: BuiltinBackendOptions['recheck'];
  /** Signs zones (see BuiltinBackendOptions.dnssecKeys); the signed zones go to every DNS thread whole. */
  dnssecKeys?: BuiltinBackendOptions['dnssecKeys'];
  signingThread?: BuiltinBackendOptions['signingThread'];
  /** Young generation of each DNS thread in MiB (default: dnsYoungGenerationMb(); 0: V8's default). */
  youngGenerationMb?: number;
}

interface PoolWorker {
  worker: Worker;
  /** The worker's thread id (names it in logs and for tests). */
  id: number;
  /** Exited: nothing is posted to it any more. */
  exited: boolean;
  /** Receives every change (set at the worker's `ready`, before it listens). */
  ready: boolean;
  /** Bound to the shared port (after every zone was sent to it). */
  listening: boolean;
  served: Map<string, number | undefined>;
  /** Per zone: the generation of selection bindings the worker confirmed, and its refusal if any. */
  selections: Map<string, { generation: number; error?: string }>;
}

/**
 * The built-in server spread over DNS threads (`worker_threads`, ADR 0020 §3): each thread binds the
 * DNS port with SO_REUSEPORT and answers; the main thread runs the control plane and this backend,
 * answers no DNS, and posts every change to the threads. A zone image is built once per serial as a
 * `SharedArrayBuffer`, posted to every thread (one copy in the process) and never written again; the
 * main thread's table holds the same image (an `ImageZone`) in place of its objects. A change goes as
 * an overlay of the names it changed over that base (ADR 0020 §4), built once as a `SharedArrayBuffer`
 * too, whatever the zone's size; the overlay is merged into a new base once it passes its share of
 * the base. Signed zones go to threads as objects and patches, and stay objects here.
 *
 * A serial counts as served only when every live thread has confirmed it (ADR 0014); a thread that
 * misses a patch's base serial, or holds another base than an overlay's, asks for the whole zone
 * (`need-zone`); a thread that dies is replaced and given each zone's current base and overlay
 * (posted again, not rebuilt).
 */
export class WorkerPoolBackend implements Backend, SelectionSink {
  readonly name = 'builtin';
  readonly capabilities: BackendCapabilities;
  /** Applies build and hand over images within this process: every zone at once. */
  readonly applyConcurrency = Number.POSITIVE_INFINITY;
  private readonly local: BuiltinBackend;
  private readonly table: ZoneTable<ServedZone>;
  /** Turns the table's image back into objects where a zone gains DNSSEC material (`unpackBefore`). */
  private readonly zones: ZoneApplier;
  private readonly options: WorkerPoolOptions;
  private readonly pool = new Map<number, PoolWorker>();
  private readonly waiters = new Set<() => void>();
  /**
   * Waiters on what DNS threads serve of one zone (its key): an `applied` message, which changes only
   * its own zone, checks these alone (with 32 zones in flight at start, every acknowledgement checked
   * every zone's waiter); every other event checks them all.
   */
  private readonly zoneWaiters = new Map<string, Set<() => void>>();
  private stopping = false;
  /** Per zone: the generation of its current selection bindings (counted over all zones). */
  private readonly selectionGenerations = new Map<string, number>();
  private selectionGeneration = 0;
  /**
   * Each zone's base image and overlay as `SharedArrayBuffer`s, built once per serial for every
   * thread (ADR 0020 §4); the table holds an `ImageZone` over the same ones.
   */
  private readonly images = new ZoneImageBuilder({ shared: true });

  constructor(table: ZoneTable<ServedZone>, options: WorkerPoolOptions, notifier?: Notifier) {
    this.table = table;
    this.zones = new ZoneApplier(table);
    this.local = new BuiltinBackend(table, notifier, {
      ...(options.aliasCheck ? { aliasCheck: options.aliasCheck } : {}),
      ...(options.steering ? { steering: options.steering, selectionSink: this } : {}),
      ...(options.recheck ? { recheck: options.recheck } : {}),
      ...(options.dnssecKeys ? { dnssecKeys: options.dnssecKeys } : {}),
      ...(options.signingThread ? { signingThread: options.signingThread } : {}),
      images: this.images,
    });
    this.capabilities = this.local.capabilities;
    this.options = options;
  }

  /**
   * The pool for a DNS listener already bound at `address`: its workers join that port and answer
   * like it (identity, version, ALIAS resolver, response cache size).
   */
  static forListener(
    table: ZoneTable<ServedZone>,
    address: { host: string; port: number },
    options: {
      workers: number;
      entry?: URL;
      registry?: Registry;
      log?: WorkerPoolOptions['log'];
      aliasCheck?: WorkerPoolOptions['aliasCheck'];
      updates?: UpdateResponder;
      steering?: SteeringBinder;
      recheck?: WorkerPoolOptions['recheck'];
      dnssecKeys?: WorkerPoolOptions['dnssecKeys'];
      signingThread?: WorkerPoolOptions['signingThread'];
    } & AnswerSettings,
    notifier?: Notifier,
  ): WorkerPoolBackend {
    const host = address.host.includes(':') ? `[${address.host}]` : address.host;
    return new WorkerPoolBackend(
      table,
      {
        workers: options.workers,
        ...(options.entry ? { entry: options.entry } : {}),
        ...(options.registry ? { registry: options.registry } : {}),
        ...(options.log ? { log: options.log } : {}),
        ...(options.aliasCheck ? { aliasCheck: options.aliasCheck } : {}),
        ...(options.updates ? { updates: options.updates } : {}),
        ...(options.steering ? { steering: options.steering } : {}),
        ...(options.recheck ? { recheck: options.recheck } : {}),
        ...(options.dnssecKeys ? { dnssecKeys: options.dnssecKeys } : {}),
        ...(options.signingThread ? { signingThread: options.signingThread } : {}),
        config: {
          listen: `${host}:${address.port}`,
          ...answerSettings(options),
        },
      },
      notifier,
    );
  }

  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.options.workers }, () => this.fork()));
  }

  /** Ends every DNS thread (their sockets close with them). */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.pool.values()].map(({ worker }) => worker.terminate()));
  }

  async applyZone(zone: ProgrammedZone): Promise<ApplyResult | undefined> {
    const current = this.table.get(zone.origin);
    const before = current?.serial;
    const key = zone.origin.toLowerCase();
    const delta = zone.delta;
    // A zone held as an image that gains DNSSEC material is made into objects first, and patched in
    // place from then on; other changes to an image become an overlay (`ZoneApplier.patchImage`).
    if (current instanceof ImageZone && delta?.upserts.some((r) => isDnssecType(r.type))) {
      this.zones.unpackBefore(zone.origin, delta, zone.rrsets());
      this.images.forget(zone.origin);
    }
    const result = await this.local.applyZone(zone);
    // Zones go to threads as zone images built once for all of them (ADR 0020): a change as an
    // overlay of the names it changed over the base the threads hold (step 5), small whatever the
    // zone's size; the zone whole when the overlay cannot be made (no base at the change's start,
    // a change too large alone). Zones carrying DNSSEC material go as objects, patched in place.
    const applied = this.table.get(zone.origin);
    // Served from an image: the table holds the image in place of the objects the apply made.
    const served = applied === undefined ? undefined : this.asImage(applied);
    const moved =
      delta !== undefined && served !== undefined && before === delta.fromSerial && served.serial !== before;
    const overlay =
      moved &&
      served instanceof ImageZone &&
      current instanceof ImageZone &&
      served.image === current.image &&
      served.overlay !== undefined
        ? served.overlay
        : undefined;
    // A signed zone goes whole (its signatures cover the serial), as it is signed per serial.
    const patchable = moved && served instanceof ZoneSnapshot && !served.dnssec;
    for (const member of this.pool.values()) {
      if (!member.ready) continue;
      const held = member.served.get(key);
      if (overlay !== undefined && held === delta!.fromSerial) {
        const changes = served!.journal.since(delta!.fromSerial) ?? [];
        this.send(member, {
          t: 'overlay',
          origin: zone.origin,
          serial: zone.serial,
          // The SharedArrayBuffer itself: every thread reads this one copy.
          overlay: overlay.buffer,
          ...(zone.transfers ? { transfers: zone.transfers } : {}),
          ...(changes.length > 0 ? { changes: changes.map(journalWire) } : {}),
        });
      } else if (patchable && held === delta!.fromSerial) {
        this.send(member, {
          t: 'patch',
          origin: zone.origin,
          soa: zone.soa,
          serial: zone.serial,
          fromSerial: delta!.fromSerial,
          upserts: [...delta!.upserts],
          deletes: [...delta!.deletes],
          ...(zone.transfers ? { transfers: zone.transfers } : {}),
        });
      } else if (held !== zone.serial) {
        this.sendZone(member, zone.origin);
      }
    }
    await this.settled(() => this.allServe(key, zone.serial), key);
    // The overlay passed its share of the base: merge them into a new base now that the change is
    // served, so that no change waits for a whole build (the same content, at the same serial).
    if (overlay !== undefined && this.images.needsMerge(zone.origin)) this.merge(zone);
    return result;
  }

  /**
   * Resolves only when every live worker confirmed it no longer serves the zone: a worker that does
   * not answer within the ack timeout fails the deletion (BackendUnreachable), so a finalizer waiting
   * on it holds and the deletion is tried again.
   */
  /** The local backend's key store answers (the workers serve what the local backend signed). */
  signingTurnedOff(origin: Name): Promise<boolean> {
    return this.local.signingTurnedOff(origin);
  }

  async deleteZone(origin: Name): Promise<void> {
    await this.local.deleteZone(origin);
    this.images.forget(origin);
    for (const member of this.pool.values()) if (member.ready) this.send(member, { t: 'delete', origin });
    const key = origin.toLowerCase();
    await this.settled(() => this.allServe(key, undefined), key);
    const holding = [...this.pool.values()]
      .filter((m) => m.ready && m.served.get(origin.toLowerCase()) !== undefined)
      .map((m) => m.id);
    if (holding.length > 0) {
      throw new BackendError(
        'BackendUnreachable',
        `DNS thread ${holding.join(', ')} did not confirm deleting zone ${origin} within ${this.options.ackTimeoutMs ?? 5000} ms; retrying`,
      );
    }
  }

  /** The thread ids of the DNS threads serving now (started and not exited). */
  workerIds(): number[] {
    return [...this.pool.values()].filter((m) => m.ready && !m.exited).map((m) => m.id);
  }

  /** Ends one DNS thread as a crash would (tests): the pool starts another in its place. */
  async terminateWorker(id: number): Promise<void> {
    await this.pool.get(id)?.worker.terminate();
  }

  /**
   * Blocks one DNS thread (tests): it answers and confirms nothing, as a thread stuck in a long
   * computation would, until the function returned is called.
   */
  pauseWorker(id: number): () => void {
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const member = this.pool.get(id);
    if (member) this.send(member, { t: 'pause', flag });
    return () => {
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
    };
  }

  /**
   * Sets a zone's selection bindings in this process (where they are checked: a bad one throws and
   * nothing is sent) and in every DNS worker, and resolves once every live worker answers with them.
   * A worker that refuses them (it would know other policies than this process) is an error.
   */
  async setSelections(origin: Name, bindings: readonly SelectionBinding[]): Promise<void> {
    this.table.setSelections(origin, bindings);
    const key = origin.toLowerCase();
    const generation = ++this.selectionGeneration;
    this.selectionGenerations.set(key, generation);
    for (const member of this.pool.values()) if (member.ready) this.sendSelections(member, origin);
    const confirmed = (m: PoolWorker) => (m.selections.get(key)?.generation ?? 0) >= generation;
    await this.settled(() => [...this.pool.values()].every((m) => !m.ready || confirmed(m)));
    for (const member of this.pool.values()) {
      const state = member.selections.get(key);
      if (member.ready && !confirmed(member)) {
        throw new SelectionError(
          'SELECTION_WORKER_TIMEOUT',
          `DNS thread ${member.id} did not confirm the selections of ${origin} in time`,
        );
      }
      if (state?.generation === generation && state.error !== undefined) {
        throw new SelectionError(
          'SELECTION_WORKER_REFUSED',
          `DNS thread ${member.id} refused the selections of ${origin}: ${state.error}`,
        );
      }
    }
  }

  /**
   * The serial the main thread serves when every DNS thread confirmed serving exactly that serial;
   * else a serial one of them serves instead, or undefined when one of them does not serve the zone
   * or has not confirmed a change. Serials are compared for equality, never by size: they wrap
   * (RFC 1982 §3.1), and a zone deleted and created again may start lower, so a thread still on an
   * old, numerically higher serial must not make the new one read as served.
   */
  async servedSerial(origin: Name): Promise<number | undefined> {
    const local = await this.local.servedSerial(origin);
    if (local === undefined) return undefined;
    for (const member of this.pool.values()) {
      if (!member.ready) continue;
      const served = member.served.get(origin.toLowerCase());
      // NaN: a change was sent and not yet confirmed.
      if (served === undefined || Number.isNaN(served)) return undefined;
      if (served !== local) return served;
    }
    return local;
  }

  /** Whether every ready thread serves the zone of `key` (lowercased origin) at `serial`. */
  private allServe(key: string, serial: number | undefined): boolean {
    for (const m of this.pool.values()) if (m.ready && m.served.get(key) !== serial) return false;
    return true;
  }

  /**
   * Resolves when `done()` holds, or after the ack timeout (servedSerial then tells the truth). With
   * `zone` (a lowercased origin), `done` depends only on what the threads serve of that zone and on
   * which threads are ready (see `zoneWaiters`).
   */
  private settled(done: () => boolean, zone?: string): Promise<void> {
    if (done()) return Promise.resolve();
    let waiters = this.waiters;
    if (zone !== undefined) {
      let forZone = this.zoneWaiters.get(zone);
      if (forZone === undefined) {
        forZone = new Set();
        this.zoneWaiters.set(zone, forZone);
      }
      waiters = forZone;
    }
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        finish();
      };
      const finish = () => {
        clearTimeout(timer);
        waiters.delete(check);
        if (zone !== undefined && waiters.size === 0 && this.zoneWaiters.get(zone) === waiters)
          this.zoneWaiters.delete(zone);
        resolve();
      };
      const timer = setTimeout(finish, this.options.ackTimeoutMs ?? 5000);
      waiters.add(check);
    });
  }

  /** Checks the waiters an event may have satisfied: those of `zone` and the others, or every one. */
  private wake(zone?: string): void {
    for (const check of [...this.waiters]) check();
    if (zone !== undefined) {
      const forZone = this.zoneWaiters.get(zone);
      if (forZone !== undefined) for (const check of [...forZone]) check();
      return;
    }
    for (const forZone of [...this.zoneWaiters.values()]) for (const check of [...forZone]) check();
  }

  private send(member: PoolWorker, message: ToWorker): void {
    if (member.exited) return;
    // Every message that changes what the thread serves: unknown until the thread confirms it.
    if (message.t === 'patch' || message.t === 'zone' || message.t === 'image' || message.t === 'overlay')
      member.served.set(message.origin.toLowerCase(), Number.NaN);
    // Structured clone: a SharedArrayBuffer in the message is shared with the thread, not copied.
    member.worker.postMessage(message);
  }

  private sendZone(member: PoolWorker, origin: Name, objects = false): void {
    const zone = this.table.get(origin);
    if (!zone) {
      this.send(member, { t: 'delete', origin });
      // A thread drops a zone's bindings with the zone; bindings set here before the zone is served
      // are sent again, so the thread keeps what this process has.
      if (this.table.selections.bindings(origin).length > 0) this.sendSelections(member, origin);
      return;
    }
    const served = this.asImage(zone);
    // `objects`: the thread could not read the image (never expected, it runs the same code).
    if (!objects && served instanceof ImageZone) {
      const key = origin.toLowerCase();
      const held = member.served.get(key);
      const journal = served.journal;
      const changes =
        (held !== undefined && !Number.isNaN(held) ? journal.since(held) : undefined) ?? journal.all();
      this.send(member, {
        t: 'image',
        origin: served.origin,
        serial: served.serial,
        // The SharedArrayBuffers themselves: every thread reads this one copy of base and overlay.
        image: served.image.buffer,
        ...(served.overlay ? { overlay: served.overlay.buffer } : {}),
        ...(served.transfers ? { transfers: served.transfers.resolved } : {}),
        ...(changes.length > 0 ? { changes: changes.map(journalWire) } : {}),
      });
      return;
    }
    const snapshot = served instanceof ZoneSnapshot ? served : undefined;
    this.send(member, {
      t: 'zone',
      origin: served.origin,
      soa: snapshot ? snapshot.soaFields : soaFieldsOf(served),
      ...(served.transfers ? { transfers: served.transfers.resolved } : {}),
      serial: served.serial,
      rrsets: snapshot ? [...snapshot.rrsets()] : [...rrsetData(served)],
      ...(snapshot?.dnssec ? { dnssec: snapshot.dnssec.data } : {}),
    });
  }

  /**
   * The zone as this process holds it from now on: served from an image, an `ImageZone` over the
   * base image (and overlay) built once for this serial as `SharedArrayBuffer`s (about 63 bytes per
   * record set, shared with every thread), which replaces the zone's objects in the table (its
   * journal and transfer settings kept); else the zone as it is (objects, patched in place).
   */
  private asImage(zone: ServedZone): ServedZone {
    if (zone instanceof ImageZone || !(zone instanceof ZoneSnapshot)) return zone;
    if (!servedFromImage(zone)) {
      this.images.forget(zone.origin);
      return zone;
    }
    let held: ImageZone;
    try {
      const { image, overlay } = this.images.merge(zone);
      held = new ImageZone(image, zone.transfers, zone.journal, overlay);
    } catch (e) {
      // A zone no image can hold (a record whose RDATA exceeds 65,535 octets: no DNS message can
      // carry it, so its own answers are empty and truncated) is served as objects.
      this.images.forget(zone.origin);
      if (imageCannotHold(e)) return zone;
      throw e;
    }
    this.table.set(held);
    return held;
  }

  /**
   * Builds the zone's new base (its overlay merged in) from the programmed content at the serial
   * served (no image decoded), holds it in the table and sends it to every thread serving the zone.
   */
  private merge(zone: ProgrammedZone): void {
    const held = this.table.get(zone.origin);
    if (!(held instanceof ImageZone) || held.serial !== zone.serial || held.overlay === undefined) return;
    let next: ImageZone;
    try {
      const { image } = this.images.merge(
        new ContentSource(zone.origin, zone.soa, zone.serial, () => zone.rrsets()),
      );
      next = new ImageZone(image, held.transfers, held.journal);
    } catch {
      return;
    }
    this.table.set(next);
    const key = zone.origin.toLowerCase();
    for (const member of this.pool.values()) {
      const was = member.served.get(key);
      if (!member.ready || was === undefined) continue;
      this.sendZone(member, zone.origin);
      // The same content at the same serial, only held differently: a thread that confirmed this
      // serial serves it whichever base it reads, so it stays confirmed (and the next change goes
      // to it as an overlay over the merged base, which it reads first: messages keep their order).
      if (was === zone.serial) member.served.set(key, was);
    }
  }

  /** Sends health changes (slot, state) to every live DNS thread (the main thread's view is already written). */
  sendHealth(states: [number, number][]): void {
    for (const member of this.pool.values()) if (member.ready) this.send(member, { t: 'health', states });
  }

  private sendSelections(member: PoolWorker, origin: Name): void {
    const generation = this.selectionGenerations.get(origin.toLowerCase()) ?? 0;
    const bindings = [...this.table.selections.bindings(origin)];
    this.send(member, { t: 'selections', origin, generation, bindings });
  }

  private fork(): Promise<void> {
    const young = dnsYoungGenerationMb(this.options.youngGenerationMb);
    const worker = new Worker(this.options.entry ?? DNS_WORKER_ENTRY, {
      name: 'zk-dns',
      workerData: this.options.config,
      ...(young > 0 ? { resourceLimits: { maxYoungGenerationSizeMb: young } } : {}),
    });
    const member: PoolWorker = {
      worker,
      id: worker.threadId,
      exited: false,
      ready: false,
      listening: false,
      served: new Map(),
      selections: new Map(),
    };
    this.pool.set(member.id, member);
    return new Promise((resolve, reject) => {
      worker.on('message', (message: FromWorker) => {
        switch (message.t) {
          case 'ready':
            member.ready = true;
            // Health before selections, so the first steered answer already reads the current view.
            this.send(member, { t: 'health', states: healthStates() });
            // Selections first: bound by name, they apply as soon as the zones arrive, so the thread
            // never answers a bound RRset whole.
            for (const { origin } of this.table.selections.all()) this.sendSelections(member, origin);
            // The images held here are posted as they are: a new thread costs no rebuild.
            for (const zone of this.table.all()) this.sendZone(member, zone.origin);
            // Messages keep their order: the thread binds the port after it applied every zone
            // above, so it never answers REFUSED for a zone served (changes from now on reach it as
            // `ready`).
            this.send(member, { t: 'serve' });
            break;
          case 'serving':
            member.listening = true;
            resolve();
            break;
          case 'applied':
            member.served.set(message.origin.toLowerCase(), message.serial);
            break;
          case 'need-zone':
            this.sendZone(member, message.origin, message.objects === true);
            break;
          case 'selections-applied': {
            const { generation, error } = message;
            member.selections.set(
              message.origin.toLowerCase(),
              error === undefined ? { generation } : { generation, error },
            );
            if (error !== undefined) {
              this.options.log?.(
                'error',
                `DNS thread ${member.id} refused the selections of ${message.origin}: ${error}`,
              );
            }
            break;
          }
          case 'metrics':
            this.options.registry?.absorb(`worker-${member.id}`, message.snapshot);
            break;
          case 'update': {
            const { seq } = message;
            const handled =
              this.options.updates?.handle(
                new Uint8Array(Buffer.from(message.request, 'base64')),
                message.remote,
              ) ?? Promise.resolve(null);
            handled.then(
              (reply) =>
                this.send(member, {
                  t: 'update-reply',
                  seq,
                  ...(reply ? { reply: Buffer.from(reply).toString('base64') } : {}),
                }),
              () => this.send(member, { t: 'update-reply', seq }),
            );
            break;
          }
        }
        // An acknowledgement changes what the thread serves of its zone alone.
        this.wake(message.t === 'applied' ? message.origin.toLowerCase() : undefined);
      });
      let failure: Error | undefined;
      worker.on('error', (e) => {
        failure = e;
      });
      worker.once('exit', (code) => {
        member.exited = true;
        this.pool.delete(member.id);
        this.wake();
        const why = failure ? `: ${failure.message}` : '';
        if (!member.listening) reject(new Error(`DNS thread exited during start (code ${code})${why}`));
        if (this.stopping) return;
        this.options.log?.('error', `DNS thread ${member.id} exited (code ${code})${why}; starting another`);
        void this.fork().catch((e: Error) => this.options.log?.('error', e.message));
      });
    });
  }
}

/** Every health slot of this process's view that is not in its initial state, as (slot, state). */
function healthStates(): [number, number][] {
  const out: [number, number][] = [];
  const states = processHealth.states;
  for (let i = 0; i < states.length; i++) {
    const s = Atomics.load(states, i);
    if (s !== 0) out.push([i, s]);
  }
  return out;
}

/** The SOA fields of a served zone (its SOA RRset's TTL and RDATA). */
function soaFieldsOf(zone: ServedZone): SoaFields {
  const soa = zone.soa.rdata[0];
  if (soa?.type !== 'SOA') throw new Error(`zone ${zone.origin} has no SOA`);
  const { mname, rname, refresh, retry, expire, minimum } = soa;
  return { ttl: zone.soa.ttl, mname, rname, refresh, retry, expire, minimum };
}

/**
 * Whether DNS threads answer a zone from its zone image (ADR 0020): every zone but those
 * carrying DNSSEC material, which images do not hold yet (ADR 0020 §7); those stay on the object
 * path (`zone` and `patch` messages, a `ZoneSnapshot` in the worker).
 */
export function servedFromImage(zone: ZoneSnapshot): boolean {
  // Signed by the built-in signer: the signatures and the denial chain sit beside the RRsets.
  if (zone.dnssec) return false;
  const apex = zone.node(zone.originKey);
  if (apex && DNSSEC_TYPES.some((t) => apex.rrsets.has(t))) return false;
  for (const node of zone.nodes.values()) {
    for (const type of node.rrsets.keys()) if (isDnssecType(type)) return false;
  }
  return true;
}
