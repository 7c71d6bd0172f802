import assert from 'node:assert/strict';
import { test } from 'node:test';
import { comparableValue, sameHomelabContent, sameMetadata } from './compare.ts';

test('names compare without case and with or without the trailing dot', () => {
  for (const type of ['CNAME', 'NS', 'MX', 'SRV'])
    assert.equal(comparableValue(type, 'Web.Example.NET.'), comparableValue(type, 'web.example.net'));
  const want = { type: 'CNAME' as const, domain: 'd.com', subdomain: 'x', values: ['Target.Example.net.'] };
  assert.ok(sameHomelabContent(want, { values: ['target.example.net'] }));
  assert.ok(!sameHomelabContent(want, { values: ['target.example.org'] }));
});

test('IPv6 addresses compare as addresses; A and TXT exactly', () => {
  const want = {
    type: 'AAAA' as const,
    domain: 'd.com',
    subdomain: 'x',
    values: ['2001:DB8:0:0:0:0:0:1', '2001:db8::0:2'],
  };
  assert.ok(sameHomelabContent(want, { values: ['2001:db8::2', '2001:db8::1'] }));
  assert.ok(!sameHomelabContent(want, { values: ['2001:db8::2', '2001:db8::3'] }));
  const txt = { type: 'TXT' as const, domain: 'd.com', subdomain: 'x', values: ['Hello.'] };
  assert.ok(!sameHomelabContent(txt, { values: ['hello.'] }));
  assert.ok(!sameHomelabContent(txt, { values: ['Hello'] }));
});

test('metadata field by field, whatever the key order; still compared when it differs', () => {
  assert.ok(sameMetadata({ port: 5060, weight: 2, priority: 1 }, { priority: 1, weight: 2, port: 5060 }));
  assert.ok(!sameMetadata({ priority: 1, weight: 2, port: 5060 }, { priority: 1, weight: 2, port: 5061 }));
  assert.ok(!sameMetadata({ priority: 10 }, { priority: 10, weight: 0 }));
  const srv = {
    type: 'SRV' as const,
    domain: 'd.com',
    subdomain: '_sip._tcp',
    values: ['SIP.d.com.'],
    ttl: 60,
    metadata: { port: 5060, weight: 2, priority: 1 },
  };
  assert.ok(
    sameHomelabContent(srv, {
      values: ['sip.d.com'],
      ttl: 60,
      metadata: { priority: 1, weight: 2, port: 5060 },
    }),
  );
  assert.ok(!sameHomelabContent(srv, { values: ['sip.d.com'], ttl: 61, metadata: srv.metadata }));
});
