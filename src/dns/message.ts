/** DNS message codec (RFC 1035 §4.1) with EDNS(0) (RFC 6891). */
import { DnsError } from './errors.ts';
import type { Name } from './name.ts';
import { decodeRdata, encodeRdata, type Rdata, type UnknownRdata } from './rdata.ts';
import { RRClass, RRType } from './rrtype.ts';
import { MAX_TTL } from './ttl.ts';
import { WireError, WireReader, WireWriter } from './wire.ts';

export const Opcode = { QUERY: 0, IQUERY: 1, STATUS: 2, NOTIFY: 4, UPDATE: 5 } as const;

export const Rcode = {
  NOERROR: 0,
  FORMERR: 1,
  SERVFAIL: 2,
  NXDOMAIN: 3,
  NOTIMP: 4,
  REFUSED: 5,
  YXDOMAIN: 6,
  YXRRSET: 7,
  NXRRSET: 8,
  NOTAUTH: 9,
  NOTZONE: 10,
  BADVERS: 16,
} as const;

/** RFC 1035 §4.1.1: the fixed header is 12 octets. */
export const HEADER_LENGTH = 12;

export interface Question {
  name: Name;
  type: number;
  class: number;
}

export interface ResourceRecord {
  name: Name;
  type: number;
  class: number;
  ttl: number;
  data: Rdata | UnknownRdata;
}

export interface EdnsOption {
  code: number;
  data: Uint8Array;
}

export interface Edns {
  udpSize: number;
  /** Upper 8 bits of the 12-bit rcode, as carried in the OPT TTL. */
  extendedRcode: number;
  version: number;
  dnssecOk: boolean;
  options: EdnsOption[];
}

export interface Message {
  id: number;
  qr: boolean;
  opcode: number;
  aa: boolean;
  tc: boolean;
  rd: boolean;
  ra: boolean;
  ad: boolean;
  cd: boolean;
  /** Full 12-bit rcode including the EDNS extension. */
  rcode: number;
  questions: Question[];
  answers: ResourceRecord[];
  authority: ResourceRecord[];
  /** Without the OPT pseudo-RR, which is lifted into `edns`. */
  additional: ResourceRecord[];
  edns?: Edns;
}

// Header flag bits (RFC 1035 §4.1.1; AD/CD from RFC 4035 §3.2).
const QR = 0x8000;
const AA = 0x0400;
const TC = 0x0200;
const RD = 0x0100;
const RA = 0x0080;
const AD = 0x0020;
const CD = 0x0010;
/** RFC 6891 §6.1.4: the DO bit in the OPT TTL's flag half. */
const DO = 0x8000;

/** Index of the header's count fields, in order (RFC 1035 §4.1.1). */
export const COUNT_OFFSETS = { QD: 4, AN: 6, NS: 8, AR: 10 } as const;

function isRdata(data: Rdata | UnknownRdata): data is Rdata {
  return typeof data.type === 'string';
}

/** Writes the 12-octet header with the given section counts. Only the low 4 rcode bits go here. */
export function encodeHeader(
  w: WireWriter,
  msg: Message,
  counts: { qd: number; an: number; ns: number; ar: number },
): void {
  let flags = ((msg.opcode & 0xf) << 11) | (msg.rcode & 0xf);
  if (msg.qr) flags |= QR;
  if (msg.aa) flags |= AA;
  if (msg.tc) flags |= TC;
  if (msg.rd) flags |= RD;
  if (msg.ra) flags |= RA;
  if (msg.ad) flags |= AD;
  if (msg.cd) flags |= CD;
  w.u16(msg.id);
  w.u16(flags);
  w.u16(counts.qd);
  w.u16(counts.an);
  w.u16(counts.ns);
  w.u16(counts.ar);
}

export function encodeQuestion(w: WireWriter, q: Question): void {
  w.name(q.name, true);
  w.u16(q.type);
  w.u16(q.class);
}

/** Writes one resource record, compressing its owner name, with RDLENGTH patched in afterwards. */
export function encodeResourceRecord(w: WireWriter, rr: ResourceRecord): void {
  const start = w.length;
  w.name(rr.name, true);
  w.u16(rr.type);
  w.u16(rr.class);
  w.u32(rr.ttl);
  const lengthAt = w.length;
  w.u16(0);
  if (isRdata(rr.data)) encodeRdata(rr.data, w);
  else w.bytes(rr.data.data);
  const rdlength = w.length - lengthAt - 2;
  if (rdlength > 0xffff) {
    w.truncate(start);
    throw new DnsError(
      'RDATA_TOO_LONG',
      `RDATA of ${rdlength} octets exceeds 65535 (RFC 1035 §3.2.1); split the data`,
    );
  }
  w.patchU16(lengthAt, rdlength);
}

