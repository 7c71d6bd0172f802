import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { connectionKey, shareConnections } from './connections.ts';
import { KubeApi } from './kube-api.ts';

describe('a connection pool is kept while what it was built from is the same', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'zk-conn-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const configWith = (ca: string) => {
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', caFile: ca }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return config;
  };

  test('the same files give the same key; a file rewritten in place (same size) or replaced gives another', () => {
    const ca = path.join(dir, 'ca.crt');
    writeFileSync(ca, 'AAAA');
    const config = configWith(ca);
    const first = connectionKey(config);
    assert.equal(connectionKey(config), first);
    // Rewritten in place with as many bytes: the pool must change with the bytes.
    writeFileSync(ca, 'BBBB');
    const second = connectionKey(config);
    assert.notEqual(second, first);
    assert.equal(connectionKey(config), second);
    // Replaced by a rename, as a kubelet's projected volume does.
    writeFileSync(path.join(dir, 'next'), 'CCCC');
    renameSync(path.join(dir, 'next'), ca);
    const third = connectionKey(config);
    assert.notEqual(third, second);
    // The same bytes as the first: the same pool as the first (the key is of the bytes).
    writeFileSync(ca, 'AAAA');
    assert.equal(connectionKey(config), first);
    // Gone, then back.
    rmSync(ca);
    const gone = connectionKey(config);
    assert.notEqual(gone, first);
    writeFileSync(ca, 'AAAA');
    assert.equal(connectionKey(config), first);
  });

  test('a key kept for files older than 2 s is made again when one is rewritten in place', async () => {
    const ca = path.join(dir, 'ca3.crt');
    writeFileSync(ca, 'AAAA');
    const config = configWith(ca);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const first = connectionKey(config);
    assert.equal(connectionKey(config), first); // kept
    writeFileSync(ca, 'BBBB');
    assert.notEqual(connectionKey(config), first);
  });

  test('a setting changed on the configuration gives another key', () => {
    const ca = path.join(dir, 'ca2.crt');
    writeFileSync(ca, 'AAAA');
    const config = configWith(ca);
    const first = connectionKey(config);
    (config.clusters[0] as { server: string }).server = 'https://127.0.0.1:7443';
    assert.notEqual(connectionKey(config), first);
  });
});

describe('a request the API server never answers is given up', () => {
  test('a read and a status write reject after the request timeout (not a watch)', {
    timeout: 10_000,
  }, async () => {
    // Accepts every request and never answers it: a connection that died without a reset.
    const server = createServer(() => {});
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const config = new KubeConfig();
      config.loadFromOptions({
        clusters: [
          {
            name: 'c',
            server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
            skipTLSVerify: true,
          },
        ],
        users: [{ name: 'u', token: 't' }],
        contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
        currentContext: 'x',
      });
      const api = new KubeApi(shareConnections(config, 200));
      await assert.rejects(api.get('DNSZone', 'team', 'absent'), /abort|timeout/i);
      await assert.rejects(
        api.replaceStatus('DNSZoneClass', {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin', resourceVersion: '1' },
          status: {},
        }),
        /abort|timeout/i,
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
