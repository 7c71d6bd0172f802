/**
 * A Zonekeeper-managed zone programmed through an ExternalDNS webhook provider (any DNS service
 * reached that way). Each apply negotiates (`GET /`, the provider's domain filter), lists what the
 * provider holds (`GET /records`), lets the provider adjust the zone's endpoints
 * (`POST /adjustendpoints`: what it drops, it cannot hold), plans against ownership in ExternalDNS's
 * TXT registry (plan.ts) and sends every change of the zone in one `POST /records`. A whole zone is
 * compared every time, so drift is repaired on each apply and resync. A 5xx answer or a broken
 * connection starts the cycle again from the listing, with backoff, a bounded number of times.
 *
 * The provider has no SOA (`serial: 'none'`): Programmed is read back — the listing planned against
 * the zone again must need no change.
 */
import type { ExternalDnsWebhookBackendSettings } from '../../api/backends/externaldns-webhook.ts';
import { compareCanonical, type Name, nameKey } from '../../dns/name.ts';
import type { RRset } from '../../zones/rrset.ts';
import {
  type ApplyResult,
  type BackendCapabilities,
  BackendError,
  type LiveDiff,
  type ProgrammedZone,
  type RRsetProblem,
} from '../backend.ts';
import type { ManagedBackend } from '../registration.ts';
import { WebhookClient, WebhookError } from './client.ts';
import { domainFilter, type Endpoint, endpointKey, toEndpoint } from './endpoints.ts';
import { type Desired, noChanges, type Ownership, type PlanInput, planZone, type ZonePlan } from './plan.ts';

export const EXTERNALDNS_WEBHOOK_CAPABILITIES: BackendCapabilities = {
  serial: 'none',
  transfers: false,
  alias: false,
  steering: false,
  dnssec: false,
  driftRepair: true,
};

/** Attempts of one apply when the provider answers 5xx or the connection breaks. */
const ATTEMPTS = 3;

export interface ExternalDnsWebhookBackendOptions {
  settings: ExternalDnsWebhookBackendSettings;
  /** Largest answer read from the provider (tests lower it); default 32 MiB. */
  maxResponseBytes?: number;
  /** First backoff between attempts, doubled each time; default 500 ms. */
  backoffMs?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

interface HeldZone {
  /** The serial last applied completely; NaN while an apply is incomplete. */
  serial: number;
  /** The zone's endpoints as the provider adjusted them at that serial. */
  desired: PlanInput['desired'];
}

export class ExternalDnsWebhookBackend implements ManagedBackend {
  readonly name: string;
  readonly location: string;
  readonly capabilities = EXTERNALDNS_WEBHOOK_CAPABILITIES;
  /** The target serves on its own while Zonekeeper is down (change safety after a restart). */
  readonly keepsServing = true;
  resyncIntervalMs: number;
  private settings: ExternalDnsWebhookBackendSettings;
  private readonly options: ExternalDnsWebhookBackendOptions;
  private readonly zones = new Map<string, HeldZone>();

  constructor(options: ExternalDnsWebhookBackendOptions) {
    this.options = options;
    this.settings = options.settings;
    this.name = `ExternalDNS webhook ${options.settings.url}`;
    this.location = `ExternalDNS webhook provider at ${options.settings.url}`;
    this.resyncIntervalMs = (options.settings.resyncSeconds ?? 300) * 1000;
  }

  configure(settings: ExternalDnsWebhookBackendSettings): void {
    this.settings = settings;
    this.resyncIntervalMs = (settings.resyncSeconds ?? 300) * 1000;
  }

  private client(): WebhookClient {
    return new WebhookClient({
      url: this.settings.url,
      timeoutMs: (this.settings.timeoutSeconds ?? 10) * 1000,
      ...(this.options.maxResponseBytes !== undefined
        ? { maxResponseBytes: this.options.maxResponseBytes }
        : {}),
    });
  }

  private ownership(): Ownership {
    const s = this.settings;
    if (s.txtPrefix && s.txtSuffix)
      throw new BackendError(
        'BackendRejected',
        `${this.name}: txtPrefix and txtSuffix are both set; ExternalDNS's TXT registry takes one of them, set only the one the ExternalDNS instances sharing the provider use`,
        { code: 'TXT_AFFIX_CONFLICT' },
      );
    return {
      ownerId: s.ownerId ?? 'zonekeeper',
      prefix: s.txtPrefix ?? '',
      suffix: s.txtSuffix ?? '',
      wildcardReplacement: s.txtWildcardReplacement ?? '',
    };
  }

