import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../../../../test/support/zonekeeper-process.ts';
import type { Steering } from '../../../api/steering.ts';
import { parseRdata } from '../../../dns/rdata.ts';
import { Registry } from '../../../metrics/registry.ts';
import type { RRset } from '../../../zones/rrset.ts';
import type { SelectionBinding, SelectionSink } from '../selection-table.ts';
import { HealthChecker } from './health-checker.ts';
import { HealthView, NO_SLOT } from './health-view.ts';
import { SteeringBinder } from './steering-binder.ts';

const ORIGIN = 'example.com.';
const check = {
  protocol: 'TCP' as const,
  port: 9,
  path: '/',
  host: 'x',
  expectStatus: [],
  intervalSeconds: 3600,
  timeoutSeconds: 1,
  failureThreshold: 3,
  successThreshold: 1,
};

function rrset(owner: string, addresses: string[], steering?: Partial<Steering>, name = owner): RRset {
  return {
    owner: `${owner}.${ORIGIN}`,
    type: 'A',
    ttl: 30,
    rdata: addresses.map((a) => parseRdata('A', a, ORIGIN)),
    origin: { kind: 'recordSet', namespace: 'dns', name },
    ...(steering
      ? {
          steering: {
            policy: 'All',
            candidates: addresses,
            whenAllDown: 'All',
            healthCheck: check,
            ...steering,
          },
        }
      : {}),
  };
}

function setup() {
  const calls: SelectionBinding[][] = [];
  const sink: SelectionSink = {
    async setSelections(_origin, bindings) {
      calls.push([...bindings]);
    },
  };
  const checker = new HealthChecker({ view: new HealthView(new SharedArrayBuffer(64)) });
  return { calls, sink, checker, binder: new SteeringBinder(checker) };
}

test('binds steered RRsets with one probe slot per candidate, and only when they change', async () => {
  const { calls, sink, checker, binder } = setup();
  try {
    await binder.replace(sink, ORIGIN, [
      rrset('www', ['192.0.2.1']),
      rrset('api', ['127.0.0.1', '127.0.0.2'], {}),
    ]);
    assert.equal(calls.length, 1);
    assert.deepEqual(
      calls[0]!.map((b) => [b.owner, b.policy, (b.data as { slots: number[] }).slots]),
      [['api.example.com.', 'all', [0, 1]]],
    );
    assert.deepEqual(binder.recordsProbing(1), ['dns/api']);
    assert.deepEqual(
      binder.recordTargets('dns/api')?.map((t) => [t.address, t.state]),
      [
        ['127.0.0.1', 'Unknown'],
        ['127.0.0.2', 'Unknown'],
      ],
    );
    await binder.replace(sink, ORIGIN, [rrset('api', ['127.0.0.1', '127.0.0.2'], {})]);
    assert.equal(calls.length, 1, 'unchanged bindings are not sent again');
  } finally {
    checker.stop();
  }
});

test('a delta rebinds: a candidate removed frees its slot, a kept one keeps its slot; unsteered unbinds', async () => {
  const { calls, sink, checker, binder } = setup();
  try {
    await binder.replace(sink, ORIGIN, [rrset('api', ['127.0.0.1', '127.0.0.2'], {})]);
    await binder.patch(sink, ORIGIN, {
      upserts: [rrset('api', ['127.0.0.2', '127.0.0.3'], { policy: 'Ordered' })],
      deletes: [],
    });
    const data = calls[1]![0]!.data as { candidates: string[]; slots: number[] };
    assert.equal(calls[1]![0]!.policy, 'ordered');
    assert.deepEqual(data.candidates, ['127.0.0.2', '127.0.0.3']);
    assert.equal(data.slots[0], 1, '127.0.0.2 keeps its slot (and its state)');
    assert.equal(checker.status(0), undefined, '127.0.0.1 is no longer probed');
    await binder.patch(sink, ORIGIN, { upserts: [rrset('api', ['127.0.0.2'])], deletes: [] });
    assert.deepEqual(calls[2], [], 'a record set that lost its steering is unbound');
    assert.equal(checker.status(1), undefined);
    assert.equal(binder.recordTargets('dns/api'), undefined);
  } finally {
    checker.stop();
  }
});

test('forget stops the probes of a zone', async () => {
  const { sink, checker, binder } = setup();
  try {
    await binder.replace(sink, ORIGIN, [rrset('api', ['127.0.0.1'], {})]);
    binder.forget(ORIGIN);
    assert.equal(checker.status(0), undefined);
    assert.deepEqual(binder.targets(ORIGIN), []);
  } finally {
    checker.stop();
  }
});

/** A steered RRset of a record set in `namespace` (loopback addresses: never probed without an allow-list). */
function tenant(namespace: string, owner: string, addresses: string[]): RRset {
  return { ...rrset(owner, addresses, {}), origin: { kind: 'recordSet', namespace, name: owner } };
}

