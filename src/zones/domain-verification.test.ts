import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DNSZone, DNSZoneClass, Domain } from '../api/index.ts';
import { computeZones } from './compute-zones.ts';
import {
  challengeAddressAllowed,
  coveringDomain,
  DEFAULT_RETRY_SCHEDULE,
  delegationCheck,
  domainApex,
  httpChallengeUrl,
  nameServerOverlap,
  olderClaim,
  parseNetwork,
  parseRetrySchedule,
  retryDelayMs,
  txtChallengeName,
  verificationConditions,
} from './domain-verification.ts';

function domain(namespace: string, name: string, domainName: string, extra: Partial<Domain> = {}): Domain {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'Domain',
    metadata: { name, namespace, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { domainName },
    ...extra,
  };
}

function verified(d: Domain, created: string, status: 'True' | 'False' = 'True'): Domain {
  return {
    ...d,
    metadata: { ...d.metadata, creationTimestamp: created },
    status: {
      conditions: [
        {
          type: 'Verified',
          status,
          reason: 'x',
          message: 'x',
          observedGeneration: 1,
          lastTransitionTime: created,
        },
      ],
    },
  };
}

function zoneClass(name: string, zoneNameServers?: string[]): DNSZoneClass {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSZoneClass',
    metadata: { name },
    spec: {
      backend: { builtin: {} },
      nameServers: ['ns1.provider.test.'],
      ...(zoneNameServers ? { zoneNameServers } : {}),
    },
  };
}

function zone(namespace: string, domainName: string, className: string): DNSZone {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSZone',
    metadata: { name: 'z', namespace, generation: 1 },
    spec: { domainName, className },
  };
}

