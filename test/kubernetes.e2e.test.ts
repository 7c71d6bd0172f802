/**
 * Zonekeeper on a real control plane: kube-apiserver and etcd (built from Go modules by
 * scripts/ensure-k8s-binaries.sh), the Helm chart rendered with a real helm and applied, the operator
 * and the DNS servers running with the chart's service-account RBAC, driven with kubectl and queried
 * with dig.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { BACKEND_KINDS } from '../src/api/index.ts';
import { type DigResult, dig, rdataOf } from './support/dig.ts';
import { type KubeCluster, serviceAccountUser, startKube } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { ROOT, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const SYSTEM = 'zonekeeper-system';
const TEAM = 'team';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const API = 'dns.zonekeeper.dev/v1alpha1';

/** What the raw watches of the test read of an object. */
interface WatchedObject {
  metadata: { name: string; resourceVersion: string };
  status?: { serial?: number };
}

function yamlDocs(...docs: object[]): string {
  return docs.map((d) => `---\n${stringify(d)}`).join('');
}

function recordSet(name: string, type: string, records: string[], namespace = TEAM, zone = 'example-com') {
  return {
    apiVersion: API,
    kind: 'DNSRecordSet',
    metadata: { name, namespace },
    spec: { zoneRef: { name: zone }, name: name.replace(/^rs-/, ''), type, records },
  };
}

const CLASS = {
  apiVersion: API,
  kind: 'DNSZoneClass',
  metadata: { name: 'builtin' },
  spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.', 'ns2.example.com.'] },
};
const ZONE = {
  apiVersion: API,
  kind: 'DNSZone',
  metadata: { name: 'example-com', namespace: TEAM },
  spec: { domainName: 'example.com', className: 'builtin' },
};

function soaSerial(r: DigResult): number | undefined {
  const soa = [...r.answer, ...r.authority].find((l) => l.split(' ')[3] === 'SOA');
  return soa === undefined ? undefined : Number(soa.split(' ')[6]);
}

