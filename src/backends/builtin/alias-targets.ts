import { type Name, nameKey, stripFirstLabel } from '../../dns/name.ts';
import type { Rdata } from '../../dns/rdata.ts';
import type { ServedZone, ZoneTable } from '../../server/zone-table.ts';
import type { ResourceKey } from '../../zones/resource-key.ts';
import type { RRset, RRsetData, RRsetDelta, RRsetOrigin } from '../../zones/rrset.ts';
import type { RRsetProblem } from '../backend.ts';

interface Alias {
  owner: Name;
  target: Name;
  origin: RRsetOrigin;
}

interface ZoneAliases {
  key: ResourceKey;
  /** By owner name key. */
  aliases: Map<string, Alias>;
}

/**
 * The ALIAS record sets of the zones a built-in server serves, for a server without a recursive
 * resolver (`--alias-resolver`): such a server answers an ALIAS only from the zones it serves itself,
 * so an ALIAS whose target lies outside them gets SERVFAIL for every A and AAAA query. Those record
 * sets are reported as problems (reason AliasTargetUnresolvable), and since whether a target is served
 * changes when zones come and go, the zones whose ALIAS targets lie at or below a zone that appears or
 * disappears are handed to `recheck` to be applied (and reported) again.
 */
export class AliasTargets {
  private readonly table: ZoneTable<ServedZone>;
  private readonly recheck: (zone: ResourceKey) => void;
  /** Per served zone (origin key): its ALIAS record sets. */
  private readonly zones = new Map<string, ZoneAliases>();
  /**
   * Per name key — every ALIAS target and each of its ancestors — the zones (origin keys, with a count)
   * with an ALIAS target at or below it: the zones to recheck when a zone of that name comes or goes.
   */
  private readonly watchers = new Map<string, Map<string, number>>();

  constructor(table: ZoneTable<ServedZone>, recheck: (zone: ResourceKey) => void) {
    this.table = table;
    this.recheck = recheck;
  }

  /** Takes the ALIAS RRsets of a whole zone, replacing what was known of it. */
  replace(key: ResourceKey, origin: Name, rrsets: Iterable<RRset>): void {
    const originKey = nameKey(origin);
    const entry = this.entry(key, originKey);
    for (const alias of entry.aliases.values()) this.unwatch(alias.target, originKey);
    entry.aliases.clear();
    for (const rrset of rrsets) this.add(entry, originKey, rrset);
  }

  /** Applies a change to a zone's RRsets. */
  patch(key: ResourceKey, origin: Name, { upserts, deletes }: RRsetDelta): void {
    const originKey = nameKey(origin);
    const entry = this.entry(key, originKey);
    for (const d of deletes) if (d.type === 'ALIAS') this.removeAlias(entry, originKey, nameKey(d.owner));
    for (const rrset of upserts) {
      if (rrset.type !== 'ALIAS') continue;
      this.removeAlias(entry, originKey, nameKey(rrset.owner));
      this.add(entry, originKey, rrset);
    }
  }

  /** A zone stopped being served: forget its record sets. */
  forget(origin: Name): void {
    const originKey = nameKey(origin);
    const entry = this.zones.get(originKey);
    if (!entry) return;
    for (const alias of entry.aliases.values()) this.unwatch(alias.target, originKey);
    this.zones.delete(originKey);
  }

  /** A zone started or stopped being served: the zones whose ALIAS targets it may hold are rechecked. */
  servedChanged(origin: Name): void {
    const originKey = nameKey(origin);
    for (const watcher of this.watchers.get(originKey)?.keys() ?? []) {
      if (watcher === originKey) continue;
      const entry = this.zones.get(watcher);
      if (entry) this.recheck(entry.key);
    }
  }

  /** The zone's ALIAS record sets whose target is outside every zone served here. */
  problems(origin: Name): RRsetProblem[] {
    const entry = this.zones.get(nameKey(origin));
    if (!entry) return [];
    const problems: RRsetProblem[] = [];
    for (const alias of entry.aliases.values()) {
      if (this.table.findZone(nameKey(alias.target)) !== undefined) continue;
      problems.push({
        owner: alias.owner,
        type: 'ALIAS',
        origin: alias.origin,
        reason: 'AliasTargetUnresolvable',
        message:
          `ALIAS target ${alias.target} is outside the zones this server serves, and no --alias-resolver ` +
          `is set, so A and AAAA queries for ${alias.owner} get SERVFAIL; serve the target's zone here, ` +
          'point the ALIAS at a name in a zone served here, or start with --alias-resolver HOST:PORT',
      });
    }
    return problems;
  }

  private entry(key: ResourceKey, originKey: string): ZoneAliases {
    let entry = this.zones.get(originKey);
    if (!entry) {
      entry = { key, aliases: new Map() };
      this.zones.set(originKey, entry);
    }
    entry.key = key;
    return entry;
  }

  private add(entry: ZoneAliases, originKey: string, rrset: RRsetData & { origin?: RRsetOrigin }): void {
    if (rrset.type !== 'ALIAS' || rrset.origin === undefined) return;
    const target = (rrset.rdata[0] as Extract<Rdata, { type: 'ALIAS' }> | undefined)?.target;
    if (target === undefined) return;
    entry.aliases.set(nameKey(rrset.owner), { owner: rrset.owner, target, origin: rrset.origin });
    this.watch(target, originKey);
  }

  private removeAlias(entry: ZoneAliases, originKey: string, ownerKey: string): void {
    const old = entry.aliases.get(ownerKey);
    if (!old) return;
    entry.aliases.delete(ownerKey);
    this.unwatch(old.target, originKey);
  }

  private watch(target: Name, originKey: string): void {
    for (const name of ancestors(nameKey(target))) {
      let zones = this.watchers.get(name);
      if (!zones) {
        zones = new Map();
        this.watchers.set(name, zones);
      }
      zones.set(originKey, (zones.get(originKey) ?? 0) + 1);
    }
  }

  private unwatch(target: Name, originKey: string): void {
    for (const name of ancestors(nameKey(target))) {
      const zones = this.watchers.get(name);
      const n = zones?.get(originKey);
      if (!zones || n === undefined) continue;
      if (n > 1) zones.set(originKey, n - 1);
      else {
        zones.delete(originKey);
        if (zones.size === 0) this.watchers.delete(name);
      }
    }
  }
}

/** A name key and the keys of its ancestors, the root included. */
function* ancestors(key: string): Generator<string> {
  let k = key;
  for (;;) {
    yield k;
    if (k === '.') return;
    k = stripFirstLabel(k);
  }
}
