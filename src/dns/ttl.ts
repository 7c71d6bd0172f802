import { DnsError } from './errors.ts';

/** RFC 2181 §8: TTLs are unsigned 32-bit values with the top bit clear. */
export const MAX_TTL = 2147483647;

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/**
 * Parses a TTL: plain seconds ("300") or BIND-style units ("1h30m", "1w", "2d", case-insensitive; a trailing
 * unit-less number counts as seconds, e.g. "1m30").
 */
export function parseTtl(text: string): number {
  const bad = (why: string): DnsError =>
    new DnsError(
      'BAD_TTL',
      `TTL ${JSON.stringify(text)} ${why}; write seconds ("300") or units s/m/h/d/w ("1h30m"), at most ${MAX_TTL}`,
    );
  if (text.length === 0) throw bad('is empty');
  let total = 0;
  let value = 0;
  let digits = 0;
  let sawUnit = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      value = value * 10 + (c - 0x30);
      digits++;
      if (value > MAX_TTL) throw bad(`exceeds the maximum (RFC 2181 §8)`);
      continue;
    }
    const unit = UNIT_SECONDS[text[i]!.toLowerCase()];
    if (unit === undefined) throw bad(`contains ${JSON.stringify(text[i])}`);
    if (digits === 0) throw bad('has a unit without a number before it');
    total += value * unit;
    value = 0;
    digits = 0;
    sawUnit = true;
  }
  if (digits > 0) total += value;
  else if (!sawUnit) throw bad('has no digits');
  if (total > MAX_TTL) throw bad('exceeds the maximum (RFC 2181 §8)');
  return total;
}

/** Presentation of a TTL as plain seconds. */
export function printTtl(ttl: number): string {
  return String(ttl);
}
