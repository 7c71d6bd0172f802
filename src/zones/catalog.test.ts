import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSZone, DNSZoneSpec } from '../api/index.ts';
import { Catalog } from './catalog.ts';

function catalogWith(): Catalog {
  const c = new Catalog();
  c.setClass(zoneClass());
  c.setZone(
    zone('dns', 'example-com', 'example.com', {
      delegations: [
        { namespaces: ['team-a'], names: ['api', '*.apps'], types: ['A', 'CNAME'] },
        { namespaces: ['team-b'], names: ['sub'], types: ['NS'] },
      ],
    }),
  );
  return c;
}

describe('zone verdicts', () => {
  test('a zone with an existing class is accepted', () => {
    const c = catalogWith();
    const v = c.zoneVerdict('dns/example-com');
    assert.ok(v?.accepted);
    assert.equal(v.origin, 'example.com.');
  });

  test('a missing class is reported and resolved when the class appears', () => {
    const c = new Catalog();
    c.setZone(zone('dns', 'z', 'example.org', { className: 'later' }));
    const v = c.zoneVerdict('dns/z');
    assert.ok(v && !v.accepted && v.reason === 'ClassNotFound');
    assert.match(v.message, /"later" does not exist/);
    const affected = c.setClass(zoneClass('later'));
    assert.ok(affected.zones.has('dns/z'));
    assert.ok(c.zoneVerdict('dns/z')?.accepted);
  });

  test('two zones for one domain: the oldest wins, the other gets Conflict naming it', () => {
    const c = catalogWith();
    c.setZone(zone('other', 'dup', 'EXAMPLE.com.', {}, 10));
    const v = c.zoneVerdict('other/dup');
    assert.ok(v && !v.accepted && v.reason === 'Conflict');
    assert.match(v.message, /dns\/example-com/);
    // deleting the winner hands the domain to the other
    const affected = c.deleteZone('dns/example-com');
    assert.ok(affected.zones.has('other/dup'));
    assert.ok(c.zoneVerdict('other/dup')?.accepted);
  });

  test("a child zone in another namespace needs the parent's NS delegation", () => {
    const c = catalogWith();
    c.setZone(zone('team-b', 'sub', 'sub.example.com', {}, 5));
    assert.ok(c.zoneVerdict('team-b/sub')?.accepted);
    c.setZone(zone('team-c', 'other', 'other.example.com', {}, 6));
    const v = c.zoneVerdict('team-c/other');
    assert.ok(v && !v.accepted && v.reason === 'NotDelegated');
    assert.match(v.message, /names: \[other\], types: \[NS\]/);
  });

  test("a child zone in the parent's own namespace needs no delegation", () => {
    const c = catalogWith();
    c.setZone(zone('dns', 'internal', 'internal.example.com', {}, 5));
    const v = c.zoneVerdict('dns/internal');
    assert.ok(v?.accepted);
    assert.equal(v.parent, 'dns/example-com');
    assert.deepEqual(
      c.childZonesOf('dns/example-com').map((z) => z.metadata.name),
      ['internal'],
    );
  });

  test('an invalid domain name is rejected as Invalid', () => {
    const c = catalogWith();
    c.setZone(zone('dns', 'bad', `${'a'.repeat(64)}.com`));
    const v = c.zoneVerdict('dns/bad');
    assert.ok(v && !v.accepted && v.reason === 'Invalid');
  });
});

