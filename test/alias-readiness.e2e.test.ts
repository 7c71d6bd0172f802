/**
 * Readiness of ALIAS record sets in `zonekeeper serve` without `--alias-resolver`: such a server answers
 * an ALIAS from the zones it serves alone, so an ALIAS whose target is outside them is not Ready (it
 * could only ever get SERVFAIL), and becomes Ready when a zone holding its target is served.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dig, rdataOf } from './support/dig.ts';
import {
  CLI,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);

const ZONE = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: {name: builtin}
spec: {backend: {builtin: {}}, nameServers: [ns1.example.org.]}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: {name: z, namespace: dns}
spec: {domainName: example.org, className: builtin}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: apex, namespace: dns}
spec: {zoneRef: {name: z}, name: "@", type: ALIAS, records: [edge.cdn.example.net.]}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: inside, namespace: dns}
spec: {zoneRef: {name: z}, name: app, type: ALIAS, records: [www.example.org.]}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: www, namespace: dns}
spec: {zoneRef: {name: z}, name: www, type: A, records: [192.0.2.80]}
`;

/** A zone holding the apex ALIAS's target. */
const TARGET_ZONE = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: {name: cdn, namespace: dns}
spec: {domainName: cdn.example.net, className: builtin}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: edge, namespace: dns}
spec: {zoneRef: {name: cdn}, name: edge, type: A, records: [198.51.100.7]}
`;

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

async function ready(serve: ServeProcess, name: string): Promise<Condition | undefined> {
  const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
    items: { kind: string; metadata: { name: string }; status?: { conditions?: Condition[] } }[];
  };
  const rs = body.items.find((i) => i.kind === 'DNSRecordSet' && i.metadata.name === name);
  return rs?.status?.conditions?.find((c) => c.type === 'Ready');
}

/** Waits until the record set's Ready condition has `status`; returns it. */
async function readyBecomes(serve: ServeProcess, name: string, status: string): Promise<Condition> {
  return (
    await waitFor(async () => {
      const c = await ready(serve, name);
      return c?.status === status ? c : undefined;
    })
  ).value;
}

describe('ALIAS readiness without --alias-resolver', () => {
  let manifests: string;
  let state: string;
  let serve: ServeProcess | undefined;

  before(async () => {
    manifests = await tempDir('alias-ready');
    state = await tempDir('state');
    await writeFile(path.join(manifests, 'zone.yaml'), ZONE);
  });

  after(async () => {
    await serve?.stop();
    await removeAll(manifests, state);
  });

  test('an ALIAS whose target is outside the zones served is not Ready, and says why', async () => {
    // Regression: it was Ready while every A/AAAA query for it got SERVFAIL.
    serve = await startServe(manifests, state);
    const apex = await readyBecomes(serve, 'apex', 'False');
    assert.equal(apex.reason, 'AliasTargetUnresolvable');
    assert.match(apex.message, /edge\.cdn\.example\.net\..*outside the zones.*--alias-resolver/);
    assert.equal((await dig(serve.dnsPort, 'example.org', 'A')).status, 'SERVFAIL');
    // A target inside a zone served here is answered from it: Ready.
    assert.equal((await readyBecomes(serve, 'inside', 'True')).reason, 'Ready');
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'app.example.org', 'A'), 'A'), ['192.0.2.80']);
    const { stdout } = await run(process.execPath, [CLI, 'status', '--http', serve.httpUrl]);
    assert.match(stdout, /apex\s+z\s+example\.org\.\s+ALIAS\s+False\s+AliasTargetUnresolvable/);
  });

  test('serving the target zone makes it Ready; removing that zone makes it not Ready again', async () => {
    assert.ok(serve);
    const file = path.join(manifests, 'target.yaml');
    await writeFile(file, TARGET_ZONE);
    await readyBecomes(serve, 'apex', 'True');
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'example.org', 'A'), 'A'), ['198.51.100.7']);
    await rm(file);
    assert.equal((await readyBecomes(serve, 'apex', 'False')).reason, 'AliasTargetUnresolvable');
  });

  test('both zones from the start: Ready whichever zone is served first', async () => {
    await serve?.stop();
    await writeFile(path.join(manifests, 'target.yaml'), TARGET_ZONE);
    serve = await startServe(manifests, state, ['--workers', '2']);
    // Ready once serve is ready: the recheck runs before start-up completes.
    assert.equal((await ready(serve, 'apex'))?.status, 'True');
    await rm(path.join(manifests, 'target.yaml'));
    assert.equal((await readyBecomes(serve, 'apex', 'False')).reason, 'AliasTargetUnresolvable');
  });

  test('with --alias-resolver, targets outside the zones are the resolver’s: Ready', async () => {
    await serve?.stop();
    serve = await startServe(manifests, state, ['--alias-resolver', '127.0.0.1:9']);
    assert.equal((await readyBecomes(serve, 'apex', 'True')).reason, 'Ready');
  });
});