describe('Kubernetes: operator, server, chart on a real API server', { timeout: 900_000 }, () => {
  let kube: KubeCluster;
  const operators: KubeProcess[] = [];
  const servers: KubeProcess[] = [];
  const figures: Record<string, number> = {};

  const kubectl = (args: string[], input?: string) =>
    kube.kubectl(args, input === undefined ? {} : { input });
  const apply = (yaml: string) => kube.kubectlOk(['apply', '-f', '-'], { input: yaml });
  const zoneStatus = async (name = 'example-com', ns = TEAM) =>
    JSON.parse(await kube.kubectlOk(['get', 'dnszone', '-n', ns, name, '-o', 'json'])) as {
      metadata: { finalizers?: string[]; deletionTimestamp?: string };
      status?: {
        serial?: number;
        hash?: string;
        recordCount?: number;
        conditions?: { type: string; status: string }[];
      };
    };
  const leaseHolder = async () =>
    (
      await kubectl([
        'get',
        'lease',
        '-n',
        SYSTEM,
        'zonekeeper-operator',
        '-o',
        'jsonpath={.spec.holderIdentity}',
      ])
    ).stdout.trim();
  /** Polls dig on a server until `accept` holds; returns the result and the time it took. */
  const digUntil = (
    server: KubeProcess,
    name: string,
    type: string,
    accept: (r: DigResult) => boolean,
    timeoutMs = 10_000,
  ) =>
    waitFor(
      async () => {
        const r = await dig(server.dnsPort, name, type);
        return accept(r) ? r : undefined;
      },
      timeoutMs,
      20,
    );

  /**
   * Watches a collection on the API server (`kubectl get --raw …?watch=1`, one event per line), from
   * the objects there now (as ADDED) on. One etcd orders every write, so the resourceVersions of
   * different kinds compare as the order of their writes.
   */
  const watchRaw = (apiPath: string) => {
    const events: { type: string; object: WatchedObject }[] = [];
    const child = spawn(kube.kubectlPath, ['--kubeconfig', kube.adminKubeconfig, 'get', '--raw', apiPath], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let buffered = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line) events.push(JSON.parse(line) as { type: string; object: WatchedObject });
      }
    });
    return { events, stop: () => child.kill() };
  };

  before(async () => {
    kube = await startKube({ users: [OPERATOR, SERVER] });
    await kube.kubectlOk(['create', 'namespace', SYSTEM]);
    await kube.kubectlOk(['create', 'namespace', TEAM]);
  });

  const retired: KubeProcess[] = [];
  after(async () => {
    await Promise.all([...operators, ...servers].map((p) => p.stop().catch(() => {})));
    // KUBE_E2E_LOGS=DIR keeps every process's log, and the API server's, for a look after a failure.
    if (process.env.KUBE_E2E_LOGS) {
      const { mkdir, writeFile } = await import('node:fs/promises');
      await mkdir(process.env.KUBE_E2E_LOGS, { recursive: true });
      for (const p of [...operators, ...servers, ...retired])
        await writeFile(path.join(process.env.KUBE_E2E_LOGS, `${p.name}-${p.pid}.log`), p.log());
      if (kube) await writeFile(path.join(process.env.KUBE_E2E_LOGS, 'control-plane.log'), kube.logs());
    }
    if (process.env.KUBE_E2E_FIGURES) {
      const { writeFile } = await import('node:fs/promises');
      await writeFile(process.env.KUBE_E2E_FIGURES, JSON.stringify(figures, null, 2));
    }
    await kube?.stop();
  });

  test('the Helm chart renders with a real helm and applies; deploy/manifests is the chart rendered; RBAC is least privilege', async () => {
    const helm = path.join(kube.binDir, 'helm');
    const chart = path.join(ROOT, 'deploy/helm/zonekeeper');
    await run(helm, ['lint', chart, '--strict']);
    const { stdout: rendered } = await run(
      helm,
      ['template', 'zonekeeper', chart, '--namespace', SYSTEM, '--include-crds', '--kube-version', '1.33.13'],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    const applied = await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rendered });
    for (const object of [
      'serviceaccount/zonekeeper-operator',
      'serviceaccount/zonekeeper-server',
      'clusterrole.rbac.authorization.k8s.io/zonekeeper-operator',
      'clusterrole.rbac.authorization.k8s.io/zonekeeper-server',
      'role.rbac.authorization.k8s.io/zonekeeper-operator-leader-election',
      'role.rbac.authorization.k8s.io/zonekeeper-operator-serials',
      'deployment.apps/zonekeeper-operator',
      'deployment.apps/zonekeeper-server',
      'service/zonekeeper-dns',
      'poddisruptionbudget.policy/zonekeeper-server',
    ])
      assert.match(applied, new RegExp(`${object.replace('.', '\\.')} serverside-applied`), applied);
    const service = JSON.parse(
      await kube.kubectlOk(['get', 'service', '-n', SYSTEM, 'zonekeeper-dns', '-o', 'json']),
    );
    assert.deepEqual(
      service.spec.ports.map((p: { protocol: string; port: number }) => `${p.port}/${p.protocol}`),
      ['53/UDP', '53/TCP'],
    );
    // The DaemonSet variant and the ServiceMonitor render too.
    const { stdout: daemonset } = await run(helm, [
      'template',
      'zonekeeper',
      chart,
      '--namespace',
      SYSTEM,
      '--set',
      'server.kind=DaemonSet',
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'operator.secretAccess.enabled=true',
    ]);
    assert.match(daemonset, /kind: DaemonSet/);
    assert.match(daemonset, /kind: ServiceMonitor/);
    assert.match(daemonset, /resources: \[secrets\]/);
    assert.equal(
      (
        await kube.kubectl(['apply', '--dry-run=server', '-f', '-'], {
          input: daemonset.replace(
            /---\n# Source: zonekeeper\/templates\/servicemonitor.yaml[\s\S]*?(?=---|$)/,
            '',
          ),
        })
      ).code,
      0,
    );

    // The chart's CRDs are deploy/crds (generated from src/api) ...
    for (const file of ['dnszoneclasses', 'dnszones', 'dnsrecordsets'].map(
      (p) => `dns.zonekeeper.dev_${p}.yaml`,
    ))
      assert.equal(
        await readFile(path.join(chart, 'crds', file), 'utf8'),
        await readFile(path.join(ROOT, 'deploy/crds', file), 'utf8'),
        `deploy/helm/zonekeeper/crds/${file} is stale: run scripts/render-manifests.sh`,
      );
    // ... and deploy/manifests is exactly the chart rendered with its defaults (scripts/render-manifests.sh).
    const { stdout: plain } = await run(
      helm,
      ['template', 'zonekeeper', chart, '--namespace', SYSTEM, '--include-crds'],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    const committed = await readFile(path.join(ROOT, 'deploy/manifests/zonekeeper.yaml'), 'utf8');
    assert.equal(
      committed.slice(committed.indexOf('---')),
      plain.slice(plain.indexOf('---')),
      'deploy/manifests is stale: run scripts/render-manifests.sh',
    );
    const kustomized = await kube.kubectlOk([
      'apply',
      '-k',
      path.join(ROOT, 'deploy/manifests'),
      '--server-side',
      '--force-conflicts',
    ]);
    assert.match(
      kustomized,
      /customresourcedefinition.apiextensions.k8s.io\/dnszones.dns.zonekeeper.dev serverside-applied/,
    );

    // Least privilege, as the API server's RBAC authorizer decides it.
    const can = async (user: typeof OPERATOR, ...args: string[]) =>
      (
        await kube.kubectl(['auth', 'can-i', ...args], { kubeconfig: kube.kubeconfigFor(user) })
      ).stdout.trim();
    for (const [args, want] of [
      [['watch', 'dnsrecordsets.dns.zonekeeper.dev', '-A'], 'yes'],
      [['update', 'dnszones.dns.zonekeeper.dev', '--subresource=status', '-n', TEAM], 'yes'],
      [['patch', 'dnsrecordsets.dns.zonekeeper.dev', '-n', TEAM], 'yes'],
      [['create', 'events.events.k8s.io', '-n', TEAM], 'yes'],
      [['update', 'leases.coordination.k8s.io/zonekeeper-operator', '-n', SYSTEM], 'yes'],
      [['update', 'leases.coordination.k8s.io/other', '-n', SYSTEM], 'no'],
      [['update', 'leases.coordination.k8s.io/zonekeeper-operator', '-n', TEAM], 'no'],
      [['create', 'dnszones.dns.zonekeeper.dev', '-n', TEAM], 'no'],
      [['delete', 'dnsrecordsets.dns.zonekeeper.dev', '-n', TEAM], 'no'],
      [['get', 'secrets', '-n', SYSTEM], 'no'],
      // Namespaces: read by name (is a deleted zone's namespace being deleted), nothing more.
      [['get', 'namespaces/team'], 'yes'],
      [['list', 'namespaces'], 'no'],
      [['delete', 'namespaces/team'], 'no'],
      // Zone serial records: ConfigMaps listed in its own namespace only, never deleted.
      [['create', 'configmaps', '-n', SYSTEM], 'yes'],
      [['update', 'configmaps', '-n', SYSTEM], 'yes'],
      [['list', 'configmaps', '-n', SYSTEM], 'yes'],
      [['delete', 'configmaps', '-n', SYSTEM], 'no'],
      // kubizone ZoneFiles: the one ConfigMap a ZoneFile names, read, created and updated by name;
      // never listed, watched, patched or deleted elsewhere.
      [['get', 'configmaps', '-n', TEAM], 'yes'],
      [['create', 'configmaps', '-n', TEAM], 'yes'],
      [['update', 'configmaps', '-n', TEAM], 'yes'],
      [['list', 'configmaps', '-n', TEAM], 'no'],
      [['watch', 'configmaps', '-A'], 'no'],
      [['patch', 'configmaps', '-n', TEAM], 'no'],
      [['delete', 'configmaps', '-n', TEAM], 'no'],
    ] as const)
      assert.equal(await can(OPERATOR, ...args), want, `operator can-i ${args.join(' ')}`);
    for (const [args, want] of [
      [['list', 'dnszoneclasses.dns.zonekeeper.dev'], 'yes'],
      [['watch', 'dnszones.dns.zonekeeper.dev', '-A'], 'yes'],
      [['update', 'dnszones.dns.zonekeeper.dev', '--subresource=status', '-n', TEAM], 'no'],
      [['patch', 'dnsrecordsets.dns.zonekeeper.dev', '-n', TEAM], 'no'],
      [['create', 'events.events.k8s.io', '-n', TEAM], 'no'],
      [['get', 'leases.coordination.k8s.io', '-n', SYSTEM], 'no'],
      [['get', 'secrets', '-n', SYSTEM], 'no'],
      [['get', 'configmaps', '-n', SYSTEM], 'no'],
    ] as const)
      assert.equal(await can(SERVER, ...args), want, `server can-i ${args.join(' ')}`);
  });

  test('operators elect one leader; servers start; probes and metrics answer', async () => {
    operators.push(await startOperatorProcess('operator-a', kube.kubeconfigFor(OPERATOR), SYSTEM));
    operators.push(await startOperatorProcess('operator-b', kube.kubeconfigFor(OPERATOR), SYSTEM));
    servers.push(await startServerProcess('server-a', kube.kubeconfigFor(SERVER)));
    servers.push(await startServerProcess('server-b', kube.kubeconfigFor(SERVER)));
    const { value: holder } = await waitFor(async () => (await leaseHolder()) || undefined, 10_000, 100);
    assert.ok(['operator-a', 'operator-b'].includes(holder), holder);
    for (const p of [...operators, ...servers]) {
      assert.equal((await fetch(`${p.httpUrl}/healthz`)).status, 200);
      assert.equal((await fetch(`${p.httpUrl}/readyz`)).status, 200, `${p.name} ready`);
    }
    const metrics = await (
      await fetch(`${operators.find((o) => o.name === holder)!.httpUrl}/metrics`)
    ).text();
    assert.match(metrics, /^zonekeeper_leader 1$/m);
    assert.match(metrics, /^zonekeeper_kube_cache_synced 1$/m);
  });

  test('kubectl apply of a class, a zone and a record set: dig answers within 2 s; kubectl shows Serial, Records, Ready', async () => {
    const started = performance.now();
    await apply(yamlDocs(CLASS, ZONE, recordSet('rs-www', 'A', ['192.0.2.10'])));
    const kubectlMs = performance.now() - started;
    const { value } = await digUntil(servers[0]!, 'www.example.com', 'A', (r) =>
      rdataOf(r, 'A').includes('192.0.2.10'),
    );
    const ms = performance.now() - started;
    figures.applyToAnswer1Ms = Math.round(ms);
    figures.kubectlApply1Ms = Math.round(kubectlMs);
    assert.ok(value.flags.includes('aa'));
    assert.ok(ms < 2000, `answered after ${Math.round(ms)} ms`);
    // Both replicas serve it at the serial the operator recorded.
    const status = (
      await waitFor(async () => {
        const z = await zoneStatus();
        return z.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? z : undefined;
      })
    ).value;
    for (const server of servers) {
      const { value: soa } = await digUntil(
        server,
        'example.com',
        'SOA',
        (r) => soaSerial(r) === status.status?.serial,
      );
      assert.equal(soa.status, 'NOERROR');
    }
    const table = await kube.kubectlOk(['get', 'dnszones', '-n', TEAM]);
    const [header, row] = table.trim().split('\n');
    assert.match(header!, /^NAME\s+DOMAIN\s+CLASS\s+SERIAL\s+RECORDS\s+READY\s+AGE$/);
    assert.match(
      row!,
      new RegExp(`^example-com\\s+example\\.com\\s+builtin\\s+${status.status?.serial}\\s+1\\s+True\\s+`),
    );
    assert.deepEqual(status.metadata.finalizers, ['dns.zonekeeper.dev/finalizer']);
    const rs = await kube.kubectlOk(['get', 'dnsrecordsets', '-n', TEAM]);
    assert.match(rs, /rs-www\s+example-com\s+www\s+A\s+True/);
  });

  test('editing a record changes the answer and the serial on every server; deleting it removes the answer', async () => {
    const before = (await zoneStatus()).status!.serial!;
    await apply(yamlDocs(recordSet('rs-www', 'A', ['192.0.2.20', '192.0.2.21'])));
    const serials: number[] = [];
    for (const server of servers) {
      await digUntil(
        server,
        'www.example.com',
        'A',
        (r) => rdataOf(r, 'A').sort().join() === '192.0.2.20,192.0.2.21',
      );
      const { value } = await digUntil(server, 'example.com', 'SOA', (r) => (soaSerial(r) ?? 0) > before);
      serials.push(soaSerial(value)!);
    }
    assert.equal(serials[0], serials[1], 'both servers serve the same serial');
    await waitFor(async () => ((await zoneStatus()).status?.serial === serials[0] ? true : undefined));

    await kube.kubectlOk(['delete', 'dnsrecordset', '-n', TEAM, 'rs-www', '--timeout=20s']);
    for (const server of servers) {
      const { value } = await digUntil(server, 'www.example.com', 'A', (r) => r.status === 'NXDOMAIN');
      assert.ok((soaSerial(value) ?? 0) > serials[0]!, 'the negative answer carries a higher serial');
    }
    assert.equal(
      (await kubectl(['get', 'dnsrecordset', '-n', TEAM, 'rs-www'])).code,
      1,
      'the record set is gone',
    );
  });

  test('the API server rejects what the schema and CEL can check, with a clear message', async () => {
    const reject = async (doc: object, message: RegExp) => {
      const r = await kubectl(['apply', '-f', '-'], yamlDocs(doc));
      assert.notEqual(r.code, 0, `accepted: ${JSON.stringify(doc)}`);
      assert.match(r.stderr, message);
    };
    await reject(
      recordSet('rs-bad-type', 'BOGUS', ['x']),
      /spec\.type: Unsupported value: "BOGUS": supported values: "A", "AAAA"/,
    );
    await reject(
      recordSet('rs-two-cnames', 'CNAME', ['a.example.com.', 'b.example.com.']),
      /a CNAME or ALIAS record set has exactly one record/,
    );
    await reject(recordSet('rs-soa', 'SOA', ['x']), /spec\.type: (Unsupported value|Forbidden)/);
    const wildNs = recordSet('rs-wild-ns', 'NS', ['ns1.example.net.']);
    await reject(
      { ...wildNs, spec: { ...wildNs.spec, name: '*.wild' } },
      /an NS record set cannot have a wildcard owner name: a wildcard does not delegate \(RFC 4592 §4\.2\)/,
    );
    await reject(
      { ...CLASS, metadata: { name: 'no-backend' }, spec: { ...CLASS.spec, backend: {} } },
      /exactly one backend must be set/,
    );
    if (BACKEND_KINDS.length >= 2) {
      const both = Object.fromEntries(BACKEND_KINDS.slice(0, 2).map((k) => [k, {}]));
      const r = await kubectl(
        ['apply', '-f', '-'],
        yamlDocs({ ...CLASS, metadata: { name: 'two-backends' }, spec: { ...CLASS.spec, backend: both } }),
      );
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /exactly one backend must be set|Required value/);
    }
    await reject(
      { ...ZONE, spec: { ...ZONE.spec, domainName: 'example.org' } },
      /domainName is immutable; create a new DNSZone instead/,
    );
    await reject(
      {
        ...ZONE,
        metadata: { name: 'bad-domain', namespace: TEAM },
        spec: { ...ZONE.spec, domainName: 'nodot' },
      },
      /spec\.domainName in body should match/,
    );
    // Transfer settings: a network the pattern lets through but CEL's isIP/isCIDR does not, and a
    // NOTIFY key that is not among the class's keys.
    const transfers = (t: object) => ({
      ...CLASS,
      metadata: { name: 'bad-transfers' },
      spec: { ...CLASS.spec, transfers: t },
    });
    await reject(transfers({ allowFrom: ['999.1.1.1'] }), /must be an IP address or a network in CIDR form/);
    await reject(
      transfers({ allowFrom: ['127.0.0.1'], notify: [{ address: '127.0.0.1:53', tsigKey: 'nope' }] }),
      /every notify tsigKey must name one of tsigKeys/,
    );
  });

  test('what the API server cannot check lands in status with the reason, and in an Event', async () => {
    await apply(
      yamlDocs(
        recordSet('rs-bad-ip', 'A', ['999.0.2.1']),
        recordSet('rs-mail', 'MX', ['10 mail.example.com.']),
      ),
    );
    let last = '';
    const { value } = await waitFor(async () => {
      last = await kube.kubectlOk(['get', 'dnsrecordset', '-n', TEAM, 'rs-bad-ip', '-o', 'json']);
      const accepted = JSON.parse(last).status?.conditions?.find(
        (c: { type: string }) => c.type === 'Accepted',
      );
      return accepted?.status === 'False' ? accepted : undefined;
    }).catch((e: Error) => assert.fail(`${e.message}; the record set is ${last}`));
    assert.equal(value.reason, 'Invalid');
    assert.match(value.message, /999\.0\.2\.1/);
    // The valid record set applied with it is served; the invalid one is not.
    await digUntil(
      servers[0]!,
      'mail.example.com',
      'MX',
      (r) => rdataOf(r, 'MX').join() === '10 mail.example.com.',
    );
    assert.equal((await dig(servers[0]!.dnsPort, 'bad-ip.example.com', 'A')).status, 'NXDOMAIN');
    const { value: events } = await waitFor(async () => {
      const out = await kube.kubectlOk(['get', 'events.events.k8s.io', '-n', TEAM, '-o', 'json']);
      const items = (
        JSON.parse(out).items as { regarding: { name: string }; reason: string; type: string; note: string }[]
      ).filter((e) => e.regarding.name === 'rs-bad-ip');
      return items.length > 0 ? items : undefined;
    }).catch(async (e: Error) =>
      assert.fail(`${e.message}; events: ${await kube.kubectlOk(['get', 'events.events.k8s.io', '-A'])}`),
    );
    assert.equal(events[0]!.type, 'Warning');
    assert.equal(events[0]!.reason, 'Invalid');
    await kube.kubectlOk(['delete', 'dnsrecordset', '-n', TEAM, 'rs-bad-ip', '--timeout=20s']);
  });

  test('the standby operator takes over when the leader dies', async () => {
    const holder = await leaseHolder();
    const leader = operators.find((o) => o.name === holder)!;
    const standby = operators.find((o) => o.name !== holder)!;
    const killed = performance.now();
    await leader.kill(); // a crash: the lease is not released
    operators.splice(operators.indexOf(leader), 1);
    retired.push(leader);
    await apply(yamlDocs(recordSet('rs-after-failover', 'TXT', ['"v=1"'])));
    const { value } = await digUntil(
      servers[1]!,
      'after-failover.example.com',
      'TXT',
      (r) => r.answer.length > 0,
      30_000,
    );
    figures.failoverToAnswerMs = Math.round(performance.now() - killed);
    assert.deepEqual(rdataOf(value, 'TXT'), ['"v=1"']);
    assert.equal(await leaseHolder(), standby.name);
    // A restarted replica stands by.
    operators.push(await startOperatorProcess(leader.name, kube.kubeconfigFor(OPERATOR), SYSTEM));
  });

  test('killing the operator mid-change loses nothing and orphans nothing', async () => {
    const names = Array.from({ length: 40 }, (_, i) => `rs-bulk-${i}`);
    // One record set surely served and holding its finalizer before the operators die.
    await apply(yamlDocs(recordSet('rs-kept', 'A', ['198.51.100.250'])));
    await waitFor(async () => {
      const r = await dig(servers[0]!.dnsPort, 'kept.example.com', 'A');
      const finalizers = await kube.kubectlOk([
        'get',
        'dnsrecordset',
        '-n',
        TEAM,
        'rs-kept',
        '-o',
        'jsonpath={.metadata.finalizers}',
      ]);
      return r.answer.length > 0 && finalizers.includes('dns.zonekeeper.dev/finalizer') ? true : undefined;
    });
    const applying = apply(yamlDocs(...names.map((n, i) => recordSet(n, 'A', [`198.51.100.${i + 1}`]))));
    // Kill every operator while the batch is being processed.
    await waitFor(
      async () => {
        const r = await dig(servers[0]!.dnsPort, 'bulk-0.example.com', 'A');
        return r.answer.length > 0 ? true : undefined;
      },
      20_000,
      10,
    );
    const identities = operators.map((o) => o.name);
    await Promise.all(operators.map((o) => o.kill()));
    retired.push(...operators);
    operators.length = 0;
    await applying;
    // While no operator runs: delete some record sets (held by their finalizers, or gone at once if the
    // operator never got to them) and edit another.
    await kube.kubectlOk([
      'delete',
      'dnsrecordset',
      '-n',
      TEAM,
      ...names.slice(30),
      'rs-kept',
      '--wait=false',
    ]);
    await apply(yamlDocs(recordSet('rs-bulk-0', 'A', ['198.51.100.200'])));
    // The servers keep serving the last confirmed content meanwhile.
    const before = await dig(servers[0]!.dnsPort, 'example.com', 'SOA');
    // Watched from before the restart: when the zone's status gets a serial without the deleted record
    // sets, and when those held by their finalizers are released.
    const apis = `/apis/dns.zonekeeper.dev/v1alpha1/namespaces/${TEAM}`;
    const heldByFinalizer = (
      JSON.parse(await kube.kubectlOk(['get', 'dnsrecordsets', '-n', TEAM, '-o', 'json'])).items as {
        metadata: { name: string; deletionTimestamp?: string };
      }[]
    )
      .filter((i) => i.metadata.deletionTimestamp)
      .map((i) => i.metadata.name);
    assert.ok(heldByFinalizer.includes('rs-kept'), 'held by its finalizer while no operator runs');
    const zoneWatch = watchRaw(`${apis}/dnszones?watch=1&fieldSelector=metadata.name%3Dexample-com`);
    const recordWatch = watchRaw(`${apis}/dnsrecordsets?watch=1`);
    // The watches are established once they listed what is there (nothing changes it meanwhile).
    await waitFor(async () =>
      zoneWatch.events.length > 0 &&
      heldByFinalizer.every((n) => recordWatch.events.some((e) => e.object.metadata.name === n))
        ? true
        : undefined,
    );
    // The same replica identities start again (as restarted pods): the lease is theirs at once.
    for (const id of identities)
      operators.push(await startOperatorProcess(id, kube.kubeconfigFor(OPERATOR), SYSTEM));
    for (const server of servers) {
      await digUntil(
        server,
        'bulk-0.example.com',
        'A',
        (r) => rdataOf(r, 'A').join() === '198.51.100.200',
        30_000,
      );
      for (const n of names.slice(1, 30)) {
        const i = Number(n.split('-').pop());
        await digUntil(
          server,
          `bulk-${i}.example.com`,
          'A',
          (r) => rdataOf(r, 'A').join() === `198.51.100.${i + 1}`,
        );
      }
      for (const n of names.slice(30))
        await digUntil(server, `${n.slice(3)}.example.com`, 'A', (r) => r.status === 'NXDOMAIN');
    }
    // Nothing orphaned: deleted record sets are gone; every remaining one is Ready with its finalizer.
    const { value: list } = await waitFor(
      async () => {
        const items = JSON.parse(await kube.kubectlOk(['get', 'dnsrecordsets', '-n', TEAM, '-o', 'json']))
          .items as {
          metadata: { name: string; finalizers?: string[]; deletionTimestamp?: string };
          status?: { conditions?: { type: string; status: string }[] };
        }[];
        const bulk = items.filter((i) => i.metadata.name.startsWith('rs-bulk-'));
        const settled =
          bulk.length === 30 &&
          bulk.every(
            (i) =>
              !i.metadata.deletionTimestamp &&
              i.metadata.finalizers?.includes('dns.zonekeeper.dev/finalizer') &&
              i.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True',
          );
        return settled ? bulk : undefined;
      },
      30_000,
      200,
    );
    assert.equal(list.length, 30);
    const status = (await zoneStatus()).status!;
    const serials = await Promise.all(
      servers.map(async (s) => soaSerial(await dig(s.dnsPort, 'example.com', 'SOA'))),
    );
    assert.deepEqual(serials, [status.serial, status.serial], 'every server serves the serial in status');
    assert.ok(status.serial! > (soaSerial(before) ?? 0));
    // A record set deleted while no operator ran is released only after the zone's status (the serial
    // the servers publish) moved past the content that held it, not by the new operator at once.
    await waitFor(async () =>
      heldByFinalizer.every((n) =>
        recordWatch.events.some((e) => e.type === 'DELETED' && e.object.metadata.name === n),
      )
        ? true
        : undefined,
    );
    zoneWatch.stop();
    recordWatch.stop();
    const revision = (e: { object: WatchedObject }) => BigInt(e.object.metadata.resourceVersion);
    // The serial in the zone's status when the new operators started, then the first one above it.
    const startSerial = zoneWatch.events[0]!.object.status?.serial ?? 0;
    const newSerial = zoneWatch.events.find((e) => (e.object.status?.serial ?? 0) > startSerial);
    assert.ok(newSerial, 'the zone status got a new serial');
    for (const name of heldByFinalizer) {
      const released = recordWatch.events.find(
        (e) => e.type === 'DELETED' && e.object.metadata.name === name,
      )!;
      assert.ok(
        revision(released) > revision(newSerial),
        `${name} released (revision ${revision(released)}) after the zone's serial ${newSerial.object.status?.serial} (revision ${revision(newSerial)})`,
      );
    }
  });

  test('deleting a zone waits on the finalizer until the backend no longer serves it', async () => {
    await Promise.all(operators.map((o) => o.stop())); // graceful: the lease is released
    retired.push(...operators);
    operators.length = 0;
    await kube.kubectlOk(['delete', 'dnszone', '-n', TEAM, 'example-com', '--wait=false']);
    const held = await zoneStatus();
    assert.ok(held.metadata.deletionTimestamp, 'marked for deletion');
    assert.deepEqual(held.metadata.finalizers, ['dns.zonekeeper.dev/finalizer'], 'held by the finalizer');
    // The servers stop serving a zone being deleted at once.
    for (const server of servers) await digUntil(server, 'example.com', 'SOA', (r) => r.status === 'REFUSED');
    operators.push(await startOperatorProcess('operator-c', kube.kubeconfigFor(OPERATOR), SYSTEM));
    await waitFor(
      async () =>
        (await kubectl(['get', 'dnszone', '-n', TEAM, 'example-com'])).code === 1 ? true : undefined,
      20_000,
      100,
    );
    // Its record sets stay (they belong to their owners) and say why they are not served.
    const rs = JSON.parse(
      await kube.kubectlOk(['get', 'dnsrecordset', '-n', TEAM, 'rs-bulk-1', '-o', 'json']),
    );
    await waitFor(async () => {
      const now = JSON.parse(
        await kube.kubectlOk(['get', 'dnsrecordset', '-n', TEAM, 'rs-bulk-1', '-o', 'json']),
      );
      return now.status?.conditions?.find((c: { type: string }) => c.type === 'Accepted')?.reason ===
        'ZoneNotFound'
        ? true
        : undefined;
    });
    assert.ok(rs);
  });

  test('the examples folder applies to the cluster as is and is served: every zone and record set Ready', async () => {
    for (const ns of ['dns', 'team-a', 'team-b']) await kube.kubectlOk(['create', 'namespace', ns]);
    await kube.kubectlOk(['apply', '-R', '-f', path.join(ROOT, 'examples')]);
    const { value } = await digUntil(
      servers[1]!,
      'www.example.com',
      'A',
      (r) => rdataOf(r, 'A').length === 2,
      20_000,
    );
    assert.deepEqual(rdataOf(value, 'A').sort(), ['192.0.2.10', '192.0.2.11']);
    await digUntil(servers[0]!, 'example.com', 'MX', (r) =>
      rdataOf(r, 'MX').includes('10 mail.example.com.'),
    );
    const notReady = async () => {
      const out = JSON.parse(
        await kube.kubectlOk(['get', 'dnszones,dnsrecordsets', '-n', 'dns', '-o', 'json']),
      );
      return (
        out.items as {
          kind: string;
          metadata: { name: string };
          status?: { conditions?: { type: string; status: string }[] };
        }[]
      )
        .filter((i) => i.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True')
        .map((i) => `${i.kind}/${i.metadata.name}`);
    };
    await waitFor(async () => ((await notReady()).length === 0 ? true : undefined), 20_000, 200).catch(
      async () => assert.fail(`not Ready: ${(await notReady()).join(', ')}`),
    );
    const zones = await kube.kubectlOk(['get', 'dnszones', '-A']);
    for (const line of zones.trim().split('\n').slice(1)) assert.match(line, /\sTrue\s/, zones);
  });

  test('kubectl apply to answer for 100 record sets', async () => {
    const zone = {
      ...ZONE,
      metadata: { name: 'bench-example', namespace: TEAM },
      spec: { domainName: 'bench.example', className: 'builtin' },
    };
    await apply(yamlDocs(zone));
    await digUntil(servers[0]!, 'bench.example', 'SOA', (r) => r.status === 'NOERROR');
    const docs = Array.from({ length: 100 }, (_, i) =>
      recordSet(`rs-h${i}`, 'A', [`203.0.113.${i % 250}`], TEAM, 'bench-example'),
    );
    const started = performance.now();
    await apply(yamlDocs(...docs));
    const kubectlMs = performance.now() - started;
    for (const server of servers)
      await digUntil(server, 'h99.bench.example', 'A', (r) => r.answer.length > 0, 30_000);
    figures.applyToAnswer100Ms = Math.round(performance.now() - started);
    figures.kubectlApply100Ms = Math.round(kubectlMs);
    for (let i = 0; i < 100; i += 11)
      assert.equal((await dig(servers[1]!.dnsPort, `h${i}.bench.example`, 'A')).status, 'NOERROR');
    console.log(
      `kubectl apply → answer: 1 record set ${figures.applyToAnswer1Ms} ms, 100 record sets ${figures.applyToAnswer100Ms} ms (kubectl itself ${figures.kubectlApply100Ms} ms); failover to answer ${figures.failoverToAnswerMs} ms`,
    );
  });
});
