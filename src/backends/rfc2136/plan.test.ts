import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ResourceRecord } from '../../dns/message.ts';
import { parseRdata, printRdata, type Rdata } from '../../dns/rdata.ts';
import { type RecordTypeName, RRClass, RRType } from '../../dns/rrtype.ts';
import { ignoreMatcher } from '../../zones/ignore.ts';
import type { RRset } from '../../zones/rrset.ts';
import {
  type HeldState,
  heldFromAxfr,
  OWNERSHIP_MARKER,
  ownershipEntry,
  ownershipName,
  parseOwnershipEntry,
  planDeletion,
  planZone,
  type UpdateUnit,
} from './plan.ts';
import { packMessages } from './update-client.ts';

const origin = 'example.com.';
const OWN = ownershipName(origin);

function want(owner: string, type: RecordTypeName, records: string[], ttl = 300): RRset {
  return {
    owner,
    type,
    ttl,
    rdata: records.map((r) => parseRdata(type, r, origin)),
    origin: { kind: 'recordSet', namespace: 'dns', name: `${owner.split('.')[0]}-${type.toLowerCase()}` },
  };
}

const rec = (name: string, type: RecordTypeName, text: string, ttl = 300): ResourceRecord => ({
  name,
  type: RRType[type],
  class: RRClass.IN,
  ttl,
  data: parseRdata(type, text, origin),
});

const SOA = rec(origin, 'SOA', 'ns1.example.com. h.example.com. 7 3600 600 604800 300');

function state(records: ResourceRecord[], owned: [string, RecordTypeName][] = [], marker = true): HeldState {
  const ownership = owned.map(
    ([o, t]): ResourceRecord => ({
      name: OWN,
      type: RRType.TXT,
      class: 1,
      ttl: 300,
      data: ownershipEntry(origin, o, t),
    }),
  );
  const mark: ResourceRecord[] = marker
    ? [{ name: OWN, type: RRType.TXT, class: 1, ttl: 300, data: OWNERSHIP_MARKER }]
    : [];
  return heldFromAxfr(origin, [SOA, ...records, ...mark, ...ownership]);
}

/** A unit in presentation form: `CLASS owner TYPE rdata` per RR, prerequisites then updates. */
function show(unit: UpdateUnit): { pre: string[]; upd: string[] } {
  const line = (r: ResourceRecord) => {
    const klass = r.class === RRClass.IN ? 'IN' : r.class === RRClass.ANY ? 'ANY' : 'NONE';
    const data = typeof r.data.type === 'string' ? ` ${printRdata(r.data as Rdata)}` : '';
    return `${klass} ${r.name} ${r.type === RRType.TXT ? 'TXT' : Object.entries(RRType).find(([, v]) => v === r.type)![0]}${data}`;
  };
  return { pre: unit.prerequisites.map(line), upd: unit.updates.map(line) };
}

