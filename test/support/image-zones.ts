/**
 * Two zones for the zone image tests (src/server/image/): delegations, glue, wildcards, empty
 * non-terminals, CNAME chains and loops across zones, DS at a cut, ALIAS and PTR.
 */
import type { Name } from '../../src/dns/name.ts';
import { parseRdata } from '../../src/dns/rdata.ts';
import type { RecordTypeName } from '../../src/dns/rrtype.ts';
import type { RRsetData } from '../../src/zones/rrset.ts';
import type { SoaFields } from '../../src/zones/soa.ts';

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
