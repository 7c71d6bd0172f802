/**
 * The durable domain claims of `operator --upstream-clusters` (ClaimStore, ADR 0023) on a real
 * kube-apiserver: two writers at once (a leader handing over), a restart, release to the next
 * claimant, a record edited by hand; and the upstream list that stops at the object limit.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { CLAIM_LABEL, ClaimStore } from '../src/sources/multicluster/claim-store.ts';
import { claimObjectName, ownerOf } from '../src/sources/multicluster/claims.ts';
import { DownstreamApi } from '../src/sources/multicluster/downstream-api.ts';
import { boundedList } from '../src/sources/multicluster/upstream-http.ts';
import { type KubeCluster, startKube } from './support/kube.ts';

const NS = 'zonekeeper-system';

describe('multicluster claims on kube-apiserver', { timeout: 300_000 }, () => {
  let kube: KubeCluster;
  let api: DownstreamApi;
  let config: KubeConfig;
  before(async () => {
    kube = await startKube();
    await kube.kubectlOk(['create', 'namespace', NS]);
    config = new KubeConfig();
    config.loadFromFile(kube.adminKubeconfig);
    api = new DownstreamApi(config);
  });
  after(async () => kube?.stop());

  test('two writers claiming at once agree on one owner; both claimants are recorded', async () => {
    const a = new ClaimStore(api, NS, () => new Date('2026-01-01T00:00:01Z'));
    const b = new ClaimStore(api, NS, () => new Date('2026-01-01T00:00:02Z'));
    await Promise.all([a.load(), b.load()]);
    const [ra, rb] = await Promise.all([a.claim('race.example', 'x'), b.claim('race.example', 'y')]);
    // Whichever wrote second read the first's record and added itself.
    const final = ra.claimants.length === 2 ? ra : rb;
    assert.equal(final.claimants.length, 2);
    const fresh = new ClaimStore(api, NS);
    await fresh.load();
    assert.deepEqual(fresh.get('race.example'), final);
    assert.equal(ownerOf(fresh.get('race.example'))?.cluster, ownerOf(final)?.cluster);
  });

  test('the first observed claim survives a restart; a release hands the domain to the next', async () => {
    let clock = new Date('2026-02-01T00:00:00Z');
    const first = new ClaimStore(api, NS, () => clock);
    await first.load();
    await first.claim('handover.example', 'early');
    clock = new Date('2026-02-01T00:01:00Z');
    await first.claim('handover.example', 'late');
    // A new leader reads the same times: observing 'late' again does not make it older.
    const second = new ClaimStore(api, NS, () => new Date('2020-01-01T00:00:00Z'));
    await second.load();
    await second.claim('handover.example', 'late');
    assert.equal(second.owner('handover.example'), 'early');
    // The first store's copy is stale now; its release re-reads and still removes only its claimant.
    await first.release('handover.example', 'early');
    const third = new ClaimStore(api, NS);
    await third.load();
    assert.equal(third.owner('handover.example'), 'late');
    await third.release('handover.example', 'late');
    assert.equal(
      await api.readConfigMap(NS, claimObjectName('handover.example')),
      undefined,
      'no claimant: deleted',
    );
  });

  test('a claim record edited by hand is refused with a code, not overwritten', async () => {
    await kube.kubectlOk([
      'create',
      'configmap',
      claimObjectName('edited.example'),
      '-n',
      NS,
      '--from-literal=domain=someone-else.example',
    ]);
    await kube.kubectlOk([
      'label',
      'configmap',
      claimObjectName('edited.example'),
      '-n',
      NS,
      `${CLAIM_LABEL}=true`,
    ]);
    const store = new ClaimStore(api, NS);
    await store.load();
    await assert.rejects(store.claim('edited.example', 'x'), /CLAIM_RECORD_INVALID/);
    const kept = await api.readConfigMap(NS, claimObjectName('edited.example'));
    assert.equal(kept?.data.domain, 'someone-else.example');
  });

  test('an upstream list stops at the object limit: the rest is counted, not read', async () => {
    await kube.kubectlOk(['create', 'namespace', 'many']);
    const zones = Array.from({ length: 30 }, (_, i) => ({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSZone',
      metadata: { name: `z${i}`, namespace: 'many' },
      spec: { domainName: `z${i}.example`, className: 'c' },
    }));
    await kube.kubectlOk(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: zones }),
    });
    const zonesOf = { group: 'dns.zonekeeper.dev', version: 'v1alpha1', plural: 'dnszones' };
    const limits = { maxResponseBytes: 1 << 20, maxBytes: 1 << 24 };
    const cut = await boundedList(config, zonesOf, { ...limits, maxObjects: 12 });
    assert.equal(cut.items.length, 12);
    assert.equal(cut.left, 18);
    assert.equal(cut.limited, 'objects');
    assert.ok(cut.resourceVersion);
    const all = await boundedList(config, zonesOf, { ...limits, maxObjects: 1000 });
    assert.equal(all.items.length, 30);
    assert.equal(all.left, 0);
    assert.equal(all.limited, undefined);
    // Small pages (a page over the response limit is asked for again, smaller) within a byte budget
    // for the whole list: it stops there, what was read is kept.
    const bytes = JSON.stringify(all.items[0]).length;
    const tight = await boundedList(config, zonesOf, {
      maxObjects: 1000,
      maxResponseBytes: bytes * 4,
      maxBytes: bytes * 10,
    });
    assert.equal(tight.limited, 'bytes');
    assert.ok(tight.items.length >= 1 && tight.items.length < 30, `${tight.items.length} read`);
    assert.ok(tight.left >= 1);
  });
});
