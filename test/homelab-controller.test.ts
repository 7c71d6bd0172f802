/**
 * The homelab controller (DNSClass/DNSRecord pushed to a provider) against the independent Python
 * provider, with the provider failing and recovering: retries, renames, deletes, class moves, drift.
 * Objects live in a MemoryStore (the API server's semantics); the provider is a real process.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ForeignObject } from '../src/api/frontdoors/front-door.ts';
import { createHomelabClient } from '../src/backends/homelab-webhook/client.ts';
import { CLASS_DOOR, HomelabController, RECORD_DOOR } from '../src/control/homelab/homelab-controller.ts';
import type { HomelabSettings } from '../src/control/homelab/settings.ts';
import { MemoryStore } from '../src/control/memory-store.ts';
import { fileAndEnvSecrets } from '../src/control/secrets.ts';
import { type PythonProvider, startPythonProvider } from './support/homelab-provider.ts';

const FAST: HomelabSettings = {
  healthCheckIntervalMs: 200,
  retryBaseDelayMs: 20,
  retryMaxDelayMs: 100,
  retryMaxAttempts: 3,
  driftCheckIntervalMs: 150,
};

const API = 'dns.homelab.mortenolsen.pro/v1alpha1';

function dnsClass(name: string, server: string, secret?: string): ForeignObject {
  return {
    apiVersion: API,
    kind: 'DNSClass',
    metadata: { name },
    spec: { server, ...(secret ? { hmacAuth: { secret, algorithm: 'SHA256' } } : {}) },
  };
}

function dnsRecord(name: string, spec: Record<string, unknown>, namespace = 'production'): ForeignObject {
  return { apiVersion: API, kind: 'DNSRecord', metadata: { name, namespace }, spec };
}

/** Waits until `check` holds, polling (no timing is asserted; the test runner's timeout bounds it). */
async function until<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
): Promise<T> {
  for (let i = 0; ; i++) {
    const v = await check();
    if (v) return v;
    if (i > 2000) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function ready(
  store: MemoryStore,
  door: string,
  key: string,
): { status?: string; reason?: string; message?: string } {
  const status = store.getForeign(door, key)?.status as
    | { conditions?: { type: string; status: string; reason: string; message: string }[] }
    | undefined;
  return status?.conditions?.find((c) => c.type === 'Ready') ?? {};
}

describe('homelab controller against the Python provider', () => {
  let a: PythonProvider;
  let b: PythonProvider;
  let store: MemoryStore;
  let controller: HomelabController;

  before(async () => {
    a = await startPythonProvider({ secret: 'secret-a' });
    b = await startPythonProvider({ secret: 'secret-b', algorithm: 'SHA512' });
    store = new MemoryStore();
    controller = new HomelabController({
      store,
      providers: createHomelabClient,
      secrets: fileAndEnvSecrets({ HL_SECRET_B: 'secret-b' }),
      settings: FAST,
    });
    controller.start();
    store.applyForeign(CLASS_DOOR, dnsClass('alpha', a.url, 'secret-a'));
    const classB = dnsClass('beta', b.url);
    (classB.spec as Record<string, unknown>).hmacAuth = {
      secretRef: { name: 'env:HL_SECRET_B' },
      algorithm: 'SHA512',
    };
    store.applyForeign(CLASS_DOOR, classB);
  });
  after(async () => {
    controller.stop();
    await Promise.all([a.stop(), b.stop()]);
  });

  test('classes: GET /health makes them Ready with ServerHealthy', async () => {
    await until(() => ready(store, CLASS_DOOR, 'alpha').reason === 'ServerHealthy', 'alpha healthy');
    await until(
      () => ready(store, CLASS_DOOR, 'beta').reason === 'ServerHealthy',
      'beta healthy (secret from env, SHA512)',
    );
    const status = store.getForeign(CLASS_DOOR, 'alpha')?.status as {
      health: { status: string };
      lastHealthCheck: string;
    };
    assert.equal(status.health.status, 'Healthy');
    assert.ok(status.lastHealthCheck);
  });

  test('a record is pushed with its finalizer; status Created, fqdn, lastSyncTime; MX metadata travels', async () => {
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('mail', {
        type: 'MX',
        domain: 'example.com',
        subdomain: '@',
        dnsClassRef: { name: 'alpha' },
        values: ['mail.example.com'],
        metadata: { priority: 10 },
      }),
    );
    await until(() => ready(store, RECORD_DOOR, 'production/mail').status === 'True', 'mail ready');
    const obj = store.getForeign(RECORD_DOOR, 'production/mail')!;
    assert.deepEqual(obj.metadata.finalizers, ['dns.homelab.mortenolsen.pro/finalizer']);
    const status = obj.status as {
      state: string;
      fqdn: string;
      lastSyncTime: string;
      observedGeneration: number;
    };
    assert.equal(status.state, 'Created');
    assert.equal(status.fqdn, 'example.com');
    assert.ok(status.lastSyncTime);
    const held = (await a.records()).find((r) => r.type === 'MX');
    assert.deepEqual(held?.values, ['mail.example.com']);
    assert.equal(held?.ttl, 300);
    assert.deepEqual(held?.metadata, { priority: 10 });
  });

  test('a rename (subdomain change) deletes the old record at the provider', async () => {
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('web', {
        type: 'A',
        domain: 'example.com',
        subdomain: 'www',
        dnsClassRef: { name: 'alpha' },
        values: ['192.0.2.1'],
      }),
    );
    await until(async () => (await a.records()).some((r) => r.fqdn === 'www.example.com'), 'www pushed');
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('web', {
        type: 'A',
        domain: 'example.com',
        subdomain: 'web',
        dnsClassRef: { name: 'alpha' },
        values: ['192.0.2.1'],
      }),
    );
    await until(async () => {
      const names = (await a.records()).map((r) => r.fqdn);
      return names.includes('web.example.com') && !names.includes('www.example.com');
    }, 'www deleted, web pushed');
    await until(
      () =>
        (store.getForeign(RECORD_DOOR, 'production/web')?.status as { state?: string })?.state === 'Updated',
      'Updated',
    );
  });

  test('the provider fails: Ready=False with the reason, retries with backoff, then says it keeps retrying; recovers', async () => {
    await a.fail('503');
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('api', {
        type: 'AAAA',
        domain: 'example.com',
        subdomain: 'api',
        dnsClassRef: { name: 'alpha' },
        values: ['2001:db8::1'],
      }),
    );
    await until(() => ready(store, RECORD_DOOR, 'production/api').reason === 'ServerError', 'ServerError');
    const err = store.getForeign(RECORD_DOOR, 'production/api')?.status as {
      error: { code: string };
      state: string;
    };
    assert.equal(err.state, 'Error');
    assert.equal(err.error.code, 'SERVER_ERROR');
    await until(
      () =>
        /3 attempts failed, still retrying every 100ms/.test(
          ready(store, RECORD_DOOR, 'production/api').message ?? '',
        ),
      'exhausted message',
    );
    await a.fail('drop');
    await until(
      () => ready(store, RECORD_DOOR, 'production/api').reason === 'ServerUnreachable',
      'ServerUnreachable',
    );
    await a.fail(null);
    await until(() => ready(store, RECORD_DOOR, 'production/api').status === 'True', 'recovered');
    assert.equal(
      (store.getForeign(RECORD_DOOR, 'production/api')!.status as { error?: unknown }).error,
      undefined,
    );
    assert.ok((await a.records()).some((r) => r.fqdn === 'api.example.com'));
  });

  test('a refused value is ValidationFailed with the provider code', async () => {
    await a.reject('TXT', 'example.com', 'note');
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('note', {
        type: 'TXT',
        domain: 'example.com',
        subdomain: 'note',
        dnsClassRef: { name: 'alpha' },
        values: ['hello'],
      }),
    );
    await until(
      () => ready(store, RECORD_DOOR, 'production/note').reason === 'ValidationFailed',
      'ValidationFailed',
    );
    assert.equal(
      (store.getForeign(RECORD_DOOR, 'production/note')!.status as { error: { code: string } }).error.code,
      'INVALID_VALUE',
    );
    await a.clearRejects();
    await until(
      () => ready(store, RECORD_DOOR, 'production/note').status === 'True',
      'accepted after the provider stops refusing',
    );
  });

  test('a class move deletes the record from the old provider, even while the old provider first fails', async () => {
    await until(async () => (await a.records()).some((r) => r.fqdn === 'web.example.com'), 'web at alpha');
    await a.fail('500');
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('web', {
        type: 'A',
        domain: 'example.com',
        subdomain: 'web',
        dnsClassRef: { name: 'beta' },
        values: ['192.0.2.1'],
      }),
    );
    await until(
      () => /could not be deleted/.test(ready(store, RECORD_DOOR, 'production/web').message ?? ''),
      'old delete failing',
    );
    assert.ok(
      !(await b.records()).some((r) => r.fqdn === 'web.example.com'),
      'not pushed to the new provider before the old one is cleaned',
    );
    await a.fail(null);
    await until(async () => (await b.records()).some((r) => r.fqdn === 'web.example.com'), 'web at beta');
    assert.ok(!(await a.records()).some((r) => r.fqdn === 'web.example.com'), 'web gone from alpha');
    await until(() => ready(store, RECORD_DOOR, 'production/web').status === 'True', 'ready at beta');
  });

  test('drift at the provider is repaired by the periodic read-back', async () => {
    await b.drift({ type: 'A', domain: 'example.com', subdomain: 'web', values: ['198.51.100.9'] });
    await until(async () => {
      const r = (await b.records()).find((x) => x.fqdn === 'web.example.com');
      return r?.values[0] === '192.0.2.1';
    }, 'drift repaired');
    await b.drift({ type: 'A', domain: 'example.com', subdomain: 'web', delete: true });
    await until(
      async () => (await b.records()).some((x) => x.fqdn === 'web.example.com'),
      'deleted record restored',
    );
  });

  test('deletion: the finalizer holds while the provider fails, the record is deleted, then the object goes', async () => {
    await b.fail('503');
    store.removeForeign(RECORD_DOOR, 'production/web');
    await until(() => ready(store, RECORD_DOOR, 'production/web').reason === 'ServerError', 'delete failing');
    assert.ok(store.getForeign(RECORD_DOOR, 'production/web'), 'held by the finalizer');
    await b.fail(null);
    await until(() => !store.getForeign(RECORD_DOOR, 'production/web'), 'object gone');
    assert.ok(!(await b.records()).some((x) => x.fqdn === 'web.example.com'));
  });

  test('a missing class is DNSClassNotFound; creating it pushes the record', async () => {
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord(
        'later',
        {
          type: 'CNAME',
          domain: 'example.com',
          subdomain: 'later',
          dnsClassRef: { name: 'gamma' },
          values: ['web.example.com'],
        },
        'staging',
      ),
    );
    await until(
      () => ready(store, RECORD_DOOR, 'staging/later').reason === 'DNSClassNotFound',
      'DNSClassNotFound',
    );
    store.applyForeign(CLASS_DOOR, dnsClass('gamma', a.url, 'secret-a'));
    await until(
      () => ready(store, RECORD_DOOR, 'staging/later').status === 'True',
      'pushed once the class exists',
    );
  });

  test('a wrong secret is AuthenticationFailed; an unreadable secretRef is SecretNotFound', async () => {
    store.applyForeign(CLASS_DOOR, dnsClass('wrong', a.url, 'not-the-secret'));
    const badRef = dnsClass('noref', a.url);
    (badRef.spec as Record<string, unknown>).hmacAuth = { secretRef: { name: 'env:HL_NOT_SET' } };
    store.applyForeign(CLASS_DOOR, badRef);
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('w', {
        type: 'A',
        domain: 'example.com',
        subdomain: 'w',
        dnsClassRef: { name: 'wrong' },
        values: ['192.0.2.7'],
      }),
    );
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('n', {
        type: 'A',
        domain: 'example.com',
        subdomain: 'n',
        dnsClassRef: { name: 'noref' },
        values: ['192.0.2.8'],
      }),
    );
    await until(
      () => ready(store, RECORD_DOOR, 'production/w').reason === 'AuthenticationFailed',
      'AuthenticationFailed',
    );
    await until(
      () => ready(store, RECORD_DOOR, 'production/n').reason === 'SecretNotFound',
      'SecretNotFound',
    );
    await until(
      () => ready(store, CLASS_DOOR, 'wrong').reason === 'ServerError',
      'health refused with a wrong secret',
    );
  });

  test('hostile tenant: a record another namespace owns at the provider is neither overwritten nor deleted', async () => {
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('owned', {
        type: 'A',
        domain: 'example.org',
        subdomain: 'shop',
        dnsClassRef: { name: 'alpha' },
        values: ['192.0.2.50'],
      }),
    );
    await until(() => ready(store, RECORD_DOOR, 'production/owned').status === 'True', 'owner pushed');
    // Another namespace, another class with the same server: the same provider record.
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord(
        'grab',
        {
          type: 'A',
          domain: 'EXAMPLE.org',
          subdomain: 'Shop',
          dnsClassRef: { name: 'gamma' },
          values: ['198.51.100.66'],
        },
        'team-b',
      ),
    );
    const { message } = await until(() => {
      const r = ready(store, RECORD_DOOR, 'team-b/grab');
      return r.reason === 'InvalidConfiguration' ? r : undefined;
    }, 'conflict');
    assert.match(message ?? '', /belongs to DNSRecord production\/owned/);
    assert.equal(
      (store.getForeign(RECORD_DOOR, 'team-b/grab')!.status as { error: { code: string } }).error.code,
      'RECORD_CONFLICT',
    );
    const shop = async () => (await a.records()).find((r) => r.fqdn === 'shop.example.org');
    assert.deepEqual((await shop())?.values, ['192.0.2.50'], 'not overwritten');
    store.removeForeign(RECORD_DOOR, 'team-b/grab');
    await until(() => !store.getForeign(RECORD_DOOR, 'team-b/grab'), 'the intruder goes');
    assert.deepEqual((await shop())?.values, ['192.0.2.50'], 'not deleted by the intruder going');
    // A record that merely waits behind an older one takes over once the owner is gone.
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord(
        'next',
        {
          type: 'A',
          domain: 'example.org',
          subdomain: 'shop',
          dnsClassRef: { name: 'alpha' },
          values: ['192.0.2.51'],
        },
        'team-c',
      ),
    );
    await until(() => ready(store, RECORD_DOOR, 'team-c/next').reason === 'InvalidConfiguration', 'waits');
    store.removeForeign(RECORD_DOOR, 'production/owned');
    await until(async () => (await shop())?.values[0] === '192.0.2.51', 'the next one takes over');
  });

  test('an unhealthy class does not block its records', async () => {
    await a.fail('503');
    await until(() => ready(store, CLASS_DOOR, 'alpha').reason === 'ServerError', 'alpha unhealthy');
    await a.fail(null);
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('svc', {
        type: 'SRV',
        domain: 'example.com',
        subdomain: '_sip._tcp',
        dnsClassRef: { name: 'alpha' },
        values: ['sip.example.com'],
        ttl: 60,
        metadata: { priority: 10, weight: 5, port: 5060 },
      }),
    );
    await until(() => ready(store, RECORD_DOOR, 'production/svc').status === 'True', 'srv pushed');
    const srv = (await a.records()).find((r) => r.type === 'SRV');
    assert.deepEqual(srv?.metadata, { priority: 10, weight: 5, port: 5060 });
    assert.equal(srv?.ttl, 60);
  });
});

