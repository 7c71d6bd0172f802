import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message, ResourceRecord } from '../../dns/message.ts';
import { nameKey } from '../../dns/name.ts';
import { parseRdata, type Rdata } from '../../dns/rdata.ts';
import { type RecordTypeName, RRClass, RRType } from '../../dns/rrtype.ts';
import { evaluateUpdate, MAX_UPDATE_RRS, UpdateRcode, type UpdateZoneView } from './update-eval.ts';

const ORIGIN = 'example.com.';

function zone(rrsets: [string, RecordTypeName, number, string[]][]): UpdateZoneView {
  const map = new Map<string, Map<number, { ttl: number; rdata: Rdata[] }>>();
  for (const [name, type, ttl, records] of rrsets) {
    const key = nameKey(name);
    if (!map.has(key)) map.set(key, new Map());
    map.get(key)!.set(RRType[type as keyof typeof RRType], {
      ttl,
      rdata: records.map((r) => parseRdata(type, r, ORIGIN)),
    });
  }
  return {
    origin: ORIGIN,
    rrset: (k, t) => map.get(k)?.get(t),
    types: (k) => [...(map.get(k)?.keys() ?? [])],
    contains: (name) => nameKey(name).endsWith(ORIGIN) && !nameKey(name).endsWith('child.example.com.'),
  };
}

const served = () =>
  zone([
    [ORIGIN, 'SOA', 300, ['ns1 hostmaster 1 7200 3600 1209600 300']],
    [ORIGIN, 'NS', 300, ['ns1.example.com.']],
    ['www.example.com.', 'A', 300, ['192.0.2.1', '192.0.2.2']],
    ['alias.example.com.', 'CNAME', 300, ['www.example.com.']],
  ]);

const empty = (type: number): Rdata => ({ type, data: new Uint8Array(0) }) as unknown as Rdata;

function rr(
  name: string,
  klass: number,
  type: RecordTypeName | 'ANY',
  ttl: number,
  text?: string,
): ResourceRecord {
  const code = type === 'ANY' ? RRType.ANY : RRType[type as keyof typeof RRType];
  return {
    name,
    type: code,
    class: klass,
    ttl,
    data: text === undefined ? empty(code) : parseRdata(type as RecordTypeName, text, ORIGIN),
  };
}

function msg(prereq: ResourceRecord[], updates: ResourceRecord[]): Message {
  return {
    id: 1,
    qr: false,
    opcode: 5,
    aa: false,
    tc: false,
    rd: false,
    ra: false,
    ad: false,
    cd: false,
    rcode: 0,
    questions: [{ name: ORIGIN, type: RRType.SOA, class: RRClass.IN }],
    answers: prereq,
    authority: updates,
    additional: [],
  };
}

const all = () => true;

