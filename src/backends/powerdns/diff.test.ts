import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseRdata } from '../../dns/rdata.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import { powerDnsContent } from './content.ts';
import {
  type DesiredRRset,
  diffZone,
  entryKey,
  type HeldRRset,
  ownershipEntry,
  planPatches,
  type RRsetChange,
  rrsetKey,
} from './diff.ts';

const origin = 'example.com.';

function want(owner: string, type: RecordTypeName, records: string[], ttl = 300): DesiredRRset {
  const rdata = records.map((r) => parseRdata(type, r, origin));
  return {
    owner,
    type,
    ttl,
    rdata,
    content: rdata.map(powerDnsContent),
    origin: { kind: 'recordSet', namespace: 'dns', name: `${owner.split('.')[0]}-${type.toLowerCase()}` },
  };
}

function held(name: string, type: string, contents: string[], ttl = 300, disabled = false): HeldRRset {
  return { name, type, ttl, records: contents.map((content) => ({ content, disabled })) };
}

const soa = (serial: number) =>
  want(origin, 'SOA', [`ns1.example.com. hostmaster.example.com. ${serial} 3600 600 1209600 300`]);
const ns = want(origin, 'NS', ['ns1.example.com.', 'ns2.example.com.']);
const heldSoa = (serial: number) =>
  held(origin, 'SOA', [`ns1.example.com. hostmaster.example.com. ${serial} 3600 600 1209600 300`]);
const heldNs = held(origin, 'NS', ['ns1.example.com.', 'ns2.example.com.']);

function names(changes: RRsetChange[]): string[] {
  return changes.map((c) => `${c.changetype} ${c.name} ${c.type}`);
}

describe('diffZone', () => {
  test('a new zone: every RRset is created and claimed; the SOA and apex NS are ours unclaimed; SOA last', () => {
    const diff = diffZone({
      origin,
      desired: [soa(2026112100), ns, want('www.example.com.', 'A', ['192.0.2.1'])],
      held: [heldSoa(0), held(origin, 'NS', ['ns1.example.com.', 'ns2.example.com.'], 3600)],
      owned: new Set(),
    });
    assert.deepEqual(names(diff.replaces), [
      'REPLACE example.com. NS',
      'REPLACE www.example.com. A',
      'REPLACE example.com. SOA',
    ]);
    assert.deepEqual(diff.claim, ['www A']);
    assert.deepEqual(diff.deletes, []);
    assert.deepEqual(diff.problems, []);
  });

  test('what PowerDNS holds exactly is left alone, compared case-insensitively and by meaning', () => {
    const diff = diffZone({
      origin,
      desired: [
        soa(5),
        ns,
        want('www.example.com.', 'A', ['192.0.2.1', '192.0.2.2']),
        want(origin, 'MX', ['10 mail']),
      ],
      held: [
        heldSoa(5),
        heldNs,
        held('WWW.Example.COM.', 'A', ['192.0.2.2', '192.0.2.1']),
        // PowerDNS lowercases the zone part of names in RDATA; the same record.
        held(origin, 'MX', ['10 MAIL.example.com.']),
      ],
      owned: new Set(['www A', '@ MX']),
    });
    assert.deepEqual(diff.replaces, []);
    assert.deepEqual(diff.deletes, []);
    assert.equal(diff.unchanged, 4);
  });

  test('an owned RRset with other records, another TTL or a disabled record is replaced', () => {
    const diff = diffZone({
      origin,
      desired: [
        soa(6),
        ns,
        want('a.example.com.', 'A', ['192.0.2.1']),
        want('b.example.com.', 'A', ['192.0.2.1'], 60),
        want('c.example.com.', 'A', ['192.0.2.1']),
      ],
      held: [
        heldSoa(5),
        heldNs,
        held('a.example.com.', 'A', ['192.0.2.9']),
        held('b.example.com.', 'A', ['192.0.2.1'], 300),
        held('c.example.com.', 'A', ['192.0.2.1'], 300, true),
      ],
      owned: new Set(['a A', 'b A', 'c A']),
    });
    assert.deepEqual(names(diff.replaces), [
      'REPLACE a.example.com. A',
      'REPLACE b.example.com. A',
      'REPLACE c.example.com. A',
      'REPLACE example.com. SOA',
    ]);
    assert.deepEqual(diff.claim, []);
  });

  test('owned RRsets no longer wanted are deleted (first) and released; foreign ones are never touched', () => {
    const diff = diffZone({
      origin,
      desired: [soa(6), ns, want('www.example.com.', 'A', ['192.0.2.1'])],
      held: [
        heldSoa(5),
        heldNs,
        held('old.example.com.', 'TXT', ['"bye"']),
        held('www.example.com.', 'A', ['192.0.2.1']),
        held('hand.example.com.', 'A', ['198.51.100.7']),
      ],
      owned: new Set(['www A', 'old TXT', 'gone AAAA']),
    });
    assert.deepEqual(names(diff.deletes), ['DELETE old.example.com. TXT']);
    assert.deepEqual(names(diff.replaces), ['REPLACE example.com. SOA']);
    assert.deepEqual(diff.release.sort(), ['gone AAAA', 'old TXT']);
  });

  test('a desired RRset held by someone else becomes a Conflict naming it, and is not sent', () => {
    const desired = want('hand.example.com.', 'A', ['192.0.2.1']);
    const diff = diffZone({
      origin,
      desired: [soa(6), ns, desired],
      held: [heldSoa(6), heldNs, held('hand.example.com.', 'A', ['198.51.100.7'])],
      owned: new Set(),
    });
    assert.deepEqual(diff.replaces, []);
    assert.deepEqual(diff.claim, []);
    assert.equal(diff.problems.length, 1);
    const p = diff.problems[0]!;
    assert.equal(p.reason, 'Conflict');
    assert.equal(p.owner, 'hand.example.com.');
    assert.deepEqual(p.origin, desired.origin);
    assert.match(p.message, /PowerDNS already holds hand\.example\.com\. A \("198\.51\.100\.7"\)/);
    assert.match(p.message, /delete or rename it in PowerDNS/);
  });

  test('CNAME and other data at one name (RFC 1034 §3.6.2): foreign data blocks, owned data is replaced', () => {
    const diff = diffZone({
      origin,
      desired: [
        soa(7),
        ns,
        want('alias.example.com.', 'CNAME', ['www']),
        want('data.example.com.', 'TXT', ['"x"']),
        want('mine.example.com.', 'A', ['192.0.2.3']),
      ],
      held: [
        heldSoa(6),
        heldNs,
        held('alias.example.com.', 'TXT', ['"hand-made"']),
        held('data.example.com.', 'CNAME', ['elsewhere.example.net.']),
        held('mine.example.com.', 'CNAME', ['old.example.com.']),
      ],
      owned: new Set(['mine CNAME']),
    });
    assert.deepEqual(
      diff.problems.map((p) => `${p.owner} ${p.type}`),
      ['alias.example.com. CNAME', 'data.example.com. TXT'],
    );
    assert.match(diff.problems[0]!.message, /cannot share its name with other data/);
    // The owned CNAME goes first, then the A takes its name.
    assert.deepEqual(names(diff.deletes), ['DELETE mine.example.com. CNAME']);
    assert.deepEqual(names(diff.replaces), ['REPLACE mine.example.com. A', 'REPLACE example.com. SOA']);
  });

  test('an entry claimed before a PATCH that never happened is used, not claimed again', () => {
    const diff = diffZone({
      origin,
      desired: [soa(7), ns, want('new.example.com.', 'A', ['192.0.2.1'])],
      held: [heldSoa(6), heldNs],
      owned: new Set(['new A']),
    });
    assert.deepEqual(names(diff.replaces), ['REPLACE new.example.com. A', 'REPLACE example.com. SOA']);
    assert.deepEqual(diff.claim, []);
  });
});

