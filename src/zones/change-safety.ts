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
  type DNSZone,
  type DNSZoneClass,
  type EffectiveChangeSafety,
  effectiveChangeSafety,
} from '../api/index.ts';
import { steeredTtl } from '../api/steering.ts';
import { nameKey } from '../dns/name.ts';
import { printRdata, type Rdata, rdataIdentical } from '../dns/rdata.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';
import type { AssembledZone } from './assemble.ts';
import type { ResourceKey } from './resource-key.ts';
import type { RRset } from './rrset.ts';
import { zoneDefaultTtl } from './soa.ts';
import { rrsetId } from './zone-model.ts';

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
   * SHA-256 (first 32 hex digits: 128 bits, so that no writer can prepare two changes with one hash) over the zone's origin and every RRset that differs from the
   * baseline, as it was and as it would be: the same change from the same baseline always has the
   * same hash, any other change another one.
   */
  hash: string;
  /** Measured by count against the RRsets served before this process started (`ChangeBaseline.served`). */
  byCount?: boolean;
  /**
   * Held whatever its size: a change was held when the process before this one stopped, and the
   * content now is not what was served (`ChangeBaseline.served` with `heldHash`).
   */
  stillHeld?: boolean;
}

/** What the baseline published at an RRset, and the zone's default TTL it was published under. */
interface Noted {
  rrset: RRset | undefined;
  defaultTtl: number;
}

/**
 * The baseline of one zone, kept as a delta: for every RRset changed since the baseline was taken, what
 * the baseline published there. Costs what changed, not the zone.
 */
export class ChangeBaseline {
  private readonly before = new Map<string, Noted>();
  /** RRsets of the baseline. */
  total: number;
  /**
   * Only the baseline's count is known, not its content: the RRsets last served before this process
   * started (ADR 0018). A change is then measured by count: the RRsets fewer than the baseline are
   * deleted; nothing is known to have changed. Cleared when the baseline is reset.
   */
  private countOnly: boolean;
  /**
   * The content hash of what was served before this process started, when a change of it was held
   * then: a first content with another hash stays held, whatever its count (ADR 0018).
   */
  private heldHash: string | undefined;

  constructor(total: number) {
    this.total = total;
    this.countOnly = false;
    this.heldHash = undefined;
  }

  /**
   * A baseline of which only the count is known: `served` RRsets, the content last served before
   * this process started, when the first content built now has fewer — or, with `heldHash` (the
   * served content's hash), whenever a change was held when the process before stopped.
   */
  static served(served: number, heldHash?: string): ChangeBaseline {
    const baseline = new ChangeBaseline(served);
    baseline.countOnly = true;
    baseline.heldHash = heldHash;
    return baseline;
  }

  /**
   * Notes a change taken into the model: each RRset's previous content, if it is the first change since
   * the baseline, with the default TTL of the model it was published in.
   */
  note(previous: ReadonlyMap<string, RRset | undefined>, defaultTtl: number): void {
    for (const [id, rrset] of previous) if (!this.before.has(id)) this.before.set(id, { rrset, defaultTtl });
  }

  /** The current content becomes the baseline. */
  reset(total: number): void {
    this.before.clear();
    this.total = total;
    this.countOnly = false;
    this.heldHash = undefined;
  }

  /** Only the baseline's count is known (`served`). */
  get byCount(): boolean {
    return this.countOnly;
  }

  get changedSinceBaseline(): boolean {
    return this.countOnly || this.before.size > 0;
  }

