/**
 * Zonekeeper's homelab-protocol client against an independent provider written in Python's standard
 * library, which verifies signatures, freshness and nonces on its own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HomelabClient } from '../src/backends/homelab-webhook/client.ts';
import { HomelabProviderError } from '../src/homelab-protocol/protocol.ts';
import { formatTimestamp, sign } from '../src/homelab-protocol/signature.ts';
import { type PythonProvider, startPythonProvider } from './support/homelab-provider.ts';

for (const algorithm of ['SHA256', 'SHA512'] as const) {
  describe(`homelab client against the Python provider (${algorithm})`, () => {
    let provider: PythonProvider;
    let client: HomelabClient;
    before(async () => {
      provider = await startPythonProvider({ secret: 's3cret-ü', algorithm });
      client = new HomelabClient({ server: provider.url, timeoutMs: 5000, secret: 's3cret-ü', algorithm });
    });
    after(() => provider.stop());

    test('health, upsert, get and delete are accepted, signed with and without a body', async () => {
      assert.deepEqual((await client.health()).healthy, true);
      const stored = await client.upsert({
        type: 'MX',
        domain: 'example.com',
        subdomain: '@',
        values: ['mail.example.com'],
        ttl: 600,
        metadata: { priority: 10 },
      });
      assert.equal(stored?.fqdn, 'example.com');
      const got = await client.get('MX', 'example.com', '@');
      assert.ok(got !== 'unsupported');
      assert.deepEqual(got?.values, ['mail.example.com']);
      assert.deepEqual(got?.metadata, { priority: 10 });
      await client.delete('MX', 'example.com', '@');
      assert.equal(await client.get('MX', 'example.com', '@'), undefined);
      // Deleting what is not there succeeds (404 is success).
      await client.delete('MX', 'example.com', '@');
      assert.equal((await provider.log()).authFailures, 0);
    });

    test('the provider refuses a wrong secret: AuthenticationFailed with its code', async () => {
      const wrong = new HomelabClient({ server: provider.url, timeoutMs: 5000, secret: 'wrong', algorithm });
      await assert.rejects(
        wrong.upsert({ type: 'A', domain: 'example.com', subdomain: 'www', values: ['192.0.2.1'] }),
        (e: unknown) =>
          e instanceof HomelabProviderError &&
          e.reason === 'AuthenticationFailed' &&
          e.code === 'AUTH_FAILED',
      );
      assert.equal((await wrong.health()).healthy, false);
    });

    test('a replayed request (same nonce) and a stale timestamp are refused by the provider', async () => {
      const path = '/records/A/example.com/www';
      const timestamp = formatTimestamp(new Date());
      const nonce = crypto.randomUUID();
      const headers = {
        'X-DNS-Timestamp': timestamp,
        'X-DNS-Nonce': nonce,
        'X-DNS-Signature': sign('s3cret-ü', algorithm, { method: 'DELETE', path, timestamp, nonce }),
      };
      const first = await fetch(provider.url + path, { method: 'DELETE', headers });
      assert.notEqual(first.status, 401);
      await first.text();
      const again = await fetch(provider.url + path, { method: 'DELETE', headers });
      assert.equal(again.status, 401);
      assert.equal(((await again.json()) as { error: { code: string } }).error.code, 'NONCE_REUSED');
      const old = formatTimestamp(new Date(Date.now() - 6 * 60 * 1000));
      const n2 = crypto.randomUUID();
      const stale = await fetch(provider.url + path, {
        method: 'DELETE',
        headers: {
          'X-DNS-Timestamp': old,
          'X-DNS-Nonce': n2,
          'X-DNS-Signature': sign('s3cret-ü', algorithm, {
            method: 'DELETE',
            path,
            timestamp: old,
            nonce: n2,
          }),
        },
      });
      assert.equal(stale.status, 401);
      assert.equal(((await stale.json()) as { error: { code: string } }).error.code, 'TIMESTAMP_STALE');
    });

    test('an invalid value is ValidationFailed with the provider code; outages are ServerError / ServerUnreachable', async () => {
      await assert.rejects(
        client.upsert({ type: 'A', domain: 'example.com', subdomain: 'x', values: ['not-an-ip'] }),
        (e: unknown) =>
          e instanceof HomelabProviderError && e.reason === 'ValidationFailed' && e.code === 'INVALID_VALUE',
      );
      await provider.fail('503');
      await assert.rejects(
        client.upsert({ type: 'A', domain: 'example.com', subdomain: 'x', values: ['192.0.2.1'] }),
        (e: unknown) => e instanceof HomelabProviderError && e.reason === 'ServerError' && e.status === 503,
      );
      const h = await client.health();
      assert.equal(h.healthy, false);
      assert.equal(h.reason, 'ServerError');
      await provider.fail('drop');
      await assert.rejects(
        client.upsert({ type: 'A', domain: 'example.com', subdomain: 'x', values: ['192.0.2.1'] }),
        (e: unknown) => e instanceof HomelabProviderError && e.reason === 'ServerUnreachable',
      );
      await provider.fail(null);
      await client.upsert({ type: 'A', domain: 'example.com', subdomain: 'x', values: ['192.0.2.1'] });
    });
  });
}

test('a provider without GET /records is reported as unsupported, not as missing', async () => {
  const provider = await startPythonProvider({ noGet: true });
  try {
    const client = new HomelabClient({ server: provider.url, timeoutMs: 5000, algorithm: 'SHA256' });
    await client.upsert({ type: 'TXT', domain: 'example.com', subdomain: 'note', values: ['hello world'] });
    assert.equal(await client.get('TXT', 'example.com', 'note'), 'unsupported');
  } finally {
    await provider.stop();
  }
});

test('a closed port is ServerUnreachable and says what to check', async () => {
  const provider = await startPythonProvider();
  const url = provider.url;
  await provider.stop();
  const client = new HomelabClient({ server: url, timeoutMs: 2000, algorithm: 'SHA256' });
  await assert.rejects(
    client.delete('A', 'example.com', 'www'),
    (e: unknown) =>
      e instanceof HomelabProviderError && e.reason === 'ServerUnreachable' && /spec\.server/.test(e.message),
  );
});