describe('record adoption', () => {
  test('zoneRef with a relative name', () => {
    const c = catalogWith();
    c.setRecord(
      recordSet('dns', 'www', {
        zoneRef: { name: 'example-com' },
        name: 'www',
        type: 'A',
        records: ['192.0.2.1'],
      }),
    );
    assert.deepEqual(c.recordResolution('dns/www'), {
      resolved: true,
      zone: 'dns/example-com',
      fqdn: 'www.example.com.',
    });
    assert.equal(c.recordsOf('dns/example-com').length, 1);
  });

  test('zoneRef: "@" is the apex; an absolute name must be inside the zone', () => {
    const c = catalogWith();
    c.setRecord(
      recordSet('dns', 'apex', { zoneRef: { name: 'example-com' }, name: '@', type: 'TXT', records: ['x'] }),
    );
    assert.equal((c.recordResolution('dns/apex') as { fqdn: string }).fqdn, 'example.com.');
    c.setRecord(
      recordSet('dns', 'out', {
        zoneRef: { name: 'example-com' },
        name: 'www.example.org.',
        type: 'A',
        records: ['192.0.2.1'],
      }),
    );
    const r = c.recordResolution('dns/out');
    assert.ok(r && !r.resolved && r.reason === 'OutOfZone');
    assert.match(r.message, /outside zone example\.com\./);
  });

  test('zoneRef to a missing zone is ZoneNotFound, and resolves once the zone appears', () => {
    const c = catalogWith();
    c.setRecord(
      recordSet('dns', 'x', { zoneRef: { name: 'later' }, name: 'www', type: 'A', records: ['192.0.2.1'] }),
    );
    const r = c.recordResolution('dns/x');
    assert.ok(r && !r.resolved && r.reason === 'ZoneNotFound');
    const affected = c.setZone(zone('dns', 'later', 'later.example.net'));
    assert.ok(affected.records.has('dns/x'));
    assert.ok(c.recordResolution('dns/x')?.resolved);
  });

  test('zoneRef to a zone refused before the catalog (invalid manifest) says it is refused and why', () => {
    const c = catalogWith();
    c.setRecord(
      recordSet('dns', 'x', { zoneRef: { name: 'z3' }, name: 'www', type: 'A', records: ['192.0.2.1'] }),
    );
    const why =
      'spec.domainName: "z3..example" has an empty label (a leading or doubled "."); remove the extra dot';
    const affected = c.setZoneRefused('dns/z3', why);
    assert.ok(affected.records.has('dns/x'));
    const r = c.recordResolution('dns/x');
    assert.ok(r && !r.resolved && r.reason === 'ZoneNotFound');
    assert.equal(r.message, `DNSZone dns/z3 (spec.zoneRef) is refused: ${why}`);
    assert.doesNotMatch(r.message, /does not exist/);
    c.setZoneRefused('dns/z3', undefined);
    assert.match((c.recordResolution('dns/x') as { message: string }).message, /does not exist/);
  });

  test('without zoneRef the name must be absolute', () => {
    const c = catalogWith();
    c.setRecord(recordSet('dns', 'rel', { name: 'www', type: 'A', records: ['192.0.2.1'] }));
    const r = c.recordResolution('dns/rel');
    assert.ok(r && !r.resolved && r.reason === 'Invalid');
    assert.match(r.message, /trailing dot/);
    // A final escaped dot is part of the label: the name is still relative.
    c.setRecord(recordSet('dns', 'esc', { name: 'www\\.', type: 'A', records: ['192.0.2.1'] }));
    const e = c.recordResolution('dns/esc');
    assert.ok(e && !e.resolved && e.reason === 'Invalid');
    assert.match(e.message, /is relative but spec\.zoneRef is not set/);
  });

  test('without zoneRef the deepest zone containing the name adopts it', () => {
    const c = catalogWith();
    c.setZone(zone('team-b', 'sub', 'sub.example.com', {}, 5));
    c.setRecord(
      recordSet('team-b', 'deep', { name: 'www.SUB.example.com.', type: 'A', records: ['192.0.2.1'] }),
    );
    assert.equal((c.recordResolution('team-b/deep') as { zone: string }).zone, 'team-b/sub');
    c.setRecord(recordSet('dns', 'top', { name: 'www.example.com.', type: 'A', records: ['192.0.2.1'] }));
    assert.equal((c.recordResolution('dns/top') as { zone: string }).zone, 'dns/example-com');
  });

  test('a new child zone takes over records below it; deleting it hands them back', () => {
    const c = catalogWith();
    c.setRecord(
      recordSet('dns', 'w', { name: 'www.internal.example.com.', type: 'A', records: ['192.0.2.1'] }),
    );
    assert.equal((c.recordResolution('dns/w') as { zone: string }).zone, 'dns/example-com');
    const affected = c.setZone(zone('dns', 'internal', 'internal.example.com', {}, 5));
    assert.ok(affected.records.has('dns/w'));
    assert.ok(affected.zones.has('dns/example-com'), 'the parent loses the record and gains NS');
    assert.equal((c.recordResolution('dns/w') as { zone: string }).zone, 'dns/internal');
    c.deleteZone('dns/internal');
    assert.equal((c.recordResolution('dns/w') as { zone: string }).zone, 'dns/example-com');
  });

  test('delegations gate other namespaces by name and type', () => {
    const c = catalogWith();
    c.setRecord(recordSet('team-a', 'api', { name: 'api.example.com.', type: 'A', records: ['192.0.2.1'] }));
    assert.ok(c.recordResolution('team-a/api')?.resolved);
    c.setRecord(
      recordSet('team-a', 'app', {
        zoneRef: { name: 'example-com', namespace: 'dns' },
        name: 'x.apps',
        type: 'CNAME',
        records: ['api'],
      }),
    );
    assert.ok(c.recordResolution('team-a/app')?.resolved);
    c.setRecord(recordSet('team-a', 'txt', { name: 'api.example.com.', type: 'TXT', records: ['nope'] }));
    const r = c.recordResolution('team-a/txt');
    assert.ok(r && !r.resolved && r.reason === 'NotDelegated');
    assert.match(r.message, /does not delegate api TXT to namespace team-a/);
    c.setRecord(
      recordSet('intruder', 'www', { name: 'www.example.com.', type: 'A', records: ['192.0.2.66'] }),
    );
    assert.equal((c.recordResolution('intruder/www') as { reason: string }).reason, 'NotDelegated');
  });

  test('a record set resolves alike through the table (its zoneRef list) and on its own', () => {
    const c = catalogWith();
    const sets = [
      recordSet('dns', 'own', {
        zoneRef: { name: 'example-com' },
        name: 'www',
        type: 'A',
        records: ['192.0.2.1'],
      }),
      recordSet('team-a', 'ok', {
        zoneRef: { name: 'example-com', namespace: 'dns' },
        name: 'y.apps',
        type: 'A',
        records: ['192.0.2.2'],
      }),
      recordSet('team-a', 'no', {
        zoneRef: { name: 'example-com', namespace: 'dns' },
        name: 'y.apps',
        type: 'TXT',
        records: ['"x"'],
      }),
      recordSet('team-a', 'gone', {
        zoneRef: { name: 'nowhere' },
        name: 'a',
        type: 'A',
        records: ['192.0.2.3'],
      }),
      recordSet('dns', 'out', {
        zoneRef: { name: 'example-com' },
        name: 'a.example.org.',
        type: 'A',
        records: ['192.0.2.4'],
      }),
    ];
    for (const rs of sets) c.setRecord(rs);
    for (const rs of sets) {
      const key = `${rs.metadata.namespace}/${rs.metadata.name}`;
      assert.deepEqual(c.recordResolution(key), c.resolve(rs), key);
    }
    const no = c.recordResolution('team-a/no');
    assert.ok(no && !no.resolved && no.reason === 'NotDelegated');
    assert.match(no.message, /does not delegate y\.apps TXT to namespace team-a.*names: \[y\.apps\]/);
  });

  test('a load resolves each record set as it resolves on its own, zones interleaved', () => {
    const c = new Catalog();
    const zones = [
      zone('dns', 'example-com', 'example.com', {
        delegations: [{ namespaces: ['team-a'], names: ['*.apps'], types: ['A'] }],
      }),
      zone('dns', 'sub', 'sub.example.com', {}, 1),
      zone('dns', 'late', 'example.com', {}, 2),
      zone('team-a', 'team', 'team.example'),
    ];
    const names = [
      'www',
      '@',
      'x.sub',
      'sub',
      'a.sub.example.com.',
      'www.example.com.',
      'a.example.org.',
      'y.apps',
    ];
    const refs: ({ name: string; namespace?: string } | undefined)[] = [
      { name: 'example-com' },
      { name: 'sub' },
      { name: 'late' },
      { name: 'nowhere' },
      { name: 'team', namespace: 'team-a' },
      { name: 'example-com', namespace: 'dns' },
      undefined,
    ];
    const sets = [];
    for (let i = 0; i < 120; i++) {
      const zoneRef = refs[i % refs.length];
      const name = names[(i * 5) % names.length]!;
      sets.push(
        recordSet(i % 3 === 0 ? 'team-a' : 'dns', `rs${i}`, {
          ...(zoneRef ? { zoneRef } : {}),
          name: zoneRef ? name : name.endsWith('.') ? name : `${name}.example.com.`,
          type: (['A', 'NS', 'DS', 'TXT'] as const)[i % 4]!,
          records: ['192.0.2.1'],
        }),
      );
    }
    c.load([zoneClass()], zones, sets);
    const reasons = new Set<string>();
    for (const rs of sets) {
      const key = `${rs.metadata.namespace}/${rs.metadata.name}`;
      const resolution = c.resolve(rs);
      assert.deepEqual(c.recordResolution(key), resolution, key);
      reasons.add(resolution.resolved ? `in ${resolution.zone}` : resolution.reason);
    }
    // Every way of resolving was met.
    for (const want of [
      'in dns/example-com',
      'in dns/sub',
      'in team-a/team',
      'ZoneNotFound',
      'OutOfZone',
      'NotDelegated',
    ]) {
      assert.ok(reasons.has(want), `${want} in ${[...reasons].join(', ')}`);
    }
  });

  test('the deepest zone decides: a parent delegation cannot reach below a child zone', () => {
    const c = catalogWith();
    c.setZone(zone('team-b', 'sub', 'sub.example.com', {}, 5));
    // dns owns example.com but sub.example.com belongs to team-b, which delegates nothing.
    c.setRecord(
      recordSet('dns', 'sneak', { name: 'www.sub.example.com.', type: 'A', records: ['192.0.2.1'] }),
    );
    assert.equal((c.recordResolution('dns/sneak') as { reason: string }).reason, 'NotDelegated');
    c.setRecord(
      recordSet('dns', 'sneak2', {
        zoneRef: { name: 'example-com' },
        name: 'www.sub',
        type: 'A',
        records: ['192.0.2.1'],
      }),
    );
    const r = c.recordResolution('dns/sneak2');
    assert.ok(r && !r.resolved && r.reason === 'OutOfZone');
    assert.match(r.message, /zone cut sub\.example\.com\./);
  });

  test('a record set by zoneRef meets a child zone that comes and goes, and zones without children', () => {
    const c = catalogWith();
    c.setZone(zone('dns', 'other', 'other.example', {}, 5));
    const ref = (name: string, zoneName: string, type: 'A' | 'DS' = 'A') =>
      recordSet('dns', name, {
        zoneRef: { name: zoneName },
        name: name === 'apex' ? '@' : 'www.sub',
        type,
        records: [type === 'DS' ? '1 13 2 abcd' : '192.0.2.1'],
      });
    c.setRecord(ref('deep', 'example-com'));
    c.setRecord(ref('apex', 'other'));
    c.setRecord(
      recordSet('dns', 'in-other', {
        zoneRef: { name: 'other' },
        name: 'a.b',
        type: 'A',
        records: ['192.0.2.1'],
      }),
    );
    assert.deepEqual(c.recordResolution('dns/deep'), {
      resolved: true,
      zone: 'dns/example-com',
      fqdn: 'www.sub.example.com.',
    });
    c.setZone(zone('dns', 'sub', 'sub.example.com', {}, 6));
    const cut = c.recordResolution('dns/deep');
    assert.ok(cut && !cut.resolved && cut.reason === 'OutOfZone');
    assert.match(cut.message, /zone cut sub\.example\.com\./);
    // Inside the child and in a zone without children, resolved as before.
    c.setRecord(
      recordSet('dns', 'in-sub', {
        zoneRef: { name: 'sub' },
        name: 'www',
        type: 'A',
        records: ['192.0.2.1'],
      }),
    );
    assert.equal((c.recordResolution('dns/in-sub') as { zone: string }).zone, 'dns/sub');
    assert.equal((c.recordResolution('dns/apex') as { fqdn: string }).fqdn, 'other.example.');
    assert.equal((c.recordResolution('dns/in-other') as { fqdn: string }).fqdn, 'a.b.other.example.');
    // A grandchild below the child: the child's record sets below it are cut off too.
    c.setZone(zone('dns', 'deeper', 'x.sub.example.com', {}, 7));
    c.setRecord(
      recordSet('dns', 'below', { zoneRef: { name: 'sub' }, name: 'y.x', type: 'A', records: ['192.0.2.1'] }),
    );
    assert.equal((c.recordResolution('dns/below') as { reason: string }).reason, 'OutOfZone');
    c.deleteZone('dns/deeper');
    assert.equal((c.recordResolution('dns/below') as { zone: string }).zone, 'dns/sub');
    c.deleteZone('dns/sub');
    assert.deepEqual(c.recordResolution('dns/deep'), {
      resolved: true,
      zone: 'dns/example-com',
      fqdn: 'www.sub.example.com.',
    });
  });

  test('DS at a child zone apex belongs to the parent side (RFC 4035 §2.4)', () => {
    const c = catalogWith();
    c.setZone(zone('dns', 'sub', 'sub.example.com', {}, 5));
    c.setRecord(recordSet('dns', 'ds', { name: 'sub.example.com.', type: 'DS', records: ['1 13 2 abcd'] }));
    assert.equal((c.recordResolution('dns/ds') as { zone: string }).zone, 'dns/example-com');
    c.setRecord(
      recordSet('dns', 'ds2', {
        zoneRef: { name: 'example-com' },
        name: 'sub',
        type: 'DS',
        records: ['1 13 2 abcd'],
      }),
    );
    assert.ok(c.recordResolution('dns/ds2')?.resolved);
  });

  test('deleting a record removes it from its zone and reports the zone', () => {
    const c = catalogWith();
    c.setRecord(
      recordSet('dns', 'www', {
        zoneRef: { name: 'example-com' },
        name: 'www',
        type: 'A',
        records: ['192.0.2.1'],
      }),
    );
    const affected = c.deleteRecord('dns/www');
    assert.ok(affected.zones.has('dns/example-com'));
    assert.equal(c.recordsOf('dns/example-com').length, 0);
  });

  test('A/AAAA in a child zone also touches the parent (glue)', () => {
    const c = catalogWith();
    c.setZone(zone('dns', 'internal', 'internal.example.com', {}, 5));
    const affected = c.setRecord(
      recordSet('dns', 'ns', { name: 'ns1.internal.example.com.', type: 'A', records: ['192.0.2.1'] }),
    );
    assert.ok(affected.zones.has('dns/internal'));
    assert.ok(affected.zones.has('dns/example-com'));
  });

  test('an escaped dot does not reach below a delegated name: one label under the apex is not under apps', () => {
    const c = catalogWith(); // team-a is delegated api and *.apps (A, CNAME)
    const attempts = [
      recordSet('team-a', 'ref-escaped', {
        zoneRef: { name: 'example-com', namespace: 'dns' },
        name: 'evil\\.apps',
        type: 'A',
        records: ['192.0.2.66'],
      }),
      recordSet('team-a', 'ref-decimal', {
        zoneRef: { name: 'example-com', namespace: 'dns' },
        name: 'www\\046apps',
        type: 'A',
        records: ['192.0.2.66'],
      }),
      recordSet('team-a', 'abs-escaped', {
        name: 'evil\\.apps.example.com.',
        type: 'A',
        records: ['192.0.2.66'],
      }),
      recordSet('team-a', 'abs-decimal', {
        name: 'www\\046apps.example.com.',
        type: 'A',
        records: ['192.0.2.66'],
      }),
    ];
    for (const rs of attempts) {
      c.setRecord(rs);
      const r = c.recordResolution(`team-a/${rs.metadata.name}`);
      assert.ok(r && !r.resolved && r.reason === 'NotDelegated', `${rs.metadata.name}: ${JSON.stringify(r)}`);
      assert.match(r.message, /does not delegate (evil|www)\\\.apps A to namespace team-a/);
    }
    c.setRecord(
      recordSet('team-a', 'ok', { name: 'www.apps.example.com.', type: 'A', records: ['192.0.2.1'] }),
    );
    assert.ok(c.recordResolution('team-a/ok')?.resolved);
  });
});

