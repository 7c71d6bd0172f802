/**
 * Registration data against stand-ins for the internet's services on loopback (the RDAP server with
 * its bootstrap file, IANA's WHOIS, a registry's WHOIS; test/support/registration-stand-ins.ts):
 * RDAP through the bootstrap registry, WHOIS with IANA's referral as the fallback, Retry-After and the
 * per-server rate limit honoured, answers cached; and in the domain controller, status.registration
 * and the RegistrationExpiring condition.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Domain } from '../src/api/index.ts';
import { DomainController } from '../src/control/domain-controller.ts';
import { MemoryStore } from '../src/control/memory-store.ts';
import { RateLimitedError, RegistrationClient } from '../src/domains/registration-client.ts';
import {
  ianaReferral,
  type RdapStandIn,
  rdapDomain,
  registryWhois,
  startRdapStandIn,
  startWhoisStandIn,
  type WhoisStandIn,
} from './support/registration-stand-ins.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const inDays = (days: number) =>
  new Date(Date.now() + days * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');

describe('registration data from RDAP and WHOIS stand-ins', { timeout: 60_000 }, () => {
  let rdap: RdapStandIn;
  let iana: WhoisStandIn;
  let registry: WhoisStandIn;

  before(async () => {
    rdap = await startRdapStandIn(['test']);
    rdap.domains.set(
      'example.test',
      rdapDomain('example.test', {
        registrar: 'Stand-in Registrar, Inc.',
        expires: '2030-03-04T05:06:07Z',
        abuse: 'abuse@registrar.test',
      }),
    );
    rdap.domains.set(
      'soon.test',
      rdapDomain('soon.test', {
        registrar: 'Stand-in Registrar, Inc.',
        expires: inDays(5),
        abuse: 'abuse@registrar.test',
      }),
    );
    rdap.domains.set(
      'other.test',
      rdapDomain('other.test', {
        registrar: 'Other Registrar',
        expires: '2031-01-01T00:00:00Z',
        abuse: 'abuse@other.test',
      }),
    );
    registry = await startWhoisStandIn((q) =>
      q === 'example.legacy'
        ? registryWhois(q, { registrar: 'Legacy Registrar LLC', expires: '2029-09-09T09:09:09Z' })
        : 'No match for domain.\r\n',
    );
    iana = await startWhoisStandIn((q) =>
      q === 'legacy' ? ianaReferral('legacy', '127.0.0.1') : '% no such TLD\r\n',
    );
  });

  after(async () => {
    await Promise.all([rdap?.close(), iana?.close(), registry?.close()]);
  });

  const client = (extra: Partial<ConstructorParameters<typeof RegistrationClient>[0]> = {}) =>
    new RegistrationClient({
      bootstrapUrl: rdap.bootstrapUrl,
      whoisServer: `127.0.0.1:${iana.port}`,
      whoisPort: registry.port,
      timeoutMs: 2000,
      minIntervalMs: 0,
      ...extra,
    });

  test('RDAP through the bootstrap registry: registrar, dates, statuses, DNSSEC, name servers, abuse contact', async () => {
    const before = rdap.requests.length;
    const c = client();
    const r = await c.lookup('Example.test.');
    assert.deepEqual(r, {
      source: 'RDAP',
      server: `${rdap.url}/rdap/`,
      registry: '127.0.0.1',
      registrar: 'Stand-in Registrar, Inc.',
      abuseEmail: 'abuse@registrar.test',
      abusePhone: '+1.5555550100',
      created: '2019-03-04T05:06:07Z',
      updated: '2026-02-03T04:05:06Z',
      expires: '2030-03-04T05:06:07Z',
      statuses: ['client transfer prohibited', 'active'],
      dnssecSigned: true,
      nameservers: ['ns1.provider.test', 'ns2.provider.test'],
    });
    await c.lookup('other.test');
    await c.lookup('example.test');
    const paths = rdap.requests.slice(before).map((q) => q.path);
    assert.deepEqual(
      paths,
      ['/bootstrap/dns.json', '/rdap/domain/example.test', '/rdap/domain/other.test'],
      'the bootstrap file and answers are cached',
    );
  });

  test('WHOIS is the fallback: IANA refers the TLD to its registry, which answers', async () => {
    const r = await client().lookup('example.legacy');
    assert.equal(r.source, 'WHOIS');
    assert.equal(r.registrar, 'Legacy Registrar LLC');
    assert.equal(r.expires, '2029-09-09T09:09:09Z');
    assert.equal(r.created, '2010-05-06T07:08:09Z');
    assert.deepEqual(r.statuses, ['clientDeleteProhibited', 'clientTransferProhibited']);
    assert.deepEqual(r.nameservers, ['ns1.legacy-dns.legacy', 'ns2.legacy-dns.legacy']);
    assert.equal(r.dnssecSigned, false);
    assert.equal(r.abuseEmail, 'abuse@registrar.legacy');
    assert.ok(iana.queries.includes('legacy'));
    assert.ok(registry.queries.includes('example.legacy'));
    await assert.rejects(
      client().lookup('nowhere.invalidtld'),
      /RDAP: the bootstrap registry has no RDAP server.*WHOIS: .* refers to no WHOIS server/,
    );
  });

  test('Retry-After is honoured: no request to that server until it has passed', async () => {
    const c = client();
    rdap.retryAfter = '120';
    try {
      const e = await c.lookup('example.test').then(
        () => undefined,
        (err: unknown) => err,
      );
      assert.ok(e instanceof RateLimitedError, String(e));
      assert.equal(e.retryAfterMs, 120_000);
      const count = rdap.requests.length;
      await assert.rejects(c.lookup('other.test'), RateLimitedError);
      assert.equal(rdap.requests.length, count, 'the server was not asked again');
    } finally {
      rdap.retryAfter = undefined;
    }
  });

  test('each server is asked at most once per minIntervalMs', async () => {
    const c = client({ minIntervalMs: 300 });
    const before = rdap.requests.length;
    const start = Date.now();
    await Promise.all([c.lookup('example.test'), c.lookup('other.test'), c.lookup('soon.test')]);
    const times = rdap.requests.slice(before).map((q) => q.at);
    assert.equal(times.length, 4, 'bootstrap and three domains');
    // The n-th request's turn comes n intervals after the first could go: a lower bound from the
    // start, which a late timer or a slow request cannot make fail (the gap between two arrivals can
    // be shorter when the earlier one was delayed on a loaded machine).
    for (let i = 1; i < times.length; i++)
      assert.ok(times[i]! - start >= i * 300 - 10, `request ${i} after ${times[i]! - start} ms`);
  });

  test('the domain controller writes status.registration and RegistrationExpiring', async () => {
    const store = new MemoryStore();
    const controller = new DomainController({
      store,
      // Verification look-ups go nowhere here; only the registration matters.
      probe: {
        txt: async () => [],
        delegation: async () => [],
        http: async () => ({
          passed: false,
          reason: 'TokenNotServed',
          message: 'no web server in this test',
        }),
      },
      registration: client(),
      expiryWarningMs: 30 * 86_400_000,
    });
    controller.start();
    try {
      for (const name of ['example.test', 'soon.test'])
        store.apply({
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'Domain',
          metadata: { name: name.replace('.', '-'), namespace: 'team-a' },
          spec: { domainName: `www.${name}` },
        } as Domain);
      const condition = (name: string) =>
        (store.get('Domain', `team-a/${name}`) as Domain | undefined)?.status?.conditions?.find(
          (c) => c.type === 'RegistrationExpiring',
        );
      const soon = (await waitFor(async () => condition('soon-test'), 20_000)).value;
      assert.equal(soon.status, 'True');
      assert.equal(soon.reason, 'ExpiresSoon');
      assert.match(soon.message, /renew it with Stand-in Registrar, Inc\./);
      const fine = (await waitFor(async () => condition('example-test'), 20_000)).value;
      assert.equal(fine.status, 'False');
      const reg = (store.get('Domain', 'team-a/example-test') as Domain).status?.registration;
      assert.equal(reg?.registrar, 'Stand-in Registrar, Inc.');
      assert.equal(reg?.expires, '2030-03-04T05:06:07Z');
      assert.deepEqual(reg?.nameservers, ['ns1.provider.test', 'ns2.provider.test']);
      assert.ok(reg?.refreshed);
      assert.equal(
        (store.get('Domain', 'team-a/example-test') as Domain).status?.apex,
        'example.test',
        'the apex is looked up',
      );
    } finally {
      controller.stop();
    }
  });
});
