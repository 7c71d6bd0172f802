/**
 * An upstream API server that does not play by the rules, against `operator --upstream-clusters`'s
 * reading of it. The hostile upstream is a small HTTP server here that speaks the Kubernetes
 * list/watch protocol badly on purpose (ignores `limit`, sends a list page or a watch event of any
 * size): a peer that is not trusted, not a stand-in for a component of Zonekeeper. The downstream is a
 * real kube-apiserver.
 *
 * What must hold: a list keeps no more objects than asked for and stops reading a response past its
 * byte limit (the connection is closed, not read to its end); a watch event longer than the limit
 * ends the watch; objects over the limit are neither mirrored nor reconciled (no downstream call for
 * them), and the limit shows in the metrics.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { MemoryStore } from '../src/control/memory-store.ts';
import { Registry } from '../src/metrics/registry.ts';
import { DownstreamApi } from '../src/sources/multicluster/downstream-api.ts';
import type { MirroredKind } from '../src/sources/multicluster/mapping.ts';
import { Replicator } from '../src/sources/multicluster/replicator.ts';
import {
  boundedList,
  boundedWatch,
  ResponseTooLargeError,
} from '../src/sources/multicluster/upstream-http.ts';
import { type KubeCluster, startKube } from './support/kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const GROUP_PATH = '/apis/dns.zonekeeper.dev/v1alpha1/';
const ZONES = { group: 'dns.zonekeeper.dev', version: 'v1alpha1', plural: 'dnszones' };
const MiB = 1024 * 1024;

type Mode =
  | { list: 'ignore-limit'; items: number }
  | { list: 'huge'; bytes: number }
  | { watch: 'huge-event'; bytes: number }
  | { list: 'quiet' };

interface Seen {
  method: string;
  path: string;
}

/** The hostile upstream: per plural, how it answers. */
class HostileUpstream {
  server!: http.Server;
  modes = new Map<string, Mode>();
  requests: Seen[] = [];
  /** Bytes written of the last streamed response, and whether the client closed it before the end. */
  written = 0;
  closedEarly = false;

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  kubeconfig(): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      // Plain HTTP on loopback: the client allows it only with skip-tls-verify.
      clusters: [{ name: 'hostile', cluster: { server: this.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: {} }],
      contexts: [{ name: 'c', context: { cluster: 'hostile', user: 'u' } }],
      'current-context': 'c',
    });
  }

  config(): KubeConfig {
    const config = new KubeConfig();
    config.loadFromString(this.kubeconfig());
    return config;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', this.url);
    this.requests.push({ method: req.method ?? '', path: url.pathname });
    if (req.method !== 'GET' || !url.pathname.startsWith(GROUP_PATH)) {
      // Writes (finalizers, status, Events): refused, as an upstream that lets nothing be written.
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'not here' }));
      return;
    }
    const plural = url.pathname.slice(GROUP_PATH.length);
    const mode = this.modes.get(plural) ?? { list: 'quiet' };
    const watching = url.searchParams.get('watch') === 'true';
    res.writeHead(200, { 'content-type': 'application/json' });
    if (watching) {
      if ('watch' in mode)
        this.stream(res, '{"type":"ADDED","object":{"metadata":{"name":"', 'x', mode.bytes, '"}}}\n');
      // Otherwise a watch that sends nothing and stays open.
      return;
    }
    if ('list' in mode && mode.list === 'ignore-limit') {
      const items = Array.from({ length: mode.items }, (_, i) => item(plural, i));
      res.end(JSON.stringify({ kind: 'List', metadata: { resourceVersion: '7' }, items }));
      return;
    }
    if ('list' in mode && mode.list === 'huge') {
      const one = `${JSON.stringify(item(plural, 0))},`;
      this.stream(
        res,
        '{"kind":"List","metadata":{"resourceVersion":"7"},"items":[',
        one,
        mode.bytes,
        '{}]}',
      );
      return;
    }
    res.end(JSON.stringify({ kind: 'List', metadata: { resourceVersion: '7' }, items: [] }));
  }

  /** Writes head, then `unit` until `bytes` are written (as fast as the client reads), then tail. */
  private stream(res: http.ServerResponse, head: string, unit: string, bytes: number, tail: string): void {
    this.written = 0;
    this.closedEarly = false;
    const chunk = Buffer.from(unit.repeat(Math.max(1, Math.floor(65536 / unit.length))));
    let finished = false;
    res.on('close', () => {
      if (!finished) this.closedEarly = true;
    });
    res.write(head);
    const pump = () => {
      while (this.written < bytes) {
        this.written += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      finished = true;
      res.end(tail);
    };
    pump();
  }
}

function item(plural: string, i: number) {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: plural === 'dnsrecordsets' ? 'DNSRecordSet' : 'DNSZone',
    metadata: { name: `o${i}`, namespace: 'team', uid: `uid-${i}`, resourceVersion: '7', generation: 1 },
    spec:
      plural === 'dnsrecordsets'
        ? { zoneRef: { name: 'z' }, name: `n${i}`, type: 'A', records: ['192.0.2.1'] }
        : { domainName: `d${i}.example`, className: 'c' },
  };
}