describe('domain verification', () => {
  test('the apex comes from the Public Suffix List, private section included', () => {
    assert.deepEqual(domainApex('shop.example.co.uk'), { apex: 'example.co.uk' });
    assert.deepEqual(domainApex('Example.COM.'), { apex: 'example.com' });
    assert.deepEqual(
      domainApex('me.github.io'),
      { apex: 'me.github.io' },
      'github.io is a private-section suffix',
    );
    assert.deepEqual(domainApex('a.b.example.test'), { apex: 'example.test' });
  });

  test('a public suffix cannot be claimed', () => {
    for (const name of ['co.uk', 'github.io', 'com']) {
      const r = domainApex(name);
      assert.ok('error' in r, name);
      assert.match(r.error, /public suffix/);
    }
  });

  test('challenge names and URLs', () => {
    assert.equal(txtChallengeName('Example.com.'), '_zonekeeper-challenge.example.com');
    assert.equal(txtChallengeName('example.com', '_verify'), '_verify.example.com');
    assert.equal(
      httpChallengeUrl('example.com', 't'),
      'http://example.com/.well-known/zonekeeper-challenge/t',
    );
    assert.equal(
      httpChallengeUrl('example.com', 't', 8080),
      'http://example.com:8080/.well-known/zonekeeper-challenge/t',
    );
  });

  test('the default schedule: 5 s for 5 minutes, 1 min up to 15 minutes, then 5 min, ±25 %', () => {
    const s = DEFAULT_RETRY_SCHEDULE;
    assert.equal(retryDelayMs(s, 0, 0.5), 5000);
    assert.equal(retryDelayMs(s, 4 * 60_000, 0.5), 5000);
    assert.equal(retryDelayMs(s, 5 * 60_000, 0.5), 60_000);
    assert.equal(retryDelayMs(s, 14 * 60_000, 0.5), 60_000);
    assert.equal(retryDelayMs(s, 15 * 60_000, 0.5), 300_000);
    assert.equal(retryDelayMs(s, 0, 0), 3750, '-25 %');
    assert.equal(retryDelayMs(s, 0, 0.999999), 6250, '+25 %');
  });

  test('schedules are written as every/until steps', () => {
    assert.deepEqual(parseRetrySchedule('5s/5m,1m/15m,5m±25%'), DEFAULT_RETRY_SCHEDULE);
    assert.deepEqual(parseRetrySchedule('200ms/2s,1s'), {
      steps: [{ everyMs: 200, untilMs: 2000 }],
      thenEveryMs: 1000,
      jitter: 0.25,
    });
    assert.equal(parseRetrySchedule('1s+-10%').jitter, 0.1);
    assert.throws(() => parseRetrySchedule('5s/5m,1m/1m,5m'), /later than/);
    assert.throws(() => parseRetrySchedule('soon'), /one duration/);
    assert.throws(() => parseRetrySchedule('1s±100%'), /below 100/);
  });

  test('the HTTP challenge never reaches loopback, link-local or metadata addresses unless allow-listed', () => {
    for (const a of [
      '169.254.169.254',
      '169.254.1.1',
      '127.0.0.1',
      '0.0.0.0',
      '100.100.100.200',
      '168.63.129.16',
      '64:ff9b::a83f:8110',
      '::1',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:169.254.169.254',
      '224.0.0.1',
      'not-an-address',
    ])
      assert.equal(challengeAddressAllowed(a), false, a);
    for (const a of ['192.0.2.10', '2001:db8::1', '198.51.100.7', '172.32.0.1', '100.128.0.1'])
      assert.equal(challengeAddressAllowed(a), true, a);
    // Private and shared networks (a tenant must not reach the cluster's own network), also disguised
    // as IPv6 carrying the IPv4 address (NAT64, 6to4, IPv4-compatible).
    for (const a of [
      '10.0.0.1',
      '10.96.0.10',
      '172.16.0.1',
      '172.31.255.254',
      '192.168.1.1',
      '100.64.0.1',
      '100.127.255.254',
      'fc00::1',
      'fd12:3456::1',
      '64:ff9b::10.0.0.1',
      '64:ff9b::a9fe:a9fe',
      '2002:0a00:0001::1',
      '2002:a9fe:a9fe::1',
      '::10.0.0.1',
    ])
      assert.equal(challengeAddressAllowed(a), false, a);
    assert.equal(challengeAddressAllowed('10.1.2.3', [parseNetwork('10.1.0.0/16')!]), true, 'allow-listed');
    assert.equal(challengeAddressAllowed('64:ff9b::c000:20a'), true, 'NAT64 of a public address');
    const allow = [parseNetwork('127.0.0.1/32')!];
    assert.equal(challengeAddressAllowed('127.0.0.1', allow), true);
    assert.equal(challengeAddressAllowed('127.0.0.2', allow), false);
    assert.equal(challengeAddressAllowed('169.254.169.254', allow), false);
    assert.equal(parseNetwork('10.0.0.0/33'), undefined);
  });

  test('a delegation proves ownership only when the zone has name servers of its own', () => {
    const d = domain('team-a', 'd', 'example.test');
    const shared = zoneClass('shared');
    const own = zoneClass('own', ['{hash}.ns1.provider.test.', '{hash}.ns2.provider.test.']);
    const classes = new Map([
      ['shared', shared],
      ['own', own],
    ]);
    assert.equal(delegationCheck(d, [], classes).kind, 'noZone');
    assert.equal(
      delegationCheck(d, [zone('team-b', 'example.test', 'own')], classes).kind,
      'noZone',
      "another namespace's zone does not count",
    );
    const s = delegationCheck(d, [zone('team-a', 'example.test', 'shared')], classes);
    assert.equal(s.kind, 'sharedNameServers');
    assert.match((s as { message: string }).message, /any namespace could claim it/);
    const c = delegationCheck(d, [zone('team-a', 'Example.test.', 'own')], classes);
    assert.equal(c.kind, 'check');
    const names = (c as { nameServers: string[] }).nameServers;
    assert.equal(names.length, 2);
    assert.match(names[0]!, /^[0-9a-f]{12}\.ns1\.provider\.test$/);
    const other = delegationCheck(
      domain('team-b', 'd', 'example.test'),
      [zone('team-b', 'example.test', 'own')],
      classes,
    );
    assert.notDeepEqual((other as { nameServers: string[] }).nameServers, names, 'the hash is per namespace');
    assert.deepEqual(nameServerOverlap(['A.ns1.provider.test.', 'x.other.test'], ['a.ns1.provider.test']), [
      'a.ns1.provider.test',
    ]);
  });

  test('the older verified claim of another namespace wins', () => {
    const a = verified(domain('team-a', 'd', 'example.test'), '2026-01-01T00:00:00Z');
    const b = domain('team-b', 'd', 'example.test', {
      metadata: { name: 'd', namespace: 'team-b', generation: 1, creationTimestamp: '2026-01-02T00:00:00Z' },
    });
    assert.equal(olderClaim(b, [a, b])?.metadata.namespace, 'team-a', 'an unverified claim waits');
    assert.equal(olderClaim(a, [a, b]), undefined);
    const bVerified = verified(b, '2026-01-02T00:00:00Z');
    assert.equal(
      olderClaim(bVerified, [a, bVerified])?.metadata.namespace,
      'team-a',
      'both verified: older wins',
    );
    assert.equal(olderClaim(a, [a, bVerified]), undefined);
    const aLost = verified(domain('team-a', 'd', 'example.test'), '2026-01-01T00:00:00Z', 'False');
    assert.equal(olderClaim(b, [aLost, b]), undefined, 'a claim that is no longer verified holds nothing');
    assert.equal(olderClaim(b, [domain('team-b', 'other', 'example.test'), b]), undefined, 'same namespace');
  });

  test('a zone is covered by a verified Domain of its namespace at or above its domain', () => {
    const a = verified(domain('team-a', 'd', 'example.test'), '2026-01-01T00:00:00Z');
    assert.equal(coveringDomain('team-a', 'example.test', [a]), a);
    assert.equal(coveringDomain('team-a', 'sub.example.test.', [a]), a);
    assert.equal(coveringDomain('team-a', 'badexample.test', [a]), undefined);
    assert.equal(coveringDomain('team-b', 'example.test', [a]), undefined);
    assert.equal(
      coveringDomain('team-a', 'example.test', [domain('team-a', 'd', 'example.test')]),
      undefined,
    );
  });

  test('conditions: any passing path verifies, unless an older claim holds the name', () => {
    const pass = { passed: true, reason: 'RecordFound', message: 'found' };
    const fail = { passed: false, reason: 'RecordNotFound', message: 'not found' };
    const c = verificationConditions({ dnsZone: fail, dns: pass, http: fail }, 3);
    assert.deepEqual(
      c.map((x) => [x.type, x.status, x.observedGeneration]),
      [
        ['VerifiedDNSZone', 'False', 3],
        ['VerifiedDNS', 'True', 3],
        ['VerifiedHTTP', 'False', 3],
        ['Verified', 'True', 3],
      ],
    );
    const none = verificationConditions({ dnsZone: fail, dns: fail, http: fail }, 3).at(-1)!;
    assert.equal(none.status, 'False');
    assert.equal(none.reason, 'NotVerified');
    const other = verified(domain('team-a', 'd', 'example.test'), '2026-01-01T00:00:00Z');
    const claimed = verificationConditions({ dnsZone: fail, dns: pass, http: fail, claimedBy: other }, 3).at(
      -1,
    )!;
    assert.equal(claimed.status, 'False');
    assert.equal(claimed.reason, 'ClaimedByOtherNamespace');
    assert.match(claimed.message, /namespace team-a/);
  });

  test('computeZones (plan, zone export) applies requireVerifiedDomain as the operator does', () => {
    const gated: DNSZoneClass = {
      ...zoneClass('builtin'),
      spec: { ...zoneClass('builtin').spec, requireVerifiedDomain: true },
    };
    const squat = {
      ...zone('squatter', 'example.test', 'builtin'),
      metadata: { name: 'z', namespace: 'squatter', creationTimestamp: '2026-01-01T00:00:00Z' },
    };
    const owned = {
      ...zone('team-a', 'example.test', 'builtin'),
      metadata: { name: 'z', namespace: 'team-a', creationTimestamp: '2026-01-02T00:00:00Z' },
    };
    assert.deepEqual(computeZones([gated, squat, owned]), [], 'no verified Domain: nothing served');
    const served = computeZones([
      gated,
      squat,
      owned,
      verified(domain('team-a', 'd', 'example.test'), '2026-01-03T00:00:00Z'),
    ]);
    assert.deepEqual(
      served.map((z) => z.key),
      ['team-a/z'],
      "the verified namespace's zone, although the squatter's is older",
    );
  });
});
