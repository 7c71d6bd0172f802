/**
 * Signed zones in a cluster, on a real API server: `zonekeeper operator` and two `zonekeeper server`
 * replicas (one with two DNS threads) running as their service accounts with the chart's RBAC and a
 * key namespace of its own. The operator's leader stores the zone's keys in a Secret there and records
 * the signing time with the serial in the zone's status; each replica reads the keys and signs the
 * serial itself (ADR 0021). `delv`, trusting only the DS of status.dnssec, validates positive, NODATA
 * and NXDOMAIN answers on both replicas; both replicas give the same bytes for the same signed answers
 * (they serve no AXFR), before and after a change; a tenant can neither read nor write the key Secret
 * nor DNSZone status; a restarted replica serves the same DNSKEY; an operator restart keeps the serial
 * and its signing time; a replica that cannot read the key serves nothing of the zone (never unsigned
 * content at a signed serial); a ZSK rollover (keys: Split, compressed time) runs with the leader
 * recording each step in the key Secret and both replicas signing each serial alike, `delv` validating
 * on both at every sample.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { keySecretName } from '../src/sources/kubernetes/dnssec-key-secrets.ts';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { delv, dsTrustAnchorFile } from './support/delv.ts';
import { dig, rdataOf, soaSerial } from './support/dig.ts';
import { type KubeCluster, type KubeUser, serviceAccountUser, startKube } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
/** The key namespace: holding nothing but the key Secrets (the least-privilege setup of docs/dnssec.md). */
const KEYS = 'zonekeeper-dnssec';
const KEYS_FLAG = ['--dnssec-key-namespace', KEYS];
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const TENANT_SA = serviceAccountUser('team-a', 'default');
const TENANT: KubeUser = { name: 'alice', groups: ['system:authenticated'] };
/** A replica's identity that may read the zones but not the key Secrets. */
const NOKEYS = serviceAccountUser(SYSTEM, 'no-keys');
const ZK = 'dns.zonekeeper.dev/v1alpha1';
const ZONE = 'signed.example';

interface ZoneJson {
  status?: {
    serial?: number;
    signedAt?: number;
    signing?: string;
    dnssec?: {
      keys?: { keyTag: number; role?: string; active?: boolean }[];
      ds?: string[];
      rollover?: { phase: string };
    };
    conditions?: { type: string; status: string; message: string }[];
  };
}

const yaml = (...objects: object[]) => objects.map((o) => `---\n${stringify(o)}`).join('');