describe('rfc2136 ownership record', () => {
  test('entries round-trip, relative to the zone, split into character-strings of at most 255 octets', () => {
    assert.equal(parseOwnershipEntry(origin, ownershipEntry(origin, origin, 'MX')), 'example.com. MX');
    assert.equal(
      parseOwnershipEntry(origin, ownershipEntry(origin, 'www.example.com.', 'A')),
      'www.example.com. A',
    );
    const long = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.example.com.`;
    const entry = ownershipEntry(origin, long, 'TXT') as Extract<Rdata, { type: 'TXT' }>;
    assert.ok(entry.strings.every((s) => s.length <= 255));
    assert.equal(parseOwnershipEntry(origin, entry), `${long} TXT`);
  });

  test('text that names no RRset of the zone claims nothing: the SOA, other zones, the record itself, unknown types', () => {
    for (const text of [
      '@ SOA',
      'www.other.org. A',
      '_zonekeeper-owned TXT',
      'x BOGUS',
      'no',
      'a b c',
      'zonekeeper ownership v1',
    ])
      assert.equal(parseOwnershipEntry(origin, { type: 'TXT', strings: [text] }), undefined, text);
  });

  test('an AXFR is read into RRsets, entries and the serial; the SOA and the record are not RRsets', () => {
    const held = state(
      [rec('www.example.com.', 'A', '192.0.2.1'), rec('www.example.com.', 'A', '192.0.2.2')],
      [['www.example.com.', 'A']],
    );
    assert.equal(held.serial, 7);
    assert.ok(held.hasOwnership);
    assert.deepEqual([...held.owned.keys()], ['www.example.com. A']);
    assert.deepEqual([...held.rrsets.keys()], ['www.example.com. 1']);
    assert.equal(held.rrsets.get('www.example.com. 1')!.rdata.length, 2);
  });
});

describe('rfc2136 plan', () => {
  test('an RRset added is guarded by "RRset does not exist" and claimed in the same unit; a new zone is marked', () => {
    const plan = planZone(origin, [want('www.example.com.', 'A', ['192.0.2.1'])], state([], [], false));
    assert.deepEqual(plan.problems, []);
    assert.equal(plan.units.length, 2);
    assert.deepEqual(show(plan.units[0]!).upd, [`IN ${OWN} TXT "zonekeeper ownership v1"`]);
    assert.deepEqual(show(plan.units[1]!), {
      pre: ['NONE www.example.com. A'],
      upd: ['IN www.example.com. A 192.0.2.1', `IN ${OWN} TXT "www A"`],
    });
  });

  test('an owned RRset replaced: value-dependent prerequisite with every RR held, deleted, then added', () => {
    const held = state(
      [rec('www.example.com.', 'A', '192.0.2.1'), rec('www.example.com.', 'A', '192.0.2.2')],
      [['www.example.com.', 'A']],
    );
    const plan = planZone(origin, [want('www.example.com.', 'A', ['192.0.2.3'])], held);
    assert.deepEqual(show(plan.units[0]!), {
      pre: ['IN www.example.com. A 192.0.2.1', 'IN www.example.com. A 192.0.2.2'],
      upd: ['ANY www.example.com. A', 'IN www.example.com. A 192.0.2.3'],
    });
    assert.ok(
      plan.units[0]!.prerequisites.every((r) => r.ttl === 0),
      'prerequisite TTLs are 0 (§2.4.2)',
    );
  });

  test('a TTL change alone is a replacement; equal content is no change', () => {
    const held = state([rec('www.example.com.', 'A', '192.0.2.1', 60)], [['www.example.com.', 'A']]);
    assert.equal(planZone(origin, [want('www.example.com.', 'A', ['192.0.2.1'], 300)], held).units.length, 1);
    assert.equal(planZone(origin, [want('www.example.com.', 'A', ['192.0.2.1'], 60)], held).units.length, 0);
  });

  test('an RRset the server holds unlisted is a Conflict even with equal content, and nothing is planned for it', () => {
    const held = state([rec('www.example.com.', 'A', '192.0.2.1')]);
    const plan = planZone(origin, [want('www.example.com.', 'A', ['192.0.2.1'])], held);
    assert.equal(plan.units.length, 0);
    assert.deepEqual(
      plan.problems.map((p) => [p.owner, p.type, p.reason]),
      [['www.example.com.', 'A', 'Conflict']],
    );
  });

  test('a CNAME beside unlisted data, and data beside an unlisted CNAME, are Conflicts', () => {
    const held = state([
      rec('a.example.com.', 'TXT', '"hand"'),
      rec('b.example.com.', 'CNAME', 'x.example.org.'),
    ]);
    const plan = planZone(
      origin,
      [want('a.example.com.', 'CNAME', ['y.example.org.']), want('b.example.com.', 'A', ['192.0.2.1'])],
      held,
    );
    assert.deepEqual(
      plan.problems.map((p) => `${p.owner} ${p.type} ${p.reason}`),
      ['a.example.com. CNAME Conflict', 'b.example.com. A Conflict'],
    );
  });

  test('an owned RRset the zone no longer has is deleted under its prerequisite, with its entry; a stale entry is released', () => {
    const held = state(
      [rec('old.example.com.', 'A', '192.0.2.9')],
      [
        ['old.example.com.', 'A'],
        ['gone.example.com.', 'AAAA'],
      ],
    );
    const plan = planZone(origin, [], held);
    assert.deepEqual(plan.units.map(show), [
      {
        pre: ['IN old.example.com. A 192.0.2.9'],
        upd: ['ANY old.example.com. A', `NONE ${OWN} TXT "old A"`],
      },
      { pre: [], upd: [`NONE ${OWN} TXT "gone AAAA"`] },
    ]);
  });

  test('a CNAME replacing an owned address at the same name: one unit, the deletion first', () => {
    const held = state([rec('w.example.com.', 'A', '192.0.2.1')], [['w.example.com.', 'A']]);
    const plan = planZone(origin, [want('w.example.com.', 'CNAME', ['x.example.org.'])], held);
    assert.equal(plan.units.length, 1);
    assert.deepEqual(show(plan.units[0]!).upd, [
      'ANY w.example.com. A',
      'IN w.example.com. CNAME x.example.org.',
      `IN ${OWN} TXT "w CNAME"`,
      `NONE ${OWN} TXT "w A"`,
    ]);
  });

  test('apex NS: made equal RR by RR, adds before deletes (§3.4.2.4), never an ownership entry; never deleted with the zone', () => {
    const held = state([rec(origin, 'NS', 'old.example.net.'), rec(origin, 'NS', 'ns1.example.net.')]);
    const plan = planZone(origin, [want(origin, 'NS', ['ns1.example.net.', 'ns2.example.net.'])], held);
    assert.deepEqual(plan.problems, []);
    assert.deepEqual(show(plan.units[0]!).upd, [
      `IN ${origin} NS ns2.example.net.`,
      `NONE ${origin} NS old.example.net.`,
    ]);
    assert.deepEqual(
      planDeletion(origin, held).map((u) => u.describe),
      [[`delete ${OWN} TXT`]],
    );
  });

  test('ALIAS and names under the ownership record are refused with a reason, not sent', () => {
    const plan = planZone(
      origin,
      [want(origin, 'ALIAS', ['lb.example.net.']), want(`x.${OWN}`, 'A', ['192.0.2.1'])],
      state([]),
    );
    assert.deepEqual(plan.units, []);
    assert.deepEqual(
      plan.problems.map((p) => p.reason),
      ['BackendRejected', 'BackendRejected'],
    );
  });
});

describe('rfc2136 plan: the changes it names (plan --live)', () => {
  test('adds, replaces and deletes are named per RRset; conflicts and unchanged RRsets are not', () => {
    const held = state(
      [
        rec('www.example.com.', 'A', '192.0.2.99'),
        rec('old.example.com.', 'TXT', '"retired"'),
        rec('same.example.com.', 'A', '192.0.2.5'),
        rec('hand.example.com.', 'A', '198.51.100.7'),
      ],
      [
        ['www.example.com.', 'A'],
        ['old.example.com.', 'TXT'],
        ['same.example.com.', 'A'],
      ],
    );
    const plan = planZone(
      origin,
      [
        want('www.example.com.', 'A', ['192.0.2.1']),
        want('new.example.com.', 'A', ['192.0.2.2']),
        want('same.example.com.', 'A', ['192.0.2.5']),
        want('hand.example.com.', 'A', ['198.51.100.8']),
      ],
      held,
    );
    assert.deepEqual(plan.changes.map((c) => `${c.op} ${c.owner} ${c.type}`).sort(), [
      'add new.example.com. A',
      'delete old.example.com. TXT',
      'replace www.example.com. A',
    ]);
    assert.deepEqual(
      plan.problems.map((p) => `${p.reason} ${p.owner} ${p.type}`),
      ['Conflict hand.example.com. A'],
    );
  });
});

describe('rfc2136 plan: ignore rules (DNSZone.spec.ignore)', () => {
  const rules = (...r: { name: string; type?: RecordTypeName }[]) => ignoreMatcher(origin, r)!;

  test('a desired RRset a rule matches is a Conflict naming spec.ignore and is never written, owned or not', () => {
    const held = state(
      [rec('legacy.example.com.', 'A', '192.0.2.1'), rec('hand.example.com.', 'TXT', '"by hand"')],
      [['legacy.example.com.', 'A']],
    );
    const desired = [
      want('legacy.example.com.', 'A', ['192.0.2.2']),
      want('hand.example.com.', 'TXT', ['"from zonekeeper"']),
      want('new.example.com.', 'A', ['192.0.2.3']),
    ];
    const plan = planZone(
      origin,
      desired,
      held,
      rules({ name: 'legacy' }, { name: '*', type: 'TXT' }, { name: 'new' }),
    );
    assert.deepEqual(
      plan.problems.map((p) => `${p.owner} ${p.type} ${p.reason}`),
      ['legacy.example.com. A Conflict', 'hand.example.com. TXT Conflict', 'new.example.com. A Conflict'],
    );
    assert.ok(plan.problems.every((p) => p.message.includes('spec.ignore')));
    // The one change: legacy's entry, released; legacy itself neither replaced nor deleted.
    assert.deepEqual(plan.units.map(show), [{ pre: [], upd: [`NONE ${OWN} TXT "legacy A"`] }]);
  });

  test('an owned RRset a rule matches that the zone no longer has: its entry deleted, the RRset kept', () => {
    const held = state(
      [rec('old.example.com.', 'A', '192.0.2.9'), rec('other.example.com.', 'A', '192.0.2.8')],
      [
        ['old.example.com.', 'A'],
        ['other.example.com.', 'A'],
      ],
    );
    const plan = planZone(origin, [], held, rules({ name: 'old', type: 'A' }));
    assert.deepEqual(plan.units.map(show), [
      { pre: [], upd: [`NONE ${OWN} TXT "old A"`] },
      {
        pre: ['IN other.example.com. A 192.0.2.8'],
        upd: ['ANY other.example.com. A', `NONE ${OWN} TXT "other A"`],
      },
    ]);
    assert.deepEqual(plan.problems, []);
    // Once released, the next plan leaves it alone altogether.
    const after = state([rec('old.example.com.', 'A', '192.0.2.9')]);
    assert.deepEqual(planZone(origin, [], after, rules({ name: 'old', type: 'A' })).units, []);
  });

  test('the release goes in the same unit, and so the same UPDATE, as the other changes at its name', () => {
    const held = state(
      [rec('www.example.com.', 'A', '192.0.2.1'), rec('www.example.com.', 'AAAA', '2001:db8::1')],
      [
        ['www.example.com.', 'A'],
        ['www.example.com.', 'AAAA'],
      ],
    );
    const plan = planZone(
      origin,
      [want('www.example.com.', 'AAAA', ['2001:db8::2'])],
      held,
      rules({ name: 'www', type: 'A' }),
    );
    assert.equal(plan.units.length, 1);
    assert.deepEqual(show(plan.units[0]!), {
      pre: ['IN www.example.com. AAAA 2001:db8::1'],
      upd: ['ANY www.example.com. AAAA', 'IN www.example.com. AAAA 2001:db8::2', `NONE ${OWN} TXT "www A"`],
    });
    assert.equal(packMessages(origin, plan.units, 65535).messages.length, 1);
  });

  test('a hand-made RRset a rule matches is neither touched nor reported when the zone does not want it', () => {
    const held = state([rec('hand.example.com.', 'TXT', '"by hand"')]);
    const plan = planZone(origin, [], held, rules({ name: 'hand' }));
    assert.deepEqual(plan, { units: [], problems: [], changes: [] });
  });

  test('the ownership record is never ignored: "* TXT" still marks a new zone and records what it adds', () => {
    const plan = planZone(
      origin,
      [want('www.example.com.', 'A', ['192.0.2.1'])],
      state([], [], false),
      rules({ name: '*', type: 'TXT' }),
    );
    assert.deepEqual(plan.problems, []);
    assert.deepEqual(plan.units.map(show), [
      { pre: [], upd: [`IN ${OWN} TXT "zonekeeper ownership v1"`] },
      { pre: ['NONE www.example.com. A'], upd: ['IN www.example.com. A 192.0.2.1', `IN ${OWN} TXT "www A"`] },
    ]);
  });

  test('the apex NS a rule matches is a Conflict and left as the server holds it', () => {
    const held = state([rec(origin, 'NS', 'old.example.net.')]);
    const plan = planZone(
      origin,
      [want(origin, 'NS', ['ns1.example.net.'])],
      held,
      rules({ name: '@', type: 'NS' }),
    );
    assert.deepEqual(plan.units, []);
    assert.deepEqual(
      plan.problems.map((p) => `${p.owner} ${p.type} ${p.reason}`),
      [`${origin} NS Conflict`],
    );
  });

  test("an owned CNAME a rule matches is no longer Zonekeeper's: data wanted beside it is a Conflict", () => {
    const held = state([rec('w.example.com.', 'CNAME', 'x.example.org.')], [['w.example.com.', 'CNAME']]);
    const plan = planZone(
      origin,
      [want('w.example.com.', 'A', ['192.0.2.1'])],
      held,
      rules({ name: 'w', type: 'CNAME' }),
    );
    assert.deepEqual(
      plan.problems.map((p) => `${p.owner} ${p.type} ${p.reason}`),
      ['w.example.com. A Conflict'],
    );
    assert.deepEqual(plan.units.map(show), [{ pre: [], upd: [`NONE ${OWN} TXT "w CNAME"`] }]);
  });
});

describe('rfc2136 messages', () => {
  test('units are packed into messages under the limit, a unit never split; a unit too large for any message is set apart', () => {
    const many = Array.from({ length: 50 }, (_, i) => want(`h${i}.example.com.`, 'A', [`192.0.2.${i}`]));
    const plan = planZone(origin, many, state([]));
    const { messages, tooLarge } = packMessages(origin, plan.units, 1500);
    assert.ok(messages.length > 1);
    assert.equal(messages.flat().length, plan.units.length);
    assert.deepEqual(tooLarge, []);
    const big = planZone(
      origin,
      [
        want(
          'big.example.com.',
          'TXT',
          Array.from({ length: 20 }, (_, i) => `"${String(i).repeat(100)}"`),
        ),
      ],
      state([]),
    );
    const packed = packMessages(origin, big.units, 1500);
    assert.equal(packed.tooLarge.length, 1);
  });
});
