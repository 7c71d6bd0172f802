/**
 * Many DNSRecordSets in a real API server: start-up, memory and start-up writes of `zonekeeper operator`
 * and `zonekeeper server` (docs/benchmarks.md, "Kubernetes, 100,000 record sets"). Not part of `npm test`:
 *
 *   npx node bench/kubernetes-scale.ts [--records 100000] [--zones 100] [--concurrency 16] [--restarts 1]
 *
 * One kube-apiserver + etcd (test/support/kube.ts), the chart's CRDs and RBAC (deploy/manifests), the
 * operator and the server running as the chart's service accounts. The record sets (one A record each,
 * spread round-robin over the zones) are created before Zonekeeper starts, by parallel POSTs from this
 * process (no kubectl per object). Then:
 *
 * 1. **cold start**: operator and server start on the full set, none of it has a status yet. Measured
 *    from the spawn: operator /readyz, server /readyz, the first correct answer (a record in the middle
 *    of the first zone), every zone answering (the last record of each), every record set `Ready` for
 *    its generation (watched by this process), and the work settling (operator work queues empty and
 *    no write to Zonekeeper's kinds or ConfigMaps for `--quiet` seconds).
 * 2. **restart**, `--restarts` times: both are stopped (SIGTERM) and started again on the unchanged
 *    set; the same times, and the writes the API server received from the spawn until settled. With
 *    nothing changed there should be none but the Lease's.
 *
 * Writes are counted by the API server itself (`apiserver_request_total` by verb, resource and
 * subresource, the difference over each phase) and by the operator (`zonekeeper_kube_writes_total`).
 * Memory: VmRSS and VmHWM of each process from /proc, and the V8 heap after a full garbage collection
 * (bench/lib/heap-probe.ts, loaded through NODE_OPTIONS, on SIGUSR2), once settled; the API server's
 * and etcd's RSS beside them. Writes bench/results/kubernetes-scale-<time>.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { KubeApi, loadKubeConfig } from '../src/sources/kubernetes/kube-api.ts';
import { type KubeObject, Reflector } from '../src/sources/kubernetes/reflector.ts';
import { buildQuery, exchange } from '../test/support/dns-client.ts';
import { type KubeCluster, serviceAccountUser, startKube } from '../test/support/kube.ts';
import { freePort } from '../test/support/ports.ts';
import { CLI, ROOT } from '../test/support/zonekeeper-process.ts';
import { statusField } from './lib/proc.ts';

const USAGE = `npx node bench/kubernetes-scale.ts [options]

  --records N       DNSRecordSets (default 100000; one A record each)
  --zones N         DNSZones they are spread over, round-robin (default 100)
  --concurrency N   parallel creates (default 16)
  --restarts N      stop and start operator and server again this many times (default 1)
  --quiet S         settled = queues empty and no write to Zonekeeper's kinds for S seconds (default 10)
  --timeout S       end a start that has not settled after S seconds (default 3600); the restart
                    after it then ends --observe S (default 120) seconds after every zone answers
  --profile DIR     write a V8 CPU profile of the operator there (node --cpu-prof, on its exit)
  --out FILE        JSON result (default bench/results/kubernetes-scale-<time>.json)
`;

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '100000' },
    zones: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '16' },
    restarts: { type: 'string', default: '1' },
    quiet: { type: 'string', default: '10' },
    observe: { type: 'string', default: '120' },
    timeout: { type: 'string', default: '3600' },
    profile: { type: 'string' },
    out: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const RECORDS = Number(values.records);
const ZONES = Number(values.zones);
const CONCURRENCY = Number(values.concurrency);
const RESTARTS = Number(values.restarts);
const QUIET_MS = Number(values.quiet) * 1000;
const OBSERVE_MS = Number(values.observe) * 1000;
const TIMEOUT_MS = Number(values.timeout) * 1000;
/** glibc's malloc arenas for operator and server: the chart's default (2) unless the environment says. */
const MALLOC_ARENA_MAX = process.env.MALLOC_ARENA_MAX ?? '2';
if (![RECORDS, ZONES, CONCURRENCY].every((n) => Number.isInteger(n) && n > 0) || ZONES > RECORDS)
  throw new Error(`bad --records/--zones/--concurrency\n${USAGE}`);

