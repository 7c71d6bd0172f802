import { Opcode, Rcode } from '../dns/message.ts';
import { encodeRdata } from '../dns/rdata.ts';
import { RRClass, RRType } from '../dns/rrtype.ts';
import { WireWriter } from '../dns/wire.ts';
import { type ClientSubnet, ECS_OPTION, HEADER_LENGTH, type Query, type QueryEdns } from './query.ts';
import type { ServedRRset } from './zone-snapshot.ts';

/** The payload size we advertise and honour over UDP (the DNS Flag Day 2020 value, RFC 9715 §3). */
export const SERVER_UDP_PAYLOAD = 1232;
/** RFC 1035 §4.2.1: without EDNS a UDP message is at most 512 octets. */
export const CLASSIC_UDP_LIMIT = 512;
const OPT_LENGTH = 11;

export interface ResponseParts {
  rcode: number;
  aa: boolean;
  answer: readonly ServedRRset[];
  authority: readonly ServedRRset[];
  additional: readonly ServedRRset[];
  /** For referrals: glue that must fit, or the response is truncated (RFC 9471 §3). */
  glueRequired?: boolean;
  /** TXT answers in class CH are written with class CH. */
  rrclass?: number;
  /**
   * The Client Subnet option to answer with, in the OPT (RFC 7871 §7.2.1: the query's family, source
   * prefix and address, with the scope of the answer); only set when the query had one.
   */
  clientSubnet?: ClientSubnet;
  /**
   * The answer was selected for this client (see selection/): it must not be reused for another
   * client, so the response cache does not keep it.
   */
  selected?: boolean;
}

export interface EncodedResponse {
  bytes: Uint8Array;
  truncated: boolean;
  /** Additional records were left out because they did not fit (the response is not truncated for it). */
  dropped: boolean;
}

/** The largest response allowed: 64 KiB over TCP; over UDP, 512 or the EDNS size capped by ours (RFC 6891 §6.2.5). */
export function responseLimit(edns: QueryEdns | undefined, tcp: boolean): number {
  if (tcp) return 65535;
  if (!edns) return CLASSIC_UDP_LIMIT;
  return Math.min(Math.max(edns.udpSize, CLASSIC_UDP_LIMIT), SERVER_UDP_PAYLOAD);
}

/**
 * Writes a response: header, the question as asked (its case preserved, RFC 1035 §7.1 / 0x20),
 * compressed sections, and OPT when the query had one (RFC 6891 §7). When the answer or authority
 * section does not fit, the response is cut to the question with TC set (RFC 2181 §9); additional
 * records that do not fit are left out without TC, except required referral glue.
 */
