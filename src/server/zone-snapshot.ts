import { recordIdentity } from '../dns/dnssec/canonical.ts';
import { labelCount, type Name, nameKey, parentName } from '../dns/name.ts';
import { type RecordTypeName, RRType, typeName } from '../dns/rrtype.ts';
import type { RRsetData, RRsetDelta } from '../zones/rrset.ts';
import type { SoaFields } from '../zones/soa.ts';
import type { ServedRRset } from './served-rrset.ts';
import { ZoneJournal } from './transfer/journal.ts';
import type { TransferPolicy } from './transfer/transfer-policy.ts';
import { ZoneDnssec, type ZoneDnssecData } from './zone-dnssec.ts';

// Defined apart so that the journal can name it without importing the snapshot.
export type { ServedRRset };

export interface ZoneNode {
  owner: Name;
  rrsets: Map<number, ServedRRset>;
  /** A non-apex node with NS: a delegation point (RFC 1034 §4.2.1). */
  cut: boolean;
}

/** A change to a served zone: RRsets replaced or added, and RRsets removed. */
export type ZonePatch = RRsetDelta<RRsetData>;

/**
 * One zone as the server answers from it. A zone is built once and then patched: a patch touches only
 * the names it changes (plus their empty-non-terminal ancestors), and runs synchronously, so a query —
 * which also runs to completion on the same thread — sees the zone either wholly before or wholly
 * after a change, never half of it. Names are looked up by `nameKey` (ASCII-lowercased).
 */
export class ZoneSnapshot {
  readonly origin: Name;
  readonly originKey: string;
  readonly originLabels: number;
  serial: number;
  soaFields: SoaFields;
  soa: ServedRRset;
  /** RFC 2308 §5: negative answers carry the SOA with TTL = min(SOA TTL, SOA MINIMUM). */
  negativeSoa: ServedRRset;
  readonly nodes = new Map<string, ZoneNode>();
  /** Names with no records that have descendants: empty non-terminals answer NODATA (RFC 4592 §2.2.2). */
  readonly emptyNonTerminals = new Set<string>();
  /** Recent changes, for IXFR. */
  readonly journal: ZoneJournal;
  /** Delegation points in the zone: while there are none, lookups skip the search for a cut. */
  cutCount = 0;
  /** Who may transfer the zone and how (from the zone's class); undefined: transfers refused. */
  transfers: TransferPolicy | undefined;
  /**
   * A signed zone's DNSSEC material (RRSIGs, the denial chain); undefined for a zone served unsigned.
   * A signed zone is built whole for every serial (`build` with `dnssec`), never patched.
   */
  dnssec: ZoneDnssec | undefined;
  /** Direct children (nodes or empty non-terminals) per name, to keep the empty non-terminals exact. */
  private readonly childCount = new Map<string, number>();
  private records = 0;

  private constructor(
    origin: Name,
    soa: SoaFields,
    serial: number,
    transfers?: TransferPolicy,
    journal?: ZoneJournal,
  ) {
    this.transfers = transfers;
    this.journal = journal ?? new ZoneJournal(transfers?.journalSize ?? 0);
    this.origin = origin;
    this.originKey = nameKey(origin);
    this.originLabels = labelCount(origin);
    this.serial = serial;
    this.soaFields = soa;
    this.soa = soaRRset(origin, soa, serial);
    this.negativeSoa = negative(this.soa, soa);
    this.dnssec = undefined;
  }

  get recordCount(): number {
    return this.records;
  }

  /** The name's node, when it holds RRsets (the answer algorithm's view of a zone, `ZoneView`). */
  node(key: string): ZoneNode | undefined {
    return this.nodes.get(key);
  }

  isEmptyNonTerminal(key: string): boolean {
    return this.emptyNonTerminals.has(key);
  }

  static build(
    origin: Name,
    soa: SoaFields,
    serial: number,
    rrsets: Iterable<RRsetData>,
    transfers?: TransferPolicy,
    dnssec?: ZoneDnssecData,
    journal?: ZoneJournal,
  ): ZoneSnapshot {
    const zone = new ZoneSnapshot(origin, soa, serial, transfers, journal);
    zone.upsert(zone.soa);
    for (const rrset of rrsets) zone.upsert(served(rrset));
    if (dnssec) {
      // DNSKEY and NSEC3PARAM at the apex, NSEC at each owner: answered like the zone's other RRsets.
      zone.dnssec = new ZoneDnssec(origin, dnssec);
      for (const rrset of zone.dnssec.nodeRRsets) zone.upsert(rrset);
    }
    return zone;
  }

