/**
 * A real PowerDNS Authoritative (`pdns_server`) for tests and benchmarks: loopback only, ephemeral
 * ports, every file (configuration, database, control socket) in a temp folder, Datum Cloud's deployment
 * settings (LMDB: lmdb-shards=1, lmdb-random-ids, lmdb-flag-deleted where the version has it, zone
 * caches off) or the SQLite backend. Also a tiny loopback DNS resolver for ALIAS expansion, so
 * PowerDNS never asks a public one.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { decodeMessage, encodeMessage, Rcode } from '../../src/dns/message.ts';
import { nameKey } from '../../src/dns/name.ts';
import { RRType } from '../../src/dns/rrtype.ts';
import { freePort } from './ports.ts';

const run = promisify(execFile);

export const PDNS_SERVER = process.env.PDNS_SERVER ?? '/usr/sbin/pdns_server';
export const SQLITE_SCHEMA = '/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql';

export type PowerDnsStorage = 'lmdb' | 'sqlite';

export interface PowerDnsOptions {
  storage: PowerDnsStorage;
  /** host:port of the resolver PowerDNS uses for ALIAS targets (expand-alias=yes). */
  resolver?: string;
  /** Extra pdns.conf lines. */
  extra?: string[];
  /** SQLite: DNSSEC enabled in the backend (gsqlite3-dnssec=yes). LMDB always has it. */
  dnssec?: boolean;
}

