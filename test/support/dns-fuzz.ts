/**
 * Shared pieces of the fuzz suites (test/fuzz.test.ts against a `zonekeeper serve` process and
 * src/server/query.fuzz.test.ts in process): a seeded PRNG, packet builders, generators of random,
 * mutated and crafted packets, the rules a reply is checked against, and the reply checker.
 */
import { randomInt } from 'node:crypto';
import { decodeMessage, type Message, type Question, Rcode } from '../../src/dns/message.ts';
import { encodeNameUncompressed, type Name } from '../../src/dns/name.ts';
import { RRClass, RRType } from '../../src/dns/rrtype.ts';
import { readTsig } from '../../src/dns/tsig.ts';
import { WireReader } from '../../src/dns/wire.ts';
import { TransferHandler } from '../../src/server/transfer/transfer-handler.ts';
import { mulberry32 } from './prng.ts';

// ---------------------------------------------------------------------------------------------------
// Seeded randomness

/** mulberry32: small, fast and good enough to drive a fuzzer; the same seed gives the same packets. */
export class Prng {
  readonly u32: () => number;

  constructor(seed: number) {
    this.u32 = mulberry32(seed);
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor((this.u32() / 0x1_0000_0000) * n);
  }

  /** An integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.u32() / 0x1_0000_0000 < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.u32() & 0xff;
    return out;
  }
}

/** The random start value from FUZZ_SEED (decimal or 0x hex), else `fallback`, else a random one. */
export function fuzzSeed(fallback?: number): number {
  const text = process.env.FUZZ_SEED;
  if (text !== undefined && text !== '') {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff) {
      throw new Error(`FUZZ_SEED=${JSON.stringify(text)} is not an unsigned 32-bit integer`);
    }
    return n;
  }
  return fallback ?? randomInt(0, 0xffff_ffff);
}

/** A positive number from the environment, or `fallback`. */
export function envNumber(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0)
    throw new Error(`${name}=${JSON.stringify(text)} is not a positive number`);
  return n;
}

// ---------------------------------------------------------------------------------------------------
// Packet building

export type Part = number | readonly number[] | Uint8Array;

/** Concatenates octets, octet arrays and byte arrays. */
export function bytes(...parts: Part[]): Uint8Array {
  const out: number[] = [];
  for (const p of parts) {
    if (typeof p === 'number') out.push(p & 0xff);
    else for (const b of p) out.push(b & 0xff);
  }
  return Uint8Array.from(out);
}

export function u16(v: number): number[] {
  return [(v >>> 8) & 0xff, v & 0xff];
}

