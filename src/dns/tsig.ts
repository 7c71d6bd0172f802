/**
 * TSIG, secret-key transaction authentication (RFC 8945), on raw DNS messages: sign a message by
 * appending a TSIG RR, verify and strip one, build the error responses, and sign or verify the
 * messages of a multi-message TCP response (AXFR) as one chain.
 *
 * Algorithms: hmac-sha256 (the one RFC 8945 §6 makes mandatory), hmac-sha384 and hmac-sha512. HMAC-MD5
 * and HMAC-SHA1 are refused (RFC 8945 §6: MD5 and SHA-1 MUST NOT be used for new keys), as are the
 * truncated and GSS variants.
 *
 * Messages are handled as octets: the MAC covers the exact octets sent, so nothing is decoded and
 * encoded again on the way.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { base64ToBytes } from './base64.ts';
import { DnsError } from './errors.ts';
import { asciiLower, encodeNameUncompressed, type Name, parseName } from './name.ts';
import { WireError, WireReader } from './wire.ts';

export const TSIG_TYPE = 250;
const CLASS_ANY = 255;
const HEADER = 12;

export const TSIG_ALGORITHMS = ['hmac-sha256', 'hmac-sha384', 'hmac-sha512'] as const;
export type TsigAlgorithm = (typeof TSIG_ALGORITHMS)[number];

const HASH: Readonly<Record<TsigAlgorithm, { hash: string; length: number }>> = {
  'hmac-sha256': { hash: 'sha256', length: 32 },
  'hmac-sha384': { hash: 'sha384', length: 48 },
  'hmac-sha512': { hash: 'sha512', length: 64 },
};

/** RFC 8945 §7 / IANA: the TSIG error values (carried in the TSIG RR, with RCODE NOTAUTH). */
export const TsigErrorCode = { NOERROR: 0, BADSIG: 16, BADKEY: 17, BADTIME: 18, BADTRUNC: 22 } as const;
export type TsigErrorName = Exclude<keyof typeof TsigErrorCode, 'NOERROR'>;

const RCODE_FORMERR = 1;
const RCODE_NOTAUTH = 9;

export interface TsigKey {
  /** The key name, canonical: absolute and lowercase. */
  name: Name;
  algorithm: TsigAlgorithm;
  secret: Uint8Array;
}

/** The fields of a TSIG RR (RFC 8945 §4.2). */
export interface TsigRecord {
  keyName: Name;
  /** Algorithm name as a domain name, e.g. `hmac-sha256.`. */
  algorithm: Name;
  /** Seconds since 1970-01-01 UTC (48 bits). */
  timeSigned: number;
  fudge: number;
  mac: Uint8Array;
  originalId: number;
  error: number;
  otherData: Uint8Array;
}

/**
 * A key from its configuration: `name` a domain name (a trailing dot is added), `algorithm` one of
 * hmac-sha256, hmac-sha384, hmac-sha512 (also in name form, `hmac-sha256.`), `secret` standard base64.
 * Throws DnsError TSIG_BAD_KEY_NAME, TSIG_UNSUPPORTED_ALGORITHM or TSIG_BAD_SECRET.
 */
export function parseTsigKey(config: { name: string; algorithm: string; secret: string }): TsigKey {
  let name: Name;
  try {
    name = asciiLower(parseName(config.name.endsWith('.') ? config.name : `${config.name}.`));
  } catch (e) {
    throw new DnsError(
      'TSIG_BAD_KEY_NAME',
      `TSIG key name ${JSON.stringify(config.name)} is not a domain name: ${(e as Error).message}`,
      { cause: e },
    );
  }
  const algorithm = asciiLower(config.algorithm).replace(/\.$/, '');
  if (!(TSIG_ALGORITHMS as readonly string[]).includes(algorithm)) {
    const weak = /md5|sha1$|sha-1/.test(algorithm);
    throw new DnsError(
      'TSIG_UNSUPPORTED_ALGORITHM',
      `TSIG algorithm ${JSON.stringify(config.algorithm)} is not supported${weak ? ' (RFC 8945 §6: MD5 and SHA-1 must not be used for new keys)' : ''}; use hmac-sha256 (or hmac-sha384, hmac-sha512) and generate a new secret, e.g. \`tsig-keygen -a hmac-sha256 ${name}\``,
    );
  }
  const secret = base64ToBytes(config.secret.replace(/\s+/g, ''));
  if (secret === undefined || secret.length === 0) {
    throw new DnsError(
      'TSIG_BAD_SECRET',
      `TSIG key ${name}: the secret is not ${secret === undefined ? 'valid base64' : 'a non-empty value'}; copy it exactly as \`tsig-keygen\` or \`keymgr\` printed it`,
    );
  }
  return { name, algorithm: algorithm as TsigAlgorithm, secret };
}

