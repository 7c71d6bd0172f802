/**
 * `planHold`: what `zonekeeper plan` says of a zone's change, judged with the controller's measure,
 * hash and decision against what is served now.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import { CONFIRM_CHANGE_ANNOTATION, type DNSZone, type Resource } from '../api/index.ts';
import { planHold } from './change-safety.ts';
import { computeZones } from './compute-zones.ts';

function resources(values: string[], spec: Partial<DNSZone['spec']> = {}, annotation?: string): Resource[] {
  const z = zone('dns', 'example-com', 'example.com', spec);
  if (annotation) z.metadata.annotations = { [CONFIRM_CHANGE_ANNOTATION]: annotation };
  return [
    zoneClass(),
    z,
    ...values.map((v, i) =>
      recordSet(
        'dns',
        `h${i}`,
        { zoneRef: { name: 'example-com' }, name: `h${i}`, type: 'A', records: [v] },
        i,
      ),
    ),
  ];
}

const hosts = (n: number, prefix = '192.0.2') => Array.from({ length: n }, (_, i) => `${prefix}.${i + 1}`);
const side = (r: Resource[]) => computeZones(r)[0];

describe('planHold', () => {
  test('a deletion over the limit is held, with a hash that names exactly it', () => {
    const before = side(resources(hosts(12))); // 13 RRsets with the apex NS
    const after = side(resources(hosts(8))); // 4 deleted: 31 % > 30 %
    const hold = planHold(before, after);
    assert.equal(hold?.held, true);
    assert.deepEqual(hold?.counts, { total: 13, deleted: 4, updated: 0, added: 0 });
    assert.match(hold!.hash, /^[0-9a-f]{16}$/);
    assert.equal(planHold(before, side(resources(hosts(8))))?.hash, hold!.hash);
    assert.notEqual(planHold(before, side(resources(hosts(7))))?.hash, hold!.hash);
  });

  test('under the limit, a small zone, a new or deleted zone, opted out: not held', () => {
    const before = side(resources(hosts(12)));
    assert.equal(planHold(before, side(resources(hosts(9)))), undefined); // 3 of 13
    assert.equal(planHold(side(resources(hosts(8))), side(resources(hosts(2)))), undefined); // 9 RRsets
    assert.equal(planHold(undefined, before), undefined);
    assert.equal(planHold(before, undefined), undefined);
    const off = side(resources(hosts(2), { changeSafety: { enabled: false } }));
    assert.equal(planHold(before, off), undefined);
  });

  test('confirmed by exactly its hash (annotation or confirmation), not by another', () => {
    const before = side(resources(hosts(12)));
    const hash = planHold(before, side(resources(hosts(12, '198.51.100'))))!.hash;
    const annotated = side(resources(hosts(12, '198.51.100'), {}, hash));
    assert.deepEqual(planHold(before, annotated)?.held, false);
    assert.equal(planHold(before, side(resources(hosts(12, '198.51.100'))), [hash])?.held, false);
    const stale = side(resources(hosts(12, '198.51.100'), {}, '0123456789abcdef'));
    assert.equal(planHold(before, stale)?.held, true);
  });

  test('a change of the zone settings that rebuilds its model is measured as the controller measures it', () => {
    const before = side(resources(hosts(12)));
    const after = side(resources(hosts(2), { soa: { refresh: 1234 } } as Partial<DNSZone['spec']>));
    assert.deepEqual(planHold(before, after)?.counts, { total: 13, deleted: 10, updated: 0, added: 0 });
    // A new default TTL alone changes the settings, not the content: not held.
    const ttl = side(resources(hosts(12), { ttl: 600 }));
    assert.equal(ttl?.zone.rrsets.find((r) => r.type === 'A')?.ttl, 600);
    assert.equal(planHold(before, ttl), undefined);
  });
});
