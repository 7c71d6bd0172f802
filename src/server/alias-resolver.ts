import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import { decodeMessage, encodeMessage, type Message, queryMessage, Rcode } from '../dns/message.ts';
import { type Name, nameEquals, nameKey } from '../dns/name.ts';
import type { Rdata } from '../dns/rdata.ts';
import { RRType } from '../dns/rrtype.ts';
import { splitHostPort } from '../util/host-port.ts';
import { answerQuery, Outcome } from './answer.ts';
import { tcpFrame } from './tcp-frame.ts';
import type { ServedZone, ZoneTable } from './zone-table.ts';

export type AliasResult =
  | { kind: 'ok'; rdata: Rdata[]; ttl: number }
  | { kind: 'nodata'; ttl: number }
  | { kind: 'fail' };

export interface AliasResolver {
  resolve(target: Name, qtype: number): Promise<AliasResult>;
}

export interface ZoneAliasResolverOptions {
  /** `host:port` of a recursive resolver, e.g. `127.0.0.1:5300`; without one only in-zone targets resolve. */
  upstream?: string;
  table: ZoneTable<ServedZone>;
  timeoutMs?: number;
  /** Entries kept at most; the oldest are evicted first. */
  maxEntries?: number;
  now?: () => number;
}

const NEGATIVE_TTL_CAP = 300;
/**
 * Longest time an upstream's answer is kept. The upstream's TTL is taken up to this: an answer that
 * got in anyway is not served for the TTL its sender chose (RFC 2181 §8 allows TTLs of 68 years).
 */
export const POSITIVE_TTL_CAP = 3600;

/**
 * Resolves ALIAS targets to A/AAAA. Targets inside the zones served are answered from our own data;
 * others are asked of the configured resolver and cached for the answer's TTL (at most an hour;
 * negative answers for the SOA minimum, at most 5 minutes). Concurrent lookups of the same target
 * share one query. An answer is taken only from the resolver's address and port, with the query's
 * ID and the query's question (RFC 5452 §4.3, §9.1): what others send to the query's port is
 * dropped, so a forged answer needs a spoofed source address as well as the port and the ID.
 */
export class ZoneAliasResolver implements AliasResolver {
  private readonly upstream: { host: string; port: number } | undefined;
  private readonly table: ZoneTable<ServedZone>;
  private readonly timeoutMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly cache = new Map<string, { expires: number; result: AliasResult }>();
  private readonly inflight = new Map<string, Promise<AliasResult>>();

  constructor(options: ZoneAliasResolverOptions) {
    this.upstream = options.upstream === undefined ? undefined : splitHostPort(options.upstream);
    this.table = options.table;
    this.timeoutMs = options.timeoutMs ?? 2000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  async resolve(target: Name, qtype: number): Promise<AliasResult> {
    const local = this.fromOwnZones(target, qtype);
    if (local) return local;
    if (!this.upstream) return { kind: 'fail' };
    const key = `${nameKey(target)}/${qtype}`;
    const cached = this.cache.get(key);
    if (cached && cached.expires > this.now()) return cached.result;
    const pending = this.inflight.get(key);
    if (pending) return pending;
    const lookup = this.ask(target, qtype).finally(() => this.inflight.delete(key));
    this.inflight.set(key, lookup);
    const result = await lookup;
    if (result.kind !== 'fail') {
      if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, { expires: this.now() + result.ttl * 1000, result });
    }
    return result;
  }

  private fromOwnZones(target: Name, qtype: number): AliasResult | undefined {
    const answer = answerQuery(this.table, target, qtype);
    if (
      answer.outcome === Outcome.Refused ||
      answer.outcome === Outcome.Referral ||
      answer.outcome === Outcome.Alias
    ) {
      return undefined;
    }
    const last = answer.answer.at(-1);
    if (answer.outcome === Outcome.Answer && last && last.type === qtype) {
      const ttl = Math.min(...answer.answer.map((r) => r.ttl));
      return { kind: 'ok', rdata: last.rdata, ttl };
    }
    if (answer.outcome === Outcome.Answer) return undefined; // CNAME out of our zones: ask upstream
    return { kind: 'nodata', ttl: answer.authority[0]?.ttl ?? 60 };
  }

