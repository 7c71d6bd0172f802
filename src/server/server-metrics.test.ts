import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from '../metrics/registry.ts';
import { ServerMetrics } from './server-metrics.ts';
import { ZoneTable } from './zone-table.ts';

test('random query types do not grow the metrics: unknown types share the "other" series and its cache entry', () => {
  // Regression: the per-series cache was keyed by the raw qtype, so hostile traffic with random types
  // added up to 65536 × rcodes × transports entries (~30 MB) that were never freed.
  const registry = new Registry();
  const metrics = new ServerMetrics(registry, new ZoneTable());
  for (let qtype = 0; qtype < 0x10000; qtype++) {
    for (const rcode of [0, 1, 3, 5]) metrics.query(qtype, rcode, qtype % 2 ? 'udp' : 'tcp', 0.0001);
  }
  const cache = (metrics as unknown as { cache: Map<string, unknown> }).cache;
  const series = registry
    .render()
    .split('\n')
    .filter((l) => l.startsWith('zonekeeper_dns_queries_total{'));
  assert.ok(cache.size <= series.length, `${cache.size} cache entries for ${series.length} series`);
  assert.ok(series.length < 300, `${series.length} series`);
  const other = series.filter((l) => l.includes('qtype="other",rcode="NOERROR",transport="udp"'));
  assert.equal(other.length, 1);
});