/** The algorithm for an algorithm name from a TSIG RR, if supported. */
function algorithmOf(name: Name): TsigAlgorithm | undefined {
  const a = asciiLower(name).replace(/\.$/, '');
  return (TSIG_ALGORITHMS as readonly string[]).includes(a) ? (a as TsigAlgorithm) : undefined;
}

// ---------------------------------------------------------------------------------------------------
// Octet helpers

class Bytes {
  private readonly parts: Uint8Array[] = [];
  length = 0;

  add(b: Uint8Array): this {
    this.parts.push(b);
    this.length += b.length;
    return this;
  }

  u16(v: number): this {
    return this.add(Uint8Array.of((v >>> 8) & 0xff, v & 0xff));
  }

  u32(v: number): this {
    return this.add(Uint8Array.of((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff));
  }

  u48(v: number): this {
    const high = Math.floor(v / 0x1_0000_0000);
    return this.u16(high).u32(v >>> 0);
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

/** RFC 8945 §4.3.3: names in the MAC input are in canonical wire form (uncompressed, lowercase). */
function canonicalName(name: Name): Uint8Array {
  return encodeNameUncompressed(asciiLower(name));
}

function withCount(message: Uint8Array, arcount: number, id?: number): Uint8Array {
  // new Uint8Array copies: on a Node Buffer, slice() would return a view and mutate the caller's bytes.
  const copy = new Uint8Array(message);
  copy[10] = (arcount >>> 8) & 0xff;
  copy[11] = arcount & 0xff;
  if (id !== undefined) {
    copy[0] = (id >>> 8) & 0xff;
    copy[1] = id & 0xff;
  }
  return copy;
}

function arcountOf(message: Uint8Array): number {
  return (message[10]! << 8) | message[11]!;
}

function idOf(message: Uint8Array): number {
  return (message[0]! << 8) | message[1]!;
}

/** The TSIG variables (RFC 8945 §4.3.3), or only the timers (§5.3.1). */
function variables(key: { name: Name; algorithmName: Name }, t: TsigFields, timersOnly: boolean): Uint8Array {
  const b = new Bytes();
  if (!timersOnly) b.add(canonicalName(key.name)).u16(CLASS_ANY).u32(0).add(canonicalName(key.algorithmName));
  b.u48(t.timeSigned).u16(t.fudge);
  if (!timersOnly) b.u16(t.error).u16(t.otherData.length).add(t.otherData);
  return b.finish();
}

interface TsigFields {
  timeSigned: number;
  fudge: number;
  error: number;
  otherData: Uint8Array;
}

interface DigestInput {
  algorithm: TsigAlgorithm;
  secret: Uint8Array;
  keyName: Name;
  algorithmName: Name;
  /** The message without its TSIG, ARCOUNT not counting it, ID = original ID. */
  message: Uint8Array;
  fields: TsigFields;
  /** RFC 8945 §4.3.1: the request's MAC, for a response. */
  requestMac?: Uint8Array;
  /** RFC 8945 §5.3.1: the MAC of the previous signed message of a multi-message response. */
  priorMac?: Uint8Array;
  /** RFC 8945 §5.3.1: the unsigned messages sent since the previous signed one. */
  unsignedBefore?: readonly Uint8Array[];
}

function computeMac(input: DigestInput): Uint8Array {
  const hmac = createHmac(HASH[input.algorithm].hash, input.secret);
  const before = input.priorMac ?? input.requestMac;
  if (before !== undefined) {
    hmac.update(Uint8Array.of((before.length >>> 8) & 0xff, before.length & 0xff));
    hmac.update(before);
  }
  if (input.priorMac !== undefined) for (const m of input.unsignedBefore ?? []) hmac.update(m);
  hmac.update(input.message);
  hmac.update(
    variables(
      { name: input.keyName, algorithmName: input.algorithmName },
      input.fields,
      input.priorMac !== undefined,
    ),
  );
  return new Uint8Array(hmac.digest());
}

/** The TSIG RR in wire form (RFC 8945 §4.2); names uncompressed. */
function encodeTsigRecord(
  keyName: Name,
  algorithmName: Name,
  t: TsigFields,
  mac: Uint8Array,
  originalId: number,
) {
  const rdata = new Bytes()
    .add(encodeNameUncompressed(algorithmName))
    .u48(t.timeSigned)
    .u16(t.fudge)
    .u16(mac.length)
    .add(mac)
    .u16(originalId)
    .u16(t.error)
    .u16(t.otherData.length)
    .add(t.otherData)
    .finish();
  return new Bytes()
    .add(encodeNameUncompressed(keyName))
    .u16(TSIG_TYPE)
    .u16(CLASS_ANY)
    .u32(0)
    .u16(rdata.length)
    .add(rdata)
    .finish();
}

// ---------------------------------------------------------------------------------------------------
// Signing

export interface SignOptions {
  /** Time Signed, seconds since the epoch. Default: now. */
  time?: number;
  /** Permitted clock skew in seconds. Default 300 (RFC 8945 §10 recommends 300). */
  fudge?: number;
  /** For a response: the MAC of the request it answers (as the request carried it). */
  requestMac?: Uint8Array;
  /**
   * For the second and later messages of a multi-message response (RFC 8945 §5.3.1): the MAC of the
   * previous signed message. The MAC then covers only the timers of this TSIG.
   */
  previousMac?: Uint8Array;
  /** Brief form of `previousMac`: with `timersOnly`, `requestMac` is taken as the previous MAC. */
  timersOnly?: boolean;
  /** Messages of the stream sent unsigned since the previous signed one, in order (§5.3.1). */
  unsignedBefore?: readonly Uint8Array[];
  /** TSIG error field (for error responses, §5.3.2). Default 0. */
  error?: number;
  otherData?: Uint8Array;
}

export interface SignResult {
  bytes: Uint8Array;
  /** The MAC in the TSIG RR: the request MAC of the response, or the previous MAC of the next message. */
  mac: Uint8Array;
}

/**
 * Signs a message: computes the MAC (RFC 8945 §4.3) and appends the TSIG RR as the last additional
 * record, incrementing ARCOUNT (§4.2, §5.3). The message must not carry a TSIG already.
 */
export function signMessage(message: Uint8Array, key: TsigKey, options: SignOptions = {}): SignResult {
  if (message.length < HEADER) {
    throw new DnsError('TSIG_BAD_MESSAGE', `cannot sign ${message.length} octets: shorter than a DNS header`);
  }
  const fields: TsigFields = {
    timeSigned: options.time ?? nowSeconds(),
    fudge: options.fudge ?? 300,
    error: options.error ?? 0,
    otherData: options.otherData ?? new Uint8Array(0),
  };
  const priorMac = options.previousMac ?? (options.timersOnly ? options.requestMac : undefined);
  if (options.timersOnly && priorMac === undefined) {
    throw new DnsError('TSIG_NO_PREVIOUS_MAC', 'timers-only signing needs the previous MAC of the stream');
  }
  const algorithmName = `${key.algorithm}.`;
  const mac = computeMac({
    algorithm: key.algorithm,
    secret: key.secret,
    keyName: key.name,
    algorithmName,
    message,
    fields,
    ...(priorMac !== undefined
      ? { priorMac, ...(options.unsignedBefore ? { unsignedBefore: options.unsignedBefore } : {}) }
      : options.requestMac !== undefined
        ? { requestMac: options.requestMac }
        : {}),
  });
  const rr = encodeTsigRecord(key.name, algorithmName, fields, mac, idOf(message));
  const out = new Uint8Array(message.length + rr.length);
  out.set(message);
  out.set(rr, message.length);
  const arcount = arcountOf(message) + 1;
  out[10] = (arcount >>> 8) & 0xff;
  out[11] = arcount & 0xff;
  return { bytes: out, mac };
}

// ---------------------------------------------------------------------------------------------------
// Reading

export interface FoundTsig {
  record: TsigRecord;
  /** Offset where the TSIG RR starts. */
  start: number;
  /** The message without the TSIG RR, ARCOUNT decremented (the ID as received). */
  stripped: Uint8Array;
}

/**
 * Finds the TSIG RR of a message. Undefined when there is none; DnsError FORMERR when the message is
 * malformed, has more than one TSIG, or has one anywhere but last in the additional section (§5.1).
 */
export function readTsig(message: Uint8Array): FoundTsig | undefined {
  const formerr = (why: string) => new DnsError('FORMERR', why);
  if (message.length < HEADER) throw formerr(`message of ${message.length} octets has no complete header`);
  const r = new WireReader(message, HEADER);
  const counts = [4, 6, 8, 10].map((at) => (message[at]! << 8) | message[at + 1]!);
  const [qd, an, ns, ar] = counts as [number, number, number, number];
  const total = an + ns + ar;
  let found:
    | { start: number; rdataStart: number; rdlength: number; name: Name; klass: number; ttl: number }
    | undefined;
  try {
    for (let i = 0; i < qd; i++) {
      r.name();
      r.u16();
      r.u16();
    }
    for (let i = 0; i < total; i++) {
      const start = r.offset;
      const name = r.name();
      const type = r.u16();
      const klass = r.u16();
      const ttl = r.u32();
      const rdlength = r.u16();
      const rdataStart = r.offset;
      r.bytes(rdlength);
      if (type !== TSIG_TYPE) continue;
      if (i !== total - 1) {
        // RFC 8945 §5.1: the TSIG MUST be the last record of the additional section, and only one.
        throw formerr(
          `a TSIG RR appears as record ${i + 1} of ${total}; it must be the last additional record`,
        );
      }
      found = { start, rdataStart, rdlength, name, klass, ttl };
    }
  } catch (e) {
    if (e instanceof WireError) throw formerr(`malformed message: ${e.message}`);
    throw e;
  }
  if (r.remaining !== 0) throw formerr(`${r.remaining} octet(s) after the last record`);
  if (!found) return undefined;
  if (found.klass !== CLASS_ANY || found.ttl !== 0) {
    throw formerr(
      `the TSIG RR has class ${found.klass} and TTL ${found.ttl}; RFC 8945 §4.2 requires ANY and 0`,
    );
  }
  const d = new WireReader(message.subarray(0, found.rdataStart + found.rdlength), found.rdataStart);
  let record: TsigRecord;
  try {
    const algorithm = d.name();
    const timeSigned = d.u16() * 0x1_0000_0000 + d.u32();
    const fudge = d.u16();
    const mac = new Uint8Array(d.bytes(d.u16()));
    const originalId = d.u16();
    const error = d.u16();
    const otherData = new Uint8Array(d.bytes(d.u16()));
    record = { keyName: found.name, algorithm, timeSigned, fudge, mac, originalId, error, otherData };
  } catch (e) {
    if (e instanceof WireError) throw formerr(`malformed TSIG RDATA: ${e.message}`);
    throw e;
  }
  if (d.remaining !== 0) throw formerr(`the TSIG RDATA has ${d.remaining} octet(s) after Other Data`);
  return {
    record,
    start: found.start,
    stripped: withCount(message.subarray(0, found.start), ar - 1),
  };
}

// ---------------------------------------------------------------------------------------------------
// Verification

export interface VerifyOptions {
  /** The verifier's clock, seconds since the epoch. Default: now. */
  now?: number;
  /** Verifying a response: the MAC of the request (as sent). */
  requestMac?: Uint8Array;
  /** Verifying the second or later message of a multi-message response: the previous MAC (§5.3.1). */
  previousMac?: Uint8Array;
  /** Unsigned messages received since the previous signed one (§5.3.1). */
  unsignedBefore?: readonly Uint8Array[];
  /**
   * Local truncation policy (§5.2.4): MACs shorter than this many octets are refused with BADTRUNC.
   * Default: whatever RFC 8945 §5.2.2.1 allows.
   */
  minMacSize?: number;
  /**
   * Refuse any truncated MAC with BADTRUNC (§5.2.2.1 lets a verifier require the full length): the
   * MAC length is not itself signed, so every allowed prefix of a captured MAC verifies too.
   */
  requireFullMac?: boolean;
  /**
   * The widest window this side accepts, in seconds: the sender's fudge counts up to this much
   * (RFC 8945 §5.2.3 and §10: the fudge is the sender's proposal; the verifier decides how much skew
   * it accepts). A server that remembers requests against replays must remember them for as long as
   * it accepts them: capped, that is a fixed span. Default: the sender's fudge.
   */
  maxFudge?: number;
}

/** The fudge this server signs with and, for requests it verifies, the most it accepts (RFC 8945 §10). */
export const SERVER_FUDGE_S = 300;

export type VerifyResult = TsigVerified | TsigFailure;

export interface TsigVerified {
  ok: true;
  key: TsigKey;
  /** The MAC as the message carried it: the request MAC for the response, the previous MAC for a stream. */
  mac: Uint8Array;
  /** The message without its TSIG RR, ARCOUNT decremented. */
  stripped: Uint8Array;
  tsig: TsigRecord;
}

export interface TsigFailure {
  ok: false;
  /** UNSIGNED: no TSIG at all. The others are the RFC 8945 §5.2 outcomes. */
  error: TsigErrorName | 'FORMERR' | 'UNSIGNED';
  /** RCODE of the error response: NOTAUTH (9) for TSIG errors, FORMERR (1). */
  rcode: number;
  message: string;
  /** True when the peer reported this error in its (unsigned) TSIG, e.g. a server's BADSIG answer. */
  reportedByPeer?: boolean;
  tsig?: TsigRecord;
  key?: TsigKey;
  /** For BADTIME and BADTRUNC the MAC was valid: it is here so that the error response can be signed. */
  mac?: Uint8Array;
  stripped?: Uint8Array;
}

/** Looks a key up by its (lowercase, absolute) name. */
export type TsigKeyring = (name: Name) => TsigKey | undefined;

/** A keyring over a list of keys. */
export function keyring(keys: readonly TsigKey[]): TsigKeyring {
  const byName = new Map(keys.map((k) => [k.name, k]));
  return (name) => byName.get(asciiLower(name));
}

/**
 * Verifies a message's TSIG in the order of RFC 8945 §5.2: format (FORMERR), key known and algorithm
 * matching (BADKEY), MAC length rules (§5.2.2.1, FORMERR) and the MAC itself (BADSIG, compared in
 * constant time), then the time (BADTIME), then the local truncation policy (BADTRUNC).
 */
export function verifyMessage(
  message: Uint8Array,
  keys: TsigKeyring,
  options: VerifyOptions = {},
): VerifyResult {
  let found: FoundTsig | undefined;
  try {
    found = readTsig(message);
  } catch (e) {
    return fail('FORMERR', (e as Error).message);
  }
  if (!found) return fail('UNSIGNED', 'the message has no TSIG record');
  const { record, stripped } = found;
  const base = { tsig: record, stripped };
  const algorithm = algorithmOf(record.algorithm);
  const key = keys(asciiLower(record.keyName));
  if (!key) return fail('BADKEY', `unknown TSIG key ${record.keyName}`, base);
  if (algorithm !== key.algorithm) {
    return fail(
      'BADKEY',
      `TSIG key ${key.name} is ${key.algorithm}, but the message uses algorithm ${record.algorithm}`,
      { ...base, key },
    );
  }
  // An error response to a request carries the error, usually with an empty MAC (§5.3.2).
  if (record.error !== 0 && record.mac.length === 0) {
    const name = errorName(record.error);
    return {
      ok: false,
      error: name ?? 'FORMERR',
      rcode: name ? RCODE_NOTAUTH : RCODE_FORMERR,
      message: `the peer answered with TSIG error ${name ?? record.error} and no MAC`,
      reportedByPeer: true,
      ...base,
      key,
    };
  }
  // RFC 8945 §5.2.2.1: never longer than the hash; never shorter than max(10, half the hash).
  const full = HASH[algorithm].length;
  const size = record.mac.length;
  if (size > full) return fail('FORMERR', `the MAC has ${size} octets but ${algorithm} gives ${full}`, base);
  const floor = Math.max(10, full / 2);
  if (size < floor) {
    return fail(
      'FORMERR',
      `the MAC is truncated to ${size} octets; ${algorithm} allows no fewer than ${floor}`,
      {
        ...base,
        key,
      },
    );
  }
  const priorMac = options.previousMac;
  const expected = computeMac({
    algorithm,
    secret: key.secret,
    keyName: record.keyName,
    algorithmName: record.algorithm,
    // §4.3.2: the message as it was before the TSIG was added, with the original ID.
    message: withCount(stripped, arcountOf(stripped), record.originalId),
    fields: record,
    ...(priorMac !== undefined
      ? { priorMac, ...(options.unsignedBefore ? { unsignedBefore: options.unsignedBefore } : {}) }
      : options.requestMac !== undefined
        ? { requestMac: options.requestMac }
        : {}),
  });
  if (!timingSafeEqual(expected.subarray(0, size), record.mac)) {
    return fail(
      'BADSIG',
      `the MAC does not match: the message was altered or signed with another secret for ${key.name}`,
      {
        ...base,
        key,
      },
    );
  }
  if (record.error !== 0) {
    // A signed error (BADTIME, BADTRUNC): authentic, but still an error.
    const name = errorName(record.error);
    return {
      ok: false,
      error: name ?? 'FORMERR',
      rcode: name ? RCODE_NOTAUTH : RCODE_FORMERR,
      message: `the peer answered with TSIG error ${name ?? record.error}`,
      reportedByPeer: true,
      ...base,
      key,
      mac: record.mac,
    };
  }
  const now = options.now ?? nowSeconds();
  // §5.2.3: outside [time signed - fudge, time signed + fudge], the fudge at most this side's.
  const fudge = Math.min(record.fudge, options.maxFudge ?? record.fudge);
  if (Math.abs(now - record.timeSigned) > fudge) {
    return fail(
      'BADTIME',
      `signed at ${record.timeSigned} with fudge ${record.fudge}${fudge < record.fudge ? ` (this server accepts at most ${fudge})` : ''}, but the time here is ${now}; check both clocks (NTP)`,
      { ...base, key, mac: record.mac },
    );
  }
  const minMacSize = options.requireFullMac ? full : options.minMacSize;
  if (minMacSize !== undefined && size < minMacSize) {
    return fail(
      'BADTRUNC',
      `the MAC is truncated to ${size} octets; this side requires at least ${minMacSize}`,
      {
        ...base,
        key,
        mac: record.mac,
      },
    );
  }
  return { ok: true, key, mac: record.mac, stripped, tsig: record };
}

function fail(
  error: TsigFailure['error'],
  message: string,
  extra: Omit<TsigFailure, 'ok' | 'error' | 'rcode' | 'message'> = {},
): TsigFailure {
  return {
    ok: false,
    error,
    rcode: error === 'FORMERR' || error === 'UNSIGNED' ? RCODE_FORMERR : RCODE_NOTAUTH,
    message,
    ...extra,
  };
}

function errorName(code: number): TsigErrorName | undefined {
  for (const [k, v] of Object.entries(TsigErrorCode))
    if (v === code && k !== 'NOERROR') return k as TsigErrorName;
  return undefined;
}

/**
 * The response to a request whose TSIG failed (RFC 8945 §5.3.2): the request's header and question,
 * QR set, no records. FORMERR: RCODE 1 and no TSIG. BADKEY, BADSIG: RCODE NOTAUTH and an unsigned
 * TSIG (empty MAC) with the error. BADTIME, BADTRUNC: NOTAUTH and a TSIG signed with the key and the
 * request MAC; BADTIME carries the server's time in Other Data (§5.2.3). UNSIGNED gives undefined:
 * an unsigned request needs no TSIG error.
 */
export function tsigErrorResponse(
  request: Uint8Array,
  failure: TsigFailure,
  options: { now?: number } = {},
): Uint8Array | undefined {
  if (failure.error === 'UNSIGNED' || request.length < HEADER) return undefined;
  const question = rawQuestion(request);
  const flags = ((request[2]! & 0x79) << 8) | 0x8000; // keep opcode and RD; set QR
  const header = (rcode: number, ar: number) =>
    new Bytes()
      .u16(idOf(request))
      .u16(flags | (rcode & 0xf))
      .u16(question ? 1 : 0)
      .u16(0)
      .u16(0)
      .u16(ar)
      .finish();
  const body = (rcode: number, ar: number) => {
    const b = new Bytes().add(header(rcode, ar));
    if (question) b.add(question);
    return b.finish();
  };
  const tsig = failure.tsig;
  if (failure.error === 'FORMERR' || !tsig) return body(RCODE_FORMERR, 0);
  const error = TsigErrorCode[failure.error];
  if ((failure.error === 'BADTIME' || failure.error === 'BADTRUNC') && failure.key && failure.mac) {
    const now = options.now ?? nowSeconds();
    return signMessage(body(RCODE_NOTAUTH, 0), failure.key, {
      // §5.2.3: the request's Time Signed, and the server's time in Other Data.
      time: tsig.timeSigned,
      fudge: tsig.fudge,
      requestMac: failure.mac,
      error,
      ...(failure.error === 'BADTIME' ? { otherData: new Bytes().u48(now).finish() } : {}),
    }).bytes;
  }
  // §5.3.2: BADKEY and BADSIG answers are unsigned: the key or the MAC could not be trusted.
  const message = body(RCODE_NOTAUTH, 1);
  const rr = encodeTsigRecord(
    asciiLower(tsig.keyName),
    tsig.algorithm,
    { timeSigned: tsig.timeSigned, fudge: tsig.fudge, error, otherData: new Uint8Array(0) },
    new Uint8Array(0),
    idOf(request),
  );
  const out = new Uint8Array(message.length + rr.length);
  out.set(message);
  out.set(rr, message.length);
  return out;
}

/** The question section's octets (one question), or undefined when there is none or it is malformed. */
function rawQuestion(message: Uint8Array): Uint8Array | undefined {
  if (((message[4]! << 8) | message[5]!) !== 1) return undefined;
  let pos = HEADER;
  for (;;) {
    const len = message[pos];
    if (len === undefined || (len & 0xc0) !== 0) return undefined;
    pos += 1 + len;
    if (len === 0) break;
  }
  return pos + 4 <= message.length ? message.slice(HEADER, pos + 4) : undefined;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

// ---------------------------------------------------------------------------------------------------
// Multi-message responses (RFC 8945 §5.3.1), e.g. AXFR over TCP

/**
 * Signs the messages of one multi-message response in order. RFC 8945 §5.3.1 says every message MUST
 * be signed (`every` = 1, the default); older peers accepted a TSIG on at least every 100th message,
 * so `every` may be up to 100. The first and the last message are always signed.
 */
export class TsigStreamSigner {
  private readonly key: TsigKey;
  private previous: Uint8Array | undefined;
  private readonly requestMac: Uint8Array | undefined;
  private readonly every: number;
  private readonly fudge: number;
  private readonly now: () => number;
  private unsigned: Uint8Array[] = [];

  constructor(
    key: TsigKey,
    requestMac: Uint8Array | undefined,
    options: { every?: number; fudge?: number; now?: () => number } = {},
  ) {
    const every = options.every ?? 1;
    if (!Number.isInteger(every) || every < 1 || every > 100) {
      throw new DnsError('TSIG_BAD_INTERVAL', `sign every 1 to 100 messages (RFC 8945 §5.3.1), not ${every}`);
    }
    this.key = key;
    this.requestMac = requestMac;
    this.every = every;
    this.fudge = options.fudge ?? 300;
    this.now = options.now ?? nowSeconds;
  }

  /** The message to send: signed, or as given when this one may go unsigned. */
  sign(message: Uint8Array, last: boolean): Uint8Array {
    const first = this.previous === undefined;
    if (!first && !last && this.unsigned.length + 1 < this.every) {
      this.unsigned.push(message);
      return message;
    }
    const result = first
      ? signMessage(message, this.key, {
          time: this.now(),
          fudge: this.fudge,
          ...(this.requestMac ? { requestMac: this.requestMac } : {}),
        })
      : signMessage(message, this.key, {
          time: this.now(),
          fudge: this.fudge,
          previousMac: this.previous!,
          unsignedBefore: this.unsigned,
        });
    this.previous = result.mac;
    this.unsigned = [];
    return result.bytes;
  }
}

/**
 * Verifies the messages of one multi-message response in order (RFC 8945 §5.3.1): the first must be
 * signed (as a response to `requestMac`), later ones are chained to the previous MAC, up to 99 unsigned
 * messages may come between two signed ones, and the last must be signed (`end()`). After a failure the
 * stream is broken: the client MUST close the connection.
 */
export class TsigStreamVerifier {
  private readonly keys: TsigKeyring;
  private readonly requestMac: Uint8Array | undefined;
  private readonly now: () => number;
  private previous: Uint8Array | undefined;
  private key: TsigKey | undefined;
  private unsigned: Uint8Array[] = [];
  private failed: TsigFailure | undefined;
  private lastSigned = false;
  readonly maxUnsigned = 99;

  constructor(keys: TsigKeyring, requestMac: Uint8Array | undefined, options: { now?: () => number } = {}) {
    this.keys = keys;
    this.requestMac = requestMac;
    this.now = options.now ?? nowSeconds;
  }

  /** Verifies the next message; `stripped` is the message without TSIG (or as received when unsigned). */
  verify(message: Uint8Array): { ok: true; signed: boolean; stripped: Uint8Array } | TsigFailure {
    if (this.failed) return this.failed;
    const first = this.previous === undefined;
    const keys: TsigKeyring = this.key ? (n) => (n === this.key!.name ? this.key : undefined) : this.keys;
    const result = verifyMessage(message, keys, {
      now: this.now(),
      ...(first
        ? this.requestMac
          ? { requestMac: this.requestMac }
          : {}
        : { previousMac: this.previous!, unsignedBefore: this.unsigned }),
    });
    if (result.ok) {
      this.previous = result.mac;
      this.key = result.key;
      this.unsigned = [];
      this.lastSigned = true;
      return { ok: true, signed: true, stripped: result.stripped };
    }
    if (result.error === 'UNSIGNED' && !first && this.unsigned.length < this.maxUnsigned) {
      this.unsigned.push(message);
      this.lastSigned = false;
      return { ok: true, signed: false, stripped: message };
    }
    this.failed =
      result.error === 'UNSIGNED'
        ? fail(
            'BADSIG',
            first
              ? 'the first message of the response has no TSIG (RFC 8945 §5.3.1)'
              : `more than ${this.maxUnsigned} messages in a row without TSIG (RFC 8945 §5.3.1)`,
          )
        : result;
    return this.failed;
  }

  /** After the last message: the last message must have been signed. */
  end(): { ok: true } | TsigFailure {
    if (this.failed) return this.failed;
    if (!this.lastSigned)
      return fail('BADSIG', 'the last message of the response has no TSIG (RFC 8945 §5.3.1)');
    return { ok: true };
  }
}
