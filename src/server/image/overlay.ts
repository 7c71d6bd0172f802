import { labelCount, type Name, nameKey, parentName } from '../../dns/name.ts';
import { type RecordTypeName, RRType, typeName } from '../../dns/rrtype.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import type { SoaFields } from '../../zones/soa.ts';
import type { ZoneNode } from '../zone-snapshot.ts';
import type { ZoneImage } from './zone-image.ts';

/**
 * The most names an overlay holds before the builder merges it into a new base (ADR 0020 §4): a
 * sixteenth of the base's names, at most 4,096, and at least 64 (below that a merge would run on
 * almost every change of a small zone, to save a few hundred bytes).
 */
export function overlayLimit(baseNodes: number): number {
  return Math.min(4096, Math.max(64, Math.ceil(baseNodes / 16)));
}

/** The zone as it is now, as `ZoneSnapshot` shows it (what an overlay is built from). */
export interface OverlaySource {
  readonly origin: Name;
  readonly originKey: string;
  readonly serial: number;
  readonly soaFields: SoaFields;
  node(key: string): ZoneNode | undefined;
  isEmptyNonTerminal(key: string): boolean;
}

/**
 * Adds to `names` (lowercased name → name) what an overlay must hold when `owners` changed: each
 * owner and each of its ancestors up to the apex. Those are the only names whose state (RRsets, empty
 * non-terminal, absent) a change of the owners can alter: an empty non-terminal exists because of a
 * descendant, so adding or removing a name can create or end one only above it (RFC 4592 §2.2.2).
 */
export function addChangedNames(names: Map<string, Name>, owners: Iterable<Name>, origin: Name): void {
  const originLabels = labelCount(origin);
  names.set(nameKey(origin), origin);
  for (const owner of owners) {
    let name = owner;
    for (;;) {
      const key = nameKey(name);
      if (names.has(key)) break;
      names.set(key, name);
      if (labelCount(name) <= originLabels) break;
      name = parentName(name);
    }
  }
}

/**
 * The overlay over `base` that makes it answer as `zone` does, given every name that changed since
 * `base` was built (`addChangedNames`): each such name in its state now, its RRsets, an empty
 * non-terminal, or a tombstone when it no longer exists. Overlays are cumulative: each replaces the
 * one before over the same base, so a reader holds one base and at most one overlay.
 */
export function buildOverlay(
  zone: OverlaySource,
  base: ZoneImage,
  changed: ReadonlyMap<string, Name>,
  options: { shared?: boolean } = {},
): ZoneImage {
  const rrsets: RRsetData[] = [];
  const emptyNonTerminals: Name[] = [];
  const tombstones: Name[] = [];
  for (const [key, name] of changed) {
    const node = zone.node(key);
    if (node !== undefined) {
      for (const rrset of node.rrsets.values()) {
        if (rrset.type === RRType.SOA) continue;
        rrsets.push({
          owner: rrset.owner,
          type: typeName(rrset.type) as RecordTypeName,
          ttl: rrset.ttl,
          rdata: rrset.rdata,
        });
      }
    } else if (zone.isEmptyNonTerminal(key)) emptyNonTerminals.push(name);
    else if (key !== zone.originKey) tombstones.push(name);
  }
  return base.overlay(zone.soaFields, zone.serial, rrsets, { emptyNonTerminals, tombstones, ...options });
}
