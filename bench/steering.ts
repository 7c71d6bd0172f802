/**
 * Answer steering: (1) failover time — how long after an HTTP endpoint goes down `zonekeeper serve`
 * still answers it (the last answer holding it, measured from the moment it starts answering 503),
 * against the target `intervalSeconds × failureThreshold + 1 s`; and the same for recovery; (2) the
 * answer path with steering on and off: one process, `QueryHandler.handle` without sockets, the same
 * A question for an RRset of two records, unbound vs bound to the All policy (every record up); and
 * (3) the same in a signed zone with DO set and one record down, so each answer is a subset signed at
 * answer time: from the per-zone signature cache, and with the cache off (a signature per answer).
 *
 *   npx node bench/steering.ts [--rounds 5] [--interval 1] [--failures 2] [--seconds 3] [--no-failover]
 *
 * Loopback only (127.0.0.91/.92); writes a JSON line per figure to stdout.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { DNSKEY_FLAGS, generateDnssecKey } from '../src/dns/dnssec/keys.ts';
import { decodeMessage, encodeMessage, queryMessage } from '../src/dns/message.ts';
import { parseName } from '../src/dns/name.ts';
import { parseRdata } from '../src/dns/rdata.ts';
import { RRType } from '../src/dns/rrtype.ts';
import { QueryHandler } from '../src/server/query-handler.ts';
import { HEALTH_DOWN, HEALTH_UP, processHealth } from '../src/server/selection/steering/health-view.ts';
import { ZoneDnssec, type ZoneDnssecData } from '../src/server/zone-dnssec.ts';
import { ZoneSnapshot } from '../src/server/zone-snapshot.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { signZone } from '../src/zones/dnssec-signer.ts';
import { exchange } from '../test/support/dns-client.ts';
import { httpEndpoint } from '../test/support/health-endpoints.ts';
import { removeAll, startServe, tempDir } from '../test/support/zonekeeper-process.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    interval: { type: 'string', default: '1' },
    failures: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '3' },
    'no-failover': { type: 'boolean', default: false },
  },
});
const rounds = Number(values.rounds);
const interval = Number(values.interval);
const failures = Number(values.failures);

async function failover(): Promise<void> {
  const dir = await tempDir('bench-steering');
  const a = await httpEndpoint('127.0.0.91');
  const b = await httpEndpoint('127.0.0.92', { port: a.port });
  const manifests = path.join(dir, 'manifests');
  await mkdir(manifests, { recursive: true });
  const API = 'dns.zonekeeper.dev/v1alpha1';
  const docs = [
    {
      apiVersion: API,
      kind: 'DNSZoneClass',
      metadata: { name: 'builtin' },
      spec: { backend: { builtin: {} }, nameServers: ['ns1.bench.test.'] },
    },
    {
      apiVersion: API,
      kind: 'DNSZone',
      metadata: { name: 'bench', namespace: 'bench' },
      spec: { domainName: 'bench.test', className: 'builtin' },
    },
    {
      apiVersion: API,
      kind: 'DNSRecordSet',
      metadata: { name: 'api', namespace: 'bench' },
      spec: {
        zoneRef: { name: 'bench' },
        name: 'api',
        type: 'A',
        ttl: 5,
        records: ['127.0.0.91', '127.0.0.92'],
        healthCheck: {
          protocol: 'HTTP',
          port: a.port,
          intervalSeconds: interval,
          timeoutSeconds: interval,
          failureThreshold: failures,
          successThreshold: 1,
        },
      },
    },
  ];
  await writeFile(path.join(manifests, 'bench.yaml'), docs.map((d) => stringify(d)).join('---\n'));
  // The endpoints listen on loopback, which probes reach only when allowed.
  const serve = await startServe(manifests, path.join(dir, 'state'), ['--health-probe-allow', '127.0.0.0/8']);
  const query = encodeMessage(queryMessage(parseName('api.bench.test.'), RRType.A));
  const holds = async () => {
    const r = await exchange(serve.dnsPort, query, { timeoutMs: 1000 });
    return (r.message?.answers ?? []).some(
      (rr) => (rr.data as { address?: string }).address === '127.0.0.91',
    );
  };
  /** From `flip` until `want` has held for a whole second: when the last answer disagreeing was seen. */
  const measure = async (want: boolean): Promise<number> => {
    const t0 = performance.now();
    let lastOther = t0;
    while (
      performance.now() - lastOther < 1000 + interval * failures * 1000 ||
      performance.now() - t0 < 500
    ) {
      if ((await holds()) !== want) lastOther = performance.now();
      await new Promise((r) => setTimeout(r, 5));
      if (performance.now() - t0 > 60_000) throw new Error('no failover within 60 s');
    }
    return (lastOther - t0) / 1000;
  };
  try {
    // Let the first probes settle.
    while (!(await holds())) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, interval * 1000 * 2));
    const down: number[] = [];
    const up: number[] = [];
    for (let i = 0; i < rounds; i++) {
      await a.setUp(false);
      down.push(await measure(false));
      await a.setUp(true);
      up.push(await measure(true));
    }
    const target = interval * failures + 1;
    const sorted = (x: number[]) => [...x].sort((p, q) => p - q);
    console.log(
      JSON.stringify({
        bench: 'steering-failover',
        intervalSeconds: interval,
        failureThreshold: failures,
        targetSeconds: target,
        downSeconds: sorted(down).map((x) => +x.toFixed(3)),
        upSeconds: sorted(up).map((x) => +x.toFixed(3)),
        downMaxWithinTarget: Math.max(...down) <= target,
      }),
    );
  } finally {
    await serve.stop();
    await a.close();
    await b.close();
    await removeAll(dir);
  }
}