  /** Negotiates and lists; the zone's endpoints adjusted by the provider when `adjust`. */
  private async read(
    client: WebhookClient,
    zone: Pick<ProgrammedZone, 'origin' | 'rrsets'>,
    adjust: boolean,
    held?: HeldZone,
  ): Promise<Omit<PlanInput, 'ignore'>> {
    const ownership = this.ownership();
    let filter: ReturnType<typeof domainFilter>;
    const negotiated = await client.negotiate();
    try {
      filter = domainFilter(negotiated);
    } catch (e) {
      throw new BackendError('BackendRejected', `${this.name}: ${(e as Error).message}`, {
        code: 'DOMAIN_FILTER_UNREADABLE',
      });
    }
    if (
      !filter.match(zone.origin) &&
      ![...zone.rrsets()].some((r) => r.type !== 'SOA' && filter.match(r.owner))
    )
      throw new BackendError(
        'BackendRejected',
        `${this.name}: zone ${zone.origin} is outside the provider's domain filter (${filter.text}); the provider does not manage it, so nothing is programmed: configure the provider's domain filter or move the zone to another class`,
        { code: 'OUTSIDE_DOMAIN_FILTER' },
      );
    const listing = await client.records();
    let desired: PlanInput['desired'];
    if (adjust || held === undefined) {
      const wanted: { rrset: RRset; endpoint: Endpoint }[] = [];
      const out: (Desired | { rrset: RRset; refused: string })[] = [];
      for (const rrset of zone.rrsets()) {
        if (rrset.type === 'SOA') continue;
        const e = toEndpoint(rrset);
        if ('refused' in e) out.push({ rrset, refused: e.refused });
        else wanted.push({ rrset, endpoint: e });
      }
      const adjusted = await client.adjust(wanted.map((w) => w.endpoint));
      const byKey = new Map(adjusted.map((e) => [endpointKey(e), e]));
      for (const w of wanted) out.push({ rrset: w.rrset, endpoint: byKey.get(endpointKey(w.endpoint)) });
      desired = out;
    } else desired = held.desired;
    return { origin: zone.origin, provider: this.name, ownership, filter, desired, listing };
  }

  async applyZone(zone: ProgrammedZone): Promise<ApplyResult> {
    const key = nameKey(zone.origin);
    const client = this.client();
    let last: WebhookError | undefined;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (attempt > 0) await sleep((this.options.backoffMs ?? 500) * 2 ** (attempt - 1));
      try {
        const input = await this.read(client, zone, true);
        const plan = planZone({ ...input, ...(zone.ignore ? { ignore: zone.ignore } : {}) });
        // Nothing counts as programmed while the batch is on its way.
        this.zones.set(key, { serial: Number.NaN, desired: input.desired });
        if (!noChanges(plan.changes)) {
          try {
            await client.apply(plan.changes);
          } catch (e) {
            if (!refusal(e) || (e.retryable && attempt + 1 < ATTEMPTS)) throw e;
            const isolated = await this.isolate(client, zone, e);
            this.zones.set(key, { serial: zone.serial, desired: isolated.desired });
            return isolated.problems.length > 0 ? { problems: isolated.problems } : {};
          }
        }
        this.zones.set(key, { serial: zone.serial, desired: input.desired });
        return plan.problems.length > 0 ? { problems: plan.problems } : {};
      } catch (e) {
        if (e instanceof WebhookError && e.retryable && attempt + 1 < ATTEMPTS) {
          last = e;
          this.options.log?.('warn', `${this.name}: ${e.message}; trying again`, {
            zone: zone.origin,
            attempt,
          });
          continue;
        }
        throw e;
      }
    }
    throw last!;
  }

