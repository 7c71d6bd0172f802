/**
 * RFC 2136 UPDATE into a `zonekeeper server` replica on a real kube-apiserver: BIND's `nsupdate`
 * signs with an update key, the replica verifies the TSIG with the key it read from the one Secret the
 * chart lets it get, applies the zone's update policy and forwards the change to the operator's leader
 * (a real operator process, the chart's RBAC and admission policy), which checks it again against its
 * own view of the policy and writes a labelled DNSRecordSet; the replica answers once it serves it.
 * And what must not work: a key the policy does not name, a name or type outside the policy, a replica
 * forwarding beyond the policy, an UPDATE while no operator leads (SERVFAIL, nothing applied later).
 * A change of the update policy alone reaches the replica.
 *
 *   npx node --test test/rfc2136-server-forwarding.test.ts
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { type ServerHandle, startServer } from '../src/cli/server.ts';
import { updateCredentialName } from '../src/writes/update-credentials.ts';
import { WRITTEN_BY_LABEL, WriteError } from '../src/writes/write-request.ts';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import {
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
const TEAM = 'team-a';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const API = 'dns.zonekeeper.dev/v1alpha1';
const KEY_SECRET = 'tsig-keys';

interface Key {
  name: string;
  algorithm: string;
  secret: string;
}
const key = (name: string): Key => ({
  name,
  algorithm: 'hmac-sha256',
  secret: randomBytes(32).toString('base64'),
});
const DYN = key('dyn-key');
const OTHER = key('other-key');
const TRANSFER = key('transfer-key');

const json = (...items: object[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });

/** Runs BIND's `nsupdate` against the replica; the rcode it reports (NOERROR when it succeeded). */
function nsupdate(port: number, k: Key, lines: string[]): Promise<string> {
  const script = [
    'check-names no',
    `server 127.0.0.1 ${port}`,
    'zone example.com.',
    ...lines,
    'send',
    '',
  ].join('\n');
  return new Promise((resolve) => {
    const child = spawn('nsupdate', ['-t', '30', '-y', `${k.algorithm}:${k.name}:${k.secret}`], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const rcode = /status: ([A-Z]+)/.exec(out)?.[1];
      if (rcode) return resolve(rcode);
      if (code === 0 && !/failed|refused/i.test(out)) return resolve('NOERROR');
      const m = /(REFUSED|NOTAUTH|SERVFAIL|BADKEY|BADSIG|NXRRSET|YXRRSET|FORMERR)/.exec(out);
      resolve(m ? m[1]! : `failed: ${out}`);
    });
    child.stdin.end(script);
  });
}

