import { RRType } from '../dns/rrtype.ts';
import type { CounterChild, HistogramChild, Registry } from '../metrics/registry.ts';
import { getOrInsert } from '../util/get-or-insert.ts';
import type { ZoneTable } from './zone-table.ts';

const RCODE_NAMES = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED'];
const KNOWN_TYPES = new Map<number, string>(Object.entries(RRType).map(([name, code]) => [code, name]));
export type Transport = 'udp' | 'tcp';

/**
 * The server's Prometheus metrics. Label values are bounded (unknown query types count as "other")
 * so that hostile traffic cannot grow the registry.
 */
export class ServerMetrics {
  private readonly queries;
  private readonly latency;
  readonly truncated;
  private readonly dropped;
  private readonly cacheHits;
  private readonly cacheMisses;
  private readonly cache = new Map<string, CounterChild>();
  private readonly latencyCache = new Map<string, HistogramChild>();

  constructor(registry: Registry, table: ZoneTable) {
    const cache = registry.counter(
      'zonekeeper_dns_response_cache_total',
      'Lookups of cacheable queries in the response cache, by result (hit, miss).',
      ['result'],
    );
    this.cacheHits = cache.labels('hit');
    this.cacheMisses = cache.labels('miss');
    this.queries = registry.counter(
      'zonekeeper_dns_queries_total',
      'DNS queries answered, by query type, response code and transport.',
      ['qtype', 'rcode', 'transport'],
    );
    this.latency = registry.histogram(
      'zonekeeper_dns_response_seconds',
      'Time from receiving a query to handing its response to the socket.',
      [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1],
      ['transport'],
    );
    this.truncated = registry
      .counter('zonekeeper_dns_truncated_total', 'UDP responses sent with TC set because they did not fit.', [
        'transport',
      ])
      .labels('udp');
    this.dropped = registry.counter(
      'zonekeeper_dns_dropped_total',
      'Packets dropped without a response, by reason.',
      ['reason'],
    );
    const zones = registry.gauge('zonekeeper_zones_served', 'Zones the DNS server answers for.');
    const records = registry.gauge(
      'zonekeeper_records_served',
      'Resource records in the zones served (SOA and NS included).',
    );
    zones.collect = () => zones.set(table.size);
    records.collect = () => {
      let n = 0;
      for (const zone of table.all()) n += zone.recordCount;
      records.set(n);
    };
  }

  /** Counts a lookup in the response cache. */
  cacheLookup(hit: boolean): void {
    (hit ? this.cacheHits : this.cacheMisses).inc();
  }

  query(qtype: number, rcode: number, transport: Transport, seconds: number): void {
    // Keyed by the label values, not the raw qtype: random query types must not grow the cache.
    const type = KNOWN_TYPES.get(qtype) ?? 'other';
    const key = `${type}/${rcode}/${transport}`;
    let child = this.cache.get(key);
    if (!child) {
      child = this.queries.labels(type, RCODE_NAMES[rcode] ?? String(rcode), transport);
      this.cache.set(key, child);
    }
    child.inc();
    const h = getOrInsert(this.latencyCache, transport, () => this.latency.labels(transport));
    h.observe(seconds);
  }

  drop(reason: string): void {
    this.dropped.labels(reason).inc();
  }
}
