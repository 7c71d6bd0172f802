import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../api/index.ts';
import { type GeoIp, steeredTtl, type Topology } from '../api/steering.ts';
import {
  compareNameKeys,
  isInDomain,
  type Name,
  nameEquals,
  nameKey,
  parseName,
  stripFirstLabel,
} from '../dns/name.ts';
import type { Rdata } from '../dns/rdata.ts';
import { type RecordTypeName, RRType } from '../dns/rrtype.ts';
import { shortSort } from '../util/short-sort.ts';
import type { AssembledZone, ChildDelegation, RecordVerdict } from './assemble.ts';
import { type HashedRRset, ownerDigest, rrsetDigest, zoneDigestOfBytes } from './content-hash.ts';
import { ownerConflict } from './exclusivity.ts';
import { keptRecords, steeringOf } from './record-parse.ts';
import { type ResourceKey, refOf } from './resource-key.ts';
import type { PublishedByName, RRset, RRsetDelta, RRsetKey } from './rrset.ts';
import { type SoaFields, soaFor, zoneDefaultTtl } from './soa.ts';
import { zoneNameServers } from './zone-name-servers.ts';

/** What changed in a zone's published content, RRset by RRset. */
export interface ZoneDelta extends RRsetDelta {
  upserts: RRset[];
  deletes: RRsetKey[];
  /**
   * Record sets whose verdict changed; with `everyVerdict`, only those not in the model any more.
   */
  verdicts: Set<ResourceKey>;
  /**
   * Every record set the model holds has a new verdict, and `verdicts` does not list them: set by a
   * first build that lists no changes (`ZoneModel.update`'s `listChanges`), where a list of every
   * record set of the zone (a set as large as the zone) would be read by nobody, its reader taking
   * every verdict of a new model (`ZoneModelState.verdictsPending`). Only where the model holds a
   * record set.
   */
  everyVerdict: boolean;
  /**
   * For each RRset upserted or deleted (by `rrsetId`): what the zone published there before this
   * update, undefined where it published nothing (change safety measures against it).
   */
  previous: Map<string, RRset | undefined>;
  /**
   * Some RRset was upserted or deleted. Also set by an update that does not list its changes
   * (`upserts`, `deletes` and `previous` left empty; `ZoneModel.update`'s `listChanges`).
   */
  changed: boolean;
}

/** An empty delta. */
function emptyDelta(): ZoneDelta {
  return {
    upserts: [],
    deletes: [],
    verdicts: new Set(),
    everyVerdict: false,
    previous: new Map(),
    changed: false,
  };
}

/**
 * A record set as the model holds it. Only what cannot be read from its spec: the spec itself (the
 * entry is rebuilt when the spec object changes; the type is `spec.type`) and the creation time that
 * orders writers, not the record set object, which the store replaces on every status or finalizer
 * write: an entry holding the object would keep an old version of it, with its metadata, alive
 * beside the store's (docs/benchmarks.md, memory budget). The writer named in messages is
 * `byOf(entry)`, built when a message needs it. Every field is set when the entry is made, so none
 * is added later into a separate property store.
 */
interface Entry {
  key: ResourceKey;
  spec: DNSRecordSet['spec'];
  /** `metadata.creationTimestamp` of the record set (oldest writer wins). */
  created: string | undefined;
  /** The owner name; its key in `ZoneModel.owners` is `nameKey(fqdn)` (the fqdn itself when lowercase). */
  fqdn: Name;
  /**
   * The record set's parsed records (shared with the parse cache, or with the model this one was
   * rebuilt from), or, as a string, why it cannot be
   * published: it breaks a rule that does not depend on other records. One field for the two, which
   * never coexist. The RRset itself is made when asked for (`ZoneModel.rrsetOf`): its owner is the
   * fqdn, its type and TTL come from the spec, its origin from the key, so an RRset and its origin
   * object kept per record set (112 bytes) would repeat what the entry holds.
   */
  rdata: Rdata[] | string;
  /**
   * The record set's verdict in the zone (`ZoneModel.verdicts` reads it from here, through
   * `verdictOf`). `true` for accepted: an accepted verdict says nothing but the fqdn, which the
   * entry holds, so it is made when read instead of kept as an object per record set. A number for
   * accepted too, in an entry that is its own owner (see `Owner`): the slot of its name's digest in
   * the model's `DigestSlots`.
   */
  verdict: RecordVerdict | true | number | undefined;
}

/** An entry's verdict as a `RecordVerdict` (made on the spot for an accepted one). */
function verdictOf(entry: Entry): RecordVerdict | undefined {
  const v = entry.verdict;
  return v === true || typeof v === 'number' ? { accepted: true, fqdn: entry.fqdn } : v;
}

function isAccepted(v: RecordVerdict | true | number | undefined): boolean {
  return v === true || typeof v === 'number' || v?.accepted === true;
}

/** An entry's records, for an entry that has them (not invalid). */
function rdataOf(entry: Entry): Rdata[] {
  return entry.rdata as Rdata[];
}

/**
 * What an owner publishes for one type: an RRset the zone itself places there (`Owner.fixed`), or
 * the entry of the record set whose RRset is published (made when asked for). Compared by identity:
 * an entry is replaced whenever its record set's spec or fqdn changes.
 */
type Source = Entry | RRset;

function isEntry(source: Source): source is Entry {
  return (source as Entry).spec !== undefined;
}

function typeOfSource(source: Source): RecordTypeName {
  return isEntry(source) ? source.spec.type : source.type;
}

/**
 * The verdicts of a zone's record sets, read from its entries: a view, not a second map with an
 * entry per record set (docs/benchmarks.md, memory budget).
 */
class Verdicts implements ReadonlyMap<ResourceKey, RecordVerdict> {
  private readonly byKey: ReadonlyMap<ResourceKey, Entry>;
  /** Entries with a verdict. */
  count = 0;

  constructor(entries: ReadonlyMap<ResourceKey, Entry>) {
    this.byKey = entries;
  }

  get size(): number {
    return this.count;
  }

  get(key: ResourceKey): RecordVerdict | undefined {
    const entry = this.byKey.get(key);
    return entry ? verdictOf(entry) : undefined;
  }

  has(key: ResourceKey): boolean {
    return this.byKey.get(key)?.verdict !== undefined;
  }

  private *entries_(): Generator<[ResourceKey, RecordVerdict]> {
    for (const [key, entry] of this.byKey) if (entry.verdict !== undefined) yield [key, verdictOf(entry)!];
  }

  entries(): MapIterator<[ResourceKey, RecordVerdict]> {
    return this.entries_() as MapIterator<[ResourceKey, RecordVerdict]>;
  }

  *keys(): MapIterator<ResourceKey> {
    // No verdict object made per key: most readers look up only some of them.
    for (const [key, entry] of this.byKey) if (entry.verdict !== undefined) yield key;
  }

  *values(): MapIterator<RecordVerdict> {
    for (const [, verdict] of this.entries_()) yield verdict;
  }

  get [Symbol.toStringTag](): string {
    return 'Verdicts';
  }

  [Symbol.iterator](): MapIterator<[ResourceKey, RecordVerdict]> {
    return this.entries();
  }

  forEach(
    callback: (value: RecordVerdict, key: ResourceKey, map: ReadonlyMap<ResourceKey, RecordVerdict>) => void,
    thisArg?: unknown,
  ): void {
    for (const [key, verdict] of this.entries_()) callback.call(thisArg, verdict, key, this);
  }
}

/** Who wrote an entry, as messages name it. */
function byOf(entry: Entry): string {
  return `DNSRecordSet ${entry.key}`;
}

/**
 * Oldest first, as `compareByAge` orders record sets: creation time, then key (an entry's key is its
 * record set's `namespace/name`).
 */