  /**
   * The change from the baseline to the current content; `current(id)` is what the zone publishes now
   * at the id (`owner key NUL type`), under the zone's default TTL `defaultTtl`. An RRset whose TTL
   * differs only because it follows the zone's default TTL, which changed (`sameContent`), is no
   * change.
   */
  measure(
    origin: string,
    current: (ownerKey: string, type: RecordTypeName) => RRset | undefined,
    defaultTtl: number,
    /** The whole current content, read only for a baseline of which only the count is known. */
    whole?: WholeContent,
  ): MeasuredChange {
    if (this.countOnly && whole !== undefined) return this.measureCount(origin, whole);
    const counts: ChangeCounts = { total: this.total, deleted: 0, updated: 0, added: 0 };
    const lines: string[] = [];
    for (const [id, noted] of this.before) {
      const was = noted.rrset;
      const cut = id.lastIndexOf('\u0000');
      const now = current(id.slice(0, cut), id.slice(cut + 1) as RecordTypeName);
      if (was === undefined && now === undefined) continue;
      if (was !== undefined && now !== undefined && sameContent(was, noted.defaultTtl, now, defaultTtl))
        continue;
      if (was === undefined) counts.added++;
      else if (now === undefined) counts.deleted++;
      else counts.updated++;
      const rrset = (now ?? was)!;
      const before = was === undefined ? '-' : content(was);
      const after = now === undefined ? '-' : content(now);
      lines.push(`${rrset.owner.toLowerCase()} ${rrset.type} ${before} => ${after}`);
    }
    lines.sort();
    const hash = createHash('sha256')
      .update(`${origin.toLowerCase()}\n${lines.join('\n')}`)
      .digest('hex');
    return { counts, hash: hash.slice(0, 32) };
  }

  private measureCount(origin: string, whole: WholeContent): MeasuredChange {
    const change = measureByCount(origin, this.total, whole);
    // Held before this start: only the very content that was served (the change undone) goes free.
    if (this.heldHash !== undefined && whole.hash?.() !== this.heldHash) change.stillHeld = true;
    return change;
  }
}

/**
 * A change from a baseline known only by its count: the RRsets fewer than it are deleted, the RRsets
 * more are added. The hash covers the origin, the baseline's count and every RRset of the content, so
 * it names exactly this content measured from this baseline; any further edit gives another hash.
 */
function measureByCount(origin: string, total: number, whole: WholeContent): MeasuredChange {
  const counts: ChangeCounts = {
    total,
    deleted: Math.max(0, total - whole.count),
    updated: 0,
    added: Math.max(0, whole.count - total),
  };
  const lines: string[] = [];
  for (const rrset of whole.rrsets())
    if (rrset.type !== 'SOA') lines.push(`${rrset.owner.toLowerCase()} ${rrset.type} ${content(rrset)}`);
  lines.sort();
  const hash = createHash('sha256')
    .update(`${origin.toLowerCase()}\nserved ${total} RRsets\n${lines.join('\n')}`)
    .digest('hex');
  return { counts, hash: hash.slice(0, 32), byCount: true };
}

/** A zone's whole current content, for a baseline known by its count only. */
export interface WholeContent {
  count: number;
  rrsets: () => Iterable<RRset>;
  /** The content hash (as recorded in `status.hash`), read only when a change was held before. */
  hash?: () => string;
}

/** One side of a rebuild: a model's RRsets and the zone's default TTL they were made with. */
export interface RebuildSide {
  rrsets: Iterable<RRset>;
  defaultTtl: number;
}

/**
 * What a rebuilt model changes against the model it replaces, as `ChangeBaseline.note` takes it (with
 * `before.defaultTtl`): each RRset (by id, `owner key NUL type`) added, deleted, or with other content
 * (`sameContent`), with what the replaced model published there. A TTL that follows the zone's default
 * TTL is not compared: a rebuild for a new default TTL gives every such RRset a new one, which is the
 * settings' change, not the content's; a TTL the record set sets itself is. The SOA is not counted.
 */
