/**
 * `zonekeeper operator` stops within its graceful-shutdown budget (`--shutdown-timeout`) even when the
 * API server is gone: frozen (SIGSTOP: connections hang, as behind a network partition) or killed.
 * Against a real kube-apiserver and etcd (test/support/kube.ts).
 *
 *   npx node --test test/operator-shutdown.test.ts     # about 30 s
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KubeCluster, startKube } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess } from './support/zonekeeper-kube.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
/** The budget the operators get; small, so that the test is quick. */
const BUDGET_S = 3;
/** Generous: the budget twice, plus Node's own start-up and exit. */
const BOUND_MS = 2 * BUDGET_S * 1000 + 4000;

/** SIGTERM, then the time until the process exited (undefined: it had not after `limitMs`). */
async function terminate(p: KubeProcess, limitMs: number): Promise<number | undefined> {
  const started = performance.now();
  process.kill(p.pid, 'SIGTERM');
  try {
    await waitFor(async () => (p.exited() ? true : undefined), limitMs, 50);
  } catch {
    return undefined;
  }
  return performance.now() - started;
}

describe('operator shutdown without an API server', { timeout: 300_000 }, () => {
  let kube: KubeCluster;
  const operators: KubeProcess[] = [];

  before(async () => {
    kube = await startKube();
    await kube.kubectlOk(['create', 'namespace', SYSTEM]);
  });
  after(async () => {
    for (const o of operators) await o.kill().catch(() => {});
    if (kube) {
      try {
        process.kill(kube.apiServerPid, 'SIGCONT');
      } catch {
        // already gone
      }
      await kube.stop();
    }
  });

  test('frozen API server: the leader and a standby exit within the budget', async (t) => {
    const flags = ['--shutdown-timeout', String(BUDGET_S)];
    const leader = await startOperatorProcess('op-a', kube.adminKubeconfig, SYSTEM, flags);
    operators.push(leader);
    await waitFor(async () => (/became the leader/.test(leader.log()) ? true : undefined), 20_000);
    const standby = await startOperatorProcess('op-b', kube.adminKubeconfig, SYSTEM, flags);
    operators.push(standby);
    await waitFor(async () => (/another replica leads/.test(standby.log()) ? true : undefined), 20_000);

    // Frozen: connections are accepted by the kernel and never answered. Wait until a lease renewal
    // (every 2 s) hangs, then ask both to stop.
    process.kill(kube.apiServerPid, 'SIGSTOP');
    await new Promise((r) => setTimeout(r, 3000));
    const [leaderMs, standbyMs] = await Promise.all([
      terminate(leader, BOUND_MS),
      terminate(standby, BOUND_MS),
    ]);
    process.kill(kube.apiServerPid, 'SIGCONT');
    t.diagnostic(
      `exited after SIGTERM: leader ${leaderMs?.toFixed(0)} ms, standby ${standbyMs?.toFixed(0)} ms`,
    );
    assert.ok(leaderMs !== undefined, `the leader did not exit within ${BOUND_MS} ms:\n${leader.log()}`);
    assert.ok(standbyMs !== undefined, `the standby did not exit within ${BOUND_MS} ms:\n${standby.log()}`);
    assert.match(leader.log(), /shutdown/);
  });

  test('killed API server: the leader exits within the budget', async (t) => {
    const op = await startOperatorProcess('op-c', kube.adminKubeconfig, SYSTEM, [
      '--shutdown-timeout',
      String(BUDGET_S),
      '--leader-election-id',
      'shutdown-test',
    ]);
    operators.push(op);
    await waitFor(async () => (/became the leader/.test(op.log()) ? true : undefined), 20_000);
    process.kill(kube.apiServerPid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 1000));
    const ms = await terminate(op, BOUND_MS);
    t.diagnostic(`exited ${ms?.toFixed(0)} ms after SIGTERM`);
    assert.ok(ms !== undefined, `the operator did not exit within ${BOUND_MS} ms:\n${op.log()}`);
  });
});