const GROUP = 'dns.zonekeeper.dev';
const API = `${GROUP}/v1alpha1`;
const SYSTEM = 'zonekeeper-system';
const NS = 'bench';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const DOMAIN = 'k8s.example';

/** Record set k: zone k % ZONES, index ⌊k / ZONES⌋ in it. */
const zoneOf = (k: number) => k % ZONES;
const indexOf = (k: number) => Math.floor(k / ZONES);
const addressOf = (k: number) => `10.${(k >> 16) & 255}.${(k >> 8) & 255}.${k & 255}`;
const zoneName = (z: number) => `z${z}`;
const zoneDomain = (z: number) => `z${z}.${DOMAIN}`;
/** The last record set of zone z (the highest k with k % ZONES === z). */
const lastOfZone = (z: number) => z + ZONES * Math.floor((RECORDS - 1 - z) / ZONES);

const log = (message: string) =>
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

// ---------------------------------------------------------------------------------------------------
// The API server, as the admin

interface Admin {
  agent: Agent;
  ca: Buffer;
  token: string;
  server: string;
}

function adminOf(kube: KubeCluster): Admin {
  const config = readFileSync(kube.adminKubeconfig, 'utf8');
  const token = /^\s+token: (\S+)$/m.exec(config)?.[1];
  if (!token) throw new Error('no token in the admin kubeconfig');
  return {
    agent: new Agent({ keepAlive: true, maxSockets: CONCURRENCY }),
    ca: readFileSync(path.join(kube.dir, 'pki', 'ca.crt')),
    token,
    server: kube.server,
  };
}

