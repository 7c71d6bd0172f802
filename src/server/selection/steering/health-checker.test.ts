import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type Endpoint,
  httpEndpoint,
  tcpEndpoint,
  testCertificate,
} from '../../../../test/support/health-endpoints.ts';
import { waitFor } from '../../../../test/support/zonekeeper-process.ts';
import { Registry } from '../../../metrics/registry.ts';
import { HealthChecker, type ProbeTarget } from './health-checker.ts';
import { HEALTH_DOWN, HEALTH_UP, HealthView } from './health-view.ts';

const FAST = { intervalSeconds: 1, timeoutSeconds: 1, failureThreshold: 2, successThreshold: 1 };

describe('HealthChecker against real endpoints on loopback', { timeout: 60_000 }, () => {
  const endpoints: Endpoint[] = [];
  let tlsMaterial: Awaited<ReturnType<typeof testCertificate>>;
  before(async () => {
    tlsMaterial = await testCertificate('api.example.com');
  });
  after(async () => {
    await Promise.all(endpoints.map((e) => e.close()));
  });

  function checker(extra: Partial<ConstructorParameters<typeof HealthChecker>[0]> = {}) {
    const view = new HealthView(new SharedArrayBuffer(256));
    const logs: string[] = [];
    const registry = new Registry();
    const c = new HealthChecker({
      view,
      registry,
      ca: [tlsMaterial.ca],
      // The endpoints listen on loopback, which probes reach only when the operator allows it.
      allow: ['127.0.0.0/8'],
      log: (_level, message) => logs.push(message),
      ...extra,
    });
    return { c, view, logs, registry };
  }

  const until = (f: () => boolean) => waitFor(async () => (f() ? true : undefined), 20_000);

  for (const protocol of ['HTTP', 'HTTPS', 'TCP'] as const) {
    test(`${protocol}: down after failureThreshold failures, up again, each change logged once`, async () => {
      const e =
        protocol === 'TCP'
          ? await tcpEndpoint('127.0.0.2')
          : await httpEndpoint('127.0.0.3', protocol === 'HTTPS' ? { tls: tlsMaterial } : {});
      endpoints.push(e);
      const { c, view, logs, registry } = checker();
      const target: ProbeTarget = {
        protocol,
        address: e.address,
        port: e.port,
        path: '/healthz',
        host: 'api.example.com',
        expectStatus: [],
        ...FAST,
      };
      const slot = c.acquire(target);
      try {
        await until(() => view.get(slot) === HEALTH_UP);
        await e.setUp(false);
        await until(() => view.get(slot) === HEALTH_DOWN);
        assert.equal(c.status(slot)?.state, 'Down');
        assert.ok(c.status(slot)?.lastError, 'the last error is kept');
        await e.setUp(true);
        await until(() => view.get(slot) === HEALTH_UP);
        // Let a few more probes run: no further log lines without a change.
        const checks = () =>
          Number(/zonekeeper_health_checks_total\{result="up"\} (\d+)/.exec(registry.render())?.[1] ?? 0);
        const seen = checks();
        await until(() => checks() >= seen + 2);
        assert.deepEqual(
          logs.map((l) => l.replace(/ \(.*\)$/, '').replace(/:\d+/, ':PORT')),
          [
            `health: ${protocol} ${e.address}:PORT${protocol === 'TCP' ? '' : ' api.example.com/healthz'} is up`,
            `health: ${protocol} ${e.address}:PORT${protocol === 'TCP' ? '' : ' api.example.com/healthz'} is down`,
            `health: ${protocol} ${e.address}:PORT${protocol === 'TCP' ? '' : ' api.example.com/healthz'} is up again`,
          ],
        );
        assert.match(registry.render(), /zonekeeper_health_checks_total\{result="down"\} [1-9]/);
        assert.match(registry.render(), /zonekeeper_health_targets\{state="up"\} 1/);
      } finally {
        c.stop();
      }
    });
  }

  test('HTTP probes send the Host header, judge statuses and bodies, and follow no redirect', async () => {
    const e = await httpEndpoint('127.0.0.4');
    endpoints.push(e);
    const { c, view } = checker();
    const base = {
      protocol: 'HTTP' as const,
      address: e.address,
      port: e.port,
      host: 'api.example.com',
      ...FAST,
    };
    const ok = c.acquire({ ...base, path: '/', expectStatus: [], stringMatch: 'ok' });
    const wrongBody = c.acquire({ ...base, path: '/', expectStatus: [], stringMatch: 'ready' });
    const wrongStatus = c.acquire({ ...base, path: '/', expectStatus: [204] });
    const redirect = c.acquire({ ...base, path: '/redirect', expectStatus: [] });
    try {
      await until(
        () =>
          view.get(ok) === HEALTH_UP &&
          view.get(wrongBody) === HEALTH_DOWN &&
          view.get(wrongStatus) === HEALTH_DOWN &&
          view.get(redirect) === HEALTH_DOWN,
      );
      assert.match(c.status(redirect)?.lastError ?? '', /HTTP status 302/);
      assert.match(c.status(wrongBody)?.lastError ?? '', /does not contain "ready"/);
      assert.ok(
        e.hosts.every((h) => h === `api.example.com:${e.port}`),
        e.hosts.join(),
      );
    } finally {
      c.stop();
    }
  });

  test('an HTTPS certificate for another name fails the probe', async () => {
    const e = await httpEndpoint('127.0.0.5', { tls: tlsMaterial });
    endpoints.push(e);
    const { c, view } = checker();
    const slot = c.acquire({
      protocol: 'HTTPS',
      address: e.address,
      port: e.port,
      path: '/',
      host: 'other.example.com',
      expectStatus: [],
      ...FAST,
    });
    try {
      await until(() => view.get(slot) === HEALTH_DOWN);
      assert.match(c.status(slot)?.lastError ?? '', /HTTPS/);
    } finally {
      c.stop();
    }
  });

  test('loopback, link-local and metadata addresses are never probed unless allow-listed', async () => {
    const { c, view } = checker({ allow: [] });
    const slot = c.acquire({
      protocol: 'TCP',
      address: '169.254.169.254',
      port: 80,
      path: '/',
      host: 'x',
      expectStatus: [],
      ...FAST,
      failureThreshold: 1,
    });
    try {
      await until(() => view.get(slot) === HEALTH_DOWN);
      assert.match(c.status(slot)?.lastError ?? '', /loopback, link-local or cloud metadata address/);
      assert.equal(c.permitted('fd00:ec2::254'), false);
      assert.equal(c.permitted('fe80::1'), false);
      // The server's own host: loopback, "this network" and the unspecified address.
      for (const own of ['127.0.0.1', '127.255.255.254', '::1', '0.0.0.0', '0.1.2.3', '::'])
        assert.equal(c.permitted(own), false, own);
      // Alibaba Cloud's metadata service and Azure's host address.
      assert.equal(c.permitted('100.100.100.200'), false);
      assert.equal(c.permitted('168.63.129.16'), false);
      // Private networks are where internal services live: probed by default.
      for (const internal of ['10.0.0.1', '172.16.5.4', '192.168.1.1', 'fd12:3456::1', '100.64.0.1'])
        assert.equal(c.permitted(internal), true, internal);
      // IPv6 forms that carry the metadata address reach it too: judged as IPv4.
      for (const disguised of [
        '::ffff:169.254.169.254',
        '::ffff:a9fe:a9fe',
        '::169.254.169.254',
        '64:ff9b::a9fe:a9fe',
        '2002:a9fe:a9fe::1',
        '::ffff:127.0.0.1',
        '::ffff:7f00:1',
        '64:ff9b::7f00:1',
        '::ffff:100.100.100.200',
        '::ffff:0.0.0.0',
      ])
        assert.equal(c.permitted(disguised), false, disguised);
      assert.equal(c.permitted('::ffff:192.0.2.1'), true);
    } finally {
      c.stop();
    }
    const allowed = checker({ allow: ['169.254.169.0/24', '127.0.0.0/8', '::1'] });
    assert.equal(allowed.c.permitted('169.254.169.254'), true);
    assert.equal(allowed.c.permitted('169.254.1.1'), false);
    assert.equal(allowed.c.permitted('127.0.0.9'), true);
    assert.equal(allowed.c.permitted('::ffff:127.0.0.9'), true, 'the mapped form of an allowed address');
    assert.equal(allowed.c.permitted('::1'), true);
    assert.equal(allowed.c.permitted('0.0.0.0'), false, 'allowing loopback does not allow 0.0.0.0/8');
    allowed.c.stop();
  });

  test('equal targets share one slot; the last release frees it', async () => {
    const { c } = checker();
    const t: ProbeTarget = {
      protocol: 'TCP',
      address: '127.0.0.9',
      port: 9,
      path: '/',
      host: 'x',
      expectStatus: [],
      ...FAST,
    };
    const a = c.acquire(t);
    assert.equal(c.acquire({ ...t }), a);
    c.release(a);
    assert.ok(c.status(a), 'still held once');
    c.release(a);
    assert.equal(c.status(a), undefined);
    assert.equal(c.acquire({ ...t, port: 10 }), a, 'the freed slot is reused');
    c.stop();
  });
});