export function rebuildChanges(before: RebuildSide, after: RebuildSide): Map<string, RRset | undefined> {
  const id = (r: RRset) => rrsetId(nameKey(r.owner), r.type);
  const changes = new Map<string, RRset | undefined>();
  const same = (old: RRset, r: RRset) => sameContent(old, before.defaultTtl, r, after.defaultTtl);
  // Two models of one zone yield their RRsets in the same order (canonical), mostly at the same owner
  // spelled alike: those are paired as they come, without an id; the others are paired by id after.
  const was = new Map<string, RRset>();
  const rest: RRset[] = [];
  const a = before.rrsets[Symbol.iterator]();
  const b = after.rrsets[Symbol.iterator]();
  for (;;) {
    const x = a.next();
    const y = b.next();
    if (x.done === true && y.done === true) break;
    const old = x.done === true ? undefined : x.value;
    const r = y.done === true ? undefined : y.value;
    if (old !== undefined && r !== undefined && old.type === r.type && old.owner === r.owner) {
      if (old.type !== 'SOA' && !same(old, r)) changes.set(id(old), old);
      continue;
    }
    if (old !== undefined && old.type !== 'SOA') was.set(id(old), old);
    if (r !== undefined && r.type !== 'SOA') rest.push(r);
  }
  for (const r of rest) {
    const key = id(r);
    const old = was.get(key);
    was.delete(key);
    if (old === undefined) changes.set(key, undefined);
    else if (!same(old, r)) changes.set(key, old);
  }
  for (const [key, old] of was) changes.set(key, old);
  return changes;
}

/**
 * Whether an RRset's TTL is the one the zone's default TTL gives an RRset that sets none: the default,
 * or for a warm standby (an ordered steered RRset) the minimum it is raised to (`steeredTtl`). A
 * record set's own TTL equal to it cannot be told apart, and is taken as following the default too.
 */
function followsDefault(rrset: RRset, defaultTtl: number): boolean {
  return (
    rrset.ttl === defaultTtl ||
    (rrset.steering?.policy === 'Ordered' &&
      rrset.ttl === steeredTtl({ placement: 'ActivePassiveWarm' }, defaultTtl))
  );
}

/**
 * Whether two RRsets at one id have the same content as change safety counts it: the same records, and
 * the same TTL — or each the TTL its zone's default gives (`followsDefault`): a new default TTL (the
 * zone's or its class's settings) is not a change of the zone's content, whether it reaches an RRset in
 * the rebuild or when a deleted one is made again.
 */
export function sameContent(a: RRset, aDefaultTtl: number, b: RRset, bDefaultTtl: number): boolean {
  if (a.ttl !== b.ttl && !(followsDefault(a, aDefaultTtl) && followsDefault(b, bDefaultTtl))) return false;
  return sameRecords(a.rdata, b.rdata);
}

/**
 * Whether two RRsets hold the same records, in any order: what comparing their `records` says, without
 * printing every record of a zone. A record set's records are parsed once and kept (the parse cache),
 * so a rebuilt model mostly shares them with the model it replaces (the same array); else they are
 * compared field by field in order, and only RRsets that differ so — other records, another order —
 * are printed and sorted.
 */
