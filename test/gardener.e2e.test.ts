/**
 * Gardener's DNSRecord through the real programs: `zonekeeper serve --manifests` reading the upstream
 * example (its DNSRecord document unchanged) and Zonekeeper-typed records, answered by dig; records of
 * other provider types left alone; shoot namespaces admitted by a namespace pattern and a lookalike
 * refused; migrate and restore keep answering; `zonekeeper validate` on the upstream example.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dig, rdataOf } from './support/dig.ts';
import {
  CLI,
  ROOT,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const UPSTREAM = path.join(ROOT, 'test/support/gardener-upstream/dnsrecord-example.yaml');

const CLASS = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata:
  name: builtin
spec:
  backend:
    builtin: {}
  nameServers: [ns1.my-fancy-domain.com., ns2.my-fancy-domain.com.]
`;
// The zone lives in "dns"; Gardener's shoot namespaces are admitted by a pattern; "default" (where the
// upstream example lives) by name.
const ZONE = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata:
  name: fancy
  namespace: dns
spec:
  domainName: my-fancy-domain.com
  className: builtin
  delegations:
    - namespaces: [default]
      namespacePatterns: ["shoot--*"]
`;

function record(
  namespace: string,
  name: string,
  fqdn: string,
  values: string[],
  annotation?: string,
): string {
  return `apiVersion: extensions.gardener.cloud/v1alpha1
kind: DNSRecord
metadata:
  name: ${name}
  namespace: ${namespace}
${annotation ? `  annotations:\n    gardener.cloud/operation: ${annotation}\n` : ''}spec:
  type: zonekeeper
  secretRef:
    name: ${name}
    namespace: ${namespace}
  name: ${fqdn}
  recordType: A
  values: [${values.join(', ')}]
`;
}

/** The upstream example's DNSRecord document, unchanged (Zonekeeper reads no Secrets). */
async function upstreamDnsRecord(): Promise<string> {
  const docs = (await readFile(UPSTREAM, 'utf8')).split(/^---$/m);
  const found = docs.find((d) => /^kind: DNSRecord$/m.test(d));
  assert.ok(found);
  return found;
}

interface Item {
  kind: string;
  metadata: { name: string; namespace?: string; finalizers?: string[]; annotations?: Record<string, string> };
  status?: { zone?: string; lastOperation?: { type: string; state: string } };
}

