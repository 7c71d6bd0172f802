/**
 * DNS look-ups for Domain verification: TXT and address records through the configured recursive
 * resolver, and the delegation a domain's parent publishes (RFC 1034 §4.3.2: a referral's authority
 * section), asked of the parent's own servers without recursion.
 */
import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import { decodeMessage, encodeMessage, type Message, queryMessage, Rcode } from '../dns/message.ts';
import { nameEquals, parentName, parseName } from '../dns/name.ts';
import type { Rdata } from '../dns/rdata.ts';
import { RRType } from '../dns/rrtype.ts';
import { splitHostPort } from '../util/host-port.ts';
import { challengeAddressAllowed, type Network } from '../zones/domain-verification.ts';
import { domainText } from '../zones/zone-name-servers.ts';

export interface DnsLookupOptions {
  /** `host:port` of the recursive resolver (default 127.0.0.1:53). */
  resolver?: string;
  /** Per query (default 2 s). */
  timeoutMs?: number;
  /** The port the parent zone's servers are asked on (default 53; tests run them elsewhere). */
  delegationPort?: number;
  /**
   * Networks the parent zone's servers may be asked in although blocked by default (the HTTP
   * challenge's guard: private, loopback, link-local, metadata); the resolver itself is not guarded.
   */
  allow?: readonly Network[];
}

/** Queries to the parent zone's servers per delegation look-up at most (each with its own timeout). */
export const MAX_DELEGATION_QUERIES = 6;
/**
 * The parent zone's servers whose addresses are looked up per delegation look-up at most (two
 * queries to the resolver each, each with its own timeout): the parent's NS RRset may be the
 * tenant's, with as many names as it likes.
 */
export const MAX_DELEGATION_SERVERS = 8;

/** The absolute form of a name written with or without its trailing dot. */
function fqdn(name: string): string {
  const text = domainText(name);
  return text === '' ? '.' : parseName(`${text}.`);
}

export class LookupError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export type TxtResult = { kind: 'found'; values: string[] } | { kind: 'none'; rcode: number };

const RCODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(Rcode).map(([name, code]) => [code, name]),
);

export function rcodeName(rcode: number): string {
  return RCODE_NAMES[rcode] ?? String(rcode);
}

export class DnsLookup {
  readonly resolver: { host: string; port: number };
  private readonly timeoutMs: number;
  private readonly delegationPort: number;
  private readonly allow: readonly Network[];

  constructor(options: DnsLookupOptions = {}) {
    this.resolver = splitHostPort(options.resolver ?? '127.0.0.1:53');
    this.timeoutMs = options.timeoutMs ?? 2000;
    this.delegationPort = options.delegationPort ?? 53;
    this.allow = options.allow ?? [];
  }

  /** The TXT strings at `name` (each record's strings joined, RFC 7208 §3.3 style). */
  async txt(name: string): Promise<TxtResult> {
    const reply = await this.recursive(name, RRType.TXT);
    if (reply.rcode !== Rcode.NOERROR && reply.rcode !== Rcode.NXDOMAIN)
      throw new LookupError(
        'RESOLVER_FAILED',
        `the resolver answered ${rcodeName(reply.rcode)} for TXT ${domainText(name)}`,
      );
    const values = reply.answers
      .filter((rr) => rr.type === RRType.TXT)
      .map((rr) => (rr.data as Extract<Rdata, { type: 'TXT' }>).strings.join(''));
    return values.length > 0 ? { kind: 'found', values } : { kind: 'none', rcode: reply.rcode };
  }

  /** The IPv4 and IPv6 addresses of a host, following the resolver's CNAME chain. */
  async addresses(host: string): Promise<string[]> {
    const out: string[] = [];
    for (const type of [RRType.A, RRType.AAAA]) {
      const reply = await this.recursive(host, type);
      for (const rr of reply.answers)
        if (rr.type === type) out.push((rr.data as Extract<Rdata, { type: 'A' | 'AAAA' }>).address);
    }
    return out;
  }

