import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dig, rdataOf } from './support/dig.ts';
import {
  CLI,
  copyExamples,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);

function soaSerial(lines: string[]): number {
  const soa = lines.find((l) => l.split(' ')[3] === 'SOA');
  assert.ok(soa, `no SOA in ${JSON.stringify(lines)}`);
  return Number(soa.split(' ')[6]);
}

describe('zonekeeper serve on the examples, queried with dig and kdig', () => {
  let manifests: string;
  let state: string;
  let serve: ServeProcess;

  before(async () => {
    manifests = await copyExamples();
    state = await tempDir('state');
    serve = await startServe(manifests, state);
  });
  after(async () => {
    await serve?.stop();
    await removeAll(manifests, state);
  });

  test('answers www.example.com A over UDP and TCP, from dig and kdig', async () => {
    for (const tool of ['dig', 'kdig'] as const) {
      for (const tcp of [false, true]) {
        const r = await dig(serve.dnsPort, 'www.example.com', 'A', { tool, tcp });
        assert.equal(r.status, 'NOERROR', r.raw);
        assert.ok(r.flags.includes('aa'), `${tool} tcp=${tcp}: AA expected`);
        assert.deepEqual(rdataOf(r, 'A').sort(), ['192.0.2.10', '192.0.2.11']);
      }
    }
  });

  test('serves a record of every type from the examples', async () => {
    const expected: [string, string, RegExp][] = [
      ['example.com', 'SOA', /^ns1\.example\.com\. hostmaster\.example\.com\. \d+ 3600 600 1209600 300$/],
      ['example.com', 'NS', /^ns1\.example\.com\.$/],
      ['www.example.com', 'AAAA', /^2001:db8::10$/],
      ['docs.example.com', 'CNAME', /^www\.example\.com\.$/],
      ['example.com', 'A', /^192\.0\.2\.1[01]$/], // ALIAS at the apex, resolved from our own zone
      ['example.com', 'TXT', /^"v=spf1 mx -all"$/],
      ['example.com', 'MX', /^10 mail\.example\.com\.$/],
      ['_sip._tcp.example.com', 'SRV', /^10 60 5060 sip\.example\.com\.$/],
      ['example.com', 'CAA', /^0 issue "letsencrypt\.org"$/],
      ['10.2.0.192.in-addr.arpa', 'PTR', /^www\.example\.com\.$/],
      ['_443._tcp.www.example.com', 'TLSA', /^3 1 1 /],
      ['www.example.com', 'SSHFP', /^4 2 /],
      ['example.com', 'HTTPS', /^1 \. alpn="h3,h2"/],
      ['_dns.example.com', 'SVCB', /^1 www\.example\.com\. alpn="h2" port=8443/],
      ['legacy.example.com', 'DS', /^60485 13 2 /],
      ['sip.example.com', 'NAPTR', /^100 10 "S" "SIP\+D2T" "" _sip\._tcp\.example\.com\.$/],
    ];
    for (const [name, type, pattern] of expected) {
      const r = await dig(serve.dnsPort, name, type);
      assert.equal(r.status, 'NOERROR', `${name} ${type}: ${r.raw}`);
      const values = rdataOf(r, type);
      assert.ok(
        values.some((v) => pattern.test(v)),
        `${name} ${type}: ${JSON.stringify(values)} does not match ${pattern}`,
      );
    }
  });

  test('NXDOMAIN and NODATA carry the SOA in the authority section (RFC 2308)', async () => {
    const nx = await dig(serve.dnsPort, 'missing.example.com', 'A');
    assert.equal(nx.status, 'NXDOMAIN');
    assert.ok(nx.flags.includes('aa'));
    assert.match(nx.authority[0] ?? '', /^example\.com\. 300 IN SOA /);
    const nodata = await dig(serve.dnsPort, 'www.example.com', 'MX');
    assert.equal(nodata.status, 'NOERROR');
    assert.deepEqual(nodata.answer, []);
    assert.match(nodata.authority[0] ?? '', /^example\.com\. 300 IN SOA /);
  });

  test('refers delegated children: NS in authority, AA clear', async () => {
    const r = await dig(serve.dnsPort, 'host.legacy.example.com', 'A');
    assert.equal(r.status, 'NOERROR');
    assert.ok(!r.flags.includes('aa'));
    assert.deepEqual(r.answer, []);
    assert.deepEqual(r.authority.map((l) => l.split(' ').slice(3).join(' ')).sort(), [
      'NS ns1.legacy-dns.example.net.',
      'NS ns2.legacy-dns.example.net.',
    ]);
  });

  test('publishes the child zone: NS for sub.example.com in the parent and its records from the child', async () => {
    const www = await dig(serve.dnsPort, 'www.sub.example.com', 'A');
    assert.deepEqual(rdataOf(www, 'A'), ['198.51.100.80']);
    const api = await dig(serve.dnsPort, 'api.example.com', 'A');
    assert.deepEqual(rdataOf(api, 'A'), ['192.0.2.80'], 'team-a publishes api through the delegation');
  });

  test('REFUSED outside the zones served', async () => {
    const r = await dig(serve.dnsPort, 'example.org', 'A');
    assert.equal(r.status, 'REFUSED');
  });

  test('an edit changes the answer and raises the serial; deletion gives NXDOMAIN with the SOA', async (t) => {
    const file = path.join(manifests, 'example.com', 'www.yaml');
    const before = soaSerial((await dig(serve.dnsPort, 'example.com', 'SOA')).answer);
    await writeFile(
      file,
      (await readFile(file, 'utf8')).replace('["192.0.2.10", "192.0.2.11"]', '["203.0.113.7"]'),
    );
    const edit = await waitFor(async () => {
      const r = await dig(serve.dnsPort, 'www.example.com', 'A');
      return rdataOf(r, 'A').join() === '203.0.113.7' ? r : undefined;
    });
    t.diagnostic(`edit served after ${edit.ms.toFixed(0)} ms`);
    const afterEdit = soaSerial((await dig(serve.dnsPort, 'example.com', 'SOA')).answer);
    assert.ok(afterEdit > before, `serial ${afterEdit} should be above ${before}`);

    // A name with a single record set: deleting its file removes the name.
    const temp = path.join(manifests, 'example.com', 'temp.yaml');
    await writeFile(
      temp,
      'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: temp, namespace: dns}\nspec: {zoneRef: {name: example-com}, name: temp, type: TXT, records: [hello]}\n',
    );
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'temp.example.com', 'TXT'), 'TXT').length === 1 ? true : undefined,
    );
    const withTemp = soaSerial((await dig(serve.dnsPort, 'example.com', 'SOA')).answer);
    await rm(temp);
    const gone = await waitFor(async () => {
      const r = await dig(serve.dnsPort, 'temp.example.com', 'TXT');
      return r.status === 'NXDOMAIN' ? r : undefined;
    });
    t.diagnostic(`deletion served after ${gone.ms.toFixed(0)} ms`);
    assert.match(gone.value.authority[0] ?? '', /IN SOA /);
    assert.ok(soaSerial(gone.value.authority) > withTemp, 'the deletion raised the serial too');
  });

  test('an invalid edit is reported with file, line and field, and the last valid version keeps serving', async () => {
    const file = path.join(manifests, 'team-a', 'api.yaml');
    const original = await readFile(file, 'utf8');
    await writeFile(file, original.replace('records: ["192.0.2.80"]', 'records: ["192.0.2.300"]'));
    const problems = await waitFor(async () => {
      const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
        items: {
          metadata: { name: string };
          status?: { conditions?: { type: string; status: string; message: string }[] };
        }[];
      };
      const api = body.items.find((i) => i.metadata.name === 'api');
      const accepted = api?.status?.conditions?.find((c) => c.type === 'Accepted');
      return accepted?.status === 'False' ? accepted.message : undefined;
    });
    assert.match(problems.value, /spec\.records\[0\] "192\.0\.2\.300"/);
    // A record value that does not parse is an invalid version like any other: the last valid one
    // keeps serving, and everything else too.
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'api.example.com', 'A'), 'A'), ['192.0.2.80']);
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'www.sub.example.com', 'A'), 'A'), ['198.51.100.80']);
    // A schema-level problem keeps the last valid version too.
    await writeFile(file, original);
    await waitFor(async () => {
      const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
        problems: { file: string }[];
      };
      return body.problems.some((p) => p.file === file) ? undefined : true;
    });
    await writeFile(file, original.replace('type: A', 'type: BOGUS'));
    const reported = await waitFor(async () => {
      const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
        problems: { file: string; line: number; path?: string; message: string }[];
      };
      return body.problems.find((p) => p.file === file);
    });
    assert.equal(reported.value.path, 'spec.type');
    assert.equal(reported.value.line, 10);
    assert.deepEqual(
      rdataOf(await dig(serve.dnsPort, 'api.example.com', 'A'), 'A'),
      ['192.0.2.80'],
      'last valid version still served',
    );
    await writeFile(file, original);
  });

  test('HTTP: healthz, readyz, metrics and resources', async () => {
    assert.equal((await fetch(`${serve.httpUrl}/healthz`)).status, 200);
    assert.equal((await fetch(`${serve.httpUrl}/readyz`)).status, 200);
    const metrics = await (await fetch(`${serve.httpUrl}/metrics`)).text();
    assert.match(metrics, /zonekeeper_dns_queries_total\{qtype="A",rcode="NOERROR",transport="udp"\} \d+/);
    assert.match(metrics, /zonekeeper_zones_served 3/);
    assert.match(metrics, /zonekeeper_dns_response_seconds_bucket/);
    const resources = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
      items: unknown[];
    };
    assert.ok(resources.items.length > 20);
  });

  test('zonekeeper status prints kubectl-like tables', async () => {
    const { stdout } = await run(process.execPath, [CLI, 'status', '--http', serve.httpUrl]);
    assert.match(stdout, /NAMESPACE\s+ZONE\s+DOMAIN\s+CLASS\s+SERIAL\s+RECORDS\s+READY/);
    assert.match(stdout, /dns\s+example-com\s+example\.com\s+builtin\s+\d{10}\s+\d+\s+True/);
  });
});

