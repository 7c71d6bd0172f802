/**
 * One serial, one content in the cluster: `zonekeeper operator` programming a real PowerDNS
 * (test/support/powerdns.ts) from a real kube-apiserver (test/support/kube.ts), with the chart's RBAC.
 * The operator is killed between PowerDNS's apply and the DNSZone status write (status writes are
 * refused by a ValidatingAdmissionPolicy for that time, so the kill is not a matter of timing); the zone
 * changes while no operator runs; a new operator takes over. PowerDNS is read back through its API all
 * along, and no serial may ever be seen with two contents, nor may a new leader serve a serial at or
 * below one the previous leader applied.
 *
 *   node --test test/kubernetes-serials.test.ts     # about 40 s
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { type KubeCluster, serviceAccountUser, startKube } from './support/kube.ts';
import { type PowerDnsProcess, powerDnsAvailable, startPowerDns } from './support/powerdns.ts';
import { type KubeProcess, startOperatorProcess } from './support/zonekeeper-kube.ts';
import { ROOT, waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
const TEAM = 'team';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const API = 'dns.zonekeeper.dev/v1alpha1';
const ORIGIN = 'example.org.';
const KEY_ENV = 'ZONEKEEPER_TEST_PDNS_API_KEY';
const FREEZE = 'zonekeeper-test-freeze-dnszone-status';

function yamlDocs(...docs: object[]): string {
  return docs.map((d) => `---\n${stringify(d)}`).join('');
}

function www(address: string) {
  return {
    apiVersion: API,
    kind: 'DNSRecordSet',
    metadata: { name: 'www', namespace: TEAM },
    spec: { zoneRef: { name: 'example-org' }, name: 'www', type: 'A', records: [address] },
  };
}

interface Observed {
  serial: number;
  content: string;
}

/**
 * Reads the zone back from PowerDNS every few milliseconds and remembers the content seen under each
 * serial; a serial seen with a second content is a violation.
 */
class PowerDnsObserver {
  readonly contents = new Map<number, string>();
  readonly violations: string[] = [];
  /** Every serial in the order first seen. */
  readonly order: number[] = [];
  last?: Observed;
  private running = true;
  private readonly loop: Promise<void>;
  private readonly pdns: PowerDnsProcess;

