import { isInDomain, type Name, nameKey } from '../../dns/name.ts';
import { isRecordTypeName, type RecordTypeName, RRType } from '../../dns/rrtype.ts';
import type { ClientSubnet } from '../query.ts';
import type { ZoneDnssecView } from '../zone-dnssec.ts';
import type { ServedRRset } from '../zone-snapshot.ts';
import { SelectionError, type SelectionPolicy, type SelectionQuery } from './policy.ts';
import { type SelectionPolicies, selectionPolicies } from './registry.ts';

/**
 * Binds one RRset of a zone, by owner and type, to a selection policy and the policy's data. This is
 * what the primary sends to every DNS thread, so `data` must be plain data (it is copied
 * with structured clone); each process checks and compiles it with the policy's `prepare`.
 */
export interface SelectionBinding {
  owner: Name;
  type: RecordTypeName;
  /** A name registered in `SelectionPolicies`. */
  policy: string;
  data?: unknown;
}

interface Bound {
  zone: Name;
  zoneKey: string;
  policy: SelectionPolicy;
  prepared: unknown;
}

/**
 * Where selection bindings are set for the processes that answer: the built-in server's backends
 * (one process, or the primary and every DNS worker). Resolves once every process answers with them;
 * rejects with `SelectionError` when they are refused (then no process changed).
 */
export interface SelectionSink {
  setSelections(origin: Name, bindings: readonly SelectionBinding[]): Promise<void>;
}

/** The answer section after selection. */
export interface SelectedAnswer {
  answer: ServedRRset[];
  /** The longest scope any selection reported (RFC 7871 §7.2.1: the answer holds for that prefix); 0: any. */
  scope: number;
  /** Index in `answer` of the first RRset a selection reported a non-zero scope for; -1 when none did. */
  firstScoped: number;
  /** The zone of the last RRset a selection left out (`'none'`), whose SOA a NODATA answer carries. */
  removedFrom?: Name;
}

/** The query fields `select` needs (a `SelectionQuery` without the zone, which comes from each binding). */
export type SelectionRequest = Omit<SelectionQuery, 'zone'>;

/**
 * The RRsets of a DNS process that are answered through a selection policy, grouped by zone so that
 * a zone's bindings are replaced in one step. Bindings are looked up by owner and type, whatever the
 * zone's content is at the moment, so they survive zone patches and replacements; a binding whose RRset
 * does not exist does nothing. The query path asks `size` first: with no bindings, nothing else runs.
 */
export class SelectionTable {
  private readonly zones = new Map<string, { bindings: readonly SelectionBinding[]; bound: Bound[] }>();
  /** Type code → owner key → binding. */
  private readonly index = new Map<number, Map<string, Bound>>();
  private count = 0;
  private readonly policies: SelectionPolicies;
  /** Selections that threw: answered with the whole RRset. */
  errors = 0;
  /** Called with the policy's name for each selection that threw (the server's metrics count them). */
  onError?: (policy: string) => void;

  constructor(policies: SelectionPolicies = selectionPolicies) {
    this.policies = policies;
  }

  /** Bindings held, over all zones. */
  get size(): number {
    return this.count;
  }

  /**
   * Replaces the bindings of zone `origin` (an empty list removes them). Every binding is checked and
   * prepared before anything changes, so a bad one leaves the zone's previous bindings in place and
   * throws `SelectionError`: an owner outside the zone, an unknown type or policy, the same RRset
   * twice, an RRset another zone binds, or data the policy's `prepare` refuses.
   */
  replace(origin: Name, bindings: readonly SelectionBinding[]): void {
    const zoneKey = nameKey(origin);
    const bound: Bound[] = [];
    const seen = new Set<string>();
    for (const b of bindings) {
      const where = `selection of ${b.owner} ${b.type}`;
      if (!isInDomain(b.owner, origin)) {
        throw new SelectionError('SELECTION_OUTSIDE_ZONE', `${where}: ${b.owner} is not in zone ${origin}`);
      }
      if (!isRecordTypeName(b.type)) {
        throw new SelectionError(
          'SELECTION_TYPE',
          `${where}: ${JSON.stringify(b.type)} is not a record type`,
        );
      }
      const policy = this.policies.get(b.policy);
      if (!policy) {
        const known = this.policies.names();
        throw new SelectionError(
          'SELECTION_POLICY_UNKNOWN',
          `${where}: no selection policy named ${JSON.stringify(b.policy)} (known: ${known.length > 0 ? known.join(', ') : 'none'})`,
        );
      }
      const id = `${RRType[b.type]} ${nameKey(b.owner)}`;
      if (seen.has(id)) {
        throw new SelectionError(
          'SELECTION_DUPLICATE',
          `${where}: the RRset is bound twice in zone ${origin}`,
        );
      }
      seen.add(id);
      const other = this.index.get(RRType[b.type])?.get(nameKey(b.owner));
      if (other && other.zoneKey !== zoneKey) {
        throw new SelectionError(
          'SELECTION_CONFLICT',
          `${where}: the RRset is bound by zone ${other.zone} already; one RRset has one selection`,
        );
      }
      let prepared: unknown;
      try {
        prepared = policy.prepare(b.data);
      } catch (e) {
        if (e instanceof SelectionError) throw new SelectionError(e.code, `${where}: ${e.message}`);
        throw new SelectionError('SELECTION_DATA', `${where}: policy ${b.policy}: ${(e as Error).message}`);
      }
      bound.push({ zone: origin, zoneKey, policy, prepared });
    }
    this.remove(zoneKey);
    if (bindings.length === 0) return;
    this.zones.set(zoneKey, { bindings: [...bindings], bound });
    bindings.forEach((b, i) => {
      const type = RRType[b.type];
      let byOwner = this.index.get(type);
      if (!byOwner) {
        byOwner = new Map();
        this.index.set(type, byOwner);
      }
      byOwner.set(nameKey(b.owner), bound[i]!);
    });
    this.count += bindings.length;
  }

