/**
 * Domain verification against real DNS and HTTP on loopback: `zonekeeper serve` is the authority of
 * the test zones, BIND a recursive resolver (and the authority of the parent, a private root zone,
 * that delegates them), and a stand-in web server answers (or does not answer) the HTTP challenge.
 * The domain controller runs in process over a MemoryStore holding the same zones, with the real
 * look-ups (src/domains/) and a schedule short enough for a test.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import type { DNSRecordSet, DNSZone, DNSZoneClass, Domain, Resource } from '../src/api/index.ts';
import { DomainController } from '../src/control/domain-controller.ts';
import { MemoryStore } from '../src/control/memory-store.ts';
import { domainProbe } from '../src/domains/probe.ts';
import { parseNetwork, parseRetrySchedule } from '../src/zones/domain-verification.ts';
import { zoneHash } from '../src/zones/zone-name-servers.ts';
import { dig } from './support/dig.ts';
import { type RecursiveBind, startRecursiveBind } from './support/recursive-bind.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const API = 'dns.zonekeeper.dev/v1alpha1';

const sharedClass: DNSZoneClass = {
  apiVersion: API,
  kind: 'DNSZoneClass',
  metadata: { name: 'shared' },
  spec: { backend: { builtin: {} }, nameServers: ['ns1.provider.test.'] },
};
const ownClass: DNSZoneClass = {
  apiVersion: API,
  kind: 'DNSZoneClass',
  metadata: { name: 'own' },
  spec: {
    backend: { builtin: {} },
    nameServers: ['ns1.provider.test.'],
    zoneNameServers: ['{hash}.ns1.provider.test.', '{hash}.ns2.provider.test.'],
    domainVerification: { txtRecordPrefix: '_own-check' },
  },
};

function zone(namespace: string, domainName: string, className: string): DNSZone {
  return {
    apiVersion: API,
    kind: 'DNSZone',
    metadata: { name: domainName.replace(/\./g, '-'), namespace },
    spec: { domainName, className },
  };
}

function records(
  namespace: string,
  zoneName: string,
  name: string,
  type: DNSRecordSet['spec']['type'],
  values: string[],
): DNSRecordSet {
  return {
    apiVersion: API,
    kind: 'DNSRecordSet',
    metadata: {
      name: `${zoneName.replace(/\./g, '-')}-${name.replace(/[^a-z0-9]/g, '')}-${type.toLowerCase()}`,
      namespace,
    },
    spec: { zoneRef: { name: zoneName.replace(/\./g, '-') }, name, type, records: values },
  };
}

function claim(namespace: string, domainName: string, className?: string): Domain {
  return {
    apiVersion: API,
    kind: 'Domain',
    metadata: { name: domainName.replace(/\./g, '-'), namespace },
    spec: { domainName, ...(className ? { className } : {}) },
  };
}

// The zones Zonekeeper serves (and the controller's store holds): each test domain has one.
const ZONES = [
  zone('team-a', 'delegated.test', 'own'), // the parent delegates to this zone's own names
  zone('team-b', 'wrongns.test', 'own'), // the parent delegates to another namespace's names
  zone('team-c', 'shared.test', 'shared'), // the parent delegates to the shared names
  zone('team-d', 'txt.test', 'shared'),
  zone('team-d', 'own-txt.test', 'own'),
  zone('team-e', 'web.test', 'shared'),
];

describe('Domain verification through a real resolver and HTTP', { timeout: 120_000 }, () => {
  let manifests: string;
  let state: string;
  let serve: ServeProcess;
  let bind: RecursiveBind;
  let web: http.Server;
  let webPort: number;
  /** What the stand-in web server answers, by path. */
  const pages = new Map<string, { status: number; body: string; location?: string }>();
  const store = new MemoryStore();
  let controller: DomainController;

  const writeManifests = async (objects: Resource[]) => {
    await writeFile(
      path.join(manifests, 'objects.yaml'),
      objects.map((o) => `---\n${stringify(o)}`).join(''),
    );
  };
  const baseObjects: Resource[] = [
    sharedClass,
    ownClass,
    ...ZONES,
    records('team-e', 'web.test', '@', 'A', ['127.0.0.1']),
    records('team-e', 'web.test', 'www', 'A', ['127.0.0.1']),
  ];

  before(async () => {
    manifests = await tempDir('domains-manifests');
    state = await tempDir('domains-state');
    await writeManifests(baseObjects);
    serve = await startServe(manifests, state);
    const hashA = zoneHash('team-a', 'delegated.test');
    bind = await startRecursiveBind({
      rootRecords: [
        `delegated.test. IN NS ${hashA}.ns1.provider.test.`,
        `delegated.test. IN NS ${hashA}.ns2.provider.test.`,
        // team-b's zone for wrongns.test has its own hash; the parent names team-a's.
        `wrongns.test. IN NS ${hashA}.ns1.provider.test.`,
        'shared.test. IN NS ns1.provider.test.',
        'txt.test. IN NS ns1.provider.test.',
        'own-txt.test. IN NS ns1.provider.test.',
        'web.test. IN NS ns1.provider.test.',
      ],
      forward: { zones: ZONES.map((z) => z.spec.domainName), port: serve.dnsPort },
    });
    web = http.createServer((req, res) => {
      const page = pages.get(`${req.headers.host}${req.url}`);
      if (!page) {
        res.writeHead(404).end('not here');
        return;
      }
      res.writeHead(page.status, page.location ? { location: page.location } : {}).end(page.body);
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    webPort = (web.address() as AddressInfo).port;
    for (const o of [sharedClass, ownClass, ...ZONES]) store.apply(o);
    controller = new DomainController({
      store,
      probe: domainProbe({
        resolver: `127.0.0.1:${bind.port}`,
        delegationPort: bind.port,
        timeoutMs: 1000,
        httpAllow: [parseNetwork('127.0.0.1/32')!],
        httpTimeoutMs: 1000,
        httpMaxBodyBytes: 256,
      }),
      schedule: parseRetrySchedule('100ms/3s,300ms'),
      reconfirmIntervalMs: 300,
      httpPort: webPort,
    });
    controller.start();
    // The zones are served and the resolver reaches them.
    await waitFor(
      async () =>
        (await dig(bind.port, 'www.web.test', 'A', { args: ['+rec'] })).answer.length > 0 ? true : undefined,
      20_000,
    );
  });

  after(async () => {
    controller?.stop();
    await new Promise<void>((resolve) => (web ? web.close(() => resolve()) : resolve()));
    await bind?.stop();
    await serve?.stop();
    await removeAll(manifests, state);
  });

  const domainOf = (namespace: string, name: string) =>
    store.get('Domain', `${namespace}/${name.replace(/\./g, '-')}`) as Domain | undefined;
  const condition = (d: Domain | undefined, type: string) =>
    d?.status?.conditions?.find((c) => c.type === type);
  /** Waits until the condition has the status (and reason, when given); returns it. */
  const until = async (namespace: string, name: string, type: string, status: string, reason?: string) =>
    (
      await waitFor(async () => {
        const c = condition(domainOf(namespace, name), type);
        return c && c.status === status && (reason === undefined || c.reason === reason) ? c : undefined;
      }, 20_000)
    ).value;

  test("delegated zone: the parent delegates to name servers of the namespace's own zone", async () => {
    store.apply(claim('team-a', 'delegated.test'));
    const c = await until('team-a', 'delegated.test', 'VerifiedDNSZone', 'True');
    assert.match(c.message, /ns1\.provider\.test/);
    assert.equal(condition(domainOf('team-a', 'delegated.test'), 'Verified')?.status, 'True');
    const d = domainOf('team-a', 'delegated.test')!;
    assert.equal(d.status?.apex, 'delegated.test');
    assert.equal(d.status?.verification?.delegatedNameServers?.length, 2);
  });

  test("delegated zone fails: the parent names another zone's name servers", async () => {
    store.apply(claim('team-b', 'wrongns.test'));
    const c = await until('team-b', 'wrongns.test', 'VerifiedDNSZone', 'False', 'NotDelegated');
    assert.match(c.message, /not to those of DNSZone wrongns-test/);
    assert.equal(condition(domainOf('team-b', 'wrongns.test'), 'Verified')?.status, 'False');
  });

  test('delegated zone refused: shared name servers prove nothing, whatever the parent says', async () => {
    store.apply(claim('team-c', 'shared.test'));
    const c = await until('team-c', 'shared.test', 'VerifiedDNSZone', 'False', 'SharedNameServers');
    assert.match(c.message, /any namespace could claim it/);
    assert.equal(condition(domainOf('team-c', 'shared.test'), 'Verified')?.status, 'False');
  });

  test('TXT: fails until the token is published, then verifies; lost when it is removed', async () => {
    store.apply(claim('team-d', 'txt.test'));
    await until('team-d', 'txt.test', 'VerifiedDNS', 'False', 'RecordNotFound');
    const d = domainOf('team-d', 'txt.test')!;
    const record = d.status!.verification!.dnsRecord!;
    assert.equal(record.name, '_zonekeeper-challenge.txt.test');
    assert.match(record.content, /^[0-9a-f-]{36}$/);
    // A wrong value does not count.
    await writeManifests([
      ...baseObjects,
      records('team-d', 'txt.test', '_zonekeeper-challenge', 'TXT', ['"not-the-token"']),
    ]);
    await waitFor(
      async () =>
        (await dig(bind.port, record.name, 'TXT', { args: ['+rec'] })).answer.length > 0 ? true : undefined,
      20_000,
    );
    assert.equal(condition(domainOf('team-d', 'txt.test'), 'Verified')?.status, 'False');
    await writeManifests([
      ...baseObjects,
      records('team-d', 'txt.test', '_zonekeeper-challenge', 'TXT', [`"${record.content}"`]),
    ]);
    await until('team-d', 'txt.test', 'VerifiedDNS', 'True', 'RecordFound');
    assert.equal(condition(domainOf('team-d', 'txt.test'), 'Verified')?.status, 'True');
    // Re-confirmation: the record goes, and so does the verification.
    await writeManifests(baseObjects);
    const lost = await until('team-d', 'txt.test', 'Verified', 'False', 'NotVerified');
    assert.match(lost.message, /is not published/);
    assert.equal(
      domainOf('team-d', 'txt.test')!.status!.verification!.dnsRecord!.content,
      record.content,
      'the token stays',
    );
  });

  test("TXT: the prefix is the class's", async () => {
    store.apply(claim('team-d', 'own-txt.test'));
    await until('team-d', 'own-txt.test', 'VerifiedDNS', 'False');
    const record = domainOf('team-d', 'own-txt.test')!.status!.verification!.dnsRecord!;
    assert.equal(record.name, '_own-check.own-txt.test');
    await writeManifests([
      ...baseObjects,
      records('team-d', 'own-txt.test', '_own-check', 'TXT', [`"${record.content}"`]),
    ]);
    await until('team-d', 'own-txt.test', 'VerifiedDNS', 'True');
    await writeManifests(baseObjects);
  });

  test('HTTP: the token served at the well-known path verifies; other answers do not', async () => {
    store.apply(claim('team-e', 'web.test'));
    await until('team-e', 'web.test', 'VerifiedHTTP', 'False', 'WrongStatus');
    const token = domainOf('team-e', 'web.test')!.status!.verification!.httpToken!;
    assert.equal(token.url, `http://web.test:${webPort}/.well-known/zonekeeper-challenge/${token.body}`);
    const pagePath = `web.test:${webPort}/.well-known/zonekeeper-challenge/${token.body}`;
    pages.set(pagePath, { status: 200, body: 'something else' });
    await until('team-e', 'web.test', 'VerifiedHTTP', 'False', 'WrongToken');
    pages.set(pagePath, { status: 200, body: `${token.body}${'x'.repeat(1000)}` });
    await until('team-e', 'web.test', 'VerifiedHTTP', 'False', 'ResponseTooLarge');
    // A redirect off the domain is not followed, one within it is.
    pages.set(pagePath, { status: 302, body: '', location: `http://elsewhere.test:${webPort}/token` });
    await until('team-e', 'web.test', 'VerifiedHTTP', 'False', 'RedirectRefused');
    pages.set(pagePath, { status: 302, body: '', location: `http://www.web.test:${webPort}/token` });
    pages.set(`www.web.test:${webPort}/token`, { status: 200, body: `${token.body}\n` });
    await until('team-e', 'web.test', 'VerifiedHTTP', 'True', 'TokenServed');
    assert.equal(condition(domainOf('team-e', 'web.test'), 'Verified')?.status, 'True');
    pages.delete(pagePath);
    await until('team-e', 'web.test', 'Verified', 'False');
  });

  test('without an allow-list, loopback (like private, link-local and metadata addresses) is never reached: not by HTTP, not by the delegation look-up', async () => {
    const strict = new MemoryStore();
    for (const o of [sharedClass, ownClass, ...ZONES]) strict.apply(o);
    const c = new DomainController({
      store: strict,
      probe: domainProbe({ resolver: `127.0.0.1:${bind.port}`, delegationPort: bind.port, timeoutMs: 1000 }),
      schedule: parseRetrySchedule('100ms/3s,300ms'),
      httpPort: webPort,
    });
    c.start();
    try {
      strict.apply(claim('team-e', 'web.test'));
      const found = await waitFor(async () => {
        const d = strict.get('Domain', 'team-e/web-test') as Domain | undefined;
        return condition(d, 'VerifiedHTTP');
      }, 20_000);
      assert.equal(found.value.status, 'False');
      assert.equal(found.value.reason, 'AddressNotAllowed');
      assert.doesNotMatch(found.value.message, /127\.0\.0\.1/, 'the status names no address');
      // The parent zone's servers (BIND on loopback here) are guarded the same way: the delegation
      // that verifies with the allow-list is not even asked for without it.
      strict.apply(claim('team-a', 'delegated.test'));
      const parent = await waitFor(async () => {
        const d = strict.get('Domain', 'team-a/delegated-test') as Domain | undefined;
        return condition(d, 'VerifiedDNSZone');
      }, 20_000);
      assert.equal(parent.value.status, 'False');
      assert.equal(parent.value.reason, 'LookupFailed');
      assert.match(parent.value.message, /ADDRESS_NOT_ALLOWED/);
      assert.doesNotMatch(parent.value.message, /127\.0\.0\.1/, 'the status names no address');
    } finally {
      c.stop();
    }
  });

  test('a public suffix is refused without a look-up', async () => {
    store.apply(claim('team-f', 'github.io'));
    const c = await until('team-f', 'github.io', 'Verified', 'False', 'PublicSuffix');
    assert.match(c.message, /private section/);
  });
});