describe('DNSSEC in a cluster: operator + two server replicas', { timeout: 600_000 }, () => {
  let kube: KubeCluster;
  let operator: KubeProcess | undefined;
  const servers: KubeProcess[] = [];
  let work: string;

  const zone = async (): Promise<ZoneJson> =>
    JSON.parse(await kube.kubectlOk(['get', 'dnszone', '-n', 'team-a', 'signed', '-o', 'json'])) as ZoneJson;
  const ready = (z: ZoneJson) => z.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  /** The status once Ready with `serial` above `after` and the DS written. */
  const readyZone = async (after = 0): Promise<ZoneJson> =>
    (
      await waitFor(
        async () => {
          const z = await zone();
          return ready(z) && (z.status?.serial ?? 0) > after && (z.status?.dnssec?.ds?.length ?? 0) > 0
            ? z
            : undefined;
        },
        60_000,
        200,
      ).catch(async () =>
        assert.fail(`zone not Ready: ${JSON.stringify((await zone()).status)}\n${operator?.log()}`),
      )
    ).value;
  /** Waits until `server` serves `serial` for the zone. */
  const serves = (server: KubeProcess, serial: number) =>
    waitFor(async () => {
      const soa = rdataOf(await dig(server.dnsPort, ZONE, 'SOA'), 'SOA')[0];
      return soa?.split(/\s+/)[2] === String(serial) ? true : undefined;
    }, 60_000).catch(() => assert.fail(`${server.name} does not serve serial ${serial}\n${server.log()}`));
  /** The signed answers of a few questions, as the server sent them (sections in order). */
  const signedAnswers = async (server: KubeProcess) => {
    const out: string[] = [];
    for (const [name, type] of [
      [ZONE, 'SOA'],
      [ZONE, 'DNSKEY'],
      [ZONE, 'NS'],
      [`www.${ZONE}`, 'A'],
      [`www.${ZONE}`, 'TXT'],
      [`nope.${ZONE}`, 'A'],
    ] as const) {
      const r = await dig(server.dnsPort, name, type, { args: ['+dnssec', '+multiline=no'] });
      out.push(`${name} ${type} ${r.status}`, ...r.answer, ...r.authority);
    }
    return out;
  };

  before(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'zk-dnssec-kube-'));
    kube = await startKube({ users: [OPERATOR, SERVER, TENANT, TENANT_SA, NOKEYS] });
    for (const ns of [SYSTEM, KEYS, 'team-a']) await kube.kubectlOk(['create', 'namespace', ns]);
    const rendered = await renderChart(kube.binDir, {
      namespace: SYSTEM,
      set: [`server.dnssecKeyNamespace=${KEYS}`],
    });
    const rbac = chartAccessDocs(rendered, { admission: false });
    await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
    // The tenant may manage zones and records in its namespace (and read its own Secrets), nothing more.
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: yaml(
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'dns-tenant', namespace: 'team-a' },
          rules: [
            { apiGroups: ['dns.zonekeeper.dev'], resources: ['dnszones', 'dnsrecordsets'], verbs: ['*'] },
            { apiGroups: [''], resources: ['secrets'], verbs: ['*'] },
          ],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'dns-tenant', namespace: 'team-a' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'dns-tenant' },
          subjects: [
            { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: TENANT.name },
            { kind: 'ServiceAccount', name: 'default', namespace: 'team-a' },
          ],
        },
        {
          apiVersion: ZK,
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.'] },
        },
        {
          apiVersion: ZK,
          kind: 'DNSZone',
          metadata: { name: 'signed', namespace: 'team-a' },
          spec: { domainName: ZONE, className: 'builtin', dnssec: { enabled: true, denial: 'NSEC3' } },
        },
        {
          apiVersion: ZK,
          kind: 'DNSRecordSet',
          metadata: { name: 'www', namespace: 'team-a' },
          spec: { zoneRef: { name: 'signed' }, name: 'www', type: 'A', ttl: 60, records: ['192.0.2.10'] },
        },
        {
          apiVersion: ZK,
          kind: 'DNSRecordSet',
          metadata: { name: 'www-txt', namespace: 'team-a' },
          spec: { zoneRef: { name: 'signed' }, name: 'www', type: 'TXT', ttl: 60, records: ['"hello"'] },
        },
      ),
    });
    operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM, KEYS_FLAG);
    servers.push(
      await startServerProcess('server-a', kube.kubeconfigFor(SERVER), KEYS_FLAG),
      // The second replica answers from two DNS threads (a worker pool): signed alike too.
      await startServerProcess('server-b', kube.kubeconfigFor(SERVER), [...KEYS_FLAG, '--workers', '2']),
    );
  });

  after(async () => {
    await Promise.all([operator, ...servers].map((p) => p?.stop().catch(() => {})));
    await kube?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  test('the status records the signing time, keys and DS; the keys are in a labelled Secret in the key namespace', async () => {
    const z = await readyZone();
    assert.ok(Number.isInteger(z.status?.signedAt), JSON.stringify(z.status));
    assert.equal(z.status?.signing, 'ECDSAP256SHA256/NSEC3/CSK');
    assert.equal(z.status?.dnssec?.keys?.length, 1);
    const secrets = JSON.parse(
      await kube.kubectlOk([
        'get',
        'secrets',
        '-n',
        KEYS,
        '-l',
        'dns.zonekeeper.dev/dnssec-keys=true',
        '-o',
        'json',
      ]),
    ) as { items: { metadata: { name: string; annotations?: Record<string, string> } }[] };
    assert.equal(secrets.items.length, 1);
    assert.equal(secrets.items[0]!.metadata.annotations?.['dns.zonekeeper.dev/zone-origin'], `${ZONE}.`);
    // Nothing of the keys in the tenant's namespace.
    const theirs = await kube.kubectlOk(['get', 'secrets', '-n', 'team-a', '-o', 'name']);
    assert.equal(theirs.trim(), '');
  });

  test('delv trusting only the status DS validates positive and NXDOMAIN answers on both replicas', async () => {
    const z = await readyZone();
    const anchors = await dsTrustAnchorFile(work, ZONE, z.status!.dnssec!.ds!);
    for (const server of servers) {
      await serves(server, z.status!.serial!);
      const positive = await delv(server.dnsPort, anchors, ZONE, `www.${ZONE}`, 'A');
      assert.equal(positive.verdict, 'fully validated', `${server.name}: ${positive.raw}`);
      assert.ok(
        positive.answer.some((l) => l.includes('192.0.2.10')),
        positive.raw,
      );
      const nx = await delv(server.dnsPort, anchors, ZONE, `nope.${ZONE}`, 'A');
      assert.match(nx.verdict, /negative response, fully validated/, `${server.name}: ${nx.raw}`);
      const nodata = await delv(server.dnsPort, anchors, ZONE, `www.${ZONE}`, 'AAAA');
      assert.match(nodata.verdict, /negative response, fully validated/, `${server.name}: ${nodata.raw}`);
    }
  });

  test('both replicas give byte-identical signed answers for the serial; a change is signed alike too', async () => {
    const first = await readyZone();
    for (const s of servers) await serves(s, first.status!.serial!);
    const [a, b] = [await signedAnswers(servers[0]!), await signedAnswers(servers[1]!)];
    assert.ok(
      a.some((l) => / RRSIG /.test(l)),
      a.join('\n'),
    );
    assert.ok(
      a.some((l) => / NSEC3 /.test(l)),
      a.join('\n'),
    );
    assert.deepEqual(b, a);
    // A change: a new serial with its own signing time, signed alike by both replicas.
    await kube.kubectlOk([
      'patch',
      'dnsrecordset',
      '-n',
      'team-a',
      'www',
      '--type=merge',
      '-p',
      '{"spec":{"records":["192.0.2.11"]}}',
    ]);
    const second = await readyZone(first.status!.serial!);
    for (const s of servers) await serves(s, second.status!.serial!);
    const [c, d] = [await signedAnswers(servers[0]!), await signedAnswers(servers[1]!)];
    assert.deepEqual(d, c);
    assert.notDeepEqual(c, a);
    const anchors = await dsTrustAnchorFile(work, ZONE, second.status!.dnssec!.ds!);
    for (const server of servers) {
      const r = await delv(server.dnsPort, anchors, ZONE, `www.${ZONE}`, 'A');
      assert.equal(r.verdict, 'fully validated', r.raw);
      assert.ok(
        r.answer.some((l) => l.includes('192.0.2.11')),
        r.raw,
      );
    }
  });

  test('the operator and the replica with DNS threads give memory back once after their first load, not after a change; the other replica never', async () => {
    const [single, threaded] = [servers[0]!, servers[1]!];
    await waitFor(async () =>
      /gave memory back after the first load/.test(threaded.log()) ? true : undefined,
    );
    assert.equal(threaded.log().match(/gave memory back after the first load/g)?.length, 1);
    assert.match(
      threaded.log(),
      /gave memory back after the first load compacted=true .*heapCommittedAfterMiB=\d+/,
    );
    // Without DNS threads the main thread answers DNS: it is not paused for this.
    assert.doesNotMatch(single.log(), /gave memory back/);
    // The operator answers no DNS: it gives memory back once its first reconciles are done.
    await waitFor(
      async () => (/gave memory back after the first load/.test(operator!.log()) ? true : undefined),
      30_000,
    );
    assert.equal(operator!.log().match(/gave memory back after the first load/g)?.length, 1);
  });

  test('a tenant can neither read nor write the key Secret, nor the signing time in status', async () => {
    const name = (
      await kube.kubectlOk([
        'get',
        'secrets',
        '-n',
        KEYS,
        '-l',
        'dns.zonekeeper.dev/dnssec-keys=true',
        '-o',
        'name',
      ])
    )
      .trim()
      .replace(/^secret\//, '');
    for (const user of [TENANT, TENANT_SA]) {
      const kubeconfig = kube.kubeconfigFor(user);
      for (const verb of ['get', 'list', 'watch', 'update', 'patch', 'delete', 'create']) {
        for (const ns of [KEYS, SYSTEM]) {
          const r = await kube.kubectl(['auth', 'can-i', verb, 'secrets', '-n', ns], { kubeconfig });
          assert.equal(r.stdout.trim(), 'no', `${user.name} may ${verb} secrets in ${ns}`);
        }
      }
      // Nor the signing time the replicas sign at (status is the operator's alone).
      const status = await kube.kubectl(
        ['auth', 'can-i', 'update', 'dnszones', '--subresource=status', '-n', 'team-a'],
        { kubeconfig },
      );
      assert.equal(status.stdout.trim(), 'no', `${user.name} may write DNSZone status`);
      const got = await kube.kubectl(['get', 'secret', '-n', KEYS, name], { kubeconfig });
      assert.notEqual(got.code, 0);
      assert.match(got.stderr, /forbidden/i);
    }
    // The server replicas may only get (never list or change) Secrets there, and no Secret elsewhere
    // (not the operator's namespace, which holds the other credentials).
    const server = kube.kubeconfigFor(SERVER);
    assert.equal(
      (
        await kube.kubectl(['auth', 'can-i', 'get', `secret/${name}`, '-n', KEYS], { kubeconfig: server })
      ).stdout.trim(),
      'yes',
    );
    for (const verb of ['list', 'watch', 'create', 'update', 'delete'])
      assert.equal(
        (
          await kube.kubectl(['auth', 'can-i', verb, 'secrets', '-n', KEYS], { kubeconfig: server })
        ).stdout.trim(),
        'no',
        `the server may ${verb} secrets`,
      );
    assert.equal(
      (
        await kube.kubectl(['auth', 'can-i', 'get', 'secrets/unrelated', '-n', SYSTEM], {
          kubeconfig: server,
        })
      ).stdout.trim(),
      'no',
    );
    assert.equal(
      (
        await kube.kubectl(['auth', 'can-i', 'get', 'secrets', '-n', 'team-a'], { kubeconfig: server })
      ).stdout.trim(),
      'no',
    );
  });

  test('a replica restarted serves the same DNSKEY and the same signed answers', async () => {
    const z = await readyZone();
    const before = await signedAnswers(servers[1]!);
    const keys = rdataOf(await dig(servers[1]!.dnsPort, ZONE, 'DNSKEY'), 'DNSKEY');
    await servers[1]!.stop();
    servers[1] = await startServerProcess('server-b2', kube.kubeconfigFor(SERVER), KEYS_FLAG);
    await serves(servers[1]!, z.status!.serial!);
    assert.deepEqual(rdataOf(await dig(servers[1]!.dnsPort, ZONE, 'DNSKEY'), 'DNSKEY'), keys);
    assert.deepEqual(await signedAnswers(servers[1]!), before);
  });

  test('an operator restart keeps the signed serial and its signing time (the status records it)', async () => {
    const z = await readyZone();
    await operator!.stop();
    operator = await startOperatorProcess('operator-2', kube.kubeconfigFor(OPERATOR), SYSTEM, KEYS_FLAG);
    // Another zone made Ready by the new operator: it has read and reconciled what existed before.
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: yaml({
        apiVersion: ZK,
        kind: 'DNSZone',
        metadata: { name: 'later', namespace: 'team-a' },
        spec: { domainName: 'later.example', className: 'builtin' },
      }),
    });
    await waitFor(async () => {
      const later = JSON.parse(
        await kube.kubectlOk(['get', 'dnszone', '-n', 'team-a', 'later', '-o', 'json']),
      ) as ZoneJson;
      return ready(later) ? true : undefined;
    }, 60_000).catch(() => assert.fail(`the new operator does not reconcile:\n${operator?.log()}`));
    await operator!.stop();
    const after = await readyZone();
    assert.equal(after.status?.serial, z.status?.serial);
    assert.equal(after.status?.signedAt, z.status?.signedAt);
    operator = await startOperatorProcess('operator-3', kube.kubeconfigFor(OPERATOR), SYSTEM, KEYS_FLAG);
  });

  test('a replica that cannot read the keys serves nothing of the signed zone, never unsigned content', async () => {
    const z = await readyZone();
    // The replica runs as an identity that may read the zones but not the Secret.
    await kube.kubectlOk([
      'create',
      'clusterrolebinding',
      'no-keys',
      '--clusterrole=zonekeeper-server',
      `--serviceaccount=${SYSTEM}:no-keys`,
    ]);
    const blind = await startServerProcess('server-nokeys', kube.kubeconfigFor(NOKEYS), KEYS_FLAG).catch(
      (e: Error) => assert.fail(e.message),
    );
    servers.push(blind);
    // Give it time to have tried: it logs the failure to read the key and retries.
    await waitFor(
      async () =>
        /may not read Secret|DNSSEC_KEYS|could not read or store/.test(blind.log()) ? true : undefined,
      30_000,
    ).catch(() => assert.fail(`no key failure logged:\n${blind.log()}`));
    const soa = await dig(blind.dnsPort, ZONE, 'SOA');
    assert.equal(
      soa.status,
      'REFUSED',
      `serial ${z.status?.serial} served without keys: ${JSON.stringify(soa)}`,
    );
  });

  test('a ZSK rollover in the cluster: the leader records each step in the key Secret, both replicas sign each serial alike and validate', async (t) => {
    const ROLLING = 'rolling.example';
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: yaml(
        {
          apiVersion: ZK,
          kind: 'DNSZone',
          metadata: { name: 'rolling', namespace: 'team-a' },
          spec: {
            domainName: ROLLING,
            className: 'builtin',
            ttl: 2,
            soa: { refresh: 1, minimum: 2 },
            dnssec: { enabled: true, keys: 'Split', zskLifetimeSeconds: 6 },
          },
        },
        {
          apiVersion: ZK,
          kind: 'DNSRecordSet',
          metadata: { name: 'rolling-www', namespace: 'team-a' },
          spec: { zoneRef: { name: 'rolling' }, name: 'www', type: 'A', ttl: 3, records: ['192.0.2.20'] },
        },
      ),
    });
    const rolling = async () =>
      JSON.parse(
        await kube.kubectlOk(['get', 'dnszone', '-n', 'team-a', 'rolling', '-o', 'json']),
      ) as ZoneJson;
    const first = (
      await waitFor(
        async () => {
          const z = await rolling();
          return ready(z) && (z.status?.dnssec?.ds?.length ?? 0) > 0 ? z : undefined;
        },
        60_000,
        200,
      ).catch(async () => assert.fail(`rolling not Ready: ${JSON.stringify((await rolling()).status)}`))
    ).value;
    const signingZsk = (z: ZoneJson) =>
      z.status?.dnssec?.keys?.find((k) => k.role === 'ZSK' && k.active)?.keyTag;
    const before = signingZsk(first);
    const anchors = await dsTrustAnchorFile(work, ROLLING, first.status!.dnssec!.ds!);
    const replicas = servers.slice(0, 2);
    const seen: string[] = [];
    let compared = 0;
    const deadline = Date.now() + 180_000;
    for (;;) {
      const z = await rolling();
      const phase = z.status?.dnssec?.rollover?.phase ?? 'none';
      if (seen.at(-1) !== phase) seen.push(phase);
      for (const server of replicas) {
        const r = await delv(server.dnsPort, anchors, ROLLING, `www.${ROLLING}`, 'A');
        assert.equal(r.verdict, 'fully validated', `${server.name} in ${seen.join(' → ')}: ${r.raw}`);
      }
      // Where both replicas serve the same serial, they serve the same signed bytes.
      const serialOf = (server: KubeProcess) => soaSerial(server.dnsPort, ROLLING);
      const answers = async (server: KubeProcess) => {
        const out: string[] = [];
        for (const [name, type] of [
          [ROLLING, 'DNSKEY'],
          [`www.${ROLLING}`, 'A'],
        ] as const)
          out.push(...(await dig(server.dnsPort, name, type, { args: ['+dnssec', '+multiline=no'] })).answer);
        return out;
      };
      const [sa, sb] = [await serialOf(replicas[0]!), await serialOf(replicas[1]!)];
      if (sa !== undefined && sa === sb) {
        const [a, b] = [await answers(replicas[0]!), await answers(replicas[1]!)];
        if (sa === (await serialOf(replicas[0]!)) && sb === (await serialOf(replicas[1]!))) {
          assert.deepEqual(b, a, `serial ${sa} signed differently by the replicas`);
          compared++;
        }
      }
      const now = signingZsk(z);
      if (seen.includes('Retire') && phase === 'Active' && now !== undefined && now !== before) break;
      assert.ok(Date.now() < deadline, `the ZSK rollover did not finish in the cluster: ${seen.join(' → ')}`);
      await new Promise((r) => setTimeout(r, 300));
    }
    t.diagnostic(`phases ${seen.join(' → ')}; replicas compared at ${compared} samples`);
    assert.ok(compared > 0, 'the replicas were compared at some serial');
    // The leader keeps the rollover's state with the keys, in the key Secret.
    const secret = JSON.parse(
      await kube.kubectlOk(['get', 'secret', '-n', KEYS, keySecretName(`${ROLLING}.`), '-o', 'json']),
    ) as { data: Record<string, string> };
    const keys = JSON.parse(Buffer.from(secret.data['keys.json']!, 'base64').toString('utf8')) as {
      zskRoll?: string;
      keys: { role: string; events?: unknown[] }[];
    };
    assert.match(keys.zskRoll ?? '', /^(Active|Publish|Retire) /);
    assert.ok(
      keys.keys.some((k) => k.role === 'ZSK' && (k.events?.length ?? 0) > 0),
      JSON.stringify(keys.keys.map((k) => k.role)),
    );
  });
});
