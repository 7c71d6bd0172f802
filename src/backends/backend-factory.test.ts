import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { zoneClass } from '../../test/support/resources.ts';
import type { DNSZoneClass } from '../api/index.ts';
import { fileAndEnvSecrets } from '../control/secrets.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { createBackendFactory } from './backend-factory.ts';
import { BuiltinBackend } from './builtin/builtin-backend.ts';
import { PowerDnsBackend, type PowerDnsSettings } from './powerdns/powerdns-backend.ts';

function pdnsClass(name: string, settings: Partial<PowerDnsSettings> = {}): DNSZoneClass {
  return zoneClass(name, ['ns1.example.com.'], {
    backend: {
      powerdns: {
        url: 'http://127.0.0.1:1',
        apiKeySecretRef: { env: 'ZONEKEEPER_TEST_PDNS_KEY' },
        ...settings,
      },
    },
  });
}

describe('createBackendFactory', () => {
  const builtin = new BuiltinBackend(new ZoneTable());

  test('builtin classes share the built-in backend; a powerdns class gets its own, kept across calls', () => {
    const factory = createBackendFactory({ builtin, secrets: fileAndEnvSecrets({}) });
    assert.equal(factory(zoneClass('a')), builtin);
    assert.equal(factory(zoneClass('b')), builtin);
    const edge = factory(pdnsClass('edge'));
    assert.ok(edge instanceof PowerDnsBackend);
    assert.equal(factory(pdnsClass('edge')), edge);
    assert.notEqual(factory(pdnsClass('other')), edge, 'one backend per class');
    factory.close();
  });

  test('new settings apply in place (zones stay); another url or server id is another PowerDNS', () => {
    const factory = createBackendFactory({ builtin, secrets: fileAndEnvSecrets({}) });
    const edge = factory(pdnsClass('edge')) as PowerDnsBackend;
    assert.equal(edge.resyncIntervalMs, 300_000);
    assert.equal(factory(pdnsClass('edge', { resyncSeconds: 30, zoneKind: 'Master' })), edge);
    assert.equal(edge.resyncIntervalMs, 30_000);
    assert.equal(
      factory(pdnsClass('edge', { url: 'http://127.0.0.1:1/' })),
      edge,
      'a trailing slash is the same url',
    );
    assert.notEqual(factory(pdnsClass('edge', { url: 'http://127.0.0.1:2' })), edge);
    assert.notEqual(factory(pdnsClass('edge', { serverId: 'other' })), edge);
    assert.equal(factory.powerDnsBackends.size, 3);
    factory.close();
  });

  test('folder mode: a Kubernetes Secret for the API key is a clear error on the zone, never a crash', async () => {
    const factory = createBackendFactory({ builtin, secrets: fileAndEnvSecrets({}) });
    const backend = factory(
      pdnsClass('edge', { apiKeySecretRef: { namespace: 'dns-system', name: 'pdns', key: 'api-key' } }),
    );
    await assert.rejects(
      backend.servedSerial('example.com.'),
      (e: Error & { code?: string; reason?: string }) => {
        assert.equal(e.code, 'PDNS_API_KEY');
        assert.equal(e.reason, 'BackendRejected');
        assert.match(
          e.message,
          /cannot read the PowerDNS API key: secret dns-system\/pdns key api-key is a Kubernetes Secret/,
        );
        return true;
      },
    );
    const unset = factory(pdnsClass('env'));
    await assert.rejects(unset.servedSerial('example.com.'), /ZONEKEEPER_TEST_PDNS_KEY .* is not set/);
    factory.close();
  });
});