describe('a newer zone above an older zone of another namespace (ZoneShadowed)', () => {
  /** dns/a-b serves a.b.example.net with www; every test adds zones after it. */
  function served(): Catalog {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('dns', 'a-b', 'a.b.example.net', {}, 0));
    c.setRecord(
      recordSet('dns', 'www', { zoneRef: { name: 'a-b' }, name: 'www', type: 'A', records: ['192.0.2.10'] }),
    );
    return c;
  }
  const wildcard = recordSet('team-c', 'star-a', {
    zoneRef: { name: 'b' },
    name: '*.a',
    type: 'A',
    records: ['203.0.113.66'],
  });
  const nsAtChild = recordSet('team-c', 'ns-a', {
    zoneRef: { name: 'b' },
    name: 'a',
    type: 'NS',
    records: ['ns.attacker.example.'],
  });

  test('the newer parent is refused, naming the older zone, and the older zone keeps serving', () => {
    const c = served();
    const affected = c.setZone(zone('team-c', 'b', 'b.example.net', {}, 10));
    c.setRecord(wildcard);
    c.setRecord(nsAtChild);
    const p = c.zoneVerdict('team-c/b');
    assert.ok(p && !p.accepted && p.reason === 'ZoneShadowed', JSON.stringify(p));
    assert.match(p.message, /DNSZone dns\/a-b/);
    assert.match(p.message, /names: \[a\], types: \[NS\]/);
    assert.ok(affected.zones.has('team-c/b'));
    const child = c.zoneVerdict('dns/a-b');
    assert.ok(child?.accepted);
    assert.equal(child.parent, undefined);
    assert.deepEqual(c.recordResolution('dns/www'), {
      resolved: true,
      zone: 'dns/a-b',
      fqdn: 'www.a.b.example.net.',
    });
    for (const key of ['team-c/star-a', 'team-c/ns-a']) {
      const r = c.recordResolution(key);
      assert.ok(r && !r.resolved && r.reason === 'ZoneNotFound', key);
      assert.match(r.message, /DNSZone team-c\/b \(spec\.zoneRef\) is refused \(ZoneShadowed\)/);
    }
    assert.deepEqual(c.acceptedZones(), ['dns/a-b']);
  });

  test('a delegation to the older zone admits the parent; withdrawing it refuses the parent again', () => {
    const c = served();
    const delegating = zone(
      'team-c',
      'b',
      'b.example.net',
      { delegations: [{ namespaces: ['dns'], names: ['a'], types: ['NS'] }] },
      10,
    );
    c.setZone(delegating);
    c.setRecord(wildcard);
    assert.ok(c.zoneVerdict('team-c/b')?.accepted);
    const child = c.zoneVerdict('dns/a-b');
    assert.ok(child?.accepted);
    assert.equal(child.parent, 'team-c/b', 'the parent publishes the NS and glue of the child');
    assert.deepEqual(
      c.childZonesOf('team-c/b').map((z) => z.metadata.name),
      ['a-b'],
    );
    // The wildcard *.a.b.example.net is at or below the child's cut: not the parent's.
    assert.equal((c.recordResolution('team-c/star-a') as { reason: string }).reason, 'OutOfZone');
    assert.equal((c.recordResolution('dns/www') as { zone: string }).zone, 'dns/a-b');

    const withdrawn = c.setZone({ ...delegating, spec: { ...delegating.spec, delegations: [] } });
    const p = c.zoneVerdict('team-c/b');
    assert.ok(p && !p.accepted && p.reason === 'ZoneShadowed');
    assert.ok(withdrawn.zones.has('team-c/b'));
    assert.ok(withdrawn.zones.has('dns/a-b'), 'the child loses its parent');
    assert.equal((c.zoneVerdict('dns/a-b') as { parent?: string }).parent, undefined);
    assert.ok(withdrawn.records.has('team-c/star-a'), 'records naming the parent are re-resolved');
  });

  test('a delegation for another namespace, name or type does not admit the parent', () => {
    for (const d of [
      { namespaces: ['other'], names: ['a'], types: ['NS' as const] },
      { namespaces: ['dns'], names: ['x'], types: ['NS' as const] },
      { namespaces: ['dns'], names: ['a'], types: ['A' as const] },
      { namespaces: ['dns'], names: ['*.a'], types: ['NS' as const] },
    ]) {
      const c = served();
      c.setZone(zone('team-c', 'b', 'b.example.net', { delegations: [d] }, 10));
      assert.equal(
        (c.zoneVerdict('team-c/b') as { reason?: string }).reason,
        'ZoneShadowed',
        JSON.stringify(d),
      );
    }
  });

  test('a newer parent in the same namespace needs no delegation', () => {
    const c = served();
    c.setZone(zone('dns', 'b', 'b.example.net', {}, 10));
    assert.ok(c.zoneVerdict('dns/b')?.accepted);
    assert.equal((c.zoneVerdict('dns/a-b') as { parent?: string }).parent, 'dns/b');
  });

  test('an older parent still decides: a newer child needs its delegation (NotDelegated)', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('team-c', 'b', 'b.example.net', {}, 0));
    c.setZone(zone('dns', 'a-b', 'a.b.example.net', {}, 10));
    assert.ok(c.zoneVerdict('team-c/b')?.accepted);
    assert.equal((c.zoneVerdict('dns/a-b') as { reason?: string }).reason, 'NotDelegated');
  });

  test('equal creation times: the parent counts as older, whatever the namespace names', () => {
    for (const [parentNs, childNs] of [
      ['zz', 'aa'],
      ['aa', 'zz'],
    ] as const) {
      // Seen in one load (neither is served yet): the parent is judged first.
      const c = new Catalog();
      c.load(
        [zoneClass()],
        [zone(childNs, 'child', 'a.b.example.net', {}, 5), zone(parentNs, 'parent', 'b.example.net', {}, 5)],
        [],
      );
      assert.ok(c.zoneVerdict(`${parentNs}/parent`)?.accepted, `${parentNs} above ${childNs}`);
      assert.equal((c.zoneVerdict(`${childNs}/child`) as { reason?: string }).reason, 'NotDelegated');
      // A child that is already served keeps serving: the parent then needs its delegation.
      const d = new Catalog();
      d.setClass(zoneClass());
      d.setZone(zone(childNs, 'child', 'a.b.example.net', {}, 5));
      d.setZone(zone(parentNs, 'parent', 'b.example.net', {}, 5));
      assert.ok(d.zoneVerdict(`${childNs}/child`)?.accepted);
      assert.equal((d.zoneVerdict(`${parentNs}/parent`) as { reason?: string }).reason, 'ZoneShadowed');
    }
  });

  test('deleting the older zone admits the parent; a refused older zone shadows nothing', () => {
    const c = served();
    c.setZone(zone('team-c', 'b', 'b.example.net', {}, 10));
    assert.equal((c.zoneVerdict('team-c/b') as { reason?: string }).reason, 'ZoneShadowed');
    const affected = c.deleteZone('dns/a-b');
    assert.ok(affected.zones.has('team-c/b'));
    assert.ok(c.zoneVerdict('team-c/b')?.accepted);

    const d = new Catalog();
    d.setClass(zoneClass());
    d.setZone(zone('dns', 'a-b', 'a.b.example.net', { className: 'missing' }, 0));
    d.setZone(zone('team-c', 'b', 'b.example.net', {}, 10));
    assert.ok(d.zoneVerdict('team-c/b')?.accepted, 'a zone without its class serves nothing to protect');
  });

  test('several older zones below: every one of another namespace needs a delegation; the oldest is named', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('team-y', 'y', 'y.example.net', {}, 1));
    c.setZone(zone('team-z', 'z', 'deep.z.example.net', {}, 2));
    c.setZone(zone('team-x', 'x', 'x.example.net', {}, 3)); // same namespace as the parent: fine
    const parent = (delegations: DNSZoneSpec['delegations']) =>
      zone('team-x', 'parent', 'example.net', { delegations }, 10);
    c.setZone(parent([]));
    let v = c.zoneVerdict('team-x/parent');
    assert.ok(v && !v.accepted && v.reason === 'ZoneShadowed');
    assert.match(v.message, /DNSZone team-y\/y/);
    assert.match(v.message, /1 more/);
    c.setZone(parent([{ namespaces: ['team-y'], names: ['y'], types: ['NS'] }]));
    v = c.zoneVerdict('team-x/parent');
    assert.ok(v && !v.accepted && v.reason === 'ZoneShadowed');
    assert.match(v.message, /DNSZone team-z\/z/);
    assert.match(v.message, /names: \[deep\.z\], types: \[NS\]/);
    c.setZone(
      parent([
        { namespaces: ['team-y'], names: ['y'], types: ['NS'] },
        { namespaces: ['team-z'], names: ['*.z'], types: ['NS'] },
      ]),
    );
    assert.ok(c.zoneVerdict('team-x/parent')?.accepted);
    assert.deepEqual(
      c
        .childZonesOf('team-x/parent')
        .map((z) => z.metadata.name)
        .sort(),
      ['x', 'y', 'z'],
    );
  });

  test('chains: a newer zone between a grandparent and an older child must delegate to the child', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(
      zone(
        'dns',
        'root',
        'example.net',
        {
          delegations: [
            { namespaces: ['team-c'], names: ['b'], types: ['NS'] },
            { namespaces: ['team-y'], names: ['a.b'], types: ['NS'] },
          ],
        },
        0,
      ),
    );
    c.setZone(zone('team-y', 'a-b', 'a.b.example.net', {}, 1));
    assert.equal((c.zoneVerdict('team-y/a-b') as { parent?: string }).parent, 'dns/root');
    // team-c was delegated b by the grandparent, but a.b already belongs to team-y.
    c.setZone(zone('team-c', 'b', 'b.example.net', {}, 2));
    assert.equal((c.zoneVerdict('team-c/b') as { reason?: string }).reason, 'ZoneShadowed');
    assert.equal((c.zoneVerdict('team-y/a-b') as { parent?: string }).parent, 'dns/root');
    const affected = c.setZone(
      zone(
        'team-c',
        'b',
        'b.example.net',
        { delegations: [{ namespaces: ['team-y'], names: ['a'], types: ['NS'] }] },
        2,
      ),
    );
    assert.ok(c.zoneVerdict('team-c/b')?.accepted);
    assert.equal((c.zoneVerdict('team-y/a-b') as { parent?: string }).parent, 'team-c/b');
    for (const key of ['dns/root', 'team-c/b', 'team-y/a-b']) assert.ok(affected.zones.has(key), key);
    assert.deepEqual(
      c.childZonesOf('dns/root').map((z) => z.metadata.name),
      ['b'],
    );
  });

  test('a newer grandparent is checked against every older zone below it, not only the nearest', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('team-y', 'a-b', 'a.b.example.net', {}, 0));
    c.setZone(
      zone(
        'team-c',
        'b',
        'b.example.net',
        { delegations: [{ namespaces: ['team-y'], names: ['a'], types: ['NS'] }] },
        1,
      ),
    );
    c.setZone(
      zone(
        'dns',
        'root',
        'example.net',
        { delegations: [{ namespaces: ['team-c'], names: ['b'], types: ['NS'] }] },
        2,
      ),
    );
    const v = c.zoneVerdict('dns/root');
    assert.ok(v && !v.accepted && v.reason === 'ZoneShadowed');
    assert.match(v.message, /team-y\/a-b/);
    // Deleting the zone in between must not hand a.b to the grandparent either way.
    c.deleteZone('team-c/b');
    assert.equal((c.zoneVerdict('dns/root') as { reason?: string }).reason, 'ZoneShadowed');
    assert.ok(c.zoneVerdict('team-y/a-b')?.accepted);
  });

  test('load() gives the same verdicts as one change at a time', () => {
    const c = new Catalog();
    c.load(
      [zoneClass()],
      [zone('team-c', 'b', 'b.example.net', {}, 10), zone('dns', 'a-b', 'a.b.example.net', {}, 0)],
      [wildcard],
    );
    assert.equal((c.zoneVerdict('team-c/b') as { reason?: string }).reason, 'ZoneShadowed');
    assert.ok(c.zoneVerdict('dns/a-b')?.accepted);
  });
});