describe('serials survive restarts', () => {
  test('a restart keeps the serial; the next change goes above it', async () => {
    const manifests = await copyExamples();
    const state = await tempDir('state');
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe(manifests, state);
      const first = serve;
      const initial = soaSerial((await dig(first.dnsPort, 'example.com', 'SOA')).answer);
      const file = path.join(manifests, 'example.com', 'www.yaml');
      await writeFile(file, (await readFile(file, 'utf8')).replace('192.0.2.11', '192.0.2.12'));
      await waitFor(async () =>
        rdataOf(await dig(first.dnsPort, 'www.example.com', 'A'), 'A').includes('192.0.2.12')
          ? true
          : undefined,
      );
      const serial = soaSerial((await dig(first.dnsPort, 'example.com', 'SOA')).answer);
      assert.ok(serial > initial, `the change raised the serial (${initial} -> ${serial})`);
      await serve.stop();
      serve = await startServe(manifests, state);
      assert.equal(
        soaSerial((await dig(serve.dnsPort, 'example.com', 'SOA')).answer),
        serial,
        'same content, same serial',
      );
      await serve.stop();
      // A change made while stopped is picked up at start with a higher serial.
      await writeFile(file, (await readFile(file, 'utf8')).replace('192.0.2.12', '192.0.2.13'));
      serve = await startServe(manifests, state);
      assert.ok(soaSerial((await dig(serve.dnsPort, 'example.com', 'SOA')).answer) > serial);
      await serve.stop();
    } finally {
      await serve?.stop();
      await removeAll(manifests, state);
    }
  });
});

