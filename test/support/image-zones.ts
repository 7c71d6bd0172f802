/**
 * Two zones for the zone image tests (src/server/image/): delegations, glue, wildcards, empty
 * non-terminals, CNAME chains and loops across zones, DS at a cut, ALIAS and PTR; and the
 * differential check those tests share (`compareAnswers`).
 */
import assert from 'node:assert/strict';
import { type Name, parentName } from '../../src/dns/name.ts';
import { parseRdata } from '../../src/dns/rdata.ts';
import { type RecordTypeName, RRType } from '../../src/dns/rrtype.ts';
import { ZoneAliasResolver } from '../../src/server/alias-resolver.ts';
import { QueryHandler } from '../../src/server/query-handler.ts';
import type { ServedZone, ZoneTable } from '../../src/server/zone-table.ts';
import type { RRsetData } from '../../src/zones/rrset.ts';
import type { SoaFields } from '../../src/zones/soa.ts';
import { buildQuery, type EdnsSpec } from './dns-fuzz.ts';

export const IMAGE_TEST_SOA: SoaFields = {
  ttl: 3600,
  mname: 'ns1.example.org.',
  rname: 'hostmaster.example.org.',
  refresh: 7200,
  retry: 900,
  expire: 1209600,
  minimum: 300,
};

/** An RRset at `owner`, its RDATA given in presentation form relative to example.org. */
export function imageRRset(owner: Name, type: RecordTypeName, ttl: number, ...rdata: string[]): RRsetData {
  return { owner, type, ttl, rdata: rdata.map((text) => parseRdata(type, text, 'example.org.')) };
}

export const IMAGE_TEST_ZONES: { origin: Name; rrsets: RRsetData[] }[] = [
  {
    origin: 'example.org.',
    rrsets: [
      imageRRset('example.org.', 'NS', 3600, 'ns1.example.org.', 'ns2.example.org.'),
      imageRRset('example.org.', 'MX', 300, '10 mail.other.test.', '20 mx2.example.org.'),
      imageRRset('example.org.', 'TXT', 300, '"v=spf1 -all"'),
      imageRRset('ns1.example.org.', 'A', 300, '192.0.2.53'),
      imageRRset('ns2.example.org.', 'AAAA', 300, '2001:db8::53'),
      imageRRset('mx2.example.org.', 'A', 300, '192.0.2.25'),
      imageRRset('mx2.example.org.', 'AAAA', 300, '2001:db8::25'),
      imageRRset('www.example.org.', 'A', 60, '192.0.2.1', '192.0.2.2'),
      imageRRset('www.example.org.', 'AAAA', 60, '2001:db8::1'),
      imageRRset('alias.example.org.', 'CNAME', 300, 'www.example.org.'),
      imageRRset('far.example.org.', 'CNAME', 300, 'host.other.test.'),
      imageRRset('loop1.example.org.', 'CNAME', 300, 'loop2.example.org.'),
      imageRRset('loop2.example.org.', 'CNAME', 300, 'loop1.example.org.'),
      imageRRset('*.wild.example.org.', 'A', 300, '192.0.2.99'),
      imageRRset('*.wild.example.org.', 'MX', 300, '10 mx2.example.org.'),
      imageRRset('sub.wild.example.org.', 'TXT', 300, '"exists"'),
      imageRRset('*.cn.example.org.', 'CNAME', 300, 'www.example.org.'),
      imageRRset('deep.a.b.c.example.org.', 'TXT', 300, '"deep"'),
      imageRRset('_sip._tcp.example.org.', 'SRV', 300, '10 5 5060 www.example.org.'),
      imageRRset('sub.example.org.', 'NS', 86400, 'ns.sub.example.org.', 'ns.other.test.'),
      imageRRset('ns.sub.example.org.', 'A', 86400, '192.0.2.77'),
      imageRRset(
        'sub.example.org.',
        'DS',
        3600,
        '12345 13 2 2BB183AF5F22588179A53B0A98631FAD1A292118D1B5AA8B2B52E1CE1A1A1A1A',
      ),
      imageRRset('caa.example.org.', 'CAA', 300, '0 issue "letsencrypt.org"'),
      imageRRset('apex-alias.example.org.', 'ALIAS', 300, 'www.other.test.'),
      imageRRset('ptr.example.org.', 'PTR', 300, 'www.example.org.'),
    ],
  },
  {
    origin: 'other.test.',
    rrsets: [
      imageRRset('other.test.', 'NS', 3600, 'ns1.example.org.'),
      imageRRset('host.other.test.', 'A', 300, '198.51.100.1'),
      imageRRset('mail.other.test.', 'A', 300, '198.51.100.25'),
      imageRRset('ns.other.test.', 'A', 300, '198.51.100.53'),
    ],
  },
];

/** Every owner, its parents, names below it, a wildcard's other names, in the case written and in upper case. */
export function questionNames(
  zones: readonly { origin: Name; rrsets: readonly RRsetData[] }[],
  extra: readonly string[],
): string[] {
  const names = new Set<string>(extra);
  for (const { origin, rrsets } of zones) {
    names.add(origin);
    names.add(`nope.${origin}`);
    for (const { owner } of rrsets) {
      names.add(owner);
      names.add(owner.toUpperCase());
      names.add(`x.${owner}`);
      names.add(`y.x.${owner.replace('*.', 'q.')}`);
      if (owner !== origin) names.add(parentName(owner));
    }
  }
  return [...names];
}

export const QUESTION_TYPES = [
  RRType.A,
  RRType.AAAA,
  RRType.NS,
  RRType.SOA,
  RRType.CNAME,
  RRType.MX,
  RRType.TXT,
  RRType.SRV,
  RRType.DS,
  RRType.PTR,
  RRType.CAA,
  RRType.NAPTR,
  RRType.SVCB,
  RRType.HTTPS,
  RRType.TLSA,
  RRType.SSHFP,
  RRType.ANY,
  RRType.ALIAS,
];
const EDNS: (EdnsSpec | undefined)[] = [undefined, { udpSize: 1232 }, { udpSize: 4096, dnssecOk: true }];

/**
 * The differential check of the zone image tests: asks every name × type (`QUESTION_TYPES` unless
 * given) over UDP and TCP, without EDNS, with it and with DO, of a `QueryHandler` over `expected` and
 * one over `actual` (no response cache), and asserts the same response bytes. Returns the count.
 */
export async function compareAnswers(
  expected: ZoneTable<ServedZone>,
  actual: ZoneTable<ServedZone>,
  names: readonly string[],
  types: readonly number[] = QUESTION_TYPES,
): Promise<number> {
  const handler = (table: ZoneTable<ServedZone>) =>
    new QueryHandler({ table, responseCache: 0, aliasResolver: new ZoneAliasResolver({ table }) });
  const fromExpected = handler(expected);
  const fromActual = handler(actual);
  let compared = 0;
  for (const name of names) {
    for (const type of types) {
      for (const edns of EDNS) {
        for (const transport of ['udp', 'tcp'] as const) {
          const packet = buildQuery({ id: compared & 0xffff, name, type, ...(edns ? { edns } : {}) });
          const want = await fromExpected.handle(packet, transport);
          const got = await fromActual.handle(packet, transport);
          assert.deepEqual(got, want, `${name} type ${type} ${transport} edns ${JSON.stringify(edns)}`);
          compared++;
        }
      }
    }
  }
  return compared;
}
