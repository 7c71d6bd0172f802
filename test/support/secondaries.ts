/**
 * Real secondary servers — Knot DNS (`knotd`), NSD (`nsd`) and BIND (`named`) — configured to
 * replicate a zone from a running Zonekeeper on 127.0.0.1: transfers signed with a TSIG key, NOTIFY
 * accepted from 127.0.0.1 when signed with that key. Each runs on loopback at an ephemeral port, as the
 * current user, with its configuration, zone files, journals, state and pid files in its own temp
 * folder; /etc/knot, /etc/nsd, /etc/bind, /var/lib/* and /run/* are never written. The configurations
 * are the ones docs/transfers.md shows.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import type { Message } from '../../src/dns/message.ts';
import { printRdata, type Rdata } from '../../src/dns/rdata.ts';
import { RRType } from '../../src/dns/rrtype.ts';
import { buildQuery, exchange } from './dns-client.ts';
import { KNOTD } from './knot.ts';
import { freePort } from './ports.ts';

export const NSD = process.env.NSD ?? '/usr/sbin/nsd';
export const NAMED = process.env.NAMED ?? '/usr/sbin/named';

export type SecondaryKind = 'knot' | 'nsd' | 'bind';

export interface TsigKeyConfig {
  /** e.g. `transfer-key` */
  name: string;
  algorithm: 'hmac-sha256' | 'hmac-sha384' | 'hmac-sha512';
  /** base64 */
  secret: string;
}

export interface SecondaryOptions {
  kind: SecondaryKind;
  /** The zone to replicate, absolute: `example.com.` */
  zone: string;
  /** Zonekeeper's DNS port on 127.0.0.1. */
  primaryPort: number;
  /** The key transfers (and the SOA queries before them) are signed with, and NOTIFY must carry. */
  key: TsigKeyConfig;
  /**
   * The port to listen on (127.0.0.1), e.g. one chosen beforehand to put in Zonekeeper's notify list.
   * Default: a free ephemeral port (a lost race for it is retried with another one).
   */
  port?: number;
  /** How long to wait for the zone to be served (default 20 s). */
  startTimeoutMs?: number;
  /**
   * Wait until the zone is served (default true). With false, start() returns once the server
   * answers at all — for a secondary that is expected never to get the zone (e.g. a wrong key).
   */
  waitForZone?: boolean;
}

/** A running (or stopped and restartable) secondary. */
export interface Secondary {
  readonly kind: SecondaryKind;
  /** `knotd`, `nsd` or `named`. */
  readonly program: string;
  readonly port: number;
  readonly dir: string;
  readonly running: boolean;
  /** The SOA serial it serves for the zone (an authoritative answer), or undefined. */
  soaSerial(): Promise<number | undefined>;
  /** Sorted RDATA (presentation form) of an authoritative answer, undefined when there is none. */
  answer(name: string, type: keyof typeof RRType): Promise<string[] | undefined>;
  /** The process output so far, every run included. */
  log(): string;
  /** The output of the current (or last) run only. */
  lastRunLog(): string;
  /** Stops the process (SIGTERM, then SIGKILL after 5 s), keeping its folder: zone files, journals, state. */
  stop(): Promise<void>;
  /** Starts it again on the same port, with the same configuration and what it stored before. */
  restart(): Promise<void>;
  /** Stops it and removes its folder. Idempotent. */
  close(): Promise<void>;
}

/** Children and folders still to clean up if the test process exits without close(). */
const live = new Set<ChildProcess>();
const folders = new Set<string>();
let exitHookInstalled = false;

/**
 * Servers run in their own process groups (see restart()), so they would outlive a test process that
 * dies without close(): on exit, and on SIGINT/SIGTERM (then re-raised), they are killed and their
 * folders removed.
 */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  const cleanUp = () => {
    for (const child of live) killGroup(child, 'SIGKILL');
    live.clear();
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
    folders.clear();
  };
  process.once('exit', cleanUp);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      cleanUp();
      process.kill(process.pid, signal);
    });
  }
}

/**
 * Starts a secondary of `options.zone` with Zonekeeper at 127.0.0.1:`primaryPort` as its primary.
 * Resolves once it serves the zone (or, with waitForZone false, once it answers at all).
 */
export async function startSecondary(options: SecondaryOptions): Promise<Secondary> {
  installExitHook();
  const dir = await mkdtemp(path.join(tmpdir(), `zonekeeper-secondary-${options.kind}-`));
  folders.add(dir);
  let lastError: Error | undefined;
  // The port is found free and then handed to the server, so another process may take it in between:
  // a failed bind is retried with another port.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = options.port ?? (await freePort());
    const secondary = new SecondaryServer(options, dir, port);
    try {
      await secondary.configure();
      await secondary.restart();
      return secondary;
    } catch (e) {
      lastError = e as Error;
      await secondary.stop();
      if (!(e instanceof BindError) || options.port !== undefined) break;
    }
  }
  await rm(dir, { recursive: true, force: true });
  folders.delete(dir);
  throw lastError ?? new Error(`${options.kind} did not start`);
}

