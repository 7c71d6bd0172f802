/**
 * `zonekeeper serve --externaldns-webhook-namespace team-a` driven by ExternalDNS's own code: its
 * webhook provider client, TXT registry and planner (the `externaldns-webhook` program of
 * test/gotools) negotiate, list, and apply creates, updates and deletes with ownership TXT records;
 * answers are checked over DNS. Hostile cases: a second owner ID, names and types outside the
 * namespace's delegation, a manifest's RRset, another namespace's zone, an oversize body.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dig } from './support/dig.ts';
import { goProgram } from './support/go-programs.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const MEDIA_TYPE = 'application/external.dns.webhook+json;version=1';

interface Endpoint {
  dnsName: string;
  targets: string[];
  recordType: string;
  recordTTL?: number;
  setIdentifier?: string;
  labels?: Record<string, string>;
  providerSpecific?: { name: string; value: string }[];
}
interface Result {
  domainFilter: { include?: string[] };
  adjusted: Endpoint[] | null;
  passes: {
    create: Endpoint[] | null;
    updateNew: Endpoint[] | null;
    delete: Endpoint[] | null;
    error?: string;
  }[];
  records: Endpoint[] | null;
}

const changes = (p: Result['passes'][number]) =>
  (p.create?.length ?? 0) + (p.updateNew?.length ?? 0) + (p.delete?.length ?? 0);

const MANIFESTS = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.example.net.]
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: example-com, namespace: platform }
spec:
  domainName: example.com
  className: builtin
  delegations:
    # team-a's ExternalDNS publishes under apps, with its TXT registry records
    - { namespaces: [team-a], names: ["*.apps"], types: [A, AAAA, CNAME, TXT] }
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: manifest, namespace: platform }
spec:
  zoneRef: { name: example-com }
  name: manifest.apps
  type: A
  records: [192.0.2.99]
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: team-a-example-org, namespace: team-a }
spec:
  domainName: team-a.example.org
  className: builtin
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: team-b-example-org, namespace: team-b }
spec:
  domainName: team-b.example.org
  className: builtin
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: www, namespace: team-b }
spec:
  zoneRef: { name: team-b-example-org }
  name: www
  type: A
  records: [198.51.100.7]
---
# a zone of another API (kubizone's Zone, in the only class) in team-a: its domain is offered too
apiVersion: kubi.zone/v1alpha1
kind: Zone
metadata: { name: kz, namespace: team-a }
spec: { domainName: kz.example.net., delegations: [] }
---
# ExternalDNS's own kind, read by Zonekeeper's front door (no ExternalDNS involved)
apiVersion: externaldns.k8s.io/v1alpha1
kind: DNSEndpoint
metadata: { name: infra, namespace: team-a }
spec:
  endpoints:
    - { dnsName: door.apps.example.com, recordType: A, targets: [192.0.2.80], recordTTL: 90 }
    - { dnsName: door.team-b.example.org, recordType: A, targets: [192.0.2.81] }
`;

describe('ExternalDNS (webhook client, TXT registry, planner) writing into zonekeeper serve', () => {
  let bin: string;
  let dir: string;
  let stateDir: string;
  let serve: ServeProcess;
  let webhook: string;

  const start = async () => {
    serve = await startServe(path.join(dir, 'manifests'), stateDir, [
      '--externaldns-webhook-namespace',
      'team-a',
      '--externaldns-webhook',
      '127.0.0.1:0',
    ]);
    const m = /externalDnsWebhook="(127\.0\.0\.1:\d+)"/.exec(serve.log());
    assert.ok(m, serve.log());
    webhook = `http://${m[1]}`;
  };

  const externalDns = (owner: string, desired: Endpoint[], extra: string[] = []) =>
    new Promise<Result>((resolve, reject) => {
      const child = spawn(bin, ['-url', webhook, '-owner', owner, ...extra]);
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('close', (code) =>
        code === 0
          ? resolve(JSON.parse(out) as Result)
          : reject(new Error(`externaldns-webhook exited ${code}:\n${err}\n${serve.log()}`)),
      );
      child.stdin.end(JSON.stringify(desired));
    });

  const answer = async (name: string, type: string) => {
    const r = await dig(serve.dnsPort, name, type);
    return r.answer
      .filter((l) => l.split(' ')[3] === type)
      .map((l) => l.split(' ').slice(4).join(' '))
      .sort();
  };
  const eventually = (name: string, type: string, want: string[]) =>
    waitFor(async () => {
      const got = await answer(name, type);
      return JSON.stringify(got) === JSON.stringify(want) ? got : undefined;
    }).catch(async () => assert.deepEqual(await answer(name, type), want, `${name} ${type}`));

  const web = (targets: string[]): Endpoint => ({
    dnsName: 'web.apps.example.com',
    recordType: 'A',
    recordTTL: 60,
    targets,
  });
  const api: Endpoint = {
    dnsName: 'api.apps.example.com',
    recordType: 'CNAME',
    recordTTL: 60,
    targets: ['web.apps.example.com'],
  };
  const www: Endpoint = {
    dnsName: 'www.team-a.example.org',
    recordType: 'AAAA',
    targets: ['2001:db8::1'],
    setIdentifier: 'eu',
    providerSpecific: [{ name: 'zonekeeper/none', value: 'kept' }],
  };
  const note: Endpoint = {
    dnsName: 'note.team-a.example.org',
    recordType: 'TXT',
    recordTTL: 120,
    targets: ['say "hi" \\ back', 'x'.repeat(300)],
  };

  before(async () => {
    bin = await goProgram('externaldns-webhook');
    dir = await tempDir('externaldns-webhook');
    stateDir = await tempDir('externaldns-webhook-state');
    await mkdir(path.join(dir, 'manifests'));
    await writeFile(path.join(dir, 'manifests', 'zones.yaml'), MANIFESTS);
    await start();
  });

  after(async () => {
    await serve?.stop();
    if (dir) await removeAll(dir, stateDir);
  });

  test('negotiation: the exact media type, and the domains team-a may write as the domain filter', async () => {
    const res = await fetch(`${webhook}/`, { headers: { accept: MEDIA_TYPE } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), MEDIA_TYPE);
    assert.deepEqual(await res.json(), {
      include: ['apps.example.com', 'kz.example.net', 'team-a.example.org'],
    });
    const health = await fetch(`${serve.httpUrl}/healthz`);
    assert.equal(health.status, 200);
  });

  test('a DNSEndpoint in the manifests is served as a record set of its namespace, within its delegations', async () => {
    await eventually('door.apps.example.com.', 'A', ['192.0.2.80']);
    assert.equal((await dig(serve.dnsPort, 'door.team-b.example.org.', 'A')).status, 'NXDOMAIN');
    const { value } = await waitFor(async () => {
      const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
        items: { kind: string; metadata: { name: string }; status?: { observedGeneration?: number } }[];
      };
      const o = body.items.find((i) => i.kind === 'DNSEndpoint');
      return o?.status?.observedGeneration !== undefined ? o : undefined;
    });
    assert.equal(value.status?.observedGeneration, 1);
    // The webhook's listing holds only what ExternalDNS wrote, not the DNSEndpoint's RRsets.
    const listed = (await (await fetch(`${webhook}/records`)).json()) as Endpoint[];
    assert.ok(!listed.some((e) => e.dnsName === 'door.apps.example.com'));
  });

  test('creates with ownership TXT records, lists back faithfully (a second pass plans nothing), serves them', async () => {
    const r = await externalDns(
      'alpha',
      [web(['192.0.2.10', '192.0.2.11']), api, www, note],
      ['-passes', '2'],
    );
    assert.deepEqual(r.domainFilter, {
      include: ['apps.example.com', 'kz.example.net', 'team-a.example.org'],
    });
    assert.equal(r.passes[0]!.error, undefined, JSON.stringify(r.passes[0]));
    // The planner's four creates; the registry adds an ownership TXT record for each when it applies them.
    assert.equal(r.passes[0]!.create?.length, 4, JSON.stringify(r.passes[0]!.create));
    assert.equal(changes(r.passes[1]!), 0, JSON.stringify(r.passes[1]));
    await eventually('web.apps.example.com.', 'A', ['192.0.2.10', '192.0.2.11']);
    await eventually('api.apps.example.com.', 'CNAME', ['web.apps.example.com.']);
    await eventually('www.team-a.example.org.', 'AAAA', ['2001:db8::1']);
    const txt = await answer('a-web.apps.example.com.', 'TXT');
    assert.equal(txt.length, 1);
    assert.match(txt[0]!, /heritage=external-dns,external-dns\/owner=alpha/);
    const listed = new Map((r.records ?? []).map((e) => [`${e.dnsName} ${e.recordType}`, e]));
    assert.equal(listed.get('web.apps.example.com A')?.labels?.owner, 'alpha');
    assert.deepEqual(listed.get('note.team-a.example.org TXT')?.targets, note.targets);
    assert.equal(listed.get('www.team-a.example.org AAAA')?.setIdentifier, 'eu');
    assert.deepEqual(listed.get('www.team-a.example.org AAAA')?.providerSpecific, www.providerSpecific);
    // The 300-byte TXT target is two character-strings on the wire, one target again when listed.
    const noteAnswer = await answer('note.team-a.example.org.', 'TXT');
    assert.equal(noteAnswer.length, 2);
  });

  test('updates and deletes what the owner no longer wants, with its TXT records', async () => {
    const r = await externalDns('alpha', [web(['192.0.2.12']), www, note]);
    assert.equal(r.passes[0]!.error, undefined);
    // The planner's changes; the registry adds the CNAME's TXT record to the delete when it applies them.
    assert.equal(r.passes[0]!.updateNew?.length, 1, JSON.stringify(r.passes[0]));
    assert.equal(r.passes[0]!.delete?.length, 1);
    await eventually('web.apps.example.com.', 'A', ['192.0.2.12']);
    await waitFor(async () =>
      (await dig(serve.dnsPort, 'api.apps.example.com.', 'CNAME')).status === 'NXDOMAIN' ? true : undefined,
    );
    assert.equal((await dig(serve.dnsPort, 'cname-api.apps.example.com.', 'TXT')).status, 'NXDOMAIN');
  });

  test("a second owner ID leaves the first one's records alone, and the first leaves the second's", async () => {
    const beta = await externalDns('beta', [
      { dnsName: 'web.apps.example.com', recordType: 'A', targets: ['203.0.113.66'] },
      { dnsName: 'beta.apps.example.com', recordType: 'A', targets: ['203.0.113.1'] },
    ]);
    assert.equal(beta.passes[0]!.error, undefined);
    assert.ok(!(beta.passes[0]!.updateNew ?? []).some((e) => e.dnsName === 'web.apps.example.com'));
    assert.ok(!(beta.passes[0]!.delete ?? []).length, JSON.stringify(beta.passes[0]!.delete));
    await eventually('beta.apps.example.com.', 'A', ['203.0.113.1']);
    assert.deepEqual(await answer('web.apps.example.com.', 'A'), ['192.0.2.12']);
    const alpha = await externalDns('alpha', [web(['192.0.2.12']), www, note]);
    assert.equal(changes(alpha.passes[0]!), 0, JSON.stringify(alpha.passes[0]));
    assert.deepEqual(await answer('beta.apps.example.com.', 'A'), ['203.0.113.1']);
  });

  test('endpoints outside the delegation or owned by a manifest are filtered, reported, and not written', async () => {
    const r = await externalDns('alpha', [
      web(['192.0.2.12']),
      www,
      note,
      { dnsName: 'mail.apps.example.com', recordType: 'MX', targets: ['10 mx.example.net'] },
      { dnsName: 'manifest.apps.example.com', recordType: 'A', targets: ['192.0.2.66'] },
    ]);
    assert.equal(r.passes[0]!.error, undefined);
    const adjusted = (r.adjusted ?? []).map((e) => `${e.dnsName} ${e.recordType}`);
    assert.ok(!adjusted.includes('mail.apps.example.com MX'), adjusted.join());
    assert.ok(!adjusted.includes('manifest.apps.example.com A'), adjusted.join());
    assert.deepEqual(await answer('manifest.apps.example.com.', 'A'), ['192.0.2.99']);
    assert.equal((await dig(serve.dnsPort, 'mail.apps.example.com.', 'MX')).status, 'NXDOMAIN');
    const status = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
      externalDnsRefused: { dnsName: string; recordType: string; code: string; stage: string }[];
    };
    const refused = status.externalDnsRefused.map((x) => `${x.dnsName} ${x.recordType} ${x.code} ${x.stage}`);
    assert.ok(refused.includes('mail.apps.example.com MX NOT_DELEGATED adjustendpoints'), refused.join('\n'));
    assert.ok(refused.includes('manifest.apps.example.com A NOT_OWNER adjustendpoints'), refused.join('\n'));
    const metrics = await (await fetch(`${serve.httpUrl}/metrics`)).text();
    assert.match(
      metrics,
      /zonekeeper_externaldns_webhook_refused_endpoints_total\{code="NOT_DELEGATED",stage="adjustendpoints"\} [1-9]/,
    );
  });

  test("a plan naming another namespace's zone or a manifest's RRset: 204, those dropped and reported, the rest written", async () => {
    const res = await fetch(`${webhook}/records`, {
      method: 'POST',
      headers: { 'content-type': MEDIA_TYPE },
      body: JSON.stringify({
        create: [
          { dnsName: 'www.team-b.example.org', recordType: 'A', targets: ['192.0.2.66'] },
          { dnsName: 'evil.team-b.example.org', recordType: 'A', targets: ['192.0.2.66'] },
          { dnsName: 'ok.apps.example.com', recordType: 'A', targets: ['192.0.2.5'] },
        ],
        updateNew: [{ dnsName: 'manifest.apps.example.com', recordType: 'A', targets: ['192.0.2.66'] }],
        delete: [{ dnsName: 'www.team-b.example.org', recordType: 'A', targets: ['198.51.100.7'] }],
      }),
    });
    assert.equal(res.status, 204, await res.text());
    await eventually('ok.apps.example.com.', 'A', ['192.0.2.5']);
    assert.deepEqual(await answer('www.team-b.example.org.', 'A'), ['198.51.100.7']);
    assert.equal((await dig(serve.dnsPort, 'evil.team-b.example.org.', 'A')).status, 'NXDOMAIN');
    assert.deepEqual(await answer('manifest.apps.example.com.', 'A'), ['192.0.2.99']);
    const status = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
      externalDnsRefused: { dnsName: string; code: string; stage: string }[];
    };
    const refused = status.externalDnsRefused
      .filter((x) => x.stage === 'records')
      .map((x) => `${x.dnsName} ${x.code}`);
    assert.ok(refused.includes('evil.team-b.example.org NOT_DELEGATED'), refused.join('\n'));
    // team-b's own record set holds that name: refused as another's RRset before the delegation is asked.
    assert.ok(refused.includes('www.team-b.example.org NOT_OWNER'), refused.join('\n'));
    assert.ok(refused.includes('manifest.apps.example.com NOT_OWNER'), refused.join('\n'));
    // Nothing of another namespace is listed as this provider's.
    const listed = (await (await fetch(`${webhook}/records`)).json()) as Endpoint[];
    assert.ok(!listed.some((e) => e.dnsName.endsWith('team-b.example.org')), JSON.stringify(listed));
  });

  test('a TTL above the maximum or a bad record is filtered by /adjustendpoints: the plan completes, one log line', async () => {
    // More bad endpoints than the namespace's burst of write requests (20): refused one write at a
    // time, they would spend the rate and the plan would never complete.
    const bad: Endpoint[] = Array.from({ length: 25 }, (_, i) => ({
      dnsName: `ttl${i}.apps.example.com`,
      recordType: 'A',
      recordTTL: 2147483648,
      targets: [`192.0.2.${100 + i}`],
    }));
    const r = await externalDns('ttl-owner', [
      ...bad,
      { dnsName: 'badrecord.apps.example.com', recordType: 'A', targets: ['192.0.2.300'] },
      { dnsName: 'fine.apps.example.com', recordType: 'A', recordTTL: 60, targets: ['192.0.2.55'] },
    ]);
    assert.equal(r.passes[0]!.error, undefined);
    const adjusted = (r.adjusted ?? []).map((e) => e.dnsName);
    assert.ok(!adjusted.some((n) => n.startsWith('ttl') || n.startsWith('badrecord')), adjusted.join());
    assert.ok(adjusted.includes('fine.apps.example.com'), adjusted.join());
    await eventually('fine.apps.example.com.', 'A', ['192.0.2.55']);
    assert.equal((await dig(serve.dnsPort, 'ttl0.apps.example.com.', 'A')).status, 'NXDOMAIN');
    const status = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
      externalDnsRefused: { dnsName: string; code: string; stage: string; message: string }[];
    };
    const refused = status.externalDnsRefused.filter((x) => x.stage === 'adjustendpoints');
    assert.ok(
      refused.some(
        (x) =>
          x.dnsName === 'ttl24.apps.example.com' && x.code === 'INVALID_CHANGE' && /ttl/i.test(x.message),
      ),
      JSON.stringify(refused.slice(-30)),
    );
    assert.ok(refused.some((x) => x.dnsName === 'badrecord.apps.example.com' && x.code === 'INVALID_CHANGE'));
    // One log line per request with counts, naming a few endpoints: not one per refused endpoint.
    assert.match(serve.log(), /ExternalDNS webhook: 26 endpoint\(s\) not written/);
    assert.ok(!serve.log().includes('ttl24.apps.example.com'), serve.log());
  });

  test('a plan with many bad changes refuses them all in one 204 and writes the rest with one request', async () => {
    const res = await fetch(`${webhook}/records`, {
      method: 'POST',
      headers: { 'content-type': MEDIA_TYPE },
      body: JSON.stringify({
        create: [
          ...Array.from({ length: 25 }, (_, i) => ({
            dnsName: `direct${i}.apps.example.com`,
            recordType: 'A',
            recordTTL: 2147483648,
            targets: ['192.0.2.7'],
          })),
          { dnsName: 'direct.apps.example.com', recordType: 'A', targets: ['192.0.2.8'] },
        ],
      }),
    });
    assert.equal(res.status, 204, await res.text());
    await eventually('direct.apps.example.com.', 'A', ['192.0.2.8']);
    const status = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
      externalDnsRefused: { dnsName: string; code: string; stage: string }[];
    };
    const refused = status.externalDnsRefused.filter(
      (x) => x.stage === 'records' && /^direct\d+\./.test(x.dnsName) && x.code === 'INVALID_CHANGE',
    );
    assert.equal(refused.length, 25, JSON.stringify(refused));
    const metrics = await (await fetch(`${serve.httpUrl}/metrics`)).text();
    assert.doesNotMatch(
      metrics,
      /zonekeeper_externaldns_webhook_requests_total\{endpoint="applychanges",status="503"\}/,
    );
  });

  test('an oversize body is refused with 413 before it is read whole; the provider keeps answering', async () => {
    const big = JSON.stringify({
      create: [
        { dnsName: 'big.apps.example.com', recordType: 'TXT', targets: ['x'.repeat(5 * 1024 * 1024)] },
      ],
    });
    // Answered from the declared length alone: the headers are sent, the body never is.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${webhook}/records`, {
        method: 'POST',
        headers: { 'content-type': MEDIA_TYPE, 'content-length': Buffer.byteLength(big) },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', (e) => {
        if (!/ECONNRESET|socket hang up|EPIPE/.test(String(e))) reject(e);
      });
      req.flushHeaders();
    });
    assert.equal(status, 413);
    const again = await fetch(`${webhook}/records`);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('content-type'), MEDIA_TYPE);
  });

  test('durable: after a restart the same endpoints are listed and a pass of the first owner plans nothing', async () => {
    const before = await (await fetch(`${webhook}/records`)).json();
    await serve.stop();
    await start();
    assert.deepEqual(await (await fetch(`${webhook}/records`)).json(), before);
    const r = await externalDns('alpha', [web(['192.0.2.12']), www, note]);
    assert.equal(changes(r.passes[0]!), 0, JSON.stringify(r.passes[0]));
    await eventually('web.apps.example.com.', 'A', ['192.0.2.12']);
  });
});
