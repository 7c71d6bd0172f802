/**
 * Steering on a real API server (kube-apiserver and etcd): the CRD's schema and CEL rules accept and
 * reject what folder mode does; then an operator and two `zonekeeper server` replicas serve a steered
 * record set whose records are real HTTP and TCP endpoints on loopback addresses, switched down and
 * up: both replicas fail over and back (each probes on its own, ADR 0022), and the operator writes
 * DNSRecordSet.status.targets and records TargetDown/TargetUp Events.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { dig, rdataOf } from './support/dig.ts';
import { type Endpoint, httpEndpoint, tcpEndpoint } from './support/health-endpoints.ts';
import { type KubeCluster, startKube } from './support/kube.ts';
import { invalidSteeringCases, validSteeringCases } from './support/steering-examples.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const API = 'dns.zonekeeper.dev/v1alpha1';
const FAST = { intervalSeconds: 1, timeoutSeconds: 1, failureThreshold: 3, successThreshold: 1 };

describe('steering on a real API server', { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  const processes: KubeProcess[] = [];
  const endpoints: Endpoint[] = [];
  before(async () => {
    kube = await startKube({ crds: true });
    await kube.kubectlOk(['create', 'namespace', 'dns']);
    await kube.kubectlOk(['create', 'namespace', 'zonekeeper-system']);
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop().catch(() => {})));
    await Promise.all(endpoints.map((e) => e.close()));
    await kube?.stop();
  });

  const dryRun = (object: object) =>
    kube.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: stringify(object) });

  test('accepts what folder mode accepts', async () => {
    for (const c of validSteeringCases()) {
      const r = await dryRun(c.object);
      assert.equal(r.code, 0, `${c.name}: ${r.stderr}`);
    }
  });

  test('rejects what folder mode rejects, at the same field', async () => {
    for (const c of invalidSteeringCases()) {
      const r = await dryRun(c.object);
      assert.notEqual(r.code, 0, `${c.name}: accepted`);
      for (const p of c.problems) assert.ok(r.stderr.includes(p.path), `${c.name}: ${r.stderr}`);
    }
  });

  test('two server replicas fail over and back; the operator writes status.targets and Events', async () => {
    const web1 = await httpEndpoint('127.0.0.71');
    const web2 = await httpEndpoint('127.0.0.72', { port: web1.port });
    const db1 = await tcpEndpoint('127.0.0.73');
    const db2 = await tcpEndpoint('127.0.0.74', db1.port);
    endpoints.push(web1, web2, db1, db2);
    const docs = [
      {
        apiVersion: API,
        kind: 'DNSZoneClass',
        metadata: { name: 'builtin' },
        spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.'] },
      },
      {
        apiVersion: API,
        kind: 'DNSZone',
        metadata: { name: 'example-com', namespace: 'dns' },
        spec: { domainName: 'example.com', className: 'builtin' },
      },
      {
        apiVersion: API,
        kind: 'DNSRecordSet',
        metadata: { name: 'web', namespace: 'dns' },
        spec: {
          zoneRef: { name: 'example-com' },
          name: 'web',
          type: 'A',
          ttl: 5,
          records: ['127.0.0.71', '127.0.0.72'],
          healthCheck: { protocol: 'HTTP', port: web1.port, path: '/healthz', ...FAST },
          placement: 'ActiveActive',
        },
      },
      {
        apiVersion: API,
        kind: 'DNSRecordSet',
        metadata: { name: 'db', namespace: 'dns' },
        spec: {
          zoneRef: { name: 'example-com' },
          name: 'db',
          type: 'A',
          ttl: 5,
          records: ['127.0.0.73', '127.0.0.74'],
          healthCheck: { protocol: 'TCP', port: db1.port, ...FAST },
          placement: 'ActiveHotStandby',
        },
      },
    ];
    await kube.kubectlOk(['apply', '-f', '-'], { input: docs.map((d) => `---\n${stringify(d)}`).join('') });
    // The endpoints listen on loopback, which probes reach only when allowed.
    const allow = ['--health-probe-allow', '127.0.0.0/8'];
    processes.push(await startOperatorProcess('operator', kube.adminKubeconfig, 'zonekeeper-system', allow));
    const servers = [
      await startServerProcess('server-a', kube.adminKubeconfig, allow),
      await startServerProcess('server-b', kube.adminKubeconfig, allow),
    ];
    processes.push(...servers);

    const until = async (name: string, expected: string[]) => {
      for (const server of servers) {
        let last: string[] = [];
        try {
          await waitFor(async () => {
            last = rdataOf(await dig(server.dnsPort, `${name}.example.com`, 'A'), 'A').sort();
            return last.join() === expected.join() ? true : undefined;
          }, 40_000);
        } catch {
          assert.fail(
            `${server.name} ${name}: expected ${expected.join()}, answered ${last.join()}\n${server.log()}`,
          );
        }
      }
    };
    const targets = async (name: string) =>
      (
        JSON.parse(await kube.kubectlOk(['get', 'dnsrecordset', '-n', 'dns', name, '-o', 'json'])) as {
          status?: { targets?: { address: string; state: string; lastError?: string }[] };
        }
      ).status?.targets;
    const targetsUntil = async (name: string, states: string[]) => {
      let last: unknown;
      try {
        return await waitFor(async () => {
          const t = await targets(name);
          last = t;
          return t?.map((x) => x.state).join() === states.join() ? t : undefined;
        }, 40_000);
      } catch {
        return assert.fail(
          `${name}: status.targets ${JSON.stringify(last)}, expected ${states.join()}\n${processes[0]!.log()}`,
        );
      }
    };

    await until('web', ['127.0.0.71', '127.0.0.72']);
    await until('db', ['127.0.0.73']);
    await targetsUntil('web', ['Up', 'Up']);

    await web2.setUp(false);
    await db1.setUp(false);
    await until('web', ['127.0.0.71']);
    await until('db', ['127.0.0.74']);
    const { value: web } = await targetsUntil('web', ['Up', 'Down']);
    assert.match(web[1]!.lastError ?? '', /HTTP status 503/);
    const { value: db } = await targetsUntil('db', ['Down', 'Up']);
    assert.match(db[0]!.lastError ?? '', /ECONNREFUSED/);
    const events = async () =>
      JSON.parse(await kube.kubectlOk(['get', 'events.events.k8s.io', '-n', 'dns', '-o', 'json'])) as {
        items: { reason: string; regarding: { name: string }; note: string }[];
      };
    await waitFor(async () => {
      const e = await events();
      return e.items.some((i) => i.reason === 'TargetDown' && i.regarding.name === 'db') ? true : undefined;
    }, 20_000);

    await web2.setUp(true);
    await db1.setUp(true);
    await until('web', ['127.0.0.71', '127.0.0.72']);
    await until('db', ['127.0.0.73']);
    await targetsUntil('db', ['Up', 'Up']);
    await waitFor(async () => {
      const e = await events();
      return e.items.some((i) => i.reason === 'TargetUp' && i.regarding.name === 'db') ? true : undefined;
    }, 20_000);
  });
});
