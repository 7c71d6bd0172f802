import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { buildQuery } from '../../../test/support/dns-client.ts';
import { registerTestSelectionPolicies } from '../../../test/support/selection-policies.ts';
import { decodeMessage, type Message, Rcode } from '../../dns/message.ts';
import { type Name, parseName } from '../../dns/name.ts';
import { parseRdata, printRdata } from '../../dns/rdata.ts';
import { type RecordTypeName, RRType, typeName } from '../../dns/rrtype.ts';
import { Registry } from '../../metrics/registry.ts';
import type { RRset } from '../../zones/rrset.ts';
import { ECS_OPTION } from '../query.ts';
import { QueryHandler } from '../query-handler.ts';
import { ServerMetrics } from '../server-metrics.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { ZoneTable } from '../zone-table.ts';
import type { SelectionBinding } from './selection-table.ts';
import { HEALTH_DOWN, processHealth } from './steering/health-view.ts';

registerTestSelectionPolicies();

const origin = parseName('example.com.');
type Rec = [owner: string, type: RecordTypeName, ...rdata: string[]];

function zone(records: Rec[]): ZoneSnapshot {
  const byKey = new Map<string, RRset>();
  for (const [owner, type, ...texts] of [['@', 'NS', 'ns1'] as Rec, ...records]) {
    const name = parseName(owner, origin);
    const key = `${name} ${type}`;
    const rrset = byKey.get(key) ?? { owner: name, type, ttl: 300, rdata: [], origin: { kind: 'apex' } };
    for (const t of texts) rrset.rdata.push(parseRdata(type, t, origin));
    byKey.set(key, rrset);
  }
  const soa = {
    ttl: 300,
    mname: parseName('ns1.example.com.'),
    rname: parseName('hostmaster.example.com.'),
    refresh: 3600,
    retry: 600,
    expire: 1209600,
    minimum: 60,
  };
  return ZoneSnapshot.build(origin, soa, 1, byKey.values());
}

const RECORDS: Rec[] = [
  ['ns1', 'A', '192.0.2.53'],
  ['www', 'A', '192.0.2.1', '192.0.2.2', '192.0.2.3'],
  ['www', 'AAAA', '2001:db8::1', '2001:db8::2'],
  ['other', 'A', '192.0.2.7', '192.0.2.8'],
  ['alias', 'CNAME', 'www'],
  ['*.wild', 'A', '198.51.100.1', '198.51.100.2'],
  ['@', 'MX', '10 www'],
];

/** Subsets by client network: 10.1/16 and ECS 203.0.113/24 get .1, 10.2/16 gets .2 and .3. */
const BY_SUBNET: SelectionBinding = {
  owner: parseName('www.example.com.'),
  type: 'A',
  policy: 'by-subnet',
  data: {
    rules: [
      { network: '10.1.0.0/16', keep: ['192.0.2.1'] },
      { network: '10.2.0.0/16', keep: ['192.0.2.2', '192.0.2.3'] },
      { network: '203.0.113.0/24', keep: ['192.0.2.1'] },
    ],
  },
};

let table: ZoneTable;
let registry: Registry;
let handler: QueryHandler;

beforeEach(() => {
  table = new ZoneTable();
  table.set(zone(RECORDS));
  registry = new Registry();
  handler = new QueryHandler({ table, metrics: new ServerMetrics(registry, table) });
});

interface Ask {
  client?: string;
  tcp?: boolean;
  /** Client Subnet option: family, source prefix, address octets. */
  ecs?: [family: number, source: number, address: number[]];
  edns?: boolean;
}

function ask(name: string, type: number, o: Ask = {}): Message {
  const options = o.ecs
    ? [{ code: ECS_OPTION, data: Uint8Array.from([0, o.ecs[0], o.ecs[1], 0, ...o.ecs[2]]) }]
    : [];
  const q = buildQuery({
    id: 7,
    name,
    type,
    ...(o.edns || o.ecs ? { edns: { udpSize: 1232, options } } : {}),
  });
  const out = handler.handle(q, o.tcp ? 'tcp' : 'udp', performance.now(), o.client);
  assert.ok(out instanceof Uint8Array);
  return decodeMessage(out);
}

