/**
 * Throughput benchmark: one zone served by Zonekeeper, Knot and PowerDNS (packet cache off and on),
 * each pinned to the same CPUs, loaded with dnsperf. See bench/README.md.
 *
 *   node bench/run.ts [--records 10000] [--duration 20] [--cores 0-1] [--client-cores 0-1]
 *                     [--servers zonekeeper,knot,pdns-nocache,pdns-cache,coredns] [--out FILE]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { dig } from '../test/support/dig.ts';
import { type DnsperfOptions, type DnsperfResult, runDnsperf } from './lib/dnsperf.ts';
import {
  allowedCpus,
  freePort,
  keepTempDir,
  makeTempDir,
  parseCpuList,
  ROOT,
  removeTempDir,
  treePssKiB,
  treeRssKiB,
} from './lib/proc.ts';
import {
  generateQueries,
  MIX,
  normalise,
  probes,
  type Query,
  writeQueryFile,
  ZoneOracle,
} from './lib/queries.ts';
import {
  type Fixture,
  SERVER_IDS,
  SERVER_LABELS,
  type ServerId,
  type StartedServer,
  startServer,
  versions,
} from './lib/servers.ts';
import { assemble, classManifest, generateZone, writeZoneManifests, zoneFileText } from './lib/zone.ts';

const USAGE = `node bench/run.ts [options]

  --records N          generated record sets in the zone (default 10000; each holds one record)
  --duration S         seconds of each measured dnsperf run (default 20)
  --cores LIST         taskset CPU list for every server (default 0-1)
  --client-cores LIST  taskset CPU list for dnsperf (default: same as --cores)
  --servers LIST       comma-separated, from ${SERVER_IDS.join(',')} (default: all)
  --clients N          dnsperf -c (default 8)
  --threads N          dnsperf -T (default 1: one sender and one receiver thread)
  --outstanding N      dnsperf -q (default 100, dnsperf's own default)
  --timeout S          dnsperf -t, seconds before a query counts as lost (default 1)
  --qps N              measure only at this fixed rate (skips the unlimited run and the search)
  --warmup S           unlimited warm-up before measuring (default 3)
  --search-steps N     rate-limited runs to find the highest rate without loss (default 4)
  --step-duration S    seconds of each search run (default: half of --duration, at least 5)
  --query-lines N      lines in the dnsperf query file (default 1000000: random names do not repeat
                       within a run, so response caches cannot absorb them)
  --latency-load F     latency percentiles (dnsperf -v) at this fraction of the rated QPS (default 0.8)
  --pdns-distributors N  PowerDNS distributor-threads per receiver thread (default 1)
  --out FILE           results JSON (default bench/results/<timestamp>.json)
  --dnssec             sign the zone (Zonekeeper: spec.dnssec.enabled; Knot: dnssec-signing on, ECDSA
                       P-256 CSK, NSEC) and set DO on every query (dnsperf -D); other servers are
                       refused
  --keep               keep the temporary folder (zone, manifests, logs)
`;

interface ServerResult {
  id: ServerId;
  label: string;
  ok: boolean;
  error?: string;
  config?: Record<string, string | number | boolean>;
  cpusAllowed?: string;
  readyMs?: number;
  /** Summed over the server's processes; PSS divides shared pages among them. */
  rssAfterLoadMiB?: number;
  pssAfterLoadMiB?: number;
  rssAfterRunMiB?: number;
  check?: { probes: number; mismatches: string[] };
  warmup?: DnsperfResult;
  /** Unlimited (closed-loop) run: as fast as the server answers with --outstanding in flight. */
  max?: DnsperfResult;
  /** Rate-limited runs used to find the highest rate without loss. */
  search?: DnsperfResult[];
  /**
   * The reported run: the unlimited run when it lost nothing, else a run of --duration at the highest
   * loss-free rate the search found (lowered by 10% up to twice if the longer run still lost some).
   */
  rated?: DnsperfResult;
  /** dnsperf -v at --latency-load × the rated QPS, for percentiles. */
  latency?: DnsperfResult;
  summary?: {
    maxQps: number;
    maxLostPct: number;
    /** QPS of the rated run; `lossFree` says whether it indeed lost nothing. */
    ratedQps: number;
    ratedLost: number;
    ratedLostPct: number;
    lossFree: boolean;
    ratedQpsPerCore: number;
    ratedAvgMs: number;
    qpsPerServerCpu?: number;
    latencyQps: number;
    latencyLost: number;
    p50Ms?: number;
    p99Ms?: number;
  };
}

