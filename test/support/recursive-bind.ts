/**
 * BIND (`named`) as a recursive resolver on loopback, standing in for the internet's DNS: it is the
 * authority of a private root zone (whose delegations a test writes, e.g. `example.test. NS ...`)
 * and forwards the names of chosen zones to a Zonekeeper server, which answers for them. A resolver
 * asked for `_zonekeeper-challenge.example.test TXT` thus gets Zonekeeper's answer, and the root's
 * servers (BIND itself, `a.root-servers.test` = 127.0.0.1) answer non-recursive questions about
 * delegations with referrals, as a real parent zone does.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dig } from './dig.ts';
import { freePort } from './ports.ts';
import { NAMED } from './secondaries.ts';

export interface RecursiveBind {
  port: number;
  /** Replaces the root zone's extra records (a new serial) and reloads named (SIGHUP); waits until served. */
  setRootRecords(records: string[]): Promise<void>;
  log(): string;
  stop(): Promise<void>;
}

export interface RecursiveBindOptions {
  /** Records of the root zone beyond its SOA and NS, in zone-file lines (absolute names). */
  rootRecords: string[];
  /** Zones whose names are forwarded to this port on 127.0.0.1 (the Zonekeeper server). */
  forward?: { zones: string[]; port: number };
}

function q(s: string): string {
  return `"${s.replace(/["\\]/g, '\\$&')}"`;
}

export async function startRecursiveBind(options: RecursiveBindOptions): Promise<RecursiveBind> {
  const dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-recursive-bind-'));
  await mkdir(path.join(dir, 'run'), { recursive: true });
  const port = await freePort();
  let serial = 1;
  const root = (records: string[]) =>
    [
      '$TTL 1',
      `. IN SOA a.root-servers.test. hostmaster.root-servers.test. ${serial} 60 60 600 1`,
      '. IN NS a.root-servers.test.',
      'a.root-servers.test. IN A 127.0.0.1',
      ...records,
      '',
    ].join('\n');
  await writeFile(path.join(dir, 'root.db'), root(options.rootRecords));
  await writeFile(path.join(dir, 'bind.keys'), '');
  const config = [
    'options {',
    `    directory ${q(dir)};`,
    `    listen-on port ${port} { 127.0.0.1; };`,
    '    listen-on-v6 { none; };',
    `    pid-file ${q(path.join(dir, 'run', 'named.pid'))};`,
    `    session-keyfile ${q(path.join(dir, 'run', 'session.key'))};`,
    `    managed-keys-directory ${q(dir)};`,
    `    bindkeys-file ${q(path.join(dir, 'bind.keys'))};`,
    '    recursion yes;',
    '    allow-recursion { 127.0.0.1; };',
    '    dnssec-validation no;',
    '    notify no;',
    // Tests change answers and expect the next look-up to see them.
    '    max-cache-ttl 1;',
    '    max-ncache-ttl 1;',
    '};',
    'controls { };',
    'zone "." { type primary; file "root.db"; };',
    ...(options.forward?.zones ?? []).map(
      (z) =>
        `zone ${q(z)} { type forward; forward only; forwarders { 127.0.0.1 port ${options.forward?.port}; }; };`,
    ),
    '',
  ].join('\n');
  await writeFile(path.join(dir, 'named.conf'), config);
  let output = '';
  const child: ChildProcess = spawn(NAMED, ['-g', '-c', path.join(dir, 'named.conf'), '-n', '1', '-4'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    cwd: dir,
  });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          resolve();
        }
        setTimeout(() => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            // gone
          }
        }, 5000).unref();
      });
    }
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = performance.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`named exited:\n${output}`);
    }
    try {
      const r = await dig(port, '.', 'SOA');
      if (r.status === 'NOERROR') break;
    } catch {
      // not up yet
    }
    if (performance.now() > deadline) {
      await stop();
      throw new Error(`named did not answer in time:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const setRootRecords = async (records: string[]) => {
    serial++;
    await writeFile(path.join(dir, 'root.db'), root(records));
    process.kill(child.pid!, 'SIGHUP');
    const wanted = serial;
    const until = performance.now() + 20_000;
    for (;;) {
      const r = await dig(port, '.', 'SOA').catch(() => undefined);
      if (r?.answer.some((l) => l.split(' ')[6] === String(wanted))) return;
      if (performance.now() > until) throw new Error(`named did not load root serial ${wanted}:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return { port, log: () => output, stop, setRootRecords };
}