/**
 * Writes the OPT pseudo-RR (RFC 6891 §6.1.2): owner ".", CLASS = UDP payload size, TTL = extended rcode,
 * version, DO and zero flags. `rcode` is the full 12-bit rcode; its upper 8 bits go here.
 */
export function encodeOpt(w: WireWriter, edns: Edns, rcode: number): void {
  w.u8(0);
  w.u16(RRType.OPT);
  w.u16(edns.udpSize);
  w.u8((rcode >>> 4) & 0xff);
  w.u8(edns.version);
  w.u16(edns.dnssecOk ? DO : 0);
  let length = 0;
  for (const o of edns.options) length += 4 + o.data.length;
  w.u16(length);
  for (const o of edns.options) {
    w.u16(o.code);
    w.u16(o.data.length);
    w.bytes(o.data);
  }
}

/**
 * A request with one question and everything else cleared (class IN unless given); `fields`
 * overrides any part, e.g. `{ rd: true }`, `{ opcode: Opcode.NOTIFY, aa: true }` or `{ edns }`.
 */
export function queryMessage(name: Name, type: number, fields: Partial<Message> = {}): Message {
  return {
    id: 0,
    qr: false,
    opcode: Opcode.QUERY,
    aa: false,
    tc: false,
    rd: false,
    ra: false,
    ad: false,
    cd: false,
    rcode: 0,
    questions: [{ name, type, class: 1 }],
    answers: [],
    authority: [],
    additional: [],
    ...fields,
  };
}

/** Encodes a complete message with name compression; OPT goes last in the additional section. */
export function encodeMessage(msg: Message): Uint8Array {
  if (msg.rcode > 0xf && msg.edns === undefined) {
    throw new DnsError(
      'RCODE_NEEDS_EDNS',
      `rcode ${msg.rcode} needs more than 4 bits and can only be sent with EDNS (RFC 6891 §6.1.3); set msg.edns or use a 4-bit rcode`,
    );
  }
  const w = new WireWriter(512);
  encodeHeader(w, msg, {
    qd: msg.questions.length,
    an: msg.answers.length,
    ns: msg.authority.length,
    ar: msg.additional.length + (msg.edns === undefined ? 0 : 1),
  });
  for (const q of msg.questions) encodeQuestion(w, q);
  for (const rr of msg.answers) encodeResourceRecord(w, rr);
  for (const rr of msg.authority) encodeResourceRecord(w, rr);
  for (const rr of msg.additional) encodeResourceRecord(w, rr);
  if (msg.edns !== undefined) encodeOpt(w, msg.edns, msg.rcode);
  return w.finish();
}

function decodeQuestion(r: WireReader): Question {
  const name = r.name();
  const type = r.u16();
  return { name, type, class: r.u16() };
}

/**
 * RDATA of classes other than IN (and the UPDATE pseudo-classes) may have other formats, and RFC 2136 §2.4
 * and §2.5 use empty RDATA with class ANY/NONE, so only those are decoded structurally.
 */
function decodeRecordData(r: WireReader, type: number, klass: number, length: number): Rdata | UnknownRdata {
  const structured =
    klass === RRClass.IN || ((klass === RRClass.NONE || klass === RRClass.ANY) && length > 0);
  if (structured) return decodeRdata(type, r, length);
  return { type, data: new Uint8Array(r.bytes(length)) };
}

interface RawRecord {
  name: Name;
  type: number;
  class: number;
  ttl: number;
  rdlength: number;
  rdataStart: number;
}

function readRecordHeader(r: WireReader): RawRecord {
  const name = r.name();
  const type = r.u16();
  const klass = r.u16();
  const ttl = r.u32();
  const rdlength = r.u16();
  return { name, type, class: klass, ttl, rdlength, rdataStart: r.offset };
}

