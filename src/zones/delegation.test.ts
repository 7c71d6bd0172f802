import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { namePatternMatches, namesAdmit, namespacePatternMatches, zoneAdmits } from './delegation.ts';

describe('delegation patterns', () => {
  test('exact names, apex and wildcards', () => {
    assert.ok(namePatternMatches('api', 'api'));
    assert.ok(namePatternMatches('API', 'api'), 'case-insensitive');
    assert.ok(!namePatternMatches('api', 'x.api'));
    assert.ok(namePatternMatches('@', '@'));
    assert.ok(namePatternMatches('*.apps', 'web.apps'));
    assert.ok(namePatternMatches('*.apps', 'a.b.apps'), '* is one or more labels');
    assert.ok(!namePatternMatches('*.apps', 'apps'));
    assert.ok(!namePatternMatches('*.apps', 'xapps'));
    assert.ok(namePatternMatches('*', 'anything.below'));
    assert.ok(!namePatternMatches('*', '@'), '* does not include the apex');
  });

  test('own namespace always, others only when named', () => {
    assert.ok(zoneAdmits('dns', undefined, 'dns', 'www', 'A'));
    assert.ok(!zoneAdmits('dns', undefined, 'team-a', 'www', 'A'));
    const delegations = [
      { namespaces: ['team-a'], names: ['api', '*.apps'], types: ['A' as const, 'CNAME' as const] },
    ];
    assert.ok(zoneAdmits('dns', delegations, 'team-a', 'api', 'A'));
    assert.ok(zoneAdmits('dns', delegations, 'team-a', 'x.apps', 'CNAME'));
    assert.ok(!zoneAdmits('dns', delegations, 'team-a', 'api', 'TXT'), 'type not delegated');
    assert.ok(!zoneAdmits('dns', delegations, 'team-a', 'www', 'A'), 'name not delegated');
    assert.ok(!zoneAdmits('dns', delegations, 'team-b', 'api', 'A'), 'namespace not delegated');
  });

  test('a delegation without namespaces does not open the zone to everyone', () => {
    assert.ok(!zoneAdmits('dns', [{ names: ['*'] }], 'intruder', 'www', 'A'));
  });

  test('a delegation without names or types admits every name and type for its namespaces', () => {
    assert.ok(zoneAdmits('dns', [{ namespaces: ['team-a'] }], 'team-a', 'deep.name', 'MX'));
  });

  test('names are matched label by label: an escaped dot is part of a label, not a separator', () => {
    // `evil\.apps` and `www\046apps` are one label directly under the apex, not names below `apps`.
    assert.ok(!namePatternMatches('*.apps', 'evil\\.apps'));
    assert.ok(!namePatternMatches('*.apps', 'www\\046apps'));
    assert.ok(!namePatternMatches('*.apps', 'x\\.y\\.apps'));
    assert.ok(!namePatternMatches('a.b', 'a\\.b'), 'an exact pattern of two labels is not one label');
    assert.ok(!namePatternMatches('*.b', 'a\\.b'));
    assert.ok(namePatternMatches('*.apps', 'evil\\.x.apps'), 'a label with a dot in it, below apps');
    assert.ok(namePatternMatches('*.apps', 'web.APPS'));
    assert.ok(namePatternMatches('api', '\\097pi'), 'escapes of ordinary characters are the same octets');
    assert.ok(
      !namePatternMatches('*.apps', 'x.apps\\\\'),
      'a trailing escaped backslash belongs to the label',
    );
    const delegations = [{ namespaces: ['team-a'], names: ['*.apps'] }];
    assert.ok(!zoneAdmits('dns', delegations, 'team-a', 'evil\\.apps', 'A'));
    assert.ok(!zoneAdmits('dns', delegations, 'team-a', 'www\\046apps', 'A'));
    assert.ok(zoneAdmits('dns', delegations, 'team-a', 'www.apps', 'A'));
  });

  test('a list of patterns, parsed once, admits what one of its patterns matches', () => {
    const patterns = ['@', 'api', 'API.v2', '*.apps', '*', '*.a.b', 'evil\\.apps', '..bad', 'x\\046y'];
    const names = [
      '@',
      'api',
      'Api',
      'api.v2',
      'web.apps',
      'a.b.apps',
      'apps',
      'evil\\.apps',
      'www\\046apps',
      'c.a.b',
      'a.b',
      'x.y',
      'x\\.y',
      '..bad',
      '',
    ];
    for (let mask = 1; mask < 1 << patterns.length; mask += 7) {
      const list = patterns.filter((_, i) => (mask & (1 << i)) !== 0);
      for (const name of names)
        assert.equal(
          namesAdmit(list, name),
          list.some((p) => namePatternMatches(p, name)),
          `${JSON.stringify(list)} and ${JSON.stringify(name)}`,
        );
    }
  });
});

