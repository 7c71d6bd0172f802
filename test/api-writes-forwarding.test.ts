/**
 * Records written through a `zonekeeper server` replica, forwarded to the operator's leader, on a real
 * kube-apiserver: the operator runs as a process with the chart's RBAC and admission policy
 * (operator.apiWrites), the replica in this process with the server's service account. The replica
 * finds the leader on its Lease, the leader reviews the replica's hop token (a real TokenReview for
 * the audience zonekeeper-writes: a projected service-account token, minted here by TokenRequest) and
 * writes labelled DNSRecordSets that the replica then serves. And what must not work: a replica
 * widening a quota or an ownership, a caller forging another credential through the hop, anyone but
 * the server's service account calling the leader's endpoint, the server's normal token (API-server
 * audience) on the hop, the hop token against the API server, a write with no leader.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { type ServerHandle, startServer } from '../src/cli/server.ts';
import { LEADER_ENDPOINT_ANNOTATION } from '../src/sources/writes/forwarding-writer.ts';
import { WRITE_JOURNAL } from '../src/sources/writes/kubernetes-write-store.ts';
import { writtenObjectName } from '../src/writes/record-writer.ts';
import { FORWARD_PATH } from '../src/writes/write-protocol.ts';
import {
  type RecordChange,
  WRITTEN_BY_LABEL,
  WriteError,
  type WriteRequest,
} from '../src/writes/write-request.ts';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import {
  apiServerStatus,
  type KubeCluster,
  type KubeUser,
  serviceAccountToken,
  serviceAccountUser,
  startKube,
  writeTokenFile,
} from './support/kube.ts';
import { type KubeProcess, startOperatorProcess } from './support/zonekeeper-kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const TENANT: KubeUser = { name: 'alice', groups: ['system:authenticated'] };
const API = 'dns.zonekeeper.dev/v1alpha1';

const json = (...items: object[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
const up = (name: string, ...records: string[]): RecordChange => ({ op: 'upsert', name, type: 'A', records });

async function refused(promise: Promise<unknown>, code: string): Promise<WriteError> {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof WriteError, String(e));
    assert.equal(e.code, code, e.message);
    return e;
  }
  assert.fail(`expected ${code}`);
}

describe('API writes forwarded from a server replica to the operator leader', { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  let server: ServerHandle | undefined;
  const operators: KubeProcess[] = [];
  let accessFile: string;
  /** The server's token for the hop: its service account, audience zonekeeper-writes. */
  let hopToken: string;

  const startLeader = async (identity: string) => {
    const p = await startOperatorProcess(identity, kube.kubeconfigFor(OPERATOR), SYSTEM, [
      '--write-access',
      accessFile,
      '--write-forwarders',
      SERVER.name,
    ]);
    operators.push(p);
    await waitFor(async () => (/accepting API writes/.test(p.log()) ? true : undefined), 60_000);
    return p;
  };
  const tokenOf = async (user: KubeUser) =>
    /token: (\S+)/.exec(await readFile(kube.kubeconfigFor(user), 'utf8'))![1]!;
  const labelled = async (namespace: string) =>
    JSON.parse(
      await kube.kubectlOk(['get', 'dnsrecordsets', '-n', namespace, '-l', WRITTEN_BY_LABEL, '-o', 'json']),
    )
      .items.map(
        (o: { metadata: { labels: Record<string, string> }; spec: { name: string; records: string[] } }) =>
          `${o.metadata.labels[WRITTEN_BY_LABEL]} ${o.spec.name} ${o.spec.records.join(',')}`,
      )
      .sort();

  before(async () => {
    kube = await startKube({ users: [OPERATOR, SERVER, TENANT] });
    for (const ns of [SYSTEM, 'team-a', 'team-b']) await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, {
      namespace: SYSTEM,
      set: ['operator.apiWrites.enabled=true'],
    });
    // RBAC and admission of the chart: the processes run with exactly what the chart grants.
    const docs = chartAccessDocs(rendered, { admission: true });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: docs });
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: json(
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'records', namespace: 'team-a' },
          rules: [{ apiGroups: ['dns.zonekeeper.dev'], resources: ['dnsrecordsets'], verbs: ['*'] }],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'alice-records', namespace: 'team-a' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'records' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
        },
        {
          apiVersion: API,
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.'] },
        },
        {
          apiVersion: API,
          kind: 'DNSZone',
          metadata: { name: 'example', namespace: SYSTEM },
          spec: {
            domainName: 'example.com',
            className: 'builtin',
            delegations: [
              { namespaces: ['team-a'], names: ['*.a'] },
              { namespaces: ['team-b'], names: ['*.b'] },
            ],
          },
        },
      ),
    });
    // The write-access file, as the chart's ConfigMap holds it: secrets by reference only.
    accessFile = path.join(kube.dir, 'write-access.yaml');
    await writeFile(
      accessFile,
      stringify({
        credentials: [
          { name: 'key-a', kind: 'api-key', namespace: 'team-a', secretRef: { name: 'keys', key: 'a' } },
          { name: 'key-b', kind: 'api-key', namespace: 'team-b', secretRef: { name: 'keys', key: 'b' } },
        ],
        quotas: { 'team-a': { maxRecordSets: 2 } },
      }),
    );
    await startLeader('operator-0');
    // What the chart's projected volume holds: a service-account token bound to the hop's audience.
    hopToken = await serviceAccountToken(kube, SYSTEM, 'zonekeeper-server', {
      audience: 'zonekeeper-writes',
    });
    server = await startServer({
      kubeconfig: kube.kubeconfigFor(SERVER),
      dns: '127.0.0.1:0',
      http: '127.0.0.1:0',
      operatorNamespace: SYSTEM,
      writeTokenFile: await writeTokenFile(kube, 'write-token', hopToken),
      log: () => {},
    });
  });

  after(async () => {
    await server?.stop();
    for (const p of operators) if (!p.exited()) await p.stop();
    await kube?.stop();
  });

  test("the chart's RBAC: the operator reviews tokens, the servers read the leader's Lease and nothing more", async () => {
    const can = async (user: KubeUser, ...args: string[]) =>
      (
        await kube.kubectl(['auth', 'can-i', ...args], { kubeconfig: kube.kubeconfigFor(user) })
      ).stdout.trim();
    for (const [user, args, want] of [
      [OPERATOR, ['create', 'tokenreviews.authentication.k8s.io'], 'yes'],
      [SERVER, ['create', 'tokenreviews.authentication.k8s.io'], 'no'],
      [SERVER, ['get', 'leases.coordination.k8s.io/zonekeeper-operator', '-n', SYSTEM], 'yes'],
      [SERVER, ['update', 'leases.coordination.k8s.io/zonekeeper-operator', '-n', SYSTEM], 'no'],
      [SERVER, ['get', 'leases.coordination.k8s.io/other', '-n', SYSTEM], 'no'],
      [SERVER, ['list', 'leases.coordination.k8s.io', '-n', SYSTEM], 'no'],
      [SERVER, ['create', 'dnsrecordsets.dns.zonekeeper.dev', '-n', 'team-a'], 'no'],
    ] as const)
      assert.equal(await can(user, ...args), want, `${user.name} can-i ${args.join(' ')}`);
  });

  test('a write sent to the replica lands as a labelled DNSRecordSet and is served', async () => {
    const result = await server!.writer.apply('key-a', {
      id: 'w1',
      changes: [up('www.a.example.com.', '192.0.2.1')],
    });
    assert.equal(result.namespace, 'team-a');
    assert.deepEqual(
      result.changes.map((c) => c.outcome),
      ['created'],
    );
    assert.deepEqual(await labelled('team-a'), ['key-a www.a.example.com. 192.0.2.1']);
    await waitFor(async () => {
      const r = await dig(server!.dns.port, 'www.a.example.com', 'A');
      return rdataOf(r, 'A').join() === '192.0.2.1' ? true : undefined;
    }, 60_000);
    // The same request again, through the replica: answered from the leader's replay memory.
    const again = await server!.writer.apply('key-a', {
      id: 'w1',
      changes: [up('www.a.example.com.', '192.0.2.1')],
    });
    assert.equal(again.replayed, true);
  });

  test('the leader enforces ownership, delegations and quotas: a replica cannot widen them', async () => {
    // A tenant's own record set at the name the writer would use.
    const name = writtenObjectName('t.a.example.com.', 'A');
    await kube.kubectlOk(['create', '-f', '-'], {
      input: json({
        apiVersion: API,
        kind: 'DNSRecordSet',
        metadata: { name, namespace: 'team-a' },
        spec: { name: 't.a.example.com.', type: 'A', records: ['198.51.100.1'] },
      }),
      kubeconfig: kube.kubeconfigFor(TENANT),
    });
    await waitFor(async () => {
      try {
        await server!.writer.apply('key-a', {
          changes: [{ op: 'delete', name: 't.a.example.com.', type: 'A' }],
        });
      } catch (e) {
        if (e instanceof WriteError && e.code === 'NOT_OWNER') return true;
      }
      return undefined;
    }, 30_000);
    await refused(
      server!.writer.apply('key-b', { changes: [up('www.a.example.com.', '192.0.2.66')] }),
      'NOT_DELEGATED',
    );
    await refused(
      server!.writer.apply('nobody', { changes: [up('x.b.example.com.', '192.0.2.66')] }),
      'UNKNOWN_CREDENTIAL',
    );
    // team-a's quota is 2 record sets: www plus one more.
    await server!.writer.apply('key-a', { changes: [up('api.a.example.com.', '192.0.2.2')] });
    const quota = await refused(
      server!.writer.apply('key-a', { changes: [up('third.a.example.com.', '192.0.2.3')] }),
      'QUOTA_EXCEEDED',
    );
    assert.match(quota.message, /quota of 2/);
    assert.deepEqual(await labelled('team-a'), [
      'key-a api.a.example.com. 192.0.2.2',
      'key-a www.a.example.com. 192.0.2.1',
    ]);
  });

  test('a caller cannot forge another credential through the forwarding hop', async () => {
    // Fields a front door's caller smuggles into the request do not cross: the record set is key-b's, in team-b.
    const sneaky = {
      changes: [up('x.b.example.com.', '192.0.2.7')],
      credential: 'key-a',
      namespace: 'team-a',
    } as WriteRequest;
    const result = await server!.writer.apply('key-b', sneaky);
    assert.equal(result.namespace, 'team-b');
    assert.deepEqual(await labelled('team-b'), ['key-b x.b.example.com. 192.0.2.7']);
    assert.deepEqual(await labelled('team-a'), [
      'key-a api.a.example.com. 192.0.2.2',
      'key-a www.a.example.com. 192.0.2.1',
    ]);
  });

  test("the leader's endpoint refuses every caller but the server's service account", async () => {
    const lease = JSON.parse(
      await kube.kubectlOk(['get', 'lease', '-n', SYSTEM, 'zonekeeper-operator', '-o', 'json']),
    );
    const endpoint = lease.metadata.annotations[LEADER_ENDPOINT_ANNOTATION] as string;
    assert.match(endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
    const body = JSON.stringify({
      credential: 'key-a',
      request: { changes: [up('www.a.example.com.', '203.0.113.66')] },
    });
    const post = async (headers: Record<string, string>, payload = body) => {
      const r = await fetch(`${endpoint}${FORWARD_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: payload,
      });
      return { status: r.status, code: ((await r.json()) as { error?: { code: string } }).error?.code };
    };
    assert.deepEqual(await post({}), { status: 401, code: 'UNAUTHENTICATED' });
    assert.deepEqual(await post({ authorization: 'Bearer not-a-token' }), {
      status: 401,
      code: 'UNAUTHENTICATED',
    });
    // Users of the cluster with tokens for the API server (static tokens hold only for its audience):
    // a tenant, and the operator's own account. Not tokens for the hop.
    assert.deepEqual(await post({ authorization: `Bearer ${await tokenOf(TENANT)}` }), {
      status: 401,
      code: 'UNAUTHENTICATED',
    });
    assert.deepEqual(await post({ authorization: `Bearer ${await tokenOf(OPERATOR)}` }), {
      status: 401,
      code: 'UNAUTHENTICATED',
    });
    // The server's own credentials for the API server are not credentials for the hop: its static
    // token and a real service-account token with the API server's audience (a pod's normal token).
    assert.deepEqual(await post({ authorization: `Bearer ${await tokenOf(SERVER)}` }), {
      status: 401,
      code: 'UNAUTHENTICATED',
    });
    const normal = await serviceAccountToken(kube, SYSTEM, 'zonekeeper-server');
    assert.deepEqual(await post({ authorization: `Bearer ${normal}` }), {
      status: 401,
      code: 'UNAUTHENTICATED',
    });
    // A token for the hop's audience, but of another service account: authenticated, not a forwarder.
    const operatorHop = await serviceAccountToken(kube, SYSTEM, 'zonekeeper-operator', {
      audience: 'zonekeeper-writes',
    });
    assert.deepEqual(await post({ authorization: `Bearer ${operatorHop}` }), {
      status: 403,
      code: 'FORBIDDEN',
    });
    // The replica's hop token with a field beyond credential and request: refused, not ignored.
    const server = `Bearer ${hopToken}`;
    assert.deepEqual(
      await post(
        { authorization: server },
        JSON.stringify({ credential: 'key-a', namespace: 'team-b', request: { changes: [] } }),
      ),
      { status: 400, code: 'BAD_REQUEST' },
    );
    // None of it changed a record.
    assert.deepEqual(await labelled('team-a'), [
      'key-a api.a.example.com. 192.0.2.2',
      'key-a www.a.example.com. 192.0.2.1',
    ]);
  });

  test('the hop token is no credential for the API server, which the normal token is', async () => {
    // A sniffed hop token cannot read zones or update-key Secrets as the server's service account:
    // the API server only takes tokens for its own audience (--api-audiences; without it, the service-account token issuer's URL).
    const normal = await serviceAccountToken(kube, SYSTEM, 'zonekeeper-server');
    const zones = `/apis/dns.zonekeeper.dev/v1alpha1/namespaces/${SYSTEM}/dnszones`;
    assert.equal(await apiServerStatus(kube, zones, normal), 200);
    assert.equal(await apiServerStatus(kube, zones, hopToken), 401);
    assert.equal(await apiServerStatus(kube, `/api/v1/namespaces/${SYSTEM}/secrets/keys`, hopToken), 401);
  });

  test('a replica without a hop token does not forward: its normal token never crosses the hop', async () => {
    let logged = '';
    const bare = await startServer({
      kubeconfig: kube.kubeconfigFor(SERVER),
      dns: '127.0.0.1:0',
      http: '127.0.0.1:0',
      operatorNamespace: SYSTEM,
      log: (_level, message) => {
        logged += `${message}\n`;
      },
    });
    try {
      const e = await refused(
        bare.writer.apply('key-a', { changes: [up('bare.a.example.com.', '192.0.2.77')] }),
        'UNAVAILABLE',
      );
      assert.doesNotMatch(e.message, /serviceaccount|operator-\d|127\.0\.0\.1/);
      assert.match(logged, /--write-token-file/);
    } finally {
      await bare.stop();
    }
    assert.ok(!(await labelled('team-a')).some((l: string) => l.includes('bare.a')));
  });

  test('with no leader the replica answers UNAVAILABLE; the next leader finishes the journal before it accepts', async () => {
    // A graceful stop releases the lease: nobody leads.
    await operators[0]!.stop();
    const none = await refused(
      server!.writer.apply('key-b', { changes: [up('y.b.example.com.', '192.0.2.8')] }),
      'UNAVAILABLE',
    );
    // The caller hears the code and what to do; which Lease and why is in the replica's log.
    assert.match(none.message, /^records cannot be written now \(UNAVAILABLE\)/);
    assert.doesNotMatch(none.message, /Lease|operator-\d/);
    assert.ok((none.retryAfterSeconds ?? 0) > 0);
    // A request a leader left half done: in the journal, not yet in the objects.
    const name = writtenObjectName('pending.b.example.com.', 'A');
    const batch = {
      put: [
        {
          resource: {
            apiVersion: API,
            kind: 'DNSRecordSet',
            metadata: { name, namespace: 'team-b', labels: { [WRITTEN_BY_LABEL]: 'key-b' } },
            spec: { name: 'pending.b.example.com.', type: 'A', records: ['192.0.2.9'] },
          },
          created: new Date().toISOString(),
        },
      ],
      delete: [],
      forget: [],
    };
    await kube.kubectlOk([
      'patch',
      'configmap',
      '-n',
      SYSTEM,
      WRITE_JOURNAL,
      '--type=merge',
      '-p',
      JSON.stringify({ data: { pending: JSON.stringify(batch) } }),
    ]);
    await startLeader('operator-1');
    // Accepting means the journal is done: the object is there, the entry gone, at that moment.
    assert.deepEqual(await labelled('team-b'), [
      'key-b pending.b.example.com. 192.0.2.9',
      'key-b x.b.example.com. 192.0.2.7',
    ]);
    const journal = JSON.parse(
      await kube.kubectlOk(['get', 'configmap', '-n', SYSTEM, WRITE_JOURNAL, '-o', 'json']),
    );
    assert.equal(journal.data.pending, undefined);
    // And the replica forwards to the new leader.
    const result = await server!.writer.apply('key-b', { changes: [up('y.b.example.com.', '192.0.2.8')] });
    assert.deepEqual(
      result.changes.map((c) => c.outcome),
      ['created'],
    );
    await waitFor(async () => {
      const r = await dig(server!.dns.port, 'y.b.example.com', 'A');
      return rdataOf(r, 'A').join() === '192.0.2.8' ? true : undefined;
    }, 60_000);
  });
});
