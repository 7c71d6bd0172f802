import type { DNSZone } from '../api/index.ts';
import type { Backend } from '../backends/backend.ts';
import { type Name, nameKey } from '../dns/name.ts';
import type { Registry } from '../metrics/registry.ts';
import type { Affected } from '../zones/catalog.ts';
import { CATALOG_KINDS, CatalogFeed, ZoneChanges } from '../zones/catalog-feed.ts';
import { type ResourceKey, resourceKey } from '../zones/resource-key.ts';
import { PendingDelta } from '../zones/rrset-delta.ts';
import { zoneChildren } from '../zones/zone-inputs.ts';
import { ZoneModel } from '../zones/zone-model.ts';
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
}

interface FollowedZone {
  model: ZoneModel;
  /** Built but never brought in line with the records: the first update is a full one. */
  fresh: boolean;
  /** Bumped on every content change, to cache the hash. */
  version: number;
  hash?: { version: number; value: string };
  /** RRset changes since the published version, merged (the last change of an RRset wins). */
  pending: PendingDelta;
  /** The model was rebuilt since the last publish: the next publish sends the whole zone. */
  full: boolean;
  published?: { serial: number; hash: string | undefined; confirmed: boolean };
  /** When this replica first wanted to serve the zone and could not match its hash. */
  waitingSince?: number;
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

  constructor(options: ZoneFollowerOptions) {
    this.options = options;
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
    if (event.type === 'delete') {
      this.enqueueAffected(this.feed.delete(event.kind, event.key));
      if (event.kind === 'DNSZone') this.queue.add(event.key);
      return;
    }
    const affected = this.feed.upsert(event.object);
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
    if (
      !zone ||
      zone.metadata.deletionTimestamp ||
      !verdict?.accepted ||
      !verdict.zoneClass.spec.backend.builtin
    ) {
      await this.drop(key);
      return;
    }
    let followed = this.zones.get(key);
    const signature = ZoneModel.signature(zone, verdict.zoneClass, verdict.origin);
    if (!followed || followed.model.configSignature !== signature) {
      if (followed && nameKey(followed.model.origin) !== nameKey(verdict.origin)) await this.drop(key);
      followed = {
        model: new ZoneModel(zone, verdict.zoneClass, verdict.origin),
        fresh: true,
        version: 0,
        pending: new PendingDelta(),
        full: true,
        ...(followed?.published ? { published: followed.published } : {}),
      };
      this.zones.set(key, followed);
    }
    const dirty = this.dirty.take(key);
    const complete = followed.fresh || dirty === undefined;
    const records = complete ? this.catalog.zoneMembers(key) : this.catalog.membersNow(key, dirty);
    const delta = followed.model.update(records, zoneChildren(this.catalog, key), complete);
    followed.fresh = false;
    if (followed.pending.add(delta)) followed.version++;
    return this.publish(key, zone, followed);
  }

  private async publish(key: ResourceKey, zone: DNSZone, followed: FollowedZone): Promise<ReconcileResult> {
    const serial = zone.status?.serial;
    const recorded = zone.status?.hash;
    if (serial === undefined) return; // the operator has never programmed this zone
    const published = followed.published;
    const changed = followed.full || followed.pending.size > 0;
    if (published && published.serial === serial && published.confirmed && !changed) {
      followed.waitingSince = undefined;
      return;
    }
    const hash = this.hashOf(followed);
    const now = this.options.now?.() ?? Date.now();
    if (recorded !== undefined && hash === recorded) {
      followed.waitingSince = undefined;
      await this.program(key, followed, serial, hash, true);
      return;
    }
    // The content does not match what the operator recorded (yet): keep serving the last version.
    followed.waitingSince ??= now;
    if (published) return;
    const after = this.options.unconfirmedAfterMs ?? 30_000;
    const waited = now - followed.waitingSince;
    if (waited < after) return { requeueAfterMs: after - waited + 10 };
    this.options.log?.('warn', `zone ${key}: serving unconfirmed content at serial ${serial}`, {
      reason: 'the operator has not recorded the hash of the current content',
      waitedMs: waited,
    });
    await this.program(key, followed, serial, hash, false);
    return;
  }

  private async program(
    key: ResourceKey,
    followed: FollowedZone,
    serial: number,
    hash: string,
    confirmed: boolean,
  ): Promise<void> {
    const { model } = followed;
    const published = followed.published;
    const patch = published !== undefined && !followed.full && published.serial !== serial;
    const whole = { key, origin: model.origin, soa: model.soa, serial, rrsets: () => model.rrsets() };
    await this.options.backend.applyZone(
      patch ? { ...whole, delta: { fromSerial: published.serial, ...followed.pending.delta() } } : whole,
    );
    if (published?.serial === serial && published.hash !== hash) {
      // Same serial, other content (only when unconfirmed content gets confirmed at the same
      // serial): a delta cannot express that, so the whole zone goes again.
      await this.options.backend.deleteZone(model.origin);
      await this.options.backend.applyZone(whole);
    }
    followed.published = { serial, hash, confirmed };
    followed.pending.clear();
    followed.full = false;
    this.publishedOrigin.set(key, model.origin);
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