export interface PowerDnsProcess {
  storage: PowerDnsStorage;
  version: string;
  dnsPort: number;
  apiUrl: string;
  apiKey: string;
  dir: string;
  /** Settings of Datum Cloud's deployment left out because this version does not know them. */
  omitted: string[];
  log(): string;
  /** Stops the server, keeping its database (for `start`). */
  halt(): Promise<void>;
  /** Starts it again on the same ports and database. */
  start(): Promise<void>;
  /** Calls the API directly (as a person editing PowerDNS by hand would). */
  api(method: string, apiPath: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function pdnsVersion(): Promise<string> {
  const { stdout, stderr } = await run(PDNS_SERVER, ['--version']).catch(
    (e: { stdout?: string; stderr?: string }) => ({
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? '',
    }),
  );
  return /Authoritative Server (\S+)/.exec(stdout + stderr)?.[1] ?? 'unknown';
}

/** Whether pdns_server and the backend module are installed (tests skip with a reason otherwise). */
export async function powerDnsAvailable(storage: PowerDnsStorage): Promise<string | undefined> {
  try {
    await settingsOf(storage);
    return undefined;
  } catch (e) {
    return `pdns_server with the ${storage} backend is not usable: ${(e as Error).message.split('\n')[0]}`;
  }
}

const settingsCache = new Map<PowerDnsStorage, Promise<Set<string>>>();
/** The settings this pdns_server knows with the backend loaded (`--config=default`). */
function settingsOf(storage: PowerDnsStorage): Promise<Set<string>> {
  let cached = settingsCache.get(storage);
  if (!cached) {
    cached = run(PDNS_SERVER, [
      '--no-config',
      `--launch=${storage === 'lmdb' ? 'lmdb' : 'gsqlite3'}`,
      '--config=default',
    ]).then(({ stdout }) => new Set([...stdout.matchAll(/^#\s*([a-z0-9-]+)=/gm)].map((m) => m[1]!)));
    settingsCache.set(storage, cached);
  }
  return cached;
}

export async function startPowerDns(options: PowerDnsOptions): Promise<PowerDnsProcess> {
  const dir = await mkdtemp(path.join(tmpdir(), `zonekeeper-pdns-${options.storage}-`));
  try {
    const known = await settingsOf(options.storage);
    const version = await pdnsVersion();
    const apiKey = randomBytes(12).toString('hex');
    const storageLines =
      options.storage === 'lmdb'
        ? [
            'launch=lmdb',
            `lmdb-filename=${path.join(dir, 'pdns.lmdb')}`,
            'lmdb-shards=1',
            'lmdb-random-ids=yes',
            'lmdb-flag-deleted=yes', // PowerDNS 4.8+
          ]
        : [
            'launch=gsqlite3',
            `gsqlite3-database=${path.join(dir, 'pdns.sqlite3')}`,
            ...(options.dnssec ? ['gsqlite3-dnssec=yes'] : []),
          ];
    if (options.storage === 'sqlite') {
      await run('sqlite3', [path.join(dir, 'pdns.sqlite3'), `.read ${SQLITE_SCHEMA}`]);
    }
    let lastError: Error | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      const dnsPort = await freePort(true);
      const apiPort = await freePort(false);
      const lines = [
        ...storageLines,
        'zone-cache-refresh-interval=0',
        'zone-metadata-cache-ttl=0',
        // Answers reflect every change at once (Datum Cloud's deployment runs without a packet cache too).
        'cache-ttl=0',
        'query-cache-ttl=0',
        'negquery-cache-ttl=0',
        'local-address=127.0.0.1',
        `local-port=${dnsPort}`,
        'receiver-threads=1',
        'distributor-threads=1',
        'webserver=yes',
        'api=yes',
        `api-key=${apiKey}`,
        'webserver-address=127.0.0.1',
        `webserver-port=${apiPort}`,
        'webserver-allow-from=127.0.0.0/8',
        'expand-alias=yes',
        // No security-status poll: it would query the public DNS.
        'security-poll-suffix=',
        ...(options.resolver ? [`resolver=${options.resolver}`] : []),
        ...(options.extra ?? []),
      ];
      const omitted = lines.filter((l) => !known.has(l.split('=')[0]!));
      await writeFile(
        path.join(dir, 'pdns.conf'),
        `${lines.filter((l) => !omitted.includes(l)).join('\n')}\n`,
      );
      const instance = new Instance(dir, dnsPort, apiPort, apiKey);
      try {
        await instance.start();
      } catch (e) {
        lastError = e as Error;
        if (!/bind|address already in use/i.test(lastError.message)) throw e;
        continue;
      }
      return {
        storage: options.storage,
        version,
        dnsPort,
        apiUrl: instance.url,
        apiKey,
        dir,
        omitted,
        log: () => instance.output,
        halt: () => instance.halt(),
        start: () => instance.start(),
        api: (method, apiPath, body) => instance.api(method, apiPath, body),
        async stop() {
          await instance.halt();
          await rm(dir, { recursive: true, force: true });
        },
      };
    }
    throw lastError ?? new Error('pdns_server did not start');
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

class Instance {
  readonly url: string;
  output = '';
  private child: ChildProcess | undefined;
  private readonly dir: string;
  private readonly apiKey: string;

  constructor(dir: string, _dnsPort: number, apiPort: number, apiKey: string) {
    this.dir = dir;
    this.apiKey = apiKey;
    this.url = `http://127.0.0.1:${apiPort}`;
  }

  async start(): Promise<void> {
    const child = spawn(
      PDNS_SERVER,
      [
        `--config-dir=${this.dir}`,
        `--socket-dir=${this.dir}`,
        '--guardian=no',
        '--daemon=no',
        '--disable-syslog=yes',
        '--write-pid=no',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    running.add(child);
    child.stdout!.on('data', (d) => (this.output += d));
    child.stderr!.on('data', (d) => (this.output += d));
    let exited: string | undefined;
    child.once('exit', (code, signal) => {
      exited = `code ${code}, signal ${signal}`;
      running.delete(child);
    });
    const deadline = performance.now() + 15_000;
    for (;;) {
      if (exited !== undefined) throw new Error(`pdns_server exited (${exited}):\n${this.output}`);
      if (/Unable to bind|Address already in use/i.test(this.output)) {
        await this.halt();
        throw new Error(`pdns_server could not bind:\n${this.output}`);
      }
      if (performance.now() > deadline) {
        await this.halt();
        throw new Error(`pdns_server did not answer its API in time:\n${this.output}`);
      }
      const ready = await this.api('GET', '/api/v1/servers/localhost').catch(() => undefined);
      if (ready?.status === 200) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  halt(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 3000).unref();
    });
  }

  async api(method: string, apiPath: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const response = await fetch(this.url + apiPath, {
      method,
      headers: {
        'X-API-Key': this.apiKey,
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(5000),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // plain text (PowerDNS answers some errors so)
    }
    return { status: response.status, body: parsed };
  }
}

/** A tiny recursive-resolver stand-in on 127.0.0.1: fixed A/AAAA answers, NXDOMAIN for the rest. */
export interface StubResolver {
  address: string;
  /** Questions received, `name TYPE`. */
  queries: string[];
  set(name: string, type: 'A' | 'AAAA', addresses: string[]): void;
  stop(): Promise<void>;
}

export async function startStubResolver(
  answers: Record<string, { A?: string[]; AAAA?: string[] }> = {},
  options: { ttl?: number } = {},
): Promise<StubResolver> {
  const table = new Map<string, { A?: string[]; AAAA?: string[] }>();
  for (const [name, a] of Object.entries(answers))
    table.set(nameKey(name.endsWith('.') ? name : `${name}.`), a);
  const queries: string[] = [];
  const socket = dgram.createSocket('udp4');
  socket.on('message', (buf, from) => {
    let query: ReturnType<typeof decodeMessage>;
    try {
      query = decodeMessage(buf);
    } catch {
      return;
    }
    const q = query.questions[0];
    if (!q) return;
    const typeName = q.type === RRType.A ? 'A' : q.type === RRType.AAAA ? 'AAAA' : String(q.type);
    queries.push(`${q.name} ${typeName}`);
    const entry = table.get(nameKey(q.name));
    const addresses = typeName === 'A' ? entry?.A : typeName === 'AAAA' ? entry?.AAAA : undefined;
    const reply = encodeMessage({
      id: query.id,
      qr: true,
      opcode: 0,
      aa: false,
      tc: false,
      rd: query.rd,
      ra: true,
      ad: false,
      cd: false,
      rcode: entry === undefined ? Rcode.NXDOMAIN : Rcode.NOERROR,
      questions: [q],
      answers: (addresses ?? []).map((address) => ({
        name: q.name,
        type: q.type,
        class: 1,
        ttl: options.ttl ?? 60,
        data: typeName === 'A' ? { type: 'A' as const, address } : { type: 'AAAA' as const, address },
      })),
      authority: [],
      additional: [],
    });
    socket.send(reply, from.port, from.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve());
  });
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries,
    set(name, type, addresses) {
      const key = nameKey(name.endsWith('.') ? name : `${name}.`);
      table.set(key, { ...table.get(key), [type]: addresses });
    },
    stop: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