describe('homelab controller: an older DNSRecord renamed onto a pushed record (hostile tenant)', () => {
  let p: PythonProvider;
  before(async () => {
    p = await startPythonProvider({ secret: 'secret-p' });
  });
  after(async () => {
    await p.stop();
  });

  test('the record stays with the DNSRecord that holds it, while running and after a restart', async () => {
    // Regression: the owner of a provider record was the oldest DNSRecord naming it, and names can
    // change: an old DNSRecord renamed onto another namespace's record made the victim's controller
    // delete it, and the intruder's value was written.
    const store = new MemoryStore();
    const start = () => {
      const c = new HomelabController({
        store,
        providers: createHomelabClient,
        secrets: fileAndEnvSecrets({}),
        settings: FAST,
      });
      c.start();
      return c;
    };
    let controller = start();
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
    store.applyForeign(CLASS_DOOR, dnsClass('lab', p.url, 'secret-p'), at(0));
    const spec = (subdomain: string, value: string) => ({
      type: 'A',
      domain: 'example.org',
      subdomain,
      dnsClassRef: { name: 'lab' },
      values: [value],
    });
    store.applyForeign(
      RECORD_DOOR,
      dnsRecord('early', spec('placeholder', '198.51.100.6'), 'team-evil'),
      at(1),
    );
    store.applyForeign(RECORD_DOOR, dnsRecord('www', spec('www', '192.0.2.1'), 'team-a'), at(2));
    const www = async () => (await p.records()).find((r) => r.fqdn === 'www.example.org')?.values;
    await until(async () => (await www())?.[0] === '192.0.2.1', 'the victim pushed');
    await until(() => ready(store, RECORD_DOOR, 'team-evil/early').status === 'True', 'the intruder pushed');
    store.applyForeign(RECORD_DOOR, dnsRecord('early', spec('www', '198.51.100.6'), 'team-evil'), at(1));
    await until(
      () => ready(store, RECORD_DOOR, 'team-evil/early').reason === 'InvalidConfiguration',
      'refused',
    );
    assert.match(
      ready(store, RECORD_DOOR, 'team-evil/early').message ?? '',
      /belongs to DNSRecord team-a\/www, which holds it there/,
    );
    assert.deepEqual(await www(), ['192.0.2.1'], 'not overwritten');
    assert.equal(ready(store, RECORD_DOOR, 'team-a/www').status, 'True');
    // A restart: nothing in memory says who pushed what; the statuses do. The victim edits its
    // values while Zonekeeper is down (a new generation): it still holds the name it had.
    controller.stop();
    store.applyForeign(RECORD_DOOR, dnsRecord('www', spec('www', '192.0.2.2'), 'team-a'), at(2));
    controller = start();
    try {
      await until(async () => (await www())?.[0] === '192.0.2.2', 'the edit pushed after the restart');
      await until(
        () =>
          ready(store, RECORD_DOOR, 'team-a/www').status === 'True' &&
          ready(store, RECORD_DOOR, 'team-evil/early').reason === 'InvalidConfiguration',
        'judged again',
      );
      // Another round of reconciles (a drift check) after the restart changes nothing.
      await new Promise((r) => setTimeout(r, 4 * FAST.driftCheckIntervalMs));
      assert.deepEqual(await www(), ['192.0.2.2'], 'not overwritten after a restart');
      assert.equal(ready(store, RECORD_DOOR, 'team-a/www').status, 'True');
    } finally {
      controller.stop();
    }
  });
});
