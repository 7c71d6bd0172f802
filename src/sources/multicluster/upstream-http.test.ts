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
import { boundedList, MAX_LIST_RESTARTS, maxListPages } from './upstream-http.ts';

const ZONES = { group: 'dns.zonekeeper.dev', version: 'v1alpha1', plural: 'dnszones' };

/** A loopback upstream answering every request with `answer`; its kubeconfig, and how to stop it. */
async function upstream(answer: http.RequestListener) {
  const server = http.createServer(answer);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
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
  return {
    config,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

test('a list whose every continuation answers 410 starts again a few times, then fails (no endless re-reading)', async () => {
  let requests = 0;
  // Past this many requests the upstream gives in (so that a list without a bound ends too).
  const givesInAfter = 40;
  const up = await upstream((req, res) => {
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
  try {
    await assert.rejects(
      boundedList(up.config, ZONES, { maxObjects: 100, maxResponseBytes: 1 << 20, maxBytes: 1 << 24 }),
      (e: unknown) => (e as { status?: number }).status === 410,
    );
    // Each start: the first page and the continuation refused.
    assert.equal(requests, 2 * (MAX_LIST_RESTARTS + 1));
  } finally {
    await up.close();
  }
});

test('a list of empty pages that always continue fails after a bounded number of pages (not only the byte budget)', async () => {
  let requests = 0;
  // Past this many requests the upstream gives in (so that a list without a bound ends too).
  const givesInAfter = 5000;
  const up = await upstream((_req, res) => {
    requests++;
    res.setHeader('content-type', 'application/json');
    res.writeHead(200);
    res.end(
      JSON.stringify({
        kind: 'List',
        metadata: { resourceVersion: '7', ...(requests < givesInAfter ? { continue: `c${requests}` } : {}) },
        items: [],
      }),
    );
  });
  try {
    const limits = { maxObjects: 100, maxResponseBytes: 1 << 20, maxBytes: 1 << 27 };
    await assert.rejects(
      boundedList(up.config, ZONES, limits),
      (e: unknown) => (e as { code?: string }).code === 'UPSTREAM_LIST_TOO_MANY_PAGES',
    );
    assert.equal(requests, maxListPages(limits.maxObjects, limits.maxObjects));
    assert.ok(requests < givesInAfter);
  } finally {
    await up.close();
  }
});

test('an honest list of many pages under the page cap is read whole', async () => {
  // 300 objects, 10 per page whatever the limit asked (a server may send fewer than asked).
  let requests = 0;
  const up = await upstream((req, res) => {
    requests++;
    const url = new URL(req.url ?? '/', 'http://upstream');
    const from = Number(url.searchParams.get('continue') ?? '0');
    const items = Array.from({ length: 10 }, (_, i) => ({
      metadata: { name: `z${from + i}`, namespace: 'team', resourceVersion: '7' },
      spec: {},
    }));
    res.setHeader('content-type', 'application/json');
    res.writeHead(200);
    res.end(
      JSON.stringify({
        kind: 'List',
        metadata: { resourceVersion: '7', ...(from + 10 < 300 ? { continue: String(from + 10) } : {}) },
        items,
      }),
    );
  });
  try {
    const result = await boundedList(up.config, ZONES, {
      maxObjects: 1000,
      maxResponseBytes: 1 << 20,
      maxBytes: 1 << 24,
    });
    assert.equal(result.items.length, 300);
    assert.equal(result.limited, undefined);
    assert.equal(requests, 30);
  } finally {
    await up.close();
  }
});
