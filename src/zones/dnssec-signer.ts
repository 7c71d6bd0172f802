/**
 * Signs a whole zone (RFC 4035 §2): DNSKEY at the apex, an RRSIG for every authoritative RRset, and the
 * NSEC (RFC 4034 §4) or NSEC3 (RFC 5155 §7.1) chain. A reference signer: it takes the zone's RRsets and
 * returns the signed zone, deterministically (same input, same bytes — see rrsig.ts), which is what
 * `zone export --dnssec`-style output and the incremental signer (dnssec-incremental.ts) are checked
 * against.
 */
import { canonicalRdata } from '../dns/dnssec/canonical.ts';
import {
  base32hex,
  type Nsec3Params,
  nsec3Hash,
  nsec3paramRdata,
  nsec3Rdata,
  nsecRdata,
  printNsec3,
  printNsec3param,
  printTypes,
} from '../dns/dnssec/denial.ts';
import {
  DELETE_CDNSKEY,
  DELETE_CDS,
  type DnssecKey,
  dnskeyRdata,
  dsOf,
  printDnskey,
} from '../dns/dnssec/keys.ts';
import {
  encodeRrsig,
  printRrsig,
  type RrsigRdata,
  type SignatureReuse,
  type SignatureWindow,
  signRRsets,
} from '../dns/dnssec/rrsig.ts';
import { compareCanonical, isInDomain, type Name, nameKey, parentName } from '../dns/name.ts';
import { printRdata, type Rdata } from '../dns/rdata.ts';
import { RRType, typeCode, typeName } from '../dns/rrtype.ts';
import type { RRsetData } from './rrset.ts';
import type { SoaFields } from './soa.ts';

export type Denial = { kind: 'NSEC' } | { kind: 'NSEC3'; params: Nsec3Params };

export interface ZoneToSign {
  origin: Name;
  soa: SoaFields & { serial: number };
  /**
   * Every RRset but the SOA. ALIAS RRsets are not signed (they are answered by synthesis): their owners
   * are in the denial chain with A and AAAA in the type bit map, as the answers synthesized there.
   */
  rrsets: readonly RRsetData[];
}

export interface SigningKeys {
  /** Keys that sign the DNSKEY RRset (KSK, or CSK). */
  keySigning: readonly DnssecKey[];
  /** Keys that sign every other RRset (ZSK, or the same CSK). */
  zoneSigning: readonly DnssecKey[];
  /**
   * The apex DNSKEY RRset when it is not just the signing keys: a rollover publishes keys before they
   * sign and keeps them after (RFC 7583 §3.2), or signs with keys not published yet (RFC 6781 §4.1.4).
   */
  published?: readonly DnssecKey[];
  /** The keys whose DS the parent is to hold: published as CDS (SHA-256) and CDNSKEY (RFC 7344 §3). */
  parent?: readonly DnssecKey[];
  /**
   * Signing is being turned off: CDS `0 0 0 00` and CDNSKEY `0 3 0 AA==` ask the parent to remove the
   * DS (RFC 8078 §4), in place of `parent`'s.
   */
  deleteAtParent?: boolean;
}

/** One record of the signed zone, in wire and presentation forms. */
export interface SignedRecord {
  owner: Name;
  ttl: number;
  type: number;
  /** RDATA in canonical wire form. */
  rdata: Uint8Array;
  /** RDATA in presentation form. */
  text: string;
}

interface PlainSet {
  owner: Name;
  type: number;
  ttl: number;
  records: { wire: Uint8Array; text: string }[];
}