  /** Builds from a full computed zone (as `assembleZone` returns it). */
  static fromAssembled(
    zone: { origin: Name; soa: SoaFields; rrsets: Iterable<RRsetData> },
    serial: number,
  ): ZoneSnapshot {
    return ZoneSnapshot.build(zone.origin, zone.soa, serial, zone.rrsets);
  }

  /**
   * Applies a patch and the new serial and SOA in one synchronous step, and records what changed
   * record by record in the journal (for IXFR).
   */
  patch(patch: ZonePatch, serial: number, soa: SoaFields): void {
    // Signatures cover the serial (the SOA's RRSIG): a signed zone is rebuilt, never patched.
    if (this.dnssec) throw new Error(`zone ${this.origin} is signed: it is replaced whole, not patched`);
    const journaling = this.journal.enabled;
    const removed: ServedRRset[] = [];
    const added: ServedRRset[] = [];
    for (const d of patch.deletes) {
      const old = this.remove(nameKey(d.owner), RRType[d.type]);
      if (old && journaling) removed.push(old);
    }
    for (const rrset of patch.upserts) {
      const next = served(rrset);
      const old = this.upsert(next);
      if (!journaling) continue;
      const [gone, come] = recordDiff(old, next);
      if (gone) removed.push(gone);
      if (come) added.push(come);
    }
    if (journaling) this.journal.append({ from: this.serial, to: serial, removed, added });
    this.serial = serial;
    this.soaFields = soa;
    this.soa = soaRRset(this.origin, soa, serial);
    this.negativeSoa = negative(this.soa, soa);
    this.nodes.get(this.originKey)!.rrsets.set(RRType.SOA, this.soa);
  }

  /** The zone's RRsets (SOA excluded), e.g. to hand the whole zone to another process. */
  *rrsets(): Generator<RRsetData> {
    for (const node of this.nodes.values()) {
      for (const rrset of node.rrsets.values()) {
        if (rrset.type === RRType.SOA || rrset.dnssec) continue;
        yield {
          owner: rrset.owner,
          type: typeName(rrset.type) as RecordTypeName,
          ttl: rrset.ttl,
          rdata: rrset.rdata,
        };
      }
    }
  }

  /** Every RRset but the SOA, as served (AXFR); a signed zone's DNSSEC RRsets and RRSIGs after them. */
  *transferRRsets(): Generator<ServedRRset> {
    for (const node of this.nodes.values()) {
      for (const rrset of node.rrsets.values()) if (rrset.type !== RRType.SOA) yield rrset;
    }
    if (this.dnssec) yield* this.dnssec.transferRRsets;
  }

  /** Adds or replaces an RRset; returns the one it replaced. */
  private upsert(rrset: ServedRRset): ServedRRset | undefined {
    const key = nameKey(rrset.owner);
    let node = this.nodes.get(key);
    if (!node) {
      node = { owner: rrset.owner, rrsets: new Map(), cut: false };
      this.nodes.set(key, node);
      if (this.emptyNonTerminals.delete(key)) {
        // It was counted by its parent as an empty non-terminal already.
      } else if (key !== this.originKey) {
        this.linkToParent(rrset.owner);
      }
    }
    const old = node.rrsets.get(rrset.type);
    this.records += rrset.rdata.length - (old?.rdata.length ?? 0);
    node.rrsets.set(rrset.type, rrset);
    if (rrset.type === RRType.NS && key !== this.originKey && !node.cut) {
      node.cut = true;
      this.cutCount++;
    }
    return old;
  }

  /** Removes an RRset; returns it. */
  private remove(key: string, type: number): ServedRRset | undefined {
    const node = this.nodes.get(key);
    const rrset = node?.rrsets.get(type);
    if (!node || !rrset) return undefined;
    node.rrsets.delete(type);
    this.records -= rrset.rdata.length;
    if (type === RRType.NS && node.cut) {
      node.cut = false;
      this.cutCount--;
    }
    if (node.rrsets.size > 0 || key === this.originKey) return rrset;
    this.nodes.delete(key);
    if ((this.childCount.get(key) ?? 0) > 0) this.emptyNonTerminals.add(key);
    else this.unlinkFromParent(node.owner);
    return rrset;
  }

