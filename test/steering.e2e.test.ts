/**
 * Answer steering end to end: `zonekeeper serve` (one process, then with DNS threads) serves
 * record sets whose records are real HTTP, HTTPS and TCP endpoints on loopback addresses; the test
 * switches endpoints down and up and watches the answers change over UDP with `dig` (with +subnet
 * for EDNS Client Subnet), for every policy.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { delv, trustAnchorFile } from './support/delv.ts';
import { type DigResult, dig, rdataOf } from './support/dig.ts';
import { type Endpoint, httpEndpoint, tcpEndpoint, testCertificate } from './support/health-endpoints.ts';
import { writeMmdb } from './support/mmdb-writer.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const FAST = { intervalSeconds: 1, timeoutSeconds: 1, failureThreshold: 3, successThreshold: 1 };

/** Two endpoints of one kind on two loopback addresses and one port. */
async function pair(make: (address: string, port?: number) => Promise<Endpoint>, a: string, b: string) {
  for (let attempt = 0; ; attempt++) {
    const first = await make(a);
    try {
      return [first, await make(b, first.port)] as const;
    } catch (e) {
      await first.close();
      if (attempt > 5) throw e;
    }
  }
}

function recordSet(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSRecordSet',
    metadata: { name, namespace: 'steer' },
    spec: { zoneRef: { name: 'steer-test' }, name, type: 'A', ttl: 5, ...spec },
  };
}

/** Client Subnet of a query and the scope answered, from dig's OPT pseudo-section. */
function ecsScope(r: DigResult): number | undefined {
  const m = /CLIENT-SUBNET: [0-9a-f.:]+\/\d+\/(\d+)/.exec(r.raw);
  return m ? Number(m[1]) : undefined;
}

