/**
 * Selection policies for tests only (the product registers none yet): `first-n` answers the first N
 * records of an RRset; `by-subnet` answers the records listed for the first network that holds the
 * client (its Client Subnet, else its address), with that network's prefix length as the ECS scope.
 */
import { printRdata } from '../../src/dns/rdata.ts';
import {
  type ClientNetwork,
  clientNetwork,
  networkWithin,
  parseNetwork,
  SelectionError,
  type SelectionPolicy,
} from '../../src/server/selection/policy.ts';
import { type SelectionPolicies, selectionPolicies } from '../../src/server/selection/registry.ts';

export const firstN: SelectionPolicy<number> = {
  name: 'first-n',
  prepare(data) {
    const count = (data as { count?: unknown } | undefined)?.count;
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 1) {
      throw new SelectionError('FIRST_N_COUNT', 'data.count must be a whole number of at least 1');
    }
    return count;
  },
  select(rrset, count) {
    return { rdata: rrset.rdata.slice(0, count) };
  },
};

export interface BySubnetData {
  rules: { network: string; keep: string[] }[];
}

interface BySubnetRule {
  network: ClientNetwork;
  keep: Set<string>;
}

export const bySubnet: SelectionPolicy<BySubnetRule[]> = {
  name: 'by-subnet',
  prepare(data) {
    const rules = (data as BySubnetData | undefined)?.rules;
    if (!Array.isArray(rules)) throw new SelectionError('BY_SUBNET_RULES', 'data.rules must be a list');
    return rules.map((r) => {
      const network = parseNetwork(r.network);
      if (!network)
        throw new SelectionError('BY_SUBNET_NETWORK', `${JSON.stringify(r.network)} is not a network`);
      return { network, keep: new Set(r.keep) };
    });
  },
  select(rrset, rules, query) {
    const client = clientNetwork(query);
    if (!client) return 'all';
    for (const rule of rules) {
      if (!networkWithin(client, rule.network)) continue;
      return { rdata: rrset.rdata.filter((r) => rule.keep.has(printRdata(r))), scope: rule.network.prefix };
    }
    return 'all';
  },
};

/** A policy whose selection throws (the answer stage must answer the whole RRset). */
export const throwing: SelectionPolicy<undefined> = {
  name: 'throwing',
  prepare: () => undefined,
  select() {
    throw new Error('broken policy');
  },
};

export const TEST_SELECTION_POLICIES: readonly SelectionPolicy[] = [firstN, bySubnet, throwing];

/** Registers the test policies (once) in `registry`, by default this process's. */
export function registerTestSelectionPolicies(registry: SelectionPolicies = selectionPolicies): void {
  for (const policy of TEST_SELECTION_POLICIES) {
    if (!registry.get(policy.name)) registry.register(policy);
  }
}
