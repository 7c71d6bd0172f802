/**
 * ExternalDNS's own `rfc2136` provider (the `provider/rfc2136` and `plan` packages of the
 * `sigs.k8s.io/external-dns` Go module, the program test/gotools/externaldns-rfc2136/) applying changes into
 * `zonekeeper serve`: it lists the zone with AXFR and writes with UPDATE, both signed with one TSIG key
 * (`usage: [transfer, update]`), creates, updates and deletes records under the domain it manages, and
 * is refused for a manifest's RRset.
 *
 * The program is built once into ~/.cache/zonekeeper/bin by test/support/go-programs.ts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dig } from './support/dig.ts';
import { goProgram } from './support/go-programs.ts';
import { removeAll, type ServeProcess, startServe, tempDir } from './support/zonekeeper-process.ts';

let BIN = '';
const SECRET = randomBytes(32).toString('base64');

interface Result {
  create: number;
  updateNew: number;
  delete: number;
  records: { name: string; type: string; ttl?: number; targets: string[] }[];
}

function externalDns(
  port: number,
  desired: { name: string; type: string; ttl?: number; targets: string[] }[],
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(BIN, [
      '-port',
      String(port),
      '-zone',
      'example.com', // ExternalDNS matches zones by suffix of names without the trailing dot
      '-domain',
      'k8s.example.com',
      '-key',
      'externaldns-key',
      '-secret',
      SECRET,
    ]);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => resolve({ code: code ?? -1, out, err }));
    child.stdin.end(JSON.stringify(desired));
  });
}

async function answer(port: number, name: string, type: string): Promise<string[]> {
  const r = await dig(port, name, type);
  return r.answer
    .filter((l) => l.split(' ')[3] === type)
    .map((l) => l.split(' ').slice(4).join(' '))
    .sort();
}

describe("ExternalDNS's rfc2136 provider writing into zonekeeper serve", () => {
  let dir: string;
  let stateDir: string;
  let serve: ServeProcess;

  before(async () => {
    BIN = await goProgram('externaldns-rfc2136');
    dir = await tempDir('externaldns-rfc2136');
    stateDir = await tempDir('externaldns-rfc2136-state');
    await writeFile(path.join(dir, 'externaldns.key'), SECRET);
    const manifests = path.join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(
      path.join(manifests, 'zone.yaml'),
      `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.example.com.]
  transfers:
    allowFrom: [127.0.0.1/32]
    tsigKeys:
      - name: externaldns-key
        algorithm: hmac-sha256
        secretRef: { file: ${JSON.stringify(path.join(dir, 'externaldns.key'))} }
        usage: [transfer, update]      # ExternalDNS lists with AXFR and writes with UPDATE, one key
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: example-com, namespace: dns }
spec:
  domainName: example.com
  className: builtin
  updatePolicy:
    - { key: externaldns-key, names: ["*.k8s"], types: [A, AAAA, CNAME, TXT] }
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: manifest, namespace: dns }
spec:
  zoneRef: { name: example-com }
  name: manifest.k8s
  type: A
  records: [192.0.2.99]
`,
    );
    serve = await startServe(manifests, stateDir);
  });

  after(async () => {
    await serve?.stop();
    if (dir) await removeAll(dir, stateDir);
  });

  test('creates, updates and deletes records by AXFR and UPDATE', async () => {
    const manifest = { name: 'manifest.k8s.example.com', type: 'A', targets: ['192.0.2.99'] };
    let r = await externalDns(serve.dnsPort, [
      manifest,
      { name: 'web.k8s.example.com', type: 'A', ttl: 60, targets: ['192.0.2.10', '192.0.2.11'] },
      { name: 'api.k8s.example.com', type: 'CNAME', ttl: 60, targets: ['web.k8s.example.com'] },
      { name: 'web.k8s.example.com', type: 'TXT', ttl: 60, targets: ['owner=test'] },
    ]);
    assert.equal(r.code, 0, `${r.err}\n${serve.log()}`);
    let result = JSON.parse(r.out) as Result;
    assert.equal(result.create, 3);
    assert.deepEqual(await answer(serve.dnsPort, 'web.k8s.example.com.', 'A'), ['192.0.2.10', '192.0.2.11']);
    assert.deepEqual(await answer(serve.dnsPort, 'api.k8s.example.com.', 'CNAME'), ['web.k8s.example.com.']);

    r = await externalDns(serve.dnsPort, [
      manifest,
      { name: 'web.k8s.example.com', type: 'A', ttl: 60, targets: ['192.0.2.12'] },
      { name: 'web.k8s.example.com', type: 'TXT', ttl: 60, targets: ['owner=test'] },
    ]);
    assert.equal(r.code, 0, r.err);
    result = JSON.parse(r.out) as Result;
    assert.equal(result.updateNew, 1, r.out);
    assert.equal(result.delete, 1);
    assert.deepEqual(await answer(serve.dnsPort, 'web.k8s.example.com.', 'A'), ['192.0.2.12']);
    assert.equal((await dig(serve.dnsPort, 'api.k8s.example.com.', 'CNAME')).status, 'NXDOMAIN');
    assert.deepEqual(
      result.records.map((e) => `${e.name} ${e.type} ${e.targets.join(',')}`),
      [
        'manifest.k8s.example.com A 192.0.2.99',
        'web.k8s.example.com A 192.0.2.12',
        'web.k8s.example.com TXT owner=test',
      ],
    );
  });

  test("a manifest's RRset is refused, and stays as it is", async () => {
    const r = await externalDns(serve.dnsPort, [
      { name: 'manifest.k8s.example.com', type: 'A', ttl: 60, targets: ['192.0.2.66'] },
      { name: 'web.k8s.example.com', type: 'A', ttl: 60, targets: ['192.0.2.12'] },
      { name: 'web.k8s.example.com', type: 'TXT', ttl: 60, targets: ['owner=test'] },
    ]);
    // ExternalDNS reports the refused UPDATE as a (soft) error.
    assert.notEqual(r.code, 0, r.out);
    assert.match(r.err, /REFUSED/);
    assert.deepEqual(await answer(serve.dnsPort, 'manifest.k8s.example.com.', 'A'), ['192.0.2.99']);
  });
});
