import type { Steering } from '../api/steering.ts';
import type { Name } from '../dns/name.ts';
import type { Rdata } from '../dns/rdata.ts';
import type { RecordTypeName } from '../dns/rrtype.ts';

/** Where an RRset in a computed zone came from: a user's record set, the class, or a child zone. */
export type RRsetOrigin =
  | { kind: 'recordSet'; namespace: string; name: string }
  | { kind: 'apex' }
  | { kind: 'childZone'; namespace: string; name: string }
  | { kind: 'glue'; namespace: string; name: string };

/** One RRset: every record of one type at one owner name, with one TTL (RFC 2181 §5.2). */
export interface RRsetData {
  owner: Name;
  type: RecordTypeName;
  ttl: number;
  rdata: Rdata[];
}

/** An RRset in a computed zone, with where it came from. */
export interface RRset extends RRsetData {
  origin: RRsetOrigin;
  /**
   * How answers pick among the records per query (health checks, selection), from the record set's
   * steering fields. Part of the zone's content hash; backends that cannot steer serve every record.
   */
  steering?: Steering;
}

/** Names one RRset of a zone: its owner and type. */
export interface RRsetKey {
  owner: Name;
  type: RecordTypeName;
}

/**
 * A change of a zone's content, RRset by RRset: RRsets to put in place whole and RRsets to remove.
 * What the zone model reports, what a backend is sent as a delta from a serial, and what the DNS
 * workers patch their zones with.
 */
export interface RRsetDelta<R extends RRsetData = RRset> {
  readonly upserts: readonly R[];
  readonly deletes: readonly RRsetKey[];
}

/**
 * A zone's published content (what `rrsets()` yields) looked up by owner name, for work that reads a
 * few names of a big zone: the overlay of a one-record change (ADR 0020 §4) reads the changed names
 * and their ancestors here instead of passing over the whole content.
 */
export interface PublishedByName {
  /** The RRsets published at the owner whose `nameKey` is `ownerKey`, by type code; empty when none. */
  publishedAt(ownerKey: string): RRset[];
  /**
   * Whether the name publishes nothing while some name below it does: an empty non-terminal (RFC 4592
   * §2.2.2). Never the apex.
   */
  isEmptyNonTerminal(ownerKey: string): boolean;
}

/**
 * One RRset of the zone the backend did not program while programming the rest: something the backend
 * holds and Zonekeeper does not own takes its name (`Conflict`), or the backend refused its content
 * (`BackendRejected`), or cannot answer for it (`AliasTargetUnresolvable`). The message says what holds
 * it or what was refused, and what to do.
 */
export interface RRsetProblem {
  owner: Name;
  type: RecordTypeName;
  /** Where the RRset came from, so the problem is reported on the record set (or zone) behind it. */
  origin: RRsetOrigin;
  /**
   * `AliasTargetUnresolvable`: an ALIAS the built-in server serves but cannot answer (its target is
   * outside the zones served and no recursive resolver is configured). `HealthCheckRefused`: a steered
   * RRset whose health checks the built-in server did not start (its namespace's probe limit, or no
   * probe slot left); its records are all answered.
   */
  reason: 'Conflict' | 'BackendRejected' | 'AliasTargetUnresolvable' | 'HealthCheckRefused';
  message: string;
}
