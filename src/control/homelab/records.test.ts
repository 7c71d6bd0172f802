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
