/**
 * boundedList against an upstream API server that does not play by the rules: a small HTTP server on
 * loopback speaking the list protocol badly on purpose (a peer that is not trusted, not a stand-in
 * for a component of Zonekeeper). The suite test/multicluster-hostile-upstream.test.ts covers the
 * byte limits against a real downstream.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { boundedList, MAX_LIST_RESTARTS } from './upstream-http.ts';

const ZONES = { group: 'dns.zonekeeper.dev', version: 'v1alpha1', plural: 'dnszones' };

test('a list whose every continuation answers 410 starts again a few times, then fails (no endless re-reading)', async () => {
  let requests = 0;
  // Past this many requests the upstream gives in (so that a list without a bound ends too).
  const givesInAfter = 40;
  const server = http.createServer((req, res) => {
    requests++;
    const url = new URL(req.url ?? '/', 'http://upstream');
    res.setHeader('content-type', 'application/json');
    if (url.searchParams.has('continue') && requests < givesInAfter) {
      res.writeHead(410);
      res.end(JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired', message: 'continue expired' }));
      return;
    }
    const item = { metadata: { name: `z${requests}`, namespace: 'team', resourceVersion: '7' }, spec: {} };
    res.writeHead(200);
    res.end(
      JSON.stringify({
        kind: 'List',
        metadata: { resourceVersion: '7', ...(url.searchParams.has('continue') ? {} : { continue: 'next' }) },
        items: [item],
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const config = new KubeConfig();
    config.loadFromString(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'up',
            cluster: {
              server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
              'insecure-skip-tls-verify': true,
            },
          },
        ],
        users: [{ name: 'u', user: {} }],
        contexts: [{ name: 'c', context: { cluster: 'up', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    await assert.rejects(
      boundedList(config, ZONES, { maxObjects: 100, maxResponseBytes: 1 << 20, maxBytes: 1 << 24 }),
      (e: unknown) => (e as { status?: number }).status === 410,
    );
    // Each start: the first page and the continuation refused.
    assert.equal(requests, 2 * (MAX_LIST_RESTARTS + 1));
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
