import {
  type DNSZone,
  type DNSZoneClass,
  type Domain,
  disablingDnssec,
  type EffectiveDnssec,
  effectiveDnssec,
  PARENT_DS_ANNOTATION,
  signingId,
  stillDisabling,
  withParentDs,
} from '../api/index.ts';
import type { SecretResolver } from '../api/secret-ref.ts';
import type { Backend } from '../backends/backend.ts';
import { type Name, nameKey } from '../dns/name.ts';
import type { Registry } from '../metrics/registry.ts';
import type { Affected } from '../zones/catalog.ts';
import { CATALOG_KINDS, CatalogFeed, ZoneChanges } from '../zones/catalog-feed.ts';
import { domainGate, zonesUnder } from '../zones/domain-verification.ts';
import { type ResourceKey, resourceKey } from '../zones/resource-key.ts';
import { PendingDelta } from '../zones/rrset-delta.ts';
import { canonicalKeyName, type ResolvedTransfers, withUpdatePolicy } from '../zones/transfers.ts';
import { zoneChildren } from '../zones/zone-inputs.ts';
import { ZoneModel } from '../zones/zone-model.ts';
import { changeHeld } from './conditions.ts';
import type { ResourceStore, StoreEvent } from './resource-store.ts';
import { type ReconcileResult, WorkQueue } from './work-queue.ts';

export interface ZoneFollowerOptions {
  store: ResourceStore;
  backend: Backend;
  registry?: Registry;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /**
   * How long a zone this replica has never served may wait for the operator to confirm its content
   * before it is served unconfirmed at `status.serial` (default 30 s; see `publish`).
   */
  unconfirmedAfterMs?: number;
  now?: () => number;
  /**
   * Reads the update keys of zones with an `updatePolicy` (RFC 2136 UPDATE verified here and forwarded
   * to the operator's leader). Without it, or when a key cannot be read, the zone is served without
   * its update policy: every UPDATE is REFUSED. Only keys that a zone's policy names and whose class
   * gives them usage `update` are read; transfer keys never are.
   */
  secrets?: SecretResolver;
  /** How long a read key is reused before it is read again (default 60 s; rotation takes this long). */
  secretTtlMs?: number;
}

interface FollowedZone {
  model: ZoneModel;
  /** Built but never brought in line with the records: the first update is a full one. */
  fresh: boolean;
  /** Bumped on every content change, to cache the hash. */
  version: number;
  hash?: { version: number; value: string };
  /**
   * RRset changes since the published version, merged (the last change of an RRset wins); none while
   * `full` (the whole zone goes then).
   */
  pending: PendingDelta;
  /** The model was rebuilt since the last publish: the next publish sends the whole zone. */
  full: boolean;
  published?: { serial: number; hash: string | undefined; confirmed: boolean; signed?: Signed };
  /** The zone's signing settings, when it is signed and this replica's backend signs (ADR 0021). */
  dnssec?: EffectiveDnssec;
  /** The zone's update policy with its keys read (what UPDATE is verified against here). */
  transfers?: ResolvedTransfers;
  /** The signature of `transfers` the server was given last (a policy-only change re-applies it). */
  appliedTransfers?: string;
  /** When this replica first wanted to serve the zone and could not match its hash. */
  waitingSince?: number;
  /** Logged once that the zone is not served while the operator holds a change of it. */
  heldLogged?: boolean;
}

/**
 * The data plane's view of the zones: it computes each zone's content from the same resources and
 * with the same rules as the operator (Catalog + ZoneModel), and serves it at the serial the operator
 * recorded in DNSZone.status, never assigning serials of its own. The rule that makes every replica
 * answer identically:
 *
 *   a replica publishes a zone's content at `status.serial` only when the content it computed hashes
 *   to `status.hash`; until the operator has recorded the hash of the current content, it keeps
 *   serving what it last published.
 *
 * So two replicas that serve serial N serve the same content: the content whose hash the operator
 * recorded with N. Removals need no confirmation: a zone that is deleted (deletionTimestamp), no
 * longer accepted, or gone is dropped at once by every replica. One exception keeps zones on the air
 * while the operator is away: a replica that has never served a zone (it just started) and cannot
 * match the recorded hash for `unconfirmedAfterMs` serves its computed content at `status.serial`,
 * marked unconfirmed (metric `zonekeeper_follower_unconfirmed_zones`), until the operator records a
 * serial for it. A zone without any recorded serial is not served: the operator has never seen it.
 */
