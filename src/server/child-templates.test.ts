import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeMessage, encodeMessage, type Message, queryMessage } from '../dns/message.ts';
import { RRType } from '../dns/rrtype.ts';
import { Registry } from '../metrics/registry.ts';
import type { RRsetData } from '../zones/rrset.ts';
import { DEFAULT_CHILD_TEMPLATE_BYTES } from './child-templates.ts';
import { ZoneImage } from './image/zone-image.ts';
import { QueryHandler } from './query-handler.ts';
import { ServerMetrics } from './server-metrics.ts';
import { ZoneApplier } from './zone-apply.ts';
import { ZoneSnapshot } from './zone-snapshot.ts';
import { type ServedZone, ZoneTable } from './zone-table.ts';

const SOA = {
  ttl: 300,
  mname: 'ns1.example.com.',
  rname: 'hostmaster.example.com.',
  refresh: 1,
  retry: 1,
  expire: 1,
  minimum: 60,
};

const a = (owner: string, address: string): RRsetData => ({
  owner,
  type: 'A',
  ttl: 300,
  rdata: [{ type: 'A', address }],
});

/** Wildcards of several kinds, empty non-terminals, a delegation, a child zone and names in the additional section. */
const RRSETS: RRsetData[] = [
  { owner: 'example.com.', type: 'NS', ttl: 300, rdata: [{ type: 'NS', host: 'ns1.example.com.' }] },
  a('ns1.example.com.', '192.0.2.53'),
  a('www.example.com.', '192.0.2.1'),
  a('mail.example.com.', '192.0.2.25'),
  a('*.w.example.com.', '192.0.2.7'),
  { owner: '*.w.example.com.', type: 'TXT', ttl: 60, rdata: [{ type: 'TXT', strings: ['v=spf1 -all'] }] },
  {
    owner: '*.m.example.com.',
    type: 'MX',
    ttl: 300,
    rdata: [{ type: 'MX', preference: 10, exchange: 'mail.example.com.' }],
  },
  {
    owner: '*.s.example.com.',
    type: 'SRV',
    ttl: 300,
    rdata: [{ type: 'SRV', priority: 1, weight: 2, port: 5060, target: 'www.example.com.' }],
  },
  {
    owner: '*.c.example.com.',
    type: 'CNAME',
    ttl: 300,
    rdata: [{ type: 'CNAME', target: 'www.example.com.' }],
  },
  {
    owner: '*.loop.example.com.',
    type: 'CNAME',
    ttl: 300,
    rdata: [{ type: 'CNAME', target: 'x.loop.example.com.' }],
  },
  a('deep.ent.example.com.', '192.0.2.8'),
  a('x.w.example.com.', '192.0.2.99'),
  { owner: 'sub.example.com.', type: 'NS', ttl: 300, rdata: [{ type: 'NS', host: 'ns.sub.example.com.' }] },
  a('ns.sub.example.com.', '192.0.2.54'),
];

function tableOf(images: boolean): ZoneTable<ServedZone> {
  const table = new ZoneTable<ServedZone>();
  if (images) {
    const image = ZoneImage.build('example.com.', SOA, 1, RRSETS);
    new ZoneApplier(table).replaceImage(image.buffer as ArrayBuffer, undefined);
  } else table.set(ZoneSnapshot.build('example.com.', SOA, 1, RRSETS));
  table.set(ZoneSnapshot.build('child.example.com.', { ...SOA, mname: 'ns1.child.example.com.' }, 1, []));
  return table;
}

function query(name: string, type: number, extra: Partial<Message> = {}): Uint8Array {
  return encodeMessage(queryMessage(name, type, { id: 4242, rd: true, ...extra }));
}

const EDNS = { edns: { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: false, options: [] } };

