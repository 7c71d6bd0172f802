import net from 'node:net';
import type { Name } from '../../dns/name.ts';
import type { Rdata } from '../../dns/rdata.ts';
import type { ClientSubnet } from '../query.ts';
import type { ServedRRset } from '../zone-snapshot.ts';

/**
 * What a selection policy sees of one query: the question, the zone of the binding, where the query
 * came from, and the EDNS Client Subnet option when the query carried one (RFC 7871 §6).
 */
export interface SelectionQuery {
  qname: Name;
  qtype: number;
  /** Origin of the zone the binding belongs to. */
  zone: Name;
  /** The transport's source address (UDP datagram or TCP peer); undefined when not known. */
  client: string | undefined;
  clientSubnet: ClientSubnet | undefined;
}

/**
 * What a policy answers for one RRset and one query: `'all'` — the whole RRset, and the answer does
 * not depend on the client's subnet — or the records to answer with (elements of the RRset's `rdata`),
 * with `scope`: the prefix length of the client networks this choice holds for (RFC 7871 §7.2.1: the
 * SCOPE PREFIX-LENGTH answered to a query with Client Subnet; 0 or undefined: any client).
 * An empty `rdata` is answered as the whole RRset: the hook never answers an RRset without records by
 * accident. `'none'` leaves the RRset out on purpose (answer steering's `whenAllDown: None`): when
 * nothing is left in the answer section, the response is a NODATA with the zone's SOA (RFC 2308 §2.2).
 */
export type Selection = 'all' | 'none' | { rdata: readonly Rdata[]; scope?: number };

/**
 * A way of choosing records per query, registered once by name (`SelectionPolicies`). `prepare`
 * checks and compiles a binding's data when the binding arrives in a DNS process (once, not per
 * query) and throws `SelectionError` when the data is unusable; `select` runs for every query whose
 * answer section holds the bound RRset, so it must be quick and must not throw (a throw is answered
 * as `'all'` and counted).
 */
export interface SelectionPolicy<Prepared = unknown> {
  readonly name: string;
  prepare(data: unknown): Prepared;
  select(rrset: ServedRRset, prepared: Prepared, query: SelectionQuery): Selection;
}

/** A selection binding or policy that cannot be used; `code` is stable, the message says what to fix. */
export class SelectionError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'SelectionError';
    this.code = code;
  }
}

/** The client's network as the policy should see it: address octets and how many leading bits count. */
export interface ClientNetwork {
  family: 1 | 2;
  /** 4 octets for IPv4, 16 for IPv6; bits beyond `prefix` are zero. */
  address: Uint8Array;
  prefix: number;
}

/**
 * The network a query speaks for: the Client Subnet option when present (RFC 7871 §7.2.1), else the
 * transport's source address as a whole /32 or /128 (IPv4-mapped IPv6 addresses count as IPv4).
 * Undefined when neither is known.
 */
export function clientNetwork(query: SelectionQuery): ClientNetwork | undefined {
  const subnet = query.clientSubnet;
  if (subnet) {
    const address = new Uint8Array(subnet.family === 1 ? 4 : 16);
    address.set(subnet.address.subarray(0, address.length));
    return { family: subnet.family, address, prefix: subnet.sourcePrefix };
  }
  const client = query.client;
  if (client === undefined) return undefined;
  const mapped = client.startsWith('::ffff:') && net.isIPv4(client.slice(7)) ? client.slice(7) : client;
  if (net.isIPv4(mapped)) {
    return { family: 1, address: Uint8Array.from(mapped.split('.').map(Number)), prefix: 32 };
  }
  if (!net.isIPv6(mapped)) return undefined;
  return { family: 2, address: ipv6Octets(mapped), prefix: 128 };
}

/** Whether `network` lies inside `within` (same family, at least as long a prefix, same leading bits). */
export function networkWithin(network: ClientNetwork, within: ClientNetwork): boolean {
  if (network.family !== within.family || network.prefix < within.prefix) return false;
  const whole = within.prefix >> 3;
  for (let i = 0; i < whole; i++) if (network.address[i] !== within.address[i]) return false;
  const bits = within.prefix & 7;
  if (bits === 0) return true;
  const mask = (0xff << (8 - bits)) & 0xff;
  return (network.address[whole]! & mask) === (within.address[whole]! & mask);
}

/** A network in CIDR notation (`192.0.2.0/24`, `2001:db8::/32`), or undefined when it is not one. */
export function parseNetwork(text: string): ClientNetwork | undefined {
  const slash = text.indexOf('/');
  if (slash < 0 || !/^\d{1,3}$/.test(text.slice(slash + 1))) return undefined;
  const host = text.slice(0, slash);
  const prefix = Number(text.slice(slash + 1));
  const family = net.isIPv4(host) ? 1 : net.isIPv6(host) ? 2 : undefined;
  if (family === undefined || prefix > (family === 1 ? 32 : 128)) return undefined;
  const address = family === 1 ? Uint8Array.from(host.split('.').map(Number)) : ipv6Octets(host);
  // Clear the host bits, so that equal networks compare equal.
  for (let bit = prefix; bit < address.length * 8; bit++) address[bit >> 3]! &= ~(0x80 >> (bit & 7));
  return { family, address, prefix };
}

/** The 16 octets of an IPv6 address already checked with `net.isIPv6` (a zone index is ignored). */
function ipv6Octets(address: string): Uint8Array {
  const text = address.split('%')[0]!;
  const words = (part: string): number[] => {
    const out: number[] = [];
    if (part === '') return out;
    for (const group of part.split(':')) {
      if (group.includes('.')) {
        const [a, b, c, d] = group.split('.').map(Number);
        out.push((a! << 8) | b!, (c! << 8) | d!);
      } else out.push(Number.parseInt(group, 16));
    }
    return out;
  };
  const gap = text.indexOf('::');
  const front = words(gap < 0 ? text : text.slice(0, gap));
  const back = gap < 0 ? [] : words(text.slice(gap + 2));
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    out[2 * i] = all[i]! >> 8;
    out[2 * i + 1] = all[i]! & 0xff;
  }
  return out;
}
