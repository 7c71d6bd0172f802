/**
 * SvcParams of SVCB/HTTPS records (RFC 9460 §7, §8; RFC 9461 dohpath; RFC 9540 ohttp): key mnemonics and
 * the presentation <-> wire conversion of each value. Values are kept in wire form.
 */
import { base64ToBytes, bytesToBase64 } from '../base64.ts';
import { DnsError } from '../errors.ts';
import { formatIPv4, formatIPv6, parseIPv4Into, parseIPv6Into } from '../ip.ts';
import { binaryFromBytes, bytesFromBinary } from '../octets.ts';
import { decodeEscapes, escapeQuotedText } from '../presentation.ts';
import type { SvcParam } from './types.ts';

export const SvcParamKey = {
  MANDATORY: 0,
  ALPN: 1,
  NO_DEFAULT_ALPN: 2,
  PORT: 3,
  IPV4HINT: 4,
  ECH: 5,
  IPV6HINT: 6,
  DOHPATH: 7,
  OHTTP: 8,
} as const;

/** RFC 9460 §14.3.2: key 65535 is reserved ("Invalid key"). */
export const INVALID_SVC_PARAM_KEY = 65535;

const KEY_NAMES: readonly string[] = [
  'mandatory',
  'alpn',
  'no-default-alpn',
  'port',
  'ipv4hint',
  'ech',
  'ipv6hint',
  'dohpath',
  'ohttp',
];

function bad(message: string): DnsError {
  return new DnsError('BAD_SVC_PARAM', message);
}

/** Key code for a mnemonic or "keyNNNNN" (RFC 9460 §2.1, no leading zeros); undefined if not a key. */
export function svcParamKeyCode(name: string): number | undefined {
  const known = KEY_NAMES.indexOf(name);
  if (known >= 0) return known;
  if (!name.startsWith('key') || name.length < 4 || name.length > 8) return undefined;
  if (name.length > 4 && name.charCodeAt(3) === 0x30) return undefined; // leading zero
  let value = 0;
  for (let i = 3; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return undefined;
    value = value * 10 + (c - 0x30);
  }
  return value <= 0xffff ? value : undefined;
}

export function svcParamKeyName(key: number): string {
  return KEY_NAMES[key] ?? `key${key}`;
}

/**
 * RFC 9460 Appendix A.1: splits a decoded value-list on commas; "\," and "\\" inside an item stand for a
 * literal comma and backslash. Empty items are not allowed.
 */
export function splitValueList(decoded: string, key: string): string[] {
  const items: string[] = [];
  let item = '';
  for (let i = 0; i <= decoded.length; i++) {
    const c = decoded[i];
    if (c === undefined || c === ',') {
      if (item.length === 0) {
        throw bad(`${key} has an empty item in ${JSON.stringify(decoded)}; remove the extra comma`);
      }
      items.push(item);
      item = '';
    } else if (c === '\\') {
      const next = decoded[i + 1];
      if (next !== ',' && next !== '\\') {
        throw bad(
          `${key} value ${JSON.stringify(decoded)} has a backslash not followed by "," or "\\" (RFC 9460 Appendix A.1)`,
        );
      }
      item += next;
      i++;
    } else {
      item += c;
    }
  }
  return items;
}

function escapeListItem(item: string): string {
  let out = '';
  for (const c of item) out += c === ',' || c === '\\' ? '\\' + c : c;
  return out;
}

function decode(raw: string, key: string): string {
  try {
    return decodeEscapes(raw);
  } catch (e) {
    throw bad(`${key}: ${(e as Error).message}`);
  }
}

/**
 * Wire value for a key given its presentation value: `raw` is the text after "=" with escapes still in
 * place, or undefined when there was no "=".
 */
