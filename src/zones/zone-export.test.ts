import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { parseZoneFile } from '../dns/zone-file-parser.ts';
import { computeZones } from './compute-zones.ts';
import { exportZone, servedSerial } from './zone-export.ts';

const NOW = new Date(Date.UTC(2026, 2, 4, 12));
const [computed] = computeZones([
  zoneClass('builtin', ['ns1.example.com.']),
  zone('dns', 'example-com', 'example.com'),
  recordSet('dns', 'www', {
    zoneRef: { name: 'example-com' },
    name: 'www',
    type: 'A',
    records: ['192.0.2.1'],
  }),
]);
const assembled = computed!.zone;

describe('servedSerial', () => {
  test('nothing stored: the date serial of a first start', () => {
    assert.equal(servedSerial(assembled, undefined, NOW), 2026030400);
  });

  test('stored for this content: the stored serial', () => {
    assert.equal(servedSerial(assembled, { serial: 2026010105, hash: assembled.hash }, NOW), 2026010105);
  });

  test('stored with its hash still pending: the next serial, as serve picks on its next start', () => {
    // The content that serial was served with is unknown: showing it with this content could show one
    // serial with two contents (serve served it with an older version of the manifests).
    assert.equal(servedSerial(assembled, { serial: 2026030405 }, NOW), 2026030406);
    assert.equal(servedSerial(assembled, { serial: 2026010105 }, NOW), 2026030400);
  });

  test('stored for other content: the next serial, as serve publishes on its next start', () => {
    assert.equal(servedSerial(assembled, { serial: 2026010105, hash: 'other' }, NOW), 2026030400);
    assert.equal(servedSerial(assembled, { serial: 2026030407, hash: 'other' }, NOW), 2026030408);
  });
});

describe('exportZone', () => {
  test('prints the zone at that serial, with a header, and parses back', () => {
    const out = exportZone(assembled, { serial: 7, hash: assembled.hash }, NOW, 'manifests/');
    assert.equal(out.serial, 7);
    assert.match(
      out.text,
      /^; example\.com\. as `zonekeeper serve --manifests manifests\/` serves it\n; serial 7, /,
    );
    const parsed = parseZoneFile(out.text);
    assert.deepEqual(parsed.problems, []);
    assert.equal(parsed.origin, 'example.com.');
    assert.deepEqual(
      parsed.records.map((r) => `${r.owner} ${r.type}`),
      ['example.com. SOA', 'example.com. NS', 'www.example.com. A'],
    );
    assert.equal(parsed.records[0]?.rdata.type === 'SOA' && parsed.records[0].rdata.serial, 7);
  });
});
