import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FolderHold } from './folder-hold.ts';

function hold(confirmed: Map<string, string> = new Map()) {
  return new FolderHold({
    windowMs: 10_000,
    confirmations: (zone) => (confirmed.has(zone) ? [confirmed.get(zone)!] : []),
    confirmHint: (zone, hash) => `zonekeeper confirm ${zone} ${hash}`,
  });
}

const zonesOf = (id: string) =>
  id.startsWith('DNSZoneClass/') ? ['ns/a', 'ns/b'] : [`ns/${id.split('/')[2]?.[0]}`];

describe('FolderHold', () => {
  test('an emptied folder holds every affected zone; small removals apply', () => {
    const h = hold();
    const small = h.decide({
      removals: ['DNSRecordSet/ns/a1'],
      existing: 20,
      zonesOf,
      versionOf: () => 'v',
      now: 0,
    });
    assert.deepEqual(small.apply, ['DNSRecordSet/ns/a1']);
    const all = ['DNSZoneClass/c', 'DNSZone/ns/a', 'DNSZone/ns/b', 'DNSRecordSet/ns/b1'];
    const emptied = h.decide({ removals: all, existing: 4, zonesOf, versionOf: () => 'v', now: 20_000 });
    assert.deepEqual(emptied.apply, []);
    assert.deepEqual([...emptied.held.keys()].sort(), ['ns/a', 'ns/b']);
    assert.match(emptied.held.get('ns/a')!.message, /holds no objects any more/);
  });

  test('slices within the window add up; a zone confirmed goes alone, a shared class stays until both are', () => {
    const confirmed = new Map<string, string>();
    const h = hold(confirmed);
    const base = { existing: 10, zonesOf, versionOf: () => 'v' };
    assert.deepEqual(
      h.decide({ ...base, removals: ['DNSRecordSet/ns/a1', 'DNSRecordSet/ns/a2'], now: 0 }).apply.length,
      2,
    );
    const second = h.decide({
      ...base,
      existing: 8,
      removals: ['DNSRecordSet/ns/b1', 'DNSRecordSet/ns/b2', 'DNSZoneClass/c'],
      now: 1_000,
    });
    assert.deepEqual(second.apply, [], '5 of 10 since the baseline');
    confirmed.set('ns/a', second.held.get('ns/a')!.hash);
    const afterA = h.decide({
      ...base,
      existing: 8,
      removals: ['DNSRecordSet/ns/b1', 'DNSRecordSet/ns/b2', 'DNSZoneClass/c'],
      now: 2_000,
    });
    assert.deepEqual(afterA.apply, [], 'the class is still held by ns/b');
    confirmed.set('ns/b', afterA.held.get('ns/b')!.hash);
    const afterB = h.decide({
      ...base,
      existing: 8,
      removals: ['DNSRecordSet/ns/b1', 'DNSRecordSet/ns/b2', 'DNSZoneClass/c'],
      now: 3_000,
    });
    assert.deepEqual(afterB.apply.sort(), ['DNSRecordSet/ns/b1', 'DNSRecordSet/ns/b2', 'DNSZoneClass/c']);
  });

  test('the hash names the exact removal: another version of an object is another change', () => {
    const a = hold().decide({
      removals: ['DNSZone/ns/a'],
      existing: 1,
      zonesOf,
      versionOf: () => 'v1',
      now: 0,
    });
    const b = hold().decide({
      removals: ['DNSZone/ns/a'],
      existing: 1,
      zonesOf,
      versionOf: () => 'v2',
      now: 0,
    });
    assert.notEqual(a.held.get('ns/a')!.hash, b.held.get('ns/a')!.hash);
  });
});