export function parseSvcParamValue(key: number, raw: string | undefined): Uint8Array {
  const name = svcParamKeyName(key);
  const needValue = (example: string): string => {
    if (raw === undefined || raw.length === 0) throw bad(`${name} requires a value, e.g. ${name}=${example}`);
    return raw;
  };
  switch (key) {
    case SvcParamKey.MANDATORY: {
      const items = splitValueList(decode(needValue('alpn,port'), name), name);
      const keys: number[] = [];
      for (const item of items) {
        const k = svcParamKeyCode(item);
        if (k === undefined || k === INVALID_SVC_PARAM_KEY) {
          throw bad(
            `mandatory lists ${JSON.stringify(item)}, which is not a SvcParamKey; use names like alpn or key123`,
          );
        }
        // RFC 9460 §8: "mandatory" must not list itself, and keys must not repeat.
        if (k === SvcParamKey.MANDATORY)
          throw bad('mandatory must not list the key "mandatory" itself (RFC 9460 §8)');
        if (keys.includes(k))
          throw bad(`mandatory lists ${JSON.stringify(item)} twice; list each key once (RFC 9460 §8)`);
        keys.push(k);
      }
      keys.sort((a, b) => a - b); // RFC 9460 §8: wire order is strictly increasing
      const out = new Uint8Array(keys.length * 2);
      keys.forEach((k, i) => {
        out[2 * i] = k >> 8;
        out[2 * i + 1] = k & 0xff;
      });
      return out;
    }
    case SvcParamKey.ALPN: {
      const items = splitValueList(decode(needValue('h2,h3'), name), name);
      let s = '';
      for (const item of items) {
        // RFC 9460 §7.1.1: each alpn-id is a 1..255 octet length-prefixed string.
        if (item.length > 255)
          throw bad(`alpn protocol id ${JSON.stringify(item.slice(0, 20))}... exceeds 255 octets`);
        s += String.fromCharCode(item.length) + item;
      }
      return bytesFromBinary(s);
    }
    case SvcParamKey.NO_DEFAULT_ALPN:
    case SvcParamKey.OHTTP:
      // RFC 9460 §7.1.1 / RFC 9540 §4: the value must be empty.
      if (raw !== undefined && raw.length > 0) throw bad(`${name} takes no value; write just "${name}"`);
      return new Uint8Array(0);
    case SvcParamKey.PORT: {
      const text = decode(needValue('443'), name);
      let port = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c < 0x30 || c > 0x39 || text.length > 5) {
          throw bad(`port ${JSON.stringify(text)} is not an integer from 0 to 65535`);
        }
        port = port * 10 + (c - 0x30);
      }
      if (port > 0xffff) throw bad(`port ${JSON.stringify(text)} is not an integer from 0 to 65535`);
      return new Uint8Array([port >> 8, port & 0xff]);
    }
    case SvcParamKey.IPV4HINT: {
      const items = splitValueList(decode(needValue('192.0.2.1,192.0.2.2'), name), name);
      const out = new Uint8Array(items.length * 4);
      items.forEach((item, i) => {
        if (!parseIPv4Into(item, out, i * 4)) {
          throw bad(`ipv4hint ${JSON.stringify(item)} is not an IPv4 address like 192.0.2.1`);
        }
      });
      return out;
    }
    case SvcParamKey.ECH: {
      const text = decode(needValue('<base64 ECHConfigList>'), name);
      const bytes = base64ToBytes(text);
      if (bytes === undefined || bytes.length === 0) {
        throw bad(
          `ech ${JSON.stringify(text)} is not padded base64 (RFC 4648 §4) of an ECHConfigList (RFC 9460 §9)`,
        );
      }
      return bytes;
    }
    case SvcParamKey.IPV6HINT: {
      const items = splitValueList(decode(needValue('2001:db8::1'), name), name);
      const out = new Uint8Array(items.length * 16);
      items.forEach((item, i) => {
        if (!parseIPv6Into(item, out, i * 16)) {
          throw bad(`ipv6hint ${JSON.stringify(item)} is not an IPv6 address like 2001:db8::1`);
        }
      });
      return out;
    }
    case SvcParamKey.DOHPATH: {
      const text = decode(needValue('"/dns-query{?dns}"'), name);
      // RFC 9461 §5: a relative URI template with a "dns" variable.
      if (!text.startsWith('/') || !/\{[^}]*\bdns\b[^}]*\}/.test(text)) {
        throw bad(
          `dohpath ${JSON.stringify(text)} must be a relative URI template containing the "dns" variable, e.g. "/dns-query{?dns}" (RFC 9461 §5)`,
        );
      }
      return bytesFromBinary(text);
    }
    default: {
      if (raw === undefined) return new Uint8Array(0);
      const text = decode(raw, name);
      if (text.length > 0xffff) throw bad(`${name} value exceeds 65535 octets`);
      return bytesFromBinary(text);
    }
  }
}

