import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { API_VERSION } from '../meta.ts';
import { DATUM_FRONT_DOORS } from './datum/index.ts';
import { dnsEndpointFrontDoor } from './externaldns/index.ts';
import { apiVersionOf, FrontDoors } from './front-door.ts';

describe('FrontDoors lookups', () => {
  const doors = new FrontDoors([dnsEndpointFrontDoor, ...DATUM_FRONT_DOORS]);
  const endpoint = dnsEndpointFrontDoor;

  it('finds a door by its API version and kind, and no other', () => {
    for (const door of doors.all) assert.equal(doors.find(apiVersionOf(door), door.kind), door);
    assert.equal(doors.find(`${endpoint.group}/v0`, endpoint.kind), undefined);
    assert.equal(doors.find(apiVersionOf(endpoint), `${endpoint.kind}s`), undefined);
    assert.equal(doors.find(`${apiVersionOf(endpoint)}\u0000${endpoint.kind}`, ''), undefined);
    assert.equal(doors.find(API_VERSION, 'DNSRecordSet'), undefined);
    assert.equal(doors.find(undefined, endpoint.kind), undefined);
    assert.equal(doors.find(apiVersionOf(endpoint), 1), undefined);
  });

  it("refuses a door of Zonekeeper's own group (validateAny skips the lookups for its objects)", () => {
    assert.throws(
      () => new FrontDoors([{ ...endpoint, group: 'dns.zonekeeper.dev' }]),
      /dns.zonekeeper.dev is Zonekeeper's own/,
    );
  });

  it('finds a door of the same group and kind at any version (the first registered)', () => {
    assert.equal(doors.findKind(`${endpoint.group}/v9`, endpoint.kind), endpoint);
    assert.equal(doors.findKind(endpoint.group, endpoint.kind), endpoint);
    assert.equal(doors.findKind(`${endpoint.group}/v1/extra`, endpoint.kind), endpoint);
    assert.equal(doors.findKind(`x${endpoint.group}/v1`, endpoint.kind), undefined);
    assert.equal(doors.findKind(`${endpoint.group}/v1`, 'Other'), undefined);
    assert.equal(doors.findKind(API_VERSION, 'DNSRecordSet'), undefined);
    assert.equal(doors.findKind(null, endpoint.kind), undefined);
    for (const door of doors.all)
      assert.equal(
        doors.findKind(`${door.group}/vX`, door.kind),
        doors.all.find((d) => d.group === door.group && d.kind === door.kind),
      );
  });
});
