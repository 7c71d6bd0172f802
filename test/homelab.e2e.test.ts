/**
 * The homelab DNS operator's kinds through `zonekeeper serve --manifests`: DNSClass and DNSRecord
 * manifests in a folder, records pushed to the independent Python provider (secrets inline, from an
 * environment variable and from a file), a manifest removed deletes its record at the provider, a
 * Kubernetes Secret reference gets a clear error, an invalid DNSRecord or DNSClass manifest is
 * reported (ValidationFailed) while its last valid version keeps being used, and `zonekeeper validate`
 * refuses what admission refuses.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { type PythonProvider, startPythonProvider } from './support/homelab-provider.ts';
import {
  CLI,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);

const MAIL = `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSRecord
metadata:
  name: mail
  namespace: production
spec:
  type: MX
  domain: example.com
  subdomain: "@"
  dnsClassRef: { name: filed }
  values: [mail.example.com]
  metadata: { priority: 10 }
---
apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSRecord
metadata:
  name: cf
  namespace: production
spec:
  type: TXT
  domain: example.com
  subdomain: cf
  dnsClassRef: { name: cloudflare }
  values: ["hello"]
`;

interface Item {
  kind: string;
  metadata: { name: string; namespace?: string; finalizers?: string[] };
  status?: {
    state?: string;
    fqdn?: string;
    error?: { code: string; message: string; timestamp: string };
    health?: { status: string };
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

describe('homelab kinds through zonekeeper serve --manifests', () => {
  let dir: string;
  let state: string;
  let secretDir: string;
  let provider: PythonProvider;
  let other: PythonProvider;
  let serve: ServeProcess;

  const items = async (): Promise<Item[]> =>
    ((await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as { items: Item[] }).items;
  const find = async (kind: string, name: string) =>
    (await items()).find((i) => i.kind === kind && i.metadata.name === name);
  const ready = async (kind: string, name: string) =>
    (await find(kind, name))?.status?.conditions?.find((c) => c.type === 'Ready');

  before(async () => {
    provider = await startPythonProvider({ secret: 'from-env', algorithm: 'SHA512' });
    other = await startPythonProvider({ secret: 'from-file' });
    dir = await tempDir('homelab-manifests');
    state = await tempDir('homelab-state');
    secretDir = await tempDir('homelab-secret');
    await writeFile(path.join(secretDir, 'hmac'), 'from-file\n');
    process.env.HL_E2E_SECRET = 'from-env';
    process.env.DNS_RECORD_RETRY_BASE_DELAY = '50ms';
    process.env.DNS_RECORD_RETRY_MAX_DELAY = '200ms';
    process.env.DNS_RECORD_DRIFT_CHECK_INTERVAL = '300ms';
    await writeFile(
      path.join(dir, 'classes.yaml'),
      `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSClass
metadata:
  name: home
spec:
  server: "${provider.url}"
  defaultTTL: 120
  timeoutSeconds: 5
  hmacAuth:
    secretRef:
      name: env:HL_E2E_SECRET
    algorithm: "SHA512"
---
apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSClass
metadata:
  name: filed
spec:
  server: "${other.url}/"
  hmacAuth:
    secretRef:
      name: file:${path.join(secretDir, 'hmac')}
---
apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSClass
metadata:
  name: cloudflare
spec:
  server: "${other.url}"
  hmacAuth:
    secretRef:
      name: cloudflare-dns-secret
      namespace: dns-system
      key: hmac-secret
    algorithm: "SHA256"
`,
    );
    await writeFile(
      path.join(dir, 'web.yaml'),
      `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSRecord
metadata:
  name: web-app
  namespace: production
spec:
  type: A
  domain: "example.com"
  subdomain: "www"
  dnsClassRef:
    name: home
  values:
    - "192.168.1.100"
    - "192.168.1.101"
  ttl: 600
  description: "Web application load balancer IPs"
`,
    );
    await writeFile(path.join(dir, 'mail.yaml'), MAIL);
    serve = await startServe(dir, state);
  });

  after(async () => {
    await serve?.stop();
    await Promise.all([provider?.stop(), other?.stop()]);
    await removeAll(dir, state, secretDir);
  });

  test('records reach their providers, signed with secrets from env and from a file', async () => {
    await waitFor(async () => ((await ready('DNSRecord', 'web-app'))?.status === 'True' ? true : undefined));
    await waitFor(async () => ((await ready('DNSRecord', 'mail'))?.status === 'True' ? true : undefined));
    const web = (await provider.records()).find((r) => r.fqdn === 'www.example.com');
    assert.deepEqual(web?.values, ['192.168.1.100', '192.168.1.101']);
    assert.equal(web?.ttl, 600);
    const mx = (await other.records()).find((r) => r.type === 'MX');
    assert.deepEqual(mx?.metadata, { priority: 10 });
    assert.equal(mx?.ttl, 300);
    const item = await find('DNSRecord', 'web-app');
    assert.equal(item?.status?.state, 'Created');
    assert.equal(item?.status?.fqdn, 'www.example.com');
    assert.deepEqual(item?.metadata.finalizers, ['dns.homelab.mortenolsen.pro/finalizer']);
    await waitFor(async () =>
      (await ready('DNSClass', 'home'))?.reason === 'ServerHealthy' ? true : undefined,
    );
  });

  test('a Kubernetes Secret reference in folder mode is a clear SecretNotFound', async () => {
    const { value } = await waitFor(async () => {
      const r = await ready('DNSRecord', 'cf');
      return r?.reason === 'SecretNotFound' ? r : undefined;
    });
    assert.match(value.message, /Kubernetes Secret; in folder mode use/);
    assert.equal((await ready('DNSClass', 'cloudflare'))?.reason, 'SecretNotFound');
  });

  test('an invalid manifest: status says ValidationFailed, the last valid version keeps being pushed', async () => {
    // An MX without metadata.priority is refused; the record keeps its last valid version.
    await writeFile(path.join(dir, 'mail.yaml'), MAIL.replace('  metadata: { priority: 10 }\n', ''));
    const { value } = await waitFor(async () => {
      const r = await ready('DNSRecord', 'mail');
      return r?.reason === 'ValidationFailed' ? r : undefined;
    });
    assert.equal(value.status, 'False');
    assert.match(value.message, /the last valid version \(generation 1\) is still pushed/);
    assert.match(value.message, /an MX record needs metadata\.priority/);
    const item = await find('DNSRecord', 'mail');
    assert.equal(item?.status?.error?.code, 'MANIFEST_INVALID');
    assert.match(item?.status?.error?.message ?? '', /metadata\.priority/);
    assert.ok(item?.status?.error?.timestamp);
    // Still pushed: removed behind Zonekeeper's back, the last valid version comes back.
    await other.drift({ type: 'MX', domain: 'example.com', subdomain: '@', delete: true });
    const { value: mx } = await waitFor(async () =>
      (await other.records()).find((r) => r.type === 'MX' && r.fqdn === 'example.com'),
    );
    assert.deepEqual(mx.metadata, { priority: 10 });
    assert.equal((await ready('DNSRecord', 'mail'))?.reason, 'ValidationFailed');
    // Valid again: Ready=True, no error.
    await writeFile(path.join(dir, 'mail.yaml'), MAIL);
    await waitFor(async () => ((await ready('DNSRecord', 'mail'))?.status === 'True' ? true : undefined));
    assert.equal((await find('DNSRecord', 'mail'))?.status?.error, undefined);
  });

  test('an invalid DNSClass: ValidationFailed, its last valid server and secret keep being used', async () => {
    const classes = path.join(dir, 'classes.yaml');
    const valid = await readFile(classes, 'utf8');
    const filed = `  server: "${other.url}/"\n  hmacAuth:\n    secretRef:\n      name: file:${path.join(secretDir, 'hmac')}\n`;
    assert.ok(valid.includes(filed));
    // Another server (not an http(s) URL) and a second secret beside the reference: both refused.
    await writeFile(
      classes,
      valid.replace(
        filed,
        `  server: "ftp://127.0.0.1:1"\n  hmacAuth:\n    secret: not-the-secret\n    secretRef:\n      name: file:${path.join(secretDir, 'hmac')}\n`,
      ),
    );
    const { value } = await waitFor(async () => {
      const r = await ready('DNSClass', 'filed');
      return r?.reason === 'ValidationFailed' ? r : undefined;
    });
    assert.equal(value.status, 'False');
    assert.match(value.message, /the last valid version \(generation 1\) is still used/);
    assert.match(value.message, /is not an http\(s\) URL|hmacAuth needs exactly one of secretRef or secret/);
    // Still used: the record of the class, removed at its provider behind Zonekeeper's back, is pushed
    // there again, signed with the secret from the file (the provider verifies every signature).
    const before = await other.log();
    await other.drift({ type: 'MX', domain: 'example.com', subdomain: '@', delete: true });
    const { value: mx } = await waitFor(async () =>
      (await other.records()).find((r) => r.type === 'MX' && r.fqdn === 'example.com'),
    );
    assert.deepEqual(mx.values, ['mail.example.com']);
    const later = await other.log();
    assert.ok(
      later.log.slice(before.log.length).some((r) => r.method === 'POST' && r.record?.type === 'MX'),
      'the provider accepted the push (its log holds only verified requests)',
    );
    assert.equal(later.authFailures, before.authFailures, 'no request signed with another secret');
    assert.equal((await ready('DNSClass', 'filed'))?.reason, 'ValidationFailed');
    assert.equal((await ready('DNSRecord', 'mail'))?.status, 'True');
    // Valid again: healthy.
    await writeFile(classes, valid);
    await waitFor(async () =>
      (await ready('DNSClass', 'filed'))?.reason === 'ServerHealthy' ? true : undefined,
    );
  });

  test('a changed value is pushed again; a removed manifest deletes the record at the provider', async () => {
    await writeFile(
      path.join(dir, 'web.yaml'),
      `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSRecord
metadata:
  name: web-app
  namespace: production
spec:
  type: A
  domain: example.com
  subdomain: web
  dnsClassRef: { name: home }
  values: ["192.168.1.102"]
`,
    );
    await waitFor(async () => {
      const names = (await provider.records()).map((r) => r.fqdn);
      return names.includes('web.example.com') && !names.includes('www.example.com') ? true : undefined;
    });
    const web = (await provider.records()).find((r) => r.fqdn === 'web.example.com');
    assert.equal(web?.ttl, 120, 'the class defaultTTL');
    await rm(path.join(dir, 'web.yaml'));
    await waitFor(async () => ((await find('DNSRecord', 'web-app')) === undefined ? true : undefined));
    assert.equal((await provider.records()).length, 0);
  });

  test('validate refuses what admission refuses, with paths and messages', async () => {
    const bad = await tempDir('homelab-bad');
    try {
      await writeFile(
        path.join(bad, 'bad.yaml'),
        `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSRecord
metadata: { name: v6-in-a, namespace: x }
spec: { type: A, domain: example.com, subdomain: www, dnsClassRef: { name: c }, values: ["2001:db8::1"] }
---
apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSRecord
metadata: { name: mx, namespace: x }
spec: { type: MX, domain: example.com, subdomain: "@", dnsClassRef: { name: c }, values: [mail.example.com] }
---
apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSClass
metadata: { name: both }
spec: { server: "ftp://dns.example.com", hmacAuth: { secret: a, secretRef: { name: b } } }
`,
      );
      const result = await run(process.execPath, [CLI, 'validate', bad]).catch(
        (e: { stdout: string; stderr: string; code: number }) => e,
      );
      const out = `${result.stdout}${result.stderr}`;
      assert.notEqual((result as { code?: number }).code ?? 0, 0, out);
      assert.match(out, /A record values must be IPv4 addresses/);
      assert.match(out, /an MX record needs metadata\.priority/);
      assert.match(out, /hmacAuth needs exactly one of secretRef or secret/);
      assert.match(out, /is not an http\(s\) URL/);
    } finally {
      await removeAll(bad);
    }
  });
});
