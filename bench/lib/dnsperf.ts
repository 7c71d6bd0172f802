/**
 * Runs dnsperf (pinned with taskset) and parses its statistics. With `verbose`, dnsperf's per-response
 * lines (`> RCODE name type latency`) go to a file that is read after the run, so that percentiles
 * can be computed without the harness competing for CPU during the measurement.
 */
import { createReadStream, readFileSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { run, treeCpuSeconds } from './proc.ts';

export interface DnsperfOptions {
  port: number;
  queryFile: string;
  /** Seconds. */
  duration: number;
  /** taskset CPU list for dnsperf. */
  cores: string;
  /** -c: client sockets. */
  clients: number;
  /** -T: threads. */
  threads: number;
  /** -q: maximum queries outstanding. */
  outstanding: number;
  /** -Q: rate limit in queries per second; unlimited when undefined. */
  qps?: number;
  /** -t: seconds after which an unanswered query counts as lost. */
  timeout: number;
  /** Write per-query latencies to this file and compute percentiles from it. */
  verboseFile?: string;
  /** -D: set the DO bit (RFC 3225) on every query, for DNSSEC answers from signed zones. */
  dnssecOk?: boolean;
  /** Server process to sample CPU time from during the run. */
  serverPid?: number;
}

export interface DnsperfResult {
  qpsLimit: number | null;
  durationS: number;
  sent: number;
  completed: number;
  lost: number;
  lostPct: number;
  qps: number;
  rcodes: Record<string, number>;
  latencyAvgMs: number;
  latencyMinMs: number;
  latencyMaxMs: number;
  latencyStdDevMs: number;
  /** Average response size in octets (dnsperf's "Average packet size"): shows whether DO answers carry RRSIGs. */
  responseBytes?: number;
  /** From the per-query lines, when verbose. */
  latencyP50Ms?: number;
  latencyP99Ms?: number;
  latencyP999Ms?: number;
  /** CPU seconds the server used during the run, and queries answered per server CPU second. */
  serverCpuS?: number;
  qpsPerServerCpu?: number;
  /**
   * Increase of the kernel's UDP RcvbufErrors counter (all sockets of the machine) during the run:
   * datagrams dropped because a receive buffer was full, which is how an overloaded UDP server loses
   * queries on loopback.
   */
  udpRcvbufErrors?: number;
  command: string;
}

/** The kernel's UDP RcvbufErrors counter (/proc/net/snmp). */
export function udpRcvbufErrors(): number | undefined {
  try {
    const lines = readFileSync('/proc/net/snmp', 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('Udp: '));
    const names = lines[0]?.split(/\s+/) ?? [];
    const values = lines[1]?.split(/\s+/) ?? [];
    const i = names.indexOf('RcvbufErrors');
    return i > 0 ? Number(values[i]) : undefined;
  } catch {
    return undefined;
  }
}

export function dnsperfArgs(o: DnsperfOptions): string[] {
  return [
    '-s',
    '127.0.0.1',
    '-p',
    String(o.port),
    '-d',
    o.queryFile,
    '-l',
    String(o.duration),
    '-c',
    String(o.clients),
    '-T',
    String(o.threads),
    '-q',
    String(o.outstanding),
    '-t',
    String(o.timeout),
    ...(o.qps !== undefined ? ['-Q', String(Math.round(o.qps))] : []),
    ...(o.verboseFile ? ['-v'] : []),
    ...(o.dnssecOk ? ['-D'] : []),
  ];
}

export async function runDnsperf(o: DnsperfOptions): Promise<DnsperfResult> {
  const args = dnsperfArgs(o);
  const command = `taskset -c ${o.cores} dnsperf ${args.join(' ')}`;
  const cpuBefore = o.serverPid !== undefined ? treeCpuSeconds(o.serverPid) : undefined;
  const dropsBefore = udpRcvbufErrors();
  let text: string;
  if (o.verboseFile) {
    // dnsperf writes statistics and per-query lines to stdout; send it all to the file.
    await run(
      'sh',
      ['-c', `exec "$@" > '${o.verboseFile}' 2>&1`, 'sh', 'taskset', '-c', o.cores, 'dnsperf', ...args],
      {
        timeoutMs: (o.duration + o.timeout + 60) * 1000,
      },
    );
    text = '';
  } else {
    const { stdout, stderr } = await run('dnsperf', args, {
      cores: o.cores,
      timeoutMs: (o.duration + o.timeout + 60) * 1000,
    });
    text = stdout + stderr;
  }
  const cpuAfter = o.serverPid !== undefined ? treeCpuSeconds(o.serverPid) : undefined;
  const dropsAfter = udpRcvbufErrors();

  let latencies: Float64Array | undefined;
  if (o.verboseFile) {
    const parsed = await readVerbose(o.verboseFile);
    text = parsed.statistics;
    latencies = parsed.latencies;
    rmSync(o.verboseFile, { force: true });
  }
  const result = parseStatistics(text, o.qps ?? null, command);
  if (latencies && latencies.length > 0) {
    latencies.sort();
    result.latencyP50Ms = percentile(latencies, 0.5) * 1000;
    result.latencyP99Ms = percentile(latencies, 0.99) * 1000;
    result.latencyP999Ms = percentile(latencies, 0.999) * 1000;
  }
  if (cpuBefore !== undefined && cpuAfter !== undefined) {
    result.serverCpuS = round(cpuAfter - cpuBefore, 2);
    result.qpsPerServerCpu = result.serverCpuS > 0 ? Math.round(result.completed / result.serverCpuS) : 0;
  }
  if (dropsBefore !== undefined && dropsAfter !== undefined)
    result.udpRcvbufErrors = dropsAfter - dropsBefore;
  return result;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

async function readVerbose(file: string): Promise<{ statistics: string; latencies: Float64Array }> {
  let latencies = new Float64Array(1 << 16);
  let n = 0;
  const other: string[] = [];
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.startsWith('> ')) {
      const value = Number(line.slice(line.lastIndexOf(' ') + 1));
      if (!Number.isFinite(value)) continue;
      if (n === latencies.length) {
        const bigger = new Float64Array(latencies.length * 2);
        bigger.set(latencies);
        latencies = bigger;
      }
      latencies[n++] = value;
    } else {
      other.push(line);
    }
  }
  return { statistics: other.join('\n'), latencies: latencies.subarray(0, n) };
}

