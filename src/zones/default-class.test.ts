import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DNSZoneClass } from '../api/index.ts';
import { DEFAULT_CLASS_ANNOTATION, defaultZoneClass } from './default-class.ts';

function cls(name: string, annotated = false, deleting = false): DNSZoneClass {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSZoneClass',
    metadata: {
      name,
      ...(annotated ? { annotations: { [DEFAULT_CLASS_ANNOTATION]: 'true' } } : {}),
      ...(deleting ? { deletionTimestamp: '2026-11-26T00:00:00Z' } : {}),
    },
    spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.'] },
  } as DNSZoneClass;
}

describe('defaultZoneClass', () => {
  test('the annotated class, whatever else exists', () => {
    const r = defaultZoneClass([cls('a'), cls('b', true), cls('c')]);
    assert.ok(r.ok && r.zoneClass.metadata.name === 'b' && r.why === 'annotated');
  });
  test('the only class without an annotation', () => {
    const r = defaultZoneClass([cls('only')]);
    assert.ok(r.ok && r.zoneClass.metadata.name === 'only' && r.why === 'only');
  });
  test('none, several annotated, or several without one: a code and what to do', () => {
    const none = defaultZoneClass([]);
    assert.ok(!none.ok && none.code === 'NO_DEFAULT_CLASS');
    const two = defaultZoneClass([cls('a', true), cls('b', true)]);
    assert.ok(!two.ok && two.code === 'SEVERAL_DEFAULT_CLASSES' && /a, b/.test(two.message));
    const many = defaultZoneClass([cls('a'), cls('b')]);
    assert.ok(!many.ok && many.code === 'NO_DEFAULT_CLASS' && /annotate one/.test(many.message));
  });
  test('a class being deleted is no default', () => {
    const r = defaultZoneClass([cls('old', true, true), cls('new')]);
    assert.ok(r.ok && r.zoneClass.metadata.name === 'new');
  });
});