export interface RunResults {
  kind: 'zonekeeper-bench-run';
  date: string;
  command: string;
  machine: Record<string, string | number>;
  versions: Record<string, string>;
  options: Record<string, string | number | boolean | null>;
  zone: { origin: string; recordSets: number; records: number; rrsets: number; queryLines: number };
  mix: typeof MIX;
  servers: ServerResult[];
  notes: string[];
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      records: { type: 'string', default: '10000' },
      duration: { type: 'string', default: '20' },
      cores: { type: 'string', default: '0-1' },
      'client-cores': { type: 'string' },
      servers: { type: 'string', default: SERVER_IDS.join(',') },
      clients: { type: 'string', default: '8' },
      threads: { type: 'string' },
      outstanding: { type: 'string', default: '100' },
      timeout: { type: 'string', default: '1' },
      qps: { type: 'string' },
      warmup: { type: 'string', default: '3' },
      'search-steps': { type: 'string', default: '4' },
      'step-duration': { type: 'string' },
      'query-lines': { type: 'string', default: '1000000' },
      'latency-load': { type: 'string', default: '0.8' },
      'pdns-distributors': { type: 'string', default: '1' },
      out: { type: 'string' },
      keep: { type: 'boolean', default: false },
      dnssec: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const records = positiveInt(values.records, 'records');
  const duration = positiveInt(values.duration, 'duration');
  const cores = values.cores;
  const coreList = parseCpuList(cores);
  const clientCores = values['client-cores'] ?? cores;
  const clientCoreList = parseCpuList(clientCores);
  const servers = values.servers.split(',').map((s) => s.trim()) as ServerId[];
  for (const s of servers) {
    if (!SERVER_IDS.includes(s))
      throw new Error(`unknown server ${JSON.stringify(s)}; use ${SERVER_IDS.join(',')}`);
  }
  const dnssec = values.dnssec === true;
  if (dnssec) {
    const unsigned = servers.filter((s) => s !== 'zonekeeper' && s !== 'knot');
    if (unsigned.length > 0) throw new Error(`--dnssec: ${unsigned.join(', ')} would not sign the zone here`);
  }
  const perf = {
    dnssecOk: dnssec,
    clients: positiveInt(values.clients, 'clients'),
    threads: values.threads ? positiveInt(values.threads, 'threads') : 1,
    outstanding: positiveInt(values.outstanding, 'outstanding'),
    timeout: positiveInt(values.timeout, 'timeout'),
  };
  const fixedQps = values.qps ? positiveInt(values.qps, 'qps') : undefined;
  const warmup = Number(values.warmup);
  const searchSteps = Number(values['search-steps']);
  const stepDuration = values['step-duration']
    ? positiveInt(values['step-duration'], 'step-duration')
    : Math.max(5, Math.round(duration / 2));
  const queryLines = positiveInt(values['query-lines'], 'query-lines');
  const latencyLoad = Number(values['latency-load']);
  if (!(latencyLoad > 0 && latencyLoad <= 1)) throw new Error('--latency-load must be in (0, 1]');
  const date = new Date();
  const out =
    values.out ?? path.join(ROOT, 'bench/results', `${date.toISOString().replace(/[:.]/g, '-')}.json`);
  const command = `node bench/run.ts ${process.argv.slice(2).join(' ')}`.trim();

  // 1. The zone, as manifests and as a zone file.
  const tmp = makeTempDir('run');
  const origin = 'bench.example.';
  const nameServers = [`ns1.${origin}`, `ns2.${origin}`];
  log(`generating a zone of ${records} record sets in ${tmp}`);
  const zone = generateZone(origin, { name: 'bench', namespace: 'bench' }, records, {
    withNameServers: true,
  });
  const manifestsDir = path.join(tmp, 'manifests');
  mkdirSync(manifestsDir, { recursive: true });
  writeFileSync(path.join(manifestsDir, '00-class.yaml'), classManifest(nameServers));
  writeZoneManifests(manifestsDir, zone, undefined, dnssec);
  const assembled = assemble(zone, nameServers);
  const zoneFile = path.join(tmp, 'bench.example.zone');
  writeFileSync(zoneFile, zoneFileText(assembled, 1));
  const rrCount = assembled.rrsets.reduce((n, r) => n + r.rdata.length, 1);

