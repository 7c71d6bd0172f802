/**
 * An AXFR client (RFC 5936) for `zonekeeper zone import --axfr`: one zone read whole over TCP from a
 * primary, optionally signed with TSIG (RFC 8945), within a time limit and a record limit.
 *
 * - The query is one question, QTYPE AXFR, class IN, sent over TCP with the two-octet length prefix
 *   (RFC 5936 §4.1, RFC 1035 §4.2.2).
 * - The response is one or more messages with the query's ID (RFC 5936 §2.2); the first record is the
 *   zone's SOA and the transfer ends with the SOA again (§2.2). A message with another RCODE than
 *   NOERROR ends the transfer with an error (§2.2.1).
 * - With a key, the request is signed and every message of the response is verified in order
 *   (RFC 8945 §5.3.1, `TsigStreamVerifier`; MACs are compared in constant time): the first and the last
 *   must be signed, and a message that fails verification ends the transfer. Nothing of an unverified
 *   transfer is returned.
 */
import { randomInt } from 'node:crypto';
import net from 'node:net';
import {
  decodeMessage,
  encodeMessage,
  Opcode,
  queryMessage,
  Rcode,
  type ResourceRecord,
} from '../../dns/message.ts';
import { type Name, nameKey } from '../../dns/name.ts';
import { RRType } from '../../dns/rrtype.ts';
import { readTsig, signMessage, type TsigKey, TsigStreamVerifier } from '../../dns/tsig.ts';

export interface AxfrOptions {
  host: string;
  port: number;
  zone: Name;
  key?: TsigKey;
  /** For the whole transfer, connect included. */
  timeoutMs: number;
  /** More records than this (the closing SOA aside) end the transfer with AXFR_TOO_LARGE. */
  maxRecords: number;
}

export interface AxfrResult {
  /** Every record in the order received, from the opening SOA up to (not including) the closing one. */
  records: ResourceRecord[];
  messages: number;
  /** Whether the transfer was TSIG-verified. */
  verified: boolean;
}

/** A failed transfer; `code` is stable (AXFR_TIMEOUT, AXFR_REFUSED, AXFR_TSIG, AXFR_TOO_LARGE, ...). */
export class AxfrError extends Error {
  readonly code: string;
  /** The RCODE the server answered with, and the TSIG error it reported, when it answered one. */
  readonly rcode: number | undefined;
  readonly tsigError: number | undefined;
  constructor(code: string, message: string, answered?: { rcode: number; tsigError?: number }) {
    super(message);
    this.code = code;
    this.rcode = answered?.rcode;
    this.tsigError = answered?.tsigError;
  }
}

const RCODE_NAMES = new Map<number, string>(Object.entries(Rcode).map(([k, v]) => [v, k]));
const TSIG_ERROR_NAMES = new Map<number, string>([
  [16, 'BADSIG'],
  [17, 'BADKEY'],
  [18, 'BADTIME'],
  [22, 'BADTRUNC'],
]);

