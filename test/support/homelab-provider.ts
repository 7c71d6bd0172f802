/**
 * Starts the independent homelab-protocol provider written in Python's standard library
 * (`homelab-provider.py`) on loopback, and steers it through its `/_control/*` endpoints.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./homelab-provider.py', import.meta.url));

export interface StoredRecord {
  type: string;
  domain: string;
  subdomain: string;
  fqdn: string;
  values: string[];
  ttl?: number;
  metadata?: { priority?: number; weight?: number; port?: number };
}

export interface PythonProvider {
  url: string;
  port: number;
  /** `503`, `500` or `drop` (close the connection unanswered) for every protocol request; `null` recovers. */
  fail(mode: '503' | '500' | 'drop' | null): Promise<void>;
  reject(type: string, domain: string, subdomain: string): Promise<void>;
  clearRejects(): Promise<void>;
  records(): Promise<StoredRecord[]>;
  /** Changes a record behind the client's back (or deletes it with `delete: true`). */
  drift(
    record: Partial<StoredRecord> & { type: string; domain: string; subdomain: string; delete?: boolean },
  ): Promise<void>;
  log(): Promise<{ log: { method: string; path: string; record?: StoredRecord }[]; authFailures: number }>;
  stop(): Promise<void>;
}

export async function startPythonProvider(
  options: { secret?: string; algorithm?: 'SHA256' | 'SHA512'; noGet?: boolean; port?: number } = {},
): Promise<PythonProvider> {
  const args = [SCRIPT, '--port', String(options.port ?? 0)];
  if (options.secret !== undefined) args.push('--secret', options.secret);
  if (options.algorithm) args.push('--algorithm', options.algorithm);
  if (options.noGet) args.push('--no-get');
  const child: ChildProcess = spawn('python3', args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.once('exit', (code) => reject(new Error(`homelab-provider.py exited with ${code}`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  const control = async (path: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(`${url}/_control/${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return response.json();
  };
  return {
    url,
    port,
    fail: async (mode) => void (await control('fail', { mode })),
    reject: async (type, domain, subdomain) => void (await control('reject', { type, domain, subdomain })),
    clearRejects: async () => void (await control('reject', { clear: true })),
    records: async () => ((await control('records')) as { records: StoredRecord[] }).records,
    drift: async (record) => void (await control('records', record)),
    log: async () => (await control('log')) as Awaited<ReturnType<PythonProvider['log']>>,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
