import { isInternalType, RRType } from '../dns/rrtype.ts';
import type { CounterChild, HistogramChild, Registry } from '../metrics/registry.ts';
import { RRL_KINDS, type RrlCounters, type RrlKind } from './rrl.ts';
import { onSynthesizedSignature } from './zone-dnssec.ts';
import type { ServedZone, ZoneTable } from './zone-table.ts';

const RCODE_NAMES = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED'];
/** Type codes labelled by name; ALIAS's internal code counts as an unknown type. */
const KNOWN_TYPES = new Map<number, string>(
  Object.entries(RRType)
    .filter(([, code]) => !isInternalType(code))
    .map(([name, code]) => [code, name]),
);
/** Query type code → its label ("other" for unknown codes, so random types cannot grow the registry). */
const TYPE_LABELS = ['other', ...KNOWN_TYPES.values()];
/** Query type code → index into TYPE_LABELS. */
const TYPE_SLOT = new Uint8Array(65536);
for (const [i, name] of TYPE_LABELS.entries()) if (i > 0) TYPE_SLOT[RRType[name as keyof typeof RRType]] = i;
/** Response codes with a counter slot of their own (the 4-bit header codes and the EDNS ones up to BADCOOKIE). */
const RCODE_SLOTS = 32;
export type Transport = 'udp' | 'tcp';

/**
 * The server's Prometheus metrics. Label values are bounded (unknown query types count as "other")
 * so that hostile traffic cannot grow the registry.
 */
export class ServerMetrics implements RrlCounters {
  private readonly queries;
  private readonly latency;
  readonly truncated;
  private readonly dropped;
  private readonly cacheHits;
  private readonly cacheMisses;
  private readonly cacheTemplates;
  /** Answers the response cache refused (see ResponseCache MAX_CHAIN). */
  readonly cacheChainFull;
  /** Counter per (type, rcode, transport), found by index: this runs once per query. */
  private readonly slots: (CounterChild | undefined)[] = [];
  private readonly latencyUdp: HistogramChild;
  private readonly latencyTcp: HistogramChild;
  private readonly rrlDrops = new Map<RrlKind, CounterChild>();
  private readonly rrlSlips = new Map<RrlKind, CounterChild>();

  constructor(registry: Registry, table: ZoneTable<ServedZone>) {
    const cache = registry.counter(
      'zonekeeper_dns_response_cache_total',
      'Lookups of cacheable queries in the response cache, by result: hit, template (a name with no data of its own answered from the template for its parent, see ADR 0011), miss.',
      ['result'],
    );
    this.cacheHits = cache.labels('hit');
    this.cacheMisses = cache.labels('miss');
    this.cacheTemplates = cache.labels('template');
    this.cacheChainFull = registry.counter(
      'zonekeeper_dns_response_cache_chain_full_total',
      'Answers not cached because their hash chain was full: many questions with one hash, e.g. crafted names.',
    );
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
    this.latencyUdp = this.latency.labels('udp');
    this.latencyTcp = this.latency.labels('tcp');
    this.truncated = registry
      .counter('zonekeeper_dns_truncated_total', 'UDP responses sent with TC set because they did not fit.', [
        'transport',
      ])
      .labels('udp');
    this.dropped = registry.counter(
      'zonekeeper_dns_dropped_total',
      "Packets dropped without a response, by reason; tcp_update_limit counts TCP connections paused (read no further) at their limit of unanswered UPDATEs, tcp_connection_limit and tcp_source_limit TCP connections closed at once (all connections taken and busy; the client's address or IPv6 /64 holds its limit), tcp_idle_evicted idle TCP connections closed to make room for a new one.",
      ['reason'],
    );
    const rrlDropped = registry.counter(
      'zonekeeper_dns_rrl_dropped_total',
      'UDP responses not sent because their client network went over its response rate, by kind of response.',
      ['kind'],
    );
    const rrlSlipped = registry.counter(
      'zonekeeper_dns_rrl_slipped_total',
      'UDP responses over the rate sent truncated (TC) instead, so that real clients retry over TCP, by kind.',
      ['kind'],
    );
    for (const kind of RRL_KINDS) {
      this.rrlDrops.set(kind, rrlDropped.labels(kind));
      this.rrlSlips.set(kind, rrlSlipped.labels(kind));
    }
    const selectionErrors = registry.counter(
      'zonekeeper_dns_selection_errors_total',
      'Answers whose RRset selection policy failed (the whole RRset was answered), by policy.',
      ['policy'],
    );
    table.selections.onError = (policy) => selectionErrors.labels(policy).inc();
    const synthesized = registry.counter(
      'zonekeeper_dnssec_synthesized_signatures_total',
      'Signatures of signed answers made at query time (use: steered subsets, ALIAS addresses, ALIAS NODATA proofs), taken from the per-zone cache of 1,024 (result=kept) or newly signed (result=signed). Many signed: the subsets or addresses change faster than the cache holds them.',
      ['use', 'result'],
    );
    const synthesizedChildren = new Map<string, CounterChild>();
    onSynthesizedSignature((use, kept) => {
      const id = `${use} ${kept}`;
      let child = synthesizedChildren.get(id);
      if (!child) {
        child = synthesized.labels(use, kept ? 'kept' : 'signed');
        synthesizedChildren.set(id, child);
      }
      child.inc();
    });
    const zones = registry.gauge('zonekeeper_zones_served', 'Zones the DNS server answers for.');
    const records = registry.gauge(
      'zonekeeper_records_served',
      'Resource records in the zones served (SOA and NS included).',
    );
    zones.collect = () => zones.set(table.size);
    const expiry = registry.gauge(
      'zonekeeper_dnssec_signatures_expire_seconds',
      'The earliest expiration (seconds since the epoch) of the RRSIGs a signed zone serves now: alert when it comes within two days (re-signing keeps it at least half a refresh period, 3.5 days, ahead).',
      ['zone'],
    );
    expiry.collect = () => {
      expiry.reset();
      for (const zone of table.all()) {
        const at = zone.dnssec?.earliestExpiration;
        if (at !== undefined) expiry.set(at, zone.origin);
      }
    };
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

  /** Counts a lookup answered from a template instead (not counted as a miss too). */
  cacheTemplate(): void {
    this.cacheTemplates.inc();
  }

  query(qtype: number, rcode: number, transport: Transport, seconds: number): void {
    const tcp = transport === 'tcp';
    const type = TYPE_SLOT[qtype] ?? 0;
    const code = rcode >= 0 && rcode < RCODE_SLOTS ? rcode : RCODE_SLOTS;
    const slot = (type * (RCODE_SLOTS + 1) + code) * 2 + (tcp ? 1 : 0);
    let child = this.slots[slot];
    if (child === undefined) {
      child = this.queries.labels(
        TYPE_LABELS[type]!,
        rcodeLabel(code === RCODE_SLOTS ? rcode : code),
        transport,
      );
      // Codes beyond the slots share one slot: only the first such code gets a counter of its own.
      if (code < RCODE_SLOTS) this.slots[slot] = child;
    }
    child.inc();
    (tcp ? this.latencyTcp : this.latencyUdp).observe(seconds);
  }

  rrlDropped(kind: RrlKind): void {
    this.rrlDrops.get(kind)!.inc();
  }

  rrlSlipped(kind: RrlKind): void {
    this.rrlSlips.get(kind)!.inc();
  }

  drop(reason: string): void {
    this.dropped.labels(reason).inc();
  }
}

function rcodeLabel(rcode: number): string {
  return RCODE_NAMES[rcode] ?? String(rcode);
}
