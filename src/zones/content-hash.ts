import { hash } from 'node:crypto';
import { canonicalSortKey, nameKey } from '../dns/name.ts';
import { printRdata, type Rdata } from '../dns/rdata.ts';
import { shortSort } from '../util/short-sort.ts';
import type { RRset } from './rrset.ts';
import type { SoaFields } from './soa.ts';

/**
 * The content hash of a zone, in two levels so that a change costs work for the names it touches
 * (ADR 0012):
 *
 * - an owner digest per name: SHA-256 over the name's records as lines `owner TTL type rdata` (owner
 *   lowercased, RDATA in canonical presentation form), sorted, joined by newlines;
 * - the zone hash: SHA-256 over the SOA without its serial, then the owner digests of every name that
 *   has records, in canonical name order (RFC 4034 §6.1).
 *
 * Two zones with equal content hash equal regardless of the order their records arrived in, any
 * change a resolver could observe changes the hash, and collisions are as hard as for SHA-256.
 * `ZoneModel` keeps the owner digests and recomputes only those of changed names; this function is
 * the reference that computes everything from scratch.
 */
export function zoneContentHash(soa: SoaFields, rrsets: readonly RRset[]): string {
  const byOwner = new Map<string, RRset[]>();
  for (const rrset of rrsets) {
    const key = canonicalSortKey(rrset.owner);
    const list = byOwner.get(key);
    if (list) list.push(rrset);
    else byOwner.set(key, [rrset]);
  }
  const keys = [...byOwner.keys()].sort();
  return zoneDigest(
    soa,
    keys.map((k) => ownerDigest(byOwner.get(k)!)),
  );
}

/** What of an RRset its owner digest covers (its origin, which record set or zone made it, is not content). */
export type HashedRRset = Pick<RRset, 'owner' | 'type' | 'ttl' | 'rdata' | 'steering'>;

/**
 * SHA-256 over the records of one owner name (every RRset given must have that owner), as a 32-character
 * latin1 string: a one-byte string is the smallest way to keep a digest per name. `ownerKey`, when the
 * caller has it, is the owner's `nameKey` (not made again here: a scan of the name per digest).
 */
export function ownerDigest(rrsets: Iterable<HashedRRset>, ownerKey?: string): string {
  // 'binary' is Node's name for latin1: one character per octet.
  return hash('sha256', ownerText(rrsets, ownerKey), 'binary');
}

/**
 * `ownerDigest` of a name that publishes one RRset, given by its parts (`ownerKey` the owner's
 * `nameKey`): the same text hashed, without an RRset object and a list of one made per name to
 * hash (most names of a zone publish one RRset, and a first start hashes every name).
 */
export function rrsetDigest(
  ownerKey: string,
  ttl: number,
  type: RRset['type'],
  rdata: Rdata[],
  steering: RRset['steering'] | undefined,
): string {
  if (rdata.length === 1 && steering === undefined)
    return hash('sha256', `${ownerKey} ${ttl} ${type} ${printRdata(rdata[0]!)}`, 'binary');
  return ownerDigest([{ owner: ownerKey, ttl, type, rdata, ...(steering ? { steering } : {}) }], ownerKey);
}

/** The same SHA-256 as `ownerDigest`, as its 32 octets. */
export function ownerDigestBytes(rrsets: Iterable<HashedRRset>): Buffer {
  return hash('sha256', ownerText(rrsets), 'buffer');
}

/**
 * What an owner digest hashes: the name's records as lines, sorted, joined by newlines. Most names
 * hold one record: nothing to sort or join, and no list made for it; two lines (the next most usual)
 * are put in order by one comparison. The owner's key is made once (every RRset given has that
 * owner, in whatever letter case), or given. The one-shot `hash` makes no Hash object, and a digest asked for
 * as a latin1 string (`ownerDigest`) makes no Buffer either (a name's digest is computed for every
 * name of every zone on a first start; a Buffer per digest cost about three times the hash).
 */
function ownerText(rrsets: Iterable<HashedRRset>, ownerKey?: string): string {
  let owner = ownerKey;
  let only: string | undefined;
  let lines: string[] | undefined;
  for (const rrset of rrsets) {
    owner ??= nameKey(rrset.owner);
    for (const rdata of rrset.rdata) {
      const line = `${owner} ${rrset.ttl} ${rrset.type} ${printRdata(rdata)}`;
      if (lines !== undefined) lines.push(line);
      else if (only === undefined) only = line;
      else lines = [only, line];
    }
    // Steering changes what is answered, so it is content (a line no record line can equal).
    if (rrset.steering) {
      const line = `${owner} ;steering ${rrset.type} ${JSON.stringify(rrset.steering)}`;
      if (lines !== undefined) lines.push(line);
      else if (only === undefined) only = line;
      else lines = [only, line];
    }
  }
  if (lines === undefined) return only ?? '';
  if (lines.length === 2) {
    // The order `sort()` gives two strings (by UTF-16 code units, as `<` compares them).
    const a = lines[0]!;
    const b = lines[1]!;
    return b < a ? `${b}\n${a}` : `${a}\n${b}`;
  }
  return shortSort(lines, byCodeUnits).join('\n');
}

/** The order `sort()` gives strings (by UTF-16 code units, as `<` compares them). */
function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The zone hash from the SOA and the owner digests in canonical name order. */
export function zoneDigest(soa: SoaFields, ownerDigests: readonly string[]): string {
  return zoneDigestOfBytes(soa, Buffer.from(ownerDigests.join(''), 'latin1'));
}

/**
 * The zone hash from the SOA and the owner digests' octets, concatenated in canonical name order:
 * the same value as `zoneDigest` of the digests as latin1 strings (one octet per character).
 * `ownerDigests` may be a function giving them after `headRoom` octets left free (a multiple of
 * four): the text of the SOA is written into that room and the whole hashed by one call of the
 * one-shot `hash`, the same octets as a `Hash` given the text and then the digests (one `Hash`
 * object and three calls into it per zone, made for every zone on a first start).
 */
export function zoneDigestOfBytes(
  soa: SoaFields,
  ownerDigests: Uint8Array | ((headRoom: number) => Uint8Array),
): string {
  const head = `SOA ${soa.ttl} ${nameKey(soa.mname)} ${nameKey(soa.rname)} ${soa.refresh} ${soa.retry} ${soa.expire} ${soa.minimum}\n`;
  // UTF-8, as `Hash.update` encodes a string.
  const length = Buffer.byteLength(head, 'utf8');
  const room = (length + 3) & ~3;
  let bytes: Uint8Array;
  if (typeof ownerDigests === 'function') bytes = ownerDigests(room);
  else {
    bytes = new Uint8Array(room + ownerDigests.length);
    bytes.set(ownerDigests, room);
  }
  const start = room - length;
  const text = start === 0 ? bytes : bytes.subarray(start);
  utf8.encodeInto(head, text);
  return hash('sha256', text, 'hex');
}

const utf8 = new TextEncoder();
