/**
 * A Zonekeeper-managed zone programmed into a provider of the homelab DNS webhook protocol: one
 * `POST /records` per changed RRset, one `DELETE /records/{type}/{domain}/{subdomain}` per removed
 * one, a bounded number of requests in flight. The provider has no SOA (`serial: 'none'`): a zone is
 * Programmed when its content reads back through `GET /records/...`; a provider without that optional
 * endpoint is taken at its word (every upsert answered 200).
 *
 * The protocol cannot list a provider's records: what to delete is known from what this process
 * pushed (and from deltas). After a restart, RRsets removed while Zonekeeper was down stay at the
 * provider until deleted by hand.
 */
import type { HomelabWebhookBackendSettings } from '../../api/backends/homelab-webhook.ts';
import type { SecretResolver } from '../../api/secret-ref.ts';
import type { Name } from '../../dns/name.ts';
import { nameKey } from '../../dns/name.ts';
import {
  type HomelabProvider,
  HomelabProviderError,
  type HomelabProviderFactory,
  type HomelabRecord,
  recordFqdn,
} from '../../homelab-protocol/protocol.ts';
import { ignoreMatcher } from '../../zones/ignore.ts';
import type { RRset } from '../../zones/rrset.ts';
import {
  type ApplyResult,
  type BackendCapabilities,
  BackendError,
  type ProgrammedZone,
  type RRsetProblem,
} from '../backend.ts';
import type { ManagedBackend } from '../registration.ts';
import { createHomelabClient } from './client.ts';
import { recordKey, sameRecord, toHomelabRecord } from './mapping.ts';

export const HOMELAB_WEBHOOK_CAPABILITIES: BackendCapabilities = {
  serial: 'none',
  transfers: false,
  alias: false,
  steering: false,
  dnssec: false,
  driftRepair: true,
};

/** Requests in flight per zone apply. */
const CONCURRENCY = 4;

interface HeldZone {
  /** The serial this process last applied completely. */
  serial: number;
  /** Records pushed, by provider key. */
  records: Map<string, HomelabRecord>;
  /** RRsets the provider refused at that serial (not expected to read back). */
  refused: Set<string>;
}

export interface HomelabWebhookBackendOptions {
  settings: HomelabWebhookBackendSettings;
  secrets: SecretResolver;
  providers?: HomelabProviderFactory;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

export class HomelabWebhookBackend implements ManagedBackend {
  readonly name: string;
  readonly capabilities = HOMELAB_WEBHOOK_CAPABILITIES;
  /** The target serves on its own while Zonekeeper is down (change safety after a restart). */
  readonly keepsServing = true;
  resyncIntervalMs: number;
  private settings: HomelabWebhookBackendSettings;
  private readonly options: HomelabWebhookBackendOptions;
  private readonly zones = new Map<string, HeldZone>();

  constructor(options: HomelabWebhookBackendOptions) {
    this.options = options;
    this.settings = options.settings;
    this.name = `homelab webhook ${options.settings.url}`;
    this.resyncIntervalMs = (options.settings.resyncSeconds ?? 300) * 1000;
  }

  configure(settings: HomelabWebhookBackendSettings): void {
    this.settings = settings;
    this.resyncIntervalMs = (settings.resyncSeconds ?? 300) * 1000;
  }

  private async provider(): Promise<HomelabProvider> {
    const auth = this.settings.hmacAuth;
    let secret: string | undefined;
    if (auth) {
      try {
        secret = await this.options.secrets(auth.secretRef);
      } catch (e) {
        throw new BackendError('BackendRejected', `${this.name}: hmacAuth secret: ${(e as Error).message}`, {
          code: 'SECRET_NOT_FOUND',
          cause: e,
        });
      }
    }
    return (this.options.providers ?? createHomelabClient)({
      server: this.settings.url,
      timeoutMs: (this.settings.timeoutSeconds ?? 10) * 1000,
      secret,
      algorithm: auth?.algorithm ?? 'SHA256',
    });
  }

