/**
 * Differential test against Knot DNS: the same zones are served by `zonekeeper serve` (from manifests)
 * and by a real `knotd` (from the zone files Zonekeeper's core computes for those manifests), the same
 * generated corpus of queries goes to both, and the responses are compared: rcode (extended included),
 * header flags, the question (byte for byte, 0x20), the OPT record, and each section as a multiset of
 * RRsets (owner lowercased, class, type, TTL, sorted canonical RDATA), ignoring order.
 *
 * Where both servers are right and still differ, the difference is listed in ACCEPTED_DIFFERENCES with
 * the reason; anything else fails with the query and both responses. Every entry must be exercised by
 * the corpus, so the table cannot go stale.
 *
 * DIFF_WORKERS=N serves with `serve --workers N`: N DNS threads answer from zone images they share
 * (ADR 0020), the main thread answers nothing, and the kernel spreads the corpus over the threads.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { stringify } from 'yaml';
import { type Resource, validateResource } from '../src/api/index.ts';
import type { Message, ResourceRecord } from '../src/dns/message.ts';
import { isInDomain, nameKey } from '../src/dns/name.ts';
import { printRdata, printUnknownRdata, type Rdata, type UnknownRdata } from '../src/dns/rdata.ts';
import { RRType, typeCode, typeName } from '../src/dns/rrtype.ts';
import { readManifests } from '../src/sources/manifests/load-manifests.ts';
import { getOrInsert } from '../src/util/get-or-insert.ts';
import { type ComputedZone, computeZones } from '../src/zones/compute-zones.ts';
import { printZoneFile } from '../src/zones/zone-file.ts';
import { manifests } from './support/differential-zones.ts';
import { buildQuery, type DnsExchange, exchange, type QuerySpec, rawQuestion } from './support/dns-client.ts';
import { type KnotProcess, startKnot } from './support/knot.ts';
import { prng } from './support/prng.ts';
import { removeAll, type ServeProcess, startServe, tempDir } from './support/zonekeeper-process.ts';

// ---------------------------------------------------------------------------------------------------
// The zones, as manifests

const IDENTITY = 'differential-test';
const VERSION = 'zonekeeper-differential';

// ---------------------------------------------------------------------------------------------------
// The corpus

interface CorpusQuery {
  /** Short human description, e.g. `foo.wild.example.com A udp edns=1232`. */
  label: string;
  spec: QuerySpec;
  /** Overrides the bytes built from `spec` (malformed queries). */
  bytes?: Uint8Array;
  tcp: boolean;
  /** Queries expected to get no answer at all wait this long. */
  timeoutMs?: number;
}

const T = RRType;
const EDNS_SIZES = [undefined, 512, 1232, 4096] as const;

/** Randomises the case of ASCII letters (the 0x20 technique), leaving escapes alone. */
function mixCase(name: string, random: () => number): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!;
    if (c === '\\') {
      const digits = /^\\\d{3}/.test(name.slice(i)) ? 4 : 2;
      out += name.slice(i, i + digits);
      i += digits - 1;
    } else out += random() < 0.5 ? c.toUpperCase() : c.toLowerCase();
  }
  return out;
}

function describeQuery(spec: QuerySpec, tcp: boolean): string {
  const parts = [spec.name, spec.class && spec.class !== 1 ? `class=${spec.class}` : '', typeName(spec.type)];
  if (spec.opcode) parts.push(`opcode=${spec.opcode}`);
  parts.push(tcp ? 'tcp' : 'udp');
  if (spec.edns) {
    parts.push(`edns=${spec.edns.udpSize}`);
    if (spec.edns.version) parts.push(`ednsver=${spec.edns.version}`);
    if (spec.edns.dnssecOk) parts.push('do');
    if (spec.edns.options?.length) parts.push(`opts=${spec.edns.options.map((o) => o.code).join(',')}`);
  } else parts.push('noedns');
  if (spec.rd) parts.push('rd');
  if (spec.cd) parts.push('cd');
  if (spec.ad) parts.push('ad');
  return parts.filter(Boolean).join(' ');
}

const COM_NAMES = [
  '@',
  'ns1',
  'ns2',
  'mail',
  'www',
  '_443._tcp.www',
  '_sip._tcp',
  '_tcp',
  'sip',
  '_dns',
  'ptr',
  'wild',
  'foo.wild',
  'bar.baz.wild',
  'host.wild',
  'x.host.wild',
  'b.wild',
  'a.b.wild',
  'z.b.wild',
  '*.wild',
  'svc',
  'x.svc',
  'y.x.svc',
  'cn',
  'foo.cn',
  'foo.cnx',
  'a.cnloop',
  'odd',
  '*.odd',
  'q.odd',
  'sub.*.odd',
  'ent',
  'c.ent',
  'b.c.ent',
  'a.b.c.ent',
  'x.c.ent',
  'deleg',
  'host.deleg',
  'ns1.deleg',
  'a.b.deleg',
  'nods',
  'x.nods',
  'child',
  'www.child',
  'ns1.child',
  'missing.child',
  'a.wild.child',
  'c1',
  'c3',
  'l1',
  'tonet',
  'tochild',
  'todeleg',
  'toout',
  'dangling',
  'loop1',
  'self',
  'towild',
  'tomx',
  'big',
  'huge',
  'many',
  'mxmany',
  't3.mxmany',
  '_dmarc',
  'under_score',
  'with\\.dot',
  'sp\\032ace',
  'mixed',
  'quote\\"d',
  'nothere',
  'a.nothere',
];
const NET_NAMES = ['@', 'www', 'mx', 'ns', 'alias', 'missing'];
const ORG_NAMES = ['@', 'host', 'random', 'deep.x', 'x.host'];
const OUTSIDE = ['example.edu.', 'com.', '.', 'test.', 'www.outside.test.', 'in-addr.arpa.'];