/** Signs the zone; the records come out owner by owner in canonical order, the SOA first. */
export function signZone(
  zone: ZoneToSign,
  keys: SigningKeys,
  /** One window for every RRset, or a window per RRset (the epochs of ADR 0021, dnssec-window.ts). */
  window: SignatureWindow | ((rrset: { owner: Name; type: number }) => SignatureWindow),
  denial: Denial,
  /** Signatures of the previous signing to take again where the signed octets are the same. */
  reuse?: SignatureReuse,
): SignedRecord[] {
  const origin = zone.origin;
  const soaRdata: Rdata = { type: 'SOA', ...zone.soa };
  const sets: PlainSet[] = [
    { owner: origin, type: RRType.SOA, ttl: zone.soa.ttl, records: [rec(soaRdata)] },
    ...zone.rrsets
      .filter((s) => s.type !== 'ALIAS')
      .map((s) => ({ owner: s.owner, type: typeCode(s.type)!, ttl: s.ttl, records: s.rdata.map(rec) })),
  ];
  const dnskeys = uniqueKeys(keys.published ?? [...keys.keySigning, ...keys.zoneSigning]);
  const dnskeyTtl = zone.soa.ttl;
  sets.push({
    owner: origin,
    type: RRType.DNSKEY,
    ttl: dnskeyTtl,
    records: dnskeys.map((k) => ({ wire: dnskeyRdata(k), text: printDnskey(k) })),
  });
  if (keys.deleteAtParent)
    // RFC 8078 §4: the delete request, signed like the CDS/CDNSKEY it replaces.
    sets.push(
      {
        owner: origin,
        type: RRType.CDS,
        ttl: dnskeyTtl,
        records: [{ wire: canonicalRdata(DELETE_CDS), text: printRdata(DELETE_CDS) }],
      },
      {
        owner: origin,
        type: RRType.CDNSKEY,
        ttl: dnskeyTtl,
        records: [{ wire: dnskeyRdata(DELETE_CDNSKEY), text: printDnskey(DELETE_CDNSKEY) }],
      },
    );
  else if (keys.parent && keys.parent.length > 0) {
    // RFC 7344 §4: CDS and CDNSKEY at the apex, the DS set the parent is to hold, signed like the rest.
    const cds = keys.parent.map((k) => dsOf(origin, k));
    sets.push(
      {
        owner: origin,
        type: RRType.CDS,
        ttl: dnskeyTtl,
        records: cds.map((d) => ({ wire: canonicalRdata(d), text: printRdata(d) })),
      },
      {
        owner: origin,
        type: RRType.CDNSKEY,
        ttl: dnskeyTtl,
        records: uniqueKeys(keys.parent).map((k) => ({ wire: dnskeyRdata(k), text: printDnskey(k) })),
      },
    );
  }
  // RFC 9077 §3.3: the denial records' TTL is the lesser of the SOA's TTL and its MINIMUM.
  const denialTtl = Math.min(zone.soa.ttl, zone.soa.minimum);
  if (denial.kind === 'NSEC3')
    sets.push({
      owner: origin,
      type: RRType.NSEC3PARAM,
      ttl: denialTtl,
      records: [{ wire: nsec3paramRdata(denial.params), text: printNsec3param(denial.params) }],
    });

  // Zone cuts: owners other than the apex holding NS. Below a cut nothing is authoritative (glue).
  const cuts = new Set(
    sets
      .filter((s) => s.type === RRType.NS && nameKey(s.owner) !== nameKey(origin))
      .map((s) => nameKey(s.owner)),
  );
  const belowCut = (owner: Name) => {
    for (let n = owner; nameKey(n) !== nameKey(origin); n = parentName(n)) {
      if (n !== owner && cuts.has(nameKey(n))) return true;
    }
    return false;
  };
  const byOwner = new Map<string, { owner: Name; sets: PlainSet[] }>();
  // Glue (and anything else below a cut) is served unsigned and stays out of the chain (RFC 4035 §2.2).
  const glue: PlainSet[] = [];
  const aliasOwners = new Set<string>();
  for (const s of zone.rrsets) {
    if (s.type !== 'ALIAS' || !isInDomain(s.owner, origin) || belowCut(s.owner)) continue;
    const k = nameKey(s.owner);
    aliasOwners.add(k);
    if (!byOwner.has(k)) byOwner.set(k, { owner: s.owner, sets: [] });
  }
  for (const s of sets) {
    if (!isInDomain(s.owner, origin)) continue;
    if (belowCut(s.owner)) {
      glue.push(s);
      continue;
    }
    const k = nameKey(s.owner);
    const entry = byOwner.get(k) ?? { owner: s.owner, sets: [] };
    entry.sets.push(s);
    byOwner.set(k, entry);
  }
  const owners = [...byOwner.values()].sort((a, b) => compareCanonical(a.owner, b.owner));
  // Glue in canonical order too, whatever the order of the input (the incremental signer's order).
  glue.sort((a, b) => compareCanonical(a.owner, b.owner) || a.type - b.type);

  // RFC 4035 §2.2: at a delegation point only DS (and the NSEC) is signed; NS is not authoritative.
  const glueSets = new Set(glue);
  const signedAt = (s: PlainSet) =>
    !glueSets.has(s) && (!cuts.has(nameKey(s.owner)) || s.type === RRType.DS || s.type === RRType.NSEC);
  const out: SignedRecord[] = [];
  // Signatures are made per key in one batch at the end (cheaper for ECDSA); their places are kept.
  const toSign = new Map<DnssecKey, { at: number; set: PlainSet }[]>();
  const emit = (s: PlainSet) => {
    for (const r of s.records)
      out.push({ owner: s.owner, ttl: s.ttl, type: s.type, rdata: r.wire, text: r.text });
    if (!signedAt(s)) return;
    // RFC 7344 §4.1: CDS and CDNSKEY are signed, like DNSKEY, by a key the parent's DS names.
    const signers = isKeySigned(s.type) ? keys.keySigning : keys.zoneSigning;
    for (const key of signers) {
      const list = toSign.get(key) ?? [];
      list.push({ at: out.length, set: s });
      toSign.set(key, list);
      out.push(PLACEHOLDER);
    }
  };
  const signAll = (): SignedRecord[] => {
    for (const [key, list] of toSign) {
      const sigs = signRRsets(
        list.map(({ set }) => ({
          owner: set.owner,
          type: set.type,
          ttl: set.ttl,
          rdatas: set.records.map((r) => r.wire),
        })),
        key,
        origin,
        window,
        reuse,
      );
      list.forEach(({ at, set }, i) => {
        out[at] = rrsigRecord(set.owner, set.ttl, sigs[i]!);
      });
    }
    reuse?.finish();
    return out;
  };
  const typesAt = (entry: { owner: Name; sets: PlainSet[] }) => {
    const types = entry.sets.map((s) => s.type);
    if (aliasOwners.has(nameKey(entry.owner))) types.push(RRType.A, RRType.AAAA);
    const isCut = cuts.has(nameKey(entry.owner));
    // RRSIG appears in the bit map where the name has a signed RRset (RFC 4034 §4.1.2).
    if (!isCut || types.includes(RRType.DS)) types.push(RRType.RRSIG);
    return types;
  };

  if (denial.kind === 'NSEC') {
    owners.forEach((entry, i) => {
      const next = owners[(i + 1) % owners.length]!.owner;
      const types = [...typesAt(entry), RRType.NSEC];
      const isCut = cuts.has(nameKey(entry.owner));
      if (isCut && !types.includes(RRType.RRSIG)) types.push(RRType.RRSIG); // the NSEC itself is signed
      entry.sets.push({
        owner: entry.owner,
        type: RRType.NSEC,
        ttl: denialTtl,
        records: [{ wire: nsecRdata(next, types), text: `${next} ${printTypes(types)}` }],
      });
    });
    for (const entry of owners) for (const s of sortSets(entry.sets)) emit(s);
    for (const s of glue) emit(s);
    return signAll();
  }

  // NSEC3: every owner and every empty non-terminal between it and the apex is hashed (RFC 5155 §7.1).
  const params = denial.params;
  const hashed = new Map<string, { hash: Uint8Array; types: number[] }>();
  for (const entry of owners) {
    hashed.set(base32hex(nsec3Hash(entry.owner, params)), {
      hash: nsec3Hash(entry.owner, params),
      types: typesAt(entry),
    });
    for (let n = entry.owner; nameKey(n) !== nameKey(origin); ) {
      n = parentName(n);
      if (byOwner.has(nameKey(n))) break;
      const label = base32hex(nsec3Hash(n, params));
      if (!hashed.has(label)) hashed.set(label, { hash: nsec3Hash(n, params), types: [] });
    }
  }
  const chain = [...hashed.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const entry of owners) for (const s of sortSets(entry.sets)) emit(s);
  for (const s of glue) emit(s);
  chain.forEach(([label, { types }], i) => {
    const next = chain[(i + 1) % chain.length]![1].hash;
    emit({
      owner: `${label}.${origin === '.' ? '' : origin}`,
      type: RRType.NSEC3,
      ttl: denialTtl,
      records: [{ wire: nsec3Rdata(params, next, types), text: printNsec3(params, next, types) }],
    });
  });
  return signAll();
}

