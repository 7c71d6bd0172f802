/**
 * Every way the catalog refuses a DNSRecordSet, read by a hostile tenant: a caller of the record writer
 * (homelab API, ExternalDNS webhook, RFC 2136 UPDATE key) is told why its write is refused in the
 * catalog's words, rendered for its namespace. The objects around it belong to a victim namespace with
 * distinctive names; no refusal text the tenant reads may carry them. Each refusal code must be met
 * here: a new form of message fails this test until it is produced below, where it names the victim's
 * objects, and then fails again if it names them without marking them (`Refusal` parts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSRecordSetSpec } from '../api/index.ts';
import { Catalog, RECORD_REFUSALS, type RecordRefusalCode } from './catalog.ts';
import { Refusal } from './refusal.ts';

const VICTIM = 'victim-ns-zz';
const TENANT = 'tenant-zz';
/** Strings of the victim's namespace and objects (DNS names never contain them). */
const SECRETS = [VICTIM, 'secret-'];

function victimWorld(): Catalog {
  const c = new Catalog();
  c.load(
    [zoneClass()],
    [
      zone(VICTIM, 'secret-zone-zz', 'victim.test', {}, 1),
      zone(VICTIM, 'secret-kid-zz', 'kid.victim.test', {}, 2),
      // The tenant's zone, with the victim's zones below it (delegated to the victim's namespace).
      zone(
        TENANT,
        'mine',
        't.test',
        { delegations: [{ namespaces: [VICTIM], names: ['kid', 'deep.mid'], types: ['NS'] }] },
        3,
      ),
      zone(VICTIM, 'secret-tkid-zz', 'kid.t.test', {}, 4),
      zone(VICTIM, 'secret-deep-zz', 'deep.mid.t.test', {}, 5),
      // The tenant's own zone refused for the victim's zone: its verdict names the victim's zone.
      zone(TENANT, 'mine-dup', 'victim.test', {}, 6),
      zone(VICTIM, 'secret-noclass-zz', 'noclass.test', { className: 'secret-class-zz' }, 7),
    ],
    [],
  );
  c.setZoneRefused(`${VICTIM}/secret-bad-zz`, 'spec.domainName "secret-bad-zz..test" has an empty label');
  return c;
}

const a = { type: 'A' as const, records: ['192.0.2.1'] };
const ref = (name: string, namespace = VICTIM) => ({ zoneRef: { name, namespace } });
/** What the tenant writes, and the code each is refused with. */
const WRITES: [RecordRefusalCode, DNSRecordSetSpec][] = [
  ['ZONE_REF_NOT_FOUND', { ...ref('secret-missing-zz'), name: 'www', ...a }],
  ['ZONE_REF_INVALID', { ...ref('secret-bad-zz'), name: 'www', ...a }],
  ['ZONE_REF_REFUSED', { ...ref('mine-dup', TENANT), name: 'www', ...a }],
  ['ZONE_REF_REFUSED', { ...ref('secret-noclass-zz'), name: 'www', ...a }],
  ['NAME_INVALID', { ...ref('secret-zone-zz'), name: 'a..b', ...a }],
  ['OUT_OF_ZONE', { ...ref('secret-zone-zz'), name: 'www.elsewhere.test.', ...a }],
  ['BELOW_ZONE_CUT', { ...ref('secret-zone-zz'), name: 'www.kid', ...a }],
  ['NOT_DELEGATED', { ...ref('secret-zone-zz'), name: 'www', ...a }],
  ['NAME_RELATIVE', { name: 'www', ...a }],
  ['NAME_INVALID', { name: 'a..t.test.', ...a }],
  ['NO_ZONE', { name: 'www.nowhere.test.', ...a }],
  ['NS_WILDCARD', { name: '*.w.t.test.', type: 'NS', records: ['ns.example.net.'] }],
  ['NS_ABOVE_ZONE', { name: 'mid.t.test.', type: 'NS', records: ['ns.example.net.'] }],
  ['CNAME_ABOVE_ZONE', { name: 'mid.t.test.', type: 'CNAME', records: ['x.example.net.'] }],
  ['DS_OF_CHILD_ZONE', { name: 'kid.t.test.', type: 'DS', records: ['1 13 2 abcd'] }],
  ['NOT_DELEGATED', { name: 'x.victim.test.', ...a }],
];

