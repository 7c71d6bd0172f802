import { type Name, nameKey, stripFirstLabel } from '../dns/name.ts';
import type { ZoneView } from './answer.ts';
import { type SelectionBinding, SelectionTable } from './selection/selection-table.ts';
import type { ServedRRset } from './served-rrset.ts';
import type { ZoneJournal } from './transfer/journal.ts';
import type { TransferPolicy } from './transfer/transfer-policy.ts';
import type { ZoneSnapshot } from './zone-snapshot.ts';

/**
 * A zone as a DNS process serves it: a `ZoneSnapshot` (object graph, patched in place) or an
 * `ImageZone` (a zone image, replaced whole; ADR 0020). What the answer path, transfers and metrics
 * read of it.
 */
export interface ServedZone extends ZoneView {
  readonly origin: Name;
  readonly serial: number;
  readonly soa: ServedRRset;
  /** Records in the zone, the SOA included (metrics). */
  readonly recordCount: number;
  /** Who may transfer the zone and how; undefined: transfers refused. */
  transfers: TransferPolicy | undefined;
  /** Recent changes, for IXFR. */
  readonly journal: ZoneJournal;
  /** Every RRset but the SOA (AXFR). */
  transferRRsets(): Iterable<ServedRRset>;
  /** Called when the table stops serving this zone object (replaced or deleted). */
  release?(): void;
}

/**
 * The zones a server answers for. Replacing a zone is a single Map.set of a fully built snapshot,
 * which is atomic for readers on the same thread.
 */
export class ZoneTable<Z extends ServedZone = ZoneSnapshot> {
  private readonly zones = new Map<string, Z>();
  /** Moves on every change to any zone (cached responses made at an older version are stale). */
  version = 0;
  /** Called after each change, e.g. to refresh metrics. */
  onChange?: () => void;
  /** RRsets answered through a selection policy (see selection/); empty unless something binds them. */
  readonly selections = new SelectionTable();

  get size(): number {
    return this.zones.size;
  }

  set(snapshot: Z): void {
    const old = this.zones.get(snapshot.originKey);
    this.zones.set(snapshot.originKey, snapshot);
    if (old !== snapshot) old?.release?.();
    this.version++;
    this.onChange?.();
  }

  /** Notes that a zone held here was patched in place. */
  changed(_snapshot: Z): void {
    this.version++;
    this.onChange?.();
  }

  /**
   * Stops serving a zone. Its selection bindings go with it (a zone served again starts without
   * any, until they are set again); true when the zone was served.
   */
  delete(origin: Name): boolean {
    const key = nameKey(origin);
    this.zones.get(key)?.release?.();
    const removed = this.zones.delete(key);
    const bound = this.selections.bindings(origin).length > 0;
    if (bound) this.selections.replace(origin, []);
    if (removed || bound) this.version++;
    if (removed) this.onChange?.();
    return removed;
  }

  /**
   * Replaces the selection bindings of a zone (see `SelectionTable.replace`, which throws on a bad
   * one). Moves the version like a zone change: cached responses made before may hold RRsets that are
   * now selected per client.
   */
  setSelections(origin: Name, bindings: readonly SelectionBinding[]): void {
    this.selections.replace(origin, bindings);
    this.version++;
  }

  get(origin: Name): Z | undefined {
    return this.zones.get(nameKey(origin));
  }

  all(): IterableIterator<Z> {
    return this.zones.values();
  }

  /** The zone with the longest origin that contains `key` (a nameKey), walking up label by label. */
  findZone(key: string): Z | undefined {
    let k = key;
    for (;;) {
      const zone = this.zones.get(k);
      if (zone) return zone;
      if (k === '.') return undefined;
      k = stripFirstLabel(k);
    }
  }
}
