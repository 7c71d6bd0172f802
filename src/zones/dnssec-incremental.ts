/**
 * The incremental zone signer: keeps a zone's signed state from one serial to the next, so a change
 * signs only what it touches — the changed RRsets, the NSEC (RFC 4034 §4) or NSEC3 (RFC 5155 §7.1)
 * records whose next name or type bit map changed (the names added or removed and their predecessors,
 * the names whose types changed), the SOA — and RRsets whose signature window moved to a new epoch
 * (ADR 0021), and what a change of the keys' state touches (dnssec-key-set.ts `keysAt`: a key published
 * or unpublished changes the DNSKEY RRset, the parent's DS set CDS/CDNSKEY, a key-signing key that
 * starts or stops signing the signatures of those three, a zone-signing key every other signature).
 * The chain is held sorted across serials: NSEC in canonical order (RFC 4034 §6.1), NSEC3 in
 * hash order (RFC 5155 §3.1.7), with the empty non-terminals NSEC3 needs (RFC 5155 §7.1) counted per
 * name. No opt-out (RFC 9276 §3.1).
 *
 * Its output is the same records in the same order as `signZone` (dnssec-signer.ts) makes for the same
 * content, keys and signing time: the reference signer is what this one is checked against, byte for
 * byte (dnssec-incremental.test.ts). What stays O(zone) per serial, without hashing or signing: the
 * comparison of the given RRsets with those held (one string per RRset), the epoch test of every
 * signed RRset (arithmetic on a cached offset), and the concatenation of the output.
 */
import { canonicalRdata } from '../dns/dnssec/canonical.ts';
import {
  base32hex,
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
  type RRsetToSign,
  type SignatureWindow,
  signRRsets,
} from '../dns/dnssec/rrsig.ts';
import { canonicalSortKey, isInDomain, type Name, nameKey, parentName } from '../dns/name.ts';
import { printRdata, type Rdata } from '../dns/rdata.ts';
import { RRType, typeCode } from '../dns/rrtype.ts';
import {
  type Denial,
  isKeySigned,
  type SignedRecord,
  type SigningKeys,
  uniqueKeys,
  type ZoneToSign,
} from './dnssec-signer.ts';
import { DEFAULT_WINDOW_POLICY, epochOffset, type WindowPolicy } from './dnssec-window.ts';

/** One RRset held: its records, and its signatures with the window and keys they were made for. */
interface SetEntry {
  owner: Name;
  type: number;
  ttl: number;
  records: SignedRecord[];
  /** What the content was compared by (TTL and RDATA as given). */
  fingerprint: string;
  /** The RDATA array given last: the same array again with the same TTL is the same content. */
  source: unknown;
  /** The RRset's place in the refresh period (dnssec-window.ts), hashed once. */
  offset: number;
  /**
   * RRSIG records, one per signing key; valid while `inception` and `keys` match the current ones.
   * `keys` is the generation of the signing keys of the RRset's kind (key-signing for the apex DNSKEY,
   * CDS and CDNSKEY RRsets, zone-signing for every other), so a key state change re-signs only that kind.
   */
  sigs: SignedRecord[];
  inception: number;
  keys: number;
  /** The serial-pass that last saw the RRset in the input (to find RRsets removed). */
  seen: number;
}

interface OwnerNode {
  owner: Name;
  key: string;
  sort: string;
  /** The content RRsets (with SOA, DNSKEY, CDS, CDNSKEY, NSEC3PARAM at the apex), by type code. */
  sets: Map<number, SetEntry>;
  alias: boolean;
  /** The pass that last saw an ALIAS here. */
  aliasSeen: number;
  /** Below a zone cut: glue, unsigned, outside the chain (RFC 4035 §2.2). */
  glue: boolean;
  /** In the denial chain: authoritative (or a cut) with RRsets or an ALIAS. */
  inChain: boolean;
  /** NSEC mode: the NSEC at this owner. */
  nsec: SetEntry | undefined;
  /** The node's records and signatures in output order, until something here changes. */
  emitted: SignedRecord[] | undefined;
}