  async applyZone(zone: ProgrammedZone): Promise<ApplyResult> {
    const provider = await this.provider();
    const held = this.zones.get(nameKey(zone.origin));
    const useDelta = zone.delta !== undefined && held !== undefined && held.serial === zone.delta.fromSerial;
    const problems: RRsetProblem[] = [];
    const refused = new Set<string>();
    const next = new Map(useDelta ? held.records : []);
    const wanted: { rrset: RRset; record: HomelabRecord; check: boolean }[] = [];
    const deletes: HomelabRecord[] = [];
    // Ignore rules (DNSZone.spec.ignore): a matching RRset is never upserted or deleted, and one this
    // process pushed before is no longer tracked as its own (so no later apply or zone deletion
    // removes it).
    const matches = ignoreMatcher(zone.origin, zone.ignore);
    const ignoredRecord = (r: HomelabRecord) =>
      matches?.(absolute(recordFqdn(r.domain, r.subdomain)), r.type) ?? false;
    const release = (r: HomelabRecord) => {
      next.delete(recordKey(r));
      refused.add(recordKey(r));
    };

    const want = (rrset: RRset, check: boolean) => {
      if (matches?.(rrset.owner, rrset.type)) {
        problems.push({
          owner: rrset.owner,
          type: rrset.type,
          origin: rrset.origin,
          reason: 'Conflict',
          message: `${rrset.owner} ${rrset.type} matches the zone's spec.ignore, so Zonekeeper leaves it at the provider as it is; remove the rule or this record set`,
        });
        const record = toHomelabRecord(zone.origin, rrset);
        if (!('refused' in record)) release(record);
        return;
      }
      const record = toHomelabRecord(zone.origin, rrset);
      if ('refused' in record) {
        problems.push({
          owner: rrset.owner,
          type: rrset.type,
          origin: rrset.origin,
          reason: 'BackendRejected',
          message: `${this.name}: ${record.refused}`,
        });
        return;
      }
      wanted.push({ rrset, record, check });
    };
    if (useDelta) {
      for (const r of zone.delta!.upserts) want(r, false);
      for (const d of zone.delta!.deletes) {
        const record = toHomelabRecord(zone.origin, { owner: d.owner, type: d.type, ttl: 0, rdata: [] });
        if ('refused' in record) continue;
        if (ignoredRecord(record)) release(record);
        else deletes.push(record);
      }
    } else {
      // A whole zone: every RRset is compared with what the provider holds (drift repair), and what
      // this process pushed before and the zone no longer has is deleted.
      for (const r of zone.rrsets()) if (r.type !== 'SOA') want(r, true);
      const keep = new Set(wanted.map((w) => recordKey(w.record)));
      for (const [key, record] of held?.records ?? []) {
        if (keep.has(key)) continue;
        if (ignoredRecord(record)) release(record);
        else deletes.push(record);
      }
    }

    let unreachable: HomelabProviderError | undefined;
    await inBatches(wanted, async ({ rrset, record, check }) => {
      try {
        if (check) {
          const have = await provider.get(record.type, record.domain, record.subdomain);
          if (have !== 'unsupported' && have !== undefined && sameRecord(record, have)) {
            next.set(recordKey(record), record);
            return;
          }
        }
        await provider.upsert(record);
        next.set(recordKey(record), record);
      } catch (e) {
        if (refusesRecord(e)) {
          refused.add(recordKey(record));
          next.delete(recordKey(record));
          problems.push({
            owner: rrset.owner,
            type: rrset.type,
            origin: rrset.origin,
            reason: 'BackendRejected',
            message: `${this.name} refused ${record.type} ${rrset.owner}: ${e.message}`,
          });
        } else unreachable ??= asProviderError(e);
      }
    });
    await inBatches(deletes, async (record) => {
      try {
        await provider.delete(record.type, record.domain, record.subdomain);
        next.delete(recordKey(record));
      } catch (e) {
        unreachable ??= asProviderError(e);
      }
    });
    if (unreachable) {
      // What went through is kept; the zone is not at this serial yet.
      this.zones.set(nameKey(zone.origin), { serial: Number.NaN, records: next, refused });
      throw toBackendError(this.name, unreachable);
    }
    this.zones.set(nameKey(zone.origin), { serial: zone.serial, records: next, refused });
    return problems.length > 0 ? { problems } : {};
  }

