import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Name, nameKey } from '../../dns/name.ts';
import { parseRdata, printRdata } from '../../dns/rdata.ts';
import { type RecordTypeName, RRType } from '../../dns/rrtype.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import type { SoaFields } from '../../zones/soa.ts';
import { type Answer, answerQuery, type ZoneLookup, type ZoneView } from '../answer.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { stripFirstLabel, ZoneTable } from '../zone-table.ts';
import { ZoneImageView } from './image-view.ts';
import { ZoneImage } from './zone-image.ts';

const SOA: SoaFields = {
  ttl: 3600,
  mname: 'ns1.example.org.',
  rname: 'hostmaster.example.org.',
  refresh: 7200,
  retry: 900,
  expire: 1209600,
  minimum: 300,
};

function rrset(owner: Name, type: RecordTypeName, ttl: number, ...rdata: string[]): RRsetData {
  return { owner, type, ttl, rdata: rdata.map((text) => parseRdata(type, text, 'example.org.')) };
}

const ZONES: { origin: Name; rrsets: RRsetData[] }[] = [
  {
    origin: 'example.org.',
    rrsets: [
      rrset('example.org.', 'NS', 3600, 'ns1.example.org.', 'ns2.example.org.'),
      rrset('example.org.', 'MX', 300, '10 mail.other.test.', '20 mx2.example.org.'),
      rrset('example.org.', 'TXT', 300, '"v=spf1 -all"'),
      rrset('ns1.example.org.', 'A', 300, '192.0.2.53'),
      rrset('ns2.example.org.', 'AAAA', 300, '2001:db8::53'),
      rrset('mx2.example.org.', 'A', 300, '192.0.2.25'),
      rrset('mx2.example.org.', 'AAAA', 300, '2001:db8::25'),
      rrset('www.example.org.', 'A', 60, '192.0.2.1', '192.0.2.2'),
      rrset('www.example.org.', 'AAAA', 60, '2001:db8::1'),
      rrset('alias.example.org.', 'CNAME', 300, 'www.example.org.'),
      rrset('far.example.org.', 'CNAME', 300, 'host.other.test.'),
      rrset('loop1.example.org.', 'CNAME', 300, 'loop2.example.org.'),
      rrset('loop2.example.org.', 'CNAME', 300, 'loop1.example.org.'),
      rrset('*.wild.example.org.', 'A', 300, '192.0.2.99'),
      rrset('*.wild.example.org.', 'MX', 300, '10 mx2.example.org.'),
      rrset('sub.wild.example.org.', 'TXT', 300, '"exists"'),
      rrset('*.cn.example.org.', 'CNAME', 300, 'www.example.org.'),
      rrset('deep.a.b.c.example.org.', 'TXT', 300, '"deep"'),
      rrset('_sip._tcp.example.org.', 'SRV', 300, '10 5 5060 www.example.org.'),
      rrset('sub.example.org.', 'NS', 86400, 'ns.sub.example.org.', 'ns.other.test.'),
      rrset('ns.sub.example.org.', 'A', 86400, '192.0.2.77'),
      rrset(
        'sub.example.org.',
        'DS',
        3600,
        '12345 13 2 2BB183AF5F22588179A53B0A98631FAD1A292118D1B5AA8B2B52E1CE1A1A1A1A',
      ),
      rrset('caa.example.org.', 'CAA', 300, '0 issue "letsencrypt.org"'),
      rrset('apex-alias.example.org.', 'ALIAS', 300, 'www.other.test.'),
      rrset('ptr.example.org.', 'PTR', 300, 'www.example.org.'),
    ],
  },
  {
    origin: 'other.test.',
    rrsets: [
      rrset('other.test.', 'NS', 3600, 'ns1.example.org.'),
      rrset('host.other.test.', 'A', 300, '198.51.100.1'),
      rrset('mail.other.test.', 'A', 300, '198.51.100.25'),
      rrset('ns.other.test.', 'A', 300, '198.51.100.53'),
    ],
  },
];

/** The same lookup as `ZoneTable.findZone`, over views of zone images. */
function imageLookup(views: ZoneView[]): ZoneLookup {
  const byKey = new Map(views.map((v) => [v.originKey, v]));
  return {
    findZone(key) {
      let k = key;
      for (;;) {
        const zone = byKey.get(k);
        if (zone) return zone;
        if (k === '.') return undefined;
        k = stripFirstLabel(k);
      }
    },
  };
}

function shown(answer: Answer): string {
  const section = (rrsets: Answer['answer']) =>
    rrsets.map((s) => `${nameKey(s.owner)} ${s.ttl} ${s.type} ${s.rdata.map(printRdata).join(' | ')}`);
  return JSON.stringify({
    outcome: answer.outcome,
    aa: answer.aa,
    answer: section(answer.answer),
    authority: section(answer.authority),
    additional: section(answer.additional),
    alias: answer.alias,
  });
}

test('a zone image answers every question exactly as the ZoneSnapshot of the same zone does', () => {
  const table = new ZoneTable();
  const views: ZoneView[] = [];
  for (const { origin, rrsets } of ZONES) {
    table.set(ZoneSnapshot.build(origin, SOA, 2026112601, rrsets));
    views.push(new ZoneImageView(ZoneImage.build(origin, SOA, 2026112601, rrsets, { shared: true })));
  }
  const images = imageLookup(views);
  const names = new Set<string>();
  for (const { origin, rrsets } of ZONES) {
    names.add(origin);
    for (const r of rrsets) {
      names.add(r.owner);
      names.add(`x.${r.owner}`);
      names.add(`y.x.${r.owner.replace('*.', 'q.')}`);
    }
  }
  for (const extra of [
    'nope.example.org.',
    'b.c.example.org.',
    'c.example.org.',
    'a.b.c.example.org.',
    'zz.deep.a.b.c.example.org.',
    'anything.wild.example.org.',
    'x.sub.wild.example.org.',
    'WWW.EXAMPLE.ORG.',
    'foo.cn.example.org.',
    'host.below.sub.example.org.',
    'example.com.',
    'org.',
    '.',
  ])
    names.add(extra);
  const types = [
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
    RRType.ANY,
    RRType.ALIAS,
  ];
  let compared = 0;
  for (const name of names) {
    for (const type of types) {
      const expected = shown(answerQuery(table, name, type));
      assert.equal(shown(answerQuery(images, name, type)), expected, `${name} ${type}`);
      compared++;
    }
  }
  assert.ok(compared > 1000, `${compared} questions`);
});