/** NSEC3 mode: one hashed name of the chain, an owner or an empty non-terminal. */
interface HashedNode {
  label: string;
  hash: Uint8Array;
  name: Name;
  /** Chain owners below this name (it is an empty non-terminal when it is not an owner itself). */
  below: number;
  owner: OwnerNode | undefined;
  entry: SetEntry | undefined;
}

export interface IncrementalSigningStats {
  /** Signatures made by the last `sign`. */
  signed: number;
  /** Denial records (NSEC/NSEC3) whose content changed in the last `sign`. */
  denialChanged: number;
  /** RRsets whose content changed (added, changed, removed) in the last `sign`. */
  rrsetsChanged: number;
}

export class IncrementalSigner {
  private readonly origin: Name;
  private readonly originKey: string;
  private readonly denial: Denial;
  private readonly policy: WindowPolicy;
  private readonly nodes = new Map<string, OwnerNode>();
  /** Every owner (glue included), by canonical sort key. */
  private ownersSorted: OwnerNode[] = [];
  /** The owners in the chain, in canonical order (NSEC's chain; NSEC3's output order of owners). */
  private chain: OwnerNode[] = [];
  private readonly hashed = new Map<string, HashedNode>();
  private hashOrder: HashedNode[] = [];
  private readonly hashOf = new Map<string, { label: string; hash: Uint8Array }>();
  private pass = 0;
  /** Owners made in this pass, not yet in `ownersSorted`. */
  private fresh: OwnerNode[] = [];
  private denialTtl = -1;
  /** The key-signing keys last signed with (their DNSKEY RDATA) and their generation. */
  private kskId = '';
  private kskGeneration = 0;
  /** The zone-signing keys likewise; a generation never repeats, so keys back again sign again. */
  private zskId = '';
  private zskGeneration = 0;
  private signingKeys: SigningKeys = { keySigning: [], zoneSigning: [] };
  stats: IncrementalSigningStats = { signed: 0, denialChanged: 0, rrsetsChanged: 0 };

  constructor(origin: Name, denial: Denial, policy: WindowPolicy = DEFAULT_WINDOW_POLICY) {
    this.origin = origin;
    this.originKey = nameKey(origin);
    this.denial = denial;
    this.policy = policy;
  }

  /** Whether this signer holds state for the zone signed this way (else a new one is made). */
  fits(origin: Name, denial: Denial, policy: WindowPolicy): boolean {
    return (
      nameKey(origin) === this.originKey &&
      JSON.stringify(denial) === JSON.stringify(this.denial) &&
      policy.refreshSeconds === this.policy.refreshSeconds &&
      policy.backdateSeconds === this.policy.backdateSeconds
    );
  }

