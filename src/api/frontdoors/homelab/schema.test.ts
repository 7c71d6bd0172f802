import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateValue } from '../../schema.ts';
import { dnsClassSpecSchema, dnsRecordSpecSchema, isAddressOfFamily } from './schema.ts';

const record = (spec: Record<string, unknown>) =>
  validateValue(
    dnsRecordSpecSchema,
    { domain: 'example.com', subdomain: 'www', dnsClassRef: { name: 'c' }, ...spec },
    'spec',
  );
const codes = (spec: Record<string, unknown>) => record(spec).map((p) => `${p.path}: ${p.message}`);

test('addresses as CEL isIP/ip().family() sees them: no zones, no IPv4-mapped IPv6', () => {
  assert.ok(isAddressOfFamily('192.0.2.1', 4));
  assert.ok(!isAddressOfFamily('192.0.2.256', 4));
  assert.ok(!isAddressOfFamily('2001:db8::1', 4));
  assert.ok(isAddressOfFamily('2001:db8::1', 6));
  assert.ok(!isAddressOfFamily('fe80::1%eth0', 6));
  assert.ok(!isAddressOfFamily('::ffff:192.0.2.1', 6));
  assert.ok(!isAddressOfFamily('192.0.2.1', 6));
});

test('every type: valid values pass', () => {
  for (const spec of [
    { type: 'A', values: ['192.0.2.1', '192.0.2.2'] },
    { type: 'AAAA', values: ['2001:db8::1'] },
    { type: 'CNAME', values: ['target.example.com'] },
    { type: 'TXT', values: ['v=spf1 -all', 'any text'] },
    { type: 'MX', values: ['mail.example.com'], metadata: { priority: 10 } },
    {
      type: 'SRV',
      subdomain: '_sip._tcp',
      values: ['sip.example.com'],
      metadata: { priority: 1, weight: 2, port: 5060 },
    },
    { type: 'NS', values: ['ns1.example.net.'] },
    { type: 'A', subdomain: '@', values: ['192.0.2.1'] },
  ])
    assert.deepEqual(codes(spec), [], JSON.stringify(spec));
});

test('each type rule refuses, at spec.values or spec.metadata', () => {
  assert.match(
    codes({ type: 'A', values: ['2001:db8::1'] }).join(),
    /spec.values: A record values must be IPv4 addresses: "2001:db8::1"/,
  );
  assert.match(codes({ type: 'AAAA', values: ['192.0.2.1'] }).join(), /AAAA record values must be IPv6/);
  assert.match(
    codes({ type: 'CNAME', values: ['a.example.com', 'b.example.com'] }).join(),
    /exactly one value/,
  );
  assert.match(codes({ type: 'CNAME', values: ['not a name'] }).join(), /must be domain names/);
  assert.match(codes({ type: 'NS', values: ['192.0.2.1/24'] }).join(), /must be domain names/);
  assert.match(
    codes({ type: 'MX', values: ['mail.example.com'] }).join(),
    /spec.metadata: an MX record needs metadata.priority/,
  );
  assert.match(
    codes({ type: 'SRV', values: ['sip.example.com'], metadata: { priority: 1, port: 5 } }).join(),
    /needs metadata.priority, metadata.weight and metadata.port/,
  );
  assert.match(codes({ type: 'PTR', values: ['x.example.com'] }).join(), /spec.type/);
  assert.match(codes({ type: 'TXT', subdomain: 'a b', values: ['x'] }).join(), /spec.subdomain/);
  assert.match(codes({ type: 'TXT', domain: 'localhost', values: ['x'] }).join(), /spec.domain/);
  assert.match(codes({ type: 'TXT', values: [] }).join(), /spec.values/);
});

test('DNSClass: an http(s) server, hmacAuth with exactly one of secretRef and secret, SHA256|SHA512', () => {
  const ok = (spec: Record<string, unknown>) => validateValue(dnsClassSpecSchema, spec, 'spec');
  assert.deepEqual(ok({ server: 'http://dns.dns.svc:7100' }), []);
  assert.deepEqual(
    ok({ server: 'https://dns.example.com/base', hmacAuth: { secret: 's', algorithm: 'SHA512' } }),
    [],
  );
  assert.deepEqual(
    ok({ server: 'http://x.y', hmacAuth: { secretRef: { name: 'n', namespace: 'ns', key: 'k' } } }),
    [],
  );
  assert.match(
    ok({ server: 'ftp://dns.example.com' })
      .map((p) => p.message)
      .join(),
    /http\(s\) URL/,
  );
  assert.match(
    ok({ server: 'http://x.y', hmacAuth: {} })
      .map((p) => p.message)
      .join(),
    /exactly one of secretRef or secret/,
  );
  assert.match(
    ok({ server: 'http://x.y', hmacAuth: { secret: 'a', secretRef: { name: 'b' } } })
      .map((p) => p.message)
      .join(),
    /exactly one of secretRef or secret/,
  );
  assert.ok(ok({ server: 'http://x.y', hmacAuth: { secret: 'a', algorithm: 'MD5' } }).length > 0);
});