function decodeRecords(r: WireReader, count: number, section: string, out: ResourceRecord[]): void {
  for (let i = 0; i < count; i++) {
    const h = readRecordHeader(r);
    if (h.type === RRType.OPT) {
      // RFC 6891 §6.1.1: OPT may only appear in the additional section.
      throw new WireError(
        'MISPLACED_OPT',
        `OPT pseudo-RR found in the ${section} section; it belongs in additional`,
      );
    }
    out.push({
      name: h.name,
      type: h.type,
      class: h.class,
      // RFC 2181 §8: a TTL with the top bit set is treated as zero.
      ttl: h.ttl > MAX_TTL ? 0 : h.ttl,
      data: decodeRecordData(r, h.type, h.class, h.rdlength),
    });
  }
}

function decodeOpt(r: WireReader, h: RawRecord): Edns {
  if (h.name !== '.') {
    throw new WireError(
      'BAD_OPT_OWNER',
      `OPT pseudo-RR has owner ${JSON.stringify(h.name)}; it must be the root "." (RFC 6891 §6.1.2)`,
    );
  }
  const options: EdnsOption[] = [];
  const end = h.rdataStart + h.rdlength;
  if (end > r.buf.length) {
    throw new WireError('TRUNCATED', `message truncated: OPT RDATA needs ${h.rdlength} octets`);
  }
  while (r.offset < end) {
    if (end - r.offset < 4) {
      throw new WireError(
        'BAD_OPT',
        `OPT RDATA ends inside an option header at offset ${r.offset} (RFC 6891 §6.1.2)`,
      );
    }
    const code = r.u16();
    const length = r.u16();
    if (r.offset + length > end) {
      throw new WireError(
        'BAD_OPT',
        `EDNS option ${code} of ${length} octets overruns the OPT RDATA (RFC 6891 §6.1.2)`,
      );
    }
    options.push({ code, data: new Uint8Array(r.bytes(length)) });
  }
  return {
    udpSize: h.class,
    extendedRcode: h.ttl >>> 24,
    version: (h.ttl >>> 16) & 0xff,
    dnssecOk: (h.ttl & DO) !== 0,
    options,
  };
}

/**
 * Strictly decodes a message. Throws WireError (TRUNCATED, BAD_POINTER, BAD_LABEL_TYPE, NAME_TOO_LONG,
 * BAD_RDATA, TRAILING_DATA, MULTIPLE_OPT, BAD_OPT_OWNER, MISPLACED_OPT, BAD_OPT).
 */
export function decodeMessage(buf: Uint8Array): Message {
  if (buf.length < HEADER_LENGTH) {
    throw new WireError(
      'TRUNCATED',
      `message of ${buf.length} octets is shorter than the 12-octet header (RFC 1035 §4.1.1)`,
    );
  }
  const r = new WireReader(buf);
  const id = r.u16();
  const flags = r.u16();
  const qd = r.u16();
  const an = r.u16();
  const ns = r.u16();
  const ar = r.u16();
  const msg: Message = {
    id,
    qr: (flags & QR) !== 0,
    opcode: (flags >>> 11) & 0xf,
    aa: (flags & AA) !== 0,
    tc: (flags & TC) !== 0,
    rd: (flags & RD) !== 0,
    ra: (flags & RA) !== 0,
    ad: (flags & AD) !== 0,
    cd: (flags & CD) !== 0,
    rcode: flags & 0xf,
    questions: [],
    answers: [],
    authority: [],
    additional: [],
  };
  for (let i = 0; i < qd; i++) msg.questions.push(decodeQuestion(r));
  decodeRecords(r, an, 'answer', msg.answers);
  decodeRecords(r, ns, 'authority', msg.authority);
  for (let i = 0; i < ar; i++) {
    const h = readRecordHeader(r);
    if (h.type === RRType.OPT) {
      // RFC 6891 §6.1.1: at most one OPT per message.
      if (msg.edns !== undefined)
        throw new WireError('MULTIPLE_OPT', 'message has more than one OPT pseudo-RR (RFC 6891 §6.1.1)');
      msg.edns = decodeOpt(r, h);
      msg.rcode |= msg.edns.extendedRcode << 4;
      continue;
    }
    msg.additional.push({
      name: h.name,
      type: h.type,
      class: h.class,
      ttl: h.ttl > MAX_TTL ? 0 : h.ttl,
      data: decodeRecordData(r, h.type, h.class, h.rdlength),
    });
  }
  if (r.remaining !== 0) {
    throw new WireError(
      'TRAILING_DATA',
      `message has ${r.remaining} octet(s) after the last record declared in its header`,
    );
  }
  return msg;
}