export class ZoneFollower {
  private readonly feed = new CatalogFeed();
  readonly catalog = this.feed.catalog;
  private readonly options: ZoneFollowerOptions;
  private readonly queue: WorkQueue;
  private readonly zones = new Map<ResourceKey, FollowedZone>();
  /** Origin each zone key is published under, to drop it when the zone goes. */
  private readonly publishedOrigin = new Map<ResourceKey, Name>();
  private readonly dirty = new ZoneChanges();
  private unsubscribe?: () => void;
  private readonly secretCache = new Map<string, { value: string; until: number }>();

  constructor(options: ZoneFollowerOptions) {
    this.options = options;
    // The operator's rule: zones waiting for a verified Domain never keep a domain from zones that may be served.
    this.catalog.waiting = (zone, zoneClass) =>
      zoneClass !== undefined &&
      domainGate(zone, zoneClass, options.store.list('Domain') as Domain[]) !== undefined;
    this.queue = new WorkQueue((key) => this.reconcile(key), { concurrency: 1 });
    this.queue.onResult = (key, error) => {
      if (error !== undefined)
        options.log?.('warn', `publishing zone ${key} failed; retrying`, { error: String(error) });
    };
    const registry = options.registry;
    if (registry) {
      const waiting = registry.gauge(
        'zonekeeper_follower_waiting_zones',
        'Zones whose current content waits for the operator to record its serial and hash.',
      );
      const unconfirmed = registry.gauge(
        'zonekeeper_follower_unconfirmed_zones',
        'Zones served at status.serial with content the operator has not confirmed (the operator is behind).',
      );
      waiting.collect = () => {
        let w = 0;
        let u = 0;
        for (const z of this.zones.values()) {
          if (z.waitingSince !== undefined) w++;
          if (z.published && !z.published.confirmed) u++;
        }
        waiting.set(w);
        unconfirmed.set(u);
      };
    }
  }

  start(): void {
    const { store } = this.options;
    this.enqueueAffected(this.feed.load(CATALOG_KINDS.flatMap((kind) => store.list(kind))));
    for (const zone of store.list('DNSZone')) this.queue.add(resourceKey(zone.metadata));
    this.unsubscribe = store.watch((event) => this.onEvent(event));
    this.queue.start();
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.shutdown();
  }

  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** Serial and whether it is confirmed, per published zone key (for tests and /api). */
  publishedState(key: ResourceKey): { serial: number; confirmed: boolean } | undefined {
    const p = this.zones.get(key)?.published;
    return p ? { serial: p.serial, confirmed: p.confirmed } : undefined;
  }

  private onEvent(event: StoreEvent): void {
    if (event.kind === 'Domain') {
      // Verified or not any more: the zones it covers may be served, or not, now.
      // Only classes that require a verified Domain make a Domain matter to which zone holds a domain.
      if ([...this.catalog.classes.values()].some((c) => c.spec.requireVerifiedDomain === true))
        this.enqueueAffected(this.catalog.rejudge());
      for (const key of zonesUnder(this.catalog.zones.values(), event.object as Domain)) this.queue.add(key);
      return;
    }
    if (event.type === 'delete') {
      this.enqueueAffected(this.feed.delete(event.kind, event.key));
      if (event.kind === 'DNSZone') this.queue.add(event.key);
      return;
    }
    const affected = this.feed.upsert(event.object, event.key);
    if (event.kind === 'DNSZone') {
      // A zone's status carries the serial to serve: every zone event may let it publish. A status-only
      // change touches no record set: an empty dirty set keeps that reconcile incremental (O(1)).
      if (!affected) this.dirty.touch(event.key);
      this.queue.add(event.key);
    }
    if (affected) this.enqueueAffected(affected);
  }

