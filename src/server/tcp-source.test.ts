import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tcpSourceKey } from './tcp-source.ts';

test('IPv4 addresses count alone, IPv4-mapped ones as IPv4, IPv6 by /64 (RFC 7766 §6.2.2)', () => {
  assert.equal(tcpSourceKey('192.0.2.1'), '192.0.2.1');
  assert.equal(tcpSourceKey('::ffff:192.0.2.1'), '192.0.2.1');
  assert.equal(tcpSourceKey('::FFFF:192.0.2.1'), '192.0.2.1');
  assert.equal(tcpSourceKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  assert.equal(tcpSourceKey('2001:0db8:0001:0002::9'), '2001:db8:1:2::/64');
  assert.equal(tcpSourceKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(tcpSourceKey('2001:db8:0:0:ffff::1'), '2001:db8:0:0::/64', 'same /64 as above');
  assert.equal(tcpSourceKey('2001:db8:1::'), '2001:db8:1:0::/64');
  assert.equal(tcpSourceKey('::1'), '0:0:0:0::/64');
  assert.equal(tcpSourceKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(tcpSourceKey('64:ff9b::192.0.2.1'), '64:ff9b:0:0::/64');
  assert.equal(tcpSourceKey(undefined), undefined);
});
