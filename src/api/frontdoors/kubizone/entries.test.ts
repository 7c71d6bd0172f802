import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RecordObject, ZoneObject } from './adoption.ts';
import { entriesWithin, STATUS_ENTRIES_BYTES, storedJsonBytes, zoneEntries } from './index.ts';

test("a zone's status entries list every adopted Record of a big zone (150,000: no spread of the list)", () => {
  // Regression: the entries were appended as `push(...list)`, whose arguments overflowed the stack
  // past some 100,000 Records, and the zone's status could not be made.
  const zone: ZoneObject = {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Zone',
    metadata: { name: 'example-org', namespace: 'dns' },
    spec: { domainName: 'example.org.', delegations: [{ records: [{ pattern: '*' }] }] },
  } as ZoneObject;
  const records: RecordObject[] = Array.from({ length: 150_000 }, (_, i) => ({
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Record',
    metadata: { name: `r${i}`, namespace: 'dns' },
    spec: { domainName: `h${i}.example.org.`, type: 'A', rdata: '192.0.2.1' },
  }));
  const entries = zoneEntries(zone, 'example.org.', [zone], records, { serial: 7 } as never);
  assert.equal(entries.length, 150_001);
  assert.equal(entries[0]?.type, 'SOA');
  assert.equal(entries.filter((e) => e.type === 'A').length, 150_000);
});

test("a zone's status lists as many entries as one object of the API server carries", () => {
  // Regression: a Zone adopting 20,000 Records had a status of 1.6 MB, above what etcd keeps in one
  // object: every write of it failed, and the Zone kept an older status for good.
  const entries = Array.from({ length: 20_000 }, (_, i) => ({
    fqdn: `host-${i}.example.org.`,
    type: 'A',
    class: 'IN',
    ttl: 360,
    rdata: `192.0.2.${i % 256}`,
  }));
  const listed = entriesWithin(entries, STATUS_ENTRIES_BYTES);
  assert.ok(listed.length > 5_000 && listed.length < 20_000, `${listed.length}`);
  assert.deepEqual(listed, entries.slice(0, listed.length));
  assert.ok(JSON.stringify(listed).length <= STATUS_ENTRIES_BYTES);
  assert.ok(JSON.stringify(entries.slice(0, listed.length + 1)).length > STATUS_ENTRIES_BYTES);
  const few = entries.slice(0, 100);
  assert.equal(entriesWithin(few, STATUS_ENTRIES_BYTES), few);
});

test('the entries are counted in the bytes the API server stores, not in characters', () => {
  // Regression: 512 Ki characters of `<` (TXT Records a delegated tenant writes) are 3 MB once the
  // API server escapes them (\u003c), and the Zone's status could not be written again.
  assert.equal(storedJsonBytes('"a"'), 3);
  assert.equal(storedJsonBytes('"<>&"'), 2 + 18);
  assert.equal(storedJsonBytes('"\u2028\u2029"'), 2 + 12);
  assert.equal(storedJsonBytes('"é€😀"'), 2 + 2 + 3 + 4);
  assert.equal(storedJsonBytes('"\ud800x"'), 2 + 3 + 1, 'a lone surrogate is stored as U+FFFD');
  for (const text of ['<'.repeat(2000), '\u2028'.repeat(2000), '漢'.repeat(2000)]) {
    const entries = Array.from({ length: 2_000 }, (_, i) => ({
      fqdn: `t${i}.example.org.`,
      type: 'TXT',
      class: 'IN',
      ttl: 360,
      rdata: `"${text}"`,
    }));
    const listed = entriesWithin(entries, STATUS_ENTRIES_BYTES);
    assert.ok(listed.length > 10 && listed.length < 2_000, `${listed.length}`);
    assert.ok(storedJsonBytes(JSON.stringify(listed)) <= STATUS_ENTRIES_BYTES);
  }
});