describe('removing a delegation', () => {
  test('re-resolves the record sets it admitted', () => {
    const c = catalogWith();
    c.setRecord(recordSet('team-a', 'api', { name: 'api.example.com.', type: 'A', records: ['192.0.2.1'] }));
    assert.ok(c.recordResolution('team-a/api')?.resolved);
    const affected = c.setZone(zone('dns', 'example-com', 'example.com', {}));
    assert.ok(affected.records.has('team-a/api'));
    assert.deepEqual(affected.recordsByZone.get('dns/example-com'), new Set(['team-a/api']));
    assert.equal((c.recordResolution('team-a/api') as { reason?: string }).reason, 'NotDelegated');
    assert.equal(c.recordsOf('dns/example-com').length, 0);
  });
});

describe('public suffixes (PublicSuffix)', () => {
  test('a zone for a public suffix is refused, ICANN or private section; zones below it are not', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('team-c', 'co-uk', 'co.uk', {}, 0));
    c.setZone(zone('team-c', 'github-io', 'GitHub.IO.', {}, 1));
    c.setZone(zone('team-c', 'in-addr', 'in-addr.arpa', {}, 2));
    c.setZone(zone('team-c', 'shop', 'shop.co.uk', {}, 3));
    for (const [key, section] of [
      ['team-c/co-uk', 'ICANN'],
      ['team-c/github-io', 'private'],
      ['team-c/in-addr', 'ICANN'],
    ] as const) {
      const v = c.zoneVerdict(key);
      assert.ok(v && !v.accepted && v.reason === 'PublicSuffix', `${key}: ${JSON.stringify(v)}`);
      assert.match(v.message, new RegExp(`${section} section of the Public Suffix List`));
      assert.match(v.message, /allowPublicSuffixZones: true on DNSZoneClass builtin/);
    }
    assert.ok(c.zoneVerdict('team-c/shop')?.accepted);
    assert.equal((c.zoneVerdict('team-c/shop') as { parent?: string }).parent, undefined);
  });

  test('a class that allows public suffixes serves them; turning it off refuses them again', () => {
    const c = new Catalog();
    c.setClass(zoneClass('registry', undefined, { allowPublicSuffixZones: true }));
    c.setZone(zone('registry', 'co-uk', 'co.uk', { className: 'registry' }, 0));
    assert.ok(c.zoneVerdict('registry/co-uk')?.accepted);
    const affected = c.setClass(zoneClass('registry', undefined, { allowPublicSuffixZones: false }));
    assert.ok(affected.zones.has('registry/co-uk'));
    assert.equal((c.zoneVerdict('registry/co-uk') as { reason?: string }).reason, 'PublicSuffix');
  });

  test('a refused public suffix zone shadows nothing and adopts nothing', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('team-c', 'co-uk', 'co.uk', {}, 0));
    c.setZone(zone('shop', 'shop', 'shop.co.uk', {}, 5));
    c.setRecord(recordSet('team-c', 'www', { name: 'www.co.uk.', type: 'A', records: ['203.0.113.66'] }));
    assert.ok(c.zoneVerdict('shop/shop')?.accepted);
    assert.equal((c.recordResolution('team-c/www') as { reason?: string }).reason, 'ZoneNotFound');
  });
});

