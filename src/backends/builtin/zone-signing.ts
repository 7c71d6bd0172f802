/**
 * Signing for the built-in server (ADR 0021): the zone's keys from a key store, the whole zone signed
 * deterministically at the signing time recorded with its serial, and the status to report (keys, DS
 * for the parent).
 */
import type { DnssecStatus, EffectiveDnssec } from '../../api/dnssec.ts';
import { NSEC3_RFC9276 } from '../../dns/dnssec/denial.ts';

export { type DnssecKeyStore, generateZoneKeys, keysMatch, type ZoneKey };

import { type DnssecKey, dnskeyRdata, dsOf, keyTag } from '../../dns/dnssec/keys.ts';
import type { SignatureReuse } from '../../dns/dnssec/rrsig.ts';
import type { Name } from '../../dns/name.ts';
import { printRdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
import type { ZoneDnssecData } from '../../server/zone-dnssec.ts';
import {
  type DnssecKeyStore,
  generateZoneKeys,
  type KeySetState,
  keyStateAt,
  keysAt,
  keysMatch,
  type ZoneKey,
} from '../../zones/dnssec-key-set.ts';
import { signZone } from '../../zones/dnssec-signer.ts';
import { DEFAULT_WINDOW_POLICY, signatureWindow, type WindowPolicy } from '../../zones/dnssec-window.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import type { SoaFields } from '../../zones/soa.ts';

/** The types the signer adds to a zone (held as the zone's DNSSEC material, not as its content). */
const SIGNER_TYPES: ReadonlySet<number> = new Set([
  RRType.CDS,
  RRType.CDNSKEY,
  RRType.RRSIG,
  RRType.NSEC,
  RRType.NSEC3,
  RRType.DNSKEY,
  RRType.NSEC3PARAM,
]);

/**
 * Signs the zone at `serial` with the windows of ADR 0021 (epochs from `signedAt`) and returns the
 * signer's records for the server. Deterministic: the same content, serial, keys and `signedAt` give
 * the same bytes in every process.
 */
export function signForServing(
  zone: { origin: Name; soa: SoaFields; serial: number; rrsets: readonly RRsetData[] },
  settings: EffectiveDnssec,
  keys: readonly ZoneKey[],
  signedAt: number,
  policy: WindowPolicy = DEFAULT_WINDOW_POLICY,
  /** The zone's signatures from its previous signing: only RRsets whose signed octets changed are signed. */
  reuse?: SignatureReuse,
): ZoneDnssecData {
  // The keys' state at the signing time: what a rollover recorded for later does not touch this serial.
  const { keySigning, zoneSigning, published, parent } = keysAt(keys, signedAt);
  const denial =
    settings.denial === 'NSEC3'
      ? ({ kind: 'NSEC3', params: NSEC3_RFC9276 } as const)
      : ({ kind: 'NSEC' } as const);
  const records = signZone(
    { origin: zone.origin, soa: { ...zone.soa, serial: zone.serial }, rrsets: zone.rrsets },
    { keySigning, zoneSigning, published, parent },
    (r) => signatureWindow(signedAt, r.owner, r.type, policy),
    denial,
    reuse,
  );
  return {
    denial: denial.kind,
    ...(denial.kind === 'NSEC3' ? { nsec3: denial.params } : {}),
    records: records
      .filter((r) => SIGNER_TYPES.has(r.type))
      .map((r) => ({ owner: r.owner, ttl: r.ttl, type: r.type, rdata: r.rdata })),
    signing: { keys: zoneSigning, signedAt, policy },
  };
}

/**
 * `status.dnssec` of a zone the built-in server signs: its keys as the serial signed at `signedAt`
 * uses them (a key a rollover prepares for later shows neither active nor published), the DS for the
 * parent (the CDS/CDNSKEY the zone publishes) and the rollover in progress.
 */
export function signedStatus(
  origin: Name,
  keys: readonly ZoneKey[],
  signedAt: number,
  rollover?: DnssecStatus['rollover'],
): DnssecStatus {
  const parent = keysAt(keys, signedAt).parent;
  return {
    keys: keys.map((k) => {
      const state = keyStateAt(k, signedAt);
      return {
        keyTag: keyTag(dnskeyRdata(k.key)),
        algorithm: k.key.algorithm,
        role: k.role,
        active: state.active,
        published: state.published,
      };
    }),
    ds: parent.map((k) => printRdata(dsOf(origin, k))),
    ...(rollover ? { rollover } : {}),
    cds: parent.length > 0 ? 'Published' : 'NotPublished',
  };
}

/**
 * Keys kept in memory only (no state directory): lost at exit, so a restart publishes new DNSKEYs and
 * the DS at the parent no longer matches. For tests and throwaway servers; `serve` warns.
 */
export class MemoryKeyStore implements DnssecKeyStore {
  private readonly keys = new Map<string, KeySetState>();
  private readonly generate: (algorithm: DnssecKey['algorithm'], flags: number) => DnssecKey;

  constructor(generate: (algorithm: DnssecKey['algorithm'], flags: number) => DnssecKey) {
    this.generate = generate;
  }

  async keysFor(origin: Name, settings: EffectiveDnssec): Promise<ZoneKey[]> {
    const id = origin.toLowerCase();
    const held = this.keys.get(id);
    if (held && keysMatch(held.keys, settings)) return held.keys;
    const made = generateZoneKeys(settings, this.generate);
    this.keys.set(id, { keys: made });
    return made;
  }

  async update(origin: Name, step: (held: KeySetState) => KeySetState | undefined): Promise<KeySetState> {
    const id = origin.toLowerCase();
    const held = this.keys.get(id) ?? { keys: [] };
    const next = step(held);
    if (next) this.keys.set(id, next);
    return next ?? held;
  }
}