for (const workers of [1, 2]) {
  describe(`steering through zonekeeper serve --workers ${workers}`, { timeout: 240_000 }, () => {
    let dir: string;
    let serve: ServeProcess;
    let http1: readonly [Endpoint, Endpoint];
    let https1: readonly [Endpoint, Endpoint];
    let tcp1: readonly [Endpoint, Endpoint];
    const endpoints: Endpoint[] = [];
    const base = 10 + workers * 20;
    const ip = (n: number) => `127.0.0.${base + n}`;

    before(async () => {
      dir = await tempDir('steering');
      const tls = await testCertificate('secure.steer.test');
      http1 = await pair((a, p) => httpEndpoint(a, p === undefined ? {} : { port: p }), ip(1), ip(2));
      https1 = await pair(
        (a, p) => httpEndpoint(a, { tls, ...(p === undefined ? {} : { port: p }) }),
        ip(3),
        ip(4),
      );
      tcp1 = await pair((a, p) => tcpEndpoint(a, p), ip(5), ip(6));
      // A GeoIP database made for the test: 192.0.2.0/24 in Germany (Europe), 100.64.0.0/10 in North America.
      const geoFile = path.join(dir, 'geo.mmdb');
      await writeFile(
        geoFile,
        writeMmdb([
          { network: '192.0.2.0/24', record: { country: { iso_code: 'DE' }, continent: { code: 'EU' } } },
          { network: '100.64.0.0/10', record: { country: { iso_code: 'US' }, continent: { code: 'NA' } } },
        ]),
      );
      endpoints.push(...http1, ...https1, ...tcp1);
      const manifests = path.join(dir, 'manifests');
      await mkdir(manifests, { recursive: true });
      const httpCheck = { protocol: 'HTTP', port: http1[0].port, path: '/healthz', ...FAST };
      const docs = [
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: {
            backend: { builtin: {} },
            nameServers: ['ns1.steer.test.'],
            transfers: { allowFrom: ['127.0.0.1'] },
            geoip: {
              databaseFile: geoFile,
              countries: { DE: ['eu', 'us'] },
              continents: { NA: ['us', 'eu'] },
            },
            topology: [
              { network: '198.51.100.0/24', regions: ['us', 'eu'] },
              { network: '203.0.113.0/24', regions: ['eu', 'us'] },
            ],
          },
        },
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZone',
          metadata: { name: 'steer-test', namespace: 'steer' },
          spec: { domainName: 'steer.test', className: 'builtin' },
        },
        recordSet('ns1', { records: ['192.0.2.53'] }),
        recordSet('all', { records: [ip(1), ip(2)], healthCheck: httpCheck, selection: { policy: 'All' } }),
        recordSet('ordered', {
          records: [ip(3), ip(4)],
          healthCheck: { protocol: 'HTTPS', port: https1[0].port, host: 'secure.steer.test', ...FAST },
          selection: { whenAllDown: 'None' },
          placement: 'ActiveHotStandby',
        }),
        recordSet('tcp', {
          records: [ip(5), ip(6)],
          healthCheck: { protocol: 'TCP', port: tcp1[0].port, ...FAST },
          selection: { policy: 'Ordered', whenAllDown: 'First' },
        }),
        recordSet('weighted', {
          records: [ip(1), ip(2)],
          healthCheck: httpCheck,
          placement: 'WeightedCanary',
          selection: { weights: { [ip(1)]: 50, [ip(2)]: 50 } },
        }),
        recordSet('hashed', {
          records: [ip(1), ip(2)],
          healthCheck: httpCheck,
          selection: { policy: 'Hashed' },
        }),
        recordSet('random', {
          records: [ip(1), ip(2)],
          healthCheck: httpCheck,
          selection: { policy: 'Random' },
        }),
        recordSet('closest', {
          records: [ip(1), ip(2)],
          healthCheck: httpCheck,
          selection: { policy: 'Closest', regions: { [ip(1)]: 'eu', [ip(2)]: 'us' } },
        }),
        // A signed zone with a steered record set: each subset is signed where it is chosen.
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZone',
          metadata: { name: 'signed-test', namespace: 'steer' },
          spec: { domainName: 'signed.test', className: 'builtin', dnssec: { enabled: true } },
        },
        recordSet('signed-ordered', {
          zoneRef: { name: 'signed-test' },
          name: 'ordered',
          records: [ip(1), ip(2)],
          healthCheck: httpCheck,
          selection: { policy: 'Ordered' },
        }),
        recordSet('signed-all', {
          zoneRef: { name: 'signed-test' },
          name: 'all',
          records: [ip(1), ip(2)],
          healthCheck: httpCheck,
          selection: { policy: 'All' },
        }),
      ];
      await writeFile(path.join(manifests, 'steer.yaml'), docs.map((d) => stringify(d)).join('---\n'));
      serve = await startServe(manifests, path.join(dir, 'state'), [
        '--workers',
        String(workers),
        '--health-probe-ca',
        tls.caFile,
        // The endpoints listen on loopback, which probes reach only when allowed (a list, as in
        // --health-probe-allow 10.0.0.0/8,127.0.0.0/8; without the second all would be down).
        '--health-probe-allow',
        '192.0.2.0/24,127.0.0.0/8',
      ]);
    });

    after(async () => {
      await serve?.stop();
      await Promise.all(endpoints.map((e) => e.close()));
      await removeAll(dir);
    });

    const q = (name: string, args: string[] = []) => dig(serve.dnsPort, `${name}.steer.test`, 'A', { args });
    const answers = async (name: string, args: string[] = []) => rdataOf(await q(name, args), 'A').sort();
    /** Waits until `name` answers exactly `expected` (sorted); every DNS process must, so ask a few times. */
    const until = async (name: string, expected: string[], args: string[] = []) => {
      let last: string[] = [];
      try {
        await waitFor(async () => {
          for (let i = 0; i < 4; i++) {
            last = await answers(name, args);
            if (last.join() !== [...expected].sort().join()) return undefined;
          }
          return true;
        }, 30_000);
      } catch {
        assert.fail(
          `${name}: expected ${expected.join(', ')}, last answered ${last.join(', ')}\n${serve.log()}`,
        );
      }
    };

    /** DNSRecordSet steer/<name>'s status.targets, from serve's resources endpoint. */
    const targets = async (name: string) => {
      const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
        items: {
          kind: string;
          metadata: { name: string };
          status?: { targets?: Record<string, string>[] };
        }[];
      };
      return body.items.find((i) => i.kind === 'DNSRecordSet' && i.metadata.name === name)?.status?.targets;
    };
    const targetsUntil = (name: string, states: string[]) =>
      waitFor(async () => {
        const t = await targets(name);
        return t && t.map((x) => x.state).join() === states.join() ? t : undefined;
      }, 30_000);

    test('All: a down HTTP endpoint leaves the answer and comes back; status.targets follows', async () => {
      await until('all', [ip(1), ip(2)]);
      await targetsUntil('all', ['Up', 'Up']);
      await http1[0].setUp(false);
      await until('all', [ip(2)]);
      const { value: down } = await targetsUntil('all', ['Down', 'Up']);
      assert.equal(down[0]!.address, ip(1));
      assert.match(down[0]!.lastError ?? '', /HTTP status 503/);
      assert.ok(down[0]!.lastTransitionTime, 'the time of the change');
      await http1[0].setUp(true);
      await until('all', [ip(1), ip(2)]);
      const { value: up } = await targetsUntil('all', ['Up', 'Up']);
      assert.equal(up[0]!.lastError, undefined);
    });

    test('Ordered over HTTPS (ActiveHotStandby): fails over, fails back; whenAllDown None gives NODATA', async () => {
      await until('ordered', [ip(3)]);
      await https1[0].setUp(false);
      await until('ordered', [ip(4)]);
      await https1[1].setUp(false);
      await until('ordered', []);
      const nodata = await q('ordered');
      assert.equal(nodata.status, 'NOERROR');
      assert.match(nodata.authority.join('\n'), /steer\.test\. \d+ IN SOA /, 'NODATA carries the SOA');
      await https1[0].setUp(true);
      await https1[1].setUp(true);
      await until('ordered', [ip(3)]);
    });

    test('Ordered over TCP: a refused port fails over; whenAllDown First answers the first record', async () => {
      await until('tcp', [ip(5)]);
      await tcp1[0].setUp(false);
      await until('tcp', [ip(6)]);
      await tcp1[1].setUp(false);
      await until('tcp', [ip(5)]);
      await tcp1[1].setUp(true);
      await until('tcp', [ip(6)]);
      await tcp1[0].setUp(true);
      await until('tcp', [ip(5)]);
    });

    test('Weighted and Hashed: one record per client subnet, the same each time, never a down one', async () => {
      for (const name of ['weighted', 'hashed']) {
        const seen = new Set<string>();
        for (let i = 0; i < 24; i++) {
          const args = [`+subnet=10.${i}.0.0/16`];
          const first = await q(name, args);
          const got = rdataOf(first, 'A');
          assert.equal(got.length, 1, `${name}: ${first.raw}`);
          assert.equal(ecsScope(first), 16, `${name}: the scope is the client's source prefix`);
          assert.deepEqual(rdataOf(await q(name, args), 'A'), got, `${name}: sticky per client`);
          seen.add(got[0]!);
        }
        assert.equal(seen.size, 2, `${name}: clients spread over both records`);
      }
      await http1[1].setUp(false);
      try {
        // Each record set probes with its own Host (its owner name), so each flips on its own probes.
        for (const name of ['weighted', 'hashed', 'random'])
          for (let i = 0; i < 8; i++) await until(name, [ip(1)], [`+subnet=10.${i}.0.0/16`]);
      } finally {
        await http1[1].setUp(true);
      }
      await until('all', [ip(1), ip(2)]);
    });

    test('Closest: the topology network, else the GeoIP database, decides the region and the scope; the next region when down', async () => {
      const us = ['+subnet=198.51.100.77/32'];
      const eu = ['+subnet=203.0.113.0/24'];
      await until('closest', [ip(2)], us);
      await until('closest', [ip(1)], eu);
      assert.equal(ecsScope(await q('closest', us)), 24);
      // Outside the topology, the GeoIP database decides; the scope is its network's prefix.
      const de = ['+subnet=192.0.2.0/24'];
      await until('closest', [ip(1)], de);
      assert.equal(ecsScope(await q('closest', de)), 24);
      const na = ['+subnet=100.64.5.0/24'];
      await until('closest', [ip(2)], na);
      assert.equal(ecsScope(await q('closest', na)), 10);
      const other = await q('closest', ['+subnet=192.168.0.0/16']);
      assert.deepEqual(
        rdataOf(other, 'A').sort(),
        [ip(1), ip(2)],
        'outside the topology: every healthy record',
      );
      assert.equal(ecsScope(other), 16);
      await http1[1].setUp(false);
      try {
        await until('closest', [ip(1)], us);
      } finally {
        await http1[1].setUp(true);
      }
      await until('closest', [ip(2)], us);
    });

    test('All and Ordered answer with scope 0; AXFR carries every candidate', async () => {
      assert.equal(ecsScope(await q('all', ['+subnet=198.51.100.0/24'])), 0);
      assert.equal(ecsScope(await q('ordered', ['+subnet=198.51.100.0/24'])), 0);
      await https1[0].setUp(false);
      await until('ordered', [ip(4)]);
      const axfr = await dig(serve.dnsPort, 'steer.test', 'AXFR', { tcp: true });
      const ordered = axfr.raw.split('\n').filter((l) => l.startsWith('ordered.steer.test.'));
      assert.equal(ordered.length, 2, axfr.raw);
      await https1[0].setUp(true);
      await until('ordered', [ip(3)]);
    });

    test('a signed zone: DO answers are steered, each subset signed, and delv validates them', async () => {
      const port = serve.dnsPort;
      const work = path.join(dir, 'delv');
      await mkdir(work, { recursive: true });
      const anchors = await trustAnchorFile(work, port, 'signed.test');
      const signedAnswer = async (name: string) => {
        const r = await dig(port, `${name}.signed.test`, 'A', { args: ['+dnssec'] });
        return { a: rdataOf(r, 'A').sort(), sigs: r.answer.filter((l) => l.split(/\s+/)[3] === 'RRSIG') };
      };
      const validated = async (name: string, expected: string[]) => {
        let last = '';
        try {
          await waitFor(async () => {
            for (let i = 0; i < 4; i++) {
              const { a, sigs } = await signedAnswer(name);
              const v = await delv(port, anchors, 'signed.test', `${name}.signed.test.`, 'A');
              const addresses = v.answer
                .map((l) => l.split(/\s+/))
                .filter((f) => f[3] === 'A')
                .map((f) => f[4]);
              last = `dig +dnssec: ${a.join(', ')} (${sigs.length} RRSIG); delv: ${v.verdict}\n${v.raw}`;
              if (a.join() !== [...expected].sort().join() || sigs.length !== 1) return undefined;
              if (!/^fully validated/.test(v.verdict)) return undefined;
              if (addresses.sort().join() !== [...expected].sort().join()) return undefined;
            }
            return true;
          }, 30_000);
        } catch {
          assert.fail(
            `${name}.signed.test: expected ${expected.join(', ')} validated, last: ${last}\n${serve.log()}`,
          );
        }
      };
      await validated('ordered', [ip(1)]);
      await validated('all', [ip(1), ip(2)]);
      await http1[0].setUp(false);
      // The down candidate is left out of the DO answer, and the subset validates.
      await validated('ordered', [ip(2)]);
      await validated('all', [ip(2)]);
      // Without DO: the same subset, no RRSIG.
      const plain = await dig(port, 'all.signed.test', 'A');
      assert.deepEqual(rdataOf(plain, 'A'), [ip(2)]);
      assert.ok(!plain.answer.some((l) => l.split(/\s+/)[3] === 'RRSIG'));
      await http1[0].setUp(true);
      await validated('all', [ip(1), ip(2)]);
      await validated('ordered', [ip(1)]);
    });

    test('metrics count probes and targets', async () => {
      // Targets are per record set: the Host of an HTTP check defaults to the owner name (7 HTTP record
      // sets × 2 records, 2 HTTPS, 2 TCP), and every endpoint is up again.
      const metrics = () => fetch(`${serve.httpUrl}/metrics`).then((r) => r.text());
      const { value: text } = await waitFor(async () => {
        const t = await metrics();
        return /zonekeeper_health_targets\{state="up"\} 18\n/.test(t) ? t : undefined;
      }, 20_000);
      assert.match(text, /zonekeeper_health_checks_total\{result="up"\} [1-9]/);
      assert.match(text, /zonekeeper_health_checks_total\{result="down"\} [1-9]/);
      assert.match(text, /zonekeeper_health_targets\{state="down"\} 0\n/);
    });
  });
}