export function u32(v: number): number[] {
  return [(v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff];
}

export interface HeaderFields {
  id?: number;
  flags?: number;
  qd?: number;
  an?: number;
  ns?: number;
  ar?: number;
}

/** The 12-octet header (RFC 1035 §4.1.1). */
export function header(h: HeaderFields): number[] {
  return [
    ...u16(h.id ?? 0x1234),
    ...u16(h.flags ?? 0),
    ...u16(h.qd ?? 1),
    ...u16(h.an ?? 0),
    ...u16(h.ns ?? 0),
    ...u16(h.ar ?? 0),
  ];
}

export function wireName(name: Name): Uint8Array {
  return encodeNameUncompressed(name);
}

/** A name from raw labels (any octets, any lengths up to 255 — the caller decides whether it is legal). */
export function rawName(labels: readonly (string | Uint8Array)[]): Uint8Array {
  const parts: Part[] = [];
  for (const label of labels) {
    const b = typeof label === 'string' ? new TextEncoder().encode(label) : label;
    parts.push(b.length, b);
  }
  parts.push(0);
  return bytes(...parts);
}

export function questionBytes(name: Name | Uint8Array, type: number, klass: number = RRClass.IN): Uint8Array {
  return bytes(typeof name === 'string' ? wireName(name) : name, u16(type), u16(klass));
}

export function rrBytes(
  owner: Uint8Array,
  type: number,
  klass: number,
  ttl: number,
  rdata: Uint8Array,
): Uint8Array {
  return bytes(owner, u16(type), u16(klass), u32(ttl), u16(rdata.length), rdata);
}

export interface EdnsSpec {
  udpSize?: number;
  version?: number;
  dnssecOk?: boolean;
  /** Raw OPT RDATA (options). */
  rdata?: Uint8Array;
  /** Owner name; the root unless set (RFC 6891 §6.1.2). */
  owner?: Uint8Array;
}

/** An OPT pseudo-RR (RFC 6891 §6.1.2). */
export function optBytes(e: EdnsSpec = {}): Uint8Array {
  const ttl = (((e.version ?? 0) & 0xff) << 16) | (e.dnssecOk ? 0x8000 : 0);
  return rrBytes(e.owner ?? bytes(0), RRType.OPT, e.udpSize ?? 1232, ttl, e.rdata ?? new Uint8Array(0));
}

export interface QuerySpec {
  id?: number;
  /** Header flags; QR is never set here. RD by default. */
  flags?: number;
  name: Name | Uint8Array;
  type: number;
  class?: number;
  /** An OPT record, or none when undefined. */
  edns?: EdnsSpec;
}

/** A well-formed query with one question and an optional OPT. */
export function buildQuery(q: QuerySpec): Uint8Array {
  return bytes(
    header({ id: q.id ?? 0x1234, flags: (q.flags ?? 0x0100) & 0x7fff, qd: 1, ar: q.edns ? 1 : 0 }),
    questionBytes(q.name, q.type, q.class ?? RRClass.IN),
    q.edns ? optBytes(q.edns) : [],
  );
}

/**
 * An IXFR request (RFC 1995 §3): the question `origin` IXFR, and in the authority section the SOA the
 * client holds, at `clientSerial` (root MNAME and RNAME, the other fields 1: only the serial is read).
 */
export function ixfrRequest(origin: Name, clientSerial: number): Uint8Array {
  return bytes(
    header({ id: 7, qd: 1, ns: 1 }),
    questionBytes(wireName(origin), RRType.IXFR, RRClass.IN),
    rrBytes(
      wireName(origin),
      RRType.SOA,
      RRClass.IN,
      300,
      bytes(0, 0, u32(clientSerial), u32(1), u32(1), u32(1), u32(1)),
    ),
  );
}

/** Overwrites the ID of a packet that has one (a copy is returned). */
export function withId(packet: Uint8Array, id: number): Uint8Array {
  const out = Uint8Array.from(packet);
  if (out.length >= 2) {
    out[0] = (id >>> 8) & 0xff;
    out[1] = id & 0xff;
  }
  return out;
}

/** A TCP frame: two-octet length, then the message (RFC 1035 §4.2.2). */
export function frame(message: Uint8Array): Uint8Array {
  return bytes(u16(message.length), message);
}

export function hex(b: Uint8Array, max = 400): string {
  const text = Buffer.from(b.subarray(0, max)).toString('hex');
  return b.length > max ? `${text}… (${b.length} octets)` : text;
}

// ---------------------------------------------------------------------------------------------------
// The query space: names and types with a known place in the examples zones (and in the unit suite's
// copy of them), so that mutations start from queries that reach every answer path.

export const VALID_QUESTIONS: readonly { name: Name; type: number; class?: number }[] = [
  { name: 'www.example.com.', type: RRType.A },
  { name: 'WwW.ExAmPlE.CoM.', type: RRType.AAAA },
  { name: 'www.example.com.', type: RRType.ANY },
  { name: 'www.example.com.', type: RRType.MX },
  { name: 'example.com.', type: RRType.SOA },
  { name: 'example.com.', type: RRType.NS },
  { name: 'example.com.', type: RRType.A }, // ALIAS at the apex
  { name: 'example.com.', type: RRType.MX },
  { name: 'example.com.', type: RRType.TXT },
  { name: 'docs.example.com.', type: RRType.A }, // CNAME
  { name: 'missing.example.com.', type: RRType.A }, // NXDOMAIN
  { name: 'host.wild.example.com.', type: RRType.A }, // wildcard
  { name: 'host.legacy.example.com.', type: RRType.A }, // referral
  { name: 'legacy.example.com.', type: RRType.DS },
  { name: 'example.org.', type: RRType.A }, // REFUSED
  { name: '.', type: RRType.NS },
  { name: 'id.server.', type: RRType.TXT, class: RRClass.CH },
  { name: 'version.bind.', type: RRType.TXT, class: RRClass.CH },
];

/** The probe the suites keep asking while attacking, and its one right answer. */
export const PROBE = { name: 'www.example.com.', type: RRType.A, addresses: ['192.0.2.10', '192.0.2.11'] };

export function probeQuery(id: number, rng?: Prng): Uint8Array {
  return buildQuery({ id, name: PROBE.name, type: PROBE.type, edns: rng?.chance(0.5) ? {} : undefined });
}

/** Problems with a reply to `probeQuery`, or [] when it is the right answer. */
export function probeProblems(id: number, reply: Uint8Array): string[] {
  let m: Message;
  try {
    m = decodeMessage(reply);
  } catch (e) {
    return [`probe reply does not decode: ${(e as Error).message}`];
  }
  const problems: string[] = [];
  if (m.id !== id) problems.push(`probe reply has ID ${m.id}, expected ${id}`);
  if (m.rcode !== Rcode.NOERROR) problems.push(`probe rcode ${m.rcode}, expected NOERROR`);
  const addresses = m.answers
    .map((rr) => (rr.data as { type: unknown; address?: string }).address)
    .filter((a): a is string => typeof a === 'string')
    .sort();
  if (addresses.join(',') !== PROBE.addresses.join(',')) {
    problems.push(`probe answered ${JSON.stringify(addresses)}, expected ${JSON.stringify(PROBE.addresses)}`);
  }
  return problems;
}

export function randomValidQuery(rng: Prng, id: number): Uint8Array {
  const q = rng.pick(VALID_QUESTIONS);
  const edns: EdnsSpec | undefined = rng.chance(0.6)
    ? {
        udpSize: rng.pick([0, 512, 1232, 4096, 65535]),
        dnssecOk: rng.chance(0.3),
        version: rng.chance(0.1) ? 1 : 0,
        rdata: rng.chance(0.2) ? bytes(u16(10), u16(8), rng.bytes(8)) : undefined, // a client cookie
      }
    : undefined;
  return buildQuery({
    id,
    name: q.name,
    type: q.type,
    class: q.class,
    flags: rng.chance(0.5) ? 0x0100 : 0,
    edns,
  });
}

/**
 * A well-formed query with random content: labels of random octets and lengths under the zones served
 * (or not), any type, a class from the interesting ones, random flags and EDNS parameters.
 */
export function randomWellFormedQuery(rng: Prng, id: number): Uint8Array {
  const labels: Uint8Array[] = [];
  for (let n = rng.int(4); n > 0; n--) {
    labels.push(rng.chance(0.3) ? rng.bytes(rng.range(1, 63)) : new TextEncoder().encode(rng.pick(LABELS)));
  }
  const suffix = rng.pick([
    'example.com.',
    'wild.example.com.',
    'legacy.example.com.',
    'sub.example.com.',
    'example.org.',
    '.',
  ]);
  const head = rawName(labels);
  let name = bytes(head.subarray(0, head.length - 1), wireName(suffix));
  if (name.length > 255) name = wireName(suffix);
  const type = rng.chance(0.5) ? rng.pick(Object.values(RRType)) : rng.int(0x10000);
  const klass = rng.chance(0.8)
    ? RRClass.IN
    : rng.pick([0, RRClass.CH, RRClass.HS, RRClass.NONE, RRClass.ANY, rng.int(0x10000)]);
  const edns: EdnsSpec | undefined = rng.chance(0.5)
    ? { udpSize: rng.int(0x10000), dnssecOk: rng.chance(0.5), version: rng.chance(0.9) ? 0 : rng.int(256) }
    : undefined;
  return buildQuery({ id, name, type, class: klass, flags: rng.int(0x10000) & 0x07ff, edns });
}

const LABELS = [
  'www',
  'WWW',
  'docs',
  'mail',
  'ns1',
  '*',
  'host',
  'a',
  'xn--bcher-kva',
  '_tcp',
  '_sip',
  'legacy',
  'wild',
];

// ---------------------------------------------------------------------------------------------------
// Generators

const INTERESTING_OCTETS = [0x00, 0x01, 0x3f, 0x40, 0x7f, 0x80, 0xbf, 0xc0, 0xc0, 0xff, 0x29];

/**
 * Applies 1–4 random mutations to a packet: bit flips, byte replacements, truncation, extension,
 * a duplicated tail (duplicated question/OPT), counts that lie, inserted compression pointers,
 * spliced garbage, random header flags.
 */
export function mutate(rng: Prng, packet: Uint8Array): Uint8Array {
  let p = Array.from(packet);
  const rounds = rng.range(1, 4);
  for (let i = 0; i < rounds; i++) {
    switch (rng.int(9)) {
      case 0: // bit flips
        for (let k = rng.range(1, 8); k > 0 && p.length > 0; k--) {
          const at = rng.int(p.length);
          p[at] = p[at]! ^ (1 << rng.int(8));
        }
        break;
      case 1: // byte replacements
        for (let k = rng.range(1, 4); k > 0 && p.length > 0; k--) {
          p[rng.int(p.length)] = rng.chance(0.5) ? rng.pick(INTERESTING_OCTETS) : rng.int(256);
        }
        break;
      case 2: // truncation
        p = p.slice(0, rng.int(p.length + 1));
        break;
      case 3: // extension
        p.push(...rng.bytes(rng.range(1, 64)));
        break;
      case 4: // duplicate the sections after the header, optionally owning up to it in the counts
        if (p.length > 12) {
          p.push(...p.slice(12));
          if (rng.chance(0.5) && p.length >= 12) {
            const at = rng.pick([4, 6, 8, 10]);
            const v = ((p[at]! << 8) | p[at + 1]!) * 2 || 2;
            p[at] = (v >>> 8) & 0xff;
            p[at + 1] = v & 0xff;
          }
        }
        break;
      case 5: // counts that lie
        if (p.length >= 12) {
          const at = rng.pick([4, 6, 8, 10]);
          const v = rng.pick([0, 1, 2, 3, 0xff, 0x100, 0x7fff, 0xffff, rng.int(0x10000)]);
          p[at] = (v >>> 8) & 0xff;
          p[at + 1] = v & 0xff;
        }
        break;
      case 6: // a compression pointer somewhere past the header
        if (p.length > 13) {
          const at = rng.range(12, p.length - 2);
          const target = rng.chance(0.5) ? rng.int(at + 3) : rng.int(0x4000);
          p[at] = 0xc0 | ((target >>> 8) & 0x3f);
          p[at + 1] = target & 0xff;
        }
        break;
      case 7: // spliced garbage
        p.splice(rng.int(p.length + 1), rng.int(4), ...rng.bytes(rng.range(1, 16)));
        break;
      default: // random header flags, mostly still a query
        if (p.length >= 4) {
          p[2] = rng.int(256) & (rng.chance(0.9) ? 0x7f : 0xff);
          p[3] = rng.int(256);
        }
    }
  }
  return Uint8Array.from(p);
}

export interface GeneratorOptions {
  /** Over TCP, payloads may be as long as 65535 octets and must not be empty. */
  tcp: boolean;
}

/** One fuzz packet from the mix: random bytes, random bodies, mutated queries, mutated crafted cases. */
export function fuzzPacket(rng: Prng, id: number, opts: GeneratorOptions): Uint8Array {
  const roll = rng.int(100);
  let p: Uint8Array;
  if (roll < 20) {
    // Uniformly random bytes; over TCP now and then a full 65535-octet frame.
    const length = opts.tcp && rng.chance(0.02) ? 65535 : rng.int(601);
    p = rng.bytes(length);
    if (rng.chance(0.7) && p.length > 2) p[2] = p[2]! & 0x7f; // mostly queries, so parsing goes deeper
  } else if (roll < 28) {
    // A plausible header, then random bytes.
    p = bytes(
      header({ flags: rng.int(0x10000) & 0x7fff, qd: 1, an: rng.int(2), ns: rng.int(2), ar: rng.int(3) }),
      rng.bytes(rng.int(300)),
    );
  } else if (roll < 45) {
    p = randomWellFormedQuery(rng, id);
  } else if (roll < 80) {
    p = mutate(rng, rng.chance(0.5) ? randomValidQuery(rng, id) : randomWellFormedQuery(rng, id));
  } else {
    const c = rng.pick(craftedCases());
    p = rng.chance(0.6) ? mutate(rng, c.packet) : c.packet;
  }
  if (opts.tcp && p.length === 0) p = bytes(rng.int(256));
  return withId(p, id);
}

// ---------------------------------------------------------------------------------------------------
// Crafted malformed (and edge-case) packets, each with the reply it must get.

export type Expected =
  | { drop: 'short' | 'response' }
  | {
      /** The rcode, or the rcodes that are all right. */
      rcode: number | readonly number[];
      /** Whether the reply echoes the question. */
      question: boolean;
      /** Exact number of answer records, when it matters. */
      answers?: number;
      /** Whether the reply carries an OPT record, when it matters. */
      opt?: boolean;
    };

export interface CraftedCase {
  name: string;
  packet: Uint8Array;
  expect: Expected;
}

const WWW = wireName('www.example.com.');
const A = RRType.A;
const IN = RRClass.IN;
const { FORMERR, NOTIMP, REFUSED, NOERROR, NXDOMAIN, BADVERS, NOTAUTH } = Rcode;

/** Labels of 63 octets (and one shorter) in front of `suffix`, to a total wire length of `total`. */
export function nameOfLength(total: number, suffix: Name): Uint8Array {
  const tail = wireName(suffix);
  let room = total - tail.length;
  const labels: Uint8Array[] = [];
  while (room > 0) {
    // Never leave a single octet, which could only be an empty (root) label.
    const len = room - 1 <= 63 ? room - 1 : room - 64 === 1 ? 62 : 63;
    labels.push(new Uint8Array(len).fill(0x61 + (labels.length % 26)));
    room -= len + 1;
  }
  const head = rawName(labels);
  return bytes(head.subarray(0, head.length - 1), tail);
}

let crafted: CraftedCase[] | undefined;

/** The catalogue of crafted packets; every entry is a test in both fuzz suites. */
export function craftedCases(): readonly CraftedCase[] {
  crafted ??= buildCraftedCases();
  return crafted;
}

function buildCraftedCases(): CraftedCase[] {
  const cases: CraftedCase[] = [];
  const add = (name: string, packet: Uint8Array, expect: Expected) => cases.push({ name, packet, expect });
  const wwwA = buildQuery({ name: 'www.example.com.', type: A });

  // Header.
  for (let n = 0; n < 12; n++) add(`header truncated to ${n} octets`, wwwA.subarray(0, n), { drop: 'short' });
  add('a bare 12-octet header (QDCOUNT 0)', bytes(header({ qd: 0 })), { rcode: FORMERR, question: false });
  add('a response (QR=1) is never answered', withQr(wwwA), { drop: 'response' });
  add(
    'a response with every flag and rcode bit set',
    bytes(header({ flags: 0xffff }), questionBytes(WWW, A)),
    {
      drop: 'response',
    },
  );
  add('a response carrying garbage', bytes(header({ flags: 0x8000, qd: 0x4242 }), [0xc0, 0xc0, 0xff, 0x01]), {
    drop: 'response',
  });
  for (let opcode = 1; opcode < 16; opcode++) {
    if (opcode === 5) continue; // UPDATE: below
    add(`opcode ${opcode}`, bytes(header({ flags: opcode << 11 }), questionBytes(WWW, A)), {
      rcode: NOTIMP,
      question: true,
    });
  }
  // RFC 2136 UPDATE: the zone section names one zone by its SOA (§3.1.1), one we serve (§3.1.2), and
  // no zone of the fixture takes UPDATE (no updatePolicy).
  add(
    'opcode UPDATE with a zone section of type A: FORMERR',
    bytes(header({ flags: 5 << 11 }), questionBytes(WWW, A)),
    {
      rcode: FORMERR,
      question: true,
    },
  );
  add(
    'opcode UPDATE for a zone not served: NOTAUTH',
    bytes(header({ flags: 5 << 11 }), questionBytes(wireName('example.net.'), RRType.SOA)),
    { rcode: NOTAUTH, question: true },
  );
  add(
    'opcode UPDATE for a name inside a zone, not its apex: NOTAUTH',
    bytes(header({ flags: 5 << 11 }), questionBytes(WWW, RRType.SOA)),
    { rcode: NOTAUTH, question: true },
  );
  add(
    'opcode UPDATE for a zone without an updatePolicy: REFUSED',
    bytes(header({ flags: 5 << 11 }), questionBytes(wireName('example.com.'), RRType.SOA)),
    { rcode: REFUSED, question: true },
  );
  add(
    'opcode UPDATE with EDNS version 1: BADVERS',
    buildQuery({ name: 'example.com.', type: RRType.SOA, flags: 5 << 11, edns: { version: 1 } }),
    { rcode: BADVERS, question: true, opt: true },
  );
  add(
    'opcode NOTIFY with OPT: NOTIMP echoes the OPT (RFC 6891 §7)',
    buildQuery({ name: 'example.com.', type: RRType.SOA, flags: 4 << 11, edns: {} }),
    {
      rcode: NOTIMP,
      question: true,
      opt: true,
    },
  );
  add('opcode UPDATE with ZOCOUNT 0', bytes(header({ flags: 5 << 11, qd: 0 })), {
    rcode: FORMERR,
    question: false,
  });
  add(
    'opcode STATUS with a malformed question',
    bytes(header({ flags: 2 << 11 }), [0xc0, 12], u16(A), u16(IN)),
    {
      rcode: NOTIMP,
      question: false,
    },
  );
  add(
    'every flag but QR set (AA TC RD RA Z AD CD)',
    bytes(header({ flags: 0x07f0 }), questionBytes(WWW, A)),
    {
      rcode: NOERROR,
      question: true,
      answers: 2,
    },
  );
  add('QDCOUNT 0 with a question present', bytes(header({ qd: 0 }), questionBytes(WWW, A)), {
    rcode: FORMERR,
    question: false,
  });
  add(
    'QDCOUNT 2 (RFC 9619)',
    bytes(header({ qd: 2 }), questionBytes(WWW, A), questionBytes(WWW, RRType.AAAA)),
    {
      rcode: FORMERR,
      question: false,
    },
  );
  add('QDCOUNT 65535', bytes(header({ qd: 0xffff }), questionBytes(WWW, A)), {
    rcode: FORMERR,
    question: false,
  });
  add('QDCOUNT 1 with no question', bytes(header({})), { rcode: FORMERR, question: false });

  // The question cut short.
  add('question name cut inside a label', bytes(header({}), WWW.subarray(0, 6)), {
    rcode: FORMERR,
    question: false,
  });
  add('question without its terminating root label', bytes(header({}), WWW.subarray(0, WWW.length - 1)), {
    rcode: FORMERR,
    question: false,
  });
  add('question without QTYPE', bytes(header({}), WWW), { rcode: FORMERR, question: false });
  add('question with half a QCLASS', bytes(header({}), WWW, u16(A), [0]), {
    rcode: FORMERR,
    question: false,
  });

  // Compression pointers (RFC 1035 §4.1.4: a pointer refers to a prior occurrence of a name).
  add('compression pointer to itself', bytes(header({}), [0xc0, 12], u16(A), u16(IN)), {
    rcode: FORMERR,
    question: false,
  });
  add('two-pointer cycle', bytes(header({}), [0xc0, 14, 0xc0, 12], u16(A), u16(IN)), {
    rcode: FORMERR,
    question: false,
  });
  add('label then a pointer back to its own start', bytes(header({}), [1, 0x61, 0xc0, 12], u16(A), u16(IN)), {
    rcode: FORMERR,
    question: false,
  });
  add('forward pointer past the end', bytes(header({}), [0xc0, 0xff], u16(A), u16(IN)), {
    rcode: FORMERR,
    question: false,
  });
  add('pointer with a 14-bit offset beyond the message', bytes(header({}), [0xff, 0xff], u16(A), u16(IN)), {
    rcode: FORMERR,
    question: false,
  });
  add('pointer cut in half', bytes(header({}), [3, 0x77, 0x77, 0x77, 0xc0]), {
    rcode: FORMERR,
    question: false,
  });
  // A pointer into the header follows the header's octets as labels: ID 0 reads as the root name.
  add(
    'pointer into the header (ID 0 read as the root)',
    bytes(header({ id: 0 }), [0xc0, 0], u16(A), u16(IN)),
    {
      rcode: REFUSED,
      question: true,
    },
  );
  add(
    'pointer into the header (flags read as a one-octet label)',
    bytes(header({ flags: 0x0100 }), [0xc0, 2], u16(A), u16(IN)),
    { rcode: REFUSED, question: true },
  );
  {
    // 130 additional records whose owners are pointers, each to the previous owner: 129 hops (limit 128).
    const parts: Part[] = [header({ ar: 130 }), questionBytes(WWW, A)];
    let offset = 12 + WWW.length + 4;
    let previous = 12;
    for (let i = 0; i < 130; i++) {
      parts.push([0xc0 | (previous >>> 8), previous & 0xff], u16(RRType.TXT), u16(IN), u32(0), u16(0));
      previous = offset;
      offset += 12;
    }
    add('a chain of 129 compression pointers', bytes(...parts), { rcode: FORMERR, question: true });
  }

  // Labels and names (RFC 1035 §2.3.4, RFC 6891 §5).
  add('label type 0x40 (extended label)', bytes(header({}), [0x41, 0x00], u16(A), u16(IN)), {
    rcode: FORMERR,
    question: false,
  });
  add('label type 0x80 (reserved)', bytes(header({}), [0x81, 0x61, 0], u16(A), u16(IN)), {
    rcode: FORMERR,
    question: false,
  });
  add(
    '64-octet label',
    bytes(header({}), rawName([new Uint8Array(64).fill(0x61), 'example', 'com']), u16(A), u16(IN)),
    {
      rcode: FORMERR,
      question: false,
    },
  );
  add(
    '63-octet label',
    bytes(header({}), rawName([new Uint8Array(63).fill(0x61), 'example', 'com']), u16(A), u16(IN)),
    {
      rcode: NXDOMAIN,
      question: true,
    },
  );
  add('name of exactly 255 octets', bytes(header({}), nameOfLength(255, 'example.com.'), u16(A), u16(IN)), {
    rcode: NXDOMAIN,
    question: true,
  });
  add('name of 256 octets', bytes(header({}), nameOfLength(256, 'example.com.'), u16(A), u16(IN)), {
    rcode: FORMERR,
    question: false,
  });
  add(
    'name of 320 octets',
    bytes(header({}), rawName(Array(5).fill(new Uint8Array(63).fill(0x62))), u16(A), u16(IN)),
    {
      rcode: FORMERR,
      question: false,
    },
  );
  {
    // A 250-octet name in the question, then an additional record owned by a label + pointer to it: 258 octets.
    const long = nameOfLength(250, 'example.com.');
    add(
      'name over 255 octets through a pointer',
      bytes(
        header({ ar: 1 }),
        long,
        u16(A),
        u16(IN),
        [7, ...Array(7).fill(0x63), 0xc0, 12],
        u16(RRType.TXT),
        u16(IN),
        u32(0),
        u16(0),
      ),
      { rcode: FORMERR, question: true },
    );
  }
  const odd = new Uint8Array([0x00, 0x2e, 0x5c, 0x41, 0x20, 0x22, 0xff]);
  add(
    'binary label (zero, dot, backslash, space, quote, 0xff)',
    bytes(header({}), rawName([odd, 'example', 'com']), u16(A), u16(IN)),
    {
      rcode: NXDOMAIN,
      question: true,
    },
  );
  add(
    'binary label under a wildcard (owner synthesized from it)',
    bytes(header({}), rawName([odd, 'wild', 'example', 'com']), u16(A), u16(IN)),
    {
      rcode: NOERROR,
      question: true,
      answers: 1,
    },
  );
  add(
    '255-octet name under a wildcard',
    bytes(header({}), nameOfLength(255, 'wild.example.com.'), u16(A), u16(IN)),
    {
      rcode: NOERROR,
      question: true,
      answers: 1,
    },
  );
  add('mixed-case name (0x20) is echoed as asked', buildQuery({ name: 'wWw.EXAMPLE.cOm.', type: A }), {
    rcode: NOERROR,
    question: true,
    answers: 2,
  });
  add('root name', buildQuery({ name: '.', type: RRType.NS }), { rcode: REFUSED, question: true });

  // EDNS (RFC 6891).
  add('two OPT records', bytes(header({ ar: 2 }), questionBytes(WWW, A), optBytes(), optBytes()), {
    rcode: FORMERR,
    question: true,
  });
  add(
    'OPT owned by a name other than the root',
    bytes(header({ ar: 1 }), questionBytes(WWW, A), optBytes({ owner: WWW })),
    {
      rcode: FORMERR,
      question: true,
    },
  );
  add('OPT in the answer section', bytes(header({ an: 1 }), questionBytes(WWW, A), optBytes()), {
    rcode: FORMERR,
    question: true,
  });
  add('OPT in the authority section', bytes(header({ ns: 1 }), questionBytes(WWW, A), optBytes()), {
    rcode: FORMERR,
    question: true,
  });
  add(
    'OPT with RDLENGTH beyond the message',
    bytes(header({ ar: 1 }), questionBytes(WWW, A), optBytes().subarray(0, 9), u16(40)),
    {
      rcode: FORMERR,
      question: true,
    },
  );
  add('EDNS version 1', buildQuery({ name: WWW, type: A, edns: { version: 1 } }), {
    rcode: BADVERS,
    question: true,
  });
  add('EDNS UDP size 0 (treated as 512)', buildQuery({ name: WWW, type: A, edns: { udpSize: 0 } }), {
    rcode: NOERROR,
    question: true,
    answers: 2,
  });
  add(
    'EDNS with DO and unknown options',
    buildQuery({ name: WWW, type: A, edns: { dnssecOk: true, rdata: bytes(u16(65001), u16(3), [1, 2, 3]) } }),
    {
      rcode: NOERROR,
      question: true,
      answers: 2,
    },
  );

  add(
    'EDNS Client Subnet, well formed (198.51.100.0/22)',
    buildQuery({ name: WWW, type: A, edns: { rdata: bytes(u16(8), u16(7), u16(1), [22, 0, 198, 51, 100]) } }),
    { rcode: NOERROR, question: true, answers: 2 },
  );
  add(
    'EDNS Client Subnet with an address bit beyond the source prefix',
    buildQuery({ name: WWW, type: A, edns: { rdata: bytes(u16(8), u16(7), u16(1), [22, 0, 198, 51, 101]) } }),
    { rcode: FORMERR, question: true },
  );
  add(
    'EDNS Client Subnet with too many address octets',
    buildQuery({ name: WWW, type: A, edns: { rdata: bytes(u16(8), u16(8), u16(1), [24, 0, 192, 0, 2, 1]) } }),
    { rcode: FORMERR, question: true },
  );

  // Counts that lie and trailing data.
  add('ANCOUNT 1 with no record', bytes(header({ an: 1 }), questionBytes(WWW, A)), {
    rcode: FORMERR,
    question: true,
  });
  add('ARCOUNT 65535 with one OPT', bytes(header({ ar: 0xffff }), questionBytes(WWW, A), optBytes()), {
    rcode: FORMERR,
    question: true,
  });
  add('trailing garbage after the question', bytes(wwwA, [0xde, 0xad]), { rcode: FORMERR, question: true });
  add('trailing garbage after the OPT', bytes(buildQuery({ name: WWW, type: A, edns: {} }), [0]), {
    rcode: FORMERR,
    question: true,
  });
  add(
    'record RDLENGTH beyond the message',
    bytes(
      header({ ar: 1 }),
      questionBytes(WWW, A),
      rrBytes(WWW, A, IN, 0, bytes()).subarray(0, WWW.length + 8),
      u16(4),
      [1],
    ),
    {
      rcode: FORMERR,
      question: true,
    },
  );
  add(
    'an unknown record in the additional section is ignored',
    bytes(header({ ar: 1 }), questionBytes(WWW, A), rrBytes(bytes(0), 65280, IN, 0, bytes(1, 2, 3))),
    {
      rcode: NOERROR,
      question: true,
      answers: 2,
    },
  );

  // Classes (RFC 1035 §3.2.4/§3.2.5) and query types.
  for (const [klass, rcode] of [
    [0, REFUSED],
    [IN, NOERROR],
    [2, REFUSED],
    [RRClass.CH, REFUSED],
    [RRClass.HS, REFUSED],
    [RRClass.NONE, REFUSED],
    [RRClass.ANY, NOERROR],
    [0xffff, REFUSED],
  ] as const) {
    add(`class ${klass} for www.example.com`, buildQuery({ name: WWW, type: A, class: klass }), {
      rcode,
      question: true,
    });
  }
  add(
    'CH TXT id.server (the configured identity)',
    buildQuery({ name: 'id.server.', type: RRType.TXT, class: RRClass.CH }),
    {
      rcode: NOERROR,
      question: true,
      answers: 1,
    },
  );
  add(
    'CH TXT version.bind (not configured)',
    buildQuery({ name: 'version.bind.', type: RRType.TXT, class: RRClass.CH }),
    {
      rcode: REFUSED,
      question: true,
    },
  );
  add('qtype 0', buildQuery({ name: WWW, type: 0 }), { rcode: NOERROR, question: true, answers: 0 });
  // REFUSED from the query path (no transfer allowed). A server with the transfer path answers AXFR
  // over UDP with FORMERR (RFC 5936 §4.2: not defined over UDP), and IXFR without the client's SOA in
  // the authority section with FORMERR (RFC 1995 §3).
  add('qtype AXFR', buildQuery({ name: 'example.com.', type: RRType.AXFR }), {
    rcode: [REFUSED, FORMERR],
    question: true,
  });
  add('qtype IXFR without the client SOA', buildQuery({ name: 'example.com.', type: RRType.IXFR }), {
    rcode: [REFUSED, FORMERR],
    question: true,
  });
  add('qtype AXFR below the apex', buildQuery({ name: 'www.example.com.', type: RRType.AXFR }), {
    rcode: [REFUSED, FORMERR, NOTAUTH],
    question: true,
  });
  add('qtype OPT', buildQuery({ name: WWW, type: RRType.OPT }), { rcode: FORMERR, question: true });
  add('qtype ANY gets one RRset (RFC 8482)', buildQuery({ name: WWW, type: RRType.ANY }), {
    rcode: NOERROR,
    question: true,
    answers: 2,
  });
  add('qtype 65535', buildQuery({ name: WWW, type: 0xffff }), { rcode: NOERROR, question: true, answers: 0 });
  return cases;
}

function withQr(packet: Uint8Array): Uint8Array {
  const out = Uint8Array.from(packet);
  out[2] = out[2]! | 0x80;
  return out;
}

// ---------------------------------------------------------------------------------------------------
// The rules a reply is checked against

export interface EdnsSeen {
  udpSize: number;
  version: number;
  dnssecOk: boolean;
}

/**
 * What a request deserves, restated from the RFCs independently of src/server/query.ts:
 * no reply to fewer than 12 octets or to a response (RFC 1035 §4.1.1, §7.3); FORMERR unless exactly
 * one question (RFC 9619) and unless every record is well framed, OPT only once, only in the additional
 * section and owned by the root (RFC 6891 §6.1.1), its Client Subnet option (if any) well formed
 * (RFC 7871 §6), and nothing follows the last record; otherwise an
 * answer. Opcodes other than QUERY get NOTIMP instead, with the question and OPT when readable.
 */
export type Verdict =
  | { kind: 'drop'; reason: 'short' | 'response' }
  | { kind: 'error'; rcode: number; question?: Question; edns?: EdnsSeen }
  | { kind: 'query'; question: Question; edns?: EdnsSeen };

export function verdictFor(buf: Uint8Array): Verdict {
  if (buf.length < 12) return { kind: 'drop', reason: 'short' };
  if (buf[2]! & 0x80) return { kind: 'drop', reason: 'response' };
  const v = wellFormed(buf);
  const opcode = (buf[2]! >> 3) & 0xf;
  if (opcode === 0) return v;
  if (opcode === 5) return updateVerdict(buf, v);
  // Other opcodes: NOTIMP whatever else is wrong, echoing what could be read (RFC 6891 §7 for the OPT).
  return v.kind === 'query' || v.kind === 'error' ? { ...v, kind: 'error', rcode: Rcode.NOTIMP } : v;
}

/**
 * The zones the fuzz suite's `zonekeeper serve` holds (examples/): none has an updatePolicy, so an
 * UPDATE naming one is REFUSED and any other NOTAUTH.
 */
export const FUZZ_ZONE_APEXES: ReadonlySet<string> = new Set([
  'example.com.',
  'sub.example.com.',
  '2.0.192.in-addr.arpa.',
]);

/**
 * RFC 2136 UPDATE (opcode 5): framed as a query is (FORMERR otherwise), EDNS version 0 (RFC 6891
 * §6.1.3: BADVERS), records that decode (the codec's own rules; FORMERR), a zone section of type SOA
 * (§3.1.1: FORMERR) naming the apex of a zone served in class IN (§3.1.2: NOTAUTH otherwise), and then
 * REFUSED: no zone of the fixture takes UPDATE.
 */
function updateVerdict(buf: Uint8Array, v: Verdict): Verdict {
  if (v.kind !== 'query') return v;
  const { question, edns } = v;
  const error = (rcode: number): Verdict => ({ kind: 'error', rcode, question, ...(edns ? { edns } : {}) });
  if (edns && edns.version !== 0) return error(Rcode.BADVERS);
  try {
    const found = readTsig(buf);
    decodeMessage(found?.stripped ?? buf);
  } catch {
    return error(Rcode.FORMERR);
  }
  if (question.type !== RRType.SOA) return error(Rcode.FORMERR);
  if (question.class !== RRClass.IN || !FUZZ_ZONE_APEXES.has(question.name.toLowerCase()))
    return error(Rcode.NOTAUTH);
  return error(Rcode.REFUSED);
}

/** FORMERR or a query, for a request with the header of a query. */
function wellFormed(buf: Uint8Array): Verdict {
  const count = (at: number) => (buf[at]! << 8) | buf[at + 1]!;
  if (count(4) !== 1) return { kind: 'error', rcode: Rcode.FORMERR };
  const r = new WireReader(buf, 12);
  let question: Question;
  try {
    question = { name: r.name(), type: r.u16(), class: r.u16() };
  } catch {
    return { kind: 'error', rcode: Rcode.FORMERR };
  }
  const beforeAdditional = count(6) + count(8);
  const total = beforeAdditional + count(10);
  let edns: EdnsSeen | undefined;
  const formerr = (): Verdict => ({
    kind: 'error',
    rcode: Rcode.FORMERR,
    question,
    ...(edns ? { edns } : {}),
  });
  for (let i = 0; i < total; i++) {
    let owner: Name;
    let type: number;
    let klass: number;
    let ttl: number;
    let rdata: Uint8Array;
    try {
      owner = r.name();
      type = r.u16();
      klass = r.u16();
      ttl = r.u32();
      rdata = r.bytes(r.u16());
    } catch {
      return formerr();
    }
    if (type !== RRType.OPT) continue;
    if (i < beforeAdditional || edns !== undefined || owner !== '.') {
      edns = undefined;
      return formerr();
    }
    edns = { udpSize: klass, version: (ttl >>> 16) & 0xff, dnssecOk: (ttl & 0x8000) !== 0 };
    if (!clientSubnetAcceptable(rdata)) return formerr();
  }
  if (r.remaining !== 0) return formerr();
  return { kind: 'query', question, ...(edns ? { edns } : {}) };
}

/**
 * RFC 7871 §6: a Client Subnet option (code 8) carries family 1 or 2, a source prefix no longer than
 * the address, exactly ceil(prefix / 8) address octets and no bit set after the prefix; the server
 * also refuses a second one. Options are read while they fit in the RDATA (the rest is ignored).
 */
function clientSubnetAcceptable(rdata: Uint8Array): boolean {
  const options: { code: number; data: Uint8Array }[] = [];
  let at = 0;
  while (at + 4 <= rdata.length) {
    const length = (rdata[at + 2]! << 8) | rdata[at + 3]!;
    if (at + 4 + length > rdata.length) break;
    options.push({ code: (rdata[at]! << 8) | rdata[at + 1]!, data: rdata.subarray(at + 4, at + 4 + length) });
    at += 4 + length;
  }
  return clientSubnetOptionsAcceptable(options);
}

/** The rule of `clientSubnetAcceptable` over options already read (e.g. by `decodeMessage`). */
export function clientSubnetOptionsAcceptable(
  options: readonly { code: number; data: Uint8Array }[],
): boolean {
  const subnets = options.filter((o) => o.code === 8);
  if (subnets.length > 1) return false;
  for (const { data } of subnets) {
    if (data.length < 4) return false;
    const family = (data[0]! << 8) | data[1]!;
    const source = data[2]!;
    const bits = family === 1 ? 32 : family === 2 ? 128 : 0;
    if (bits === 0 || source > bits || data.length - 4 !== Math.ceil(source / 8)) return false;
    for (let bit = source; bit < (data.length - 4) * 8; bit++) {
      if (data[4 + (bit >> 3)]! & (0x80 >> (bit & 7))) return false;
    }
  }
  return true;
}

/** The rcodes a well-formed query may get, from its question and EDNS alone. */
export function allowedRcodes(question: Question, edns: EdnsSeen | undefined): readonly number[] {
  if (edns && edns.version !== 0) return [Rcode.BADVERS]; // RFC 6891 §6.1.3
  if (question.class === RRClass.CH) return [Rcode.NOERROR, Rcode.REFUSED];
  if (question.class !== RRClass.IN && question.class !== RRClass.ANY) return [Rcode.REFUSED];
  if (question.type === RRType.OPT) return [Rcode.FORMERR];
  if (question.type === RRType.AXFR || question.type === RRType.IXFR) return [Rcode.REFUSED];
  return [Rcode.NOERROR, Rcode.NXDOMAIN, Rcode.REFUSED];
}

/** RFC 1035 §4.2.1 and RFC 6891 §6.2.5: the largest UDP reply a request allows (our own cap is 1232). */
export function udpReplyLimit(edns: EdnsSeen | undefined): number {
  return edns ? Math.min(Math.max(edns.udpSize, 512), 1232) : 512;
}

export type Transport = 'udp' | 'tcp';

export interface RuleOptions {
  /**
   * The server routes zone transfers (and TSIG-signed SOA queries) to its transfer path, as
   * `TransferHandler.isTransfer` tells: those replies follow RFC 5936 / RFC 1995 / RFC 8945 instead.
   */
  transfers?: boolean;
}

/** Whether `request` goes to the transfer path of a server that has one. */
export function isTransferRequest(request: Uint8Array, opts: RuleOptions): boolean {
  return opts.transfers === true && TransferHandler.isTransfer(request);
}

/**
 * The rcodes of the transfer path: a transfer or NOERROR for an allowed one; FORMERR for a malformed
 * request, AXFR over UDP (RFC 5936 §4.2) or IXFR without the client's SOA (RFC 1995 §3); NOTAUTH outside
 * a zone apex (RFC 5936 §2.2.1) or for a bad TSIG (RFC 8945 §5.3.2); REFUSED when not allowed; and for
 * signed SOA queries whatever the query path would answer.
 */
const TRANSFER_RCODES: readonly number[] = [
  Rcode.NOERROR,
  Rcode.FORMERR,
  Rcode.NOTAUTH,
  Rcode.REFUSED,
  Rcode.NXDOMAIN,
  Rcode.BADVERS,
];

/**
 * Everything wrong with `reply` as the answer to `request` (an empty list when nothing is):
 * it must be a message decodeMessage accepts, with the request's ID and opcode, QR set, RD echoed (for QUERY),
 * within the UDP size limit, the rcode the verdict calls for, the question echoed exactly when it
 * could be read, and OPT present exactly when the request had one.
 */
export function replyProblems(
  request: Uint8Array,
  verdict: Verdict,
  reply: Uint8Array,
  transport: Transport,
  opts: RuleOptions = {},
): string[] {
  if (verdict.kind === 'drop') return [`replied to a packet that must be dropped (${verdict.reason})`];
  let m: Message;
  try {
    m = decodeMessage(reply);
  } catch (e) {
    return [`reply does not decode: ${(e as Error).message}`];
  }
  const problems: string[] = [];
  const id = (request[0]! << 8) | request[1]!;
  const opcode = (request[2]! >> 3) & 0xf;
  // RD is echoed for QUERY only (RFC 1035 §4.1.1, RFC 6895 §2): other opcodes get it clear.
  const rd = opcode === 0 && (request[2]! & 0x01) !== 0;
  if (m.id !== id) problems.push(`ID ${m.id}, expected ${id}`);
  if (!m.qr) problems.push('QR clear');
  if (m.opcode !== opcode) problems.push(`opcode ${m.opcode}, expected ${opcode}`);
  if (m.rd !== rd) problems.push(`RD ${m.rd}, expected ${rd}`);
  if (transport === 'tcp' && m.tc) problems.push('TC set over TCP');
  const limit = udpReplyLimit(verdict.edns);
  if (transport === 'udp' && reply.length > limit)
    problems.push(`UDP reply of ${reply.length} octets > ${limit}`);
  const echoed = (q: Question) =>
    m.questions.length === 1 &&
    m.questions[0]!.name === q.name &&
    m.questions[0]!.type === q.type &&
    m.questions[0]!.class === q.class;
  if (isTransferRequest(request, opts)) {
    if (!TRANSFER_RCODES.includes(m.rcode)) problems.push(`transfer rcode ${m.rcode}`);
    const q = verdict.question;
    if (m.questions.length > 1 || (m.questions.length === 1 && q && !echoed(q))) {
      problems.push(`question ${JSON.stringify(m.questions)}, expected ${JSON.stringify(q ?? null)}`);
    }
    return problems;
  }
  if (verdict.kind === 'error') {
    if (m.rcode !== verdict.rcode) problems.push(`rcode ${m.rcode}, expected ${verdict.rcode}`);
    if (verdict.question ? !echoed(verdict.question) : m.questions.length !== 0) {
      problems.push(
        `question ${JSON.stringify(m.questions)}, expected ${JSON.stringify(verdict.question ?? null)}`,
      );
    }
    if (m.answers.length + m.authority.length + m.additional.length > 0)
      problems.push('records in an error reply');
    if (verdict.edns && !m.edns) problems.push('OPT absent in the reply to a request with a readable OPT');
    return problems;
  }
  const allowed = allowedRcodes(verdict.question, verdict.edns);
  if (!allowed.includes(m.rcode)) problems.push(`rcode ${m.rcode}, expected one of ${allowed.join('/')}`);
  if (!echoed(verdict.question)) {
    problems.push(`question ${JSON.stringify(m.questions)}, expected ${JSON.stringify(verdict.question)}`);
  }
  // RFC 6891 §7: OPT in the reply exactly when the request had one; the DO bit echoed (RFC 3225 §3).
  if ((m.edns !== undefined) !== (verdict.edns !== undefined)) {
    problems.push(
      `OPT ${m.edns ? 'present' : 'absent'} in the reply, but ${verdict.edns ? 'present' : 'absent'} in the request`,
    );
  } else if (m.edns && verdict.edns && m.edns.dnssecOk !== verdict.edns.dnssecOk) {
    problems.push('DO bit not echoed');
  }
  return problems;
}

/** Problems of a reply to a crafted case, beyond `replyProblems`: the exact rcode, echo and answer count. */
export function expectedProblems(expect: Expected, reply: Uint8Array | null): string[] {
  if ('drop' in expect) return reply === null ? [] : ['replied, but the packet must be dropped'];
  const rcodes = typeof expect.rcode === 'number' ? [expect.rcode] : expect.rcode;
  if (reply === null) return [`no reply, expected rcode ${rcodes.join('/')}`];
  const m = decodeMessage(reply);
  const problems: string[] = [];
  if (!rcodes.includes(m.rcode)) problems.push(`rcode ${m.rcode}, expected ${rcodes.join('/')}`);
  if ((m.questions.length === 1) !== expect.question) {
    problems.push(`${m.questions.length} question(s) echoed, expected ${expect.question ? 1 : 0}`);
  }
  if (expect.opt !== undefined && (m.edns !== undefined) !== expect.opt) {
    problems.push(`OPT ${m.edns ? 'present' : 'absent'}, expected ${expect.opt ? 'present' : 'absent'}`);
  }
  if (expect.answers !== undefined && m.answers.length !== expect.answers) {
    problems.push(`${m.answers.length} answer record(s), expected ${expect.answers}`);
  }
  return problems;
}

/** Verdicts that call for a reply. */
export function expectsReply(v: Verdict): boolean {
  return v.kind !== 'drop';
}

/** The rcode a verdict pins down, when it does (errors only). */
export function verdictRcode(v: Verdict): number | undefined {
  return v.kind === 'error' ? v.rcode : undefined;
}
