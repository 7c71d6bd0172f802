import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { splitHostPort } from './host-port.ts';

describe('splitHostPort', () => {
  test('host and port, bracketed IPv6, bare names and addresses', () => {
    assert.deepEqual(splitHostPort('127.0.0.1:5353'), { host: '127.0.0.1', port: 5353 });
    assert.deepEqual(splitHostPort('[::1]:5353'), { host: '::1', port: 5353 });
    assert.deepEqual(splitHostPort('[2001:db8::1]'), { host: '2001:db8::1', port: 53 });
    assert.deepEqual(splitHostPort('ns1.example.com'), { host: 'ns1.example.com', port: 53 });
    assert.deepEqual(splitHostPort('2001:db8::1'), { host: '2001:db8::1', port: 53 });
    assert.deepEqual(splitHostPort('0.0.0.0', 8080), { host: '0.0.0.0', port: 8080 });
  });

  test('a port that is not a number comes back as NaN for the caller to refuse', () => {
    assert.ok(Number.isNaN(splitHostPort('example.com:http').port));
  });
});
