/**
 * `zonekeeper plan --live` as a process, against real external backends: a PowerDNS holding a zone
 * that differs from the manifests, and a Knot DNS primary accepting UPDATE (the rfc2136 backend).
 * Each backend holds an RRset Zonekeeper owns that drifted (shown as a change), one Zonekeeper owns
 * that the manifests no longer have (a delete), one made by hand (not owned, left alone) and one an
 * ignore rule matches (ignored, left alone); the manifests add one more. Golden text and JSON, and the
 * exit codes: 2 changes, 0 nothing to change, 1 a backend that cannot be read.
 *
 * The PowerDNS SOA serial depends on the day: shown as <DATE>. Ports are <PORT>, the temporary
 * folder DIR. Set UPDATE_GOLDEN=1 to rewrite the golden files.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dateSerial } from '../src/zones/serial.ts';
import {
  externalDnsOwner,
  type InMemoryWebhook,
  startInMemoryWebhook,
} from './support/externaldns-webhook.ts';
import { type PowerDnsProcess, powerDnsAvailable, startPowerDns } from './support/powerdns.ts';
import { newKey, startUpdatePrimary, type UpdatePrimary } from './support/update-primaries.ts';
import { CLI, removeAll, tempDir } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const GOLDEN = path.join(import.meta.dirname, 'golden');

async function plan(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'plan', '--live', ...args], {
      timeout: 60_000,
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

function normalize(text: string, dir: string, ports: number[]): string {
  let out = text.replaceAll(dir, 'DIR').replaceAll(String(dateSerial(new Date())), '<DATE>');
  for (const port of ports) out = out.replaceAll(`:${port}`, ':<PORT>');
  return out;
}

async function golden(name: string, actual: string): Promise<void> {
  const file = path.join(GOLDEN, name);
  if (process.env.UPDATE_GOLDEN === '1') await writeFile(file, actual);
  assert.equal(actual, await readFile(file, 'utf8'), `golden file test/golden/${name}`);
}

function zoneYaml(name: string, domain: string, className: string): string {
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: ${name}, namespace: dns }
spec:
  domainName: ${domain}
  className: ${className}
  ignore:
    - name: legacy
`;
}

function recordSet(zone: string, name: string, owner: string, type: string, records: string[]): string {
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: ${name}, namespace: dns }
spec:
  zoneRef: { name: ${zone} }
  name: "${owner}"
  type: ${type}
  records: ${JSON.stringify(records)}
`;
}

const PDNS_STORAGE = 'sqlite' as const;

describe('plan --live against a real PowerDNS', async () => {
  const unavailable = await powerDnsAvailable(PDNS_STORAGE);
  let pdns: PowerDnsProcess;
  let dir: string;
  let port: number;
  before(async () => {
    if (unavailable) return;
    pdns = await startPowerDns({ storage: PDNS_STORAGE });
    port = Number(new URL(pdns.apiUrl).port);
    dir = await tempDir('plan-live-pdns');
    await writeFile(path.join(dir, 'api-key'), pdns.apiKey);
    const classYaml = (name: string, url: string) => `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: ${name} }
spec:
  backend:
    powerdns:
      url: ${url}
      apiKeySecretRef: { file: ${path.join(dir, 'api-key')} }
      timeoutSeconds: 3
  nameServers: [ns1.pdns.test., ns2.pdns.test.]
  defaults:
    ttl: 300
    soa:
      rname: hostmaster@pdns.test
`;
    await writeFile(path.join(dir, 'class.yaml'), classYaml('pdns', pdns.apiUrl));
    await writeFile(path.join(dir, 'zone.yaml'), zoneYaml('pdns-test', 'pdns.test', 'pdns'));
    await writeFile(path.join(dir, 'www.yaml'), recordSet('pdns-test', 'www', 'www', 'A', ['192.0.2.1']));
    await writeFile(path.join(dir, 'new.yaml'), recordSet('pdns-test', 'new', 'new', 'A', ['192.0.2.2']));
    // The zone as a Zonekeeper apply left it, then edited by hand: www drifted, hand and legacy
    // made by hand; www and old are listed in Zonekeeper's ownership metadata.
    const rrset = (name: string, type: string, records: string[]) => ({
      name,
      type,
      ttl: 300,
      records: records.map((content) => ({ content, disabled: false })),
    });
    const created = await pdns.api('POST', '/api/v1/servers/localhost/zones', {
      name: 'pdns.test.',
      kind: 'Native',
      soa_edit_api: '',
      nameservers: [],
      rrsets: [
        rrset('pdns.test.', 'SOA', ['ns1.pdns.test. hostmaster.pdns.test. 7 3600 600 604800 300']),
        rrset('pdns.test.', 'NS', ['ns1.pdns.test.', 'ns2.pdns.test.']),
        rrset('www.pdns.test.', 'A', ['192.0.2.99']),
        rrset('old.pdns.test.', 'TXT', ['"retired"']),
        rrset('hand.pdns.test.', 'A', ['198.51.100.7']),
        rrset('legacy.pdns.test.', 'TXT', ['"kept by hand"']),
      ],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const owned = await pdns.api(
      'PUT',
      '/api/v1/servers/localhost/zones/pdns.test./metadata/X-ZONEKEEPER-RRSETS',
      { kind: 'X-ZONEKEEPER-RRSETS', metadata: ['old TXT', 'www A'] },
    );
    assert.equal(owned.status, 200, JSON.stringify(owned.body));
    // A second manifests folder whose class points at a port where nothing listens.
    await writeFile(path.join(dir, 'down-class.yaml'), classYaml('down', 'http://127.0.0.1:1'));
  });
  after(async () => {
    await pdns?.stop();
    if (dir) await removeAll(dir);
  });

  test('drift is a change, hand-made RRsets are left alone, ignored ones shown as ignored (exit 2)', async (t) => {
    if (unavailable) return t.skip(unavailable);
    const text = await plan(['--manifests', dir]);
    assert.equal(text.code, 2, text.stdout + text.stderr);
    await golden('plan-live-powerdns.txt', normalize(text.stdout, dir, [port]));
    const json = await plan(['--manifests', dir, '--output', 'json']);
    assert.equal(json.code, 2, json.stderr);
    await golden('plan-live-powerdns.json.txt', normalize(json.stdout, dir, [port]));
    const doc = JSON.parse(json.stdout) as {
      version: number;
      live: boolean;
      zones: { live: { add: unknown[]; change: unknown[]; delete: unknown[]; notOwned: unknown[] } }[];
    };
    assert.equal(doc.version, 1);
    assert.equal(doc.live, true);
    // Reading changed nothing in PowerDNS.
    const zone = await pdns.api('GET', '/api/v1/servers/localhost/zones/pdns.test.');
    const www = (
      zone.body as { rrsets: { name: string; type: string; records: { content: string }[] }[] }
    ).rrsets.find((r) => r.name === 'www.pdns.test.' && r.type === 'A');
    assert.deepEqual(
      www?.records.map((r) => r.content),
      ['192.0.2.99'],
    );
  });

  test("a backend that cannot be reached is that zone's error (exit 1)", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const other = await tempDir('plan-live-down');
    try {
      await writeFile(
        path.join(other, 'class.yaml'),
        await readFile(path.join(dir, 'down-class.yaml'), 'utf8'),
      );
      await writeFile(path.join(other, 'zone.yaml'), zoneYaml('down-test', 'down.test', 'down'));
      const r = await plan(['--manifests', other]);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(
        r.stdout,
        /^ {2}live PowerDNS at http:\/\/127\.0\.0\.1:1 \(server localhost\): error \S+: /m,
      );
      assert.match(r.stdout, /1 could not be read/);
    } finally {
      await removeAll(other);
    }
  });
});

describe('plan --live against a real Knot DNS primary (rfc2136 backend)', () => {
  const ORIGIN = 'knot.test.';
  const updateKey = newKey('zonekeeper-update');
  const transferKey = newKey('transfer-only');
  const handKey = newKey('by-hand');
  let primary: UpdatePrimary;
  let dir: string;
  const env = { ZK_PLAN_KEY: updateKey.secret };
  before(async () => {
    primary = await startUpdatePrimary({ kind: 'knot', zones: [ORIGIN], updateKey, transferKey, handKey });
    dir = await tempDir('plan-live-knot');
    await writeFile(
      path.join(dir, 'class.yaml'),
      `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: knot }
spec:
  backend:
    rfc2136:
      server: 127.0.0.1
      port: ${primary.port}
      tsigKey: { name: ${updateKey.name}, algorithm: hmac-sha256, secretRef: { env: ZK_PLAN_KEY } }
      timeoutSeconds: 3
  nameServers: [ns1.contract.example.]
  defaults:
    ttl: 300
    soa:
      rname: hostmaster@contract.example
`,
    );
    await writeFile(path.join(dir, 'zone.yaml'), zoneYaml('knot-test', 'knot.test', 'knot'));
    await writeFile(path.join(dir, 'www.yaml'), recordSet('knot-test', 'www', 'www', 'A', ['192.0.2.1']));
    await writeFile(path.join(dir, 'new.yaml'), recordSet('knot-test', 'new', 'new', 'A', ['192.0.2.2']));
    // As an apply left it (the ownership record lists www A and old TXT), then edited by hand.
    await primary.nsupdate(ORIGIN, [
      `update add _zonekeeper-owned.${ORIGIN} 300 TXT "zonekeeper ownership v1"`,
      `update add _zonekeeper-owned.${ORIGIN} 300 TXT "www A"`,
      `update add _zonekeeper-owned.${ORIGIN} 300 TXT "old TXT"`,
      `update add www.${ORIGIN} 300 A 192.0.2.99`,
      `update add old.${ORIGIN} 300 TXT "retired"`,
      `update add hand.${ORIGIN} 300 A 198.51.100.7`,
      `update add legacy.${ORIGIN} 300 TXT "kept by hand"`,
    ]);
  });
  after(async () => {
    await primary?.close();
    if (dir) await removeAll(dir);
  });

  test('drift, deletion, hand-made and ignored RRsets read by AXFR (exit 2), text and JSON', async () => {
    const text = await plan(['--manifests', dir], env);
    assert.equal(text.code, 2, text.stdout + text.stderr);
    await golden('plan-live-rfc2136.txt', normalize(text.stdout, dir, [primary.port]));
    const json = await plan(['--manifests', dir, '--output', 'json'], env);
    assert.equal(json.code, 2, json.stderr);
    await golden('plan-live-rfc2136.json.txt', normalize(json.stdout, dir, [primary.port]));
  });

  test('a primary that already holds the zone needs no change there', async () => {
    await primary.nsupdate(ORIGIN, [
      `update delete www.${ORIGIN} A`,
      `update add www.${ORIGIN} 300 A 192.0.2.1`,
      `update add new.${ORIGIN} 300 A 192.0.2.2`,
      `update add _zonekeeper-owned.${ORIGIN} 300 TXT "new A"`,
      `update delete old.${ORIGIN} TXT`,
      `update delete _zonekeeper-owned.${ORIGIN} TXT "old TXT"`,
    ]);
    const r = await plan(['--manifests', dir], env);
    // The built-in comparison (no state folder: everything is new) says the zone is to create; the
    // backend itself needs nothing. Without --state-dir plan exits 2 for the zone to create, so this
    // looks at the live part only.
    assert.match(
      normalize(r.stdout, dir, [primary.port]),
      /^ {2}live RFC 2136 primary at 127\.0\.0\.1:<PORT>: 0 to add, 0 to change, 0 to delete; 1 not owned, 1 ignored$/m,
    );
  });

  test('a key the primary does not know is an error (exit 1)', async () => {
    const r = await plan(['--manifests', dir], { ZK_PLAN_KEY: newKey('x').secret });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^ {2}live RFC 2136 primary at 127\.0\.0\.1:\d+: error RFC2136_TSIG: /m);
  });
});

describe("plan --live against ExternalDNS's in-memory webhook provider (externalDNSWebhook backend)", () => {
  let provider: InMemoryWebhook;
  let dir: string;
  before(async () => {
    provider = await startInMemoryWebhook({ zones: ['example.org'] });
    dir = await tempDir('plan-live-edns');
    await writeFile(
      path.join(dir, 'class.yaml'),
      `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: cloud }
spec:
  backend:
    externalDNSWebhook: { url: "${provider.url}", timeoutSeconds: 3 }
  nameServers: [ns1.contract.example.]
`,
    );
    await writeFile(path.join(dir, 'zone.yaml'), zoneYaml('live', 'live.example.org', 'cloud'));
    await writeFile(path.join(dir, 'www.yaml'), recordSet('live', 'www', 'www', 'A', ['192.0.2.1']));
    await writeFile(path.join(dir, 'new.yaml'), recordSet('live', 'new', 'new', 'A', ['192.0.2.2']));
    await writeFile(path.join(dir, 'app.yaml'), recordSet('live', 'app', 'app', 'A', ['192.0.2.3']));
    // As an apply left it (www A and old TXT with Zonekeeper's ownership records), then edited by
    // hand (www changed, hand and legacy added), and app published by an ExternalDNS instance.
    const owned =
      '"heritage=external-dns,external-dns/owner=zonekeeper,external-dns/resource=dnszone/live.example.org"';
    await provider.apply({
      create: [
        { dnsName: 'www.live.example.org', recordType: 'A', targets: ['192.0.2.99'], recordTTL: 300 },
        { dnsName: 'a-www.live.example.org', recordType: 'TXT', targets: [owned] },
        { dnsName: 'old.live.example.org', recordType: 'TXT', targets: ['"retired"'], recordTTL: 300 },
        { dnsName: 'txt-old.live.example.org', recordType: 'TXT', targets: [owned] },
        { dnsName: 'hand.live.example.org', recordType: 'A', targets: ['198.51.100.7'], recordTTL: 300 },
        {
          dnsName: 'legacy.live.example.org',
          recordType: 'TXT',
          targets: ['"kept by hand"'],
          recordTTL: 300,
        },
      ],
    });
    await externalDnsOwner({
      url: provider.url,
      owner: 'other',
      domain: 'app.live.example.org',
      desired: [{ name: 'app.live.example.org', type: 'A', ttl: 300, targets: ['198.51.100.8'] }],
    });
  });
  after(async () => {
    await provider?.stop();
    if (dir) await removeAll(dir);
  });

  test("drift, deletion, hand-made, ignored and ExternalDNS's records read by GET /records (exit 2), text and JSON", async () => {
    const port = Number(new URL(provider.url).port);
    const text = await plan(['--manifests', dir]);
    assert.equal(text.code, 2, text.stdout + text.stderr);
    await golden('plan-live-externaldns-webhook.txt', normalize(text.stdout, dir, [port]));
    const json = await plan(['--manifests', dir, '--output', 'json']);
    assert.equal(json.code, 2, json.stderr);
    await golden('plan-live-externaldns-webhook.json.txt', normalize(json.stdout, dir, [port]));
    // plan --live changes nothing at the provider.
    assert.equal((await provider.records()).length, 8);
  });
});
