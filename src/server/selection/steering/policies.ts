/**
 * The steering policies of the built-in server: All, Ordered, Weighted, Closest, Random and Hashed,
 * each registered under its lowercase name. A binding's data (`SteeringBindingData`) lists the
 * candidates (the record set's records in order, canonical form), the health slot of each in the
 * process's `HealthView`, and what the policy needs (weights, regions, the class's topology). Every
 * query reads health from the view: no answer is chosen on a state older than the view's.
 */
import type { GeoIp, SelectionPolicyName } from '../../../api/steering.ts';
import { printRdata, type Rdata } from '../../../dns/rdata.ts';
import type { ServedRRset } from '../../zone-snapshot.ts';
import {
  type ClientNetwork,
  clientNetwork,
  networkWithin,
  parseNetwork,
  type Selection,
  SelectionError,
  type SelectionPolicy,
  type SelectionQuery,
} from '../policy.ts';
import { type GeoRegions, openGeoRegions } from './geoip.ts';
import { type HealthView, NO_SLOT, processHealth } from './health-view.ts';

/** One entry of a class's topology: client networks and their regions, nearest first. */
export interface TopologyEntry {
  network: string;
  regions: string[];
}

/** What a steering binding carries to every DNS process (plain data). */
export interface SteeringBindingData {
  candidates: string[];
  /** The health slot of each candidate, NO_SLOT (-1) for a candidate without a health check. */
  slots: number[];
  weights?: number[];
  regions?: string[];
  whenAllDown: 'All' | 'None' | 'First';
  topology?: TopologyEntry[];
  /** Closest: a GeoIP database for clients in no topology network. */
  geoip?: GeoIp;
}

interface Prepared {
  data: SteeringBindingData;
  /** Canonical record → candidate index. */
  index: Map<string, number>;
  /** Topology networks, longest prefix first. */
  topology: { network: ClientNetwork; regions: string[] }[];
  geo: GeoRegions | undefined;
}

/** The policy names a binding uses for each steering policy. */
export function steeringPolicyName(policy: SelectionPolicyName): string {
  return policy.toLowerCase();
}

function prepare(data: unknown): Prepared {
  const d = data as SteeringBindingData;
  if (
    d === null ||
    typeof d !== 'object' ||
    !Array.isArray(d.candidates) ||
    !Array.isArray(d.slots) ||
    d.slots.length !== d.candidates.length
  ) {
    throw new SelectionError(
      'STEERING_DATA',
      'steering data needs candidates and one health slot per candidate',
    );
  }
  const topology: Prepared['topology'] = [];
  for (const entry of d.topology ?? []) {
    const network = parseNetwork(entry.network);
    if (!network)
      throw new SelectionError(
        'STEERING_TOPOLOGY',
        `topology network ${entry.network} is not a CIDR network`,
      );
    topology.push({ network, regions: entry.regions });
  }
  topology.sort((a, b) => b.network.prefix - a.network.prefix);
  const geo = d.geoip ? openGeoRegions(d.geoip) : undefined;
  return { data: d, index: new Map(d.candidates.map((c, i) => [c, i])), topology, geo };
}

/** The presentation form of served records, kept per record object (zones reuse them until changed). */
const printed = new WeakMap<Rdata, string>();
function text(rdata: Rdata): string {
  let s = printed.get(rdata);
  if (s === undefined) {
    s = printRdata(rdata);
    printed.set(rdata, s);
  }
  return s;
}

/** The records of the RRset that are up, each with its candidate index (records not listed count as up, last). */
function healthy(rrset: ServedRRset, p: Prepared, view: HealthView): { rdata: Rdata; at: number }[] {
  const out: { rdata: Rdata; at: number }[] = [];
  for (const rdata of rrset.rdata) {
    const at = p.index.get(text(rdata)) ?? Number.MAX_SAFE_INTEGER;
    const slot = at === Number.MAX_SAFE_INTEGER ? NO_SLOT : p.data.slots[at]!;
    if (view.isUp(slot)) out.push({ rdata, at });
  }
  return out.sort((a, b) => a.at - b.at);
}