function num(text: string, re: RegExp): number {
  const m = re.exec(text);
  if (!m?.[1]) throw new Error(`dnsperf output has no ${re}:\n${text}`);
  return Number(m[1]);
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function parseStatistics(text: string, qpsLimit: number | null, command: string): DnsperfResult {
  const sent = num(text, /Queries sent:\s+(\d+)/);
  const completed = num(text, /Queries completed:\s+(\d+)/);
  const lost = num(text, /Queries lost:\s+(\d+)/);
  const rcodes: Record<string, number> = {};
  const codes = /Response codes:\s+(.*)/.exec(text)?.[1] ?? '';
  for (const m of codes.matchAll(/([A-Z]+) (\d+)/g)) rcodes[m[1]!] = Number(m[2]);
  const packet = /Average packet size:\s+request \d+, response (\d+)/.exec(text);
  const latency = /Average Latency \(s\):\s+([\d.]+) \(min ([\d.]+), max ([\d.]+)\)/.exec(text);
  return {
    qpsLimit,
    durationS: num(text, /Run time \(s\):\s+([\d.]+)/),
    sent,
    completed,
    lost,
    lostPct: sent > 0 ? round((100 * lost) / sent, 4) : 0,
    qps: Math.round(num(text, /Queries per second:\s+([\d.]+)/)),
    rcodes,
    latencyAvgMs: round(Number(latency?.[1] ?? Number.NaN) * 1000, 3),
    latencyMinMs: round(Number(latency?.[2] ?? Number.NaN) * 1000, 3),
    latencyMaxMs: round(Number(latency?.[3] ?? Number.NaN) * 1000, 3),
    latencyStdDevMs: round(num(text, /Latency StdDev \(s\):\s+([\d.]+)/) * 1000, 3),
    ...(packet ? { responseBytes: Number(packet[1]) } : {}),
    command,
  };
}