  /** The bindings of a zone as they were given (empty when none). */
  bindings(origin: Name): readonly SelectionBinding[] {
    return this.zones.get(nameKey(origin))?.bindings ?? [];
  }

  /** Every zone with bindings, e.g. to send them to a new DNS thread. */
  *all(): Generator<{ origin: Name; bindings: readonly SelectionBinding[] }> {
    for (const { bindings, bound } of this.zones.values()) yield { origin: bound[0]!.zone, bindings };
  }

  /**
   * Runs the selections bound to the RRsets of an answer section. Undefined when none is bound (the
   * answer stands as it is); otherwise the section with each bound RRset replaced by the records its
   * policy chose (a new RRset object, so the wire form cached on the zone's RRset is never touched).
   *
   * `signed`: for a signed answer (DO set), the DNSSEC view of a binding's zone, undefined when that
   * zone is not signed. In a signed zone a chosen subset goes out with an RRSIG over the subset in
   * place of the RRSIG over the whole RRset that follows it (`signSynthesized`, deterministic, ADR
   * 0021); when the zone cannot sign here, or the policy leaves the RRset out (a NODATA the zone's
   * NSEC/NSEC3, which lists the type, cannot prove), the whole RRset goes out with its own RRSIG.
   */
  select(
    answer: readonly ServedRRset[],
    request: SelectionRequest,
    signed?: (zone: Name) => ZoneDnssecView | undefined,
  ): SelectedAnswer | undefined {
    let out: ServedRRset[] | undefined;
    let scope = 0;
    let firstScoped = -1;
    let removedFrom: Name | undefined;
    for (let i = 0; i < answer.length; i++) {
      const rrset = answer[i]!;
      const byOwner = this.index.get(rrset.type);
      if (byOwner === undefined) continue;
      // An RRset synthesized from a wildcard is bound through the wildcard's owner.
      const bound = byOwner.get(nameKey((rrset.source ?? rrset).owner));
      if (bound === undefined) continue;
      out ??= [...answer];
      let selection: ReturnType<SelectionPolicy['select']>;
      try {
        selection = bound.policy.select(rrset, bound.prepared, { ...request, zone: bound.zone });
      } catch {
        this.errors++;
        this.onError?.(bound.policy.name);
        continue;
      }
      if (selection === 'all') continue;
      const dnssec = signed?.(bound.zone);
      if (selection === 'none') {
        if (dnssec !== undefined) continue;
        out[i] = undefined as unknown as ServedRRset;
        removedFrom = bound.zone;
        continue;
      }
      const s = clampScope(selection.scope, request.clientSubnet);
      if (s > scope) scope = s;
      if (s > 0 && firstScoped < 0) firstScoped = i;
      const rdata = selection.rdata;
      // No records left is answered with all of them (never an empty RRset).
      if (rdata === rrset.rdata || rdata.length === 0) continue;
      const subset: ServedRRset = { owner: rrset.owner, type: rrset.type, ttl: rrset.ttl, rdata: [...rdata] };
      if (dnssec !== undefined) {
        // RFC 4035 §3.1.1: the RRSIG of the RRset follows it (answer.ts `pushSigned`). A wildcard
        // expansion is signed at the wildcard's owner and carried under the expanded one (§3.1.3.3).
        const next = answer[i + 1];
        const covers =
          next !== undefined &&
          next.type === RRType.RRSIG &&
          next.wire?.[0] !== undefined &&
          ((next.wire[0][0]! << 8) | next.wire[0][1]!) === rrset.type;
        if (!covers) continue;
        const signedAs = rrset.source?.owner ?? rrset.owner;
        const sig = dnssec.signSynthesized?.({ ...subset, owner: signedAs }, 'steered');
        if (sig === undefined) continue;
        out[i + 1] = signedAs === rrset.owner ? sig : { ...sig, owner: rrset.owner };
      }
      out[i] = subset;
    }
    if (out === undefined) return undefined;
    if (removedFrom === undefined) return { answer: out, scope, firstScoped };
    const kept: ServedRRset[] = [];
    let keptFirstScoped = -1;
    out.forEach((r, i) => {
      if (r === undefined) return;
      if (i === firstScoped) keptFirstScoped = kept.length;
      kept.push(r);
    });
    return { answer: kept, scope, firstScoped: keptFirstScoped, removedFrom };
  }

  private remove(zoneKey: string): void {
    const zone = this.zones.get(zoneKey);
    if (!zone) return;
    this.zones.delete(zoneKey);
    for (const b of zone.bindings) {
      const type = RRType[b.type];
      const byOwner = this.index.get(type);
      const key = nameKey(b.owner);
      if (byOwner?.get(key)?.zoneKey === zoneKey) byOwner.delete(key);
      if (byOwner?.size === 0) this.index.delete(type);
    }
    this.count -= zone.bindings.length;
  }
}

/** A reported scope as a prefix length of the query's family (RFC 7871 §6); 0 without a subnet. */
function clampScope(scope: number | undefined, subnet: ClientSubnet | undefined): number {
  if (subnet === undefined || scope === undefined || !(scope > 0)) return 0;
  return Math.min(Math.floor(scope), subnet.family === 1 ? 32 : 128);
}