  /**
   * The name servers a domain's parent zone delegates it to, lowercase without trailing dots: the
   * parent zone is found by asking the resolver for NS records from the parent name upwards, its
   * servers' addresses through the resolver, and then one of them, without recursion, for the
   * domain's NS records (a referral, or an answer when it also serves the domain). Empty when the
   * parent says the name does not exist or is not delegated.
   */
  async delegation(domain: string): Promise<string[]> {
    const name = fqdn(domain);
    const parent = await this.parentZone(name);
    // The parent's servers are named by whoever runs the parent zone — for a name below a tenant's
    // own domain, the tenant: they are asked only at addresses the guard allows, a few at most, and
    // what went wrong is told by a stable code per server, never the address or the socket's error.
    const errors: string[] = [];
    let queries = 0;
    let lookups = 0;
    for (const server of [...parent.servers].sort()) {
      if (queries >= MAX_DELEGATION_QUERIES || lookups >= MAX_DELEGATION_SERVERS) {
        errors.push(`${parent.servers.length} servers, only ${lookups} asked (DELEGATION_QUERY_LIMIT)`);
        break;
      }
      lookups++;
      let addresses: string[];
      try {
        addresses = await this.addresses(server);
      } catch (e) {
        errors.push(`${server}: ${e instanceof LookupError ? e.code : 'LOOKUP_FAILED'}`);
        continue;
      }
      const allowed = addresses.filter((a) => challengeAddressAllowed(a, this.allow));
      if (allowed.length === 0) {
        errors.push(`${server}: ${addresses.length === 0 ? 'NO_ADDRESS' : 'ADDRESS_NOT_ALLOWED'}`);
        continue;
      }
      for (const address of allowed) {
        if (queries >= MAX_DELEGATION_QUERIES) break;
        queries++;
        try {
          const reply = await this.ask({ host: address, port: this.delegationPort }, name, RRType.NS, false);
          if (reply.rcode === Rcode.NXDOMAIN) return [];
          if (reply.rcode !== Rcode.NOERROR) {
            errors.push(`${server}: ${rcodeName(reply.rcode)}`);
            continue;
          }
          const ns = [...reply.authority, ...reply.answers]
            .filter((rr) => rr.type === RRType.NS && nameEquals(rr.name, name))
            .map((rr) => domainText((rr.data as Extract<Rdata, { type: 'NS' }>).host));
          return [...new Set(ns)].sort();
        } catch (e) {
          errors.push(`${server}: ${e instanceof LookupError ? e.code : 'NO_ANSWER'}`);
        }
      }
    }
    throw new LookupError(
      'PARENT_UNREACHABLE',
      `no server of ${domainText(parent.zone) || '.'} answered for ${domainText(name)}: ${errors.join('; ') || 'none has an address'}`,
    );
  }

  /** The nearest enclosing zone above `name` that has NS records, and those servers. */
  private async parentZone(name: string): Promise<{ zone: string; servers: string[] }> {
    for (let candidate = parentName(name); ; candidate = parentName(candidate)) {
      const reply = await this.recursive(candidate, RRType.NS);
      const servers = reply.answers
        .filter((rr) => rr.type === RRType.NS && nameEquals(rr.name, candidate))
        .map((rr) => domainText((rr.data as Extract<Rdata, { type: 'NS' }>).host));
      if (reply.rcode === Rcode.NOERROR && servers.length > 0) return { zone: candidate, servers };
      if (candidate === '.')
        throw new LookupError('NO_PARENT', `the resolver knows no zone above ${domainText(name)}`);
    }
  }

  private async recursive(name: string, type: number): Promise<Message> {
    return this.ask(this.resolver, fqdn(name), type, true);
  }

  /** One query: UDP, then TCP when truncated (RFC 7766 §5). */
  async ask(
    server: { host: string; port: number },
    name: string,
    type: number,
    rd: boolean,
  ): Promise<Message> {
    const id = randomInt(0, 65536);
    const bytes = encodeMessage(
      queryMessage(name, type, {
        id,
        rd,
        edns: { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: false, options: [] },
      }),
    );
    const reply = await this.udp(server, bytes, id, name, type);
    return reply.tc ? this.tcp(server, bytes, id) : reply;
  }

  private udp(
    server: { host: string; port: number },
    bytes: Uint8Array,
    id: number,
    name: string,
    type: number,
  ): Promise<Message> {
    return new Promise((resolve, reject) => {
      const socket = dgram.createSocket(net.isIPv6(server.host) ? 'udp6' : 'udp4');
      const timer = setTimeout(
        () =>
          done(
            new LookupError(
              'TIMEOUT',
              `no answer from ${server.host}:${server.port} within ${this.timeoutMs} ms`,
            ),
          ),
        this.timeoutMs,
      );
      const done = (error?: Error, message?: Message) => {
        clearTimeout(timer);
        socket.close();
        if (error) reject(error);
        else resolve(message!);
      };
      socket.on('error', (e) => done(e));
      socket.on('message', (data) => {
        try {
          const m = decodeMessage(data);
          const q = m.questions[0];
          if (m.id === id && m.qr && q && q.type === type && nameEquals(q.name, name)) done(undefined, m);
        } catch {
          // not an answer to this query; wait for one until the timeout
        }
      });
      socket.send(bytes, server.port, server.host);
    });
  }

  private tcp(server: { host: string; port: number }, bytes: Uint8Array, id: number): Promise<Message> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: server.host, port: server.port });
      const chunks: Buffer[] = [];
      const timer = setTimeout(
        () => socket.destroy(new LookupError('TIMEOUT', `no answer over TCP within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      socket.on('connect', () => {
        // RFC 1035 §4.2.2: over TCP a message is preceded by its length in two octets.
        const frame = Buffer.allocUnsafe(2 + bytes.length);
        frame.writeUInt16BE(bytes.length, 0);
        frame.set(bytes, 2);
        socket.write(frame);
      });
      socket.on('data', (chunk) => {
        chunks.push(chunk);
        const all = Buffer.concat(chunks);
        if (all.length < 2 || all.length < 2 + all.readUInt16BE(0)) return;
        clearTimeout(timer);
        socket.destroy();
        try {
          const m = decodeMessage(all.subarray(2, 2 + all.readUInt16BE(0)));
          if (m.id !== id) throw new LookupError('BAD_ANSWER', 'the answer over TCP has another ID');
          resolve(m);
        } catch (e) {
          reject(e);
        }
      });
      socket.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }
}