class BindError extends Error {}

/** `count` distinct loopback ports free for TCP and UDP now (to configure before the servers start). */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

const PROGRAMS: Record<SecondaryKind, string> = { knot: 'knotd', nsd: 'nsd', bind: 'named' };

class SecondaryServer implements Secondary {
  readonly kind: SecondaryKind;
  readonly program: string;
  readonly port: number;
  readonly dir: string;
  private readonly options: SecondaryOptions;
  private child: ChildProcess | undefined;
  private output = '';
  private closed = false;

  constructor(options: SecondaryOptions, dir: string, port: number) {
    this.options = options;
    this.kind = options.kind;
    this.program = PROGRAMS[options.kind];
    this.dir = dir;
    this.port = port;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Writes the configuration and creates the folders the server writes into. */
  async configure(): Promise<void> {
    const { dir } = this;
    await Promise.all(
      ['run', 'db', 'zones', 'xfr'].map((d) => mkdir(path.join(dir, d), { recursive: true })),
    );
    const config =
      this.kind === 'knot'
        ? knotConfig(this.options, dir, this.port)
        : this.kind === 'nsd'
          ? nsdConfig(this.options, dir, this.port)
          : bindConfig(this.options, dir, this.port);
    await writeFile(this.configFile(), config);
    // named reads its built-in trust anchors from bindkeys-file; an empty one keeps it off /etc/bind.
    if (this.kind === 'bind') await writeFile(path.join(dir, 'bind.keys'), '');
  }

  private configFile(): string {
    return path.join(
      this.dir,
      this.kind === 'knot' ? 'knot.conf' : this.kind === 'nsd' ? 'nsd.conf' : 'named.conf',
    );
  }

  async restart(): Promise<void> {
    if (this.running) throw new Error(`${this.program} is running`);
    const config = this.configFile();
    const [command, args] =
      this.kind === 'knot'
        ? [KNOTD, ['-c', config]]
        : this.kind === 'nsd'
          ? // -d: stay in the foreground and log to stderr.
            [NSD, ['-d', '-c', config]]
          : // -g: foreground, log to stderr; -n 1: one worker thread; -4: IPv4 only.
            [NAMED, ['-g', '-c', config, '-n', '1', '-4']];
    this.output += `--- ${this.program} start ${new Date().toISOString()}\n`;
    // Its own process group: NSD forks a transfer daemon and server children; stop() ends them all.
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, cwd: this.dir });
    this.child = child;
    live.add(child);
    child.stdout!.on('data', (d) => (this.output += d));
    child.stderr!.on('data', (d) => (this.output += d));
    child.once('error', (e) => (this.output += `\nspawn error: ${e.message}\n`));
    child.once('exit', () => live.delete(child));

    const waitForZone = this.options.waitForZone ?? true;
    const deadline = performance.now() + (this.options.startTimeoutMs ?? 20_000);
    for (;;) {
      if (!this.running) throw new Error(`${this.program} exited:\n${this.output}`);
      if (/address (already )?in use/i.test(this.output)) {
        throw new BindError(`${this.program} could not bind 127.0.0.1:${this.port}:\n${this.output}`);
      }
      if (waitForZone ? (await this.soaSerial()) !== undefined : await this.answers()) return;
      if (performance.now() > deadline) {
        throw new Error(
          `${this.program} did not ${waitForZone ? `serve ${this.options.zone}` : 'answer'} in time:\n${this.output}`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private async query(name: string, type: number): Promise<Message | undefined> {
    const reply = await exchange(this.port, buildQuery({ name, type }), { timeoutMs: 500 });
    return reply.message;
  }

  /** Whether it answers a query at all (any rcode). */
  private async answers(): Promise<boolean> {
    return (await this.query(this.options.zone, RRType.SOA)) !== undefined;
  }

  async soaSerial(): Promise<number | undefined> {
    const m = await this.query(this.options.zone, RRType.SOA);
    const soa = m?.rcode === 0 && m.aa ? m.answers.find((rr) => rr.type === RRType.SOA) : undefined;
    return soa ? (soa.data as Extract<Rdata, { type: 'SOA' }>).serial : undefined;
  }

  async answer(name: string, type: keyof typeof RRType): Promise<string[] | undefined> {
    const code = RRType[type];
    const m = await this.query(name, code);
    if (m?.rcode !== 0 || !m.aa) return undefined;
    const rdata = m.answers.filter((rr) => rr.type === code).map((rr) => printRdata(rr.data as Rdata));
    return rdata.length > 0 ? rdata.sort() : undefined;
  }

  log(): string {
    return this.output;
  }

  lastRunLog(): string {
    return this.output.slice(this.output.lastIndexOf(`--- ${this.program} start `));
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        killGroup(child, 'SIGTERM');
      });
    }
    // Whatever the main process left behind in its group (NSD's children normally exit with it).
    killGroup(child, 'SIGKILL');
    live.delete(child);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
    folders.delete(this.dir);
  }
}