  /**
   * The signed zone for this content, keys and signing time: what `signZone` returns for them with the
   * windows of `signatureWindow(signedAt, …, policy)`.
   */
  sign(zone: ZoneToSign, keys: SigningKeys, signedAt: number): SignedRecord[] {
    const pass = ++this.pass;
    this.stats = { signed: 0, denialChanged: 0, rrsetsChanged: 0 };
    // The keys' state decides three things apart (dnssec-key-set.ts `keysAt`): which keys sign the
    // DNSKEY, CDS and CDNSKEY RRsets, which sign the rest, and the content of the DNSKEY RRset (the
    // published keys) and of CDS/CDNSKEY (the parent's DS set). A change of one invalidates only its
    // own: the signatures of its kind, or the RRset's content (re-signed as any changed RRset is).
    const kskId = keys.keySigning.map(keyIdentity).join();
    if (kskId !== this.kskId) {
      this.kskId = kskId;
      this.kskGeneration++;
    }
    const zskId = keys.zoneSigning.map(keyIdentity).join();
    if (zskId !== this.zskId) {
      this.zskId = zskId;
      this.zskGeneration++;
    }
    this.signingKeys = keys;
    const touched = new Set<OwnerNode>();
    const subtrees: OwnerNode[] = [];

    const put = (
      owner: Name,
      type: number,
      ttl: number,
      source: unknown,
      fingerprint: () => string,
      records: () => SignedRecord[],
    ) => {
      const node = this.node(owner, touched);
      const held = node.sets.get(type);
      if (held && source !== undefined && held.source === source && held.ttl === ttl) {
        held.seen = pass;
        return;
      }
      const print = fingerprint();
      if (held && held.fingerprint === print && held.ttl === ttl) {
        held.seen = pass;
        held.source = source;
        return;
      }
      this.stats.rrsetsChanged++;
      node.sets.set(type, {
        owner: node.owner,
        type,
        ttl,
        records: records(),
        fingerprint: print,
        source,
        offset: held?.offset ?? epochOffset(node.owner, type, this.policy.refreshSeconds),
        sigs: [],
        inception: Number.NaN,
        keys: 0,
        seen: pass,
      });
      node.emitted = undefined;
      touched.add(node);
      if (type === RRType.NS && node.key !== this.originKey) subtrees.push(node);
    };

    const soa: Rdata = { type: 'SOA', ...zone.soa };
    put(
      this.origin,
      RRType.SOA,
      zone.soa.ttl,
      undefined,
      () => JSON.stringify(soa),
      () => [record(this.origin, zone.soa.ttl, RRType.SOA, soa)],
    );
    for (const s of zone.rrsets) {
      // An owner held is in the zone; one not held yet is checked.
      if (!this.nodes.has(nameKey(s.owner)) && !isInDomain(s.owner, this.origin)) continue;
      if (s.type === 'ALIAS') {
        const node = this.node(s.owner, touched);
        if (!node.alias) {
          node.alias = true;
          node.emitted = undefined;
          touched.add(node);
          this.stats.rrsetsChanged++;
        }
        node.aliasSeen = pass;
        continue;
      }
      const type = typeCode(s.type)!;
      put(
        s.owner,
        type,
        s.ttl,
        s.rdata,
        () => JSON.stringify(s.rdata),
        () => s.rdata.map((r) => record(s.owner, s.ttl, type, r)),
      );
    }
    // The apex DNSKEY RRset: the published keys, which a rollover makes differ from the signing ones
    // (RFC 7583 §3.2 pre-publication; RFC 6781 §4.1.4 keys that sign before they are published).
    const dnskeys = uniqueKeys(keys.published ?? [...keys.keySigning, ...keys.zoneSigning]);
    const keyRecords = (type: number, list: readonly DnssecKey[]) =>
      list.map((k) => ({
        owner: this.origin,
        ttl: zone.soa.ttl,
        type,
        rdata: dnskeyRdata(k),
        text: printDnskey(k),
      }));
    put(
      this.origin,
      RRType.DNSKEY,
      zone.soa.ttl,
      undefined,
      () => dnskeys.map(keyIdentity).join(),
      () => keyRecords(RRType.DNSKEY, dnskeys),
    );
    const parent = keys.parent ?? [];
    if (keys.deleteAtParent) {
      // RFC 8078 §4: the delete request in place of the DS set.
      put(
        this.origin,
        RRType.CDS,
        zone.soa.ttl,
        undefined,
        () => 'delete',
        () => [record(this.origin, zone.soa.ttl, RRType.CDS, DELETE_CDS)],
      );
      put(
        this.origin,
        RRType.CDNSKEY,
        zone.soa.ttl,
        undefined,
        () => 'delete',
        () => keyRecords(RRType.CDNSKEY, [DELETE_CDNSKEY as DnssecKey]),
      );
    } else if (parent.length > 0) {
      // RFC 7344 §4: CDS (SHA-256) and CDNSKEY at the apex, the DS set the parent is to hold. Without
      // one they are not given, so they are removed like any RRset not given (the apex bit map too).
      const parentId = parent.map(keyIdentity).join();
      put(
        this.origin,
        RRType.CDS,
        zone.soa.ttl,
        undefined,
        () => parentId,
        () => parent.map((k) => record(this.origin, zone.soa.ttl, RRType.CDS, dsOf(this.origin, k))),
      );
      put(
        this.origin,
        RRType.CDNSKEY,
        zone.soa.ttl,
        undefined,
        () => parentId,
        () => keyRecords(RRType.CDNSKEY, uniqueKeys(parent)),
      );
    }
    // RFC 9077 §3.3: the denial records' TTL is the lesser of the SOA's TTL and its MINIMUM.
    const denialTtl = Math.min(zone.soa.ttl, zone.soa.minimum);
    if (this.denial.kind === 'NSEC3') {
      const params = this.denial.params;
      put(
        this.origin,
        RRType.NSEC3PARAM,
        denialTtl,
        undefined,
        () => '',
        () => [
          {
            owner: this.origin,
            ttl: denialTtl,
            type: RRType.NSEC3PARAM,
            rdata: nsec3paramRdata(params),
            text: printNsec3param(params),
          },
        ],
      );
    }

    insertMany(this.ownersSorted, this.fresh, (n) => n.sort);
    this.fresh = [];
    // RRsets (and ALIAS) held but not given this time are removed.
    for (const node of this.nodes.values()) {
      for (const [type, entry] of node.sets)
        if (entry.seen !== pass) {
          node.sets.delete(type);
          node.emitted = undefined;
          touched.add(node);
          this.stats.rrsetsChanged++;
          if (type === RRType.NS && node.key !== this.originKey) subtrees.push(node);
        }
      if (node.alias && node.aliasSeen !== pass) {
        node.alias = false;
        node.emitted = undefined;
        touched.add(node);
        this.stats.rrsetsChanged++;
      }
    }
    // A cut made or undone changes what is glue in the whole subtree below it.
    for (const cut of subtrees) for (const n of this.subtree(cut)) touched.add(n);

    const denialTtlChanged = denialTtl !== this.denialTtl;
    this.denialTtl = denialTtl;
    this.update(touched, denialTtlChanged);
    this.signPending(signedAt);
    return this.output();
  }

