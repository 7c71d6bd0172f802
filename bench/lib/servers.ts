/**
 * Starting the servers under test, each pinned with taskset to the same CPUs, on a free loopback
 * port, with every file (configuration, databases, sockets, logs) in a temporary folder.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { coreDnsPath, corefile, ensureCoreDns } from './coredns.ts';
import { type Pinned, ROOT, run, sleep, spawnPinned } from './proc.ts';
import { UdpClient } from './udp-client.ts';

export const SERVER_IDS = ['zonekeeper', 'knot', 'pdns-nocache', 'pdns-cache', 'coredns'] as const;
export type ServerId = (typeof SERVER_IDS)[number];

export const SERVER_LABELS: Record<ServerId, string> = {
  zonekeeper: 'Zonekeeper',
  knot: 'Knot DNS',
  'pdns-nocache': 'PowerDNS (LMDB, packet cache off)',
  'pdns-cache': 'PowerDNS (LMDB, packet cache on)',
  coredns: 'CoreDNS (file plugin)',
};

export const CLI = cliOf(ROOT);

export interface Fixture {
  /** Temporary folder of this run; each server gets a subfolder. */
  tmp: string;
  manifestsDir: string;
  zoneFile: string;
  /** Absolute origin of the zone in `zoneFile`. */
  origin: string;
  /** taskset CPU list for the servers, and how many CPUs it holds. */
  cores: string;
  coreCount: number;
  /** A query whose exact answer proves the zone is loaded. */
  ready: { name: string; type: string; answer: string[] };
  /** Extra PowerDNS threads per receiver (see README). */
  pdnsDistributors: number;
  /**
   * The zone signed by each server that signs (Zonekeeper: `spec.dnssec.enabled`; Knot:
   * `dnssec-signing: on` with ECDSA P-256, one combined key, NSEC, as Zonekeeper's defaults).
   */
  dnssec?: boolean;
}

export interface StartedServer {
  id: ServerId;
  port: number;
  proc: Pinned;
  /**
   * Spawn to the first round in which 16 client ports all got the correct answer, in milliseconds
   * (PowerDNS: its zone was loaded into LMDB before).
   */
  readyMs: number;
  /** What was configured, for the report. */
  config: Record<string, string | number | boolean>;
  stop(): Promise<void>;
}

/** The command line entry of the Zonekeeper checkout at `root`. */
export function cliOf(root: string): string {
  return path.join(root, 'src/cli/main.ts');
}

/** Whether a checkout's `zonekeeper serve` (this one's by default) has the `--workers N` flag (multi-core serving). */
export async function zonekeeperHasWorkers(cli = CLI): Promise<boolean> {
  const { stdout } = await run(process.execPath, [cli, '--help']);
  return stdout.includes('--workers');
}

/**
 * Polls `name type` over UDP until the answer is exactly `answer` from every one of `sockets`
 * client sockets (different source ports) in the same round; returns the elapsed time. With
 * SO_REUSEPORT the kernel spreads source ports over the server's sockets, so one correct answer
 * only proves that one worker is ready; 16 ports miss one of two workers with probability 2^-15.
 */
export async function waitForAnswer(
  port: number,
  probe: { name: string; type: string; answer: string[] },
  options: {
    timeoutMs: number;
    alive?: () => boolean;
    since?: number;
    intervalMs?: number;
    sockets?: number;
  },
): Promise<number> {
  const since = options.since ?? performance.now();
  const clients = Array.from({ length: options.sockets ?? 16 }, () => new UdpClient(port));
  const want = JSON.stringify([...probe.answer].sort());
  try {
    for (;;) {
      const answers = await Promise.all(clients.map((c) => c.query(probe.name, probe.type, 200)));
      const bad = answers.findIndex(
        (got) => !(got && got.rcode === 0 && JSON.stringify(got.answer) === want),
      );
      if (bad < 0) return performance.now() - since;
      const wrong = answers[bad] ?? 'timeout';
      if (options.alive && !options.alive()) throw new Error('server exited before answering');
      if (performance.now() - since > options.timeoutMs) {
        throw new Error(
          `no correct answer for ${probe.name} ${probe.type} on every socket within ${options.timeoutMs} ms (one was: ${JSON.stringify(wrong)})`,
        );
      }
      await sleep(options.intervalMs ?? 10);
    }
  } finally {
    for (const c of clients) c.close();
  }
}

