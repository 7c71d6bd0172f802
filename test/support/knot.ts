import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildQuery, exchange } from './dns-client.ts';
import { freePort } from './ports.ts';

const run = promisify(execFile);

export const KNOTD = process.env.KNOTD ?? '/usr/sbin/knotd';
export const KNOTC = process.env.KNOTC ?? '/usr/sbin/knotc';

export interface KnotZone {
  /** Absolute zone name, e.g. `example.com.`. */
  origin: string;
  /** The zone file (RFC 1035 master format). */
  text: string;
}

export interface KnotOptions {
  zones: readonly KnotZone[];
  /** UDP worker threads (default 1: enough for tests, light on small CI machines). */
  udpWorkers?: number;
  /** TCP worker threads (default 1). */
  tcpWorkers?: number;
  /** Answer for CHAOS id.server./hostname.bind.; empty or absent: REFUSED (as Zonekeeper without --identity). */
  identity?: string;
  /** Answer for CHAOS version.server./version.bind.; empty or absent: REFUSED. */
  version?: string;
  /** Extra lines for the `server:` section, e.g. `udp-max-payload: 1232`. */
  serverConfig?: string[];
  /** How long to wait for the first answer (default 15 s). */
  startTimeoutMs?: number;
  /**
   * Allow AXFR of every zone to clients signing with this TSIG key (secret in base64), and to no one
   * else. Without it, knotd refuses every transfer (its default).
   */
  transferKey?: { name: string; algorithm: string; secret: string };
}

/** A running `knotd` with its throwaway configuration, zone files and databases in one temp folder. */
export interface KnotProcess {
  port: number;
  dir: string;
  configFile: string;
  log(): string;
  /** Runs `knotc -c <config> <args>` against this instance. */
  knotc(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts a real Knot DNS (`knotd`) on 127.0.0.1 at an ephemeral port, serving the given zone files.
 * Everything it writes (rundir with pid file and control socket, journal/timer databases, zone files)
 * lives in a fresh temp folder that `stop()` removes; the system's /etc/knot and /run/knot are never
 * used. Runs as the current user. Resolves once knotd answers the SOA of every zone.
 */
export async function startKnot(options: KnotOptions): Promise<KnotProcess> {
  if (options.zones.length === 0) throw new Error('startKnot: give at least one zone');
  const dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-knot-'));
  try {
    // The port is found free and then handed to knotd, so another process can take it in between;
    // a failed bind is detected and retried with a new port.
    let lastError: Error | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      try {
        return await launch(dir, port, options);
      } catch (e) {
        lastError = e as Error;
        if (!lastError.message.startsWith('knotd could not bind')) break;
      }
    }
    throw lastError ?? new Error('knotd did not start');
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

async function launch(dir: string, port: number, options: KnotOptions): Promise<KnotProcess> {
  const rundir = path.join(dir, 'run');
  const storage = path.join(dir, 'db');
  const zonesDir = path.join(dir, 'zones');
  await Promise.all([rundir, storage, zonesDir].map((d) => mkdir(d, { recursive: true })));
  const zoneLines: string[] = [];
  for (const [i, zone] of options.zones.entries()) {
    const file = path.join(zonesDir, `zone${i}.zone`);
    await writeFile(file, zone.text);
    zoneLines.push(`  - domain: ${quote(zone.origin)}`, `    file: ${quote(file)}`);
  }
  const workers = options.udpWorkers ?? 1;
  const config = [
    'server:',
    `    rundir: ${quote(rundir)}`,
    `    pidfile: ${quote(path.join(rundir, 'knot.pid'))}`,
    `    user: ${quote(userInfo().username)}`,
    `    listen: 127.0.0.1@${port}`,
    `    udp-workers: ${workers}`,
    `    tcp-workers: ${options.tcpWorkers ?? 1}`,
    '    background-workers: 1',
    `    identity: ${quote(options.identity ?? '')}`,
    `    version: ${quote(options.version ?? '')}`,
    '    nsid: ""',
    ...(options.serverConfig ?? []).map((l) => `    ${l}`),
    'control:',
    `    listen: ${quote(path.join(rundir, 'knot.sock'))}`,
    'log:',
    '  - target: stderr',
    '    any: info',
    ...(options.transferKey
      ? [
          'key:',
          `  - id: ${quote(options.transferKey.name)}`,
          `    algorithm: ${options.transferKey.algorithm}`,
          `    secret: ${quote(options.transferKey.secret)}`,
          'acl:',
          '  - id: transfer',
          `    key: ${quote(options.transferKey.name)}`,
          '    action: transfer',
        ]
      : []),
    'database:',
    `    storage: ${quote(storage)}`,
    'template:',
    '  - id: default',
    `    storage: ${quote(zonesDir)}`,
    // Serve the zone files exactly as written: no journal, no flushing back, no DNSSEC.
    '    zonefile-load: whole',
    '    zonefile-sync: -1',
    '    journal-content: none',
    ...(options.transferKey ? ['    acl: transfer'] : []),
    'zone:',
    ...zoneLines,
    '',
  ].join('\n');
  const configFile = path.join(dir, 'knot.conf');
  await writeFile(configFile, config);

  const child = spawn(KNOTD, ['-c', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  child.once('error', (e) => {
    output += `\nspawn error: ${e.message}`;
    exited = -1;
  });

  const deadline = performance.now() + (options.startTimeoutMs ?? 15_000);
  const pending = new Set(options.zones.map((z) => z.origin));
  while (pending.size > 0) {
    if (exited !== undefined) throw new Error(`knotd exited with ${exited}:\n${output}`);
    if (/cannot bind|address already in use/i.test(output)) {
      await stopKnotd(child);
      throw new Error(`knotd could not bind 127.0.0.1@${port}:\n${output}`);
    }
    if (/zone event 'load' failed/.test(output)) {
      await stopKnotd(child);
      throw new Error(`knotd could not load a zone:\n${output}`);
    }
    if (performance.now() > deadline) {
      await stopKnotd(child);
      throw new Error(`knotd did not answer for ${[...pending].join(', ')} in time:\n${output}`);
    }
    for (const origin of [...pending]) {
      const reply = await exchange(port, buildQuery({ name: origin, type: 6 }), { timeoutMs: 200 });
      if (reply.message && reply.message.rcode === 0 && reply.message.answers.length > 0) {
        pending.delete(origin);
      }
    }
    if (pending.size > 0) await new Promise((r) => setTimeout(r, 50));
  }

  return {
    port,
    dir,
    configFile,
    log: () => output,
    knotc: async (...args: string[]) => {
      const { stdout } = await run(KNOTC, ['-c', configFile, ...args], { timeout: 10_000 });
      return stdout;
    },
    async stop() {
      await stopKnotd(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** SIGTERM is knotd's clean shutdown; SIGKILL after 5 s as a last resort. */
function stopKnotd(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

/** A double-quoted string for Knot's YAML-like configuration. */
function quote(value: string): string {
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}