describe('RFC 2136 UPDATE through a server replica, forwarded to the operator leader', {
  timeout: 600_000,
}, () => {
  let kube: KubeCluster;
  let server: ServerHandle | undefined;
  const operators: KubeProcess[] = [];
  let accessFile: string;

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
  const labelled = async () =>
    JSON.parse(
      await kube.kubectlOk(['get', 'dnsrecordsets', '-n', TEAM, '-l', WRITTEN_BY_LABEL, '-o', 'json']),
    )
      .items.map(
        (o: {
          metadata: { labels: Record<string, string> };
          spec: { name: string; type: string; records: string[] };
        }) =>
          `${o.metadata.labels[WRITTEN_BY_LABEL]} ${o.spec.name} ${o.spec.type} ${o.spec.records.join(',')}`,
      )
      .sort();
  const served = async (name: string, type: string) =>
    rdataOf(await dig(server!.dns.port, name, type), type)
      .sort()
      .join();
  const setPolicy = (policy: object[]) =>
    kube.kubectlOk([
      'patch',
      'dnszone',
      '-n',
      TEAM,
      'example',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { updatePolicy: policy } }),
    ]);
  const dynCredential = updateCredentialName(TEAM, DYN.name);

  before(async () => {
    kube = await startKube({ users: [OPERATOR, SERVER] });
    for (const ns of [SYSTEM, TEAM, 'team-b']) await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, {
      namespace: SYSTEM,
      set: [
        'operator.apiWrites.enabled=true',
        'operator.secretAccess.enabled=true',
        `operator.secretAccess.names={${KEY_SECRET}}`,
        `server.updateKeySecrets={${KEY_SECRET}}`,
        // The update-key grant alone: the DNSSEC key grant (get on Secrets in the key namespace) is
        // tested by test/dnssec-kubernetes.test.ts.
        'server.dnssecKeys=false',
      ],
    });
    // RBAC and admission of the chart: the processes run with exactly what the chart grants.
    const docs = chartAccessDocs(rendered, { admission: true });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: docs });
    const keyRef = (k: Key, usage: string[]) => ({
      name: k.name,
      algorithm: k.algorithm,
      secretRef: { name: KEY_SECRET, key: k.name },
      usage,
    });
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: json(
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: KEY_SECRET, namespace: SYSTEM },
          stringData: {
            [DYN.name]: DYN.secret,
            [OTHER.name]: OTHER.secret,
            [TRANSFER.name]: TRANSFER.secret,
          },
        },
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'unrelated', namespace: SYSTEM },
          stringData: { x: 'y' },
        },
        {
          apiVersion: API,
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: {
            backend: { builtin: {} },
            nameServers: ['ns1.example.com.'],
            transfers: {
              tsigKeys: [keyRef(DYN, ['update']), keyRef(OTHER, ['update']), keyRef(TRANSFER, ['transfer'])],
            },
          },
        },
        {
          apiVersion: API,
          kind: 'DNSZone',
          metadata: { name: 'example', namespace: TEAM },
          spec: {
            domainName: 'example.com',
            className: 'builtin',
            updatePolicy: [{ key: DYN.name, names: ['*.dyn'], types: ['A', 'TXT'] }],
          },
        },
        {
          apiVersion: API,
          kind: 'DNSRecordSet',
          metadata: { name: 'manifest-owned', namespace: TEAM },
          spec: { zoneRef: { name: 'example' }, name: 'fixed.dyn', type: 'A', records: ['198.51.100.1'] },
        },
      ),
    });
    accessFile = path.join(kube.dir, 'write-access.yaml');
    // No configured credentials: UPDATE's are derived from the zones' update policies.
    await writeFile(accessFile, stringify({ credentials: [] }));
    await startLeader('operator-0');
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
      log: () => {},
    });
    await waitFor(
      async () => ((await served('fixed.dyn.example.com', 'A')) === '198.51.100.1' ? true : undefined),
      60_000,
    );
  });

  after(async () => {
    await server?.stop();
    for (const p of operators) if (!p.exited()) await p.stop();
    await kube?.stop();
  });

  test("the chart's RBAC: the servers get exactly the update keys' Secret, nothing else", async () => {
    const can = async (user: KubeUser, ...args: string[]) =>
      (
        await kube.kubectl(['auth', 'can-i', ...args], { kubeconfig: kube.kubeconfigFor(user) })
      ).stdout.trim();
    for (const [args, want] of [
      [['get', `secrets/${KEY_SECRET}`, '-n', SYSTEM], 'yes'],
      [['get', 'secrets/unrelated', '-n', SYSTEM], 'no'],
      [['list', 'secrets', '-n', SYSTEM], 'no'],
      [['watch', 'secrets', '-n', SYSTEM], 'no'],
      [['get', `secrets/${KEY_SECRET}`, '-n', TEAM], 'no'],
      [['create', 'dnsrecordsets.dns.zonekeeper.dev', '-n', TEAM], 'no'],
    ] as const)
      assert.equal(await can(SERVER, ...args), want, `server can-i ${args.join(' ')}`);
  });

  test('nsupdate with an update key adds a record: a labelled DNSRecordSet, served by the replica when answered', async () => {
    const rcode = await nsupdate(server!.dns.port, DYN, ['update add host.dyn.example.com. 60 A 192.0.2.10']);
    assert.equal(rcode, 'NOERROR');
    // Answered once the leader made it durable and the replica serves it: no waiting needed here.
    assert.equal(await served('host.dyn.example.com', 'A'), '192.0.2.10');
    assert.deepEqual(await labelled(), [`${dynCredential} host.dyn.example.com. A 192.0.2.10`]);
    // A prerequisite against what the replica serves, and a delete, through the same path.
    assert.equal(
      await nsupdate(server!.dns.port, DYN, [
        'prereq yxrrset host.dyn.example.com. A 192.0.2.10',
        'update delete host.dyn.example.com. A',
        'update add txt.dyn.example.com. 60 TXT "hello"',
      ]),
      'NOERROR',
    );
    assert.equal(await served('host.dyn.example.com', 'A'), '');
    assert.equal(await served('txt.dyn.example.com', 'TXT'), '"hello"');
    assert.deepEqual(await labelled(), [`${dynCredential} txt.dyn.example.com. TXT "hello"`]);
  });

  test('refused: a key the policy does not name, a name or type outside it, an RRset a manifest owns', async () => {
    const before = await labelled();
    assert.match(
      await nsupdate(server!.dns.port, OTHER, ['update add x.dyn.example.com. 60 A 192.0.2.20']),
      /^(NOTAUTH|REFUSED|BADKEY)$/,
    );
    // A key the server never read (transfer-only): unknown here.
    assert.match(
      await nsupdate(server!.dns.port, TRANSFER, ['update add x.dyn.example.com. 60 A 192.0.2.21']),
      /^(NOTAUTH|BADKEY)$/,
    );
    // Outside *.dyn, and a type the rule does not list: the whole message is refused.
    assert.equal(
      await nsupdate(server!.dns.port, DYN, [
        'update add ok.dyn.example.com. 60 A 192.0.2.22',
        'update add www.example.com. 60 A 192.0.2.23',
      ]),
      'REFUSED',
    );
    assert.equal(
      await nsupdate(server!.dns.port, DYN, ['update add mx.dyn.example.com. 60 MX 10 mail.example.com.']),
      'REFUSED',
    );
    // The manifest's record set: UPDATE does not take it over.
    assert.equal(
      await nsupdate(server!.dns.port, DYN, ['update add fixed.dyn.example.com. 60 A 192.0.2.24']),
      'REFUSED',
    );
    assert.deepEqual(await labelled(), before);
    assert.equal(await served('ok.dyn.example.com', 'A'), '');
    assert.equal(await served('fixed.dyn.example.com', 'A'), '198.51.100.1');
  });

  test("the leader checks the policy again: a replica cannot forward beyond what the key's rules grant", async () => {
    // What a compromised replica could send over the authenticated hop, naming the dyn-key credential.
    for (const change of [
      { op: 'upsert' as const, name: 'www.example.com.', type: 'A' as const, records: ['192.0.2.30'] },
      {
        op: 'upsert' as const,
        name: 'z.dyn.example.com.',
        type: 'MX' as const,
        records: ['10 m.example.com.'],
      },
    ]) {
      await assert.rejects(
        server!.writer.apply(dynCredential, { changes: [{ ...change, exclusive: true }] }),
        (e: unknown) =>
          e instanceof WriteError && e.code === 'NOT_DELEGATED' && /updatePolicy/.test(e.message),
      );
    }
    // Inside the policy the same hop works (the check is the policy, not a blanket refusal).
    const ok = await server!.writer.apply(dynCredential, {
      changes: [
        { op: 'upsert', name: 'hop.dyn.example.com.', type: 'A', records: ['192.0.2.31'], exclusive: true },
      ],
    });
    assert.equal(ok.namespace, TEAM);
    assert.ok(!(await labelled()).some((l: string) => l.includes('www.example.com.')));
  });

  test('a change of the update policy alone reaches the replica', async () => {
    assert.match(
      await nsupdate(server!.dns.port, OTHER, ['update add _acme-challenge.www.example.com. 60 TXT "t1"']),
      /^(NOTAUTH|REFUSED|BADKEY)$/,
    );
    await setPolicy([
      { key: DYN.name, names: ['*.dyn'], types: ['A', 'TXT'] },
      { key: OTHER.name, names: ['_acme-challenge.www'], types: ['TXT'] },
    ]);
    await waitFor(
      async () =>
        (await nsupdate(server!.dns.port, OTHER, [
          'update add _acme-challenge.www.example.com. 60 TXT "t1"',
        ])) === 'NOERROR'
          ? true
          : undefined,
      60_000,
    );
    assert.equal(await served('_acme-challenge.www.example.com', 'TXT'), '"t1"');
    // And taken away: dyn-key's rule removed, its UPDATE is refused again.
    await setPolicy([{ key: OTHER.name, names: ['_acme-challenge.www'], types: ['TXT'] }]);
    await waitFor(
      async () =>
        /^(NOTAUTH|REFUSED|BADKEY)$/.test(
          await nsupdate(server!.dns.port, DYN, ['update add late.dyn.example.com. 60 A 192.0.2.40']),
        )
          ? true
          : undefined,
      60_000,
    );
    assert.equal(await served('late.dyn.example.com', 'A'), '');
    await setPolicy([
      { key: DYN.name, names: ['*.dyn'], types: ['A', 'TXT'] },
      { key: OTHER.name, names: ['_acme-challenge.www'], types: ['TXT'] },
    ]);
  });

  test('with no operator leading the replica answers SERVFAIL, and nothing is applied later', async () => {
    await waitFor(
      async () =>
        (await nsupdate(server!.dns.port, DYN, ['update add back.dyn.example.com. 60 A 192.0.2.50'])) ===
        'NOERROR'
          ? true
          : undefined,
      60_000,
    );
    const before = await labelled();
    await operators[0]!.stop();
    assert.equal(
      await nsupdate(server!.dns.port, DYN, [
        'update add down1.dyn.example.com. 60 A 192.0.2.51',
        'update add down2.dyn.example.com. 60 TXT "down"',
      ]),
      'SERVFAIL',
    );
    assert.deepEqual(await labelled(), before);
    // A new leader finishes its journal: the refused message is not in it, nothing half-applied.
    await startLeader('operator-1');
    assert.deepEqual(await labelled(), before);
    assert.equal(await served('down1.dyn.example.com', 'A'), '');
    assert.equal(await served('down2.dyn.example.com', 'TXT'), '');
    // And UPDATE works again through the new leader.
    assert.equal(
      await nsupdate(server!.dns.port, DYN, ['update add again.dyn.example.com. 60 A 192.0.2.52']),
      'NOERROR',
    );
    assert.equal(await served('again.dyn.example.com', 'A'), '192.0.2.52');
  });
});
