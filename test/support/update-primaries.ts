/**
 * Real primaries that accept DNS UPDATE (RFC 2136) with TSIG — Knot DNS (`knotd`) and BIND (`named`) —
 * for the RFC 2136 backend's suites. Each serves the given zones from zone files holding only an SOA
 * and one NS, accepts UPDATE signed with the update key or the "hand" key (what a person with
 * `nsupdate` uses) and AXFR signed with the update or the transfer key, keeps updates in its journal
 * across a restart, and runs on 127.0.0.1 at an ephemeral port in a temp folder of its own.
 * The configurations are the ones docs/backends/rfc2136.md shows.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { RRType } from '../../src/dns/rrtype.ts';
import { buildQuery, exchange } from './dns-client.ts';
import { KNOTD } from './knot.ts';
import { freePort } from './ports.ts';
import { NAMED } from './secondaries.ts';

export const NSUPDATE = process.env.NSUPDATE ?? '/usr/bin/nsupdate';

export type PrimaryKind = 'knot' | 'bind';

export interface KeyConfig {
  name: string;
  algorithm: 'hmac-sha256';
  secret: string;
}

export function newKey(name: string): KeyConfig {
  return { name, algorithm: 'hmac-sha256', secret: randomBytes(32).toString('base64') };
}

export interface UpdatePrimaryOptions {
  kind: PrimaryKind;
  /** Absolute zone names. */
  zones: readonly string[];
  /** The key Zonekeeper signs UPDATE (and AXFR) with. */
  updateKey: KeyConfig;
  /** A key allowed AXFR only. */
  transferKey: KeyConfig;
  /** A key allowed UPDATE, for changes made by hand with nsupdate. */
  handKey: KeyConfig;
}

export interface UpdatePrimary {
  kind: PrimaryKind;
  port: number;
  dir: string;
  log(): string;
  /** Runs nsupdate (BIND's) against the server with the hand key; `lines` are its commands before `send`. */
  nsupdate(zone: string, lines: readonly string[]): Promise<void>;
  /** Stops the server, keeping its files (zones and journals). */
  halt(): Promise<void>;
  /** Starts it again after halt(). */
  start(): Promise<void>;
  close(): Promise<void>;
}

const live = new Set<ChildProcess>();
const folders = new Set<string>();
let hooked = false;

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const child of live) killGroup(child, 'SIGKILL');
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

