/**
 * One kubizone Zone adopting many Records in a real API server (docs/benchmarks.md, "Kubernetes: a
 * kubizone Zone and a burst of Records"). Not part of `npm test`:
 *
 *   npx node bench/kubizone-burst.ts --case burst --records 10000 [--profile DIR] [--logs DIR]
 *
 * One kube-apiserver + etcd (test/support/kube.ts), kubizone's CRDs (deploy/crds), the chart's RBAC,
 * `zonekeeper operator` and `zonekeeper server` as the chart's service accounts, one Zone `big.test.`
 * in one namespace admitting its Records. The Records (one A record each) are created by parallel
 * POSTs from this process, 32 in flight.
 *
 * - `--case startup`: the Zone and the Records exist before operator and server start; the clock
 *   starts at their spawn.
 * - `--case burst`: operator and server run with the Zone served and no Record; the clock starts with
 *   the first POST.
 *
 * Done when the Zone's status lists every Record, the server's SOA serial is the one the status
 * reports, and the first, the last and 20 random Records answer. Then, not timed, every Record's
 * `Ready` is waited for and every name asked once (`dig -f`). CPU time of operator, server and API
 * server from /proc (in a burst, from the clock's start), peak RSS (VmHWM). Prints one line
 * `RESULT {...}` (JSON).
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { stringify } from 'yaml';
import { dig as digStrict, rdataOf } from '../test/support/dig.ts';
import { type KubeCluster, serviceAccountUser, startKube } from '../test/support/kube.ts';
import { prepareKubizone } from '../test/support/kubizone-cluster.ts';
import {
  type KubeProcess,
  startOperatorProcess,
  startServerProcess,
} from '../test/support/zonekeeper-kube.ts';
import { statusField, treeCpuSeconds } from './lib/proc.ts';

const execFileP = promisify(execFile);
/** dig that does not throw: a timeout (the server too busy to answer in 2 s) is counted and reads as no answer. */
let digTimeouts = 0;
const dig = async (port: number, name: string, type: string) => {
  try {
    return await digStrict(port, name, type);
  } catch {
    digTimeouts++;
    return { status: 'TIMEOUT', flags: [], answer: [], authority: [], additional: [], raw: '' };
  }
};
const SYSTEM = 'zonekeeper-system';
const NS = 'scale';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');

const USAGE = `npx node bench/kubizone-burst.ts [options]

  --case startup|burst   Records before operator and server start, or created while they run (default burst)
  --records N            Records (default 10000)
  --timeout S            give up after S seconds (default 1200)
  --profile DIR          V8 CPU profiles of operator and server there (node --cpu-prof, on their exit)
  --logs DIR             operator and server logs there
`;
const { values } = parseArgs({
  options: {
    case: { type: 'string', default: 'burst' },
    records: { type: 'string', default: '10000' },
    timeout: { type: 'string', default: '1200' },
    profile: { type: 'string' },
    logs: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
const which = values.case;
const N = Number(values.records);
const PROF = values.profile !== undefined ? path.resolve(values.profile) : undefined;
const TIMEOUT_MS = Number(values.timeout) * 1000;
if (values.help || !['startup', 'burst'].includes(which) || !(N > 0) || !(TIMEOUT_MS > 0)) {
  process.stderr.write(USAGE);
  process.exit(values.help ? 0 : 2);
}

const t0 = performance.now();
const log = (msg: string, extra: object = {}) =>
  console.error(`[${((performance.now() - t0) / 1000).toFixed(1)}s] ${msg} ${JSON.stringify(extra)}`);

function zoneObject() {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Zone',
    metadata: { name: 'big-test', namespace: NS },
    spec: { domainName: 'big.test.', delegations: [{ namespaces: [NS], records: [{ pattern: '*' }] }] },
  };
}
function recordObject(i: number) {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'Record',
    metadata: { name: `h${i}`, namespace: NS },
    spec: {
      domainName: `h${i}.big.test.`,
      type: 'A',
      rdata: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    },
  };
}

/** POSTs the N Records straight to the API server, `concurrency` in flight (admin token). */
async function createRecords(kube: KubeCluster, n: number, concurrency = 32): Promise<number> {
  const kubeconfig = await readFile(kube.adminKubeconfig, 'utf8');
  const token = /token: (\S+)/.exec(kubeconfig)![1]!;
  const ca = await readFile(path.join(kube.dir, 'pki', 'ca.crt'));
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca });
  const url = new URL(`${kube.server}/apis/kubi.zone/v1alpha1/namespaces/${NS}/records`);
  const post = (body: string) =>
    new Promise<number>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const started = performance.now();
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const i = next++;
        if (i >= n) return;
        for (let attempt = 0; ; attempt++) {
          const code = await post(JSON.stringify(recordObject(i)));
          if (code === 201 || code === 409) break;
          if (attempt > 5) {
            failed++;
            break;
          }
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    }),
  );
  agent.destroy();
  if (failed) throw new Error(`${failed} records not created`);
  return performance.now() - started;
}