  private async ask(target: Name, qtype: number): Promise<AliasResult> {
    const id = randomInt(0, 65536);
    const query = queryMessage(target, qtype, {
      id,
      rd: true,
      edns: { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: false, options: [] },
    });
    const bytes = encodeMessage(query);
    const answers = (message: Message) => message.id === id && message.qr && asked(message, target, qtype);
    try {
      let response = await this.udp(bytes, answers);
      if (response.tc) response = await this.tcp(bytes, answers);
      return interpret(response, target, qtype);
    } catch {
      return { kind: 'fail' };
    }
  }

  private udp(bytes: Uint8Array, answers: (message: Message) => boolean): Promise<Message> {
    const { host, port } = this.upstream!;
    return new Promise((resolve, reject) => {
      // A socket of its own per query (a random source port, RFC 5452 §9.2), connected to the
      // resolver: the kernel drops datagrams from any other address or port (RFC 5452 §4.3).
      const socket = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
      let settled = false;
      const timer = setTimeout(() => done(new Error('timeout')), this.timeoutMs);
      const done = (error?: Error, message?: Message) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.close();
        if (error) reject(error);
        else resolve(message!);
      };
      socket.on('error', (e) => done(e));
      socket.on('message', (msg, from) => {
        let upstream: string;
        try {
          upstream = socket.remoteAddress().address;
        } catch {
          return; // before the connect completed: from no one we asked
        }
        if (from.port !== port || from.address !== upstream) return;
        try {
          const message = decodeMessage(msg);
          if (answers(message)) done(undefined, message);
        } catch {
          // not a valid answer to us; keep waiting until the timeout
        }
      });
      socket.connect(port, host, () => {
        if (!settled) socket.send(bytes);
      });
    });
  }

  private tcp(bytes: Uint8Array, answers: (message: Message) => boolean): Promise<Message> {
    const { host, port } = this.upstream!;
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port });
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => socket.destroy(new Error('timeout')), this.timeoutMs);
      socket.on('connect', () => socket.write(tcpFrame(bytes)));
      socket.on('data', (chunk) => {
        chunks.push(chunk);
        const all = Buffer.concat(chunks);
        if (all.length >= 2 && all.length >= 2 + all.readUInt16BE(0)) {
          clearTimeout(timer);
          socket.destroy();
          try {
            const message = decodeMessage(all.subarray(2, 2 + all.readUInt16BE(0)));
            if (!answers(message)) throw new Error('not an answer to the query (ID or question)');
            resolve(message);
          } catch (e) {
            reject(e);
          }
        }
      });
      socket.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }
}

/** Whether a response's question is the one asked (RFC 5452 §9.1): one question, same name, type, class. */
function asked(message: Message, target: Name, qtype: number): boolean {
  const question = message.questions[0];
  return (
    message.questions.length === 1 &&
    question !== undefined &&
    question.type === qtype &&
    question.class === 1 &&
    nameEquals(question.name, target)
  );
}

/** An upstream TTL as kept: one with its top bit set counts as 0 (RFC 2181 §8), at most POSITIVE_TTL_CAP. */
function keptTtl(ttl: number): number {
  return ttl > 0x7fffffff ? 0 : Math.min(ttl, POSITIVE_TTL_CAP);
}

/** Follows the CNAME chain in the answer section and collects the records of the asked type. */
function interpret(response: Message, target: Name, qtype: number): AliasResult {
  if (response.rcode === Rcode.NXDOMAIN) return { kind: 'nodata', ttl: negativeTtl(response) };
  if (response.rcode !== Rcode.NOERROR) return { kind: 'fail' };
  let name = target;
  let ttl = Number.POSITIVE_INFINITY;
  for (let hop = 0; hop < 16; hop++) {
    const matches = response.answers.filter((rr) => nameEquals(rr.name, name) && rr.type === qtype);
    if (matches.length > 0) {
      for (const rr of matches) ttl = Math.min(ttl, keptTtl(rr.ttl));
      return { kind: 'ok', rdata: matches.map((rr) => rr.data as Rdata), ttl };
    }
    const cname = response.answers.find((rr) => nameEquals(rr.name, name) && rr.type === RRType.CNAME);
    if (!cname) break;
    ttl = Math.min(ttl, keptTtl(cname.ttl));
    name = (cname.data as Extract<Rdata, { type: 'CNAME' }>).target;
  }
  return { kind: 'nodata', ttl: negativeTtl(response) };
}

function negativeTtl(response: Message): number {
  const soa = response.authority.find((rr) => rr.type === RRType.SOA);
  if (!soa) return 60;
  const minimum = (soa.data as Extract<Rdata, { type: 'SOA' }>).minimum;
  return Math.min(soa.ttl, minimum, NEGATIVE_TTL_CAP);
}
