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

export function parseQuery(buf: Uint8Array): ParsedQuery {
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
  const notImplemented = opcode !== Opcode.QUERY;
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
      r.bytes(rdlength);
      if (type !== RRType.OPT) continue;
      // RFC 6891 §6.1.1: one OPT at most, in the additional section, owned by the root.
      if (edns || i < ancount + nscount || owner !== '.') return fail(Rcode.FORMERR, query);
      edns = {
        udpSize: Math.max(512, klass),
        version: (ttl >>> 16) & 0xff,
        dnssecOk: (ttl & 0x8000) !== 0,
      };
    }
    if (r.remaining !== 0) return fail(Rcode.FORMERR, query, edns);
  } catch {
    return fail(Rcode.FORMERR, query, edns);
  }
  if (notImplemented) return fail(Rcode.NOTIMP, query, edns);
  if (edns) query.edns = edns;
  return { kind: 'query', query };
}