interface ZoneJson {
  status?: {
    serial?: number;
    entries?: { fqdn: string; type: string }[];
    conditions?: { type: string; status: string; message?: string }[];
  };
}

async function main() {
  const kube = await startKube({ users: [OPERATOR, SERVER] });
  let operator: KubeProcess | undefined;
  let server: KubeProcess | undefined;
  const samplers: NodeJS.Timeout[] = [];
  try {
    log('api server up', { server: kube.server });
    await prepareKubizone(kube, SYSTEM, [NS]);
    await kube.kubectlOk(['apply', '-f', '-'], { input: `---\n${stringify(zoneObject())}` });

    const getZone = async (): Promise<ZoneJson | undefined> => {
      const r = await kube.kubectl(['get', 'zone.kubi.zone', '-n', NS, 'big-test', '-o', 'json'], {
        timeoutMs: 120_000,
      });
      return r.code === 0 ? (JSON.parse(r.stdout) as ZoneJson) : undefined;
    };
    // The A entries the status lists, or, when it lists only the first of them (past what one object of
    // the API server holds), the count its Ready message gives of all entries but the SOA.
    const aEntries = (z?: ZoneJson) => {
      const message = z?.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
      const cut = /status\.entries lists the first \d+ of (\d+) entries/.exec(message);
      if (cut) return Number(cut[1]) - 1;
      return z?.status?.entries?.filter((e) => e.type === 'A').length ?? 0;
    };
    const zoneReady = (z?: ZoneJson) =>
      z?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

    const startProcs = async () => {
      const env = process.env.NODE_OPTIONS;
      if (PROF) {
        await mkdir(path.join(PROF, 'operator'), { recursive: true });
        await mkdir(path.join(PROF, 'server'), { recursive: true });
        process.env.NODE_OPTIONS = `${env ?? ''} --cpu-prof --cpu-prof-dir=${path.join(PROF, 'operator')}`;
      }
      const op = startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM);
      if (PROF)
        process.env.NODE_OPTIONS = `${env ?? ''} --cpu-prof --cpu-prof-dir=${path.join(PROF, 'server')}`;
      const sv = startServerProcess('server', kube.kubeconfigFor(SERVER));
      if (env === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = env;
      [operator, server] = await Promise.all([op, sv]);
    };

    // Peak tracking: sampled every 250 ms (VmHWM is the kernel's own peak; RSS sampled for the curve).
    const peak = { operator: 0, server: 0 };
    const sample = () => {
      if (operator)
        peak.operator = Math.max(peak.operator, Math.round(statusField(operator.pid, 'VmHWM') / 1024));
      if (server) peak.server = Math.max(peak.server, Math.round(statusField(server.pid, 'VmHWM') / 1024));
    };
    samplers.push(setInterval(sample, 250));

    let createMs = 0;
    let tStart: number; // the moment the clock starts
    if (which === 'startup') {
      log('creating records', { N });
      createMs = await createRecords(kube, N);
      log('records created', { ms: Math.round(createMs) });
      tStart = performance.now();
      await startProcs();
      log('operator and server started', { ms: Math.round(performance.now() - tStart) });
    } else {
      await startProcs();
      // The Zone Ready and served before the burst.
      for (;;) {
        const z = await getZone();
        if (zoneReady(z) && z?.status?.serial !== undefined) {
          const soa = rdataOf(await dig(server!.dnsPort, 'big.test', 'SOA'), 'SOA')[0];
          if (soa && Number(soa.split(/\s+/)[2]) === z.status.serial) break;
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      log('zone ready and served, no records');
      tStart = performance.now();
    }
    const cpuAtStart = { operator: treeCpuSeconds(operator!.pid)!, server: treeCpuSeconds(server!.pid)! };
    const apiCpuStart = treeCpuSeconds(kube.apiServerPid) ?? 0;
    const creating = which === 'burst' ? createRecords(kube, N) : Promise.resolve(0);
    if (which === 'burst') void creating.then((ms) => log('records created', { ms: Math.round(ms) }));

    // Milestones.
    const ms = () => Math.round(performance.now() - tStart);
    const milestones: Record<string, number> = {};
    const sampleNames = [0, N - 1, ...Array.from({ length: 20 }, () => Math.floor(Math.random() * N))];
    const answered = async () => {
      for (const i of sampleNames) {
        const want = recordObject(i).spec.rdata;
        const got = rdataOf(await dig(server!.dnsPort, `h${i}.big.test`, 'A'), 'A');
        if (!got.includes(want)) return false;
      }
      return true;
    };
    let lastZone: ZoneJson | undefined;
    let lastCount = -1;
    const deadline = performance.now() + TIMEOUT_MS;
    const progress: [number, number][] = [];
    for (;;) {
      if (performance.now() > deadline) throw new Error(`not done within ${TIMEOUT_MS} ms`);
      if (operator!.exited() || server!.exited()) throw new Error('operator or server exited');
      if (milestones.lastRecordAnswered === undefined) {
        const r = rdataOf(await dig(server!.dnsPort, `h${N - 1}.big.test`, 'A'), 'A');
        if (r.length > 0) milestones.lastRecordAnswered = ms();
      }
      const z = await getZone();
      const count = aEntries(z);
      if (count !== lastCount) {
        progress.push([ms(), count]);
        lastCount = count;
      }
      lastZone = z;
      if (count === N && milestones.zoneStatusAllEntries === undefined) {
        milestones.zoneStatusAllEntries = ms();
        log('zone status lists all entries', { ms: milestones.zoneStatusAllEntries });
      }
      if (count === N && zoneReady(z)) {
        const soa = rdataOf(await dig(server!.dnsPort, 'big.test', 'SOA'), 'SOA')[0];
        if (soa && Number(soa.split(/\s+/)[2]) === z!.status!.serial && (await answered())) {
          milestones.servedAndZoneDone = ms();
          break;
        }
      }
      await new Promise((r) => setTimeout(r, count === N ? 200 : 1000));
    }
    const cpuAtDone = {
      operator: +(treeCpuSeconds(operator!.pid)! - (which === 'burst' ? cpuAtStart.operator : 0)).toFixed(2),
      server: +(treeCpuSeconds(server!.pid)! - (which === 'burst' ? cpuAtStart.server : 0)).toFixed(2),
      apiserver: +((treeCpuSeconds(kube.apiServerPid) ?? 0) - apiCpuStart).toFixed(2),
    };
    if (which === 'burst') createMs = await creating;
    sample();
    log('done', { milestones, cpuAtDone });

    // Not timed: every Record Ready, and every name answered.
    const readyStart = performance.now();
    let recordsReady = 0;
    for (let i = 0; i < 300; i++) {
      if (operator!.exited() || server!.exited())
        throw new Error('operator or server exited (records ready phase)');
      const r = await kube.kubectl(
        [
          'get',
          'record.kubi.zone',
          '-n',
          NS,
          '-o',
          'jsonpath={range .items[*]}{.status.conditions[0].status}{"\\n"}{end}',
        ],
        { timeoutMs: 120_000 },
      );
      recordsReady = r.stdout.split('\n').filter((s) => s === 'True').length;
      if (recordsReady === N) break;
      log('records ready', { recordsReady });
      await new Promise((r) => setTimeout(r, 5000));
    }
    milestones.allRecordsReadyAfterDone = Math.round(performance.now() - readyStart);
    milestones.allRecordsReady = ms();
    const namesFile = path.join(kube.dir, 'names.txt');
    await writeFile(
      namesFile,
      Array.from(
        { length: N },
        (_, i) => `@127.0.0.1 -p ${server!.dnsPort} h${i}.big.test A +norec +short`,
      ).join('\n'),
    );
    const { stdout } = await execFileP('dig', ['-f', namesFile], { maxBuffer: 64 * 1024 * 1024 });
    const answeredAll = stdout.split('\n').filter((l) => /^10\./.test(l)).length;
    const cpuEnd = {
      operator: +(treeCpuSeconds(operator!.pid)! - (which === 'burst' ? cpuAtStart.operator : 0)).toFixed(2),
      server: +(treeCpuSeconds(server!.pid)! - (which === 'burst' ? cpuAtStart.server : 0)).toFixed(2),
    };
    const result = {
      case: which,
      N,
      createMs: Math.round(createMs),
      milestones,
      cpuAtDone,
      cpuAtEnd: cpuEnd,
      cpuBaselineAtClockStart: which === 'burst' ? cpuAtStart : undefined,
      peakRssMiB: peak,
      recordsReady,
      answeredAll,
      digTimeouts,
      zoneSerial: lastZone?.status?.serial,
      progress:
        progress.length > 40
          ? progress.filter((_, i) => i % Math.ceil(progress.length / 40) === 0)
          : progress,
    };
    console.log(`RESULT ${JSON.stringify(result)}`);
  } finally {
    for (const s of samplers) clearInterval(s);
    const dir = values.logs;
    await Promise.all([operator?.stop(), server?.stop()].map((p) => p?.catch(() => {})));
    if (dir) {
      await mkdir(dir, { recursive: true });
      for (const p of [operator, server])
        if (p) await writeFile(path.join(dir, `${which}-${N}-${p.name}.log`), p.log());
    }
    await kube.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
