/**
 * A watch survives a busy operator. kube-apiserver ends a watch whose client does not take its events
 * as fast as they come (it buffers a few per watcher, then closes the watcher: the
 * `apiserver_terminated_watchers_total` metric); the client then has to watch again from its last
 * resourceVersion, and when that is no longer in the API server's window, list everything again. The
 * operator's reconciles and writes run on the thread that used to read its watches, so during a
 * first start on 10,000 record sets its DNSRecordSet watch was closed by the API server every few
 * seconds (docs/benchmarks.md, "Kubernetes, 100,000 record sets"). Watches are read on a thread of
 * their own now: here the main thread is held (a synchronous wait) while another thread creates
 * record sets, and the watch must come through it without being restarted. Counts, no timings.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { KubeApi, loadKubeConfig } from '../src/sources/kubernetes/kube-api.ts';
import { type KubeObject, Reflector } from '../src/sources/kubernetes/reflector.ts';
import { type KubeCluster, startKube } from './support/kube.ts';

const RECORD_SETS = 600;

/** Creates record sets over HTTPS from its own thread; `done[0]` becomes 1 when it has finished. */
const CREATOR = `
const https = require('node:https');
const { workerData } = require('node:worker_threads');
const { server, token, ca, count, done } = workerData;
const flag = new Int32Array(done);
const padding = 'x'.repeat(8000); // a large object: the API server's buffers fill sooner
const create = (i) => new Promise((resolve, reject) => {
  const body = JSON.stringify({
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSRecordSet',
    metadata: { name: 'r' + i, namespace: 'team', annotations: { padding } },
    spec: { zoneRef: { name: 'example' }, name: 'h' + i, type: 'A', records: ['10.0.0.1'] },
  });
  const req = https.request(server + '/apis/dns.zonekeeper.dev/v1alpha1/namespaces/team/dnsrecordsets', {
    method: 'POST', ca, headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
  }, (res) => {
    res.resume();
    res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error('HTTP ' + res.statusCode))));
  });
  req.on('error', reject);
  req.end(body);
});
let next = 0;
const worker = async () => { while (next < count) await create(next++); };
Promise.all(Array.from({ length: 8 }, worker)).then(
  () => { Atomics.store(flag, 0, 1); Atomics.notify(flag, 0); },
  (e) => { Atomics.store(flag, 0, 2); Atomics.notify(flag, 0); console.error(e); },
);
`;

describe('Kubernetes watch while the main thread is busy', { timeout: 300_000 }, () => {
  let kube: KubeCluster;

  before(async () => {
    kube = await startKube();
    await kube.kubectlOk(['create', 'namespace', 'team']);
  });
  after(async () => {
    await kube?.stop();
  });

  test('a watch is not restarted while the main thread is held, and misses nothing', async () => {
    const api = new KubeApi(loadKubeConfig(kube.adminKubeconfig));
    const seen = new Set<string>();
    const counts = { list: 0, watch: 0 };
    const reflector = new Reflector({
      name: 'dnsrecordsets',
      listerWatcher: api.listerWatcher('DNSRecordSet'),
      onReplace: (items: KubeObject[]) => {
        for (const item of items) seen.add(item.metadata?.name ?? '');
      },
      onEvent: (type, object) => {
        if (type !== 'DELETED') seen.add(object.metadata?.name ?? '');
      },
      onMetric: (what) => {
        if (what === 'list' || what === 'watch') counts[what]++;
      },
    });
    reflector.start();
    await reflector.synced;
    // The watch is running once an object created now arrives on it.
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: first, namespace: team}
spec: {zoneRef: {name: example}, name: first, type: A, records: [10.0.0.1]}
`,
    });
    while (!seen.has('first')) await new Promise((r) => setTimeout(r, 50));

    const token = /^\s+token: (\S+)$/m.exec(await readFile(kube.adminKubeconfig, 'utf8'))?.[1];
    assert.ok(token);
    const done = new SharedArrayBuffer(4);
    const creator = new Worker(CREATOR, {
      eval: true,
      workerData: {
        server: kube.server,
        token,
        ca: await readFile(path.join(kube.dir, 'pki', 'ca.crt'), 'utf8'),
        count: RECORD_SETS,
        done,
      },
    });
    try {
      // Hold the main thread (as a long reconcile would) until every record set was created.
      const flag = new Int32Array(done);
      while (Atomics.load(flag, 0) === 0) Atomics.wait(flag, 0, 0, 1000);
      assert.equal(Atomics.load(flag, 0), 1, 'the record sets were created');
      // Then every one of them arrives, on the watch that was running all along.
      while (seen.size < RECORD_SETS + 1) await new Promise((r) => setTimeout(r, 50));
      assert.equal(counts.watch, 1, `the watch was started ${counts.watch} times`);
      assert.equal(counts.list, 1, `the kind was listed ${counts.list} times`);
    } finally {
      await creator.terminate();
      await reflector.stop();
    }
  });
});