const slotsOf = (b: SelectionBinding) => (b.data as { slots: number[] }).slots;
const ips = (from: number, n: number) => Array.from({ length: n }, (_, i) => `127.0.1.${from + i}`);

test('one namespace cannot take more probe targets than its limit; the record set beyond it is reported, not probed', async () => {
  const calls: SelectionBinding[][] = [];
  const sink: SelectionSink = {
    async setSelections(_origin, bindings) {
      calls.push([...bindings]);
    },
  };
  const registry = new Registry();
  const checker = new HealthChecker({
    view: new HealthView(new SharedArrayBuffer(256)),
    namespaceLimit: 3,
    registry,
  });
  const binder = new SteeringBinder(checker);
  try {
    await binder.replace(sink, ORIGIN, [
      tenant('hostile', 'a', ips(1, 2)),
      tenant('hostile', 'b', ips(3, 2)),
      tenant('other', 'c', ips(5, 2)),
    ]);
    const [a, b, c] = calls.at(-1)!;
    assert.deepEqual(slotsOf(a!).length, 2);
    assert.ok(slotsOf(a!).every((s) => s !== NO_SLOT));
    assert.deepEqual(slotsOf(b!), [NO_SLOT, NO_SLOT], 'all or none: nothing of b is probed');
    assert.ok(
      slotsOf(c!).every((s) => s !== NO_SLOT),
      "another namespace's record set is probed",
    );
    assert.equal(checker.namespaceTargets('hostile'), 2);
    assert.equal(checker.targetCount, 4);
    const problems = binder.problems(ORIGIN);
    assert.deepEqual(
      problems.map((p) => [p.owner, p.reason, p.origin]),
      [['b.example.com.', 'HealthCheckRefused', { kind: 'recordSet', namespace: 'hostile', name: 'b' }]],
    );
    assert.match(problems[0]!.message, /limit of 3 \(--health-probe-namespace-limit\)/);
    assert.equal(binder.recordTargets('hostile/b'), undefined);
    assert.match(registry.render(), /zonekeeper_health_probe_refusals_total\{reason="namespace-limit"\} 1/);
    // Targets the namespace already probes are shared, not counted again.
    await binder.replace(sink, ORIGIN, [
      tenant('hostile', 'a', ips(1, 2)),
      tenant('hostile', 'd', ips(1, 2)),
    ]);
    assert.deepEqual(binder.problems(ORIGIN), []);
    assert.equal(checker.namespaceTargets('hostile'), 2);
  } finally {
    checker.stop();
  }
});

test('a bind beyond every slot of the process takes none of them, and frees them all when forgotten', async () => {
  const { sink, binder, checker } = setup(); // a view of 16 slots
  try {
    await binder.replace(sink, ORIGIN, [tenant('t1', 'a', ips(1, 10)), tenant('t2', 'b', ips(11, 10))]);
    assert.equal(checker.targetCount, 10, 'b took no slot');
    assert.deepEqual(
      binder.problems(ORIGIN).map((p) => [p.owner, p.reason]),
      [['b.example.com.', 'HealthCheckRefused']],
    );
    assert.match(binder.problems(ORIGIN)[0]!.message, /every one of the 16 health probe slots/);
    binder.forget(ORIGIN);
    assert.equal(checker.targetCount, 0);
    assert.equal(checker.namespaceTargets('t1'), 0);
    // Every slot is free again: 16 targets fit.
    await binder.replace(sink, ORIGIN, [tenant('t1', 'a', ips(1, 16))]);
    assert.deepEqual(binder.problems(ORIGIN), []);
    assert.equal(checker.targetCount, 16);
  } finally {
    checker.stop();
  }
});

test('refused health checks are retried when room is freed elsewhere, and the zone is reported again', async () => {
  const { sink, binder, checker } = setup(); // a view of 16 slots
  const rechecked: string[] = [];
  binder.onRefusalsChanged = (origin) => rechecked.push(origin);
  const OTHER = 'other.test.';
  try {
    await binder.replace(sink, OTHER, [{ ...tenant('t1', 'big', ips(1, 12)), owner: `big.${OTHER}` }]);
    await binder.replace(sink, ORIGIN, [tenant('t2', 'late', ips(20, 8))]);
    assert.equal(binder.problems(ORIGIN).length, 1);
    binder.forget(OTHER);
    await waitFor(async () => (rechecked.length > 0 ? true : undefined), 5000);
    assert.deepEqual(rechecked, [ORIGIN]);
    assert.deepEqual(binder.problems(ORIGIN), []);
    assert.equal(checker.targetCount, 8);
    assert.equal(binder.recordTargets('t2/late')?.length, 8);
  } finally {
    checker.stop();
  }
});