function olderFirst(a: Entry, b: Entry): number {
  const ta = a.created ?? '';
  const tb = b.created ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** An entry's record type. */
function typeOf(entry: Entry): RecordTypeName {
  return entry.spec.type;
}

/** RRsets by type code (the order `rrsets` yields a name's RRsets in). */
function byTypeCode(a: RRset, b: RRset): number {
  return RRType[a.type] - RRType[b.type];
}

/** The order a name's record sets are decided in: NS first (a delegation wins), then oldest first. */
function decisionOrder(a: Entry, b: Entry): number {
  const an = typeOf(a) === 'NS' ? 0 : 1;
  const bn = typeOf(b) === 'NS' ? 0 : 1;
  return an - bn || olderFirst(a, b);
}

/** What of `sources` is of `type`, if any. */
function sourceOfType(sources: readonly Source[], type: RecordTypeName): Source | undefined {
  for (const source of sources) if (typeOfSource(source) === type) return source;
  return undefined;
}

interface Cut {
  owner: Name;
  hosts: Name[];
  by: string;
}

interface Fixed {
  rrset: RRset;
  by: string;
}

/** `ZoneModel.setChildren`'s signature of no child zones (`JSON.stringify` of an empty list). */
const NO_CHILDREN = '[]';

/** What `judge` is given for a name where nothing is published yet (never mutated). */
const NO_TYPES: ReadonlyMap<string, string> = new Map();

/** The one empty list every owner without fixed RRsets shares (never mutated: replaced). */
const NO_FIXED: readonly Fixed[] = Object.freeze([]);

/**
 * An owner name of the zone. Its `nameKey` is its key in `ZoneModel.owners`, its delegation
 * point (if any) is in `ZoneModel.cuts`. Most owners hold one record set and publish one RRset, so
 * both are kept as the object itself when there is one and as a list only from two on: a list costs
 * two objects (about 56 bytes for one element) per owner (docs/benchmarks.md, the zone model).
 */
interface Owner {
  name: Name;
  /** The record sets at this name: none, one, or a list of two or more. */
  entries: Entry | Entry[] | undefined;
  /** RRsets the zone itself places here: apex NS, a child zone's NS, glue from a child. */
  fixed: readonly Fixed[];
  /** What is published here, one per type: none, one, or a list of two or more. */
  published: Source | readonly Source[] | undefined;
  /**
   * Where the SHA-256 of the published records (see content-hash.ts) is kept in the model's
   * `DigestSlots`, kept as names change; -1 while the owner publishes nothing.
   */
  digest: number;
}

/**
 * What `ZoneModel.owners` keeps per name. A name whose one record set is all it holds (no RRset the
 * zone places there, the owner's name spelled as the record set's fqdn) is kept as that record set's
 * entry itself, not an `Owner` beside it (64 bytes per name, docs/benchmarks.md, the zone model's
 * entries): it publishes the entry's RRset when the entry is accepted, and its digest slot is then
 * the entry's verdict. An update that touches the name makes it an `Owner` again (`ZoneModel.
 * ownerAt`) and `decide` lets it rest as the entry once decided. A new name with a new record set
 * is kept as its entry from the start (publishing nothing until decided), and a resting entry that
 * publishes nothing is decided as it rests (`decideAlone`).
 */
type Held = Owner | Entry;

function isOwner(held: Held): held is Owner {
  return (held as Entry).spec === undefined;
}

/** What a name publishes (owner or resting entry), as a list. */
function publishedAt(held: Held): readonly Source[] {
  if (isOwner(held)) return publishedOf(held);
  return typeof held.verdict === 'number' ? [held] : NOTHING_PUBLISHED;
}

/** What a name publishes (owner or resting entry) as kept: one, a list of two or more, or none. */
function publishedSources(held: Held): Source | readonly Source[] | undefined {
  return isOwner(held) ? held.published : typeof held.verdict === 'number' ? held : undefined;
}

/** A name's digest slot (owner or resting entry), -1 while it publishes nothing. */
function digestAt(held: Held): number {
  if (isOwner(held)) return held.digest;
  return typeof held.verdict === 'number' ? held.verdict : -1;
}

const NOTHING_PUBLISHED: readonly Source[] = Object.freeze([]);

/** What an owner publishes as a list (a new array when it publishes one). */
function publishedOf(owner: Owner): readonly Source[] {
  const p = owner.published;
  return p === undefined ? NOTHING_PUBLISHED : isList(p) ? p : [p];
}

function isList<T>(value: T | readonly T[]): value is readonly T[] {
  return Array.isArray(value);
}

const DIGEST_OCTETS = 32;

/**
 * Zones with at least this many names keep their names' digest slots in canonical order between two
 * content hashes (`ZoneModel.contentHash`); smaller ones find them again each time, cheaply.
 */
export const HASH_ORDER_MIN_NAMES = 1024;
/**
 * Changed names from which `ZoneModel` reads their canonical order off its sorted names (when they
 * are a quarter of them or more) rather than sorting them.
 */
export const IN_ORDER_MIN_KEYS = 64;

/**
 * The digest buffer `DigestSlots.put` last wrote a latin1 digest into, as a Buffer: one for the zone
 * being built, not one kept per zone (made again for another zone's buffer or a grown one).
 */
let latin1View: Buffer | undefined;

/**
 * The owner digests of one zone, 32 octets each, in one buffer indexed by slot instead of a
 * 32-character string per name (a string costs its 16-octet header and a pointer beside its
 * octets). Slots freed when a name stops publishing are reused before the buffer grows.
 */
export class DigestSlots {
  private bytes = new Uint8Array(DIGEST_OCTETS * 4);
  private readonly free: number[] = [];
  private next = 0;
  /** Moves whenever a slot is taken or released (not when a slot's digest is replaced). */
  version = 0;

  /** A slot holding `digest` (32 octets, or a 32-character latin1 string of them). */
  take(digest: Uint8Array | string): number {
    const slot = this.takeEmpty();
    this.put(slot, digest);
    return slot;
  }

  /**
   * A slot whose digest is written later (`put`): until then it holds whatever it held before, so
   * nothing may read it (`gather`, `at`) before that.
   */
  takeEmpty(): number {
    this.version++;
    let slot = this.free.pop();
    if (slot === undefined) {
      slot = this.next++;
      if (this.next * DIGEST_OCTETS > this.bytes.length) {
        // By a quarter (and 16 slots), not double: at most a fifth of the buffer stands empty.
        const slots = this.bytes.length / DIGEST_OCTETS;
        const grown = new Uint8Array((slots + (slots >>> 2) + 16) * DIGEST_OCTETS);
        grown.set(this.bytes);
        this.bytes = grown;
      }
    }
    return slot;
  }

  put(slot: number, digest: Uint8Array | string): void {
    if (typeof digest !== 'string') {
      this.bytes.set(digest.subarray(0, DIGEST_OCTETS), slot * DIGEST_OCTETS);
      return;
    }
    // Written by Node as latin1 (one octet per character) through a Buffer over the same memory:
    // about half the CPU of copying the 32 characters one by one in JavaScript.
    let view = latin1View;
    if (view === undefined || view.buffer !== this.bytes.buffer) {
      view = Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
      latin1View = view;
    }
    view.write(digest, slot * DIGEST_OCTETS, DIGEST_OCTETS, 'latin1');
  }

  /**
   * Room for `slots` slots in all, made at once: a first build knows how many names it decides,
   * where growing by a quarter from four slots allocated and copied the buffer (and made a Buffer
   * view of it) four times for a zone of a hundred names.
   */
  reserve(slots: number): void {
    if (slots * DIGEST_OCTETS <= this.bytes.length) return;
    const grown = new Uint8Array(slots * DIGEST_OCTETS);
    grown.set(this.bytes.subarray(0, this.next * DIGEST_OCTETS));
    this.bytes = grown;
  }

  release(slot: number): void {
    this.version++;
    this.free.push(slot);
  }

  /**
   * The digests of `slots`, in that order, one after the other (32 octets each), after `before`
   * octets left free (a multiple of four).
   */
  gather(slots: Int32Array, before = 0): Uint8Array {
    const out = new Uint8Array(before + slots.length * DIGEST_OCTETS);
    // Eight 32-bit words per digest: the buffer and the output both start at offset 0.
    const from = new Uint32Array(this.bytes.buffer, 0, this.bytes.length >>> 2);
    const to = new Uint32Array(out.buffer);
    const words = DIGEST_OCTETS >>> 2;
    const skip = before >>> 2;
    for (let i = 0; i < slots.length; i++) {
      const a = slots[i]! * words;
      const b = skip + i * words;
      for (let w = 0; w < words; w++) to[b + w] = from[a + w]!;
    }
    return out;
  }

  /** The digest in a slot (a view, valid until the next `take`). */
  at(slot: number): Uint8Array {
    return this.bytes.subarray(slot * DIGEST_OCTETS, (slot + 1) * DIGEST_OCTETS);
  }

  /** Slots in use. */
  get used(): number {
    return this.next - this.free.length;
  }

  /** Slots ever handed out (the buffer's high-water mark). */
  get highWater(): number {
    return this.next;
  }
}

/**
 * One zone's content, maintained incrementally: a changed record set re-decides only its owner name
 * (and, when a delegation point appears or goes, the names below it), and the model reports exactly
 * the RRsets that changed. It applies the same rules as `assembleZone` — which stays the reference
 * implementation; a randomized test keeps the two equal — in per-owner form:
 * - invalid record sets (unparsable, SOA, apex NS/CNAME/DS) are rejected on their own;
 * - below a delegation point only glue (A/AAAA of the delegation's nameservers) is kept;
 * - at a delegation point only NS and DS exist (RFC 1034 §4.2.1);
 * - one writer per name and type, oldest first; CNAME and ALIAS exclusivity (RFC 1034 §3.6.2).
 * NS record sets are decided before the other types at a name, so a delegation always wins there.
 */
export class ZoneModel implements PublishedByName {
  readonly origin: Name;
  /** The origin's `nameKey`: owner names are keyed by theirs (see `ZoneModel.owners`). */
  readonly originKey: string;
  readonly soa: SoaFields;
  readonly nameServers: Name[];
  readonly defaultTtl: number;
  /** Changes when anything that shapes every record (SOA, TTL, nameservers) changes: rebuild then. */
  readonly configSignature: string;
  private readonly entries = new Map<ResourceKey, Entry>();
  private readonly verdictView = new Verdicts(this.entries);
  /** Each record set's verdict (a view over the model's entries). */
  readonly verdicts: ReadonlyMap<ResourceKey, RecordVerdict> = this.verdictView;
  private readonly classNameText: string;
  /** The class's topology, for record sets steered to the closest region. */
  private readonly topology: Topology | undefined;
  /** The class's GeoIP database, likewise. */
  private readonly geoip: GeoIp | undefined;
  /** Each owner name's `Owner`, or its one entry where that is all it holds (`Held`). */
  private readonly owners = new Map<string, Held>();
  /**
   * The keys of all owners in canonical order (`compareNameKeys`, RFC 4034 §6.1): every subtree is a
   * contiguous range. The keys are the owners' fqdn strings (`nameKey`), not a sort-key string made
   * per name (docs/benchmarks.md, the zone model's entries).
   */
  private sortedKeys: string[] = [];
  /** Owners created since the last sort; merged in one pass (many) or spliced in (few). */
  private newKeys: string[] = [];
  /**
   * Whether `owners` holds its names in the order of `sortedKeys` (a `Map` keeps the order names
   * were first put in; replacing a name's value or deleting a name keeps the others' order): set by
   * a first build, which puts its names in canonical order (`placeFirst`), cleared when a name is
   * added after it. While set, what walks every name in order reads the map's values in turn instead
   * of looking each name up (`rrsets`, `settleDigests`): a look-up per name in a map of every name
   * is mostly cache misses (docs/benchmarks.md, sixteenth round).
   */
  private ownersInOrder = false;
  private readonly cuts = new Map<string, Cut>();
  /** The owners' content digests (`Owner.digest` is a slot here). */
  readonly digests = new DigestSlots();
  /**
   * Names whose digest slot is taken or whose content changed, their digest not written yet: `all`
   * after a first build (every name that publishes). Digests are only read by the content hash,
   * which is off the path from a change to its answer (a later reconcile, ADR 0006), so they are
   * computed then (`settleDigests`), not while the zone is decided: a first start decides every
   * name of every zone before the first hash is asked for.
   */
  private digestsDue: string[] | 'all' | undefined;
  /** Moves whenever `sortedKeys` changes (a name added or dropped). */
  private keysVersion = 0;
  /**
   * For a zone of at least `HASH_ORDER_MIN_NAMES` names: the digest slots of the names that publish,
   * in canonical order, as the last `contentHash` found them (4 bytes per name), with the versions of
   * the keys and slots it is good for. A change that only replaces names' digests (a record's value)
   * keeps it; one that adds or drops a name or a digest slot makes the next hash find them again.
   * A first build leaves them as it decided its names in that order (for a smaller zone too, until
   * the hash that follows it reads them), so that its first hash looks no name up.
   */
  private hashOrder: { slots: Int32Array; keys: number; digests: number } | undefined;
  private rrsetTotal = 0;
  private childSignature = '';
  private accepted = 0;
  /** Whether the update under way lists its RRset changes in its delta (see `update`). */
  private listing = true;
  /**
   * Whether the update under way is a first build that lists no changes: its new verdicts are not
   * listed either (`ZoneDelta.everyVerdict`).
   */
  private everyNew = false;
  /** The digest slot of the name `decide` decided last (-1 where it publishes nothing). */
  private decidedSlot = -1;
  /**
   * The model this one replaces (`parsedFrom`), until this one's first update: the values of the
   * record sets it held unchanged are taken from it, not parsed again (a first build does not fill
   * the parse cache, see `addEntry`).
   */
  private parsedBefore: ZoneModel | undefined;

  constructor(zone: DNSZone, zoneClass: DNSZoneClass, origin: Name) {
    this.origin = origin;
    this.originKey = nameKey(origin);
    this.soa = soaFor(zone, zoneClass, origin);
    this.defaultTtl = zoneDefaultTtl(zone, zoneClass);
    const nameServers = zoneNameServers(zone, zoneClass);
    this.nameServers = nameServers.map((ns) => parseName(ns));
    this.classNameText = zoneClass.metadata.name;
    this.topology = zoneClass.spec.topology;
    this.geoip = zoneClass.spec.geoip;
    // `signature` of what was just read, not read again.
    this.configSignature = signatureOf(origin, this.soa, this.defaultTtl, nameServers, zoneClass);
    const apex = this.owner(origin, this.originKey);
    addFixed(apex, {
      rrset: {
        owner: origin,
        type: 'NS',
        ttl: this.defaultTtl,
        rdata: this.nameServers.map((host) => ({ type: 'NS', host })),
        origin: { kind: 'apex' },
      },
      by: `DNSZoneClass ${zoneClass.metadata.name}`,
    });
    // The apex alone is in order as it is: no sort and merge of one name.
    this.sortedKeys = this.newKeys;
    this.newKeys = [];
    this.keysVersion++;
    this.decide(this.originKey, emptyDelta());
  }

  /**
   * Takes the parsed values of record sets unchanged since `before` (the model of the same zone
   * this one replaces: its settings changed, or it moved to another backend) at this model's first
   * update, instead of parsing them again (from the one `before` replaced when `before` was not
   * updated yet). Only from a model of the same origin: a relative name in a value means another
   * name under another one.
   */
  parsedFrom(before: ZoneModel): void {
    const from = before.parsedBefore ?? before;
    if (from.origin === this.origin) this.parsedBefore = from;
  }

  static signature(zone: DNSZone, zoneClass: DNSZoneClass, origin: Name): string {
    return signatureOf(
      origin,
      soaFor(zone, zoneClass, origin),
      zoneDefaultTtl(zone, zoneClass),
      zoneNameServers(zone, zoneClass),
      zoneClass,
    );
  }

  /** RRsets the zone publishes (the SOA not counted). */
  get rrsetCount(): number {
    return this.rrsetTotal;
  }

  /** The RRset published at an owner (by `nameKey`) and type, if any. */
  published(ownerKey: string, type: RecordTypeName): RRset | undefined {
    const owner = this.owners.get(ownerKey);
    const source = owner ? publishedAt(owner).find((s) => typeOfSource(s) === type) : undefined;
    return source && this.rrsetOf(source);
  }

  get acceptedCount(): number {
    return this.accepted;
  }

  /** Names kept as an `Owner` object; the others rest as their one record set's entry (`Held`). */
  get ownerObjectCount(): number {
    let n = 0;
    for (const held of this.owners.values()) if (isOwner(held)) n++;
    return n;
  }

  /**
   * Brings the model in line with the given record sets (all of the zone's, or just those that may
   * have changed when `complete` is false) and child zones. Record sets are compared by spec object
   * identity, so unchanged ones cost a map lookup. With `listChanges` false the delta says only
   * whether the content changed (`changed`) and which verdicts did, not which RRsets: for a first
   * build, which is sent whole and is the first baseline of change safety, so that nothing reads
   * a list of every RRset (an RRset object and two map entries per RRset, docs/benchmarks.md).
   * `distinctKeys`: the caller gives each record set once (the catalog's members of a zone): a first
   * build then adds each without looking its key up first, a look-up that can only find a record set
   * given twice (a map look-up per record set of a big zone's first build, docs/benchmarks.md,
   * fifteenth round), and, in a model holding its apex alone, puts their names in the owners map in
   * canonical order at once (`placeFirst`). Without it a key given twice replaces the record set
   * given before.
   */
  update(
    records: Iterable<{ key: ResourceKey; current: { recordSet: DNSRecordSet; fqdn: Name } | undefined }>,
    children: readonly ChildDelegation[],
    complete = false,
    listChanges = true,
    distinctKeys = false,
  ): ZoneDelta {
    this.listing = listChanges;
    try {
      return this.apply(records, children, complete, distinctKeys);
    } finally {
      this.listing = true;
      this.everyNew = false;
      this.parsedBefore = undefined;
    }
  }

  private apply(
    records: Iterable<{ key: ResourceKey; current: { recordSet: DNSRecordSet; fqdn: Name } | undefined }>,
    children: readonly ChildDelegation[],
    complete: boolean,
    distinctKeys: boolean,
  ): ZoneDelta {
    const delta = emptyDelta();
    // A complete update of a model that holds no record set yet (a first build): nothing can be left
    // to remove and every name is new, so neither the keys seen nor the names touched are kept (two
    // sets as large as the zone, kept through the whole build); every name is decided, in order.
    const first = complete && this.entries.size === 0;
    const distinct = first && distinctKeys;
    this.everyNew = first && !this.listing;
    const dirty = first ? undefined : new Set<string>();
    const seen = complete && !first ? new Set<ResourceKey>() : undefined;
    // Whether a name may have been left empty (a record set or a child zone's RRset taken away).
    let emptied = false;
    // A first build's names as placed, by their index in `sortedKeys` (see `placeFirst`).
    let placedHeld: (Held | undefined)[] | undefined;
    if (distinct && this.owners.size === 1) {
      // A first build of a model holding its apex alone, given distinct record sets: their names are
      // put in the owners map at once in canonical order (`placeFirst`), not each looked up as its
      // record set comes.
      const ownerKeys: string[] = [];
      const placed: Entry[] = [];
      for (const { key, current } of records) {
        if (current === undefined) continue;
        const ownerKey = nameKey(current.fqdn);
        ownerKeys.push(ownerKey);
        placed.push(this.newEntry(key, current.recordSet, current.fqdn, ownerKey, true, undefined));
      }
      placedHeld = this.placeFirst(ownerKeys, placed);
    } else
      for (const { key, current } of records) {
        seen?.add(key);
        const before = distinct ? undefined : this.entries.get(key);
        if (current && before && before.spec === current.recordSet.spec && before.fqdn === current.fqdn) {
          continue;
        }
        if (before) {
          emptied = true;
          this.removeEntry(before, dirty, delta, current !== undefined);
        }
        if (current)
          this.addEntry(key, current.recordSet, current.fqdn, dirty, before ? verdictOf(before) : undefined);
      }
    if (seen) {
      for (const entry of [...this.entries.values()])
        if (!seen.has(entry.key)) {
          emptied = true;
          this.removeEntry(entry, dirty, delta);
        }
    }
    if (this.setChildren(children, dirty)) emptied = true;
    this.mergeNewKeys();
    // Deciding a name nothing touched is harmless (it decides what it published), so a first build
    // decides the apex and any name a child zone placed before again, reading the sorted names
    // themselves (`decide` does not change them).
    const ordered = dirty === undefined ? this.sortedKeys : this.inOrder(dirty);
    // A first build decides every name once, in canonical order (the names below a delegation point
    // right after it): the digest slots of those that publish, in that order, are what the content
    // hash reads next (`hashOrder`).
    // A first build's names, each with at most one digest, take their slots from one buffer.
    if (dirty === undefined) {
      this.digests.reserve(ordered.length);
      this.digestsDue = 'all';
    }
    let slots = dirty === undefined && !emptied ? new Int32Array(ordered.length) : undefined;
    let n = 0;
    const note = () => {
      if (slots === undefined || this.decidedSlot < 0) return;
      if (n < slots.length) slots[n++] = this.decidedSlot;
      else slots = undefined;
    };
    let covered: string | undefined;
    // A first build's names as placed, each one's value at hand, not looked up: unless a child zone's
    // RRsets were placed since (`setChildren` may make a name an `Owner`). `decide` replaces only the
    // value of the name it decides (and those below a new delegation, decided there and skipped here).
    const held =
      placedHeld !== undefined && children.length === 0 && placedHeld.length === ordered.length
        ? placedHeld
        : undefined;
    for (let i = 0; i < ordered.length; i++) {
      const key = ordered[i]!;
      if (covered !== undefined && key !== covered && isInDomain(key, covered)) continue;
      const cutChanged = this.decide(key, delta, held?.[i]);
      note();
      if (cutChanged) {
        // A delegation point appeared, went or changed: everything below it is decided again.
        for (const below of this.below(key)) {
          this.decide(below, delta);
          note();
        }
        // (The apex is never a delegation point, so covers nothing here.)
        covered = key === this.originKey ? undefined : key;
      }
    }
    // Each name that publishes noted once (as many as the slots in use), or the hash finds them.
    if (slots !== undefined && n === this.digests.used)
      this.hashOrder = {
        slots: n === slots.length ? slots : slots.slice(0, n),
        keys: this.keysVersion,
        digests: this.digests.version,
      };
    // A first build only adds (unless it was given a record set twice or took a child zone's RRsets
    // away): no name to drop then.
    if (dirty !== undefined || emptied)
      for (const key of ordered === this.sortedKeys ? ordered.slice() : ordered) this.dropIfEmpty(key);
    return delta;
  }

  /**
   * Every record set with a verdict, in the order of `verdicts.keys()` (the order the model was
   * given them), and whether it is accepted: no verdict object made per record set.
   */
  eachVerdict(each: (key: ResourceKey, accepted: boolean) => void): void {
    for (const [key, entry] of this.entries)
      if (entry.verdict !== undefined) each(key, isAccepted(entry.verdict));
  }

  /** Every published RRset, in canonical order (owner, then type code). */
  *rrsets(): Generator<RRset> {
    const keys = this.sortedKeys;
    let from = 0;
    if (this.ownersInOrder && this.owners.size === keys.length) {
      // The owners map's values in turn, in this order (`ownersInOrder`): no look-up per name. If a
      // name is added or dropped between two RRsets read, the names left are looked up.
      const version = this.keysVersion;
      for (const held of this.owners.values()) {
        if (this.keysVersion !== version) break;
        from++;
        const published = publishedSources(held);
        if (published === undefined) continue;
        if (!isList(published)) yield this.rrsetOf(published);
        else yield* this.rrsetList(published);
      }
      if (from === keys.length) return;
    }
    for (let i = from; i < keys.length; i++) {
      const published = publishedSources(this.owners.get(keys[i]!)!);
      if (published === undefined) continue;
      // A name that publishes one RRset (most): that RRset, no list made for it.
      if (!isList(published)) yield this.rrsetOf(published);
      else yield* this.rrsetList(published);
    }
  }

  /** The RRsets of what a name publishes (two or more), by type code. */
  private rrsetList(published: readonly Source[]): RRset[] {
    const list = published.map((s) => this.rrsetOf(s));
    if (list.length > 1) shortSort(list, byTypeCode);
    return list;
  }

  /** The RRsets published at one owner name, in the order `rrsets` yields them: O(RRsets there). */
  publishedAt(ownerKey: string): RRset[] {
    const held = this.owners.get(ownerKey);
    if (held === undefined) return [];
    const list = publishedAt(held).map((s) => this.rrsetOf(s));
    if (list.length > 1) shortSort(list, byTypeCode);
    return list;
  }

  /**
   * Whether a name publishes nothing while a name below it publishes something (an empty
   * non-terminal): the names below are a contiguous range of the sorted keys, read up to the first
   * that publishes (the next key, but where names below publish nothing).
   */
  isEmptyNonTerminal(ownerKey: string): boolean {
    if (ownerKey === this.originKey) return false;
    const held = this.owners.get(ownerKey);
    if (held !== undefined && publishedAt(held).length > 0) return false;
    for (const key of this.below(ownerKey)) if (publishedAt(this.owners.get(key)!).length > 0) return true;
    return false;
  }

  /**
   * The content hash (`zoneContentHash` of the published zone) from the kept owner digests: hashing
   * 32 octets per name, not the records themselves.
   */
  contentHash(): string {
    this.settleDigests();
    const kept = this.hashOrder;
    if (kept !== undefined && kept.keys === this.keysVersion && kept.digests === this.digests.version) {
      // A small zone's order, read off its first build, is used once.
      if (kept.slots.length < HASH_ORDER_MIN_NAMES) this.hashOrder = undefined;
      return zoneDigestOfBytes(this.soa, (before) => this.digests.gather(kept.slots, before));
    }
    // The names' slots in canonical order: a look-up of each name in the owners map, which is most
    // of a big zone's hash (about 40 ms for 100,000 names, against 3.5 ms for the SHA-256).
    const slots = new Int32Array(this.digests.used);
    let n = 0;
    for (const key of this.sortedKeys) {
      const held = this.owners.get(key);
      const slot = held === undefined ? -1 : digestAt(held);
      if (slot >= 0) slots[n++] = slot;
    }
    const order = n === slots.length ? slots : slots.slice(0, n);
    this.hashOrder =
      n >= HASH_ORDER_MIN_NAMES
        ? { slots: order, keys: this.keysVersion, digests: this.digests.version }
        : undefined;
    return zoneDigestOfBytes(this.soa, (before) => this.digests.gather(order, before));
  }

  /** Notes that a name's digest is to be (re)computed before the next content hash. */
  private digestDue(key: string): void {
    const due = this.digestsDue;
    if (due === 'all') return;
    if (due === undefined) this.digestsDue = [key];
    // A zone changed again and again without a hash asked for: at most one walk of every name.
    else if (due.length < this.owners.size) due.push(key);
    else this.digestsDue = 'all';
  }

  /** Writes the digest of every name noted as due (`digestsDue`) from what it publishes now. */
  private settleDigests(): void {
    const due = this.digestsDue;
    if (due === undefined) return;
    const keys = due === 'all' ? this.sortedKeys : due;
    // Every name, in the owners map's order when it is this one (`ownersInOrder`): no look-ups.
    const values =
      keys === this.sortedKeys && this.ownersInOrder && this.owners.size === keys.length
        ? this.owners.values()
        : undefined;
    for (const key of keys) {
      const held = values === undefined ? this.owners.get(key) : (values.next().value as Held);
      if (held === undefined) continue;
      const slot = digestAt(held);
      // A name that stopped publishing after it was noted has no slot any more.
      if (slot >= 0) this.digests.put(slot, this.digestOf(key, held));
    }
    // Cleared once every digest is written: a throw on the way leaves them all due still.
    this.digestsDue = undefined;
  }

  /** The digest of what a name publishes (content-hash.ts): from its parts for a resting entry. */
  private digestOf(key: string, held: Held): string {
    if (isOwner(held))
      return ownerDigest(
        publishedOf(held).map((s) => this.hashedOf(s)),
        key,
      );
    const spec = held.spec;
    const rdata = rdataOf(held);
    return rrsetDigest(
      key,
      steeredTtl(spec, spec.ttl ?? this.defaultTtl),
      typeOf(held),
      rdata,
      steeringOf(held, held.fqdn, rdata, this.topology, this.geoip),
    );
  }

  /** The zone as `assembleZone` would compute it, hash included: O(zone size), for exports. */
  assembled(): AssembledZone {
    const rrsets = [...this.rrsets()];
    return {
      origin: this.origin,
      soa: this.soa,
      nameServers: this.nameServers,
      rrsets,
      hash: this.contentHash(),
      verdicts: this.verdicts,
      acceptedCount: this.accepted,
      warnings: this.warnings(),
    };
  }

  /** Things that serve but deserve a look, e.g. an in-zone nameserver without an address. */
  warnings(): string[] {
    const out: string[] = [];
    const hasAddress = (name: Name) => {
      const o = this.owners.get(nameKey(name));
      return (
        o !== undefined && publishedAt(o).some((s) => typeOfSource(s) === 'A' || typeOfSource(s) === 'AAAA')
      );
    };
    for (const ns of this.nameServers) {
      if (isInDomain(ns, this.origin) && !this.cutAbove(nameKey(ns), true) && !hasAddress(ns)) {
        out.push(`nameserver ${ns} is inside the zone but has no A or AAAA record`);
      }
    }
    for (const cut of this.cuts.values()) {
      for (const host of cut.hosts) {
        if (isInDomain(host, cut.owner) && !hasAddress(host)) {
          out.push(
            `delegation ${cut.owner} names nameserver ${host} below the cut but no glue A/AAAA exists`,
          );
        }
      }
    }
    return out;
  }

  /**
   * The `Owner` of a name, to change: a resting entry is made an `Owner` again (its published RRset
   * and digest slot taken back from it), so that `decide` compares against what it published.
   */
  private ownerAt(key: string): Owner | undefined {
    const held = this.owners.get(key);
    return held === undefined ? undefined : this.ownerOf(key, held);
  }

  /** `ownerAt` of what the owners map holds at `key`. */
  private ownerOf(key: string, held: Held): Owner {
    if (isOwner(held)) return held;
    const slot = digestAt(held);
    if (slot >= 0) held.verdict = true;
    const owner: Owner = {
      name: held.fqdn,
      entries: held,
      fixed: NO_FIXED,
      published: slot >= 0 ? held : undefined,
      digest: slot,
    };
    this.owners.set(key, owner);
    return owner;
  }

  /** Lets a decided owner rest as its one entry when that is all it holds (see `Held`). */
  private rest(key: string, owner: Owner): void {
    const entry = owner.entries;
    if (entry === undefined || Array.isArray(entry) || owner.fixed.length > 0 || key === this.originKey)
      return;
    if (owner.name !== entry.fqdn) return;
    if (owner.published === undefined) {
      if (owner.digest >= 0 || isAccepted(entry.verdict)) return;
    } else {
      if (owner.published !== entry || owner.digest < 0) return;
      entry.verdict = owner.digest;
    }
    this.owners.set(key, entry);
  }

  private owner(name: Name, key: string): Owner {
    return this.ownerAt(key) ?? this.newOwner(name, key);
  }

  /** An owner for a name the model does not hold yet. */
  private newOwner(name: Name, key: string): Owner {
    // Every field in the literal: none is added later into a separate property store.
    const owner: Owner = { name, entries: undefined, fixed: NO_FIXED, published: undefined, digest: -1 };
    this.owners.set(key, owner);
    this.ownersInOrder = false;
    this.newKeys.push(key);
    return owner;
  }

  /**
   * The keys in canonical order. Keys that are most of the zone's names (its first build: every name)
   * are read off `sortedKeys` in one pass instead of sorted again; keys not all there (a name gone
   * already) or with an escape (compared by sort key) are sorted.
   */
  private inOrder(keys: Set<string>): string[] {
    if (keys.size >= IN_ORDER_MIN_KEYS && keys.size * 4 >= this.sortedKeys.length) {
      const ordered: string[] = [];
      let plain = true;
      for (const key of this.sortedKeys)
        if (keys.has(key)) {
          if (key.indexOf('\\') >= 0) {
            plain = false;
            break;
          }
          ordered.push(key);
        }
      if (plain && ordered.length === keys.size) return ordered;
    }
    return [...keys].sort(compareNameKeys);
  }

  private mergeNewKeys(): void {
    // Every one is there: a name is dropped (`dropIfEmpty`) only after its update merged the new ones.
    const added = this.newKeys;
    this.newKeys = [];
    if (added.length === 0) return;
    this.keysVersion++;
    // A few names into many are spliced in; into a model holding only its apex (a first build),
    // however few, they are sorted.
    if (added.length < 64 && this.sortedKeys.length > 1) {
      for (const key of added) this.sortedKeys.splice(lowerBound(this.sortedKeys, key), 0, key);
      return;
    }
    sortNameKeys(added, this.originKey);
    this.mergeSorted(added);
  }

  /** Merges names in canonical order, none of them held yet, into `sortedKeys`. */
  private mergeSorted(added: readonly string[]): void {
    const merged: string[] = new Array(this.sortedKeys.length + added.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < this.sortedKeys.length && j < added.length) {
      merged[k++] = compareNameKeys(this.sortedKeys[i]!, added[j]!) < 0 ? this.sortedKeys[i++]! : added[j++]!;
    }
    while (i < this.sortedKeys.length) merged[k++] = this.sortedKeys[i++]!;
    while (j < added.length) merged[k++] = added[j++]!;
    this.sortedKeys = merged;
  }

  /**
   * Puts a first build's entries at their names (`ownerKeys[i]` is the name of `placed[i]`), the
   * model holding its apex alone: the names sorted, each new one put in the owners map once, in
   * canonical order after the apex (`ownersInOrder`), and merged into `sortedKeys` at once. What
   * `hold` would make of them one by one: a name of one entry rests as it, a name of more is an
   * `Owner` of them in the order given, named as the first spells it; the apex's are held as ever.
   */
  private placeFirst(ownerKeys: string[], placed: readonly Entry[]): (Held | undefined)[] | undefined {
    const n = ownerKeys.length;
    if (n === 0) return undefined;
    const positions = new Int32Array(n);
    sortNameKeys(ownerKeys, this.originKey, positions);
    const added: string[] = [];
    // What each name added holds, the apex's first (looked up: it was there before).
    const held: (Held | undefined)[] = [undefined];
    for (let i = 0; i < n; ) {
      const key = ownerKeys[i]!;
      let j = i + 1;
      while (j < n && ownerKeys[j] === key) j++;
      // The entries of one name in the order given (the sort leaves equal names in any order).
      for (let k = i + 1; k < j; k++) {
        const at = positions[k]!;
        let m = k;
        for (; m > i && positions[m - 1]! > at; m--) positions[m] = positions[m - 1]!;
        positions[m] = at;
      }
      if (key === this.originKey) {
        for (let k = i; k < j; k++) this.hold(key, placed[positions[k]!]!, undefined);
      } else if (j - i === 1) {
        const entry = placed[positions[i]!]!;
        this.owners.set(key, entry);
        added.push(key);
        held.push(entry);
      } else {
        const entries: Entry[] = [];
        for (let k = i; k < j; k++) entries.push(placed[positions[k]!]!);
        const owner: Owner = {
          name: entries[0]!.fqdn,
          entries: entries.length <= 16 ? entries.slice() : entries,
          fixed: NO_FIXED,
          published: undefined,
          digest: -1,
        };
        this.owners.set(key, owner);
        added.push(key);
        held.push(owner);
      }
      i = j;
    }
    if (added.length === 0) return undefined;
    this.keysVersion++;
    // In canonical order after the apex (the first name of its zone) as they were put in the map.
    this.ownersInOrder =
      this.sortedKeys.length === 1 &&
      this.sortedKeys[0] === this.originKey &&
      compareNameKeys(this.originKey, added[0]!) < 0;
    this.mergeSorted(added);
    return this.ownersInOrder ? held : undefined;
  }

  private dropIfEmpty(key: string): void {
    const owner = this.owners.get(key);
    if (
      !owner ||
      !isOwner(owner) ||
      owner.entries !== undefined ||
      owner.fixed.length > 0 ||
      key === this.originKey
    )
      return;
    if (owner.digest >= 0) this.digests.release(owner.digest);
    this.owners.delete(key);
    const i = lowerBound(this.sortedKeys, key);
    if (this.sortedKeys[i] === key) {
      this.sortedKeys.splice(i, 1);
      this.keysVersion++;
    }
  }

  /**
   * The keys of the names strictly below `key`, in canonical order: the contiguous range after it in
   * `sortedKeys` (RFC 4034 §6.1 order keeps every subtree together).
   */
  private *below(key: string): Generator<string> {
    if (key === this.originKey) {
      yield* this.sortedKeys.filter((k) => k !== key);
      return;
    }
    let i = lowerBound(this.sortedKeys, key);
    if (this.sortedKeys[i] === key) i++;
    for (; i < this.sortedKeys.length; i++) {
      const k = this.sortedKeys[i]!;
      if (!isInDomain(k, key)) break;
      yield k;
    }
  }

  /** `verdict`: the verdict of the version this one replaces, to compare the new one against. */
  private addEntry(
    key: ResourceKey,
    recordSet: DNSRecordSet,
    fqdn: Name,
    dirty: Set<string> | undefined,
    verdict?: RecordVerdict,
  ): void {
    const ownerKey = nameKey(fqdn);
    const entry = this.newEntry(key, recordSet, fqdn, ownerKey, dirty === undefined, verdict);
    this.hold(ownerKey, entry, dirty, verdict);
  }

  /**
   * The entry of a record set at the owner `ownerKey` (its values parsed, its rules that do not
   * depend on other records checked), put in `entries`; `first`: of a first build (see below).
   */
  private newEntry(
    key: ResourceKey,
    recordSet: DNSRecordSet,
    fqdn: Name,
    ownerKey: string,
    first: boolean,
    verdict: RecordVerdict | undefined,
  ): Entry {
    const type = recordSet.spec.type;
    const entry: Entry = {
      key,
      spec: recordSet.spec,
      created: recordSet.metadata.creationTimestamp,
      fqdn,
      rdata: '',
      verdict,
    };
    if (verdict !== undefined) this.verdictView.count++;
    // A first build (no `dirty`) parses what is not cached without caching it: the model holds the
    // values from here on, and a model rebuilt later takes them from this one (`parsedFrom`).
    const before = this.parsedBefore?.entries.get(key);
    const parsed =
      before !== undefined && before.spec === recordSet.spec && Array.isArray(before.rdata)
        ? before.rdata
        : keptRecords(recordSet, this.origin, !first);
    const atApex = ownerKey === this.originKey;
    if (!Array.isArray(parsed)) entry.rdata = parsed.message;
    else if (type === 'SOA')
      entry.rdata =
        'the SOA is generated from the DNSZone and its class; set spec.soa on the DNSZone instead';
    else if (atApex && type === 'NS')
      entry.rdata = `apex NS records come from DNSZoneClass ${this.classNameText} spec.nameServers (or spec.zoneNameServers); change them there`;
    else if (atApex && type === 'CNAME')
      entry.rdata =
        'a CNAME cannot be at the zone apex, where the SOA and NS must exist (RFC 1034 §3.6.2); use ALIAS';
    else if (atApex && type === 'DS')
      entry.rdata = 'a DS record belongs in the parent zone, at the delegation point (RFC 4035 §2.4)';
    else entry.rdata = parsed;
    this.entries.set(key, entry);
    return entry;
  }

  /** Puts an entry at its owner name (`verdict` as for `addEntry`). */
  private hold(
    ownerKey: string,
    entry: Entry,
    dirty: Set<string> | undefined,
    verdict?: RecordVerdict,
  ): void {
    const there = this.owners.get(ownerKey);
    if (there === undefined && verdict === undefined) {
      // A new name with a new record set: kept as the entry from the start, not an owner object
      // made only for `decide` to let the name rest as its entry again (most names of a first
      // build). It publishes nothing until decided (its verdict is not a digest slot).
      this.owners.set(ownerKey, entry);
      this.ownersInOrder = false;
      this.newKeys.push(ownerKey);
      dirty?.add(ownerKey);
      return;
    }
    const owner = there === undefined ? this.newOwner(entry.fqdn, ownerKey) : this.ownerOf(ownerKey, there);
    // Most owners hold one entry, kept as itself; a few hold two or more: concat keeps the array at
    // exactly its length, where push leaves room for 16 more in every owner (docs/benchmarks.md,
    // memory budget). Long lists grow by push.
    const held = owner.entries;
    if (held === undefined) owner.entries = entry;
    else if (!Array.isArray(held)) owner.entries = [held, entry];
    else if (held.length < 16) owner.entries = held.concat(entry);
    else held.push(entry);
    dirty?.add(ownerKey);
  }

  /** Removes an entry; `replaced` keeps its verdict for the new version to compare against. */
  private removeEntry(
    entry: Entry,
    dirty: Set<string> | undefined,
    delta: ZoneDelta,
    replaced = false,
  ): void {
    this.entries.delete(entry.key);
    if (entry.verdict !== undefined) this.verdictView.count--;
    const ownerKey = nameKey(entry.fqdn);
    const owner = this.ownerAt(ownerKey);
    if (owner) {
      const held = owner.entries;
      if (held === entry) owner.entries = undefined;
      else if (Array.isArray(held)) {
        const rest = held.filter((e) => e !== entry);
        owner.entries = rest.length === 1 ? rest[0] : rest;
      }
    }
    dirty?.add(ownerKey);
    if (replaced) return;
    if (isAccepted(entry.verdict)) this.accepted--;
    delta.verdicts.add(entry.key);
  }

  /**
   * Places the NS and glue of managed child zones; children are few, so they are compared whole.
   * Returns whether it took RRsets away from a name (which may be left empty).
   */
  private setChildren(children: readonly ChildDelegation[], dirty: Set<string> | undefined): boolean {
    if (children.length === 0 && this.childSignature === NO_CHILDREN) return false;
    if (children.length === 0 && this.childSignature === '') {
      // No child zone before and none now (most zones, at every update): nothing placed to clear,
      // so no signature made and no walk of every name.
      this.childSignature = NO_CHILDREN;
      return false;
    }
    const signature = JSON.stringify(
      [...children]
        .sort((a, b) => (a.zone < b.zone ? -1 : 1))
        .map((c) => [
          c.zone,
          c.origin,
          c.nameServers,
          c.ttl,
          c.glue.map((g) => [g.owner, g.type, g.ttl, g.rdata]),
          c.ds ?? [],
        ]),
    );
    if (signature === this.childSignature) return false;
    this.childSignature = signature;
    let cleared = false;
    for (const [key, owner] of this.owners) {
      if (key === this.originKey || !isOwner(owner) || owner.fixed.length === 0) continue;
      owner.fixed = NO_FIXED;
      dirty?.add(key);
      cleared = true;
    }
    for (const child of children) {
      const by = `DNSZone ${child.zone}`;
      const key = nameKey(child.origin);
      addFixed(this.owner(child.origin, key), {
        rrset: {
          owner: child.origin,
          type: 'NS',
          ttl: child.ttl,
          rdata: child.nameServers.map((host) => ({ type: 'NS', host })),
          origin: { kind: 'childZone', ...refOf(child.zone) },
        },
        by,
      });
      if (child.ds && child.ds.length > 0)
        addFixed(this.owner(child.origin, key), {
          rrset: {
            owner: child.origin,
            type: 'DS',
            ttl: child.ttl,
            rdata: child.ds,
            origin: { kind: 'childZone', ...refOf(child.zone) },
          },
          by,
        });
      dirty?.add(key);
      for (const glue of child.glue) {
        const glueKey = nameKey(glue.owner);
        addFixed(this.owner(glue.owner, glueKey), { rrset: glue, by });
        dirty?.add(glueKey);
      }
    }
    return cleared;
  }

  /**
   * The highest delegation point strictly between the apex and `key` (or at `key` itself when
   * `inclusive`): the ancestors are the keys left by taking labels off the front, up to the apex.
   */
  private cutAbove(key: string, inclusive = false): Cut | undefined {
    if (key === this.originKey || this.cuts.size === 0) return undefined;
    let found = inclusive ? this.cuts.get(key) : undefined;
    for (let k = stripFirstLabel(key); k !== this.originKey && k !== '.'; k = stripFirstLabel(k)) {
      found = this.cuts.get(k) ?? found;
    }
    return found;
  }

  /**
   * Decides what one owner name publishes and the verdict of each record set there; returns whether
   * its delegation point changed (then the names below must be decided again).
   */
  private decide(key: string, delta: ZoneDelta, given?: Held): boolean {
    const held = given ?? this.owners.get(key);
    if (held === undefined) {
      this.decidedSlot = -1;
      return false;
    }
    if (!isOwner(held) && typeof held.verdict !== 'number') return this.decideAlone(key, held, delta);
    const owner = this.ownerOf(key, held);
    const before = publishedOf(owner);
    const beforeCut = this.cuts.size === 0 ? undefined : this.cuts.get(key);
    const published = new Map<RecordTypeName, Source>();
    const byType = new Map<string, string>();
    const atApex = key === this.originKey;
    if (atApex) byType.set('SOA', 'the zone');
    let cut: Cut | undefined;
    for (const { rrset, by } of owner.fixed) {
      published.set(rrset.type, rrset);
      byType.set(rrset.type, by);
      if (rrset.type === 'NS' && !atApex) cut = { owner: rrset.owner, hosts: hostsOf(rrset.rdata), by };
    }
    const above = atApex ? undefined : this.cutAbove(key);
    const entries = owner.entries;
    const order = entries === undefined ? [] : Array.isArray(entries) ? entries.slice() : [entries];
    if (order.length > 1) shortSort(order, decisionOrder);
    for (const entry of order) {
      const verdict = this.judge(entry, above, cut, byType);
      if (verdict === true) {
        const type = typeOf(entry);
        published.set(type, entry);
        byType.set(type, byOf(entry));
        if (type === 'NS' && !atApex)
          cut = { owner: entry.fqdn, hosts: hostsOf(rdataOf(entry)), by: byOf(entry) };
      }
      this.setVerdict(entry, verdict, delta);
    }
    // Exactly as long as what it publishes (an array filled by index, not grown by push), in the
    // Map's order; one is kept as itself.
    const list: Source[] = new Array(published.size);
    let i = 0;
    let asOrdered = owner.fixed.length === 0 && list.length === order.length && list.length > 1;
    for (const source of published.values()) {
      asOrdered &&= source === order[i];
      list[i++] = source;
    }
    if (asOrdered && order.length < 16) {
      // Every record set here is published, in the order decided: one list serves as both (it is
      // replaced, never changed in place, below 16 entries), not two lists per such name.
      owner.entries = order;
      owner.published = order;
    } else owner.published = list.length === 0 ? undefined : list.length === 1 ? list[0] : list;
    let changed = published.size !== before.length;
    for (const source of list) {
      // `list` holds what `published` does, in its order.
      const type = typeOfSource(source);
      const old = sourceOfType(before, type);
      if (old === source) continue;
      changed = true;
      if (!this.listing) continue;
      delta.upserts.push(this.rrsetOf(source));
      this.notePrevious(delta, key, type, old);
    }
    for (const source of before) {
      const type = typeOfSource(source);
      if (published.has(type)) continue;
      changed = true;
      if (!this.listing) continue;
      delta.deletes.push({ owner: owner.name, type });
      this.notePrevious(delta, key, type, source);
    }
    if (changed) delta.changed = true;
    this.rrsetTotal += published.size - before.length;
    if (changed) {
      if (published.size === 0) {
        if (owner.digest >= 0) this.digests.release(owner.digest);
        owner.digest = -1;
      } else {
        if (owner.digest < 0) owner.digest = this.digests.takeEmpty();
        this.digestDue(key);
      }
    }
    if (cut) this.cuts.set(key, cut);
    else if (beforeCut !== undefined) this.cuts.delete(key);
    this.rest(key, owner);
    this.decidedSlot = owner.digest;
    return !sameCut(beforeCut, cut);
  }

  /**
   * `decide` for a name kept as its one entry that publishes nothing yet (a new name, or one whose
   * record set was rejected): what `decide` does for an owner holding that entry alone, without the
   * owner object, maps and lists. Nothing else is placed there (an RRset the zone places makes the
   * name an `Owner`) and a name publishing nothing is no delegation point, so its one record set is
   * judged against the delegation above alone, and the name publishes its RRset if accepted.
   */
  private decideAlone(key: string, entry: Entry, delta: ZoneDelta): boolean {
    const verdict = this.judge(entry, this.cutAbove(key), undefined, NO_TYPES);
    this.setVerdict(entry, verdict, delta);
    this.decidedSlot = -1;
    if (verdict !== true) return false;
    const type = typeOf(entry);
    delta.changed = true;
    this.rrsetTotal++;
    if (this.listing) {
      delta.upserts.push(this.rrsetOf(entry));
      this.notePrevious(delta, key, type, undefined);
    }
    const slot = this.digests.takeEmpty();
    this.digestDue(key);
    entry.verdict = slot;
    this.decidedSlot = slot;
    if (type !== 'NS') return false;
    this.cuts.set(key, { owner: entry.fqdn, hosts: hostsOf(rdataOf(entry)), by: byOf(entry) });
    return true;
  }

  /**
   * What a record set `key` of `type` written at `fqdn` would lose to at its name, as `decide` would
   * judge it there now (`judge`: the RRsets the zone places there, then the record sets NS first and
   * oldest first), or undefined where it would be published or is refused by a delegation (the
   * writer's gate asks `cutRefusal` for those). For the record writer's gate: a write that would lose
   * is refused rather than stored and never served. `pending` overlays what the model holds at the
   * name with the writer's own record sets it has not taken yet, by key: present (its creation time;
   * undefined for one not written yet, which is judged the newest) or gone (`null`). A record set the
   * model holds keeps its place (its own creation time), so a write never moves ahead of an older one
   * or behind its own earlier version.
   */
  writeConflict(
    key: ResourceKey,
    fqdn: Name,
    type: RecordTypeName,
    pending: ReadonlyMap<ResourceKey, { type: RecordTypeName; created: string | undefined } | null>,
  ): ReturnType<typeof ownerConflict> {
    const ownerKey = nameKey(fqdn);
    const atApex = ownerKey === this.originKey;
    const above = atApex ? undefined : this.cutAbove(ownerKey);
    const byType = new Map<string, string>();
    if (atApex) byType.set('SOA', 'the zone');
    let cut: Cut | undefined;
    const held = this.owners.get(ownerKey);
    const entries: Entry[] = [];
    if (held !== undefined && isOwner(held)) {
      for (const { rrset, by } of held.fixed) {
        byType.set(rrset.type, by);
        if (rrset.type === 'NS' && !atApex) cut = { owner: rrset.owner, hosts: hostsOf(rrset.rdata), by };
      }
      const e = held.entries;
      if (e !== undefined) entries.push(...(Array.isArray(e) ? e : [e]));
    } else if (held !== undefined) entries.push(held);
    const entryOf = (k: ResourceKey, t: RecordTypeName, created: string | undefined): Entry => ({
      key: k,
      spec: { name: fqdn, type: t, records: [] },
      // Not written yet: after every record set (a creation time is an ISO 8601 string).
      created: created ?? '\uffff',
      fqdn,
      rdata: [],
      verdict: undefined,
    });
    const order = entries.filter((e) => pending.get(e.key) !== null && e.key !== key);
    for (const [k, p] of pending)
      if (p !== null && k !== key && !entries.some((e) => e.key === k))
        order.push(entryOf(k, p.type, p.created));
    const own = entries.find((e) => e.key === key);
    const candidate = entryOf(key, type, own ? own.created : pending.get(key)?.created);
    order.push(candidate);
    order.sort(decisionOrder);
    for (const entry of order) {
      if (entry === candidate) break;
      if (this.judge(entry, above, cut, byType) !== true) continue;
      byType.set(typeOf(entry), byOf(entry));
      if (typeOf(entry) === 'NS' && !atApex)
        cut = { owner: entry.fqdn, hosts: hostsOf(rdataOf(entry)), by: byOf(entry) };
    }
    if (above !== undefined || (cut !== undefined && type !== 'DS')) return undefined;
    return ownerConflict(fqdn, type, byType);
  }

  private judge(
    entry: Entry,
    above: Cut | undefined,
    cut: Cut | undefined,
    byType: ReadonlyMap<string, string>,
  ): RecordVerdict | true {
    const fqdn = entry.fqdn;
    if (typeof entry.rdata === 'string')
      return { accepted: false, reason: 'Invalid', message: entry.rdata, fqdn };
    const type = typeOf(entry);
    if (above) {
      const isGlue = (type === 'A' || type === 'AAAA') && above.hosts.some((h) => nameEquals(h, fqdn));
      if (!isGlue) {
        return {
          accepted: false,
          reason: 'Invalid',
          message: `${fqdn} is below the delegation ${above.owner} (NS from ${above.by}) and would never be served; publish it in the delegated zone`,
          fqdn,
        };
      }
    } else if (cut && type !== 'DS') {
      return {
        accepted: false,
        reason: 'Conflict',
        message: `${fqdn} is a delegation point (NS from ${cut.by}); only NS and DS records exist there (RFC 1034 §4.2.1)`,
        fqdn,
      };
    }
    const conflict = ownerConflict(fqdn, type, byType);
    if (conflict) return { accepted: false, reason: 'Conflict', message: conflict.message, fqdn };
    // Accepted: the entry keeps `true` (see `Entry.verdict`), so no verdict object is made.
    return true;
  }

  /**
   * The RRset of what an owner publishes: a fixed RRset as kept, a record set's made from its entry
   * (a new object each time, equal in content while the entry stays).
   */
  private rrsetOf(source: Source): RRset {
    if (!isEntry(source)) return source;
    const { spec, fqdn } = source;
    const rdata = rdataOf(source);
    const rrset: RRset = {
      owner: fqdn,
      type: spec.type,
      ttl: steeredTtl(spec, spec.ttl ?? this.defaultTtl),
      rdata,
      origin: recordSetOrigin(source.key),
    };
    const steering = steeringOf(source, fqdn, rdata, this.topology, this.geoip);
    if (steering) rrset.steering = steering;
    return rrset;
  }

  /**
   * What the owner digest covers of what an owner publishes: `rrsetOf` without the origin object
   * (and the key split for it), which the digest does not read.
   */
  private hashedOf(source: Source): HashedRRset {
    if (!isEntry(source)) return source;
    const { spec, fqdn } = source;
    const rdata = rdataOf(source);
    const steering = steeringOf(source, fqdn, rdata, this.topology, this.geoip);
    const ttl = steeredTtl(spec, spec.ttl ?? this.defaultTtl);
    return steering
      ? { owner: fqdn, type: spec.type, ttl, rdata, steering }
      : { owner: fqdn, type: spec.type, ttl, rdata };
  }

  /** Notes what the zone published at an RRset before this update (the first time it changes). */
  private notePrevious(
    delta: ZoneDelta,
    ownerKey: string,
    type: RecordTypeName,
    before: Source | undefined,
  ): void {
    const id = rrsetId(ownerKey, type);
    if (!delta.previous.has(id)) delta.previous.set(id, before && this.rrsetOf(before));
  }

  /** `verdict`: `true` for accepted (`judge`). */
  private setVerdict(entry: Entry, verdict: RecordVerdict | true, delta: ZoneDelta): void {
    const before = entry.verdict;
    // Kept compact whether or not it changed: an entry replacing another starts with the old
    // version's verdict as an object, to compare against (its fqdn may differ: a rename).
    entry.verdict = verdict;
    const wasAccepted = isAccepted(before);
    if (before !== undefined) {
      if (verdict === true) {
        if (wasAccepted && (typeof before !== 'object' || before.fqdn === entry.fqdn)) return;
      } else if (typeof before === 'object' && sameVerdict(before, verdict)) return;
    }
    if (wasAccepted) this.accepted--;
    if (verdict === true) this.accepted++;
    if (before === undefined) this.verdictView.count++;
    if (this.everyNew) delta.everyVerdict = true;
    else delta.verdicts.add(entry.key);
  }
}

/** `ZoneModel.signature` of the parts it is made of. */
function signatureOf(
  origin: Name,
  soa: SoaFields,
  defaultTtl: number,
  nameServers: readonly string[],
  zoneClass: DNSZoneClass,
): string {
  return JSON.stringify([
    origin,
    soa,
    defaultTtl,
    nameServers,
    zoneClass.metadata.name,
    zoneClass.spec.topology ?? null,
    zoneClass.spec.geoip ?? null,
  ]);
}

/**
 * The origin of a record set's RRset: `{ kind: 'recordSet', ...refOf(key) }` as one object, not two
 * and a spread (made for every RRset a zone's apply reads).
 */
function recordSetOrigin(key: ResourceKey): RRset['origin'] {
  const slash = key.indexOf('/');
  return slash < 0
    ? { kind: 'recordSet', namespace: '', name: key }
    : { kind: 'recordSet', namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** Adds an RRset the zone itself places at an owner (the list is replaced, never mutated). */
function addFixed(owner: Owner, fixed: Fixed): void {
  owner.fixed = owner.fixed.concat(fixed);
}

function hostsOf(rdata: readonly Rdata[]): Name[] {
  return rdata.map((r) => (r as { host: Name }).host);
}

function sameCut(a: Cut | undefined, b: Cut | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    nameKey(a.owner) === nameKey(b.owner) &&
    a.hosts.length === b.hosts.length &&
    a.hosts.every((h, i) => nameEquals(h, b.hosts[i]!))
  );
}

function sameVerdict(a: RecordVerdict, b: RecordVerdict): boolean {
  if (a.accepted !== b.accepted || a.fqdn !== b.fqdn) return false;
  return a.accepted || (!b.accepted && a.reason === b.reason && a.message === b.message);
}

/**
 * Sorts name keys in canonical order (`compareNameKeys`, RFC 4034 §6.1), in place. Names of printable
 * ASCII without escapes (what names are) are sorted by the engine's own string order on a key made
 * per name, its labels right to left, each followed by U+0001 and the last by U+0000 before the name's
 * index (a label's end sorts before any of its characters, a name before the names below it): about
 * 40 % less CPU for a first build's names than a comparison function called per pair. Any other
 * name sorts the whole list with `compareNameKeys`.
 *
 * `suffix` (a name key, as a zone's origin): when every key is that name or a name below it, the
 * labels they all end with are left out of the keys made (they compare equal in every pair), which
 * makes the keys a zone's names are sorted by about as long as their labels below the origin. The
 * index is four characters of seven bits each (U+0080 to U+00FF: a one-byte string still), read
 * back without parsing a number.
 *
 * `positions` (as long as `keys`): where each key sorted was before the sort, filled in too (keys
 * equal to one another come in no particular order among themselves).
 */
export function sortNameKeys(keys: string[], suffix = '.', positions?: Int32Array): void {
  if (keys.length >= 1 << 28) {
    sortByComparison(keys, positions);
    return;
  }
  // Characters of each key left out from its end: the suffix and the dot before it (the root's dot
  // for the root).
  const tail = suffix === '.' ? 1 : suffix.length + 1;
  const tagged: string[] = new Array(keys.length);
  for (let n = 0; n < keys.length; n++) {
    const key = keys[n]!;
    let text = '';
    // Labels are read right to left from the dot before the suffix.
    let end = key.length - tail;
    if (key === suffix) end = -1;
    else if (end < 0 || key.charCodeAt(end) !== 0x2e || (tail > 1 && !key.endsWith(suffix))) {
      if (suffix === '.') sortByComparison(keys, positions);
      // A key that is not below the suffix: sorted with all its labels.
      else sortNameKeys(keys, '.', positions);
      return;
    }
    for (let i = end - 1; i >= -1; i--) {
      const c = i < 0 ? 0x2e : key.charCodeAt(i);
      if (c === 0x2e) {
        if (i + 1 === end) {
          // An empty label: not a name this model makes.
          sortByComparison(keys, positions);
          return;
        }
        text = text.length === 0 ? key.slice(i + 1, end) : `${text}\u0001${key.slice(i + 1, end)}`;
        end = i;
      } else if (c <= 0x20 || c > 0x7e || c === 0x5c) {
        sortByComparison(keys, positions);
        return;
      }
    }
    tagged[n] = `${text}\u0000${String.fromCharCode(
      0x80 | (n & 0x7f),
      0x80 | ((n >>> 7) & 0x7f),
      0x80 | ((n >>> 14) & 0x7f),
      0x80 | (n >>> 21),
    )}`;
  }
  tagged.sort();
  // The keys themselves back in that order (not slices of the sort keys, which would keep them alive).
  const given = keys.slice();
  for (let n = 0; n < tagged.length; n++) {
    const t = tagged[n]!;
    const l = t.length;
    const at =
      (t.charCodeAt(l - 4) & 0x7f) |
      ((t.charCodeAt(l - 3) & 0x7f) << 7) |
      ((t.charCodeAt(l - 2) & 0x7f) << 14) |
      ((t.charCodeAt(l - 1) & 0x7f) << 21);
    keys[n] = given[at]!;
    if (positions !== undefined) positions[n] = at;
  }
}

/**
 * `sortNameKeys` by `compareNameKeys` (a stable sort), with each key's position before the sort in
 * `positions` when given.
 */
function sortByComparison(keys: string[], positions: Int32Array | undefined): void {
  if (positions === undefined) {
    keys.sort(compareNameKeys);
    return;
  }
  const order = Array.from(keys.keys());
  order.sort((a, b) => compareNameKeys(keys[a]!, keys[b]!) || a - b);
  const given = keys.slice();
  for (let n = 0; n < order.length; n++) {
    keys[n] = given[order[n]!]!;
    positions[n] = order[n]!;
  }
}

function lowerBound(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareNameKeys(sorted[mid]!, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The id of an RRset in `ZoneDelta.previous`: its owner's `nameKey` and its type. */
export function rrsetId(ownerKey: string, type: RecordTypeName): string {
  return `${ownerKey}\u0000${type}`;
}