/** Why a wire value is malformed for its key, or undefined if it is well-formed. */
export function svcParamWireProblem(key: number, v: Uint8Array): string | undefined {
  switch (key) {
    case SvcParamKey.MANDATORY: {
      if (v.length === 0 || v.length % 2 !== 0) return 'mandatory must be a non-empty list of 2-octet keys';
      let prev = -1;
      for (let i = 0; i < v.length; i += 2) {
        const k = (v[i]! << 8) | v[i + 1]!;
        if (k <= prev) return 'mandatory keys must be strictly increasing (RFC 9460 §8)';
        if (k === SvcParamKey.MANDATORY) return 'mandatory must not list itself (RFC 9460 §8)';
        prev = k;
      }
      return undefined;
    }
    case SvcParamKey.ALPN: {
      if (v.length === 0) return 'alpn must not be empty';
      for (let i = 0; i < v.length; ) {
        const len = v[i]!;
        if (len === 0 || i + 1 + len > v.length)
          return 'alpn protocol ids must be non-empty and fit the value';
        i += 1 + len;
      }
      return undefined;
    }
    case SvcParamKey.NO_DEFAULT_ALPN:
    case SvcParamKey.OHTTP:
      return v.length === 0 ? undefined : `${svcParamKeyName(key)} must have an empty value`;
    case SvcParamKey.PORT:
      return v.length === 2 ? undefined : 'port must be 2 octets';
    case SvcParamKey.IPV4HINT:
      return v.length > 0 && v.length % 4 === 0
        ? undefined
        : 'ipv4hint must be a non-empty multiple of 4 octets';
    case SvcParamKey.ECH:
      return v.length > 0 ? undefined : 'ech must not be empty';
    case SvcParamKey.IPV6HINT:
      return v.length > 0 && v.length % 16 === 0
        ? undefined
        : 'ipv6hint must be a non-empty multiple of 16 octets';
    case SvcParamKey.DOHPATH:
      return v.length > 0 ? undefined : 'dohpath must not be empty';
    default:
      return undefined;
  }
}

function quoted(binary: string): string {
  return '"' + escapeQuotedText(binary) + '"';
}

/** Canonical presentation of one SvcParam: "key" or "key=value". */
export function printSvcParam(p: SvcParam): string {
  const { key, value: v } = p;
  const name = svcParamKeyName(key);
  const generic = (): string => (v.length === 0 ? `key${key}` : `key${key}=${quoted(binaryFromBytes(v))}`);
  if (svcParamWireProblem(key, v) !== undefined) return generic();
  switch (key) {
    case SvcParamKey.MANDATORY: {
      const names: string[] = [];
      for (let i = 0; i < v.length; i += 2) names.push(svcParamKeyName((v[i]! << 8) | v[i + 1]!));
      return `${name}=${names.join(',')}`;
    }
    case SvcParamKey.ALPN: {
      const ids: string[] = [];
      for (let i = 0; i < v.length; ) {
        const len = v[i]!;
        ids.push(escapeListItem(binaryFromBytes(v, i + 1, i + 1 + len)));
        i += 1 + len;
      }
      return `${name}=${quoted(ids.join(','))}`;
    }
    case SvcParamKey.NO_DEFAULT_ALPN:
    case SvcParamKey.OHTTP:
      return name;
    case SvcParamKey.PORT:
      return `${name}=${(v[0]! << 8) | v[1]!}`;
    case SvcParamKey.IPV4HINT: {
      const addrs: string[] = [];
      for (let i = 0; i < v.length; i += 4) addrs.push(formatIPv4(v, i));
      return `${name}=${addrs.join(',')}`;
    }
    case SvcParamKey.ECH:
      return `${name}=${bytesToBase64(v)}`;
    case SvcParamKey.IPV6HINT: {
      const addrs: string[] = [];
      for (let i = 0; i < v.length; i += 16) addrs.push(formatIPv6(v, i));
      return `${name}=${addrs.join(',')}`;
    }
    case SvcParamKey.DOHPATH:
      return `${name}=${quoted(binaryFromBytes(v))}`;
    default:
      return generic();
  }
}
