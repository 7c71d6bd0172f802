/**
 * A UDP DNS proxy on loopback that passes queries to an authoritative server and spoils its answers, to
 * show a validating resolver refusing them: `tamper` rewrites an IPv4 address in the answer (the RRSIG
 * no longer matches), `strip` removes the DNSSEC records (RRSIG, NSEC, NSEC3) as an on-path attacker
 * downgrading the zone to unsigned would. Truncates (TC) nothing: the answers of the tests fit.
 */
import dgram from 'node:dgram';
import { decodeMessage, encodeMessage } from '../../src/dns/message.ts';
import { freePort } from './ports.ts';

export type Spoil = { kind: 'tamper'; from: string; to: string } | { kind: 'strip' } | { kind: 'none' };

export interface TamperProxy {
  port: number;
  /** How answers are spoiled from now on. */
  spoil: Spoil;
  close(): Promise<void>;
}

const DNSSEC_TYPES = new Set([46, 47, 50]); // RRSIG, NSEC, NSEC3 (RFC 4034, RFC 5155)

function octets(address: string): Buffer {
  return Buffer.from(address.split('.').map(Number));
}

function spoiled(answer: Buffer, spoil: Spoil): Buffer {
  if (spoil.kind === 'tamper') {
    const from = octets(spoil.from);
    const at = answer.indexOf(from);
    if (at < 0) return answer;
    const out = Buffer.from(answer);
    octets(spoil.to).copy(out, at);
    return out;
  }
  if (spoil.kind === 'strip') {
    const message = decodeMessage(answer);
    const keep = <T extends { type: number }>(rrs: T[]) => rrs.filter((r) => !DNSSEC_TYPES.has(r.type));
    return Buffer.from(
      encodeMessage({
        ...message,
        answers: keep(message.answers),
        authority: keep(message.authority),
        additional: keep(message.additional),
      }),
    );
  }
  return answer;
}

export async function startTamperProxy(upstreamPort: number, spoil: Spoil): Promise<TamperProxy> {
  const port = await freePort();
  const socket = dgram.createSocket('udp4');
  const proxy: TamperProxy = {
    port,
    spoil,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
  socket.on('message', (query, client) => {
    const upstream = dgram.createSocket('udp4');
    const timer = setTimeout(() => upstream.close(), 5000);
    upstream.once('message', (answer) => {
      clearTimeout(timer);
      upstream.close();
      let out: Buffer;
      try {
        out = spoiled(answer, proxy.spoil);
      } catch {
        out = answer;
      }
      socket.send(out, client.port, client.address);
    });
    upstream.send(query, upstreamPort, '127.0.0.1');
  });
  await new Promise<void>((resolve) => socket.bind(port, '127.0.0.1', () => resolve()));
  return proxy;
}
