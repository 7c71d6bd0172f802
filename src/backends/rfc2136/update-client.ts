/**
 * UPDATE messages (RFC 2136) for the RFC 2136 backend: assembled from plan units, split at the message
 * size limit, signed with TSIG (RFC 8945) and sent over TCP, the answer verified and its RCODE turned
 * into what the backend does next.
 *
 * - Zone section: one record, the zone's name, type SOA, class IN (§2.3). Prerequisites go in the
 *   answer section's place, updates in the authority section's (§2.2).
 * - TCP only (§6 allows it; RFC 1035 §4.2.2 framing): a change may need up to 65535 octets, UDP would
 *   need truncation handling and retransmission, and one connection per exchange keeps it simple.
 *   Units are packed greedily into messages of at most MAX_MESSAGE octets with room for the TSIG RR.
 * - An answer with another ID, unsigned or with a MAC that does not verify is not trusted: the apply
 *   fails and is read back and retried.
 */
import { randomInt } from 'node:crypto';
import net from 'node:net';
import { decodeMessage, encodeMessage, type Message, Opcode, Rcode } from '../../dns/message.ts';
import type { Name } from '../../dns/name.ts';
import { RRType } from '../../dns/rrtype.ts';
import { keyring, readTsig, signMessage, type TsigKey, verifyMessage } from '../../dns/tsig.ts';
import type { UpdateUnit } from './plan.ts';

/** RFC 1035 §4.2.2: a TCP message is at most 65535 octets. */
export const MAX_MESSAGE = 65535;
/** Room left for the TSIG RR (key name up to 255 octets, algorithm name, a 64-octet MAC, fields). */
const TSIG_ROOM = 512;

const RCODE_NAMES = new Map<number, string>(Object.entries(Rcode).map(([k, v]) => [v, k]));
const TSIG_ERRORS = new Map<number, string>([
  [16, 'BADSIG'],
  [17, 'BADKEY'],
  [18, 'BADTIME'],
  [22, 'BADTRUNC'],
]);

export function rcodeName(rcode: number): string {
  return RCODE_NAMES.get(rcode) ?? String(rcode);
}
export function tsigErrorName(error: number): string {
  return TSIG_ERRORS.get(error) ?? String(error);
}

function updateMessage(origin: Name, units: readonly UpdateUnit[]): Message {
  return {
    id: 0,
    qr: false,
    opcode: Opcode.UPDATE,
    aa: false,
    tc: false,
    rd: false,
    ra: false,
    ad: false,
    cd: false,
    rcode: 0,
    questions: [{ name: origin, type: RRType.SOA, class: 1 }],
    answers: units.flatMap((u) => u.prerequisites),
    authority: units.flatMap((u) => u.updates),
    additional: [],
  };
}

/**
 * Packs units into as few messages as fit `limit` octets (TSIG room aside), in order. A unit too
 * large for any message on its own is returned in `tooLarge`.
 */
export function packMessages(
  origin: Name,
  units: readonly UpdateUnit[],
  limit = MAX_MESSAGE,
): { messages: UpdateUnit[][]; tooLarge: UpdateUnit[] } {
  const budget = limit - TSIG_ROOM;
  const base = encodeMessage(updateMessage(origin, [])).length;
  const messages: UpdateUnit[][] = [];
  const tooLarge: UpdateUnit[] = [];
  let current: UpdateUnit[] = [];
  let size = base;
  for (const unit of units) {
    // Its size alone, compressed against the zone name as in any message: an upper bound in company.
    let own: number;
    try {
      own = encodeMessage(updateMessage(origin, [unit])).length - base;
    } catch {
      tooLarge.push(unit);
      continue;
    }
    if (base + own > budget) {
      tooLarge.push(unit);
      continue;
    }
    if (size + own > budget && current.length > 0) {
      messages.push(current);
      current = [];
      size = base;
    }
    current.push(unit);
    size += own;
  }
  if (current.length > 0) messages.push(current);
  return { messages, tooLarge };
}

