/**
 * The domain controller's own rules, with look-ups answered in memory: status written only when it
 * changed, the retry schedule picked by how long Verified has been False (so a new leader continues
 * it), a change of the Domain probed at once, and the older claim across namespaces.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Domain } from '../api/index.ts';
import { parseRetrySchedule } from '../zones/domain-verification.ts';
import { DomainController, type DomainProbe } from './domain-controller.ts';
import { MemoryStore } from './memory-store.ts';

class Answers implements DomainProbe {
  txtValues = new Map<string, string[]>();
  calls = 0;
  async txt(name: string): Promise<string[]> {
    this.calls++;
    return this.txtValues.get(name) ?? [];
  }
  async delegation(): Promise<string[]> {
    return [];
  }
  async http(_url: string, _domain: string, _token: string): ReturnType<DomainProbe['http']> {
    return { passed: false, reason: 'WrongStatus', message: 'answered 404' };
  }
}

function domain(namespace: string, created: string): Domain {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'Domain',
    metadata: { name: 'example-com', namespace, creationTimestamp: created },
    spec: { domainName: 'example.com' },
  };
}

describe('DomainController', () => {
  test('writes status only when it changed; probes again on the schedule, not on its own writes', async () => {
    const store = new MemoryStore();
    let writes = 0;
    const update = store.updateStatus.bind(store);
    store.updateStatus = async (...args) => {
      writes++;
      return update(...args);
    };
    const probe = new Answers();
    const controller = new DomainController({ store, probe, schedule: parseRetrySchedule('1h') });
    controller.start();
    store.apply(domain('team-a', '2026-01-01T00:00:00Z'), '2026-01-01T00:00:00Z');
    await controller.idle();
    assert.equal(writes, 1);
    assert.equal(probe.calls, 1, 'its own status write did not cause another probe');
    const d = store.get('Domain', 'team-a/example-com') as Domain;
    assert.equal(d.status?.conditions?.find((c) => c.type === 'Verified')?.status, 'False');
    // A label is no reason to probe again; a new generation is, and is written (observedGeneration).
    store.apply({ ...d, metadata: { ...d.metadata, labels: { x: 'y' } } });
    await controller.idle();
    assert.equal(probe.calls, 1);
    assert.equal(writes, 1);
    store.apply({ ...d, spec: { ...d.spec, className: 'other' } });
    await controller.idle();
    assert.equal(probe.calls, 2);
    assert.equal(writes, 2);
    assert.equal((store.get('Domain', 'team-a/example-com') as Domain).status?.observedGeneration, 2);
    controller.stop();
  });

  test('the schedule continues from when Verified turned False (a new leader does not start over)', async () => {
    const store = new MemoryStore();
    const probe = new Answers();
    const now = new Date('2026-11-26T12:00:00Z');
    const requeues: number[] = [];
    const controller = new DomainController({
      store,
      probe,
      now: () => now,
      random: () => 0.5,
      schedule: parseRetrySchedule('5s/5m,1m/15m,5m'),
    });
    // Not verified for 10 minutes already: the second step (every minute).
    store.apply(domain('team-a', '2026-01-01T00:00:00Z'), '2026-01-01T00:00:00Z');
    await store.updateStatus('Domain', 'team-a/example-com', {
      conditions: [
        {
          type: 'Verified',
          status: 'False',
          reason: 'NotVerified',
          message: 'x',
          lastTransitionTime: '2026-11-26T11:50:00Z',
        },
      ],
    });
    const queue = (controller as unknown as { queue: { addAfter: (k: string, ms: number) => void } }).queue;
    const addAfter = queue.addAfter.bind(queue);
    queue.addAfter = (k, ms) => {
      requeues.push(ms);
      addAfter(k, ms);
    };
    controller.start();
    await controller.idle();
    assert.ok(requeues.length > 0);
    assert.deepEqual(new Set(requeues), new Set([60_000]), 'every minute, the second step');
    controller.stop();
  });

  test('a name verified in one namespace is not verified in another; when both are, the older claim wins', async () => {
    const store = new MemoryStore();
    const probe = new Answers();
    const controller = new DomainController({ store, probe, schedule: parseRetrySchedule('20ms') });
    controller.start();
    store.apply(domain('team-a', '2026-01-01T00:00:00Z'), '2026-01-01T00:00:00Z');
    store.apply(domain('team-b', '2026-01-02T00:00:00Z'), '2026-01-02T00:00:00Z');
    await controller.idle();
    const token = (ns: string) =>
      (store.get('Domain', `${ns}/example-com`) as Domain).status!.verification!.dnsRecord!.content;
    const condition = (ns: string, type: string) =>
      (store.get('Domain', `${ns}/example-com`) as Domain).status?.conditions?.find((c) => c.type === type);
    const until = async (check: () => boolean) => {
      for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(check());
    };
    // The newer claim proves control first and holds the name; the older one then cannot take it.
    probe.txtValues.set('_zonekeeper-challenge.example.com', [token('team-b')]);
    await until(() => condition('team-b', 'Verified')?.status === 'True');
    probe.txtValues.set('_zonekeeper-challenge.example.com', [token('team-b'), token('team-a')]);
    await until(() => condition('team-a', 'VerifiedDNS')?.status === 'True');
    await until(() => condition('team-a', 'Verified')?.reason === 'ClaimedByOtherNamespace');
    assert.match(condition('team-a', 'Verified')!.message, /namespace team-b/);
    assert.equal(condition('team-b', 'Verified')?.status, 'True');
    // Both verified at once (two reconciles that raced): the older claim wins.
    const both = (ns: string) =>
      store.updateStatus('Domain', `${ns}/example-com`, {
        ...(store.get('Domain', `${ns}/example-com`) as Domain).status,
        conditions: [
          {
            type: 'Verified',
            status: 'True',
            reason: 'Verified',
            message: 'x',
            observedGeneration: 1,
            lastTransitionTime: '2026-11-26T00:00:00Z',
          },
        ],
      });
    await both('team-a');
    await both('team-b');
    await until(() => condition('team-b', 'Verified')?.reason === 'ClaimedByOtherNamespace');
    assert.equal(condition('team-a', 'Verified')?.status, 'True');
    controller.stop();
  });

  test('a check that never ends holds no verifier slot past its deadline: other Domains still verify', async () => {
    const store = new MemoryStore();
    const probe = new Answers();
    // The HTTP challenge of these Domains never answers (a server that trickles, a look-up that hangs).
    const slowHttp: DomainProbe['http'] = (url) =>
      url.includes('slow')
        ? new Promise<never>(() => {})
        : Promise.resolve({ passed: false, reason: 'WrongStatus', message: 'answered 404' });
    probe.http = slowHttp;
    const controller = new DomainController({
      store,
      probe,
      schedule: parseRetrySchedule('50ms'),
      checkDeadlineMs: 200,
    });
    const named = (namespace: string, domainName: string): Domain => ({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'Domain',
      metadata: {
        name: domainName.replace(/\./g, '-'),
        namespace,
        creationTimestamp: '2026-01-01T00:00:00Z',
      },
      spec: { domainName },
    });
    // As many as there are verifier slots, and more.
    for (let i = 0; i < 6; i++) store.apply(named('team-slow', `slow${i}.example.com`));
    controller.start();
    try {
      await new Promise((r) => setTimeout(r, 50));
      store.apply(named('team-a', 'fast.example.com'));
      const fast = () => store.get('Domain', 'team-a/fast-example-com') as Domain | undefined;
      const token = await until(() => fast()?.status?.verification?.dnsRecord?.content);
      probe.txtValues.set('_zonekeeper-challenge.fast.example.com', [token]);
      await until(() =>
        fast()?.status?.conditions?.find((c) => c.type === 'Verified' && c.status === 'True'),
      );
      const slow = store.get('Domain', 'team-slow/slow0-example-com') as Domain;
      const http = slow.status?.conditions?.find((c) => c.type === 'VerifiedHTTP');
      assert.equal(http?.reason, 'RequestFailed');
      assert.match(http?.message ?? '', /CHECK_DEADLINE_EXCEEDED/);
    } finally {
      controller.stop();
    }
  });
});

/** Polls until `get` gives a value (at most 10 s). */
async function until<T>(get: () => T | undefined): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = get();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('timed out waiting');
}