describe('namespace patterns', () => {
  test('anchored prefix and one trailing *: Gardener shoot namespaces, never lookalikes', () => {
    assert.ok(namespacePatternMatches('shoot--*', 'shoot--foo--bar'));
    assert.ok(namespacePatternMatches('shoot--*', 'shoot--x'));
    assert.ok(!namespacePatternMatches('shoot--*', 'shoot--'), '* is at least one character');
    assert.ok(!namespacePatternMatches('shoot--*', 'xshoot--foo'), 'anchored at the start');
    assert.ok(!namespacePatternMatches('shoot--*', 'my-shoot--foo'));
    assert.ok(!namespacePatternMatches('shoot--*', 'shoot-foo'));
    assert.ok(!namespacePatternMatches('shoot--*', 'shoot'));
    assert.ok(!namespacePatternMatches('shoot--*', 'SHOOT--foo'));
    // Malformed patterns match nothing rather than something wider.
    for (const bad of ['*', '*--foo', 'shoot*--*', 'shoot--', 'sh.oot*', 'shoot--**', '-*', ''])
      assert.ok(!namespacePatternMatches(bad, 'shoot--foo'), bad);
  });

  test('a pattern admits foreign namespaces like a listed name, with the same name and type limits', () => {
    const delegations = [{ namespacePatterns: ['shoot--*'], names: ['*.shoot'], types: ['A' as const] }];
    assert.ok(zoneAdmits('dns', delegations, 'shoot--p--c', 'api.c.shoot', 'A'));
    assert.ok(!zoneAdmits('dns', delegations, 'shoot--p--c', 'www', 'A'), 'outside the names');
    assert.ok(!zoneAdmits('dns', delegations, 'shoot--p--c', 'api.c.shoot', 'TXT'), 'outside the types');
    assert.ok(!zoneAdmits('dns', delegations, 'shootx--p', 'api.c.shoot', 'A'), 'a lookalike namespace');
    assert.ok(!zoneAdmits('dns', delegations, 'team-shoot--p', 'api.c.shoot', 'A'), 'a lookalike namespace');
    // Patterns and names together: either admits.
    const both = [{ namespaces: ['team-a'], namespacePatterns: ['shoot--*'] }];
    assert.ok(zoneAdmits('dns', both, 'team-a', 'x', 'A'));
    assert.ok(zoneAdmits('dns', both, 'shoot--a--b', 'x', 'A'));
    assert.ok(!zoneAdmits('dns', both, 'team-b', 'x', 'A'));
  });
});

test('the schema refuses namespace patterns that are not a prefix and one trailing *', async () => {
  const { validateResource, API_VERSION } = await import('../api/index.ts');
  const zoneWith = (namespacePatterns: string[]) => ({
    apiVersion: API_VERSION,
    kind: 'DNSZone',
    metadata: { name: 'z', namespace: 'dns' },
    spec: { domainName: 'example.com', className: 'builtin', delegations: [{ namespacePatterns }] },
  });
  assert.equal(validateResource(zoneWith(['shoot--*'])).ok, true);
  for (const bad of ['*', 'shoot--', '*shoot', 'sh*oot*', 'Shoot--*', 'shoot--**'])
    assert.equal(validateResource(zoneWith([bad])).ok, false, bad);
});
