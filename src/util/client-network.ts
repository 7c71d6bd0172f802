import net from 'node:net';

/**
 * The network a client's connections are counted under (DNS over TCP, RFC 7766 §6.2.2; the HTTP
 * listeners): its IPv4 address (an IPv4-mapped IPv6 address counts as the IPv4 one), or the /64 of
 * its IPv6 address, which a single host or site usually holds whole. Undefined for no address (the
 * socket is closed already).
 */
export function clientNetworkKey(address: string | undefined): string | undefined {
  if (address === undefined || address === '') return undefined;
  if (net.isIPv4(address)) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return mapped;
  const text = address.split('%')[0]!;
  if (!net.isIPv6(text)) return address; // not an address we read: counted as it is
  const gap = text.indexOf('::');
  const head = (gap < 0 ? text : text.slice(0, gap)).split(':').filter((g) => g !== '');
  const groups = head.slice(0, 4);
  // `::` stands for the zero groups up to the tail; only the first four groups matter here.
  if (groups.length < 4 && gap >= 0) {
    const tail = text
      .slice(gap + 2)
      .split(':')
      .filter((g) => g !== '');
    const tailCount = tail.length + (tail.at(-1)?.includes('.') ? 1 : 0);
    const zeros = 8 - head.length - tailCount;
    for (let i = 0; i < zeros && groups.length < 4; i++) groups.push('0');
    for (const g of tail) if (groups.length < 4) groups.push(g);
  }
  return `${groups.map((g) => Number.parseInt(g, 16).toString(16)).join(':')}::/64`;
}

/** A connection as `ConnectionsPerClient` sees it: where it comes from, and when it closes. */
export interface ClientConnection {
  readonly remoteAddress?: string | undefined;
  once(event: 'close', listener: () => void): unknown;
}

/**
 * Connections held at once per client (`clientNetworkKey`), for a per-client cap (DNS over TCP,
 * RFC 7766 §6.2.2; the HTTP listeners): `admit` counts a connection until it closes, or says why it
 * may not be held; the caller closes it then.
 */
export class ConnectionsPerClient {
  private readonly held = new Map<string, number>();
  private readonly limit: number;

  /** `limit`: connections one client may hold; 0 or less for no limit (nothing is counted then). */
  constructor(limit: number) {
    this.limit = limit;
  }

  /**
   * `admitted` (counted until it closes), `over-limit` (its client holds `limit` already), or
   * `closed` (no address: it closed before it was seen).
   */
  admit(connection: ClientConnection): 'admitted' | 'over-limit' | 'closed' {
    if (this.limit <= 0) return 'admitted';
    const key = clientNetworkKey(connection.remoteAddress);
    if (key === undefined) return 'closed';
    const held = this.held.get(key) ?? 0;
    if (held >= this.limit) return 'over-limit';
    this.held.set(key, held + 1);
    connection.once('close', () => {
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
    });
    return 'admitted';
  }

  /** Clients holding a connection (for tests and diagnostics). */
  get clients(): number {
    return this.held.size;
  }
}
