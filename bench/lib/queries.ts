/**
 * The query mix sent by dnsperf, the probes used to check each server before it is measured, and the
 * answers they must get, computed from the assembled zone.
 */
import { writeFileSync } from 'node:fs';
import { nameKey, parentName } from '../../src/dns/name.ts';
import { printRdata } from '../../src/dns/rdata.ts';
import { getOrInsert } from '../../src/util/get-or-insert.ts';
import type { AssembledZone } from '../../src/zones/assemble.ts';
import type { RRset } from '../../src/zones/rrset.ts';
import { prng } from '../../test/support/prng.ts';

export interface MixEntry {
  kind: string;
  /** Percent of the queries. */
  share: number;
  qtype: string;
  /** Slot range (inclusive) in the generator's blocks of 100 that the name is drawn from. */
  slots?: [number, number];
  description: string;
  expect: 'NOERROR' | 'NXDOMAIN' | 'NODATA';
}

/** The realistic mix: mostly address lookups that hit, a tail of misses, aliases, mail and services. */
export const MIX: readonly MixEntry[] = [
  {
    kind: 'a-hit',
    share: 50,
    qtype: 'A',
    slots: [0, 54],
    description: 'A of an existing host',
    expect: 'NOERROR',
  },
  {
    kind: 'a-wildcard',
    share: 10,
    qtype: 'A',
    slots: [95, 99],
    description: 'A of a random name under a wildcard (*.w<i>)',
    expect: 'NOERROR',
  },
  {
    kind: 'aaaa-hit',
    share: 10,
    qtype: 'AAAA',
    slots: [0, 14],
    description: 'AAAA of a dual-stack host',
    expect: 'NOERROR',
  },
  {
    kind: 'nxdomain',
    share: 10,
    qtype: 'A',
    description: 'A of a name that does not exist',
    expect: 'NXDOMAIN',
  },
  {
    kind: 'cname',
    share: 10,
    qtype: 'A',
    slots: [70, 79],
    description: 'A of a CNAME whose in-zone target has an A (answer: CNAME + A)',
    expect: 'NOERROR',
  },
  {
    kind: 'mx',
    share: 5,
    qtype: 'MX',
    slots: [80, 84],
    description: 'MX of a mail domain',
    expect: 'NOERROR',
  },
  { kind: 'txt', share: 2, qtype: 'TXT', slots: [85, 89], description: 'TXT (SPF-like)', expect: 'NOERROR' },
  {
    kind: 'srv',
    share: 2,
    qtype: 'SRV',
    slots: [90, 94],
    description: 'SRV _sip._tcp.<name>',
    expect: 'NOERROR',
  },
  {
    kind: 'nodata',
    share: 1,
    qtype: 'AAAA',
    slots: [15, 54],
    description: 'AAAA of an IPv4-only host (NODATA)',
    expect: 'NODATA',
  },
];

/** Relative owner name queried for one mix entry (index `i` must have the entry's slot). */
function relativeQueryName(entry: MixEntry, i: number, random: () => number): string {
  switch (entry.kind) {
    case 'a-hit':
    case 'aaaa-hit':
    case 'nodata':
      return `h${i}`;
    case 'a-wildcard':
      return `x${Math.floor(random() * 1e9)}.w${i}`;
    case 'cname':
      return `c${i}`;
    case 'mx':
      return `m${i}`;
    case 'txt':
      return `t${i}`;
    case 'srv':
      return `_sip._tcp.s${i}`;
    default:
      return `nx${Math.floor(random() * 1e9)}`;
  }
}

function pickIndex(entry: MixEntry, count: number, random: () => number): number {
  const [lo, hi] = entry.slots ?? [0, 0];
  const blocks = Math.ceil(count / 100);
  for (;;) {
    const i = Math.floor(random() * blocks) * 100 + lo + Math.floor(random() * (hi - lo + 1));
    if (i < count) return i;
  }
}

export interface Query {
  kind: string;
  name: string;
  qtype: string;
}

/** `lines` queries in the proportions of MIX, shuffled, for a zone of `count` generated records. */
export function generateQueries(origin: string, count: number, lines: number, seed = 1): Query[] {
  if (count < 100) throw new Error('the zone needs at least 100 generated records for the query mix');
  const random = prng(seed);
  const out: Query[] = [];
  for (const entry of MIX) {
    const n = Math.round((lines * entry.share) / 100);
    for (let k = 0; k < n; k++) {
      const rel = relativeQueryName(entry, pickIndex(entry, count, random), random);
      out.push({ kind: entry.kind, name: `${rel}.${origin}`, qtype: entry.qtype });
    }
  }
  for (let k = out.length - 1; k > 0; k--) {
    const j = Math.floor(random() * (k + 1));
    [out[k], out[j]] = [out[j]!, out[k]!];
  }
  return out;
}

