import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSRecordSet } from '../api/index.ts';
import { assembleZone } from './assemble.ts';
import { Catalog } from './catalog.ts';
import { zoneAssemblyInput } from './zone-inputs.ts';

function build(records: DNSRecordSet[], extra?: (c: Catalog) => void) {
  const c = new Catalog();
  c.setClass(zoneClass('builtin', ['ns1.example.com.', 'ns2.example.net.']));
  c.setZone(
    zone('dns', 'example-com', 'example.com', {
      delegations: [{ namespaces: ['team-b'], names: ['sub'], types: ['NS'] }],
    }),
  );
  extra?.(c);
  for (const r of records) c.setRecord(r);
  return assembleZone(zoneAssemblyInput(c, 'dns/example-com')!);
}

const rs = (
  name: string,
  type: DNSRecordSet['spec']['type'],
  records: string[],
  age = 0,
  ns = 'dns',
  id = `${name}-${type}`.toLowerCase().replace(/[^a-z0-9-]/g, 'x'),
) => recordSet(ns, id, { zoneRef: { name: 'example-com', namespace: 'dns' }, name, type, records }, age);

function rrsetsOf(z: ReturnType<typeof build>) {
  return z.rrsets.map((r) => `${r.owner} ${r.type} ${r.ttl}`);
}

