/**
 * Robustness fuzzing of `zonekeeper serve` over UDP and TCP on loopback: crafted malformed packets (a
 * test each), truncations, TCP framing attacks, slow and idle clients, many connections, then random and
 * mutated traffic for FUZZ_SECONDS (default 10; `FUZZ_SECONDS=600` for a long run). Throughout, a
 * monitor checks that the process lives, its RSS stays bounded and a probe query keeps getting the right
 * answer over UDP and TCP. The random start value is printed; FUZZ_SEED reproduces a run. See docs/testing.md.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import { readdir, readFile } from 'node:fs/promises';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { decodeMessage, Rcode } from '../src/dns/message.ts';
import {
  buildQuery,
  craftedCases,
  envNumber,
  expectedProblems,
  frame,
  fuzzPacket,
  fuzzSeed,
  hex,
  isTransferRequest,
  Prng,
  probeProblems,
  probeQuery,
  randomValidQuery,
  replyProblems,
  type Transport,
  VALID_QUESTIONS,
  type Verdict,
  verdictFor,
} from './support/dns-fuzz.ts';
import {
  copyExamples,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);

/** Seconds of random traffic (half over UDP, half over TCP). */
const SECONDS = envNumber('FUZZ_SECONDS', 10);
const LONG = SECONDS >= 60;
/** `serve --workers N`: DNS in N threads sharing the port (1, the default, serves on the main thread). */
const WORKERS = envNumber('FUZZ_WORKERS', 1);
const SEED = fuzzSeed();
/** The server's RSS may grow by this much over its size before the attack. */
const RSS_GROWTH_LIMIT = 150 * 1024 * 1024;
/** `zonekeeper serve` closes TCP connections idle this long (RFC 7766 §6.2.3). */
const IDLE_TIMEOUT_MS = 10_000;
const REPLY_TIMEOUT_MS = 3000;
/** `serve` has the transfer path: AXFR/IXFR (and signed SOA queries) follow its rules. */
const RULES = { transfers: true };

/** A sub-generator per phase, so that each phase replays the same packets for the same seed. */
function phaseRng(tag: string): Prng {
  let h = SEED;
  for (let i = 0; i < tag.length; i++) h = Math.imul(h ^ tag.charCodeAt(i), 0x01000193) >>> 0;
  return new Prng(h);
}

// ---------------------------------------------------------------------------------------------------
// Clients

/** A queue with a timed wait: `next` gives the oldest item, or undefined after `timeoutMs`. */
class Inbox<T> {
  private readonly items: T[] = [];
  private waiter: ((item: T | undefined) => void) | undefined;

  push(item: T): void {
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w(item);
    } else this.items.push(item);
  }

  next(timeoutMs: number): Promise<T | undefined> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift());
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve(undefined);
      }, timeoutMs);
      this.waiter = (item) => {
        clearTimeout(timer);
        resolve(item);
      };
    });
  }
}

type Received = Buffer | 'closed';

interface Lane {
  readonly transport: Transport;
  /** Sends messages (TCP: framed, written in `writes` chunks). */
  send(messages: Uint8Array[], writes?: number): Promise<void>;
  next(timeoutMs: number): Promise<Received | undefined>;
  close(): void;
}

class UdpLane implements Lane {
  readonly transport = 'udp';
  private readonly inbox = new Inbox<Received>();
  private readonly socket: dgram.Socket;
  private readonly port: number;

  private constructor(socket: dgram.Socket, port: number) {
    this.socket = socket;
    this.port = port;
    socket.on('message', (m) => this.inbox.push(m));
  }

  static async open(port: number): Promise<UdpLane> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new UdpLane(socket, port);
  }

  async send(messages: Uint8Array[]): Promise<void> {
    for (const m of messages) {
      await new Promise<void>((resolve, reject) =>
        this.socket.send(m, this.port, '127.0.0.1', (err) => (err ? reject(err) : resolve())),
      );
    }
  }

  next(timeoutMs: number): Promise<Received | undefined> {
    return this.inbox.next(timeoutMs);
  }

  close(): void {
    this.socket.close();
  }
}

