/**
 * SOA serial arithmetic. Serials are 32-bit unsigned numbers compared with RFC 1982 serial number
 * arithmetic, so a serial may wrap around 2^32 and still be "greater" than the one before it.
 */

/**
 * The last serial published for a zone and the content hash it was published for. The hash is
 * computed shortly after a change; while it is unknown, a restart raises the serial to be safe.
 */
export interface ZoneSerialState {
  serial: number;
  hash?: string;
  /**
   * For a zone signed at its serial (ADR 0021): the signing time of this serial (seconds since the
   * epoch), from which every signature window derives, and the signing settings it was signed with
   * (`algorithm/denial/keys`), so that a restart signs the serial exactly as before.
   */
  signedAt?: number;
  signing?: string;
  /**
   * RRsets of the content chosen for this serial (the SOA not counted): after a restart, change safety
   * measures the first content against it (ADR 0018).
   */
  rrsets?: number;
}

const SERIAL_BITS_MOD = 2 ** 32;
const HALF = 2 ** 31;

/** RFC 1982 §3.1: addition is defined for increments in [0, 2^31 - 1]. */
export function serialAdd(serial: number, increment: number): number {
  if (increment < 0 || increment >= HALF) throw new RangeError(`serial increment ${increment} out of range`);
  return (serial + increment) % SERIAL_BITS_MOD;
}

/** RFC 1982 §3.2: s1 > s2 when their distance, taken the short way round the circle, is positive. */
export function serialGreater(s1: number, s2: number): boolean {
  return (s1 < s2 && s2 - s1 > HALF) || (s1 > s2 && s1 - s2 < HALF);
}

/** The date-based serial YYYYMMDD00 of `now` (UTC), the conventional floor for new serials. */
export function dateSerial(now: Date): number {
  return now.getUTCFullYear() * 1_000_000 + (now.getUTCMonth() + 1) * 10_000 + now.getUTCDate() * 100;
}

/**
 * The serial to publish after the zone content changed: `max(YYYYMMDD00, last + 1)` in RFC 1982
 * arithmetic, so the serial never goes backwards and secondaries always see an increase. A zone with
 * no previous serial starts at the date serial.
 */
export function nextSerial(last: number | undefined, now: Date): number {
  const floor = dateSerial(now);
  if (last === undefined) return floor;
  const incremented = serialAdd(last, 1);
  return serialGreater(floor, incremented) ? floor : incremented;
}