export function writeQueryFile(file: string, queries: readonly Query[]): void {
  writeFileSync(file, queries.map((q) => `${q.name} ${q.qtype}\n`).join(''));
}

/** A couple of fixed probes per kind of the mix, plus a random sample of the query file. */
export function probes(origin: string, queries: readonly Query[], sample = 20, seed = 7): Query[] {
  const fixed: Query[] = [
    { kind: 'a-hit', name: `h1.${origin}`, qtype: 'A' },
    { kind: 'a-wildcard', name: `anything.w95.${origin}`, qtype: 'A' },
    { kind: 'aaaa-hit', name: `h0.${origin}`, qtype: 'AAAA' },
    { kind: 'nxdomain', name: `does-not-exist.${origin}`, qtype: 'A' },
    { kind: 'cname', name: `c70.${origin}`, qtype: 'A' },
    { kind: 'mx', name: `m80.${origin}`, qtype: 'MX' },
    { kind: 'txt', name: `t85.${origin}`, qtype: 'TXT' },
    { kind: 'srv', name: `_sip._tcp.s90.${origin}`, qtype: 'SRV' },
    { kind: 'nodata', name: `h20.${origin}`, qtype: 'AAAA' },
  ];
  const random = prng(seed);
  for (let k = 0; k < sample && queries.length > 0; k++) {
    fixed.push(queries[Math.floor(random() * queries.length)]!);
  }
  return fixed;
}

// ---------------------------------------------------------------------------------------------------
// Expected answers

export interface Expected {
  status: 'NOERROR' | 'NXDOMAIN';
  /** Normalised answer lines `owner ttl IN type rdata`, lowercase, sorted. */
  answer: string[];
}

/** Looks names up in an assembled zone the way an authoritative server must (RFC 1034 §4.3.2, RFC 4592). */
export class ZoneOracle {
  private readonly byOwner = new Map<string, Map<string, RRset>>();
  /** Every owner and every ancestor of an owner inside the zone (empty non-terminals exist). */
  private readonly existing = new Set<string>();
  private readonly originKey: string;

  constructor(zone: AssembledZone) {
    this.originKey = nameKey(zone.origin);
    for (const rrset of zone.rrsets) {
      const k = nameKey(rrset.owner);
      const types = getOrInsert(this.byOwner, k, () => new Map<string, RRset>());
      types.set(rrset.type, rrset);
      for (let n = rrset.owner; ; n = parentName(n)) {
        this.existing.add(nameKey(n));
        if (nameKey(n) === this.originKey || n === '.') break;
      }
    }
  }

  expect(qname: string, qtype: string): Expected {
    const answer: string[] = [];
    let name = qname;
    for (let hops = 0; hops < 8; hops++) {
      const found = this.find(name);
      if (found === 'nxdomain') return { status: 'NXDOMAIN', answer: sorted(answer) };
      if (found === 'nodata') break;
      const exact = found.get(qtype);
      if (exact) {
        answer.push(...lines(name, exact));
        break;
      }
      const cname = found.get('CNAME');
      if (cname && qtype !== 'CNAME') {
        answer.push(...lines(name, cname));
        const target = cname.rdata[0];
        if (target?.type !== 'CNAME') break;
        name = target.target;
        continue;
      }
      break;
    }
    return { status: 'NOERROR', answer: sorted(answer) };
  }

  /** The RRsets at a name (exact or synthesised from a wildcard), or why there are none. */
  private find(qname: string): Map<string, RRset> | 'nodata' | 'nxdomain' {
    const k = nameKey(qname);
    const exact = this.byOwner.get(k);
    if (exact) return exact;
    if (this.existing.has(k)) return 'nodata';
    // Closest encloser, then its wildcard.
    let encloser = parentName(qname);
    while (!this.existing.has(nameKey(encloser)) && encloser !== '.') encloser = parentName(encloser);
    const wildcard = this.byOwner.get(nameKey(`*.${encloser}`));
    return wildcard ?? 'nxdomain';
  }
}

function lines(owner: string, rrset: RRset): string[] {
  return rrset.rdata.map((r) => normalise(`${owner} ${rrset.ttl} IN ${rrset.type} ${printRdata(r)}`));
}

export function normalise(line: string): string {
  return line.trim().replace(/\s+/g, ' ').toLowerCase();
}

function sorted(a: string[]): string[] {
  return [...a].sort();
}
