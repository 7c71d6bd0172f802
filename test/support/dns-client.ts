import dgram from 'node:dgram';
import net from 'node:net';
import { decodeMessage, type Message } from '../../src/dns/message.ts';
import { encodeNameUncompressed, parseName } from '../../src/dns/name.ts';

/** What goes into a query built by `buildQuery`. */
export interface QuerySpec {
  id?: number;
  /**
   * Presentation-format name (absolute or not; a trailing dot is added). Letter case and `\DDD` / `\.`
   * escapes are kept exactly as written, so mixed-case (0x20) names go on the wire as given.
   */
  name: string;
  type: number;
  /** Default: IN (1). */
  class?: number;
  /** Default: QUERY (0). */
  opcode?: number;
  rd?: boolean;
  ad?: boolean;
  cd?: boolean;
  /** An OPT pseudo-RR (RFC 6891 §6.1.2) in the additional section; absent: no EDNS. */
  edns?: {
    udpSize: number;
    version?: number;
    dnssecOk?: boolean;
    options?: { code: number; data: Uint8Array }[];
  };
}

/**
 * Builds a query byte by byte (no compression, nothing normalised): header, one question and the
 * optional OPT. Tests that need malformed queries start from these bytes and damage them.
 */
export function buildQuery(spec: QuerySpec): Uint8Array {
  const text = spec.name.endsWith('.') ? spec.name : `${spec.name}.`;
  // parseName keeps the case of every letter; the wire form is the exact octets of each label.
  const qname = encodeNameUncompressed(parseName(text));
  const parts: number[] = [];
  const u16 = (v: number) => parts.push((v >>> 8) & 0xff, v & 0xff);
  let flags = (spec.opcode ?? 0) << 11;
  if (spec.rd) flags |= 0x0100;
  if (spec.ad) flags |= 0x0020;
  if (spec.cd) flags |= 0x0010;
  u16(spec.id ?? Math.floor(Math.random() * 0x10000));
  u16(flags);
  u16(1);
  u16(0);
  u16(0);
  u16(spec.edns ? 1 : 0);
  parts.push(...qname);
  u16(spec.type);
  u16(spec.class ?? 1);
  if (spec.edns) {
    const e = spec.edns;
    parts.push(0); // root owner
    u16(41);
    u16(e.udpSize);
    parts.push(0, e.version ?? 0); // extended rcode, version
    u16(e.dnssecOk ? 0x8000 : 0);
    const options = e.options ?? [];
    u16(options.reduce((n, o) => n + 4 + o.data.length, 0));
    for (const o of options) {
      u16(o.code);
      u16(o.data.length);
      parts.push(...o.data);
    }
  }
  return Uint8Array.from(parts);
}

export interface DnsExchange {
  /** The response octets; undefined when nothing came back within the timeout. */
  raw?: Uint8Array;
  /** The decoded response, when `decodeMessage` could read it. */
  message?: Message;
  /** Why decoding failed. */
  decodeError?: string;
}

export interface SendOptions {
  tcp?: boolean;
  /** Default 2000 ms. */
  timeoutMs?: number;
  host?: string;
}

/** Sends one query to host:port over UDP or TCP (RFC 7766 two-octet framing) and waits for the reply. */
export async function exchange(
  port: number,
  query: Uint8Array,
  options: SendOptions = {},
): Promise<DnsExchange> {
  const raw = options.tcp ? await sendTcp(port, query, options) : await sendUdp(port, query, options);
  if (!raw) return {};
  try {
    return { raw, message: decodeMessage(raw) };
  } catch (e) {
    return { raw, decodeError: (e as Error).message };
  }
}

function sendUdp(port: number, query: Uint8Array, options: SendOptions): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket('udp4');
    const id = (query[0]! << 8) | query[1]!;
    const timer = setTimeout(() => finish(undefined), options.timeoutMs ?? 2000);
    const finish = (value: Uint8Array | undefined, error?: Error) => {
      clearTimeout(timer);
      socket.close();
      if (error) reject(error);
      else resolve(value);
    };
    socket.on('message', (msg) => {
      // Only the reply to this query: same ID (a stray datagram would otherwise be taken as the answer).
      if (msg.length >= 2 && ((msg[0]! << 8) | msg[1]!) === id) finish(new Uint8Array(msg));
    });
    socket.on('error', (e) => finish(undefined, e));
    socket.send(query, port, options.host ?? '127.0.0.1');
  });
}

function sendTcp(port: number, query: Uint8Array, options: SendOptions): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: options.host ?? '127.0.0.1', noDelay: true });
    let buffer = Buffer.alloc(0);
    const timer = setTimeout(() => finish(undefined), options.timeoutMs ?? 2000);
    let done = false;
    const finish = (value: Uint8Array | undefined, error?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(value);
    };
    socket.on('connect', () => {
      const frame = Buffer.alloc(2 + query.length);
      frame.writeUInt16BE(query.length, 0);
      frame.set(query, 2);
      socket.write(frame);
    });
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (buffer.length >= 2 && buffer.length >= 2 + buffer.readUInt16BE(0)) {
        finish(new Uint8Array(buffer.subarray(2, 2 + buffer.readUInt16BE(0))));
      }
    });
    // A server that closes without answering (e.g. on a malformed query) is "no response".
    socket.on('close', () => finish(undefined));
    socket.on('error', (e) => {
      if ((e as NodeJS.ErrnoException).code === 'ECONNRESET') finish(undefined);
      else finish(undefined, e);
    });
  });
}

/**
 * The question section exactly as it is on the wire (QNAME octets, QTYPE, QCLASS), or undefined when the
 * message has no question or it cannot be read. Used to check that a response echoes the query's
 * question byte for byte (case included, RFC 1035 §7.1 and the 0x20 technique).
 */
export function rawQuestion(message: Uint8Array): Uint8Array | undefined {
  if (message.length < 12 || ((message[4]! << 8) | message[5]!) === 0) return undefined;
  let pos = 12;
  for (;;) {
    const len = message[pos];
    if (len === undefined || (len & 0xc0) !== 0) return undefined; // a pointer would not be "as asked"
    pos += 1 + len;
    if (len === 0) break;
  }
  if (pos + 4 > message.length) return undefined;
  return message.subarray(12, pos + 4);
}