describe('a namespace over its health probe limit (--health-probe-namespace-limit)', {
  timeout: 120_000,
}, () => {
  let dir: string;
  let manifests: string;
  let serve: ServeProcess;
  let tcp: readonly [Endpoint, Endpoint];
  const zone = [
    {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSZoneClass',
      metadata: { name: 'builtin' },
      spec: { backend: { builtin: {} }, nameServers: ['ns1.steer.test.'] },
    },
    {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSZone',
      metadata: { name: 'steer-test', namespace: 'steer' },
      spec: { domainName: 'steer.test', className: 'builtin' },
    },
  ];
  const steered = (name: string) =>
    recordSet(name, {
      records: [tcp[0].address, tcp[1].address],
      healthCheck: { protocol: 'TCP', port: tcp[0].port, ...FAST },
    });
  const write = (names: string[]) =>
    writeFile(
      path.join(manifests, 'steer.yaml'),
      [...zone, ...names.map(steered)].map((d) => stringify(d)).join('---\n'),
    );
  const statuses = async () => {
    const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
      items: {
        kind: string;
        metadata: { name: string };
        status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
      }[];
    };
    const out = new Map<string, { status: string; reason: string; message: string }>();
    for (const i of body.items)
      if (i.kind === 'DNSRecordSet') {
        const ready = i.status?.conditions?.find((c) => c.type === 'Ready');
        if (ready) out.set(i.metadata.name, ready);
      }
    return out;
  };

  before(async () => {
    dir = await tempDir('steering-limit');
    tcp = await pair((a, p) => tcpEndpoint(a, p), '127.0.0.91', '127.0.0.92');
    manifests = path.join(dir, 'manifests');
    await mkdir(manifests, { recursive: true });
    await write(['one', 'two']);
    serve = await startServe(manifests, path.join(dir, 'state'), [
      '--health-probe-allow',
      '127.0.0.0/8',
      // Each record set's checks are two targets (Host defaults to the owner name): room for one.
      '--health-probe-namespace-limit',
      '2',
    ]);
  });
  after(async () => {
    await serve?.stop();
    await Promise.all(tcp?.map((e) => e.close()) ?? []);
    await removeAll(dir);
  });

  test('the record set beyond the limit is served with every record, not Ready (HealthCheckRefused), until room is freed', async () => {
    const { value: refused } = await waitFor(async () => {
      const s = await statuses();
      const over = [...s].filter(([, c]) => c.reason === 'HealthCheckRefused');
      const ready = [...s].filter(([, c]) => c.status === 'True');
      return over.length === 1 && ready.length === 1 ? over[0]! : undefined;
    }, 30_000);
    const [name, condition] = refused;
    assert.equal(condition.status, 'False');
    assert.match(condition.message, /limit of 2 \(--health-probe-namespace-limit\)/);
    // Answered with every record, as if up, though its checks never ran.
    await tcp[1].setUp(false);
    const answers = async (n: string) =>
      rdataOf(await dig(serve.dnsPort, `${n}.steer.test`, 'A'), 'A').sort();
    assert.deepEqual(await answers(name), ['127.0.0.91', '127.0.0.92']);
    const metrics = await (await fetch(`${serve.httpUrl}/metrics`)).text();
    assert.match(metrics, /zonekeeper_health_probe_refusals_total\{reason="namespace-limit"\} [1-9]/);
    // The other record set goes: its targets are released, the refused one is probed and Ready.
    await write([name]);
    await waitFor(async () => ((await statuses()).get(name)?.status === 'True' ? true : undefined), 30_000);
    await waitFor(async () => {
      const a = await answers(name);
      return a.join() === '127.0.0.91' ? a : undefined;
    }, 30_000);
    await tcp[1].setUp(true);
  });
});