describe('multicluster: a hostile upstream API server', { timeout: 300_000 }, () => {
  let hostile: HostileUpstream;
  let kube: KubeCluster;

  before(async () => {
    hostile = new HostileUpstream();
    await hostile.start();
    kube = await startKube();
    await kube.kubectlOk(['create', 'namespace', 'zonekeeper-system']);
  });
  after(async () => {
    await hostile?.stop();
    await kube?.stop();
  });

  test('a list page that ignores limit: no more objects are kept than were asked for', async () => {
    hostile.modes.set('dnszones', { list: 'ignore-limit', items: 3000 });
    const r = await boundedList(hostile.config(), ZONES, {
      maxObjects: 100,
      maxResponseBytes: 16 * MiB,
      maxBytes: 64 * MiB,
    });
    assert.equal(r.items.length, 100);
    assert.equal(r.left, 2900);
    assert.equal(r.limited, 'objects');
  });

  test('a list page of any size is not read past the byte limit: the connection is closed', async () => {
    hostile.modes.set('dnszones', { list: 'huge', bytes: 256 * MiB });
    const r = await boundedList(hostile.config(), ZONES, {
      maxObjects: 20_000,
      maxResponseBytes: MiB,
      maxBytes: 8 * MiB,
    });
    assert.equal(r.limited, 'bytes');
    assert.equal(r.items.length, 0);
    assert.ok(r.left >= 1);
    await waitFor(async () => (hostile.closedEarly ? true : undefined), 10_000, 20);
    assert.ok(hostile.written < 64 * MiB, `${hostile.written} bytes were sent before the close`);
  });

  test('a watch event of any size ends the watch at the byte limit', async () => {
    hostile.modes.set('dnszones', { watch: 'huge-event', bytes: 256 * MiB });
    const ended = new Promise<unknown>((resolve) => {
      void boundedWatch(
        hostile.config(),
        ZONES,
        MiB,
        '7',
        60,
        () => resolve(new Error('an event was delivered')),
        (error) => resolve(error),
      );
    });
    const error = await ended;
    assert.ok(error instanceof ResponseTooLargeError, String(error));
    assert.equal((error as ResponseTooLargeError).code, 'UPSTREAM_RESPONSE_TOO_LARGE');
    await waitFor(async () => (hostile.closedEarly ? true : undefined), 10_000, 20);
    assert.ok(hostile.written < 64 * MiB, `${hostile.written} bytes were sent before the close`);
  });

  test('objects over the limit are not reconciled (no downstream call) and the limit is in the metrics', async () => {
    hostile.modes.set('dnszones', { list: 'quiet' });
    hostile.modes.set('domains', { list: 'quiet' });
    hostile.modes.set('dnsrecordsets', { list: 'ignore-limit', items: 10 });
    const config = new KubeConfig();
    config.loadFromFile(kube.adminKubeconfig);
    const gets: string[] = [];
    class CountingApi extends DownstreamApi {
      override get(kind: MirroredKind, namespace: string, name: string) {
        gets.push(`${kind} ${namespace}/${name}`);
        return super.get(kind, namespace, name);
      }
    }
    const registry = new Registry();
    const replicator = new Replicator({
      source: {
        describe: 'test',
        read: async () => ({ clusters: new Map([['hostile', hostile.kubeconfig()]]), skipped: [] }),
      },
      store: new MemoryStore(),
      api: new CountingApi(config),
      namespace: 'zonekeeper-system',
      registry,
      log: () => {},
      identity: 'test',
      maxObjectsPerCluster: 3,
      resyncIntervalMs: 3_600_000,
      pollIntervalMs: 3_600_000,
    });
    hostile.requests = [];
    await replicator.start();
    try {
      // The three kept are reconciled: each asks the upstream for its finalizer (refused here).
      const { value: cluster } = await waitFor(
        async () => {
          const c = replicator.clusterList[0];
          const patches = hostile.requests.filter((r) => r.method === 'PATCH').length;
          return c?.hasSynced && patches >= 3 && c.queue.length === 0 ? c : undefined;
        },
        60_000,
        50,
      );
      const patched = hostile.requests.filter((r) => r.method === 'PATCH').map((r) => r.path);
      assert.equal(new Set(patched).size, 3, patched.join(', '));
      assert.equal(cluster.cache.get('DNSRecordSet')!.size, 3);
      assert.deepEqual(gets, [], 'no downstream call for objects that are not kept');
      const metrics = registry.render();
      assert.match(
        metrics,
        /zonekeeper_upstream_objects_dropped\{cluster="hostile",kind="DNSRecordSet"\} 7\n/,
      );
      assert.match(
        metrics,
        /zonekeeper_upstream_limit_reached\{cluster="hostile",kind="DNSRecordSet",limit="objects"\} 1\n/,
      );
      assert.match(metrics, /zonekeeper_upstream_bytes\{cluster="hostile"\} [1-9]/);
    } finally {
      await replicator.stop();
    }
  });
});
