import { Opcode, Rcode } from '../dns/message.ts';
import type { Name } from '../dns/name.ts';
import { RRType } from '../dns/rrtype.ts';
import { WireReader } from '../dns/wire.ts';

export const HEADER_LENGTH = 12;

export interface QueryEdns {
  /** RFC 6891 §6.2.5: values below 512 are treated as 512. */
  udpSize: number;
  version: number;
  dnssecOk: boolean;
  /** The EDNS Client Subnet option (RFC 7871 §6), when the query carried one. */
  clientSubnet?: ClientSubnet;
}

/** EDNS option code of Client Subnet (RFC 7871 §6). */
export const ECS_OPTION = 8;

/** The EDNS Client Subnet option of a query (RFC 7871 §6). */
export interface ClientSubnet {
  /** Address family (IANA Address Family Numbers): 1 IPv4, 2 IPv6. */
  family: 1 | 2;
  /** Leading bits of `address` that identify the client's network. */
  sourcePrefix: number;
  /** As sent; queries set it to 0 (RFC 7871 §6), responses carry the answer's scope. */
  scopePrefix: number;
  /** The network's address octets as sent: ceil(sourcePrefix / 8) of them, later bits zero. */
  address: Uint8Array;
}

export interface Query {
  id: number;
  opcode: number;
  rd: boolean;
  cd: boolean;
  qname: Name;
  qtype: number;
  qclass: number;
  edns?: QueryEdns;
}

/**
 * The outcome of reading a request: a query to answer, an error to answer with (FORMERR, NOTIMP)
 * echoing what could be read, or a packet to drop silently (too short to hold a header, or a response
 * — answering responses invites loops, RFC 1035 §7.3).
 */
export type ParsedQuery =
  | { kind: 'query'; query: Query }
  | {
      kind: 'error';
      rcode: number;
      id: number;
      opcode: number;
      rd: boolean;
      question?: Query;
      edns?: QueryEdns;
    }
  | { kind: 'drop'; why: 'short' | 'response' };

/**
 * `opcode`: the opcode read as a query (default QUERY); the UPDATE handler reads UPDATE messages'
 * framing, zone section and OPT with it.
 */
export function parseQuery(buf: Uint8Array, accepted: number = Opcode.QUERY): ParsedQuery {
  if (buf.length < HEADER_LENGTH) return { kind: 'drop', why: 'short' };
  const id = (buf[0]! << 8) | buf[1]!;
  const flags = (buf[2]! << 8) | buf[3]!;
  if (flags & 0x8000) return { kind: 'drop', why: 'response' };
  const opcode = (flags >> 11) & 0xf;
  const rd = (flags & 0x0100) !== 0;
  const cd = (flags & 0x0010) !== 0;
  const qdcount = (buf[4]! << 8) | buf[5]!;
  const ancount = (buf[6]! << 8) | buf[7]!;
  const nscount = (buf[8]! << 8) | buf[9]!;
  const arcount = (buf[10]! << 8) | buf[11]!;
  // RFC 1035 §4.1.1: NOTIMP for kinds of query we do not support. The message is still read, so that
  // the NOTIMP echoes the question and the OPT like every other error (RFC 6891 §7: a request with OPT
  // gets a response with OPT); whatever else is wrong with it, the answer stays NOTIMP.
  const notImplemented = opcode !== accepted;
  const fail = (rcode: number, question?: Query, edns?: QueryEdns): ParsedQuery => ({
    kind: 'error',
    rcode: notImplemented ? Rcode.NOTIMP : rcode,
    id,
    opcode,
    rd,
    ...(question ? { question } : {}),
    ...(edns ? { edns } : {}),
  });
  // RFC 9619: a query carries exactly one question.
  if (qdcount !== 1) return fail(Rcode.FORMERR);
  const r = new WireReader(buf, HEADER_LENGTH);
  let query: Query;
  try {
    const qname = r.name();
    const qtype = r.u16();
    const qclass = r.u16();
    query = { id, opcode, rd, cd, qname, qtype, qclass };
  } catch {
    return fail(Rcode.FORMERR);
  }
  let edns: QueryEdns | undefined;
  try {
    for (let i = 0; i < ancount + nscount + arcount; i++) {
      const owner = r.name();
      const type = r.u16();
      const klass = r.u16();
      const ttl = r.u32();
      const rdlength = r.u16();
      const rdata = r.bytes(rdlength);
      if (type !== RRType.OPT) continue;
      // RFC 6891 §6.1.1: one OPT at most, in the additional section, owned by the root.
      if (edns || i < ancount + nscount || owner !== '.') return fail(Rcode.FORMERR, query);
      edns = {
        udpSize: Math.max(512, klass),
        version: (ttl >>> 16) & 0xff,
        dnssecOk: (ttl & 0x8000) !== 0,
      };
      if (rdlength !== 0) {
        const subnet = readClientSubnet(rdata);
        if (subnet === null) return fail(Rcode.FORMERR, query, edns);
        if (subnet !== undefined) edns.clientSubnet = subnet;
      }
    }
    if (r.remaining !== 0) return fail(Rcode.FORMERR, query, edns);
  } catch {
    return fail(Rcode.FORMERR, query, edns);
  }
  if (notImplemented) return fail(Rcode.NOTIMP, query, edns);
  if (edns) query.edns = edns;
  return { kind: 'query', query };
}

/**
 * Finds the Client Subnet option among the OPT's options (RFC 6891 §6.1.2: code, length, data);
 * undefined when there is none, null when it is malformed — an unknown family, a source prefix
 * longer than the address, an address of the wrong length or with bits set beyond the source prefix
 * (RFC 7871 §6: FORMERR) — or sent twice (which of the two the answer is for would be ambiguous).
 * Other options are ignored, as they always were: the scan stops at an option that runs past the
 * RDATA, keeping what came before.
 */
function readClientSubnet(rdata: Uint8Array): ClientSubnet | undefined | null {
  let subnet: ClientSubnet | undefined;
  let at = 0;
  while (at < rdata.length) {
    if (at + 4 > rdata.length) break;
    const code = (rdata[at]! << 8) | rdata[at + 1]!;
    const length = (rdata[at + 2]! << 8) | rdata[at + 3]!;
    const start = at + 4;
    at = start + length;
    if (at > rdata.length) break;
    if (code !== ECS_OPTION) continue;
    if (subnet !== undefined || length < 4) return null;
    const family = (rdata[start]! << 8) | rdata[start + 1]!;
    const sourcePrefix = rdata[start + 2]!;
    if ((family !== 1 && family !== 2) || sourcePrefix > (family === 1 ? 32 : 128)) return null;
    const octets = Math.ceil(sourcePrefix / 8);
    if (length - 4 !== octets) return null;
    const address = rdata.slice(start + 4, at);
    // Bits of the last octet beyond the source prefix must be zero.
    if (sourcePrefix % 8 !== 0 && (address[octets - 1]! & (0xff >> (sourcePrefix % 8))) !== 0) return null;
    subnet = { family, sourcePrefix, scopePrefix: rdata[start + 3]!, address };
  }
  return subnet;
}
