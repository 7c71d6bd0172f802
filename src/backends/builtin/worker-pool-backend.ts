import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import type { Name } from '../../dns/name.ts';
import { RRType } from '../../dns/rrtype.ts';
import type { Registry } from '../../metrics/registry.ts';
import { type AnswerSettings, answerSettings } from '../../server/answer-settings.ts';
import { ZoneImageBuilder } from '../../server/image/image-builder.ts';
import { journalWire } from '../../server/image/journal-wire.ts';
import type { ZoneImage } from '../../server/image/zone-image.ts';
import { SelectionError } from '../../server/selection/policy.ts';
import type { SelectionBinding, SelectionSink } from '../../server/selection/selection-table.ts';
import { processHealth } from '../../server/selection/steering/health-view.ts';
import type { SteeringBinder } from '../../server/selection/steering/steering-binder.ts';
import type { Notifier } from '../../server/transfer/notifier.ts';
import type { UpdateResponder } from '../../server/update/update-handler.ts';
import type { DnsWorkerConfig, FromWorker, ToWorker } from '../../server/worker-protocol.ts';
import { WORKER_CONFIG_ENV } from '../../server/worker-protocol.ts';
import type { ZoneSnapshot } from '../../server/zone-snapshot.ts';
import type { ZoneTable } from '../../server/zone-table.ts';
import {
  type ApplyResult,
  type Backend,
  type BackendCapabilities,
  BackendError,
  type ProgrammedZone,
} from '../backend.ts';
import { BuiltinBackend, type BuiltinBackendOptions } from './builtin-backend.ts';

/** The file DNS worker processes run (src/server/dns-worker-main.ts). */
const DNS_WORKER_ENTRY = fileURLToPath(new URL('../../server/dns-worker-main.ts', import.meta.url));

export interface WorkerPoolOptions {
  /** DNS processes besides the primary. */
  workers: number;
  config: DnsWorkerConfig;
  registry?: Registry;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** How long applyZone waits for every worker to confirm a serial. */
  ackTimeoutMs?: number;
  /** ALIAS record sets the processes cannot answer (see BuiltinBackendOptions). */
  aliasCheck?: BuiltinBackendOptions['aliasCheck'];
  /** Answers the RFC 2136 UPDATEs workers forward (the primary's handler); without it they go unanswered. */
  updates?: UpdateResponder;
  /** Steered RRsets become bindings in every DNS process (see BuiltinBackendOptions.steering). */
  steering?: SteeringBinder;
  /** Zones to reconcile again (see BuiltinBackendOptions.recheck). */
  recheck?: BuiltinBackendOptions['recheck'];
  /** Signs zones (see BuiltinBackendOptions.dnssecKeys); the signed zones go to every DNS process whole. */
  dnssecKeys?: BuiltinBackendOptions['dnssecKeys'];
  signingThread?: BuiltinBackendOptions['signingThread'];
}

interface PoolWorker {
  worker: Worker;
  /** Receives every change (set at the worker's `ready`, before it listens). */
  ready: boolean;
  /** Bound to the shared port (after every zone was sent to it). */
  listening: boolean;
  served: Map<string, number | undefined>;
  /** Per zone: the generation of selection bindings the worker confirmed, and its refusal if any. */
  selections: Map<string, { generation: number; error?: string }>;
}

/**
 * The built-in server spread over several processes: the primary serves from its own table and
 * forwards every change to its DNS workers, which share the port through SO_REUSEPORT. A serial
 * counts as served only when every live worker has confirmed it; a worker that misses a patch's base
 * serial asks for the whole zone; a worker that dies is replaced and sent every zone.
 */
export class WorkerPoolBackend implements Backend, SelectionSink {
  readonly name = 'builtin';
  readonly capabilities: BackendCapabilities;
  private readonly local: BuiltinBackend;
  private readonly table: ZoneTable;
  private readonly options: WorkerPoolOptions;
  private readonly pool = new Map<number, PoolWorker>();
  private readonly waiters = new Set<() => void>();
  private stopping = false;
  /** Per zone: the generation of its current selection bindings (counted over all zones). */
  private readonly selectionGenerations = new Map<string, number>();
  private selectionGeneration = 0;
  /** Each zone's base image and overlay, built once per serial for every worker (ADR 0020 §4). */
  private readonly images = new ZoneImageBuilder();

