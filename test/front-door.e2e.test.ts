/**
 * A front door through the real programs: `zonekeeper serve` reading a foreign kind (the test-only
 * `example.test/v1 Hostname`, loaded with --front-door) from a manifests folder, answered by dig;
 * `zonekeeper validate` reporting its problems; `zonekeeper crds` generating its CRD.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
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
const DOOR = path.join(ROOT, 'test/support/hostname-front-door.ts');

const CLASS = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata:
  name: builtin
spec:
  backend:
    builtin: {}
  nameServers: [ns1.example.com., ns2.example.com.]
`;
const ZONE = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata:
  name: example-com
  namespace: dns
spec:
  domainName: example.com
  className: builtin
  delegations:
    - namespaces: [team-b]
      names: ["*.apps"]
`;
function hostnameYaml(namespace: string, name: string, host: string, addresses: string[]): string {
  return `apiVersion: example.test/v1
kind: Hostname
metadata:
  name: ${name}
  namespace: ${namespace}
spec:
  hostname: ${host}
  addresses: [${addresses.join(', ')}]
`;
}

describe('front door through zonekeeper serve', () => {
  let dir: string;
  let state: string;
  let serve: ServeProcess;

  before(async () => {
    dir = await tempDir('frontdoor-manifests');
    state = await tempDir('frontdoor-state');
    await writeFile(path.join(dir, 'class.yaml'), CLASS);
    await writeFile(path.join(dir, 'zone.yaml'), ZONE);
    await writeFile(
      path.join(dir, 'www-a.yaml'),
      hostnameYaml('dns', 'www-a', 'www.example.com', ['192.0.2.1']),
    );
    await writeFile(
      path.join(dir, 'www-b.yaml'),
      hostnameYaml('dns', 'www-b', 'www.example.com', ['192.0.2.2']),
    );
    // Hostile: team-b outside its delegation, and team-b trying to join dns's RRset.
    await writeFile(
      path.join(dir, 'team-b.yaml'),
      `${hostnameYaml('team-b', 'grab', 'mail.example.com', ['198.51.100.1'])}---\n${hostnameYaml('team-b', 'join', 'www.example.com', ['198.51.100.2'])}---\n${hostnameYaml('team-b', 'app', 'x.apps.example.com', ['198.51.100.3'])}`,
    );
    serve = await startServe(dir, state, ['--front-door', DOOR]);
  });

  after(async () => {
    await serve?.stop();
    await removeAll(dir, state);
  });

  test('merged objects answer as one RRset; delegations and namespaces hold', async () => {
    const www = await dig(serve.dnsPort, 'www.example.com', 'A');
    assert.equal(www.status, 'NOERROR');
    assert.deepEqual(rdataOf(www, 'A').sort(), ['192.0.2.1', '192.0.2.2']);
    const app = await dig(serve.dnsPort, 'x.apps.example.com', 'A');
    assert.deepEqual(rdataOf(app, 'A'), ['198.51.100.3']);
    const mail = await dig(serve.dnsPort, 'mail.example.com', 'A');
    assert.equal(mail.status, 'NXDOMAIN');
  });

  test('status is the foreign object own, in its shape; no native objects appear', async () => {
    const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
      items: {
        kind: string;
        metadata: { name: string; namespace?: string; finalizers?: string[] };
        status?: { mergedWith?: string[]; conditions?: { type: string; status: string; reason: string }[] };
      }[];
    };
    const byName = new Map(
      body.items
        .filter((i) => i.kind === 'Hostname')
        .map((i) => [`${i.metadata.namespace}/${i.metadata.name}`, i]),
    );
    const published = (key: string) =>
      byName.get(key)?.status?.conditions?.find((c) => c.type === 'Published');
    assert.equal(published('dns/www-a')?.status, 'True');
    assert.deepEqual(byName.get('dns/www-a')?.status?.mergedWith, ['dns/www-a', 'dns/www-b']);
    assert.deepEqual(byName.get('dns/www-a')?.metadata.finalizers, ['example.test/hostname']);
    assert.equal(published('team-b/grab')?.reason, 'NotDelegated');
    assert.equal(published('team-b/join')?.reason, 'NotDelegated');
    assert.equal(published('team-b/app')?.status, 'True');
    assert.equal(body.items.filter((i) => i.kind === 'DNSRecordSet').length, 0);
  });

  test('a manifest made invalid shows in the object status at once; made valid again, it clears', async () => {
    const hostnames = async () =>
      (
        (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
          items: {
            kind: string;
            metadata: { name: string; namespace?: string };
            status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
          }[];
        }
      ).items.filter((i) => i.kind === 'Hostname');
    const published = async (name: string) =>
      (await hostnames())
        .find((i) => i.metadata.namespace === 'dns' && i.metadata.name === name)
        ?.status?.conditions?.find((c) => c.type === 'Published');
    const valid = hostnameYaml('dns', 'www-b', 'www.example.com', ['192.0.2.2']);
    // Against the door's own rule: an IPv6 address. Nothing else changes in the folder or the store.
    await writeFile(
      path.join(dir, 'www-b.yaml'),
      hostnameYaml('dns', 'www-b', 'www.example.com', ['2001:db8::2']),
    );
    const { value: rejected } = await waitFor(async () => {
      const c = await published('www-b');
      return c?.status === 'False' ? c : undefined;
    });
    assert.equal(rejected.reason, 'Rejected');
    assert.match(rejected.message, /not an IPv4 address/);
    // The last valid version is still served.
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'www.example.com', 'A'), 'A').sort(), [
      '192.0.2.1',
      '192.0.2.2',
    ]);
    // Back to exactly the version served: no new generation, and the problem goes at once.
    await writeFile(path.join(dir, 'www-b.yaml'), valid);
    await waitFor(async () => ((await published('www-b'))?.status === 'True' ? true : undefined));
  });

  test('removing a manifest takes its records out of the merged RRset', async () => {
    await rm(path.join(dir, 'www-a.yaml'));
    await waitFor(async () => {
      const r = await dig(serve.dnsPort, 'www.example.com', 'A');
      const a = rdataOf(r, 'A');
      return a.length === 1 && a[0] === '192.0.2.2' ? true : undefined;
    });
  });
});

describe('front door through zonekeeper validate and crds', () => {
  test('validate reports the door own problems and the tenancy rules, on the foreign objects', async () => {
    const dir = await tempDir('frontdoor-validate');
    try {
      await writeFile(path.join(dir, 'class.yaml'), CLASS);
      await writeFile(path.join(dir, 'zone.yaml'), ZONE);
      await writeFile(
        path.join(dir, 'bad.yaml'),
        hostnameYaml('dns', 'bad', 'www.example.com', ['2001:db8::1']),
      );
      await writeFile(
        path.join(dir, 'grab.yaml'),
        hostnameYaml('team-b', 'grab', 'mail.example.com', ['198.51.100.1']),
      );
      await writeFile(path.join(dir, 'ok.yaml'), hostnameYaml('dns', 'ok', 'ok.example.com', ['192.0.2.7']));
      const result = await run(process.execPath, [CLI, 'validate', '--front-door', DOOR, dir]).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
      );
      assert.equal(result.code, 1, result.stdout);
      assert.match(
        result.stdout,
        /bad\.yaml:\d+ \(document 1\): Hostname dns\/bad spec\.addresses\[0\]: Hostname: "2001:db8::1" is not an IPv4 address/,
      );
      assert.match(result.stdout, /grab\.yaml.*Hostname team-b\/grab.*not.*delegat/i);
      assert.doesNotMatch(result.stdout, /ok\.yaml/);
      // Without the door the kind is unknown.
      const without = await run(process.execPath, [CLI, 'validate', dir]).catch((e: { stdout: string }) => e);
      assert.match(without.stdout, /"Hostname" is not one of DNSZoneClass, DNSZone, DNSRecordSet/);
    } finally {
      await removeAll(dir);
    }
  });

  test('crds writes the door CRD beside the native ones, which stay byte-identical', async () => {
    const dir = await tempDir('frontdoor-crds');
    try {
      const { stdout } = await run(process.execPath, [CLI, 'crds', '--out', dir, '--front-door', DOOR]);
      assert.match(stdout, /example\.test_hostnames\.yaml/);
      const { readFile } = await import('node:fs/promises');
      for (const file of ['dns.zonekeeper.dev_dnszones.yaml', 'dns.zonekeeper.dev_dnsrecordsets.yaml']) {
        assert.equal(
          await readFile(path.join(dir, file), 'utf8'),
          await readFile(path.join(ROOT, 'deploy/crds', file), 'utf8'),
        );
      }
      assert.match(
        await readFile(path.join(dir, 'example.test_hostnames.yaml'), 'utf8'),
        /group: example\.test/,
      );
    } finally {
      await removeAll(dir);
    }
  });
});