/** Names and types asked, in an order that teaches templates before they are used. */
function questions(): [string, number, Partial<Message>][] {
  const names = [
    'nope.example.com.',
    'other.example.com.',
    'A-MiXeD.example.com.',
    `${'l'.repeat(63)}.example.com.`,
    'q.w.example.com.',
    'r.w.example.com.',
    'x.w.example.com.',
    'R2.W.Example.COM.',
    'a.m.example.com.',
    'b.m.example.com.',
    'a.s.example.com.',
    'b.s.example.com.',
    'a.c.example.com.',
    'b.c.example.com.',
    'x.loop.example.com.',
    'y.loop.example.com.',
    'ent.example.com.',
    'zz.ent.example.com.',
    'deep.ent.example.com.',
    'child.example.com.',
    'nx.child.example.com.',
    'host.sub.example.com.',
    'ns.sub.example.com.',
    'www.example.com.',
    'y.x.w.example.com.',
    'z.x.w.example.com.',
    '*.w.example.com.',
    'a_b-c.w.example.com.',
    'a\\.b.w.example.com.',
  ];
  const out: [string, number, Partial<Message>][] = [];
  for (const extra of [{}, EDNS]) {
    for (const type of [RRType.A, RRType.AAAA, RRType.MX, RRType.TXT, RRType.SRV, RRType.ANY, RRType.NS]) {
      for (const name of names) out.push([name, type, extra]);
    }
  }
  return out;
}