export function encodeResponse(
  w: WireWriter,
  query: Pick<Query, 'id' | 'opcode' | 'rd' | 'cd'> & Partial<Pick<Query, 'qname' | 'qtype' | 'qclass'>>,
  parts: ResponseParts,
  edns: QueryEdns | undefined,
  limit: number,
): EncodedResponse {
  w.reset();
  const hasQuestion = query.qname !== undefined;
  // RFC 6891 §6.1.3: BADVERS and other extended rcodes need the OPT's upper bits.
  const rcodeLow = parts.rcode & 0xf;
  const rcodeHigh = parts.rcode >> 4;
  w.u16(query.id);
  w.u16(0); // flags, patched below
  w.u16(hasQuestion ? 1 : 0);
  w.u16(0);
  w.u16(0);
  w.u16(0);
  if (hasQuestion) {
    w.name(query.qname!, false);
    w.u16(query.qtype!);
    w.u16(query.qclass!);
  }
  const afterQuestion = w.length;
  const subnet = edns ? parts.clientSubnet : undefined;
  const budget = limit - (edns ? OPT_LENGTH : 0) - (subnet ? 8 + subnet.address.length : 0);
  const rrclass = parts.rrclass ?? RRClass.IN;
  let truncated = false;
  let dropped = false;
  const counts = [0, 0, 0];
  const sections = [parts.answer, parts.authority, parts.additional];
  outer: for (let s = 0; s < 3; s++) {
    for (const rrset of sections[s]!) {
      const before = w.length;
      const wire = rdataWire(rrset);
      // Counted from the wire form when there is one: an RRset read from a zone image decodes its
      // RDATA only when asked for it (image/image-zone.ts).
      const records = wire !== null ? wire.length : rrset.rdata.length;
      for (let i = 0; i < records; i++) {
        w.name(rrset.owner, true);
        w.u16(rrset.type);
        w.u16(rrclass);
        w.u32(rrset.ttl);
        if (wire !== null) {
          const bytes = wire[i]!;
          w.u16(bytes.length);
          w.bytes(bytes);
          continue;
        }
        const lengthAt = w.length;
        w.u16(0);
        encodeRdata(rrset.rdata[i]!, w);
        w.patchU16(lengthAt, w.length - lengthAt - 2);
      }
      if (w.length > budget) {
        if (s === 2 && !parts.glueRequired) {
          w.truncate(before); // drop the additional records that do not fit, keep what does
          dropped = true;
          break outer;
        }
        w.truncate(afterQuestion);
        counts[0] = counts[1] = counts[2] = 0;
        truncated = true;
        break outer;
      }
      counts[s]! += records;
    }
  }
  let arcount = counts[2]!;
  if (edns) {
    // RFC 6891 §6.1.2: root owner, CLASS = our payload size, TTL = ext-rcode | version | DO.
    w.u8(0);
    w.u16(41);
    w.u16(SERVER_UDP_PAYLOAD);
    w.u8(rcodeHigh);
    w.u8(0);
    w.u16(edns.dnssecOk ? 0x8000 : 0); // RFC 3225 §3: the DO bit is echoed
    if (subnet) {
      // RFC 7871 §6: FAMILY, SOURCE PREFIX-LENGTH, SCOPE PREFIX-LENGTH, ADDRESS.
      w.u16(8 + subnet.address.length);
      w.u16(ECS_OPTION);
      w.u16(4 + subnet.address.length);
      w.u16(subnet.family);
      w.u8(subnet.sourcePrefix);
      w.u8(subnet.scopePrefix);
      w.bytes(subnet.address);
    } else w.u16(0);
    arcount++;
  }
  let flags = 0x8000 | ((query.opcode & 0xf) << 11) | rcodeLow;
  if (parts.aa) flags |= 0x0400;
  if (truncated) flags |= 0x0200;
  // RFC 1035 §4.1.1, RFC 6895 §2: RD (like RA, AA and AD) is defined for QUERY only; a NOTIMP for
  // another opcode does not copy it.
  if (query.rd && query.opcode === Opcode.QUERY) flags |= 0x0100;
  if (query.cd) flags |= 0x0010;
  w.patchU16(2, flags);
  w.patchU16(6, counts[0]!);
  w.patchU16(8, counts[1]!);
  w.patchU16(10, arcount);
  return { bytes: w.finishPooled(), truncated, dropped };
}

/**
 * RDATA that holds domain names is always encoded in place. Names in NS, CNAME, SOA, PTR and MX may be
 * compressed (RFC 3597 §4), so their bytes depend on the message; names in SRV, NAPTR, SVCB and HTTPS
 * are never compressed but, written through the writer, become compression targets for later names
 * (an SRV target's A record in the additional section points into it). Every other RDATA is the
 * same bytes in every message.
 */
const NAMED_RDATA: ReadonlySet<number> = new Set([
  RRType.NS,
  RRType.CNAME,
  RRType.SOA,
  RRType.PTR,
  RRType.MX,
  RRType.SRV,
  RRType.NAPTR,
  RRType.SVCB,
  RRType.HTTPS,
]);
const rdataScratch = new WireWriter(512);

/** The RRset's RDATA in wire form, computed once per RRset; null when it holds domain names. */
function rdataWire(served: ServedRRset): readonly Uint8Array[] | null {
  // A wildcard's synthesized copies share its RDATA: the wire form is kept on the wildcard's RRset.
  const rrset = served.source ?? served;
  const cached = rrset.wire;
  if (cached !== undefined) return cached;
  let wire: Uint8Array[] | null = null;
  if (!NAMED_RDATA.has(rrset.type)) {
    wire = rrset.rdata.map((r) => {
      rdataScratch.reset();
      encodeRdata(r, rdataScratch);
      return rdataScratch.finish();
    });
  }
  rrset.wire = wire;
  return wire;
}

/** A response carrying only an rcode (and the question when it could be read). */
export function errorParts(rcode: number): ResponseParts {
  return { rcode, aa: false, answer: [], authority: [], additional: [] };
}

export { HEADER_LENGTH, Rcode };