export async function startServer(
  id: ServerId,
  fixture: Fixture,
  port: number,
  options: {
    readyTimeoutMs?: number;
    /** Zonekeeper only: serve from the checkout at this root instead of this one (before/after runs). */
    zonekeeperRoot?: string;
    /** The server's subfolder of `fixture.tmp` (default: its id). */
    dirName?: string;
  } = {},
): Promise<StartedServer> {
  const dir = path.join(fixture.tmp, options.dirName ?? id);
  mkdirSync(dir, { recursive: true });
  const log = path.join(dir, 'server.log');
  let command: string;
  let args: string[];
  let config: StartedServer['config'];
  let loadMs: number | undefined;

  switch (id) {
    case 'zonekeeper': {
      const cli = options.zonekeeperRoot ? cliOf(options.zonekeeperRoot) : CLI;
      const workers = (await zonekeeperHasWorkers(cli)) ? fixture.coreCount : undefined;
      command = process.execPath;
      args = [
        cli,
        'serve',
        '--manifests',
        fixture.manifestsDir,
        '--dns',
        `127.0.0.1:${port}`,
        '--http',
        '127.0.0.1:0',
        '--state-dir',
        path.join(dir, 'state'),
        ...(workers !== undefined ? ['--workers', String(workers)] : []),
      ];
      config = { node: process.version, workers: workers ?? 'n/a (no --workers flag: one process)' };
      break;
    }
    case 'knot': {
      const conf = path.join(dir, 'knot.conf');
      mkdirSync(path.join(dir, 'db'), { recursive: true });
      writeFileSync(conf, knotConfig(dir, port, fixture));
      command = 'knotd';
      args = ['-c', conf];
      config = { 'udp-workers': fixture.coreCount, 'tcp-workers': 1, 'background-workers': 1 };
      break;
    }
    case 'coredns': {
      command = await ensureCoreDns((m) => process.stderr.write(`${m}\n`));
      const conf = path.join(dir, 'Corefile');
      writeFileSync(conf, corefile(fixture.origin, fixture.zoneFile, port));
      args = ['-conf', conf, '-quiet'];
      // Go schedules on the CPUs taskset allows (GOMAXPROCS follows the affinity mask).
      config = { plugins: 'file (reload 0), no cache', gomaxprocs: fixture.coreCount };
      break;
    }
    case 'pdns-nocache':
    case 'pdns-cache': {
      const cache = id === 'pdns-cache';
      const supported = await pdnsSettings();
      const lines = pdnsConfig(dir, port, fixture, cache);
      const omitted = lines.filter((l) => !supported.has(l.split('=')[0]!));
      writeFileSync(path.join(dir, 'pdns.conf'), `${lines.filter((l) => !omitted.includes(l)).join('\n')}\n`);
      const started = performance.now();
      await run('pdnsutil', [`--config-dir=${dir}`, 'load-zone', fixture.origin, fixture.zoneFile], {
        cores: fixture.cores,
      });
      await run('pdnsutil', [`--config-dir=${dir}`, 'rectify-zone', fixture.origin], {
        cores: fixture.cores,
      });
      loadMs = performance.now() - started;
      command = 'pdns_server';
      args = [
        `--config-dir=${dir}`,
        `--socket-dir=${dir}`,
        '--guardian=no',
        '--daemon=no',
        '--disable-syslog=yes',
        '--write-pid=no',
      ];
      config = {
        'receiver-threads': fixture.coreCount,
        'distributor-threads': fixture.pdnsDistributors,
        reuseport: true,
        'cache-ttl': cache ? '20 (default)' : 0,
        'query-cache-ttl': cache ? '20 (default)' : 0,
        'negquery-cache-ttl': cache ? '60 (default)' : 0,
        'pdnsutil load-zone + rectify-zone ms': Math.round(loadMs),
        ...(omitted.length > 0 ? { 'omitted (unknown to this PowerDNS)': omitted.join(' ') } : {}),
      };
      break;
    }
  }

  const since = performance.now();
  const proc = spawnPinned(fixture.cores, command, args, log);
  try {
    const readyMs = await waitForAnswer(port, fixture.ready, {
      timeoutMs: options.readyTimeoutMs ?? 180_000,
      alive: () => !proc.exited(),
      since,
    });
    return { id, port, proc, readyMs, config, stop: () => proc.stop() };
  } catch (e) {
    await proc.stop();
    throw new Error(`${id} did not start: ${(e as Error).message}\n--- ${log} ---\n${proc.tail()}`);
  }
}