describe('Gardener DNSRecord through zonekeeper serve', () => {
  let dir: string;
  let state: string;
  let serve: ServeProcess;
  const items = async (): Promise<Item[]> =>
    ((await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as { items: Item[] }).items.filter(
      (i) => i.kind === 'DNSRecord',
    );
  const item = async (ns: string, name: string) =>
    (await items()).find((i) => i.metadata.namespace === ns && i.metadata.name === name);

  before(async () => {
    dir = await tempDir('gardener-manifests');
    state = await tempDir('gardener-state');
    await writeFile(path.join(dir, 'class.yaml'), CLASS);
    await writeFile(path.join(dir, 'zone.yaml'), ZONE);
    await writeFile(path.join(dir, 'upstream.yaml'), await upstreamDnsRecord());
    await writeFile(
      path.join(dir, 'shoot.yaml'),
      record('shoot--foo--bar', 'internal', 'api.internal.bar.foo.my-fancy-domain.com', ['192.0.2.10']),
    );
    // Hostile: a namespace that looks like a shoot namespace but is not one.
    await writeFile(
      path.join(dir, 'lookalike.yaml'),
      record('xshoot--foo--bar', 'grab', 'www.my-fancy-domain.com', ['198.51.100.1']),
    );
    serve = await startServe(dir, state, ['--gardener-types', 'zonekeeper']);
  });

  after(async () => {
    await serve?.stop();
    await removeAll(dir, state);
  });

  test('zonekeeper-typed records answer; the upstream aws-route53 example is left alone', async () => {
    const api = await dig(serve.dnsPort, 'api.internal.bar.foo.my-fancy-domain.com', 'A');
    assert.deepEqual(rdataOf(api, 'A'), ['192.0.2.10']);
    assert.match(
      api.answer.find((r) => /\sA\s/.test(r)) ?? '',
      /\s120\s+IN\s+A\s/,
      'the contract default TTL',
    );
    const upstream = await dig(serve.dnsPort, 'api.bar.foo.my-fancy-domain.com', 'A');
    assert.equal(upstream.status, 'NXDOMAIN');
    const example = await item('default', 'dnsrecord-external');
    assert.equal(example?.status, undefined, 'no status on another provider type');
    assert.equal(example?.metadata.finalizers, undefined);
    const shoot = await item('shoot--foo--bar', 'internal');
    assert.equal(shoot?.status?.zone, 'dns/fancy');
    assert.equal(shoot?.status?.lastOperation?.state, 'Succeeded');
  });

  test('hostile tenant: a lookalike of the shoot namespace pattern is refused', async () => {
    assert.equal((await dig(serve.dnsPort, 'www.my-fancy-domain.com', 'A')).status, 'NXDOMAIN');
    const grab = await item('xshoot--foo--bar', 'grab');
    assert.equal(grab?.status?.lastOperation?.state, 'Error');
  });

  test('migrate then restore: dig answers throughout', async () => {
    const name = 'api.internal.bar.foo.my-fancy-domain.com';
    const answers = async () => rdataOf(await dig(serve.dnsPort, name, 'A'), 'A');
    await writeFile(
      path.join(dir, 'shoot.yaml'),
      record('shoot--foo--bar', 'internal', name, ['192.0.2.10'], 'migrate'),
    );
    await waitFor(async () => {
      assert.deepEqual(await answers(), ['192.0.2.10']);
      const o = await item('shoot--foo--bar', 'internal');
      return o?.status?.lastOperation?.type === 'Migrate' && o.status.lastOperation.state === 'Succeeded'
        ? true
        : undefined;
    });
    assert.deepEqual((await item('shoot--foo--bar', 'internal'))?.metadata.finalizers ?? [], []);
    await writeFile(
      path.join(dir, 'shoot.yaml'),
      record('shoot--foo--bar', 'internal', name, ['192.0.2.10'], 'restore'),
    );
    await waitFor(async () => {
      assert.deepEqual(await answers(), ['192.0.2.10']);
      const o = await item('shoot--foo--bar', 'internal');
      return o?.status?.lastOperation?.type === 'Restore' && o.status.lastOperation.state === 'Succeeded'
        ? true
        : undefined;
    });
    assert.deepEqual(await answers(), ['192.0.2.10']);
  });
});

describe('Gardener DNSRecord through zonekeeper validate and crds', () => {
  test('validate accepts the upstream DNSRecord unchanged and refuses a bad one', async () => {
    const dir = await tempDir('gardener-validate');
    try {
      await writeFile(path.join(dir, 'class.yaml'), CLASS);
      await writeFile(path.join(dir, 'zone.yaml'), ZONE);
      await writeFile(path.join(dir, 'upstream.yaml'), await upstreamDnsRecord());
      const ok = await run(process.execPath, [CLI, 'validate', '--gardener-types', 'aws-route53', dir]);
      assert.match(ok.stdout, /0 error/);
      await writeFile(
        path.join(dir, 'bad.yaml'),
        record('shoot--a--b', 'bad', 'x.my-fancy-domain.com', ['not-an-address']),
      );
      const bad = await run(process.execPath, [CLI, 'validate', dir]).catch(
        (e: { code: number; stdout: string }) => e,
      );
      assert.match(
        bad.stdout,
        /DNSRecord shoot--a--b\/bad spec\.values\[0\]: DNSRecord: "not-an-address" is not an IPv4/,
      );
    } finally {
      await removeAll(dir);
    }
  });

  test('crds writes the DNSRecord CRD with the upstream names', async () => {
    const { stdout } = await run(process.execPath, [CLI, 'crds']);
    assert.match(stdout, /name: dnsrecords\.extensions\.gardener\.cloud/);
    for (const field of ['secretRef:', 'recordType:', 'values:', 'lastOperation:', 'lastError:'])
      assert.ok(stdout.includes(field), field);
  });
});
