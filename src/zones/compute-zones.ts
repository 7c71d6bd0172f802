import type { DNSZone, DNSZoneClass, Domain, Resource } from '../api/index.ts';
import type { Name } from '../dns/name.ts';
import { type AssembledZone, assembleZone } from './assemble.ts';
import { CatalogFeed } from './catalog-feed.ts';
import { domainGate } from './domain-verification.ts';
import type { ResourceKey } from './resource-key.ts';
import { zoneAssemblyInput } from './zone-inputs.ts';

/** One served zone as the core computes it. */
export interface ComputedZone {
  /** The DNSZone's `namespace/name`. */
  key: ResourceKey;
  origin: Name;
  zone: AssembledZone;
  /** The DNSZone and the class it is served with (its settings: change safety, the model's signature). */
  resource: DNSZone;
  zoneClass: DNSZoneClass;
}

/**
 * The exact content of every zone the given (already validated) resources produce, as the controller
 * computes it: classes, zones and record sets go through the same CatalogFeed into a Catalog
 * (acceptance, adoption, child zones; objects being deleted are not served; zones waiting for a
 * verified Domain are not served) and each accepted zone through `assembleZone`. Pure and synchronous; zones come back sorted
 * by origin. Serials are not part of the content: pair each zone with the serial it is served at
 * (e.g. for `printZoneFile`).
 */
export function computeZones(resources: readonly Resource[]): ComputedZone[] {
  const feed = new CatalogFeed();
  // Classes with requireVerifiedDomain: a zone without a verified Domain of its namespace is not
  // served, and does not keep its domain from one that is (as the operator and the servers judge).
  const domains = resources.filter((r): r is Domain => r.kind === 'Domain');
  feed.catalog.waiting = (zone, zoneClass) =>
    zoneClass !== undefined && domainGate(zone, zoneClass, domains) !== undefined;
  // One load, as `serve` starts: which zones are served then depends only on the resources (ages and
  // the Accepted conditions in their status), never on the order they are listed in (ADR 0013).
  feed.load(resources);
  const catalog = feed.catalog;
  const out: ComputedZone[] = [];
  for (const key of catalog.acceptedZones()) {
    const input = zoneAssemblyInput(catalog, key);
    if (!input || domainGate(input.zone, input.zoneClass, domains) !== undefined) continue;
    const zone = assembleZone(input);
    out.push({ key, origin: zone.origin, zone, resource: input.zone, zoneClass: input.zoneClass });
  }
  out.sort((a, b) => (a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0));
  return out;
}
