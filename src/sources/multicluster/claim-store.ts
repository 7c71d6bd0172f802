/**
 * The durable claims of claims.ts: one ConfigMap per claimed domain in the operator's namespace,
 * labelled `multicluster.zonekeeper.dev/claim`. Created with create (409 when another writer was
 * first), changed with replace and removed with delete, both conditional on resourceVersion; on a
 * conflict the record is read again and the change decided again. Operations on one domain are
 * serialized in this process.
 */
import { isStatus } from '../kubernetes/kube-api.ts';
import {
  type ClaimRecord,
  claimData,
  claimFromData,
  claimObjectName,
  ownerOf,
  withClaimant,
  withoutClaimant,
} from './claims.ts';
import type { DownstreamApi } from './downstream-api.ts';
import { MANAGED_BY, MANAGED_BY_LABEL, PREFIX } from './mapping.ts';

export const CLAIM_LABEL = `${PREFIX}/claim`;

/** A claim ConfigMap that exists but does not hold a claim record (code CLAIM_RECORD_INVALID). */
export class ClaimRecordError extends Error {
  readonly code = 'CLAIM_RECORD_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'ClaimRecordError';
  }
}

interface Held {
  record: ClaimRecord;
  resourceVersion: string;
}

export class ClaimStore {
  private readonly api: DownstreamApi;
  private readonly namespace: string;
  private readonly now: () => Date;
  private readonly held = new Map<string, Held>();
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(api: DownstreamApi, namespace: string, now: () => Date = () => new Date()) {
    this.api = api;
    this.namespace = namespace;
    this.now = now;
  }

  /** Reads every claim (at the start of leadership). */
  async load(): Promise<void> {
    const maps = await this.api.listConfigMaps(this.namespace, CLAIM_LABEL);
    this.held.clear();
    for (const m of maps) {
      const record = claimFromData(m.data);
      // A record under another domain's name (edited by hand) is not believed.
      if (record && m.resourceVersion && m.name === claimObjectName(record.domain))
        this.held.set(record.domain, { record, resourceVersion: m.resourceVersion });
    }
  }

  /** The claim of a domain as last read or written. */
  get(domain: string): ClaimRecord | undefined {
    return this.held.get(domain)?.record;
  }

  /** Domains with `cluster` among the claimants. */
  domainsOf(cluster: string): string[] {
    return [...this.held.values()]
      .filter((h) => h.record.claimants.some((c) => c.cluster === cluster))
      .map((h) => h.record.domain);
  }

  get size(): number {
    return this.held.size;
  }

  /** Records `cluster`'s claim (first observation: now) durably; resolves with the domain's record. */
  claim(domain: string, cluster: string): Promise<ClaimRecord> {
    const known = this.held.get(domain)?.record;
    if (known?.claimants.some((c) => c.cluster === cluster)) return Promise.resolve(known);
    return this.serial(domain, () =>
      this.change(domain, (r) => withClaimant(r, domain, cluster, this.now())),
    ) as Promise<ClaimRecord>;
  }

  /** Takes `cluster`'s claim off the domain; resolves with the record left (undefined when none). */
  release(domain: string, cluster: string): Promise<ClaimRecord | undefined> {
    const known = this.held.get(domain)?.record;
    if (!known?.claimants.some((c) => c.cluster === cluster)) return Promise.resolve(known);
    return this.serial(domain, () =>
      this.change(domain, (r) => (r ? withoutClaimant(r, cluster) : undefined)),
    );
  }

  /** The owning cluster of a domain, as last known. */
  owner(domain: string): string | undefined {
    return ownerOf(this.held.get(domain)?.record)?.cluster;
  }

  private serial<T>(domain: string, work: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(domain) ?? Promise.resolve();
    const next = previous.then(work, work);
    const settled = next.catch(() => {});
    this.chains.set(domain, settled);
    void settled.then(() => {
      if (this.chains.get(domain) === settled) this.chains.delete(domain);
    });
    return next;
  }

  private async change(
    domain: string,
    f: (record: ClaimRecord | undefined) => ClaimRecord | undefined,
  ): Promise<ClaimRecord | undefined> {
    const name = claimObjectName(domain);
    for (let attempt = 0; ; attempt++) {
      const held = this.held.get(domain);
      const next = f(held?.record);
      try {
        if (next === held?.record) return next;
        if (!next || next.claimants.length === 0) {
          if (held) await this.api.deleteConfigMap(this.namespace, name, held.resourceVersion);
          this.held.delete(domain);
          return undefined;
        }
        const written = await this.api.writeConfigMap(this.namespace, {
          name,
          labels: { [CLAIM_LABEL]: 'true', [MANAGED_BY_LABEL]: MANAGED_BY },
          data: claimData(next),
          ...(held ? { resourceVersion: held.resourceVersion } : {}),
        });
        this.held.set(domain, { record: next, resourceVersion: written.resourceVersion ?? '' });
        return next;
      } catch (e) {
        if (!isStatus(e, 409) || attempt >= 5) throw e;
        // Someone else wrote first: read the record again and decide again.
        const current = await this.api.readConfigMap(this.namespace, name);
        const record = current ? claimFromData(current.data) : undefined;
        if (current && (!record || record.domain !== domain))
          throw new ClaimRecordError(
            `CLAIM_RECORD_INVALID: ConfigMap ${this.namespace}/${name} is not the claim record of ${domain} (edited by hand?); fix or delete it, and the claims of ${domain} are recorded again as they are observed`,
          );
        if (current && record && current.resourceVersion)
          this.held.set(domain, { record, resourceVersion: current.resourceVersion });
        else this.held.delete(domain);
      }
    }
  }
}
