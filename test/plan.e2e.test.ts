/**
 * `zonekeeper plan` as a process: golden text and JSON, and the exit codes (0 nothing changes, 2
 * something does, 1 an error or a refused resource) in folder mode against the state folder of a real
 * `zonekeeper serve`, and in cluster mode against a real kube-apiserver.
 *
 * Serials depend on the day: the golden files show them as <DATE> (today's YYYYMMDD00), <S> (the
 * serial serve published) and <S+1>. Set UPDATE_GOLDEN=1 to rewrite the golden files.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dateSerial } from '../src/zones/serial.ts';
import { type KubeCluster, startKube } from './support/kube.ts';
import { axfr } from './support/zone-content.ts';
import { CLI, removeAll, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const GOLDEN = path.join(import.meta.dirname, 'golden');

const CLASS = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata:
  name: builtin
spec:
  backend:
    builtin: {}
  nameServers: [ns1.plan.test., ns2.plan.test.]
  defaults:
    ttl: 300
    soa:
      rname: hostmaster@plan.test
  transfers:
    allowFrom: [127.0.0.1/32]
    requireTsig: false
`;
const ZONE = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: plan-test, namespace: dns }
spec:
  domainName: plan.test
  className: builtin
`;
function recordSet(name: string, owner: string, type: string, records: string[], ttl?: number): string {
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: ${name}, namespace: dns }
spec:
  zoneRef: { name: plan-test }
  name: "${owner}"
  type: ${type}
${ttl !== undefined ? `  ttl: ${ttl}\n` : ''}  records: ${JSON.stringify(records)}
`;
}

async function plan(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'plan', ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

/** Serials as placeholders, and the temporary folder as DIR. */
function normalize(text: string, dir: string, served?: number): string {
  let out = text.replaceAll(dir, 'DIR');
  if (served !== undefined) {
    out = out.replaceAll(String(served + 1), '<S+1>').replaceAll(String(served), '<S>');
  }
  return out.replaceAll(String(dateSerial(new Date())), '<DATE>');
}

async function golden(name: string, actual: string): Promise<void> {
  const file = path.join(GOLDEN, name);
  if (process.env.UPDATE_GOLDEN === '1') await writeFile(file, actual);
  assert.equal(actual, await readFile(file, 'utf8'), `golden file test/golden/${name}`);
}

