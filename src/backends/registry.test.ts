import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { zoneClass } from '../../test/support/resources.ts';
import { BACKEND_KINDS, BACKEND_SCHEMAS, type DNSZoneClass } from '../api/index.ts';
import { fileAndEnvSecrets } from '../control/secrets.ts';
import { ZoneTable } from '../server/zone-table.ts';
import { BackendError, programmedBy, readBack } from './backend.ts';
import { BuiltinBackend } from './builtin/builtin-backend.ts';
import { PowerDnsBackend, type PowerDnsSettings } from './powerdns/powerdns-backend.ts';
import { BACKENDS, createBackendFactory } from './registry.ts';

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

describe('backend registry and factory', () => {
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
    assert.equal(factory.made.size, 3);
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

  test('every kind the API accepts is registered with the API schema and the capabilities its backends carry', () => {
    assert.deepEqual(Object.keys(BACKENDS), BACKEND_KINDS);
    const factory = createBackendFactory({ builtin, secrets: fileAndEnvSecrets({}) });
    const classes: Record<string, DNSZoneClass> = {
      builtin: zoneClass('b'),
      powerdns: pdnsClass('p'),
      homelabWebhook: zoneClass('h', ['ns1.example.com.'], {
        backend: { homelabWebhook: { url: 'http://127.0.0.1:7100' } },
      }),
      rfc2136: zoneClass('r', ['ns1.example.com.'], {
        backend: {
          rfc2136: {
            server: '192.0.2.53',
            tsigKey: { name: 'zk', algorithm: 'hmac-sha256', secretRef: { env: 'ZK_KEY' } },
          },
        },
      }),
      externalDNSWebhook: zoneClass('e', ['ns1.example.com.'], {
        backend: { externalDNSWebhook: { url: 'http://127.0.0.1:8888' } },
      }),
    };
    // A webhook provider has no SOA and an RFC 2136 server keeps its own: Programmed is content read back.
    const programmed: Record<string, 'serial' | 'content'> = {
      builtin: 'serial',
      powerdns: 'serial',
      homelabWebhook: 'content',
      rfc2136: 'content',
      externalDNSWebhook: 'content',
    };
    for (const kind of BACKEND_KINDS) {
      assert.equal(BACKENDS[kind].schema, BACKEND_SCHEMAS[kind], `${kind}: the schema the CRD is made of`);
      const made = factory(classes[kind]!);
      assert.equal(made.capabilities, BACKENDS[kind].capabilities, `${kind}: capabilities`);
      assert.equal(programmedBy(made.capabilities), programmed[kind], `${kind}: what Programmed means`);
    }
    factory.close();
  });

  test('a class with no registered kind is refused with UNKNOWN_BACKEND, never served by the built-in server', async () => {
    const factory = createBackendFactory({ builtin, secrets: fileAndEnvSecrets({}) });
    for (const backend of [{ webhook: { url: 'http://192.0.2.1' } }, {}, { builtin: {}, powerdns: {} }]) {
      const cls = zoneClass('future', ['ns1.example.com.'], { backend: backend as never });
      const made = factory(cls);
      assert.notEqual(made, builtin);
      const refused = (e: unknown) => {
        assert.ok(e instanceof BackendError);
        assert.equal(e.code, 'UNKNOWN_BACKEND');
        assert.equal(e.reason, 'BackendRejected');
        assert.match(
          e.message,
          /DNSZoneClass future: spec\.backend sets .*; set exactly one of builtin, powerdns, homelabWebhook, rfc2136, externalDNSWebhook/,
        );
        return true;
      };
      await assert.rejects(
        made.applyZone({
          key: 'dns/example-com',
          origin: 'example.com.',
          soa: {
            mname: 'ns1.example.com.',
            rname: 'h.example.com.',
            refresh: 1,
            retry: 1,
            expire: 1,
            minimum: 1,
            ttl: 1,
          },
          serial: 1,
          rrsets: () => [],
        }),
        refused,
      );
      await assert.rejects(made.health!(), refused);
      assert.equal(await made.servedSerial('example.com.'), undefined);
      await made.deleteZone('example.com.'); // nothing was programmed: deletion never sticks
    }
    assert.equal(factory.made.size, 0);
  });
});

describe('readBack: what Programmed means per backend', () => {
  const zone = {
    origin: 'example.com.',
    serial: 7,
    soa: {
      mname: 'ns1.example.com.',
      rname: 'h.example.com.',
      refresh: 1,
      retry: 1,
      expire: 1,
      minimum: 1,
      ttl: 1,
    },
    rrsets: () => [],
  };
  const base = {
    name: 'target',
    applyZone: async () => undefined,
    deleteZone: async () => undefined,
  };
  const caps = (serial: 'authority' | 'own' | 'none') => ({
    serial,
    transfers: false,
    alias: false,
    steering: false,
    dnssec: false,
    driftRepair: false,
  });

  test('a serial authority: exactly the serial read back', async () => {
    let served: number | undefined = 6;
    const backend = { ...base, capabilities: caps('authority'), servedSerial: async () => served };
    assert.deepEqual(await readBack(backend, zone), {
      programmed: false,
      message: 'target serves serial 6, expected 7',
    });
    served = 7;
    assert.deepEqual(await readBack(backend, zone), { programmed: true, message: 'target serves serial 7' });
  });

  test('a target with its own SOA or none: the content read back, whatever serial it shows', async () => {
    for (const serial of ['own', 'none'] as const) {
      let same = false;
      const backend = {
        ...base,
        capabilities: caps(serial),
        servedSerial: async () => 12345,
        servedContent: async () => same,
      };
      assert.equal(programmedBy(backend.capabilities), 'content');
      assert.deepEqual(await readBack(backend, zone), {
        programmed: false,
        message: 'target does not serve the content of serial 7 yet',
      });
      same = true;
      assert.deepEqual(await readBack(backend, zone), {
        programmed: true,
        message: 'target serves the content of serial 7',
      });
      const { servedContent: _, ...blind } = backend;
      await assert.rejects(readBack(blind, zone), (e: BackendError) => e.code === 'UNSUPPORTED_READ_BACK');
    }
  });
});
