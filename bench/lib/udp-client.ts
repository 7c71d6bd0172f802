/**
 * A minimal UDP DNS client built on the project's codec (src/dns/message.ts), for polling a server
 * without the cost of spawning dig for every probe.
 */
import dgram from 'node:dgram';
import { decodeMessage, encodeMessage, type Message, queryMessage } from '../../src/dns/message.ts';
import { printRdata, type Rdata } from '../../src/dns/rdata.ts';
import { RRType } from '../../src/dns/rrtype.ts';

export interface UdpAnswer {
  rcode: number;
  /** `owner ttl IN TYPE rdata`, lowercase, for the records of the answer section. */
  answer: string[];
  ms: number;
}

const TYPE_NAMES = new Map<number, string>(Object.entries(RRType).map(([name, code]) => [code, name]));

export class UdpClient {
  private readonly socket = dgram.createSocket('udp4');
  private readonly pending = new Map<number, (msg: Message) => void>();
  private nextId = Math.floor(Math.random() * 65536);
  private readonly ready: Promise<void>;
  private readonly port: number;
  private readonly host: string;

  constructor(port: number, host = '127.0.0.1') {
    this.port = port;
    this.host = host;
    this.socket.on('message', (buf) => {
      let msg: Message;
      try {
        msg = decodeMessage(buf);
      } catch {
        return;
      }
      const resolve = this.pending.get(msg.id);
      if (resolve) {
        this.pending.delete(msg.id);
        resolve(msg);
      }
    });
    this.socket.on('error', () => {});
    this.ready = new Promise((resolve) => this.socket.bind(0, '127.0.0.1', () => resolve()));
  }

  /** One query; undefined on timeout. */
  async query(name: string, type: string, timeoutMs = 500): Promise<UdpAnswer | undefined> {
    await this.ready;
    const code = (RRType as Record<string, number>)[type];
    if (code === undefined) throw new Error(`unknown type ${type}`);
    this.nextId = (this.nextId + 1) & 0xffff;
    const id = this.nextId;
    const bytes = encodeMessage(queryMessage(name, code, { id }));
    const started = performance.now();
    const reply = await new Promise<Message | undefined>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(undefined);
      }, timeoutMs);
      this.pending.set(id, (msg) => {
        clearTimeout(timer);
        resolve(msg);
      });
      this.socket.send(bytes, this.port, this.host);
    });
    if (!reply) return undefined;
    const ms = performance.now() - started;
    const answer = reply.answers.map((rr) => {
      const typeName = TYPE_NAMES.get(rr.type) ?? `TYPE${rr.type}`;
      const data = typeof rr.data.type === 'string' ? printRdata(rr.data as Rdata) : '?';
      return `${rr.name} ${rr.ttl} IN ${typeName} ${data}`.toLowerCase();
    });
    return { rcode: reply.rcode, answer: answer.sort(), ms };
  }

  close(): void {
    this.pending.clear();
    this.socket.close();
  }
}