function knotConfig(dir: string, port: number, fixture: Fixture): string {
  return `# generated by bench/: everything under ${dir}
server:
    rundir: "${dir}"
    listen: 127.0.0.1@${port}
    udp-workers: ${fixture.coreCount}
    tcp-workers: 1
    background-workers: 1

database:
    storage: "${dir}/db"

log:
  - target: stderr
    any: notice

control:
    listen: "${dir}/knot.sock"

template:
  - id: default
    storage: "${dir}"
    journal-content: none
    zonefile-sync: -1
    zonefile-load: whole
    semantic-checks: off

${
  fixture.dnssec
    ? `
policy:
  - id: bench
    algorithm: ecdsap256sha256
    single-type-signing: on
    nsec3: off
`
    : ''
}
zone:
  - domain: ${fixture.origin}
    file: "${fixture.zoneFile}"${fixture.dnssec ? '\n    dnssec-signing: on\n    dnssec-policy: bench' : ''}
`;
}

/**
 * The PowerDNS settings of Datum Cloud's deployment (LMDB, one shard, random ids, flag-deleted, no zone cache
 * refresh, no metadata cache), plus either every cache explicitly off or the defaults (packet cache
 * cache-ttl=20, query cache 20/60). Security polling is off so that nothing leaves loopback.
 */
function pdnsConfig(dir: string, port: number, fixture: Fixture, cache: boolean): string[] {
  return [
    'launch=lmdb',
    `lmdb-filename=${dir}/pdns.lmdb`,
    'lmdb-shards=1',
    'lmdb-random-ids=yes',
    'lmdb-flag-deleted=yes',
    'zone-cache-refresh-interval=0',
    'zone-metadata-cache-ttl=0',
    ...(cache ? [] : ['cache-ttl=0', 'query-cache-ttl=0', 'negquery-cache-ttl=0']),
    'local-address=127.0.0.1',
    `local-port=${port}`,
    `receiver-threads=${fixture.coreCount}`,
    `distributor-threads=${fixture.pdnsDistributors}`,
    'reuseport=yes',
    'webserver=no',
    'api=no',
    'security-poll-suffix=',
    'loglevel=4',
  ];
}

let pdnsSettingsCache: Set<string> | undefined;

/**
 * The settings this pdns_server knows (with the LMDB backend loaded), from `--config=default`; the
 * Datum Cloud's PowerDNS settings' `lmdb-flag-deleted`, for one, only exists from PowerDNS 4.8 and would stop 4.7 at start-up.
 */
export async function pdnsSettings(): Promise<Set<string>> {
  if (pdnsSettingsCache) return pdnsSettingsCache;
  const { stdout } = await run('pdns_server', ['--no-config', '--launch=lmdb', '--config=default']);
  pdnsSettingsCache = new Set([...stdout.matchAll(/^#\s*([a-z0-9-]+)=/gm)].map((m) => m[1]!));
  return pdnsSettingsCache;
}

/** Versions of everything measured, for the report. */
export async function versions(): Promise<Record<string, string>> {
  const out: Record<string, string> = { node: process.version };
  const attempt = async (key: string, cmd: string, args: string[], pick: (text: string) => string) => {
    try {
      const { stdout, stderr } = await run(cmd, args, { timeoutMs: 10_000 });
      out[key] = pick(stdout + stderr);
    } catch (e) {
      const text = (e as Error).message;
      out[key] = pick(text);
    }
  };
  await attempt('knotd', 'knotd', ['-V'], (t) => /version (\S+)/.exec(t)?.[1] ?? t.trim());
  await attempt(
    'pdns_server',
    'pdns_server',
    ['--version'],
    (t) => /Authoritative Server (\S+)/.exec(t)?.[1] ?? t.trim(),
  );
  await attempt('coredns', coreDnsPath(), ['-version'], (t) => /CoreDNS-(\S+)/.exec(t)?.[1] ?? 'not built');
  await attempt('dnsperf', 'dnsperf', ['-h'], (t) => /Version (\S+)/.exec(t)?.[1] ?? '?');
  await attempt('zonekeeper', 'git', ['-C', ROOT, 'describe', '--always', '--dirty'], (t) => t.trim());
  return out;
}