/** Signals the process group of a child started with `detached: true` (its pid is the group id). */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** A double-quoted string for Knot's YAML-like configuration, nsd.conf and named.conf. */
function q(value: string): string {
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** Knot DNS 3.2 (`master:`; 3.3 also accepts `primary:`). */
export function knotConfig(o: SecondaryOptions, dir: string, port: number): string {
  return [
    'server:',
    `    rundir: ${q(path.join(dir, 'run'))}`,
    `    pidfile: ${q(path.join(dir, 'run', 'knot.pid'))}`,
    `    user: ${q(userInfo().username)}`,
    `    listen: 127.0.0.1@${port}`,
    '    udp-workers: 1',
    '    tcp-workers: 1',
    '    background-workers: 1',
    'control:',
    `    listen: ${q(path.join(dir, 'run', 'knot.sock'))}`,
    'log:',
    '  - target: stderr',
    '    any: info',
    'database:',
    `    storage: ${q(path.join(dir, 'db'))}`,
    'key:',
    `  - id: ${q(o.key.name)}`,
    `    algorithm: ${o.key.algorithm}`,
    `    secret: ${q(o.key.secret)}`,
    'remote:',
    '  - id: zonekeeper',
    `    address: 127.0.0.1@${o.primaryPort}`,
    `    key: ${q(o.key.name)}`,
    'acl:',
    '  - id: notify-from-zonekeeper',
    '    address: 127.0.0.1',
    `    key: ${q(o.key.name)}`,
    '    action: notify',
    'template:',
    '  - id: default',
    `    storage: ${q(path.join(dir, 'zones'))}`,
    'zone:',
    `  - domain: ${q(o.zone)}`,
    '    master: zonekeeper',
    '    acl: notify-from-zonekeeper',
    '',
  ].join('\n');
}

/** NSD 4 (`nsd -d -c nsd.conf`). */
export function nsdConfig(o: SecondaryOptions, dir: string, port: number): string {
  const zone = o.zone.replace(/\.$/, '');
  return [
    'server:',
    `    ip-address: 127.0.0.1@${port}`,
    '    do-ip6: no',
    '    username: ""',
    '    chroot: ""',
    `    zonesdir: ${q(path.join(dir, 'zones'))}`,
    `    pidfile: ${q(path.join(dir, 'run', 'nsd.pid'))}`,
    `    xfrdfile: ${q(path.join(dir, 'db', 'xfrd.state'))}`,
    `    xfrdir: ${q(path.join(dir, 'xfr'))}`,
    `    zonelistfile: ${q(path.join(dir, 'db', 'zone.list'))}`,
    '    database: ""',
    '    server-count: 1',
    '    verbosity: 2',
    'remote-control:',
    '    control-enable: no',
    'key:',
    `    name: ${q(o.key.name)}`,
    `    algorithm: ${o.key.algorithm}`,
    `    secret: ${q(o.key.secret)}`,
    'zone:',
    `    name: ${q(zone)}`,
    `    zonefile: ${q(`${zone}.zone`)}`,
    `    request-xfr: 127.0.0.1@${o.primaryPort} ${o.key.name}`,
    `    allow-notify: 127.0.0.1 ${o.key.name}`,
    '',
  ].join('\n');
}

/** BIND 9.18 (`named -g -c named.conf`): no rndc channel, nothing read or written under /etc/bind or /var. */
export function bindConfig(o: SecondaryOptions, dir: string, port: number): string {
  const zone = o.zone.replace(/\.$/, '');
  return [
    'options {',
    `    directory ${q(dir)};`,
    `    listen-on port ${port} { 127.0.0.1; };`,
    '    listen-on-v6 { none; };',
    `    pid-file ${q(path.join(dir, 'run', 'named.pid'))};`,
    `    session-keyfile ${q(path.join(dir, 'run', 'session.key'))};`,
    `    managed-keys-directory ${q(path.join(dir, 'db'))};`,
    `    bindkeys-file ${q(path.join(dir, 'bind.keys'))};`,
    '    recursion no;',
    '    dnssec-validation no;',
    '    notify no;',
    '};',
    'controls { };',
    `key ${q(o.key.name)} {`,
    `    algorithm ${o.key.algorithm};`,
    `    secret ${q(o.key.secret)};`,
    '};',
    `zone ${q(zone)} {`,
    '    type secondary;',
    `    primaries { 127.0.0.1 port ${o.primaryPort} key ${q(o.key.name)}; };`,
    `    file ${q(path.join('zones', `${zone}.db`))};`,
    '    masterfile-format text;',
    '};',
    '',
  ].join('\n');
}