  private node(owner: Name, touched: Set<OwnerNode>): OwnerNode {
    const key = nameKey(owner);
    let node = this.nodes.get(key);
    if (!node) {
      node = {
        owner,
        key,
        sort: canonicalSortKey(owner),
        sets: new Map(),
        alias: false,
        aliasSeen: 0,
        glue: false,
        inChain: false,
        nsec: undefined,
        emitted: undefined,
      };
      this.nodes.set(key, node);
      this.fresh.push(node);
      touched.add(node);
    }
    return node;
  }

  /** The owners strictly below `top`: a contiguous range after it in canonical order (name.ts). */
  private *subtree(top: OwnerNode): Iterable<OwnerNode> {
    const prefix = `${top.sort}\u0000`;
    const list = this.ownersSorted;
    for (let i = lowerBound(list, prefix); i < list.length && list[i]!.sort.startsWith(prefix); i++)
      yield list[i]!;
  }

  private isCut(node: OwnerNode): boolean {
    return node.key !== this.originKey && node.sets.has(RRType.NS);
  }

  private isGlue(node: OwnerNode): boolean {
    for (let n = node.owner; nameKey(n) !== this.originKey; ) {
      n = parentName(n);
      if (nameKey(n) === this.originKey) break;
      const above = this.nodes.get(nameKey(n));
      if (above && this.isCut(above)) return true;
    }
    return false;
  }

  /** The type bit map of a chain owner, as `signZone` makes it (without NSEC/NSEC3 itself). */
  private typesAt(node: OwnerNode): number[] {
    const types = [...node.sets.keys()];
    if (node.alias) types.push(RRType.A, RRType.AAAA);
    if (!this.isCut(node) || types.includes(RRType.DS)) types.push(RRType.RRSIG);
    return types;
  }

