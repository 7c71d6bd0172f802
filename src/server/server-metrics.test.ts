import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DNSKEY_FLAGS, generateDnssecKey } from '../dns/dnssec/keys.ts';
import { parseRdata } from '../dns/rdata.ts';
import { RRType } from '../dns/rrtype.ts';
import { Registry } from '../metrics/registry.ts';
import { DEFAULT_WINDOW_POLICY } from '../zones/dnssec-window.ts';
import { ServerMetrics } from './server-metrics.ts';
import { ZoneDnssec } from './zone-dnssec.ts';
import { ZoneTable } from './zone-table.ts';

test('random query types do not grow the metrics: unknown types share the "other" series and its cached counter', () => {
  // Regression: the per-series cache was keyed by the raw qtype, so hostile traffic with random types
  // added up to 65536 × rcodes × transports entries (~30 MB) that were never freed.
  const registry = new Registry();
  const metrics = new ServerMetrics(registry, new ZoneTable());
  for (let qtype = 0; qtype < 0x10000; qtype++) {
    for (const rcode of [0, 1, 3, 5]) metrics.query(qtype, rcode, qtype % 2 ? 'udp' : 'tcp', 0.0001);
  }
  const slots = (metrics as unknown as { slots: unknown[] }).slots.filter((s) => s !== undefined);
  const series = registry
    .render()
    .split('\n')
    .filter((l) => l.startsWith('zonekeeper_dns_queries_total{'));
  assert.ok(slots.length <= series.length, `${slots.length} cached counters for ${series.length} series`);
  assert.ok(series.length < 300, `${series.length} series`);
  const other = series.filter((l) => l.includes('qtype="other",rcode="NOERROR",transport="udp"'));
  assert.equal(other.length, 1);
});

test('response codes beyond the header and EDNS range are counted under their own number without growing the slots', () => {
  const registry = new Registry();
  const metrics = new ServerMetrics(registry, new ZoneTable());
  for (let i = 0; i < 3; i++) metrics.query(1, 3, 'udp', 0.0001);
  metrics.query(1, 16, 'tcp', 0.0001);
  metrics.query(1, 4000, 'udp', 0.0001);
  metrics.query(1, 4000, 'udp', 0.0001);
  const text = registry.render();
  assert.match(text, /^zonekeeper_dns_queries_total\{qtype="A",rcode="NXDOMAIN",transport="udp"\} 3$/m);
  assert.match(text, /^zonekeeper_dns_queries_total\{qtype="A",rcode="16",transport="tcp"\} 1$/m);
  assert.match(text, /^zonekeeper_dns_queries_total\{qtype="A",rcode="4000",transport="udp"\} 2$/m);
  assert.match(text, /^zonekeeper_dns_response_seconds_count\{transport="udp"\} 5$/m);
});

test('the ALIAS type code is counted like any unknown type, never as "ALIAS"', () => {
  // Regression: queries for TYPE65401 were labelled qtype="ALIAS", naming an internal type.
  const registry = new Registry();
  const metrics = new ServerMetrics(registry, new ZoneTable());
  metrics.query(65401, 0, 'udp', 0.0001);
  metrics.query(65400, 0, 'udp', 0.0001);
  const text = registry.render();
  assert.doesNotMatch(text, /qtype="ALIAS"/);
  assert.match(text, /^zonekeeper_dns_queries_total\{qtype="other",rcode="NOERROR",transport="udp"\} 2$/m);
});

test('signatures made at answer time are counted by use, kept from the cache or newly signed', () => {
  const registry = new Registry();
  new ServerMetrics(registry, new ZoneTable());
  const key = generateDnssecKey(15, DNSKEY_FLAGS.KSK);
  const view = new ZoneDnssec('m.test.', {
    denial: 'NSEC',
    records: [],
    signing: { keys: [key], signedAt: 1_800_000_000, policy: DEFAULT_WINDOW_POLICY },
  });
  const subset = (address: string) => ({
    owner: 'www.m.test.',
    type: RRType.A,
    ttl: 60,
    rdata: [parseRdata('A', address, 'm.test.')],
  });
  view.signSynthesized(subset('192.0.2.1'), 'steered');
  view.signSynthesized(subset('192.0.2.1'), 'steered');
  view.signSynthesized(subset('192.0.2.1'), 'steered');
  view.signSynthesized(subset('192.0.2.2'), 'steered');
  view.signSynthesized(subset('192.0.2.9'));
  const text = registry.render();
  assert.match(text, /^zonekeeper_dnssec_synthesized_signatures_total\{use="steered",result="kept"\} 2$/m);
  assert.match(text, /^zonekeeper_dnssec_synthesized_signatures_total\{use="steered",result="signed"\} 2$/m);
  assert.match(text, /^zonekeeper_dnssec_synthesized_signatures_total\{use="alias",result="signed"\} 1$/m);
});