  // 2. The queries.
  const queries = generateQueries(origin, records, queryLines);
  const queryFile = path.join(tmp, 'queries.txt');
  writeQueryFile(queryFile, queries);
  const oracle = new ZoneOracle(assembled);
  const checks = probes(origin, queries);
  const readyAnswer = oracle.expect(`h1.${origin}`, 'A');

  const fixture: Fixture = {
    tmp,
    manifestsDir,
    zoneFile,
    origin,
    cores,
    coreCount: coreList.length,
    ready: { name: `h1.${origin}`, type: 'A', answer: readyAnswer.answer },
    pdnsDistributors: positiveInt(values['pdns-distributors'], 'pdns-distributors'),
    dnssec,
  };

  const results: RunResults = {
    kind: 'zonekeeper-bench-run',
    date: date.toISOString(),
    command,
    machine: machineInfo(),
    versions: await versions(),
    options: {
      records,
      duration,
      cores,
      clientCores,
      servers: servers.join(','),
      ...perf,
      qps: fixedQps ?? null,
      warmup,
      searchSteps,
      stepDuration,
      queryLines,
      latencyLoad,
      pdnsDistributors: fixture.pdnsDistributors,
    },
    zone: {
      origin,
      recordSets: zone.records.length,
      records: rrCount,
      rrsets: assembled.rrsets.length + 1,
      queryLines: queries.length,
    },
    mix: MIX,
    servers: [],
    notes: [],
  };
  const overlap = coreList.filter((c) => clientCoreList.includes(c));
  if (overlap.length > 0) {
    results.notes.push(
      `dnsperf (CPUs ${clientCores}) shares CPUs ${overlap.join(',')} with the servers (CPUs ${cores}): ` +
        'the load generator takes CPU time from the server under test, so absolute QPS is lower than on ' +
        'separate machines; every server is measured under the same handicap.',
    );
  }

  for (const id of servers) {
    const r = await measure(id, fixture, checks, oracle, {
      queryFile,
      clientCores,
      perf,
      duration,
      warmup,
      searchSteps,
      stepDuration,
      fixedQps,
      latencyLoad,
    });
    results.servers.push(r);
    // Write as we go, so that an interrupted run keeps what it measured.
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  }
  compareRcodes(results);
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  printTable(results);
  log(`results: ${path.relative(process.cwd(), out)}`);
  log(`markdown: node bench/report.ts ${path.relative(process.cwd(), out)}`);
  if (values.keep) {
    keepTempDir(tmp);
    log(`kept ${tmp}`);
  } else {
    removeTempDir(tmp);
  }
  return results.servers.every((s) => s.ok) ? 0 : 1;
}

interface MeasureOptions {
  queryFile: string;
  clientCores: string;
  perf: { clients: number; threads: number; outstanding: number; timeout: number; dnssecOk?: boolean };
  duration: number;
  warmup: number;
  searchSteps: number;
  stepDuration: number;
  fixedQps: number | undefined;
  latencyLoad: number;
}