const answers = (m: Message, type = 'A') =>
  m.answers.filter((r) => typeName(r.type) === type).map((r) => printRdata(r.data as never));

function cacheHits(): number {
  const line = /zonekeeper_dns_response_cache_total\{result="hit"\} (\d+)/.exec(registry.render());
  return Number(line?.[1] ?? 0);
}

function ecsOf(m: Message): number[] | undefined {
  const o = m.edns?.options.find((x) => x.code === ECS_OPTION);
  return o ? [...o.data] : undefined;
}

describe('answer stage: RRset selection', () => {
  test('without bindings answers are whole, cached, and ECS is not echoed (no ECS support claimed)', () => {
    assert.deepEqual(answers(ask('www.example.com', RRType.A, { client: '10.1.0.5' })), [
      '192.0.2.1',
      '192.0.2.2',
      '192.0.2.3',
    ]);
    ask('www.example.com', RRType.A, { client: '10.2.0.5' });
    assert.equal(cacheHits(), 1, 'the second identical question is a cache hit');
    const m = ask('www.example.com', RRType.A, { ecs: [1, 24, [203, 0, 113]] });
    assert.equal(answers(m).length, 3);
    assert.equal(ecsOf(m), undefined, 'RFC 7871 §7.2.1: a server not using ECS must not include it');
  });

  test('a bound RRset is answered with the subset its policy chose, per client', () => {
    table.setSelections(origin, [BY_SUBNET]);
    assert.deepEqual(answers(ask('www.example.com', RRType.A, { client: '10.1.0.5' })), ['192.0.2.1']);
    assert.deepEqual(answers(ask('www.example.com', RRType.A, { client: '10.2.9.9' })), [
      '192.0.2.2',
      '192.0.2.3',
    ]);
    // No rule for this client: the policy answers 'all'.
    assert.equal(answers(ask('www.example.com', RRType.A, { client: '172.16.0.1' })).length, 3);
    // Over TCP too, and for an IPv4-mapped peer address.
    assert.deepEqual(answers(ask('www.example.com', RRType.A, { client: '::ffff:10.1.2.3', tcp: true })), [
      '192.0.2.1',
    ]);
    // Other types and names at or near the owner are untouched.
    assert.equal(answers(ask('www.example.com', RRType.AAAA, { client: '10.1.0.5' }), 'AAAA').length, 2);
    assert.equal(answers(ask('other.example.com', RRType.A, { client: '10.1.0.5' })).length, 2);
  });

  test('a selected answer never reaches another client through the response cache', () => {
    // Regression: without the `selected` mark the first client's subset was cached and served to all.
    table.setSelections(origin, [BY_SUBNET]);
    const hits = cacheHits();
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(answers(ask('www.example.com', RRType.A, { client: '10.1.0.5' })), ['192.0.2.1']);
      assert.deepEqual(answers(ask('www.example.com', RRType.A, { client: '10.2.0.5' })), [
        '192.0.2.2',
        '192.0.2.3',
      ]);
      assert.equal(answers(ask('www.example.com', RRType.A, { client: '172.16.0.1' })).length, 3);
    }
    assert.equal(cacheHits(), hits, 'no selected answer came from the cache');
    // Unbound names keep being cached.
    ask('other.example.com', RRType.A, { client: '10.1.0.5' });
    ask('other.example.com', RRType.A, { client: '10.2.0.5' });
    assert.equal(cacheHits(), hits + 1);
  });

  test('binding an RRset makes whole answers cached before it stale', () => {
    assert.equal(answers(ask('www.example.com', RRType.A, { client: '10.1.0.5' })).length, 3);
    table.setSelections(origin, [BY_SUBNET]);
    assert.deepEqual(answers(ask('www.example.com', RRType.A, { client: '10.1.0.5' })), ['192.0.2.1']);
    table.setSelections(origin, []);
    assert.equal(table.selections.size, 0);
    assert.equal(answers(ask('www.example.com', RRType.A, { client: '10.1.0.5' })).length, 3);
  });

  test('a subset never poisons the wire form cached on the whole RRset, in either order', () => {
    // The whole RRset first (its wire form is cached on the zone's RRset), then a subset, then whole.
    assert.equal(answers(ask('www.example.com', RRType.A, { client: '172.16.0.1' })).length, 3);
    table.setSelections(origin, [BY_SUBNET]);
    assert.deepEqual(answers(ask('www.example.com', RRType.A, { client: '10.1.0.5' })), ['192.0.2.1']);
    assert.equal(answers(ask('www.example.com', RRType.A, { client: '172.16.0.1' })).length, 3);
    // A subset first on a fresh zone, then the whole RRset.
    table.set(zone(RECORDS));
    assert.deepEqual(answers(ask('www.example.com', RRType.A, { client: '10.2.0.5' })), [
      '192.0.2.2',
      '192.0.2.3',
    ]);
    table.setSelections(origin, []);
    assert.deepEqual(answers(ask('www.example.com', RRType.A, { client: '10.2.0.5' })), [
      '192.0.2.1',
      '192.0.2.2',
      '192.0.2.3',
    ]);
    const served = table.get(origin)!.nodes.get('www.example.com.')!.rrsets.get(RRType.A)!;
    assert.equal(served.rdata.length, 3);
    assert.equal(served.wire?.length, 3);
  });

  test('bindings survive zone patches and apply to what the RRset holds now', () => {
    table.setSelections(origin, [
      { owner: parseName('www.example.com.'), type: 'A', policy: 'first-n', data: { count: 2 } },
    ]);
    assert.deepEqual(answers(ask('www.example.com', RRType.A)), ['192.0.2.1', '192.0.2.2']);
    const z = table.get(origin)!;
    const www = parseName('www.example.com.');
    const rdata = ['192.0.2.9', '192.0.2.8', '192.0.2.7'].map((t) => parseRdata('A', t, origin));
    z.patch({ upserts: [{ owner: www, type: 'A', ttl: 60, rdata }], deletes: [] }, 2, z.soaFields);
    table.changed(z);
    assert.deepEqual(answers(ask('www.example.com', RRType.A)), ['192.0.2.9', '192.0.2.8']);
  });

  test('wildcard answers are selected through the wildcard owner; CNAME targets too', () => {
    table.setSelections(origin, [
      { owner: parseName('*.wild.example.com.'), type: 'A', policy: 'first-n', data: { count: 1 } },
      { owner: parseName('www.example.com.'), type: 'A', policy: 'first-n', data: { count: 1 } },
    ]);
    const m = ask('host.wild.example.com', RRType.A);
    assert.deepEqual(answers(m), ['198.51.100.1']);
    assert.equal(m.answers[0]!.name, 'host.wild.example.com.');
    const viaCname = ask('alias.example.com', RRType.A);
    assert.deepEqual(answers(viaCname, 'CNAME'), ['www.example.com.']);
    assert.deepEqual(answers(viaCname), ['192.0.2.1']);
    // The wildcard's own RRset keeps every record for names not selected through it.
    table.setSelections(origin, []);
    assert.equal(answers(ask('other.wild.example.com', RRType.A)).length, 2);
  });

  test('the additional section is not tailored (RFC 7871 §7.4)', () => {
    table.setSelections(origin, [
      { owner: parseName('www.example.com.'), type: 'A', policy: 'first-n', data: { count: 1 } },
    ]);
    const m = ask('example.com', RRType.MX);
    assert.equal(m.additional.filter((r) => r.type === RRType.A).length, 3);
  });

  test('ECS: the option comes back with the query family, source and address and the scope chosen', () => {
    table.setSelections(origin, [BY_SUBNET]);
    const tailored = ask('www.example.com', RRType.A, { ecs: [1, 24, [203, 0, 113]], client: '10.2.0.1' });
    assert.deepEqual(answers(tailored), ['192.0.2.1'], 'the subnet decides, not the resolver address');
    assert.deepEqual(ecsOf(tailored), [0, 1, 24, 24, 203, 0, 113]);
    // A subnet no rule holds: the whole RRset, scope 0.
    const whole = ask('www.example.com', RRType.A, { ecs: [1, 20, [198, 51, 96]] });
    assert.equal(answers(whole).length, 3);
    assert.deepEqual(ecsOf(whole), [0, 1, 20, 0, 198, 51, 96]);
    // RFC 7871 §12.1: once ECS is used, every ECS query gets it back, scope 0 when the answer holds for all.
    assert.deepEqual(
      ecsOf(ask('other.example.com', RRType.A, { ecs: [1, 24, [203, 0, 113]] })),
      [0, 1, 24, 0, 203, 0, 113],
    );
    assert.deepEqual(ecsOf(ask('nothing.example.com', RRType.A, { ecs: [2, 0, []] })), [0, 2, 0, 0]);
    // A query without ECS gets none.
    assert.equal(ecsOf(ask('www.example.com', RRType.A, { edns: true })), undefined);
  });

  test('ECS: a subnet-tailored RRset behind a CNAME is left out, only the CNAME is answered (RFC 7871 §7.2.1)', () => {
    table.setSelections(origin, [BY_SUBNET]);
    const m = ask('alias.example.com', RRType.A, { ecs: [1, 24, [203, 0, 113]] });
    assert.deepEqual(
      m.answers.map((r) => typeName(r.type)),
      ['CNAME'],
    );
    assert.deepEqual(ecsOf(m), [0, 1, 24, 0, 203, 0, 113]);
    // Without ECS the chain is answered whole, with the subset for the client's address.
    const plain = ask('alias.example.com', RRType.A, { client: '10.1.0.1' });
    assert.deepEqual(answers(plain), ['192.0.2.1']);
  });

  test('a policy that throws or chooses nothing is answered with the whole RRset', () => {
    table.setSelections(origin, [
      { owner: parseName('www.example.com.'), type: 'A', policy: 'throwing' },
      {
        owner: parseName('other.example.com.'),
        type: 'A',
        policy: 'by-subnet',
        data: { rules: [{ network: '0.0.0.0/0', keep: [] }] },
      },
    ]);
    assert.equal(answers(ask('www.example.com', RRType.A, { client: '10.1.0.1' })).length, 3);
    assert.equal(table.selections.errors, 1);
    assert.equal(answers(ask('other.example.com', RRType.A, { client: '10.1.0.1' })).length, 2);
    // The failure is a metric too, by policy (the policy that chose nothing is no error).
    assert.match(registry.render(), /^zonekeeper_dns_selection_errors_total\{policy="throwing"\} 1$/m);
    assert.doesNotMatch(registry.render(), /selection_errors_total\{policy="by-subnet"\}/);
  });

  test('negative answers, referrals and errors pass through unchanged', () => {
    table.setSelections(origin, [BY_SUBNET]);
    assert.equal(ask('missing.example.com', RRType.A, { client: '10.1.0.1' }).rcode, Rcode.NXDOMAIN);
    assert.equal(ask('example.org', RRType.A, { client: '10.1.0.1' }).rcode, Rcode.REFUSED);
  });
});

