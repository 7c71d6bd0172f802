import { decodeMessage, Rcode } from '../../dns/message.ts';
import { type Name, nameKey } from '../../dns/name.ts';
import { encodeRdata, type Rdata } from '../../dns/rdata.ts';
import { RRClass, RRType } from '../../dns/rrtype.ts';
import {
  readTsig,
  SERVER_FUDGE_S,
  signMessage,
  TsigStreamSigner,
  tsigErrorResponse,
  verifyMessage,
} from '../../dns/tsig.ts';
import { WireWriter } from '../../dns/wire.ts';
import type { Counter, Registry } from '../../metrics/registry.ts';
import { serialGreater } from '../../zones/serial.ts';
import { answerQuery, Outcome } from '../answer.ts';
import { parseQuery } from '../query.ts';
import {
  encodeResponse,
  errorParts,
  type ResponseParts,
  responseLimit,
  SERVER_UDP_PAYLOAD,
} from '../response.ts';
import type { ServedRRset } from '../zone-snapshot.ts';
import type { ServedZone, ZoneTable } from '../zone-table.ts';

/** An OPT record advertising our UDP payload size, no flags, no options (RFC 6891 §6.1.2). */
const OPT = Uint8Array.of(0, 0, 41, SERVER_UDP_PAYLOAD >> 8, SERVER_UDP_PAYLOAD & 0xff, 0, 0, 0, 0, 0, 0);

/** Messages of a transfer carry at most this much (RFC 5936 §2.2: up to 65535 octets over TCP). */
const MESSAGE_BUDGET = 16_384;

/** The answer to a request the transfer handler takes (see TransferHandler.respond). */
export interface TransferReply {
  messages: Uint8Array[];
  /** An AXFR or IXFR that passed the ACL and TSIG: may be many messages (written with backpressure). */
  transfer: boolean;
}

/**
 * Outgoing zone transfers: AXFR (RFC 5936) and IXFR (RFC 1995) from the zone's journal, with the
 * class's source-network ACL and TSIG (RFC 8945). Returns the messages to send, in order.
 */
export class TransferHandler {
  private readonly table: ZoneTable<ServedZone>;
  private readonly transfers?: Counter;
  private readonly now: () => number;

  constructor(table: ZoneTable<ServedZone>, options: { registry?: Registry; now?: () => number } = {}) {
    this.table = table;
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
    this.transfers = options.registry?.counter(
      'zonekeeper_transfers_total',
      'Zone transfer requests, by type (AXFR, IXFR) and result (ok, refused, notauth, badsig, formerr, ...).',
      ['type', 'result'],
    );
  }

  /**
   * Whether this handler answers a query (opcode QUERY, one question): a transfer (AXFR or IXFR), or a
   * TSIG-signed SOA query — the serial check of a secondary's refresh (RFC 1034 §4.3.5, RFC 1996 §4.7),
   * which secondaries sign with the transfer key and which must get a signed answer (RFC 8945 §5.3).
   */
  static isTransfer(query: Uint8Array): boolean {
    if (query.length < 17 || (query[2]! & 0xf8) !== 0 || query[4] !== 0 || query[5] !== 1) return false;
    let i = 12;
    for (;;) {
      const len = query[i];
      if (len === undefined || len > 63) return false;
      i += 1 + len;
      if (len === 0) break;
    }
    if (i + 2 > query.length) return false;
    const type = (query[i]! << 8) | query[i + 1]!;
    if (type === RRType.AXFR || type === RRType.IXFR) return true;
    // ARCOUNT 0: no TSIG. Otherwise look for one (SOA queries are rare enough to parse here).
    if (type !== RRType.SOA || (query[10] === 0 && query[11] === 0)) return false;
    try {
      return readTsig(query) !== undefined;
    } catch {
      return false; // malformed: the query path answers FORMERR
    }
  }

  /** The messages answering `query` (see respond()). */
  handle(query: Uint8Array, remote: string | undefined, tcp: boolean): Uint8Array[] {
    return this.respond(query, remote, tcp).messages;
  }