const BASE_TYPES = [T.A, T.AAAA, T.NS, T.SOA, T.MX, T.TXT, T.CNAME, T.DS, T.ANY, T.SRV];
const EXTRA_TYPES = [T.CAA, T.HTTPS, T.SVCB, T.TLSA, T.SSHFP, T.NAPTR, T.PTR, T.RRSIG, T.NSEC, 65280];

function absolute(name: string, origin: string): string {
  return name === '@' ? origin : `${name}.${origin}`;
}

export function generateCorpus(): CorpusQuery[] {
  const random = prng(20260101);
  const out: CorpusQuery[] = [];
  let n = 0;
  const add = (spec: QuerySpec, tcp = false, extra: Partial<CorpusQuery> = {}) => {
    out.push({
      label: describeQuery(spec, tcp),
      spec: { id: (n++ * 7919) & 0xffff, ...spec },
      tcp,
      ...extra,
    });
  };
  const names = [
    ...COM_NAMES.map((x) => absolute(x, 'example.com.')),
    ...NET_NAMES.map((x) => absolute(x, 'example.net.')),
    ...ORG_NAMES.map((x) => absolute(x, 'example.org.')),
    absolute('10', '2.0.192.in-addr.arpa.'),
    absolute('11', '2.0.192.in-addr.arpa.'),
    ...OUTSIDE,
  ];
  // Every name × the common types, with the transport, EDNS size, DO bit, RD/CD and letter case
  // rotating so that each combination is covered somewhere.
  let i = 0;
  for (const name of names) {
    for (const type of BASE_TYPES) {
      const size = EDNS_SIZES[i % EDNS_SIZES.length];
      const spec: QuerySpec = {
        name: i % 3 === 0 ? mixCase(name, random) : name,
        type,
        rd: i % 5 === 1,
        cd: i % 11 === 2,
        ad: i % 13 === 4,
        ...(size === undefined ? {} : { edns: { udpSize: size, dnssecOk: i % 7 === 3 } }),
      };
      add(spec, i % 6 === 5);
      i++;
    }
  }
  // Less common types at the names that hold them and some that do not.
  for (const name of ['@', 'www', '_443._tcp.www', 'sip', '_dns', 'ptr', 'foo.wild', 'nothere', 'deleg']) {
    for (const type of EXTRA_TYPES)
      add({ name: absolute(name, 'example.com.'), type, edns: { udpSize: 1232 } });
  }
  // Size limits: every EDNS size over UDP and TCP for the large answers.
  for (const name of ['big', 'huge', 'many', 'mxmany', '@', 'deleg', 'host.deleg', 'www.bigdeleg']) {
    for (const type of name === 'mxmany' || name === '@' ? [T.MX, T.ANY, T.NS] : [T.TXT, T.A, T.ANY, T.NS]) {
      for (const size of EDNS_SIZES) {
        for (const tcp of [false, true]) {
          add(
            {
              name: absolute(name, 'example.com.'),
              type,
              ...(size === undefined ? {} : { edns: { udpSize: size } }),
            },
            tcp,
          );
        }
      }
    }
  }
  // The same question in many letter cases: the question must come back byte for byte.
  for (const name of [
    'www.example.com.',
    'foo.wild.example.com.',
    'c1.example.com.',
    'host.deleg.example.com.',
  ]) {
    for (let k = 0; k < 4; k++)
      add({ name: mixCase(name, random), type: T.A, edns: { udpSize: 1232 } }, k === 3);
  }
  // EDNS: versions (BADVERS), odd sizes, DO, unknown options.
  for (const name of ['www.example.com.', 'nothere.example.com.', 'example.edu.']) {
    add({ name, type: T.A, edns: { udpSize: 1232, version: 1 } });
    add({ name, type: T.A, edns: { udpSize: 1232, version: 1, dnssecOk: true } }, true);
    add({ name, type: T.A, edns: { udpSize: 100 } });
    add({ name, type: T.A, edns: { udpSize: 65535, dnssecOk: true } });
    add({
      name,
      type: T.A,
      edns: { udpSize: 1232, options: [{ code: 65001, data: Uint8Array.of(1, 2, 3) }] },
    });
  }
  add({ name: 'big.example.com.', type: T.TXT, edns: { udpSize: 100 } });
  // Opcodes other than QUERY: IQUERY (1, obsolete), STATUS (2), unassigned 3, NOTIFY (4), UPDATE (5), DSO (6).
  for (const opcode of [1, 2, 3, 4, 5, 6]) {
    add({ name: 'example.com.', type: T.SOA, opcode });
    add({ name: 'example.com.', type: T.SOA, opcode, edns: { udpSize: 1232 } }, true);
  }
  // Classes: CHAOS identity queries, other classes, QCLASS ANY.
  for (const name of ['id.server.', 'hostname.bind.', 'version.bind.', 'version.server.', 'authors.bind.']) {
    for (const type of [T.TXT, T.A, T.ANY]) add({ name, type, class: 3, edns: { udpSize: 1232 } });
  }
  add({ name: 'www.example.com.', type: T.A, class: 3 });
  for (const klass of [2, 4, 254, 255, 1234]) {
    add({ name: 'www.example.com.', type: T.A, class: klass });
    add({ name: 'nothere.example.com.', type: T.A, class: klass, edns: { udpSize: 1232 } });
  }
  // Meta and special types.
  for (const type of [T.AXFR, T.IXFR, T.OPT, 253, 254, 0]) {
    add({ name: 'example.com.', type, edns: { udpSize: 1232 } });
    if (type === T.AXFR || type === T.IXFR) add({ name: 'example.com.', type }, true);
  }
  // Malformed queries (FORMERR), and packets that get no answer at all.
  const www = buildQuery({ id: 0x4242, name: 'www.example.com.', type: T.A });
  const withQd = (count: number) => withCount(www, 5, count);
  const malformed: [string, Uint8Array][] = [
    ['qdcount=0', withQd(0).subarray(0, 12)],
    ['qdcount=2', concat(withQd(2), www.subarray(12))],
    ['qdcount=1 but no question', withQd(1).subarray(0, 12)],
    ['question cut short', www.subarray(0, www.length - 3)],
    ['trailing garbage', concat(www, Uint8Array.of(0xde, 0xad))],
    ['arcount=1 without the record', withCount(www, 11, 1)],
    ['two OPT records', twoOpts()],
    ['OPT with a non-root owner', optOwner()],
    ['bad label type 0x40', badLabel()],
  ];
  // A response (QR set) must not be answered (RFC 1035 §7.3: avoid loops).
  const response = www.slice();
  response[2]! |= 0x80;
  malformed.push(['QR=1 (a response)', response]);
  for (const [what, bytes] of malformed) {
    for (const tcp of [false, true]) {
      // Some of these get no reply at all: wait less than for real questions.
      const label = `malformed: ${what} ${tcp ? 'tcp' : 'udp'}`;
      out.push({ label, spec: { name: '.', type: 0 }, bytes, tcp, timeoutMs: 500 });
    }
  }
  return out;
}

