import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { LeaseRecord } from './kube-api.ts';
import { LeaderElector } from './leader-election.ts';

/** A Lease kept in memory, with conditional writes; `hang` makes every later request never answer. */
function leaseApi() {
  let lease: LeaseRecord | undefined;
  let version = 0;
  const state = { hang: false, requests: 0 };
  const never = new Promise<never>(() => {});
  return {
    state,
    api: {
      async readLease(): Promise<LeaseRecord | undefined> {
        state.requests++;
        if (state.hang) return never;
        return lease && { ...lease };
      },
      async writeLease(_ns: string, _name: string, next: LeaseRecord): Promise<LeaseRecord> {
        state.requests++;
        if (state.hang) return never;
        if (lease && next.resourceVersion !== lease.resourceVersion)
          throw Object.assign(new Error('conflict'), { status: 409 });
        lease = { ...next, resourceVersion: String(++version) };
        return { ...lease };
      },
    },
  };
}

describe('leader election', () => {
  test('a leader whose renewals the API server never answers stops leading by its renew deadline', {
    timeout: 20_000,
  }, async () => {
    const { api, state } = leaseApi();
    const events: string[] = [];
    let stopped: () => void;
    const stoppedLeading = new Promise<void>((resolve) => {
      stopped = resolve;
    });
    const elector = new LeaderElector({
      api,
      namespace: 'zonekeeper-system',
      name: 'zonekeeper',
      identity: 'a',
      leaseDurationMs: 600,
      renewDeadlineMs: 400,
      retryPeriodMs: 50,
      onStartedLeading: () => events.push('started'),
      onStoppedLeading: () => {
        events.push('stopped');
        stopped();
      },
      log: (_level, message) => events.push(message),
    });
    elector.start();
    while (!elector.isLeader) await new Promise((resolve) => setTimeout(resolve, 10));
    // The connection dies without a reset: every request from now on hangs.
    state.hang = true;
    await stoppedLeading;
    assert.equal(elector.isLeader, false);
    assert.deepEqual(
      events.filter((e) => e === 'started' || e === 'stopped'),
      ['started', 'stopped'],
    );
    assert.ok(events.some((e) => /did not answer the lease request in time/.test(e)));
    await elector.stop(0);
  });

  test('a candidate whose request hangs tries again, and leads once the API server answers', async () => {
    const { api, state } = leaseApi();
    state.hang = true;
    let started: () => void;
    const leading = new Promise<void>((resolve) => {
      started = resolve;
    });
    const elector = new LeaderElector({
      api,
      namespace: 'zonekeeper-system',
      name: 'zonekeeper',
      identity: 'b',
      leaseDurationMs: 300,
      renewDeadlineMs: 200,
      retryPeriodMs: 50,
      onStartedLeading: () => started(),
      onStoppedLeading: () => {},
    });
    elector.start();
    while (state.requests < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    state.hang = false;
    await leading;
    assert.equal(elector.isLeader, true);
    await elector.stop(1000);
  });
});