const q = (v: string) => `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;

export function zoneFileText(origin: string): string {
  return [
    `$ORIGIN ${origin}`,
    '$TTL 300',
    '@ SOA ns1.contract.example. hostmaster.contract.example. 1 3600 600 604800 300',
    '@ NS ns1.contract.example.',
    '',
  ].join('\n');
}

/** Knot DNS as an UPDATE-accepting primary: journal kept, zone file never rewritten. */
export function knotPrimaryConfig(o: UpdatePrimaryOptions, dir: string, port: number): string {
  const keys = [o.updateKey, o.transferKey, o.handKey];
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
    'key:',
    ...keys.flatMap((k) => [
      `  - id: ${q(k.name)}`,
      `    algorithm: ${k.algorithm}`,
      `    secret: ${q(k.secret)}`,
    ]),
    'acl:',
    '  - id: zonekeeper',
    `    key: ${q(o.updateKey.name)}`,
    '    action: [transfer, update]',
    '  - id: transfer',
    `    key: ${q(o.transferKey.name)}`,
    '    action: transfer',
    '  - id: hand',
    `    key: ${q(o.handKey.name)}`,
    '    action: update',
    'database:',
    `    storage: ${q(path.join(dir, 'db'))}`,
    'template:',
    '  - id: default',
    `    storage: ${q(path.join(dir, 'zones'))}`,
    '    zonefile-sync: -1',
    '    journal-content: changes',
    '    acl: [zonekeeper, transfer, hand]',
    'zone:',
    ...o.zones.flatMap((z, i) => [`  - domain: ${q(z)}`, `    file: ${q(`zone${i}.zone`)}`]),
    '',
  ].join('\n');
}

/** BIND 9.18 as an UPDATE-accepting primary: update-policy per key, journal beside the zone file. */
export function bindPrimaryConfig(o: UpdatePrimaryOptions, dir: string, port: number): string {
  const keys = [o.updateKey, o.transferKey, o.handKey];
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
    ...keys.flatMap((k) => [
      `key ${q(k.name)} {`,
      `    algorithm ${k.algorithm};`,
      `    secret ${q(k.secret)};`,
      '};',
    ]),
    ...o.zones.flatMap((z, i) => [
      `zone ${q(z.replace(/\.$/, ''))} {`,
      '    type primary;',
      `    file ${q(path.join('zones', `zone${i}.zone`))};`,
      `    update-policy { grant ${q(o.updateKey.name)} zonesub ANY; grant ${q(o.handKey.name)} zonesub ANY; };`,
      `    allow-transfer { key ${q(o.updateKey.name)}; key ${q(o.transferKey.name)}; };`,
      '};',
    ]),
    '',
  ].join('\n');
}

/** Starts a primary; resolves once it answers the SOA of every zone. */
export async function startUpdatePrimary(options: UpdatePrimaryOptions): Promise<UpdatePrimary> {
  hook();
  let lastError: Error | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    const dir = await mkdtemp(path.join(tmpdir(), `zonekeeper-primary-${options.kind}-`));
    folders.add(dir);
    const port = await freePort();
    const primary = new Primary(options, dir, port);
    try {
      await primary.configure();
      await primary.start();
      return primary;
    } catch (e) {
      lastError = e as Error;
      await primary.close();
      if (!/address (already )?in use|cannot bind/i.test(lastError.message)) break;
    }
  }
  throw lastError ?? new Error(`${options.kind} did not start`);
}

class Primary implements UpdatePrimary {
  readonly kind: PrimaryKind;
  private child: ChildProcess | undefined;
  private output = '';

  private readonly options: UpdatePrimaryOptions;
  readonly dir: string;
  readonly port: number;

  constructor(options: UpdatePrimaryOptions, dir: string, port: number) {
    this.options = options;
    this.dir = dir;
    this.port = port;
    this.kind = options.kind;
  }

  private get configFile(): string {
    return path.join(this.dir, this.kind === 'knot' ? 'knot.conf' : 'named.conf');
  }

  async configure(): Promise<void> {
    await Promise.all(['run', 'db', 'zones'].map((d) => mkdir(path.join(this.dir, d), { recursive: true })));
    for (const [i, z] of this.options.zones.entries())
      await writeFile(path.join(this.dir, 'zones', `zone${i}.zone`), zoneFileText(z));
    const config =
      this.kind === 'knot'
        ? knotPrimaryConfig(this.options, this.dir, this.port)
        : bindPrimaryConfig(this.options, this.dir, this.port);
    await writeFile(this.configFile, config);
    if (this.kind === 'bind') await writeFile(path.join(this.dir, 'bind.keys'), '');
  }

  private get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(): Promise<void> {
    const [command, args] =
      this.kind === 'knot'
        ? [KNOTD, ['-c', this.configFile]]
        : [NAMED, ['-g', '-c', this.configFile, '-n', '1', '-4']];
    this.output += `--- start ${new Date().toISOString()}\n`;
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, cwd: this.dir });
    this.child = child;
    live.add(child);
    child.stdout!.on('data', (d) => (this.output += d));
    child.stderr!.on('data', (d) => (this.output += d));
    child.once('error', (e) => (this.output += `\nspawn error: ${e.message}\n`));
    child.once('exit', () => live.delete(child));
    const deadline = performance.now() + 20_000;
    const pending = new Set(this.options.zones);
    while (pending.size > 0) {
      if (!this.running) throw new Error(`${command} exited:\n${this.output}`);
      if (/address (already )?in use|cannot bind/i.test(this.output))
        throw new Error(`${command} cannot bind 127.0.0.1:${this.port}:\n${this.output}`);
      if (performance.now() > deadline)
        throw new Error(`${command} did not serve the zones in time:\n${this.output}`);
      for (const z of [...pending]) {
        const reply = await exchange(this.port, buildQuery({ name: z, type: RRType.SOA }), {
          timeoutMs: 300,
        });
        if (reply.message?.rcode === 0 && reply.message.aa) pending.delete(z);
      }
      if (pending.size > 0) await new Promise((r) => setTimeout(r, 50));
    }
  }

  log(): string {
    return this.output;
  }

  async nsupdate(zone: string, lines: readonly string[]): Promise<void> {
    const key = this.options.handKey;
    const script = [`server 127.0.0.1 ${this.port}`, `zone ${zone}`, ...lines, 'send', ''].join('\n');
    await new Promise<void>((resolve, reject) => {
      const child = execFile(
        NSUPDATE,
        ['-v', '-y', `${key.algorithm}:${key.name}:${key.secret}`],
        { timeout: 10_000 },
        (error, stdout, stderr) =>
          error ? reject(new Error(`nsupdate failed: ${error.message}\n${stdout}${stderr}`)) : resolve(),
      );
      child.stdin!.end(script);
    });
  }

  async halt(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      killGroup(child, 'SIGTERM');
    });
    live.delete(child);
  }

  async close(): Promise<void> {
    await this.halt();
    await rm(this.dir, { recursive: true, force: true });
    folders.delete(this.dir);
  }
}