  /**
   * After the provider refused a batch for good: when it still takes an empty batch (so it is not
   * failing as a whole), every change is sent alone, from a fresh listing, and the record sets whose
   * change it refuses are reported — the rest of the zone is programmed. A refused deletion has no
   * record set to report on: the apply fails after the others went through.
   */
  private async isolate(
    client: WebhookClient,
    zone: ProgrammedZone,
    cause: WebhookError,
  ): Promise<{ problems: RRsetProblem[]; desired: PlanInput['desired'] }> {
    try {
      await client.apply({ create: [], updateOld: [], updateNew: [], delete: [] });
    } catch {
      throw cause;
    }
    const input = await this.read(client, zone, true);
    const plan = planZone({ ...input, ...(zone.ignore ? { ignore: zone.ignore } : {}) });
    const refused = new Map<RRset, string>();
    const failed: string[] = [];
    for (const unit of plan.units) {
      try {
        await client.apply(unit.changes);
      } catch (e) {
        if (!refusal(e)) throw e;
        if (unit.rrset) refused.set(unit.rrset, e.message);
        else failed.push(`${unit.what} (${e.message})`);
      }
    }
    if (failed.length > 0)
      throw new BackendError(
        'BackendRejected',
        `${this.name}: the provider refused to ${failed.join('; ')}`,
        {
          code: 'PROVIDER_REFUSED',
        },
      );
    this.options.log?.('warn', `${this.name}: the provider refused a batch; changes sent one by one`, {
      zone: zone.origin,
      refused: refused.size,
      cause: cause.message,
    });
    const problems = [
      ...plan.problems,
      ...[...refused].map(([rrset, message]) => ({
        owner: rrset.owner,
        type: rrset.type,
        origin: rrset.origin,
        reason: 'BackendRejected' as const,
        message: `${this.name} refused ${rrset.owner} ${rrset.type}: ${message}`,
      })),
    ];
    const desired = input.desired.map((d) =>
      refused.has(d.rrset) ? { rrset: d.rrset, held: refused.get(d.rrset)! } : d,
    );
    return { problems, desired };
  }

  async deleteZone(origin: Name): Promise<void> {
    const client = this.client();
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) await sleep((this.options.backoffMs ?? 500) * 2 ** (attempt - 1));
      try {
        const ownership = this.ownership();
        // A zone outside the filter had nothing programmed; the listing alone decides what is ours.
        const listing = await client.records();
        const plan = planZone({
          origin,
          provider: this.name,
          ownership,
          filter: { match: () => true, text: 'every name' },
          desired: [],
          listing,
        });
        if (!noChanges(plan.changes)) await client.apply(plan.changes);
        this.zones.delete(nameKey(origin));
        return;
      } catch (e) {
        if (e instanceof WebhookError && e.retryable && attempt + 1 < ATTEMPTS) continue;
        throw e;
      }
    }
  }

  async servedSerial(origin: Name): Promise<number | undefined> {
    const serial = this.zones.get(nameKey(origin))?.serial;
    return serial === undefined || Number.isNaN(serial) ? undefined : serial;
  }

  /**
   * Whether the provider holds exactly what the last complete apply of this serial made: the listing
   * planned against the zone again needs no change.
   */
  async servedContent(
    zone: Pick<ProgrammedZone, 'origin' | 'serial' | 'soa' | 'rrsets' | 'ignore'>,
  ): Promise<boolean> {
    const held = this.zones.get(nameKey(zone.origin));
    if (!held || held.serial !== zone.serial) return false;
    const input = await this.read(this.client(), zone, false, held);
    const plan = planZone({ ...input, ...(zone.ignore ? { ignore: zone.ignore } : {}) });
    return noChanges(plan.changes);
  }

  async liveDiff(zone: ProgrammedZone): Promise<LiveDiff> {
    const input = await this.read(this.client(), zone, true);
    const plan: ZonePlan = planZone({ ...input, ...(zone.ignore ? { ignore: zone.ignore } : {}) });
    const inZone = input.listing.some((e) => {
      const n = `${e.dnsName.toLowerCase().replace(/\.$/, '')}.`;
      return n === nameKey(zone.origin) || n.endsWith(`.${nameKey(zone.origin)}`);
    });
    // The provider lists in no particular order (ExternalDNS's in-memory provider: map order).
    const order = <T extends { owner: string; type: string }>(list: T[]) =>
      [...list].sort((a, b) => compareCanonical(a.owner, b.owner) || a.type.localeCompare(b.type));
    return {
      exists: inZone,
      add: order(plan.diff.add),
      change: order(plan.diff.change),
      delete: order(plan.diff.delete),
      notOwned: order(plan.diff.notOwned),
      ignored: order(plan.diff.ignored),
      problems: plan.problems,
      notes: [
        `ownership in ExternalDNS's TXT registry, owner ID ${input.ownership.ownerId}; the provider's own SOA and name servers are not listed through the webhook protocol`,
      ],
    };
  }

  async health(): Promise<{ ok: boolean; message: string }> {
    try {
      const filter = domainFilter(await this.client().negotiate());
      return { ok: true, message: `negotiated protocol version 1; domain filter: ${filter.text}` };
    } catch (e) {
      return { ok: false, message: (e as Error).message };
    }
  }

  close(): void {}
}

/** A failure of the provider's answer to a batch (4xx, 5xx), not of reaching it. */
function refusal(e: unknown): e is WebhookError {
  return e instanceof WebhookError && (e.code === 'PROVIDER_REFUSED' || e.code === 'PROVIDER_ERROR');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
