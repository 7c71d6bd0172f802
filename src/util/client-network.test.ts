import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientNetworkKey } from './client-network.ts';

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