  private enqueueAffected(affected: Affected): void {
    this.dirty.note(affected);
    for (const zone of affected.zones) this.queue.add(zone);
  }

  private async reconcile(key: ResourceKey): Promise<ReconcileResult> {
    const zone = this.options.store.get('DNSZone', key) as DNSZone | undefined;
    const verdict = this.catalog.zoneVerdict(key);
    // Zones of classes with another backend (PowerDNS, ...) are served by that backend, not here.
    // A class that requires a verified Domain: not served without one (squatting prevention).
    if (
      !zone ||
      zone.metadata.deletionTimestamp ||
      !verdict?.accepted ||
      !verdict.zoneClass.spec.backend.builtin ||
      domainGate(zone, verdict.zoneClass, this.options.store.list('Domain') as Domain[]) !== undefined
    ) {
      await this.drop(key);
      return;
    }
    let followed = this.zones.get(key);
    const signature = ZoneModel.signature(zone, verdict.zoneClass, verdict.origin);
    if (!followed || followed.model.configSignature !== signature) {
      if (followed && nameKey(followed.model.origin) !== nameKey(verdict.origin)) await this.drop(key);
      const before = followed;
      followed = {
        model: new ZoneModel(zone, verdict.zoneClass, verdict.origin),
        fresh: true,
        version: 0,
        pending: new PendingDelta(),
        full: true,
        ...(followed?.published ? { published: followed.published } : {}),
      };
      if (before !== undefined) followed.model.parsedFrom(before.model);
      this.zones.set(key, followed);
    }
    const dirty = this.dirty.take(key);
    const complete = followed.fresh || dirty === undefined;
    const records = complete ? this.catalog.zoneMembers(key) : this.catalog.membersNow(key, dirty);
    // While the zone goes whole (`full`: built since it was last published, e.g. a replica's start
    // waiting for the operator's first serial), its changes are not listed: nothing reads them.
    const delta = followed.model.update(records, zoneChildren(this.catalog, key), complete, !followed.full);
    followed.fresh = false;
    if (delta.changed) followed.version++;
    if (!followed.full) followed.pending.add(delta);
    const keys = await this.updateTransfers(zone, verdict.zoneClass);
    followed.transfers = keys.transfers;
    // Signing turned off: signed as the leader signs while the zone goes insecure (RFC 8078 §4).
    const dnssec = this.options.backend.capabilities.dnssec
      ? (effectiveDnssec(verdict.zoneClass.spec.dnssec, zone.spec.dnssec) ??
        (this.options.backend.capabilities.dnssecAtSerial && stillDisabling(zone.status?.dnssec)
          ? disablingDnssec(verdict.zoneClass.spec.dnssec, zone.spec.dnssec)
          : undefined))
      : undefined;
    if (dnssec) followed.dnssec = withParentDs(dnssec, zone.metadata.annotations?.[PARENT_DS_ANNOTATION]);
    else delete followed.dnssec;
    const result = await this.publish(key, zone, followed);
    if (keys.retryAfterMs === undefined) return result;
    const after = result?.requeueAfterMs;
    return { requeueAfterMs: after === undefined ? keys.retryAfterMs : Math.min(after, keys.retryAfterMs) };
  }