describe('wildcard NS (RFC 4592 §4.2)', () => {
  test('an NS record set at a wildcard name is Invalid however the star is written', () => {
    const c = catalogWith();
    const cases = [
      recordSet('dns', 'plain', {
        zoneRef: { name: 'example-com' },
        name: '*',
        type: 'NS',
        records: ['ns.example.net.'],
      }),
      recordSet('dns', 'escaped', {
        zoneRef: { name: 'example-com' },
        name: '\\*.apps',
        type: 'NS',
        records: ['ns.example.net.'],
      }),
      recordSet('dns', 'decimal', { name: '\\042.example.com.', type: 'NS', records: ['ns.example.net.'] }),
    ];
    for (const rs of cases) {
      c.setRecord(rs);
      const r = c.recordResolution(`dns/${rs.metadata.name}`);
      assert.ok(r && !r.resolved && r.reason === 'Invalid', `${rs.metadata.name}: ${JSON.stringify(r)}`);
      assert.match(r.message, /RFC 4592 §4\.2/);
    }
    // Other types at a wildcard, and NS at a name that merely contains a star, are fine.
    c.setRecord(
      recordSet('dns', 'a', {
        zoneRef: { name: 'example-com' },
        name: '*',
        type: 'A',
        records: ['192.0.2.1'],
      }),
    );
    c.setRecord(
      recordSet('dns', 'ns', {
        zoneRef: { name: 'example-com' },
        name: 'a*',
        type: 'NS',
        records: ['ns.example.net.'],
      }),
    );
    assert.ok(c.recordResolution('dns/a')?.resolved);
    assert.ok(c.recordResolution('dns/ns')?.resolved);
  });
});

/** The Accepted=True condition the controller writes on a served zone (what a restart reads back). */
function servedStatus(since = '2026-01-01T00:00:00.000Z'): NonNullable<DNSZone['status']> {
  return {
    observedGeneration: 1,
    conditions: [
      {
        type: 'Accepted',
        status: 'True',
        reason: 'Accepted',
        message: 'serving',
        observedGeneration: 1,
        lastTransitionTime: since,
      },
    ],
  };
}

function reasonOf(c: Catalog, key: string): string | undefined {
  const v = c.zoneVerdict(key);
  return v === undefined ? undefined : v.accepted ? 'Accepted' : v.reason;
}

describe('incumbency: a served zone is judged before zones that are not served', () => {
  const wwwOf = (namespace: string, address: string) =>
    recordSet(namespace, 'www', { zoneRef: { name: 'victim' }, name: 'www', type: 'A', records: [address] });

  test('an older zone that was refused cannot later push out the newer zone served meanwhile (same domain)', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('evil', 'victim', 'victim.test', { className: 'not-yet' }, 0));
    assert.equal(reasonOf(c, 'evil/victim'), 'ClassNotFound');
    c.setZone(zone('team-a', 'victim', 'victim.test', {}, 10));
    c.setRecord(wwwOf('team-a', '192.0.2.1'));
    c.setRecord(wwwOf('evil', '203.0.113.66'));
    assert.ok(c.zoneVerdict('team-a/victim')?.accepted);

    // evil changes only its class: its age does not count against the zone that is served.
    const affected = c.setZone(zone('evil', 'victim', 'victim.test', {}, 0));
    assert.ok(c.zoneVerdict('team-a/victim')?.accepted, JSON.stringify(c.zoneVerdict('team-a/victim')));
    const v = c.zoneVerdict('evil/victim');
    assert.ok(v && !v.accepted && v.reason === 'Conflict', JSON.stringify(v));
    assert.match(v.message, /already served by DNSZone team-a\/victim/);
    assert.ok(affected.zones.has('evil/victim'));
    assert.equal((c.recordResolution('team-a/www') as { zone?: string }).zone, 'team-a/victim');
    assert.equal((c.recordResolution('evil/www') as { reason?: string }).reason, 'ZoneNotFound');
    assert.deepEqual(c.acceptedZones(), ['team-a/victim']);
  });

  test('an incumbent that becomes refusable loses its incumbency', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setClass(zoneClass('team-a-class'));
    c.setZone(zone('team-a', 'victim', 'victim.test', { className: 'team-a-class' }, 10));
    c.setZone(zone('other', 'victim', 'victim.test', {}, 20));
    assert.ok(c.zoneVerdict('team-a/victim')?.accepted);
    assert.equal(reasonOf(c, 'other/victim'), 'Conflict');
    c.deleteClass('team-a-class');
    assert.equal(reasonOf(c, 'team-a/victim'), 'ClassNotFound');
    assert.ok(c.zoneVerdict('other/victim')?.accepted, 'the other zone takes the free domain');
    // The class comes back: the zone served meanwhile keeps the domain.
    c.setClass(zoneClass('team-a-class'));
    assert.ok(c.zoneVerdict('other/victim')?.accepted);
    assert.equal(reasonOf(c, 'team-a/victim'), 'Conflict');
  });

  test('an older zone that was refused cannot later take over a zone served below it (parent)', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('team-b', 'b', 'b.example.test', {}, 0));
    c.setZone(zone('evil', 'parent', 'example.test', {}, 10));
    c.setRecord(
      recordSet('evil', 'star', { zoneRef: { name: 'parent' }, name: '*', type: 'A', records: ['6.6.6.6'] }),
    );
    assert.equal(reasonOf(c, 'evil/parent'), 'ZoneShadowed');
    c.setZone(zone('team-a', 'a', 'a.example.test', {}, 20));
    c.setRecord(
      recordSet('team-a', 'www', { zoneRef: { name: 'a' }, name: 'www', type: 'A', records: ['192.0.2.1'] }),
    );
    assert.ok(c.zoneVerdict('team-a/a')?.accepted);

    // evil adds exactly the delegation its message asked for; team-a's zone is served now, so it counts.
    const affected = c.setZone(
      zone(
        'evil',
        'parent',
        'example.test',
        { delegations: [{ namespaces: ['team-b'], names: ['b'], types: ['NS'] }] },
        10,
      ),
    );
    const v = c.zoneVerdict('evil/parent');
    assert.ok(v && !v.accepted && v.reason === 'ZoneShadowed', JSON.stringify(v));
    assert.match(v.message, /DNSZone team-a\/a of namespace team-a/);
    assert.match(v.message, /names: \[a\], types: \[NS\]/);
    const a = c.zoneVerdict('team-a/a');
    assert.ok(a?.accepted, JSON.stringify(a));
    assert.equal(a.parent, undefined);
    assert.ok(affected.zones.has('evil/parent'));
    assert.equal((c.recordResolution('team-a/www') as { zone?: string }).zone, 'team-a/a');
    // Delegating to both admits the parent above both.
    c.setZone(
      zone(
        'evil',
        'parent',
        'example.test',
        {
          delegations: [
            { namespaces: ['team-b'], names: ['b'], types: ['NS'] },
            { namespaces: ['team-a'], names: ['a'], types: ['NS'] },
          ],
        },
        10,
      ),
    );
    assert.ok(c.zoneVerdict('evil/parent')?.accepted);
    assert.equal((c.zoneVerdict('team-a/a') as { parent?: string }).parent, 'evil/parent');
  });

  test('a refused older zone below a served zone needs its delegation (NotDelegated)', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('evil', 'child', 'c.parent.test', { className: 'not-yet' }, 0));
    c.setZone(zone('team-a', 'parent', 'parent.test', {}, 10));
    assert.ok(c.zoneVerdict('team-a/parent')?.accepted);
    c.setZone(zone('evil', 'child', 'c.parent.test', {}, 0));
    assert.ok(c.zoneVerdict('team-a/parent')?.accepted);
    assert.equal(reasonOf(c, 'evil/child'), 'NotDelegated');
  });

  test('after a restart, the Accepted=True condition in the status keeps a zone served', () => {
    const served = { ...zone('team-a', 'victim', 'victim.test', {}, 10), status: servedStatus() };
    const older = zone('evil', 'victim', 'victim.test', {}, 0);
    for (const zones of [
      [older, served],
      [served, older],
    ]) {
      const c = new Catalog();
      c.load([zoneClass()], zones, []);
      assert.ok(c.zoneVerdict('team-a/victim')?.accepted);
      assert.equal(reasonOf(c, 'evil/victim'), 'Conflict');
    }
    // Without the condition (nothing served before), the older zone wins as always.
    const c = new Catalog();
    c.load([zoneClass()], [older, zone('team-a', 'victim', 'victim.test', {}, 10)], []);
    assert.ok(c.zoneVerdict('evil/victim')?.accepted);
  });

  test("the catalog's own verdict outranks a stale Accepted=True condition", () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setClass(zoneClass('team-a-class'));
    // team-a's object still carries the Accepted=True it had when it was served.
    const teamA = {
      ...zone('team-a', 'victim', 'victim.test', { className: 'team-a-class' }, 0),
      status: servedStatus(),
    };
    c.setZone(teamA);
    c.deleteClass('team-a-class');
    c.setZone(zone('other', 'victim', 'victim.test', {}, 20));
    assert.ok(c.zoneVerdict('other/victim')?.accepted);
    c.setClass(zoneClass('team-a-class'));
    c.setZone({ ...teamA, metadata: { ...teamA.metadata, generation: 2 } });
    assert.ok(c.zoneVerdict('other/victim')?.accepted, 'team-a lost the domain while it was refused');
    assert.equal(reasonOf(c, 'team-a/victim'), 'Conflict');
  });
});

