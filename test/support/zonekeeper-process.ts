import { type ChildProcess, spawn } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const CLI = path.join(ROOT, 'src/cli/main.ts');

/** A `zonekeeper serve` child process on ephemeral loopback ports. */
export interface ServeProcess {
  /** The child's process ID (e.g. to read /proc/<pid>/status). */
  pid: number;
  dnsPort: number;
  httpUrl: string;
  log: () => string;
  stop(): Promise<void>;
}

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), `zonekeeper-${prefix}-`));
}

/** Copies `examples/` into a fresh temporary folder. */
export async function copyExamples(): Promise<string> {
  const dir = await tempDir('manifests');
  await cp(path.join(ROOT, 'examples'), dir, { recursive: true });
  return dir;
}

export async function startServe(
  manifests: string,
  stateDir: string,
  extra: string[] = [],
): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--manifests',
      manifests,
      '--state-dir',
      stateDir,
      '--dns',
      '127.0.0.1:0',
      '--http',
      '127.0.0.1:0',
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const starting = new Promise<{ dnsPort: number; httpUrl: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // never leave a half-started server behind
      reject(new Error(`serve did not start:\n${output}`));
      // A minute: on a loaded 2-CPU machine (a fresh machine's first `npm test`, builds beside it) the
      // process printed nothing within 20 s, compiling its modules.
    }, 60_000);
    const check = () => {
      const m = / serving dns="127\.0\.0\.1:(\d+)" http="127\.0\.0\.1:(\d+)"/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ dnsPort: Number(m[1]), httpUrl: `http://127.0.0.1:${m[2]}` });
      } else if (/^zonekeeper: /m.test(output)) {
        // The CLI reports a fatal error this way (and may not exit by itself).
        clearTimeout(timer);
        reject(new Error(`serve failed to start:\n${output}`));
      }
    };
    child.stderr!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${output}`));
    });
  });
  let started: { dnsPort: number; httpUrl: string };
  try {
    started = await starting;
  } catch (e) {
    await stopChild(child); // never leave a half-started child behind: its pipes would keep the runner alive
    throw e;
  }
  return {
    ...started,
    pid: child.pid!,
    log: () => output,
    stop: () => stopChild(child),
  };
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

export async function removeAll(...dirs: string[]): Promise<void> {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
}

/** Polls `probe` until it returns a value other than undefined; returns it and the time it took. */
export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  intervalMs = 20,
): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined) return { value, ms: performance.now() - started };
    if (performance.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