/** Reads a zone by AXFR; rejects with AxfrError. */
export function axfr(options: AxfrOptions): Promise<AxfrResult> {
  const { host, port, zone, key } = options;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const id = randomInt(0, 65536);
  let query = encodeMessage(queryMessage(zone, RRType.AXFR, { id, opcode: Opcode.QUERY, rd: false }));
  let requestMac: Uint8Array | undefined;
  if (key) {
    const signed = signMessage(query, key);
    query = signed.bytes;
    requestMac = signed.mac;
  }
  const verifier = key
    ? new TsigStreamVerifier((n) => (nameKey(n) === nameKey(key.name) ? key : undefined), requestMac)
    : undefined;

  return new Promise<AxfrResult>((resolve, reject) => {
    const records: ResourceRecord[] = [];
    let messages = 0;
    let buffered: Buffer = Buffer.alloc(0);
    let finished = false;
    const socket = net.connect({ host, port });
    const done = (error: AxfrError | undefined) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve({ records, messages, verified: key !== undefined });
    };
    const timer = setTimeout(
      () =>
        done(
          new AxfrError(
            'AXFR_TIMEOUT',
            `AXFR of ${zone} from ${where}: not complete within ${options.timeoutMs} ms (${records.length} record(s) in ${messages} message(s) so far); raise --timeout for a large zone`,
          ),
        ),
      options.timeoutMs,
    );
    socket.on('connect', () => {
      const framed = Buffer.alloc(2 + query.length);
      framed.writeUInt16BE(query.length, 0);
      framed.set(query, 2);
      socket.write(framed);
    });
    socket.on('error', (e) =>
      done(new AxfrError('AXFR_CONNECT', `AXFR of ${zone} from ${where}: ${e.message}`)),
    );
    socket.on('close', () =>
      done(
        new AxfrError(
          'AXFR_INCOMPLETE',
          `AXFR of ${zone} from ${where}: the connection closed before the closing SOA (${records.length} record(s) received; RFC 5936 §2.2)`,
        ),
      ),
    );
    socket.on('data', (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      while (!finished && buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (buffered.length < 2 + length) break;
        const message = new Uint8Array(buffered.subarray(2, 2 + length));
        buffered = buffered.subarray(2 + length);
        const error = take(message);
        if (error !== 'more') done(error);
      }
    });

    /** Takes one message of the response: 'more' to go on, undefined when complete, or the error. */
    const take = (message: Uint8Array): AxfrError | undefined | 'more' => {
      messages++;
      const fail = (code: string, why: string, answered?: { rcode: number; tsigError?: number }) =>
        new AxfrError(code, `AXFR of ${zone} from ${where}: ${why}`, answered);
      if (message.length < 12) return fail('AXFR_MALFORMED', `a message of ${message.length} octets`);
      if (((message[0]! << 8) | message[1]!) !== id)
        return fail('AXFR_MALFORMED', 'a message with another ID than the query (RFC 5936 §2.2)');
      const rcode = message[3]! & 0x0f;
      if (rcode !== Rcode.NOERROR) {
        // RFC 5936 §2.2.1: an error ends the transfer. A TSIG error is carried in the (unsigned) TSIG.
        let tsigError = '';
        let tsigErrorCode: number | undefined;
        try {
          const found = readTsig(message);
          if (found && found.record.error !== 0) {
            tsigErrorCode = found.record.error;
            tsigError = `, TSIG error ${TSIG_ERROR_NAMES.get(found.record.error) ?? found.record.error}`;
          }
        } catch {
          // no readable TSIG: the RCODE says it all
        }
        const name = RCODE_NAMES.get(rcode) ?? String(rcode);
        return fail(
          tsigError !== '' ? 'AXFR_TSIG' : 'AXFR_REFUSED',
          `the server answered ${name}${tsigError}${
            tsigError !== ''
              ? ' (is --tsig-key the key the server has for transfers?)'
              : rcode === Rcode.REFUSED || rcode === Rcode.NOTAUTH
                ? ' (is the transfer allowed from this address, or with this key?)'
                : ''
          }`,
          tsigErrorCode === undefined ? { rcode } : { rcode, tsigError: tsigErrorCode },
        );
      }
      let body = message;
      if (verifier) {
        const checked = verifier.verify(message);
        if (!checked.ok)
          return fail(
            'AXFR_TSIG',
            `message ${messages} of the response failed TSIG verification (${checked.error}: ${checked.message}); nothing is imported`,
          );
        body = checked.stripped;
      }
      let decoded: ReturnType<typeof decodeMessage>;
      try {
        decoded = decodeMessage(body);
      } catch (e) {
        return fail('AXFR_MALFORMED', `message ${messages}: ${(e as Error).message}`);
      }
      if (!decoded.qr) return fail('AXFR_MALFORMED', `message ${messages} is not a response`);
      for (const rr of decoded.answers) {
        if (records.length === 0) {
          // RFC 5936 §2.2: the first record is the zone's SOA.
          if (rr.type !== RRType.SOA || nameKey(rr.name) !== nameKey(zone))
            return fail('AXFR_MALFORMED', `the first record is not the SOA of ${zone} (RFC 5936 §2.2)`);
          records.push(rr);
          continue;
        }
        if (rr.type === RRType.SOA && nameKey(rr.name) === nameKey(zone)) {
          // The closing SOA: the transfer is complete (RFC 5936 §2.2). It must be the last record.
          if (rr !== decoded.answers.at(-1))
            return fail('AXFR_MALFORMED', 'records after the closing SOA (RFC 5936 §2.2)');
          if (verifier) {
            const end = verifier.end();
            if (!end.ok) return fail('AXFR_TSIG', `${end.message}; nothing is imported`);
          }
          return undefined;
        }
        if (records.length >= options.maxRecords)
          return fail(
            'AXFR_TOO_LARGE',
            `more than ${options.maxRecords} records; refused (raise --max-records if the zone really is that large)`,
          );
        records.push(rr);
      }
      return 'more';
    };
  });
}