/**
 * Answers `packet` through `handler` for --seconds, `batch` queries between looks at the clock: the
 * queries answered per second and the microseconds per query.
 */
function timeAnswers(
  handler: QueryHandler,
  packet: Buffer,
  batch: number,
): { perSecond: number; microseconds: number } {
  const deadline = performance.now() + Number(values.seconds) * 1000;
  let n = 0;
  const started = performance.now();
  while (performance.now() < deadline) {
    for (let k = 0; k < batch; k++) {
      handler.handle(packet, 'udp', performance.now(), '10.0.0.1');
      n++;
    }
  }
  const elapsed = (performance.now() - started) / 1000;
  return { perSecond: Math.round(n / elapsed), microseconds: +((elapsed * 1e6) / n).toFixed(2) };
}

function answerPath(): void {
  const origin = 'bench.example.';
  const rr = (owner: string, type: 'A' | 'NS' | 'SOA', texts: string[]) => ({
    owner: parseName(owner, origin),
    type,
    ttl: 300,
    rdata: texts.map((t) => parseRdata(type, t, origin)),
  });
  const soa = {
    ttl: 300,
    mname: `ns1.${origin}`,
    rname: `hostmaster.${origin}`,
    refresh: 3600,
    retry: 600,
    expire: 1209600,
    minimum: 60,
  };
  const measure = (bound: boolean, cache: number) => {
    const table = new ZoneTable();
    table.set(
      ZoneSnapshot.build(origin, soa, 1, [
        rr('@', 'NS', ['ns1']),
        rr('ns1', 'A', ['192.0.2.53']),
        rr('api', 'A', ['192.0.2.1', '192.0.2.2']),
      ] as never),
    );
    if (bound)
      table.setSelections(origin, [
        {
          owner: `api.${origin}`,
          type: 'A',
          policy: 'all',
          data: { candidates: ['192.0.2.1', '192.0.2.2'], slots: [0, 1], whenAllDown: 'All' },
        },
      ]);
    const handler = new QueryHandler({ table, responseCache: cache });
    const packet = Buffer.from(encodeMessage(queryMessage(parseName(`api.${origin}`), RRType.A)));
    const check = handler.handle(packet, 'udp', performance.now(), '10.0.0.1') as Uint8Array;
    if (decodeMessage(check).answers.length !== 2) throw new Error('unexpected answer');
    return timeAnswers(handler, packet, 10_000);
  };
  for (const cache of [100_000, 0])
    for (const bound of [false, true])
      console.log(
        JSON.stringify({
          bench: 'steering-answer-path',
          steering: bound,
          responseCache: cache,
          ...measure(bound, cache),
        }),
      );
}