  constructor(table: ZoneTable, options: WorkerPoolOptions, notifier?: Notifier) {
    this.table = table;
    this.local = new BuiltinBackend(table, notifier, {
      ...(options.aliasCheck ? { aliasCheck: options.aliasCheck } : {}),
      ...(options.steering ? { steering: options.steering, selectionSink: this } : {}),
      ...(options.recheck ? { recheck: options.recheck } : {}),
      ...(options.dnssecKeys ? { dnssecKeys: options.dnssecKeys } : {}),
      ...(options.signingThread ? { signingThread: options.signingThread } : {}),
    });
    this.capabilities = this.local.capabilities;
    this.options = options;
  }

  /**
   * The pool for a DNS listener already bound at `address`: its workers join that port and answer
   * like it (identity, version, ALIAS resolver, response cache size).
   */
  static forListener(
    table: ZoneTable,
    address: { host: string; port: number },
    options: {
      workers: number;
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
    // Workers start from the DNS worker entry, which loads the answer path only (ADR 0020); an entry
    // set before (tests that register their own selection policies) is kept.
    cluster.setupPrimary({
      serialization: 'advanced',
      ...(cluster.settings.exec === undefined ? { exec: DNS_WORKER_ENTRY } : {}),
    });
    await Promise.all(Array.from({ length: this.options.workers }, () => this.fork()));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.pool.values()].map(
        ({ worker }) =>
          new Promise<void>((resolve) => {
            worker.once('exit', () => resolve());
            worker.disconnect();
            setTimeout(() => worker.process.kill('SIGKILL'), 5000).unref();
          }),
      ),
    );
  }

  async applyZone(zone: ProgrammedZone): Promise<ApplyResult | undefined> {
    const before = this.table.get(zone.origin)?.serial;
    const result = await this.local.applyZone(zone);
    const served = this.table.get(zone.origin);
    const key = zone.origin.toLowerCase();
    // Zones go to workers as zone images built once for all of them (ADR 0020): a change as an
    // overlay of the names it changed over the base the workers hold (step 5), small whatever the
    // zone's size; the zone whole when the overlay cannot be made (no base at the change's start,
    // a change too large alone). Zones carrying DNSSEC material go as objects, patched in place.
    const delta = zone.delta;
    const moved =
      delta !== undefined && served !== undefined && before === delta.fromSerial && served.serial !== before;
    const overlay = moved ? this.overlayOf(served, delta) : undefined;
    const patchable = moved && overlay === undefined && !this.asImage(served) && !served.dnssec;
    for (const member of this.pool.values()) {
      if (!member.ready) continue;
      const held = member.served.get(key);
      if (overlay !== undefined && held === delta!.fromSerial) {
        const changes = served!.journal.since(delta!.fromSerial) ?? [];
        this.send(member, {
          t: 'overlay',
          origin: zone.origin,
          serial: zone.serial,
          overlay: overlay.buffer as ArrayBuffer,
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
    await this.settled(() => this.allServe(zone.origin, zone.serial));
    // The overlay passed its share of the base: merge them into a new base now that the change is
    // served, so that no change waits for a whole build (the same content, at the same serial).
    if (overlay !== undefined && this.images.needsMerge(zone.origin)) this.merge(zone.origin);
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
    await this.settled(() => this.allServe(origin, undefined));
    const holding = [...this.pool.values()]
      .filter((m) => m.ready && m.served.get(origin.toLowerCase()) !== undefined)
      .map((m) => m.worker.process.pid);
    if (holding.length > 0) {
      throw new BackendError(
        'BackendUnreachable',
        `DNS worker process ${holding.join(', ')} did not confirm deleting zone ${origin} within ${this.options.ackTimeoutMs ?? 5000} ms; retrying`,
      );
    }
  }

  /** The process ids of the DNS workers serving now (started and not exited). */
  workerPids(): number[] {
    return [...this.pool.values()].filter((m) => m.ready).map((m) => m.worker.process.pid!);
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
          `DNS worker ${member.worker.process.pid} did not confirm the selections of ${origin} in time`,
        );
      }
      if (state?.generation === generation && state.error !== undefined) {
        throw new SelectionError(
          'SELECTION_WORKER_REFUSED',
          `DNS worker ${member.worker.process.pid} refused the selections of ${origin}: ${state.error}`,
        );
      }
    }
  }

  /** The lowest serial any process serves (undefined when one of them does not serve the zone). */
  async servedSerial(origin: Name): Promise<number | undefined> {
    const local = await this.local.servedSerial(origin);
    if (local === undefined) return undefined;
    let lowest = local;
    for (const member of this.pool.values()) {
      if (!member.ready) continue;
      const served = member.served.get(origin.toLowerCase());
      // NaN: a change was sent and not yet confirmed.
      if (served === undefined || Number.isNaN(served)) return undefined;
      if (served < lowest) lowest = served;
    }
    return lowest;
  }

  private allServe(origin: Name, serial: number | undefined): boolean {
    const key = origin.toLowerCase();
    return [...this.pool.values()].every((m) => !m.ready || m.served.get(key) === serial);
  }

  /** Resolves when `done()` holds, or after the ack timeout (servedSerial then tells the truth). */
  private settled(done: () => boolean): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        finish();
      };
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(finish, this.options.ackTimeoutMs ?? 5000);
      this.waiters.add(check);
    });
  }

  private send(member: PoolWorker, message: ToWorker): void {
    if (!member.worker.isConnected()) return;
    if (message.t === 'patch' || message.t === 'zone')
      member.served.set(message.origin.toLowerCase(), Number.NaN);
    member.worker.send(message);
  }

  private sendZone(member: PoolWorker, origin: Name, objects = false): void {
    const zone = this.table.get(origin);
    if (!zone) {
      this.send(member, { t: 'delete', origin });
      // A worker drops a zone's bindings with the zone; bindings set here before the zone is served
      // are sent again, so the worker keeps what this process has.
      if (this.table.selections.bindings(origin).length > 0) this.sendSelections(member, origin);
      return;
    }
    if (!objects && this.asImage(zone)) {
      const key = origin.toLowerCase();
      const held = member.served.get(key);
      const journal = zone.journal;
      const changes =
        (held !== undefined && !Number.isNaN(held) ? journal.since(held) : undefined) ?? journal.all();
      const { image, overlay } = this.images.current(zone);
      this.send(member, {
        t: 'image',
        origin: zone.origin,
        serial: zone.serial,
        image: image.buffer as ArrayBuffer,
        ...(overlay ? { overlay: overlay.buffer as ArrayBuffer } : {}),
        ...(zone.transfers ? { transfers: zone.transfers.resolved } : {}),
        ...(changes.length > 0 ? { changes: changes.map(journalWire) } : {}),
      });
      return;
    }
    this.send(member, {
      t: 'zone',
      origin: zone.origin,
      soa: zone.soaFields,
      ...(zone.transfers ? { transfers: zone.transfers.resolved } : {}),
      serial: zone.serial,
      rrsets: [...zone.rrsets()],
      ...(zone.dnssec ? { dnssec: zone.dnssec.data } : {}),
    });
  }

  /** Whether workers get the zone as zone images (else as objects, patched in place). */
  private asImage(zone: ZoneSnapshot): boolean {
    if (!servedFromImage(zone)) return false;
    try {
      this.images.current(zone);
      return true;
    } catch {
      // A zone no image can hold (a record whose RDATA exceeds 65,535 octets: no DNS message can
      // carry it, so its own answers are empty and truncated) is served as objects.
      return false;
    }
  }

  /**
   * The overlay that moves workers holding the zone's images at `delta.fromSerial` to its serial now;
   * undefined when the zone goes whole or as objects.
   */
  private overlayOf(zone: ZoneSnapshot, delta: NonNullable<ProgrammedZone['delta']>): ZoneImage | undefined {
    // The builder holds images only of zones served from images (`asImage`), so only the change can
    // have brought DNSSEC material (checked on the change, not on the whole zone).
    if (zone.dnssec || delta.upserts.some((r) => DNSSEC_TYPES.includes(RRType[r.type]))) return undefined;
    try {
      return this.images.change(zone, delta.fromSerial, [
        ...delta.upserts.map((r) => r.owner),
        ...delta.deletes.map((r) => r.owner),
      ]);
    } catch {
      return undefined;
    }
  }

  /** Builds the zone's new base (its overlay merged in) and sends it to every worker serving the zone. */
  private merge(origin: Name): void {
    const zone = this.table.get(origin);
    if (zone === undefined || !servedFromImage(zone)) return;
    try {
      this.images.merge(zone);
    } catch {
      return;
    }
    for (const member of this.pool.values()) {
      if (member.ready && member.served.get(origin.toLowerCase()) !== undefined)
        this.sendZone(member, origin);
    }
  }

  /** Sends health changes (slot, state) to every live DNS worker (the primary's view is already written). */
  sendHealth(states: [number, number][]): void {
    for (const member of this.pool.values()) if (member.ready) this.send(member, { t: 'health', states });
  }

  private sendSelections(member: PoolWorker, origin: Name): void {
    const generation = this.selectionGenerations.get(origin.toLowerCase()) ?? 0;
    const bindings = [...this.table.selections.bindings(origin)];
    this.send(member, { t: 'selections', origin, generation, bindings });
  }

  private fork(): Promise<void> {
    const worker = cluster.fork({ [WORKER_CONFIG_ENV]: JSON.stringify(this.options.config) });
    const member: PoolWorker = {
      worker,
      ready: false,
      listening: false,
      served: new Map(),
      selections: new Map(),
    };
    this.pool.set(worker.id, member);
    return new Promise((resolve, reject) => {
      worker.on('message', (message: FromWorker) => {
        switch (message.t) {
          case 'ready':
            member.ready = true;
            // Health before selections, so the first steered answer already reads the current view.
            this.send(member, { t: 'health', states: healthStates() });
            // Selections first: bound by name, they apply as soon as the zones arrive, so the worker
            // never answers a bound RRset whole.
            for (const { origin } of this.table.selections.all()) this.sendSelections(member, origin);
            for (const zone of this.table.all()) this.sendZone(member, zone.origin);
            // IPC keeps the order: the worker binds the port after it applied every zone above, so it
            // never answers REFUSED for a zone served here (changes from now on reach it as `ready`).
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
                `DNS worker ${worker.process.pid} refused the selections of ${message.origin}: ${error}`,
              );
            }
            break;
          }
          case 'metrics':
            this.options.registry?.absorb(`worker-${worker.id}`, message.snapshot);
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
        for (const check of [...this.waiters]) check();
      });
      worker.once('exit', (code, signal) => {
        this.pool.delete(worker.id);
        for (const check of [...this.waiters]) check();
        if (!member.listening)
          reject(new Error(`DNS worker exited during start (code ${code}, signal ${signal})`));
        if (this.stopping) return;
        this.options.log?.(
          'error',
          `DNS worker ${worker.process.pid} exited (code ${code}, signal ${signal}); starting another`,
        );
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

/** Types that make a zone signed, or part of signing: DNSSEC answers come from objects for now. */
const DNSSEC_TYPES: readonly number[] = [
  RRType.DNSKEY,
  RRType.RRSIG,
  RRType.NSEC,
  RRType.NSEC3,
  RRType.NSEC3PARAM,
  RRType.CDS,
  RRType.CDNSKEY,
];

/**
 * Whether DNS workers answer a zone from its zone image (ADR 0020 step 3): every zone but those
 * carrying DNSSEC material, which images do not hold yet (ADR 0020 §7); those stay on the object
 * path (`zone` and `patch` messages, a `ZoneSnapshot` in the worker).
 */
export function servedFromImage(zone: ZoneSnapshot): boolean {
  // Signed by the built-in signer: the signatures and the denial chain sit beside the RRsets.
  if (zone.dnssec) return false;
  const apex = zone.node(zone.originKey);
  if (apex && DNSSEC_TYPES.some((t) => apex.rrsets.has(t))) return false;
  for (const node of zone.nodes.values()) {
    for (const type of node.rrsets.keys()) if (DNSSEC_TYPES.includes(type)) return false;
  }
  return true;
}