async function measure(
  id: ServerId,
  fixture: Fixture,
  checks: Query[],
  oracle: ZoneOracle,
  o: MeasureOptions,
): Promise<ServerResult> {
  const result: ServerResult = { id, label: SERVER_LABELS[id], ok: false };
  let server: StartedServer | undefined;
  try {
    const port = await freePort();
    log(`${id}: starting on 127.0.0.1:${port}, CPUs ${fixture.cores}`);
    server = await startServer(id, fixture, port);
    result.config = server.config;
    result.readyMs = Math.round(server.readyMs);
    result.cpusAllowed = allowedCpus(server.proc.pid);
    result.rssAfterLoadMiB = mib(treeRssKiB(server.proc.pid));
    result.pssAfterLoadMiB = mib(treePssKiB(server.proc.pid));
    log(`${id}: answering after ${result.readyMs} ms; RSS ${result.rssAfterLoadMiB} MiB; checking answers`);

    const mismatches = await checkAnswers(port, checks, oracle);
    result.check = { probes: checks.length, mismatches };
    if (mismatches.length > 0) throw new Error(`wrong answers:\n  ${mismatches.join('\n  ')}`);

    const base: Omit<DnsperfOptions, 'duration'> = {
      port,
      queryFile: o.queryFile,
      cores: o.clientCores,
      ...o.perf,
      serverPid: server.proc.pid,
    };
    const verboseFile = `${fixture.tmp}/${id}-dnsperf-verbose.txt`;
    if (o.warmup > 0) {
      result.warmup = await runDnsperf({ ...base, duration: o.warmup });
      log(`${id}: warm-up ${fmtRun(result.warmup)}`);
    }
    if (o.fixedQps !== undefined) {
      result.rated = await ratedRun(
        id,
        (qps) => runDnsperf({ ...base, duration: o.duration, qps }),
        o.fixedQps,
        0,
      );
    } else {
      result.max = await runDnsperf({ ...base, duration: o.duration });
      log(`${id}: unlimited ${fmtRun(result.max)}`);
      if (result.max.lost === 0) {
        // The closed-loop run itself answered everything: it is a loss-free run at its own rate.
        result.rated = result.max;
      } else {
        result.search = [];
        const rate = await findLossFreeRate(result.max, o.searchSteps, async (qps) => {
          const run = await runDnsperf({ ...base, duration: o.stepDuration, qps });
          result.search!.push(run);
          log(`${id}: search -Q ${Math.round(qps)} ${fmtRun(run)}`);
          return run;
        });
        result.rated = await ratedRun(
          id,
          (qps) => runDnsperf({ ...base, duration: o.duration, qps }),
          rate,
          2,
        );
      }
    }
    const rated = result.rated;
    const latencyRate = Math.max(1, Math.round(rated.qps * o.latencyLoad));
    result.latency = await runDnsperf({
      ...base,
      duration: Math.min(o.duration, 10),
      qps: latencyRate,
      verboseFile,
    });
    log(`${id}: latency -Q ${latencyRate} ${fmtRun(result.latency)}`);
    result.rssAfterRunMiB = mib(treeRssKiB(server.proc.pid));
    result.summary = {
      maxQps: result.max?.qps ?? rated.qps,
      maxLostPct: result.max?.lostPct ?? rated.lostPct,
      ratedQps: rated.qps,
      ratedLost: rated.lost,
      ratedLostPct: rated.lostPct,
      lossFree: rated.lost === 0,
      ratedQpsPerCore: Math.round(rated.qps / fixture.coreCount),
      ratedAvgMs: rated.latencyAvgMs,
      ...(rated.qpsPerServerCpu !== undefined ? { qpsPerServerCpu: rated.qpsPerServerCpu } : {}),
      latencyQps: result.latency.qps,
      latencyLost: result.latency.lost,
      ...(result.latency.latencyP50Ms !== undefined ? { p50Ms: result.latency.latencyP50Ms } : {}),
      ...(result.latency.latencyP99Ms !== undefined ? { p99Ms: result.latency.latencyP99Ms } : {}),
    };
    result.ok = true;
  } catch (e) {
    result.error = (e as Error).message;
    log(`${id}: FAILED: ${result.error}`);
  } finally {
    if (server) {
      if (server.proc.exited()) {
        result.ok = false;
        result.error ??= `exited during the run:\n${server.proc.tail()}`;
      }
      await server.stop();
      log(`${id}: stopped`);
    }
  }
  return result;
}

/**
 * The reported run at `rate`; when it loses queries, up to `retries` more runs at 90% of the previous
 * rate (the search runs are short, so a longer run may find a burst they did not). Returns the last.
 */
async function ratedRun(
  id: ServerId,
  runAt: (qps: number) => Promise<DnsperfResult>,
  rate: number,
  retries: number,
): Promise<DnsperfResult> {
  let qps = rate;
  for (let attempt = 0; ; attempt++) {
    const r = await runAt(qps);
    log(`${id}: rated -Q ${Math.round(qps)} ${fmtRun(r)}`);
    if (r.lost === 0 || attempt >= retries) return r;
    qps = Math.round(qps * 0.9);
  }
}

/**
 * The highest rate with no lost query. If the unlimited run lost nothing, its rate is loss-free by
 * definition. Otherwise a bisection of dnsperf -Q between 0 and the unlimited rate: a step passes
 * when it lost nothing and achieved at least 97% of the requested rate.
 */
async function findLossFreeRate(
  max: DnsperfResult,
  steps: number,
  tryRate: (qps: number) => Promise<DnsperfResult>,
): Promise<number> {
  if (max.lost === 0) return max.qps;
  let lo = 0;
  let hi = max.qps;
  let rate = Math.round(max.qps * 0.9);
  let best = 0;
  for (let i = 0; i < steps; i++) {
    const run = await tryRate(rate);
    if (run.lost === 0 && run.qps >= 0.97 * rate) {
      lo = rate;
      best = Math.max(best, run.qps);
      rate = Math.round((rate + hi) / 2);
    } else {
      hi = rate;
      rate = Math.round(lo > 0 ? (lo + rate) / 2 : rate * 0.6);
    }
  }
  return best > 0 ? lo : rate;
}