describe("record set refusals, as a hostile tenant's caller reads them", () => {
  test('every refusal code is met, and none names the victim namespace or its objects to the tenant', () => {
    const c = victimWorld();
    const met = new Set<string>();
    for (const [code, spec] of WRITES) {
      const r = c.resolve(recordSet(TENANT, 'probe', spec));
      assert.ok(!r.resolved, `${code}: ${spec.name} resolved`);
      assert.equal(r.refusal.code, code, r.message);
      met.add(code);
      const caller = r.refusal.text({ namespace: TENANT });
      for (const secret of SECRETS) assert.ok(!caller.includes(secret), `${code}: ${caller}`);
      // The owner reads it all: the message, with every object it names.
      assert.equal(r.refusal.text(), r.message);
      for (const s of r.refusal.subjects) assert.ok(r.message.includes(`${s.kind} ${s.namespace}/${s.name}`));
      // The zone's DNS name stays.
      if (r.refusal.origin !== undefined) assert.ok(caller.includes(r.refusal.origin), `${code}: ${caller}`);
    }
    assert.deepEqual([...met].sort(), [...RECORD_REFUSALS].sort());
  });

  test("the tenant's own status does not carry another namespace's zone's reasons (its class, its domain)", () => {
    // Regression: a zoneRef to another namespace's refused zone copied that zone's own message (its
    // unpublished domain, its class, other namespaces' objects) into the tenant's status and Events.
    const c = victimWorld();
    for (const name of ['secret-noclass-zz', 'secret-bad-zz']) {
      const r = c.resolve(recordSet(TENANT, 'probe', { ...ref(name), name: 'www', ...a }));
      assert.ok(!r.resolved);
      assert.doesNotMatch(r.message, /secret-class-zz|secret-bad-zz\.\.test/, r.message);
      assert.match(r.message, /is refused.*; its owners see why in its status$/);
    }
  });

  test("the victim's objects are named to their owner; the tenant reads what to do", () => {
    const c = victimWorld();
    const texts = new Map<string, { owner: string; caller: string }>();
    for (const [code, spec] of WRITES) {
      const r = c.resolve(recordSet(TENANT, 'probe', spec));
      assert.ok(!r.resolved);
      if (!texts.has(code))
        texts.set(code, { owner: r.message, caller: r.refusal.text({ namespace: TENANT }) });
    }
    const of = (code: RecordRefusalCode) => texts.get(code)!;
    assert.match(of('NOT_DELEGATED').owner, /\(DNSZone victim-ns-zz\/secret-zone-zz\)/);
    assert.equal(
      of('NOT_DELEGATED').caller,
      'zone victim.test. does not delegate www A to namespace tenant-zz; its owners can add a delegation ' +
        '{namespaces: [tenant-zz], names: [www], types: [A]}',
    );
    assert.equal(
      of('DS_OF_CHILD_ZONE').caller,
      'the DS record set at kid.t.test. is published in zone t.test. but belongs to zone kid.t.test. of another ' +
        "namespace (RFC 4035 §2.4): only a DNSRecordSet of that zone's namespace may publish it",
    );
    assert.match(
      of('DS_OF_CHILD_ZONE').owner,
      /of namespace victim-ns-zz .*namespace victim-ns-zz may publish it; create it there/,
    );
    assert.equal(
      of('BELOW_ZONE_CUT').caller,
      'www.kid.victim.test. is at or below the zone cut kid.victim.test. of a DNSZone of another namespace; publish it in that zone',
    );
    assert.match(
      of('NS_ABOVE_ZONE').caller,
      /^an NS record set at mid\.t\.test\. would delegate it away from zone t\.test\. and hide zone deep\.mid\.t\.test\., which is served below it/,
    );
    assert.match(
      of('CNAME_ABOVE_ZONE').caller,
      /^a CNAME at mid\.t\.test\. would alias a name above zone deep\.mid\.t\.test\., which/,
    );
    // Another zone's status is its owners' to read, also for the tenant's own zone.
    assert.match(of('ZONE_REF_REFUSED').owner, /already served by DNSZone victim-ns-zz\/secret-zone-zz/);
    assert.equal(
      of('ZONE_REF_REFUSED').caller,
      'DNSZone tenant-zz/mine-dup (spec.zoneRef) is refused (Conflict)',
    );
    assert.equal(
      of('ZONE_REF_INVALID').caller,
      'a DNSZone of another namespace (spec.zoneRef) is refused; its owners see why in its status',
    );
    // The tenant's own record set's status does not carry another namespace's zone's reasons (its
    // domain, what its validation said) either.
    assert.match(of('ZONE_REF_INVALID').owner, /is refused; its owners see why in its status$/);
  });

  test('each namespace reads its own objects and namespace, and no other', () => {
    const c = victimWorld();
    const r = c.resolve(recordSet(TENANT, 'probe', { name: 'x.victim.test.', ...a }));
    assert.ok(!r.resolved && r.refusal instanceof Refusal);
    assert.deepEqual(r.refusal.subjects, [{ kind: 'DNSZone', namespace: VICTIM, name: 'secret-zone-zz' }]);
    assert.equal(
      r.refusal.text({ namespace: VICTIM }),
      'zone victim.test. (DNSZone victim-ns-zz/secret-zone-zz) does not delegate x A to another namespace; ' +
        'its owners can add a delegation',
    );
    assert.equal(
      r.refusal.text({ namespace: 'third-ns' }),
      'zone victim.test. does not delegate x A to another namespace; its owners can add a delegation',
    );
  });
});