  /** Applies the owners touched to the chain: membership, bit maps, next names. */
  private update(touched: Set<OwnerNode>, all: boolean): void {
    const joined: OwnerNode[] = [];
    const left: OwnerNode[] = [];
    for (const node of touched) {
      const wasInChain = node.inChain;
      node.glue = this.isGlue(node);
      node.inChain = !node.glue && (node.sets.size > 0 || node.alias);
      node.emitted = undefined;
      if (node.inChain && !wasInChain) joined.push(node);
      if (!node.inChain && wasInChain) left.push(node);
      if (node.sets.size === 0 && !node.alias) {
        this.nodes.delete(node.key);
        removeSorted(this.ownersSorted, node);
      }
    }
    for (const node of left) removeSorted(this.chain, node);
    insertMany(this.chain, joined, (n) => n.sort);
    if (this.denial.kind === 'NSEC') this.updateNsec(touched, left, all);
    else this.updateNsec3(touched, joined, left, all);
  }

  private updateNsec(touched: Set<OwnerNode>, left: OwnerNode[], all: boolean): void {
    const chain = this.chain;
    const redo = new Set<OwnerNode>();
    const predecessor = (sort: string) => {
      const i = lowerBound(chain, sort);
      return chain[(i - 1 + chain.length) % chain.length]!;
    };
    for (const node of left) {
      node.nsec = undefined;
      if (chain.length > 0) redo.add(predecessor(node.sort));
    }
    for (const node of touched)
      if (node.inChain) {
        redo.add(node);
        redo.add(predecessor(node.sort));
      }
    const list = all ? chain : [...redo];
    for (const node of list) {
      const i = lowerBound(chain, node.sort);
      const next = chain[(i + 1) % chain.length]!.owner;
      const types = [...this.typesAt(node), RRType.NSEC];
      if (this.isCut(node) && !types.includes(RRType.RRSIG)) types.push(RRType.RRSIG);
      const rdata = nsecRdata(next, types);
      if (node.nsec && node.nsec.ttl === this.denialTtl && sameBytes(node.nsec.records[0]!.rdata, rdata))
        continue;
      this.stats.denialChanged++;
      node.nsec = {
        owner: node.owner,
        type: RRType.NSEC,
        ttl: this.denialTtl,
        records: [
          {
            owner: node.owner,
            ttl: this.denialTtl,
            type: RRType.NSEC,
            rdata,
            text: `${next} ${printTypes(types)}`,
          },
        ],
        fingerprint: '',
        source: undefined,
        offset: node.nsec?.offset ?? epochOffset(node.owner, RRType.NSEC, this.policy.refreshSeconds),
        sigs: [],
        inception: Number.NaN,
        keys: 0,
        seen: 0,
      };
      node.emitted = undefined;
    }
  }

  private hashedName(name: Name): { label: string; hash: Uint8Array } {
    const key = nameKey(name);
    let h = this.hashOf.get(key);
    if (!h) {
      const params = (this.denial as Extract<Denial, { kind: 'NSEC3' }>).params;
      const hash = nsec3Hash(name, params);
      h = { label: base32hex(hash), hash };
      this.hashOf.set(key, h);
    }
    return h;
  }

