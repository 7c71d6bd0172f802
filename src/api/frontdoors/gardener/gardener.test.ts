import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Problem } from '../../schema.ts';
import type { ForeignObject, OutputStatus } from '../front-door.ts';
import { FrontDoors } from '../front-door.ts';
import { validateAny } from '../validate.ts';
import {
  gardenerDNSRecordFrontDoor as door,
  type GardenerDNSRecordSpec,
  type GardenerDNSRecordStatus,
  gardenerTypes,
  operationOf,
  setGardenerTypes,
  zoneRefOf,
} from './index.ts';

type Rec = ForeignObject<GardenerDNSRecordSpec, GardenerDNSRecordStatus>;
const NOW = '2026-11-26T12:00:00.000Z';

function rec(
  spec: Partial<GardenerDNSRecordSpec> = {},
  meta: Partial<Rec['metadata']> = {},
  status?: GardenerDNSRecordStatus,
): Rec {
  return {
    apiVersion: 'extensions.gardener.cloud/v1alpha1',
    kind: 'DNSRecord',
    metadata: { name: 'dnsrecord-external', namespace: 'shoot--foo--bar', generation: 1, ...meta },
    spec: {
      type: 'zonekeeper',
      secretRef: { name: 's', namespace: 'shoot--foo--bar' },
      name: 'api.bar.foo.example.com',
      recordType: 'A',
      values: ['192.0.2.1'],
      ...spec,
    },
    ...(status ? { status } : {}),
  };
}

function ready(generation: number, zone = { namespace: 'dns', name: 'example-com' }): OutputStatus {
  const cond = (type: string) => ({
    type,
    status: 'True' as const,
    reason: type,
    message: 'ok',
    observedGeneration: generation,
    lastTransitionTime: NOW,
  });
  return {
    kind: 'DNSRecordSet',
    key: '',
    namespace: 'shoot--foo--bar',
    name: 'x',
    status: { observedGeneration: generation, zone, conditions: [cond('Accepted'), cond('Ready')] },
  };
}