  /** Counts a new name under its parent, turning missing ancestors into empty non-terminals. */
  private linkToParent(owner: Name): void {
    let name = owner;
    for (;;) {
      name = parentName(name);
      const key = nameKey(name);
      const count = this.childCount.get(key) ?? 0;
      this.childCount.set(key, count + 1);
      if (key === this.originKey || this.nodes.has(key) || this.emptyNonTerminals.has(key)) return;
      this.emptyNonTerminals.add(key);
    }
  }

  /** Uncounts a removed name; ancestors left with no children and no records disappear too. */
  private unlinkFromParent(owner: Name): void {
    let name = owner;
    for (;;) {
      name = parentName(name);
      const key = nameKey(name);
      const count = (this.childCount.get(key) ?? 1) - 1;
      if (count > 0) {
        this.childCount.set(key, count);
        return;
      }
      this.childCount.delete(key);
      if (!this.emptyNonTerminals.delete(key)) return;
    }
  }
}

/** The records an RRset replacement removes and adds (same RDATA and TTL count as unchanged). */
function recordDiff(
  old: ServedRRset | undefined,
  next: ServedRRset,
): [ServedRRset | undefined, ServedRRset | undefined] {
  if (!old) return [undefined, next];
  if (old.ttl !== next.ttl) return [old, next];
  // The same record: names without regard to case, text and octets as written (RFC 4343 §3), so a
  // TXT value whose case changed is removed and added.
  const oldIds = old.rdata.map(recordIdentity);
  const nextIds = next.rdata.map(recordIdentity);
  const before = new Set(oldIds);
  const after = new Set(nextIds);
  const gone = old.rdata.filter((_, i) => !after.has(oldIds[i]!));
  const come = next.rdata.filter((_, i) => !before.has(nextIds[i]!));
  return [
    // Subsets of the RDATA: the cached wire form of the whole RRset does not apply to them.
    gone.length > 0 ? { ...old, rdata: gone, wire: undefined } : undefined,
    come.length > 0 ? { ...next, rdata: come, wire: undefined } : undefined,
  ];
}

/**
 * What a patch removes and adds, record by record (an IXFR journal entry, RFC 1995 §4), for a zone
 * read through `rrset` (the zone before the patch); what `ZoneSnapshot.patch` journals, for a zone
 * that is not patched in place (a zone image, ADR 0020).
 */
export function patchDiff(
  rrset: (ownerKey: string, type: number) => ServedRRset | undefined,
  patch: ZonePatch,
): { removed: ServedRRset[]; added: ServedRRset[] } {
  const removed: ServedRRset[] = [];
  const added: ServedRRset[] = [];
  // As in `patch`: deletes first, so an upsert of a deleted RRset adds it whole.
  const deleted = new Set<string>();
  for (const d of patch.deletes) {
    const key = nameKey(d.owner);
    const type = RRType[d.type];
    const old = rrset(key, type);
    if (old) removed.push(old);
    deleted.add(`${type}/${key}`);
  }
  for (const u of patch.upserts) {
    const key = nameKey(u.owner);
    const type = RRType[u.type];
    const old = deleted.has(`${type}/${key}`) ? undefined : rrset(key, type);
    const [gone, come] = recordDiff(old, served(u));
    if (gone) removed.push(gone);
    if (come) added.push(come);
  }
  return { removed, added };
}

function served(rrset: RRsetData): ServedRRset {
  return {
    owner: rrset.owner,
    type: RRType[rrset.type],
    ttl: rrset.ttl,
    rdata: rrset.rdata,
    wire: undefined,
  };
}

function soaRRset(origin: Name, soa: SoaFields, serial: number): ServedRRset {
  return {
    owner: origin,
    type: RRType.SOA,
    ttl: soa.ttl,
    rdata: [
      {
        type: 'SOA',
        mname: soa.mname,
        rname: soa.rname,
        serial,
        refresh: soa.refresh,
        retry: soa.retry,
        expire: soa.expire,
        minimum: soa.minimum,
      },
    ],
  };
}

function negative(soaRR: ServedRRset, soa: SoaFields): ServedRRset {
  return { ...soaRR, ttl: Math.min(soa.ttl, soa.minimum) };
}
