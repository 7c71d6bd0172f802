/**
 * Change safety for a manifests folder: a reload that would remove every object, or more than
 * `maxDeletePercent` of the objects the folder held at its baseline (the last set of objects that
 * stayed unchanged for the stability window, so removals arriving in slices add up), removes nothing.
 * The removed objects stay in the store — their zones keep serving — and each affected zone is held
 * with the hash of its part of the removal until that exact part is confirmed (`zonekeeper confirm`,
 * or the annotation in the zone's manifest) or the files come back. Pure bookkeeping: the source
 * applies what it returns.
 */
import { createHash } from 'node:crypto';
import { CHANGE_SAFETY_MIN_RRSETS, DEFAULT_MAX_DELETE_PERCENT } from '../../api/index.ts';

export interface FolderHoldOptions {
  /** How long the set of objects must stay unchanged to become the baseline. */
  windowMs: number;
  maxDeletePercent?: number;
  /** The hashes confirmed for a zone (confirmation files, the zone manifest's annotation). */
  confirmations: (zoneKey: string) => readonly string[];
  /** How to confirm a zone's held removal (for the message). */
  confirmHint: (zoneKey: string, hash: string) => string;
}

/** One zone's part of a held removal. */
export interface HeldZoneRemoval {
  hash: string;
  message: string;
  ids: ReadonlySet<string>;
}

export interface RemovalInput {
  /** Objects (`Kind/key`) no manifest defines any more, this reload's and those held before. */
  removals: readonly string[];
  /** Objects in the store before this reload. */
  existing: number;
  /** The zones (keys) an object's removal affects: the zone itself, a record set's zone, a class's zones. */
  zonesOf: (id: string) => readonly string[];
  /** A digest of the object as the store holds it (so the hash names its exact version). */
  versionOf: (id: string) => string;
  now: number;
}

export class FolderHold {
  private readonly options: FolderHoldOptions;
  private baselineCount = 0;
  private readonly removedSinceBaseline = new Set<string>();
  private lastChangeAt = Number.NEGATIVE_INFINITY;
  private held = new Map<string, HeldZoneRemoval>();

  constructor(options: FolderHoldOptions) {
    this.options = options;
  }

  /** The zones held now, by zone key. */
  holds(): ReadonlyMap<string, HeldZoneRemoval> {
    return this.held;
  }

  /**
   * Decides which removals apply now; the others stay held. Called on every reload with every object
   * that no manifest defines (held ones included).
   */
  decide(input: RemovalInput): { apply: string[]; held: ReadonlyMap<string, HeldZoneRemoval> } {
    const { removals, existing, now } = input;
    const maxDelete = this.options.maxDeletePercent ?? DEFAULT_MAX_DELETE_PERCENT;
    if (this.held.size === 0 && now - this.lastChangeAt >= this.options.windowMs) {
      this.baselineCount = existing;
      this.removedSinceBaseline.clear();
    }
    if (removals.length === 0) {
      this.held = new Map();
      return { apply: [], held: this.held };
    }
    this.lastChangeAt = now;
    for (const id of removals) this.removedSinceBaseline.add(id);
    const removed = this.removedSinceBaseline.size;
    const emptied = existing > 0 && removals.length >= existing;
    const over =
      emptied ||
      (this.baselineCount >= CHANGE_SAFETY_MIN_RRSETS && removed * 100 > maxDelete * this.baselineCount);
    if (!over) {
      this.held = new Map();
      return { apply: [...removals], held: this.held };
    }
    // Each affected zone's part, with its hash; objects of no zone are not served and go now.
    const parts = new Map<string, string[]>();
    const apply: string[] = [];
    for (const id of removals) {
      const zones = input.zonesOf(id);
      if (zones.length === 0) apply.push(id);
      for (const zone of zones) {
        const list = parts.get(zone);
        if (list) list.push(id);
        else parts.set(zone, [id]);
      }
    }
    const held = new Map<string, HeldZoneRemoval>();
    const released = new Set<string>();
    for (const [zone, ids] of parts) {
      ids.sort();
      const hash = createHash('sha256')
        .update(`folder removal\n${zone}\n${ids.map((id) => `${id} ${input.versionOf(id)}`).join('\n')}`)
        .digest('hex')
        .slice(0, 32);
      const confirmations = this.options.confirmations(zone);
      if (confirmations.includes(hash)) {
        for (const id of ids) released.add(id);
        continue;
      }
      const stale = confirmations.filter((c) => c !== hash);
      held.set(zone, {
        hash,
        ids: new Set(ids),
        message:
          `change ${hash} held: the manifests folder ${emptied ? 'holds no objects any more' : `lost ${removed} of its ${this.baselineCount} objects at once (more than ${maxDelete}%)`}; ` +
          `removing ${ids.length} object(s) of this zone (${summary(ids)}) waits, and the zone keeps serving its previous content. ` +
          `Restore the files, or confirm exactly this removal ${this.options.confirmHint(zone, hash)}` +
          (stale.length > 0
            ? `; the confirmation ${stale.map((s) => JSON.stringify(s)).join(', ')} is for another change and does nothing`
            : ''),
      });
    }
    // An object shared by several zones (a class) goes only when none of them holds it any more.
    const stillHeld = new Set<string>();
    for (const part of held.values()) for (const id of part.ids) stillHeld.add(id);
    for (const id of released) if (!stillHeld.has(id)) apply.push(id);
    this.held = held;
    return { apply, held };
  }
}

function summary(ids: readonly string[]): string {
  const shown = ids.slice(0, 3).map((id) => id.replace('/', ' '));
  return ids.length > 3 ? `${shown.join(', ')} and ${ids.length - 3} more` : shown.join(', ');
}
