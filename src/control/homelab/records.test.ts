import assert from 'node:assert/strict';
import { test } from 'node:test';
import { desiredRecord, homelabSecretRef, providerIdentity, recordIdentity, sameContent } from './records.ts';

const cls = { server: 'http://p:7100/' };

test('TTL: the record, else the class default, else 300', () => {
  const spec = {
    type: 'A' as const,
    domain: 'example.com',
    subdomain: 'www',
    dnsClassRef: { name: 'c' },
    values: ['192.0.2.1'],
  };
  assert.equal(desiredRecord({ ...spec, ttl: 60 }, { ...cls, defaultTTL: 120 }).ttl, 60);
  assert.equal(desiredRecord(spec, { ...cls, defaultTTL: 120 }).ttl, 120);
  assert.equal(desiredRecord(spec, cls).ttl, 300);
});

test('metadata travels for MX (priority) and SRV (all three) only', () => {
  const base = {
    domain: 'example.com',
    subdomain: '@',
    dnsClassRef: { name: 'c' },
    values: ['mail.example.com'],
  };
  const m = { priority: 10, weight: 5, port: 25 };
  assert.deepEqual(desiredRecord({ ...base, type: 'MX', metadata: m }, cls).metadata, { priority: 10 });
  assert.deepEqual(desiredRecord({ ...base, type: 'SRV', metadata: m }, cls).metadata, m);
  assert.equal(desiredRecord({ ...base, type: 'CNAME', metadata: m }, cls).metadata, undefined);
});

test('identity ignores case and a trailing dot; providers compare without trailing slashes', () => {
  assert.equal(
    recordIdentity({ type: 'A', domain: 'Example.COM.', subdomain: 'WWW' }),
    recordIdentity({ type: 'A', domain: 'example.com', subdomain: 'www' }),
  );
  assert.notEqual(
    recordIdentity({ type: 'A', domain: 'example.com', subdomain: 'www' }),
    recordIdentity({ type: 'AAAA', domain: 'example.com', subdomain: 'www' }),
  );
  assert.equal(providerIdentity('http://p:7100//'), 'http://p:7100');
});

test('content: values as a set; TTL and metadata only when the provider reports them', () => {
  const want = {
    type: 'A' as const,
    domain: 'd.com',
    subdomain: 'x',
    values: ['1.1.1.1', '2.2.2.2'],
    ttl: 60,
  };
  assert.ok(sameContent(want, { values: ['2.2.2.2', '1.1.1.1'] }));
  assert.ok(sameContent(want, { values: ['2.2.2.2', '1.1.1.1'], ttl: 60 }));
  assert.ok(!sameContent(want, { values: ['2.2.2.2', '1.1.1.1'], ttl: 61 }));
  assert.ok(!sameContent(want, { values: ['1.1.1.1'] }));
  assert.ok(!sameContent(want, { values: ['1.1.1.1', '2.2.2.2'], metadata: { priority: 1 } }));
});

test('secretRef: a Kubernetes Secret, or file:/env: in its name; a Secret needs a key', () => {
  assert.deepEqual(homelabSecretRef({ name: 's', namespace: 'n', key: 'k' }), {
    name: 's',
    key: 'k',
    namespace: 'n',
  });
  assert.deepEqual(homelabSecretRef({ name: 'file:/etc/hmac' }), { file: '/etc/hmac' });
  assert.deepEqual(homelabSecretRef({ name: 'env:DNS_HMAC' }), { env: 'DNS_HMAC' });
  assert.match((homelabSecretRef({ name: 's' }) as { error: string }).error, /set secretRef.key/);
  assert.ok('error' in homelabSecretRef({ name: 'env:1BAD' }));
  assert.ok('error' in homelabSecretRef({ name: 'file:' }));
});

test('content: a provider canonical form is no drift (trailing dots, case, IPv6 text, metadata key order)', () => {
  const cls = { server: 'http://p' };
  const srv = desiredRecord(
    {
      type: 'SRV',
      domain: 'd.com',
      subdomain: '_sip._tcp',
      values: ['SIP.d.com.'],
      metadata: { port: 5060, weight: 2, priority: 1 },
    } as never,
    cls as never,
  );
  assert.ok(
    sameContent(srv, { values: ['sip.d.com'], ttl: 300, metadata: { priority: 1, weight: 2, port: 5060 } }),
  );
  assert.ok(!sameContent(srv, { values: ['sip.d.com'], metadata: { priority: 1, weight: 3, port: 5060 } }));
  const aaaa = desiredRecord(
    { type: 'AAAA', domain: 'd.com', subdomain: 'x', values: ['2001:DB8:0::1'] } as never,
    cls as never,
  );
  assert.ok(sameContent(aaaa, { values: ['2001:db8::1'], ttl: 300 }));
});
