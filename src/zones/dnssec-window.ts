/**
 * Signature windows in epochs (ADR 0021): every RRset's RRSIG inception and expiration derive from the
 * signing time recorded with the zone's serial, the RRset's owner and type, and the refresh period, so
 * every process that signs the same serial makes the same signatures, and re-signing spreads over the
 * period instead of happening for the whole zone at once.
 */
import { createHash } from 'node:crypto';
import { canonicalName } from '../dns/dnssec/canonical.ts';
import type { SignatureWindow } from '../dns/dnssec/rrsig.ts';
import type { Name } from '../dns/name.ts';

export interface WindowPolicy {
  /** Seconds between two signings of an RRset (default 7 days). */
  refreshSeconds: number;
  /** Inception backdating for clock skew (default 1 hour). */
  backdateSeconds: number;
}

export const DEFAULT_WINDOW_POLICY: WindowPolicy = { refreshSeconds: 7 * 86400, backdateSeconds: 3600 };

/** The RRset's place in the period: a hash of its canonical owner and its type, modulo the period. */
export function epochOffset(owner: Name, type: number, refreshSeconds: number): number {
  const digest = createHash('sha256')
    .update(canonicalName(owner))
    .update(Uint8Array.of(type >>> 8, type & 0xff))
    .digest();
  return digest.readUInt32BE(0) % refreshSeconds;
}

/** The epoch an RRset's signatures belong to at `signedAt` (seconds). */
export function epochOf(
  signedAt: number,
  owner: Name,
  type: number,
  policy: WindowPolicy = DEFAULT_WINDOW_POLICY,
): number {
  return Math.floor((signedAt + epochOffset(owner, type, policy.refreshSeconds)) / policy.refreshSeconds);
}

/**
 * The window of an RRset's signatures at `signedAt`: from its epoch's start minus the backdating to
 * its start plus two periods plus the backdating. A signature therefore has at least one period of
 * validity left when the next epoch replaces it.
 */
export function signatureWindow(
  signedAt: number,
  owner: Name,
  type: number,
  policy: WindowPolicy = DEFAULT_WINDOW_POLICY,
): SignatureWindow {
  const offset = epochOffset(owner, type, policy.refreshSeconds);
  const start = Math.floor((signedAt + offset) / policy.refreshSeconds) * policy.refreshSeconds - offset;
  return {
    inception: start - policy.backdateSeconds,
    expiration: start + 2 * policy.refreshSeconds + policy.backdateSeconds,
  };
}

/**
 * Whether a zone signed at `signedAt` needs signing again at `now`: some RRset's epoch moved. With
 * `rrsets` the (owner, type) pairs signed. O(zone); the serial assigner runs it on its hourly look.
 */
export function needsResign(
  signedAt: number,
  now: number,
  rrsets: Iterable<{ owner: Name; type: number }>,
  policy: WindowPolicy = DEFAULT_WINDOW_POLICY,
): boolean {
  if (now - signedAt >= policy.refreshSeconds) return true;
  for (const r of rrsets)
    if (epochOf(signedAt, r.owner, r.type, policy) !== epochOf(now, r.owner, r.type, policy)) return true;
  return false;
}
