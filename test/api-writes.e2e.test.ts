/**
 * Record sets written through the record writer, end to end through `zonekeeper serve`: the change is
 * answered by dig, survives a restart, keeps to the delegations and the oldest-wins rule, and a process
 * killed in the middle of requests leaves whole requests only.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { DNSRecordSet } from '../src/api/index.ts';
import { type ServeHandle, startServe } from '../src/cli/serve.ts';
import { MemoryStore } from '../src/control/memory-store.ts';
import { FolderWriteStore } from '../src/sources/writes/folder-write-store.ts';
import type { WriteAccessConfig } from '../src/writes/credentials.ts';
import { WRITTEN_BY_LABEL, WriteError } from '../src/writes/write-request.ts';
import { dig, rdataOf } from './support/dig.ts';
import {
  ROOT,
  removeAll,
  startServe as startServeProcess,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const MANIFESTS = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: {name: builtin}
spec:
  backend: {builtin: {}}
  nameServers: [ns1.example.com.]
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: {name: example, namespace: dns}
spec:
  domainName: example.com
  className: builtin
  delegations:
    - {namespaces: [team-a], names: ['*.a']}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: manifest-m, namespace: team-a}
spec: {name: m.a.example.com., type: A, records: [198.51.100.1]}
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: edge, namespace: dns}
spec: {name: cdn.a.example.com., type: CNAME, records: [edge.example.net.]}
`;

const ACCESS: WriteAccessConfig = {
  credentials: [
    { name: 'key-a', kind: 'api-key', namespace: 'team-a', secretRef: { env: 'KEY_A' } },
    { name: 'key-b', kind: 'api-key', namespace: 'team-b', secretRef: { env: 'KEY_B' } },
  ],
};

describe('API writes through zonekeeper serve', () => {
  const cleanup: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  async function serve(manifests: string, state: string): Promise<ServeHandle> {
    const handle = await startServe({
      manifests,
      stateDir: state,
      dns: '127.0.0.1:0',
      http: '127.0.0.1:0',
      secondaryProbeTimeoutMs: 0,
      writeAccess: ACCESS,
      log: () => {},
    });
    return handle;
  }

  const answers = async (port: number, name: string, type = 'A') =>
    rdataOf(await dig(port, name, type), type);

  test('written, answered by dig, kept over a restart, deleted; manifests and delegations hold', async () => {
    const manifests = await tempDir('manifests');
    const state = await tempDir('state');
    cleanup.push(() => removeAll(manifests, state));
    await writeFile(path.join(manifests, 'zone.yaml'), MANIFESTS);
    let zk = await serve(manifests, state);
    let stopped = false;
    cleanup.push(async () => {
      if (!stopped) await zk.stop();
    });

    // One request, two RRsets: both appear in one zone version.
    await zk.writer.apply('key-a', {
      changes: [
        { op: 'upsert', name: 'www.a.example.com.', type: 'A', records: ['192.0.2.1', '192.0.2.2'], ttl: 60 },
        { op: 'upsert', name: 'www.a.example.com.', type: 'TXT', records: ['"hello"'] },
      ],
    });
    await zk.controller.idle();
    assert.deepEqual((await answers(zk.dns.port, 'www.a.example.com')).sort(), ['192.0.2.1', '192.0.2.2']);
    assert.deepEqual(await answers(zk.dns.port, 'www.a.example.com', 'TXT'), ['"hello"']);

    // The manifest's record set is older: the API's RRset for the same name and type is not served.
    await zk.writer.apply('key-a', {
      changes: [{ op: 'upsert', name: 'm.a.example.com.', type: 'A', records: ['192.0.2.66'] }],
    });
    await zk.controller.idle();
    assert.deepEqual(await answers(zk.dns.port, 'm.a.example.com'), ['198.51.100.1']);

    // Beside the zone namespace's older CNAME: refused at once (RFC 1034 §3.6.2), not stored to lose;
    // the message names no object of that namespace, and the CNAME is served alone.
    await assert.rejects(
      zk.writer.apply('key-a', {
        changes: [{ op: 'upsert', name: 'cdn.a.example.com.', type: 'TXT', records: ['"mine"'] }],
      }),
      (e: unknown) =>
        e instanceof WriteError &&
        e.code === 'NAME_CONFLICT' &&
        /cannot coexist with the CNAME published by a DNSRecordSet of another namespace/.test(e.message) &&
        !/dns\/edge/.test(e.message),
    );
    await zk.controller.idle();
    assert.deepEqual(await answers(zk.dns.port, 'cdn.a.example.com', 'CNAME'), ['edge.example.net.']);
    assert.deepEqual(await answers(zk.dns.port, 'cdn.a.example.com', 'TXT'), []);

    // Outside the namespace's delegations: refused, nothing served.
    await assert.rejects(
      zk.writer.apply('key-b', {
        changes: [{ op: 'upsert', name: 'x.a.example.com.', type: 'A', records: ['192.0.2.9'] }],
      }),
      (e: unknown) => e instanceof WriteError && e.code === 'NOT_DELEGATED',
    );
    assert.equal((await dig(zk.dns.port, 'x.a.example.com', 'A')).status, 'NXDOMAIN');

    // A restart serves what was written.
    await zk.stop();
    stopped = true;
    zk = await serve(manifests, state);
    stopped = false;
    assert.deepEqual((await answers(zk.dns.port, 'www.a.example.com')).sort(), ['192.0.2.1', '192.0.2.2']);
    assert.deepEqual(await answers(zk.dns.port, 'm.a.example.com'), ['198.51.100.1']);

    await zk.writer.apply('key-a', { changes: [{ op: 'delete', name: 'www.a.example.com.', type: 'A' }] });
    await zk.controller.idle();
    const gone = await dig(zk.dns.port, 'www.a.example.com', 'A');
    assert.equal(gone.status, 'NOERROR');
    assert.deepEqual(rdataOf(gone, 'A'), []);
    await zk.stop();
    stopped = true;
  });

  test('a process killed while writing leaves whole requests only, and every acknowledged one', async () => {
    const manifests = await tempDir('manifests');
    const state = await tempDir('state');
    cleanup.push(() => removeAll(manifests, state));
    await writeFile(path.join(manifests, 'zone.yaml'), MANIFESTS);
    for (let round = 0; round < 3; round++) {
      const child = spawn(
        process.execPath,
        [path.join(ROOT, 'test/support/api-write-loop.ts'), manifests, state],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let acked = 0;
      child.stdout!.on('data', (d: Buffer) => {
        for (const m of d.toString().matchAll(/acked (\d+)/g)) acked = Number(m[1]);
      });
      // Kill at a different point of a request each round: after a few acknowledgements.
      await waitFor(async () => (acked >= 5 + round * 7 ? true : undefined), 60_000);
      const ackedAtKill = acked;
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));

      const store = new MemoryStore();
      const writes = await FolderWriteStore.open(state, store);
      await writes.load();
      await writes.close();
      const byRequest = new Map<number, number>();
      for (const o of store.list('DNSRecordSet') as DNSRecordSet[]) {
        assert.equal(o.metadata.labels?.[WRITTEN_BY_LABEL], 'key-a');
        const k = Number(/^r(\d+)-/.exec(o.spec.name)![1]);
        byRequest.set(k, (byRequest.get(k) ?? 0) + 1);
      }
      for (const [k, n] of byRequest)
        assert.equal(n, 10, `round ${round}: request ${k} has ${n} of 10 record sets`);
      for (let k = 1; k <= ackedAtKill; k++)
        assert.ok(byRequest.has(k), `round ${round}: acknowledged request ${k} lost`);
    }
  });

  test('serve --write-access reads the credential file, and refuses to start on a secret written inline', async () => {
    const manifests = await tempDir('manifests');
    const state = await tempDir('state');
    cleanup.push(() => removeAll(manifests, state));
    await writeFile(path.join(manifests, 'zone.yaml'), MANIFESTS);
    const inline = path.join(state, 'inline.yaml');
    await writeFile(
      inline,
      'credentials:\n  - { name: key-a, kind: api-key, namespace: team-a, apiKey: hunter2, secretRef: { env: KEY_A } }\n',
    );
    await assert.rejects(
      startServeProcess(manifests, state, ['--write-access', inline]),
      /--write-access .*credentials\[0\]\.apiKey: a credential never holds its secret inline/,
    );
    const good = path.join(state, 'access.yaml');
    await writeFile(
      good,
      'credentials:\n  - { name: key-a, kind: api-key, namespace: team-a, secretRef: { env: KEY_A } }\n',
    );
    const p = await startServeProcess(manifests, state, ['--write-access', good]);
    await p.stop();
  });
});