describe('SelectionTable bindings', () => {
  const www = parseName('www.example.com.');
  const bind = (o: Partial<SelectionBinding> = {}): SelectionBinding => ({
    owner: www,
    type: 'A',
    policy: 'first-n',
    data: { count: 1 },
    ...o,
  });

  test('refuses bad bindings with stable codes and keeps the previous ones', () => {
    table.setSelections(origin, [bind()]);
    const refused = (bindings: SelectionBinding[], zoneOrigin: Name = origin) => {
      try {
        table.setSelections(zoneOrigin, bindings);
      } catch (e) {
        return (e as { code: string }).code;
      }
      return 'accepted';
    };
    assert.equal(refused([bind({ owner: parseName('www.example.org.') })]), 'SELECTION_OUTSIDE_ZONE');
    assert.equal(refused([bind({ policy: 'nope' })]), 'SELECTION_POLICY_UNKNOWN');
    assert.equal(refused([bind({ type: 'BOGUS' as RecordTypeName })]), 'SELECTION_TYPE');
    assert.equal(refused([bind(), bind({ owner: parseName('WWW.example.com.') })]), 'SELECTION_DUPLICATE');
    assert.equal(refused([bind({ data: { count: 0 } })]), 'FIRST_N_COUNT');
    assert.equal(refused([bind()], parseName('com.')), 'SELECTION_CONFLICT');
    assert.equal(table.selections.size, 1);
    assert.deepEqual(table.selections.bindings(origin), [bind()]);
    assert.deepEqual(answers(ask('www.example.com', RRType.A)), ['192.0.2.1']);
  });

  test('deleting a zone takes its bindings with it; other zones keep theirs', () => {
    table.set(
      ZoneSnapshot.build(parseName('example.net.'), table.get(origin)!.soaFields, 1, [
        {
          owner: parseName('a.example.net.'),
          type: 'A',
          ttl: 60,
          rdata: [parseRdata('A', '192.0.2.1', origin)],
        },
      ]),
    );
    table.setSelections(origin, [bind()]);
    table.setSelections(parseName('example.net.'), [bind({ owner: parseName('a.example.net.') })]);
    assert.equal(table.delete(origin), true);
    assert.deepEqual(table.selections.bindings(origin), []);
    assert.equal(table.selections.size, 1);
    // Served again without bindings: everyone gets the whole RRset.
    table.set(zone(RECORDS));
    assert.equal(answers(ask('www.example.com', RRType.A)).length, 3);
  });

  test('zones are replaced independently', () => {
    table.set(
      ZoneSnapshot.build(parseName('example.net.'), table.get(origin)!.soaFields, 1, [
        {
          owner: parseName('a.example.net.'),
          type: 'A',
          ttl: 60,
          rdata: [parseRdata('A', '192.0.2.1', origin)],
        },
      ]),
    );
    table.setSelections(origin, [bind()]);
    table.setSelections(parseName('example.net.'), [bind({ owner: parseName('a.example.net.') })]);
    assert.equal(table.selections.size, 2);
    table.setSelections(origin, []);
    assert.equal(table.selections.size, 1);
    assert.deepEqual(
      [...table.selections.all()].map((z) => z.origin),
      ['example.net.'],
    );
  });
});

