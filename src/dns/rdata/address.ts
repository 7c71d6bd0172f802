/** A (RFC 1035 §3.4.1) and AAAA (RFC 3596 §2.2) address RDATA. */
import { DnsError } from '../errors.ts';
import {
  formatIPv4,
  formatIPv6,
  isCanonicalHexIPv6,
  parseHexIPv6Into,
  parseIPv4Into,
  parseIPv6Into,
} from '../ip.ts';
import type { RdataCodec } from './codec.ts';
import type { AaaaRdata, ARdata } from './types.ts';

const scratch = new Uint8Array(16);

function badAddress(type: string, address: string): DnsError {
  return new DnsError(
    'BAD_RDATA',
    `cannot encode ${type} address ${JSON.stringify(address)}: not a valid address; build RDATA with parseRdata`,
  );
}

/**
 * The canonical address, as the text it was parsed from when that is already canonical (most
 * records are written so): the record set's own string then, not a second copy of it kept by every
 * parsed record for as long as its zone serves it (docs/benchmarks.md, seventh round).
 */
function asWritten(canonical: string, text: string): string {
  return canonical === text ? text : canonical;
}

/**
 * The A or AAAA RDATA of `text` when the text is an address and nothing else, as most values are
 * written (decimal digits and dots; hex digits and colons): what the codec's `parse` gives for it,
 * without the fields, tokens and generic-form test `parseRdata` goes through first (such text holds
 * nothing the tokenizer would split, quote or unescape, so it is one field, the address). Undefined
 * for anything else (a dotted-quad tail, spaces, a wrong address), which `parse` then judges and
 * reports as before.
 */
export function plainAddress(type: 'A' | 'AAAA', text: string): ARdata | AaaaRdata | undefined {
  // The strict IPv4 parse accepts only canonical octets (no leading zeros): such text is canonical.
  if (type === 'A') return parseIPv4Into(text, scratch, 0) ? { type: 'A', address: text } : undefined;
  // Most text is written canonical: that is judged without making the canonical text to compare.
  if (!parseHexIPv6Into(text, scratch, 0)) return undefined;
  return { type: 'AAAA', address: isCanonicalHexIPv6(text, scratch, 0) ? text : formatIPv6(scratch) };
}

export const aCodec: RdataCodec<ARdata> = {
  syntax: '<IPv4 address>, e.g. "192.0.2.1"',
  parse(f) {
    f.expectCount(1);
    const text = f.next('address').text;
    const bytes = new Uint8Array(4);
    if (!parseIPv4Into(text, bytes, 0)) {
      const hint = text.includes(':') ? '; this looks like IPv6, use an AAAA record' : '';
      throw f.invalid(
        'address',
        text,
        `expected an IPv4 address of four decimal octets 0-255 without leading zeros, e.g. "192.0.2.1"${hint}`,
      );
    }
    return { type: 'A', address: asWritten(formatIPv4(bytes), f.text) };
  },
  print: (r) => r.address,
  encode(r, w) {
    if (!parseIPv4Into(r.address, scratch, 0)) throw badAddress('A', r.address);
    w.u8(scratch[0]!);
    w.u8(scratch[1]!);
    w.u8(scratch[2]!);
    w.u8(scratch[3]!);
  },
  decode: (r) => ({ type: 'A', address: formatIPv4(r.bytes(4)) }),
};

export const aaaaCodec: RdataCodec<AaaaRdata> = {
  syntax: '<IPv6 address>, e.g. "2001:db8::1"',
  parse(f) {
    f.expectCount(1);
    const text = f.next('address').text;
    const bytes = new Uint8Array(16);
    if (!parseIPv6Into(text, bytes, 0)) {
      const hint = /^[0-9.]+$/.test(text) ? '; this looks like IPv4, use an A record' : '';
      throw f.invalid('address', text, `expected an IPv6 address (RFC 4291 §2.2), e.g. "2001:db8::1"${hint}`);
    }
    return { type: 'AAAA', address: asWritten(formatIPv6(bytes), f.text) };
  },
  print: (r) => r.address,
  encode(r, w) {
    if (!parseIPv6Into(r.address, scratch, 0)) {
      throw badAddress('AAAA', r.address);
    }
    w.bytes(scratch);
  },
  decode: (r) => ({ type: 'AAAA', address: formatIPv6(r.bytes(16)) }),
};