  /**
   * The messages answering `query`, and whether they are a transfer that passed the ACL and TSIG
   * (`transfer`): only such an answer may be large; any other is one message, written as a query's.
   */
  respond(query: Uint8Array, remote: string | undefined, tcp: boolean): TransferReply {
    const count = (type: string, result: string) => this.transfers?.labels(type, result).inc();
    const error = (reply: Uint8Array): TransferReply => ({ messages: [reply], transfer: false });
    let found: ReturnType<typeof readTsig>;
    try {
      found = readTsig(query);
    } catch {
      count('unknown', 'formerr');
      return error(errorReply(query, Rcode.FORMERR));
    }
    const plain = found?.stripped ?? query;
    let message: ReturnType<typeof decodeMessage>;
    try {
      message = decodeMessage(plain);
    } catch {
      count('unknown', 'formerr');
      return error(errorReply(query, Rcode.FORMERR));
    }
    const question = message.questions[0]!;
    if (question.type === RRType.SOA) {
      // Only signed SOA queries come here (isTransfer); an unsigned one belongs to the query path. Its
      // answer is a query's answer: one message.
      if (found) return { messages: [this.signedSoa(query, found, message.edns, tcp)], transfer: false };
      count('SOA', 'unsigned');
      return error(errorReply(plain, Rcode.REFUSED, message.edns));
    }
    const type = question.type === RRType.AXFR ? 'AXFR' : 'IXFR';
    const refuse = (rcode: number, result: string) => {
      count(type, result);
      return error(errorReply(plain, rcode, message.edns));
    };
    // RFC 6891 §6.1.3: an EDNS version we do not implement gets BADVERS (our version, 0, in the OPT),
    // before anything about the zone is looked at.
    if (message.edns && message.edns.version !== 0) return refuse(Rcode.BADVERS, 'badvers');
    if (question.class !== RRClass.IN) return refuse(Rcode.REFUSED, 'refused');
    // RFC 5936 §4.2: AXFR is defined over TCP only.
    if (type === 'AXFR' && !tcp) return refuse(Rcode.FORMERR, 'formerr');
    const zone = this.table.get(question.name);
    // RFC 5936 §2.2.1: not authoritative for the zone asked for.
    if (!zone || nameKey(zone.origin) !== nameKey(question.name)) return refuse(Rcode.NOTAUTH, 'notauth');
    const policy = zone.transfers;
    if (!policy?.allows(remote)) return refuse(Rcode.REFUSED, 'refused');
    let signer: TsigStreamSigner | undefined;
    if (found) {
      const verified = verifyMessage(query, policy.keys, { now: this.now(), maxFudge: SERVER_FUDGE_S });
      if (!verified.ok) {
        count(type, verified.error.toLowerCase());
        const reply = tsigErrorResponse(query, verified, { now: this.now() });
        return error(reply ?? errorReply(plain, Rcode.NOTAUTH, message.edns));
      }
      signer = new TsigStreamSigner(verified.key, verified.mac, { now: this.now });
    } else if (policy.requireTsig) {
      return refuse(Rcode.REFUSED, 'unsigned');
    }
    let records: ServedRRset[];
    let kind = 'axfr';
    if (type === 'IXFR') {
      const soa = message.authority.find((rr) => rr.type === RRType.SOA);
      // RFC 1995 §3: the query carries the client's SOA of the zone (owned by the apex) in the authority
      // section; a SOA of another name says nothing about this zone's serial.
      if (!soa || nameKey(soa.name) !== nameKey(zone.origin)) return refuse(Rcode.FORMERR, 'formerr');
      const clientSerial = (soa.data as Extract<Rdata, { type: 'SOA' }>).serial;
      if (!serialGreater(zone.serial, clientSerial)) {
        records = [zone.soa]; // up to date (or ahead): the current SOA alone
        kind = 'current';
      } else if (!tcp) {
        // RFC 1995 §2: over UDP, a reply that would not fit is just the SOA; the client retries on TCP.
        records = [zone.soa];
        kind = 'udp-soa';
      } else {
        const changes = zone.journal.since(clientSerial);
        if (changes) {
          records = incremental(zone, changes);
          kind = 'ixfr';
        } else {
          records = full(zone); // RFC 1995 §4: AXFR-style when the journal does not reach back
        }
      }
    } else {
      records = full(zone);
    }
    count(type, kind === 'axfr' && type === 'IXFR' ? 'ok-axfr-fallback' : 'ok');
    const messages = pack(
      message.id,
      question.name,
      question.type,
      records,
      tcp ? MESSAGE_BUDGET : 512,
      message.edns,
    );
    if (!signer) return { messages, transfer: true };
    return {
      messages: messages.map((m, i) => signer.sign(m, i === messages.length - 1)),
      transfer: true,
    };
  }

