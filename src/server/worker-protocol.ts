import type { Name } from '../dns/name.ts';
import type { RegistrySnapshot } from '../metrics/registry.ts';
import type { RRsetData, RRsetKey } from '../zones/rrset.ts';
import type { SoaFields } from '../zones/soa.ts';
import type { ResolvedTransfers } from '../zones/transfers.ts';
import type { AnswerSettings } from './answer-settings.ts';
import type { SelectionBinding } from './selection/selection-table.ts';
import type { ZoneDnssecData } from './zone-dnssec.ts';

/** What a DNS thread needs to know to serve: its `workerData` when the pool starts it. */
export interface DnsWorkerConfig extends AnswerSettings {
  /** The address the main thread reserved; every DNS thread binds it with SO_REUSEPORT. */
  listen: string;
}

/**
 * Main thread → DNS thread: zone content, as whole zones or as patches against the thread's serial.
 * Messages are posted (structured clone); the buffers of zone images are `SharedArrayBuffer`s, which
 * every thread shares rather than copies (ADR 0020 §3).
 */
export type ToWorker =
  | {
      t: 'zone';
      origin: Name;
      soa: SoaFields;
      serial: number;
      rrsets: RRsetData[];
      transfers?: ResolvedTransfers;
      /** A signed zone's DNSSEC material, made by the main thread for exactly this serial (ADR 0021). */
      dnssec?: ZoneDnssecData;
    }
  | {
      t: 'patch';
      origin: Name;
      soa: SoaFields;
      serial: number;
      fromSerial: number;
      upserts: RRsetData[];
      deletes: RRsetKey[];
      transfers?: ResolvedTransfers;
    }
  /**
   * A whole zone as its zone image (ADR 0020 step 3: one buffer instead of an object graph) and,
   * when names changed since that image was built, the overlay of them over it (step 5), with the
   * IXFR journal entries that lead to its serial from what the thread may hold. Images, overlays and
   * journal entries are `SharedArrayBuffer`s built once for every thread and never written after they
   * are posted (step 4). Zones carrying DNSSEC material still come as `zone` and `patch`.
   */
  | {
      t: 'image';
      origin: Name;
      serial: number;
      image: SharedArrayBuffer | ArrayBuffer;
      overlay?: SharedArrayBuffer | ArrayBuffer;
      transfers?: ResolvedTransfers;
      /** IXFR journal entries in wire form (`journalWire`, ADR 0020 §6), oldest first. */
      changes?: (SharedArrayBuffer | ArrayBuffer)[];
    }
  /**
   * A change as an overlay over the image the thread holds (ADR 0020 §4), replacing its overlay; a
   * thread holding another image answers `need-zone`.
   */
  | {
      t: 'overlay';
      origin: Name;
      serial: number;
      overlay: SharedArrayBuffer | ArrayBuffer;
      transfers?: ResolvedTransfers;
      /** The change's IXFR journal entries in wire form (`journalWire`). */
      changes?: (SharedArrayBuffer | ArrayBuffer)[];
    }
  | { t: 'delete'; origin: Name }
  /**
   * The selection bindings of a zone, replacing the ones the worker holds (see selection/). Sent on
   * every change and, after the zones, to a new worker; `generation` identifies the change in the
   * worker's answer.
   */
  | { t: 'selections'; origin: Name; generation: number; bindings: SelectionBinding[] }
  /**
   * Every zone (and selection) the main thread serves has been sent: join the shared port now. Sent once,
   * after the worker's `ready`.
   */
  | { t: 'serve' }
  /** The main thread's answer to an UPDATE the thread forwarded (base64; absent: no answer). */
  | { t: 'update-reply'; seq: number; reply?: string }
  /**
   * Health states of probe targets (slot, state) for the steering policies' view: each change as the
   * main thread's checker makes it, and every slot in use to a new thread before its selections.
   */
  | { t: 'health'; states: [number, number][] }
  /**
   * Tests and diagnosis: the thread blocks (answers nothing, confirms nothing) until `flag[0]` is
   * set to non-zero, as a thread stuck in a long computation would.
   */
  | { t: 'pause'; flag: Int32Array };

/** DNS thread → main thread: readiness, what it serves now, and its counters. */
export type FromWorker =
  /** Loaded and receiving zones; not listening yet (it binds on `serve`). */
  | { t: 'ready' }
  /** Bound to the shared port: answering. */
  | { t: 'serving' }
  | { t: 'applied'; origin: Name; serial: number | undefined }
  /** A patch did not apply to what the worker holds: send the whole zone (`objects`: not as an image). */
  | { t: 'need-zone'; origin: Name; objects?: boolean }
  /** The worker answers with these selection bindings now; `error`: it refused them and kept its old ones. */
  | { t: 'selections-applied'; origin: Name; generation: number; error?: string }
  | { t: 'metrics'; snapshot: RegistrySnapshot }
  /**
   * An RFC 2136 UPDATE received by the thread (base64): the main thread alone applies updates (one queue,
   * one writer), as RFC 2136 §6 has a secondary forward to the primary; the thread sends its answer.
   */
  | { t: 'update'; seq: number; request: string; remote?: string };
