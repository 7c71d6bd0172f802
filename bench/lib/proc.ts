/**
 * Process plumbing for the benchmarks: pinned child processes in their own process group, a cleanup
 * registry that runs on normal exit, errors and Ctrl-C, free loopback ports, and /proc readers for
 * resident memory and CPU time of a process tree.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
export const ROOT = path.resolve(import.meta.dirname, '../..');

// ---------------------------------------------------------------------------------------------------
// Cleanup registry

interface Owned {
  /** Kills synchronously (SIGKILL to the group); used when the harness is exiting. */
  killNow(): void;
}

const children = new Set<Owned>();
const dirs = new Set<string>();
let handlersInstalled = false;

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', () => {
    for (const c of children) c.killNow();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping servers and removing temporary folders\n`);
      // 'exit' handlers do the work synchronously.
      process.exit(130);
    });
  }
}

/** A temporary folder removed when the harness exits (or earlier with `removeTempDir`). */
export function makeTempDir(prefix: string): string {
  installHandlers();
  const dir = mkdtempSync(path.join(tmpdir(), `zonekeeper-bench-${prefix}-`));
  dirs.add(dir);
  return dir;
}

/** Leaves the folder in place at exit (for --keep). */
export function keepTempDir(dir: string): void {
  dirs.delete(dir);
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
}

// ---------------------------------------------------------------------------------------------------
// Pinned process groups

export interface Pinned {
  /** pid of the server itself (taskset execs it, so this is the server's pid). */
  pid: number;
  child: ChildProcess;
  logFile: string;
  /** Last lines of the log, for error messages. */
  tail(lines?: number): string;
  exited(): boolean;
  /** SIGTERM to the process group, SIGKILL after `graceMs`; resolves when the leader has exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts `command args` under `taskset -c cores` as the leader of a new process group (so that
 * threads, workers and any helper processes are pinned and stopped together), with stdout and
 * stderr appended to `logFile`.
 */
export function spawnPinned(cores: string, command: string, args: string[], logFile: string): Pinned {
  installHandlers();
  const fd = openSync(logFile, 'a');
  const child = spawn('taskset', ['-c', cores, command, ...args], {
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  const pid = child.pid;
  let exited = false;
  const exitPromise = new Promise<void>((resolve) => {
    child.once('exit', () => {
      exited = true;
      children.delete(owned);
      resolve();
    });
  });
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      // already gone
    }
  };
  const owned: Owned = { killNow: () => killGroup('SIGKILL') };
  children.add(owned);
  return {
    pid,
    child,
    logFile,
    exited: () => exited,
    tail(lines = 30) {
      try {
        return readFileSync(logFile, 'utf8').split('\n').slice(-lines).join('\n');
      } catch {
        return '';
      }
    },
    async stop(graceMs = 5000) {
      if (!exited) {
        killGroup('SIGTERM');
        const timer = setTimeout(() => killGroup('SIGKILL'), graceMs);
        await exitPromise;
        clearTimeout(timer);
      }
      // Anything left in the group (a worker that ignored SIGTERM) goes too.
      killGroup('SIGKILL');
    },
  };
}

/**
 * Runs a command to completion (pinned when `cores` is given); rejects with its output on failure.
 * The command is killed if the harness exits first (dnsperf included).
 */
export function run(
  command: string,
  args: string[],
  options: { cores?: string; timeoutMs?: number; maxBuffer?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  installHandlers();
  const [cmd, argv] = options.cores ? ['taskset', ['-c', options.cores, command, ...args]] : [command, args];
  return new Promise((resolve, reject) => {
    const owned: Owned = { killNow: () => child.kill('SIGKILL') };
    const child = execFile(
      cmd as string,
      argv as string[],
      { timeout: options.timeoutMs ?? 600_000, maxBuffer: options.maxBuffer ?? 64 << 20, encoding: 'utf8' },
      (error, stdout, stderr) => {
        children.delete(owned);
        if (error) {
          reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`));
        } else {
          resolve({ stdout, stderr });
        }
      },
    );
    children.add(owned);
  });
}

// ---------------------------------------------------------------------------------------------------
// CPU lists

/** Parses a taskset-style CPU list (`0-1`, `0,2-3`) into CPU numbers. */
export function parseCpuList(list: string): number[] {
  const out = new Set<number>();
  for (const part of list.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`bad CPU list ${JSON.stringify(list)} (expected e.g. 0-1 or 0,2)`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    for (let c = from; c <= to; c++) out.add(c);
  }
  return [...out].sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------------------------------
// Ports

/** A loopback port free for both UDP and TCP at the time of the call. */
export { freePort } from '../../test/support/ports.ts';

// ---------------------------------------------------------------------------------------------------
// /proc readers

/** The pid and all its descendants (via /proc/<pid>/task/<tid>/children). */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    out.push(p);
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        const kids = readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8').trim();
        if (kids) for (const k of kids.split(/\s+/)) queue.push(Number(k));
      } catch {
        // task ended
      }
    }
  }
  return out;
}