describe('plan in folder mode', () => {
  let dir: string;
  let state: string;
  let served: number;
  before(async () => {
    dir = await tempDir('plan-manifests');
    state = await tempDir('plan-state');
    await writeFile(path.join(dir, 'class.yaml'), CLASS);
    await writeFile(path.join(dir, 'zone.yaml'), ZONE);
    await writeFile(path.join(dir, 'www.yaml'), recordSet('www', 'www', 'A', ['192.0.2.1']));
    await writeFile(path.join(dir, 'mx.yaml'), recordSet('mx', '@', 'MX', ['10 mail.plan.test.']));
    await writeFile(path.join(dir, 'old.yaml'), recordSet('old', 'old', 'TXT', ['"retired"']));
  });
  after(async () => {
    await removeAll(dir, state);
  });

  test('without a state folder everything is added (exit 2)', async () => {
    const r = await plan(['--manifests', dir]);
    assert.equal(r.code, 2, r.stderr);
    await golden('plan-create.txt', normalize(r.stdout, dir));
  });

  test('against what serve serves: no changes (exit 0)', async () => {
    const serve = await startServe(dir, state);
    try {
      const { value } = await waitFor(() => axfr(serve.dnsPort, 'plan.test.'), 20_000, 100);
      served = value.serial;
    } finally {
      await serve.stop();
    }
    const r = await plan(['--manifests', dir, '--state-dir', state]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(
      normalize(r.stdout, dir, served),
      'zone plan.test. (DNSZone dns/plan-test): no changes, serial <S>\n' +
        'Plan: 0 zone(s) to create, 0 to update, 0 to delete, 1 unchanged; 0 RRset(s) to add, 0 to change, 0 to delete; 0 error(s), 0 warning(s).\n',
    );
  });

  test('adds, changes and deletes (exit 2), as text and as JSON', async () => {
    await writeFile(
      path.join(dir, 'www.yaml'),
      recordSet('www', 'www', 'A', ['192.0.2.1', '192.0.2.2'], 600),
    );
    await writeFile(path.join(dir, 'new.yaml'), recordSet('new', 'new', 'AAAA', ['2001:db8::1']));
    await rm(path.join(dir, 'old.yaml'));
    const text = await plan(['--manifests', dir, '--state-dir', state]);
    assert.equal(text.code, 2, text.stderr);
    await golden('plan-update.txt', normalize(text.stdout, dir, served));
    const json = await plan(['--manifests', dir, '--state-dir', state, '--output', 'json']);
    assert.equal(json.code, 2, json.stderr);
    await golden('plan-update.json.txt', normalize(json.stdout, dir, served));
    const parsed = JSON.parse(json.stdout) as { exitCode: number; zones: { serial: { before: number } }[] };
    assert.equal(parsed.exitCode, 2);
    assert.equal(parsed.zones[0]!.serial.before, served);
  });

  test('a resource that would be refused: exit 1, with the problem', async () => {
    await writeFile(path.join(dir, 'bad.yaml'), recordSet('bad', 'bad', 'A', ['not-an-address']));
    try {
      const r = await plan(['--manifests', dir, '--state-dir', state]);
      assert.equal(r.code, 1, r.stdout);
      await golden('plan-invalid.txt', normalize(r.stdout, dir, served));
      const json = await plan(['--manifests', dir, '--state-dir', state, '--output', 'json']);
      assert.equal(json.code, 1);
      const parsed = JSON.parse(json.stdout) as {
        exitCode: number;
        problems: { severity: string; code: string }[];
      };
      assert.equal(parsed.exitCode, 1);
      assert.deepEqual(
        parsed.problems.map((p) => [p.severity, p.code]),
        [['error', 'INVALID_RDATA']],
      );
    } finally {
      await rm(path.join(dir, 'bad.yaml'));
    }
  });

  test('a zone removed from the folder is deleted (exit 2)', async () => {
    const emptied = await tempDir('plan-emptied');
    try {
      await writeFile(path.join(emptied, 'class.yaml'), CLASS);
      const r = await plan(['--manifests', emptied, '--state-dir', state]);
      assert.equal(r.code, 2, r.stderr);
      await golden('plan-delete.txt', normalize(r.stdout, emptied, served));
    } finally {
      await removeAll(emptied);
    }
  });

  test('errors exit 1: a missing folder, a bad flag', async () => {
    const missing = await plan(['--manifests', path.join(dir, 'nope')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^error: --manifests .*nope: ENOENT/);
    const flag = await plan(['--manifests', dir, '--output', 'yaml']);
    assert.equal(flag.code, 1);
    assert.match(flag.stderr, /--output "yaml": give text or json/);
    const both = await plan(['--manifests', dir, '--state-dir', state, '--kubeconfig', '/dev/null']);
    assert.equal(both.code, 1);
  });
});

describe('plan says which changes would be held', () => {
  /** A zone big.test with record sets h1..h12: 13 RRsets with the apex NS (the SOA not counted). */
  const hosts = Array.from({ length: 12 }, (_, i) => i + 1);
  function host(i: number, address: string): string {
    return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: big-h${i}, namespace: dns }
spec: { zoneRef: { name: big }, name: h${i}, type: A, records: ["${address}"] }
`;
  }
  const BIG = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: big, namespace: dns }
spec: { domainName: big.test, className: builtin }
`;
  let dir: string;
  let state: string;
  let next: string;
  before(async () => {
    dir = await tempDir('plan-hold');
    state = await tempDir('plan-hold-state');
    next = await tempDir('plan-hold-next');
    await writeFile(path.join(dir, 'class.yaml'), CLASS);
    await writeFile(path.join(dir, 'zone.yaml'), BIG);
    for (const i of hosts) await writeFile(path.join(dir, `h${i}.yaml`), host(i, `192.0.2.${i}`));
  });
  after(async () => {
    await removeAll(dir, state, next);
  });

  test('a change over the limits is reported with the hash serve would hold it under', async () => {
    const serve = await startServe(dir, state);
    try {
      const { value } = await waitFor(() => axfr(serve.dnsPort, 'big.test.'), 20_000, 100);
      const served = value.serial;
      // The next version of the folder, beside the served one: 6 of the zone's 13 RRsets changed (46 %
      // > 30 %), which the controller holds. Record sets are changed, not removed, so the folder's own
      // threshold (objects removed) is not involved.
      await cp(dir, next, { recursive: true });
      for (const i of hosts.slice(0, 6))
        await writeFile(path.join(next, `h${i}.yaml`), host(i, `198.51.100.${i}`));
      const text = await plan(['--manifests', next, '--state-dir', state]);
      assert.equal(text.code, 2, text.stdout + text.stderr); // a hold is a change to review, not an error
      const line =
        /^ {2}! would be held: change ([0-9a-f]{32}) deletes 0 and changes 6 of the zone's 13 RRsets \(limits 30% and 30%\);.*zonekeeper confirm --state-dir DIR dns\/big \1/m.exec(
          text.stdout,
        );
      assert.ok(line, text.stdout);
      const hash = line[1]!;
      assert.match(text.stdout, /; 1 zone\(s\) would be held for confirmation\.$/m);
      const json = await plan(['--manifests', next, '--state-dir', state, '--output', 'json']);
      assert.equal(json.code, 2, json.stderr);
      const doc = JSON.parse(json.stdout) as { zones: { origin: string; hold: unknown }[] };
      assert.deepEqual(doc.zones.find((z) => z.origin === 'big.test.')?.hold, {
        held: true,
        hash,
        total: 13,
        deleted: 0,
        changed: 6,
        maxDeletePercent: 30,
        maxUpdatePercent: 30,
      });
      assert.equal(
        doc.zones.find((z) => z.origin === 'plan.test.'),
        undefined,
      );

      // Confirmed ahead of time with that hash: the plan says it would apply ...
      await run(process.execPath, [CLI, 'confirm', '--state-dir', state, 'dns/big', hash]);
      const confirmed = await plan(['--manifests', next, '--state-dir', state, '--output', 'json']);
      const cdoc = JSON.parse(confirmed.stdout) as { zones: { origin: string; hold: { held: boolean } }[] };
      assert.equal(cdoc.zones.find((z) => z.origin === 'big.test.')?.hold.held, false);
      // ... and serve, given the same change, applies it without holding: the plan's hash is the
      // one serve computes (a different hash would leave the change held and this wait would fail).
      await cp(next, dir, { recursive: true });
      await waitFor(async () => {
        const now = await axfr(serve.dnsPort, 'big.test.');
        return now && now.serial !== served && now.content.includes('198.51.100.6') ? now : undefined;
      }, 20_000);
    } finally {
      await serve.stop();
    }
  });

  test('under the limits, or opted out: no hold', async () => {
    await rm(path.join(state, 'confirmations'), { recursive: true, force: true });
    for (const i of hosts.slice(0, 3))
      await writeFile(path.join(next, `h${i}.yaml`), host(i, `203.0.113.${i}`));
    const small = await plan(['--manifests', next, '--state-dir', state, '--output', 'json']);
    assert.equal(small.code, 2, small.stderr);
    const sdoc = JSON.parse(small.stdout) as { zones: { origin: string; hold: unknown }[] };
    assert.equal(sdoc.zones.find((z) => z.origin === 'big.test.')?.hold, null); // 3 of 13: 23 %
    for (const i of hosts) await writeFile(path.join(next, `h${i}.yaml`), host(i, `203.0.113.${i}`));
    const large = await plan(['--manifests', next, '--state-dir', state]);
    assert.match(large.stdout, /! would be held: .* changes 12 of the zone's 13 RRsets/);
    await writeFile(
      path.join(next, 'zone.yaml'),
      BIG.replace('className: builtin', 'className: builtin, changeSafety: { enabled: false }'),
    );
    const off = await plan(['--manifests', next, '--state-dir', state]);
    assert.equal(off.code, 2, off.stderr);
    assert.doesNotMatch(off.stdout, /would be held/);
  });
});

describe('plan in cluster mode', () => {
  let kube: KubeCluster;
  let dir: string;
  before(async () => {
    kube = await startKube({ crds: true });
    await kube.kubectlOk(['create', 'namespace', 'dns']);
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: [
        CLASS,
        ZONE,
        recordSet('www', 'www', 'A', ['192.0.2.1']),
        recordSet('old', 'old', 'TXT', ['"retired"']),
      ].join('---\n'),
    });
    dir = await tempDir('plan-overlay');
  });
  after(async () => {
    await kube?.stop();
    if (dir) await removeAll(dir);
  });

  test('the folder overlaid on the cluster: changes (exit 2), then none (exit 0)', async () => {
    // The folder changes one record set; the others stay as the cluster has them.
    await writeFile(path.join(dir, 'www.yaml'), recordSet('www', 'www', 'A', ['192.0.2.9']));
    const r = await plan(['--manifests', dir, '--kubeconfig', kube.adminKubeconfig]);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(
      normalize(r.stdout, dir),
      [
        'zone plan.test. (DNSZone dns/plan-test): to update, serial unknown → <DATE>',
        '  ~ www.plan.test. A',
        '      - www.plan.test. 300 A 192.0.2.1',
        '      + www.plan.test. 300 A 192.0.2.9',
        'Plan: 0 zone(s) to create, 1 to update, 0 to delete, 0 unchanged; 0 RRset(s) to add, 1 to change, 0 to delete; 0 error(s), 0 warning(s).',
        '',
      ].join('\n'),
    );
    // The same record set as the cluster holds: nothing changes.
    await writeFile(path.join(dir, 'www.yaml'), recordSet('www', 'www', 'A', ['192.0.2.1']));
    const same = await plan(['--manifests', dir, '--kubeconfig', kube.adminKubeconfig]);
    assert.equal(same.code, 0, same.stdout + same.stderr);
    // A change the API server would refuse (a DNSZone's domain is immutable) is an error: exit 1.
    await writeFile(path.join(dir, 'zone.yaml'), ZONE.replace('plan.test', 'other.test'));
    const refused = await plan(['--manifests', dir, '--kubeconfig', kube.adminKubeconfig]);
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(refused.stdout, /^error: .*DNSZone dns\/plan-test.*domainName/m);
  });

  test("a Domain's verification is the cluster's: a folder holding the Domain keeps its zone served", async () => {
    const gated = await tempDir('plan-gated');
    const domain = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: Domain
metadata: { name: gated-test, namespace: dns }
spec: { domainName: gated.test }
`;
    try {
      await kube.kubectlOk(['apply', '-f', '-'], {
        input: [
          `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: gated }
spec: { backend: { builtin: {} }, nameServers: [ns1.plan.test.], requireVerifiedDomain: true }
`,
          `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: gated-test, namespace: dns }
spec: { domainName: gated.test, className: gated }
`,
          domain,
        ].join('---\n'),
      });
      await kube.kubectlOk([
        'patch',
        'domain',
        '-n',
        'dns',
        'gated-test',
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({
          status: {
            conditions: [
              {
                type: 'Verified',
                status: 'True',
                reason: 'Verified',
                message: 'verified through VerifiedDNS',
                observedGeneration: 1,
                lastTransitionTime: '2026-11-26T00:00:00Z',
              },
            ],
          },
        }),
      ]);
      await writeFile(path.join(gated, 'domain.yaml'), domain);
      const r = await plan(['--manifests', gated, '--kubeconfig', kube.adminKubeconfig]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.doesNotMatch(r.stdout, /gated\.test.*to delete/);
    } finally {
      await removeAll(gated);
    }
  });
});