  private updateNsec3(touched: Set<OwnerNode>, joined: OwnerNode[], left: OwnerNode[], all: boolean): void {
    const changed = new Set<HashedNode>();
    const hashedNode = (name: Name): HashedNode => {
      const { label, hash } = this.hashedName(name);
      let h = this.hashed.get(label);
      if (!h) {
        h = { label, hash, name, below: 0, owner: undefined, entry: undefined };
        this.hashed.set(label, h);
      }
      changed.add(h);
      return h;
    };
    // Every name between a chain owner and the apex is in the chain: an owner, or an empty non-terminal.
    const ancestors = (node: OwnerNode, delta: number) => {
      for (let n = node.owner; nameKey(n) !== this.originKey; ) {
        n = parentName(n);
        hashedNode(n).below += delta;
      }
    };
    for (const node of joined) ancestors(node, 1);
    for (const node of left) ancestors(node, -1);
    for (const node of touched) {
      const h = hashedNode(node.owner);
      h.owner = node.inChain ? node : undefined;
      if (h.owner) h.name = node.owner;
    }
    const present = (h: HashedNode) => h.owner !== undefined || h.below > 0;
    const order = this.hashOrder;
    const redo = new Set<HashedNode>();
    const gone: HashedNode[] = [];
    const added: HashedNode[] = [];
    for (const h of changed) {
      const i = lowerBoundLabel(order, h.label);
      const held = order[i]?.label === h.label;
      if (present(h)) {
        if (!held) added.push(h);
        redo.add(h);
      } else {
        if (held) order.splice(i, 1);
        this.hashed.delete(h.label);
        this.hashOf.delete(nameKey(h.name));
        gone.push(h);
      }
    }
    insertMany(order, added, (h) => h.label);
    if (order.length === 0) return;
    const predecessor = (label: string) =>
      order[(lowerBoundLabel(order, label) - 1 + order.length) % order.length]!;
    for (const h of [...redo, ...gone]) redo.add(predecessor(h.label));
    const params = (this.denial as Extract<Denial, { kind: 'NSEC3' }>).params;
    const suffix = this.origin === '.' ? '' : this.origin;
    for (const h of all ? order : redo) {
      if (!present(h)) continue;
      const i = lowerBoundLabel(order, h.label);
      const next = order[(i + 1) % order.length]!.hash;
      const types = h.owner ? this.typesAt(h.owner) : [];
      const rdata = nsec3Rdata(params, next, types);
      if (h.entry && h.entry.ttl === this.denialTtl && sameBytes(h.entry.records[0]!.rdata, rdata)) continue;
      this.stats.denialChanged++;
      const owner = `${h.label}.${suffix}`;
      h.entry = {
        owner,
        type: RRType.NSEC3,
        ttl: this.denialTtl,
        records: [
          {
            owner,
            ttl: this.denialTtl,
            type: RRType.NSEC3,
            rdata,
            text: printNsec3(params, next, types),
          },
        ],
        fingerprint: '',
        source: undefined,
        offset: h.entry?.offset ?? epochOffset(owner, RRType.NSEC3, this.policy.refreshSeconds),
        sigs: [],
        inception: Number.NaN,
        keys: 0,
        seen: 0,
      };
    }
  }

  /** Whether an RRset is signed (RFC 4035 §2.2: at a cut only DS and NSEC; nothing below one). */
  private signedHere(node: OwnerNode | undefined, type: number): boolean {
    if (!node) return true; // NSEC3 records
    if (node.glue) return false;
    return !this.isCut(node) || type === RRType.DS || type === RRType.NSEC;
  }

  /** The generation of the keys that sign RRsets of this type (see `SetEntry.keys`). */
  private generationOf(type: number): number {
    return isKeySigned(type) ? this.kskGeneration : this.zskGeneration;
  }

  /** Signs every RRset without signatures for the current window and keys, in one batch per key. */
  private signPending(signedAt: number): void {
    const { refreshSeconds: period, backdateSeconds: backdate } = this.policy;
    const pending: { entry: SetEntry; node: OwnerNode | undefined; window: SignatureWindow }[] = [];
    const check = (entry: SetEntry, node: OwnerNode | undefined) => {
      if (!this.signedHere(node, entry.type)) {
        if (entry.sigs.length > 0 || entry.keys !== -1) {
          entry.sigs = [];
          entry.keys = -1;
          entry.inception = Number.NaN;
          if (node) node.emitted = undefined;
        }
        return;
      }
      const start = Math.floor((signedAt + entry.offset) / period) * period - entry.offset;
      const inception = start - backdate;
      if (entry.inception === inception && entry.keys === this.generationOf(entry.type)) return;
      pending.push({ entry, node, window: { inception, expiration: start + 2 * period + backdate } });
    };
    for (const node of this.nodes.values()) {
      for (const entry of node.sets.values()) check(entry, node);
      if (node.nsec) check(node.nsec, node);
    }
    for (const h of this.hashOrder) if (h.entry) check(h.entry, undefined);
    if (pending.length === 0) return;

    const byKey = new Map<DnssecKey, { at: number; rrset: RRsetToSign }[]>();
    const windows = new Map<RRsetToSign, SignatureWindow>();
    const made = pending.map(() => [] as SignedRecord[][]);
    pending.forEach(({ entry, window }, at) => {
      const rrset: RRsetToSign = {
        owner: entry.owner,
        type: entry.type,
        ttl: entry.ttl,
        rdatas: entry.records.map((r) => r.rdata),
      };
      windows.set(rrset, window);
      const signers = signersOf(this.signingKeys, entry.type);
      signers.forEach((key, k) => {
        const list = byKey.get(key) ?? [];
        list.push({ at, rrset });
        byKey.set(key, list);
        made[at]![k] = [];
      });
    });
    // Signatures per key in one batch (cheaper for ECDSA), placed in the signers' order of each RRset.
    const sigOf = new Map<string, SignedRecord>();
    for (const [key, list] of byKey) {
      const sigs = signRRsets(
        list.map((l) => l.rrset),
        key,
        this.origin,
        (r) => windows.get(r)!,
      );
      this.stats.signed += sigs.length;
      list.forEach(({ at, rrset }, i) => {
        const sig = sigs[i]!;
        sigOf.set(`${at}\u0000${signersOf(this.signingKeys, rrset.type).indexOf(key)}`, {
          owner: rrset.owner,
          ttl: rrset.ttl,
          type: RRType.RRSIG,
          rdata: encodeRrsig(sig),
          text: printRrsig(sig),
        });
      });
    }
    pending.forEach(({ entry, node, window }, at) => {
      const signers = signersOf(this.signingKeys, entry.type);
      entry.sigs = signers.map((_, k) => sigOf.get(`${at}\u0000${k}`)!);
      entry.inception = window.inception;
      entry.keys = this.generationOf(entry.type);
      if (node) node.emitted = undefined;
    });
  }