export function sameRecords(a: readonly Rdata[], b: readonly Rdata[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  let i = 0;
  while (i < a.length && rdataIdentical(a[i]!, b[i]!)) i++;
  return i === a.length || printedRecords(a) === printedRecords(b);
}

/** Records in canonical presentation form, sorted. */
function printedRecords(rdata: readonly Rdata[]): string {
  return rdata
    .map((r) => printRdata(r))
    .sort()
    .join(' | ');
}

/** An RRset's records in canonical presentation form, sorted (its TTL left out). */
function records(rrset: RRset): string {
  return printedRecords(rrset.rdata);
}

/** An RRset's content as one line: TTL and records in canonical presentation form, sorted. */
function content(rrset: RRset): string {
  return `${rrset.ttl} ${records(rrset)}`;
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
  if (!change.stillHeld && !overThreshold(settings, change.counts)) return { held: false, confirmed: false };
  if (confirmations.includes(change.hash)) return { held: false, confirmed: true };
  const { total, deleted, updated } = change.counts;
  const stale = confirmations.filter((c) => c !== change.hash);
  return {
    held: true,
    hash: change.hash,
    message:
      `change ${change.hash} held: ` +
      (change.stillHeld
        ? 'a change of the zone was held for confirmation when the controller stopped, and its content still differs from what is served; by count it '
        : 'it ') +
      `would delete ${deleted} and change ${updated} of the zone's ${total} RRsets ` +
      `(limits ${settings.maxDeletePercent}% and ${settings.maxUpdatePercent}%, measured against ` +
      (change.byCount
        ? 'the RRsets served before this start, by count'
        : 'the last content that stayed unchanged') +
      `); the zone keeps serving its previous content. Confirm exactly this change ${how}` +
      (stale.length > 0
        ? `; the confirmation ${stale.map((s) => JSON.stringify(s)).join(', ')} is for another change and does nothing`
        : ''),
  };
}

/** How to confirm a held change in a cluster. */
export function annotationHint(hash: string): string {
  return `with the annotation ${CONFIRM_CHANGE_ANNOTATION}: "${hash}" on this DNSZone`;
}

/** One zone as a plan sees it: its DNSZone, class and assembled content. */
export interface PlannedZoneSide {
  key: ResourceKey;
  resource: DNSZone;
  zoneClass: DNSZoneClass;
  zone: AssembledZone;
}

/**
 * A change a plan finds over the zone's limits: held until confirmed, or already confirmed (its hash
 * is in the zone's annotation or a confirmation).
 */
export interface PlannedHold {
  held: boolean;
  hash: string;
  counts: ChangeCounts;
  settings: EffectiveChangeSafety;
}

/**
 * Whether the controller would hold the change from `before` (served now) to `after` (undefined: the
 * change is within the limits, or not measured), taking what is
 * served now as the baseline: the same measure (`ChangeBaseline`), the same hash and the same decision
 * (`decideHold`) the controller applies, with the zone's own confirmation annotation (as it would be
 * after the change) and `confirmations` (e.g. `zonekeeper confirm` files). A change of the zone's
 * settings that rebuilds its model (SOA fields, default TTL, name servers, class) is measured as the
 * controller measures a rebuild (`rebuildChanges`: a TTL that follows the default TTL is not counted).
 * Never held, as in the controller: a zone created or deleted, and a domain moving to another DNSZone.
 */
export function planHold(
  before: PlannedZoneSide | undefined,
  after: PlannedZoneSide | undefined,
  confirmations: readonly string[] = [],
): PlannedHold | undefined {
  if (!before || !after || before.key !== after.key) return undefined;
  const origin = after.zone.origin;
  const settings = effectiveChangeSafety(after.zoneClass.spec.changeSafety, after.resource.spec.changeSafety);
  if (!settings.enabled) return undefined;
  const id = (r: RRset) => rrsetId(nameKey(r.owner), r.type);
  const was = new Map(before.zone.rrsets.map((r) => [id(r), r] as const));
  const now = new Map(after.zone.rrsets.map((r) => [id(r), r] as const));
  const defaultBefore = zoneDefaultTtl(before.resource, before.zoneClass);
  const defaultAfter = zoneDefaultTtl(after.resource, after.zoneClass);
  const baseline = new ChangeBaseline(was.size);
  // What differs, as the controller notes a rebuild; an edit within the same settings is measured
  // the same way (the default TTL is then the same on both sides).
  baseline.note(
    rebuildChanges(
      { rrsets: was.values(), defaultTtl: defaultBefore },
      { rrsets: now.values(), defaultTtl: defaultAfter },
    ),
    defaultBefore,
  );
  const change = baseline.measure(origin, (ownerKey, type) => now.get(rrsetId(ownerKey, type)), defaultAfter);
  const annotation = after.resource.metadata.annotations?.[CONFIRM_CHANGE_ANNOTATION]?.trim();
  const decision = decideHold(settings, change, [...(annotation ? [annotation] : []), ...confirmations], '');
  if (!decision.held && !decision.confirmed) return undefined;
  return { held: decision.held, hash: change.hash, counts: change.counts, settings };
}
