import type { Name } from '../dns/name.ts';
import type { AssembledZone } from '../zones/assemble.ts';
import type { ResourceKey } from '../zones/resource-key.ts';

/** A computed zone with the serial the reconciler assigned to it. */
export interface ProgrammedZone {
  key: ResourceKey;
  zone: AssembledZone;
  serial: number;
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
