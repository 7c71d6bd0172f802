/**
 * The canonical form and order of RRs that DNSSEC signatures cover (RFC 4034 §6). Pure: bytes in,
 * bytes out.
 */

import { encodeNameUncompressed, type Name } from '../name.ts';
import { binaryFromBytes } from '../octets.ts';
import { encodeRdata, type Rdata } from '../rdata.ts';
import { WireWriter } from '../wire.ts';

/**
 * Types whose RDATA names are lowercased in the canonical form: RFC 4034 §6.2 item 3, less NSEC
 * (RFC 6840 §5.1), restricted to the types Zonekeeper manages. SVCB/HTTPS targets and DS are not on
 * the list and keep their case.
 */
const LOWERCASE_RDATA: ReadonlySet<string> = new Set(['NS', 'CNAME', 'SOA', 'PTR', 'MX', 'NAPTR', 'SRV']);

/** Writes names uncompressed, and lowercased when asked (RFC 4034 §6.2 items 2 and 3). */
class CanonicalWriter extends WireWriter {
  private readonly lowercase: boolean;
  constructor(lowercase: boolean) {
    super(64);
    this.lowercase = lowercase;
    // Never compressed, so no suffix needs remembering for a pointer.
    this.compression = false;
  }
  override name(name: Name, _compress: boolean): void {
    const start = this.length;
    super.name(name, false);
    if (this.lowercase) this.lowercaseSince(start);
  }
}

/** The canonical wire form of one RDATA (RFC 4034 §6.2 items 2-3). */
export function canonicalRdata(rdata: Rdata): Uint8Array {
  const w = new CanonicalWriter(LOWERCASE_RDATA.has(rdata.type));
  encodeRdata(rdata, w);
  return w.finish();
}

/**
 * One record's value as records compare: its wire form, uncompressed, with every embedded name
 * lowercased, as a binary string. Names are equal without regard to case (RFC 4343 §3), every other
 * field octet for octet, so two values are the same record (RFC 2181 §5) exactly when these strings
 * are: TXT "ABC" and "abc" are two records, `mail.example.` and `MAIL.example.` one.
 */
export function recordIdentity(rdata: Rdata): string {
  const w = new CanonicalWriter(true);
  encodeRdata(rdata, w);
  return binaryFromBytes(w.finish());
}

/** An owner or signer name in canonical wire form: uncompressed, lowercased (RFC 4034 §6.2 items 1-3). */
export function canonicalName(name: Name): Uint8Array {
  const wire = encodeNameUncompressed(name);
  for (let i = 0; i < wire.length; i++) {
    const c = wire[i]!;
    if (c >= 0x41 && c <= 0x5a) wire[i] = c + 0x20;
  }
  return wire;
}

/** Compares octet strings as unsigned left-justified sequences (RFC 4034 §6.3). */
export function compareOctets(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** RDATA wire forms in canonical order with duplicates removed (RFC 4034 §6.3). */
export function canonicalOrder(rdatas: readonly Uint8Array[]): Uint8Array[] {
  const sorted = [...rdatas].sort(compareOctets);
  const out: Uint8Array[] = [];
  for (const r of sorted) if (out.length === 0 || compareOctets(out[out.length - 1]!, r) !== 0) out.push(r);
  return out;
}