describe('RFC 2136 evaluation', () => {
  it('§2.4 prerequisites: each form and its rcode', () => {
    const z = served();
    const check = (p: ResourceRecord, rcode: number) => {
      const d = evaluateUpdate(msg([p], []), z, all);
      assert.equal(d.ok ? 0 : d.rcode, rcode, `${p.name} ${p.class} ${p.type}`);
    };
    check(rr('www.example.com.', RRClass.ANY, 'A', 0), 0);
    check(rr('www.example.com.', RRClass.ANY, 'TXT', 0), UpdateRcode.NXRRSET);
    check(rr('www.example.com.', RRClass.NONE, 'TXT', 0), 0);
    check(rr('www.example.com.', RRClass.NONE, 'A', 0), UpdateRcode.YXRRSET);
    check(rr('www.example.com.', RRClass.ANY, 'ANY', 0), 0);
    check(rr('nope.example.com.', RRClass.ANY, 'ANY', 0), UpdateRcode.NXDOMAIN);
    check(rr('nope.example.com.', RRClass.NONE, 'ANY', 0), 0);
    check(rr('www.example.com.', RRClass.NONE, 'ANY', 0), UpdateRcode.YXDOMAIN);
    check(rr('www.other.org.', RRClass.ANY, 'A', 0), UpdateRcode.NOTZONE);
    check(rr('a.child.example.com.', RRClass.ANY, 'A', 0), UpdateRcode.NOTZONE);
    check(rr('www.example.com.', RRClass.ANY, 'A', 300), UpdateRcode.FORMERR);
    check(rr('www.example.com.', RRClass.ANY, 'A', 0, '192.0.2.1'), UpdateRcode.FORMERR);
  });

  it('§2.4.2 value-dependent prerequisite compares the whole RRset', () => {
    const z = served();
    const both = [
      rr('www.example.com.', RRClass.IN, 'A', 0, '192.0.2.2'),
      rr('www.example.com.', RRClass.IN, 'A', 0, '192.0.2.1'),
    ];
    assert.equal(evaluateUpdate(msg(both, []), z, all).ok, true);
    const one = evaluateUpdate(msg([both[0]!], []), z, all);
    assert.equal(one.ok ? 0 : one.rcode, UpdateRcode.NXRRSET);
    const other = evaluateUpdate(msg([rr('new.example.com.', RRClass.IN, 'A', 0, '192.0.2.9')], []), z, all);
    assert.equal(other.ok ? 0 : other.rcode, UpdateRcode.NXRRSET);
  });

  it('§2.5 updates: add, delete RRset, delete name, delete one RR', () => {
    const z = served();
    const d = evaluateUpdate(
      msg(
        [],
        [
          rr('new.example.com.', RRClass.IN, 'TXT', 60, '"hello"'),
          rr('www.example.com.', RRClass.NONE, 'A', 0, '192.0.2.1'),
          rr('www.example.com.', RRClass.IN, 'A', 120, '192.0.2.3'),
          rr('alias.example.com.', RRClass.ANY, 'ANY', 0),
          rr('gone.example.com.', RRClass.ANY, 'A', 0),
        ],
      ),
      z,
      all,
    );
    assert.ok(d.ok);
    const text = d.changes.map((c) => `${c.owner} ${c.type} ${c.ttl} ${c.rdata.length}`);
    // Deleting what is not there changes nothing; the TTL of the added record becomes the RRset's.
    assert.deepEqual(text, [
      'new.example.com. TXT 60 1',
      'www.example.com. A 120 2',
      'alias.example.com. CNAME 300 0',
    ]);
  });

  it('§3.4.2: apex SOA and NS are kept; CNAME does not mix with other data', () => {
    const z = served();
    const d = evaluateUpdate(
      msg(
        [],
        [
          rr(ORIGIN, RRClass.ANY, 'ANY', 0),
          rr(ORIGIN, RRClass.ANY, 'NS', 0),
          rr(ORIGIN, RRClass.NONE, 'SOA', 0, 'ns1 hostmaster 1 7200 3600 1209600 300'),
          rr('www.example.com.', RRClass.IN, 'CNAME', 60, 'elsewhere.example.net.'),
          rr('alias.example.com.', RRClass.IN, 'A', 60, '192.0.2.7'),
          rr('alias.example.com.', RRClass.IN, 'CNAME', 60, 'other.example.net.'),
        ],
      ),
      z,
      all,
    );
    assert.ok(d.ok);
    assert.deepEqual(
      d.changes.map((c) => `${c.owner} ${c.type} ${c.rdata.map((r) => JSON.stringify(r)).join()}`),
      ['alias.example.com. CNAME {"type":"CNAME","target":"other.example.net."}'],
    );
    assert.equal(d.ignored.length, 4);
  });

  it('refuses adding to the zone-owned SOA and apex NS, types the key may not change, and meta-types', () => {
    const z = served();
    const code = (u: ResourceRecord, permitted = all) => {
      const d = evaluateUpdate(msg([], [u]), z, permitted);
      return d.ok ? 0 : d.rcode;
    };
    assert.equal(code(rr(ORIGIN, RRClass.IN, 'NS', 60, 'evil.example.net.')), UpdateRcode.REFUSED);
    assert.equal(code(rr(ORIGIN, RRClass.IN, 'SOA', 60, 'a b 9 1 1 1 1')), UpdateRcode.REFUSED);
    assert.equal(
      code(rr('www.example.com.', RRClass.IN, 'A', 60, '192.0.2.1'), () => false),
      UpdateRcode.REFUSED,
    );
    assert.equal(
      code(rr('www.example.com.', RRClass.ANY, 'ANY', 0), () => false),
      UpdateRcode.REFUSED,
    );
    assert.equal(code(rr('www.example.com.', RRClass.IN, 'ANY', 0)), UpdateRcode.FORMERR);
    assert.equal(code(rr('www.example.com.', RRClass.ANY, 'A', 60)), UpdateRcode.FORMERR);
    assert.equal(code(rr('www.example.com.', RRClass.NONE, 'A', 60, '192.0.2.1')), UpdateRcode.FORMERR);
    assert.equal(code(rr('www.elsewhere.org.', RRClass.IN, 'A', 60, '192.0.2.1')), UpdateRcode.NOTZONE);
  });

  it('a failing prerequisite refuses the whole message', () => {
    const d = evaluateUpdate(
      msg(
        [rr('www.example.com.', RRClass.NONE, 'A', 0)],
        [rr('x.example.com.', RRClass.IN, 'A', 60, '192.0.2.5')],
      ),
      served(),
      all,
    );
    assert.equal(d.ok, false);
  });

  it('§3.4.2.2 and §2.4.2: duplicates are ignored, names compared case-insensitively', () => {
    const z = zone([
      [ORIGIN, 'SOA', 300, ['ns1 hostmaster 1 7200 3600 1209600 300']],
      ['mx.example.com.', 'MX', 300, ['10 mail.example.com.']],
    ]);
    // The served RRset, its record twice and once in other case: the same set, so it holds.
    const pre = [
      rr('mx.example.com.', RRClass.IN, 'MX', 0, '10 mail.example.com.'),
      rr('mx.example.com.', RRClass.IN, 'MX', 0, '10 MAIL.example.com.'),
    ];
    const adds = [
      rr('mx.example.com.', RRClass.IN, 'MX', 60, '10 Mail.Example.com.'),
      rr('mx.example.com.', RRClass.IN, 'MX', 60, '20 backup.example.com.'),
      rr('mx.example.com.', RRClass.IN, 'MX', 60, '20 backup.example.com.'),
      rr('t.example.com.', RRClass.IN, 'TXT', 60, '"a"'),
      rr('t.example.com.', RRClass.IN, 'TXT', 60, '"a"'),
      rr('t.example.com.', RRClass.IN, 'TXT', 60, '"A"'),
      rr('t.example.com.', RRClass.NONE, 'TXT', 0, '"A"'),
    ];
    const d = evaluateUpdate(msg(pre, adds), z, all);
    assert.ok(d.ok, d.ok ? '' : d.reason);
    assert.deepEqual(
      d.changes.map(
        (c) => `${c.owner} ${c.type} ${c.ttl} ${c.rdata.map((r) => JSON.stringify(r)).join(' ')}`,
      ),
      [
        'mx.example.com. MX 60 {"type":"MX","preference":10,"exchange":"mail.example.com."} {"type":"MX","preference":20,"exchange":"backup.example.com."}',
        't.example.com. TXT 60 {"type":"TXT","strings":["a"]}',
      ],
    );
  });

  it('linear in the number of RRs: thousands of prerequisites and adds read each record a bounded number of times', () => {
    const n = 4000;
    let reads = 0;
    // Every read of an RDATA's fields is counted: pairwise comparisons would read them about n² times.
    const counted = (r: Rdata): Rdata =>
      new Proxy(r, {
        get(target, property, receiver) {
          reads++;
          return Reflect.get(target, property, receiver);
        },
        ownKeys(target) {
          reads++;
          return Reflect.ownKeys(target);
        },
      });
    const records = Array.from({ length: n }, (_, i) => `"v${i}"`);
    const view = zone([[ORIGIN, 'SOA', 300, ['ns1 hostmaster 1 7200 3600 1209600 300']]]);
    const servedSet = { ttl: 60, rdata: records.map((t) => counted(parseRdata('TXT', t, ORIGIN))) };
    const z: UpdateZoneView = {
      ...view,
      rrset: (k, t) => (k === 'big.example.com.' && t === RRType.TXT ? servedSet : view.rrset(k, t)),
      types: (k) => (k === 'big.example.com.' ? [RRType.TXT] : view.types(k)),
    };
    const data = (t: string) => counted(parseRdata('TXT', t, ORIGIN));
    const pre = records.map((t) => ({ ...rr('big.example.com.', RRClass.IN, 'TXT', 0), data: data(t) }));
    const adds = records.map((t) => ({ ...rr('big.example.com.', RRClass.IN, 'TXT', 60), data: data(t) }));
    const d = evaluateUpdate(msg(pre, adds.slice(0, n / 4)), z, all);
    assert.ok(d.ok, d.ok ? '' : d.reason);
    assert.equal(d.changes[0]!.rdata.length, n);
    assert.ok(reads < 40 * n, `${reads} reads of RDATA for ${n} records`);
  });

  it(`more than ${MAX_UPDATE_RRS} prerequisites and updates together are REFUSED unread`, () => {
    const many = Array.from({ length: MAX_UPDATE_RRS + 1 }, () =>
      rr('www.example.com.', RRClass.ANY, 'A', 0),
    );
    const d = evaluateUpdate(msg(many, []), served(), all);
    assert.equal(d.ok ? 0 : d.rcode, UpdateRcode.REFUSED);
    assert.match(d.ok ? '' : d.reason, /at most 5000/);
    assert.equal(evaluateUpdate(msg(many.slice(1), []), served(), all).ok, true);
  });
});