describe('Gardener DNSRecord front door', () => {
  test('operation precedence: migrate > delete > restore > create > reconcile', () => {
    const op = (a?: string, deleting = false, status?: GardenerDNSRecordStatus) =>
      operationOf(
        rec(
          {},
          {
            ...(a ? { annotations: { 'gardener.cloud/operation': a } } : {}),
            ...(deleting ? { deletionTimestamp: NOW } : {}),
          },
          status,
        ),
      );
    const done = (type: 'Create' | 'Reconcile' | 'Migrate'): GardenerDNSRecordStatus => ({
      lastOperation: { type, state: 'Succeeded', progress: 100, description: '', lastUpdateTime: NOW },
    });
    assert.equal(op('migrate', true), 'Migrate');
    assert.equal(op('restore', true), 'Delete');
    assert.equal(op(undefined, true), 'Delete');
    assert.equal(op('restore', false, done('Migrate')), 'Restore');
    assert.equal(op(), 'Create');
    assert.equal(op('reconcile'), 'Create', 'never reconciled: still a create');
    assert.equal(op(undefined, false, done('Create')), 'Reconcile');
    assert.equal(op('reconcile', false, done('Reconcile')), 'Reconcile');
    assert.equal(op(undefined, false, done('Migrate')), 'Migrate', 'a migrated record stays migrated');
  });

  test('zone: spec.zone first, then status.zone, else autodetection', () => {
    assert.deepEqual(zoneRefOf(rec({ zone: 'dns/example-com' }, {}, { zone: 'other/z' })), {
      namespace: 'dns',
      name: 'example-com',
    });
    assert.equal(zoneRefOf(rec({ zone: 'example.com' }, {}, { zone: 'other/z' })), undefined, 'a domain');
    assert.deepEqual(zoneRefOf(rec({}, {}, { zone: 'other/z' })), { namespace: 'other', name: 'z' });
    assert.equal(zoneRefOf(rec()), undefined);
    // A zone another API's object maps to (a kubizone Zone): autodetected again, never a zoneRef.
    assert.equal(zoneRefOf(rec({}, {}, { zone: 'dns/zones.kubi.zone:example-org' })), undefined);
    assert.equal(zoneRefOf(rec({ zone: 'dns/zones.kubi.zone:example-org' })), undefined);
  });

  test('translate: absolute name, TTL default 120, TXT quoted, CNAME absolute', () => {
    const ctx = {
      zoneName: (n: string) => n,
      related: () => [],
      defaultClass: () => ({ ok: false as const, code: 'NO_DEFAULT_CLASS' as const, message: 'none' }),
    };
    assert.deepEqual(door.translate(rec(), ctx), [
      {
        kind: 'DNSRecordSet',
        key: '',
        spec: { name: 'api.bar.foo.example.com.', type: 'A', records: ['192.0.2.1'], ttl: 120 },
      },
    ]);
    const txt = door.translate(rec({ recordType: 'TXT', values: ['a "b"'], ttl: 600 }), ctx)[0]!;
    assert.deepEqual((txt.spec as { records: string[] }).records, ['"a \\"b\\""']);
    const cname = door.translate(rec({ recordType: 'CNAME', values: ['lb.example.net'] }), ctx)[0]!;
    assert.deepEqual((cname.spec as { records: string[] }).records, ['lb.example.net.']);
  });

  test("only the configured types are the door's", () => {
    assert.deepEqual(gardenerTypes(), ['zonekeeper']);
    assert.ok(door.owns!(rec()));
    assert.ok(!door.owns!(rec({ type: 'aws-route53' })));
    setGardenerTypes(['zonekeeper', 'local']);
    try {
      assert.ok(door.owns!(rec({ type: 'local' })));
    } finally {
      setGardenerTypes(['zonekeeper']);
    }
    assert.throws(() => setGardenerTypes([' ']), /at least one/);
  });

  test('status shape: Processing at the start, Succeeded with the zone, Failed on problems', () => {
    const start = door.project({ object: rec(), outputs: [], now: NOW });
    assert.deepEqual(start, {
      lastOperation: {
        type: 'Create',
        state: 'Processing',
        progress: 10,
        description: 'the DNS record is being published',
        lastUpdateTime: NOW,
      },
    });
    const done = door.project({ object: rec(), outputs: [ready(1)], now: NOW });
    assert.equal(done.lastOperation?.state, 'Succeeded');
    assert.equal(done.lastOperation?.progress, 100);
    assert.equal(done.zone, 'dns/example-com');
    assert.equal(done.observedGeneration, 1);
    assert.equal(done.lastError, undefined);
    // Unchanged: the same operation and lastUpdateTime, so nothing is written again.
    const same = door.project({
      object: rec({}, {}, done),
      outputs: [ready(1)],
      now: '2026-11-26T13:00:00.000Z',
    });
    assert.deepEqual(same, done);
    // A new generation is a Reconcile, Processing until the servers observed it.
    const changed = door.project({
      object: rec({}, { generation: 2 }, done),
      outputs: [ready(1)],
      now: '2026-11-26T14:00:00.000Z',
    });
    assert.equal(changed.lastOperation?.type, 'Reconcile');
    assert.equal(changed.lastOperation?.state, 'Processing');
    assert.equal(changed.lastOperation?.lastUpdateTime, '2026-11-26T14:00:00.000Z');
    const problems: Problem[] = [{ path: 'spec.values[0]', code: 'InvalidIPv4', message: 'bad' }];
    const failed = door.project({ object: rec(), outputs: [], problems, now: NOW });
    assert.equal(failed.lastOperation?.state, 'Failed');
    assert.deepEqual(failed.lastError?.codes, ['ERR_CONFIGURATION_PROBLEM']);
  });

  test('annotations: reconcile goes at once, migrate and restore only once they succeeded', () => {
    const withOp = (op: string, status?: GardenerDNSRecordStatus) =>
      rec({}, { annotations: { 'gardener.cloud/operation': op } }, status);
    const processing = door.project({ object: withOp('migrate'), outputs: [ready(1)], now: NOW });
    assert.deepEqual(door.annotationsToRemove!(withOp('reconcile'), processing), [
      'gardener.cloud/operation',
    ]);
    const holding = rec(
      {},
      { annotations: { 'gardener.cloud/operation': 'migrate' }, finalizers: [door.finalizer] },
    );
    const migrating = door.project({ object: holding, outputs: [ready(1)], now: NOW });
    assert.equal(migrating.lastOperation?.state, 'Processing');
    assert.deepEqual(door.annotationsToRemove!(holding, migrating), []);
    assert.equal(door.holdsFinalizer!(holding), false);
    const migrated = door.project({ object: withOp('migrate'), outputs: [ready(1)], now: NOW });
    assert.equal(migrated.lastOperation?.type, 'Migrate');
    assert.equal(migrated.lastOperation?.state, 'Succeeded');
    assert.deepEqual(door.annotationsToRemove!(withOp('migrate'), migrated), ['gardener.cloud/operation']);
    const restoring = withOp('restore', migrated);
    assert.equal(door.holdsFinalizer!(restoring), true);
    const notYet = door.project({ object: restoring, outputs: [ready(1)], now: NOW });
    assert.equal(notYet.lastOperation?.state, 'Processing', 'not restored before it holds the finalizer');
    assert.deepEqual(door.annotationsToRemove!(restoring, notYet), []);
  });

  test('schema and admission: the upstream record types, immutable name and recordType', () => {
    const doors = new FrontDoors([door as never]);
    const check = (o: unknown, old?: Rec) => validateAny(o, doors, old as never);
    assert.equal(check(rec()).ok, true);
    const bad = check(rec({ recordType: 'MX' as never }));
    assert.equal(bad.ok, false);
    const badAddress = check(rec({ values: ['not-an-ip'] }));
    assert.equal(badAddress.ok, false);
    const outside = check(rec({ zone: 'example.org' }));
    assert.equal(outside.ok, false);
    const renamed = check(rec({ name: 'other.example.com' }), rec());
    assert.equal(renamed.ok, false);
    // A record never moves between controllers: its type is immutable, so Zonekeeper's finalizer is
    // never left on a record it no longer owns.
    assert.equal(check(rec({ type: 'aws-route53' }), rec()).ok, false);
    assert.equal(check(rec({ recordType: 'AAAA', values: ['2001:db8::1'] }), rec()).ok, false);
  });
});