  /**
   * A TSIG-signed SOA query (a secondary's refresh check): verified with the keys of the zone holding
   * the name, answered as the query path would answer it, and signed (RFC 8945 §5.3). Without this,
   * BIND refuses the unsigned answer ("expected a TSIG or SIG(0)") and never transfers. The
   * source-network ACL does not apply: the SOA is public data. A failed TSIG gets the RFC 8945 §5.3.2
   * error (NOTAUTH with BADKEY, BADSIG or BADTIME); a zone without transfer keys knows no key (BADKEY).
   */
  private signedSoa(
    query: Uint8Array,
    found: NonNullable<ReturnType<typeof readTsig>>,
    edns: { dnssecOk: boolean } | undefined,
    tcp: boolean,
  ): Uint8Array {
    const count = (result: string) => this.transfers?.labels('SOA', result).inc();
    const parsed = parseQuery(found.stripped);
    if (parsed.kind !== 'query') {
      count('formerr');
      return errorReply(query, Rcode.FORMERR, edns);
    }
    const q = parsed.query;
    const zone = this.table.findZone(nameKey(q.qname));
    const keys = zone?.transfers?.keys ?? (() => undefined);
    const verified = verifyMessage(query, keys, { now: this.now(), maxFudge: SERVER_FUDGE_S });
    if (!verified.ok) {
      count(verified.error.toLowerCase());
      return (
        tsigErrorResponse(query, verified, { now: this.now() }) ?? errorReply(query, Rcode.NOTAUTH, edns)
      );
    }
    let parts: ResponseParts;
    if (q.edns && q.edns.version !== 0)
      parts = errorParts(Rcode.BADVERS); // RFC 6891 §6.1.3
    else if (q.qclass !== RRClass.IN) parts = errorParts(Rcode.REFUSED);
    else {
      const answer = answerQuery(this.table, q.qname, q.qtype);
      parts =
        answer.outcome === Outcome.Refused
          ? errorParts(Rcode.REFUSED)
          : {
              rcode: answer.outcome === Outcome.NxDomain ? Rcode.NXDOMAIN : Rcode.NOERROR,
              aa: answer.aa,
              answer: answer.answer,
              authority: answer.authority,
              additional: answer.additional,
              ...(answer.outcome === Outcome.Referral ? { glueRequired: true } : {}),
            };
    }
    count('ok');
    // Room for the TSIG RR (RFC 8945 §4.2: key and algorithm names, a MAC of up to 64 octets).
    const limit = responseLimit(q.edns, tcp) - (TSIG_RR_ROOM + found.record.keyName.length);
    const response = encodeResponse(new WireWriter(1024), q, parts, q.edns, limit).bytes;
    return signMessage(response, verified.key, { time: this.now(), requestMac: verified.mac }).bytes;
  }
}

/** An upper bound of a TSIG RR without its key name (algorithm name, fixed fields, a 64-octet MAC). */
const TSIG_RR_ROOM = 2 + 10 + 13 + 16 + 64 + 8;

/**
 * AXFR: the SOA, every other RRset, the SOA again (RFC 5936 §2.2). A signed zone's transfer carries
 * its DNSKEY, NSEC/NSEC3 chain and every RRSIG, so secondaries serve it signed and unchanged.
 */
function full(zone: ServedZone): ServedRRset[] {
  const out: ServedRRset[] = [zone.soa];
  for (const rrset of zone.transferRRsets()) out.push(rrset);
  out.push(zone.soa);
  return out;
}