  /**
   * The zone's update policy with its keys read, as the server verifies UPDATE with it: only keys the
   * policy names and the class gives usage `update` (a server replica serves no transfers, so it reads
   * no transfer key). A key that cannot be read leaves the policy out (UPDATE REFUSED) and retries.
   */
  private async updateTransfers(
    zone: DNSZone,
    zoneClass: DNSZoneClass,
  ): Promise<{ transfers?: ResolvedTransfers; retryAfterMs?: number }> {
    const rules = zone.spec.updatePolicy ?? [];
    const secrets = this.options.secrets;
    if (rules.length === 0 || !secrets) return {};
    const named = new Set(rules.map((r) => canonicalKeyName(r.key)));
    const keys: ResolvedTransfers['keys'] = [];
    for (const key of zoneClass.spec.transfers?.tsigKeys ?? []) {
      if (!named.has(canonicalKeyName(key.name)) || !key.usage?.includes('update')) continue;
      try {
        keys.push({
          name: key.name,
          algorithm: key.algorithm,
          secret: await this.readSecret(key.secretRef),
          usage: ['update'],
        });
      } catch (e) {
        this.options.log?.('warn', `zone ${resourceKey(zone.metadata)}: cannot read update key ${key.name}`, {
          error: e instanceof Error ? e.message : String(e),
          effect: 'UPDATE is refused for this zone until the key can be read',
        });
        return { retryAfterMs: 30_000 };
      }
    }
    const base: ResolvedTransfers = {
      allowFrom: [],
      requireTsig: true,
      keys,
      notify: [],
      // No IXFR is served here: no journal.
      journalSize: 0,
    };
    const resolved = withUpdatePolicy(base, zone).resolved;
    return resolved?.update ? { transfers: resolved } : {};
  }

  private async readSecret(ref: Parameters<SecretResolver>[0]): Promise<string> {
    const id = JSON.stringify([ref.namespace, ref.name, ref.key, ref.file, ref.env]);
    const now = this.options.now?.() ?? Date.now();
    const cached = this.secretCache.get(id);
    if (cached && cached.until > now) return cached.value;
    const value = await this.options.secrets!(ref);
    this.secretCache.set(id, { value, until: now + (this.options.secretTtlMs ?? 60_000) });
    return value;
  }

  private async publish(key: ResourceKey, zone: DNSZone, followed: FollowedZone): Promise<ReconcileResult> {
    const serial = zone.status?.serial;
    const recorded = zone.status?.hash;
    if (serial === undefined) return; // the operator has never programmed this zone
    const published = followed.published;
    const changed = followed.full || followed.pending.size > 0;
    // A change of the update policy (or its keys) alone reaches the served zone at its served serial.
    if (published && transfersSignature(followed.transfers) !== followed.appliedTransfers)
      await this.applyTransfers(key, followed, published.serial);
    if (published && published.serial === serial && published.confirmed && !changed) {
      followed.waitingSince = undefined;
      return;
    }
    // A signed zone is served only at the signing time and settings the operator recorded with the
    // serial (ADR 0021): never unsigned, never signed otherwise than every other replica signs it.
    let signed: Signed | undefined;
    if (followed.dnssec) {
      const { signedAt, signing } = zone.status ?? {};
      if (signedAt === undefined || signing !== signingId(followed.dnssec)) {
        followed.waitingSince ??= this.options.now?.() ?? Date.now();
        return;
      }
      // The keys this serial uses (a key a rollover prepares for later is in the status, not in effect).
      const keyTags = zone.status?.dnssec?.keys
        ?.filter((k) => k.active || k.published !== false)
        .map((k) => k.keyTag);
      signed = { dnssec: followed.dnssec, signedAt, ...(keyTags && keyTags.length > 0 ? { keyTags } : {}) };
    }
    const hash = this.hashOf(followed);
    const now = this.options.now?.() ?? Date.now();
    if (recorded !== undefined && hash === recorded) {
      followed.waitingSince = undefined;
      await this.program(key, followed, serial, hash, true, signed);
      return;
    }
    // The content does not match what the operator recorded (yet): keep serving the last version.
    followed.waitingSince ??= now;
    if (published) return;
    // The operator holds a change of this zone (change safety, ADR 0018): what it served before is not
    // what this replica computes (deleted record sets are gone from its catalog, changed ones carry
    // their new records), and serving the computed content at the old serial would publish the held
    // change. The zone waits here for a confirmed content; the replicas that served it go on.
    if (changeHeld(zone.status?.conditions)) {
      if (!followed.heldLogged) {
        followed.heldLogged = true;
        this.options.log?.('warn', `zone ${key}: not served by this replica while a change of it is held`, {
          reason:
            'the operator holds the current content (ChangeHeld); this replica cannot rebuild what was served before',
        });
      }
      return;
    }
    const after = this.options.unconfirmedAfterMs ?? 30_000;
    const waited = now - followed.waitingSince;
    if (waited < after) return { requeueAfterMs: after - waited + 10 };
    this.options.log?.('warn', `zone ${key}: serving unconfirmed content at serial ${serial}`, {
      reason: 'the operator has not recorded the hash of the current content',
      waitedMs: waited,
    });
    await this.program(key, followed, serial, hash, false, signed);
    return;
  }