/** A signed zone, DO set, one of two steered records down: every answer is a subset signed at answer time. */
function signedAnswerPath(): void {
  const origin = 'bench.example.';
  const rrsets = [
    { owner: origin, type: 'NS', ttl: 300, rdata: [parseRdata('NS', 'ns1', origin)] },
    { owner: `ns1.${origin}`, type: 'A', ttl: 300, rdata: [parseRdata('A', '192.0.2.53', origin)] },
    {
      owner: `api.${origin}`,
      type: 'A',
      ttl: 300,
      rdata: ['192.0.2.1', '192.0.2.2'].map((a) => parseRdata('A', a, origin)),
    },
  ] as never[];
  const soa = {
    ttl: 300,
    mname: `ns1.${origin}`,
    rname: `hostmaster.${origin}`,
    refresh: 3600,
    retry: 600,
    expire: 1209600,
    minimum: 60,
  } as never;
  const key = generateDnssecKey(13, DNSKEY_FLAGS.KSK);
  const now = Math.floor(Date.now() / 1000);
  const signer = new Set<number>([RRType.RRSIG, RRType.NSEC, RRType.DNSKEY]);
  const data: ZoneDnssecData = {
    denial: 'NSEC',
    records: signZone(
      { origin, soa: { ...(soa as object), serial: 1 } as never, rrsets },
      { keySigning: [key], zoneSigning: [key] },
      { inception: now - 3600, expiration: now + 14 * 86400 },
      { kind: 'NSEC' },
    )
      .filter((r) => signer.has(r.type))
      .map((r) => ({ owner: r.owner, ttl: r.ttl, type: r.type, rdata: r.rdata })),
    signing: { keys: [key], signedAt: now, policy: { refreshSeconds: 7 * 86400, backdateSeconds: 3600 } },
  };
  const slots = [60_100, 60_101];
  processHealth.set(slots[0]!, HEALTH_DOWN);
  processHealth.set(slots[1]!, HEALTH_UP);
  const measure = (steered: boolean, signatureCache: number) => {
    const table = new ZoneTable();
    const zone = ZoneSnapshot.build(origin, soa, 1, rrsets, undefined, data);
    zone.dnssec = new ZoneDnssec(origin, data, signatureCache);
    table.set(zone);
    if (steered)
      table.setSelections(origin, [
        {
          owner: `api.${origin}`,
          type: 'A',
          policy: 'all',
          data: { candidates: ['192.0.2.1', '192.0.2.2'], slots, whenAllDown: 'All' },
        },
      ]);
    // The response cache off for every case: steered answers never use it, so the comparison is fair.
    const handler = new QueryHandler({ table, responseCache: 0 });
    const packet = Buffer.from(
      encodeMessage(
        queryMessage(parseName(`api.${origin}`), RRType.A, {
          edns: { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: true, options: [] },
        }),
      ),
    );
    const check = decodeMessage(handler.handle(packet, 'udp', performance.now(), '10.0.0.1') as Uint8Array);
    const a = check.answers.filter((r) => r.type === RRType.A).length;
    if (a !== (steered ? 1 : 2) || !check.answers.some((r) => r.type === RRType.RRSIG)) {
      throw new Error('unexpected signed answer');
    }
    return timeAnswers(handler, packet, 1_000);
  };
  for (const [steered, cache] of [
    [false, 1024],
    [true, 1024],
    [true, 0],
  ] as const)
    console.log(
      JSON.stringify({
        bench: 'steering-signed-answer-path',
        steering: steered,
        signatureCache: cache,
        ...measure(steered, cache),
      }),
    );
}

answerPath();
signedAnswerPath();
if (!values['no-failover']) await failover();