describe('ownership entries', () => {
  test('are relative to the zone, lowercase, and map back to the RRset key', () => {
    for (const [owner, type, entry] of [
      ['example.com.', 'MX', '@ MX'],
      ['WWW.example.com.', 'A', 'www A'],
      ['*.wild.example.com.', 'A', '*.wild A'],
      ['a\\.b.example.com.', 'TXT', 'a\\.b TXT'],
      ['_443._tcp.www.example.com.', 'TLSA', '_443._tcp.www TLSA'],
    ] as const) {
      assert.equal(ownershipEntry(owner, type, origin), entry);
      assert.equal(entryKey(entry, origin), rrsetKey(owner, type));
    }
    assert.equal(entryKey('garbage', origin), undefined);
  });
});

describe('planPatches', () => {
  const change = (i: number): RRsetChange => ({
    name: `host-${i}.example.com.`,
    type: 'A',
    changetype: 'REPLACE',
    ttl: 300,
    records: [{ content: `192.0.2.${i % 250}`, disabled: false }],
  });
  const soaChange: RRsetChange = {
    name: origin,
    type: 'SOA',
    changetype: 'REPLACE',
    ttl: 300,
    records: [
      { content: 'ns1.example.com. hostmaster.example.com. 9 3600 600 1209600 300', disabled: false },
    ],
  };

  test('one body normally; none when nothing changed', () => {
    assert.deepEqual(planPatches({ deletes: [], replaces: [] }, 1 << 20), []);
    const bodies = planPatches({ deletes: [], replaces: [change(1), change(2), soaChange] }, 1 << 20);
    assert.equal(bodies.length, 1);
  });

  test('bodies over the size limit are split: deletes first, the SOA in the last body, each under the limit', () => {
    const deletes: RRsetChange[] = [{ name: 'old.example.com.', type: 'A', changetype: 'DELETE' }];
    const replaces = [...Array.from({ length: 200 }, (_, i) => change(i)), soaChange];
    const bodies = planPatches({ deletes, replaces }, 4000);
    assert.ok(bodies.length > 1);
    for (const body of bodies) assert.ok(Buffer.byteLength(JSON.stringify({ rrsets: body })) <= 4000);
    assert.deepEqual(bodies[0]![0], deletes[0]);
    assert.deepEqual(bodies.at(-1)!.at(-1), soaChange);
    assert.equal(bodies.flat().length, 202);
  });
});