  /** The signed zone in `signZone`'s order: chain owners, glue, then the NSEC3 chain. */
  private output(): SignedRecord[] {
    const out: SignedRecord[] = [];
    for (const node of this.chain) {
      if (!node.emitted) {
        const sets = [...node.sets.values()];
        if (node.nsec) sets.push(node.nsec);
        sets.sort((a, b) => (a.type === RRType.SOA ? -1 : b.type === RRType.SOA ? 1 : a.type - b.type));
        node.emitted = sets.flatMap((s) => [...s.records, ...s.sigs]);
      }
      for (const r of node.emitted) out.push(r);
    }
    for (const node of this.ownersSorted) {
      if (!node.glue) continue;
      const sets = [...node.sets.values()].sort((a, b) => a.type - b.type);
      for (const s of sets) for (const r of s.records) out.push(r);
    }
    for (const h of this.hashOrder) if (h.entry) out.push(...h.entry.records, ...h.entry.sigs);
    return out;
  }
}

/** The keys that sign an RRset of this type, in the order `signZone` places their RRSIGs. */
function signersOf(keys: SigningKeys, type: number): readonly DnssecKey[] {
  return isKeySigned(type) ? keys.keySigning : keys.zoneSigning;
}

/** What a key's signatures depend on besides its private half: flags, algorithm, public key (its DNSKEY RDATA). */
function keyIdentity(k: DnssecKey): string {
  return Buffer.from(dnskeyRdata(k)).toString('base64');
}

function record(owner: Name, ttl: number, type: number, rdata: Rdata): SignedRecord {
  return { owner, ttl, type, rdata: canonicalRdata(rdata), text: printRdata(rdata) };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The first index whose sort key is not below `sort`. */
function lowerBound(list: readonly { sort: string }[], sort: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.sort < sort) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function lowerBoundLabel(list: readonly { label: string }[], label: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.label < label) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Inserts items into a sorted list: one by one when few, else appended and the whole sorted again. */
function insertMany<T>(list: T[], items: readonly T[], key: (t: T) => string): void {
  if (items.length <= 64) {
    for (const item of items) {
      const k = key(item);
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (key(list[mid]!) < k) lo = mid + 1;
        else hi = mid;
      }
      list.splice(lo, 0, item);
    }
    return;
  }
  for (const item of items) list.push(item);
  list.sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

function removeSorted(list: { sort: string }[], node: { sort: string }): void {
  const i = lowerBound(list, node.sort);
  if (list[i] === node) list.splice(i, 1);
}
