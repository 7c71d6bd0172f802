import { labelCount, type Name, nameKey, parentName } from '../dns/name.ts';
import type { Rdata } from '../dns/rdata.ts';
import { RRType } from '../dns/rrtype.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import type { AssembledZone } from '../zones/assemble.ts';

/** An RRset as the server holds it: wire type code, TTL and RDATA. */
export interface ServedRRset {
  owner: Name;
  type: number;
  ttl: number;
  rdata: Rdata[];
}

export interface ZoneNode {
  owner: Name;
  rrsets: Map<number, ServedRRset>;
  /** A non-apex node with NS: a delegation point (RFC 1034 §4.2.1). */
  cut: boolean;
}

/**
 * One zone, immutable once built, served as a whole: the server swaps snapshots atomically, so no
 * query ever sees half a change. Names are looked up by `nameKey` (ASCII-lowercased).
 */
export class ZoneSnapshot {
  readonly origin: Name;
  readonly originKey: string;
  readonly originLabels: number;
  readonly serial: number;
  readonly soa: ServedRRset;
  /** RFC 2308 §5: negative answers carry the SOA with TTL = min(SOA TTL, SOA MINIMUM). */
  readonly negativeSoa: ServedRRset;
  readonly nodes: Map<string, ZoneNode>;
  /** Names with no records that have descendants: empty non-terminals answer NODATA (RFC 4592 §2.2.2). */
  readonly emptyNonTerminals: Set<string>;
  readonly recordCount: number;

  private constructor(
    origin: Name,
    serial: number,
    soa: ServedRRset,
    nodes: Map<string, ZoneNode>,
    ents: Set<string>,
  ) {
    this.origin = origin;
    this.originKey = nameKey(origin);
    this.originLabels = labelCount(origin);
    this.serial = serial;
    this.soa = soa;
    const soaData = soa.rdata[0] as Extract<Rdata, { type: 'SOA' }>;
    this.negativeSoa = { ...soa, ttl: Math.min(soa.ttl, soaData.minimum) };
    this.nodes = nodes;
    this.emptyNonTerminals = ents;
    let count = 0;
    for (const node of nodes.values()) for (const rrset of node.rrsets.values()) count += rrset.rdata.length;
    this.recordCount = count;
  }

  static fromAssembled(zone: AssembledZone, serial: number): ZoneSnapshot {
    const soa: ServedRRset = {
      owner: zone.origin,
      type: RRType.SOA,
      ttl: zone.soa.ttl,
      rdata: [
        {
          type: 'SOA',
          mname: zone.soa.mname,
          rname: zone.soa.rname,
          serial,
          refresh: zone.soa.refresh,
          retry: zone.soa.retry,
          expire: zone.soa.expire,
          minimum: zone.soa.minimum,
        },
      ],
    };
    const nodes = new Map<string, ZoneNode>();
    const originKey = nameKey(zone.origin);
    const add = (rrset: ServedRRset) => {
      const key = nameKey(rrset.owner);
      const node = getOrInsert(nodes, key, () => ({ owner: rrset.owner, rrsets: new Map(), cut: false }));
      node.rrsets.set(rrset.type, rrset);
      if (rrset.type === RRType.NS && key !== originKey) node.cut = true;
    };
    add(soa);
    for (const rrset of zone.rrsets) {
      add({ owner: rrset.owner, type: RRType[rrset.type], ttl: rrset.ttl, rdata: rrset.rdata });
    }
    const ents = new Set<string>();
    for (const node of nodes.values()) {
      let name = node.owner;
      while (nameKey(name) !== originKey) {
        name = parentName(name);
        const key = nameKey(name);
        if (nodes.has(key) || ents.has(key)) break;
        ents.add(key);
      }
    }
    return new ZoneSnapshot(zone.origin, serial, soa, nodes, ents);
  }
}