describe('served zones keep the order in which they became served', () => {
  /**
   * dns serves example.test and delegates b to team-b, which serves b.example.test and delegates a to
   * team-y. team-y's a.b.example.test is older than both but was refused (no class) until now.
   */
  function chain(): Catalog {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('team-y', 'a-b', 'a.b.example.test', { className: 'later' }, 0));
    c.setZone(
      zone(
        'dns',
        'top',
        'example.test',
        { delegations: [{ namespaces: ['team-b'], names: ['b'], types: ['NS'] }] },
        1,
      ),
    );
    c.setZone(
      zone(
        'team-b',
        'b',
        'b.example.test',
        { delegations: [{ namespaces: ['team-y'], names: ['a'], types: ['NS'] }] },
        2,
      ),
    );
    c.setClass(zoneClass('later'));
    for (const key of ['dns/top', 'team-b/b', 'team-y/a-b']) assert.ok(c.zoneVerdict(key)?.accepted, key);
    return c;
  }

  test('a zone served later is judged after the zones served before it, whatever its age', () => {
    const c = chain();
    // Any later change judges the zones again: the older zone served last must not shadow the top zone.
    c.setClass(zoneClass('unrelated'));
    for (const key of ['dns/top', 'team-b/b', 'team-y/a-b']) {
      assert.ok(c.zoneVerdict(key)?.accepted, `${key}: ${JSON.stringify(c.zoneVerdict(key))}`);
    }
    assert.equal((c.zoneVerdict('team-y/a-b') as { parent?: string }).parent, 'team-b/b');
    // The zone that consented can take its consent back: team-b withdraws, team-y's zone goes.
    c.setZone(zone('team-b', 'b', 'b.example.test', {}, 2));
    assert.ok(c.zoneVerdict('team-b/b')?.accepted);
    assert.equal(reasonOf(c, 'team-y/a-b'), 'NotDelegated');
  });

  test('after a restart, the time each zone became Accepted gives the same order', () => {
    const c = chain();
    const since = {
      'dns/top': '2026-01-02T00:00:00Z',
      'team-b/b': '2026-01-02T00:00:00Z',
      'team-y/a-b': '2026-01-03T00:00:00Z',
    };
    const zones = [...c.zones.entries()].map(([key, z]) => ({
      ...z,
      status: servedStatus(since[key as keyof typeof since]),
    }));
    const restarted = new Catalog();
    restarted.load([...c.classes.values()], zones.reverse(), []);
    for (const key of ['dns/top', 'team-b/b', 'team-y/a-b']) {
      assert.ok(
        restarted.zoneVerdict(key)?.accepted,
        `${key}: ${JSON.stringify(restarted.zoneVerdict(key))}`,
      );
    }
  });

  test('one change settles completely: a zone below a zone accepted later in the same pass is judged again', () => {
    const c = new Catalog();
    c.load(
      [zoneClass()],
      [
        zone(
          'dns',
          'top',
          'example.test',
          { delegations: [{ namespaces: ['team-b'], names: ['b'], types: ['NS'] }] },
          0,
        ),
        zone('team-y', 'a-b', 'a.b.example.test', {}, 1),
        zone(
          'team-b',
          'b',
          'b.example.test',
          { delegations: [{ namespaces: ['team-y'], names: ['a'], types: ['NS'] }] },
          2,
        ),
      ],
      [],
    );
    const verdicts = () => ['dns/top', 'team-b/b', 'team-y/a-b'].map((k) => reasonOf(c, k));
    assert.deepEqual(verdicts(), ['Accepted', 'Accepted', 'Accepted']);
    assert.equal((c.zoneVerdict('team-y/a-b') as { parent?: string }).parent, 'team-b/b');
    c.setClass(zoneClass('unrelated'));
    assert.deepEqual(verdicts(), ['Accepted', 'Accepted', 'Accepted']);
  });
});

describe('a zone refused for want of a delegation', () => {
  test('is served as soon as a zone between it and the refusing zone delegates to it', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(
      zone(
        'dns',
        'top',
        'example.test',
        { delegations: [{ namespaces: ['team-b'], names: ['b'], types: ['NS'] }] },
        0,
      ),
    );
    c.setZone(zone('team-y', 'a-b', 'a.b.example.test', {}, 1));
    assert.equal(reasonOf(c, 'team-y/a-b'), 'NotDelegated');
    const affected = c.setZone(
      zone(
        'team-b',
        'b',
        'b.example.test',
        { delegations: [{ namespaces: ['team-y'], names: ['a'], types: ['NS'] }] },
        2,
      ),
    );
    assert.ok(c.zoneVerdict('team-b/b')?.accepted);
    const v = c.zoneVerdict('team-y/a-b');
    assert.ok(v?.accepted, JSON.stringify(v));
    assert.equal(v.parent, 'team-b/b');
    for (const key of ['team-b/b', 'team-y/a-b', 'dns/top']) assert.ok(affected.zones.has(key), key);
  });
});

describe('equal creation times for one domain', () => {
  test('both zones are refused (Conflict, created at the same time), never decided by names', () => {
    for (const [x, y] of [
      ['evil', 'team-a'],
      ['team-a', 'evil'],
      ['zzz', 'aaa'],
    ] as const) {
      const c = new Catalog();
      c.load(
        [zoneClass()],
        [zone(x, 'victim', 'victim.test', {}, 5), zone(y, 'victim', 'victim.test', {}, 5)],
        [recordSet(x, 'www', { name: 'www.victim.test.', type: 'A', records: ['203.0.113.66'] })],
      );
      for (const key of [`${x}/victim`, `${y}/victim`]) {
        const v = c.zoneVerdict(key);
        assert.ok(v && !v.accepted && v.reason === 'Conflict', `${key}: ${JSON.stringify(v)}`);
        assert.match(v.message, /created at the same time/);
        assert.match(v.message, new RegExp(`DNSZone ${key === `${x}/victim` ? y : x}/victim`));
        assert.match(v.message, /delete one/);
      }
      assert.deepEqual(c.acceptedZones(), []);
      assert.equal((c.recordResolution(`${x}/www`) as { reason?: string }).reason, 'ZoneNotFound');
      // A newer zone does not slip in between.
      c.setZone(zone('late', 'victim', 'victim.test', {}, 9));
      assert.equal(reasonOf(c, 'late/victim'), 'Conflict');
      // Deleting one of the two serves the other.
      const affected = c.deleteZone(`${x}/victim`);
      assert.ok(affected.zones.has(`${y}/victim`));
      assert.ok(c.zoneVerdict(`${y}/victim`)?.accepted);
      assert.equal(reasonOf(c, 'late/victim'), 'Conflict');
    }
  });

  test('a tie partner that is refused for another reason does not block the other', () => {
    const c = new Catalog();
    c.load(
      [zoneClass()],
      [
        zone('evil', 'victim', 'victim.test', { className: 'missing' }, 5),
        zone('team-a', 'victim', 'victim.test', {}, 5),
      ],
      [],
    );
    assert.ok(c.zoneVerdict('team-a/victim')?.accepted);
    assert.equal(reasonOf(c, 'evil/victim'), 'ClassNotFound');
  });
});

