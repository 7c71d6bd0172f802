import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, test } from 'node:test';
import { ConnectionsPerClient, clientNetworkKey } from './client-network.ts';

test('IPv4 addresses count alone, IPv4-mapped ones as IPv4, IPv6 by /64 (RFC 7766 §6.2.2)', () => {
  assert.equal(clientNetworkKey('192.0.2.1'), '192.0.2.1');
  assert.equal(clientNetworkKey('::ffff:192.0.2.1'), '192.0.2.1');
  assert.equal(clientNetworkKey('::FFFF:192.0.2.1'), '192.0.2.1');
  assert.equal(clientNetworkKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  assert.equal(clientNetworkKey('2001:0db8:0001:0002::9'), '2001:db8:1:2::/64');
  assert.equal(clientNetworkKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(clientNetworkKey('2001:db8:0:0:ffff::1'), '2001:db8:0:0::/64', 'same /64 as above');
  assert.equal(clientNetworkKey('2001:db8:1::'), '2001:db8:1:0::/64');
  assert.equal(clientNetworkKey('::1'), '0:0:0:0::/64');
  assert.equal(clientNetworkKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(clientNetworkKey('64:ff9b::192.0.2.1'), '64:ff9b:0:0::/64');
  assert.equal(clientNetworkKey(undefined), undefined);
});

describe('ConnectionsPerClient', () => {
  const connection = (remoteAddress: string | undefined) =>
    Object.assign(new EventEmitter(), { remoteAddress }) as EventEmitter & { remoteAddress?: string };

  test('a client holds up to the limit; a closed connection gives its place back', () => {
    const counts = new ConnectionsPerClient(2);
    const a = connection('2001:db8:1:2::1');
    assert.equal(counts.admit(a), 'admitted');
    // Another address of the same /64 is the same client.
    assert.equal(counts.admit(connection('2001:db8:1:2:ffff::9')), 'admitted');
    assert.equal(counts.admit(connection('2001:db8:1:2::77')), 'over-limit');
    assert.equal(counts.admit(connection('2001:db8:1:3::1')), 'admitted', 'another /64');
    assert.equal(counts.admit(connection('192.0.2.1')), 'admitted');
    assert.equal(counts.admit(connection('::ffff:192.0.2.1')), 'admitted', 'IPv4-mapped: the same client');
    assert.equal(counts.admit(connection('192.0.2.1')), 'over-limit');
    a.emit('close');
    assert.equal(counts.admit(connection('2001:db8:1:2::77')), 'admitted');
    assert.equal(counts.clients, 3);
  });

  test('no address: closed before it was seen; limit 0: nothing counted', () => {
    assert.equal(new ConnectionsPerClient(5).admit(connection(undefined)), 'closed');
    const unlimited = new ConnectionsPerClient(0);
    for (let i = 0; i < 100; i++) assert.equal(unlimited.admit(connection('192.0.2.1')), 'admitted');
    assert.equal(unlimited.clients, 0);
  });
});
