import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Steering } from '../../../api/steering.ts';
import { parseRdata } from '../../../dns/rdata.ts';
import type { RRset } from '../../../zones/rrset.ts';
import type { SelectionBinding, SelectionSink } from '../selection-table.ts';
import { HealthChecker } from './health-checker.ts';
import { HealthView } from './health-view.ts';
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
