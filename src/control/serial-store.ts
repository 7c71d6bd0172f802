import type { Name } from '../dns/name.ts';
import type { ZoneSerialState } from '../zones/serial.ts';

// Defined with the serial rules, where `zone export` reads it too.
export type { ZoneSerialState };

/**
 * Durable serial state, keyed by zone origin rather than by resource, so that a zone deleted and
 * created again continues above the serial its secondaries and caches last saw.
 */
export interface SerialStore {
  get(origin: Name): ZoneSerialState | undefined;
  /**
   * Resolves once the state is durable: a serial is never served before it is saved. Rejects with
   * `SerialTakenError` when the serial is no longer this process's to use (another writer, e.g. an
   * operator that led before, recorded it or a higher one): the caller picks a new serial above what
   * `get` returns now.
   */
  set(origin: Name, state: ZoneSerialState): Promise<void>;
  /**
   * Keeps each zone's RRset count with its serial (`ZoneSerialState.rrsets`, change safety after a
   * restart where no status is kept: folder mode). A kept serial saved without one is saved again.
   */
  readonly keepsCounts?: boolean;
}

/**
 * The serial asked to save is at or below one another writer recorded for the origin (a leader
 * handover): it may already be served with other content, so it must not be used; choose a new one.
 */
export class SerialTakenError extends Error {
  override readonly name = 'SerialTakenError';
}

export class MemorySerialStore implements SerialStore {
  private readonly states = new Map<string, ZoneSerialState>();

  get(origin: Name): ZoneSerialState | undefined {
    return this.states.get(origin.toLowerCase());
  }

  async set(origin: Name, state: ZoneSerialState): Promise<void> {
    this.states.set(origin.toLowerCase(), state);
  }
}