describe('no delegation or alias above a child zone', () => {
  /** team-a serves a.b.example.test; evil's newer example.test delegates a.b to team-a (Accepted). */
  function withChild(): Catalog {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('team-a', 'a-b', 'a.b.example.test', {}, 0));
    c.setZone(
      zone(
        'evil',
        'parent',
        'example.test',
        { delegations: [{ namespaces: ['team-a'], names: ['a.b'], types: ['NS'] }] },
        10,
      ),
    );
    assert.ok(c.zoneVerdict('evil/parent')?.accepted);
    return c;
  }

  test('NS or CNAME at an ancestor of a child zone is refused, naming the child; other types are fine', () => {
    const c = withChild();
    const ns = recordSet('evil', 'ns-b', {
      zoneRef: { name: 'parent' },
      name: 'b',
      type: 'NS',
      records: ['ns.evil.invalid.'],
    });
    const cname = recordSet('evil', 'cname-b', {
      name: 'B.example.test.',
      type: 'CNAME',
      records: ['elsewhere.invalid.'],
    });
    for (const rs of [ns, cname]) {
      c.setRecord(rs);
      const r = c.recordResolution(`evil/${rs.metadata.name}`);
      assert.ok(r && !r.resolved && r.reason === 'Conflict', `${rs.metadata.name}: ${JSON.stringify(r)}`);
      assert.match(r.message, /DNSZone team-a\/a-b/);
      assert.match(r.message, /a\.b\.example\.test\./);
      assert.match(r.message, /RFC 1034/);
      assert.equal(c.recordsOf('evil/parent').length, 0);
    }
    c.setRecord(recordSet('evil', 'txt-b', { name: 'b.example.test.', type: 'TXT', records: ['fine'] }));
    assert.ok(c.recordResolution('evil/txt-b')?.resolved);
    c.setRecord(
      recordSet('evil', 'ns-c', { name: 'c.example.test.', type: 'NS', records: ['ns.evil.invalid.'] }),
    );
    assert.ok(c.recordResolution('evil/ns-c')?.resolved, 'a cut elsewhere hides nothing');

    // The child goes: the record sets are resolved again and accepted; it comes back: refused again.
    let affected = c.deleteZone('team-a/a-b');
    assert.ok(affected.records.has('evil/ns-b'));
    assert.ok(affected.zones.has('evil/parent'));
    assert.ok(c.recordResolution('evil/ns-b')?.resolved);
    assert.ok(c.recordResolution('evil/cname-b')?.resolved);
    affected = c.setZone(zone('team-a', 'a-b', 'a.b.example.test', {}, 20));
    assert.ok(c.zoneVerdict('team-a/a-b')?.accepted);
    assert.ok(affected.records.has('evil/ns-b'));
    // The parent's model is told that these two left it.
    for (const key of ['evil/ns-b', 'evil/cname-b']) {
      assert.ok(affected.recordsByZone.get('evil/parent')?.has(key), key);
    }
    assert.equal((c.recordResolution('evil/ns-b') as { reason?: string }).reason, 'Conflict');
    assert.equal((c.recordResolution('evil/cname-b') as { reason?: string }).reason, 'Conflict');
  });

  test('also in the same namespace, and above a grandchild', () => {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('dns', 'top', 'example.test', {}, 0));
    c.setZone(zone('dns', 'deep', 'x.y.z.example.test', {}, 1));
    for (const name of ['y.z', 'z']) {
      c.setRecord(
        recordSet('dns', `ns-${name}`, {
          zoneRef: { name: 'top' },
          name,
          type: 'NS',
          records: ['ns.elsewhere.invalid.'],
        }),
      );
      const r = c.recordResolution(`dns/ns-${name}`);
      assert.ok(r && !r.resolved && r.reason === 'Conflict', name);
      assert.match(r.message, /DNSZone dns\/deep/);
    }
  });
});

describe('DS at the apex of a child zone of another namespace', () => {
  /** team-a serves a.example.test; evil's newer example.test delegates only NS for a to team-a. */
  function withChild(delegations: DNSZoneSpec['delegations'] = []): Catalog {
    const c = new Catalog();
    c.setClass(zoneClass());
    c.setZone(zone('team-a', 'a', 'a.example.test', {}, 0));
    c.setZone(
      zone(
        'evil',
        'parent',
        'example.test',
        { delegations: [{ namespaces: ['team-a'], names: ['a'], types: ['NS'] }, ...delegations] },
        10,
      ),
    );
    assert.ok(c.zoneVerdict('evil/parent')?.accepted);
    return c;
  }
  const ds = (namespace: string, name: string, spec: Partial<Parameters<typeof recordSet>[2]> = {}) =>
    recordSet(namespace, name, { name: 'a.example.test.', type: 'DS', records: ['1 13 2 abcd'], ...spec });

  test("is published from the child's namespace without a delegation and refused from any other", () => {
    const c = withChild([{ namespaces: ['team-z'], names: ['a'], types: ['DS'] }]);
    c.setRecord(ds('team-a', 'ds'));
    assert.deepEqual(c.recordResolution('team-a/ds'), {
      resolved: true,
      zone: 'evil/parent',
      fqdn: 'a.example.test.',
    });
    for (const rs of [
      ds('evil', 'ds'),
      ds('evil', 'ds-ref', { zoneRef: { name: 'parent' }, name: 'a' }),
      ds('team-z', 'ds'),
    ]) {
      c.setRecord(rs);
      const key = `${rs.metadata.namespace}/${rs.metadata.name}`;
      const r = c.recordResolution(key);
      assert.ok(r && !r.resolved && r.reason === 'NotDelegated', `${key}: ${JSON.stringify(r)}`);
      assert.match(r.message, /DNSZone team-a\/a/);
      assert.match(r.message, /namespace team-a/);
      assert.match(r.message, /RFC 4035 §2\.4/);
    }
    assert.deepEqual(
      c.recordsOf('evil/parent').map((rs) => `${rs.metadata.namespace}/${rs.metadata.name}`),
      ['team-a/ds'],
    );
  });

  test('the parent cannot publish NS at the child apex either', () => {
    const c = withChild([{ namespaces: ['evil'], names: ['*'] }]);
    c.setRecord(
      recordSet('evil', 'ns-ref', {
        zoneRef: { name: 'parent' },
        name: 'a',
        type: 'NS',
        records: ['ns.evil.invalid.'],
      }),
    );
    c.setRecord(
      recordSet('evil', 'ns-abs', { name: 'a.example.test.', type: 'NS', records: ['ns.evil.invalid.'] }),
    );
    assert.equal((c.recordResolution('evil/ns-ref') as { reason?: string }).reason, 'OutOfZone');
    assert.equal((c.recordResolution('evil/ns-abs') as { reason?: string }).reason, 'NotDelegated');
    assert.equal(c.recordsOf('evil/parent').length, 0);
  });

  test('the child zone going away re-resolves the DS record sets', () => {
    const c = withChild();
    c.setRecord(ds('team-a', 'ds'));
    c.setRecord(ds('evil', 'ds'));
    assert.equal((c.recordResolution('evil/ds') as { reason?: string }).reason, 'NotDelegated');
    const affected = c.deleteZone('team-a/a');
    assert.ok(affected.records.has('evil/ds'));
    assert.ok(affected.records.has('team-a/ds'));
    assert.ok(c.recordResolution('evil/ds')?.resolved, 'no child zone: the parent decides its own DS');
    assert.equal((c.recordResolution('team-a/ds') as { reason?: string }).reason, 'NotDelegated');
  });
});

