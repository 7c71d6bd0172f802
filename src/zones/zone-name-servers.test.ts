import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DNSZone, DNSZoneClass } from '../api/index.ts';
import { validateResource } from '../api/index.ts';
import { assembleZone } from './assemble.ts';
import { ZoneModel } from './zone-model.ts';
import { zoneHash, zoneNameServers } from './zone-name-servers.ts';

const zoneClass: DNSZoneClass = {
  apiVersion: 'dns.zonekeeper.dev/v1alpha1',
  kind: 'DNSZoneClass',
  metadata: { name: 'own' },
  spec: {
    backend: { builtin: {} },
    nameServers: ['ns1.provider.test.'],
    zoneNameServers: ['{hash}.ns1.provider.test.', '{hash}.NS2.provider.test.'],
  },
};

function zone(namespace: string, domainName: string): DNSZone {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSZone',
    metadata: { name: 'z', namespace },
    spec: { domainName, className: 'own' },
  };
}

describe('zone name servers', () => {
  test('a class with zoneNameServers gives each zone names of its own, by namespace and domain', () => {
    const hash = zoneHash('team-a', 'example.test');
    assert.match(hash, /^[0-9a-f]{12}$/);
    assert.equal(zoneHash('team-a', 'Example.Test.'), hash, 'case and the trailing dot do not matter');
    assert.notEqual(zoneHash('team-b', 'example.test'), hash);
    assert.deepEqual(zoneNameServers(zone('team-a', 'example.test'), zoneClass), [
      `${hash}.ns1.provider.test.`,
      `${hash}.ns2.provider.test.`,
    ]);
    const shared = { ...zoneClass, spec: { ...zoneClass.spec, zoneNameServers: undefined } };
    delete shared.spec.zoneNameServers;
    assert.deepEqual(zoneNameServers(zone('team-a', 'example.test'), shared), ['ns1.provider.test.']);
  });

  test("the apex NS records are the zone's own names, in the model and in the reference assembly", () => {
    const z = zone('team-a', 'example.test');
    const hash = zoneHash('team-a', 'example.test');
    const assembled = assembleZone({
      zone: z,
      zoneClass,
      origin: 'example.test.',
      records: [],
      children: [],
    });
    const ns = assembled.rrsets.find((r) => r.type === 'NS');
    assert.deepEqual(
      ns?.rdata.map((r) => (r as { host: string }).host),
      [`${hash}.ns1.provider.test.`, `${hash}.ns2.provider.test.`],
    );
    const model = new ZoneModel(z, zoneClass, 'example.test.');
    assert.deepEqual(model.nameServers, [`${hash}.ns1.provider.test.`, `${hash}.ns2.provider.test.`]);
    assert.equal(model.assembled().hash, assembled.hash);
  });

  test('templates must hold {hash} and be absolute host names', () => {
    const withTemplates = (zoneNameServers: string[]) =>
      validateResource({ ...zoneClass, spec: { ...zoneClass.spec, zoneNameServers } });
    assert.equal(withTemplates(['{hash}.ns1.provider.test.']).ok, true);
    for (const bad of [
      ['ns1.provider.test.'],
      ['{hash}.ns1.provider.test'],
      ['{hash}..test.'],
      ['{other}.x.test.'],
    ]) {
      const r = withTemplates(bad);
      assert.equal(r.ok, false, bad[0]);
    }
  });
});
