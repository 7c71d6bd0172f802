import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import { decodeMessage, encodeMessage, Opcode, queryMessage, Rcode } from '../../dns/message.ts';
import type { Rdata } from '../../dns/rdata.ts';
import { RRClass, RRType } from '../../dns/rrtype.ts';
import { signMessage, type TsigKey, verifyMessage } from '../../dns/tsig.ts';
import type { Counter, Registry } from '../../metrics/registry.ts';
import type { ServedRRset } from '../zone-snapshot.ts';

export interface NotifyTarget {
  host: string;
  port: number;
  key?: TsigKey;
}

export interface NotifierOptions {
  registry?: Registry;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** Delays between attempts; the number of attempts is one more than this. */
  retryDelaysMs?: readonly number[];
  timeoutMs?: number;
}

/**
 * Sends NOTIFY (RFC 1996) to a zone's secondaries when its serial changes: over UDP, with the SOA in
 * the question and the new SOA serial in the answer section (§3.7), signed with TSIG when the target
 * has a key, retried with backoff until the secondary answers NOERROR (§3.6). A newer serial for the
 * same zone and target supersedes retries of an older one.
 */
export class Notifier {
  private readonly options: Required<Omit<NotifierOptions, 'registry' | 'log'>> &
    Pick<NotifierOptions, 'log'>;
  private readonly results?: Counter;
  private readonly latest = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();

  constructor(options: NotifierOptions = {}) {
    this.options = { retryDelaysMs: [1000, 2000, 4000, 8000, 16000], timeoutMs: 1000, ...options };
    this.results = options.registry?.counter(
      'zonekeeper_notify_total',
      'NOTIFY messages sent to secondaries, by result.',
      ['result'],
    );
  }

  notify(soa: ServedRRset, targets: readonly NotifyTarget[]): void {
    const origin = soa.owner;
    const serial = (soa.rdata[0] as Extract<Rdata, { type: 'SOA' }>).serial;
    for (const target of targets) {
      const id = `${origin.toLowerCase()} ${target.host}:${target.port}`;
      // The same serial already being delivered (e.g. the zone re-applied unchanged): nothing to add.
      if (this.latest.get(id) === serial && this.inFlight.has(id)) continue;
      this.latest.set(id, serial);
      void this.deliver(id, soa, serial, target);
    }
  }

  /** Deliveries still trying (the target has not acknowledged yet); for tests and shutdown. */
  get pending(): number {
    let n = 0;
    for (const count of this.inFlight.values()) n += count;
    return n;
  }

  private async deliver(id: string, soa: ServedRRset, serial: number, target: NotifyTarget): Promise<void> {
    this.inFlight.set(id, (this.inFlight.get(id) ?? 0) + 1);
    try {
      await this.attempts(id, soa, serial, target);
    } finally {
      const left = (this.inFlight.get(id) ?? 1) - 1;
      if (left > 0) this.inFlight.set(id, left);
      else this.inFlight.delete(id);
    }
  }

  private async attempts(id: string, soa: ServedRRset, serial: number, target: NotifyTarget): Promise<void> {
    const origin = soa.owner;
    const delays = this.options.retryDelaysMs;
    for (let attempt = 0; attempt <= delays.length; attempt++) {
      if (this.latest.get(id) !== serial) return; // superseded by a newer serial
      const outcome = await this.once(soa, target).catch((e: Error) => e.message);
      if (outcome === 'ok') {
        this.results?.labels('ok').inc();
        return;
      }
      this.results?.labels(attempt === delays.length ? 'failed' : 'retry').inc();
      if (attempt === delays.length) {
        this.options.log?.(
          'warn',
          `NOTIFY ${origin} serial ${serial} to ${target.host}:${target.port} failed after ${attempt + 1} attempts: ${outcome}`,
        );
        return;
      }
      await new Promise((r) => setTimeout(r, delays[attempt]).unref());
    }
  }

  /** One NOTIFY and its answer: 'ok' or why not. */
  private once(soa: ServedRRset, target: NotifyTarget): Promise<string> {
    const origin = soa.owner;
    const id = randomInt(0, 65536);
    let bytes = encodeMessage(
      queryMessage(origin, RRType.SOA, {
        id,
        opcode: Opcode.NOTIFY,
        aa: true, // RFC 1996 §3.7: AA set
        // RFC 1996 §3.7: the new SOA may ride along in the answer section.
        answers: [{ name: origin, type: RRType.SOA, class: RRClass.IN, ttl: soa.ttl, data: soa.rdata[0]! }],
      }),
    );
    let requestMac: Uint8Array | undefined;
    if (target.key) {
      const signed = signMessage(bytes, target.key);
      bytes = signed.bytes;
      requestMac = signed.mac;
    }
    return new Promise((resolve) => {
      const socket = dgram.createSocket(net.isIPv6(target.host) ? 'udp6' : 'udp4');
      const timer = setTimeout(() => done('timeout'), this.options.timeoutMs);
      let finished = false;
      const done = (outcome: string) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        socket.close();
        resolve(outcome);
      };
      socket.on('error', (e) => done(e.message));
      socket.on('message', (msg) => {
        // RFC 1996 §4.7: the answer to our NOTIFY carries its ID, QR and opcode NOTIFY; anything else
        // (a stray or late datagram) is ignored, and the attempt waits on.
        if (msg.length < 12 || ((msg[0]! << 8) | msg[1]!) !== id) return;
        if ((msg[2]! & 0x80) === 0 || ((msg[2]! >> 3) & 0xf) !== Opcode.NOTIFY) return;
        const rcode = msg[3]! & 0xf;
        try {
          if (target.key) {
            const key = target.key;
            const verified = verifyMessage(msg, (name) => (name === key.name ? key : undefined), {
              ...(requestMac ? { requestMac } : {}),
            });
            if (!verified.ok) {
              // E.g. NOTAUTH with TSIG BADKEY: the secondary does not know this key (RFC 8945 §5.3.2).
              const why = verified.reportedByPeer
                ? `TSIG ${verified.error} from the secondary`
                : verified.message;
              return done(`${rcodeName(rcode)}, answer not verified: ${why}`);
            }
          }
          decodeMessage(msg);
        } catch (e) {
          return done(`malformed answer: ${(e as Error).message}`);
        }
        done(rcode === Rcode.NOERROR ? 'ok' : rcodeName(rcode));
      });
      socket.send(bytes, target.port, target.host);
    });
  }
}

function rcodeName(rcode: number): string {
  const name = Object.entries(Rcode).find(([, v]) => v === rcode)?.[0];
  return `rcode ${name ?? rcode}`;
}