/** RFC 4035 §2.1, RFC 7344 §4.1: the apex DNSKEY, CDS and CDNSKEY RRsets are signed by the key-signing keys. */
export function isKeySigned(type: number): boolean {
  return type === RRType.DNSKEY || type === RRType.CDS || type === RRType.CDNSKEY;
}

const PLACEHOLDER: SignedRecord = { owner: '.', ttl: 0, type: 0, rdata: new Uint8Array(0), text: '' };

function rec(rdata: Rdata): { wire: Uint8Array; text: string } {
  return { wire: canonicalRdata(rdata), text: printRdata(rdata) };
}

function rrsigRecord(owner: Name, ttl: number, sig: RrsigRdata): SignedRecord {
  return { owner, ttl, type: RRType.RRSIG, rdata: encodeRrsig(sig), text: printRrsig(sig) };
}

/** SOA first at the apex, then by type code, as zone files list them. */
function sortSets(sets: PlainSet[]): PlainSet[] {
  return [...sets].sort((a, b) => (a.type === RRType.SOA ? -1 : b.type === RRType.SOA ? 1 : a.type - b.type));
}

/** The keys without repeats (a CSK is both key-signing and zone-signing), by public key, first place kept. */
export function uniqueKeys(keys: readonly DnssecKey[]): DnssecKey[] {
  const seen = new Set<string>();
  return keys.filter((k) => {
    const id = Buffer.from(k.publicKey).toString('base64');
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** The signed zone as an RFC 1035 master file (absolute owners, one record per line). */
export function printSignedZone(origin: Name, records: readonly SignedRecord[]): string {
  const lines = [`$ORIGIN ${origin}`];
  for (const r of records) lines.push(`${r.owner}\t${r.ttl}\tIN\t${typeName(r.type)}\t${r.text}`);
  return `${lines.join('\n')}\n`;
}