class TcpLane implements Lane {
  readonly transport = 'tcp';
  readonly socket: net.Socket;
  private readonly inbox = new Inbox<Received>();
  private buffer = Buffer.alloc(0);
  closed = false;
  /** performance.now() when the server (or we) closed the connection. */
  closedAt = 0;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      while (this.buffer.length >= 2 && this.buffer.length >= 2 + this.buffer.readUInt16BE(0)) {
        const length = this.buffer.readUInt16BE(0);
        this.inbox.push(this.buffer.subarray(2, 2 + length));
        this.buffer = this.buffer.subarray(2 + length);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.closedAt = performance.now();
      this.inbox.push('closed');
    });
  }

  static connect(port: number): Promise<TcpLane> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port, host: '127.0.0.1', noDelay: true });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error('TCP connect timed out'));
      }, REPLY_TIMEOUT_MS);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.off('error', reject);
        resolve(new TcpLane(socket));
      });
      socket.once('error', reject);
    });
  }

  write(data: Uint8Array): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) resolve();
      else this.socket.write(data, () => resolve());
    });
  }

  /** Writes the frames in `writes` chunks cut at random places, pausing briefly between chunks. */
  async send(messages: Uint8Array[], writes = 1, rng?: Prng): Promise<void> {
    const data = Buffer.concat(messages.map(frame));
    const cuts = new Set<number>();
    for (let i = 1; i < writes && rng; i++) cuts.add(rng.range(1, data.length - 1));
    let from = 0;
    for (const cut of [...[...cuts].sort((a, b) => a - b), data.length]) {
      await this.write(data.subarray(from, cut));
      if (cut < data.length) await new Promise((r) => setImmediate(r));
      from = cut;
    }
  }

  next(timeoutMs: number): Promise<Received | undefined> {
    return this.inbox.next(timeoutMs);
  }

  /** Resolves true when the connection closes within `timeoutMs`. */
  async closesWithin(timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (!this.closed && performance.now() < deadline) await sleep(20);
    return this.closed;
  }

  close(): void {
    this.socket.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------
// Rounds: send packets, then a probe as sentinel; every reply is matched by ID and checked.

interface Stats {
  packets: number;
  replies: number;
  drops: { short: number; response: number };
  rcodes: Map<number, number>;
  zeroLengthFrames: number;
}

function newStats(): Stats {
  return { packets: 0, replies: 0, drops: { short: 0, response: 0 }, rcodes: new Map(), zeroLengthFrames: 0 };
}

const stats = newStats();
let nextIdValue = 1;
function nextId(): number {
  nextIdValue = (nextIdValue + 1) & 0xffff;
  return nextIdValue;
}

/**
 * Sends `packets` (each with a distinct ID) and then a probe; collects replies until the probe's reply
 * and one reply to every packet that deserves one have arrived. Returns the problems found.
 */
async function round(
  lane: Lane,
  packets: Uint8Array[],
  sendOptions?: { writes: number; rng: Prng },
): Promise<string[]> {
  return (await roundReplies(lane, packets, sendOptions)).problems;
}

async function roundReplies(
  lane: Lane,
  packets: Uint8Array[],
  sendOptions?: { writes: number; rng: Prng },
): Promise<{ problems: string[]; replies: Map<number, Buffer> }> {
  const replies = new Map<number, Buffer>();
  const expected = new Map<number, { packet: Uint8Array; verdict: Verdict }>();
  const dropped = new Map<number, Uint8Array>();
  for (const packet of packets) {
    const verdict = verdictFor(packet);
    stats.packets++;
    if (verdict.kind === 'drop') {
      stats.drops[verdict.reason]++;
      if (packet.length >= 2) dropped.set((packet[0]! << 8) | packet[1]!, packet);
    } else expected.set((packet[0]! << 8) | packet[1]!, { packet, verdict });
  }
  let probeId = nextId();
  while (expected.has(probeId) || dropped.has(probeId)) probeId = nextId();
  const messages = [...packets, probeQuery(probeId)];
  if (lane instanceof TcpLane) await lane.send(messages, sendOptions?.writes ?? 1, sendOptions?.rng);
  else await lane.send(messages);
  const problems: string[] = [];
  let probeSeen = false;
  for (;;) {
    if (probeSeen && expected.size === 0) break;
    const got = await lane.next(probeSeen ? 500 : REPLY_TIMEOUT_MS);
    if (got === undefined) {
      if (!probeSeen) problems.push(`no reply to the probe within ${REPLY_TIMEOUT_MS} ms`);
      for (const { packet } of expected.values()) problems.push(`no reply to ${hex(packet)}`);
      break;
    }
    if (got === 'closed') {
      problems.push('the server closed the connection');
      break;
    }
    stats.replies++;
    const id = got.length >= 2 ? got.readUInt16BE(0) : -1;
    if (id === probeId) {
      probeSeen = true;
      problems.push(...probeProblems(probeId, got));
      continue;
    }
    const sent = expected.get(id);
    if (!sent) {
      const drop = dropped.get(id);
      problems.push(
        drop ? `replied to ${hex(drop)}, which must be dropped: ${hex(got)}` : `unexpected reply ${hex(got)}`,
      );
      continue;
    }
    expected.delete(id);
    replies.set(id, got);
    const p = replyProblems(sent.packet, sent.verdict, got, lane.transport, RULES);
    if (p.length > 0)
      problems.push(`request ${hex(sent.packet)}\n    reply ${hex(got)}\n    ${p.join('; ')}`);
    else if (!isTransferRequest(sent.packet, RULES) && ((sent.packet[2]! >> 3) & 0xf) !== 5) {
      // Tallied for /metrics: zonekeeper_dns_queries_total counts the query path (transfers and
      // UPDATE have their own).
      const rcode = decodeMessage(got).rcode;
      stats.rcodes.set(rcode, (stats.rcodes.get(rcode) ?? 0) + 1);
    }
  }
  return { problems, replies };
}

function fail(phase: string, problems: string[]): never {
  assert.fail(`${phase} (FUZZ_SEED=${SEED}):\n  ${problems.slice(0, 10).join('\n  ')}`);
}

// ---------------------------------------------------------------------------------------------------
// The monitor: liveness, RSS, and probes over UDP and TCP every 250 ms.

async function rssOf(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

/** RSS of a process and its children (the DNS workers of `serve --workers N`). */
async function treeRss(pid: number): Promise<number | undefined> {
  const own = await rssOf(pid);
  if (own === undefined) return undefined;
  let total = own;
  for (const child of await childrenOf(pid)) total += (await rssOf(child)) ?? 0;
  return total;
}

async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  try {
    for (const task of await readdir(`/proc/${pid}/task`)) {
      const text = await readFile(`/proc/${pid}/task/${task}/children`, 'utf8');
      for (const n of text.split(' ')) if (n.trim() !== '') out.push(Number(n));
    }
  } catch {}
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

class Monitor {
  readonly failures: string[] = [];
  probes = { udp: 0, tcp: 0 };
  rssStart = 0;
  rssMax = 0;
  /** RSS every ~5 s, to tell growth from a one-time rise in long runs. */
  readonly rssTrail: number[] = [];
  private lastTrail = 0;
  private running = true;
  private loop: Promise<void> = Promise.resolve();
  private readonly serve: ServeProcess;

  constructor(serve: ServeProcess) {
    this.serve = serve;
  }

  async start(): Promise<void> {
    this.rssStart = (await treeRss(this.serve.pid)) ?? 0;
    this.rssMax = this.rssStart;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    const udp = await UdpLane.open(this.serve.dnsPort);
    try {
      while (this.running) {
        if (!alive(this.serve.pid)) {
          this.failures.push(`the server exited:\n${this.serve.log().slice(-3000)}`);
          return;
        }
        const rss = await treeRss(this.serve.pid);
        if (rss !== undefined) {
          this.rssMax = Math.max(this.rssMax, rss);
          if (performance.now() - this.lastTrail >= 5000) {
            this.lastTrail = performance.now();
            this.rssTrail.push(rss);
          }
          if (rss > this.rssStart + RSS_GROWTH_LIMIT) {
            this.failures.push(`RSS ${mb(rss)} exceeds ${mb(this.rssStart)} + ${mb(RSS_GROWTH_LIMIT)}`);
          }
        }
        await this.probe(udp);
        await sleep(250);
      }
    } finally {
      udp.close();
    }
  }

  /** The monitor's own IDs, so that the fuzz phases' IDs (and packets) depend on the random start value alone. */
  private id = 0;

  private nextId(): number {
    this.id = (this.id + 1) & 0xffff;
    return this.id;
  }

  private async probe(udp: UdpLane): Promise<void> {
    const id = this.nextId();
    await udp.send([probeQuery(id)]);
    for (;;) {
      const reply = await udp.next(REPLY_TIMEOUT_MS);
      if (reply === undefined || reply === 'closed') {
        this.failures.push(`UDP probe unanswered within ${REPLY_TIMEOUT_MS} ms`);
        break;
      }
      if (reply.readUInt16BE(0) !== id) continue; // a late reply to an earlier probe
      const p = probeProblems(id, reply);
      if (p.length > 0) this.failures.push(`UDP probe: ${p.join('; ')}`);
      else this.probes.udp++;
      break;
    }
    let tcp: TcpLane | undefined;
    try {
      tcp = await TcpLane.connect(this.serve.dnsPort);
      const tcpId = this.nextId();
      await tcp.send([probeQuery(tcpId)]);
      const reply = await tcp.next(REPLY_TIMEOUT_MS);
      if (reply === undefined || reply === 'closed') this.failures.push('TCP probe unanswered');
      else {
        const p = probeProblems(tcpId, reply);
        if (p.length > 0) this.failures.push(`TCP probe: ${p.join('; ')}`);
        else this.probes.tcp++;
      }
    } catch (e) {
      this.failures.push(`TCP probe: ${(e as Error).message}`);
    } finally {
      tcp?.close();
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

function mb(n: number): string {
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

// ---------------------------------------------------------------------------------------------------

interface IdleWatch {
  name: string;
  lane: TcpLane;
  /** When the idle clock started: the connection, or the last complete query. */
  since: number;
  timer?: NodeJS.Timeout;
}

describe(`fuzz: zonekeeper serve under hostile traffic (FUZZ_SECONDS=${SECONDS})`, () => {
  let manifests: string;
  let state: string;
  let serve: ServeProcess;
  let monitor: Monitor;
  const idle: IdleWatch[] = [];
  const killChild = () => {
    if (serve) {
      try {
        process.kill(serve.pid, 'SIGKILL');
      } catch {}
    }
  };

  before(async () => {
    manifests = await copyExamples();
    state = await tempDir('state');
    const workers = WORKERS > 1 ? ['--workers', String(WORKERS)] : [];
    // Every connection comes from 127.0.0.1, one client to the per-client cap on TCP connections (64):
    // the suites here open hundreds at once, as many clients would.
    serve = await startServe(manifests, state, ['--identity', 'fuzz', '--tcp-per-source', '0', ...workers]);
    process.once('exit', killChild); // never leave the child behind, even if the runner is cut short
    monitor = new Monitor(serve);
    await monitor.start();

    // Connections that must be closed after the idle timeout, watched until the end of the run.
    const slowloris = await TcpLane.connect(serve.dnsPort);
    await slowloris.write(
      Uint8Array.from([0x01, 0x00, ...buildQuery({ name: 'www.example.com.', type: 1 }).subarray(0, 10)]),
    );
    idle.push({
      name: 'declared 256 octets, sent 10, then silence',
      lane: slowloris,
      since: performance.now(),
    });
    const halfPrefix = await TcpLane.connect(serve.dnsPort);
    await halfPrefix.write(Uint8Array.from([0x00]));
    idle.push({ name: 'one octet of the length prefix', lane: halfPrefix, since: performance.now() });
    const drip = await TcpLane.connect(serve.dnsPort);
    const dripWatch: IdleWatch = {
      name: '65535 declared, one octet a second',
      lane: drip,
      since: performance.now(),
    };
    await drip.write(Uint8Array.from([0xff, 0xff]));
    dripWatch.timer = setInterval(() => {
      if (!drip.closed) drip.socket.write(Uint8Array.from([0x41]));
    }, 1000);
    idle.push(dripWatch);
    const answered = await TcpLane.connect(serve.dnsPort);
    await answered.send([probeQuery(7)]);
    const first = await answered.next(REPLY_TIMEOUT_MS);
    assert.ok(first instanceof Buffer, 'the idle-after-answer connection got its answer');
    idle.push({ name: 'idle after one answered query', lane: answered, since: performance.now() });
  });

  after(async () => {
    for (const w of idle) {
      clearInterval(w.timer);
      w.lane.close();
    }
    await monitor?.stop();
    await serve?.stop();
    process.off('exit', killChild);
    await removeAll(...[manifests, state].filter((d) => d !== undefined));
  });

  test('seed', (t) => {
    t.diagnostic(
      `seed ${SEED} (rerun with FUZZ_SEED=${SEED}); FUZZ_SECONDS=${SECONDS} FUZZ_WORKERS=${WORKERS}`,
    );
  });

  test('crafted malformed packets, each over UDP and TCP', async (t) => {
    const udp = await UdpLane.open(serve.dnsPort);
    let tcp = await TcpLane.connect(serve.dnsPort);
    try {
      for (const c of craftedCases()) {
        await t.test(c.name, async () => {
          for (const lane of [udp, tcp] as Lane[]) {
            if (lane === tcp && c.packet.length === 0) {
              // Over TCP an empty message is a zero-length frame: the server closes the connection.
              await tcp.write(Uint8Array.from([0, 0]));
              stats.zeroLengthFrames++;
              assert.ok(await tcp.closesWithin(2000), 'a zero-length frame closes the connection');
              tcp = await TcpLane.connect(serve.dnsPort);
              continue;
            }
            // One packet at a time, with its crafted ID (some cases depend on it).
            const { problems, replies } = await roundReplies(lane, [c.packet]);
            if (problems.length > 0) fail(`${lane.transport} ${c.name}`, problems);
            // The reply follows the general rules; now check the exact expectation too.
            const id = c.packet.length >= 2 ? (c.packet[0]! << 8) | c.packet[1]! : -1;
            const p = expectedProblems(c.expect, replies.get(id) ?? null);
            if (p.length > 0) fail(`${lane.transport} ${c.name}: ${hex(c.packet)}`, p);
          }
        });
      }
    } finally {
      udp.close();
      tcp.close();
    }
  });

  test('truncation at every length of valid queries, over UDP and TCP', async () => {
    const udp = await UdpLane.open(serve.dnsPort);
    const tcp = await TcpLane.connect(serve.dnsPort);
    try {
      for (const q of VALID_QUESTIONS.slice(0, 6)) {
        for (const edns of [undefined, { dnssecOk: true }]) {
          const full = buildQuery({ name: q.name, type: q.type, class: q.class, edns });
          for (let n = 0; n <= full.length; n++) {
            const udpProblems = await round(udp, [withNextId(full.subarray(0, n))]);
            if (udpProblems.length > 0) fail(`UDP truncated to ${n}`, udpProblems);
            if (n === 0) continue; // a zero-length frame: its own test
            const tcpProblems = await round(tcp, [withNextId(full.subarray(0, n))]);
            if (tcpProblems.length > 0) fail(`TCP truncated to ${n}`, tcpProblems);
          }
        }
      }
    } finally {
      udp.close();
      tcp.close();
    }
  });

  describe('TCP framing', () => {
    test('a zero-length frame closes the connection; the next connection is served', async () => {
      const tcp = await TcpLane.connect(serve.dnsPort);
      await tcp.write(Uint8Array.from([0, 0, ...frame(probeQuery(1))]));
      stats.zeroLengthFrames++;
      assert.ok(await tcp.closesWithin(2000), 'closed after a zero-length frame');
      const again = await TcpLane.connect(serve.dnsPort);
      try {
        const problems = await round(again, []);
        if (problems.length > 0) fail('after a zero-length frame', problems);
      } finally {
        again.close();
      }
    });

    test('a frame split across two writes at every position', async () => {
      const tcp = await TcpLane.connect(serve.dnsPort);
      try {
        const id = nextId();
        const data = frame(buildQuery({ id, name: 'www.example.com.', type: 1, edns: {} }));
        for (let cut = 1; cut < data.length; cut++) {
          await tcp.write(data.subarray(0, cut));
          await sleep(2);
          await tcp.write(data.subarray(cut));
          const reply = await tcp.next(REPLY_TIMEOUT_MS);
          assert.ok(reply instanceof Buffer, `no reply when split at ${cut}`);
          assert.deepEqual(probeProblems(id, reply), [], `split at ${cut}`);
        }
      } finally {
        tcp.close();
      }
    });

    test('one octet at a time (a slow client) is still answered', async () => {
      const tcp = await TcpLane.connect(serve.dnsPort);
      try {
        const id = nextId();
        const data = frame(probeQuery(id));
        for (const octet of data) {
          await tcp.write(Uint8Array.from([octet]));
          await sleep(LONG ? 100 : 15);
        }
        const reply = await tcp.next(REPLY_TIMEOUT_MS);
        assert.ok(reply instanceof Buffer, 'answered');
        assert.deepEqual(probeProblems(id, reply), []);
      } finally {
        tcp.close();
      }
    });

    test('many pipelined queries, valid and not, in one write', async () => {
      const rng = phaseRng('pipelined');
      const tcp = await TcpLane.connect(serve.dnsPort);
      try {
        for (let batch = 0; batch < (LONG ? 20 : 2); batch++) {
          const packets: Uint8Array[] = [];
          for (let i = 0; i < 500; i++) {
            const id = nextId();
            packets.push(rng.chance(0.7) ? randomValidQuery(rng, id) : fuzzPacket(rng, id, { tcp: true }));
          }
          const problems = await round(tcp, packets);
          if (problems.length > 0) fail('pipelined', problems);
        }
      } finally {
        tcp.close();
      }
    });

    test('declared length 65535 filled with garbage', async () => {
      const rng = phaseRng('oversized');
      const tcp = await TcpLane.connect(serve.dnsPort);
      try {
        for (let i = 0; i < 8; i++) {
          const garbage = rng.bytes(65535);
          if (i % 2 === 0) garbage[2] = garbage[2]! & 0x7f; // a query: parsed, not dropped
          const problems = await round(tcp, [withNextId(garbage)], { writes: 1 + (i % 4), rng });
          if (problems.length > 0) fail('65535-octet frame', problems);
        }
      } finally {
        tcp.close();
      }
    });

    test('unframed garbage streams, then half-close: the server closes, it never hangs', async () => {
      const rng = phaseRng('garbage-streams');
      for (let i = 0; i < (LONG ? 200 : 20); i++) {
        const tcp = await TcpLane.connect(serve.dnsPort);
        try {
          const data = rng.bytes(rng.range(1, 70_000));
          let from = 0;
          for (let w = rng.range(1, 5); w > 0 && from < data.length; w--) {
            const to = w === 1 ? data.length : rng.range(from + 1, data.length);
            await tcp.write(data.subarray(from, to));
            from = to;
          }
          tcp.socket.end();
          assert.ok(await tcp.closesWithin(REPLY_TIMEOUT_MS), `connection ${i} still open after half-close`);
          for (;;) {
            const reply = await tcp.next(0);
            if (reply === undefined || reply === 'closed') break;
            let qr = false;
            try {
              qr = decodeMessage(reply).qr;
            } catch {}
            assert.ok(qr, `stream ${i} (FUZZ_SEED=${SEED}): a malformed reply ${hex(reply)}`);
          }
        } finally {
          tcp.close();
        }
      }
    });

    test('many concurrent connections are all answered', async () => {
      const count = LONG ? 800 : 200;
      const started = performance.now();
      const lanes = await Promise.all(Array.from({ length: count }, () => TcpLane.connect(serve.dnsPort)));
      try {
        const results = await Promise.all(
          lanes.map(async (lane) => {
            const id = nextId();
            await lane.send([probeQuery(id)]);
            const reply = await lane.next(REPLY_TIMEOUT_MS * 2);
            return reply instanceof Buffer ? probeProblems(id, reply) : [`no reply (${String(reply)})`];
          }),
        );
        const problems = results.flat();
        if (problems.length > 0) fail(`${count} concurrent connections`, problems);
      } finally {
        for (const lane of lanes) lane.close();
      }
      assert.ok(performance.now() - started < 20_000);
    });
  });

  test('random and mutated packets over UDP', { timeout: SECONDS * 1000 + 60_000 }, async (t) => {
    const rng = phaseRng('udp');
    const deadline = performance.now() + (SECONDS * 1000) / 2;
    const udp = await UdpLane.open(serve.dnsPort);
    const before = stats.packets;
    try {
      while (performance.now() < deadline) {
        const packets = Array.from({ length: rng.range(1, 16) }, () =>
          fuzzPacket(rng, nextId(), { tcp: false }),
        );
        const problems = await round(udp, packets);
        if (problems.length > 0) fail('UDP fuzz', problems);
        if (monitor.failures.length > 0) fail('monitor during UDP fuzz', monitor.failures);
        await sleep(1); // leave the CPU to the other suites now and then
      }
    } finally {
      udp.close();
    }
    t.diagnostic(`${stats.packets - before} UDP packets`);
  });

  test('random and mutated frames over TCP, pipelined and split', {
    timeout: SECONDS * 1000 + 60_000,
  }, async (t) => {
    const rng = phaseRng('tcp');
    const deadline = performance.now() + (SECONDS * 1000) / 2;
    let tcp = await TcpLane.connect(serve.dnsPort);
    const before = stats.packets;
    try {
      while (performance.now() < deadline) {
        const packets = Array.from({ length: rng.range(1, 24) }, () =>
          fuzzPacket(rng, nextId(), { tcp: true }),
        );
        const problems = await round(tcp, packets, { writes: rng.range(1, 4), rng });
        if (problems.length > 0) fail('TCP fuzz', problems);
        if (monitor.failures.length > 0) fail('monitor during TCP fuzz', monitor.failures);
        if (rng.chance(0.05)) {
          tcp.close();
          tcp = await TcpLane.connect(serve.dnsPort);
        }
        await sleep(1);
      }
    } finally {
      tcp.close();
    }
    t.diagnostic(`${stats.packets - before} TCP frames`);
  });

  test('a datagram from source port 0 is dropped (RFC 768), not fatal', async (t) => {
    // Needs a raw socket: root and python3. Without them the in-process regression test covers it.
    const script = [
      'import socket, struct, sys',
      'q = bytes.fromhex(sys.argv[2])',
      's = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)',
      "s.sendto(struct.pack('!HHHH', 0, int(sys.argv[1]), 8 + len(q), 0) + q, ('127.0.0.1', 0))",
    ].join('\n');
    try {
      await run('python3', ['-c', script, String(serve.dnsPort), hex(probeQuery(1), 1000)], {
        timeout: 5000,
      });
    } catch (e) {
      t.skip(`no raw socket (needs root and python3): ${(e as Error).message.split('\n')[0]}`);
      return;
    }
    await sleep(200);
    assert.ok(alive(serve.pid), `the server died:\n${serve.log().slice(-2000)}`);
    const udp = await UdpLane.open(serve.dnsPort);
    try {
      const problems = await round(udp, []);
      if (problems.length > 0) fail('after a port-0 datagram', problems);
    } finally {
      udp.close();
    }
    const metrics = await fetchMetrics(serve.httpUrl);
    assert.ok(metricValue(metrics, 'zonekeeper_dns_dropped_total', { reason: 'udp_source_port_zero' }) >= 1);
  });

  test('slow and idle TCP connections are closed after the idle timeout', async (t) => {
    // Each connection must close between 9 s and 13 s after its idle clock started.
    const deadline = Math.max(...idle.map((w) => w.since)) + IDLE_TIMEOUT_MS + 3000;
    while (idle.some((w) => !w.lane.closed) && performance.now() < deadline) await sleep(100);
    for (const w of idle) {
      clearInterval(w.timer);
      assert.ok(
        w.lane.closed,
        `${w.name}: still open ${((performance.now() - w.since) / 1000).toFixed(1)} s later`,
      );
      const seconds = (w.lane.closedAt - w.since) / 1000;
      t.diagnostic(`${w.name}: closed after ${seconds.toFixed(1)} s`);
      assert.ok(
        seconds >= 9 && seconds <= 13,
        `${w.name}: closed after ${seconds.toFixed(1)} s, expected ~10 s`,
      );
    }
  });

  test('/metrics accounts for the dropped and malformed packets', async (t) => {
    const text = await fetchMetrics(serve.httpUrl);
    const dropped = (reason: string) => metricValue(text, 'zonekeeper_dns_dropped_total', { reason });
    const answered = (rcode: string) => metricValue(text, 'zonekeeper_dns_queries_total', { rcode });
    t.diagnostic(
      `sent ${stats.packets} packets; dropped short=${dropped('short')} response=${dropped('response')} ` +
        `tcp_zero_length=${dropped('tcp_zero_length')}; FORMERR=${answered('FORMERR')} NOTIMP=${answered('NOTIMP')}`,
    );
    assert.ok(stats.drops.short > 0 && stats.drops.response > 0 && stats.zeroLengthFrames > 0);
    assert.ok(
      dropped('short') >= stats.drops.short,
      `short: ${dropped('short')} < ${stats.drops.short} sent`,
    );
    assert.ok(
      dropped('response') >= stats.drops.response,
      `response: ${dropped('response')} < ${stats.drops.response}`,
    );
    assert.ok(dropped('tcp_zero_length') >= stats.zeroLengthFrames);
    assert.equal(dropped('internal_error'), 0, 'no internal errors');
    assert.equal(dropped('udp_send_error'), 0, 'no failed sends');
    const formerr = stats.rcodes.get(Rcode.FORMERR) ?? 0;
    const notimp = stats.rcodes.get(Rcode.NOTIMP) ?? 0;
    assert.ok(formerr > 0 && notimp > 0);
    assert.ok(answered('FORMERR') >= formerr, `FORMERR: ${answered('FORMERR')} < ${formerr} received`);
    assert.ok(answered('NOTIMP') >= notimp, `NOTIMP: ${answered('NOTIMP')} < ${notimp} received`);
  });

  test('the server survived: alive, probes answered throughout, RSS bounded', async (t) => {
    await monitor.stop();
    t.diagnostic(
      `probes answered: udp=${monitor.probes.udp} tcp=${monitor.probes.tcp}; ` +
        `RSS ${mb(monitor.rssStart)} → max ${mb(monitor.rssMax)}; every 5 s (MB): ` +
        monitor.rssTrail.map((r) => Math.round(r / 1024 / 1024)).join(' '),
    );
    if (monitor.failures.length > 0) fail('monitor', monitor.failures);
    assert.ok(alive(serve.pid), 'the server is running');
    assert.ok(monitor.probes.udp > 0 && monitor.probes.tcp > 0, 'probes ran');
    assert.ok(monitor.rssMax <= monitor.rssStart + RSS_GROWTH_LIMIT);
    assert.doesNotMatch(serve.log(), /\b(TypeError|RangeError|ReferenceError|Uncaught|unhandled)\b/i);
    const health = await fetch(`${serve.httpUrl}/healthz`);
    assert.equal(health.status, 200);
  });
});

function withNextId(packet: Uint8Array): Uint8Array {
  const out = Uint8Array.from(packet);
  const id = nextId();
  if (out.length >= 2) {
    out[0] = id >>> 8;
    out[1] = id & 0xff;
  }
  return out;
}

async function fetchMetrics(httpUrl: string): Promise<string> {
  const res = await fetch(`${httpUrl}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

/** The sum of a metric's series whose labels include `labels`. */
function metricValue(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const m = /^[^{]+\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const got = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(m[2]);
  }
  return sum;
}