/** A `kB` field of /proc/<pid>/status (VmRSS, VmHWM, ...) in KiB; 0 once the process is gone. */
export function statusField(pid: number, field: string): number {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Resident memory (VmRSS) of the process tree, in KiB; `peak` sums VmHWM instead. */
export function treeRssKiB(pid: number, peak = false): number {
  return processTree(pid).reduce((sum, p) => sum + statusField(p, peak ? 'VmHWM' : 'VmRSS'), 0);
}

/**
 * Proportional set size of the process tree in KiB (/proc/<pid>/smaps_rollup): shared pages are
 * divided among the processes that map them, so unlike summed RSS it does not count the Node binary
 * once per worker process.
 */
export function treePssKiB(pid: number): number {
  let sum = 0;
  for (const p of processTree(pid)) {
    try {
      const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'));
      sum += m ? Number(m[1]) : 0;
    } catch {
      // exited
    }
  }
  return sum;
}

/** USER_HZ, the unit of utime/stime in /proc/<pid>/stat: 100 on every Linux ABI Node supports. */
const USER_HZ = 100;

/** User + system CPU seconds used so far by the process tree (threads included). */
export function treeCpuSeconds(pid: number): number {
  let seconds = 0;
  for (const p of processTree(pid)) seconds += statCpuSeconds(`/proc/${p}/stat`) ?? 0;
  return seconds;
}

/** User + system CPU seconds in a /proc `stat` file (a process's or a thread's); null once it is gone. */
function statCpuSeconds(file: string): number | null {
  try {
    const stat = readFileSync(file, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state); utime is field 14, stime field 15.
    return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
  } catch {
    return null;
  }
}

/**
 * User + system CPU seconds used so far by one process's main thread alone (/proc/<pid>/task/<pid>/stat):
 * the control plane's thread in `zonekeeper serve`, without its parse, DNS and V8 helper threads.
 */
export function mainThreadCpuSeconds(pid: number): number | null {
  return statCpuSeconds(`/proc/${pid}/task/${pid}/stat`);
}

/** One thread of a process: its name (`comm`, what Node and V8 call it) and CPU seconds so far. */
export interface ThreadCpu {
  name: string;
  seconds: number;
}

/**
 * User + system CPU seconds of each live thread of one process, by thread id (/proc/<pid>/task/*\/stat).
 * Node names its threads: `MainThread`, `V8Worker` (V8's helpers shared by every isolate: concurrent
 * marking and sweeping, parallel scavenges, background compiles), `libuv-worker` (the thread pool:
 * file reads and writes), worker threads by their `name` option (`WorkerThread` without one).
 */
export function threadCpu(pid: number): Map<number, ThreadCpu> {
  const out = new Map<number, ThreadCpu>();
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      out.set(Number(tid), {
        name: stat.slice(stat.indexOf('(') + 1, close),
        seconds: (Number(fields[11]) + Number(fields[12])) / USER_HZ,
      });
    } catch {
      // the thread ended
    }
  }
  return out;
}

/**
 * Follows one process's threads over time (`sample` as often as convenient) so that threads that end
 * (a parse pool shrinking after the first load) keep the CPU they were last seen with; `byName` sums
 * the threads by name, and `unseen` is what the process used beyond every thread's last sample (threads
 * that ran between samples, or a thread's last moments).
 */
export class ThreadCpuTracker {
  private readonly pid: number;
  private readonly seen = new Map<number, ThreadCpu>();

  constructor(pid: number) {
    this.pid = pid;
  }

  sample(): void {
    for (const [tid, t] of threadCpu(this.pid)) this.seen.set(tid, t);
  }

  /** CPU seconds by thread name, each with its thread count, plus `unseen` (see the class). */
  byName(): Record<string, { seconds: number; threads: number }> {
    this.sample();
    const out: Record<string, { seconds: number; threads: number }> = {};
    let sum = 0;
    for (const { name, seconds } of this.seen.values()) {
      const entry = out[name] ?? { seconds: 0, threads: 0 };
      out[name] = entry;
      entry.seconds = Math.round((entry.seconds + seconds) * 100) / 100;
      entry.threads++;
      sum += seconds;
    }
    const total = statCpuSeconds(`/proc/${this.pid}/stat`);
    if (total !== null) out.unseen = { seconds: Math.round((total - sum) * 100) / 100, threads: 0 };
    return out;
  }
}

/** The CPUs a process may run on, from /proc (what taskset actually applied). */
export function allowedCpus(pid: number): string {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    return /^Cpus_allowed_list:\s+(\S+)/m.exec(text)?.[1] ?? '?';
  } catch {
    return '?';
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