  async deleteZone(origin: Name): Promise<void> {
    const held = this.zones.get(nameKey(origin));
    if (!held) return;
    const provider = await this.provider();
    let failure: HomelabProviderError | undefined;
    await inBatches([...held.records.values()], async (record) => {
      try {
        await provider.delete(record.type, record.domain, record.subdomain);
        held.records.delete(recordKey(record));
      } catch (e) {
        failure ??= asProviderError(e);
      }
    });
    if (failure) throw toBackendError(this.name, failure);
    this.zones.delete(nameKey(origin));
  }

  async servedSerial(origin: Name): Promise<number | undefined> {
    const serial = this.zones.get(nameKey(origin))?.serial;
    return serial === undefined || Number.isNaN(serial) ? undefined : serial;
  }

  async servedContent(zone: Pick<ProgrammedZone, 'origin' | 'serial' | 'soa' | 'rrsets'>): Promise<boolean> {
    const held = this.zones.get(nameKey(zone.origin));
    if (!held || held.serial !== zone.serial) return false;
    const provider = await this.provider();
    let ok = true;
    const checks: HomelabRecord[] = [];
    for (const r of zone.rrsets()) {
      if (r.type === 'SOA') continue;
      const record = toHomelabRecord(zone.origin, r);
      if ('refused' in record || held.refused.has(recordKey(record))) continue;
      checks.push(record);
    }
    await inBatches(checks, async (record) => {
      if (!ok) return;
      let have: Awaited<ReturnType<HomelabProvider['get']>>;
      try {
        have = await provider.get(record.type, record.domain, record.subdomain);
      } catch (e) {
        throw toBackendError(this.name, asProviderError(e));
      }
      // Without GET the provider's 200 to each upsert is all there is to go on.
      if (have === 'unsupported') return;
      if (have === undefined || !sameRecord(record, have)) ok = false;
    });
    return ok;
  }

  async health(): Promise<{ ok: boolean; message: string }> {
    try {
      const h = await (await this.provider()).health();
      return { ok: h.healthy, message: h.message };
    } catch (e) {
      return { ok: false, message: (e as Error).message };
    }
  }

  close(): void {}
}

/**
 * A refusal of this one record rather than of the whole request: `400` (the protocol's validation
 * codes), or `403` with a code about the record — Zonekeeper's provider answers `NOT_DELEGATED`,
 * `NOT_OWNER`, `NAME_CONFLICT` and `QUOTA_EXCEEDED` for a name and type the caller may not (or may no
 * longer) write.
 * Any other answer fails the apply and is retried.
 */
const RECORD_REFUSALS_403 = new Set(['NOT_DELEGATED', 'NOT_OWNER', 'NAME_CONFLICT', 'QUOTA_EXCEEDED']);

function refusesRecord(e: unknown): e is HomelabProviderError {
  if (!(e instanceof HomelabProviderError)) return false;
  return e.reason === 'ValidationFailed' || (e.status === 403 && RECORD_REFUSALS_403.has(e.code));
}

function absolute(name: string): Name {
  return name.endsWith('.') ? name : `${name}.`;
}

function asProviderError(e: unknown): HomelabProviderError {
  return e instanceof HomelabProviderError
    ? e
    : new HomelabProviderError('ServerError', 'SERVER_ERROR', e instanceof Error ? e.message : String(e));
}

function toBackendError(name: string, e: HomelabProviderError): BackendError {
  return new BackendError(
    e.reason === 'ServerUnreachable' ? 'BackendUnreachable' : 'BackendRejected',
    `${name}: ${e.message}`,
    { code: e.code, cause: e },
  );
}

async function inBatches<T>(items: readonly T[], run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await run(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
}