  constructor(pdns: PowerDnsProcess) {
    this.pdns = pdns;
    this.loop = (async () => {
      while (this.running) {
        await this.read().catch(() => undefined);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
  }

  async read(): Promise<Observed | undefined> {
    const r = await this.pdns.api('GET', `/api/v1/servers/localhost/zones/${ORIGIN}`);
    if (r.status !== 200) return undefined;
    const rrsets = (
      r.body as { rrsets: { name: string; type: string; ttl: number; records: { content: string }[] }[] }
    ).rrsets;
    const soa = rrsets.find((s) => s.type === 'SOA' && s.name === ORIGIN);
    const serial = Number(soa?.records[0]?.content.split(/\s+/)[2]);
    if (!Number.isInteger(serial) || serial === 0) return undefined; // created, not programmed yet
    const content = rrsets
      .filter((s) => s.type !== 'SOA')
      .map(
        (s) =>
          `${s.name} ${s.ttl} ${s.type} ${s.records
            .map((x) => x.content)
            .sort()
            .join(' | ')}`,
      )
      .sort()
      .join('\n');
    const before = this.contents.get(serial);
    if (before === undefined) {
      this.contents.set(serial, content);
      this.order.push(serial);
    } else if (before !== content && !this.violations.some((v) => v.startsWith(`serial ${serial} `)))
      this.violations.push(
        `serial ${serial} seen with two contents:\n--- first\n${before}\n--- then\n${content}`,
      );
    this.last = { serial, content };
    return this.last;
  }

  /** Waits until PowerDNS serves `address` for www (read now, not from the loop). */
  async until(address: string, timeoutMs = 20_000): Promise<Observed> {
    const { value } = await waitFor(
      async () => {
        const o = await this.read();
        return o?.content.includes(`www.${ORIGIN} `) && o.content.includes(` ${address}`) ? o : undefined;
      },
      timeoutMs,
      20,
    );
    return value;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

describe('Kubernetes: a serial is durable before PowerDNS serves it', { timeout: 300_000 }, async () => {
  const skip = await powerDnsAvailable('lmdb');
  let kube: KubeCluster;
  let pdns: PowerDnsProcess;
  let observer: PowerDnsObserver;
  const operators: KubeProcess[] = [];
  const retired: KubeProcess[] = [];

  const apply = (yaml: string) => kube.kubectlOk(['apply', '-f', '-'], { input: yaml });
  const zoneStatus = async () =>
    (
      JSON.parse(await kube.kubectlOk(['get', 'dnszone', '-n', TEAM, 'example-org', '-o', 'json'])) as {
        status?: { serial?: number; hash?: string; conditions?: { type: string; status: string }[] };
      }
    ).status;
  /** Waits until the zone is Ready at the serial PowerDNS serves with `address` for www. */
  const settled = async (address: string): Promise<Observed> => {
    const served = await observer.until(address);
    await waitFor(
      async () => {
        const s = await zoneStatus();
        const ready = s?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
        const now = await observer.read();
        return ready && now !== undefined && now.serial === s?.serial && now.content === served.content
          ? true
          : undefined;
      },
      20_000,
      50,
    );
    return (await observer.read())!;
  };
  /** A status write as the API server's admission sees it (server-side dry run, as the admin). */
  const statusWritable = async () =>
    (
      await kube.kubectl([
        'patch',
        'dnszone',
        '-n',
        TEAM,
        'example-org',
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"recordCount":0}}',
        '--dry-run=server',
      ])
    ).code === 0;
  /** Refuses every DNSZone status write (a ValidatingAdmissionPolicy) until `thaw`. */
  const freeze = async () => {
    await apply(
      yamlDocs(
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingAdmissionPolicy',
          metadata: { name: FREEZE },
          spec: {
            failurePolicy: 'Fail',
            matchConstraints: {
              resourceRules: [
                {
                  apiGroups: ['dns.zonekeeper.dev'],
                  apiVersions: ['*'],
                  operations: ['UPDATE'],
                  resources: ['dnszones/status'],
                },
              ],
            },
            validations: [{ expression: 'false', message: 'DNSZone status writes are frozen by the test' }],
          },
        },
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingAdmissionPolicyBinding',
          metadata: { name: FREEZE },
          spec: { policyName: FREEZE, validationActions: ['Deny'] },
        },
      ),
    );
    await waitFor(async () => ((await statusWritable()) ? undefined : true), 20_000, 100);
  };
  const thaw = async () => {
    await kube.kubectlOk(['delete', 'validatingadmissionpolicybinding', FREEZE]);
    await waitFor(async () => ((await statusWritable()) ? true : undefined), 20_000, 100);
  };
  const startOperator = async (identity: string) => {
    const p = await startOperatorProcess(identity, kube.kubeconfigFor(OPERATOR), SYSTEM);
    operators.push(p);
    return p;
  };
  const retire = (p: KubeProcess) => {
    operators.splice(operators.indexOf(p), 1);
    retired.push(p);
  };

  before(async () => {
    if (skip) return;
    [kube, pdns] = await Promise.all([startKube({ users: [OPERATOR] }), startPowerDns({ storage: 'lmdb' })]);
    // The chart's RBAC (and its namespace): the operators below run as its service account.
    await kube.kubectlOk([
      'apply',
      '-k',
      path.join(ROOT, 'deploy/manifests'),
      '--server-side',
      '--force-conflicts',
    ]);
    await kube.kubectlOk(['create', 'namespace', TEAM]);
    process.env[KEY_ENV] = pdns.apiKey;
    observer = new PowerDnsObserver(pdns);
    await apply(
      yamlDocs(
        {
          apiVersion: API,
          kind: 'DNSZoneClass',
          metadata: { name: 'pdns' },
          spec: {
            backend: { powerdns: { url: pdns.apiUrl, apiKeySecretRef: { env: KEY_ENV } } },
            nameServers: ['ns1.example.org.', 'ns2.example.org.'],
          },
        },
        {
          apiVersion: API,
          kind: 'DNSZone',
          metadata: { name: 'example-org', namespace: TEAM },
          spec: { domainName: 'example.org', className: 'pdns' },
        },
        www('192.0.2.1'),
      ),
    );
  });

  after(async () => {
    await observer?.stop();
    await Promise.all(operators.map((p) => p.stop().catch(() => {})));
    if (process.env.KUBE_E2E_LOGS) {
      const { mkdir, writeFile } = await import('node:fs/promises');
      await mkdir(process.env.KUBE_E2E_LOGS, { recursive: true });
      for (const p of [...operators, ...retired])
        await writeFile(path.join(process.env.KUBE_E2E_LOGS, `${p.name}-${p.pid}.log`), p.log());
    }
    await pdns?.stop();
    await kube?.stop();
  });

  test('killed between the PowerDNS apply and the status write: the next operator serves changes above every serial applied', {
    skip: skip ?? false,
  }, async () => {
    const a = await startOperator('operator-a');
    const first = await settled('192.0.2.1');

    // The change reaches PowerDNS, its status write cannot: the operator dies in between.
    await freeze();
    await apply(yamlDocs(www('192.0.2.2')));
    const applied = await observer.until('192.0.2.2');
    assert.ok(applied.serial > first.serial, `${applied.serial} > ${first.serial}`);
    assert.equal((await zoneStatus())?.serial, first.serial, 'the status write was refused');
    await a.kill();
    retire(a);

    // The zone changes while no operator runs; then a new operator takes over (the same pod identity,
    // so it holds the lease at once) and a further change follows.
    await apply(yamlDocs(www('192.0.2.3')));
    await thaw();
    const b = await startOperator('operator-a');
    const taken = await settled('192.0.2.3');
    await apply(yamlDocs(www('192.0.2.4')));
    const next = await settled('192.0.2.4');

    assert.deepEqual(observer.violations, [], observer.violations.join('\n\n'));
    assert.ok(
      taken.serial > applied.serial,
      `the new leader's ${taken.serial} > ${applied.serial} applied before`,
    );
    assert.ok(next.serial > taken.serial, `${next.serial} > ${taken.serial}`);
    assert.ok(!b.exited());
  });

  test('a graceful handover keeps the serial of unchanged content; the next change continues just above it', {
    skip: skip ?? false,
  }, async () => {
    const [leader] = operators;
    assert.ok(leader, 'an operator from the test before leads');
    const before = await settled('192.0.2.4');
    await leader.stop(); // SIGTERM: reconciles drained, serial state saved, lease released
    retire(leader);
    const c = await startOperator('operator-c');
    // The new leader has reconciled the zone once it reports a successful DNSZone reconcile.
    await waitFor(
      async () => {
        const metrics = await (await fetch(`${c.httpUrl}/metrics`)).text();
        return /zonekeeper_reconcile_total\{kind="DNSZone",result="success"\} [1-9]/.test(metrics)
          ? true
          : undefined;
      },
      20_000,
      100,
    );
    assert.equal((await settled('192.0.2.4')).serial, before.serial, 'unchanged content keeps its serial');
    await apply(yamlDocs(www('192.0.2.5')));
    const changed = await settled('192.0.2.5');
    assert.equal(changed.serial, before.serial + 1, 'no serials skipped after a graceful handover');
    assert.deepEqual(observer.violations, [], observer.violations.join('\n\n'));
    // The serial record: one ConfigMap for the origin, in the operator's namespace, at or above every
    // serial PowerDNS showed.
    const records = JSON.parse(
      await kube.kubectlOk([
        'get',
        'configmaps',
        '-n',
        SYSTEM,
        '-l',
        'dns.zonekeeper.dev/zone-serial',
        '-o',
        'json',
      ]),
    ) as { items: { data: { origin: string; serial: string; writer?: string } }[] };
    assert.equal(records.items.length, 1);
    const [record] = records.items;
    assert.equal(record?.data.origin, ORIGIN);
    assert.ok(Number(record?.data.serial) >= Math.max(...observer.order), JSON.stringify(record?.data));
    assert.equal(record?.data.writer, 'operator-c');
  });
});
