import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dig, rdataOf } from './support/dig.ts';
import { type KnotProcess, startKnot } from './support/knot.ts';
import { removeAll, type ServeProcess, startServe, tempDir } from './support/zonekeeper-process.ts';

/**
 * ALIAS targets outside the zones served are resolved through the configured resolver address. The
 * "resolver" here is a real Knot on loopback, authoritative for the target's zone: it answers the
 * recursive-desired A/AAAA queries from its own data, which is all the ALIAS code asks of a resolver.
 */
describe('ALIAS through a resolver on loopback', () => {
  let knot: KnotProcess;
  let manifests: string;
  let state: string;
  let serve: ServeProcess;

  before(async () => {
    knot = await startKnot({
      zones: [
        {
          origin: 'cdn.example.net.',
          text: [
            '$ORIGIN cdn.example.net.',
            '@ 3600 IN SOA ns.cdn.example.net. h.cdn.example.net. 1 3600 600 86400 30',
            '@ 3600 IN NS ns.cdn.example.net.',
            'ns 3600 IN A 192.0.2.1',
            'edge 60 IN A 198.51.100.7',
            'edge 60 IN A 198.51.100.8',
            'edge 60 IN AAAA 2001:db8::7',
            'v4only 60 IN A 198.51.100.9',
            'alias 60 IN CNAME edge',
            '',
          ].join('\n'),
        },
      ],
    });
    manifests = await tempDir('alias');
    state = await tempDir('state');
    await mkdir(manifests, { recursive: true });
    await writeFile(
      path.join(manifests, 'zone.yaml'),
      `apiVersion: dns.zonekeeper.dev/v1alpha1
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
spec: {zoneRef: {name: z}, name: "@", type: ALIAS, ttl: 300, records: [edge.cdn.example.net.]}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: chained, namespace: dns}
spec: {zoneRef: {name: z}, name: chained, type: ALIAS, records: [alias.cdn.example.net.]}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: v4, namespace: dns}
spec: {zoneRef: {name: z}, name: v4, type: ALIAS, records: [v4only.cdn.example.net.]}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: dangling, namespace: dns}
spec: {zoneRef: {name: z}, name: dangling, type: ALIAS, records: [missing.cdn.example.net.]}
`,
    );
    serve = await startServe(manifests, state, ['--alias-resolver', `127.0.0.1:${knot.port}`]);
  });
  after(async () => {
    await serve?.stop();
    await knot?.stop();
    await removeAll(manifests, state);
  });

  test('A and AAAA at the apex come from the target, with the smaller TTL', async () => {
    const a = await dig(serve.dnsPort, 'example.org', 'A');
    assert.equal(a.status, 'NOERROR');
    assert.ok(a.flags.includes('aa'));
    assert.deepEqual(rdataOf(a, 'A').sort(), ['198.51.100.7', '198.51.100.8']);
    assert.ok(
      a.answer.every((l) => l.startsWith('example.org. ') && Number(l.split(' ')[1]) <= 60),
      a.answer.join('\n'),
    );
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'example.org', 'AAAA'), 'AAAA'), ['2001:db8::7']);
  });

  test('a CNAME at the target is followed', async () => {
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'chained.example.org', 'A'), 'A').sort(), [
      '198.51.100.7',
      '198.51.100.8',
    ]);
  });

  test('a target without AAAA gives NODATA with the SOA; a missing target gives NODATA too', async () => {
    const r = await dig(serve.dnsPort, 'v4.example.org', 'AAAA');
    assert.equal(r.status, 'NOERROR');
    assert.deepEqual(r.answer, []);
    assert.match(r.authority[0] ?? '', / SOA /);
    const missing = await dig(serve.dnsPort, 'dangling.example.org', 'A');
    assert.equal(missing.status, 'NOERROR');
    assert.deepEqual(missing.answer, []);
  });

  test('answers are cached for the target TTL: they survive the resolver going away', async () => {
    await dig(serve.dnsPort, 'example.org', 'A');
    await knot.stop();
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'example.org', 'A'), 'A').sort(), [
      '198.51.100.7',
      '198.51.100.8',
    ]);
  });

  test('SERVFAIL when the target cannot be resolved (resolver down, nothing cached)', async () => {
    // The server waits for the resolver (2 s) before answering SERVFAIL: give dig longer than that.
    const r = await dig(serve.dnsPort, 'chained.example.org', 'AAAA', { args: ['+time=6'] });
    assert.equal(r.status, 'SERVFAIL');
  });
});
