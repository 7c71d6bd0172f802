import type { Name } from '../dns/name.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';
import type { ResourceKey } from '../zones/resource-key.ts';
import type { RRset } from '../zones/rrset.ts';
import type { SoaFields } from '../zones/soa.ts';

/** The content of a zone at a serial, and how it differs from the previous serial when known. */
export interface ProgrammedZone {
  key: ResourceKey;
  origin: Name;
  soa: SoaFields;
  serial: number;
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
 * What a reconciler needs from an authoritative backend. Implementations must be idempotent: applying
 * the same zone twice is a no-op, deleting a missing zone succeeds.
 */
export interface Backend {
  readonly name: string;
  applyZone(zone: ProgrammedZone): Promise<void>;
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