  private async program(
    key: ResourceKey,
    followed: FollowedZone,
    serial: number,
    hash: string,
    confirmed: boolean,
    signed?: Signed,
  ): Promise<void> {
    const { model } = followed;
    const published = followed.published;
    const patch = published !== undefined && !followed.full && published.serial !== serial;
    const transfers = followed.transfers;
    const whole = {
      key,
      origin: model.origin,
      soa: model.soa,
      serial,
      rrsets: () => model.rrsets(),
      byName: model,
      ...(transfers ? { transfers } : {}),
      ...(signed ? { dnssec: signed.dnssec, signedAt: signed.signedAt } : {}),
      ...(signed?.keyTags ? { keyTags: signed.keyTags } : {}),
    };
    await this.options.backend.applyZone(
      patch ? { ...whole, delta: { fromSerial: published.serial, ...followed.pending.delta() } } : whole,
    );
    if (published?.serial === serial && published.hash !== hash) {
      // Same serial, other content (only when unconfirmed content gets confirmed at the same
      // serial): a delta cannot express that, so the whole zone goes again.
      await this.options.backend.deleteZone(model.origin);
      await this.options.backend.applyZone(whole);
    }
    followed.published = { serial, hash, confirmed, ...(signed ? { signed } : {}) };
    followed.appliedTransfers = transfersSignature(transfers);
    followed.pending.clear();
    followed.full = false;
    this.publishedOrigin.set(key, model.origin);
  }

  /** Gives the server the zone's update policy at the serial it serves (the content stays as it is). */
  private async applyTransfers(
    key: ResourceKey,
    followed: FollowedZone,
    servedSerial: number,
  ): Promise<void> {
    const { model, transfers } = followed;
    await this.options.backend.applyZone({
      key,
      origin: model.origin,
      soa: model.soa,
      serial: servedSerial,
      // The server holds this serial: it only takes the transfer settings (BuiltinBackend.applyZone).
      rrsets: () => [],
      ...(transfers ? { transfers } : {}),
      // Signed as it is served, or the server would take the serial for another (unsigned) one.
      ...(followed.published?.signed
        ? { dnssec: followed.published.signed.dnssec, signedAt: followed.published.signed.signedAt }
        : {}),
    });
    followed.appliedTransfers = transfersSignature(transfers);
  }

  private hashOf(followed: FollowedZone): string {
    if (followed.hash?.version !== followed.version || followed.full) {
      followed.hash = { version: followed.version, value: followed.model.contentHash() };
    }
    return followed.hash.value;
  }

  private async drop(key: ResourceKey): Promise<void> {
    this.zones.delete(key);
    this.dirty.forget(key);
    const origin = this.publishedOrigin.get(key);
    if (origin === undefined) return;
    // Another accepted zone may serve the same origin now (a conflict settled); leave it then.
    const owner = this.catalog.zoneForDomain(origin);
    if (owner === undefined || owner === key || !this.zones.has(owner))
      await this.options.backend.deleteZone(origin);
    this.publishedOrigin.delete(key);
  }
}

/** The signing settings and time a serial is served with. */
interface Signed {
  dnssec: EffectiveDnssec;
  signedAt: number;
  /** The key tags the operator recorded in status.dnssec.keys (the keys must be these). */
  keyTags?: readonly number[];
}

function transfersSignature(transfers: ResolvedTransfers | undefined): string | undefined {
  return transfers ? JSON.stringify(transfers) : undefined;
}