describe('assembleZone', () => {
  test('SOA and apex NS come from the class and zone', () => {
    const z = build([]);
    assert.equal(z.soa.mname, 'ns1.example.com.');
    assert.equal(z.soa.rname, 'hostmaster.example.com.');
    assert.deepEqual(
      {
        refresh: z.soa.refresh,
        retry: z.soa.retry,
        expire: z.soa.expire,
        minimum: z.soa.minimum,
        ttl: z.soa.ttl,
      },
      { refresh: 3600, retry: 600, expire: 1209600, minimum: 300, ttl: 300 },
    );
    assert.deepEqual(rrsetsOf(z), ['example.com. NS 300']);
    assert.deepEqual(z.nameServers, ['ns1.example.com.', 'ns2.example.net.']);
  });

  test('zone overrides beat class defaults; mailbox rname is converted', () => {
    const c = new Catalog();
    c.setClass(
      zoneClass('builtin', ['ns1.example.com.'], {
        defaults: { ttl: 600, soa: { refresh: 7200, rname: 'dns.admin@example.org' } },
      }),
    );
    c.setZone(zone('dns', 'z', 'example.com', { ttl: 120, soa: { minimum: 60 } }));
    const z = assembleZone(zoneAssemblyInput(c, 'dns/z')!);
    assert.equal(z.soa.ttl, 120);
    assert.equal(z.soa.refresh, 7200);
    assert.equal(z.soa.minimum, 60);
    assert.equal(z.soa.rname, 'dns\\.admin.example.org.');
  });

  test('records are parsed relative to the origin, with the default TTL unless set', () => {
    const z = build([
      rs('www', 'A', ['192.0.2.1']),
      { ...rs('mx', 'MX', ['10 mail']), spec: { ...rs('mx', 'MX', ['10 mail']).spec, name: '@', ttl: 3600 } },
    ]);
    const mx = z.rrsets.find((r) => r.type === 'MX')!;
    assert.equal(mx.ttl, 3600);
    assert.deepEqual(mx.rdata, [{ type: 'MX', preference: 10, exchange: 'mail.example.com.' }]);
    assert.equal(z.acceptedCount, 2);
  });

  test('an unparsable record is rejected naming the index and value; the rest still serve', () => {
    const z = build([rs('www', 'A', ['192.0.2.1', '192.0.2.256']), rs('ok', 'A', ['192.0.2.2'])]);
    const v = z.verdicts.get('dns/www-a')!;
    assert.ok(!v.accepted && v.reason === 'Invalid');
    assert.match(v.message, /spec\.records\[1\] "192\.0\.2\.256"/);
    assert.ok(z.verdicts.get('dns/ok-a')!.accepted);
  });

  test('duplicate records inside one set are rejected (RFC 2181 §5)', () => {
    const v = build([rs('www', 'A', ['192.0.2.1', '192.0.2.1'])]).verdicts.get('dns/www-a')!;
    assert.ok(!v.accepted);
    assert.match(v.message, /repeats spec\.records\[0\]/);
  });

  test('one writer per name and type: the oldest wins and the loser names it', () => {
    const z = build([
      rs('www', 'A', ['192.0.2.2'], 5, 'dns', 'newer'),
      rs('www', 'A', ['192.0.2.1'], 1, 'dns', 'older'),
    ]);
    assert.ok(z.verdicts.get('dns/older')!.accepted);
    const v = z.verdicts.get('dns/newer')!;
    assert.ok(!v.accepted && v.reason === 'Conflict');
    assert.match(v.message, /already published by DNSRecordSet dns\/older/);
    assert.deepEqual(z.rrsets.find((r) => r.type === 'A')!.rdata, [{ type: 'A', address: '192.0.2.1' }]);
  });

  test('equal creation times fall back to namespace/name order', () => {
    const z = build([
      rs('www', 'A', ['192.0.2.2'], 0, 'dns', 'b'),
      rs('www', 'A', ['192.0.2.1'], 0, 'dns', 'a'),
    ]);
    assert.ok(z.verdicts.get('dns/a')!.accepted);
    assert.ok(!z.verdicts.get('dns/b')!.accepted);
  });

  test('CNAME excludes other data at its owner, whichever came first', () => {
    const z1 = build([rs('www', 'CNAME', ['target.example.net.'], 1), rs('www', 'TXT', ['x'], 2)]);
    assert.ok(z1.verdicts.get('dns/www-cname')!.accepted);
    const v1 = z1.verdicts.get('dns/www-txt')!;
    assert.ok(!v1.accepted && v1.reason === 'Conflict' && /CNAME/.test(v1.message));
    const z2 = build([rs('www', 'CNAME', ['target.example.net.'], 2), rs('www', 'TXT', ['x'], 1)]);
    assert.ok(z2.verdicts.get('dns/www-txt')!.accepted);
    assert.ok(!z2.verdicts.get('dns/www-cname')!.accepted);
  });

  test('ALIAS excludes A, AAAA and CNAME but coexists with MX and TXT at the apex', () => {
    const z = build([
      rs('@', 'ALIAS', ['cdn.example.net.'], 1),
      rs('@', 'A', ['192.0.2.1'], 2),
      rs('@', 'MX', ['10 mail'], 3),
      rs('@', 'TXT', ['v=spf1 -all'], 4),
    ]);
    assert.ok(z.verdicts.get('dns/x-alias')!.accepted);
    const a = z.verdicts.get('dns/x-a')!;
    assert.ok(!a.accepted && /ALIAS/.test(a.message));
    assert.ok(z.verdicts.get('dns/x-mx')!.accepted);
    assert.ok(z.verdicts.get('dns/x-txt')!.accepted);
  });

  test('apex rules: no CNAME, no NS (from the class), no DS; SOA is never a record set', () => {
    const z = build([
      rs('@', 'CNAME', ['x.example.net.']),
      rs('@', 'NS', ['ns9.example.net.']),
      rs('@', 'DS', ['1 13 2 abababababababababababababababababababababababababababababababab']),
      rs('@', 'SOA', ['a. b. 1 2 3 4 5']),
    ]);
    for (const [key, pattern] of [
      ['dns/x-cname', /ALIAS/],
      ['dns/x-ns', /nameServers/],
      ['dns/x-ds', /parent zone/],
      ['dns/x-soa', /spec\.soa/],
    ] as const) {
      const v = z.verdicts.get(key)!;
      assert.ok(!v.accepted, key);
      assert.match((v as { message: string }).message, pattern);
    }
  });

  test('a delegation NS makes a cut: data below it is rejected except glue', () => {
    const z = build([
      rs('legacy', 'NS', ['ns1.legacy.example.com.', 'ns.elsewhere.net.'], 1),
      rs('ns1.legacy', 'A', ['192.0.2.53'], 2),
      rs('www.legacy', 'A', ['192.0.2.80'], 3),
      rs('legacy', 'TXT', ['x'], 4),
      rs('legacy', 'DS', ['60485 13 2 abababababababababababababababababababababababababababababababab'], 5),
    ]);
    assert.ok(z.verdicts.get('dns/legacy-ns')!.accepted);
    assert.ok(z.verdicts.get('dns/ns1xlegacy-a')!.accepted, 'glue for an in-cut nameserver is kept');
    const below = z.verdicts.get('dns/wwwxlegacy-a')!;
    assert.ok(!below.accepted && /below the delegation legacy\.example\.com\./.test(below.message));
    const atCut = z.verdicts.get('dns/legacy-txt')!;
    assert.ok(!atCut.accepted && /only NS and DS/.test(atCut.message));
    assert.ok(z.verdicts.get('dns/legacy-ds')!.accepted);
  });

  test('a managed child zone gets NS and glue in the parent', () => {
    const z = build([], (c) => {
      c.setClass(zoneClass('child-class', ['ns1.sub.example.com.', 'ns2.example.net.']));
      c.setZone(zone('team-b', 'sub', 'sub.example.com', { className: 'child-class' }, 5));
      c.setRecord(
        recordSet('team-b', 'ns1', {
          zoneRef: { name: 'sub' },
          name: 'ns1',
          type: 'A',
          records: ['192.0.2.54'],
        }),
      );
      c.setRecord(
        recordSet('team-b', 'www', {
          zoneRef: { name: 'sub' },
          name: 'www',
          type: 'A',
          records: ['192.0.2.80'],
        }),
      );
    });
    assert.deepEqual(rrsetsOf(z), [
      'example.com. NS 300',
      'sub.example.com. NS 300',
      'ns1.sub.example.com. A 300',
    ]);
    const ns = z.rrsets.find((r) => r.owner === 'sub.example.com.')!;
    assert.deepEqual(
      ns.rdata.map((r) => (r as { host: string }).host),
      ['ns1.sub.example.com.', 'ns2.example.net.'],
    );
    assert.equal(ns.origin.kind, 'childZone');
  });

  test('records at a managed child cut conflict with the child zone', () => {
    const z = build([rs('sub', 'A', ['192.0.2.1'])], (c) =>
      c.setZone(zone('team-b', 'sub', 'sub.example.com', {}, 5)),
    );
    // The catalog already keeps records under sub.example.com out of the parent; only explicit zoneRef
    // records at the cut itself reach the assembly, and they conflict.
    assert.equal(z.verdicts.size, 0);
  });

  test('warns about an in-zone nameserver without an address', () => {
    const z = build([]);
    assert.deepEqual(z.warnings, [
      'nameserver ns1.example.com. is inside the zone but has no A or AAAA record',
    ]);
    const fixed = build([rs('ns1', 'A', ['192.0.2.53'])]);
    assert.deepEqual(fixed.warnings, []);
  });

  test('the hash depends on content only, not on input order or record-set names', () => {
    const a = build([rs('www', 'A', ['192.0.2.1', '192.0.2.2'], 1), rs('mail', 'A', ['192.0.2.25'], 2)]);
    const b = build([
      rs('mail', 'A', ['192.0.2.25'], 1, 'dns', 'other-name'),
      rs('WWW', 'A', ['192.0.2.2', '192.0.2.1'], 2),
    ]);
    assert.equal(a.hash, b.hash);
    assert.match(a.hash, /^[0-9a-f]{64}$/);
    const c = build([rs('www', 'A', ['192.0.2.1', '192.0.2.3'], 1), rs('mail', 'A', ['192.0.2.25'], 2)]);
    assert.notEqual(a.hash, c.hash);
    const ttl = build([
      {
        ...rs('www', 'A', ['192.0.2.1', '192.0.2.2'], 1),
        spec: { ...rs('www', 'A', ['192.0.2.1', '192.0.2.2']).spec, ttl: 60 },
      },
      rs('mail', 'A', ['192.0.2.25'], 2),
    ]);
    assert.notEqual(a.hash, ttl.hash, 'a TTL change is a content change');
  });

  test('RRsets come out in canonical order', () => {
    const z = build([
      rs('b', 'A', ['192.0.2.1']),
      rs('a', 'TXT', ['x']),
      rs('a', 'A', ['192.0.2.1']),
      rs('@', 'MX', ['10 a']),
    ]);
    assert.deepEqual(rrsetsOf(z), [
      'example.com. NS 300',
      'example.com. MX 300',
      'a.example.com. A 300',
      'a.example.com. TXT 300',
      'b.example.com. A 300',
    ]);
  });
});