describe('ChildTemplates', () => {
  for (const images of [false, true]) {
    test(`a response from a template says what the answer path says (${images ? 'zone image' : 'snapshot'})`, () => {
      const plain = new QueryHandler({ table: tableOf(images), responseCache: 0 });
      const templated = new QueryHandler({ table: tableOf(images) });
      // Twice over: the second round answers from templates learned in the first.
      for (let round = 0; round < 2; round++) {
        for (const [name, type, extra] of questions()) {
          const q = query(name, type, { ...extra, id: round * 7 + 1 });
          const want = decodeMessage(plain.handle(q, 'udp') as Uint8Array);
          const got = decodeMessage(templated.handle(q, 'udp') as Uint8Array);
          assert.deepEqual(got, want, `${name} ${type} ${JSON.stringify(extra)} round ${round}`);
        }
      }
      const stats = (templated as unknown as { templates: { hits: number; learned: number } }).templates;
      assert.ok(stats.learned > 0, 'templates were learned');
      assert.ok(stats.hits > 0, 'templates were used');
    });
  }

  test('random names under an existing name are answered from one template', () => {
    const handler = new QueryHandler({ table: tableOf(false) });
    const templates = (handler as unknown as { templates: { hits: number; learned: number; size: number } })
      .templates;
    for (let i = 0; i < 200; i++) {
      const r = decodeMessage(handler.handle(query(`r${i}x.example.com.`, RRType.A), 'udp') as Uint8Array);
      assert.equal(r.rcode, 3);
      assert.equal(r.questions[0]!.name, `r${i}x.example.com.`);
      const w = decodeMessage(handler.handle(query(`R${i}.w.example.com.`, RRType.A), 'udp') as Uint8Array);
      assert.deepEqual(
        w.answers.map((rr) => [rr.name, rr.data]),
        [[`R${i}.w.example.com.`, { type: 'A', address: '192.0.2.7' }]],
      );
    }
    assert.equal(templates.learned, 2);
    assert.equal(templates.hits, 398);
    assert.equal(templates.size, 2);
  });

  test('answers from a template are counted as such, not as misses', () => {
    const table = tableOf(false);
    const registry = new Registry();
    const handler = new QueryHandler({ table, metrics: new ServerMetrics(registry, table) });
    for (let i = 0; i < 5; i++) handler.handle(query(`n${i}.example.com.`, RRType.A), 'udp');
    handler.handle(query('n0.example.com.', RRType.A), 'udp');
    const count = (result: string) =>
      Number(
        new RegExp(`zonekeeper_dns_response_cache_total\\{result="${result}"\\} (\\d+)`).exec(
          registry.render(),
        )?.[1],
      );
    assert.deepEqual([count('miss'), count('template'), count('hit')], [1, 4, 1]);
  });

  test('names that do not exist below names that do not exist teach nothing (an attacker cannot fill it)', () => {
    const handler = new QueryHandler({ table: tableOf(false) });
    const templates = (handler as unknown as { templates: { learned: number } }).templates;
    for (let i = 0; i < 100; i++) handler.handle(query(`a${i}.b${i}.example.com.`, RRType.A), 'udp');
    assert.equal(templates.learned, 0);
  });

  test('a change to any zone makes every template stale', () => {
    const table = tableOf(false);
    const handler = new QueryHandler({ table });
    handler.handle(query('one.w.example.com.', RRType.A), 'udp');
    (table.get('example.com.') as ZoneSnapshot).patch(
      { upserts: [a('*.w.example.com.', '192.0.2.70')], deletes: [] },
      2,
      SOA,
    );
    table.version++;
    const r = decodeMessage(handler.handle(query('two.w.example.com.', RRType.A), 'udp') as Uint8Array);
    assert.deepEqual(r.answers[0]!.data, { type: 'A', address: '192.0.2.70' });
  });

  test('a change to any zone drops every template, also those whose names are never asked again', () => {
    const table = tableOf(false);
    const handler = new QueryHandler({ table });
    const templates = (handler as unknown as { templates: { size: number; learned: number } }).templates;
    handler.handle(query('one.w.example.com.', RRType.A), 'udp');
    handler.handle(query('one.m.example.com.', RRType.MX), 'udp');
    assert.equal(templates.size, 2);
    table.version++;
    // A name under another parent: the templates under w and m (and the zones they hold) go all the same.
    handler.handle(query('one.example.com.', RRType.A), 'udp');
    assert.equal(templates.size, 1);
    table.version++;
    handler.handle(query('two.example.com.', RRType.A), 'udp');
    assert.equal(templates.size, 1);
    assert.equal(templates.learned, 4);
  });

  test('large templates are bounded by bytes, not only by count', () => {
    // About 15 KiB of TXT at the wildcard under each of 400 parents, asked over TCP (room for it whole).
    const big: RRsetData = {
      owner: '*.p.example.com.',
      type: 'TXT',
      ttl: 60,
      rdata: [{ type: 'TXT', strings: Array.from({ length: 60 }, () => 't'.repeat(250)) }],
    };
    const rrsets = [...RRSETS];
    for (let i = 0; i < 400; i++) rrsets.push({ ...big, owner: `*.p${i}.example.com.` });
    const table = new ZoneTable<ServedZone>();
    table.set(ZoneSnapshot.build('example.com.', SOA, 1, rrsets));
    const handler = new QueryHandler({ table });
    const templates = (
      handler as unknown as {
        templates: { learned: number; hits: number; templates: Map<string, { bytes: Uint8Array }> };
      }
    ).templates;
    const held = () => [...templates.templates.values()].reduce((sum, t) => sum + t.bytes.length, 0);
    let most = 0;
    for (let i = 0; i < 400; i++) {
      for (const name of [`a.p${i}.example.com.`, `b.p${i}.example.com.`]) {
        const r = decodeMessage(handler.handle(query(name, RRType.TXT), 'tcp') as Uint8Array);
        assert.equal(r.answers[0]!.name, name);
        assert.equal(r.answers[0]!.data.type, 'TXT');
      }
      most = Math.max(most, held());
    }
    assert.equal(templates.learned, 400);
    assert.equal(templates.hits, 400);
    assert.ok(most <= DEFAULT_CHILD_TEMPLATE_BYTES, `${most} bytes of templates held`);
  });

  test('a template larger than the byte budget is not kept', () => {
    const handler = new QueryHandler({ table: tableOf(false), childTemplateBytes: 32 });
    const templates = (handler as unknown as { templates: { learned: number; size: number } }).templates;
    for (let i = 0; i < 5; i++) handler.handle(query(`n${i}.w.example.com.`, RRType.A), 'udp');
    assert.equal(templates.learned, 0);
    assert.equal(templates.size, 0);
  });

  test('a name added below the parent is answered from its own data, not the template', () => {
    const table = tableOf(false);
    const handler = new QueryHandler({ table });
    handler.handle(query('one.example.com.', RRType.A), 'udp');
    const zone = table.get('example.com.') as ZoneSnapshot;
    zone.patch({ upserts: [a('two.example.com.', '192.0.2.2')], deletes: [] }, 2, SOA);
    // Even at the same version (the check is made per name, not only by the version).
    const r = decodeMessage(handler.handle(query('two.example.com.', RRType.A), 'udp') as Uint8Array);
    assert.equal(r.rcode, 0);
    assert.deepEqual(r.answers[0]!.data, { type: 'A', address: '192.0.2.2' });
  });

  test('DO queries and RRset selection are never answered from a template', () => {
    const handler = new QueryHandler({ table: tableOf(false) });
    const templates = (handler as unknown as { templates: { learned: number } }).templates;
    const doEdns = { edns: { ...EDNS.edns, dnssecOk: true } };
    for (let i = 0; i < 5; i++) handler.handle(query(`d${i}.example.com.`, RRType.A, doEdns), 'udp');
    assert.equal(templates.learned, 0);
  });
});