async function checkAnswers(port: number, checks: Query[], oracle: ZoneOracle): Promise<string[]> {
  const mismatches: string[] = [];
  for (const q of checks) {
    const want = oracle.expect(q.name, q.qtype);
    const got = await dig(port, q.name, q.qtype, { tool: 'kdig' });
    const answer = got.answer.map(normalise).sort();
    if (got.status !== want.status || JSON.stringify(answer) !== JSON.stringify(want.answer)) {
      mismatches.push(
        `${q.name} ${q.qtype}: got ${got.status} ${JSON.stringify(answer)}, want ${want.status} ${JSON.stringify(want.answer)}`,
      );
    }
  }
  return mismatches;
}

/** Every server serves the same zone to the same queries, so the rcode shares must agree. */
function compareRcodes(results: RunResults): void {
  const shares = results.servers
    .filter((s) => s.rated)
    .map((s) => {
      const r = s.rated!;
      const total = Object.values(r.rcodes).reduce((a, b) => a + b, 0) || 1;
      return { id: s.id, nx: (100 * (r.rcodes.NXDOMAIN ?? 0)) / total, other: Object.keys(r.rcodes) };
    });
  for (const s of shares) {
    const odd = s.other.filter((c) => c !== 'NOERROR' && c !== 'NXDOMAIN');
    if (odd.length > 0) results.notes.push(`${s.id} answered with ${odd.join(', ')} during the rated run`);
    if (Math.abs(s.nx - 10) > 1) {
      results.notes.push(`${s.id}: NXDOMAIN share ${s.nx.toFixed(2)}% (expected about 10%)`);
    }
  }
}

function machineInfo(): Record<string, string | number> {
  const cpuinfo = safeRead('/proc/cpuinfo');
  return {
    nproc: os.availableParallelism(),
    cpuModel: /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? '?',
    kernel: `${os.type()} ${os.release()}`,
    memTotalGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    loadAvgAtStart: os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' '),
  };
}

function safeRead(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function printTable(results: RunResults): void {
  const load = `${Math.round(Number(results.options.latencyLoad) * 100)}%`;
  const rows = [
    [
      'server',
      'unlimited QPS (lost %)',
      'rated QPS',
      'lost',
      'QPS/core',
      'avg ms',
      'QPS/server-CPU-s',
      `p50 ms @${load}`,
      `p99 ms @${load}`,
      'ready ms',
      'RSS MiB',
    ],
  ];
  for (const s of results.servers) {
    const m = s.summary;
    if (!m) {
      rows.push([s.id, `FAILED: ${(s.error ?? '').split('\n')[0]}`]);
      continue;
    }
    rows.push([
      s.id,
      `${m.maxQps} (${m.maxLostPct}%)`,
      String(m.ratedQps),
      m.lossFree ? '0' : `${m.ratedLost} (${m.ratedLostPct}%)`,
      String(m.ratedQpsPerCore),
      m.ratedAvgMs.toFixed(3),
      String(m.qpsPerServerCpu ?? '-'),
      m.p50Ms?.toFixed(3) ?? '-',
      m.p99Ms?.toFixed(3) ?? '-',
      String(s.readyMs ?? '-'),
      String(s.rssAfterLoadMiB ?? '-'),
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  process.stdout.write('\n');
  for (const r of rows) process.stdout.write(`${r.map((c, i) => c.padEnd(widths[i]!)).join('  ')}\n`);
  for (const n of results.notes) process.stdout.write(`note: ${n}\n`);
  process.stdout.write('\n');
}

function fmtRun(r: DnsperfResult): string {
  return `${r.qps} qps, lost ${r.lost} (${r.lostPct}%)${r.udpRcvbufErrors ? ` [rcvbuf drops ${r.udpRcvbufErrors}]` : ''}, avg ${r.latencyAvgMs} ms${
    r.latencyP99Ms !== undefined ? `, p99 ${r.latencyP99Ms.toFixed(3)} ms` : ''
  }${r.serverCpuS !== undefined ? `, server CPU ${r.serverCpuS} s` : ''}`;
}

function mib(kib: number): number {
  return Math.round((kib / 1024) * 10) / 10;
}

function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`--${flag} must be a positive integer, not ${JSON.stringify(text)}`);
  return n;
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench: ${(e as Error).stack ?? String(e)}\n\n${USAGE}`);
    process.exit(1);
  },
);