describe("answer stage: a policy that leaves the RRset out ('none')", () => {
  const SLOTS = [60_000, 60_001, 60_002];
  const ALL_DOWN: SelectionBinding = {
    owner: parseName('www.example.com.'),
    type: 'A',
    policy: 'ordered',
    data: { candidates: ['192.0.2.1', '192.0.2.2', '192.0.2.3'], slots: SLOTS, whenAllDown: 'None' },
  };
  beforeEach(() => {
    for (const s of SLOTS) processHealth.set(s, HEALTH_DOWN);
  });

  test('an emptied answer is a NODATA with the SOA (RFC 2308 §2.2), never cached', () => {
    table.setSelections(origin, [ALL_DOWN]);
    for (let i = 0; i < 2; i++) {
      const m = ask('www.example.com', RRType.A);
      assert.equal(m.rcode, Rcode.NOERROR);
      assert.deepEqual(m.answers, []);
      assert.deepEqual(
        m.authority.map((r) => typeName(r.type)),
        ['SOA'],
      );
    }
    assert.equal(cacheHits(), 0);
  });

  test('after a CNAME the chain is answered with the SOA of the zone whose RRset was left out', () => {
    table.setSelections(origin, [ALL_DOWN]);
    const m = ask('alias.example.com', RRType.A);
    assert.deepEqual(
      m.answers.map((r) => typeName(r.type)),
      ['CNAME'],
    );
    assert.deepEqual(
      m.authority.map((r) => typeName(r.type)),
      ['SOA'],
    );
  });
});