/** IXFR (RFC 1995 §4): current SOA, then per change: old SOA, deletions, new SOA, additions; current SOA. */
function incremental(
  zone: ServedZone,
  changes: ReturnType<ServedZone['journal']['since']> & object,
): ServedRRset[] {
  const soaAt = (serial: number): ServedRRset => {
    const data = zone.soa.rdata[0] as Extract<Rdata, { type: 'SOA' }>;
    return { ...zone.soa, rdata: [{ ...data, serial }] };
  };
  const out: ServedRRset[] = [zone.soa];
  for (const change of changes) {
    out.push(soaAt(change.from), ...change.removed, soaAt(change.to), ...change.added);
  }
  out.push(zone.soa);
  return out;
}

/**
 * Splits records into messages of at most `budget` octets, each with the question (RFC 5936 §2.2.1)
 * and, when the request had an OPT, an OPT of ours (RFC 6891 §7; Knot, too, puts one in every message
 * of a transfer). A TSIG is appended after it by the caller.
 */
function pack(
  id: number,
  qname: Name,
  qtype: number,
  rrsets: ServedRRset[],
  budget: number,
  edns: { dnssecOk: boolean } | undefined,
): Uint8Array[] {
  if (edns) budget -= OPT.length;
  const messages: Uint8Array[] = [];
  const w = new WireWriter(budget + 4096);
  let count = 0;
  const begin = () => {
    w.reset();
    w.u16(id);
    w.u16(0x8400); // QR, AA; opcode QUERY, NOERROR
    w.u16(1);
    w.u16(0);
    w.u16(0);
    w.u16(0);
    w.name(qname, false);
    w.u16(qtype);
    w.u16(RRClass.IN);
    count = 0;
  };
  const end = () => {
    w.patchU16(6, count);
    if (edns) {
      w.patchU16(10, 1);
      const at = w.length;
      w.bytes(OPT);
      if (edns.dnssecOk) w.patchU16(at + 7, 0x8000); // RFC 3225 §3: DO is echoed
    }
    messages.push(w.finish());
  };
  begin();
  for (const rrset of rrsets) {
    for (let i = 0; i < rrset.rdata.length; i++) {
      const before = w.length;
      writeRecord(w, rrset, i);
      if (w.length > budget && count > 0) {
        w.truncate(before);
        end();
        begin();
        writeRecord(w, rrset, i);
      }
      count++;
    }
  }
  end();
  return messages;
}

function writeRecord(w: WireWriter, rrset: ServedRRset, i: number): void {
  w.name(rrset.owner, true);
  w.u16(rrset.type);
  w.u16(RRClass.IN);
  w.u32(rrset.ttl);
  const at = w.length;
  w.u16(0);
  // The signer's records (and other RRsets whose wire form is known) are written as they are.
  const wire = rrset.wire?.[i];
  if (wire !== undefined) w.bytes(wire);
  else encodeRdata(rrset.rdata[i]!, w);
  w.patchU16(at, w.length - at - 2);
}

/**
 * A reply with just the header and the question of the request (as received), and an rcode; with an
 * OPT when the request had one (RFC 6891 §7).
 */
function errorReply(request: Uint8Array, rcode: number, edns?: { dnssecOk: boolean }): Uint8Array {
  let end = 12;
  if (request.length >= 12 && request[4] === 0 && request[5] === 1) {
    let i = 12;
    for (;;) {
      const len = request[i];
      if (len === undefined || len > 63) break;
      i += 1 + len;
      if (len === 0) {
        if (i + 4 <= request.length) end = i + 4;
        break;
      }
    }
  }
  const out = new Uint8Array(end + (edns ? OPT.length : 0));
  out.set(request.subarray(0, Math.min(end, request.length)));
  out[2] = 0x80 | (request[2]! & 0x79); // QR, keep opcode and RD
  out[3] = rcode & 0xf; // the upper bits go in the OPT (RFC 6891 §6.1.3)
  out[4] = 0;
  out[5] = end > 12 ? 1 : 0;
  out.fill(0, 6, 12);
  if (edns) {
    out.set(OPT, end);
    out[end + 5] = rcode >> 4;
    if (edns.dnssecOk) out[end + 7] = 0x80; // RFC 3225 §3: DO is echoed
    out[11] = 1;
  }
  return out;
}