function allDown(rrset: ServedRRset, p: Prepared): Selection {
  switch (p.data.whenAllDown) {
    case 'None':
      return 'none';
    case 'First': {
      const first = rrset.rdata.find((r) => p.index.get(text(r)) === 0) ?? rrset.rdata[0]!;
      return { rdata: [first] };
    }
    default:
      return 'all';
  }
}

/** FNV-1a over the client network's family and address (bits beyond its prefix are zero). */
function clientHash(network: ClientNetwork | undefined): number {
  let h = 0x811c9dc5;
  if (network === undefined) return h;
  h = Math.imul(h ^ network.family, 0x01000193);
  for (const octet of network.address) h = Math.imul(h ^ octet, 0x01000193);
  // Final avalanche, so that neighbouring addresses spread.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h >>> 0;
}

/**
 * Weighted rendezvous hashing: each healthy candidate scores -weight / ln(u), u uniform in (0, 1) from
 * the client's hash and the candidate's index; the highest score wins. A client keeps its record while
 * that record stays healthy, whatever happens to the others: only the clients of a record that goes
 * down move (spread over the rest by weight), and they come back when it does.
 */
function rendezvous<T extends { at: number }>(up: readonly T[], client: number, weight: (u: T) => number): T {
  let best = up[0]!;
  let bestScore = Number.NEGATIVE_INFINITY;
  for (const u of up) {
    const w = weight(u);
    if (w <= 0) continue;
    let h = Math.imul(client ^ Math.imul(u.at + 1, 0x9e3779b1), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    const unit = ((h >>> 0) + 0.5) / 4294967296;
    const score = -w / Math.log(unit);
    if (score > bestScore) {
      bestScore = score;
      best = u;
    }
  }
  return best;
}

type Chooser = (
  up: { rdata: Rdata; at: number }[],
  p: Prepared,
  query: SelectionQuery,
) => { rdata: Rdata[]; scope?: number };

function policy(name: SelectionPolicyName, choose: Chooser, view: HealthView): SelectionPolicy<Prepared> {
  return {
    name: steeringPolicyName(name),
    prepare,
    select(rrset, p, query) {
      const up = healthy(rrset, p, view);
      if (up.length === 0) return allDown(rrset, p);
      return choose(up, p, query);
    },
  };
}

/** The six steering policies reading `view` (the process's own by default). */
export function steeringPolicies(view: HealthView = processHealth): SelectionPolicy[] {
  return [
    policy('All', (up) => ({ rdata: up.map((u) => u.rdata) }), view),
    policy('Ordered', (up) => ({ rdata: [up[0]!.rdata] }), view),
    policy('Random', (up) => ({ rdata: [up[Math.floor(Math.random() * up.length)]!.rdata] }), view),
    policy(
      'Hashed',
      (up, _p, query) => {
        const network = clientNetwork(query);
        return { rdata: [rendezvous(up, clientHash(network), () => 1).rdata], scope: network?.prefix ?? 0 };
      },
      view,
    ),
    policy(
      'Weighted',
      (up, p, query) => {
        const network = clientNetwork(query);
        const h = clientHash(network);
        const weight = (u: { at: number }) => p.data.weights?.[u.at] ?? 0;
        // Weight 0 is chosen only when every healthy record has weight 0 (then evenly).
        const pick = up.some((u) => weight(u) > 0) ? rendezvous(up, h, weight) : rendezvous(up, h, () => 1);
        return { rdata: [pick.rdata], scope: network?.prefix ?? 0 };
      },
      view,
    ),
    policy(
      'Closest',
      (up, p, query) => {
        const network = clientNetwork(query);
        const entry = network ? p.topology.find((t) => networkWithin(network, t.network)) : undefined;
        // The topology decides first; else the GeoIP database; else every healthy record.
        const decided =
          entry !== undefined
            ? { regions: entry.regions, scope: entry.network.prefix }
            : network && p.geo
              ? p.geo.lookup(network)
              : undefined;
        if (decided === undefined) return { rdata: up.map((u) => u.rdata), scope: network?.prefix ?? 0 };
        for (const region of decided.regions) {
          const here = up.filter((u) => p.data.regions?.[u.at] === region);
          if (here.length > 0) return { rdata: here.map((u) => u.rdata), scope: decided.scope };
        }
        return { rdata: up.map((u) => u.rdata), scope: decided.scope };
      },
      view,
    ),
  ];
}
