import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import { decodeMessage, encodeMessage, Opcode, queryMessage, Rcode } from '../../dns/message.ts';
import { type Name, nameKey } from '../../dns/name.ts';
import type { Rdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
import { signMessage, verifyMessage } from '../../dns/tsig.ts';
import type { SoaProbeResult } from '../../zones/transfers.ts';
import type { NotifyTarget } from './notifier.ts';

/**
 * Asks each secondary for the zone's SOA (one UDP query each, in parallel, signed with the target's
 * TSIG key when it has one and then only a verified answer counts), waiting at most `timeoutMs`.
 * For a primary that lost its serial state: the serial its secondaries hold is the floor to start
 * above, or they would ignore it (RFC 1982 comparison, RFC 1996 §4.7).
 */
export async function probeSoaSerials(
  origin: Name,
  targets: readonly NotifyTarget[],
  timeoutMs: number,
): Promise<SoaProbeResult[]> {
  return Promise.all(targets.map((t) => probeOne(origin, t, timeoutMs)));
}

function probeOne(origin: Name, target: NotifyTarget, timeoutMs: number): Promise<SoaProbeResult> {
  const name = `${target.host}:${target.port}`;
  const id = randomInt(0, 65536);
  let bytes = encodeMessage(queryMessage(origin, RRType.SOA, { id, opcode: Opcode.QUERY, rd: false }));
  let requestMac: Uint8Array | undefined;
  if (target.key) {
    const signed = signMessage(bytes, target.key);
    bytes = signed.bytes;
    requestMac = signed.mac;
  }
  return new Promise((resolve) => {
    const socket = dgram.createSocket(net.isIPv6(target.host) ? 'udp6' : 'udp4');
    let finished = false;
    const done = (result: Omit<SoaProbeResult, 'target'>) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.close();
      resolve({ target: name, ...result });
    };
    const timer = setTimeout(() => done({ error: `no answer within ${timeoutMs} ms` }), timeoutMs);
    socket.on('error', (e) => done({ error: e.message }));
    socket.on('message', (msg) => {
      // Only the answer to this query counts (ID, QR); a stray datagram is ignored.
      if (msg.length < 12 || ((msg[0]! << 8) | msg[1]!) !== id || (msg[2]! & 0x80) === 0) return;
      try {
        if (target.key) {
          const key = target.key;
          const verified = verifyMessage(msg, (n) => (n === key.name ? key : undefined), {
            ...(requestMac ? { requestMac } : {}),
          });
          if (!verified.ok) return done({ error: `answer not verified: ${verified.message}` });
        }
        const reply = decodeMessage(msg);
        if (reply.rcode !== Rcode.NOERROR) return done({ error: `rcode ${reply.rcode}` });
        // RFC 1034 §6.2.2: only an authoritative answer holds the zone's current SOA.
        if (!reply.aa) return done({ error: 'not authoritative for the zone' });
        const soa = reply.answers.find(
          (rr) => rr.type === RRType.SOA && nameKey(rr.name) === nameKey(origin),
        );
        if (!soa) return done({ error: 'no SOA in the answer' });
        done({ serial: (soa.data as Extract<Rdata, { type: 'SOA' }>).serial });
      } catch (e) {
        done({ error: `malformed answer: ${(e as Error).message}` });
      }
    });
    socket.send(bytes, target.port, target.host);
  });
}