function call(
  admin: Admin,
  method: string,
  apiPath: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      `${admin.server}${apiPath}`,
      {
        method,
        agent: admin.agent,
        ca: admin.ca,
        headers: {
          authorization: `Bearer ${admin.token}`,
          accept: 'application/json, text/plain',
          ...(payload ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Creates record sets [from, to) with CONCURRENCY requests in flight; an existing one counts as made. */
async function createRecordSets(admin: Admin, from: number, to: number): Promise<void> {
  let next = from;
  let done = 0;
  const startedAt = performance.now();
  const worker = async () => {
    while (next < to) {
      const k = next++;
      const body = {
        apiVersion: API,
        kind: 'DNSRecordSet',
        metadata: { name: `${zoneName(zoneOf(k))}-h${indexOf(k)}`, namespace: NS },
        spec: {
          zoneRef: { name: zoneName(zoneOf(k)) },
          name: `h${indexOf(k)}`,
          type: 'A',
          records: [addressOf(k)],
        },
      };
      for (let attempt = 0; ; attempt++) {
        try {
          const r = await call(admin, 'POST', `/apis/${API}/namespaces/${NS}/dnsrecordsets`, body);
          if (r.status === 201 || r.status === 409) break;
          if (attempt >= 5 || (r.status < 500 && r.status !== 429))
            throw new Error(`create ${body.metadata.name}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
        } catch (e) {
          if (attempt >= 5) throw e;
        }
        await sleep(200 * (attempt + 1));
      }
      if (++done % 10_000 === 0)
        log(
          `  ${done} created (${Math.round(done / ((performance.now() - startedAt) / 1000))}/s), load ${load()}`,
        );
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

/** Mutating requests the API server served, by `VERB resource[/subresource]` (apiserver_request_total). */
async function apiWrites(admin: Admin): Promise<Map<string, number>> {
  const r = await call(admin, 'GET', '/metrics');
  if (r.status !== 200) throw new Error(`API server /metrics: HTTP ${r.status}`);
  const out = new Map<string, number>();
  for (const line of r.text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!] as const),
    );
    if (!['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY'].includes(labels.verb ?? '')) continue;
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}`;
    out.set(key, (out.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/**
 * The API server's own view of the watches: watchers it closed because they did not take events fast
 * enough (`apiserver_terminated_watchers_total`), by resource, and the events it sent
 * (`apiserver_watch_events_total`) for Zonekeeper's kinds.
 */
async function apiWatchCounters(admin: Admin): Promise<Map<string, number>> {
  const r = await call(admin, 'GET', '/metrics');
  if (r.status !== 200) throw new Error(`API server /metrics: HTTP ${r.status}`);
  const out = new Map<string, number>();
  for (const line of r.text.split('\n')) {
    const m = /^(apiserver_terminated_watchers_total|apiserver_watch_events_total)\{([^}]*)\} (\S+)$/.exec(
      line,
    );
    if (!m) continue;
    const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    const resource = labels.resource ?? labels.kind ?? '';
    if (!/dns|zone|record/i.test(resource)) continue;
    const key = `${m[1]} ${resource}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

function difference(after: Map<string, number>, before: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of [...after].sort()) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0) out[k] = d;
  }
  return out;
}

/** Writes to Zonekeeper's kinds and ConfigMaps (serial records): what must settle. Leases and Events not. */
const settlingWrites = (writes: Map<string, number>) =>
  [...writes]
    .filter(([k]) => /dnszoneclasses|dnszones|dnsrecordsets|configmaps/.test(k))
    .reduce((sum, [, v]) => sum + v, 0);

// ---------------------------------------------------------------------------------------------------
// Zonekeeper processes

interface Proc {
  name: string;
  child: ChildProcess;
  pid: number;
  httpUrl: string;
  dnsPort: number;
  logFile: string;
  stop(): Promise<void>;
}

async function startProc(
  name: string,
  args: string[],
  dir: string,
  heapDir: string,
  dns: boolean,
): Promise<Proc> {
  const httpPort = await freePort(false);
  const dnsPort = dns ? await freePort() : 0;
  const logFile = path.join(dir, `${name}.log`);
  const out = createWriteStream(logFile, { flags: 'a' });
  const profile =
    values.profile && name.startsWith('operator')
      ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(values.profile)]
      : [];
  const { MALLOC_ARENA_MAX: _inherited, ...env } = process.env;
  const child = spawn(
    process.execPath,
    [
      ...profile,
      CLI,
      ...args,
      '--http',
      `127.0.0.1:${httpPort}`,
      ...(dns ? ['--dns', `127.0.0.1:${dnsPort}`] : []),
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...env,
        ZONEKEEPER_BENCH_HEAP_DIR: heapDir,
        // What the chart sets in every pod (value `mallocArenaMax`); `MALLOC_ARENA_MAX=` (empty) in the
        // harness's environment runs with glibc's default instead.
        ...(MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX } : {}),
        NODE_OPTIONS:
          `${process.env.NODE_OPTIONS ?? ''} --import ${path.join(ROOT, 'bench/lib/heap-probe.ts')}`.trim(),
      },
    },
  );
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  return {
    name,
    child,
    pid: child.pid!,
    httpUrl: `http://127.0.0.1:${httpPort}`,
    dnsPort,
    logFile,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 30_000).unref();
      }),
  };
}

async function status(url: string): Promise<number> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await r.arrayBuffer();
    return r.status;
  } catch {
    return 0;
  }
}

async function metrics(p: Proc): Promise<string> {
  try {
    return await (await fetch(`${p.httpUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  } catch {
    return '';
  }
}

function metricLines(text: string, re: RegExp): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n'))
    if (re.test(line))
      out[line.slice(0, line.lastIndexOf(' '))] = Number(line.slice(line.lastIndexOf(' ') + 1));
  return out;
}

/** The record's A answer from the server (any rcode other than NOERROR with the address is false). */
async function answers(port: number, k: number): Promise<boolean> {
  try {
    const reply = await exchange(
      port,
      buildQuery({ name: `h${indexOf(k)}.${zoneDomain(zoneOf(k))}`, type: 1 }),
      {
        timeoutMs: 500,
      },
    );
    const raw = reply.raw;
    if (!raw || !reply.message || reply.message.rcode !== 0) return false;
    const octets = addressOf(k).split('.').map(Number);
    for (let i = raw.length - 4; i >= 12; i--) if (octets.every((o, j) => raw[i + j] === o)) return true;
    return false;
  } catch {
    return false;
  }
}

function procStatus(pid: number): { rssMiB: number; hwmMiB: number } | undefined {
  if (!existsSync(`/proc/${pid}/status`)) return undefined;
  return {
    rssMiB: Math.round(statusField(pid, 'VmRSS') / 1024),
    hwmMiB: Math.round(statusField(pid, 'VmHWM') / 1024),
  };
}

/** The pid of a child of this process by its command name (etcd, started by test/support/kube.ts). */
function childByName(name: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (comm === name && ppid === process.pid) return Number(entry);
    } catch {
      // gone
    }
  }
  return undefined;
}

/** Heap figures after a full GC (bench/lib/heap-probe.ts), in MiB. */
async function heapOf(pid: number, heapDir: string): Promise<Record<string, number> | undefined> {
  const file = path.join(heapDir, `heap-${pid}.json`);
  await rm(file, { force: true });
  try {
    process.kill(pid, 'SIGUSR2');
  } catch {
    return undefined;
  }
  for (let i = 0; i < 100; i++) {
    await sleep(100);
    try {
      const h = JSON.parse(await readFile(file, 'utf8')) as Record<string, number>;
      const m = (v: number | undefined) => Math.round(((v ?? 0) / 2 ** 20) * 10) / 10;
      return {
        rssMiB: m(h.rss),
        heapUsedMiB: m(h.heapUsed),
        heapTotalMiB: m(h.heapTotal),
        externalMiB: m(h.external),
        heapLimitMiB: m(h.heapSizeLimit),
        eventLoopDelayMaxMs: h.eventLoopDelayMaxMs ?? 0,
        eventLoopStallSeconds: h.eventLoopStallSeconds ?? 0,
      };
    } catch {
      // not written yet
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------
// Readiness of every record set, watched from this process

class ReadyWatch {
  private readonly ready = new Map<string, boolean>();
  private readyCount = 0;
  /** Per record set, a hash of its status as last seen. */
  private readonly statusHash = new Map<string, string>();
  /** From `mark()`: the status hash of each record set that was Ready then, and those rewritten since. */
  private marked = new Map<string, string>();
  private readonly rewritten = new Set<string>();
  private readonly reflector: Reflector;

  constructor(kubeconfig: string) {
    const api = new KubeApi(loadKubeConfig(kubeconfig));
    this.reflector = new Reflector({
      name: 'bench-dnsrecordsets',
      listerWatcher: api.listerWatcher('DNSRecordSet'),
      onReplace: (items) => {
        this.ready.clear();
        this.readyCount = 0;
        for (const o of items) this.set(o);
      },
      onEvent: (type, o) => {
        if (type === 'DELETED') this.set(o, true);
        else this.set(o);
      },
    });
    this.reflector.start();
  }

  private set(o: KubeObject, deleted = false): void {
    const key = `${o.metadata?.namespace}/${o.metadata?.name}`;
    const was = this.ready.get(key) ?? false;
    const x = o as KubeObject & {
      metadata: { generation?: number };
      status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
    };
    const now =
      !deleted &&
      x.status?.observedGeneration === x.metadata.generation &&
      (x.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
    if (deleted) this.ready.delete(key);
    else this.ready.set(key, now);
    this.readyCount += (now ? 1 : 0) - (was ? 1 : 0);
    const hash = createHash('sha1')
      .update(JSON.stringify((o as { status?: unknown }).status ?? null))
      .digest('base64');
    this.statusHash.set(key, hash);
    const before = this.marked.get(key);
    if (before !== undefined && before !== hash) this.rewritten.add(key);
  }

  /** Remembers the status of every record set that is Ready now. */
  mark(): void {
    this.marked = new Map([...this.ready].filter(([, r]) => r).map(([k]) => [k, this.statusHash.get(k)!]));
    this.rewritten.clear();
  }

  /** Record sets Ready at `mark()` whose status changed since (a status write that changed something). */
  get rewrittenSinceMark(): { ofReady: number; rewritten: number } {
    return { ofReady: this.marked.size, rewritten: this.rewritten.size };
  }

  get count(): number {
    return this.readyCount;
  }

  get total(): number {
    return this.ready.size;
  }

  synced(): Promise<void> {
    return this.reflector.synced;
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }
}

// ---------------------------------------------------------------------------------------------------
// One start of operator and server, measured until settled

interface Phase {
  phase: string;
  loadAtStart: string;
  loadAtEnd: string;
  /** Milliseconds from the spawn. */
  ms: {
    operatorReady?: number;
    serverReady?: number;
    firstAnswer?: number;
    everyZone?: number;
    allRecordSetsReady?: number;
    settled?: number;
  };
  /** Mutating requests the API server served from the spawn until settled. */
  apiWrites: Record<string, number>;
  /** Status writes to DNSRecordSets and DNSZones among them. */
  statusWrites: number;
  operatorMetrics: Record<string, number>;
  memory: Record<string, unknown>;
  /** The API server's watch counters over the phase (terminated watchers, events sent). */
  apiWatches?: Record<string, number>;
  /** How the operator's watches ended (its reflector log lines, counted by reason). */
  watchEnds?: Record<string, number>;
  /** Why the phase ended before it settled (--timeout, or --observe after an unsettled start). */
  timedOut?: string;
  /**
   * Record sets that were Ready when the phase began, and how many of them had their status changed
   * during it (seen on the harness's watch). With nothing changed, a restart must change none.
   */
  statusesChanged?: { ofReady: number; rewritten: number };
}

async function runPhase(
  name: string,
  kube: KubeCluster,
  admin: Admin,
  watch: ReadyWatch,
  dir: string,
  heapDir: string,
  /** The previous start did not settle: end OBSERVE_MS after every zone answers. */
  afterUnsettled = false,
): Promise<{ phase: Phase; operator: Proc; server: Proc }> {
  const phase: Phase = {
    phase: name,
    loadAtStart: load(),
    loadAtEnd: '',
    ms: {},
    apiWrites: {},
    statusWrites: 0,
    operatorMetrics: {},
    memory: {},
  };
  const before = await apiWrites(admin);
  const watchesBefore = await apiWatchCounters(admin);
  watch.mark();
  log(`${name}: starting operator and server (load ${phase.loadAtStart})`);
  const t0 = performance.now();
  const since = () => Math.round(performance.now() - t0);
  const operator = await startProc(
    `operator-${name}`,
    [
      'operator',
      '--kubeconfig',
      kube.kubeconfigFor(OPERATOR),
      '--namespace',
      SYSTEM,
      '--identity',
      `bench-${name}`,
    ],
    dir,
    heapDir,
    false,
  );
  const server = await startProc(
    `server-${name}`,
    ['server', '--kubeconfig', kube.kubeconfigFor(SERVER)],
    dir,
    heapDir,
    true,
  );
  const middle = zoneOf(0) + ZONES * Math.floor(indexOf(lastOfZone(0)) / 2);
  const zonesLeft = new Set(Array.from({ length: ZONES }, (_, z) => z));
  let lastWrites = -1;
  let quietSince = 0;
  for (;;) {
    if (operator.child.exitCode !== null || server.child.exitCode !== null)
      throw new Error(
        `${operator.child.exitCode !== null ? operator.name : server.name} exited; see its log`,
      );
    if (since() > TIMEOUT_MS) {
      // Keep what was measured: the writes and memory so far, the times reached.
      phase.timedOut = `not settled within ${TIMEOUT_MS / 1000} s; ${watch.count} of ${RECORDS} record sets Ready, ${zonesLeft.size} zones not answering`;
      log(`${name}: ${phase.timedOut}`);
      break;
    }
    const { ms } = phase;
    if (afterUnsettled && ms.everyZone !== undefined && since() - ms.everyZone >= OBSERVE_MS) {
      phase.timedOut = `the previous start had not settled: ended ${OBSERVE_MS / 1000} s after every zone answered`;
      break;
    }
    if (ms.operatorReady === undefined && (await status(`${operator.httpUrl}/readyz`)) === 200)
      ms.operatorReady = since();
    if (ms.serverReady === undefined && (await status(`${server.httpUrl}/readyz`)) === 200)
      ms.serverReady = since();
    if (ms.firstAnswer === undefined && (await answers(server.dnsPort, middle))) ms.firstAnswer = since();
    if (ms.firstAnswer !== undefined && ms.everyZone === undefined) {
      // In parallel, 50 at a time: a slow answer must not stretch the loop by the number of zones.
      const left = [...zonesLeft];
      for (let i = 0; i < left.length; i += 50)
        await Promise.all(
          left.slice(i, i + 50).map(async (z) => {
            if (await answers(server.dnsPort, lastOfZone(z))) zonesLeft.delete(z);
          }),
        );
      if (zonesLeft.size === 0) ms.everyZone = since();
    }
    if (ms.allRecordSetsReady === undefined && watch.total >= RECORDS && watch.count >= RECORDS)
      ms.allRecordSetsReady = since();
    // Settled: everything above seen, the operator's queues empty, no write to Zonekeeper's kinds or
    // ConfigMaps for QUIET_MS.
    if (ms.everyZone !== undefined && ms.allRecordSetsReady !== undefined && ms.serverReady !== undefined) {
      const text = await metrics(operator);
      const depth = Object.values(metricLines(text, /^zonekeeper_workqueue_depth\{/)).reduce(
        (a, b) => a + b,
        0,
      );
      const writes = settlingWrites(await apiWrites(admin));
      if (depth > 0 || writes !== lastWrites) {
        lastWrites = writes;
        quietSince = performance.now();
      } else if (performance.now() - quietSince >= QUIET_MS) {
        ms.settled = Math.round(quietSince - t0);
        break;
      }
    }
    await sleep(ms.firstAnswer === undefined ? 50 : 250);
  }
  phase.apiWrites = difference(await apiWrites(admin), before);
  phase.apiWatches = difference(await apiWatchCounters(admin), watchesBefore);
  phase.watchEnds = watchEnds(operator.logFile);
  phase.statusesChanged = watch.rewrittenSinceMark;
  phase.statusWrites = Object.entries(phase.apiWrites)
    .filter(([k]) => /^(PUT|PATCH|APPLY) dns(zones|recordsets)\/status$/.test(k))
    .reduce((sum, [, v]) => sum + v, 0);
  phase.operatorMetrics = metricLines(
    await metrics(operator),
    /^zonekeeper_(kube_writes_total|serial_record_writes_total|kube_events_total|reconcile_total|kube_reflector_total)\{/,
  );
  const apiserverPid = kube.apiServerPid;
  const etcdPid = childByName('etcd');
  phase.memory = {
    operator: { ...procStatus(operator.pid), heap: await heapOf(operator.pid, heapDir) },
    server: { ...procStatus(server.pid), heap: await heapOf(server.pid, heapDir) },
    kubeApiserver: procStatus(apiserverPid),
    ...(etcdPid ? { etcd: procStatus(etcdPid) } : {}),
  };
  phase.loadAtEnd = load();
  log(`${name}: ${JSON.stringify(phase)}`);
  return { phase, operator, server };
}

/** The operator's watch ends (the reflector's `watch ended` log lines), counted by kind and reason. */
function watchEnds(logFile: string): Record<string, number> {
  const out: Record<string, number> = {};
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const m = /(\S+): watch ended .*\bended="([^"]*)"/.exec(line);
    if (!m) continue;
    const key = `${m[1]} ${m[2]}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------

const kube = await startKube({ users: [OPERATOR, SERVER] });
const dir = await mkdtemp(path.join(os.tmpdir(), 'zonekeeper-bench-k8s-scale-'));
const heapDir = path.join(dir, 'heap');
await mkdir(heapDir);
const running: Proc[] = [];
let watch: ReadyWatch | undefined;
const result: Record<string, unknown> = {
  when: new Date().toISOString(),
  records: RECORDS,
  zones: ZONES,
  concurrency: CONCURRENCY,
  machine: {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
  },
  loadAtStart: load(),
  mallocArenaMax: MALLOC_ARENA_MAX || 'glibc default',
  phases: [] as Phase[],
};
const out =
  values.out ??
  path.join(ROOT, 'bench', 'results', `kubernetes-scale-${String(result.when).replace(/[:.]/g, '-')}.json`);
const save = async () => {
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
};
let code = 0;
try {
  await kube.kubectlOk(['create', 'namespace', SYSTEM]);
  await kube.kubectlOk(['create', 'namespace', NS]);
  // The chart as rendered (CRDs, service accounts, RBAC): the operator and the server run with its roles.
  await kube.kubectlOk([
    'apply',
    '-k',
    path.join(ROOT, 'deploy/manifests'),
    '--server-side',
    '--force-conflicts',
  ]);
  const admin = adminOf(kube);
  await kube.kubectlOk(['apply', '-f', '-'], {
    input: [
      {
        apiVersion: API,
        kind: 'DNSZoneClass',
        metadata: { name: 'builtin' },
        spec: { backend: { builtin: {} }, nameServers: [`ns1.${DOMAIN}.`] },
      },
      ...Array.from({ length: ZONES }, (_, z) => ({
        apiVersion: API,
        kind: 'DNSZone',
        metadata: { name: zoneName(z), namespace: NS },
        spec: { domainName: zoneDomain(z), className: 'builtin' },
      })),
    ]
      .map((d) => `---\n${stringify(d)}`)
      .join(''),
  });
  log(`creating ${RECORDS} record sets in ${ZONES} zones, ${CONCURRENCY} at a time (load ${load()})`);
  const c0 = performance.now();
  await createRecordSets(admin, 0, RECORDS);
  const createMs = performance.now() - c0;
  result.create = {
    seconds: Math.round(createMs / 100) / 10,
    perSecond: Math.round(RECORDS / (createMs / 1000)),
  };
  log(`created in ${(createMs / 1000).toFixed(1)} s`);
  watch = new ReadyWatch(kube.adminKubeconfig);
  await watch.synced();
  const phases = result.phases as Phase[];
  for (let i = 0; i <= RESTARTS; i++) {
    const { phase, operator, server } = await runPhase(
      i === 0 ? 'cold' : `restart${i}`,
      kube,
      admin,
      watch,
      dir,
      heapDir,
      phases.at(-1)?.timedOut !== undefined,
    );
    running.push(operator, server);
    phases.push(phase);
    await save();
    if (i < RESTARTS) {
      log('stopping operator and server');
      await Promise.all([operator.stop(), server.stop()]);
      running.length = 0;
    }
  }
  result.loadAtEnd = load();
  await save();
  const secs = (v: number | undefined) => (v === undefined ? '–' : `${(v / 1000).toFixed(1)} s`);
  const mem = (p: Phase, who: 'operator' | 'server') => {
    const m = p.memory[who] as { rssMiB?: number; hwmMiB?: number; heap?: { heapUsedMiB: number } };
    return `${m.rssMiB} MiB (peak ${m.hwmMiB}), heap ${m.heap?.heapUsedMiB ?? '?'} MiB`;
  };
  console.log(
    `\n${RECORDS.toLocaleString('en')} record sets in ${ZONES} zones; created in ${(createMs / 1000).toFixed(1)} s`,
  );
  console.log(
    '| start | operator ready | server ready | first answer | every zone | all Ready | settled | status writes | Ready ones changed | operator RSS | server RSS | load |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |');
  for (const p of phases)
    console.log(
      `| ${p.phase} | ${secs(p.ms.operatorReady)} | ${secs(p.ms.serverReady)} | ${secs(p.ms.firstAnswer)} | ${secs(p.ms.everyZone)} | ${secs(p.ms.allRecordSetsReady)} | ${secs(p.ms.settled)} | ${p.statusWrites} | ${p.statusesChanged?.rewritten ?? '–'} of ${p.statusesChanged?.ofReady ?? '–'} | ${mem(p, 'operator')} | ${mem(p, 'server')} | ${p.loadAtStart} → ${p.loadAtEnd} |`,
    );
  for (const p of phases) console.log(`${p.phase} API writes: ${JSON.stringify(p.apiWrites)}`);
  for (const p of phases)
    console.log(
      `${p.phase} watches: API server ${JSON.stringify(p.apiWatches)}; operator ${JSON.stringify(p.watchEnds)}`,
    );
  console.log(`\nresult: ${out}`);
} catch (e) {
  code = 1;
  result.error = String(e);
  log(String(e));
  for (const p of running) log(`${p.name} log: ${p.logFile}`);
  await save();
} finally {
  await Promise.all(running.map((p) => p.stop()));
  await watch?.stop();
  await kube.stop();
  if (code === 0) await rm(dir, { recursive: true, force: true });
  else log(`kept ${dir} (logs)`);
}
process.exit(code);
