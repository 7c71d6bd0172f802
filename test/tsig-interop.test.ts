/**
 * TSIG (src/dns/tsig.ts) against real implementations: a Knot DNS server (`knotd`) that requires a
 * key for AXFR verifies what we sign and signs what we verify, and the Knot and BIND clients (`kdig`,
 * `dig`, `knsupdate`) send signed requests to a small server here and check the signed answers it
 * gives back.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  decodeMessage,
  encodeMessage,
  type Message,
  Opcode,
  Rcode,
  type ResourceRecord,
} from '../src/dns/message.ts';
import { RRType } from '../src/dns/rrtype.ts';
import {
  keyring,
  parseTsigKey,
  readTsig,
  signMessage,
  type TsigFailure,
  type TsigKey,
  TsigStreamSigner,
  TsigStreamVerifier,
  tsigErrorResponse,
  type VerifyResult,
  verifyMessage,
} from '../src/dns/tsig.ts';
import { buildQuery } from './support/dns-client.ts';
import { freePort } from './support/ports.ts';

const KNOTD = process.env.KNOTD ?? '/usr/sbin/knotd';

const SECRET = randomBytes(32).toString('base64');
const KEY = parseTsigKey({ name: 'transfer.key.', algorithm: 'hmac-sha256', secret: SECRET });
const KEYS = keyring([KEY]);
const TXT_RECORDS = 1500;

function now(): number {
  return Math.floor(Date.now() / 1000);
}

/** Sends one request over TCP and collects response messages until `done` says the last one came. */
function tcpExchange(
  port: number,
  request: Uint8Array,
  done: (message: Uint8Array, index: number) => boolean,
  timeoutMs = 5000,
): Promise<Uint8Array[]> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const messages: Uint8Array[] = [];
    let buffer = Buffer.alloc(0);
    const timer = setTimeout(
      () => finish(new Error(`no complete answer in ${timeoutMs} ms (${messages.length} messages)`)),
      timeoutMs,
    );
    const finish = (error?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(messages);
    };
    socket.on('connect', () => {
      const frame = Buffer.alloc(2 + request.length);
      frame.writeUInt16BE(request.length, 0);
      frame.set(request, 2);
      socket.write(frame);
    });
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 2 && buffer.length >= 2 + buffer.readUInt16BE(0)) {
        const length = buffer.readUInt16BE(0);
        const message = new Uint8Array(buffer.subarray(2, 2 + length));
        buffer = buffer.subarray(2 + length);
        messages.push(message);
        if (done(message, messages.length - 1)) return finish();
      }
    });
    socket.on('close', () => finish());
    socket.on('error', (e) => finish(e));
  });
}

function udpExchange(port: number, request: Uint8Array): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('no UDP answer'));
    }, 3000);
    socket.on('message', (m) => {
      clearTimeout(timer);
      socket.close();
      resolve(new Uint8Array(m));
    });
    socket.send(request, port, '127.0.0.1');
  });
}

function axfrQuery(): Uint8Array {
  return buildQuery({ name: 'example.com.', type: RRType.AXFR, id: 0x5151 });
}

// ---------------------------------------------------------------------------------------------------