/** The outcome of one UPDATE exchange. */
export type UpdateOutcome =
  | { ok: true }
  /** A prerequisite failed (RFC 2136 §3.2.5: YXDOMAIN, YXRRSET, NXDOMAIN, NXRRSET): read again, plan again. */
  | { ok: false; kind: 'prerequisite'; rcode: number }
  /** The server refused or failed the request; `tsigError` when it reported one (§3.2 of RFC 8945). */
  | { ok: false; kind: 'refused'; rcode: number; tsigError?: number }
  /** No trustworthy answer: connection, time limit, malformed or unverified answer. */
  | { ok: false; kind: 'unreachable'; message: string };

export interface UpdateTarget {
  host: string;
  port: number;
  key: TsigKey;
  timeoutMs: number;
}

/** Sends one UPDATE with `units` and reports what the server answered. */
export async function sendUpdate(
  target: UpdateTarget,
  origin: Name,
  units: readonly UpdateUnit[],
): Promise<UpdateOutcome> {
  const id = randomInt(0, 65536);
  const unsigned = encodeMessage({ ...updateMessage(origin, units), id });
  const signed = signMessage(unsigned, target.key);
  let answer: Uint8Array;
  try {
    answer = await exchangeTcp(target, signed.bytes);
  } catch (e) {
    return { ok: false, kind: 'unreachable', message: (e as Error).message };
  }
  if (answer.length < 12 || ((answer[0]! << 8) | answer[1]!) !== id)
    return {
      ok: false,
      kind: 'unreachable',
      message: 'an answer with another ID than the UPDATE (RFC 2136 §3.8)',
    };
  const rcode = answer[3]! & 0x0f;
  if (rcode !== Rcode.NOERROR) {
    // An error answer is acted on without trusting it further: the change is read back either way.
    let tsigError: number | undefined;
    try {
      const found = readTsig(answer);
      if (found && found.record.error !== 0) tsigError = found.record.error;
    } catch {
      // no readable TSIG: the RCODE says it all
    }
    if (
      tsigError === undefined &&
      (rcode === Rcode.YXDOMAIN ||
        rcode === Rcode.YXRRSET ||
        rcode === Rcode.NXDOMAIN ||
        rcode === Rcode.NXRRSET)
    )
      return { ok: false, kind: 'prerequisite', rcode };
    return tsigError === undefined
      ? { ok: false, kind: 'refused', rcode }
      : { ok: false, kind: 'refused', rcode, tsigError };
  }
  const verified = verifyMessage(answer, keyring([target.key]), { requestMac: signed.mac });
  if (!verified.ok)
    return {
      ok: false,
      kind: 'unreachable',
      message: `the answer to the UPDATE failed TSIG verification (${verified.error}: ${verified.message})`,
    };
  try {
    const decoded = decodeMessage(verified.stripped);
    if (!decoded.qr || decoded.opcode !== Opcode.UPDATE)
      return { ok: false, kind: 'unreachable', message: 'the answer is not an UPDATE response' };
  } catch (e) {
    return { ok: false, kind: 'unreachable', message: `malformed answer: ${(e as Error).message}` };
  }
  return { ok: true };
}

/** One request and its answer over TCP with the two-octet length prefix (RFC 1035 §4.2.2). */
function exchangeTcp(target: UpdateTarget, request: Uint8Array): Promise<Uint8Array> {
  const where = `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
  return new Promise((resolve, reject) => {
    let buffered: Buffer = Buffer.alloc(0);
    let finished = false;
    const socket = net.connect({ host: target.host, port: target.port });
    const done = (error: Error | undefined, answer?: Uint8Array) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(answer!);
    };
    const timer = setTimeout(
      () => done(new Error(`UPDATE to ${where}: no answer within ${target.timeoutMs} ms`)),
      target.timeoutMs,
    );
    socket.on('connect', () => {
      const framed = Buffer.alloc(2 + request.length);
      framed.writeUInt16BE(request.length, 0);
      framed.set(request, 2);
      socket.write(framed);
    });
    socket.on('error', (e) => done(new Error(`UPDATE to ${where}: ${e.message}`)));
    socket.on('close', () => done(new Error(`UPDATE to ${where}: the connection closed before an answer`)));
    socket.on('data', (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      if (buffered.length < 2) return;
      const length = buffered.readUInt16BE(0);
      if (buffered.length >= 2 + length) done(undefined, new Uint8Array(buffered.subarray(2, 2 + length)));
    });
  });
}
