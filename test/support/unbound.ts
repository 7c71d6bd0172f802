/**
 * A validating resolver for tests: Unbound (from Debian), run in the foreground on loopback with a
 * throwaway configuration in a temp folder. It trusts only the anchors it is given (DS or DNSKEY
 * records of the zones under test), sends the queries for those zones to the authoritative servers of
 * `stubs` (stub-zone), and nothing anywhere else: the root is a stub to a closed loopback port, so no
 * query leaves the machine. `query` asks it with RD and DO set (dig), so the answer carries the AD bit
 * when Unbound validated it, and SERVFAIL when it found the answer bogus.
 *
 * Shared by the DNSSEC suites of every signing backend (PowerDNS, the built-in server).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type DigResult, parseDig } from './dig.ts';
import { freePort } from './ports.ts';

const run = promisify(execFile);

export const UNBOUND = process.env.UNBOUND ?? '/usr/sbin/unbound';

export interface UnboundOptions {
  /** Zones whose queries go to an authoritative server on loopback (`stub-zone`). */
  stubs: { zone: string; port: number }[];
  /**
   * Trust anchors in zone-file form, e.g. `signed.example. DS 12345 13 2 ab...` or
   * `signed.example. DNSKEY 257 3 13 ...`.
   */
  trustAnchors: string[];
  /**
   * Whether answers are cached as their TTLs allow (default true, as a resolver in the field would);
   * false caps every TTL at 0 so each query reaches the authoritative server.
   */
  cache?: boolean;
  /** Extra lines for the `server:` clause. */
  extra?: string[];
}

export interface UnboundProcess {
  port: number;
  dir: string;
  /** Asks Unbound with RD and DO set (dig +dnssec). */
  query(name: string, type: string, args?: string[]): Promise<DigResult>;
  /** Whether the answer was validated (the AD flag set, RFC 4035 §3.2.3). */
  validated(result: DigResult): boolean;
  log(): string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Whether Unbound is installed (suites skip with a reason otherwise). */
export async function unboundAvailable(): Promise<string | undefined> {
  try {
    await run(UNBOUND, ['-V']);
    return undefined;
  } catch (e) {
    return `unbound is not usable (${(e as Error).message.split('\n')[0]}); run scripts/ensure-system-packages.sh`;
  }
}

const quoted = (s: string) => `"${s.replaceAll('"', '')}"`;
const absolute = (zone: string) => (zone.endsWith('.') ? zone : `${zone}.`);

export async function startUnbound(options: UnboundOptions): Promise<UnboundProcess> {
  const dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-unbound-'));
  const port = await freePort();
  // Nothing listens here: a query for a name outside the stubs fails on loopback.
  const nowhere = await freePort();
  const config = [
    'server:',
    '  interface: 127.0.0.1',
    `  port: ${port}`,
    '  do-ip6: no',
    '  do-daemonize: no',
    '  use-syslog: no',
    '  logfile: ""',
    '  username: ""',
    '  chroot: ""',
    `  directory: ${quoted(dir)}`,
    `  pidfile: ${quoted(path.join(dir, 'unbound.pid'))}`,
    '  num-threads: 1',
    '  so-reuseport: no',
    '  outgoing-range: 64',
    '  access-control: 127.0.0.0/8 allow',
    '  do-not-query-localhost: no',
    '  qname-minimisation: no',
    '  module-config: "validator iterator"',
    '  trust-anchor-signaling: no',
    '  root-key-sentinel: no',
    '  verbosity: 1',
    '  val-log-level: 2',
    '  local-zone: "unbound.test." static',
    '  local-data: "ready.unbound.test. 0 IN A 127.0.0.1"',
    ...(options.cache === false ? ['  cache-max-ttl: 0', '  cache-max-negative-ttl: 0'] : []),
    ...options.trustAnchors.map((a) => `  trust-anchor: ${quoted(a)}`),
    ...(options.extra ?? []).map((l) => `  ${l}`),
    ...options.stubs.flatMap((s) => [
      'stub-zone:',
      `  name: ${quoted(absolute(s.zone))}`,
      `  stub-addr: 127.0.0.1@${s.port}`,
    ]),
    'stub-zone:',
    '  name: "."',
    `  stub-addr: 127.0.0.1@${nowhere}`,
    'remote-control:',
    '  control-enable: no',
    '',
  ].join('\n');
  const configFile = path.join(dir, 'unbound.conf');
  await writeFile(configFile, config);
  try {
    await run('unbound-checkconf', [configFile]);
  } catch (e) {
    const { stdout, stderr } = e as { stdout?: string; stderr?: string };
    throw new Error(`unbound-checkconf refused ${configFile}: ${stderr ?? ''}${stdout ?? ''}\n${config}`);
  }

  let output = '';
  const child = spawn(UNBOUND, ['-d', '-c', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.stdout?.on('data', (d) => {
    output += String(d);
  });
  child.stderr?.on('data', (d) => {
    output += String(d);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', () => running.delete(child));

  const query = async (name: string, type: string, args: string[] = []) => {
    const { stdout } = await run(
      'dig',
      ['@127.0.0.1', '-p', String(port), name, type, '+dnssec', '+time=5', '+tries=1', ...args],
      { timeout: 15_000 },
    );
    return parseDig(stdout);
  };
  const started = performance.now();
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`unbound exited (${child.exitCode}) at start:\n${output}\n${config}`);
    const ready = await query('ready.unbound.test', 'A', ['+time=1']).catch(() => undefined);
    if (ready?.status === 'NOERROR') break;
    if (performance.now() - started > 15_000) {
      child.kill('SIGKILL');
      throw new Error(`unbound did not answer on 127.0.0.1:${port}:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    dir,
    query,
    validated: (r) => r.flags.includes('ad'),
    log: () => output,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
