/** `zonekeeper operator` and `zonekeeper server` child processes against a test API server. */
import { type ChildProcess, spawn } from 'node:child_process';
import { CLI } from './zonekeeper-process.ts';

export interface KubeProcess {
  name: string;
  pid: number;
  httpUrl: string;
  /** The DNS port (server only). */
  dnsPort: number;
  log: () => string;
  exited: () => boolean;
  /** SIGKILL: a crash, no cleanup (the lease is not released). */
  kill(): Promise<void>;
  /** SIGTERM: graceful shutdown. */
  stop(): Promise<void>;
}

function startProcess(name: string, args: string[], ready: RegExp, timeoutMs = 30_000): Promise<KubeProcess> {
  const child: ChildProcess = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const append = (d: Buffer) => {
    output += d;
    if (output.length > 4_000_000) output = output.slice(-2_000_000);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const waitExit = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
  const handle = (m: RegExpExecArray): KubeProcess => ({
    name,
    pid: child.pid!,
    httpUrl: `http://127.0.0.1:${m.groups?.http}`,
    dnsPort: Number(m.groups?.dns ?? 0),
    log: () => output,
    exited: () => child.exitCode !== null || child.signalCode !== null,
    kill: async () => {
      const done = waitExit();
      child.kill('SIGKILL');
      await done;
    },
    stop: async () => {
      const done = waitExit();
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(timer);
    },
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const check = () => {
      const m = ready.exec(output);
      if (m) {
        clearTimeout(timer);
        child.stderr!.off('data', check);
        resolve(handle(m));
      }
    };
    child.stderr!.on('data', check);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${output}`));
    });
  });
}

export function startOperatorProcess(
  name: string,
  kubeconfig: string,
  namespace: string,
  extra: string[] = [],
): Promise<KubeProcess> {
  return startProcess(
    name,
    [
      'operator',
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      namespace,
      '--http',
      '127.0.0.1:0',
      '--identity',
      name,
      ...extra,
    ],
    /operator started http="127\.0\.0\.1:(?<http>\d+)"/,
  );
}

export function startServerProcess(
  name: string,
  kubeconfig: string,
  extra: string[] = [],
): Promise<KubeProcess> {
  return startProcess(
    name,
    ['server', '--kubeconfig', kubeconfig, '--dns', '127.0.0.1:0', '--http', '127.0.0.1:0', ...extra],
    / serving dns="127\.0\.0\.1:(?<dns>\d+)" http="127\.0\.0\.1:(?<http>\d+)"/,
  );
}
