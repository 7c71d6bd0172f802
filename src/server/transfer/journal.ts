import { serialGreater } from '../../zones/serial.ts';
import type { ServedRRset } from '../served-rrset.ts';

/** One change of a zone, record by record (RFC 1995 §4: the deleted RRs, then the added RRs). */
export interface JournalEntry {
  from: number;
  to: number;
  removed: ServedRRset[];
  added: ServedRRset[];
}

/**
 * The recent changes of one zone, oldest first, to answer IXFR (RFC 1995). Bounded by a number of
 * changes; a secondary whose serial is older than the journal reaches back gets the whole zone.
 */
export class ZoneJournal {
  private entries: JournalEntry[] = [];
  private limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  get enabled(): boolean {
    return this.limit > 0;
  }

  get length(): number {
    return this.entries.length;
  }

  resize(limit: number): void {
    this.limit = limit;
    this.trim();
  }

  append(entry: JournalEntry): void {
    if (this.limit <= 0) return;
    const last = this.entries.at(-1);
    // A gap (the zone was rebuilt whole in between) breaks the chain: start again from here.
    if (last && last.to !== entry.from) this.entries = [];
    this.entries.push(entry);
    this.trim();
  }

  clear(): void {
    this.entries = [];
  }

  /** The changes from `serial` to now, or undefined when the journal does not reach back that far. */
  since(serial: number): JournalEntry[] | undefined {
    if (this.entries.at(-1)?.to === serial) return []; // up to date
    const start = this.entries.findIndex((e) => e.from === serial);
    if (start < 0) return undefined;
    return this.entries.slice(start);
  }

  /** Every change held, oldest first (to hand the journal to another process). */
  all(): readonly JournalEntry[] {
    return this.entries;
  }

  /** Whether `serial` is older than anything the journal holds (for metrics and logs). */
  predates(serial: number): boolean {
    const first = this.entries[0];
    return first === undefined || serialGreater(first.from, serial);
  }

  private trim(): void {
    if (this.entries.length > this.limit) this.entries = this.entries.slice(this.entries.length - this.limit);
  }
}
