import type { Name } from '../dns/name.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';
import type { ResourceKey } from '../zones/resource-key.ts';
import type { RRset, RRsetOrigin } from '../zones/rrset.ts';
import type { SoaFields } from '../zones/soa.ts';
import type { ResolvedTransfers } from '../zones/transfers.ts';

/** The content of a zone at a serial, and how it differs from the previous serial when known. */
export interface ProgrammedZone {
  key: ResourceKey;
  origin: Name;
  soa: SoaFields;
  serial: number;
  /** Transfer settings of the zone's class, secrets read (backends that serve DNS themselves use them). */
  transfers?: ResolvedTransfers;
  /** Every RRset but the SOA, in canonical order; computed on demand (O(zone)). */
  rrsets: () => Iterable<RRset>;
  /**
   * The change from `fromSerial` to `serial`. A backend that holds the zone at exactly `fromSerial`
   * applies just this; any other backend state takes the full content.
   */
  delta?: {
    fromSerial: number;
    upserts: readonly RRset[];
    deletes: readonly { owner: Name; type: RecordTypeName }[];
  };
}

/**
 * One RRset of the zone the backend did not program while programming the rest: something the backend
 * holds and Zonekeeper does not own takes its name (`Conflict`), or the backend refused its content
 * (`BackendRejected`), or cannot answer for it (`AliasTargetUnresolvable`). The message says what holds
 * it or what was refused, and what to do.
 */
export interface RRsetProblem {
  owner: Name;
  type: RecordTypeName;
  /** Where the RRset came from, so the problem is reported on the record set (or zone) behind it. */
  origin: RRsetOrigin;
  /**
   * `AliasTargetUnresolvable`: an ALIAS the built-in server serves but cannot answer (its target is
   * outside the zones served and no recursive resolver is configured).
   */
  reason: 'Conflict' | 'BackendRejected' | 'AliasTargetUnresolvable';
  message: string;
}

/** What an apply leaves to report besides the serial (read back with `servedSerial`). */
export interface ApplyResult {
  /** RRsets left out; every other RRset is programmed. Empty or absent: the whole zone is. */
  problems?: readonly RRsetProblem[];
}

/**
 * What a reconciler needs from an authoritative backend. Implementations must be idempotent: applying
 * the same zone twice is a no-op, deleting a missing zone succeeds.
 */
export interface Backend {
  readonly name: string;
  // biome-ignore lint/suspicious/noConfusingVoidType: a backend with nothing to report returns nothing
  applyZone(zone: ProgrammedZone): Promise<ApplyResult | void>;
  /**
   * When set, every programmed zone is applied again this often even when nothing changed, so a
   * backend that others can edit (PowerDNS) reads its state back and repairs drift.
   */
  readonly resyncIntervalMs?: number;
  deleteZone(origin: Name): Promise<void>;
  /** The serial the backend actually serves for the zone, undefined when it does not serve it. */
  servedSerial(origin: Name): Promise<number | undefined>;
  /** Whether the backend is reachable and healthy (shown on the DNSZoneClass; never blocks zones). */
  health?(): Promise<{ ok: boolean; message: string }>;
}

/** A backend failure with a stable reason for conditions (e.g. BackendUnreachable). */
export class BackendError extends Error {
  readonly reason: 'BackendUnreachable' | 'BackendRejected';

  constructor(
    reason: 'BackendUnreachable' | 'BackendRejected',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'BackendError';
    this.reason = reason;
  }
}
