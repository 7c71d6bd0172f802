import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { namePatternMatches, zoneAdmits } from './delegation.ts';

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
});
