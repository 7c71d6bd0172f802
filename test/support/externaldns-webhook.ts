/**
 * ExternalDNS's own webhook provider code on loopback: test/gotools/externaldns-inmemory-webhook (its
 * webhook server around its in-memory provider), and one reconciliation of an ExternalDNS instance
 * with its webhook client, TXT registry and planner (test/gotools/externaldns-webhook-owner).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { goProgram } from './go-programs.ts';
import { freePort } from './ports.ts';

export interface Endpoint {
  dnsName: string;
  targets?: string[];
  recordType: string;
  setIdentifier?: string;
  recordTTL?: number;
  labels?: Record<string, string>;
}

export interface InMemoryWebhook {
  url: string;
  /** Every endpoint the provider holds (`GET /records`, read directly, not through a backend). */
  records(): Promise<Endpoint[]>;
  /** One `POST /records` batch sent directly, as another writer would. */
  apply(changes: Partial<Record<'create' | 'updateOld' | 'updateNew' | 'delete', Endpoint[]>>): Promise<void>;
  /** Stops the process (an outage); `start` brings it back on the same port, holding nothing. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** The provider's process ID (to pause it with SIGSTOP). */
  pid(): number | undefined;
}

export async function startInMemoryWebhook(options: {
  zones: string[];
  domainFilter?: string[];
  exclude?: string[];
  types?: string[];
  /** The webhook server's request body limit in bytes (413 above it). */
  maxBody?: number;
}): Promise<InMemoryWebhook> {
  const binary = await goProgram('externaldns-inmemory-webhook');
  const port = await freePort(false);
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const start = async () => {
    const args = ['-listen', `127.0.0.1:${port}`, '-zones', options.zones.join(',')];
    if (options.domainFilter) args.push('-domain-filter', options.domainFilter.join(','));
    if (options.exclude) args.push('-exclude', options.exclude.join(','));
    if (options.types) args.push('-types', options.types.join(','));
    if (options.maxBody !== undefined) args.push('-max-body', String(options.maxBody));
    const c = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    let err = '';
    c.stderr!.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-4000);
    });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      c.once('exit', (code) => reject(new Error(`externaldns-inmemory-webhook exited with ${code}: ${err}`)));
      c.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('listening')) resolve();
      });
    });
    // Listening is announced once the socket is bound; wait for an answer all the same.
    for (let i = 0; i < 100; i++) {
      try {
        if ((await fetch(`${url}/`)).ok) return;
      } catch {}
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGTERM');
    });
  };
  await start();
  return {
    url,
    records: async () => {
      const response = await fetch(`${url}/records`);
      if (!response.ok) throw new Error(`GET /records: HTTP ${response.status}`);
      return (await response.json()) as Endpoint[];
    },
    apply: async (changes) => {
      const response = await fetch(`${url}/records`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/external.dns.webhook+json;version=1' },
        body: JSON.stringify(changes),
      });
      if (response.status !== 204) throw new Error(`POST /records: HTTP ${response.status}`);
    },
    stop,
    start,
    pid: () => child?.pid,
  };
}

export interface OwnerResult {
  create: number;
  updateNew: number;
  delete: number;
  records: { name: string; type: string; ttl?: number; targets: string[]; owner?: string }[];
}

/**
 * One reconciliation of an ExternalDNS instance with owner ID `owner` managing `domain`, towards
 * `desired`, through the webhook provider at `url`.
 */
export async function externalDnsOwner(options: {
  url: string;
  owner: string;
  domain: string;
  desired: { name: string; type: string; ttl?: number; targets: string[] }[];
  txtPrefix?: string;
}): Promise<OwnerResult> {
  const binary = await goProgram('externaldns-webhook-owner');
  const args = ['-url', options.url, '-owner', options.owner, '-domain', options.domain];
  if (options.txtPrefix) args.push('-txt-prefix', options.txtPrefix);
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`externaldns-webhook-owner exited with ${code}: ${err}`));
      else resolve(JSON.parse(out) as OwnerResult);
    });
    child.stdin.end(JSON.stringify(options.desired));
  });
}
