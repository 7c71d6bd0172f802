import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { MemoryStore } from '../../control/memory-store.ts';
import { Registry } from '../../metrics/registry.ts';
import { folderSource } from './cluster-source.ts';
import { DownstreamApi } from './downstream-api.ts';
import { Replicator, zoneCopyVerdict } from './replicator.ts';

test('a replica that leads a second time starts a second replicator on the same metrics registry', () => {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const registry = new Registry();
  const options = {
    source: folderSource('/nonexistent'),
    store: new MemoryStore(),
    api: new DownstreamApi(config),
    namespace: 'zonekeeper-system',
    registry,
    log: () => {},
    identity: 'test',
  };
  new Replicator(options);
  assert.doesNotThrow(() => new Replicator(options));
  assert.match(
    registry.render(),
    /# TYPE zonekeeper_upstream_removals_pending gauge\nzonekeeper_upstream_removals_pending 0/,
  );
});

test('a zone copy counts for a domain claim only when accepted for its generation and not waiting for its Domain', () => {
  const copy = (generation: number, conditions: object[]) => ({
    metadata: { generation },
    status: { conditions },
  });
  const c = (type: string, status: string, reason: string, observedGeneration: number) => ({
    type,
    status,
    reason,
    message: '',
    lastTransitionTime: 't',
    observedGeneration,
  });
  assert.equal(zoneCopyVerdict({ metadata: { generation: 1 } }), 'pending');
  assert.equal(zoneCopyVerdict(copy(2, [c('Accepted', 'True', 'Accepted', 1)])), 'pending', 'stale');
  assert.equal(zoneCopyVerdict(copy(2, [c('Accepted', 'True', 'Accepted', 2)])), 'accepted');
  assert.equal(zoneCopyVerdict(copy(2, [c('Accepted', 'False', 'ClassNotFound', 2)])), 'refused');
  assert.equal(
    zoneCopyVerdict(
      copy(2, [c('Accepted', 'True', 'Accepted', 2), c('Programmed', 'False', 'DomainNotVerified', 2)]),
    ),
    'refused',
  );
});
