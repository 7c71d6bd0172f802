import type { DNSZoneClass } from '../api/index.ts';
import type { SecretResolver } from '../api/secret-ref.ts';
import { type ResolvedTransfers, resolveTransfers } from '../zones/transfers.ts';

export interface TransferSettingsResult {
  resolved?: ResolvedTransfers;
  /** Why the settings could not be read (a secret is missing): transfers are off until they can. */
  error?: string;
}

/** Each class's transfer settings with their secrets read, once per class version. */
export class TransferSettings {
  private readonly secrets: SecretResolver;
  private readonly cache = new Map<string, { version: string; result: Promise<TransferSettingsResult> }>();

  constructor(secrets: SecretResolver) {
    this.secrets = secrets;
  }

  of(zoneClass: DNSZoneClass): Promise<TransferSettingsResult> {
    const name = zoneClass.metadata.name;
    const version = `${zoneClass.metadata.uid}/${zoneClass.metadata.generation}`;
    const cached = this.cache.get(name);
    if (cached && cached.version === version) return cached.result;
    const result = resolveTransfers(zoneClass.spec.transfers, this.secrets).then(
      (resolved): TransferSettingsResult => (resolved ? { resolved } : {}),
      (e: Error): TransferSettingsResult => {
        // Read again on the next reconcile: the file or variable may appear.
        this.cache.delete(name);
        return { error: e.message };
      },
    );
    this.cache.set(name, { version, result });
    return result;
  }
}