describe('zonekeeper validate', () => {
  test('exits 0 on the examples', async () => {
    const { stdout } = await run(process.execPath, [CLI, 'validate', 'examples']);
    assert.match(stdout, /0 error\(s\)/);
  });

  test('names each problem precisely and exits 1', async () => {
    const dir = await tempDir('invalid');
    try {
      await writeFile(
        path.join(dir, 'broken.yaml'),
        [
          'apiVersion: dns.zonekeeper.dev/v1alpha1',
          'kind: DNSZoneClass',
          'metadata: {name: builtin}',
          'spec: {backend: {builtin: {}}, nameServers: [ns1.example.com.]}',
          '---',
          'apiVersion: dns.zonekeeper.dev/v1alpha1',
          'kind: DNSZone',
          'metadata: {name: z, namespace: dns}',
          'spec: {domainName: example.com, className: builtin}',
          '---',
          'apiVersion: dns.zonekeeper.dev/v1alpha1',
          'kind: DNSRecordSet',
          'metadata: {name: mx, namespace: dns}',
          'spec:',
          '  zoneRef: {name: z}',
          '  name: "@"',
          '  type: MX',
          '  records:',
          '    - "10 mail"',
          '    - "mail2"',
          '---',
          'apiVersion: dns.zonekeeper.dev/v1alpha1',
          'kind: DNSRecordSet',
          'metadata: {name: ttl, namespace: dns}',
          'spec: {zoneRef: {name: z}, name: www, type: A, ttl: -5, records: ["192.0.2.1"]}',
          '---',
          'apiVersion: dns.zonekeeper.dev/v1alpha1',
          'kind: DNSRecordSet',
          'metadata: {name: clash, namespace: dns}',
          'spec: {zoneRef: {name: z}, name: "@", type: CNAME, records: [other.example.net.]}',
          '',
        ].join('\n'),
      );
      await writeFile(path.join(dir, 'syntax.yaml'), 'kind: DNSZone\nmetadata: [unclosed\n');
      const result = await run(process.execPath, [CLI, 'validate', dir]).then(
        () => assert.fail('validate should exit 1'),
        (e: { code: number; stdout: string }) => e,
      );
      assert.equal(result.code, 1);
      const lines = result.stdout.trim().split('\n');
      const errors = lines.filter((l) => l.startsWith('error: '));
      assert.equal(errors.length, 4, result.stdout);
      assert.match(
        result.stdout,
        /broken\.yaml:20 \(document 3\): DNSRecordSet dns\/mx spec\.records\[1\]: spec\.records\[1\] "mail2"/,
      );
      assert.match(result.stdout, /broken\.yaml:25 \(document 4\): DNSRecordSet dns\/ttl spec\.ttl: /);
      assert.match(
        result.stdout,
        /broken\.yaml:30 \(document 5\): DNSRecordSet dns\/clash spec\.name: a CNAME cannot be at the zone apex/,
      );
      assert.match(result.stdout, /syntax\.yaml:\d+ \(document 1\): YAML: /);
    } finally {
      await removeAll(dir);
    }
  });
});
