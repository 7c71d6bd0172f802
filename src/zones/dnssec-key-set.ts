/**
 * The keys of a signed zone as Zonekeeper's signers hold them, and where they come from: a key store
 * (an adapter: the state directory in folder mode) that generates them with node:crypto on first use.
 */
import type { EffectiveDnssec } from '../api/dnssec.ts';
import { DNSKEY_FLAGS, DNSSEC_ALGORITHMS, type DnssecKey } from '../dns/dnssec/keys.ts';
import type { Name } from '../dns/name.ts';

/** A key as a key store holds it: the key and the role it was generated for. */
export interface ZoneKey {
  role: 'CSK' | 'KSK' | 'ZSK';
  key: DnssecKey;
}

/**
 * Where the built-in server's signing keys live: generated with node:crypto on first use and stored
 * durably before any signature made with them is served (folder mode: the state directory).
 */
export interface DnssecKeyStore {
  /**
   * The zone's keys for `settings`: the stored ones when they match the algorithm and key mode, else
   * new ones, stored before this resolves.
   */
  keysFor(origin: Name, settings: EffectiveDnssec): Promise<ZoneKey[]>;
}

/** Generates the keys of a key mode: one CSK, or a KSK and a ZSK (RFC 6781 §3.1). */
export function generateZoneKeys(
  settings: EffectiveDnssec,
  generate: (algorithm: DnssecKey['algorithm'], flags: number) => DnssecKey,
): ZoneKey[] {
  const algorithm = DNSSEC_ALGORITHMS[settings.algorithm];
  if (settings.keys === 'Split')
    return [
      { role: 'KSK', key: generate(algorithm, DNSKEY_FLAGS.KSK) },
      { role: 'ZSK', key: generate(algorithm, DNSKEY_FLAGS.ZSK) },
    ];
  return [{ role: 'CSK', key: generate(algorithm, DNSKEY_FLAGS.KSK) }];
}

/** Whether stored keys serve `settings` (same algorithm, same key mode). */
export function keysMatch(keys: readonly ZoneKey[], settings: EffectiveDnssec): boolean {
  const algorithm = DNSSEC_ALGORITHMS[settings.algorithm];
  const roles = keys.map((k) => k.role).sort();
  const wanted = settings.keys === 'Split' ? ['KSK', 'ZSK'] : ['CSK'];
  return (
    keys.length === wanted.length &&
    keys.every((k) => k.key.algorithm === algorithm) &&
    roles.every((r, i) => r === wanted[i])
  );
}
