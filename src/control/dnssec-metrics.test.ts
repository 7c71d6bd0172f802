import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DNSZone, DNSZoneClass } from '../api/index.ts';
import { Registry } from '../metrics/registry.ts';
import { dnssecMetricRows, registerDnssecMetrics } from './dnssec-metrics.ts';
import type { ZoneFailure } from './zone-reconciler.ts';

const zone = (name: string, spec: Partial<DNSZone['spec']>, status?: DNSZone['status']): DNSZone =>
  ({
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSZone',
    metadata: { name, namespace: 'dns' },
    spec: { domainName: `${name}.example`, className: 'pdns', ...spec },
    ...(status ? { status } : {}),
  }) as DNSZone;

describe('DNSSEC metrics', () => {
  const zones = [
    zone(
      'a',
      { dnssec: { enabled: true } },
      {
        dnssec: {
          rollover: {
            kind: 'Algorithm',
            phase: 'DsChange',
            since: '2026-01-01T00:00:00Z',
            reason: 'ParentDsNotVisible',
            message: 'give the parent the DS',
          },
        },
      },
    ),
    zone(
      'b',
      {},
      {
        dnssec: {
          rollover: { phase: 'Active', since: '2026-01-01T00:00:00Z', nextStep: '2026-01-01T00:01:40Z' },
        },
      },
    ),
    zone('c', {}),
    zone('d', { dnssec: { enabled: false } }),
  ];
  // The class signs its zones by default; d turns it off.
  const classes = new Map([['pdns', { spec: { dnssec: { enabled: true } } } as unknown as DNSZoneClass]]);
  const failing = new Map<string, ZoneFailure>([
    ['dns/c', { key: 'dns/c', reason: 'BackendRejected', message: 'PDNS_DNSSEC' }],
    ['dns/d', { key: 'dns/d', reason: 'BackendUnreachable', message: 'down' }],
  ]);

  test('phase, next step, the wait for the parent, and failing signed zones (the class default counts)', () => {
    const rows = dnssecMetricRows(zones, classes, failing);
    assert.deepEqual(rows.phases, [
      { zone: 'dns/a', kind: 'Algorithm', phase: 'DsChange' },
      { zone: 'dns/b', kind: 'ZSK', phase: 'Active' },
    ]);
    assert.deepEqual(rows.nextSteps, [
      { zone: 'dns/b', kind: 'ZSK', at: Date.UTC(2026, 0, 1, 0, 1, 40) / 1000 },
    ]);
    assert.deepEqual(rows.waiting, [{ zone: 'dns/a', reason: 'ParentDsNotVisible' }]);
    assert.deepEqual(
      [...rows.failing],
      [['BackendRejected', 1]],
      'd is not signed: its failure is not counted',
    );
  });

  test('rendered in the exposition format, series of zones gone are dropped', () => {
    const registry = new Registry();
    let list = zones;
    registerDnssecMetrics(registry, { list: (kind) => (kind === 'DNSZone' ? list : []) as never }, failing);
    let text = registry.render();
    assert.match(
      text,
      /zonekeeper_dnssec_rollover_phase\{zone="dns\/a",kind="Algorithm",phase="DsChange"\} 1/,
    );
    assert.match(
      text,
      /zonekeeper_dnssec_rollover_waiting_parent\{zone="dns\/a",reason="ParentDsNotVisible"\} 1/,
    );
    assert.match(
      text,
      /zonekeeper_dnssec_rollover_next_step_timestamp_seconds\{zone="dns\/b",kind="ZSK"\} 1767225700/,
    );
    list = [];
    text = registry.render();
    assert.doesNotMatch(text, /zone="dns\/a"/);
  });
});
