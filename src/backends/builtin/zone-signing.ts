/**
 * Signing for the built-in server (ADR 0021): the zone's keys from a key store, the whole zone signed
 * deterministically at the signing time recorded with its serial, and the status to report (keys, DS
 * for the parent).
 */
import type { DnssecStatus, EffectiveDnssec } from '../../api/dnssec.ts';
import { NSEC3_RFC9276 } from '../../dns/dnssec/denial.ts';

export { type DnssecKeyStore, generateZoneKeys, keysMatch, type ZoneKey };

import { type DnssecKey, dnskeyRdata, dsOf, keyTag } from '../../dns/dnssec/keys.ts';
import { type Name, nameKey } from '../../dns/name.ts';
import { printRdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
import type { SignedRecordData, ZoneDnssecData } from '../../server/zone-dnssec.ts';
import { IncrementalSigner } from '../../zones/dnssec-incremental.ts';
import {
  type DnssecKeyStore,
  generateZoneKeys,
  type KeySetState,
  keyStateAt,
  keysAt,
  keysMatch,
  type ZoneKey,
} from '../../zones/dnssec-key-set.ts';
import type { Denial } from '../../zones/dnssec-signer.ts';
import { DEFAULT_WINDOW_POLICY, type WindowPolicy } from '../../zones/dnssec-window.ts';
import type { RRsetData, RRsetKey } from '../../zones/rrset.ts';
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
 * Each signed zone's incremental signer (dnssec-incremental.ts), kept from one serial to the next so
 * a change signs what it touches; a zone whose denial or window policy changed starts a new one.
 */
export class KeptSigners {
  private readonly signers = new Map<string, IncrementalSigner>();

  for(origin: Name, denial: Denial, policy: WindowPolicy): IncrementalSigner {
    const key = nameKey(origin);
    const held = this.signers.get(key);
    if (held?.fits(origin, denial, policy)) return held;
    const made = new IncrementalSigner(origin, denial, policy);
    this.signers.set(key, made);
    return made;
  }

  forget(origin: Name): void {
    this.signers.delete(nameKey(origin));
    this.contents.delete(nameKey(origin));
  }

  /** Each zone's RRsets as last given (the signing thread's copy), by owner and type. */
  private readonly contents = new Map<string, { serial: number; rrsets: Map<string, RRsetData> }>();

  /**
   * The zone's RRsets at `serial`: the whole content given, or the content held at `change.fromSerial`
   * with the change applied. RRsets not changed stay the same objects, which the signer compares first.
   */
  content(
    origin: Name,
    serial: number,
    rrsets: readonly RRsetData[] | undefined,
    change?: { fromSerial: number; upserts: readonly RRsetData[]; deletes: readonly RRsetKey[] },
  ): RRsetData[] {
    const key = nameKey(origin);
    const id = (r: RRsetKey) => `${nameKey(r.owner)}\u0000${r.type}`;
    if (rrsets) {
      this.contents.set(key, { serial, rrsets: new Map(rrsets.map((r) => [id(r), r])) });
      return [...rrsets];
    }
    const held = this.contents.get(key);
    if (!change || !held || held.serial !== change.fromSerial) {
      this.contents.delete(key);
      throw new Error(
        `zone ${origin}: the signing thread holds no content at serial ${change?.fromSerial}; the zone is sent whole on the next try`,
      );
    }
    for (const d of change.deletes) held.rrsets.delete(id(d));
    for (const r of change.upserts) held.rrsets.set(id(r), r);
    held.serial = serial;
    return [...held.rrsets.values()];
  }
}

/**
 * Signs the zone at `serial` with the windows of ADR 0021 (epochs from `signedAt`) and returns the
 * signer's records for the server. Deterministic: the same content, serial, keys and `signedAt` give
 * the same bytes in every process, whether the zone's previous signing was kept or not.
 */
export function signForServing(
  zone: { origin: Name; soa: SoaFields; serial: number; rrsets: readonly RRsetData[] },
  settings: EffectiveDnssec,
  keys: readonly ZoneKey[],
  signedAt: number,
  policy: WindowPolicy = DEFAULT_WINDOW_POLICY,
  /** The zones' signers kept from their previous signing: only what a change touches is signed. */
  kept?: KeptSigners,
): ZoneDnssecData {
  // The keys' state at the signing time: what a rollover recorded for later does not touch this serial.
  const { keySigning, zoneSigning, published, parent } = keysAt(keys, signedAt);
  const denial =
    settings.denial === 'NSEC3'
      ? ({ kind: 'NSEC3', params: NSEC3_RFC9276 } as const)
      : ({ kind: 'NSEC' } as const);
  const signer = kept?.for(zone.origin, denial, policy) ?? new IncrementalSigner(zone.origin, denial, policy);
  const records = signer.sign(
    { origin: zone.origin, soa: { ...zone.soa, serial: zone.serial }, rrsets: zone.rrsets },
    // RFC 8078 §4: signing turned off, the delete CDS/CDNSKEY in place of the DS set.
    { keySigning, zoneSigning, published, parent, ...(settings.disable ? { deleteAtParent: true } : {}) },
    signedAt,
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
  /** Signing is being turned off: the parent is to hold no DS (the delete CDS/CDNSKEY are published). */
  disable?: boolean,
): DnssecStatus {
  const parent = disable ? [] : keysAt(keys, signedAt).parent;
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
    cds: parent.length > 0 || disable ? 'Published' : 'NotPublished',
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

/**
 * A zone's signer records packed for handing from the signing thread: the RDATA of every record in one
 * buffer and the fixed fields in another (both transferred, not copied), the owners as one string. A
 * structured clone of the records one object each costs far more (bench/dnssec.ts `handOverMs`).
 */
export interface PackedRecords {
  owners: string;
  /** Per record: TTL, type, RDATA offset, RDATA length. */
  fields: Uint32Array<ArrayBuffer>;
  rdata: Uint8Array<ArrayBuffer>;
}

export function packRecords(records: readonly SignedRecordData[]): PackedRecords {
  let size = 0;
  for (const r of records) size += r.rdata.length;
  const rdata = new Uint8Array(size);
  const fields = new Uint32Array(records.length * 4);
  let at = 0;
  records.forEach((r, i) => {
    rdata.set(r.rdata, at);
    fields[i * 4] = r.ttl;
    fields[i * 4 + 1] = r.type;
    fields[i * 4 + 2] = at;
    fields[i * 4 + 3] = r.rdata.length;
    at += r.rdata.length;
  });
  // Names in presentation form hold no newline (it is escaped as \010).
  return { owners: records.map((r) => r.owner).join('\n'), fields, rdata };
}

export function unpackRecords(packed: PackedRecords): SignedRecordData[] {
  const { fields, rdata } = packed;
  const owners = packed.owners === '' ? [] : packed.owners.split('\n');
  const out: SignedRecordData[] = new Array(owners.length);
  for (let i = 0; i < owners.length; i++) {
    const at = fields[i * 4 + 2]!;
    out[i] = {
      owner: owners[i]!,
      ttl: fields[i * 4]!,
      type: fields[i * 4 + 1]!,
      rdata: rdata.subarray(at, at + fields[i * 4 + 3]!),
    };
  }
  return out;
}