describe('a first look resolves the record sets naming a zone by zoneRef when first read', () => {
  /** Zones: a parent, a child of it, a zone of the same domain created later, another namespace. */
  const zones = () => [
    zone('dns', 'example-com', 'example.com', {
      delegations: [{ namespaces: ['team-a'], names: ['*.apps'], types: ['A'] }],
    }),
    zone('dns', 'sub', 'sub.example.com', {}, 1),
    zone('dns', 'late', 'example.com', {}, 2),
    zone('team-a', 'team', 'team.example'),
    // deep.example.com lies between example.com and this zone: no NS or CNAME there.
    zone('dns', 'inner', 'in.deep.example.com', {}, 1),
  ];
  /** Record sets by zoneRef (to each zone, a missing one, a refused one) and without one, mixed. */
  function recordSets() {
    const names = [
      'www',
      '@',
      'x.sub',
      'sub',
      'a.sub.example.com.',
      'www.example.com.',
      'a.example.org.',
      'y.apps',
      'deep',
    ];
    const refs: ({ name: string; namespace?: string } | undefined)[] = [
      { name: 'example-com' },
      { name: 'sub' },
      { name: 'late' },
      { name: 'nowhere' },
      { name: 'team', namespace: 'team-a' },
      undefined,
      { name: 'example-com', namespace: 'dns' },
      undefined,
    ];
    const sets = [];
    for (let i = 0; i < 160; i++) {
      const zoneRef = refs[i % refs.length];
      // Each zoneRef (or none) meets each name.
      const name = names[Math.floor(i / refs.length) % names.length]!;
      sets.push(
        recordSet(i % 3 === 0 ? 'team-a' : 'dns', `rs${i}`, {
          ...(zoneRef ? { zoneRef } : {}),
          name: zoneRef ? name : name.endsWith('.') ? name : `${name}.example.com.`,
          // NS and CNAME above the child zone are refused for it (a conflict decided across zones);
          // DS at the child's apex goes to the parent.
          type: (['A', 'NS', 'DS', 'TXT', 'CNAME'] as const)[i % 5]!,
          records: ['192.0.2.1'],
        }),
      );
    }
    return sets;
  }
  const keyOf = (rs: { metadata: { namespace?: string; name: string } }) =>
    `${rs.metadata.namespace}/${rs.metadata.name}`;
  /** Each zone's members as sorted `key fqdn` lines (their order within a zone decides nothing). */
  const members = (c: Catalog, zone: string) =>
    c
      .zoneMembers(zone)
      .map((m) => `${m.key} ${m.current?.fqdn}`)
      .sort();
  const sorted = (affected: ReturnType<Catalog['load']>) => ({
    zones: [...affected.zones].sort(),
    records: [...affected.records].sort(),
    recordsByZone: [...affected.recordsByZone]
      .map(([z, keys]) => `${z}: ${[...keys].sort().join(' ')}`)
      .sort(),
  });
  /** A catalog loaded as a controller's first look, counting the record sets it resolves. */
  function firstLook() {
    const c = new Catalog();
    let resolved = 0;
    const resolve = c.resolve.bind(c);
    c.resolve = (...args) => {
      resolved++;
      return resolve(...args);
    };
    const sets = recordSets();
    c.load([zoneClass()], zones(), sets, undefined, { zonesOnly: true });
    return { c, sets, resolved: () => resolved };
  }
  function full() {
    const c = new Catalog();
    c.load([zoneClass()], zones(), recordSets());
    return c;
  }
  const zoneKeys = ['dns/example-com', 'dns/sub', 'dns/late', 'team-a/team', 'dns/inner', 'dns/nowhere'];

  test('the first zone read waits for its own record sets and those without a zoneRef only', () => {
    const { c, sets, resolved } = firstLook();
    const eager = full();
    const refless = sets.filter((rs) => !rs.spec.zoneRef).length;
    assert.equal(resolved(), refless);
    // The child zone first: its members by zoneRef and those without one whose deepest zone it is.
    const sub = members(c, 'dns/sub');
    assert.deepEqual(sub, members(eager, 'dns/sub'));
    const reflessKeys = new Set(sets.filter((rs) => !rs.spec.zoneRef).map(keyOf));
    assert.ok(sub.some((line) => reflessKeys.has(line.split(' ')[0]!)));
    const bySub = sets.filter(
      (rs) =>
        rs.spec.zoneRef?.name === 'sub' && (rs.spec.zoneRef.namespace ?? rs.metadata.namespace) === 'dns',
    ).length;
    assert.equal(resolved(), refless + bySub);
    // Every other zone and record set as a full load resolves it, each record set resolved once.
    const reasons = new Set<string>();
    for (const zone of zoneKeys) assert.deepEqual(members(c, zone), members(eager, zone), zone);
    for (const rs of sets) {
      const key = keyOf(rs);
      const resolution = c.recordResolution(key);
      assert.deepEqual(resolution, eager.recordResolution(key), key);
      reasons.add(resolution?.resolved ? `in ${resolution.zone}` : resolution!.reason);
    }
    assert.equal(resolved(), sets.length);
    for (const want of [
      'in dns/example-com',
      'in dns/sub',
      'in team-a/team',
      'ZoneNotFound',
      'OutOfZone',
      'NotDelegated',
      'Conflict',
    ])
      assert.ok(reasons.has(want), `${want} in ${[...reasons].join(', ')}`);
  });

  test('a change taken before the record sets are read affects and resolves what it does after a full load', () => {
    const changes: [string, (c: Catalog) => ReturnType<Catalog['load']>][] = [
      [
        'a record set moved by zoneRef from one waiting zone to another',
        (c) =>
          c.setRecord(
            recordSet('dns', 'rs1', {
              zoneRef: { name: 'example-com' },
              name: 'moved',
              type: 'A',
              records: ['192.0.2.9'],
            }),
          ),
      ],
      [
        'a record set without a zoneRef',
        (c) =>
          c.setRecord(
            recordSet('dns', 'rs5', { name: 'new.sub.example.com.', type: 'A', records: ['192.0.2.9'] }),
          ),
      ],
      [
        'a new record set by zoneRef',
        (c) =>
          c.setRecord(
            recordSet('dns', 'new', {
              zoneRef: { name: 'sub' },
              name: 'new',
              type: 'A',
              records: ['192.0.2.9'],
            }),
          ),
      ],
      ['a record set deleted', (c) => c.deleteRecord('dns/rs2')],
      ['a new child zone', (c) => c.setZone(zone('dns', 'apps', 'apps.example.com', {}, 3))],
      ['a zone deleted', (c) => c.deleteZone('dns/sub')],
      ['the older zone of a domain deleted', (c) => c.deleteZone('dns/example-com')],
      ['a zone refused before the catalog', (c) => c.setZoneRefused('dns/nowhere', 'spec.domainName: bad')],
      [
        'a served zone noted as refused before the catalog',
        (c) => c.setZoneRefused('dns/sub', 'spec.domainName: bad'),
      ],
      ['the class deleted', (c) => c.deleteClass('builtin')],
    ];
    for (const [what, change] of changes) {
      const { c, sets } = firstLook();
      const eager = full();
      assert.deepEqual(sorted(change(c)), sorted(change(eager)), what);
      for (const key of [...sets.map(keyOf), 'dns/new'])
        assert.deepEqual(c.recordResolution(key), eager.recordResolution(key), `${what}: ${key}`);
      for (const zone of [...zoneKeys, 'dns/apps'])
        assert.deepEqual(members(c, zone), members(eager, zone), `${what}: ${zone}`);
    }
  });

  test('a second load told zonesOnly resolves at once: a record set moved to another zone by its zoneRef leaves the first', () => {
    const c = new Catalog();
    const zones = [zone('dns', 'a', 'a.example'), zone('dns', 'b', 'b.example')];
    const www = (ref: string) =>
      recordSet('dns', 'r', { zoneRef: { name: ref }, name: 'www', type: 'A', records: ['192.0.2.1'] });
    c.load([zoneClass()], zones, [www('a')], undefined, { zonesOnly: true });
    assert.deepEqual(
      c.zoneMembers('dns/a').map((m) => `${m.key} ${m.current?.fqdn}`),
      ['dns/r www.a.example.'],
    );
    c.load([], [], [www('b')], undefined, { zonesOnly: true });
    assert.deepEqual(c.zoneMembers('dns/a'), []);
    assert.deepEqual(
      c.zoneMembers('dns/b').map((m) => `${m.key} ${m.current?.fqdn}`),
      ['dns/r www.b.example.'],
    );
  });
});