/** A copy of `bytes` with the low octet of a 16-bit header count set to `value`. */
function withCount(bytes: Uint8Array, offset: number, value: number): Uint8Array {
  const b = bytes.slice();
  b[offset] = value;
  return b;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function twoOpts(): Uint8Array {
  const q = buildQuery({ id: 0x4343, name: 'www.example.com.', type: T.A, edns: { udpSize: 1232 } });
  const opt = q.subarray(q.length - 11);
  const b = concat(q, opt);
  b[11] = 2;
  return b;
}

function optOwner(): Uint8Array {
  const q = buildQuery({ id: 0x4444, name: 'www.example.com.', type: T.A });
  const b = concat(q, Uint8Array.of(1, 0x61, 0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0));
  b[11] = 1;
  return b;
}

function badLabel(): Uint8Array {
  const b = buildQuery({ id: 0x4545, name: 'www.example.com.', type: T.A }).slice();
  b[12] = 0x43; // an extended label type (RFC 6891 §5), which no one supports
  return b;
}

// ---------------------------------------------------------------------------------------------------
// Normalised view of a response

export interface View {
  noResponse: boolean;
  /** `decodeMessage` error; the raw bytes are then not compared further. */
  undecodable?: string;
  rcode: number;
  opcode: number;
  flags: string;
  /** Hex of the question section as sent back, '' when absent. */
  question: string;
  answer: string[];
  authority: string[];
  additional: string[];
  opt: string;
  size: number;
}

const NAME_FIELDS = ['target', 'host', 'exchange', 'mname', 'rname', 'replacement'] as const;

function rdataText(data: Rdata | UnknownRdata): string {
  if (typeof data.type !== 'string') return printUnknownRdata(data as UnknownRdata);
  // Names inside RDATA compare without case (a server may compress them against a mixed-case qname).
  const lowered: Record<string, unknown> = { ...data };
  for (const f of NAME_FIELDS) if (typeof lowered[f] === 'string') lowered[f] = nameKey(lowered[f] as string);
  return printRdata(lowered as unknown as Rdata);
}

/** Groups records into RRsets and prints each as one line; duplicated records stay visible. */
function rrsets(records: readonly ResourceRecord[]): string[] {
  const groups = new Map<string, { ttls: Set<number>; rdata: string[] }>();
  for (const rr of records) {
    const key = `${nameKey(rr.name)} ${rr.class === 1 ? 'IN' : `CLASS${rr.class}`} ${typeName(rr.type)}`;
    const g = getOrInsert(groups, key, () => ({ ttls: new Set<number>(), rdata: [] as string[] }));
    g.ttls.add(rr.ttl);
    g.rdata.push(rdataText(rr.data));
  }
  return [...groups]
    .map(([key, g]) => `${key} ttl=${[...g.ttls].sort().join('/')} [${g.rdata.sort().join(' | ')}]`)
    .sort();
}

function toHex(b: Uint8Array | undefined): string {
  return b ? Buffer.from(b).toString('hex') : '';
}

export function view(x: DnsExchange): View {
  const empty: View = {
    noResponse: x.raw === undefined,
    rcode: -1,
    opcode: -1,
    flags: '',
    question: '',
    answer: [],
    authority: [],
    additional: [],
    opt: '',
    size: x.raw?.length ?? 0,
  };
  if (!x.raw) return empty;
  if (!x.message) return { ...empty, undecodable: x.decodeError ?? 'undecodable' };
  const m: Message = x.message;
  const flags = (['qr', 'aa', 'tc', 'rd', 'ra', 'ad', 'cd'] as const).filter((f) => m[f]).join(' ');
  return {
    noResponse: false,
    rcode: m.rcode,
    opcode: m.opcode,
    flags,
    question: toHex(rawQuestion(x.raw)),
    answer: rrsets(m.answers),
    authority: rrsets(m.authority),
    additional: rrsets(m.additional),
    opt: m.edns
      ? `udp=${m.edns.udpSize} version=${m.edns.version} do=${m.edns.dnssecOk} options=[${m.edns.options.map((o) => o.code).join(',')}]`
      : '',
    size: x.raw.length,
  };
}

// ---------------------------------------------------------------------------------------------------
// Accepted differences

export interface Context {
  query: CorpusQuery;
  zones: readonly ComputedZone[];
  /** Asks Knot a follow-up question (same transport, flags and EDNS as the original query). */
  askKnot(name: string, type: number): Promise<View>;
}

export interface AcceptedDifference {
  id: string;
  /** Why both behaviours are correct (or, in KNOWN_ZONEKEEPER_BUGS, what is wrong and where). */
  reason: string;
  /** Whether the rule may explain the difference between these two (partly reconciled) responses. */
  applies(zk: View, knot: View, ctx: Context): boolean;
  /**
   * Removes exactly the part of the difference the rule accounts for, on the copies it is given, after
   * checking whatever makes the rule safe. Returns false (changing nothing) when the check fails.
   */
  reconcile(zk: View, knot: View, ctx: Context): boolean | Promise<boolean>;
}

/** One RRset line of a View, taken apart. */
interface RRsetLine {
  owner: string;
  rrclass: string;
  type: string;
  rdata: string[];
}

function parseLine(line: string): RRsetLine {
  const [owner = '', rrclass = '', type = ''] = line.split(' ', 3);
  const open = line.indexOf(' [');
  return { owner, rrclass, type, rdata: line.slice(open + 2, -1).split(' | ') };
}

const hasFlag = (v: View, flag: string) => v.flags.split(' ').includes(flag);
const sameList = (a: readonly string[], b: readonly string[]) =>
  isDeepStrictEqual([...a].sort(), [...b].sort());

/** The origin of the served zone nearest to `name` ('' outside every zone). */
function zoneOf(name: string, zones: readonly ComputedZone[]): string {
  let best = '';
  for (const z of zones) {
    if (isInDomain(name, z.origin) && z.origin.length > best.length) best = nameKey(z.origin);
  }
  return best;
}

/**
 * For answers where Knot stops at a CNAME that Zonekeeper follows further: checks that Zonekeeper's
 * response is exactly Knot's prefix (the CNAMEs up to the stop) followed by Knot's own answer for the
 * CNAME's target (answer, authority, additional and rcode), then reconciles.
 */
async function continuesLikeKnot(zk: View, knot: View, ctx: Context): Promise<boolean> {
  const last = knot.answer.at(-1);
  if (!last) return false;
  const target = parseLine(last).rdata[0]!;
  const rest = await ctx.askKnot(target, ctx.query.spec.type);
  const expected = [...knot.answer, ...rest.answer];
  if (!sameList(zk.answer, expected)) return false;
  if (!sameList(zk.authority, rest.authority) || zk.rcode !== rest.rcode) return false;
  const additionalOk =
    sameList(zk.additional, rest.additional) || extraAdditionalFromOtherZones(zk, rest, ctx, target);
  if (!additionalOk) return false;
  zk.answer = [...knot.answer];
  zk.authority = [...knot.authority];
  zk.additional = [...knot.additional];
  zk.rcode = knot.rcode;
  return true;
}

/** The CNAME in Knot's answer after which Zonekeeper's answer goes on, if that is the shape. */
function stoppedCname(zk: View, knot: View): RRsetLine | undefined {
  const last = knot.answer.at(-1);
  if (!last || !knot.answer.every((l) => zk.answer.includes(l))) return undefined;
  const line = parseLine(last);
  return line.type === 'CNAME' ? line : undefined;
}

/**
 * True when Zonekeeper's additional section is Knot's plus A/AAAA RRsets owned by names of another
 * served zone than `home`'s, each exactly as that zone holds it.
 */
function extraAdditionalFromOtherZones(zk: View, knot: View, ctx: Context, home: string): boolean {
  if (!knot.additional.every((l) => zk.additional.includes(l))) return false;
  const extra = zk.additional.filter((l) => !knot.additional.includes(l));
  if (extra.length === 0) return false;
  const homeZone = zoneOf(home, ctx.zones);
  return extra.every((l) => {
    const { owner, type } = parseLine(l);
    const zone = zoneOf(owner, ctx.zones);
    return (
      zone !== '' && zone !== homeZone && (type === 'A' || type === 'AAAA') && servedLines(ctx.zones).has(l)
    );
  });
}

const linesCache = new WeakMap<readonly ComputedZone[], Set<string>>();

/** Every RRset of the computed zones, printed as a View line. */
function servedLines(zones: readonly ComputedZone[]): Set<string> {
  let lines = linesCache.get(zones);
  if (!lines) {
    lines = new Set();
    for (const { zone } of zones) {
      for (const r of zone.rrsets) {
        lines.add(
          `${nameKey(r.owner)} IN ${r.type} ttl=${r.ttl} [${r.rdata.map(rdataText).sort().join(' | ')}]`,
        );
      }
    }
    linesCache.set(zones, lines);
  }
  return lines;
}

/**
 * Every difference between Zonekeeper and Knot that is not a bug on either side. Applied in order to
 * copies of the two responses; each entry reconciles only the part it explains.
 */
export const ACCEPTED_DIFFERENCES: AcceptedDifference[] = [
  {
    id: 'cd-bit',
    reason:
      'Zonekeeper copies CD from the query into the response (RFC 4035 §3.1.6); Knot clears it in ' +
      'every response. CD only matters between a validating resolver and its client; the authoritative ' +
      'data is the same either way.',
    applies: (zk, knot, { query }) => query.spec.cd === true && hasFlag(zk, 'cd') && !hasFlag(knot, 'cd'),
    reconcile: (zk) => {
      zk.flags = zk.flags
        .split(' ')
        .filter((f) => f !== 'cd')
        .join(' ');
      return true;
    },
  },
  {
    id: 'chaos-identity',
    reason:
      'CHAOS-class identity names (RFC 4892 §2: id.server; hostname.bind and version.bind/server by ' +
      'convention) are not DNS data of any zone, so nothing fixes their header or other types. ' +
      'Zonekeeper answers them like a built-in CH zone (AA set, as BIND does; NODATA for other types, the ' +
      'TXT for ANY); Knot answers the TXT without AA and refuses other types.',
    applies: (zk, knot, { query }) =>
      query.spec.class === 3 &&
      ['id.server.', 'hostname.bind.', 'version.bind.', 'version.server.'].includes(
        nameKey(query.spec.name),
      ) &&
      hasFlag(zk, 'aa') &&
      !hasFlag(knot, 'aa') &&
      (query.spec.type === T.TXT ? sameList(zk.answer, knot.answer) : knot.rcode === 5),
    reconcile: (zk, knot, { query }) => {
      if (query.spec.type === T.TXT) zk.flags = knot.flags;
      else Object.assign(zk, { ...knot, question: zk.question, size: zk.size });
      return true;
    },
  },
  {
    id: 'extended-dns-error',
    reason:
      'Knot adds an Extended DNS Error option (RFC 8914, option code 15) to some error responses, e.g. ' +
      'REFUSED for names outside its zones. EDE is optional (RFC 8914 §3: a server MAY include it) and ' +
      'changes nothing in the rcode or the sections.',
    applies: (zk, knot) => knot.opt.endsWith('options=[15]') && zk.opt.endsWith('options=[]'),
    reconcile: (_zk, knot) => {
      knot.opt = knot.opt.replace('options=[15]', 'options=[]');
      return true;
    },
  },
  {
    id: 'notify-update-opcodes',
    reason:
      'NOTIFY (opcode 4) and UPDATE (5) without TSIG: Knot rejects both with NOTAUTH (RFC 2136 §3.1.2/' +
      'RFC 8945 access control). Zonekeeper does not implement NOTIFY as a secondary and answers NOTIMP ' +
      '(RFC 1035 §4.1.1); it implements UPDATE and refuses it, REFUSED, for a zone without an ' +
      'updatePolicy (and for an unsigned one; RFC 2136 §3.3). Both refuse the operation.',
    applies: (zk, knot, { query }) =>
      knot.rcode === 9 &&
      ((query.spec.opcode === 4 && zk.rcode === 4) || (query.spec.opcode === 5 && zk.rcode === 5)),
    reconcile: (zk, knot) => {
      zk.rcode = knot.rcode;
      return true;
    },
  },
  {
    id: 'zone-transfer-refusal',
    reason:
      'AXFR/IXFR from a client no transfer policy admits: Zonekeeper answers FORMERR for AXFR over UDP ' +
      '(RFC 5936 §4.2: AXFR is defined over TCP only) and REFUSED otherwise (RFC 5936 §6: access control ' +
      'is the server’s); Knot answers NOTIMP for AXFR over UDP and NOTAUTH when the client may not ' +
      'transfer. Both refuse without data.',
    applies: (zk, knot, { query }) =>
      (query.spec.type === T.AXFR || query.spec.type === T.IXFR) &&
      zk.rcode !== knot.rcode &&
      [1, 5, 9].includes(zk.rcode) &&
      [4, 5, 9].includes(knot.rcode) &&
      [zk, knot].every((v) => v.answer.length + v.authority.length + v.additional.length === 0),
    reconcile: (zk, knot) => {
      zk.rcode = knot.rcode;
      return true;
    },
  },
  {
    id: 'qtype-opt',
    reason:
      'QTYPE OPT (41): OPT is a pseudo-RR that exists only in a message’s additional section (RFC 6891 ' +
      '§6.1.1), so asking for it is not a meaningful query. Zonekeeper answers FORMERR (as BIND does); ' +
      'Knot treats it as an ordinary type with no data (NODATA).',
    applies: (zk, knot, { query }) => query.spec.type === T.OPT && zk.rcode === 1 && knot.rcode === 0,
    reconcile: (zk, knot) => {
      Object.assign(zk, { ...knot, question: zk.question, size: zk.size });
      return true;
    },
  },
  {
    id: 'qtype-zero',
    reason:
      'QTYPE 0 is reserved (RFC 6895 §3.1) and no answer is defined for it. Knot answers NOTIMP; ' +
      'Zonekeeper treats it like any type the name does not have (NODATA with the SOA).',
    applies: (zk, knot, { query }) =>
      query.spec.type === 0 && !query.bytes && zk.rcode === 0 && knot.rcode === 4,
    reconcile: (zk, knot) => {
      Object.assign(zk, { ...knot, question: zk.question, size: zk.size });
      return true;
    },
  },
  {
    id: 'malformed-dropped',
    reason:
      'A query Knot cannot parse (no or two questions, a question cut short, an unknown label type) is ' +
      'dropped without a reply; Zonekeeper replies FORMERR (RFC 1035 §4.1.1: "unable to interpret the ' +
      'query"). Either way the client gets no data.',
    applies: (zk, knot, { query }) =>
      query.bytes !== undefined && knot.noResponse && zk.rcode === 1 && zk.answer.length === 0,
    reconcile: (zk, knot) => {
      Object.assign(zk, { ...knot });
      return true;
    },
  },
  {
    id: 'opt-owner-not-root',
    reason:
      'An OPT record whose owner is not the root violates RFC 6891 §6.1.2; Zonekeeper rejects the query ' +
      'with FORMERR, Knot overlooks the owner and answers. Both are reasonable for a malformed query.',
    applies: (zk, knot, { query }) =>
      query.label.startsWith('malformed: OPT with a non-root owner') && zk.rcode === 1 && knot.rcode === 0,
    reconcile: (zk, knot) => {
      Object.assign(zk, { ...knot, question: zk.question, size: zk.size });
      return true;
    },
  },
  {
    id: 'truncated-content',
    reason:
      'Both set TC; Knot keeps the records that fit (here part of a referral whose glue does not), ' +
      'Zonekeeper cuts the response back to the question. RFC 2181 §9: a client that sees TC ignores the ' +
      'response and asks again over TCP, and RFC 9471 §3 only requires TC when in-domain glue does not ' +
      'fit; the TCP answers are compared separately.',
    applies: (zk, knot) => hasFlag(zk, 'tc') && hasFlag(knot, 'tc'),
    reconcile: (zk, knot) => {
      for (const v of [zk, knot]) v.answer = v.authority = v.additional = [];
      return true;
    },
  },
  {
    id: 'any-rrset-choice',
    reason:
      'RFC 8482 §4.1: an ANY query is answered with one RRset (or a few) of the server’s choosing. Knot ' +
      'returns the RRset with the lowest type code at the name; Zonekeeper prefers A, AAAA, MX, TXT, SOA. ' +
      'Checked: Zonekeeper’s RRset (and its additional data) is what Knot answers for that type.',
    applies: (zk, knot, { query }) =>
      query.spec.type === T.ANY &&
      zk.rcode === 0 &&
      knot.rcode === 0 &&
      zk.answer.length === 1 &&
      knot.answer.length === 1 &&
      parseLine(zk.answer[0]!).owner === nameKey(query.spec.name) &&
      parseLine(knot.answer[0]!).owner === nameKey(query.spec.name) &&
      parseLine(zk.answer[0]!).type !== parseLine(knot.answer[0]!).type,
    reconcile: async (zk, knot, ctx) => {
      const type = typeCode(parseLine(zk.answer[0]!).type)!;
      const direct = await ctx.askKnot(ctx.query.spec.name, type);
      if (!sameList(direct.answer, zk.answer)) return false;
      const additionalOk =
        sameList(direct.additional, zk.additional) ||
        extraAdditionalFromOtherZones(zk, direct, ctx, ctx.query.spec.name);
      if (!additionalOk) return false;
      zk.answer = [...knot.answer];
      zk.additional = [...knot.additional];
      return true;
    },
  },
  {
    id: 'cname-chain-length',
    reason:
      'Knot follows at most 5 CNAMEs in one answer, Zonekeeper up to MAX_CNAME_CHAIN (12). RFC 1034 ' +
      '§3.6.2/§4.3.2 set no limit; a resolver restarts at the last target (RFC 1034 §5.3.3), so both lead ' +
      'to the same data. Checked: Zonekeeper’s extra records are Knot’s answer for that target.',
    applies: (zk, knot) => {
      const stop = stoppedCname(zk, knot);
      return (
        stop !== undefined &&
        knot.answer.length === 5 &&
        knot.answer.every((l) => parseLine(l).type === 'CNAME')
      );
    },
    reconcile: continuesLikeKnot,
  },
  {
    id: 'cname-across-zones',
    reason:
      'When a CNAME points into another zone served by the same server, Zonekeeper goes on answering ' +
      'from that zone (RFC 1034 §4.3.2 step 3a: "go back to step 1", which searches every available ' +
      'zone); Knot stops at the zone boundary and leaves the rest to the resolver (or, for a name below one ' +
      'of its own delegations, adds that referral). Checked: Zonekeeper’s extra records, authority and ' +
      'rcode are Knot’s answer for the CNAME target.',
    applies: (zk, knot, { zones }) => {
      const stop = stoppedCname(zk, knot);
      return stop !== undefined && zoneOf(stop.owner, zones) !== zoneOf(stop.rdata[0]!, zones);
    },
    reconcile: continuesLikeKnot,
  },
  {
    id: 'additional-from-other-zones',
    reason:
      'RFC 1034 §4.3.2 step 6 adds "whatever addresses are available" for NS, MX and SRV targets. ' +
      'Zonekeeper also takes them from the other zones it serves; Knot only from the zone being ' +
      'answered. Additional data is optional either way (RFC 2181 §9 lets it be dropped).',
    applies: (zk, knot, ctx) =>
      sameList(zk.answer, knot.answer) && extraAdditionalFromOtherZones(zk, knot, ctx, ctx.query.spec.name),
    reconcile: (zk, knot) => {
      zk.additional = [...knot.additional];
      return true;
    },
  },
];

/**
 * Differences that are Zonekeeper bugs in files outside this suite's ownership, each with the place to
 * fix and the rule broken. They are reported on every run and the test fails once one no longer
 * happens, so the entry is removed together with the fix.
 */
export const KNOWN_ZONEKEEPER_BUGS: AcceptedDifference[] = [];

// ---------------------------------------------------------------------------------------------------
// Comparison

interface Outcome {
  query: CorpusQuery;
  zk: View;
  knot: View;
  /** Accepted differences (and known bugs) that made the two equal. */
  excused: string[];
  /** Left-over difference, if any. */
  diff?: string;
}

function clone(v: View): View {
  return { ...v, answer: [...v.answer], authority: [...v.authority], additional: [...v.additional] };
}

function comparable(v: View): Omit<View, 'size'> {
  const { size: _size, ...rest } = v;
  return rest;
}

async function compare(zkX: DnsExchange, knotX: DnsExchange, ctx: Context): Promise<Outcome> {
  const { query } = ctx;
  const zk = view(zkX);
  const knot = view(knotX);
  const outcome: Outcome = { query, zk, knot, excused: [] };
  const problems: string[] = [];
  // 0x20: the question comes back exactly as asked (RFC 1035 §7.1; the reply must match the query).
  const asked = toHex(rawQuestion(query.bytes ?? buildQuery(query.spec)));
  if (!query.bytes && !zk.noResponse && zk.question !== '' && zk.question !== asked) {
    problems.push(`  Zonekeeper's question ${zk.question} differs from the query's ${asked}`);
  }
  const a = clone(zk);
  const b = clone(knot);
  for (const rule of [...KNOWN_ZONEKEEPER_BUGS, ...ACCEPTED_DIFFERENCES]) {
    if (isDeepStrictEqual(comparable(a), comparable(b))) break;
    if (rule.applies(a, b, ctx) && (await rule.reconcile(a, b, ctx))) outcome.excused.push(rule.id);
  }
  if (!isDeepStrictEqual(comparable(a), comparable(b))) problems.push(describeDiff(a, b));
  // Name compression in every section (RFC 1035 §4.1.4): for the same content, Zonekeeper's message is
  // never larger than Knot's, which compresses owner names and the names in NS/CNAME/MX/SOA/PTR RDATA.
  if (problems.length === 0 && outcome.excused.length === 0 && !zk.noResponse && zk.size > knot.size) {
    problems.push(
      `  size: zonekeeper=${zk.size} knot=${knot.size} octets for the same content (compression)`,
    );
  }
  if (problems.length > 0) outcome.diff = problems.join('\n');
  return outcome;
}

function describeDiff(zk: View, knot: View): string {
  const lines: string[] = [];
  const keys: (keyof View)[] = ['noResponse', 'undecodable', 'rcode', 'opcode', 'flags', 'question', 'opt'];
  for (const key of keys) {
    if (zk[key] !== knot[key]) {
      lines.push(`  ${key}: zonekeeper=${JSON.stringify(zk[key])} knot=${JSON.stringify(knot[key])}`);
    }
  }
  for (const section of ['answer', 'authority', 'additional'] as const) {
    const onlyZk = zk[section].filter((x) => !knot[section].includes(x));
    const onlyKnot = knot[section].filter((x) => !zk[section].includes(x));
    if (onlyZk.length || onlyKnot.length) {
      lines.push(`  ${section}:`);
      for (const x of onlyZk) lines.push(`    only zonekeeper: ${x}`);
      for (const x of onlyKnot) lines.push(`    only knot:       ${x}`);
    }
  }
  return lines.join('\n');
}

function formatView(v: View): string {
  if (v.noResponse) return '    (no response)';
  if (v.undecodable) return `    (undecodable: ${v.undecodable})`;
  return [
    `    rcode=${v.rcode} opcode=${v.opcode} flags=[${v.flags}] opt=${v.opt || 'none'} size=${v.size}`,
    ...(['answer', 'authority', 'additional'] as const).flatMap((s) => v[s].map((x) => `    ${s}: ${x}`)),
  ].join('\n');
}

/** Runs `fn` over `items` with at most `limit` in flight, keeping the order of the results. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

// ---------------------------------------------------------------------------------------------------
// The test

describe('differential test against Knot DNS', () => {
  let dir: string;
  let state: string;
  let serve: ServeProcess | undefined;
  let knot: KnotProcess | undefined;
  let zones: ComputedZone[];

  before(async () => {
    dir = await tempDir('differential');
    state = await tempDir('differential-state');
    const folder = path.join(dir, 'manifests');
    await mkdir(folder);
    await writeFile(
      path.join(folder, 'zones.yaml'),
      manifests()
        .map((d) => stringify(d))
        .join('---\n'),
    );
    const workers = Number(process.env.DIFF_WORKERS ?? '1');
    serve = await startServe(folder, state, [
      '--identity',
      IDENTITY,
      '--version-string',
      VERSION,
      ...(workers > 1 ? ['--workers', String(workers)] : []),
    ]);
    // The same zones, computed in-process from the same files, printed for Knot at the served serials.
    const read = await readManifests([folder]);
    const resources: Resource[] = [];
    for (const doc of read.documents) {
      const result = validateResource(doc.value);
      assert.ok(result.ok, `invalid manifest: ${JSON.stringify(result)}`);
      resources.push(result.resource);
    }
    zones = computeZones(resources);
    assert.equal(zones.length, 5, `zones: ${zones.map((z) => z.origin).join(', ')}`);
    for (const z of zones) {
      const rejected = [...z.zone.verdicts.values()].filter((v) => !v.accepted);
      assert.deepEqual(rejected, [], `${z.origin}: every record set is published`);
    }
    const files = [];
    for (const z of zones) {
      const soa = await exchange(serve.dnsPort, buildQuery({ name: z.origin, type: T.SOA }));
      const data = soa.message?.answers[0]?.data as Extract<Rdata, { type: 'SOA' }> | undefined;
      assert.ok(data?.type === 'SOA', `Zonekeeper serves ${z.origin}: ${serve.log()}`);
      files.push({ origin: z.origin, text: printZoneFile(z.zone, data.serial) });
    }
    knot = await startKnot({ zones: files, identity: IDENTITY, version: VERSION, udpWorkers: 1 });
  });

  after(async () => {
    await Promise.all([serve?.stop(), knot?.stop()]);
    await removeAll(dir, state);
  });

  test('answers the generated corpus like Knot, up to the accepted differences', async (t) => {
    const corpus = generateCorpus();
    assert.ok(corpus.length >= 300, `corpus of ${corpus.length} queries`);
    const started = performance.now();
    const outcomes = await pool(corpus, 8, async (query) => {
      const bytes = query.bytes ?? buildQuery(query.spec);
      const options = { tcp: query.tcp, timeoutMs: query.timeoutMs ?? 2000 };
      // A datagram lost on a loaded machine is not a difference: a question that should be answered
      // is sent once more over UDP before "no response" counts.
      const ask = async (port: number, q: Uint8Array) => {
        const first = await exchange(port, q, options);
        return first.raw || query.tcp || query.timeoutMs ? first : exchange(port, q, options);
      };
      const [zk, kn] = await Promise.all([ask(serve!.dnsPort, bytes), ask(knot!.port, bytes)]);
      const askKnot = async (name: string, type: number) =>
        view(await ask(knot!.port, buildQuery({ ...query.spec, name, type })));
      return compare(zk, kn, { query, zones, askKnot });
    });
    const failures = outcomes.filter((o) => o.diff !== undefined);
    // The corpus must keep exercising what it is for: every kind of answer, agreed on by both servers.
    const agreed = outcomes.filter((o) => o.diff === undefined && !o.zk.noResponse);
    const kinds: Record<string, (o: Outcome) => boolean> = {
      answer: (o) => o.zk.rcode === 0 && hasFlag(o.zk, 'aa') && o.zk.answer.length > 0,
      nodata: (o) =>
        o.zk.rcode === 0 && o.zk.answer.length === 0 && o.zk.authority.some((l) => l.includes(' SOA ')),
      nxdomain: (o) => o.zk.rcode === 3,
      referral: (o) =>
        o.zk.rcode === 0 && !hasFlag(o.zk, 'aa') && o.zk.authority.some((l) => l.includes(' NS ')),
      'wildcard answer': (o) => o.query.spec.name.toLowerCase().includes('.wild.') && o.zk.answer.length > 0,
      'cname chain': (o) => o.zk.answer.filter((l) => l.includes(' CNAME ')).length >= 2,
      'truncated (TC)': (o) => hasFlag(o.zk, 'tc') && hasFlag(o.knot, 'tc'),
      'glue in additional': (o) => !hasFlag(o.zk, 'aa') && o.zk.additional.length > 0,
      refused: (o) => o.zk.rcode === 5,
      notimp: (o) => o.zk.rcode === 4,
      formerr: (o) => o.zk.rcode === 1,
      badvers: (o) => o.zk.rcode === 16,
      'DO echoed': (o) => o.zk.opt.includes('do=true'),
      'over TCP': (o) => o.query.tcp,
    };
    const coverage = Object.entries(kinds).map(([kind, test]) => [kind, agreed.filter(test).length] as const);
    t.diagnostic(`agreed answers by kind: ${coverage.map(([k, n]) => `${k}=${n}`).join(', ')}`);
    const used = new Map<string, number>();
    for (const o of outcomes) for (const id of o.excused) used.set(id, (used.get(id) ?? 0) + 1);
    t.diagnostic(
      `${corpus.length} queries in ${Math.round(performance.now() - started)} ms; ${failures.length} unexplained differences; ` +
        `accepted: ${[...used].map(([id, n]) => `${id}×${n}`).join(', ') || 'none'}`,
    );
    const format = (f: Outcome) =>
      `${f.query.label}\n${f.diff}\n  zonekeeper:\n${formatView(f.zk)}\n  knot:\n${formatView(f.knot)}`;
    // DIFFERENTIAL_REPORT=file writes every difference (the assertion shows the first 40).
    if (process.env.DIFFERENTIAL_REPORT) {
      await writeFile(process.env.DIFFERENTIAL_REPORT, failures.map(format).join('\n\n'));
    }
    const report = failures.slice(0, 40).map(format).join('\n\n');
    assert.equal(failures.length, 0, `${failures.length} of ${corpus.length} queries differ:\n\n${report}`);
    assert.deepEqual(
      coverage.filter(([, n]) => n === 0).map(([k]) => k),
      [],
      'the corpus exercises every kind of answer',
    );
    for (const bug of KNOWN_ZONEKEEPER_BUGS) {
      if (used.has(bug.id))
        t.diagnostic(`known Zonekeeper bug ${bug.id} (×${used.get(bug.id)}): ${bug.reason}`);
    }
    const unused = [...ACCEPTED_DIFFERENCES, ...KNOWN_ZONEKEEPER_BUGS]
      .filter((r) => !used.has(r.id))
      .map((r) => r.id);
    assert.deepEqual(
      unused,
      [],
      'every accepted difference and known bug still happens (remove stale entries)',
    );
  });
});
