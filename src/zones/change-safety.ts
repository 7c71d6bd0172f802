/**
 * Holds on large changes (pure): what a zone's content changed since its baseline — the last content
 * that stayed unchanged for the stability window (ADR 0018) — counted as octoDNS counts a plan (RRsets
 * deleted and RRsets changed, against the RRsets the zone had, the SOA not counted), the hash that
 * names exactly that change, and whether the change is held.
 */
import { createHash } from 'node:crypto';
import {
  CHANGE_SAFETY_MIN_RRSETS,
  CONFIRM_CHANGE_ANNOTATION,
  type EffectiveChangeSafety,
} from '../api/index.ts';
import { printRdata } from '../dns/rdata.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';
import type { RRset } from './rrset.ts';

/** How a change compares with the baseline. */
export interface ChangeCounts {
  /** RRsets of the baseline (the SOA not counted). */
  total: number;
  deleted: number;
  updated: number;
  added: number;
}

export interface MeasuredChange {
  counts: ChangeCounts;
  /**
   * SHA-256 (first 16 hex digits) over the zone's origin and every RRset that differs from the
   * baseline, as it was and as it would be: the same change from the same baseline always has the
   * same hash, any other change another one.
   */
  hash: string;
}

/**
 * The baseline of one zone, kept as a delta: for every RRset changed since the baseline was taken, what
 * the baseline published there. Costs what changed, not the zone.
 */
export class ChangeBaseline {
  private readonly before = new Map<string, RRset | undefined>();
  /** RRsets of the baseline. */
  total: number;

  constructor(total: number) {
    this.total = total;
  }

  /** Notes a change taken into the model: each RRset's previous content, if it is the first change since the baseline. */
  note(previous: ReadonlyMap<string, RRset | undefined>): void {
    for (const [id, rrset] of previous) if (!this.before.has(id)) this.before.set(id, rrset);
  }

  /** The current content becomes the baseline. */
  reset(total: number): void {
    this.before.clear();
    this.total = total;
  }

  get changedSinceBaseline(): boolean {
    return this.before.size > 0;
  }

  /**
   * The change from the baseline to the current content; `current(id)` is what the zone publishes now
   * at the id (`owner key NUL type`).
   */
  measure(
    origin: string,
    current: (ownerKey: string, type: RecordTypeName) => RRset | undefined,
  ): MeasuredChange {
    const counts: ChangeCounts = { total: this.total, deleted: 0, updated: 0, added: 0 };
    const lines: string[] = [];
    for (const [id, was] of this.before) {
      const cut = id.lastIndexOf('\u0000');
      const now = current(id.slice(0, cut), id.slice(cut + 1) as RecordTypeName);
      const before = was === undefined ? undefined : content(was);
      const after = now === undefined ? undefined : content(now);
      if (before === after) continue;
      if (before === undefined) counts.added++;
      else if (after === undefined) counts.deleted++;
      else counts.updated++;
      const rrset = (now ?? was)!;
      lines.push(`${rrset.owner.toLowerCase()} ${rrset.type} ${before ?? '-'} => ${after ?? '-'}`);
    }
    lines.sort();
    const hash = createHash('sha256')
      .update(`${origin.toLowerCase()}\n${lines.join('\n')}`)
      .digest('hex');
    return { counts, hash: hash.slice(0, 16) };
  }
}

/** An RRset's content as one line: TTL and records in canonical presentation form, sorted. */
function content(rrset: RRset): string {
  return `${rrset.ttl} ${rrset.rdata
    .map((r) => printRdata(r))
    .sort()
    .join(' | ')}`;
}

/** Whether a change is larger than the settings allow (octoDNS: strictly more than the share). */
export function overThreshold(settings: EffectiveChangeSafety, counts: ChangeCounts): boolean {
  if (!settings.enabled || counts.total < CHANGE_SAFETY_MIN_RRSETS) return false;
  return (
    counts.deleted * 100 > settings.maxDeletePercent * counts.total ||
    counts.updated * 100 > settings.maxUpdatePercent * counts.total
  );
}

export type HoldDecision =
  | { held: false; confirmed: boolean }
  | { held: true; hash: string; message: string };

/**
 * Whether a change is held: over the threshold and not confirmed with exactly its hash. `confirmations`
 * are the hashes given for the zone (its annotation, a confirmation file); one for another change is
 * stale and named in the message.
 */
export function decideHold(
  settings: EffectiveChangeSafety,
  change: MeasuredChange,
  confirmations: readonly string[],
  how: string,
): HoldDecision {
  if (!overThreshold(settings, change.counts)) return { held: false, confirmed: false };
  if (confirmations.includes(change.hash)) return { held: false, confirmed: true };
  const { total, deleted, updated } = change.counts;
  const stale = confirmations.filter((c) => c !== change.hash);
  return {
    held: true,
    hash: change.hash,
    message:
      `change ${change.hash} held: it would delete ${deleted} and change ${updated} of the zone's ${total} RRsets ` +
      `(limits ${settings.maxDeletePercent}% and ${settings.maxUpdatePercent}%, measured against the last content ` +
      `that stayed unchanged); the zone keeps serving its previous content. Confirm exactly this change ${how}` +
      (stale.length > 0
        ? `; the confirmation ${stale.map((s) => JSON.stringify(s)).join(', ')} is for another change and does nothing`
        : ''),
  };
}

/** How to confirm a held change in a cluster. */
export function annotationHint(hash: string): string {
  return `with the annotation ${CONFIRM_CHANGE_ANNOTATION}: "${hash}" on this DNSZone`;
}
