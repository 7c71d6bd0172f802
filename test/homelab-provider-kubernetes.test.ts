/**
 * The homelab DNS API in a cluster, on a real kube-apiserver with the chart's RBAC and admission
 * policy (operator.apiWrites): a `zonekeeper server` replica verifies each caller's signature and
 * forwards its write to the operator's leader, which writes a labelled DNSRecordSet of the caller's
 * namespace; the replica serves it and reads it back. The leader answers on its own --homelab-api
 * too. The leader's rules hold through the hop: delegations and ownership.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { type ServerHandle, startServer } from '../src/cli/server.ts';
import { WRITTEN_BY_LABEL } from '../src/writes/write-request.ts';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import {
  type KubeCluster,
  serviceAccountToken,
  serviceAccountUser,
  startKube,
  writeTokenFile,
} from './support/kube.ts';
import { type KubeProcess, startOperatorProcess } from './support/zonekeeper-kube.ts';
import { ROOT, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const SYSTEM = 'zonekeeper-system';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const API = 'dns.zonekeeper.dev/v1alpha1';
const PY_CLIENT = path.join(ROOT, 'test/support/homelab_client.py');

interface Reply {
  status: number;
  body: { success?: boolean; message?: string; error?: { code: string }; record?: { values?: string[] } };
}

describe('the homelab DNS API on server replicas, written by the operator leader', {
  timeout: 600_000,
}, () => {
  let kube: KubeCluster;
  let server: ServerHandle | undefined;
  let operator: KubeProcess | undefined;
  let secretA: string;
  let secretB: string;

  const py = async (
    url: string,
    secret: string,
    method: string,
    urlPath: string,
    body?: unknown,
  ): Promise<Reply> => {
    const args = [PY_CLIENT, url, secret, method, urlPath];
    if (body !== undefined) args.push(JSON.stringify(body));
    return JSON.parse((await run('python3', args, { timeout: 60_000 })).stdout) as Reply;
  };
  const upsert = (domain: string, subdomain: string, ...values: string[]) => ({
    record: { type: 'A', domain, subdomain, values },
    operation: 'upsert',
  });
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
    kube = await startKube({ users: [OPERATOR, SERVER] });
    for (const ns of [SYSTEM, 'team-a', 'team-b']) await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, {
      namespace: SYSTEM,
      set: ['operator.apiWrites.enabled=true'],
    });
    const docs = chartAccessDocs(rendered, { admission: true });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: docs });
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
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
        ],
      }),
    });
    // The callers' secrets as files (in a pod: a mounted Secret), the same write-access file for both.
    secretA = path.join(kube.dir, 'homelab-a');
    secretB = path.join(kube.dir, 'homelab-b');
    await writeFile(secretA, 'secret-a\n');
    await writeFile(secretB, 'secret-b\n');
    const accessFile = path.join(kube.dir, 'write-access.yaml');
    await writeFile(
      accessFile,
      stringify({
        credentials: [
          { name: 'homelab-a', kind: 'webhook-hmac', namespace: 'team-a', secretRef: { file: secretA } },
          { name: 'homelab-b', kind: 'webhook-hmac', namespace: 'team-b', secretRef: { file: secretB } },
        ],
      }),
    );
    operator = await startOperatorProcess('operator-0', kube.kubeconfigFor(OPERATOR), SYSTEM, [
      '--write-access',
      accessFile,
      '--write-forwarders',
      SERVER.name,
      '--homelab-api',
      '127.0.0.1:0',
    ]);
    await waitFor(async () => (/accepting API writes/.test(operator!.log()) ? true : undefined), 60_000);
    server = await startServer({
      kubeconfig: kube.kubeconfigFor(SERVER),
      dns: '127.0.0.1:0',
      http: '127.0.0.1:0',
      operatorNamespace: SYSTEM,
      // The chart's projected token: the server's service account, audience zonekeeper-writes.
      writeTokenFile: await writeTokenFile(
        kube,
        'write-token',
        await serviceAccountToken(kube, SYSTEM, 'zonekeeper-server', { audience: 'zonekeeper-writes' }),
      ),
      homelabApi: { listen: '127.0.0.1:0' },
      writeAccess: {
        credentials: [
          { name: 'homelab-a', kind: 'webhook-hmac', namespace: 'team-a', secretRef: { file: secretA } },
          { name: 'homelab-b', kind: 'webhook-hmac', namespace: 'team-b', secretRef: { file: secretB } },
        ],
      },
      log: () => {},
    });
  });

  after(async () => {
    await server?.stop();
    if (operator && !operator.exited()) await operator.stop();
    await kube?.stop();
  });

  const replica = () => `http://127.0.0.1:${server!.homelabApi!.port}`;

  test('a write sent to a replica lands as a labelled DNSRecordSet of the caller’s namespace and is served', async () => {
    assert.equal((await py(replica(), secretA, 'GET', '/health')).status, 200);
    const created = await py(
      replica(),
      secretA,
      'POST',
      '/records',
      upsert('a.example.com', 'www', '192.0.2.1'),
    );
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.message, 'Record created successfully');
    assert.deepEqual(await labelled('team-a'), ['homelab-a www.a.example.com. 192.0.2.1']);
    await waitFor(async () => {
      const r = await dig(server!.dns.port, 'www.a.example.com', 'A');
      return rdataOf(r, 'A').join() === '192.0.2.1' ? true : undefined;
    }, 60_000);
    // The replica reads it back from its cache of the cluster.
    const read = await waitFor(async () => {
      const r = await py(replica(), secretA, 'GET', '/records/A/a.example.com/www');
      return r.status === 200 ? r : undefined;
    }, 30_000);
    assert.deepEqual(read.value.body.record?.values, ['192.0.2.1']);

    // The second caller lands in its own namespace.
    assert.equal(
      (await py(replica(), secretB, 'POST', '/records', upsert('b.example.com', 'www', '192.0.2.2'))).status,
      200,
    );
    assert.deepEqual(await labelled('team-b'), ['homelab-b www.b.example.com. 192.0.2.2']);
  });

  test("the leader's rules hold through the hop; the leader answers on its own --homelab-api too", async () => {
    const outside = await py(
      replica(),
      secretB,
      'POST',
      '/records',
      upsert('a.example.com', 'evil', '203.0.113.1'),
    );
    assert.equal(outside.status, 403);
    assert.equal(outside.body.error?.code, 'NOT_DELEGATED');
    const notYours = await py(replica(), secretB, 'DELETE', '/records/A/a.example.com/www');
    assert.equal(notYours.status, 200);
    assert.equal(notYours.body.message, 'Record does not exist; nothing to delete');
    assert.deepEqual(await labelled('team-a'), ['homelab-a www.a.example.com. 192.0.2.1']);

    const leader = `http://127.0.0.1:${/homelabApi="127\.0\.0\.1:(\d+)"/.exec(operator!.log())![1]}`;
    const direct = await py(
      leader,
      secretA,
      'POST',
      '/records',
      upsert('a.example.com', 'direct', '192.0.2.3'),
    );
    assert.equal(direct.status, 200, JSON.stringify(direct.body));
    await waitFor(async () => {
      const r = await dig(server!.dns.port, 'direct.a.example.com', 'A');
      return rdataOf(r, 'A').join() === '192.0.2.3' ? true : undefined;
    }, 60_000);

    const deleted = await py(replica(), secretA, 'DELETE', '/records/A/a.example.com/www');
    assert.equal(deleted.body.message, 'Record deleted successfully');
    assert.deepEqual(await labelled('team-a'), ['homelab-a direct.a.example.com. 192.0.2.3']);
    await waitFor(async () => {
      const r = await dig(server!.dns.port, 'www.a.example.com', 'A');
      return rdataOf(r, 'A').length === 0 ? true : undefined;
    }, 60_000);
  });
});
