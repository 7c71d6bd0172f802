/**
 * Which SOA serial a zone's content gets: the one rule the controller applies when it programs a zone
 * and `zone export` applies when it shows one (ADR 0005, ADR 0014). Pure: the caller reads the stored
 * state, the zone's status and the secondaries' answers, and saves what is chosen.
 *
 * One serial, one content: a serial is kept only for the content whose hash was recorded with it;
 * any other content, or content whose hash is not known yet, gets a new serial,
 * `max(YYYYMMDD00, last + 1)` in RFC 1982 arithmetic above every serial that may have been used.
 */
import { nextSerial, serialGreater, type ZoneSerialState } from './serial.ts';

/** The later of two serials in RFC 1982 order (RFC 1982 §3.2); either may be unknown. */
export function laterSerial(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return serialGreater(b, a) ? b : a;
}

/**
 * What is known of an origin's last serial: the serial store's state and the serial and hash recorded
 * in the zone's status, the later of the two (a status above the store is state from before the store
 * kept it, or a lost store). At an equal serial the one that knows the content hash wins: a serial has
 * only one content.
 */
export function knownSerial(
  stored: ZoneSerialState | undefined,
  status: { serial?: number | undefined; hash?: string | undefined } | undefined,
): ZoneSerialState | undefined {
  const recorded =
    status?.serial !== undefined
      ? { serial: status.serial, ...(status.hash ? { hash: status.hash } : {}) }
      : undefined;
  if (!stored || !recorded) return stored ?? recorded;
  if (serialGreater(recorded.serial, stored.serial)) return recorded;
  if (recorded.serial === stored.serial && stored.hash === undefined && recorded.hash !== undefined)
    return recorded;
  return stored;
}

export interface SerialChoice {
  serial: number;
  /** The known serial was kept: it was recorded with exactly this content. */
  kept: boolean;
}

/**
 * The serial for a zone's content.
 *
 * - `known`: the last serial known for the origin (`knownSerial`), or the highest serial its
 *   secondaries serve when nothing is stored.
 * - `claimed`: the highest serial this process asked to save for the origin, saved or not (a failed
 *   write may still reach the disk with a later one); a new serial goes above it too.
 * - `hash`: the content's hash, given when this content may keep the known serial (the first serial of
 *   a zone's model: a restart or a rebuild without changes). It is kept only when the known hash is
 *   this content's; without a known hash it is not, since which content that serial was served with
 *   cannot be known.
 */
export function chooseSerial(input: {
  known: ZoneSerialState | undefined;
  claimed?: number | undefined;
  hash?: string | undefined;
  now: Date;
}): SerialChoice {
  const { known, hash } = input;
  if (known && hash !== undefined && known.hash === hash) return { serial: known.serial, kept: true };
  return { serial: nextSerial(laterSerial(known?.serial, input.claimed), input.now), kept: false };
}

/**
 * The serial and hash a zone's status shows for the serial of its content: the hash when it is known
 * for exactly that serial (computed, or recorded in the status before), else none.
 */
export function statusSerial(
  serial: number,
  hash: string | undefined,
  status: { serial?: number | undefined; hash?: string | undefined } | undefined,
): { serial: number; hash?: string } {
  const known = hash ?? (status?.serial === serial ? status.hash : undefined);
  return { serial, ...(known !== undefined ? { hash: known } : {}) };
}