describe('TSIG against knotd', () => {
  let dir: string;
  let port: number;
  let knotd: ChildProcess;
  let log = '';

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-tsig-knot-'));
    port = await freePort();
    const zone = [
      '$ORIGIN example.com.',
      '$TTL 300',
      '@ SOA ns1 hostmaster 7 3600 600 1209600 300',
      '@ NS ns1',
      'ns1 A 192.0.2.53',
    ];
    for (let i = 0; i < TXT_RECORDS; i++) zone.push(`t${i} TXT "${'x'.repeat(200)}"`);
    await mkdir(path.join(dir, 'run'));
    await mkdir(path.join(dir, 'db'));
    await writeFile(path.join(dir, 'example.com.zone'), `${zone.join('\n')}\n`);
    const config = [
      'server:',
      `    rundir: "${dir}/run"`,
      `    listen: 127.0.0.1@${port}`,
      `    user: "${userInfo().username}"`,
      '    udp-workers: 1',
      '    tcp-workers: 1',
      '    background-workers: 1',
      'control:',
      `    listen: "${dir}/run/knot.sock"`,
      'log:',
      '  - target: stderr',
      '    any: info',
      'database:',
      `    storage: "${dir}/db"`,
      'key:',
      '  - id: transfer.key.',
      '    algorithm: hmac-sha256',
      `    secret: ${SECRET}`,
      'acl:',
      '  - id: transfer',
      '    key: transfer.key.',
      '    action: transfer',
      'template:',
      '  - id: default',
      `    storage: "${dir}"`,
      '    zonefile-load: whole',
      '    zonefile-sync: -1',
      '    journal-content: none',
      'zone:',
      '  - domain: example.com.',
      '    file: example.com.zone',
      '    acl: transfer',
      '',
    ].join('\n');
    await writeFile(path.join(dir, 'knot.conf'), config);
    knotd = spawn(KNOTD, ['-c', path.join(dir, 'knot.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
    knotd.stdout!.on('data', (d) => (log += d));
    knotd.stderr!.on('data', (d) => (log += d));
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (knotd.exitCode !== null) throw new Error(`knotd exited:\n${log}`);
      const ok = await udpExchange(port, buildQuery({ name: 'example.com.', type: RRType.SOA })).then(
        (r) => decodeMessage(r).answers.length > 0,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`knotd did not answer:\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => {
    if (knotd && knotd.exitCode === null) {
      await new Promise<void>((resolve) => {
        knotd.once('exit', () => resolve());
        knotd.kill('SIGTERM');
        setTimeout(() => knotd.kill('SIGKILL'), 5000).unref();
      });
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('a signed SOA query over UDP: Knot accepts it and its signed answer verifies', async () => {
    const request = signMessage(buildQuery({ name: 'example.com.', type: RRType.SOA }), KEY);
    const reply = await udpExchange(port, request.bytes);
    const r = verifyMessage(reply, KEYS, { requestMac: request.mac });
    assert.ok(r.ok, JSON.stringify(r));
    const m = decodeMessage(r.stripped);
    assert.deepEqual([m.rcode, m.answers[0]?.type], [Rcode.NOERROR, RRType.SOA]);
  });

  test('a signed AXFR: every message of the multi-message answer verifies as one chain', async () => {
    const request = signMessage(axfrQuery(), KEY);
    const verifier = new TsigStreamVerifier(KEYS, request.mac);
    let soas = 0;
    let records = 0;
    let signed = 0;
    const results: ReturnType<TsigStreamVerifier['verify']>[] = [];
    const messages = await tcpExchange(port, request.bytes, (message) => {
      const r = verifier.verify(message);
      results.push(r);
      if (!r.ok) return true;
      if (r.signed) signed++;
      const m = decodeMessage(r.stripped);
      records += m.answers.length;
      soas += m.answers.filter((rr) => rr.type === RRType.SOA).length;
      return soas === 2;
    });
    assert.ok(
      results.every((r) => r.ok),
      JSON.stringify(results.find((r) => !r.ok)),
    );
    assert.ok(verifier.end().ok);
    assert.ok(messages.length >= 5, `${messages.length} messages: a multi-message transfer expected`);
    assert.equal(soas, 2);
    assert.equal(records, TXT_RECORDS + 4); // SOA, NS, A, the TXT records, SOA
    assert.equal(signed, messages.length, 'Knot signs every message (RFC 8945 §5.3.1)');
  });

  test('a bad MAC: Knot answers NOTAUTH with an unsigned BADSIG', async () => {
    const request = signMessage(axfrQuery(), KEY);
    const bad = request.bytes.slice();
    bad[bad.length - 10]! ^= 0xff; // inside the MAC (followed by original ID, error, other len)
    const [reply] = await tcpExchange(port, bad, () => true);
    assert.ok(reply);
    assert.equal(decodeMessage(reply).rcode, Rcode.NOTAUTH);
    const tsig = readTsig(reply)!.record;
    assert.deepEqual([tsig.error, tsig.mac.length], [16, 0]);
    const seen = verifyMessage(reply, KEYS, { requestMac: readTsig(bad)!.record.mac }) as TsigFailure;
    assert.deepEqual([seen.ok, seen.error, seen.reportedByPeer], [false, 'BADSIG', true]);
  });

  test('an unknown key: NOTAUTH with BADKEY', async () => {
    const stranger = parseTsigKey({ name: 'other.key', algorithm: 'hmac-sha256', secret: SECRET });
    const [reply] = await tcpExchange(port, signMessage(axfrQuery(), stranger).bytes, () => true);
    assert.ok(reply);
    assert.equal(decodeMessage(reply).rcode, Rcode.NOTAUTH);
    assert.equal(readTsig(reply)!.record.error, 17);
  });

  test('a request signed 1000 s ago: a BADTIME answer, signed by Knot over our request MAC', async () => {
    const request = signMessage(buildQuery({ name: 'example.com.', type: RRType.SOA }), KEY, {
      time: now() - 1000,
    });
    const reply = await udpExchange(port, request.bytes);
    assert.equal(decodeMessage(reply).rcode, Rcode.NOTAUTH);
    const r = verifyMessage(reply, KEYS, { requestMac: request.mac }) as TsigFailure;
    assert.deepEqual([r.ok, r.error, r.reportedByPeer], [false, 'BADTIME', true]);
    assert.ok(r.mac && r.mac.length === 32, 'the BADTIME answer carries a MAC that verified');
    const serverTime = Buffer.from(r.tsig!.otherData).readUIntBE(0, 6);
    assert.ok(Math.abs(serverTime - now()) < 5, `server time ${serverTime}`);
  });
});

// ---------------------------------------------------------------------------------------------------
// Clients: requests from kdig, dig and knsupdate verified here, answers signed here verified there.

interface Seen {
  request: Uint8Array;
  result: VerifyResult;
  tcp: boolean;
}

interface Peer {
  port: number;
  seen: Seen[];
  /** Signature interval for AXFR streams. */
  every: number;
  /** Sign answers with this key (a wrong one to check that the tools notice). */
  answerKey: TsigKey;
  stop(): Promise<void>;
}

const SOA_DATA = {
  type: 'SOA' as const,
  mname: 'ns1.example.com.',
  rname: 'hostmaster.example.com.',
  serial: 42,
  refresh: 3600,
  retry: 600,
  expire: 1209600,
  minimum: 300,
};

function answerTo(query: Message, answers: ResourceRecord[]): Message {
  return {
    id: query.id,
    qr: true,
    opcode: query.opcode,
    aa: true,
    tc: false,
    rd: query.rd,
    ra: false,
    ad: false,
    cd: false,
    rcode: Rcode.NOERROR,
    questions: query.questions,
    answers,
    authority: [],
    additional: [],
  };
}

/** The answers to one request: NOERROR with an A or SOA; an AXFR of 12 messages; UPDATE acknowledged. */
function answer(peer: Peer, request: Uint8Array, tcp: boolean): Uint8Array[] {
  const result = verifyMessage(request, KEYS);
  peer.seen.push({ request, result, tcp });
  if (!result.ok) {
    const error = tsigErrorResponse(request, result);
    return error ? [error] : [];
  }
  const query = decodeMessage(result.stripped);
  const q = query.questions[0]!;
  if (q.type === RRType.AXFR) {
    const soa: ResourceRecord = {
      name: 'example.com.',
      type: RRType.SOA,
      class: 1,
      ttl: 300,
      data: SOA_DATA,
    };
    const signer = new TsigStreamSigner(peer.answerKey, result.mac, { every: peer.every });
    const count = 12;
    const out: Uint8Array[] = [];
    for (let i = 0; i < count; i++) {
      const answers: ResourceRecord[] = Array.from({ length: 20 }, (_, j) => ({
        name: `h${i}-${j}.example.com.`,
        type: RRType.A,
        class: 1,
        ttl: 300,
        data: { type: 'A' as const, address: `192.0.2.${j + 1}` },
      }));
      if (i === 0) answers.unshift(soa);
      if (i === count - 1) answers.push(soa);
      out.push(signer.sign(encodeMessage(answerTo(query, answers)), i === count - 1));
    }
    return out;
  }
  const answers: ResourceRecord[] =
    query.opcode === Opcode.UPDATE
      ? []
      : q.type === RRType.A
        ? [{ name: q.name, type: RRType.A, class: 1, ttl: 300, data: { type: 'A', address: '192.0.2.1' } }]
        : [{ name: q.name, type: RRType.SOA, class: 1, ttl: 300, data: SOA_DATA }];
  return [
    signMessage(encodeMessage(answerTo(query, answers)), peer.answerKey, { requestMac: result.mac }).bytes,
  ];
}

async function startPeer(): Promise<Peer> {
  const port = await freePort();
  const peer: Peer = { port, seen: [], every: 1, answerKey: KEY, stop: async () => {} };
  const udp = dgram.createSocket('udp4');
  udp.on('message', (msg, rinfo) => {
    for (const reply of answer(peer, new Uint8Array(msg), false)) udp.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => udp.bind(port, '127.0.0.1', () => resolve()));
  const sockets = new Set<net.Socket>();
  const tcp = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 2 && buffer.length >= 2 + buffer.readUInt16BE(0)) {
        const request = new Uint8Array(buffer.subarray(2, 2 + buffer.readUInt16BE(0)));
        buffer = buffer.subarray(2 + request.length);
        for (const reply of answer(peer, request, true)) {
          const frame = Buffer.alloc(2 + reply.length);
          frame.writeUInt16BE(reply.length, 0);
          frame.set(reply, 2);
          socket.write(frame);
        }
      }
    });
  });
  await new Promise<void>((resolve) => tcp.listen(port, '127.0.0.1', () => resolve()));
  peer.stop = async () => {
    for (const s of sockets) s.destroy();
    await Promise.all([
      new Promise<void>((resolve) => udp.close(() => resolve())),
      new Promise<void>((resolve) => tcp.close(() => resolve())),
    ]);
  };
  return peer;
}

async function cli(command: string, args: string[], input?: string): Promise<{ code: number; out: string }> {
  const child = execFile(command, args, { timeout: 20_000 });
  if (input !== undefined) {
    child.stdin!.end(input);
  }
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  return { code, out };
}

describe('TSIG with kdig, dig and knsupdate as clients', () => {
  let peer: Peer;
  const y = `hmac-sha256:transfer.key.:${SECRET}`;

  before(async () => {
    peer = await startPeer();
  });
  after(async () => {
    await peer?.stop();
  });

  function lastSeen(): Seen {
    const s = peer.seen.at(-1);
    assert.ok(s, 'the tool sent nothing');
    return s;
  }

  test('kdig -y over UDP and TCP: we verify its request, it verifies our answer', async () => {
    for (const tcp of [false, true]) {
      const r = await cli('kdig', [
        '@127.0.0.1',
        '-p',
        String(peer.port),
        '-y',
        y,
        'www.example.com',
        'A',
        ...(tcp ? ['+tcp'] : []),
      ]);
      const seen = lastSeen();
      assert.ok(seen.result.ok, JSON.stringify(seen.result));
      assert.equal(seen.tcp, tcp);
      assert.equal(r.code, 0, r.out);
      assert.match(r.out, /www\.example\.com\.\s+300\s+IN\s+A\s+192\.0\.2\.1/);
      assert.match(r.out, /TSIG PSEUDOSECTION/);
      assert.doesNotMatch(r.out, /failed to verify TSIG|WARNING: reply verification|BAD/, r.out);
    }
  });

  test('dig -y (BIND): same, with hmac-sha512 too', async () => {
    const r = await cli('dig', [
      '@127.0.0.1',
      '-p',
      String(peer.port),
      '-y',
      y,
      'example.com',
      'SOA',
      '+norec',
    ]);
    assert.ok(lastSeen().result.ok, JSON.stringify(lastSeen().result));
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /status: NOERROR/);
    assert.doesNotMatch(r.out, /Couldn't verify|tsig verify failure|could not be validated/i, r.out);
    // A request signed with a key we do not have: BADKEY answered, and dig sees it.
    const other = await cli('dig', [
      '@127.0.0.1',
      '-p',
      String(peer.port),
      '-y',
      `hmac-sha512:unknown.key.:${SECRET}`,
      'example.com',
      'SOA',
    ]);
    assert.equal((lastSeen().result as TsigFailure).error, 'BADKEY');
    assert.match(other.out, /NOTAUTH|BADKEY/, other.out);
  });

  test('the tools notice an answer signed with another secret (the check above is real)', async () => {
    peer.answerKey = parseTsigKey({
      name: 'transfer.key.',
      algorithm: 'hmac-sha256',
      secret: randomBytes(32).toString('base64'),
    });
    try {
      const k = await cli('kdig', ['@127.0.0.1', '-p', String(peer.port), '-y', y, 'example.com', 'SOA']);
      assert.match(k.out, /WARNING: reply verification .* \(failed to verify TSIG\)/, k.out);
      const d = await cli('dig', ['@127.0.0.1', '-p', String(peer.port), '-y', y, 'example.com', 'SOA']);
      assert.match(d.out, /Couldn't verify signature: tsig verify failure/, d.out);
      assert.match(d.out, /Some TSIG could not be validated/, d.out);
    } finally {
      peer.answerKey = KEY;
    }
  });

  test('kdig AXFR verifies our multi-message answer, signed on every message or only on the first and last', async () => {
    try {
      for (const every of [1, 100]) {
        peer.every = every;
        const r = await cli('kdig', ['@127.0.0.1', '-p', String(peer.port), '-y', y, 'example.com', 'AXFR']);
        assert.ok(lastSeen().result.ok);
        assert.equal(r.code, 0, r.out);
        assert.match(r.out, /Received \d+ B \(12 messages, 242 records\)/, r.out);
        assert.equal(r.out.match(/\tTSIG\t/g)?.length, every === 1 ? 12 : 2, r.out);
        assert.doesNotMatch(r.out, /failed to verify TSIG|WARNING: reply verification|BAD/, r.out);
      }
    } finally {
      peer.every = 1;
    }
  });

  test('dig AXFR (BIND) verifies our answer signed on every 5th message only', async () => {
    peer.every = 5;
    try {
      const r = await cli('dig', ['@127.0.0.1', '-p', String(peer.port), '-y', y, 'example.com', 'AXFR']);
      assert.equal(r.code, 0, r.out);
      assert.match(r.out, /XFR size: 242 records \(messages 12/, r.out);
      assert.doesNotMatch(r.out, /Couldn't verify|tsig verify failure|could not be validated|failed/i, r.out);
    } finally {
      peer.every = 1;
    }
  });

  test('knsupdate: a signed UPDATE verifies here', async () => {
    const script = [
      `server 127.0.0.1 ${peer.port}`,
      `key hmac-sha256:transfer.key ${SECRET}`,
      'zone example.com.',
      'update add new.example.com. 300 A 192.0.2.77',
      'send',
      '',
    ].join('\n');
    const r = await cli('knsupdate', [], script);
    const seen = lastSeen();
    assert.ok(seen.result.ok, JSON.stringify(seen.result));
    const update = decodeMessage((seen.result as { stripped: Uint8Array }).stripped);
    assert.equal(update.opcode, Opcode.UPDATE);
    assert.equal(update.authority[0]?.name, 'new.example.com.');
    assert.equal(r.code, 0, r.out);
  });
});
