import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ForeignObject } from '../front-door.ts';
import { type ZoneSpec, type ZoneStatus, zoneFrontDoor } from './index.ts';

const T = '2026-11-01T00:00:00Z';

function zone(spec: ZoneSpec, status: ZoneStatus): ForeignObject<ZoneSpec, ZoneStatus> {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Zone',
    metadata: { name: 'z', namespace: 'ns' },
    spec,
    status,
  };
}

const cond = (type: string, status: 'True' | 'False', reason: string) => ({
  type,
  status,
  reason,
  message: '',
  lastTransitionTime: T,
});

test('a kubizone Zone is the incumbent of the domain it was accepted for, a sub-zone too, through a held change', () => {
  const accepted = (o: ForeignObject<ZoneSpec, ZoneStatus>, domain: string) =>
    zoneFrontDoor.nativeStatus!(o, 'ns/z', domain)?.conditions?.find((c) => c.type === 'Accepted')?.status;
  // A sub-zone (zoneRef): its domain is its parent's plus its partial name, given by the translation.
  const sub = zone({ domainName: 'shop', zoneRef: { name: 'platform' } } as ZoneSpec, {
    fqdn: 'shop.platform.test.',
    conditions: [cond('Ready', 'False', 'ChangeHeld'), cond('Accepted', 'True', 'Accepted')],
  });
  assert.equal(accepted(sub, 'shop.platform.test.'), 'True');
  // Renamed (its domain now another): it claims the new one afresh.
  assert.equal(accepted(sub, 'shop2.platform.test.'), undefined);
  // Refused: not the incumbent, whatever Ready said before.
  const refused = zone({ domainName: 'victim.test.' } as ZoneSpec, {
    fqdn: 'victim.test.',
    conditions: [cond('Ready', 'False', 'Conflict'), cond('Accepted', 'False', 'Conflict')],
  });
  assert.equal(accepted(refused, 'victim.test.'), undefined);
  // Written before the Accepted condition existed: Ready=True, Served.
  const older = zone({ domainName: 'a.test.' } as ZoneSpec, {
    fqdn: 'a.test.',
    conditions: [cond('Ready', 'True', 'Served')],
  });
  assert.equal(accepted(older, 'A.test.'), 'True');
});
